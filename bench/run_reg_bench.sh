#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run_reg_bench.sh - issue 2: softrdma's ibv_reg_mr+ibv_dereg_mr against
# UCX's ucp_mem_map+ucp_mem_unmap, same sizes, same run, same machine.
#
# Usage: run_reg_bench.sh [--quick] [BUILD_DIR]   (default: ../build)
#
# Builds nothing. Runs bench_reg_mr (softrdma, through its RPATH) and then
# bench_ucp_mem with LD_LIBRARY_PATH/LD_PRELOAD removed, so UCX and its IB
# module see the system libibverbs, and UCX_TLS=self,sm unless the caller
# set UCX_TLS. Prints a table of medians and whether the target (ratio
# softrdma/UCX <= 1.0 at every size) is met. A missed target is a result,
# not a failure: exit 0. Exit 1 if a benchmark failed, 77 (skip) if
# bench_ucp_mem was not built.
set -u

quick=
if [ "${1:-}" = "--quick" ]; then
	quick=--quick
	shift
fi
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
srdma_bin=$build/bin/bench_reg_mr
ucx_bin=$build/bin/bench_ucp_mem

for bin in "$srdma_bin" "$ucx_bin"; do
	if [ ! -x "$bin" ]; then
		echo "run_reg_bench: $bin not built" >&2
		[ "$bin" = "$ucx_bin" ] && exit 77
		exit 1
	fi
done

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT

"$srdma_bin" $quick >>"$out" || {
	cat "$out"
	echo "run_reg_bench: bench_reg_mr failed" >&2
	exit 1
}
env -u LD_LIBRARY_PATH -u LD_PRELOAD UCX_TLS="${UCX_TLS:-self,sm}" \
	"$ucx_bin" $quick >>"$out" || {
	cat "$out"
	echo "run_reg_bench: bench_ucp_mem failed" >&2
	exit 1
}
cat "$out"
echo

awk '
function field(name,   i) {
	for (i = 2; i <= NF; i++)
		if (index($i, name "=") == 1)
			return substr($i, length(name) + 2)
	return ""
}
$1 == "srdma" {
	s = field("size")
	srdma[s] = field("median_us")
	order[n++] = s
}
$1 == "ucx"   { ucx[field("size")] = field("median_us") }
END {
	met = 1
	printf "%12s | %16s | %12s | %s\n", "size", "softrdma median", \
	       "UCX median", "ratio (softrdma/UCX)"
	for (i = 0; i < n; i++) {
		s = order[i]
		if (!(s in ucx) || ucx[s] <= 0) {
			printf "%12s | %13s us | %12s | %s\n", s, srdma[s], "-", "-"
			met = 0
			continue
		}
		r = srdma[s] / ucx[s]
		if (r > 1.0)
			met = 0
		printf "%12s | %13s us | %9s us | %.2f%s\n", s, srdma[s], \
		       ucx[s], r, (r > 1.0 ? "  MISSED" : "")
	}
	if (n == 0)
		met = 0
	print (met ? "target met: ratio <= 1.0 at every size" \
		   : "target NOT met: ratio > 1.0 (or missing) at some size")
}' "$out"
exit 0
