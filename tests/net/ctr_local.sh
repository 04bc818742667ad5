#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# ctr_local.sh - two processes of one host (one network namespace) that
# cannot attach each other's memory still talk, over the net transport,
# chosen by the library with nothing set but the Ethernet link layer
# (issue 12, item 2; docs/design/containers.md). Cases:
#
#   pidns   each side in its own PID and mount namespace with a private
#           /dev/shm (tmpfs), default state directory: containers with
#           their own IPC and PID namespaces on one network
#   dir     the two sides use different SRDMA_DIRs
#   user    the client runs as nobody (another user: another registry).
#           Not supported: the kernel lets sockets of one uid only share
#           UDP port 4791 (SO_REUSEPORT), so the second user's context
#           cannot open its endpoint; the test checks that its RTR fails
#           at once with a log line saying why (no hang, no wrong peer)
#   nocma   both sides refuse cross-memory attach of other processes
#           (tests/net/cma_deny: a seccomp filter, as Yama ptrace_scope=1
#           does between unrelated processes; this kernel has no Yama)
#   pidshm  each side in its own PID namespace, one state directory
#           (a /dev/shm shared by containers, docker --ipc=host): the
#           registry's pids mean nothing to the other side
#   containers  the recipe of containers.md: each side in its own
#           network namespace (two test hosts on a bridge-less veth),
#           PID and mount namespace, with a private /dev/shm
#   same    control: one state directory, nothing refused: the host
#           transport must be chosen
#
# Each case runs ibv_rc_pingpong -c (data checked) and ib_write_bw (then
# ib_send_bw -c... only where installed) with SRDMA_LOG=info, and checks
# the log line that names the transport chosen and why.
#
# Usage: ctr_local.sh SRDMA_EXE CMA_DENY_EXE CASE
# Exit: 0 pass, 1 fail, 77 skip (no root, no clients, no unshare/setpriv).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
srdma=${1:?usage: ctr_local.sh SRDMA_EXE CMA_DENY_EXE CASE}
deny=${2:?usage}
case_=${3:?usage}

skip() { echo "skipped: $*"; exit 77; }

if [ "${4:-}" != inner ]; then
	[ "$(id -u)" = 0 ] || skip "needs root (namespaces, setpriv)"
	command -v ibv_rc_pingpong >/dev/null ||
		skip "ibv_rc_pingpong not installed"
	command -v ib_write_bw >/dev/null || skip "ib_write_bw not installed"
	case $case_ in
	pidns) command -v unshare >/dev/null || skip "unshare missing" ;;
	user)
		command -v setpriv >/dev/null || skip "setpriv missing" ;;
	dir|nocma|same|pidshm|containers) ;;
	*) echo "unknown case $case_"; exit 2 ;;
	esac
	nh=1
	[ "$case_" = containers ] && nh=2
	exec bash "$H" with $nh --tag ctr$$ -- bash "$0" "$srdma" "$deny" \
		"$case_" inner
fi

out=$(mktemp -d); [ -n "${CTR_KEEP:-}" ] && echo "out: $out"
chmod 0755 "$out"
[ -n "${CTR_KEEP:-}" ] || trap 'rm -rf "$out"' EXIT
# A build nobody cannot reach (a clone in a 0700 directory, as `mktemp -d`
# makes them): the user case runs a copy of the tool and the libraries
# from the test's own directory.
if [ "$case_" = user ] &&
	! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$srdma"
