#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Run rdma-core's own pyverbs test suite (v44, installed gzipped in
# /usr/share/doc/rdma-core/tests) against the libibverbs.so.1 in BUILD_DIR/lib.
#
# usage: run_pyverbs.sh BUILD_DIR TEST_SPEC...
#   TEST_SPEC is a unittest name relative to the suite's package:
#   test_pd, test_device.DMTest, test_mr.MRTest.test_reg_mr_bad_flags, ...
#
# The suite is copied once to BUILD_DIR/rdma-core-tests/tests: it is built in
# a private temporary directory and renamed into place, so concurrent runs
# either win the rename or discard their copy. Delete that directory to
# refresh it. Fails if a test fails or errors, if no test ran (none matched,
# or every one skipped), if python dies, or if the library under test is not
# the one from BUILD_DIR/lib. Skips are allowed and listed with their reasons.
#
# Environment:
#   SRDMA_PYVERBS_TIMEOUT  seconds before the whole run is killed (default 0,
#                          none); set below the CTest TIMEOUT so the forked
#                          rdmacm children die with their parent
#   RDMA_CORE_TESTS_SRC    suite to copy (default /usr/share/doc/rdma-core/tests)
#   SRDMA_PYVERBS_ARGS     extra run_tests.py arguments (--dev, --port, --gid)
set -u

PYTHON=/usr/bin/python3
SRC=${RDMA_CORE_TESTS_SRC:-/usr/share/doc/rdma-core/tests}

die()
{
	echo "run_pyverbs: $*" >&2
	exit 2
}

[ $# -ge 2 ] || die "usage: $0 BUILD_DIR TEST_SPEC..."
BUILD_DIR=$(cd "$1" && pwd) || die "no build directory '$1'"
shift
LIBDIR=$BUILD_DIR/lib
[ -e "$LIBDIR/libibverbs.so.1" ] ||
	die "$LIBDIR/libibverbs.so.1 missing: build first (the system library would be tested instead)"
[ -x "$PYTHON" ] || die "$PYTHON not found"
[ -f "$SRC/run_tests.py" ] || die "no rdma-core test suite in $SRC"

SUITE_ROOT=$BUILD_DIR/rdma-core-tests
SUITE=$SUITE_ROOT/tests
TMP=
LOG=
cleanup()
{
	[ -n "$TMP" ] && rm -rf "$TMP"
	[ -n "$LOG" ] && rm -f "$LOG"
}
trap cleanup EXIT

# Copy and unpack the suite once. rename(2) of a directory onto an existing
# non-empty one fails, so exactly one concurrent extractor wins.
if [ ! -f "$SUITE/run_tests.py" ]; then
	mkdir -p "$SUITE_ROOT" || die "cannot create $SUITE_ROOT"
	TMP=$(mktemp -d "$SUITE_ROOT/.extract.XXXXXX") || die "mktemp failed"
	cp -r "$SRC" "$TMP/tests" || die "copy of $SRC failed"
	find "$TMP/tests" -name '*.gz' -exec gunzip -f {} + ||
		die "gunzip in $TMP/tests failed"
	if ! mv -T "$TMP/tests" "$SUITE" 2>/dev/null &&
	   [ ! -f "$SUITE/run_tests.py" ]; then
		die "cannot install the suite in $SUITE"
	fi
	rm -rf "$TMP"
	TMP=
fi

export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONFAULTHANDLER=1	# a crash in the library prints a Python stack
unset PYTHONHOME PYTHONPATH	# the pyenv python3 on PATH must not leak in
[ -n "${SRDMA_DIR:-}" ] && mkdir -p -m 0700 "$SRDMA_DIR"

# Preflight: the suite imports mlx5dv and efadv, whose provider libraries bind
# to libibverbs' private symbol versions. Check that import once, and that it
# resolved to our library, so a broken export gives one clear line instead of
# hundreds of identical import errors.
if ! "$PYTHON" - "$LIBDIR" <<'EOF'
import os, sys
try:
    import pyverbs.device
    import pyverbs.providers.mlx5.mlx5dv
    import pyverbs.providers.efa.efadv
except Exception as e:
    sys.exit(f'run_pyverbs: cannot import pyverbs: {type(e).__name__}: {e}')
want = os.path.realpath(sys.argv[1])
libs = {l.split()[-1] for l in open('/proc/self/maps')
        if '/libibverbs.so' in l}
if not any(os.path.dirname(os.path.realpath(p)) == want for p in libs):
    sys.exit(f'run_pyverbs: pyverbs loaded {sorted(libs)}, not {want}')
EOF
then
	exit 1
fi

LOG=$(mktemp) || die "mktemp failed"
# shellcheck disable=SC2086  # SRDMA_PYVERBS_ARGS is a word list
timeout --kill-after=10 "${SRDMA_PYVERBS_TIMEOUT:-0}" \
	"$PYTHON" "$SUITE/run_tests.py" -v ${SRDMA_PYVERBS_ARGS:-} "$@" \
	</dev/null 2>&1 | tee "$LOG"
rc=${PIPESTATUS[0]}

# unittest -v prints "name (id) ... result", or "name (id)" then
# "docstring ... result" for tests with a docstring. Output a test writes
# can also separate the two halves, so remember the last id seen.
echo
awk -v rc="$rc" '
	match($0, /^[A-Za-z_][A-Za-z0-9_]* \([A-Za-z_][A-Za-z0-9_.]*\)/) {
		head = substr($0, 1, RLENGTH)
		split(head, w, " ")
		id = substr(w[2], 2, length(w[2]) - 2)
		n = split(id, part, ".")
		cur = (part[n] == w[1]) ? id : w[1] " " w[2]
	}
	/(^| \.\.\. )skipped / {
		reason = $0
		sub(/^.*skipped /, "", reason)
		skips[++nskip] = cur ": " reason
		if (cur !~ /^(setUp|tearDown)(Class|Module) /)
			nskip_test++	# class-level skips are not in "Ran"
	}
	/^(ERROR|FAIL): / { bad[++nbad] = $0 }
	/^Ran [0-9]+ tests? in / { ran = $2 }
	END {
		if (ran == "")
			ran = 0
		executed = ran - nskip_test
		printf "pyverbs summary: ran %d, skipped %d, failed/errored %d, exit %d\n",
		       ran, nskip, nbad, rc
		for (i = 1; i <= nskip; i++)
			print "  SKIPPED " skips[i]
		for (i = 1; i <= nbad; i++)
			print "  " bad[i]
		if (rc == 124 || rc == 137)
			print "run_pyverbs: killed after " \
			      ENVIRON["SRDMA_PYVERBS_TIMEOUT"] " s, in " cur
		else if (rc > 128)
			print "run_pyverbs: python died of signal " rc - 128 \
			      ", in " cur
		if (ran == 0)
			print "run_pyverbs: FAIL: no test ran"
		else if (executed <= 0)
			print "run_pyverbs: FAIL: no test ran, all were skipped"
		exit (rc != 0 || executed <= 0 || nbad > 0)
	}' "$LOG"
