#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_srdma.sh - the srdma command, end to end (TAP output).
#
#   run      LD_LIBRARY_PATH gets softrdma's lib dir first (and keeps what
#            was there), SRDMA_LIBDIR overrides it, PROGRAM's exit status
#            is passed through, 127 when PROGRAM cannot be executed, and a
#            Debian binary (ibv_devinfo) sees the srdma0 device.
#   status   lists a live mr_holder (pid, alive) and every MR it printed
#            with its key, range, length and access; a clean close removes
#            the context; after SIGKILL the context is shown dead, left
#            alone with --no-reap, then reaped: registry entry and segment
#            file gone; a segment file no registry entry names is removed
#            once its owner is dead.
#
# Usage: test_srdma.sh SRDMA_EXE MR_HOLDER_EXE (CTest passes both and sets
# SRDMA_DIR to a directory of this test's own).
set -u

SRDMA=${1:?usage: test_srdma.sh SRDMA_EXE MR_HOLDER_EXE}
HOLDER=${2:?usage: test_srdma.sh SRDMA_EXE MR_HOLDER_EXE}
if [ -z "${SRDMA_DIR:-}" ]; then
	SRDMA_DIR=$(mktemp -d /tmp/srdma-test.XXXXXX)
	rmdir "$SRDMA_DIR"
fi
export SRDMA_DIR
unset SRDMA_LIBDIR SRDMA_DEVICE SRDMA_LINK_LAYER
LIBDIR=$(readlink -f "$(dirname "$SRDMA")/../lib")

ntest=0
failed=0
ok() {
	ntest=$((ntest + 1))
	echo "ok $ntest - $*"
}
not_ok() {
	ntest=$((ntest + 1))
	failed=$((failed + 1))
	echo "not ok $ntest - $*"
}
# check DESCRIPTION COMMAND...: one TAP line for COMMAND's success.
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
# Print a command's output indented, as TAP diagnostics.
diag() {
	sed 's/^/# /'
}

holders=()
cleanup() {
	local p
	for p in "${holders[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	rm -rf "$SRDMA_DIR" "${WORK:-}"
}
trap cleanup EXIT

# IBV_ACCESS_* bits as srdma status spells them, in its order.
decode_access() {
	local a=$(($1)) out="" i
	local -a names=(LW RW RR RA MW ZB ODP HUGETLB)
	for i in "${!names[@]}"; do
		if ((a & (1 << i))); then out+="${out:+,}${names[$i]}"; fi
	done
	echo "${out:--}"
}

# ---- help and usage -----------------------------------------------------
check "srdma help exits 0 and prints usage" \
	bash -c '"$0" help | grep -q "usage: srdma"' "$SRDMA"
check "srdma with no arguments prints usage to stderr" \
	bash -c '"$0" 2>&1 >/dev/null | grep -q "usage: srdma"' "$SRDMA"
"$SRDMA" >/dev/null 2>&1
check "srdma with no arguments exits 2" test $? -eq 2
"$SRDMA" frobnicate >/dev/null 2>&1
check "unknown command exits 2" test $? -eq 2

# ---- srdma run -----------------------------------------------------------
out=$("$SRDMA" run -- env | sed -n 's/^LD_LIBRARY_PATH=//p')
check "run -- env: LD_LIBRARY_PATH is $LIBDIR" test "$out" = "$LIBDIR"
out=$(LD_LIBRARY_PATH=/nonexistent/a "$SRDMA" run env |
	sed -n 's/^LD_LIBRARY_PATH=//p')
check "run env (no --) prepends and keeps the old path" \
	test "$out" = "$LIBDIR:/nonexistent/a"
out=$(SRDMA_LIBDIR=/opt/srdma-lib "$SRDMA" run -- env |
	sed -n 's/^LD_LIBRARY_PATH=//p')
