// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fault_sweep.c - every error path reachable (style R15, SQLite's
 * *fault.test idea). For each compiled-in fault point and each n, a child
 * process runs a fixed scenario with SRDMA_FAULT=<site>:<n>, so the n-th
 * evaluation of that site fails. Every call must then either succeed or
 * fail with the documented errno, and the scenario's cleanup must still
 * succeed completely (dereg, dealloc_pd, close_device all return 0): an
 * unwind path that leaks a PD reference, a key slot or a handle shows up
 * as EBUSY. The sweep for a site ends at the first n the scenario never
 * reaches. Linked against build/lib-fault/libibverbs.so.1.
 */
#include <errno.h>
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
#include <infiniband/verbs.h>
#include <infiniband/verbs_relaxed.h>

enum { RAN_CLEAN = 0, HIT_OK = 10, BAD = 20 };

#define MUST(cond)                                                             \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s (errno %d)\n", __FILE__,    \
				__LINE__, #cond, errno);                       \
			_exit(BAD);                                            \
		}                                                              \
	} while (0)

/* The scenario. Returns HIT_OK if some call failed as a fault would make
 * it fail, RAN_CLEAN if nothing failed. Exits BAD on any other outcome. */
static int scenario(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_mr *mr[4] = { 0 };
	struct ibv_context *ctx;
	struct ibv_mw *mw;
	struct ibv_pd *pd;
	int hit = 0, i;
	char *buf;

	MUST(list && list[0]);
	buf = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	MUST(buf != MAP_FAILED);
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		MUST(errno == ENOMEM);
		ctx = ibv_open_device(list[0]);	/* the fault hits once */
		MUST(ctx);
		hit = 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		MUST(errno == ENOMEM);
		pd = ibv_alloc_pd(ctx);
		MUST(pd);
		hit = 1;
	}
	for (i = 0; i < 4; i++) {
		int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;

		if (i == 3)
			mr[i] = ibv_reg_mr_relaxed(pd, buf + 4096 * i, 100,
						   acc);
		else if (i == 2)
			mr[i] = ibv_reg_mr(pd, NULL, SIZE_MAX,
					   IBV_ACCESS_ON_DEMAND |
						   IBV_ACCESS_LOCAL_WRITE);
		else
			mr[i] = ibv_reg_mr(pd, buf + 4096 * i, 4096, acc);
		if (!mr[i]) {
			MUST(errno == ENOMEM);
			hit = 1;
		}
	}
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mw) {
		MUST(errno == ENOMEM);
		hit = 1;
	}
	/* Cleanup must be complete whatever failed above. */
	if (mw)
		MUST(ibv_dealloc_mw(mw) == 0);
	if (mr[3])
		MUST(ibv_dereg_mr_relaxed(mr[3]) == 0);
	for (i = 0; i < 3; i++)
		if (mr[i])
			MUST(ibv_dereg_mr(mr[i]) == 0);
	MUST(ibv_dealloc_pd(pd) == 0);	/* flushes the relaxed MR */
	MUST(ibv_close_device(ctx) == 0);
	ibv_free_device_list(list);
	munmap(buf, 1 << 16);
	return hit ? HIT_OK : RAN_CLEAN;
}

static int run_child(const char *site, int n)
{
	char spec[64];
	int status;
	pid_t pid;

	snprintf(spec, sizeof(spec), "%s:%d", site, n);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		setenv("SRDMA_FAULT", spec, 1);
		_exit(scenario());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status)) {
		fprintf(stderr, "SRDMA_FAULT=%s: child died (signal %d)\n",
			spec, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		return BAD;
	}
	if (WEXITSTATUS(status) == BAD)
		fprintf(stderr, "SRDMA_FAULT=%s: unclean failure\n", spec);
	return WEXITSTATUS(status);
}

static void sweep(const char *site, int min_hits)
{
	int n, hits = 0, r;

	for (n = 1; n < 64; n++) {
		r = run_child(site, n);
		assert_int_not_equal(r, BAD);
		if (r == RAN_CLEAN)
			break;
		hits++;
	}
	printf("# %s: %d failing evaluation(s) handled cleanly\n", site,
	       hits);
	assert_true(hits >= min_hits);
}

static void test_fault_ctx_alloc(void **state)
{
	sweep("CTX_ALLOC", 1);
}

static void test_fault_pd_alloc(void **state)
{
	sweep("PD_ALLOC", 1);
}

static void test_fault_mr_alloc(void **state)
{
	sweep("MR_ALLOC", 4);
}

static void test_fault_mw_alloc(void **state)
{
	sweep("MW_ALLOC", 1);
}

static void test_fault_key_table_alloc(void **state)
{
	sweep("KT_ALLOC", 5);
}

static void test_fault_handle_add(void **state)
{
	sweep("HANDLE_ADD", 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_ctx_alloc),
		cmocka_unit_test(test_fault_pd_alloc),
		cmocka_unit_test(test_fault_mr_alloc),
		cmocka_unit_test(test_fault_mw_alloc),
		cmocka_unit_test(test_fault_key_table_alloc),
		cmocka_unit_test(test_fault_handle_add),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
