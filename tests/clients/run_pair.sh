#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run_pair.sh - run one of Debian's two-sided RDMA clients (ibv_*_pingpong,
# perftest's ib_*_bw / ib_*_lat) as a server and a client process on this
# host, both through `srdma run`, and judge the pair.
#
# Usage: run_pair.sh [--timeout SECS] [--client-log FILE]
#                    KIND PORT SRDMA_EXE PROGRAM [ARGS...]
#   KIND     pingpong | bw | lat: which output check applies
#   PORT     TCP port for the out-of-band exchange; passed as `-p PORT` to
#            both sides, so parallel tests need distinct ports
#   ARGS     given to both sides; the client also gets 127.0.0.1
#
# Steps: refuse a PORT something already listens on (a stale server would
# answer our client); start the server in the background; poll `ss -ltn`
# until it listens (failing at once if it exits first); start the client;
# wait for both. When one side fails the other gets GRACE seconds before
# it is killed, as it may be blocked waiting for its dead peer. Both sides
# are killed when SECS (default 100, below CTest's 120) run out, and on any
# exit of this script, so no process outlives the test. A perftest pair
# whose clock calibration failed (see the end) is run again, at most
# three times in all, within the same SECS.
#
# Pass: both exit 0 and the output is sane. pingpong: each side prints
# "N bytes in S seconds = R Mbit/sec" and "N iters in S seconds = U
# usec/iter" with R, U > 0. bw/lat: the client prints perftest's "#bytes"
# header and then a results row (every field numeric) with BW average > 0
# (bw) or t_typical and t_avg > 0 (lat); the server side of some tests
# measures nothing, so only the client is checked. Both outputs are
# always printed; the client's is also copied to FILE (run_data_bench.sh
# reads it).
#
# Exit: 0 pass, 1 fail, 2 usage, 77 (CTest skip) if PROGRAM is not
# installed.
set -u

GRACE=5
HOST=127.0.0.1
timeout=100
client_log=

die()
{
	echo "run_pair: $*" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--timeout) timeout=${2:?}; shift 2 ;;
	--client-log) client_log=${2:?}; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 4 ] || die "usage: $0 [--timeout S] [--client-log F]" \
	"KIND PORT SRDMA_EXE PROGRAM [ARGS...]"
kind=$1 port=$2 srdma=$3 prog=$4
shift 4
case $kind in
pingpong | bw | lat) ;;
*) die "unknown KIND '$kind'" ;;
esac
[ -x "$srdma" ] || die "'$srdma' is not executable"
if ! command -v "$prog" >/dev/null; then
	echo "run_pair: $prog not installed: skipped"
	exit 77
fi
command -v ss >/dev/null || die "ss (iproute2) not installed"

work=$(mktemp -d /tmp/run_pair.XXXXXX) || exit 1
srv_out=$work/server
cli_out=$work/client
: >"$srv_out"
: >"$cli_out"
srv_pid=
cli_pid=

alive()
{
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null
}

# TERM, then KILL whatever is still there a second later.
kill_all()
{
	local p tries=10

	for p in $srv_pid $cli_pid; do
		alive "$p" && kill -TERM "$p" 2>/dev/null
	done
	while [ "$tries" -gt 0 ]; do
		alive "$srv_pid" || alive "$cli_pid" || return 0
		sleep 0.1
		tries=$((tries - 1))
	done
	for p in $srv_pid $cli_pid; do
		alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	return 0
}

show()
{
	echo "----- server: $prog $* -p $port"
	cat "$srv_out"
	echo "----- client: $prog $* -p $port $HOST"
	cat "$cli_out"
	echo "-----"
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	kill_all
	[ -n "$client_log" ] && cp "$cli_out" "$client_log"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail()
{
	show "$@"
	echo "run_pair: FAIL: $fail_msg"
	exit 1
}

listening()
{
	[ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]
}

# check_output FILE SIDE: apply KIND's output check; sets fail_msg.
check_output()
{
	local file=$1 side=$2 what

	case $kind in
	pingpong)
		awk '
		/^[0-9]+ bytes in [0-9.]+ seconds = [0-9.]+ Mbit\/sec$/ &&
			$(NF - 1) + 0 > 0 { bw = 1 }
		/^[0-9]+ iters in [0-9.]+ seconds = [0-9.]+ usec\/iter$/ &&
			$(NF - 1) + 0 > 0 { lat = 1 }
		END { exit !(bw && lat) }' "$file" ||
			fail_msg="$side: no positive 'Mbit/sec' and 'usec/iter' lines"
		;;
	bw | lat)
		what='t_typical and t_avg'
		[ "$kind" = bw ] && what='BW average'
		# A results row: after the "#bytes" header, at least 5 (bw)
		# or 6 (lat) fields, all numbers.
		awk -v kind="$kind" '
		/#bytes/ { hdr = 1; next }
		hdr {
			for (i = 1; i <= NF; i++)
				if ($i !~ /^[0-9]+(\.[0-9]+)?$/)
					next
			if (kind == "bw" && NF >= 5 && $1 > 0 && $4 > 0)
				ok = 1
			if (kind == "lat" && NF >= 6 && $1 > 0 && $5 > 0 && $6 > 0)
				ok = 1
		}
		END { exit !ok }' "$file" ||
			fail_msg="$side: no perftest results row, or $what <= 0"
		;;
	esac
	[ -z "$fail_msg" ]
}

