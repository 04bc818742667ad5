#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_multi.sh - several processes of one host share UDP port 4791 (issue
# 10, item 7; docs/design/net-endpoint.md): N ibv_rc_pingpong -c servers
# in host 1 (one context each, all on port 4791 through the reuseport
# group), their N clients in host 2 (likewise), all pairs at once. One
# more pair's server is SIGKILLed mid-run, so the group loses a member
# that never said goodbye (its client too, in host 2). Every other pair
# must finish with its data checked.
#
# Usage: net_multi.sh SRDMA_EXE [N]   (N pairs that must pass, default 3)
# Exit: 0 pass, 1 fail, 77 skip (no root, no ibv_rc_pingpong).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
srdma=${1:?usage: net_multi.sh SRDMA_EXE [N]}
N=${2:-3}

if [ "${3:-}" != inner ]; then
	command -v ibv_rc_pingpong >/dev/null ||
		{ echo "skipped: ibv_rc_pingpong not installed"; exit 77; }
	exec bash "$H" with 2 --tag mu$$ -- bash "$0" "$srdma" "$N" inner
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
A1=$("$H" addr 1)
ITERS=100
BASE=18600

listening()
{
	[ -n "$("$H" run 1 -- ss -Hltn "sport = :$1" 2>/dev/null)" ]
}

# Pairs 0..N-1 must pass; pair N is the victim.
iters() { [ "$1" -eq "$N" ] && echo 1000000 || echo $ITERS; }
for i in $(seq 0 "$N"); do
	timeout 120 "$H" run 1 -- "$srdma" run -- ibv_rc_pingpong -g 1 \
		-p $((BASE + i)) -n "$(iters "$i")" -s 4096 -c \
		>"$out/srv$i" 2>&1 &
	echo $! >"$out/srvpid$i"
done
for i in $(seq 0 "$N"); do
	for _ in $(seq 100); do
		listening $((BASE + i)) && break
		sleep 0.1
	done
done
for i in $(seq 0 "$N"); do
	timeout 120 "$H" run 2 -- "$srdma" run -- ibv_rc_pingpong -g 1 \
		-p $((BASE + i)) -n "$(iters "$i")" -s 4096 -c "$A1" \
		>"$out/cli$i" 2>&1 &
	echo $! >"$out/clipid$i"
done

# Kill the victim pair once under way, both sides (SIGKILL: no goodbye to
# either host's reuseport group). The others go on. (Its client would
# otherwise retry for ever: ibv_rc_pingpong asks retry_cnt 7, which rxe
# and softrdma treat as infinite.)
sleep 1.5
victim=$("$H" run 1 -- pgrep -f "^ibv_rc_pingpong -g 1 -p $((BASE + N)) .*-c\$" |
	head -1)
vcli=$("$H" run 2 -- pgrep -f "^ibv_rc_pingpong -g 1 -p $((BASE + N)) .*$A1\$" |
	head -1)
[ -n "$victim" ] && "$H" run 1 -- kill -9 "$victim"
[ -n "$vcli" ] && "$H" run 2 -- kill -9 "$vcli"

fail=
for i in $(seq 0 "$N"); do
	wait "$(cat "$out/clipid$i")"
	crc=$?
	wait "$(cat "$out/srvpid$i")"
	src=$?
	if [ "$i" -eq "$N" ]; then
		echo "victim pair: server pid ${victim:-none} and client pid" \
			"${vcli:-none} killed; exits $src, $crc"
		[ -n "$victim" ] && [ -n "$vcli" ] ||
			fail="the victim pair was not found"
		[ $crc -ne 0 ] || fail="the victim's client passed: not killed?"
		continue
	fi
	echo "pair $i: server exit $src, client exit $crc;" \
		"$(grep 'iters in' "$out/cli$i")"
	[ $crc -eq 0 ] && [ $src -eq 0 ] || fail="pair $i failed"
	for f in "$out/srv$i" "$out/cli$i"; do
		grep -q "$ITERS iters in" "$f" || fail="pair $i: no '$ITERS iters'"
		! grep -q 'invalid data in page' "$f" ||
			fail="pair $i: data corrupted"
	done
done
if [ -n "$fail" ]; then
	echo "net_multi: FAIL: $fail"
	for f in "$out"/srv* "$out"/cli*; do
		case $f in *pid*) continue ;; esac
		echo "----- ${f##*/}"; cat "$f"
	done
	exit 1
fi
echo "net_multi: PASS"
