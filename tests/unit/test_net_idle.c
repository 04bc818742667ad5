// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_idle.c - the idle yield's decision (transport/net/idle.h),
 * replayed on the poll sequences seen between two test hosts on the
 * loaded 2-vCPU machine, with a stub for the kernel's count of
 * involuntary context switches.
 *
 * The case that motivated it: the two pollers of an 8-byte ping-pong on
 * one CPU. The one that runs spins on its empty CQ; the other gets the
 * CPU only when its progress thread wakes at the end of its poll-mode
 * window (200 us) and preempts the spinner. Each poller therefore sees a
 * gap of ~250 us between two of its polls once per trip, and a preemption
 * across it. The rule before only knew gaps of more than 0.5 ms, so it
 * never yielded there, and every one-way trip took ~245 us; it is the
 * same function called without the switch counter (NULL), which the test
 * checks too. Also: an unloaded ping-pong never yields and never asks
 * the kernel; work between polls without a preemption is no sign; one
 * step aside per yield_ns at most; step asides that the peer answers at
 * once come after a few us of empty polls, one that gives the CPU to an
 * unrelated task puts the wait back to yield_ns, and one that returns at
 * once is no answer; such a phase naps instead of yielding once every 20
 * ms, unless the thread may run on one CPU only;
 * SRDMA_NET_YIELD_US=0 never.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "transport/net/idle.h"

#define US 1000u
#define YIELD_NS (50 * US)

static long switches;		/* the stub's involuntary switches */
static unsigned int reads;	/* how often the stub was asked */

static long stub_nivcsw(void)
{
	reads++;
	return switches;
}

/*
 * One poller of a ping-pong, @trips one-way trips from its side: after
 * each trip's datagram (a poll that handles 1) it polls empty for @wait
 * ns (polls of 0.5 us each), then is off its CPU for @gap ns (preempted
 * when @preempted: the stub's count moves), then its next poll receives.
 * Return: the yields it was told to make.
 */
static unsigned int replay(struct srdma_idle *s, uint64_t *t, int trips,
			   uint64_t wait, uint64_t gap, bool preempted,
			   long (*rd)(void))
{
	unsigned int yields = 0;
	uint64_t end;
	int i;

	for (i = 0; i < trips; i++) {
		/* the poll that receives the peer's datagram */
		yields += srdma_idle_step(s, *t, *t + 2 * US, 1, YIELD_NS,
					  rd, NULL);
		*t += 2 * US;
		/* posting our reply between two polls: 3 us */
		*t += 3 * US;
		for (end = *t + wait; *t < end; *t += 500)
			yields += srdma_idle_step(s, *t, *t + 400, 0,
						  YIELD_NS,
					  rd, NULL);
		*t += gap;
		if (preempted)
			switches++;
	}
	return yields;
}

/* Two pollers on one CPU, handed over by the peer's progress thread:
 * ~150 us of empty polls, then ~100 us off the CPU, preempted. */
static void test_colocated_pair_yields(void **state)
{
	struct srdma_idle s = SRDMA_IDLE_INIT, old = SRDMA_IDLE_INIT;
	uint64_t t = 1000000000u, t2 = t;
	unsigned int y;

	(void)state;
	/* The rule before (no switch counter): never a yield. */
	y = replay(&old, &t2, 200, 150 * US, 100 * US, true, NULL);
	assert_int_equal(y, 0);
	/* Now: sharing is seen at the second hand-over (the first reading
	 * only sets the mark), and from then on every trip yields once its
	 * polls have found nothing for 50 us. */
	reads = 0;
	y = replay(&s, &t, 200, 150 * US, 100 * US, true, stub_nivcsw);
	assert_true(y >= 198);
	assert_true(y <= 200 * 3);
	/* asked once per hand-over (199 between 200 trips) */
	assert_int_equal(reads, 199);
}

/* An unloaded ping-pong: waits of a few us, no gap, no preemption: no
 * yield, and the kernel is never asked (no system call per poll). */
