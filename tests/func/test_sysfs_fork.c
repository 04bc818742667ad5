// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_sysfs_fork.c - fork() while another thread refreshes the
 * synthesised sysfs tree (src/verbs/ibv_sysfs.c).
 *
 * One parent thread opens and closes the device in a loop (each open and
 * close refreshes the tree under the in-process refresh lock and the
 * tree's flock) while the main thread forks children that list and open
 * the device afresh. A child that inherited the lock held by the other
 * thread used to wait in ibv_get_device_list() forever (about a third of
 * the children did); each must now finish within its alarm.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "func_util.h"

#define CHILDREN 30

static atomic_bool stop;

static void *open_close_loop(void *arg)
{
	struct ibv_device *dev = arg;

	while (!atomic_load(&stop)) {
		struct ibv_context *c = ibv_open_device(dev);

		if (c)
			ibv_close_device(c);
	}
	return NULL;
}

static void child(void)
{
	struct ibv_device **l;
	struct ibv_context *c;
	int n;

	alarm(10);	/* a hang ends the child with SIGALRM */
	l = ibv_get_device_list(&n);
	if (!l || n < 1)
		_exit(2);
	c = ibv_open_device(l[0]);
	if (!c)
		_exit(3);
	ibv_close_device(c);
	ibv_free_device_list(l);
	_exit(0);
}

static void test_sysfs_fork_during_refresh(void **state)
{
	struct ibv_device **l;
	pthread_t t;
	int n, i, st, bad = 0;

	(void)state;
	l = ibv_get_device_list(&n);
	assert_non_null(l);
	assert_true(n >= 1);
	assert_int_equal(pthread_create(&t, NULL, open_close_loop, l[0]), 0);
	for (i = 0; i < CHILDREN; i++) {
		pid_t p = fork();

		assert_true(p >= 0);
		if (!p)
			child();
		assert_int_equal(waitpid(p, &st, 0), p);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			print_message("child %d: %s %d\n", i,
				      WIFEXITED(st) ? "exit" : "signal",
				      WIFEXITED(st) ? WEXITSTATUS(st)
						    : WTERMSIG(st));
			bad++;
		}
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	ibv_free_device_list(l);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysfs_fork_during_refresh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
