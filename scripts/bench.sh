#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# bench.sh - run the benchmarks of bench/ and print their tables on the
# terminal (ctest -L bench runs the same scripts but shows their output
# only with -V).
#
# Usage: scripts/bench.sh [--full] [reg] [data] [net] [stacks]
#   reg   memory registration: ibv_reg_mr+ibv_dereg_mr against UCX's
#         ucp_mem_map, and the mapping check at 50 and 5,000 mappings
#         (bench/run_reg_bench.sh)
#   data  the one-host data path: perftest through srdma run against the
#         host's raw cross-memory copy and libfabric's shm provider
#         (bench/run_data_bench.sh)
#   net   the RoCEv2 transport between two network namespaces against the
#         kernel's TCP and UDP on the same veth (bench/net_bench.sh; root)
#   stacks  UCX, Open MPI and libfabric on softrdma against their shared
#         memory and TCP transports (bench/stacks_bench.sh, when present)
# Default: all of them. Quick by default (one round, fewer iterations: about
# half a minute for reg and data on an idle machine, a few minutes for
# net); --full runs them as `ctest --test-dir build -L bench` does (three
# rounds, medians). Builds build/ first if it is missing. Each benchmark's
# whole output goes to build/bench-logs/NAME.log; the terminal gets its
# tables and verdicts. A missed target is a result, not a failure.
# Exit: 0, or 1 if a benchmark failed (see its log).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

quick=--quick
which=()
for a in "$@"; do
	case $a in
	--full) quick= ;;
	reg | data | net | stacks) which+=("$a") ;;
	-h | --help)
		sed -n '4,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0 ;;
	*)
		echo "usage: scripts/bench.sh [--full] [reg] [data] [net]" \
			"[stacks]" >&2
		exit 2 ;;
	esac
done
if ! ((${#which[@]})); then
	which=(reg data net)
	[ -x bench/stacks_bench.sh ] && which+=(stacks)
fi

if [ ! -x build/bin/srdma ] || [ ! -x build/bin/bench_reg_mr ]; then
	cmake -S . -B build -DSRDMA_WERROR=ON >/dev/null &&
		cmake --build build -j"$(nproc)" >/dev/null || exit 1
fi
logs=build/bench-logs
mkdir -p "$logs"
# Like the tests, the benchmarks get a state directory of their own.
state=$(mktemp -d) || exit 1
trap 'rm -rf "$state"' EXIT

rc=0
for b in "${which[@]}"; do
	case $b in
	reg)  script=bench/run_reg_bench.sh  what="memory registration" ;;
	data) script=bench/run_data_bench.sh what="one-host data path" ;;
	net)  script=bench/net_bench.sh      what="between two hosts (RoCEv2)" ;;
	stacks) script=bench/stacks_bench.sh what="UCX, Open MPI, libfabric" ;;
	esac
	args=()
	if [ "$b" = stacks ]; then	# quick by default; --full, --rounds
		[ -n "$quick" ] || args=(--full --rounds 3)
	elif [ -n "$quick" ]; then
		args=("$quick")
	fi
	if [ ! -x "$script" ]; then
		echo "== $b: $script is not in this tree"
		echo
		rc=1
		continue
	fi
	echo "== $b: $what ($script ${args[*]})"
	mkdir -p "$state/$b" && chmod 0700 "$state/$b"
	SRDMA_DIR=$state/$b "$script" "${args[@]}" build >"$logs/$b.log" 2>&1
	st=$?
	if [ $st = 77 ]; then
		echo "skipped: $(tail -n 1 "$logs/$b.log")"
		echo
		continue
	fi
	# The tables start at the first table header (reg) or at "medians
	# of" (data, net); the raw measurement lines between reg's two
	# tables are left to the log.
	if [ "$b" = stacks ]; then
		cat "$logs/$b.log"
	else
		awk '/^medians of/ || /^ *size +\|/ { p = 1 }
		     p && !/median_us=|gb_per_s=|^# |^== /' "$logs/$b.log"
	fi
	if [ $st != 0 ]; then
		echo "FAILED (exit $st): see $logs/$b.log"
		rc=1
	fi
	echo "(whole output: $logs/$b.log)"
	echo
done
exit $rc
