// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_memcheck_fault.c - only "this ioctl does not exist" switches the
 * PROCMAP_QUERY path off; a transient error costs one call its speed,
 * never an answer and never the fast path for later calls.
 *
 * Linked against the fault-injection build of the internal library. Each
 * scenario runs in its own child (the fault counter and the mode are
 * process-wide) with SRDMA_FAULT=<site>:<n>:
 *   MAPS_QUERY_EINTR   one ioctl interrupted: retried, still the ioctl
 *   MAPS_QUERY_EAGAIN  one call whose ioctl keeps failing: that call is
 *                      answered the other way, the next by the ioctl
 *   MAPS_QUERY_ENOTTY  the kernel lacks the ioctl from then on: fallback
 *                      for good, same answers
 * and, without a fault point, the application closing our maps fd and
 * reusing its number (ENOTTY from a file that is not ours): a fresh fd is
 * opened and the ioctl path stays.
 *
 * Which path answered is visible from outside: srdma_mem_check_pin()
 * populates a small range only when PROCMAP_QUERY did not answer (the
 * fallback's MADV_POPULATE), so the residency of a never-touched mapping
 * (mincore) tells. On a kernel without PROCMAP_QUERY the test skips.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/core.h"

#define PAGES 4

/* Exit codes of a scenario child. */
enum { CHILD_OK = 0, CHILD_BAD = 20, CHILD_NO_QUERY = 77 };

#define MUST(cond)                                                             \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                        \
			_exit(CHILD_BAD);                                      \
		}                                                              \
	} while (0)