static void test_unloaded_never_yields(void **state)
{
	struct srdma_idle s = SRDMA_IDLE_INIT;
	uint64_t t = 1000000000u;

	(void)state;
	reads = 0;
	assert_int_equal(replay(&s, &t, 10000, 4 * US, 0, false,
				stub_nivcsw), 0);
	assert_int_equal(reads, 0);
	/* Long empty waits (a slow peer on another CPU) are no sign either. */
	assert_int_equal(replay(&s, &t, 100, 400 * US, 0, false,
				stub_nivcsw), 0);
}

/* Work between polls (an MPI rank computing for 100 us) without a
 * preemption: the kernel is asked, says no, no yield. */
static void test_work_is_no_sign(void **state)
{
	struct srdma_idle s = SRDMA_IDLE_INIT;
	uint64_t t = 1000000000u;

	(void)state;
	reads = 0;
	assert_int_equal(replay(&s, &t, 100, 200 * US, 100 * US, false,
				stub_nivcsw), 0);
	assert_int_equal(reads, 99);
}

/* A gap of more than 0.5 ms is sharing without asking, as before; a
 * thread that yields does so at most once per yield_ns; after the hold
 * (100 ms without a new sign) it stops. */
static void test_long_gap_and_limits(void **state)
{
	struct srdma_idle s = SRDMA_IDLE_INIT;
	uint64_t t = 1000000000u, end;
	unsigned int y = 0;

	(void)state;
	reads = 0;
	assert_false(srdma_idle_step(&s, t, t + 400, 0, YIELD_NS,
				     stub_nivcsw, NULL));
	t += 600 * US;		/* off the CPU for 0.6 ms */
	for (end = t + 1000 * US; t < end; t += 500)
		y += srdma_idle_step(&s, t, t + 400, 0, YIELD_NS,
				     stub_nivcsw, NULL);
	assert_int_equal(reads, 0);
	/* 1 ms of empty polls: the first after 50 us, then one per 50 us */
	assert_true(y >= 19 && y <= 20);
	/* polling on without a new sign: none once the hold has passed */
	for (end = t + SRDMA_IDLE_HOLD_NS; t < end; t += 500)
		srdma_idle_step(&s, t, t + 400, 0, YIELD_NS, stub_nivcsw, NULL);
	y = 0;
	for (end = t + 1000 * US; t < end; t += 500)
		y += srdma_idle_step(&s, t, t + 400, 0, YIELD_NS,
				     stub_nivcsw, NULL);
	assert_int_equal(y, 0);
}

/*
 * Two pollers on one CPU once the yield works: each step aside gives the
 * peer its turn (@turn ns), and the first poll after it finds the peer's
 * answer. Return: the empty polling time before the last trip's yield.
 */
static bool (*answered_one_cpu)(void);
static uint64_t answered_max;
static unsigned int answered_naps;

static uint64_t answered(struct srdma_idle *s, uint64_t *t, int trips,
			 uint64_t turn)
{
	uint64_t empty = 0, from;
	int i;

	for (i = 0; i < trips; i++) {
		/* after our send: empty polls until told to step aside */
		for (from = *t;; *t += 500) {
			enum srdma_idle_act a;

			a = srdma_idle_step(s, *t, *t + 400, 0, YIELD_NS,
					    stub_nivcsw, answered_one_cpu);
			answered_naps += a == SRDMA_IDLE_NAP;
			if (a != SRDMA_IDLE_SPIN)
				break;
		}
		empty = *t + 400 - from;
		if (empty > answered_max)
			answered_max = empty;
		*t += 400 + turn;	/* the peer's turn */
		srdma_idle_step(s, *t, *t + 2 * US, 1, YIELD_NS,
				stub_nivcsw, answered_one_cpu);
		*t += 2 * US + 3 * US;	/* handle it, post our reply */
	}
	return empty;
}

/* Answered step asides shorten the wait to a few us; a step aside that
 * gives the CPU to an unrelated task for a slice (4 ms) puts it back to
 * yield_ns. */
