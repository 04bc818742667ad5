#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# hugepages.sh - run a client pair (run_pair.sh) with 2 MiB huge pages
# available, for perftest's --use_hugepages (its buffers come from
# shmget(SHM_HUGETLB), registered as ordinary MRs).
#
# As root, when the machine has no 2 MiB huge pages, 64 are reserved for
# the run and the count is put back after it (CTest serialises the users of
# the pool with RESOURCE_LOCK hugepages). Without root and without huge
# pages it skips.
#
# Usage: hugepages.sh RUN_PAIR_ARGS...
# Exit: run_pair.sh's, or 77 (skip).
set -u

here=$(cd "$(dirname "$0")" && pwd)
hp=/proc/sys/vm/nr_hugepages
hp_old=
if [ "$(cat "$hp" 2>/dev/null || echo 0)" -eq 0 ]; then
	if [ "$(id -u)" -ne 0 ] || [ ! -w "$hp" ]; then
		echo "hugepages: no 2 MiB huge pages and not root to reserve some: skipped"
		exit 77
	fi
	hp_old=0
	echo 64 >"$hp" 2>/dev/null || { echo "hugepages: cannot reserve huge pages: skipped"; exit 77; }
	if [ "$(cat "$hp")" -eq 0 ]; then
		echo 0 >"$hp"
		echo "hugepages: the kernel gave no huge page: skipped"
		exit 77
	fi
fi
trap '[ -n "$hp_old" ] && echo "$hp_old" >"$hp"' EXIT
echo "hugepages: $(cat "$hp") huge pages of 2 MiB, $(awk '/HugePages_Free/ { print $2 }' /proc/meminfo) free"
bash "$here/run_pair.sh" "$@"
