#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run_data_bench.sh - issue 3: softrdma's one-host data path, side by side
# with the host's raw cross-memory limits and libfabric's shm provider,
# same run, same machine.
#
# Usage: run_data_bench.sh [--quick] [BUILD_DIR]   (default: ../build)
#
# Builds nothing. Runs, one after the other so they never share the CPUs:
#   bench_xmem     bare process_vm_writev/readv bandwidth (1 MiB) and the
#                  bare 8-byte cross-memory ping-pong
#   bench_fi_shm   fi_write bandwidth and ping-pong over shm (if built)
#   perftest       ib_write_bw and ib_read_bw at 1 MiB, ib_write_lat and
#                  ib_send_lat at 8 B: Debian's binaries through
#                  `srdma run`, as a server+client pair driven by
#                  tests/clients/run_pair.sh on TCP ports 18700-18703
# and prints a Markdown table of the targets:
#   ib_write_bw, ib_read_bw 1 MiB  >= 0.9 x raw process_vm_writev, > fi_write
#   ib_write_lat 8 B               <= 1.2 x raw ping-pong, < fi_write ping-pong
#   ib_send_lat 8 B                <= 3 us
# Every measurement is taken ROUNDS times (default 3, --quick 1, or
# $SRDMA_BENCH_ROUNDS), the rounds interleaved so that a noisy spell of
# the VM hits all of them alike; the table shows medians over the rounds.
# Bandwidth is GB/s (10^9 bytes; perftest's MB/sec is MiB/s and is
# converted), latency is one way: perftest's t_typical (its median) and
# the benchmarks' median of round trip / 2. A missed target is a result,
# not a failure: exit 0. Exit 1 if a measurement failed (its output is
# printed, later rounds skip it, the table shows "failed").
set -u

quick=
if [ "${1:-}" = "--quick" ]; then
	quick=--quick
	shift
fi
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
srdma=$build/bin/srdma
xmem=$build/bin/bench_xmem
fishm=$build/bin/bench_fi_shm
run_pair=$here/../tests/clients/run_pair.sh

for bin in "$srdma" "$xmem"; do
	if [ ! -x "$bin" ]; then
		echo "run_data_bench: $bin not built" >&2
		exit 1
	fi
done

if [ -n "$quick" ]; then
	bw_iters=500 lat_iters=2000 rounds=${SRDMA_BENCH_ROUNDS:-1}
else
	bw_iters=2000 lat_iters=20000 rounds=${SRDMA_BENCH_ROUNDS:-3}
fi

out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
failed=0
declare -A dead

# run NAME COMMAND...: output to $out/ROUND/NAME; on failure print it and
# leave NAME out of later rounds.
run()
{
	local name=$1

	shift
	[ -n "${dead[$name]:-}" ] && return 1
	echo "== $name (round $round): $*"
	if "$@" >"$out/$round/$name" 2>&1; then
		grep -E '^(xmem|fi_)' "$out/$round/$name" || true
		return 0
	fi
	cat "$out/$round/$name"
	echo "run_data_bench: $name failed"
	rm -f "$out/$round/$name"*
	dead[$name]=1
	failed=1
	return 1
}

# pair NAME KIND PORT PROGRAM ARGS...: one perftest pair; the client's
# output goes to $out/ROUND/NAME.client.
pair()
{
	local name=$1 kind=$2 port=$3

	shift 3
	run "$name" bash "$run_pair" --timeout 150 \
		--client-log "$out/$round/$name.client" "$kind" "$port" \
		"$srdma" "$@" && grep -E '^ *#bytes|^ *[0-9]+ +[0-9]+ ' \
		"$out/$round/$name.client"
}

for ((round = 1; round <= rounds; round++)); do
	mkdir "$out/$round"
	run xmem "$xmem" $quick
	if [ -x "$fishm" ]; then
		run fi_shm "$fishm" $quick
	elif [ "$round" = 1 ]; then
		echo "== fi_shm: bench_fi_shm not built (no libfabric): skipped"
	fi
	pair write_bw bw 18700 ib_write_bw -d srdma0 -s 1048576 -n "$bw_iters"
	pair read_bw bw 18701 ib_read_bw -d srdma0 -s 1048576 -n "$bw_iters"
	pair write_lat lat 18702 ib_write_lat -d srdma0 -s 8 -n "$lat_iters"
	pair send_lat lat 18703 ib_send_lat -d srdma0 -s 8 -n "$lat_iters"
done
echo

# Median of the numbers on stdin, two decimals; nothing if there are none.
median()
{
	sort -g | awk '{ v[n++] = $1 } END {
		if (n)
			printf "%.2f\n", n % 2 ? v[(n - 1) / 2] \
					   : (v[n / 2 - 1] + v[n / 2]) / 2
	}'
}