then
	mkdir -p "$out/build/bin" "$out/build/lib" &&
		cp "$srdma" "$out/build/bin/" &&
		cp -P "$(dirname "$srdma")"/../lib/*.so* "$out/build/lib/" ||
		exit 1
	srdma=$out/build/bin/$(basename "$srdma")
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$srdma" ||
		skip "nobody cannot reach $srdma (a parent directory is not" \
			"searchable)"
fi
A1=$("$H" addr 1)
# Ports: ctr_local's own range, one per case (CTest may run cases at once,
# but each in its own network namespace: ports never meet anyway).
PORT=18700

# side S (srv|cli): the command prefix that puts one side where CASE wants
# it. Both sides are in host 1's network namespace.
side()
{
	local s=$1
	case $case_ in
	same)
		echo "$H run 1 --"
		;;
	dir)
		if [ "$s" = cli ]; then
			mkdir -p -m 0700 "$out/dir2"
			echo "$H run 1 -- env SRDMA_DIR=$out/dir2"
		else
			echo "$H run 1 --"
		fi
		;;
	pidshm)
		echo "$H run 1 -- unshare --pid --fork --kill-child" \
			"--mount-proc --"
		;;
	pidns|containers)
		# A private /dev/shm and no SRDMA_DIR: the default state
		# directory /dev/shm/srdma-0, private to this side.
		local h=1
		[ "$case_" = containers ] && [ "$s" = cli ] && h=2
		echo "$H run $h -- env -u SRDMA_DIR unshare --pid --fork --kill-child" \
			"--mount --mount-proc -- sh -c" \
			"'mount -t tmpfs -o mode=1777 ctr-shm /dev/shm && exec \"\$@\"' sh"
		;;
	user)
		if [ "$s" = cli ]; then
			mkdir -p -m 0700 "$out/nobody" "$out/home"
			chown 65534:65534 "$out/nobody" "$out/home"
			echo "$H run 1 -- setpriv --reuid=65534 --regid=65534" \
				"--clear-groups env SRDMA_DIR=$out/nobody" \
				"HOME=$out/home"
		else
			echo "$H run 1 --"
		fi
		;;
	nocma)
		echo "$H run 1 --"
		;;
	esac
}

# prog: what runs inside srdma run (cma_deny in front for nocma)
inner()
{
	[ "$case_" = nocma ] && echo "$deny"
}

listening()
{
	[ -n "$("$H" run 1 -- ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

fail=
# pair NAME PORT SERVER_ARGS -- CLIENT_ARGS: one server and one client
pair()
{
	local name=$1 port=$2 spid cpid src crc
	shift 2
	local -a sargs=() cargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	eval "SRDMA_LOG=info timeout -k 5 60 $(side srv) $srdma run -- $(inner) \
		\"\${sargs[@]}\"" >"$out/$name.srv" 2>&1 &
	spid=$!
	for _ in $(seq 100); do
		listening "$port" && break
		sleep 0.1
	done
	eval "SRDMA_LOG=info timeout -k 5 60 $(side cli) $srdma run -- $(inner) \
		\"\${cargs[@]}\"" >"$out/$name.cli" 2>&1 &
	cpid=$!
	wait $cpid; crc=$?
	if [ "$case_" = user ]; then
		# Another user cannot join this namespace's port 4791 group
		# (the kernel shares a port with SO_REUSEPORT within one uid
		# only): the client must fail at RTR, at once, saying so.
		# docs/design/containers.md ("Limits").
		kill $spid 2>/dev/null
		wait $spid
		echo "== $name: client exit $crc (must fail: another user)"
		grep -h "4791\|RTR" "$out/$name.cli" | sed 's/^/   /' | head -4
		[ $crc -ne 0 ] && [ $crc -ne 124 ] &&
			grep -q "another user's contexts" "$out/$name.cli" ||
			fail+=" $name(no clear refusal)"
		return
	fi
	wait $spid; src=$?
	echo "== $name: server exit $src, client exit $crc"
	grep -h "transport" "$out/$name.srv" "$out/$name.cli" | sort | uniq -c |
		sed 's/^/   /' | head -8
	if [ $src -ne 0 ] || [ $crc -ne 0 ]; then
		fail+=" $name"
		echo "--- server:"; tail -15 "$out/$name.srv"
		echo "--- client:"; tail -15 "$out/$name.cli"
		return
	fi
	# Which transport, and why: the library's own line, on both sides.
	local want=net
	[ "$case_" = same ] && want=host
	if [ "$case_" = pidshm ] && grep -q "reaped dead context" \
		"$out/$name.srv" "$out/$name.cli"; then
		fail+=" $name(a side reaped the other's registry entry)"
	fi
	for s in srv cli; do
		grep -q "transport $want" "$out/$name.$s" || {
			fail+=" $name.$s(no 'transport $want' line)"
			echo "--- $s:"; grep -i "transport\|lid" "$out/$name.$s" | head
		}
	done
}

pair pingpong $PORT ibv_rc_pingpong -g 1 -p $PORT -n 200 -s 4096 -c -- \
	ibv_rc_pingpong -g 1 -p $PORT -n 200 -s 4096 -c "$A1"
pair write_bw $((PORT + 1)) ib_write_bw -x 1 -p $((PORT + 1)) -s 65536 \
	-n 500 -- ib_write_bw -x 1 -p $((PORT + 1)) -s 65536 -n 500 "$A1"
grep -h "65536 " "$out/write_bw.cli" | tail -1

if [ -n "$fail" ]; then
	echo "FAIL ($case_):$fail"
	exit 1
fi
echo "PASS ($case_)"
