#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_pair.sh - one of Debian's two-sided RDMA clients across two test
# hosts: the server in host 1, the client in host 2, softrdma's net
# transport between them (RoCEv2 over the veth), and judge the pair.
#
# Usage: net_pair.sh [OPTIONS] KIND SRDMA_EXE PROGRAM [ARGS...]
#   KIND       pingpong (ibv_{rc,uc,ud,srq}_pingpong) | bw | lat (perftest)
#              | xsrq (ibv_xsrq_pingpong: both print "success")
#   SRDMA_EXE  build/bin/srdma: each side runs as `srdma run -- PROGRAM`
# Options:
#   --timeout SECS   budget for the whole pair (default 60)
#   --mtu M          the hosts' MTU (default 1500)
#   --fault SPEC     SRDMA_NET_FAULT=SPEC on both sides (the library's
#                    built-in faults: "loss=1%", "dup=1%,reorder=1%", ...),
#                    each side with its own seed: SRDMA_NET_FAULT_SEED=SEED
#                    (server) and SEED+1 (client)
#   --seed SEED      default: from the clock; printed, to repeat a run
#   --tag T          hosts.sh tag T.<pid> (default np<pid>): the pid keeps
#                    two runs of one test (two build trees) apart
#   --reuse-hosts    use the two hosts of $SRDMA_NET_TAG as they are (made
#                    by the caller, who also removes them): --mtu ignored
#   --client-log F   copy the client's output to F (net_bench.sh reads it)
#   --ipv6           the GID of each host's IPv6 address (fd53:...), so
#                    RoCEv2 over IPv6; the side channel stays on IPv4
#   --link-local     the GID of each host's link-local address (fe80::,
#                    index 0 as on rxe), RoCEv2 over link-local IPv6
#   --client-env V=X add V=X to the client's environment (repeatable; the
#                    tests' hooks, e.g. rtr_delay.so through LD_PRELOAD)
#
# Steps: `hosts.sh up 2`; find each host's GID index of its IPv4 address
# (gid_index.sh: the IPv4-mapped entry of eth0, so the packets are RoCEv2
# over IPv4 between 198.18.x.1 and 198.18.x.2); add `-g IDX`
# (pingpong) or `-x IDX` (perftest) and `-p 18515` to PROGRAM ARGS; start
# the server in host 1, wait until it listens (ss in host 1), start the
# client in host 2 with host 1's address (perftest's and pingpong's TCP
# side channel, which exchanges QPNs, PSNs and GIDs); wait for both. When
# one side fails the other gets GRACE s before it is killed; both are
# killed when SECS run out; `hosts.sh down` on any exit, so nothing
# outlives the test.
#
# Pass: both exit 0, and
#   pingpong  each side prints "N bytes in S seconds = R Mbit/sec" and "N
#             iters in S seconds = U usec/iter" with R, U > 0, and, with -c
#             (the clients' own check of every received buffer), no
#             "invalid data in page" line
#   bw, lat   the client prints perftest's "#bytes" header then a results
#             row, every field numeric (t_stdev may be -nan: perftest's own
#             arithmetic on a noisy machine), with BW average or message rate
#             > 0 (bw: 1000 atomics under 10% loss print a BW of 0.00
#             MB/sec, two decimals) or t_typical and t_avg > 0 (lat)
# One exception, under --fault only: a ping-pong one side of which passed
# and exited first, and whose other side then failed with "transport
# retry counter exceeded". The ping-pong ends without a handshake: when
# the ACK of one side's last SEND (which the other received and checked)
# is lost, that side retransmits to a QP that is gone, and hardware ends
# that WR with IBV_WC_RETRY_EXC_ERR too. Such a pair passes, and says so.
# ibv_xsrq_pingpong's own start race: its server posts its first SEND
# as soon as its own QPs are connected, while the client may still be
# connecting the QP that SEND goes to; a QP before RTR drops what arrives
# (IBTA; rxe and NICs alike), so a client slower than the server's retry
# budget (timeout 14, retry_cnt 7: about 0.5 s) leaves that SEND with
# IBV_WC_RETRY_EXC_ERR, which the program never polls: both sides then
# wait for good. On a loaded machine a client can take that long. Both
# sides log at SRDMA_LOG=info (into the work directory); a server whose
# log says its retries ran out with no response ever from the peer
# ("no response from the peer since RTS") is that race: the pair is
# stopped at once and run again, at most 3 times in the budget.
# A perftest pair whose clock calibration failed ("Correlation
# coefficient", machine busy) is run again, at most 3 times in the budget.
#
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (no root, PROGRAM not installed).
set -u

