#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_ranks.sh - several processes per host, all talking across hosts at
# once (issue 12, item 3; docs/design/containers.md, "Several processes
# per host"), on two test hosts sharing UDP port 4791 per host
# (net-endpoint.md):
#
#   1. all-to-all: R ranks (net_ranks, ranks.c) on each host, one context
#      each, one RC QP to every other rank; every rank RDMA-WRITEs with
#      immediate to every other rank, ITERS rounds, every byte checked by
#      the receiver. Ranks on the same host use the host transport, ranks
#      on the other host the wire: the log (SRDMA_LOG=info) must show
#      R - 1 host and R net choices per rank.
#   2. pairs: R ib_write_bw and R ibv_rc_pingpong -c pairs at once, the
#      servers on host 1, the clients on host 2.
#
# Usage: net_ranks.sh SRDMA_EXE NET_RANKS_EXE [R]   (default 4)
# Environment (the tests of the harness itself):
#   NET_RANKS_SLOW=RANK:MS:RTR_DELAY_SO  rank RANK runs with rtr_delay.so
#       (LD_PRELOAD), each of its modifies to RTR MS ms late: its peers
#       must wait for it (ranks.c's "ready" barrier), not write to a QP
#       that is not in RTR yet
#   NET_RANKS_PAIRS=0  the all-to-all only (no step 2)
# On a failure, each failed process's error lines and its library log
# (SRDMA_LOG=info: why a QP's retries ran out) are printed.
# Exit: 0 pass, 1 fail, 77 skip (no root, no perftest/pingpong).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
srdma=${1:?usage: net_ranks.sh SRDMA_EXE NET_RANKS_EXE [R]}
ranks=${2:?usage}
R=${3:-4}

if [ "${4:-}" != inner ]; then
	command -v ibv_rc_pingpong >/dev/null ||
		{ echo "skipped: ibv_rc_pingpong not installed"; exit 77; }
	command -v ib_write_bw >/dev/null ||
		{ echo "skipped: ib_write_bw not installed"; exit 77; }
	exec bash "$H" with 2 --tag rk$$ -- bash "$0" "$srdma" "$ranks" "$R" \
		inner
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
A1=$("$H" addr 1)
N=$((2 * R))
ITERS=40
SIZE=32768
fail=

# ---- 1. all-to-all ----------------------------------------------------
mkdir "$out/meet"
t0=$(date +%s.%N)
slow_env=()
IFS=: read -r slow_rank slow_ms slow_so <<<"${NET_RANKS_SLOW:-}"
for r in $(seq 0 $((N - 1))); do
	h=$((r < R ? 1 : 2))
	env=(SRDMA_LOG=info SRDMA_LOG_FILE=)
	[ "$r" = "${slow_rank:-}" ] && env+=(LD_PRELOAD="$slow_so"
		SRDMA_TEST_RTR_DELAY_MS="$slow_ms")
	timeout -k 5 120 "$H" run $h -- env "${env[@]}" "$srdma" run -- \
		"$ranks" "$out/meet" $r $N $ITERS $SIZE 1 >"$out/rank$r" 2>&1 &
	echo $! >"$out/rankpid$r"
done
for r in $(seq 0 $((N - 1))); do
	wait "$(cat "$out/rankpid$r")"
	rc=$?
	line=$(grep "^rank $r:" "$out/rank$r")
	nnet=$(grep -c "transport net" "$out/rank$r")
	nhost=$(grep -c "transport host" "$out/rank$r")
	echo "rank $r (host $((r < R ? 1 : 2))): exit $rc, $nhost host +" \
		"$nnet net QPs; ${line#rank $r: }"
	want=$(((N - 1) * ITERS * SIZE))
	if [ $rc -ne 0 ] || ! grep -q " $want bytes checked" "$out/rank$r"; then
		fail+=" rank$r"
		grep -E "^rank $r: |retry_cnt|exhausted|error" "$out/rank$r" |
			tail -8
	fi
	[ "$nnet" -eq "$R" ] && [ "$nhost" -eq $((R - 1)) ] ||
		fail+=" rank$r(transports: $nhost host, $nnet net)"
done
echo "all-to-all: $N ranks, $(((N - 1) * N)) QPs, $ITERS rounds of" \
	"$SIZE B: $(awk -v a="$t0" -v b="$(date +%s.%N)" \
	'BEGIN { printf "%.2f", b - a }') s"

# ---- 2. pairs across the hosts at once -------------------------------
if [ "${NET_RANKS_PAIRS:-1}" = 0 ]; then
	[ -n "$fail" ] && { echo "net_ranks: FAIL:$fail"; exit 1; }
	echo "net_ranks: PASS"
	exit 0
