#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_cm_route.sh - the route rdma_cm picks between two test hosts, seen
# on the wire (issue 12 item 1; docs/design/cm.md, "Between hosts").
#
# Usage: net_cm_route.sh SRDMA_EXE
#
# Two runs of `rping -v -C 3 -S 20000` (RDMA READ and WRITE of 20000
# bytes, so many full packets) between two test hosts, each captured
# with tcpdump on host 1's eth0 (UDP 4791):
#   ipv4  MTU 1500, rping to host 1's IPv4 address: every RoCEv2 packet
#         is IPv4 between the two hosts' 198.18 addresses (the source
#         address chose the IPv4-mapped GID, not GID 0, the link-local
#         fe80:: one), and the largest carries a 1024-byte payload at
#         most (path MTU 1024 from the interface's 1500: UDP length
#         <= 1024 + 8 UDP + 12 BTH + 16 RETH + 4 ICRC = 1064) and more
#         than 512 (it is not smaller either);
#   ipv6  MTU 9000, rping to host 1's IPv6 address (fd53::): every packet
#         is IPv6 between the hosts' fd53:: addresses, and the largest
#         is above 2048 and at most 4096 bytes of payload (path MTU 4096).
# rping's own checks (the run_pair.sh rping rule) must pass too. UDP GSO
# is turned off on the veths (ethtool), so that the capture sees the
# datagrams, not the senders' GSO batches.
#
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (no root, tcpdump or rping).
set -u

here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
RUN_PAIR=$here/../clients/run_pair.sh
srdma=${1:?usage: $0 SRDMA_EXE}
for p in tcpdump rping stdbuf ethtool; do
	command -v "$p" >/dev/null ||
		{ echo "net_cm_route: $p not installed: skipped"; exit 77; }
done
work=$(mktemp -d /tmp/net_cm_route.XXXXXX) || exit 1
dump_pid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	[ -n "$dump_pid" ] && kill -INT "$dump_pid" 2>/dev/null
	"$H" down >/dev/null 2>&1
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail()
{
	echo "net_cm_route: FAIL: $*"
	exit 1
}

# run NAME MTU FAMILY(-4|-6) MIN_LEN MAX_LEN
run()
{
	local name=$1 mtu=$2 fam=$3 lo=$4 hi=$5 a1 a2 i rc pcap

	export SRDMA_NET_TAG=ncr$$.$name
	"$H" up 2 --mtu "$mtu"
	rc=$?
	[ $rc -eq 0 ] || exit $rc
	if [ "$fam" = -6 ]; then
		a1=$("$H" addr 1 -6) a2=$("$H" addr 2 -6)
	else
		a1=$("$H" addr 1) a2=$("$H" addr 2)
	fi
	# The senders hand the kernel runs of packets as one UDP GSO send;
	# a capture on the veth would see those, not the datagrams.
	for i in 1 2; do
		"$H" run "$i" -- ethtool -K eth0 tx-udp-segmentation off \
			>/dev/null || fail "ethtool -K in host $i"
	done
	pcap=$work/$name.pcap
	"$H" run 1 -- tcpdump -i eth0 --immediate-mode -U -s 128 -w "$pcap" udp port 4791 \
		2>"$pcap.log" &
	dump_pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q 'listening on' "$pcap.log" && break
		kill -0 "$dump_pid" 2>/dev/null || break
		sleep 0.05
	done
	grep -q 'listening on' "$pcap.log" ||
		fail "$name: tcpdump did not start: $(cat "$pcap.log")"
	bash "$RUN_PAIR" --timeout 40 --server-wrap "$H run 1 --" \
		--client-wrap "$H run 2 --" rping 18515 "$srdma" \
		@server stdbuf -oL rping -s -v -a "$a1" -C 3 -S 20000 \
		@client stdbuf -oL rping -c -v -a "$a1" -C 3 -S 20000 \
		>"$work/$name.pair" 2>&1
	rc=$?
	sleep 0.5
	kill -INT "$dump_pid" 2>/dev/null
	wait "$dump_pid" 2>/dev/null
	dump_pid=
	tail -1 "$work/$name.pair"
	[ $rc -eq 0 ] || { cat "$work/$name.pair"; fail "$name: rping failed"; }
	# "IP 198.18.1.2.49152 > 198.18.1.1.4791: UDP, length 1064"
	# "IP6 fd53:...::2.49152 > fd53:...::1.4791: UDP, length 1064"
	why=$(tcpdump -nn -r "$pcap" 2>/dev/null | awk -v a1="$a1" -v a2="$a2" \
		-v fam="$fam" -v lo="$lo" -v hi="$hi" '
	{
		ipv = $2
		src = $3; dst = $5; sub(/:$/, "", dst)
		sub(/\.[0-9]+$/, "", src); sub(/\.[0-9]+$/, "", dst)
		len = $NF
		n++
		if ((fam == "-6") != (ipv == "IP6") ||
		    !((src == a1 && dst == a2) || (src == a2 && dst == a1))) {
			bad = "packet " n " is not between " a1 " and " a2 \
				": " $0
			exit
		}
		if (len > max)
			max = len
	}
	END {
		if (bad) { print bad; exit }
		if (!n) { print "no RoCEv2 packet captured"; exit }
		if (max > hi + 40 || max <= lo + 40)
			print "largest UDP length " max ", not in (" lo + 40 \
				", " hi + 40 "]: path MTU not " hi
		else
			printf "%d packets, largest UDP length %d\n", n, max > "/dev/stderr"
	}')
	[ -z "$why" ] || fail "$name: $why"
	"$H" down >/dev/null 2>&1
}

run ipv4 1500 -4 512 1024
run ipv6 9000 -6 2048 4096
echo "net_cm_route: PASS"
