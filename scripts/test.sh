#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test.sh - README command 2: (re)build and run every default test with
# CTest: unit, functional, ABI, real clients and rdma-core's own suite.
# Benchmarks (label "bench"), long conformance runs (label
# "conformance-full", none today), soak runs (label "soak") and the
# slower variants of a test (label "long") and tests of a known, unfixed
# bug that fail now and then (label "flaky") are excluded; run them with
#   ctest --test-dir build -L bench   (or -L conformance-full, -L soak, -L long,
#   -L flaky)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DSRDMA_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
exec ctest --test-dir build -LE 'bench|conformance-full|soak|long|flaky' \
	--output-on-failure -j2 --timeout 600
