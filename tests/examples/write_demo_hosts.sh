#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# write_demo_hosts.sh - the README's two-process example between two test
# hosts (network namespaces joined by a veth, tests/net/hosts.sh; each has
# its own SRDMA_DIR and a RoCE port): the server in host 1, the client in
# host 2 given host 1's IPv4 address, both through `srdma run`, exactly as
# the README's "Between hosts" shows. rdma_cm connects them, the RDMA WRITE
# crosses the veth as RoCEv2. Pass: both exit 0 and print their "ok" line
# (the client's only after it found the server's message intact).
#
# Usage: write_demo_hosts.sh SRDMA_EXE DEMO_EXE
# Exit: 0 pass, 1 fail, 77 (CTest skip) without root.
set -u

if [ "${1:-}" != --inner ]; then
	here=$(cd "$(dirname "$0")" && pwd)
	exec bash "$here/../net/hosts.sh" with 2 --tag "wdemo$$" -- \
		bash "$0" --inner "$here/../net/hosts.sh" "$@"
fi
H=$2 srdma=$3 demo=$4
port=18516
work=$(mktemp -d) || exit 1
srv=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

a1=$("$H" addr 1) || exit 1
ns1=$("$H" ns 1) || exit 1
timeout 30 "$H" run 1 -- "$srdma" run -- "$demo" >"$work/server" 2>&1 &
srv=$!
for ((i = 0; i < 100; i++)); do
	ip netns exec "$ns1" ss -ltnH "sport = :$port" | grep -q . && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.1
done
timeout 30 "$H" run 2 -- "$srdma" run -- "$demo" "$a1" >"$work/client" 2>&1
crc=$?
wait "$srv"
src=$?
srv=
echo "-- server (host 1, $a1):"
cat "$work/server"
echo "-- client (host 2):"
cat "$work/client"
if [ $src = 0 ] && [ $crc = 0 ] && grep -qx 'server: ok' "$work/server" &&
   grep -qx 'client: ok' "$work/client"; then
	echo "write demo between two hosts: ok"
	exit 0
fi
echo "FAIL: server exit $src, client exit $crc"
exit 1
