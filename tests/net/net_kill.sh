#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_kill.sh - a peer host that vanishes: SIGKILL one side of a perftest
# pair running across two test hosts, at a seeded random moment, and check
# that the other side ends with an error within the retry budget.
#
# Usage: net_kill.sh SRDMA_EXE [SEED]
#   SEED  seed of the kill moments (default: from the clock; printed, so
#         a failing run can be repeated)
#
# Cases (server in host 1, client in host 2, as net_pair.sh):
#   ib_write_bw, ib_send_bw, server killed: the client runs 8-byte
#     messages in iteration mode with a count far beyond the kill, so only
#     a completion error can end it: its RC QP gets no ACK any more and
#     must complete with IBV_WC_RETRY_EXC_ERR once its retry budget is
#     spent (perftest: timeout 14 = 67 ms, retry_cnt 7: about 0.5 s), and
#     perftest then exits non-zero.
#   ib_write_bw, ib_send_bw, client killed: the client in duration mode
#     (-D 3), which bounds a server that waits for its peer's traffic by
#     design; the server must see the loss (its side channel's EOF, or a
#     completion error) and report it: exit non-zero, or print an error
#     (ib_send_bw's server exits 0 after "Failed to close connection
#     between server and client").
# Each case is killed at a random moment 300-1800 ms after the client's
# side channel reached the server (perftest's TCP exchange), twice with the server as
# victim and once with the client. The survivor must exit within BOUND
# (10) s of the kill, with an error (non-zero status or a line saying
# error, fail or unable); the time from the kill to its exit and that line
# are printed.
#
# Exit: 0 pass, 1 fail, 77 skip (no root, perftest not installed).
set -u

BOUND=10
PORT=18515
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
srdma=${1:?usage: net_kill.sh SRDMA_EXE [SEED]}
seed=${2:-$(($(date +%s%N) % 32768))}

command -v ib_write_bw >/dev/null || {
	echo "net_kill: perftest not installed: skipped"
	exit 77
}
export SRDMA_NET_TAG=nk$$
work=$(mktemp -d /tmp/net_kill.XXXXXX) || exit 1
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
	"$H" down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

now_ms()
{
	echo $(($(date +%s%N) / 1000000))
}

# The server has accepted its client's side channel (perftest's TCP).
connected()
{
	[ -n "$("$H" run 1 -- ss -Htn state established "sport = :$PORT" \
		2>/dev/null)" ]
}

listening()
{
	[ -n "$("$H" run 1 -- ss -Hltn "sport = :$PORT" 2>/dev/null)" ]
}

"$H" up 2
rc=$?
[ $rc -eq 0 ] || exit $rc
srv_addr=$("$H" addr 1)
srv_gid=$("$H" run 1 -- "$here/gid_index.sh" "$srdma" "$srv_addr") ||
	{ echo "net_kill: FAIL: host 1 has no GID for $srv_addr"; exit 1; }
cli_gid=$("$H" run 2 -- "$here/gid_index.sh" "$srdma" "$("$H" addr 2)") ||
	{ echo "net_kill: FAIL: host 2 has no GID for its address"; exit 1; }
echo "net kill: seed $seed (repeat with: $0 $srdma $seed)"
RANDOM=$seed

runs=0
failures=0
worst=0

# one_run PROGRAM VICTIM DELAY_MS ARGS...
one_run()
{
	local prog=$1 victim=$2 delay=$3 survivor t0 t rc i err
	local surv_pid vict_pid
	shift 3

	for ((i = 0; i < 100; i++)); do	# the last server's port is free
		listening || break
		sleep 0.1
	done
	"$H" run 1 -- "$srdma" run -- "$prog" -d srdma0 -x "$srv_gid" \
		-p "$PORT" "$@" >"$work/server" 2>&1 &
	srv_pid=$!
	for ((i = 0; i < 100; i++)); do
		listening && break
		alive "$srv_pid" || break
		sleep 0.05
	done
	"$H" run 2 -- "$srdma" run -- "$prog" -d srdma0 -x "$cli_gid" \
		-p "$PORT" "$@" "$srv_addr" >"$work/client" 2>&1 &
	cli_pid=$!
	# The delay counts from the connection: a client killed before its
	# side channel reached the server leaves perftest's server in
	# accept() for ever, which is perftest's, not a lost peer to detect.
	for ((i = 0; i < 400; i++)); do
		connected && break
		alive "$cli_pid" || break
		sleep 0.05
	done
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
		failures=$((failures + 1))
		echo "net kill: FAIL $prog $*: $victim killed at $delay ms;" \
			"$survivor still running after $BOUND s"
		echo "----- $survivor threads (name, state, kernel wait)"
		for i in /proc/"$surv_pid"/task/*; do
			echo "  $(cat "$i/comm" 2>/dev/null)" \
				"$(awk '{ print $3 }' "$i/stat" 2>/dev/null)" \
				"$(cat "$i/wchan" 2>/dev/null)"
		done
		echo "----- $survivor output"
		tail -n 8 "$work/$survivor"
		stop "$surv_pid"
	else
		{ wait "$surv_pid"; } 2>/dev/null
		rc=$?
		[ "$t" -gt "$worst" ] && worst=$t
		err=$(grep -m1 -iE 'error|fail|unable' "$work/$survivor")
		if [ "$rc" -eq 0 ] && [ -z "$err" ]; then
			failures=$((failures + 1))
			echo "net kill: FAIL $prog $*: $victim killed at" \
				"$delay ms; $survivor exited 0 after $t ms," \
				"reporting no error"
			echo "----- $survivor output"
			tail -n 8 "$work/$survivor"
		else
			echo "net kill: $prog $*: $victim killed at $delay ms;" \
				"$survivor exited (status $rc) after $t ms:" \
				"${err:-no message}"
		fi
	fi
	srv_pid='' cli_pid=''
}

t_start=$(now_ms)
for prog in ib_write_bw ib_send_bw; do
	one_run "$prog" server $((300 + RANDOM % 1500)) -s 8 -n 20000000
	one_run "$prog" server $((300 + RANDOM % 1500)) -s 8 -n 20000000
	one_run "$prog" client $((300 + RANDOM % 1500)) -s 8 -D 3
done
echo "net kill: $runs runs in $((($(now_ms) - t_start) / 1000)) s," \
	"$failures failure(s); slowest exit after a kill: $worst ms"
[ "$failures" -eq 0 ]
