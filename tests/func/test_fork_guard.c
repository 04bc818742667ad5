// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_fork_guard.c - a fork child keeps no trace of its parent's SIGBUS
 * guards.
 *
 * The library swaps a shared mapping that shrinks under it for zero pages
 * instead of letting SIGBUS kill the process (shm_guard.c), but only for
 * its own mappings. The context's segment is MADV_DONTFORK, so a fork
 * child does not have it; its address is free in the child, and whatever
 * the child maps there is the child's own business. A truncated file the
 * child maps at that address must raise SIGBUS as it would without
 * softrdma, and nothing may be written into the parent's wake-up FIFO.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "func_util.h"

/* Start address of the mapping of our segment ("/ctx.<lid>.<pid>"). */
static uintptr_t segment_address(void)
{
	char line[4096], want[64];
	uintptr_t start = 0;
	FILE *f;

	snprintf(want, sizeof(want), ".%d", (int)getpid());
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *name = strrchr(line, '/');
		size_t n;

		if (!name || strncmp(name, "/ctx.", 5))
			continue;
		n = strcspn(name, "\n");
		name[n] = 0;
		if (n < strlen(want) || strcmp(name + n - strlen(want), want))
			continue;
		start = (uintptr_t)strtoull(line, NULL, 16);
		break;
	}
	fclose(f);
	return start;
}

static void test_fork_child_sigbus_is_its_own(void **state)
{
	struct ibv_context *ctx;
	long ps = sysconf(_SC_PAGESIZE);
	uintptr_t seg;
	int status;
	pid_t pid;

	(void)state;
	/* cmocka catches SIGBUS; the library chains to the handler it
	 * finds at its first open, which must be the default here. */
	signal(SIGBUS, SIG_DFL);
	ctx = fu_open_srdma();
	seg = segment_address();
	assert_true(seg != 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char path[] = "/tmp/srdma-fork-guard.XXXXXX";
		unsigned char v;
		volatile char *p;
		int fd = mkstemp(path);

		/* The parent's segment is not mapped here. */
		if (!mincore((void *)seg, (size_t)ps, &v) || errno != ENOMEM)
			_exit(10);
		if (fd < 0 || ftruncate(fd, ps))
			_exit(11);
		unlink(path);
		p = mmap((void *)seg, (size_t)ps, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0);
		if (p == MAP_FAILED)
			_exit(12);
		if (ftruncate(fd, 0))
			_exit(13);
		p[0] = 1; /* past EOF: SIGBUS, as without softrdma */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	printf("fork guard: child's own truncated mapping at the parent's "
	       "segment address: %s\n",
	       WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
				   : "no signal (swallowed by a stale guard)");
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
	assert_int_equal(ibv_close_device(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_child_sigbus_is_its_own),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
