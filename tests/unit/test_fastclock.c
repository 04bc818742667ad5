// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_fastclock.c - util/fastclock.h: the net transport's clock. Across
 * its switch from clock_gettime to the TSC (the first 50 ms of use, where
 * the kernel's clocksource is the TSC) it never goes backwards, from
 * several threads at once; afterwards it stays within a millisecond of
 * CLOCK_MONOTONIC over a further 200 ms; and with SRDMA_FASTCLOCK=0 (a
 * fresh process) it is CLOCK_MONOTONIC itself. Also prints which mode the
 * machine got.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/fastclock.h"

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Read for @arg ns; fail (return non-NULL) on a step backwards. */
static void *reader(void *arg)
{
	uint64_t until = mono() + (uint64_t)(uintptr_t)arg, prev = 0, v;

	while (mono() < until) {
		v = srdma_fastclock_ns();
		if (v < prev)
			return (void *)1;
		prev = v;
	}
	return NULL;
}

static void test_monotonic_across_switch(void **state)
{
	pthread_t t[3];
	void *bad;
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader,
						(void *)(uintptr_t)150000000u),
				 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_null(bad);
	}
#if defined(__x86_64__)
	printf("fast clock: %s\n",
	       atomic_load(&srdma_fc.state) == SRDMA_FC_TSC ?
		       "the TSC" : "clock_gettime");
#endif
}

static void test_tracks_monotonic(void **state)
{
	uint64_t worst = 0, g, until;

	(void)state;
	(void)srdma_fastclock_ns();
	usleep(60000);		/* past the calibration */
	(void)srdma_fastclock_ns();
	until = mono() + 200000000u;
	while (mono() < until) {
		uint64_t a = mono(), f = srdma_fastclock_ns(), b = mono();

		/* f lies in [a, b] up to the calibration's error. */
		g = f < a ? a - f : f > b ? f - b : 0;
		if (g > worst)
			worst = g;
		usleep(1000);
	}
	printf("fast clock: at most %llu ns from CLOCK_MONOTONIC\n",
	       (unsigned long long)worst);
	assert_true(worst < 1000000u);
}

static void test_off_is_clock_gettime(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* A fresh clock (the child of a process that never read
		 * it would be; ours did, so reset what the parent set). */
#if defined(__x86_64__)
		atomic_store(&srdma_fc.state, 0);
#endif
		setenv("SRDMA_FASTCLOCK", "0", 1);
		for (int i = 0; i < 1000; i++) {
			uint64_t a = mono(), f = srdma_fastclock_ns(),
				 b = mono();

			if (f < a || f > b)
				_exit(1);
			if (i == 500)
				usleep(60000);
		}
#if defined(__x86_64__)
		if (atomic_load(&srdma_fc.state) == SRDMA_FC_TSC)
			_exit(2);
#endif
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_monotonic_across_switch),
		cmocka_unit_test(test_tracks_monotonic),
		cmocka_unit_test(test_off_is_clock_gettime),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
