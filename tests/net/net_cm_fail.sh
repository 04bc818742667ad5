#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_cm_fail.sh - rdma_cm connections between two test hosts when one
# host fails, and after it comes back (issue 12 item 6; docs/design/cm.md,
# "When a host fails").
#
# Usage: net_cm_fail.sh SRDMA_EXE CM_FAIL_PEER
#
# Host 1 serves (cm_fail_peer server; rping -s), host 2 is the client
# and the survivor. Steps, each bounded:
#  1 link down: the client keeps 16 RDMA WRITEs in flight; host 1's eth0
#    goes down. The client's WRITE must end with IBV_WC_RETRY_EXC_ERR (12)
#    within RETRY_MS of the link going down (ACK timeout 14 = 67 ms, 7
#    retries: ~0.5 s of budget), then its CM id must get
#    RDMA_CM_EVENT_DISCONNECTED within CM_MS, and `srdma status` on host
#    2 must show its QP in ERR. Host 1's server, cut off, must report
#    DISCONNECTED for its side too. The link comes back up.
#  2 reconnect + SIGKILL: the client connects again (the same server
#    process), writes, and the server is SIGKILLed: again RETRY_EXC_ERR
#    within RETRY_MS, DISCONNECTED (status 0: its kernel closed the side
#    channel, as a kernel CM sends DREQ for a dying process), QP in ERR.
#  3 restart: a new server; the client connects again and 500 WRITEs
#    complete.
#  4 unreachable: host 1's link down, `rping -c` to it must fail with
#    RDMA_CM_EVENT_UNREACHABLE within CM_MS (no hang), link up.
#  5 rping mid-run: rping -s / rping -c -C <many> running, host 1's link
#    goes down: both rpings must exit within CM_MS + 2 s, each having
#    reported the failure (a failed completion: exit 1; DISCONNECTED:
#    rping's own exit 0) - no hang; link
#    up, and a new rping -v -C 10 pair passes (run_pair.sh's rping rule).
#  6 unanswered DREQ: the server is SIGSTOPped (its kernel still answers
#    TCP, its CM never answers); the client's rdma_disconnect must end in
#    DISCONNECTED with -ETIMEDOUT (-110) within 1.5-5 s (the CM's dead
#    time, 2 s by default), as the kernel CM's DREQ timeout does.
# The times measured are printed ("measured: ...").
#
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (no root, rping missing).
set -u

RETRY_MS=4000
CM_MS=8000
PORT=18515
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
RUN_PAIR=$here/../clients/run_pair.sh
srdma=${1:?usage: $0 SRDMA_EXE CM_FAIL_PEER}
peer=${2:?usage: $0 SRDMA_EXE CM_FAIL_PEER}
command -v rping >/dev/null || { echo "net_cm_fail: rping not installed: skipped"; exit 77; }
export SRDMA_NET_TAG=ncf$$

work=$(mktemp -d /tmp/net_cm_fail.XXXXXX) || exit 1
srv_pid='' cli_pid='' ctl_open=''
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	local p

	[ -n "$ctl_open" ] && exec 3>&-
	for p in $srv_pid $cli_pid; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	"$H" down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

show()
{
	local f

	for f in "$work"/srv*.out "$work/cli.out"; do
		[ -f "$f" ] || continue
		echo "----- ${f##*/}"
		cat "$f"
	done
	echo "-----"
}

fail()
{
	show
	echo "net_cm_fail: FAIL: $*"
	exit 1
}

ms() { date +%s%3N; }

# wait_for FILE PATTERN COUNT SECS: until FILE has COUNT lines matching.
wait_for()
{
	local end=$((SECONDS + $4)) n

	while n=$(grep -c -- "$2" "$1" 2>/dev/null); [ "${n:-0}" -lt "$3" ]; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.05
	done
}

start_server()
{
	"$H" run 1 -- "$srdma" run -- "$peer" server "$PORT" >"$work/srv$1.out" 2>&1 &
	srv_pid=$!
	wait_for "$work/srv$1.out" 'server: listening' 1 20 ||
		fail "server $1 did not listen"
}

# link up|down: host 1's eth0. Up returns once host 2 reaches host 1
# again (carrier back, neighbour entry resolved): "back" for the tests.
link()
{
	local i

	"$H" run 1 -- ip link set eth0 "$1" || fail "ip link set eth0 $1"
	[ "$1" = up ] || return 0
	for ((i = 0; i < 50; i++)); do
		"$H" run 2 -- ping -c 1 -W 1 "$a1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "host 1 unreachable after its link came back up"
}

