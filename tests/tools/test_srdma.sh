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
#   resources  a live res_holder (PDs, CQs, an SRQ, RC/UC/UD QPs, sends
#            left unpolled): status shows every PD with its users, each CQ
#            with its size and fill, the SRQ's depth and posted count,
#            every QP with type, state, peer, PSNs and counters; --json
#            says the same in one valid JSON document (python3 json.tool
#            and field checks); after SIGKILL the dead owner's resources
#            are still shown (--no-reap), then reaped.
#
# Usage: test_srdma.sh SRDMA_EXE MR_HOLDER_EXE RES_HOLDER_EXE (CTest
# passes them and sets SRDMA_DIR to a directory of this test's own).
set -u

SRDMA=${1:?usage: test_srdma.sh SRDMA_EXE MR_HOLDER_EXE}
HOLDER=${2:?usage: test_srdma.sh SRDMA_EXE MR_HOLDER_EXE}
RES_HOLDER=${3:-}
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
# The signal watch for a libibverbs loaded after the C library: last on
# LD_PRELOAD (a sanitizer runtime there stays first), once, and not with
# SRDMA_SIGWATCH=0. A sanitizer build of srdma preloads nothing.
if ldd "$SRDMA" | grep -Eq 'lib(asan|tsan)'; then
	ok "# SKIP the sigwatch preload: a sanitizer build preloads none"
else
	SW=$LIBDIR/libsrdma_sigwatch.so
	out=$(env -u LD_PRELOAD "$SRDMA" run -- env | sed -n 's/^LD_PRELOAD=//p')
	check "run preloads libsrdma_sigwatch.so" test "$out" = "$SW"
	out=$(LD_PRELOAD=/nonexistent/x.so "$SRDMA" run -- env 2>/dev/null |
		sed -n 's/^LD_PRELOAD=//p')
	check "... last, after what was preloaded" \
		test "$out" = "/nonexistent/x.so:$SW"
	out=$(env -u LD_PRELOAD "$SRDMA" run -- "$SRDMA" run -- env |
		sed -n 's/^LD_PRELOAD=//p')
	check "... once in a nested run" test "$out" = "$SW"
	out=$(env -u LD_PRELOAD SRDMA_SIGWATCH=0 "$SRDMA" run -- env |
		sed -n 's/^LD_PRELOAD=//p')
	check "... not with SRDMA_SIGWATCH=0" test -z "$out"
fi
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

