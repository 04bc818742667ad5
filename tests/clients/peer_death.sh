#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# peer_death.sh - kill one side of a perftest pair with SIGKILL at random
# moments and check that the other side never hangs or spins (issue 9,
# defect 1).
#
# Usage: peer_death.sh SRDMA_EXE PORT [SEED]
#   SRDMA_EXE  build/bin/srdma (its `run` executes each side on softrdma)
#   PORT       TCP port for perftest's side channel (one run at a time)
#   SEED       seed for the kill moments (default: from the clock); the
#              seed is printed so a failing run can be repeated
# PEER_DEATH_ONLY=PATTERN in the environment runs only the matching cases.
# PEER_DEATH_CLIENT_MS=N kills every client N ms after its start instead
# of at a random moment, and runs only the client kills (0: before it can
# connect, the regression case of clients.peer_death_preconnect).
#
# For every perftest binary (ib_{write,read,send,atomic}_{bw,lat}, and
# ib_send_{bw,lat} -c UD; the modes are explained at the list below):
#   server killed  at two random moments 0.1-2 s after the client starts
#                  (before, during or after connection set-up, mid-run).
#                  The client must exit (any status: perftest prints the
#                  completion error) within BOUND s; the time from the kill
#                  to its exit is printed. On hardware a dead responder
#                  gives IBV_WC_RETRY_EXC_ERR after timeout x (retry_cnt+1)
#                  (~0.54 s with perftest's timeout 14, retry_cnt 7).
#   client killed  at one random moment. A perftest server may wait for
#                  its peer by design: the side channel's final handshake
#                  (a blocking read that ends with EOF when the client
#                  dies) or, in duration mode, its own timer. So "no hang"
#                  means here too: the server exits within BOUND s.
#                  Except for a client killed before it connected (its
#                  start-up - two execs, the libraries, the device open -
#                  can take over 100 ms on a loaded machine): perftest's
#                  server then waits in accept() for a client that never
#                  comes, as on hardware, and has no softrdma thread or
#                  call running. Such a survivor, still listening on the
#                  side channel's port, passes ("waits by design"); it
#                  is killed then.
# A survivor still running after BOUND s fails the test, with the CPU it
# used over the last second and whether softrdma is still retrying a WR in
# it (its RNR progress thread wakes every 0.2 ms while a WR waits, so the
# voluntary context switches of the process's other threads tell). One
# exception, as on hardware: ib_send_lat (RC or UD) whose server died
# after taking the client's ping waits forever for the pong in perftest's
# own ibv_poll_cq loop on an empty receive CQ (a receive has no timeout;
# that loop does not look at the duration timer either). Such a survivor
# passes ("waits by design") only if softrdma is not retrying anything in
# it; it is killed then.
#
# Output: one "peer death: ..." line per run, then a summary. Exit 0 if
# every survivor exited in time, 1 otherwise, 77 (skip) if perftest is not
# installed.
set -u

BOUND=8
srdma=${1:?usage: peer_death.sh SRDMA_EXE PORT [SEED]}
port=${2:?usage: peer_death.sh SRDMA_EXE PORT [SEED]}
seed=${3:-$(($(date +%s%N) % 32768))}
host=127.0.0.1

command -v ib_send_bw >/dev/null || {
	echo "peer_death: perftest not installed: skipped"
	exit 77
}
command -v ss >/dev/null || {
	echo "peer_death: ss (iproute2) not installed" >&2
	exit 2
}
[ -x "$srdma" ] || {
	echo "peer_death: '$srdma' is not executable" >&2
	exit 2
}

echo "peer death: seed $seed (repeat with: $0 $srdma $port $seed)"
RANDOM=$seed

work=$(mktemp -d /tmp/peer_death.XXXXXX) || exit 1
srv_pid=
cli_pid=

alive()
{
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null &&
		! grep -q '^State:.Z' "/proc/$1/status" 2>/dev/null
}

