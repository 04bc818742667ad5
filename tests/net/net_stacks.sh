#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_stacks.sh - the stacks people use (UCX, Open MPI over UCX, libfabric's
# verbs provider) between two test hosts, unmodified, through `srdma run`:
# every byte between the hosts is RoCEv2 on the veth (softrdma's net
# transport). The cross-host twin of tests/stacks/stack_run.sh, which runs
# the same clients on one host (docs/design/stacks.md).
#
# Usage: net_stacks.sh [OPTIONS] KIND SRDMA_EXE ARGS...
#   ucx SRDMA ARGS...        ucx_perftest ARGS as a server in host 1 and a
#                            client in host 2 (-p PORT; the client also gets
#                            host 1's address: ucx_perftest's TCP side
#                            channel); the client must print its "Final:"
#                            row, both must exit 0
#   fi  SRDMA ARGS...        fi_pingpong ARGS as a server in host 1 (-B
#                            PORT) and a client in host 2 (-P PORT ADDR);
#                            with -c both sides check every byte; the
#                            client's results row must show every message
#                            acknowledged
#   rdm SRDMA ARGS...        fi with -p 'verbs;ofi_rxm' -e rdm first
#   mpi SRDMA NP PROG ARGS... [-- PROG_ARGS...]
#                            mpirun in host 1: NP ranks over the two hosts
#                            (a hostfile of their addresses, NP/2 slots
#                            each, --map-by node: rank 1 is on host 2),
#                            started in host 2 through the rsh agent below,
#                            ARGS given to mpirun; PROG (tests/stacks/
#                            mpi_check.c) must print "mpi_check: OK ranks=NP"
#                            (or, run with --bench, "mpi_check: BENCH ...")
#   rsh HOST CMD...          (internal) Open MPI's plm_rsh_agent: run the
#                            shell command CMD in the test host whose
#                            address is HOST, through `srdma run`, as ssh
#                            would on a remote machine
# Options:
#   --mtu M          the hosts' MTU (default 1500)
#   --budget SECS    for the whole test (default $BUDGET, else 60): every
#                    program runs under timeout(1) and is killed then
#   --reuse-hosts    use the two hosts of $SRDMA_NET_TAG as they are (made
#                    and removed by the caller, bench/stacks_bench.sh)
#   --expect-fail    the pair must fail (shows that a test can tell)
#
# Programs see the usual test host: `hosts.sh run I` sets SRDMA_DIR (one
# per host) and SRDMA_LINK_LAYER=eth; the rest of the environment (UCX_TLS,
# SRDMA_LOG, ...) reaches both sides. UCX finds srdma0's RoCE v2 GID of the
# host's IPv4 address by itself (no UCX_IB_GID_INDEX). Open MPI: the
# control channel (oob) and any TCP BTL use eth0, the veth; mpirun runs as
# root with --allow-run-as-root.
#
# A passing run prints "RESULT <STACK_TEST>: <command> :: <figures>", as
# stack_run.sh does, so that `ctest -L stacks -V | grep RESULT` shows the
# one-host and the cross-host figures side by side.
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (no root, a program missing).
set -u

here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
PORT=18990		# in host 1's namespace: no other test sees it

# The rsh agent: before anything else, it is called by mpirun with its
# own environment (SRDMA_NET_TAG and SRDMA_EXE among it).
if [ "${1:-}" = rsh ]; then
	[ $# -ge 3 ] || { echo "net_stacks rsh: usage: rsh HOST CMD..." >&2; exit 255; }
	host=$2
	shift 2
	for i in 1 2 3 4 5 6 7 8; do
		a=$("$H" addr "$i" 2>/dev/null) || break
		if [ "$a" = "$host" ]; then
			exec "$H" run "$i" -- "$SRDMA_EXE" run -- \
				/bin/sh -c "$*"
		fi
	done
	echo "net_stacks rsh: $host is not a test host of tag" \
		"${SRDMA_NET_TAG:-?}" >&2
	exit 255
fi

mtu=1500
budget=${BUDGET:-60}
reuse=
expect_fail=0
while [ $# -gt 0 ]; do
	case "$1" in
	--mtu) mtu=${2:?}; shift 2 ;;
	--budget) budget=${2:?}; shift 2 ;;
	--reuse-hosts) reuse=1; shift ;;
	--expect-fail) expect_fail=1; shift ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "usage: $0 [OPTIONS] KIND SRDMA ARGS..." >&2; exit 2; }

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
need() {
	command -v "$1" >/dev/null ||
		skip "$1 is not installed (scripts/setup.sh installs it)"
}

# Make the hosts (unless reused), then run ourselves inside `hosts.sh
# with`, which removes them whatever happens.
if [ -z "$reuse" ] && [ -z "${NET_STACKS_INSIDE:-}" ]; then
	export NET_STACKS_INSIDE=1
	opts=(--budget "$budget")
	[ "$expect_fail" = 1 ] && opts+=(--expect-fail)
	exec "$H" with 2 --mtu "$mtu" -- "$0" "${opts[@]}" "$@"
fi
[ -n "${SRDMA_NET_TAG:-}" ] || fail "no SRDMA_NET_TAG (hosts.sh with)"

KIND=$1
SRDMA=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
export SRDMA_EXE=$SRDMA
shift 2
[ -x "$SRDMA" ] || fail "$SRDMA is not executable"
addr1=$("$H" addr 1) || fail "no host 1"

work=$(mktemp -d /tmp/srdma-netstack.XXXXXX) || exit 1
pids=()
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# on I CMD...: CMD in host I through srdma run, within the budget.
on() {
	local i=$1
	shift
	"$H" run "$i" -- timeout -k 2 "$budget" "$SRDMA" run -- "$@"
}

