#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_mpi_shared_cpu.sh - Open MPI's 1 MiB ping-pong between two test
# hosts (pml ucx, UCX_TLS=rc_v over softrdma's net transport) with both
# ranks and all their threads on ONE CPU, which is what a loaded machine
# does to a run now and then: the two ranks busy-poll, so before the idle
# yield (docs/design/net-endpoint.md, "Sharing a CPU") every hand-over
# from one rank to the other waited for the scheduler's tick (4 ms at
# HZ=250) and a 1 MiB round trip took 8-16 ms (~150 MB/s); with it a
# round trip takes ~1.2 ms (1.4-1.7 GB/s on the build machine).
#
# Usage: net_mpi_shared_cpu.sh SRDMA_EXE MPI_CHECK_EXE [MIN_MBPS]
#   MIN_MBPS: the least pingpong_1MiB_MBps that passes (default 200)
# Runs mpi_check --bench 2000 through net_stacks.sh (two hosts, MTU 9000,
# one rank each), each rank under `taskset -c 0` (this script is the
# program mpirun starts: with NET_MPI_SHARED_CPU_EXE set, it execs it
# pinned). Prints the BENCH row; exit 0 pass, 1 fail, 77 skip.
set -u

if [ -n "${NET_MPI_SHARED_CPU_EXE:-}" ]; then
	exec taskset -c 0 "$NET_MPI_SHARED_CPU_EXE" "$@"
fi

[ $# -ge 2 ] || { echo "usage: $0 SRDMA_EXE MPI_CHECK_EXE [MIN_MBPS]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
srdma=$1
min=${3:-200}
command -v taskset >/dev/null || { echo "SKIP: no taskset"; exit 77; }
[ -x "$2" ] || { echo "SKIP: $2 was not built (no mpicc)"; exit 77; }
NET_MPI_SHARED_CPU_EXE=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
export NET_MPI_SHARED_CPU_EXE

out=$(bash "$here/net_stacks.sh" --mtu 9000 --budget "${BUDGET:-100}" \
	mpi "$srdma" 2 "$here/net_mpi_shared_cpu.sh" \
	--mca pml ucx --mca btl ^openib -x UCX_TLS=rc_v \
	-x NET_MPI_SHARED_CPU_EXE -- --bench 2000 2>&1)
rc=$?
echo "$out" | tail -n 20
[ "$rc" = 77 ] && exit 77
[ "$rc" = 0 ] || { echo "FAIL: the MPI job failed (exit $rc)"; exit 1; }
mbps=$(echo "$out" | awk '$1 == "mpi_check:" && $2 == "BENCH" {
	for (i = 3; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "pingpong_1MiB_MBps")
			print kv[2]
	} }' | tail -n 1)
[ -n "$mbps" ] || { echo "FAIL: no BENCH row"; exit 1; }
if awk -v m="$mbps" -v t="$min" 'BEGIN { exit !(m >= t) }'; then
	echo "PASS: 1 MiB ping-pong on one CPU: $mbps MB/s (>= $min)"
	exit 0
fi
echo "FAIL: 1 MiB ping-pong on one CPU: $mbps MB/s (< $min)"
exit 1
