#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run_pair.sh - run one of Debian's two-sided RDMA clients (ibv_*_pingpong,
# perftest's ib_*_bw / ib_*_lat, rdmacm-utils' rping, rdma_server and
# rdma_client, udaddy, ucmatose) as a server and a client process on this
# host, both through `srdma run`, and judge the pair.
#
# Usage: run_pair.sh [OPTIONS] KIND PORT SRDMA_EXE PROGRAM [ARGS...]
#        run_pair.sh [OPTIONS] KIND PORT SRDMA_EXE
#                    [@server PROGRAM [ARGS...]] @client PROGRAM [ARGS...]
#   KIND     pingpong | xsrq | bw | lat | rping | cm | refused: which check
#            applies (xsrq: ibv_xsrq_pingpong, both sides print "success")
#   PORT     TCP port the server listens on (rdma_cm programs: the port they
#            bind; our rdma_cm side channel listens on that TCP port)
#   The first form runs the same PROGRAM ARGS on both sides and gives the
#   client 127.0.0.1 as its last argument (ibverbs-utils and perftest take
#   the server that way). The second form gives each side its own command,
#   used as it is; a KIND refused test has no @server.
# Options:
#   --timeout SECS     budget for the whole test (default 100, below
#                      CTest's 120)
#   --client-log FILE  copy the client's output to FILE
#   --server-wrap CMD  run the server as CMD SRDMA_EXE run -- ..., and
#   --client-wrap CMD  the client likewise (CMD word-split; `ss`, which
#                      waits for the listener, runs under the server's
#                      CMD too): tests/net/net_cm.sh puts each side in a
#                      test host with "hosts.sh run I --"
#   --fixed-port       the program cannot be told a port (udaddy): PORT is
#                      its built-in one, used only to wait for the listener.
#                      Otherwise `-p PORT` is appended to both commands, so
#                      parallel tests need distinct ports. Where unshare(1)
#                      is permitted (root), the pair runs in a private
#                      network namespace with only lo up, so the fixed port
#                      cannot collide with another run or a service on
#                      this host; elsewhere in the host's.
#
# Steps: refuse a PORT something already listens on (a stale server would
# answer our client); start the server in the background; poll `ss -ltn`
# until it listens (failing at once if it exits first); start the client;
# wait for both. When one side fails the other gets GRACE seconds before
# it is killed, as it may be blocked waiting for its dead peer. Both sides
# are killed when SECS run out, and on any exit of this script, so no
# process outlives the test. A perftest pair whose clock calibration
# failed (see the end) is run again, at most three times in all, within
# the same SECS.
#
# Pass: both exit 0 and the output is sane, per KIND:
#   pingpong  each side prints "N bytes in S seconds = R Mbit/sec" and
#             "N iters in S seconds = U usec/iter" with R, U > 0.
#   bw, lat   the client prints perftest's "#bytes" header and then a
#             results row (every field numeric) with BW average > 0 (bw)
#             or t_typical and t_avg > 0 (lat); the server side of some
#             tests measures nothing, so only the client is checked.
#   rping     both sides run with -v and the client with -C COUNT (and
#             -S SIZE if not 64). rping.c prints, per ping N = 0, 1, ...,
#             "server ping data: " on the server after its RDMA READ of
#             the client's buffer, and "ping data: " on the client after
#             the server's RDMA WRITE back, each followed by the buffer:
#             "rdma-ping-N: " then letters cycling through ASCII 65..122,
#             the first being 65 + N % 58, up to SIZE - 1 characters in
#             all. Each side must print exactly COUNT such lines, N in
#             order, with exactly that text, so both transfers moved the
#             right bytes.
#   cm        each side prints its program's success lines, as a whole
#             line (librdmacm/examples in rdma-core 44): rdma_server.c and
#             rdma_client.c end with "rdma_server: end 0" / "rdma_client:
#             end 0" (the status run() returns), rdma_xserver.c and
#             rdma_xclient.c likewise; udaddy.c and cmatose.c
#             (ucmatose) print "data transfers complete" once all messages
#             are through and end with "return status 0"; our
#             examples/write_demo.c prints "server: ok" / "client: ok"
#             (the client after checking every byte written). The udaddy
#             server also reports success when no client connected, which
#             is why both sides are always checked.
#   refused   no server: the client must exit non-zero, without hanging,
#             and print the failed connection as an rdma_cm event
#             RDMA_CM_EVENT_REJECTED, _UNREACHABLE or _CONNECT_ERROR (as
#             rping's "cma event %s, error %d" or udaddy/cmatose's
#             "event: %s, error: %d" do).
# Both outputs are always printed; the client's is also copied to FILE
# (run_data_bench.sh reads it).
#
# Exit: 0 pass, 1 fail, 2 usage, 77 (CTest skip) if a PROGRAM is not
# installed.
set -u

