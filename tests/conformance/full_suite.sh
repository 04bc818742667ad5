#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rdma-core's whole pyverbs suite (every test module of v44, vendor ones
# included) against BUILD_DIR/lib, in one run, with its counts and the
# reason for every skip, sorted into three groups:
#
#   vendor   a test of one vendor's hardware or of hardware this machine
#            lacks: modules test_mlx5_*, test_efa*, test_cuda_*, and GPU
#            dma-buf (a DRM render node's allocator);
#   link     a test of the other link layer: on an InfiniBand port the
#            tests that need an Ethernet port (raw packet QPs, flow
#            steering, RSS, RoCE address handles), and the reverse; the
#            run with the other link layer runs them;
#   other    everything else: capabilities a software device could offer.
#
# usage: full_suite.sh BUILD_DIR [--eth]
#   --eth  the port's link layer is Ethernet (SRDMA_LINK_LAYER=eth), so the
#          RoCE-only tests run instead of the InfiniBand-only ones.
#
# As root, when the machine has no 2 MiB huge pages, 64 are reserved for
# the run (and the count put back after it), so the huge-page tests
# (test_odp's, test_parent_domain's) run: CTest serialises the two runs of
# this script with a RESOURCE_LOCK on "hugepages".
#
# The suite runs under `srdma sysfs run` when that works (root, or a user
# namespace), so the tests that look up the device's network interface in
# /sys/class/infiniband see our synthesised tree. Prints
#   rdma-core suite: ran N, passed P, skipped S (vendor V, link layer L, other O), failed F
# then each "link" and "other" skip with its reason, counted by reason.
# Each run leaves its skipped tests in BUILD_DIR/full_suite_{ib,eth}.skips;
# when the other link layer's list is there too, one more line counts a
# test as skipped only when it skips on both:
#   both link layers: S tests skip on both (vendor V, other O)
# followed by the "other" ones. Exit: 0 if no
# test failed or errored and some test ran; 1 otherwise (run_pyverbs.sh's
# verdict).
set -u

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [--eth]" >&2; exit 2; }
BUILD_DIR=$(cd "$1" && pwd) || exit 2
ll=ib other_ll=eth
if [ "${2:-}" = --eth ]; then
	export SRDMA_LINK_LAYER=eth
	ll=eth other_ll=ib
fi
# The suite runs in this machine's network namespace: its multicast tests
# stay on this host (no IP group join, no datagram to the group leaves).
export SRDMA_NET_MCAST=0

SRC=${RDMA_CORE_TESTS_SRC:-/usr/share/doc/rdma-core/tests}
mods=$(cd "$SRC" && ls test_*.py test_*.py.gz 2>/dev/null |
	sed 's/\.gz$//; s/\.py$//' | sort -u)
[ -n "$mods" ] || { echo "full_suite: no test modules in $SRC"; exit 1; }

srdma=$BUILD_DIR/bin/srdma
wrap=()
if "$srdma" sysfs run -- true >/dev/null 2>&1; then
	wrap=("$srdma" sysfs run --)
else
	echo "full_suite: 'srdma sysfs run' does not work here: the tests" \
		"that need the device's net interface will skip"
fi

hp=/proc/sys/vm/nr_hugepages
hp_old=
if [ "$(id -u)" -eq 0 ] && [ -w "$hp" ] && [ "$(cat "$hp")" -eq 0 ]; then
	hp_old=0
	echo 64 >"$hp" 2>/dev/null || hp_old=
fi
[ -n "$hp_old" ] || [ "$(cat "$hp" 2>/dev/null || echo 0)" -gt 0 ] ||
	echo "full_suite: no 2 MiB huge pages (root reserves them): the huge-page tests will skip"

log=$(mktemp) || exit 1
trap 'rm -f "$log"; [ -n "$hp_old" ] && echo "$hp_old" >"$hp"' EXIT
# shellcheck disable=SC2086  # one module per word
"${wrap[@]}" bash "$here/run_pyverbs.sh" "$BUILD_DIR" $mods 2>&1 |
	tee "$log"
rc=${PIPESTATUS[0]}

: >"$BUILD_DIR/full_suite_$ll.skips.tmp"
awk -v skips_out="$BUILD_DIR/full_suite_$ll.skips.tmp" -v ll="$ll" '
	/^pyverbs summary: / {
		ran = $4 + 0; failed = $8 + 0
	}
	/^  SKIPPED / {
		line = $0
		sub(/^  SKIPPED /, "", line)
		reason = line
		sub(/^[^:]*: /, "", reason)
		vendor = line ~ /(^|[. ])(tests\.)?test_(mlx5|efa|cuda)/ ||
			 reason ~ /dmabuf is not supported by \/dev\/dri/
		link = reason ~ /on Ethernet link layer|Link layer of port=[0-9]+ is (InfiniBand|Ethernet)/
		print (vendor ? "vendor " : "other ") line > skips_out
		if (vendor) {
			nv++
		} else if (link) {
			nl++
			lk[nl] = line
			lby[reason]++
		} else {
			no++
			other[no] = line
			by[reason]++
		}
	}
	END {
		passed = ran - (nv + nl + no) - failed
		if (passed < 0)
			passed = 0
		printf "\nrdma-core suite: ran %d, passed %d, skipped %d (vendor %d, link layer %d, other %d), failed %d\n", ran, passed, nv + nl + no, nv, nl, no, failed
		if (nl) {
			if (ll == "ib")
				print "link-layer skips (they need an Ethernet port: conformance.full_suite_eth runs them), by reason:"
			else
				print "link-layer skips (they need an InfiniBand port: conformance.full_suite_ib runs them), by reason:"
			for (r in lby)
				printf "  %3d  %s\n", lby[r], r
		}
		if (no) {
			print "other skips, by reason:"
			for (r in by)
				printf "  %3d  %s\n", by[r], r
			print "other skips:"
			for (i = 1; i <= no; i++)
				print "  " other[i]
		}
	}' "$log"
# This run's skips; with the other link layer's, the tests that skip on
# both (a test is named by its module, class and method).
mv -f "$BUILD_DIR/full_suite_$ll.skips.tmp" "$BUILD_DIR/full_suite_$ll.skips" 2>/dev/null
if [ -f "$BUILD_DIR/full_suite_$other_ll.skips" ]; then
	awk '
		{ name = $2; sub(/:$/, "", name) }
		FNR == NR { seen[name] = 1; next }
		name in seen && !(name in done) {
			done[name] = 1
			if ($1 == "vendor") {
				bv++
			} else {
				bo++
				line = $0
				sub(/^other /, "", line)
				both[bo] = line
			}
		}
		END {
			printf "both link layers: %d tests skip on both (vendor %d, other %d)\n", bv + bo, bv, bo
			for (i = 1; i <= bo; i++)
				print "  " both[i]
		}' "$BUILD_DIR/full_suite_$other_ll.skips" "$BUILD_DIR/full_suite_$ll.skips"
fi
exit "$rc"