fi
BASE=18800
listening()
{
	[ -n "$("$H" run 1 -- ss -Hltn "sport = :$1" 2>/dev/null)" ]
}
wait_listen()
{
	for _ in $(seq 100); do
		listening "$1" && return
		sleep 0.1
	done
}
# run_bw SIDE I: ib_write_bw of pair I, server (SIDE srv, host 1) or
# client (cli, host 2), in the background; its output in $out/bwSIDEI.
run_bw()
{
	local h=1 addr=

	[ "$1" = cli ] && h=2 addr=$A1
	timeout -k 5 120 "$H" run $h -- env SRDMA_LOG=info \
		SRDMA_LOG_FILE="$out/bw$1$2.log" "$srdma" run -- ib_write_bw \
		-x 1 -p $((BASE + $2)) -s 65536 -n 2000 $addr \
		>"$out/bw$1$2" 2>&1 &
	echo $! >"$out/bw$1pid$2"
}
for i in $(seq 0 $((R - 1))); do
	run_bw srv "$i"
	timeout -k 5 120 "$H" run 1 -- env SRDMA_LOG=info \
		SRDMA_LOG_FILE="$out/ppsrv$i.log" "$srdma" run -- ibv_rc_pingpong -g 1 \
		-p $((BASE + 100 + i)) -n 200 -s 8192 -c >"$out/ppsrv$i" 2>&1 &
	echo $! >"$out/ppsrvpid$i"
done
for i in $(seq 0 $((R - 1))); do
	wait_listen $((BASE + i))
	wait_listen $((BASE + 100 + i))
done
for i in $(seq 0 $((R - 1))); do
	run_bw cli "$i"
	timeout -k 5 120 "$H" run 2 -- env SRDMA_LOG=info \
		SRDMA_LOG_FILE="$out/ppcli$i.log" "$srdma" run -- ibv_rc_pingpong -g 1 \
		-p $((BASE + 100 + i)) -n 200 -s 8192 -c "$A1" \
		>"$out/ppcli$i" 2>&1 &
	echo $! >"$out/ppclipid$i"
done
declare -A rc_of
for i in $(seq 0 $((R - 1))); do
	for k in bwcli bwsrv ppcli ppsrv; do
		wait "$(cat "$out/${k}pid$i")"
		rc_of[$k$i]=$?
	done
done
# perftest measures its clock when it reports (the pair has run by
# then): on a busy machine that measurement may fail ("Correlation
# coefficient r = ... < 0.9"), and the client exits 1 without a result,
# its server after it. As net_pair.sh does, such a pair runs again, here
# once, alone.
for i in $(seq 0 $((R - 1))); do
	if [ "${rc_of[bwcli$i]}" != 0 ] &&
	   grep -q 'Correlation coefficient r' "$out/bwcli$i" "$out/bwsrv$i"; then
		echo "pair $i: ib_write_bw could not measure its clock" \
			"(machine busy): running it again"
		grep -h 'Correlation coefficient r' "$out/bwcli$i" "$out/bwsrv$i"
		run_bw srv "$i"
		wait_listen $((BASE + i))
		run_bw cli "$i"
		for k in bwcli bwsrv; do
			wait "$(cat "$out/${k}pid$i")"
			rc_of[$k$i]=$?
		done
	fi
done
total=0
for i in $(seq 0 $((R - 1))); do
	for k in bwcli bwsrv ppcli ppsrv; do
		rc=${rc_of[$k$i]}
		if [ "$rc" -ne 0 ]; then
			fail+=" $k$i(exit $rc)"
			# perftest's errors go to stderr, ahead of its
			# buffered table in the file: pick them out.
			grep -iE "error|fail|exceeded|unable|couldn't|can't|status|coefficient" \
				"$out/$k$i" | head -5
			grep -E "exhausted|refused|NAK" "$out/$k$i.log" \
				2>/dev/null | head -5
		fi
	done
	bw=$(awk '$1 == 65536 { print $4 }' "$out/bwcli$i")
	echo "pair $i: ib_write_bw ${bw:-?} MB/s; ibv_rc_pingpong:" \
		"$(grep 'iters in' "$out/ppcli$i")"
	total=$(awk -v a="$total" -v b="${bw:-0}" 'BEGIN { print a + b }')
	for f in "$out/ppsrv$i" "$out/ppcli$i"; do
		grep -q "200 iters in" "$f" || fail+=" pp$i(no '200 iters')"
		! grep -q 'invalid data' "$f" || fail+=" pp$i(data corrupted)"
	done
done
echo "pairs: $R ib_write_bw at once, $total MB/s in all"

if [ -n "$fail" ]; then
	echo "net_ranks: FAIL:$fail"
	exit 1
fi
echo "net_ranks: PASS"