GRACE=5
HOST=127.0.0.1
timeout=100
client_log=
fixed_port=
srv_wrap=
cli_wrap=

die()
{
	echo "run_pair: $*" >&2
	exit 2
}

orig_args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) timeout=${2:?}; shift 2 ;;
	--client-log) client_log=${2:?}; shift 2 ;;
	--fixed-port) fixed_port=1; shift ;;
	--server-wrap) srv_wrap=${2?}; shift 2 ;;
	--client-wrap) cli_wrap=${2?}; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 4 ] || die "usage: $0 [--timeout S] [--client-log F]" \
	"[--fixed-port] KIND PORT SRDMA_EXE PROGRAM [ARGS...]" \
	"| [@server PROGRAM [ARGS...]] @client PROGRAM [ARGS...]"
kind=$1 port=$2 srdma=$3
shift 3
if [ -n "$fixed_port" ] && [ -z "${SRDMA_PAIR_NETNS:-}" ] &&
	[ -z "$srv_wrap$cli_wrap" ] &&
	command -v unshare >/dev/null && unshare --net true 2>/dev/null; then
	export SRDMA_PAIR_NETNS=1
	exec unshare --net -- "$BASH" -c 'ip link set lo up && exec "$@"' \
		run_pair "$BASH" "$0" "${orig_args[@]}"
fi
case $kind in
pingpong | xsrq | bw | lat | rping | cm | refused) ;;
*) die "unknown KIND '$kind'" ;;
esac
[ -x "$srdma" ] || die "'$srdma' is not executable"

# The two command lines, without `-p PORT`.
srv_cmd=()
cli_cmd=()
split=
case $1 in
@server | @client)
	split=1
	side=
	for a; do
		case $a in
		@server)
			[ -z "$side" ] || die "@server must come first, once"
			side=server
			;;
		@client)
			[ "$side" != client ] || die "@client given twice"
			side=client
			;;
		*)
			if [ "$side" = server ]; then
				srv_cmd+=("$a")
			else
				cli_cmd+=("$a")
			fi
			;;
		esac
	done
	;;
*)
	srv_cmd=("$@")
	cli_cmd=("$@")
	;;
