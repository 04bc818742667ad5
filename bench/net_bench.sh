#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_bench.sh - issue 10, "Speed": softrdma's net transport between two
# test hosts (network namespaces joined by a veth pair, tests/net/hosts.sh),
# side by side with the kernel's own figures on the same veth, same run.
#
# Usage: net_bench.sh [--quick] [--kernel-only] [BUILD_DIR]  (default ../build)
#
# At MTU 1500 and at MTU 9000 (a fresh pair of hosts for each), one after
# the other so they never share the CPUs:
#   softrdma  Debian's perftest through `srdma run`, server in host 1,
#             client in host 2 (tests/net/net_pair.sh, -x the GID index of
#             each host's IPv4 address): ib_write_bw and ib_read_bw at
#             64 KiB and 1 MiB, ib_write_lat and ib_send_lat at 8 B
#   kernel    qperf tcp_bw (a TCP stream, qperf's 64 KiB messages);
#             qperf -m 8 udp_lat (8-byte UDP ping-pong, blocking receives);
#             bench/udp_pingpong (8-byte UDP ping-pong, both sides busy-poll
#             a non-blocking socket, as a verbs application polls its CQ)
# and prints a Markdown table, then the two ratios the issue sets targets
# for:
#   ib_write_bw 1 MiB at MTU 9000 / TCP stream at MTU 9000   target >= 0.5
#   ib_write_lat 8 B / busy-polled UDP one-way (each MTU)    target <= 1.5
# Bandwidth in GB/s (10^9 bytes; perftest's MB/sec are MiB/s, converted;
# qperf's units are decimal); latency one way, in microseconds: perftest's
# t_typical (median), qperf's latency (its round trip / 2), udp_pingpong's
# median round trip / 2.
# Every figure is measured ROUNDS times ($SRDMA_BENCH_ROUNDS, default 3;
# 1 with --quick), the rounds interleaved so that a noisy spell of the VM
# hits all measurements alike; the table shows the median over the rounds.
# --quick: also fewer iterations and 2-second qperf runs; --kernel-only:
# the kernel half only (it does not depend on our transport).
# A missed target is a result, not a failure. Exit 0; 1 if a measurement
# failed (its output is printed, the table says "failed"); 77 without root.
set -u

quick=
kernel_only=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	--kernel-only) kernel_only=1; shift ;;
	*) break ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
srdma=$build/bin/srdma
udppp=$build/bin/udp_pingpong
H=$here/../tests/net/hosts.sh
net_pair=$here/../tests/net/net_pair.sh

for bin in "$srdma" "$udppp"; do
	[ -x "$bin" ] || { echo "net_bench: $bin not built" >&2; exit 1; }
done
for p in qperf ib_write_bw; do
	command -v "$p" >/dev/null ||
		{ echo "net_bench: $p not installed: skipped"; exit 77; }
done
if [ -n "$quick" ]; then
	bw_iters=500 lat_iters=2000 pp_iters=20000 qtime=2
	rounds=${SRDMA_BENCH_ROUNDS:-1}
else
	bw_iters=2000 lat_iters=10000 pp_iters=50000 qtime=3
	rounds=${SRDMA_BENCH_ROUNDS:-3}
fi

export SRDMA_NET_TAG=nb$$
out=$(mktemp -d /tmp/net_bench.XXXXXX) || exit 1
srv_pid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	[ -n "$srv_pid" ] && kill -KILL "$srv_pid" 2>/dev/null
	"$H" down >/dev/null 2>&1
	rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
failed=0
declare -A val bad

# note NAME VALUE: one round's figure ("" if the measurement failed; a
# failed measurement is "failed" in the table, whatever other rounds got).
note()
{
	if [ -z "$2" ]; then
		failed=1
		bad[$1]=1
	fi
	val[$1]="${val[$1]-} $2"
}

# server_start CMD...: CMD in host 1, in the background ($srv_pid).
server_start()
{
	"$H" run 1 -- "$@" >"$out/server" 2>&1 &
	srv_pid=$!
}

server_stop()
{
	[ -n "$srv_pid" ] || return 0
	kill -TERM "$srv_pid" 2>/dev/null
	wait "$srv_pid" 2>/dev/null
	srv_pid=
}

# wait_tcp PORT: until something listens on TCP PORT in host 1 (5 s).
wait_tcp()
{
	local i

	for ((i = 0; i < 100; i++)); do
		[ -n "$("$H" run 1 -- ss -Hltn "sport = :$1")" ] && return 0
		sleep 0.05
	done
	return 1
}

# qperf_fig FILE: qperf's first figure in FILE, in GB/s or us.
qperf_fig()
{
	awk '$2 == "=" {
		v = $3; u = $4
		if (u == "GB/sec") v *= 1
		else if (u == "MB/sec") v /= 1000
		else if (u == "KB/sec") v /= 1000000
		else if (u == "bytes/sec") v /= 1e9
		else if (u == "us") v *= 1
		else if (u == "ms") v *= 1000
		else if (u == "ns") v /= 1000
		else if (u == "sec") v *= 1000000
		else next
		printf "%.4f\n", v
		exit
	}' "$1"
}

