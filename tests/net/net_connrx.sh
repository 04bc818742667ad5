#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_connrx.sh - the connected receive socket (net-endpoint.md, "A
# connected receive socket"). Three ibv_rc_pingpong -c runs (polling,
# data checked), SRDMA_LOG=debug:
#  1. across two test hosts: each side's first request from its peer,
#     received inline, gets the flow its own socket, connected to the
#     peer ("now come on a connected socket" in both logs), and the
#     transfer completes;
#  2. the same with SRDMA_NET_CONNRX=0: no connected socket, completes;
#  3. two processes on ONE host over the net transport
#     (SRDMA_TRANSPORT=net): their datagrams share one flow (the host's
#     address, port 4791, both ways), so a connected socket takes the
#     other process's datagrams too; the first such datagram closes it
#     ("closed, its flow is shared") and is forwarded, and the transfer
#     completes.
#
# Usage: net_connrx.sh SRDMA_EXE
# Exit: 0 pass, 1 fail, 77 skip (no root, no ibv_rc_pingpong).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
srdma=${1:?usage: net_connrx.sh SRDMA_EXE}
PORT=18979

if [ -z "${CONNRX_INSIDE:-}" ]; then
	command -v ibv_rc_pingpong >/dev/null ||
		{ echo "SKIP: ibv_rc_pingpong is not installed"; exit 77; }
	export CONNRX_INSIDE=1
	exec "$H" with 2 -- "$0" "$@"
fi

fail() { echo "FAIL: $*"; exit 1; }
a1=$("$H" addr 1) || fail "no host 1"
a2=$("$H" addr 2) || fail "no host 2"
out=$(mktemp -d /tmp/net_connrx.XXXXXX)
trap 'rm -rf "$out"' EXIT

# pair NAME SERVER_HOST CLIENT_HOST ENV...: ibv_rc_pingpong -c -n 2000,
# server on host SERVER_HOST, client on CLIENT_HOST, both with ENV and
# SRDMA_LOG=debug; logs in $out/NAME.s and $out/NAME.c.
pair()
{
	local name=$1 sh=$2 ch=$3 g1 g2 spid rc i sa ca
	shift 3
	sa=$("$H" addr "$sh") && ca=$("$H" addr "$ch") || fail "no address"
	g1=$("$H" run "$sh" -- "$here/gid_index.sh" "$srdma" "$sa") ||
		fail "host $sh has no GID"
	g2=$("$H" run "$ch" -- "$here/gid_index.sh" "$srdma" "$ca") ||
		fail "host $ch has no GID"
	"$H" run "$sh" -- env SRDMA_LOG=debug "$@" timeout -k 2 30 \
		"$srdma" run -- ibv_rc_pingpong -c -g "$g1" -p "$PORT" -n 2000 \
		>"$out/$name.s" 2>&1 &
	spid=$!
	for ((i = 0; i < 100; i++)); do
		"$H" run "$sh" -- ss -ltnH "sport = :$PORT" | grep -q . && break
		sleep 0.05
	done
	"$H" run "$ch" -- env SRDMA_LOG=debug "$@" timeout -k 2 30 \
		"$srdma" run -- ibv_rc_pingpong -c -g "$g2" -p "$PORT" -n 2000 \
		"$sa" >"$out/$name.c" 2>&1
	rc=$?
	wait "$spid" || rc=1
	if [ "$rc" != 0 ] || [ "$(cat "$out/$name.s" "$out/$name.c" |
			grep -c 'iters in')" != 2 ]; then
		grep -v ' debug ' "$out/$name.s" "$out/$name.c" | tail -40
		fail "$name: ibv_rc_pingpong failed"
	fi
	grep -h 'iters in' "$out/$name.c"
}
# How many of the two logs of NAME say PATTERN.
count() { cat "$out/$1.s" "$out/$1.c" | grep -c "$2"; }

pair across 1 2
n=$(count across 'now come on a connected socket')
[ "$n" = 2 ] || fail "across two hosts: $n connected receive sockets, want 2"
n=$(count across 'closed, its flow is shared')
[ "$n" = 0 ] || fail "across two hosts: a connected socket was given up"
echo "across two hosts: both sides received on a connected socket"

pair off 1 2 SRDMA_NET_CONNRX=0
n=$(count off 'now come on a connected socket')
[ "$n" = 0 ] || fail "SRDMA_NET_CONNRX=0: $n connected receive sockets"
echo "SRDMA_NET_CONNRX=0: none"

pair shared 1 1 SRDMA_TRANSPORT=net
o=$(count shared 'now come on a connected socket')
c=$(count shared 'closed, its flow is shared')
echo "one host, two processes: $o opened, $c given up"
[ "$o" -gt 0 ] || fail "one host: no connected socket was even tried"
[ "$c" -gt 0 ] || fail "one host: a connected socket on a shared flow was kept"
echo "PASS"
