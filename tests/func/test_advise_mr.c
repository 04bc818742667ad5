// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_advise_mr.c - ibv_advise_mr on ODP memory regions (docs
 * verbs-semantics.md 2.5).
 *
 * ibv_advise_mr is inline in the application and reaches the library
 * through verbs_context->advise_mr; it returns 0 or a positive errno. The
 * tests cover each documented error (bad flags, no SGEs, MW key, invalid
 * lkey, range outside the MR, PREFETCH_WRITE without write access, non-ODP
 * MR, unknown advice) and the successful prefetches. Whether a prefetch
 * really populated pages is not observable and is not checked.
 */
#include "func_util.h"

#define PREFETCH	  IBV_ADVISE_MR_ADVICE_PREFETCH
#define PREFETCH_WRITE	  IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
#define PREFETCH_NO_FAULT IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT

struct odp_fixture {
	char *buf;
	size_t len;
	struct ibv_mr *mr;
};

static struct odp_fixture of;

static int odp_setup(void **state)
{
	fu_setup(state);
	of.len = 4 * fu.pg;
	of.buf = fu_map(of.len, PROT_READ | PROT_WRITE);
	of.mr = ibv_reg_mr(fu.pd, of.buf, of.len,
			   IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	assert_non_null(of.mr);
	return 0;
}

static int odp_teardown(void **state)
{
	if (of.mr)
		ibv_dereg_mr(of.mr);
	munmap(of.buf, of.len);
	memset(&of, 0, sizeof(of));
	return fu_teardown(state);
}

#define ODP_TEST(t) cmocka_unit_test_setup_teardown(t, odp_setup, odp_teardown)

static struct ibv_sge sge(void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)addr, .length = len, .lkey = lkey};

	return s;
}

#define expect_advise(advice, flags, sgl, n, want)                             \
	do {                                                                   \
		int r_ = ibv_advise_mr(fu.pd, advice, flags, sgl, n);          \
		fu_expect(r_ == (want),                                        \
			  "ibv_advise_mr(%s, flags %#x, n %u) "                \
			  "gave %s, want %s",                                  \
			  #advice, (unsigned int)(flags), (unsigned int)(n),   \
			  fu_errname(r_), fu_errname(want));                   \
	} while (0)

static void test_advise_mr_odp_prefetch_succeeds(void **state)
{
	struct ibv_sge s[2] = {
		sge(of.buf, (uint32_t)fu.pg, of.mr->lkey),
		sge(of.buf + 2 * fu.pg + 5, 100, of.mr->lkey),
	};
	struct ibv_sge whole = sge(of.buf, (uint32_t)of.len, of.mr->lkey);

	expect_advise(PREFETCH, 0, s, 1, 0);
	expect_advise(PREFETCH, 0, s, 2, 0);
	expect_advise(PREFETCH_WRITE, 0, s, 2, 0);
	expect_advise(PREFETCH_NO_FAULT, 0, s, 2, 0);
	expect_advise(PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, s, 2, 0);
	expect_advise(PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &whole, 1, 0);
	fu_done();
}

