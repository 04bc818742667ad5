// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_relaxed_timer.c - deferred invalidation of relaxed MRs happens by
 * itself within a bounded time (the "finite time gap" of §7), with no
 * flush and no other verbs call: the key keeps working while PENDING,
 * then the timer thread invalidates it, frees the slot and drops the PD
 * use.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

#include "core/core.h"

static void test_relaxed_pending_mr_invalidated_by_timer(void **state)
{
	static char buf[8192] __attribute__((aligned(4096)));
	struct srdma_mr_args a = {
		.addr = buf + 100,
		.length = 1000,
		.iova = (uintptr_t)(buf + 100),
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		.dmabuf_fd = -1,
		.relaxed = true,
	};
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	struct srdma_context *ctx;
	struct srdma_key_view v;
	struct srdma_key_snap s;
	struct srdma_pd *pd;
	struct srdma_mr *mr;
	uint32_t key, slot;
	int i;

	assert_int_equal(srdma_context_open(srdma_device_get(), &ctx), 0);
	assert_int_equal(srdma_pd_alloc(ctx, &pd), 0);
	assert_int_equal(srdma_mr_reg(&pd->ibpd, &a, &mr), 0);
	key = mr->ibmr.rkey;
	srdma_kt_view(&ctx->kt, &v);
	/* Access extends to the end of the page (§7). */
	assert_int_equal(srdma_key_check(&v, key, BIT(SRDMA_KIND_MR),
					 pd->ibpd.handle,
					 IBV_ACCESS_REMOTE_READ,
					 (uintptr_t)buf + 4000, 96, &s, &slot),
			 SRDMA_KCHK_OK);
	assert_int_equal(srdma_key_check(&v, key, BIT(SRDMA_KIND_MR),
					 pd->ibpd.handle,
					 IBV_ACCESS_REMOTE_READ,
					 (uintptr_t)buf + 4000, 97, &s, &slot),
			 SRDMA_KCHK_BOUNDS);
	assert_int_equal(srdma_mr_dereg_relaxed(&mr->ibmr), 0);
	/* Still usable right after the relaxed dereg ... */
	assert_int_equal(srdma_key_check(&v, key, BIT(SRDMA_KIND_MR),
					 pd->ibpd.handle,
					 IBV_ACCESS_REMOTE_READ,
					 (uintptr_t)buf + 100, 8, &s, &slot),
			 SRDMA_KCHK_OK);
	assert_int_equal(s.state, SRDMA_KEY_PENDING);
	assert_int_equal(atomic_load(&pd->usecnt), 1);
	/* ... and invalidated by the timer alone within a second. */
	for (i = 0; i < 100 && atomic_load(&pd->usecnt); i++)
		nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&pd->usecnt), 0);
	assert_int_equal(srdma_key_check(&v, key, BIT(SRDMA_KIND_MR),
					 pd->ibpd.handle, 0,
					 (uintptr_t)buf + 100, 8, &s, &slot),
			 SRDMA_KCHK_NOKEY);
	assert_int_equal(srdma_pd_dealloc(pd), 0);
	assert_int_equal(srdma_context_close(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relaxed_pending_mr_invalidated_by_timer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
