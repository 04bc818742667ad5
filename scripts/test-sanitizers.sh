#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test-sanitizers.sh - build the library and its own tests with ASan+UBSan
# (with LeakSanitizer) and with ThreadSanitizer (CMakePresets.json "asan"
# and "tsan", build-asan/ and build-tsan/), and run the unit, functional
# and tool tests under each. Any sanitizer report fails the test that
# produced it (options in tests/CMakeLists.txt), and every report is also
# written to build-<preset>/sanitizer-reports/, one file per process: a
# report from a forked child that nobody waited for fails the run as well.
# Debian's client binaries are not instrumented and are left to the
# default run (scripts/test.sh). Usage: scripts/test-sanitizers.sh [asan|tsan]...
set -euo pipefail
cd "$(dirname "$0")/.."
presets=("$@")
((${#presets[@]})) || presets=(asan tsan)
rc=0
for p in "${presets[@]}"; do
	echo "== sanitizer preset: $p"
	cmake --preset "$p" >/dev/null
	cmake --build --preset "$p" -j"$(nproc)" >/dev/null
	reports="build-$p/sanitizer-reports"
	rm -rf "$reports" && mkdir -p "$reports"
	ctest --preset "$p" -j2 --timeout 600 || rc=1
	if compgen -G "$reports/*" >/dev/null; then
		echo "== $p: sanitizer reports (any report is a failure):"
		for f in "$reports"/*; do
			echo "-- $f"
			cat "$f"
		done
		rc=1
	fi
done
exit $rc
