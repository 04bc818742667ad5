#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# stack_run.sh - run one of the RDMA stacks people use (UCX, Open MPI over
# UCX, libfabric's verbs provider) over softrdma, unmodified, through
# `srdma run`, and judge the result. One test of tests/stacks/stacks.cmake.
#
# Usage: stack_run.sh [OPTIONS] KIND SRDMA_EXE ARGS...
#   info SRDMA                   ucx_info -d must list rc_verbs and ud_verbs
#                                on srdma0:1
#   ucx  SRDMA PORT ARGS...      ucx_perftest ARGS as a server and a client
#                                (-p PORT; the client also gets 127.0.0.1);
#                                the client must print its "Final:" row
#   fi   SRDMA PORT ARGS...      fi_pingpong ARGS as a server (-B PORT) and
#                                a client (-P PORT 127.0.0.1); ARGS carry
#                                -c, so both sides check every byte; the
#                                client must print its results row, every
#                                message acknowledged
#   mpi  SRDMA NP PROGRAM ARGS...
#                                mpirun -np NP ARGS PROGRAM (tests/stacks/
#                                mpi_check.c); it must print
#                                "mpi_check: OK"
#   rdm  SRDMA PORT ARGS...      as fi with -p 'verbs;ofi_rxm' -e rdm first:
#                                libfabric's RDM endpoint (what MPI over
#                                libfabric uses), which asks for a completion
#                                queue of 262,144 entries: when the device
#                                reports a smaller max_cqe the test is
#                                skipped (77) with that reason
# Options:
#   --as-user     run everything as an unprivileged user: when root,
#                 as nobody (setpriv), with an SRDMA_DIR of its own;
#                 otherwise as ourselves
#   --no-node     make /dev/infiniband/uverbs_srdma0 missing, as on a
#                 host where root never ran `srdma devnode`: when root, in a
#                 private mount namespace with an empty tmpfs over
#                 /dev/infiniband (nothing changes outside); otherwise, if
#                 the node exists, SRDMA_DEVNODE=preload (unless set
#                 already) forces what `srdma run` does without it
#   --expect-fail the command must fail (the node hidden and srdma run's
#                 help switched off: shows the test can tell)
#
# Each passing run prints "RESULT <STACK_TEST>: <command> :: <figures>"
# (STACK_TEST: the CTest name), so that
#   ctest --test-dir build -L stacks -V | grep -E 'RESULT|SKIP'
# lists every client's figures, softrdma and shared memory side by side.
# Budget: BUDGET seconds (default 60) for the whole test; every process is
# killed when it runs out, and on any exit. Exit: 0 pass, 1 fail, 2 usage,
# 77 skip (a program or a prerequisite missing, with the reason printed).
set -u

BUDGET=${BUDGET:-60}
HOST=127.0.0.1
as_user=0
no_node=0
expect_fail=0
while [ $# -gt 0 ]; do
	case "$1" in
	--as-user) as_user=1 ;;
	--no-node) no_node=1 ;;
	--expect-fail) expect_fail=1 ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 2 ] || { echo "usage: $0 [OPTIONS] KIND SRDMA ARGS..." >&2; exit 2; }
KIND=$1
SRDMA=$2
shift 2

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# Hide the node: re-run ourselves in a private mount namespace.
if [ "$no_node" = 1 ] && [ -z "${STACK_NODE_HIDDEN:-}" ]; then
	if [ "$(id -u)" = 0 ]; then
		export STACK_NODE_HIDDEN=1
		args=()
		[ "$as_user" = 1 ] && args+=(--as-user)
		[ "$expect_fail" = 1 ] && args+=(--expect-fail)
		# No /dev/infiniband at all: already missing, nothing to hide.
		exec unshare -m bash -c \
			'if [ -d /dev/infiniband ]; then
				 mount -t tmpfs -o mode=0755 none \
					 /dev/infiniband || exit 1
			 fi
			 exec "$@"' \
			hide "$0" "${args[@]}" --no-node "$KIND" "$SRDMA" "$@"
	fi
	export SRDMA_DEVNODE=${SRDMA_DEVNODE:-preload}
fi
if [ "$no_node" = 1 ] && [ -n "${STACK_NODE_HIDDEN:-}" ]; then
	[ ! -e /dev/infiniband/uverbs_srdma0 ] ||
		fail "the node is still visible in the private namespace"