stop()
{
	local p

	for p in "$@"; do
		[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
	done
	for p in "$@"; do
		[ -n "$p" ] && { wait "$p"; } 2>/dev/null
	done
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	stop "$srv_pid" "$cli_pid"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

now_ms()
{
	echo $(($(date +%s%N) / 1000000))
}

# Clock ticks of CPU time used by PID so far.
cpu_ticks()
{
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# Voluntary context switches of PID's threads other than the main one.
side_switches()
{
	local t n=0 v

	for t in /proc/"$1"/task/*; do
		[ "${t##*/}" = "$1" ] && continue
		v=$(awk '/^voluntary_ctxt_switches/ { print $2 }' \
			"$t/status" 2>/dev/null)
		n=$((n + ${v:-0}))
	done
	echo "$n"
}

listening()
{
	[ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]
}

runs=0
failures=0
worst=0

# one_run NAME VICTIM DELAY_MS ARGS...: a pair, VICTIM (server|client)
# SIGKILLed DELAY_MS after the client started.
one_run()
{
	local name=$1 victim=$2 delay=$3 survivor t0 t rc=-1 i ticks sw
	local by_design=
	shift 3
	local -a args=("$@")
	local surv_pid vict_pid what

	for ((i = 0; i < 100; i++)); do	# the last server's port is free
		listening || break
		sleep 0.1
	done
	"$srdma" run -- "${args[@]}" -p "$port" >"$work/server" 2>&1 &
	srv_pid=$!
	for ((i = 0; i < 100; i++)); do
		listening && break
		alive "$srv_pid" || break
		sleep 0.05
	done
	"$srdma" run -- "${args[@]}" -p "$port" "$host" >"$work/client" 2>&1 &
	cli_pid=$!
	sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
	if [ "$victim" = server ]; then
		vict_pid=$srv_pid surv_pid=$cli_pid survivor=client
	else
		vict_pid=$cli_pid surv_pid=$srv_pid survivor=server
	fi
	kill -KILL "$vict_pid" 2>/dev/null
	t0=$(now_ms)
	{ wait "$vict_pid"; } 2>/dev/null
	while alive "$surv_pid" && [ $(($(now_ms) - t0)) -lt $((BOUND * 1000)) ]; do
		sleep 0.02
	done
	t=$(($(now_ms) - t0))
	runs=$((runs + 1))
	if alive "$surv_pid"; then
		ticks=$(cpu_ticks "$surv_pid")
		sw=$(side_switches "$surv_pid")
		sleep 1
		ticks=$(($(cpu_ticks "$surv_pid") - ticks))
		sw=$(($(side_switches "$surv_pid") - sw))
		what="still running after ${BOUND} s, ${ticks} CPU ticks and"
		what+=" $sw wake-ups of softrdma's threads in 1 s"
		case $name in
		ib_send_lat*) [ "$sw" -lt 50 ] && by_design=1 ;;
		esac
		# perftest's server closes its listening socket once accept()
		# returns: still listening = its client never connected.
		[ "$survivor" = server ] && [ "$sw" -lt 50 ] && listening &&
			by_design=accept
		if [ "$by_design" = accept ]; then
			echo "peer death: $name: $victim killed at $delay ms;" \
				"$survivor $what: waits by design in accept()" \
				"for a client that never connected (kernel wait:" \
				"$(cat "/proc/$surv_pid/wchan" 2>/dev/null))"
		elif [ -n "$by_design" ]; then
			echo "peer death: $name: $victim killed at $delay ms;" \
				"$survivor $what: waits by design for a" \
				"message that cannot come (perftest's own loop)"
		else
			failures=$((failures + 1))
			echo "peer death: FAIL $name: $victim killed at" \
				"$delay ms; $survivor $what"
			echo "----- $survivor output"
			tail -n 5 "$work/$survivor"
		fi
		stop "$surv_pid"
	else
		{ wait "$surv_pid"; } 2>/dev/null
		rc=$?
		[ "$t" -gt "$worst" ] && worst=$t
		echo "peer death: $name: $victim killed at $delay ms;" \
			"$survivor exited (status $rc) after $t ms"
	fi
	srv_pid='' cli_pid=''
}

# NAME|ARGS when the server is killed|ARGS when the client is killed.
# Killing the server: iteration mode with a count far beyond the kill, so
# only a completion error (or perftest's side channel) can end the client;
# 8-byte messages, so the client outpaces the server and its SENDs often
# wait in RNR when the server dies (the defect: they were retried forever).
# ib_write_lat's iteration mode spins on its buffer for the peer's WRITE
# (as on hardware) and UD sends never fail, so those use duration mode.
# Killing the client: duration mode, which bounds the servers that
# otherwise wait for their peer's traffic by design.
cases=(
	"ib_write_bw|-s 8 -n 20000000|-D 3"
	"ib_read_bw|-s 8 -n 20000000|-D 3"
	"ib_send_bw|-s 8 -n 20000000|-D 3"
	"ib_atomic_bw|-n 20000000|-D 3"
	"ib_write_lat|-D 3|-D 3"
	"ib_read_lat|-n 20000000|-D 3"
	"ib_send_lat|-n 20000000|-D 3"
	"ib_atomic_lat|-n 20000000|-D 3"
	"ib_send_bw -c UD|-D 3|-D 3"
	"ib_send_lat -c UD|-D 3|-D 3"
)
t_start=$(now_ms)
for c in "${cases[@]}"; do
	IFS='|' read -r name sargs cargs <<<"$c"
	# shellcheck disable=SC2053 # PEER_DEATH_ONLY is a glob pattern
	[[ $name == ${PEER_DEATH_ONLY:-$name} ]] || continue
	read -r -a cmd <<<"$name"
	read -r -a sa <<<"$sargs"
	read -r -a ca <<<"$cargs"
	if [ -n "${PEER_DEATH_CLIENT_MS:-}" ]; then
		one_run "$name" client "$PEER_DEATH_CLIENT_MS" "${cmd[@]}" \
			-d srdma0 "${ca[@]}"
		continue
	fi
	one_run "$name" server $((100 + RANDOM % 1900)) "${cmd[@]}" \
		-d srdma0 "${sa[@]}"
	one_run "$name" server $((100 + RANDOM % 1900)) "${cmd[@]}" \
		-d srdma0 "${sa[@]}"
	one_run "$name" client $((100 + RANDOM % 1900)) "${cmd[@]}" \
		-d srdma0 "${ca[@]}"
done
echo "peer death: $runs runs in $((($(now_ms) - t_start) / 1000)) s," \
	"$failures survivor(s) hung; slowest exit after a kill: $worst ms"
[ "$failures" -eq 0 ]
