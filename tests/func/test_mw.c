// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_mw.c - memory window allocation and deallocation (docs
 * verbs-semantics.md 1 keys, 4.1).
 *
 * ibv_alloc_mw/ibv_dealloc_mw are inline in the application and reach the
 * library through ctx->ops. Covered: types 1 and 2 allocate, any other type
 * fails, the ibv_mw fields, the PD reference an MW holds, and that MW keys
 * share the key space with MRs without ever colliding. Binding needs a QP
 * and belongs to the QP tests.
 */
#include "func_util.h"

static void check_mw(struct ibv_mw *mw, enum ibv_mw_type type)
{
	fu_expect(mw->context == fu.ctx, "mw->context %p, want %p",
		  (void *)mw->context, (void *)fu.ctx);
	fu_expect(mw->pd == fu.pd, "mw->pd %p, want %p", (void *)mw->pd,
		  (void *)fu.pd);
	fu_expect(mw->type == type, "mw->type %d, want %d", mw->type, type);
	fu_expect(FU_KEY_INDEX(mw->rkey) != 0, "MW rkey %#x has index 0",
		  mw->rkey);
}

static void test_mw_alloc_type1_and_type2(void **state)
{
	struct ibv_mw *m1 = ibv_alloc_mw(fu.pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = ibv_alloc_mw(fu.pd, IBV_MW_TYPE_2);

	assert_non_null(m1);
	assert_non_null(m2);
	check_mw(m1, IBV_MW_TYPE_1);
	check_mw(m2, IBV_MW_TYPE_2);
	fu_expect(FU_KEY_INDEX(m1->rkey) != FU_KEY_INDEX(m2->rkey),
		  "two MWs share key index (%#x, %#x)", m1->rkey, m2->rkey);
	fu_expect(m1->handle != m2->handle, "two MWs share handle %u",
		  m1->handle);
	fu_expect_int(ibv_dealloc_mw(m1), 0, "dealloc type 1 MW");
	fu_expect_int(ibv_dealloc_mw(m2), 0, "dealloc type 2 MW");
	fu_done();
}

static void test_mw_alloc_bad_type_fails(void **state)
{
	static const int bad[] = {0, 3, 4, 255, -1};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ibv_mw *mw;

		errno = 0;
		mw = ibv_alloc_mw(fu.pd, (enum ibv_mw_type)bad[i]);
		fu_expect(mw == NULL &&
				  (errno == EINVAL || errno == EOPNOTSUPP),
			  "ibv_alloc_mw(type %d): %s, want EINVAL", bad[i],
			  mw ? "succeeded" : fu_errname(errno));
		if (mw)
			ibv_dealloc_mw(mw);
	}
	fu_done();
}

static void test_mw_holds_pd_reference(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	struct ibv_mw *mw;

	assert_non_null(pd);
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	fu_expect(mw->pd == pd, "mw->pd %p, want %p", (void *)mw->pd,
		  (void *)pd);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY, "dealloc PD with MW");
	fu_expect_int(ibv_dealloc_mw(mw), 0, "dealloc MW");
	fu_expect_int(ibv_dealloc_pd(pd), 0, "dealloc PD after MW");
	fu_done();
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* MRs and MWs share one 24-bit index space: no live index is reused. */
static void test_mw_keys_distinct_from_mr_keys(void **state)
{
	enum { N = 200 };
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mw *mw[N];
	struct ibv_mr *mr[N];
	uint32_t idx[2 * N];
	int i, dup = 0;

	for (i = 0; i < N; i++) {
		mw[i] = ibv_alloc_mw(fu.pd,
				     i & 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
		mr[i] = ibv_reg_mr(fu.pd, buf, fu.pg,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		assert_non_null(mw[i]);
		assert_non_null(mr[i]);
		idx[2 * i] = FU_KEY_INDEX(mw[i]->rkey);
		idx[2 * i + 1] = FU_KEY_INDEX(mr[i]->lkey);
	}
	qsort(idx, 2 * N, sizeof(idx[0]), cmp_u32);
	for (i = 1; i < 2 * N; i++)
		dup += idx[i] == idx[i - 1];
	fu_expect(dup == 0, "%d live MR/MW keys share an index", dup);
	fu_expect(idx[0] != 0, "a live key has index 0");
	for (i = 0; i < N; i++) {
		assert_int_equal(ibv_dealloc_mw(mw[i]), 0);
		assert_int_equal(ibv_dereg_mr(mr[i]), 0);
	}
	munmap(buf, fu.pg);
	fu_done();
}

static void test_mw_stale_key_not_reissued(void **state)
{
	struct ibv_mw *mw = ibv_alloc_mw(fu.pd, IBV_MW_TYPE_2);
	uint32_t old;

	assert_non_null(mw);
	old = mw->rkey;
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	mw = ibv_alloc_mw(fu.pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	fu_expect(mw->rkey != old, "re-allocated MW got the stale key %#x",
		  old);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	fu_done();
}

/* An MR with unbound windows in its PD deregisters normally. */
static void test_mw_unbound_mw_does_not_pin_mr(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr = ibv_reg_mr(
		fu.pd, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(fu.pd, IBV_MW_TYPE_1);

	assert_non_null(mr);
	assert_non_null(mw);
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg MR with an unbound MW");
	fu_expect_int(ibv_dealloc_mw(mw), 0, "dealloc MW");
	munmap(buf, fu.pg);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_mw_alloc_type1_and_type2),
		FU_TEST(test_mw_alloc_bad_type_fails),
		FU_TEST(test_mw_holds_pd_reference),
		FU_TEST(test_mw_keys_distinct_from_mr_keys),
		FU_TEST(test_mw_stale_key_not_reissued),
		FU_TEST(test_mw_unbound_mw_does_not_pin_mr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