static void test_advise_mr_implicit_odp_any_address(void **state)
{
	struct ibv_mr *imr;
	struct ibv_sge s;

	imr = ibv_reg_mr(fu.pd, NULL, SIZE_MAX,
			 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(imr);
	s = sge(of.buf + 100, 3000, imr->lkey);
	expect_advise(PREFETCH, 0, &s, 1, 0);
	expect_advise(PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &s, 1, 0);
	assert_int_equal(ibv_dereg_mr(imr), 0);
	fu_done();
}

static void test_advise_mr_flags_other_than_flush_einval(void **state)
{
	struct ibv_sge s = sge(of.buf, 64, of.mr->lkey);

	expect_advise(PREFETCH, 1u << 1, &s, 1, EINVAL);
	expect_advise(PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH | (1u << 5), &s, 1,
		      EINVAL);
	expect_advise(PREFETCH_WRITE, 1u << 31, &s, 1, EINVAL);
	fu_done();
}

static void test_advise_mr_num_sge_zero_einval(void **state)
{
	struct ibv_sge s = sge(of.buf, 64, of.mr->lkey);

	expect_advise(PREFETCH, 0, &s, 0, EINVAL);
	expect_advise(PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH, &s, 0, EINVAL);
	fu_done();
}

static void test_advise_mr_mw_key_einval(void **state)
{
	struct ibv_mw *mw = ibv_alloc_mw(fu.pd, IBV_MW_TYPE_2);
	struct ibv_sge s;

	assert_non_null(mw);
	s = sge(of.buf, 64, mw->rkey);
	expect_advise(PREFETCH, 0, &s, 1, EINVAL);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	fu_done();
}

static void test_advise_mr_invalid_lkey_efault(void **state)
{
	struct ibv_mr *gone;
	struct ibv_sge s[2];
	uint32_t stale;

	gone = ibv_reg_mr(fu.pd, of.buf, of.len, IBV_ACCESS_ON_DEMAND);
	assert_non_null(gone);
	stale = gone->lkey;
	assert_int_equal(ibv_dereg_mr(gone), 0);

	s[0] = sge(of.buf, 64, 0); /* index 0 is never valid */
	expect_advise(PREFETCH, 0, s, 1, EFAULT);
	s[0] = sge(of.buf, 64, stale);
	expect_advise(PREFETCH, 0, s, 1, EFAULT);
	s[0] = sge(of.buf, 64, of.mr->lkey ^ 0x1); /* right index, wrong tag */
	expect_advise(PREFETCH, 0, s, 1, EFAULT);
	s[0] = sge(of.buf, 64, of.mr->lkey);
	s[1] = sge(of.buf, 64, stale);
	expect_advise(PREFETCH, 0, s, 2, EFAULT);
	fu_done();
}

static void test_advise_mr_range_outside_mr_efault(void **state)
{
	struct ibv_sge s;

	s = sge(of.buf + of.len - 8, 16, of.mr->lkey);
	expect_advise(PREFETCH, 0, &s, 1, EFAULT);
	s = sge(of.buf - 1, 16, of.mr->lkey);
	expect_advise(PREFETCH, 0, &s, 1, EFAULT);
	s = sge(of.buf + of.len, 1, of.mr->lkey);
	expect_advise(PREFETCH_NO_FAULT, 0, &s, 1, EFAULT);
	s = sge(of.buf, (uint32_t)of.len + 1, of.mr->lkey);
	expect_advise(PREFETCH_WRITE, 0, &s, 1, EFAULT);
	s = sge((void *)(UINTPTR_MAX - 10), 100, of.mr->lkey);
	expect_advise(PREFETCH, 0, &s, 1, EFAULT);
	fu_done();
}

static void
test_advise_mr_prefetch_write_without_write_access_eperm(void **state)
{
	static const int acc[] = {0, IBV_ACCESS_REMOTE_READ};
	size_t i;

	for (i = 0; i < sizeof(acc) / sizeof(acc[0]); i++) {
		struct ibv_mr *mr = ibv_reg_mr(fu.pd, of.buf, of.len,
					       IBV_ACCESS_ON_DEMAND | acc[i]);
		struct ibv_sge s;

		assert_non_null(mr);
		s = sge(of.buf, 64, mr->lkey);
		expect_advise(PREFETCH_WRITE, 0, &s, 1, EPERM);
		/* a read prefetch of the same MR is fine */
		expect_advise(PREFETCH, 0, &s, 1, 0);
		assert_int_equal(ibv_dereg_mr(mr), 0);
	}
	fu_done();
}

static void test_advise_mr_non_odp_mr_enoent(void **state)
{
	struct ibv_mr *mr =
		ibv_reg_mr(fu.pd, of.buf, of.len, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge s;

	assert_non_null(mr);
	s = sge(of.buf, 64, mr->lkey);
	expect_advise(PREFETCH, 0, &s, 1, ENOENT);
	expect_advise(PREFETCH_WRITE, 0, &s, 1, ENOENT);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	fu_done();
}

static void test_advise_mr_unknown_advice_eopnotsupp(void **state)
{
	struct ibv_sge s = sge(of.buf, 64, of.mr->lkey);
	int r;

	r = ibv_advise_mr(fu.pd, (enum ibv_advise_mr_advice)3, 0, &s, 1);
	fu_expect(r == EOPNOTSUPP, "advice 3 gave %s, want EOPNOTSUPP",
		  fu_errname(r));
	r = ibv_advise_mr(fu.pd, (enum ibv_advise_mr_advice)99, 0, &s, 1);
	fu_expect(r == EOPNOTSUPP, "advice 99 gave %s, want EOPNOTSUPP",
		  fu_errname(r));
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ODP_TEST(test_advise_mr_odp_prefetch_succeeds),
		ODP_TEST(test_advise_mr_implicit_odp_any_address),
		ODP_TEST(test_advise_mr_flags_other_than_flush_einval),
		ODP_TEST(test_advise_mr_num_sge_zero_einval),
		ODP_TEST(test_advise_mr_mw_key_einval),
		ODP_TEST(test_advise_mr_invalid_lkey_efault),
		ODP_TEST(test_advise_mr_range_outside_mr_efault),
		ODP_TEST(
			test_advise_mr_prefetch_write_without_write_access_eperm),
		ODP_TEST(test_advise_mr_non_odp_mr_enoent),
		ODP_TEST(test_advise_mr_unknown_advice_eopnotsupp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
