#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# xsrq_multi.sh - XRC as it is meant to be used (docs/design/xrc.md): one
# ibv_xsrq_pingpong server serves N clients at once, every client's
# messages landing in the server's one XRC SRQ through its own TGT QP,
# each client's in its own XRC SRQ through the server's.
#
# Usage: xsrq_multi.sh [--hosts] SRDMA_EXE PORT [N]
#   --hosts    the server in test host 1, the clients in test host 2
#              (hosts.sh, root: the net transport); without, all on this
#              host (the host transport)
#   N          clients (default 3)
# Pass: the server and every client exit 0 and print "success" (the
# program checks its own exchanges). Everything is killed after 60 s.
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (no ibv_xsrq_pingpong; --hosts
# without root).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/../net/hosts.sh
hosts=
[ "${1:-}" = --hosts ] && { hosts=1; shift; }
srdma=${1:?usage: xsrq_multi.sh [--hosts] SRDMA_EXE PORT [N]}
port=${2:?usage: xsrq_multi.sh [--hosts] SRDMA_EXE PORT [N]}
n=${3:-3}
command -v ibv_xsrq_pingpong >/dev/null ||
	{ echo "xsrq_multi: ibv_xsrq_pingpong not installed: skipped"; exit 77; }

if [ -n "$hosts" ] && [ "${XSRQ_INNER:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || { echo "xsrq_multi: needs root: skipped"; exit 77; }
	XSRQ_INNER=1 exec bash "$H" with 2 --tag xm$$ -- \
		bash "$0" --hosts "$srdma" "$port" "$n"
fi

out=$(mktemp -d /tmp/xsrq_multi.XXXXXX) || exit 1
pids=()
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	local p

	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$out"
}
trap cleanup EXIT

if [ -n "$hosts" ]; then
	srv_addr=$("$H" addr 1)
	cli_addr=$("$H" addr 2)
	g1=$("$H" run 1 -- "$here/../net/gid_index.sh" "$srdma" "$srv_addr") ||
		exit 1
	g2=$("$H" run 2 -- "$here/../net/gid_index.sh" "$srdma" "$cli_addr") ||
		exit 1
	srv=("$H" run 1 -- "$srdma" run -- ibv_xsrq_pingpong -g "$g1")
	cli=("$H" run 2 -- "$srdma" run -- ibv_xsrq_pingpong -g "$g2")
	listen=("$H" run 1 --)
else
	srv_addr=127.0.0.1
	srv=("$srdma" run -- ibv_xsrq_pingpong)
	cli=("$srdma" run -- ibv_xsrq_pingpong)
	listen=()
fi

timeout 60 "${srv[@]}" -p "$port" -c "$n" -n 50 >"$out/srv" 2>&1 &
pids+=($!)
for _ in $(seq 200); do
	[ -n "$("${listen[@]}" ss -Hltn "sport = :$port" 2>/dev/null)" ] &&
		break
	sleep 0.05
done
for i in $(seq "$n"); do
	timeout 60 "${cli[@]}" -p "$port" -n 50 "$srv_addr" \
		>"$out/cli$i" 2>&1 &
	pids+=($!)
done
fail=0
for i in "${!pids[@]}"; do
	wait "${pids[$i]}" || fail=1
done
pids=()
for f in "$out"/srv "$out"/cli*; do
	grep -qx success "$f" || fail=1
done
if ((fail)); then
	for f in "$out"/srv "$out"/cli*; do
		echo "----- ${f##*/}"
		tail -n 15 "$f"
	done
	echo "xsrq_multi: FAIL"
	exit 1
fi
echo "xsrq_multi: server and $n clients: success"
exit 0