GRACE=5
PORT=18515
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
timeout=60
mtu=1500
fault=
seed=
tag=np$$
reuse=
family=
client_log=
extra_cli_env=()

die()
{
	echo "net_pair: $*" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) timeout=${2:?}; shift 2 ;;
	--mtu) mtu=${2:?}; shift 2 ;;
	--fault) fault=${2:?}; shift 2 ;;
	--seed) seed=${2:?}; shift 2 ;;
	--tag) tag=${2:?}.$$; shift 2 ;;
	--reuse-hosts) reuse=1; shift ;;
	--ipv6) family=-6; shift ;;
	--link-local) family=ll; shift ;;
	--client-log) client_log=${2:?}; shift 2 ;;
	--client-env) extra_cli_env+=("${2:?}"); shift 2 ;;
	-*) die "unknown option '$1'" ;;
	*) break ;;
	esac
done
[ $# -ge 3 ] || die "usage: $0 [--timeout S] [--mtu M] [--fault SPEC]" \
	"[--seed N] [--tag T] KIND SRDMA_EXE PROGRAM [ARGS...]"
kind=$1 srdma=$2
shift 2
prog=("$@")
case $kind in
pingpong | xsrq) gidopt=-g ;;
bw | lat) gidopt=-x ;;
*) die "unknown KIND '$kind'" ;;
esac
[ -x "$srdma" ] || die "'$srdma' is not executable"
if ! command -v "${prog[0]}" >/dev/null; then
	echo "net_pair: ${prog[0]} not installed: skipped"
	exit 77
fi
[ -n "$seed" ] || seed=$(($(date +%s%N) % 1000000))
if [ -n "$reuse" ]; then
	[ -n "${SRDMA_NET_TAG:-}" ] || die "--reuse-hosts needs SRDMA_NET_TAG"
else
	export SRDMA_NET_TAG=$tag
fi

work=$(mktemp -d /tmp/net_pair.XXXXXX) || exit 1
srv_out=$work/server
cli_out=$work/client
srv_pid=
cli_pid=

alive()
{
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null
}

