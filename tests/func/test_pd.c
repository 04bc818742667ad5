// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_pd.c - protection domains and the references that pin them (docs
 * verbs-semantics.md 6 "PD", 4.1, 7).
 *
 * ibv_dealloc_pd must fail with EBUSY while an MR, an MW or a live relaxed
 * MR uses the PD, must leave the PD usable after that failure, and must
 * succeed once the user is gone. Pending (deregistered but not yet
 * invalidated) relaxed MRs are flushed by dealloc first, so they do not
 * keep the PD busy.
 */
#include <infiniband/verbs_relaxed.h>

#include "func_util.h"

static void test_pd_alloc_dealloc(void **state)
{
	struct ibv_pd *a = ibv_alloc_pd(fu.ctx);
	struct ibv_pd *b = ibv_alloc_pd(fu.ctx);

	assert_non_null(a);
	assert_non_null(b);
	fu_expect(a->context == fu.ctx, "pd->context %p, want %p",
		  (void *)a->context, (void *)fu.ctx);
	fu_expect(a != b && a->handle != b->handle,
		  "two PDs share pointer or handle %u", a->handle);
	fu_expect_int(ibv_dealloc_pd(a), 0, "dealloc idle PD");
	fu_expect_int(ibv_dealloc_pd(b), 0, "dealloc idle PD");
	fu_done();
}

static void test_pd_dealloc_with_live_mr_ebusy(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr, *mr2;

	assert_non_null(pd);
	mr = ibv_reg_mr(pd, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY, "dealloc PD with live MR");
	/* the failed dealloc left the PD usable */
	mr2 = ibv_reg_mr(pd, buf, fu.pg, 0);
	fu_expect(mr2 != NULL, "reg_mr on PD after EBUSY dealloc: %s",
		  fu_errname(errno));
	if (mr2)
		assert_int_equal(ibv_dereg_mr(mr2), 0);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY, "dealloc PD with live MR");
	assert_int_equal(ibv_dereg_mr(mr), 0);
	fu_expect_int(ibv_dealloc_pd(pd), 0, "dealloc PD after dereg");
	munmap(buf, fu.pg);
	fu_done();
}

static void test_pd_dealloc_with_implicit_odp_mr_ebusy(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	struct ibv_mr *mr;

	assert_non_null(pd);
	mr = ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND);
	assert_non_null(mr);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY, "dealloc PD with ODP MR");
	assert_int_equal(ibv_dereg_mr(mr), 0);
	fu_expect_int(ibv_dealloc_pd(pd), 0, "dealloc PD after dereg");
	fu_done();
}

static void test_pd_dealloc_with_live_mw_ebusy(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	struct ibv_mw *mw1, *mw2;

	assert_non_null(pd);
	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	assert_non_null(mw1);
	assert_non_null(mw2);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY, "dealloc PD with 2 MWs");
	assert_int_equal(ibv_dealloc_mw(mw1), 0);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY, "dealloc PD with type 2 MW");
	assert_int_equal(ibv_dealloc_mw(mw2), 0);
	fu_expect_int(ibv_dealloc_pd(pd), 0, "dealloc PD after MWs freed");
	fu_done();
}

static void test_pd_references_are_per_pd(void **state)
{
	struct ibv_pd *a = ibv_alloc_pd(fu.ctx);
	struct ibv_pd *b = ibv_alloc_pd(fu.ctx);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	assert_non_null(a);
	assert_non_null(b);
	mr = ibv_reg_mr(a, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	fu_expect_int(ibv_dealloc_pd(b), 0, "dealloc PD without users");
	fu_expect_int(ibv_dealloc_pd(a), EBUSY, "dealloc PD with MR");
	assert_int_equal(ibv_dereg_mr(mr), 0);
	fu_expect_int(ibv_dealloc_pd(a), 0, "dealloc PD after dereg");
	munmap(buf, fu.pg);
	fu_done();
}

static void test_pd_dealloc_with_live_relaxed_mr_ebusy(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	assert_non_null(pd);
	mr = ibv_reg_mr_relaxed(pd, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY,
		      "dealloc PD with a live relaxed MR");
	assert_int_equal(ibv_dereg_mr(mr), 0);
	fu_expect_int(ibv_dealloc_pd(pd), 0, "dealloc PD after dereg");
	munmap(buf, fu.pg);
	fu_done();
}

static void test_pd_dealloc_flushes_pending_relaxed_mrs(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	char *buf = fu_map(4 * fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr[3];
	int i;

	assert_non_null(pd);
	for (i = 0; i < 3; i++) {
		mr[i] = ibv_reg_mr_relaxed(pd, buf + i * fu.pg, fu.pg,
					   IBV_ACCESS_LOCAL_WRITE |
						   IBV_ACCESS_REMOTE_WRITE);
		assert_non_null(mr[i]);
		assert_int_equal(ibv_dereg_mr_relaxed(mr[i]), 0);
	}
	fu_expect_int(ibv_dealloc_pd(pd), 0,
		      "dealloc PD with only pending relaxed MRs");
	munmap(buf, 4 * fu.pg);
	fu_done();
}

static void test_pd_dealloc_pending_relaxed_plus_live_mr_ebusy(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *rmr, *mr;

	assert_non_null(pd);
	rmr = ibv_reg_mr_relaxed(pd, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	mr = ibv_reg_mr(pd, buf + fu.pg, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(rmr);
	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr_relaxed(rmr), 0);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY,
		      "dealloc PD with a pending relaxed MR and a live MR");
	assert_int_equal(ibv_dereg_mr(mr), 0);
	fu_expect_int(ibv_dealloc_pd(pd), 0, "dealloc PD after dereg");
	munmap(buf, 2 * fu.pg);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_pd_alloc_dealloc),
		FU_TEST(test_pd_dealloc_with_live_mr_ebusy),
		FU_TEST(test_pd_dealloc_with_implicit_odp_mr_ebusy),
		FU_TEST(test_pd_dealloc_with_live_mw_ebusy),
		FU_TEST(test_pd_references_are_per_pd),
		FU_TEST(test_pd_dealloc_with_live_relaxed_mr_ebusy),
		FU_TEST(test_pd_dealloc_flushes_pending_relaxed_mrs),
		FU_TEST(test_pd_dealloc_pending_relaxed_plus_live_mr_ebusy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