# judge_failure N T0 WHAT STATUS: the Nth failure seen by the client.
judge_failure()
{
	local n=$1 t0=$2 what=$3 st=$4 line t dt

	wait_for "$work/cli.out" 'client: holding' "$n" 30 ||
		fail "$what: the client did not report the failure within 30 s"
	line=$(grep 'client: wc status' "$work/cli.out" | sed -n "${n}p")
	[[ $line =~ ^client:\ wc\ status\ 12\ .*\ at\ ([0-9]+) ]] ||
		fail "$what: the WRITE did not end with RETRY_EXC_ERR: $line"
	t=${BASH_REMATCH[1]}
	dt=$((t - t0))
	echo "net_cm_fail: measured: $what: RETRY_EXC_ERR after $dt ms"
	[ "$dt" -le "$RETRY_MS" ] ||
		fail "$what: RETRY_EXC_ERR after $dt ms, above $RETRY_MS"
	line=$(grep 'client: cm ' "$work/cli.out" | sed -n "${n}p")
	[[ $line =~ ^client:\ cm\ RDMA_CM_EVENT_DISCONNECTED\ status\ (-?[0-9]+)\ at\ ([0-9]+) ]] ||
		fail "$what: the CM event is not DISCONNECTED: $line"
	dt=$((BASH_REMATCH[2] - t0))
	echo "net_cm_fail: measured: $what: DISCONNECTED (status" \
		"${BASH_REMATCH[1]}) after $dt ms"
	[ "$dt" -le "$CM_MS" ] || fail "$what: DISCONNECTED after $dt ms"
	[ -z "$st" ] || [ "${BASH_REMATCH[1]}" = "$st" ] ||
		fail "$what: DISCONNECTED with status ${BASH_REMATCH[1]}, not $st"
	# The survivor's QP, still there: in ERR.
	"$H" run 2 -- "$srdma" status >"$work/status" 2>&1
	awk -v pid="$cli_pid" '$2 == pid && $4 == "RC" { found = 1; if ($5 != "ERR") bad = $0 }
		END { exit !(found && !bad) }' "$work/status" || {
		cat "$work/status"
		fail "$what: srdma status does not show the client's QP (pid $cli_pid) in ERR"
	}
	echo "net_cm_fail: $what: srdma status on host 2: the client's QP is in ERR"
}

"$H" up 2 || exit $?
a1=$("$H" addr 1)

# 1: link down under traffic.
start_server 1
mkfifo "$work/ctl"
"$H" run 2 -- "$srdma" run -- "$peer" client "$a1" "$PORT" 3 \
	<"$work/ctl" >"$work/cli.out" 2>&1 &
cli_pid=$!
exec 3>"$work/ctl"
ctl_open=1
wait_for "$work/cli.out" 'client: writing' 1 30 || fail "the client is not writing"
t0=$(ms)
link down
judge_failure 1 "$t0" "link down" -110
wait_for "$work/srv1.out" 'server: RDMA_CM_EVENT_DISCONNECTED' 1 10 ||
	fail "link down: host 1's server did not report DISCONNECTED"
t=$(sed -n 's/^server: RDMA_CM_EVENT_DISCONNECTED status .* at \([0-9]*\)$/\1/p' \
	"$work/srv1.out" | head -1)
echo "net_cm_fail: measured: link down: host 1's server DISCONNECTED after $((t - t0)) ms"
link up

# 2: reconnect, then SIGKILL of the server.
echo go >&3
wait_for "$work/cli.out" 'client: writing' 2 40 ||
	fail "the client did not reconnect and write after the link came back"
echo "net_cm_fail: the client reconnected after the link came back"
t0=$(ms)
kill -KILL "$srv_pid"
wait "$srv_pid" 2>/dev/null
srv_pid=
judge_failure 2 "$t0" "server killed" 0

# 3: a new server; the client reconnects and writes.
start_server 2
echo go >&3
if ! wait_for "$work/cli.out" 'client: round ok' 1 40; then
	fail "the client did not reconnect to the restarted server"
fi
wait "$cli_pid"
rc=$?
cli_pid=
[ $rc -eq 0 ] || fail "the client exited $rc"
echo "net_cm_fail: the client reconnected to the restarted server: 500 WRITEs"
kill -KILL "$srv_pid"
wait "$srv_pid" 2>/dev/null
srv_pid=

# 4: connecting to a host whose link is down.
link down
t0=$(ms)
timeout 30 "$H" run 2 -- "$srdma" run -- rping -c -a "$a1" -p "$PORT" -C 1 \
	>"$work/rping_unreach" 2>&1