kill_all()
{
	local p tries=10

	for p in $srv_pid $cli_pid; do
		alive "$p" && kill -TERM "$p" 2>/dev/null
	done
	while [ "$tries" -gt 0 ]; do
		alive "$srv_pid" || alive "$cli_pid" || break
		sleep 0.1
		tries=$((tries - 1))
	done
	for p in $srv_pid $cli_pid; do
		alive "$p" && kill -KILL "$p" 2>/dev/null
	done
	for p in $srv_pid $cli_pid; do
		{ wait "$p"; } 2>/dev/null
	done
	srv_pid='' cli_pid=''
	return 0
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	kill_all
	[ -n "$client_log" ] && cp "$cli_out" "$client_log"
	[ -n "$reuse" ] || "$H" down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if [ -z "$reuse" ]; then
	"$H" up 2 --mtu "$mtu"
	rc=$?
	[ $rc -eq 0 ] || exit $rc
fi
srv_addr=$("$H" addr 1) || exit 1
if [ "$family" = ll ]; then
	srv_gaddr=link-local cli_gaddr=link-local
else
	srv_gaddr=$("$H" addr 1 $family)
	cli_gaddr=$("$H" addr 2 $family)
fi
srv_gid=$("$H" run 1 -- "$here/gid_index.sh" "$srdma" "$srv_gaddr") ||
	{ echo "net_pair: FAIL: host 1 has no GID for $srv_gaddr"; exit 1; }
cli_gid=$("$H" run 2 -- "$here/gid_index.sh" "$srdma" "$cli_gaddr") ||
	{ echo "net_pair: FAIL: host 2 has no GID for $cli_gaddr"; exit 1; }
mtu=$("$H" run 1 -- cat /sys/class/net/eth0/mtu)

srv_cmd=("${prog[@]}" "$gidopt" "$srv_gid" -p "$PORT")
cli_cmd=("${prog[@]}" "$gidopt" "$cli_gid" -p "$PORT" "$srv_addr")
srv_env=()
cli_env=()
if [ -n "$fault" ]; then
	srv_env=(SRDMA_NET_FAULT="$fault" SRDMA_NET_FAULT_SEED="$seed")
	cli_env=(SRDMA_NET_FAULT="$fault" SRDMA_NET_FAULT_SEED="$((seed + 1))")
fi
cli_env+=("${extra_cli_env[@]}")
if [ "$kind" = xsrq ]; then
	# The start race's evidence (see the header): the library's log.
	srv_env+=(SRDMA_LOG="${SRDMA_LOG:-info}"
		SRDMA_LOG_FILE="$work/server.log")
	cli_env+=(SRDMA_LOG="${SRDMA_LOG:-info}"
		SRDMA_LOG_FILE="$work/client.log")
fi
echo "net_pair: host 1 $srv_gaddr (GID $srv_gid), host 2 $cli_gaddr" \
	"(GID $cli_gid), MTU $mtu${fault:+, faults $fault, seed $seed}"

show()
{
	echo "----- host 1, server: ${srv_env[*]} ${srv_cmd[*]}"
	cat "$srv_out"
	echo "----- host 2, client: ${cli_env[*]} ${cli_cmd[*]}"
	cat "$cli_out"
	if [ "$kind" = xsrq ]; then
		echo "----- host 1, server's SRDMA_LOG"
		cat "$work/server.log" 2>/dev/null
		echo "----- host 2, client's SRDMA_LOG"
		cat "$work/client.log" 2>/dev/null
	fi
	echo "-----"
}

# start_race: the server's log shows ibv_xsrq_pingpong's start race.
start_race()
{
	[ "$kind" = xsrq ] &&
		grep -q 'no response from the peer since RTS' \
			"$work/server.log" 2>/dev/null
}

listening()
{
	[ -n "$("$H" run 1 -- ss -Hltn "sport = :$PORT" 2>/dev/null)" ]
}

# check_output FILE SIDE: KIND's rule; sets fail_msg.
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
		if grep -q 'invalid data in page' "$file"; then
			fail_msg="$side: received data differs from what was sent:"
			fail_msg+=" $(grep -c 'invalid data in page' "$file") x"
			fail_msg+=" '$(grep -m1 'invalid data in page' "$file")'"
		fi
		;;
	xsrq)
		# ibv_xsrq_pingpong checks its exchanges itself and ends with
		# "success" (it prints no rates).
		grep -qx success "$file" ||
			fail_msg="$side: no 'success' line"
		;;
	bw | lat)
		what='t_typical and t_avg'
		[ "$kind" = bw ] && what='BW average and message rate'
		awk -v kind="$kind" '
		/#bytes/ { hdr = 1; next }
		hdr {
			# perftest prints -nan for a t_stdev it cannot compute
			# (a sum of squares that overflowed on a noisy machine).
			for (i = 1; i <= NF; i++)
				if ($i !~ /^[0-9]+(\.[0-9]+)?$/ &&
				    !(kind == "lat" && i == 7 && $i ~ /^-?nan$/))
					next
			if (kind == "bw" && NF >= 5 && $1 > 0 &&
			    ($4 > 0 || $5 > 0))
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

attempt()
{
	local deadline

	fail_msg=
	srv_rc='' cli_rc='' cli_first='' srv_first=''
	: >"$srv_out"
	: >"$cli_out"
	: >"$work/server.log"
	: >"$work/client.log"
	"$H" run 1 -- env "${srv_env[@]}" "$srdma" run -- "${srv_cmd[@]}" \
		>"$srv_out" 2>&1 &
	srv_pid=$!
	deadline=$((SECONDS + timeout / 4))
	until listening; do
		if ! alive "$srv_pid"; then
			wait "$srv_pid"
			fail_msg="server exited (status $?) before listening"
			srv_pid=''
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ] || [ "$SECONDS" -ge "$end" ]; then
			fail_msg="server not listening on port $PORT after $((timeout / 4)) s"
			kill_all
			return 1
		fi
		sleep 0.05
	done
	"$H" run 2 -- env "${cli_env[@]}" "$srdma" run -- "${cli_cmd[@]}" \
		>"$cli_out" 2>&1 &
	cli_pid=$!

	deadline=$end
	while :; do
		if [ -z "$srv_rc" ] && ! alive "$srv_pid"; then
			wait "$srv_pid"
			srv_rc=$?
			srv_pid=''
			[ -n "$cli_rc" ] || srv_first=1
		fi
		if [ -z "$cli_rc" ] && ! alive "$cli_pid"; then
			wait "$cli_pid"
			cli_rc=$?
			cli_pid=''
			[ -n "$srv_rc" ] || cli_first=1
		fi
		[ -n "$srv_rc" ] && [ -n "$cli_rc" ] && break
		if start_race; then
			fail_msg="the server's first SEND ran out of retries"
			fail_msg+=" before the client's QP was in RTR"
			kill_all
			return 1
		fi
		if [ "${srv_rc:-0}" != 0 ] || [ "${cli_rc:-0}" != 0 ]; then
			[ $((SECONDS + GRACE)) -lt "$deadline" ] &&
				deadline=$((SECONDS + GRACE))
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			fail_msg="timed out after $((SECONDS - start)) s:"
			[ -n "$srv_rc" ] && fail_msg+=" server exited $srv_rc;" ||
				fail_msg+=" server killed;"
			[ -n "$cli_rc" ] && fail_msg+=" client exited $cli_rc" ||
				fail_msg+=" client killed"
			kill_all
			return 1
		fi
		sleep 0.05
	done
	if [ "$srv_rc" != 0 ] && [ "$cli_rc" = 0 ] && [ -n "$cli_first" ] &&
	   [ "$kind" = pingpong ] && [ -n "$fault" ] &&
	   grep -q 'transport retry counter exceeded' "$srv_out" &&
	   check_output "$cli_out" client; then
		end_race=server
		return 0
	fi
	if [ "$cli_rc" != 0 ] && [ "$srv_rc" = 0 ] && [ -n "$srv_first" ] &&
	   [ "$kind" = pingpong ] && [ -n "$fault" ] &&
	   grep -q 'transport retry counter exceeded' "$cli_out" &&
	   check_output "$srv_out" server; then
		end_race=client
		return 0
	fi
	if [ "$srv_rc" != 0 ] || [ "$cli_rc" != 0 ]; then
		fail_msg="server exited $srv_rc, client exited $cli_rc"
		return 1
	fi
	case $kind in
	pingpong) check_output "$srv_out" server && check_output "$cli_out" client ;;
	*) check_output "$cli_out" client ;;
	esac
}

start=$SECONDS
end=$((start + timeout))
end_race=
for try in 1 2 3; do
	attempt && break
	if start_race && [ "$try" -lt 3 ] && [ "$SECONDS" -lt "$end" ]; then
		show
		echo "net_pair: $fail_msg: ibv_xsrq_pingpong's own start" \
			"race (machine busy): running the pair again"
		continue
	fi
	if [ "$try" -eq 3 ] || [ "$SECONDS" -ge "$end" ] ||
	   ! grep -q 'Correlation coefficient r' "$srv_out" "$cli_out"; then
		show
		echo "net_pair: FAIL: $fail_msg"
		exit 1
	fi
	show
	echo "net_pair: $fail_msg; perftest could not measure its clock" \
		"(machine busy): running the pair again"
done
show
if [ -n "$end_race" ]; then
	other=client
	[ "$end_race" = client ] && other=server
	echo "net_pair: the $other passed (all its buffers checked); the" \
		"$end_race's last SEND, delivered, lost its ACK after the" \
		"$other had gone, so the $end_race's retries ran out: the" \
		"ping-pong's own end race under loss (it has no final" \
		"handshake), as on hardware"
fi
echo "net_pair: PASS in $((SECONDS - start)) s"
exit 0
