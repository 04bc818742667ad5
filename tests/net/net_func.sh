#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_func.sh - run one functional data-path test (tests/func) over the
# wire: inside one test host (hosts.sh, so the GIDs are its 198.18 and
# fd53 addresses) with SRDMA_TRANSPORT=net, so that the test's contexts,
# although on one host, talk RoCEv2 over UDP to each other (CTest
# net.func.*).
#
# Usage: net_func.sh FUNC_TEST [ARGS...]
#
# The functional tests pass over the host transport too, so a pass alone
# would not show that the wire was used: tcpdump listens on the host's
# loopback (where packets between two of its own addresses go) during the
# test, and at least one RoCEv2 packet (UDP port 4791) must have been
# seen. The packet count is printed. --immediate-mode: without it libpcap
# hands packets over a ring block at a time (TPACKET_V3, ~1 s), and a
# test shorter than that ended with its block unread (0 packets counted).
#
# Exit: the test's status; 1 if it passed without a packet on the wire;
# 77 (skip) without root or tcpdump.
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
[ $# -ge 1 ] || { echo "usage: net_func.sh FUNC_TEST [ARGS...]" >&2; exit 2; }
command -v tcpdump >/dev/null ||
	{ echo "net_func: tcpdump not installed: skipped"; exit 77; }
export SRDMA_NET_TAG=nf$$
work=$(mktemp -d /tmp/net_func.XXXXXX) || exit 1
dump_pid=

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	[ -n "$dump_pid" ] && kill -KILL "$dump_pid" 2>/dev/null
	"$H" down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

"$H" up 1
rc=$?
[ $rc -eq 0 ] || exit $rc
"$H" run 1 -- tcpdump -i lo -U --immediate-mode -s 128 -w "$work/lo.pcap" udp port 4791 \
	2>"$work/dump.log" &
dump_pid=$!
for ((i = 0; i < 100; i++)); do
	grep -q 'listening on' "$work/dump.log" && break
	sleep 0.05
done
grep -q 'listening on' "$work/dump.log" ||
	{ cat "$work/dump.log"; echo "net_func: FAIL: tcpdump did not start"; exit 1; }

"$H" run 1 -- env SRDMA_TRANSPORT=net "$@"
rc=$?

sleep 0.2
kill -INT "$dump_pid" 2>/dev/null
wait "$dump_pid" 2>/dev/null
dump_pid=
n=$(tcpdump -r "$work/lo.pcap" -n 2>/dev/null | wc -l)
echo "net_func: $(basename "$1") exited $rc; $n RoCEv2 packets on the wire"
if [ "$rc" -eq 0 ] && [ "$n" -eq 0 ]; then
	echo "net_func: FAIL: no packet went over the wire" \
		"(the net transport was not used)"
	exit 1
fi
exit "$rc"