esac
[ ${#cli_cmd[@]} -gt 0 ] || die "no client command"
if [ "$kind" = refused ]; then
	[ ${#srv_cmd[@]} -eq 0 ] || die "KIND refused runs no server"
else
	[ ${#srv_cmd[@]} -gt 0 ] || die "no server command"
fi
if [ -z "$fixed_port" ]; then
	[ ${#srv_cmd[@]} -gt 0 ] && srv_cmd+=(-p "$port")
	cli_cmd+=(-p "$port")
fi
[ -n "$split" ] || cli_cmd+=("$HOST")

# rping: the client's ping count and buffer size.
rping_count=''
rping_size=64
if [ "$kind" = rping ]; then
	for ((i = 1; i < ${#cli_cmd[@]} - 1; i++)); do
		case ${cli_cmd[i]} in
		-C) rping_count=${cli_cmd[i + 1]} ;;
		-S) rping_size=${cli_cmd[i + 1]} ;;
		esac
	done
	[[ $rping_count =~ ^[1-9][0-9]*$ ]] ||
		die "KIND rping needs the client's -C COUNT (COUNT > 0)"
	[[ $rping_size =~ ^[1-9][0-9]*$ ]] || die "bad rping -S '$rping_size'"
fi

for prog in "${srv_cmd[0]:-}" "${cli_cmd[0]}"; do
	[ -n "$prog" ] || continue
	if ! command -v "$prog" >/dev/null; then
		echo "run_pair: $prog not installed: skipped"
		exit 77
	fi
done
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
	if [ ${#srv_cmd[@]} -gt 0 ]; then
		echo "----- server: ${srv_cmd[*]}"
		cat "$srv_out"
	fi
	echo "----- client: ${cli_cmd[*]}"
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
	show
	echo "run_pair: FAIL: $fail_msg"
	exit 1
}

listening()
{
	# shellcheck disable=SC2086 # CMD is word-split on purpose
	[ -n "$($srv_wrap ss -Hltn "sport = :$port" 2>/dev/null)" ]
}

# check_rping FILE SIDE PREFIX: the rping rule of the header.
check_rping()
{
	local file=$1 side=$2 prefix=$3 why

	why=$(awk -v prefix="$prefix" -v count="$rping_count" \
		-v size="$rping_size" '
	BEGIN {
		n = 0
		for (c = 65; c <= 122; c++)
			chr[c] = sprintf("%c", c)
	}
	index($0, prefix) == 1 && !bad {
		hdr = "rdma-ping-" n ": "
		want = hdr
		c = 65 + n % 58
		for (i = length(hdr); i < size - 1; i++) {
			want = want chr[c]
			if (++c > 122)
				c = 65
		}
		if (substr($0, length(prefix) + 1) != want)
			bad = "ping " n " (line " NR ") is not \"" prefix \
				want "\""
		n++
	}
	END {
		if (!bad && n != count)
			bad = n " \"" prefix "rdma-ping-N\" lines, not " count
		print bad
	}' "$file")
	[ -z "$why" ] || fail_msg="$side: $why"
}

# check_cm FILE SIDE PROGRAM: the cm rule of the header.
check_cm()
{
	local file=$1 side=$2 name=${3##*/} line
	local -a want

	case $name in
	rdma_server | rdma_client | rdma_xserver | rdma_xclient)
		want=("$name: end 0") ;;
	udaddy | ucmatose) want=("data transfers complete" "return status 0") ;;
	# examples/write_demo.c: the client checked the bytes it was written.
	srdma-write-demo) want=("$side: ok") ;;
	*)
		fail_msg="$side: no success text known for $name (KIND cm)"
		return 1
		;;
	esac
	for line in "${want[@]}"; do
		grep -qxF "$line" "$file" && continue
		fail_msg="$side: no line \"$line\""
		return 1
	done
}

# check_output FILE SIDE PROGRAM: apply KIND's output check; sets fail_msg.
check_output()
{
	local file=$1 side=$2 prog=$3 what

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
	xsrq)
		# ibv_xsrq_pingpong checks its exchanges itself and ends with
		# "success" (it prints no rates).
		grep -qx success "$file" ||
			fail_msg="$side: no 'success' line"
		;;
	bw | lat)
		what='t_typical and t_avg'
		[ "$kind" = bw ] && what='BW average'
		# A results row: after the "#bytes" header, at least 5 (bw)
		# or 6 (lat) fields, all numbers; but for the standard
		# deviation (lat column 7), which perftest prints as -nan
		# when its float arithmetic goes negative on a run with a few
		# very long iterations (a loaded machine).
		awk -v kind="$kind" '
		/#bytes/ { hdr = 1; next }
		hdr {
			for (i = 1; i <= NF; i++)
				if ($i !~ /^[0-9]+(\.[0-9]+)?$/ &&
				    !(kind == "lat" && i == 7 && $i ~ /^-?nan$/))
					next
			if (kind == "bw" && NF >= 5 && $1 > 0 && $4 > 0)
				ok = 1
			if (kind == "lat" && NF >= 6 && $1 > 0 && $5 > 0 && $6 > 0)
				ok = 1
		}
		END { exit !ok }' "$file" ||
			fail_msg="$side: no perftest results row, or $what <= 0"
		;;
	rping)
		if [ "$side" = server ]; then
			check_rping "$file" "$side" "server ping data: "
		else
			check_rping "$file" "$side" "ping data: "
		fi
		;;
	cm)
		check_cm "$file" "$side" "$prog"
		;;
	refused)
		what='RDMA_CM_EVENT_REJECTED, _UNREACHABLE or _CONNECT_ERROR'
		grep -qE 'RDMA_CM_EVENT_(REJECTED|UNREACHABLE|CONNECT_ERROR)' \
			"$file" ||
			fail_msg="$side: exited $cli_rc, but printed no $what"
		;;
	esac
	[ -z "$fail_msg" ]
}

# attempt: run the pair once, within what is left of the budget.
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

	if [ ${#srv_cmd[@]} -eq 0 ]; then
		srv_rc=0	# no server (KIND refused): nothing to wait for
	else
		# shellcheck disable=SC2086 # CMD is word-split on purpose
		$srv_wrap "$srdma" run -- "${srv_cmd[@]}" >"$srv_out" 2>&1 &
		srv_pid=$!
	fi

	# Wait for the listening socket, at most a fifth of the budget.
	deadline=$((SECONDS + timeout / 5))
	until [ -n "$srv_rc" ] || listening; do
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

	cli_start=$SECONDS
	# shellcheck disable=SC2086 # CMD is word-split on purpose
	$cli_wrap "$srdma" run -- "${cli_cmd[@]}" >"$cli_out" 2>&1 &
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
			if [ ${#srv_cmd[@]} -gt 0 ]; then
				[ -n "$srv_rc" ] &&
					fail_msg+=" server exited $srv_rc;" ||
					fail_msg+=" server killed;"
			fi
			[ -n "$cli_rc" ] && fail_msg+=" client exited $cli_rc" ||
				fail_msg+=" client killed"
			srv_pid=''
			cli_pid=''
			return 1
		fi
		sleep 0.05
	done

	case $kind in
	refused)
		if [ "$cli_rc" = 0 ]; then
			fail_msg="client exited 0 with nothing listening on port $port"
			return 1
		fi
		check_output "$cli_out" client "${cli_cmd[0]}"
		;;
	*)
		if [ "$srv_rc" != 0 ] || [ "$cli_rc" != 0 ]; then
			fail_msg="server exited $srv_rc, client exited $cli_rc"
			return 1
		fi
		case $kind in
		bw | lat) check_output "$cli_out" client "${cli_cmd[0]}" ;;
		*)
			check_output "$srv_out" server "${srv_cmd[0]}" &&
				check_output "$cli_out" client "${cli_cmd[0]}"
			;;
		esac
		;;
	esac
}

# perftest converts cycles to time with a clock rate it measures at start;
# on a busy machine that measurement can fail ("Correlation coefficient
# r^2: ... < 0.9"), and then it reports inf or 0 whatever the library did.
# Only that case is run again.
start=$SECONDS
end=$((start + timeout))
for try in 1 2 3; do
	attempt && break
	if [ "$try" -eq 3 ] || [ "$SECONDS" -ge "$end" ] ||
	   ! grep -q 'Correlation coefficient r' "$srv_out" "$cli_out"; then
		fail
	fi
	show
	echo "run_pair: $fail_msg; perftest could not measure its clock" \
		"(machine busy): running the pair again"
done

show
if [ "$kind" = refused ]; then
	echo "run_pair: PASS: the client failed (status $cli_rc) in" \
		"$((SECONDS - cli_start)) s"
else
	echo "run_pair: PASS in $((SECONDS - start)) s"
fi
exit 0
