#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_raw.sh - raw packet QPs across two test hosts (hosts.sh): with
# SRDMA_RAW_WIRE=eth0 in both, a raw QP in host 2 sends frames out of its
# veth and the flow of a raw QP in host 1 takes them from its own
# (raw_wire.c: exactly the frames the flow names, byte for byte, in
# order). Only the test veths carry the frames. docs/design/raw-packet.md.
#
# Usage: net_raw.sh RAW_WIRE_EXE
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (not root).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
[ $# -eq 1 ] || { echo "usage: net_raw.sh RAW_WIRE_EXE" >&2; exit 2; }
exe=$1
[ "$(id -u)" -eq 0 ] || { echo "net_raw: needs root: skipped"; exit 77; }
export SRDMA_NET_TAG=raw$$
out=$(mktemp /tmp/net_raw.XXXXXX) || exit 1
rpid=

cleanup()
{
	[ -n "$rpid" ] && kill -KILL "$rpid" 2>/dev/null
	"$H" down >/dev/null 2>&1
	rm -f "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

"$H" up 2
rc=$?
[ $rc -eq 0 ] || exit $rc
SRDMA_RAW_WIRE=eth0 "$H" run 1 -- "$exe" recv 5 >"$out" 2>&1 &
rpid=$!
for ((i = 0; i < 200; i++)); do
	grep -q '^ready' "$out" && break
	kill -0 "$rpid" 2>/dev/null || break
	sleep 0.05
done
grep -q '^ready' "$out" ||
	{ cat "$out"; echo "net_raw: FAIL: the receiver did not start"; exit 1; }
SRDMA_RAW_WIRE=eth0 "$H" run 2 -- "$exe" send 5
src=$?
wait "$rpid"
rrc=$?
rpid=
cat "$out"
if [ $src -ne 0 ] || [ $rrc -ne 0 ]; then
	echo "net_raw: FAIL: sender exited $src, receiver $rrc"
	exit 1
fi
echo "net_raw: pass"
exit 0
