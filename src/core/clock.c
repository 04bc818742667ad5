// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * clock.c - the device clocks behind completion timestamps
 * (docs/design/dm.md, "Completion timestamps").
 *
 * A NIC has a free-running counter at hca_core_clock kHz, stamped into
 * CQEs (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) and read by
 * ibv_query_rt_values_ex, and may also stamp the wall clock
 * (_WALLCLOCK, nanoseconds). softrdma's counter is CLOCK_MONOTONIC in
 * nanoseconds, i.e. a 1 GHz clock that every process of the host shares
 * (srdma_now_ns, memcheck.c); the wall clock is CLOCK_REALTIME.
 */
#include <time.h>

#include "core/core.h"

uint64_t srdma_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