fi
if [ "$expect_fail" = 1 ]; then
	export SRDMA_DEVNODE=off
fi

work=$(mktemp -d /tmp/srdma-stack.XXXXXX) || exit 1
chmod 0755 "$work"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT

# RUN: how every program is started (through srdma run, maybe as nobody).
# setsid first: each side is a process group of its own, killed whole.
RUN=(setsid)
if [ "$as_user" = 1 ] && [ "$(id -u)" = 0 ]; then
	command -v setpriv >/dev/null || skip "setpriv (util-linux) missing"
	# A build nobody cannot reach (a clone in a 0700 directory, as
	# `mktemp -d` makes them): run a copy of the tool and the libraries
	# from the test's own directory instead.
	if ! setpriv --reuid=65534 --regid=65534 --clear-groups \
		test -x "$SRDMA"; then
		stage=$work/build
		mkdir -p "$stage/bin" "$stage/lib" &&
			cp "$SRDMA" "$stage/bin/" &&
			cp -P "$(dirname "$SRDMA")"/../lib/*.so* "$stage/lib/" ||
			exit 1
		SRDMA=$stage/bin/$(basename "$SRDMA")
	fi
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$SRDMA" ||
		skip "nobody cannot reach $SRDMA (a parent directory is" \
			"not searchable)"
	mkdir -m 0700 "$work/state" "$work/home" &&
		chown 65534:65534 "$work/state" "$work/home" || exit 1
	RUN+=(setpriv --reuid=65534 --regid=65534 --clear-groups
	     env SRDMA_DIR="$work/state" HOME="$work/home" TMPDIR="$work/home")
fi
RUN+=(timeout -k 2 "$BUDGET" "$SRDMA" run --)

need() {
	command -v "$1" >/dev/null ||
		skip "$1 is not installed (scripts/setup.sh installs it)"
}

# wait_listen PORT PID: until something listens on TCP PORT; 1 if PID dies.
wait_listen() {
	local i
	for ((i = 0; i < 200; i++)); do
		ss -ltnH "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# pair PORT SERVER_CMD... -- CLIENT_CMD...: run both, wait for both.
# Sets srv_rc, cli_rc; outputs in $work/server, $work/client.
pair() {
	local port=$1 i
	shift
	local -a scmd=() ccmd=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	if ss -ltnH "sport = :$port" | grep -q .; then
		fail "port $port is already in use"
	fi
	"${RUN[@]}" "${scmd[@]}" >"$work/server" 2>&1 &
	local spid=$!
	pids+=("$spid")
	if ! wait_listen "$port" "$spid"; then
		wait "$spid"
		srv_rc=$?
		echo "== server (exit $srv_rc)"; cat "$work/server"
		fail "the server never listened on port $port"
	fi
	"${RUN[@]}" "${ccmd[@]}" >"$work/client" 2>&1 &
	local cpid=$!
	pids+=("$cpid")
	wait "$cpid"
	cli_rc=$?
	# The server ends on its own once the client is done.
	for ((i = 0; i < 100; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	kill -TERM -- "-$spid" 2>/dev/null
	wait "$spid"
	srv_rc=$?
	echo "== server: ${scmd[*]} (exit $srv_rc)"
	cat "$work/server"
	echo "== client: ${ccmd[*]} (exit $cli_rc)"
	cat "$work/client"
}

# judge OK: the verdict, inverted under --expect-fail.
judge() {
	if [ "$expect_fail" = 1 ]; then
		[ "$1" = 0 ] && fail "it worked with the node hidden and no help"
		echo "PASS: failed as expected without the node"
		exit 0
	fi
	[ "$1" = 0 ] || fail "$2"
	echo "PASS"
	exit 0
}

case "$KIND" in
info)
	need ucx_info
	"${RUN[@]}" ucx_info -d >"$work/out" 2>&1
	rc=$?
	cat "$work/out"
	ok=1
	for tl in rc_verbs ud_verbs; do
		grep -A1 "Transport: $tl\$" "$work/out" |
			grep -q "Device: srdma0:1\$" || ok=0
	done
	[ "$rc" = 0 ] || ok=0
	judge $((!ok)) "ucx_info -d does not list rc_verbs and ud_verbs on srdma0:1"
	;;
ucx)
	need ucx_perftest
	port=$1
	shift
	pair "$port" ucx_perftest -p "$port" "$@" -- \
		ucx_perftest -p "$port" "$@" "$HOST"
	# "Final: iters 50%ile avg overall bw_avg bw_overall rate_avg
	# rate_overall": the overall latency and message rate must be
	# positive numbers (a small message's MB/s may print as 0.00). The
	# per-interval columns (50%ile, avg, bw_avg, rate_avg) describe the
	# last report interval only, which ucx_perftest prints as -nan when
	# that interval happened to hold no iteration: numbers or nan.
	row=$(grep -E '^Final:' "$work/client" | tail -1)
	ok=0
	if [ "$srv_rc" = 0 ] && [ "$cli_rc" = 0 ] && [ -n "$row" ] &&
	   echo "$row" | awk '{ for (i = 2; i <= 9; i++) {
				     if ($i ~ /^[0-9.]+$/) continue
				     if ((i == 3 || i == 4 || i == 6 || i == 8) &&
					 $i ~ /^-?nan$/) continue
				     exit 1
				 }
				 if ($2 <= 0 || $5 <= 0 || $9 <= 0) exit 1 }'; then
		ok=1
		echo "RESULT ${STACK_TEST:-}: ${UCX_TLS:+UCX_TLS=$UCX_TLS }ucx_perftest $* ::" \
			"$row"
	fi
	judge $((!ok)) "ucx_perftest failed or printed no sane Final row"
	;;
fi|rdm)
	need fi_pingpong
	port=$1
	shift
	[ "$KIND" = rdm ] && set -- -p 'verbs;ofi_rxm' -e rdm "$@"
	if [ "$KIND" = rdm ] && [ "$expect_fail" = 0 ]; then
		need ibv_devinfo
		cqe=$("${RUN[@]}" ibv_devinfo -v 2>/dev/null |
		      awk '$1 == "max_cqe:" { print $2; exit }')
		[ -n "$cqe" ] || fail "ibv_devinfo -v shows no max_cqe"
		[ "$cqe" -ge 262144 ] ||
			skip "verbs;ofi_rxm needs a CQ of 262144 entries;" \
			     "srdma0's max_cqe is $cqe (fi_enable fails with" \
			     "EINVAL until the device limit is raised)"
	fi
	iters=
	prev=
	for a in "$@"; do
		[ "$prev" = -I ] && iters=$a
		prev=$a
	done
	pair "$port" fi_pingpong -B "$port" "$@" -- \
		fi_pingpong -P "$port" "$@" "$HOST"
	# "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec"
	row=$(awk 'hdr { print; exit } $1 == "bytes" { hdr = 1 }' \
		"$work/client")
	ok=0
	if [ "$srv_rc" = 0 ] && [ "$cli_rc" = 0 ] && [ -n "$row" ] &&
	   echo "$row" | awk -v n="$iters" '
		$2 != n || $3 != "=" n { exit 1 }
		$6 !~ /^[0-9.]+$/ || $6 <= 0 { exit 1 }'; then
		ok=1
		echo "RESULT ${STACK_TEST:-}: fi_pingpong $* :: $row"
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
	if [ -n "${stage:-}" ]; then
		cp "$prog" "$stage/bin/" || exit 1
		prog=$stage/bin/$(basename "$prog")
	fi
	mpiargs=(-np "$np" --oversubscribe --bind-to none)
	[ "$(id -u)" = 0 ] && [ "$as_user" = 0 ] &&
		mpiargs+=(--allow-run-as-root)
	"${RUN[@]}" mpirun "${mpiargs[@]}" "$@" "$prog" >"$work/out" 2>&1
	rc=$?
	cat "$work/out"
	row=$(grep -E '^mpi_check: OK ranks='"$np"' ' "$work/out")
	ok=0
	if [ "$rc" = 0 ] && [ -n "$row" ]; then
		ok=1
		echo "RESULT ${STACK_TEST:-}: mpirun -np $np $* :: $row"
	fi
	judge $((!ok)) "the MPI program failed (exit $rc) or did not report OK"
	;;
*)
	echo "stack_run.sh: unknown KIND '$KIND'" >&2
	exit 2
	;;
esac