# kernel MTU: the kernel's figures at this MTU.
kernel()
{
	local m=$1 addr

	addr=$("$H" addr 1)
	echo "== MTU $m: qperf tcp_bw, qperf -m 8 udp_lat"
	server_start qperf
	if wait_tcp 19765; then
		"$H" run 2 -- qperf -t "$qtime" "$addr" tcp_bw >"$out/tcp" 2>&1
		cat "$out/tcp"
		note "tcp.$m" "$(qperf_fig "$out/tcp")"
		"$H" run 2 -- qperf -t "$qtime" -m 8 "$addr" udp_lat \
			>"$out/udp" 2>&1
		cat "$out/udp"
		note "udplat.$m" "$(qperf_fig "$out/udp")"
	else
		cat "$out/server"
		echo "net_bench: qperf server not listening"
		note "tcp.$m" ""
		note "udplat.$m" ""
	fi
	server_stop

	echo "== MTU $m: udp_pingpong (busy-polling), 8 B, $pp_iters iterations"
	server_start "$udppp" -s
	sleep 0.2
	"$H" run 2 -- "$udppp" -c "$addr" -n "$pp_iters" >"$out/pp" 2>&1
	cat "$out/pp"
	note "udppp.$m" "$(awk '$1 == "udp_pingpong" && $2 == "size=8" {
		sub("median_us=", "", $3); print $3 }' "$out/pp")"
	server_stop
}

# perf NAME KIND COL SCALE PROGRAM ARGS...: one perftest pair; the figure
# is column COL of the client's results row, times SCALE.
perf()
{
	local name=$1 kind=$2 col=$3 scale=$4 v

	shift 4
	echo "== MTU $mtu: $*"
	if bash "$net_pair" --reuse-hosts --timeout 90 \
		--client-log "$out/client" "$kind" "$srdma" "$@" \
		>"$out/pair" 2>&1; then
		grep -E '^ *#bytes|^ *[0-9]+ +[0-9]+ ' "$out/client"
		v=$(awk -v c="$col" -v m="$scale" '/#bytes/ { hdr = 1; next }
		hdr {
			for (i = 1; i <= NF; i++)
				if ($i !~ /^[0-9]+(\.[0-9]+)?$/)
					next
			if (NF >= c) {
				printf "%.4f\n", $c * m
				exit
			}
		}' "$out/client")
	else
		cat "$out/pair"
		echo "net_bench: $name failed"
		v=
	fi
	note "$name.$mtu" "$v"
}

for ((round = 1; round <= rounds; round++)); do
for mtu in 1500 9000; do
	echo "== round $round of $rounds, MTU $mtu"
	"$H" up 2 --mtu "$mtu"
	rc=$?
	[ $rc -eq 77 ] && exit 77
	[ $rc -eq 0 ] || exit 1
	kernel "$mtu"
	if [ -z "$kernel_only" ]; then
		# perftest: BW average [MiB/s] is column 4, t_typical column 5.
		for s in 65536 1048576; do
			perf "wbw$s" bw 4 0.001048576 ib_write_bw -d srdma0 \
				-s "$s" -n "$bw_iters"
			perf "rbw$s" bw 4 0.001048576 ib_read_bw -d srdma0 \
				-s "$s" -n "$bw_iters"
		done
		perf wlat lat 5 1 ib_write_lat -d srdma0 -s 8 -n "$lat_iters"
		perf slat lat 5 1 ib_send_lat -d srdma0 -s 8 -n "$lat_iters"
	fi
	"$H" down
done
done
echo

# The median of each figure over the rounds, 2 decimals.
for k in "${!val[@]}"; do
	if [ -n "${bad[$k]-}" ]; then
		val[$k]=
		continue
	fi
	# shellcheck disable=SC2086 # one number per word
	val[$k]=$(printf '%s\n' ${val[$k]} | sort -g | awk '{ v[n++] = $1 } END {
		if (n)
			printf "%.2f\n", n % 2 ? v[(n - 1) / 2] \
					   : (v[n / 2 - 1] + v[n / 2]) / 2
	}')
done
echo "medians of $rounds round(s):"

show()
{
	local v=${val[$1]-}

	if [ -z "${val[$1]+set}" ]; then
		echo "not run"
	elif [ -z "$v" ]; then
		echo "failed"
	else
		echo "$v $2"
	fi
}

ratio()
{
	awk -v a="${val[$1]-}" -v b="${val[$2]-}" -v op="$3" -v t="$4" 'BEGIN {
		if (a == "" || b == "" || b <= 0) { print "- (no figure)"; exit }
		r = a / b
		ok = op == ">=" ? r >= t : r <= t
		printf "%.2f (target %s %s: %s)\n", r, op, t, ok ? "met" : "MISSED"
	}'
}

echo "| between two namespaces (veth) | MTU 1500 | MTU 9000 |"
echo "|---|---|---|"
row()
{
	printf '| %s | %s | %s |\n' "$1" "$(show "$2.1500" "$3")" \
		"$(show "$2.9000" "$3")"
}
row "softrdma ib_write_bw 64 KiB" wbw65536 GB/s
row "softrdma ib_write_bw 1 MiB" wbw1048576 GB/s
row "softrdma ib_read_bw 64 KiB" rbw65536 GB/s
row "softrdma ib_read_bw 1 MiB" rbw1048576 GB/s
row "softrdma ib_write_lat 8 B" wlat us
row "softrdma ib_send_lat 8 B" slat us
row "kernel TCP stream (qperf tcp_bw)" tcp GB/s
row "kernel UDP ping-pong, blocking (qperf udp_lat, 8 B)" udplat us
row "kernel UDP ping-pong, busy-polling (udp_pingpong, 8 B)" udppp us
echo
echo "ib_write_bw 1 MiB / TCP stream, MTU 9000: $(ratio wbw1048576.9000 tcp.9000 '>=' 0.5)"
echo "ib_write_bw 1 MiB / TCP stream, MTU 1500: $(ratio wbw1048576.1500 tcp.1500 '>=' 0.5)"
echo "ib_write_lat 8 B / busy-polled UDP, MTU 1500: $(ratio wlat.1500 udppp.1500 '<=' 1.5)"
echo "ib_write_lat 8 B / busy-polled UDP, MTU 9000: $(ratio wlat.9000 udppp.9000 '<=' 1.5)"
exit "$failed"
