#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_wire.sh - wire conformance, judged by code that is not ours: capture
# what softrdma puts on the wire with tcpdump, then have Wireshark's
# InfiniBand dissector and scapy's RoCE layer check every packet.
#
# Usage: net_wire.sh SRDMA_EXE [FUNC_TEST_DP_RC]
#
# Capture 1, on host 1's veth (eth0), two test hosts at MTU 1500 (path MTU
# 1024), while these pairs run across them (net_pair.sh's way: server in
# host 1, client in host 2, through `srdma run`):
#   ib_write_bw, ib_read_bw, ib_send_bw at 5000 B (multi-packet: FIRST,
#   MIDDLE, LAST; READ responses likewise; 5000 is not a multiple of 4, so
#   LAST packets carry pad bytes), ib_write_lat 8 B (ONLY), ib_atomic_bw
#   (fetch-and-add) and ib_atomic_lat -A CMP_AND_SWAP, ib_send_bw -c UD
#   (UD SEND ONLY with DETH), ibv_uc_pingpong (UC), and ibv_rc_pingpong
#   over IPv6 (its GID index is host 1's fd53:... entry): RoCEv2 over both
#   IP versions.
# Capture 2, on host 1's loopback, with FUNC_TEST_DP_RC given: the
#   functional data-path test under SRDMA_TRANSPORT=net in one host (at
#   most 90 s), whose
#   contexts talk to each other over the wire: every opcode (SEND and
#   WRITE with immediate, SEND with invalidate, both atomics), NAKs and
#   error paths.
# Each capture keeps only UDP port 4791 and must hold packets (on the
# veth: from both hosts), every one dissected as InfiniBand by tshark (Wireshark's
# dissector, Debian's tshark); the opcodes seen are printed. Then
# tests/net/check_pcap.py FILE (from the wire part, h-wire) must pass:
# per packet, Wireshark's dissection without a malformed flag or expert
# info of severity warning or error (with the heuristic upper-layer
# dissectors off: they judge application payloads, not RoCE), and the
# ICRC that scapy's RoCE layer computes (IPv4; IPv6 by check_pcap.py's own
# zlib check) equal to the one on the wire.
#
# UDP GSO (docs/design/net-endpoint.md, "Speed"): the senders hand the
# kernel runs of equal-size packets as one GSO send, which the kernel cuts
# into datagrams numbered by IPv4 identification 0, 1, 2, ..., each
# carrying an ICRC patched for its own. The capture must see those
# datagrams, not the GSO send: tx-udp-segmentation is turned off (ethtool)
# on both hosts' eth0 and lo, so the kernel segments in software before
# the device. The veth capture must then hold IPv4 packets with
# identifications other than 0 (GSO segments), all with scapy's ICRC.
#
# Exit: 0 pass, 1 fail, 77 skip (no root; tcpdump, tshark, ethtool or
# perftest missing).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
srdma=${1:?usage: net_wire.sh SRDMA_EXE [FUNC_TEST_DP_RC]}
func_dp=${2:-}
check_pcap=$here/check_pcap.py
# Debian's python3 (python3-scapy) even when another one comes first in PATH.
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

for p in tcpdump tshark ethtool ib_write_bw ibv_rc_pingpong; do
	command -v "$p" >/dev/null ||
		{ echo "net_wire: $p not installed: skipped"; exit 77; }
done
export SRDMA_NET_TAG=nw$$
work=$(mktemp -d /tmp/net_wire.XXXXXX) || exit 1
dump_pid=
fails=0

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	[ -n "$dump_pid" ] && kill -KILL "$dump_pid" 2>/dev/null
	"$H" down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail()
{
	echo "net_wire: FAIL: $*"
	fails=$((fails + 1))
}

# capture_start IFACE FILE: tcpdump in host 1, running once it says so.
capture_start()
{
	local i

	"$H" run 1 -- tcpdump -i "$1" -U -s 0 -w "$2" udp port 4791 \
		2>"$2.log" &
	dump_pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q 'listening on' "$2.log" && return 0
		kill -0 "$dump_pid" 2>/dev/null || break
		sleep 0.05
	done
	cat "$2.log"
	fail "tcpdump did not start on $1"
	return 1
}

capture_stop()
{
	sleep 0.2	# the last packets
	kill -INT "$dump_pid" 2>/dev/null
	wait "$dump_pid" 2>/dev/null
	dump_pid=
}