# ---- every resource: res_holder ------------------------------------------
if [ -n "$RES_HOLDER" ]; then
	mkfifo "$WORK/res.in" "$WORK/res.out"
	"$SRDMA" run -- "$RES_HOLDER" <"$WORK/res.in" >"$WORK/res.out" 2>&1 &
	res_bg=$!
	holders+=("$res_bg")
	exec {res_in}>"$WORK/res.in"
	exec {out}<"$WORK/res.out"
	res_lines=()
	res_ready=0
	while IFS= read -r -t 30 line <&"$out"; do
		[ "$line" = ready ] && { res_ready=1; break; }
		res_lines+=("$line")
	done
	exec {out}<&-
	check "res_holder made its resources" test "$res_ready" = 1
	rpid=""
	for line in "${res_lines[@]}"; do
		case $line in "pid "*) rpid=${line#pid } ;; esac
	done
	# The sends complete within post_send on one host; wait until the
	# CQs show them (a loaded machine may be slow to get there).
	for _ in $(seq 50); do
		out=$("$SRDMA" status)
		grep -Eq "^ *[0-9]+ +$rpid +[0-9]+ +LIVE +16 +16 +3 " \
			<<<"$out" && break
		sleep 0.1
	done
	check "status shows the holder's context and QPN range" \
		grep -Eq "^ *[0-9]+ +$rpid +alive +srdma0 +0x[0-9a-f]+-0x[0-9a-f]+ " \
		<<<"$out"
	check "status shows the second PD, unused" \
		grep -Eq "^ *[0-9]+ +$rpid +2 +0 +0 +0 +0 +0$" <<<"$out"
	check "... the first PD with 7 users (1 MR, 5 QPs, 1 SRQ)" \
		grep -Eq "^ *[0-9]+ +$rpid +1 +7 +1 +0 +5 +1$" <<<"$out"
	check "... the send CQ: cqe 64, 3 entries waiting, no channel" \
		grep -Eq "^ *[0-9]+ +$rpid +[0-9]+ +LIVE +64 +64 +3 +- +no +no$" \
		<<<"$out"
	check "... the receive CQ: cqe 16, 3 waiting, channel 0" \
		grep -Eq "^ *[0-9]+ +$rpid +[0-9]+ +LIVE +16 +16 +3 +0 +no +no$" \
		<<<"$out"
	check "... the SRQ: depth 32, 2 posted" \
		grep -Eq "^ *[0-9]+ +$rpid +0 +LIVE +1 +32 +2 +1 +0$" <<<"$out"
	nqp=0
	for line in "${res_lines[@]}"; do
		case $line in "qp "*) ;; *) continue ;; esac
		read -r _ kind _ qpn _ dest _ sq _ rq <<<"$line"
		type=${kind^^}
		nqp=$((nqp + 1))
		if [ "$kind" = ud ]; then
			peer="qkey 0x11111111"
			rq=0x000000
		else
			peer="$dest pid $rpid"
		fi
		re="^ *[0-9]+ +$rpid +$qpn +$type +RTS +1 +host +$peer +$sq +$rq "
		check "... $type QP $qpn: RTS, peer $peer, PSNs $sq/$rq" \
			grep -Eq "$re" <<<"$out"
	done
	check "... 5 QPs in all" test "$nqp" -eq 5
	check "... the RC sender: 3 sends, RQ 1/32" \
		grep -Eq "^ *[0-9]+ +$rpid +0x[0-9a-f]+1 +RC .* 3 +0 +0 +1/32 " \
		<<<"$out"
	check "... the RC receiver: 3 receives, from the SRQ" \
		grep -Eq "^ *[0-9]+ +$rpid +0x[0-9a-f]+2 +RC .* 0 +3 +0 +srq 0 " \
		<<<"$out"
	if [ "$failed" -ne 0 ]; then diag <<<"$out"; fi

	json=$("$SRDMA" status --json)
	check "status --json is one valid JSON document" \
		bash -c 'python3 -m json.tool >/dev/null <<<"$0"' "$json"
	printf '%s\n' "$json" >"$WORK/status.json"
	pyout=$(python3 - "$rpid" "$WORK/status.json" 2>&1 <<'PY'
import json, sys
pid = int(sys.argv[1])
d = json.load(open(sys.argv[2]))
mine = lambda sec: [o for o in d[sec] if o["pid"] == pid]
ctx = mine("contexts")[0]
assert ctx["state"] == "alive" and ctx["pds"] == 2, ctx
assert ctx["cqs"] == 2 and ctx["qps"] == 5 and ctx["srqs"] == 1, ctx
cqs = sorted(mine("cqs"), key=lambda c: c["cqe"])
assert [(c["cqe"], c["fill"]) for c in cqs] == [(16, 3), (64, 3)], cqs
assert cqs[0]["channel"] == 0 and cqs[1]["channel"] is None, cqs
srq = mine("srqs")[0]
assert srq["depth"] == 32 and srq["posted"] == 2, srq
qps = mine("qps")
assert sorted(q["type"] for q in qps) == ["RC", "RC", "UC", "UC", "UD"]
for q in qps:
    assert q["state"] == "RTS" and q["pd"] == 1, q
    if q["type"] != "UD":
        assert q["dest_pid"] == pid and "dest_qpn" in q, q
rc = sorted((q for q in qps if q["type"] == "RC"), key=lambda q: q["qpn"])
assert rc[0]["sends"] == 3 and rc[0]["rq_posted"] == 1, rc[0]
assert rc[1]["recvs"] == 3 and rc[1]["srq"] == 0, rc[1]
assert rc[0]["sq_psn"] == 0x111111 and rc[0]["rq_psn"] == 0x222222
ud = [q for q in qps if q["type"] == "UD"][0]
assert ud["qkey"] == 0x11111111 and "dest_qpn" not in ud, ud
pds = {p["pd"]: p for p in mine("pds")}
assert pds[1]["users"] == 7 and pds[2]["users"] == 0, pds
assert len(mine("keys")) == 1 and mine("keys")[0]["kind"] == "MR"
print("ok")
PY
)
	if [ "$pyout" = ok ]; then
		ok "--json fields: contexts, PDs, CQ fill, SRQ, QPs, keys"
	else
		not_ok "--json fields: contexts, PDs, CQ fill, SRQ, QPs, keys"
		diag <<<"$pyout"
	fi

	kill -9 "$rpid"
	wait "$rpid" 2>/dev/null
	out=$("$SRDMA" status --no-reap)
	check "a SIGKILLed holder's QPs are still shown (--no-reap)" \
		grep -Eq "^ *[0-9]+ +$rpid +0x[0-9a-f]+ +UD +RTS " <<<"$out"
	json=$("$SRDMA" status --json --no-reap 2>/dev/null)
	check "... and --json says it is dead" \
		bash -c 'python3 -c "
import json, sys
d = json.loads(sys.argv[1])
c = [c for c in d[\"contexts\"] if c[\"pid\"] == int(sys.argv[2])]
sys.exit(0 if c and c[0][\"state\"] == \"dead\" else 1)" "$0" "$1"' \
		"$json" "$rpid"
	err=$("$SRDMA" status --json 2>&1 >/dev/null)
	check "status --json reaps it, saying so on stderr" \
		grep -Eq "^reaped lid [0-9]+ pid $rpid " <<<"$err"
	out=$("$SRDMA" status)
	check "... and its resources are gone" \
		bash -c '! grep -Eq "^ *[0-9]+ +$0 " <<<"$1"' "$rpid" "$out"
fi

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