# attempt ARGS...: run the pair once, within what is left of the budget.
# Return: 0 if it passed; 1 with fail_msg set if not.
attempt()
{
	local deadline

	fail_msg=
	srv_rc=''
	cli_rc=''
	: >"$srv_out"
	: >"$cli_out"
	if listening; then
		fail_msg="something already listens on TCP port $port:
$(ss -ltnp "sport = :$port")"
		return 1
	fi

	"$srdma" run -- "$prog" "$@" -p "$port" >"$srv_out" 2>&1 &
	srv_pid=$!

	# Wait for the listening socket, at most a fifth of the budget.
	deadline=$((SECONDS + timeout / 5))
	until listening; do
		if ! alive "$srv_pid"; then
			wait "$srv_pid"
			fail_msg="server exited (status $?) before listening on port $port"
			srv_pid=''
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ] ||
		   [ "$SECONDS" -ge "$end" ]; then
			fail_msg="server not listening on port $port after $((timeout / 5)) s"
			return 1
		fi
		sleep 0.05
	done

	"$srdma" run -- "$prog" "$@" -p "$port" "$HOST" >"$cli_out" 2>&1 &
	cli_pid=$!

	# Reap both. A side's status is recorded once it is gone; after the
	# first failure the survivor only has GRACE seconds left.
	deadline=$end
	while :; do
		if [ -z "$srv_rc" ] && ! alive "$srv_pid"; then
			wait "$srv_pid"
			srv_rc=$?
			srv_pid=''
		fi
		if [ -z "$cli_rc" ] && ! alive "$cli_pid"; then
			wait "$cli_pid"
			cli_rc=$?
			cli_pid=''
		fi
		[ -n "$srv_rc" ] && [ -n "$cli_rc" ] && break
		if [ "${srv_rc:-0}" != 0 ] || [ "${cli_rc:-0}" != 0 ]; then
			[ "$((SECONDS + GRACE))" -lt "$deadline" ] &&
				deadline=$((SECONDS + GRACE))
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			kill_all
			if [ "${srv_rc:-0}" != 0 ] || [ "${cli_rc:-0}" != 0 ]; then
				fail_msg="one side failed, the other was killed $GRACE s later:"
			else
				fail_msg="timed out after $((SECONDS - start)) s:"
			fi
			[ -n "$srv_rc" ] && fail_msg+=" server exited $srv_rc;" ||
				fail_msg+=" server killed;"
			[ -n "$cli_rc" ] && fail_msg+=" client exited $cli_rc" ||
				fail_msg+=" client killed"
			srv_pid=''
			cli_pid=''
			return 1
		fi
		sleep 0.05
	done

	if [ "$srv_rc" != 0 ] || [ "$cli_rc" != 0 ]; then
		fail_msg="server exited $srv_rc, client exited $cli_rc"
		return 1
	fi
	if [ "$kind" = pingpong ]; then
		check_output "$srv_out" server && check_output "$cli_out" client
	else
		check_output "$cli_out" client
	fi
}

# perftest converts cycles to time with a clock rate it measures at start;
# on a busy machine that measurement can fail ("Correlation coefficient
# r^2: ... < 0.9"), and then it reports inf or 0 whatever the library did.
# Only that case is run again.
start=$SECONDS
end=$((start + timeout))
for try in 1 2 3; do
	attempt "$@" && break
	if [ "$try" -eq 3 ] || [ "$SECONDS" -ge "$end" ] ||
	   ! grep -q 'Correlation coefficient r' "$srv_out" "$cli_out"; then
		fail "$@"
	fi
	show "$@"
	echo "run_pair: $fail_msg; perftest could not measure its clock" \
		"(machine busy): running the pair again"
done

show "$@"
echo "run_pair: PASS in $((SECONDS - start)) s"
exit 0
