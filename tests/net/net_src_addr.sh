#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_src_addr.sh - RoCEv2 from a GID whose address is not the one the
# kernel would pick as the source by itself: each test host gets a
# second IPv4 address on eth0 (198.18.x.(100+i), a secondary address of
# the same subnet, which the kernel never chooses for a datagram to the
# other host), and ibv_rc_pingpong -c runs with the GIDs of those second
# addresses. The ICRC covers the source address, so every datagram must
# leave from the GID's address: the library pins it with IPV6_PKTINFO
# where the kernel's own choice differs (net-endpoint.md, "Sending"), and
# leaves the control message out where it agrees. Without the pin the
# peer drops every packet (icrc) and the pair fails.
# Then the same between the primary addresses (the kernel's own choice).
# Both transfers check their data; no ICRC drop on either host.
#
# Usage: net_src_addr.sh SRDMA_EXE
# Exit: 0 pass, 1 fail, 77 skip (no root, no ibv_rc_pingpong).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
srdma=${1:?usage: net_src_addr.sh SRDMA_EXE}
PORT=18977

if [ -z "${SRC_ADDR_INSIDE:-}" ]; then
	command -v ibv_rc_pingpong >/dev/null ||
		{ echo "SKIP: ibv_rc_pingpong is not installed"; exit 77; }
	export SRC_ADDR_INSIDE=1
	exec "$H" with 2 -- "$0" "$@"
fi

fail() { echo "FAIL: $*"; exit 1; }
a1=$("$H" addr 1) || fail "no host 1"
a2=$("$H" addr 2) || fail "no host 2"
pre=${a1%.*}
for i in 1 2; do
	"$H" run "$i" -- ip addr add "$pre.$((100 + i))/24" dev eth0 ||
		fail "cannot add $pre.$((100 + i)) to host $i"
done
# The kernel's own source from host 2 to host 1's second address: the
# primary, not the GID's.
src=$("$H" run 2 -- ip -4 route get "$pre.101" | awk '{
	for (i = 1; i < NF; i++) if ($i == "src") print $(i + 1) }')
[ "$src" = "$a2" ] || fail "the kernel picks $src, not $a2: no test"

# pair SERVER_ADDR CLIENT_ADDR: ibv_rc_pingpong -c between the GIDs of
# those addresses; its output on failure.
pair()
{
	local g1 g2 spid rc i out
	g1=$("$H" run 1 -- "$here/gid_index.sh" "$srdma" "$1") ||
		fail "host 1 has no GID for $1"
	g2=$("$H" run 2 -- "$here/gid_index.sh" "$srdma" "$2") ||
		fail "host 2 has no GID for $2"
	out=$(mktemp -d /tmp/net_src_addr.XXXXXX)
	"$H" run 1 -- timeout -k 2 30 "$srdma" run -- ibv_rc_pingpong -c \
		-g "$g1" -p "$PORT" -n 200 >"$out/s" 2>&1 &
	spid=$!
	for ((i = 0; i < 100; i++)); do
		"$H" run 1 -- ss -ltnH "sport = :$PORT" | grep -q . && break
		sleep 0.05
	done
	"$H" run 2 -- timeout -k 2 30 "$srdma" run -- ibv_rc_pingpong -c \
		-g "$g2" -p "$PORT" -n 200 "$a1" >"$out/c" 2>&1
	rc=$?
	wait "$spid" || rc=1
	echo "== $2 (GID $g2) -> $1 (GID $g1): exit $rc"
	grep -E "iters in" "$out/c" "$out/s"
	if [ "$rc" != 0 ] || [ "$(grep -c 'iters in' "$out/c" "$out/s" |
			awk -F: '{ s += $2 } END { print s }')" != 2 ]; then
		cat "$out/s" "$out/c"
		rm -rf "$out"
		fail "ibv_rc_pingpong between $2 and $1"
	fi
	rm -rf "$out"
}

pair "$pre.101" "$pre.102"
pair "$a1" "$a2"
echo "PASS"
