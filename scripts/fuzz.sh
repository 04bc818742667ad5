#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# fuzz.sh - build the libFuzzer targets with clang (build-fuzz/,
# SRDMA_FUZZ=ON: coverage + ASan + UBSan) and run them for a bounded time,
# FUZZ_SECONDS in all (default 60, shared evenly), each from its seed
# corpus:
#   fuzz_wire   the parser and the ICRC checks    tests/fuzz/corpus/
#   fuzz_resp   the responder and the requester's  tests/fuzz/corpus-resp/
#               response input, behind the parser
# New inputs go to build-fuzz/fuzz-work/, never into the source tree.
# Fails on any crash, sanitizer report, leak or timeout; the input that
# did it is left in build-fuzz/fuzz-work/<target>/ (crash-*, leak-*,
# timeout-*) and replays with: build-fuzz/bin/<target> FILE
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-60}
targets=(fuzz_wire:corpus fuzz_resp:corpus-resp)
command -v clang >/dev/null || {
	echo "fuzz.sh: clang is not installed (scripts/setup.sh installs it)"
	exit 1
}
CC=clang cmake -S . -B build-fuzz -DSRDMA_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz --target "${targets[@]%%:*}" -j"$(nproc)" >/dev/null
each=$((secs / ${#targets[@]}))
((each > 0)) || each=1
rm -rf build-fuzz/fuzz-work
for t in "${targets[@]}"; do
	name=${t%%:*}
	seeds=tests/fuzz/${t#*:}
	work=build-fuzz/fuzz-work/$name
	mkdir -p "$work/corpus" "$work/state"
	chmod 700 "$work/state"
	echo "== $name: ${each}s from $(ls "$seeds" | wc -l) seeds"
	SRDMA_DIR=$PWD/$work/state ./build-fuzz/bin/"$name" \
		-max_total_time="$each" -max_len=9000 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$work/" "$work/corpus" "$seeds" 2>"$work/log" ||
		{ tail -60 "$work/log"; echo "$name: FAILED"; exit 1; }
	grep -E '^stat::(number_of_executed_units|new_units_added)' \
		"$work/log" || true
	grep -E '^#[0-9]+[[:space:]]+DONE' "$work/log" || true
	echo "$name: no crash in ${each}s"
done