static void test_answered_yields_come_sooner(void **state)
{
	struct srdma_idle s = SRDMA_IDLE_INIT;
	uint64_t t = 1000000000u, e;

	(void)state;
	srdma_idle_step(&s, t, t + 400, 1, YIELD_NS, stub_nivcsw, NULL);
	t += 600 * US;		/* a long gap: sharing */
	e = answered(&s, &t, 1, 8 * US);
	assert_true(e >= YIELD_NS && e < YIELD_NS + 1000);
	e = answered(&s, &t, 20, 8 * US);
	assert_true(e <= SRDMA_IDLE_MIN_WAIT_NS + 1000);
	/* an unrelated task's slice: back to yield_ns */
	answered(&s, &t, 1, 4000 * US);
	e = answered(&s, &t, 1, 8 * US);
	assert_true(e >= YIELD_NS && e < YIELD_NS + 1000);
}


static bool yes(void)
{
	return true;
}

/* A phase of answered step asides naps once every 20 ms instead of
 * yielding, so that a wake-up may place the pair on two CPUs; never on a
 * thread that may run on one CPU only (nothing could part them). */
static void test_nap_lets_the_pair_part(void **state)
{
	struct srdma_idle s = SRDMA_IDLE_INIT;
	uint64_t t = 1000000000u, t0;

	(void)state;
	answered_one_cpu = NULL;
	srdma_idle_step(&s, t, t + 400, 1, YIELD_NS, stub_nivcsw, NULL);
	t += 600 * US;
	answered(&s, &t, 20, 8 * US);		/* into the phase */
	answered_max = answered_naps = 0;
	t0 = t;
	answered(&s, &t, 3000, 8 * US);
	/* 3000 trips of ~17 us: one nap per 20 ms, and the waits stay short */
	assert_int_equal(answered_naps, (t - t0) / SRDMA_IDLE_NAP_EVERY_NS);
	assert_true(answered_naps >= 2);
	assert_true(answered_max <= SRDMA_IDLE_MIN_WAIT_NS + 1000);

	s = (struct srdma_idle)SRDMA_IDLE_INIT;
	answered_one_cpu = yes;
	srdma_idle_step(&s, t, t + 400, 1, YIELD_NS, stub_nivcsw, NULL);
	t += 600 * US;
	answered(&s, &t, 20, 8 * US);
	answered_naps = 0;
	answered(&s, &t, 3000, 8 * US);
	assert_int_equal(answered_naps, 0);
	answered_one_cpu = NULL;
}

/* A yield that returns at once (nothing else to run) is no answer,
 * even when the peer's datagram (from another CPU) is there. */
static void test_instant_yield_is_no_answer(void **state)
{
	struct srdma_idle s = SRDMA_IDLE_INIT;
	uint64_t t = 1000000000u, e;

	(void)state;
	srdma_idle_step(&s, t, t + 400, 1, YIELD_NS, stub_nivcsw, NULL);
	t += 600 * US;
	e = answered(&s, &t, 20, 500);
	assert_true(e >= YIELD_NS && e < YIELD_NS + 1000);
}

/* SRDMA_NET_YIELD_US=0: never, whatever the signs. */
static void test_off(void **state)
{
	struct srdma_idle s = SRDMA_IDLE_INIT;
	uint64_t t = 1000000000u, end;
	unsigned int y = 0;

	(void)state;
	srdma_idle_step(&s, t, t + 400, 0, 0, stub_nivcsw, NULL);
	t += 600 * US;
	for (end = t + 1000 * US; t < end; t += 500)
		y += srdma_idle_step(&s, t, t + 400, 0, 0, stub_nivcsw, NULL);
	assert_int_equal(y, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_colocated_pair_yields),
		cmocka_unit_test(test_unloaded_never_yields),
		cmocka_unit_test(test_work_is_no_sign),
		cmocka_unit_test(test_long_gap_and_limits),
		cmocka_unit_test(test_answered_yields_come_sooner),
		cmocka_unit_test(test_nap_lets_the_pair_part),
		cmocka_unit_test(test_instant_yield_is_no_answer),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