check "SRDMA_LIBDIR overrides the lib dir" test "$out" = /opt/srdma-lib
"$SRDMA" run -- sh -c 'exit 3'
check "run passes PROGRAM's exit status through" test $? -eq 3
err=$("$SRDMA" run -- /nonexistent/program 2>&1)
rc=$?
check "run of a missing program exits 127" test $rc -eq 127
check "... and says why" grep -q "cannot execute '/nonexistent/program'" \
	<<<"$err"
"$SRDMA" run >/dev/null 2>&1
check "run without a program exits 2" test $? -eq 2

# ---- status and devices with nothing running ----------------------------
rm -rf "$SRDMA_DIR"
out=$("$SRDMA" status)
rc=$?
check "status with no contexts exits 0" test $rc -eq 0
check "... says there are none" grep -q "no softrdma contexts" <<<"$out"
check "... and creates no registry" test ! -e "$SRDMA_DIR/registry"
check "devices lists srdma0" bash -c '"$0" devices | grep -qw srdma0' \
	"$SRDMA"
check "devices honours SRDMA_DEVICE" \
	bash -c 'SRDMA_DEVICE=mydev0 "$0" devices | grep -qw mydev0' "$SRDMA"

# ---- a Debian binary on softrdma -----------------------------------------
if [ -x /usr/bin/ibv_devinfo ]; then
	out=$("$SRDMA" run -- /usr/bin/ibv_devinfo 2>&1)
	if grep -Eq "hca_id:[[:space:]]+srdma0" <<<"$out"; then
		ok "srdma run -- ibv_devinfo shows srdma0"
	else
		not_ok "srdma run -- ibv_devinfo shows srdma0"
		diag <<<"$out"
	fi
else
	ok "# SKIP ibv_devinfo not installed (ibverbs-utils)"
fi

# ---- status with a live process holding MRs -------------------------------
# start_holder TAG: run mr_holder under srdma run, its stdin and stdout on
# FIFOs; read its report until "ready" into holder_pid, holder_bg (the pid
# of the job), holder_in (fd of its stdin), holder_mrs[], holder_mws[].
start_holder() {
	local line out
	mkfifo "$WORK/$1.in" "$WORK/$1.out"
	"$SRDMA" run -- "$HOLDER" <"$WORK/$1.in" >"$WORK/$1.out" 2>&1 &
	holder_bg=$!
	holders+=("$holder_bg")
	exec {holder_in}>"$WORK/$1.in"
	exec {out}<"$WORK/$1.out"
	holder_pid=""
	holder_mrs=()
	holder_mws=()
	holder_ready=0
	while IFS= read -r -t 30 line <&"$out"; do
		case $line in
		"pid "*) holder_pid=${line#pid } ;;
		"mr "*) holder_mrs+=("$line") ;;
		"mw "*) holder_mws+=("$line") ;;
		"pd "*) ;;
		ready) holder_ready=1; break ;;
		*) echo "# mr_holder: $line" ;;
		esac
	done
	exec {out}<&-
}

WORK=$(mktemp -d /tmp/test_srdma.XXXXXX)
start_holder one
if [ "$holder_ready" != 1 ] || [ "$holder_pid" != "$holder_bg" ]; then
	not_ok "mr_holder opened the device and registered its MRs"
	echo "1..$ntest"
	exit 1
fi
ok "mr_holder (pid $holder_pid) registered ${#holder_mrs[@]} MRs"
pid=$holder_pid
seg=("$SRDMA_DIR"/ctx.*."$pid")
check "its segment file exists" test -f "${seg[0]}"

out=$("$SRDMA" status)
rc=$?
check "status exits 0" test $rc -eq 0
check "status lists pid $pid as alive" \
	grep -Eq "^ *[0-9]+ +$pid +alive +srdma0 " <<<"$out"
for mr in "${holder_mrs[@]}"; do
	read -r _ _ lkey _ rkey _ addr _ len _ access <<<"$mr"
	end=$(printf '%#x' $((addr + len)))
	acc=$(decode_access "$access")
	re="^ *[0-9]+ +$pid +MR +($lkey|$rkey) +VALID +\[$addr, $end\) +$len +$acc "
	check "status shows MR $lkey [$addr, $end) len $len access $acc" \
		grep -Eq "$re" <<<"$out"