# check FILE WHAT SOURCES: the checks of the header on one capture, whose
# packets must come from at least SOURCES IP addresses.
check()
{
	local f=$1 what=$2 min_src=$3 n n_ib sides

	n=$(tshark -r "$f" -Y 'udp.dstport == 4791' 2>/dev/null | wc -l)
	n_ib=$(tshark -r "$f" -Y 'udp.dstport == 4791 && infiniband' \
		2>/dev/null | wc -l)
	echo "net_wire: $what: $n RoCEv2 packets, $n_ib decoded as InfiniBand"
	if [ "$n" -eq 0 ]; then
		fail "$what: no packet to UDP port 4791 captured"
		return
	fi
	[ "$n_ib" -eq "$n" ] ||
		fail "$what: $((n - n_ib)) packet(s) not dissected as InfiniBand"
	sides=$(tshark -r "$f" -T fields -e ip.src -e ipv6.src 2>/dev/null |
		sort -u | wc -l)
	[ "$sides" -ge "$min_src" ] ||
		fail "$what: packets from $sides source(s) only"
	# tshark's statistics of InfiniBand opcodes, for the log.
	tshark -r "$f" -T fields -e infiniband.bth.opcode 2>/dev/null |
		sort -n | uniq -c | awk '{ printf "  opcode %3d: %d packets\n", $2, $1 }'
	if [ ! -f "$check_pcap" ]; then
		fail "$check_pcap missing (it comes with the wire helper, branch h-wire)"
		return
	fi
	if "$py" "$check_pcap" "$f"; then
		echo "net_wire: $what: check_pcap.py: ok"
	else
		fail "$what: check_pcap.py $f failed"
	fi
}

# pair KIND PROG ARGS...: one pair across the hosts; its output on failure.
pair()
{
	local out

	out=$(SRDMA_NET_TAG=$SRDMA_NET_TAG "$here/net_pair.sh" --timeout 40 \
		--reuse-hosts "$@" 2>&1)
	if [ $? -ne 0 ]; then
		echo "$out"
		fail "pair $* failed"
	else
		echo "net_wire: pair $*: ok"
	fi
}

"$H" up 2
rc=$?
[ $rc -eq 0 ] || exit $rc
# Software segmentation before the devices: the captures see the
# datagrams as they travel, with their own IP identifications.
for h in 1 2; do
	for dev in eth0 lo; do
		"$H" run "$h" -- ethtool -K "$dev" tx-udp-segmentation off ||
			fail "ethtool -K $dev tx-udp-segmentation off in host $h"
	done
done
cap1=$work/veth.pcap
if capture_start eth0 "$cap1"; then
	pair bw "$srdma" ib_write_bw -d srdma0 -s 5000 -n 20
	pair bw "$srdma" ib_read_bw -d srdma0 -s 5000 -n 20
	pair bw "$srdma" ib_send_bw -d srdma0 -s 5000 -n 20
	pair lat "$srdma" ib_write_lat -d srdma0 -s 8 -n 20
	pair bw "$srdma" ib_atomic_bw -d srdma0 -n 20
	pair lat "$srdma" ib_atomic_lat -d srdma0 -A CMP_AND_SWAP -n 20
	pair bw "$srdma" ib_send_bw -d srdma0 -c UD -s 512 -n 20
	pair pingpong "$srdma" ibv_uc_pingpong -s 3000 -n 10
	pair --ipv6 pingpong "$srdma" ibv_rc_pingpong -s 3000 -n 10 -c
	capture_stop
	check "$cap1" "capture on the veth" 2
	# GSO segments after the first carry identifications 1, 2, ...
	nid=$(tshark -r "$cap1" -Y 'udp.dstport == 4791 && ip.id != 0' \
		2>/dev/null | wc -l)
	echo "net_wire: capture on the veth: $nid IPv4 packets with an identification other than 0 (GSO segments)"
	if [ "${SRDMA_NET_GSO:-1}" != 0 ] && [ "$nid" -eq 0 ]; then
		fail "no GSO segment (IPv4 identification > 0) captured"
	fi
	if [ -n "${SRDMA_NET_WIRE_KEEP:-}" ]; then
		cp "$cap1" "$SRDMA_NET_WIRE_KEEP.veth.pcap"
	fi
fi

if [ -n "$func_dp" ]; then
	cap2=$work/lo.pcap
	if capture_start lo "$cap2"; then
		# Its verdict is net.func.test_dp_rc's; here it makes traffic.
		out=$(timeout -s KILL 90 "$H" run 1 -- env SRDMA_TRANSPORT=net \
			"$func_dp" 2>&1) ||
			echo "net_wire: note: $(basename "$func_dp") failed" \
				"(net.func.test_dp_rc judges it): $(echo "$out" |
				grep -E '^\[  FAILED  \] test_' | tr '\n' ' ')"
		capture_stop
		check "$cap2" "capture on the loopback ($(basename "$func_dp"))" 1
		if [ -n "${SRDMA_NET_WIRE_KEEP:-}" ]; then
			cp "$cap2" "$SRDMA_NET_WIRE_KEEP.lo.pcap"
		fi
	fi
fi

if [ "$fails" -eq 0 ]; then
	echo "net_wire: PASS"
	exit 0
fi
echo "net_wire: $fails failure(s)"
exit 1