# wait_listen PID: until something listens on TCP $PORT in host 1; 1 if
# PID dies or 10 s pass.
wait_listen() {
	local i
	for ((i = 0; i < 200; i++)); do
		"$H" run 1 -- ss -ltnH "sport = :$PORT" 2>/dev/null |
			grep -q . && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# pair SERVER_CMD... -- CLIENT_CMD...: server in host 1, client in host 2;
# sets srv_rc, cli_rc; outputs in $work/server, $work/client.
pair() {
	local -a scmd=() ccmd=()
	local i spid cpid
	while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	on 1 "${scmd[@]}" >"$work/server" 2>&1 &
	spid=$!
	pids+=("$spid")
	if ! wait_listen "$spid"; then
		kill -KILL "$spid" 2>/dev/null
		wait "$spid"
		srv_rc=$?
		echo "== host 1, server (exit $srv_rc)"; cat "$work/server"
		fail "the server never listened on port $PORT in host 1"
	fi
	on 2 "${ccmd[@]}" >"$work/client" 2>&1 &
	cpid=$!
	pids+=("$cpid")
	wait "$cpid"
	cli_rc=$?
	# The server ends on its own once the client is done (5 s).
	for ((i = 0; i < 100; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	kill -TERM "$spid" 2>/dev/null
	wait "$spid"
	srv_rc=$?
	echo "== host 1, server: ${scmd[*]} (exit $srv_rc)"
	cat "$work/server"
	echo "== host 2, client: ${ccmd[*]} $addr1 (exit $cli_rc)"
	cat "$work/client"
}

judge() {
	if [ "$expect_fail" = 1 ]; then
		[ "$1" = 0 ] && fail "it worked, and should not have"
		echo "PASS: failed as expected"
		exit 0
	fi
	[ "$1" = 0 ] || fail "$2"
	echo "PASS"
	exit 0
}

result() {
	echo "RESULT ${STACK_TEST:-net}: $* (2 test hosts, MTU $("$H" run 1 -- cat /sys/class/net/eth0/mtu))"
}

case "$KIND" in
ucx)
	need ucx_perftest
	pair ucx_perftest -p "$PORT" "$@" -- \
		ucx_perftest -p "$PORT" "$@" "$addr1"
	# "Final: iters 50%ile avg overall bw_avg bw_overall rate_avg
	# rate_overall": average latency and overall message rate > 0.
	row=$(grep -E '^Final:' "$work/client" | tail -1)
	ok=0
	if [ "$srv_rc" = 0 ] && [ "$cli_rc" = 0 ] && [ -n "$row" ] &&
	   echo "$row" | awk '{ for (i = 2; i <= 9; i++)
				     if ($i !~ /^[0-9.]+$/) exit 1
				 if ($4 <= 0 || $9 <= 0) exit 1 }'; then
		ok=1
		result "${UCX_TLS:+UCX_TLS=$UCX_TLS }ucx_perftest $* :: $row"
	fi
	judge $((!ok)) "ucx_perftest failed or printed no sane Final row"
	;;
fi | rdm)
	need fi_pingpong
	[ "$KIND" = rdm ] && set -- -p 'verbs;ofi_rxm' -e rdm "$@"
	iters=
	prev=
	for a in "$@"; do
		[ "$prev" = -I ] && iters=$a
		prev=$a
	done
	pair fi_pingpong -B "$PORT" "$@" -- \
		fi_pingpong -P "$PORT" "$@" "$addr1"
	# "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec"
	row=$(awk 'hdr { print; exit } $1 == "bytes" { hdr = 1 }' \
		"$work/client")
	ok=0
	if [ "$srv_rc" = 0 ] && [ "$cli_rc" = 0 ] && [ -n "$row" ] &&
	   echo "$row" | awk -v n="$iters" '
		$2 != n || $3 != "=" n { exit 1 }
		$6 !~ /^[0-9.]+$/ || $6 <= 0 { exit 1 }'; then
		ok=1
		result "fi_pingpong $* :: $row"
	fi
	judge $((!ok)) "fi_pingpong failed, or not every message was" \
		"acknowledged (or its data check failed)"
	;;
mpi)
	need mpirun
	np=$1
	prog=$2
	shift 2
	[ -x "$prog" ] || skip "$prog was not built (no mpicc)"
	# ARGS for mpirun, then after "--" the program's own.
	margs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do margs+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	set -- "${margs[@]}" "$prog" "$@"
	per=$(((np + 1) / 2))
	printf '%s slots=%s\n%s slots=%s\n' "$addr1" "$per" \
		"$("$H" addr 2)" "$per" >"$work/hostfile"
	chmod 0755 "$work"
	on 1 mpirun --allow-run-as-root -np "$np" --hostfile "$work/hostfile" \
		--map-by node --bind-to none \
		--mca plm_rsh_agent "$here/net_stacks.sh rsh" \
		--mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0 \
		"$@" >"$work/out" 2>&1
	rc=$?
	cat "$work/out"
	# OK: the checked run; BENCH: its timing mode (mpi_check --bench).
	row=$(grep -E '^mpi_check: (OK|BENCH) ranks='"$np"' ' "$work/out")
	ok=0
	if [ "$rc" = 0 ] && [ -n "$row" ]; then
		ok=1
		result "mpirun -np $np --map-by node ${margs[*]} :: $row"
	fi
	judge $((!ok)) "the MPI job failed (exit $rc) or did not report OK"
	;;
*)
	echo "net_stacks.sh: unknown KIND '$KIND'" >&2
	exit 2
	;;
esac