done
for mw in "${holder_mws[@]}"; do
	read -r _ _ rkey _ type <<<"$mw"
	check "status shows MW$type $rkey" \
		grep -Eq "^ *[0-9]+ +$pid +MW$type +$rkey " <<<"$out"
done
out_all=$("$SRDMA" status --all)
check "status --all shows the segment file" \
	grep -q "$(basename "${seg[0]}")" <<<"$out_all"
if [ "$failed" -ne 0 ]; then diag <<<"$out"; fi

# ---- a clean close removes the context -----------------------------------
start_holder two
pid2=$holder_pid
out=$("$SRDMA" status)
check "a second holder (pid $pid2) is listed too" \
	grep -Eq "^ *[0-9]+ +$pid2 +alive " <<<"$out"
exec {holder_in}>&-		# EOF on its stdin: clean exit
wait "$holder_bg"
check "the second holder released everything cleanly" test $? -eq 0
out=$("$SRDMA" status)
check "after close, status no longer lists pid $pid2" \
	bash -c '! grep -Eq "^ *[0-9]+ +$0 " <<<"$1"' "$pid2" "$out"
check "... and its segment file is gone" \
	bash -c 'ls "$0"/ctx.*."$1" >/dev/null 2>&1 && exit 1 || exit 0' \
	"$SRDMA_DIR" "$pid2"

# ---- SIGKILL: dead, not reaped with --no-reap, then reaped --------------
kill -9 "$pid"
wait "$pid" 2>/dev/null		# reap it: a zombie still looks alive
out=$("$SRDMA" status --no-reap)
check "after SIGKILL, status --no-reap shows pid $pid dead" \
	grep -Eq "^ *[0-9]+ +$pid +dead " <<<"$out"
check "... says it left it in place" grep -q "not reaped (--no-reap)" \
	<<<"$out"
check "... and the segment file is still there" test -f "${seg[0]}"
out=$("$SRDMA" status)
check "status shows pid $pid dead" grep -Eq "^ *[0-9]+ +$pid +dead " \
	<<<"$out"
check "... and reaps it" grep -Eq "^reaped lid [0-9]+ pid $pid " <<<"$out"
check "the dead process's segment file is gone" test ! -e "${seg[0]}"
out=$("$SRDMA" status)
check "the next status no longer lists pid $pid" \
	bash -c '! grep -Eq "^ *[0-9]+ +$0 " <<<"$1"' "$pid" "$out"
if [ "$failed" -ne 0 ]; then diag <<<"$out"; fi

# ---- orphaned segment files ----------------------------------------------
# A process that dies inside ibv_open_device after creating its segment but
# before publishing it leaves a file no registry entry names.
true &
deadpid=$!
wait "$deadpid"
truncate -s 8192 "$SRDMA_DIR/ctx.7.$deadpid"
truncate -s 8192 "$SRDMA_DIR/ctx.8.$$"	# owner alive: mid-attach, keep
out=$("$SRDMA" status --no-reap)
check "status --no-reap lists an orphaned segment of a dead pid" \
	grep -q "orphaned segment ctx.7.$deadpid .*not removed" <<<"$out"
check "... and leaves it" test -e "$SRDMA_DIR/ctx.7.$deadpid"
out=$("$SRDMA" status)
check "status removes the orphaned segment" \
	grep -q "removed orphaned segment ctx.7.$deadpid " <<<"$out"
check "... whose file is gone" test ! -e "$SRDMA_DIR/ctx.7.$deadpid"
check "... but keeps one whose pid is alive" test -e "$SRDMA_DIR/ctx.8.$$"
rm -f "$SRDMA_DIR/ctx.8.$$"

echo "1..$ntest"
[ "$failed" -eq 0 ]
