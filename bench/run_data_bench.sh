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
# Bandwidth is GB/s (10^9 bytes; perftest's MB/sec is MiB/s and is
# converted), latency is one way: perftest's t_typical (its median) and
# the benchmarks' median of round trip / 2. A missed target is a result,
# not a failure: exit 0. Exit 1 if a measurement failed (its output is
# printed; the table shows "failed").
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
	bw_iters=500 lat_iters=2000
else
	bw_iters=2000 lat_iters=20000
fi

out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
failed=0

# run NAME COMMAND...: output to $out/NAME; on failure print it.
run()
{
	local name=$1

	shift
	echo "== $name: $*"
	if "$@" >"$out/$name" 2>&1; then
		grep -E '^(xmem|fi_)' "$out/$name" || true
		return 0
	fi
	cat "$out/$name"
	echo "run_data_bench: $name failed"
	failed=1
	return 1
}

# pair NAME KIND PORT PROGRAM ARGS...: one perftest pair; the client's
# output goes to $out/NAME.client.
pair()
{
	local name=$1 kind=$2 port=$3

	shift 3
	run "$name" bash "$run_pair" --timeout 150 \
		--client-log "$out/$name.client" "$kind" "$port" "$srdma" \
		"$@" && grep -E '^ *#bytes|^ *[0-9]+ +[0-9]+ ' \
		"$out/$name.client"
}

run xmem "$xmem" $quick
if [ -x "$fishm" ]; then
	run fi_shm "$fishm" $quick
else
	echo "== fi_shm: bench_fi_shm not built (no libfabric): skipped"
fi
pair write_bw bw 18700 ib_write_bw -d srdma0 -s 1048576 -n "$bw_iters"
pair read_bw bw 18701 ib_read_bw -d srdma0 -s 1048576 -n "$bw_iters"
pair write_lat lat 18702 ib_write_lat -d srdma0 -s 8 -n "$lat_iters"
pair send_lat lat 18703 ib_send_lat -d srdma0 -s 8 -n "$lat_iters"
echo

# key=value field of the line starting with WORD in FILE (empty if none).
field()
{
	[ -f "$1" ] || return 0
	awk -v w="$2" -v k="$3" '$1 == w {
		for (i = 2; i <= NF; i++)
			if (index($i, k "=") == 1) {
				print substr($i, length(k) + 2)
				exit
			}
	}' "$1"
}

# Column COL of perftest's results row in FILE: the first line after the
# "#bytes" header whose fields are all numbers.
perf()
{
	[ -f "$1" ] || return 0
	awk -v c="$2" '/#bytes/ { hdr = 1; next }
	hdr {
		for (i = 1; i <= NF; i++)
			if ($i !~ /^[0-9]+(\.[0-9]+)?$/)
				next
		if (NF >= c) {
			print $c
			exit
		}
	}' "$1"
}

raw_bw=$(field "$out/xmem" xmem_writev gb_per_s)
raw_rbw=$(field "$out/xmem" xmem_readv gb_per_s)
raw_lat=$(field "$out/xmem" xmem_pingpong median_us)
fi_bw=$(field "$out/fi_shm" fi_write gb_per_s)
fi_lat=$(field "$out/fi_shm" fi_write_pingpong median_us)
# perftest bandwidth: BW average [MiB/s] is column 4; latency t_typical 5.
mib=$(perf "$out/write_bw.client" 4)
w_bw=${mib:+$(awk -v m="$mib" 'BEGIN { printf "%.2f", m * 1048576 / 1e9 }')}
mib=$(perf "$out/read_bw.client" 4)
r_bw=${mib:+$(awk -v m="$mib" 'BEGIN { printf "%.2f", m * 1048576 / 1e9 }')}
w_lat=$(perf "$out/write_lat.client" 5)
s_lat=$(perf "$out/send_lat.client" 5)

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
# One bandwidth row: >= 0.9 x raw writev and above fi_write.
function bw_row(name, v,   ok) {
	ok = v != "" && raw_bw != "" && v >= 0.9 * raw_bw
	if (have_fi)
		ok = ok && fi_bw != "" && v > fi_bw
	printf "| %s 1 MiB | %s | %s | %s | %s | %s | >= 0.9 x raw%s | %s |\n", \
	       name, show(v, "GB/s"), show(raw_bw, "GB/s"), ratio(v, raw_bw), \
	       have_fi ? show(fi_bw, "GB/s") : "not built", ratio(v, fi_bw), \
	       have_fi ? ", > fi_write" : "", ok ? "met" : "MISSED"
}
BEGIN {
	print "| measure | softrdma | raw host | softrdma/raw | " \
	      "libfabric shm | softrdma/shm | target | result |"
	print "|---|---|---|---|---|---|---|---|"
	bw_row("ib_write_bw", w_bw)
	bw_row("ib_read_bw", r_bw)
	ok = w_lat != "" && raw_lat != "" && w_lat <= 1.2 * raw_lat
	if (have_fi)
		ok = ok && fi_lat != "" && w_lat < fi_lat
	printf "| ib_write_lat 8 B | %s | %s | %s | %s | %s | <= 1.2 x raw%s | %s |\n", \
	       show(w_lat, "us"), show(raw_lat, "us"), ratio(w_lat, raw_lat), \
	       have_fi ? show(fi_lat, "us") : "not built", ratio(w_lat, fi_lat), \
	       have_fi ? ", < fi_write" : "", ok ? "met" : "MISSED"
	ok = s_lat != "" && s_lat <= 3
	printf "| ib_send_lat 8 B | %s | - | - | - | - | <= 3 us | %s |\n", \
	       show(s_lat, "us"), ok ? "met" : "MISSED"
	print ""
	printf "raw: process_vm_writev %s, process_vm_readv %s at 1 MiB; " \
	       "8-byte cross-memory ping-pong %s one way\n", \
	       show(raw_bw, "GB/s"), show(raw_rbw, "GB/s"), show(raw_lat, "us")
}'
exit "$failed"
