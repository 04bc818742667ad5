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
 */
struct srdma_idle {
	uint64_t last, from, shared, yielded;
	long nivcsw;
};

#define SRDMA_IDLE_INIT { 0, 0, 0, 0, -1 }

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
 *
 * Sharing is a gap of SRDMA_IDLE_GAP_NS between two polls, or a shorter
 * one of at least SRDMA_IDLE_PREEMPT_GAP_NS across which the thread was
 * preempted: two pollers on one CPU that the peer's progress thread
 * hands over every ~250 us (its window plus a wake-up) never show the
 * long gap, but are preempted at every hand-over.
 *
 * Return: true when the caller should yield now.
 */
bool srdma_idle_step(struct srdma_idle *s, uint64_t start, uint64_t now,
		     int n, uint64_t yield_ns, long (*nivcsw)(void));

#endif
