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
 *
 * How long to poll for nothing before stepping aside adapts: yield_ns
 * (50 us) at first; halved (down to SRDMA_IDLE_MIN_WAIT_NS) each time the
 * first poll after a step aside finds the peer's datagram after a short
 * turn (the peer shares our CPU and answered in it), back to yield_ns
 * when a step aside brings nothing or a long turn (the CPU went to an
 * unrelated task). Two pollers on one CPU then hand it over after a few
 * us instead of 50 us of spinning for nothing each way.
 *
 * But a pair that hands the CPU over every few us stays on it: each of
 * the two ran within the kernel's migration cost (0.5 ms), and neither
 * ever sleeps, so neither the load balancer nor a wake-up moves one of
 * them to the other CPU, idle or not. So every SRDMA_IDLE_NAP_EVERY_NS
 * of such a phase one step aside is a nap instead (the endpoint blocks
 * on the socket for at most SRDMA_IDLE_NAP_NS): the peer's datagram then
 * wakes us, and a woken task is placed on an idle CPU when there is one.
 * Not when the thread may run on one CPU only (taskset -c 0): nothing
 * can part the pair there.
 */
#include "transport/net/idle.h"

enum srdma_idle_act srdma_idle_step(struct srdma_idle *s, uint64_t start,
				    uint64_t now, int n, uint64_t yield_ns,
				    long (*nivcsw)(void),
				    bool (*one_cpu)(void))
{
	uint64_t last = s->last, wait, turn;
	bool after = last && s->yielded == last;

	s->last = now;
	if (!yield_ns)
		return SRDMA_IDLE_SPIN;
	if (!s->wait || s->wait > yield_ns)
		s->wait = yield_ns;
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
	/* The first poll after a step aside: did it pay? The peer's
	 * datagram there after a turn in which somebody else ran (not a
	 * yield that returned at once), and a short one, is the peer's
	 * answer: it shares our CPU; step aside sooner next time. A long
	 * turn (an unrelated task's slice) ends the phase; nothing after a
	 * short one puts the wait back to yield_ns. */
	if (after) {
		turn = start - last;
		if (turn > 2 * yield_ns) {
			s->wait = yield_ns;
			s->coloc = 0;
		} else if (n && turn >= SRDMA_IDLE_MIN_TURN_NS) {
			s->wait = s->wait / 2 > SRDMA_IDLE_MIN_WAIT_NS ?
				  s->wait / 2 : SRDMA_IDLE_MIN_WAIT_NS;
			if (!s->coloc)
				s->coloc = now;
		} else {
			s->wait = yield_ns;
		}
	}
	if (n) {
		s->from = 0;
		return SRDMA_IDLE_SPIN;
	}
	if (!s->from) {
		s->from = now;
		return SRDMA_IDLE_SPIN;
	}
	wait = s->wait;
	if (now > s->shared || now - s->from < wait ||
	    now - s->yielded < wait)
		return SRDMA_IDLE_SPIN;
	s->yielded = now;
	s->last = now;
	if (s->coloc && now - s->coloc >= SRDMA_IDLE_NAP_EVERY_NS) {
		/* (asked every time: an affinity may change) */
		s->coloc = now;
		if (!one_cpu || !one_cpu())
			return SRDMA_IDLE_NAP;
	}
	return SRDMA_IDLE_YIELD;
}