/* A fresh, never touched, read-write mapping of PAGES pages. */
static char *fresh(void)
{
	char *p = mmap(NULL, PAGES * srdma_page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	MUST(p != MAP_FAILED);
	return p;
}

static unsigned int resident(const char *p)
{
	unsigned char vec[PAGES];
	unsigned int i, n = 0;

	MUST(!mincore((void *)p, PAGES * srdma_page_size, vec));
	for (i = 0; i < PAGES; i++)
		n += vec[i] & 1;
	return n;
}

/* Check a fresh range for a registration. Return: pages populated
 * (0: PROCMAP_QUERY answered; PAGES: the fallback did). */
static unsigned int pin_fresh(void)
{
	char *p = fresh();
	unsigned int n;

	MUST(srdma_mem_check_pin((uintptr_t)p, PAGES * srdma_page_size, true) ==
	     0);
	n = resident(p);
	munmap(p, PAGES * srdma_page_size);
	return n;
}

/* The answers that must not depend on the path. */
static void check_answers(void)
{
	char *ro = mmap(NULL, srdma_page_size, PROT_READ,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *gone = mmap(NULL, srdma_page_size, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	MUST(ro != MAP_FAILED && gone != MAP_FAILED);
	MUST(!munmap(gone, srdma_page_size));
	MUST(srdma_mem_check_pin((uintptr_t)ro, srdma_page_size, false) == 0);
	MUST(srdma_mem_check_pin((uintptr_t)ro, srdma_page_size, true) ==
	     -EFAULT);
	MUST(srdma_mem_check_pin((uintptr_t)gone, srdma_page_size, false) ==
	     -EFAULT);
	MUST(srdma_mem_check((uintptr_t)ro, srdma_page_size, true) == -EFAULT);
	MUST(srdma_mem_check((uintptr_t)gone, 1, false) == -EFAULT);
	munmap(ro, srdma_page_size);
}

/* Our fd on /proc/<pid>/maps, or -1. */
static int find_maps_fd(void)
{
	char want[64], path[300], target[128];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int fd = -1;

	MUST(d);
	snprintf(want, sizeof(want), "/proc/%d/maps", (int)getpid());
	while ((de = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (!strcmp(target, want))
			fd = atoi(de->d_name);
	}
	closedir(d);
	return fd;
}

static int scenario_none(void)
{
	unsigned int a = pin_fresh();

	if (a)
		return CHILD_NO_QUERY;
	check_answers();
	printf("no fault: PROCMAP_QUERY answers, 0 of %d pages populated\n",
	       PAGES);
	return CHILD_OK;
}

static int scenario_eintr(void)
{
	unsigned int a = pin_fresh(), b = pin_fresh();

	MUST(a == 0 && b == 0);
	check_answers();
	printf("EINTR once: retried, still PROCMAP_QUERY (%u, %u pages "
	       "populated)\n",
	       a, b);
	return CHILD_OK;
}

static int scenario_eagain(void)
{
	unsigned int a = pin_fresh(), b = pin_fresh();

	MUST(a == PAGES && b == 0);
	check_answers();
	printf("EAGAIN on every retry of one call: that call answered by the "
	       "fallback (%u of %d pages populated), the next by "
	       "PROCMAP_QUERY (%u)\n",
	       a, PAGES, b);
	return CHILD_OK;
}

static int scenario_eagain_nopin(void)
{
	char *p = fresh();

	/* srdma_mem_check() never populates, whichever path answers. */
	MUST(srdma_mem_check((uintptr_t)p, PAGES * srdma_page_size, true) == 0);
	MUST(resident(p) == 0);
	printf("EAGAIN in srdma_mem_check: answered by /proc/self/maps, "
	       "0 pages populated\n");
	return CHILD_OK;
}

static int scenario_enotty(void)
{
	unsigned int a = pin_fresh(), b = pin_fresh();

	MUST(a == PAGES && b == PAGES);
	check_answers();
	printf("ENOTTY (no ioctl): fallback from then on (%u, %u of %d pages "
	       "populated), same answers\n",
	       a, b, PAGES);
	return CHILD_OK;
}

static int scenario_stale_fd(void)
{
	unsigned int a, b, c;
	int fd, null;

	a = pin_fresh(); /* opens our maps fd */
	fd = find_maps_fd();
	MUST(fd >= 0);
	/* The application closes it and the number is reused for a file
	 * that answers ENOTTY. */
	null = open("/dev/null", O_RDONLY);
	MUST(null >= 0);
	MUST(dup2(null, fd) == fd);
	close(null);
	b = pin_fresh();
	c = pin_fresh();
	MUST(a == 0 && b == 0 && c == 0);
	MUST(find_maps_fd() >= 0 && find_maps_fd() != fd);
	check_answers();
	printf("maps fd %d replaced by /dev/null: a fresh fd answers, still "
	       "PROCMAP_QUERY (%u, %u, %u pages populated)\n",
	       fd, a, b, c);
	return CHILD_OK;
}

/* Run @fn in a child with SRDMA_FAULT=@spec (NULL: none); its exit code. */
static int run(const char *spec, int (*fn)(void))
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (spec)
			setenv("SRDMA_FAULT", spec, 1);
		else
			unsetenv("SRDMA_FAULT");
		fflush(stdout);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_memcheck_transient_errors_keep_the_ioctl(void **state)
{
	int ret;

	(void)state;
	ret = run(NULL, scenario_none);
	if (ret == CHILD_NO_QUERY)
		skip(); /* the kernel lacks PROCMAP_QUERY (< 6.11) */
	assert_int_equal(ret, CHILD_OK);
	assert_int_equal(run("MAPS_QUERY_EINTR:1", scenario_eintr), CHILD_OK);
	assert_int_equal(run("MAPS_QUERY_EAGAIN:1", scenario_eagain), CHILD_OK);
	assert_int_equal(run("MAPS_QUERY_EAGAIN:1", scenario_eagain_nopin),
			 CHILD_OK);
	assert_int_equal(run(NULL, scenario_stale_fd), CHILD_OK);
}

static void test_memcheck_no_ioctl_falls_back_for_good(void **state)
{
	(void)state;
	if (run(NULL, scenario_none) == CHILD_NO_QUERY)
		skip();
	assert_int_equal(run("MAPS_QUERY_ENOTTY:1", scenario_enotty), CHILD_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memcheck_transient_errors_keep_the_ioctl),
		cmocka_unit_test(test_memcheck_no_ioctl_falls_back_for_good),
	};

	unsetenv("SRDMA_MAPS_QUERY");
	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