# field NAME WORD KEY: median over the rounds of the KEY=value field of
# the line starting with WORD in NAME's output.
field()
{
	local f

	for f in "$out"/*/"$1"; do
		[ -f "$f" ] || continue
		awk -v w="$2" -v k="$3" '$1 == w {
			for (i = 2; i <= NF; i++)
				if (index($i, k "=") == 1) {
					print substr($i, length(k) + 2)
					exit
				}
		}' "$f"
	done | median
}

# perf NAME COL SCALE: median over the rounds of column COL of the
# client's perftest results row (the first line after the "#bytes" header
# whose fields are all numbers), times SCALE.
perf()
{
	local f

	for f in "$out"/*/"$1.client"; do
		[ -f "$f" ] || continue
		awk -v c="$2" -v m="$3" '/#bytes/ { hdr = 1; next }
		hdr {
			for (i = 1; i <= NF; i++)
				if ($i !~ /^[0-9]+(\.[0-9]+)?$/)
					next
			if (NF >= c) {
				print $c * m
				exit
			}
		}' "$f"
	done | median
}

raw_bw=$(field xmem xmem_writev gb_per_s)
raw_rbw=$(field xmem xmem_readv gb_per_s)
raw_lat=$(field xmem xmem_pingpong median_us)
fi_bw=$(field fi_shm fi_write gb_per_s)
fi_lat=$(field fi_shm fi_write_pingpong median_us)
# perftest: BW average [MiB/s] is column 4, latency t_typical column 5.
w_bw=$(perf write_bw 4 0.001048576)
r_bw=$(perf read_bw 4 0.001048576)
w_lat=$(perf write_lat 5 1)
s_lat=$(perf send_lat 5 1)

echo "medians of $rounds round(s):"
have_fi=
[ -x "$fishm" ] && have_fi=1
awk -v raw_bw="$raw_bw" -v raw_rbw="$raw_rbw" -v raw_lat="$raw_lat" \
    -v fi_bw="$fi_bw" -v fi_lat="$fi_lat" -v have_fi="$have_fi" \
    -v w_bw="$w_bw" -v r_bw="$r_bw" -v w_lat="$w_lat" -v s_lat="$s_lat" '
function show(v, unit) { return v == "" ? "failed" : v " " unit }
function ratio(a, b)
{
	return (a == "" || b == "" || b <= 0) ? "-" : sprintf("%.2f", a / b)
}
# "met", or "MISSED" and the first failed condition (v; limit; raw or shm).
function verdict(v, raw_ok, fi_ok, raw_why, fi_why)
{
	if (v == "")
		return "MISSED (no figure)"
	if (!raw_ok)
		return "MISSED (" raw_why ")"
	if (have_fi && !fi_ok)
		return "MISSED (" fi_why ")"
	return "met"
}
# One bandwidth row: >= 0.9 x raw writev and above fi_write.
function bw_row(name, v) {
	printf "| %s 1 MiB | %s | %s | %s | %s | %s | >= 0.9 x raw%s | %s |\n", \
	       name, show(v, "GB/s"), show(raw_bw, "GB/s"), ratio(v, raw_bw), \
	       have_fi ? show(fi_bw, "GB/s") : "not built", ratio(v, fi_bw), \
	       have_fi ? ", > fi_write" : "", \
	       verdict(v, raw_bw != "" && v >= 0.9 * raw_bw, \
		       fi_bw != "" && v > fi_bw, "< 0.9 x raw", "<= fi_write")
}
BEGIN {
	print "| measure | softrdma | raw host | softrdma/raw | " \
	      "libfabric shm | softrdma/shm | target | result |"
	print "|---|---|---|---|---|---|---|---|"
	bw_row("ib_write_bw", w_bw)
	bw_row("ib_read_bw", r_bw)
	printf "| ib_write_lat 8 B | %s | %s | %s | %s | %s | <= 1.2 x raw%s | %s |\n", \
	       show(w_lat, "us"), show(raw_lat, "us"), ratio(w_lat, raw_lat), \
	       have_fi ? show(fi_lat, "us") : "not built", ratio(w_lat, fi_lat), \
	       have_fi ? ", < fi_write" : "", \
	       verdict(w_lat, raw_lat != "" && w_lat <= 1.2 * raw_lat, \
		       fi_lat != "" && w_lat < fi_lat, "> 1.2 x raw", \
		       ">= fi_write")
	printf "| ib_send_lat 8 B | %s | - | - | - | - | <= 3 us | %s |\n", \
	       show(s_lat, "us"), verdict(s_lat, s_lat <= 3, 1, "> 3 us", "")
	print ""
	printf "raw: process_vm_writev %s, process_vm_readv %s at 1 MiB; " \
	       "8-byte cross-memory ping-pong %s one way\n", \
	       show(raw_bw, "GB/s"), show(raw_rbw, "GB/s"), show(raw_lat, "us")
}'
exit "$failed"
