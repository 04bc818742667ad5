// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * idle.c - the idle yield's decision (idle.h): is the polling thread
 * sharing its CPU, and has it polled for nothing long enough to step
 * aside? A pure function of the thread's state and the times given; the
 * endpoint (srdma_net_progress) calls it after every inline poll and
 * makes the sched_yield itself.
 *
 * Two signs of sharing. A gap of more than 0.5 ms between two polls: the
 * thread was off its CPU (the scheduler's tick gave the CPU to another
 * task). And, found on a loaded machine with two pollers of a ping-pong
 * on one CPU: a shorter gap across which the kernel counts an involuntary
 * context switch. There the CPU changed hands every ~250 us, each time
 * the sleeping side's progress thread woke at the end of its poll-mode
 * window and preempted the spinner; no gap ever reached 0.5 ms, so the
 * pair never yielded and every one-way trip took the window plus a
 * wake-up (perftest's 8-byte latency at ~245 us instead of ~6).
 */
#include "transport/net/idle.h"

bool srdma_idle_step(struct srdma_idle *s, uint64_t start, uint64_t now,
		     int n, uint64_t yield_ns, long (*nivcsw)(void))
{
	uint64_t last = s->last;

	s->last = now;
	if (!yield_ns)
		return false;
	if (last && start > last) {
		uint64_t gap = start - last;

		if (gap > SRDMA_IDLE_GAP_NS) {
			s->shared = now + SRDMA_IDLE_HOLD_NS;
		} else if (gap >= SRDMA_IDLE_PREEMPT_GAP_NS && nivcsw) {
			long v = nivcsw();

			/* The first reading only sets the mark: switches
			 * from before we looked say nothing about now. */
			if (v >= 0 && s->nivcsw >= 0 && v != s->nivcsw)
				s->shared = now + SRDMA_IDLE_HOLD_NS;
			s->nivcsw = v;
		}
	}
	if (n) {
		s->from = 0;
		return false;
	}
	if (!s->from) {
		s->from = now;
		return false;
	}
	if (now > s->shared || now - s->from < yield_ns ||
	    now - s->yielded < yield_ns)
		return false;
	s->yielded = now;
	return true;
}
