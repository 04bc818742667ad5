/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fastclock.h - CLOCK_MONOTONIC in nanoseconds for the net transport's
 * data path, read from the TSC where the kernel itself trusts it.
 *
 * A one-way trip between two hosts reads the clock six to eight times
 * (post, held ACK, requester input, poll-mode stamps, the per-path source
 * probe), and every empty inline poll once more. clock_gettime through the
 * vDSO costs ~60 cycles on the build VM, rdtsc ~25. So where the kernel's
 * clocksource is the TSC (it then checked that the TSC is invariant and
 * synchronised across CPUs), a process measures the TSC's rate against
 * CLOCK_MONOTONIC over its first 50 ms of use and then reads the TSC,
 * scaled from a CLOCK_MONOTONIC reading taken at the switch: the values go
 * on from where clock_gettime left them. Elsewhere (another clocksource,
 * another architecture, SRDMA_FASTCLOCK=0) it is clock_gettime.
 *
 * The scaled TSC drifts from CLOCK_MONOTONIC by the calibration's error
 * (about a part per million: a millisecond an hour) and ignores NTP's
 * slewing, so its values are for this process's own deadlines and
 * intervals (retransmission, poll windows, held ACKs), never compared with
 * another process's clock or with clock_gettime.
 */
#ifndef SRDMA_UTIL_FASTCLOCK_H
#define SRDMA_UTIL_FASTCLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>

/* Set once by the calibration (fastclock.c), then read-only; published
 * by the release store of state = SRDMA_FC_TSC. */
struct srdma_fastclock {
	_Atomic int state;	/* SRDMA_FC_* */
	uint64_t tsc0;		/* the TSC at the switch */
	uint64_t ns0;		/* CLOCK_MONOTONIC at the switch */
	uint64_t mult;		/* ns per TSC tick, 32.32 fixed point */
};
extern struct srdma_fastclock srdma_fc __attribute__((visibility("hidden")));
/* This thread's last reading: no value below it is returned. A thread
 * that read CLOCK_MONOTONIC just before the switch could otherwise read
 * the TSC-based value a little below it (the pair's midpoint, the rate's
 * error), and one that moves to another vCPU meets that TSC's small
 * offset (unit.test_fastclock saw a step back 2 times in 40). */
extern __thread uint64_t srdma_fc_last
	__attribute__((tls_model("initial-exec"), visibility("hidden")));
#define SRDMA_FC_TSC 2
#endif

/**
 * srdma_fastclock_slow() - the fast clock's answer before (or instead of)
 * the TSC: clock_gettime(CLOCK_MONOTONIC), and the calibration's steps.
 * Thread-safe. Return: ns.
 */
uint64_t srdma_fastclock_slow(void);

/**
 * srdma_fastclock_ns() - this process's monotonic clock in ns (see the
 * file comment: CLOCK_MONOTONIC's values, from the TSC once calibrated).
 * Thread-safe, lock-free; never goes backwards within a thread.
 * Return: ns.
 */
static inline uint64_t srdma_fastclock_ns(void)
{
	uint64_t v;

#if defined(__x86_64__)
	if (atomic_load_explicit(&srdma_fc.state, memory_order_acquire) ==
	    SRDMA_FC_TSC) {
		uint64_t d = __rdtsc() - srdma_fc.tsc0;

		v = srdma_fc.ns0 +
		    (uint64_t)(((unsigned __int128)d * srdma_fc.mult) >> 32);
	} else
#endif
		v = srdma_fastclock_slow();
	if (v < srdma_fc_last)
		return srdma_fc_last;
	srdma_fc_last = v;
	return v;
}

#endif
