#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# qperf.sh - Debian's qperf in its default mode (blocking: it sleeps in
# ibv_get_cq_event, and its SIGALRM, installed without SA_RESTART, ends
# each timed test by interrupting that sleep) runs its whole RDMA test
# list ROUNDS times in a row between a server and a client process on
# this host, both through `srdma run`.
#
# Usage: qperf.sh SRDMA_EXE PORT [ROUNDS [SECONDS]]
#   ROUNDS   rounds of the whole list (default 1)
#   SECONDS  qperf -t: duration of each test (default 1)
# The list is every RDMA test qperf 0.4.11 has on a device without XRC:
# rc_bi_bw rc_bw rc_compare_swap_mr rc_fetch_add_mr rc_lat rc_rdma_read_bw
# rc_rdma_read_lat rc_rdma_write_bw rc_rdma_write_lat
# rc_rdma_write_poll_lat uc_bi_bw uc_bw uc_lat uc_rdma_write_bw
# uc_rdma_write_lat uc_rdma_write_poll_lat ud_bi_bw ud_bw ud_lat
# ver_rc_compare_swap ver_rc_fetch_add (the ver_ tests check the atomics'
# results). One server (`qperf -lp PORT`, which serves clients one after
# another) lives through all rounds; each round is one client run of the
# whole list. A round passes if the client exits 0 within its budget and
# prints, for every test, its name followed by a first result line with a
# positive figure (`bw = 5.41 GB/sec`, `latency = 8.3 us`, `msg_rate =
# 298 K/sec`; UC/UD bandwidth: send_bw). The client runs with -vvs -vvt,
# so a failed round shows both sides' message counts and times (qperf
# prints a rate of 0 when either side measured no time). Before the fix
# (issue 11) about half the runs hung: ibv_get_cq_event retried its
# read() on EINTR, so the alarm never ended the test.
# Prints one line per round (time, and each test's figures) and a summary.
# Both sides run with SRDMA_LOG=debug into one file (softrdma is silent
# unless something fails; failed checks and error completions are
# explained there), printed when a round fails.
# Exit: 0 all rounds passed, 1 otherwise, 77 if qperf is not installed.
set -u

srdma=${1:?usage: qperf.sh SRDMA_EXE PORT [ROUNDS [SECONDS]]}
port=${2:?usage: qperf.sh SRDMA_EXE PORT [ROUNDS [SECONDS]]}
rounds=${3:-1}
secs=${4:-1}
host=127.0.0.1
tests=(rc_bi_bw rc_bw rc_compare_swap_mr rc_fetch_add_mr rc_lat
	rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_bw rc_rdma_write_lat
	rc_rdma_write_poll_lat uc_bi_bw uc_bw uc_lat uc_rdma_write_bw
	uc_rdma_write_lat uc_rdma_write_poll_lat ud_bi_bw ud_bw ud_lat
	ver_rc_compare_swap ver_rc_fetch_add)
# Per round: each test's time plus set-up, with room for a loaded machine.
budget=$((${#tests[@]} * (secs + 4) + 30))

# Where unshare(1) is permitted (root), run in a private network namespace
# with only lo up: PORT then cannot collide with another run on this host
# (the host transport needs no network; SRDMA_DIR and the PID namespace
# stay shared, as in run_pair.sh --fixed-port).
if [ -z "${SRDMA_QPERF_NETNS:-}" ] && command -v unshare >/dev/null &&
	unshare --net true 2>/dev/null; then
	export SRDMA_QPERF_NETNS=1
	exec unshare --net -- "$BASH" -c 'ip link set lo up && exec "$@"' \
		qperf "$BASH" "$0" "$@"
fi

command -v qperf >/dev/null || {
	echo "qperf: not installed: skipped"
	exit 77
}
[ -x "$srdma" ] || {
	echo "qperf: '$srdma' is not executable"
	exit 1
}
if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
	echo "qperf: something already listens on port $port"
	exit 1
fi

work=$(mktemp -d /tmp/srdma_qperf.XXXXXX) || exit 1
srv_pid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	if [ -n "$srv_pid" ]; then
		{
			kill -KILL "$srv_pid"
			wait "$srv_pid"
		} 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT
export SRDMA_LOG=debug SRDMA_LOG_FILE="$work/srdma.log"

"$srdma" run qperf -lp "$port" >"$work/server" 2>&1 &
srv_pid=$!
for _ in $(seq 100); do
	ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.1
done
if ! ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
	echo "qperf: the server does not listen on $port"
	cat "$work/server"
	exit 1
fi

# judge FILE: every test printed with a positive figure, nothing failed.
judge()
{
	awk -v list="${tests[*]}" '
	BEGIN { n = split(list, t, " "); for (i = 1; i <= n; i++) want[t[i]] = 1 }
	/^[a-z_]+:$/ { cur = substr($0, 1, length($0) - 1); first = 1; next }
	cur != "" && first && $2 == "=" {
		first = 0
		if ($3 + 0 > 0) { ok[cur] = 1; fig[cur] = " " $1 "=" $3 $4 }
	}
	END {
		for (i = 1; i <= n; i++) {
			if (!ok[t[i]]) { print "missing or zero: " t[i]; bad = 1 }
			else line = line " " t[i] ":" fig[t[i]]
		}
		if (!bad) print "OK" line
	}' "$1"
}

passed=0
for r in $(seq "$rounds"); do
	t0=$(date +%s.%N)
	timeout -k 5 "$budget" "$srdma" run qperf -lp "$port" -t "$secs" \
		-vvs -vvt "$host" "${tests[@]}" >"$work/client" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	verdict=$(judge "$work/client")
	if [ $rc -eq 0 ] && [ "${verdict%% *}" = OK ]; then
		passed=$((passed + 1))
		printf 'qperf round %d/%d: pass in %.1f s:%s\n' "$r" "$rounds" \
			"$(echo "$t1 - $t0" | bc)" "${verdict#OK}"
	else
		printf 'qperf round %d/%d: FAIL (exit %d%s) after %.1f s\n' \
			"$r" "$rounds" "$rc" \
			"$([ $rc -eq 124 ] && echo ", hung: killed after ${budget} s")" \
			"$(echo "$t1 - $t0" | bc)"
		echo "$verdict"
		echo "--- client output ---"
		cat "$work/client"
		echo "--- server output ---"
		cat "$work/server"
		echo "--- softrdma log (SRDMA_LOG=debug, last 60 lines) ---"
		tail -n 60 "$work/srdma.log" 2>/dev/null
		break
	fi
	if ! kill -0 "$srv_pid" 2>/dev/null; then
		echo "qperf: the server exited after round $r"
		cat "$work/server"
		break
	fi
done
echo "qperf: $passed of $rounds rounds passed (${#tests[@]} tests each," \
	"-t $secs, blocking mode)"
[ "$passed" -eq "$rounds" ]
