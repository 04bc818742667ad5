#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rsockets.sh - run one of Debian's rsocket clients (rdmacm-utils' rstream,
# riostream, rcopy, udpong) or a plain TCP program under Debian's
# librspreload.so, as a server and a client process on this host, both
# through `srdma run`, and judge the pair.
#
# Usage: rsockets.sh MODE PORT SRDMA_EXE [ARGS...]
#   MODE  rstream | riostream   both sides run PROGRAM -p PORT ARGS, the
#                               client also -s ADDR; the client must print
#                               the header and one result row per test
#                               (8 for the default table, 1 with -S/-C),
#                               each with a time per transfer > 0.
#         rcopy                 copies a 3 MB random file (ARGS: none) and
#                               compares it with cmp.
#         udpong                udpong -p PORT ARGS, the server with
#                               -b ADDR, the client -s ADDR; the client
#                               prints its result row. (Its default table
#                               is not used: udpong's client reuses its
#                               message buffer for receiving, so one late
#                               echo - over 1 ms on a loaded machine -
#                               makes it resend a stale sequence number
#                               forever.)
#         preload PROGRAM       PROGRAM (tests/clients/rsock_tcp) under
#                               LD_PRELOAD=librspreload.so; PROGRAM prints
#                               "via rsockets: yes" when its socket answers
#                               SOL_RDMA options, and checks its echo.
#   ADDR is 127.0.0.1 unless RSOCK_ADDR says otherwise. Across test hosts
#   (tests/net/net_rsocket.sh): RSOCK_HOSTS_SH=hosts.sh, RSOCK_SERVER_NS /
#   RSOCK_CLIENT_NS = the host numbers the sides run in.
# Exit: 0 pass, 1 fail, 77 (skip) when the program is not installed.
set -u

mode=$1
port=$2
srdma=$3
shift 3
addr=${RSOCK_ADDR:-127.0.0.1}
budget=${RSOCK_TIMEOUT:-150}
tmp=$(mktemp -d)
srv_pid=

cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# in_ns HOST CMD...: CMD on this host (HOST empty), or in test host HOST
# of tests/net/hosts.sh ($RSOCK_HOSTS_SH) - its namespace and SRDMA_DIR.
in_ns() {
	local host=$1
	shift
	if [ -n "$host" ]; then
		bash "$RSOCK_HOSTS_SH" run "$host" -- "$@"
	else
		"$@"
	fi
}

preload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
case $mode in
rstream | riostream | rcopy | udpong)
	prog=$mode
	command -v "$prog" >/dev/null || { echo "SKIP: $prog missing"; exit 77; }
	;;
preload)
	prog=$1
	shift
	[ -e "$preload" ] || { echo "SKIP: $preload missing"; exit 77; }
	;;
*)
	echo "usage: rsockets.sh MODE PORT SRDMA_EXE [ARGS...]" >&2
	exit 2
	;;
esac

# Wait until the server listens (TCP: our rdma_cm's side channel; UDP:
# the datagram socket's name), or fails.
wait_listen() {
	local i opt=-ltn
	[ "$mode" = udpong ] && opt=-lun
	for i in $(seq 1 100); do
		if ! kill -0 "$srv_pid" 2>/dev/null; then
			echo "FAIL: server exited early"
			cat "$tmp/srv.log"
			return 1
		fi
		in_ns "${RSOCK_SERVER_NS:-}" ss $opt 2>/dev/null |
			grep -q ":$port " && return 0
		sleep 0.1
	done
	echo "FAIL: server never listened on $port"
	return 1
}

# The server is started as a direct child (not through a shell function,
# which would fork a subshell), so srv_pid is `timeout` itself (or
# hosts.sh, which execs it): killing it ends the server's whole process
# group, and a server such as rcopy's, which serves forever, never
# outlives the test holding its port.
run_server() {
	if [ -n "${RSOCK_SERVER_NS:-}" ]; then
		bash "$RSOCK_HOSTS_SH" run "$RSOCK_SERVER_NS" -- \
			timeout "$budget" "$srdma" run "$@" \
			>"$tmp/srv.log" 2>&1 &
	else
		timeout "$budget" "$srdma" run "$@" >"$tmp/srv.log" 2>&1 &
	fi
	srv_pid=$!
	wait_listen
}

run_client() {
	in_ns "${RSOCK_CLIENT_NS:-}" timeout "$budget" "$srdma" run "$@" \
		>"$tmp/cli.log" 2>&1
}

# Result rows of rstream/riostream/udpong: name, then numeric fields with
# usec/xfer (8th; Gb/sec rounds to 0.00 for small latency tests) > 0.
check_rows() {
	local want=$1 rows
	rows=$(awk 'NR > 1 && NF >= 8 && $8 + 0 > 0 { n++ } END { print n + 0 }' \
		"$tmp/cli.log")
	if [ "$rows" -lt "$want" ]; then
		echo "FAIL: $rows result rows with usec/xfer > 0, want $want"
		return 1
	fi
	return 0
}

status=0
case $mode in
rstream | riostream)
	want=8
	for a in "$@"; do [ "$a" = -S ] && want=1; done
	run_server "$prog" -p "$port" "$@" || exit 1
	run_client "$prog" -s "$addr" -p "$port" "$@" || {
		echo "FAIL: client exited $?"
		status=1
	}
	wait "$srv_pid" || { echo "FAIL: server exited $?"; status=1; }
	srv_pid=
	[ $status = 0 ] && { check_rows "$want" || status=1; }
	;;
rcopy)
	head -c 3000000 /dev/urandom >"$tmp/src"
	run_server rcopy -p "$port" || exit 1
	run_client rcopy "$tmp/src" "$addr:$tmp/dst" -p "$port" || {
		echo "FAIL: rcopy client exited $?"
		status=1
	}
	# rcopy's server serves forever: give it time to close the file.
	for i in $(seq 1 50); do
		grep -q "closing...done" "$tmp/srv.log" && break
		sleep 0.1
	done
	if ! cmp "$tmp/src" "$tmp/dst"; then
		echo "FAIL: copy differs"
		status=1
	else
		echo "copy identical ($(stat -c %s "$tmp/dst") bytes)"
	fi
	;;
udpong)
	run_server udpong -b "$addr" -p "$port" "$@" || exit 1
	run_client udpong -s "$addr" -p "$port" "$@" || {
		echo "FAIL: udpong client exited $?"
		status=1
	}
	awk 'NF >= 6 && $1 != "name" { n++ } END { exit !(n > 0) }' \
		"$tmp/cli.log" || { echo "FAIL: no udpong results"; status=1; }
	;;
preload)
	# The preload goes to the program only (not to timeout or srdma),
	# after what srdma run itself preloads.
	pre=(sh -c 'LD_PRELOAD="$0${LD_PRELOAD:+:$LD_PRELOAD}" exec "$@"'
		"$preload")
	run_server "${pre[@]}" "$prog" server "$port" || exit 1
	run_client "${pre[@]}" "$prog" client "$port" "$addr" || {
		echo "FAIL: client exited $?"
		status=1
	}
	wait "$srv_pid" || { echo "FAIL: server exited $?"; status=1; }
	srv_pid=
	for f in srv cli; do
		grep -q "via rsockets: yes" "$tmp/$f.log" ||
			{ echo "FAIL: $f did not use rsockets"; status=1; }
	done
	;;
esac
echo "--- server"
cat "$tmp/srv.log"
echo "--- client"
cat "$tmp/cli.log"
[ $status = 0 ] && echo PASS
exit $status
