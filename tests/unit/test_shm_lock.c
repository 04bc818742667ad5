// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_shm_lock.c - srdma_shm_lock() recovers a shared lock whose holder
 * died while we waited for it.
 *
 * A holder process locks a robust, process-shared mutex in shared memory
 * and waits; we start waiting (srdma_shm_lock: trylock says EBUSY, then a
 * timed wait); the holder is killed; the kernel marks the lock OWNER_DIED
 * and wakes us with EOWNERDEAD. We must then hold the lock, report that
 * the previous holder died, and unlock it cleanly. Under ThreadSanitizer
 * the unlock must not be reported as "unlock of an unlocked mutex" (its
 * timedlock interceptor does not count EOWNERDEAD as acquired).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "transport/host/host.h"

static void test_shm_lock_owner_died_while_waiting(void **state)
{
	pthread_mutex_t *m;
	int go[2], done[2], st;
	pid_t pid;
	char b;

	(void)state;
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(srdma_shm_mutex_init(m), 0);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (pthread_mutex_lock(m))
			_exit(2);
		if (write(go[1], "l", 1) != 1)
			_exit(3);
		/* Hold the lock until killed. */
		if (read(done[0], &b, 1) < 0)
			_exit(4);
		_exit(0);
	}
	assert_int_equal(read(go[0], &b, 1), 1);
	/* Kill the holder once we are (very likely) waiting in the kernel;
	 * if we are not yet, trylock gets EOWNERDEAD: the same answer. */
	if (!fork()) {
		usleep(200 * 1000);
		kill(pid, SIGKILL);
		_exit(0);
	}
	assert_true(srdma_shm_lock(m)); /* true: the holder died */
	srdma_shm_unlock(m);
	/* The lock works normally afterwards. */
	assert_false(srdma_shm_lock(m));
	srdma_shm_unlock(m);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	while (wait(NULL) > 0)
		;
	printf("shm lock: holder killed while we waited: recovered "
	       "(EOWNERDEAD), unlocked, and locks normally again\n");
	munmap(m, sizeof(*m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_lock_owner_died_while_waiting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
