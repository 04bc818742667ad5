#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# check_tls.sh - keep our libraries' thread-local storage small enough to
# be dlopen()ed.
#
# The library has initial-exec TLS variables (selfcopy.c's fault guard,
# the fast clock's floor, ...), so its whole TLS block is static: the
# loader must carve it out of the few surplus bytes glibc keeps beside
# the TLS of the libraries loaded at start-up (glibc.rtld.optional_static_tls,
# 512 bytes by default, is what it promises to dlopen()). UCX dlopen()s
# its verbs module, Python loads pyverbs, and both pull libibverbs.so.1
# and librdmacm.so.1 in that way; a block too large fails there with
# "cannot allocate memory in static TLS block" (1416 bytes still loaded
# on Debian 12, 2864 did not). This checks the PT_TLS size of each
# library and of both together against that promise.
#
# Usage: check_tls.sh [BUILD_DIR]   (default $SRDMA_BUILD_DIR, then
# <source>/build). Exit: 0 within the budget, 1 over it, 2 set-up error.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${SRDMA_BUILD_DIR:-$here/../../build}}
budget=512
command -v readelf >/dev/null || { echo "check_tls: no readelf" >&2; exit 2; }
total=0
for lib in libibverbs.so.1 librdmacm.so.1; do
	f=$build/lib/$lib
	[ -e "$f" ] || { echo "check_tls: $f not built" >&2; exit 2; }
	# The TLS program header's MemSiz (hex), none: 0.
	sz=$(readelf -lW "$f" | awk '$1 == "TLS" { print $6 }')
	sz=$((${sz:-0}))
	echo "$lib: $sz bytes of static TLS"
	total=$((total + sz))
done
echo "together: $total bytes (budget $budget)"
if [ "$total" -gt "$budget" ]; then
	echo "FAIL: over glibc's default room for a dlopen()ed library's static TLS; move large per-thread data to the heap (wire.c's pre_cache and gso_cache show how)"
	exit 1
fi
echo "ok"
