#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# fuzz.sh - build the libFuzzer targets with clang (build-fuzz/,
# SRDMA_FUZZ=ON: coverage + ASan + UBSan) and run each for a bounded time,
# FUZZ_SECONDS (default 60), from its seed corpus in tests/fuzz/corpus/.
# New inputs go to build-fuzz/fuzz-work/, never into the source tree.
# Fails on any crash, sanitizer report, leak or timeout; the input that
# did it is left in build-fuzz/fuzz-work/ (crash-*, leak-*, timeout-*) and
# replays with: build-fuzz/bin/fuzz_wire FILE
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
command -v clang >/dev/null || {
	echo "fuzz.sh: clang is not installed (scripts/setup.sh installs it)"
	exit 1
}
CC=clang cmake -S . -B build-fuzz -DSRDMA_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz --target fuzz_wire -j"$(nproc)" >/dev/null
work=build-fuzz/fuzz-work
rm -rf "$work"
mkdir -p "$work/corpus"
echo "== fuzz_wire: ${secs}s from $(ls tests/fuzz/corpus | wc -l) seeds"
./build-fuzz/bin/fuzz_wire -max_total_time="$secs" -max_len=9000 \
	-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/corpus" tests/fuzz/corpus 2>"$work/log" ||
	{ tail -50 "$work/log"; echo "fuzz_wire: FAILED"; exit 1; }
grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' \
	"$work/log" || true
grep -E "^Done [0-9]+ runs" "$work/log" || true
echo "fuzz_wire: no crash in ${secs}s"
