#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_openib.sh - Open MPI 4.1's openib BTL on srdma0 (TAP).
#
# openib first stats "<ibv_get_sysfs_path()>/class/infiniband" and gives up
# when it is missing; the library reports its synthesised tree, so this
# works without root and without `srdma sysfs mount`. The only BTLs allowed
# are openib and self (no shared memory, no TCP), so every message between
# ranks goes through verbs. mpi_openib checks every byte of a ping-pong
# from 1 B to 4 MiB and an allreduce element by element, on 2 and 4 ranks.
#
# Usage: test_openib.sh SRDMA_EXE MPI_OPENIB_EXE (CTest sets SRDMA_DIR).
set -u

SRDMA=${1:?usage: test_openib.sh SRDMA_EXE MPI_OPENIB_EXE}
PROG=${2:?usage: test_openib.sh SRDMA_EXE MPI_OPENIB_EXE}
unset SRDMA_DEVICE SRDMA_LINK_LAYER SRDMA_TRANSPORT SYSFS_PATH SRDMA_SYSFS
command -v mpirun >/dev/null || {
	echo "1..0 # SKIP mpirun not installed (scripts/setup.sh)"
	exit 77
}
[ -n "${SRDMA_DIR:-}" ] || { echo "SRDMA_DIR not set"; exit 2; }
mkdir -p -m 0700 "$SRDMA_DIR"
LIBDIR=$(readlink -f "$(dirname "$SRDMA")/../lib")
WORK=$(mktemp -d /tmp/srdma-openib.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

ntest=0
failed=0
ok() { ntest=$((ntest + 1)); echo "ok $ntest - $*"; }
not_ok() { ntest=$((ntest + 1)); failed=$((failed + 1)); echo "not ok $ntest - $*"; }
diag() { sed 's/^/# /'; }

root=
[ "$(id -u)" = 0 ] && root=--allow-run-as-root
for np in 2 4; do
	# The environment reaches the ranks through mpirun -x.
	timeout 240 mpirun $root --oversubscribe -np $np \
		-x SRDMA_DIR -x LD_LIBRARY_PATH="$LIBDIR" \
		--mca pml ob1 --mca btl openib,self \
		--mca btl_openib_allow_ib 1 \
		--mca btl_openib_warn_no_device_params_found 0 \
		--mca btl_openib_warn_default_gid_prefix 0 \
		--mca btl_base_verbose 100 \
		"$PROG" >"$WORK/out.$np" 2>&1
	rc=$?
	grep -E "^(wireup|pingpong|PASS|FAIL)" "$WORK/out.$np" | diag
	if [ $rc -eq 0 ] && grep -q "^PASS: $np ranks, 0 bad" "$WORK/out.$np" &&
		grep -q "openib: using port srdma0:1" "$WORK/out.$np"; then
		ok "$np ranks over openib: ping-pong 1 B..2 MiB and allreduce checked"
	else
		not_ok "$np ranks over openib (exit $rc)"
		grep -vE "^(wireup|pingpong|PASS)" "$WORK/out.$np" | tail -40 | diag
	fi
done
# The same 2-rank run over shared memory, for the figures only.
timeout 120 mpirun $root --oversubscribe -np 2 --mca pml ob1 \
	--mca btl vader,self "$PROG" >"$WORK/out.vader" 2>&1
rc=$?
echo "# for comparison, 2 ranks over shared memory (btl vader,self):"
grep -E "^(wireup|pingpong|PASS|FAIL)" "$WORK/out.vader" | diag
if [ $rc -eq 0 ] && grep -q "^PASS: 2 ranks, 0 bad" "$WORK/out.vader"; then
	ok "2 ranks over vader (reference)"
else
	not_ok "2 ranks over vader (reference, exit $rc)"
	tail -20 "$WORK/out.vader" | diag
fi
echo "1..$ntest"
[ "$failed" -eq 0 ]
