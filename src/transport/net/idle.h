/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * idle.h - when a polling application thread steps aside for whoever
 * shares its CPU (net-endpoint.md, "Sharing a CPU: the idle yield").
 *
 * The inline path (srdma_net_progress) runs in the application's own
 * busy-polling thread. When two such pollers that wait for each other
 * (the two sides of a ping-pong, two MPI ranks) run on one CPU, the one
 * that runs spins for what only the other can produce, and the CPU
 * changes hands only when something else forces it: the scheduler's tick
 * (4 ms here), or the peer's progress thread waking at the end of its
 * poll-mode window (200 us) and preempting the spinner. A poller that
 * knows it shares its CPU steps aside (sched_yield) once its polls have
 * found nothing for a while.
 *
 * This file holds the decision only, as a pure function of one thread's
 * state and the times it is given, so that a unit test can replay the
 * sequences seen on a loaded machine (tests/unit/test_net_idle.c); the
 * endpoint keeps the state per thread and makes the system calls.
 */
#ifndef SRDMA_TRANSPORT_NET_IDLE_H
#define SRDMA_TRANSPORT_NET_IDLE_H

#include <stdbool.h>
#include <stdint.h>

/* A gap between two polls longer than this: the thread was off its CPU
 * (or busy elsewhere for long); sharing without asking the kernel. */
#define SRDMA_IDLE_GAP_NS 500000u
/* A shorter gap longer than this: ask the kernel whether the thread was
 * preempted (an involuntary context switch) since it last asked. */
#define SRDMA_IDLE_PREEMPT_GAP_NS 20000u
/* The shortest empty polling before a step aside (idle.c). */
#define SRDMA_IDLE_MIN_WAIT_NS 3000u
/* A step aside counts as answered only after a turn this long (somebody
 * else ran: a yield with nothing else to run returns in ~0.5 us). */
#define SRDMA_IDLE_MIN_TURN_NS 2000u
/* A phase of answered step asides naps this often, for at most this long
 * (the endpoint's ppoll timeout). */
#define SRDMA_IDLE_NAP_EVERY_NS 20000000u
#define SRDMA_IDLE_NAP_NS 1000000u
/* Sharing is assumed for this long after the last sign of it. */
#define SRDMA_IDLE_HOLD_NS 100000000u

/*
 * struct srdma_idle - one polling thread's view (thread-local in the
 * endpoint; no lock: only its thread touches it).
 * @last:    when its previous poll ended (0: none yet)
 * @from:    since when its polls have found nothing (0: the last one
 *           received)
 * @shared:  it counts as sharing its CPU until then
 * @yielded: its last step aside
 * @nivcsw:  involuntary context switches as last read (-1: not read yet)
 * @wait:    empty polling before a step aside, now (0: yield_ns)
 * @coloc:   since when its step asides are answered at once (0: not)
 */
struct srdma_idle {
	uint64_t last, from, shared, yielded;
	long nivcsw;
	uint64_t wait, coloc;
};

#define SRDMA_IDLE_INIT { 0, 0, 0, 0, -1, 0, 0 }

/* What the polling thread should do after a poll. */
enum srdma_idle_act {
	SRDMA_IDLE_SPIN,	/* poll on */
	SRDMA_IDLE_YIELD,	/* sched_yield */
	SRDMA_IDLE_NAP,		/* block on the socket, SRDMA_IDLE_NAP_NS at most */
};

/**
 * srdma_idle_step() - account one inline poll; should the thread step aside?
 * @s:        the calling thread's state
 * @start:    when this poll began (ns, the net clock)
 * @now:      when it ended
 * @n:        packets it handled (0: it found nothing)
 * @yield_ns: how long polls must find nothing before a step aside, and
 *            the least time between two (0: never)
 * @nivcsw:   reads the calling thread's involuntary context switches
 *            (getrusage(RUSAGE_THREAD) in the endpoint, a stub in tests);
 *            called only after a gap of SRDMA_IDLE_PREEMPT_GAP_NS or more
 *            between two polls, and returns -1 when it cannot tell
 * @one_cpu:  may the calling thread run on one CPU only? (its affinity
 *            mask in the endpoint; NULL: no); called before each nap
 *
 * Sharing is a gap of SRDMA_IDLE_GAP_NS between two polls, or a shorter
 * one of at least SRDMA_IDLE_PREEMPT_GAP_NS across which the thread was
 * preempted: two pollers on one CPU that the peer's progress thread
 * hands over every ~250 us (its window plus a wake-up) never show the
 * long gap, but are preempted at every hand-over.
 *
 * How long "for nothing" is adapts (idle.c): shorter while each step
 * aside brings the peer's answer at once, yield_ns otherwise; and such a
 * phase naps now and then so that the scheduler can part the pair.
 *
 * Return: SRDMA_IDLE_YIELD or SRDMA_IDLE_NAP when the caller should step
 * aside now (its next call's @start is when it came back), else
 * SRDMA_IDLE_SPIN.
 */
enum srdma_idle_act srdma_idle_step(struct srdma_idle *s, uint64_t start,
				    uint64_t now, int n, uint64_t yield_ns,
				    long (*nivcsw)(void),
				    bool (*one_cpu)(void));

#endif
