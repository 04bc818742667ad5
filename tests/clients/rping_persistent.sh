#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rping_persistent.sh - one `rping -s -P` (persistent server) under
# `ulimit -n 64` serves COUNT `rping -c` clients one after another; its fd
# count, mapping count and RSS must stay flat (issue 9, defect 3: every
# client used to leave one fd, one mapping and 1 GiB of address space
# behind, so the server failed after ~53 clients).
#
# Usage: rping_persistent.sh SRDMA_EXE PORT [COUNT]   (COUNT default 400)
# Prints the server's figures after 50 clients and at the end. Exit 0 if
# every client succeeded and the end is within 6 fds, 8 mappings and
# 24 MiB of RSS of the 50-client mark; 1 otherwise; 77 if rping is not
# installed. Why those bounds: a peer or two whose owner has not exited
# yet stay mapped on softrdma's idle list, with their pidfd and wake-up
# FIFOs (a leak would add 350 of each). The server's own segment gains
# resident pages until each has been used once: QP slots are handed out
# round robin (256 B per QP, 4 MiB in all) and keys take random slots of
# the 16 MiB key table (each MR may land on a page not touched yet), so
# RssShmem grows by ~10 KiB per rping client at first, 20 MiB at most.
set -u

srdma=${1:?usage: rping_persistent.sh SRDMA_EXE PORT [COUNT]}
port=${2:?usage: rping_persistent.sh SRDMA_EXE PORT [COUNT]}
count=${3:-400}
host=127.0.0.1

command -v rping >/dev/null || {
	echo "rping_persistent: rping not installed: skipped"
	exit 77
}

work=$(mktemp -d /tmp/rping_persistent.XXXXXX) || exit 1
srv_pid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	[ -n "$srv_pid" ] && kill -KILL "$srv_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

(ulimit -n 64 && exec "$srdma" run -- rping -s -P -a "$host" -p "$port") \
	>"$work/server" 2>&1 &
srv_pid=$!
for ((i = 0; i < 100; i++)); do
	[ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ] && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done

# fds mappings rss_kb vsz_kb of the server
figures()
{
	echo "$(find /proc/"$srv_pid"/fd -mindepth 1 2>/dev/null | wc -l)" \
		"$(wc -l <"/proc/$srv_pid/maps")" \
		"$(awk '/^VmRSS/ { print $2 }' "/proc/$srv_pid/status")" \
		"$(awk '/^VmSize/ { print $2 }' "/proc/$srv_pid/status")"
}

failed=0
t0=$(date +%s%N)
for ((i = 1; i <= count; i++)); do
	# rping's status says little: a client served prints two pings.
	timeout 20 "$srdma" run -- rping -c -v -a "$host" -p "$port" -C 2 \
		>"$work/client" 2>&1
	if [ "$(grep -c '^ping data: rdma-ping-' "$work/client")" != 2 ]; then
		failed=$((failed + 1))
		if [ "$failed" -le 3 ]; then
			echo "rping_persistent: client $i failed:"
			tail -n 3 "$work/client"
		fi
		[ "$failed" -ge 10 ] && break
	fi
	if ! kill -0 "$srv_pid" 2>/dev/null; then
		echo "rping_persistent: the server died after $i clients:"
		tail -n 5 "$work/server"
		exit 1
	fi
	if [ "$i" -eq 50 ]; then
		read -r f50 m50 r50 v50 <<<"$(figures)"
		echo "rping persistent: after 50 clients: $f50 fds," \
			"$m50 mappings, VmRSS $r50 KiB, VmSize $v50 KiB"
	fi
done
ms=$((($(date +%s%N) - t0) / 1000000))
read -r f m r v <<<"$(figures)"
echo "rping persistent: after $((i - 1)) clients: $f fds, $m mappings," \
	"VmRSS $r KiB, VmSize $v KiB ($ms ms, $failed failed," \
	"server under ulimit -n 64)"
[ "$failed" -eq 0 ] || exit 1
[ -n "${f50:-}" ] || exit 1
ok=1
[ $((f - f50)) -le 6 ] || { echo "FAIL: fds grew by $((f - f50))"; ok=; }
[ $((m - m50)) -le 8 ] || { echo "FAIL: mappings grew by $((m - m50))"; ok=; }
[ $((r - r50)) -le 24576 ] || { echo "FAIL: RSS grew by $((r - r50)) KiB"; ok=; }
[ -n "$ok" ]