rc=$?
dt=$(($(ms) - t0))
link up
echo "net_cm_fail: measured: rping to a host whose link is down: exit $rc after $dt ms"
if ! grep -q 'RDMA_CM_EVENT_UNREACHABLE' "$work/rping_unreach" ||
	[ $rc -eq 0 ] || [ $rc -eq 124 ] || [ "$dt" -gt "$CM_MS" ]; then
	cat "$work/rping_unreach"
	fail "rping to a host whose link is down: no UNREACHABLE within $CM_MS ms"
fi

# 5: rping running, host 1's link goes down: both end, no hang.
"$H" run 1 -- "$srdma" run -- rping -s -a "$a1" -p "$PORT" >"$work/rping_s" 2>&1 &
srv_pid=$!
for ((i = 0; i < 200; i++)); do
	[ -n "$("$H" run 1 -- ss -Hltn "sport = :$PORT")" ] && break
	sleep 0.05
done
"$H" run 2 -- "$srdma" run -- rping -c -a "$a1" -p "$PORT" -C 100000000 \
	>"$work/rping_c" 2>&1 &
cli_pid=$!
sleep 1.5
kill -0 "$cli_pid" 2>/dev/null || { echo "-- rping -s:"; cat "$work/rping_s"; echo "-- rping -c:"; cat "$work/rping_c"; fail "rping ended early"; }
t0=$(ms)
link down
for ((i = 0; i < (CM_MS + 2000) / 50; i++)); do
	kill -0 "$srv_pid" 2>/dev/null || kill -0 "$cli_pid" 2>/dev/null || break
	sleep 0.05
done
dt=$(($(ms) - t0))
for p in srv cli; do
	pid_var=${p}_pid
	if kill -0 "${!pid_var}" 2>/dev/null; then
		cat "$work/rping_s" "$work/rping_c"
		fail "rping $p still runs $dt ms after host 1's link went down"
	fi
	wait "${!pid_var}"
	rc=$?
	# rping exits 0 when its CM id was DISCONNECTED, non-zero when a
	# completion failed; either way it must say what ended it.
	f=$work/rping_s
	[ "$p" = cli ] && f=$work/rping_c
	if ! grep -q 'DISCONNECT EVENT\|completion failed\|cma event' "$f"; then
		cat "$work/rping_s" "$work/rping_c"
		fail "rping $p exited $rc without reporting the failure"
	fi
	echo "net_cm_fail: rping $p: exit $rc: $(grep -m1 'DISCONNECT EVENT\|completion failed\|cma event' "$f")"
done
srv_pid='' cli_pid=''
echo "net_cm_fail: measured: rping, host 1's link down: both ended within $dt ms"
link up
bash "$RUN_PAIR" --timeout 40 --server-wrap "$H run 1 --" \
	--client-wrap "$H run 2 --" rping "$PORT" "$srdma" \
	@server rping -s -v -a "$a1" -C 10 @client rping -c -v -a "$a1" -C 10 \
	>"$work/rping_again" 2>&1 || {
	cat "$work/rping_again"
	fail "rping after the link came back"
}
echo "net_cm_fail: rping after the link came back: $(tail -1 "$work/rping_again")"

# 6: a DREQ nobody answers.
start_server 3
[ -n "$ctl_open" ] && exec 3>&-
rm -f "$work/ctl"
mkfifo "$work/ctl"
"$H" run 2 -- "$srdma" run -- "$peer" client-dreq "$a1" "$PORT" \
	<"$work/ctl" >"$work/cli.out" 2>&1 &
cli_pid=$!
exec 3>"$work/ctl"
wait_for "$work/cli.out" 'client: connected' 1 30 || fail "DREQ: no connection"
kill -STOP "$srv_pid"
# A group stop takes effect thread by thread: wait until all have.
for ((i = 0; i < 250; i++)); do
	grep -q 'State:.*[RSD]' /proc/"$srv_pid"/task/*/status 2>/dev/null || break
	sleep 0.02
done
echo go >&3
wait_for "$work/cli.out" 'client: cm \|FAIL' 1 30
kill -CONT "$srv_pid"
line=$(grep 'client: cm' "$work/cli.out")
[[ $line =~ ^client:\ cm\ RDMA_CM_EVENT_DISCONNECTED\ status\ -110\ after\ ([0-9]+)\ ms ]] ||
	fail "DREQ: rdma_disconnect did not end in DISCONNECTED -110: $line"
dt=${BASH_REMATCH[1]}
echo "net_cm_fail: measured: unanswered DREQ: DISCONNECTED (status -110) after $dt ms"
if [ "$dt" -lt 1500 ] || [ "$dt" -gt 5000 ]; then
	fail "DREQ: DISCONNECTED after $dt ms, not within 1500-5000"
fi
echo "net_cm_fail: PASS"
