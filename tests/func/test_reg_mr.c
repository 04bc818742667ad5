// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_reg_mr.c - memory registration through ibv_reg_mr, ibv_reg_mr_iova,
 * ibv_reg_mr_iova2 and the header macros (docs verbs-semantics.md 1, 2.1-2.7,
 * 6 for dereg).
 *
 * Every rule is checked through every entry point that can express it: the
 * access-flag table, the order of the argument checks (the first failing
 * check decides errno), iova/ZERO_BASED, implicit and explicit ODP,
 * HUGETLB, the optional bits, the MR fields and the key format. Only what
 * the public API shows is checked: keys, errno and the MR fields. Data-path
 * effects of a registration belong to the QP tests.
 */
#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/wait.h>

#include "func_util.h"

#define LW	IBV_ACCESS_LOCAL_WRITE
#define RW	IBV_ACCESS_REMOTE_WRITE
#define RR	IBV_ACCESS_REMOTE_READ
#define RA	IBV_ACCESS_REMOTE_ATOMIC
#define MWB	IBV_ACCESS_MW_BIND
#define ZB	IBV_ACCESS_ZERO_BASED
#define ODP	IBV_ACCESS_ON_DEMAND
#define HUGE	IBV_ACCESS_HUGETLB
#define RO	IBV_ACCESS_RELAXED_ORDERING
#define FLUSH_G IBV_ACCESS_FLUSH_GLOBAL
#define FLUSH_P IBV_ACCESS_FLUSH_PERSISTENT

static const unsigned int undefined_bits[] = {
	1u << 10, 1u << 11, 1u << 12, 1u << 13, 1u << 14, 1u << 15,
	1u << 16, 1u << 17, 1u << 18, 1u << 19, 1u << 30, 1u << 31,
};
#define N_UNDEFINED (sizeof(undefined_bits) / sizeof(undefined_bits[0]))

static bool device_has_flush(void)
{
	struct ibv_device_attr_ex attr;

	memset(&attr, 0, sizeof(attr));
	if (ibv_query_device_ex(fu.ctx, NULL, &attr))
		return false;
	return attr.device_cap_flags_ex &
	       (FU_DEVICE_FLUSH_GLOBAL | FU_DEVICE_FLUSH_PERSISTENT);
}

static void test_reg_mr_pd_null_einval(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);

	fu_expect_reg_err(NULL, buf, fu.pg, (uintptr_t)buf, LW, EINVAL);
	fu_expect_reg_err(NULL, buf, fu.pg, (uintptr_t)buf, 0, EINVAL);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_pd_not_live_einval(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_pd *fake = fu_fake_object(fu.ctx);

	fu_expect_reg_err(fake, buf, fu.pg, (uintptr_t)buf, LW, EINVAL);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_iova_page_offset_mismatch_einval(void **state)
{
	char *buf = fu_map(4 * fu.pg, PROT_READ | PROT_WRITE);

	/* page offsets 0x10 vs 0x0 */
	fu_expect_reg_err(fu.pd, buf + 0x10, fu.pg, 0x10000, LW, EINVAL);
	/* page offsets 0x10 vs 0x20 */
	fu_expect_reg_err(fu.pd, buf + 0x10, fu.pg, 0x10020, LW, EINVAL);
	/* iova 0 needs a page-aligned buffer */
	fu_expect_reg_err(fu.pd, buf + 0x10, fu.pg, 0, 0, EINVAL);
	fu_expect_reg_err(fu.pd, buf + fu.pg - 1, 2, 0, RR, EINVAL);
	/* same page offset: fine */
	fu_expect_reg_ok(fu.pd, buf + 0x10, fu.pg, 0x10010, LW);
	fu_expect_reg_ok(fu.pd, buf, 2 * fu.pg, 0, LW | RW | RR);
	fu_expect_reg_ok(fu.pd, buf + fu.pg, fu.pg, 0x7000000000ULL, LW);
	munmap(buf, 4 * fu.pg);
	fu_done();
}

static void test_reg_mr_zero_based_lifts_page_offset_rule(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);

	fu_expect_reg_ok(fu.pd, buf + 0x10, fu.pg, 0x1234, ZB | LW);
	fu_expect_reg_ok(fu.pd, buf + 0x10, fu.pg, 0, ZB);
	fu_expect_reg_ok(fu.pd, buf + 0x10, fu.pg, (uintptr_t)(buf + 0x10),
			 ZB | LW | RW | RR);
	munmap(buf, 2 * fu.pg);
	fu_done();
}

static void test_reg_mr_zero_based_keeps_user_addr(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	mr = ibv_reg_mr(fu.pd, buf + 8, 64,
			IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	fu_expect(mr->addr == buf + 8, "ZERO_BASED mr->addr %p, want %p",
		  mr->addr, buf + 8);
	fu_expect_int(mr->length, 64, "ZERO_BASED mr->length");
	assert_int_equal(ibv_dereg_mr(mr), 0);

	mr = ibv_reg_mr_iova(fu.pd, buf, fu.pg, 0x5000, IBV_ACCESS_ZERO_BASED);
	assert_non_null(mr);
	fu_expect(mr->addr == buf, "ZERO_BASED iova mr->addr %p, want %p",
		  mr->addr, buf);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_undefined_access_bits_einval(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	size_t i;

	for (i = 0; i < N_UNDEFINED; i++) {
		unsigned int b = undefined_bits[i];

		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf, b, EINVAL);
		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf,
				  b | LW | RW | RR, EINVAL);
		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf, b | RO,
				  EINVAL);
	}
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_remote_write_or_atomic_needs_local_write(void **state)
{
	static const unsigned int bad[] = {
		RW,	  RA,	   RW | RR, RA | RR,  RW | RA,	 RW | MWB,
		RA | MWB, RW | ZB, RA | RO, RW | ODP, RA | HUGE,
	};
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf, bad[i],
				  EINVAL);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_access_flag_table_accepts(void **state)
{
	static const unsigned int good[] = {
		0,
		LW,
		RR,
		LW | RW,
		LW | RA,
		LW | RW | RR | RA,
		MWB,
		LW | MWB | RW | RR | RA,
		ZB,
		LW | ZB | RW,
		ODP,
		ODP | LW | RW | RR | RA,
		ODP | HUGE | LW,
		HUGE,
		LW | HUGE | RW,
		RO,
		LW | RW | RR | RA | MWB | RO,
	};
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		fu_expect_reg_ok(fu.pd, buf, 2 * fu.pg, (uintptr_t)buf,
				 good[i]);
	munmap(buf, 2 * fu.pg);
	fu_done();
}

static void test_reg_mr_flush_bits_eopnotsupp(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);

	if (device_has_flush()) {
		fu_expect_reg_ok(fu.pd, buf, fu.pg, (uintptr_t)buf,
				 FLUSH_G | LW);
		fu_expect_reg_ok(fu.pd, buf, fu.pg, (uintptr_t)buf,
				 FLUSH_P | LW);
	} else {
		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf, FLUSH_G,
				  EOPNOTSUPP);
		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf,
				  FLUSH_P | LW, EOPNOTSUPP);
		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf,
				  FLUSH_G | FLUSH_P | LW | RW, EOPNOTSUPP);
	}
	munmap(buf, fu.pg);
	fu_done();
}

/*
 * Spec 2.3: the first failing check decides errno. Each row breaks two
 * rules; errno must be the one of the earlier check.
 */
static void test_reg_mr_first_failing_check_sets_errno(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	char *gone = fu_unmapped(fu.pg);
	char *ro = fu_map(fu.pg, PROT_READ);
	void *wrap = (void *)(UINTPTR_MAX - 100);
	bool flush = device_has_flush();

	/* 1 pd before everything */
	fu_expect_reg_err(NULL, buf + 0x10, fu.pg, 0x20000, LW, EINVAL);
	fu_expect_reg_err(NULL, gone, fu.pg, (uintptr_t)gone, LW, EINVAL);
	fu_expect_reg_err(NULL, buf, 0, (uintptr_t)buf, LW, EINVAL);
	if (!flush)
		fu_expect_reg_err(NULL, buf, fu.pg, (uintptr_t)buf, FLUSH_G,
				  EINVAL);
	/* 2 page offset before access, capability and mapping checks */
	fu_expect_reg_err(fu.pd, gone + 0x10, 64, 0x20000, 0, EINVAL);
	fu_expect_reg_err(fu.pd, ro + 0x10, 64, 0x20000, LW, EINVAL);
	if (!flush)
		fu_expect_reg_err(fu.pd, buf + 0x10, 64, 0x20000, FLUSH_G | LW,
				  EINVAL);
	/* 3 undefined bits / LW rule before capability */
	if (!flush) {
		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf,
				  FLUSH_G | (1u << 12), EINVAL);
		fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf,
				  FLUSH_P | RW, EINVAL);
	}
	fu_expect_reg_err(fu.pd, gone, fu.pg, (uintptr_t)gone, RW, EINVAL);
	fu_expect_reg_err(fu.pd, ro, fu.pg, (uintptr_t)ro, RA, EINVAL);
	fu_expect_reg_err(fu.pd, gone, fu.pg, (uintptr_t)gone, 1u << 31,
			  EINVAL);
	/* 4 capability before shape, length, overflow, mapping */
	if (!flush) {
		fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0x1000, ODP | FLUSH_G,
				  EOPNOTSUPP);
		fu_expect_reg_err(fu.pd, buf, 0, (uintptr_t)buf, FLUSH_G | LW,
				  EOPNOTSUPP);
		fu_expect_reg_err(fu.pd, wrap, fu.pg, (uintptr_t)wrap, FLUSH_G,
				  EOPNOTSUPP);
		fu_expect_reg_err(fu.pd, gone, fu.pg, (uintptr_t)gone, FLUSH_P,
				  EOPNOTSUPP);
		fu_expect_reg_err(fu.pd, ro, fu.pg, (uintptr_t)ro, FLUSH_P | LW,
				  EOPNOTSUPP);
	}
	/* 6 length and overflow before mapping */
	fu_expect_reg_err(fu.pd, NULL, 0, 0, LW, EINVAL);
	fu_expect_reg_err(fu.pd, gone, 0, (uintptr_t)gone, 0, EINVAL);
	fu_expect_reg_err(fu.pd, wrap, fu.pg, (uintptr_t)wrap, 0, EINVAL);
	fu_expect_reg_err(fu.pd, ro, 0, (uintptr_t)ro, LW, EINVAL);
	munmap(buf, 2 * fu.pg);
	munmap(ro, fu.pg);
	fu_done();
}

static void test_reg_mr_length_zero_einval(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);

	fu_expect_reg_err(fu.pd, buf, 0, (uintptr_t)buf, LW, EINVAL);
	fu_expect_reg_err(fu.pd, buf, 0, (uintptr_t)buf, 0, EINVAL);
	/* unaligned start: still EINVAL (CHOICE, like siw) */
	fu_expect_reg_err(fu.pd, buf + 100, 0, (uintptr_t)buf + 100, LW,
			  EINVAL);
	/* explicit ODP too */
	fu_expect_reg_err(fu.pd, buf, 0, (uintptr_t)buf, ODP | LW, EINVAL);
	fu_expect_reg_err(fu.pd, buf + 100, 0, (uintptr_t)buf + 100, ODP,
			  EINVAL);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_range_overflow_einval(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	void *near_end = (void *)(UINTPTR_MAX - 100);
	void *last_page = (void *)(UINTPTR_MAX - 4095);
	void *last_page_1 = (void *)(UINTPTR_MAX - 4094);

	/* addr + length wraps */
	fu_expect_reg_err(fu.pd, near_end, fu.pg, (uintptr_t)near_end, 0,
			  EINVAL);
	fu_expect_reg_err(fu.pd, last_page, 4096, (uintptr_t)last_page, 0,
			  EINVAL);
	fu_expect_reg_err(fu.pd, buf, SIZE_MAX, (uintptr_t)buf, 0, EINVAL);
	fu_expect_reg_err(fu.pd, buf, SIZE_MAX - 10, (uintptr_t)buf, LW,
			  EINVAL);
	/* addr + length fits, rounding the end up to a page wraps */
	fu_expect_reg_err(fu.pd, last_page_1, 4094, (uintptr_t)last_page_1, 0,
			  EINVAL);
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0, 0, EINVAL);
	/* explicit ODP gets the same arithmetic checks */
	fu_expect_reg_err(fu.pd, near_end, fu.pg, (uintptr_t)near_end, ODP,
			  EINVAL);
	fu_expect_reg_err(fu.pd, last_page_1, 4094, (uintptr_t)last_page_1,
			  ODP | LW, EINVAL);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_unmapped_range_efault(void **state)
{
	char *gone = fu_unmapped(4 * fu.pg);
	char *holed = fu_map_with_hole();

	fu_expect_reg_err(fu.pd, gone, fu.pg, (uintptr_t)gone, 0, EFAULT);
	fu_expect_reg_err(fu.pd, gone + 8, 3 * fu.pg, (uintptr_t)gone + 8,
			  LW | RW, EFAULT);
	fu_expect_reg_err(fu.pd, gone, fu.pg, (uintptr_t)gone, RR | RO, EFAULT);
	/* middle page missing */
	fu_expect_reg_err(fu.pd, holed, 3 * fu.pg, (uintptr_t)holed, 0, EFAULT);
	fu_expect_reg_err(fu.pd, holed + fu.pg - 1, 2,
			  (uintptr_t)holed + fu.pg - 1, LW, EFAULT);
	fu_expect_reg_err(fu.pd, holed + 2 * fu.pg - 1, 2,
			  (uintptr_t)holed + 2 * fu.pg - 1, RR, EFAULT);
	/* the mapped parts on either side register */
	fu_expect_reg_ok(fu.pd, holed, fu.pg, (uintptr_t)holed, LW);
	fu_expect_reg_ok(fu.pd, holed + 2 * fu.pg, fu.pg,
			 (uintptr_t)holed + 2 * fu.pg, LW | RW);
	munmap(holed, 3 * fu.pg);
	fu_done();
}

static void test_reg_mr_null_addr_efault(void **state)
{
	fu_expect_reg_err(fu.pd, NULL, fu.pg, 0, 0, EFAULT);
	fu_expect_reg_err(fu.pd, NULL, 1, 0, LW, EFAULT);
	fu_expect_reg_err(fu.pd, NULL, 16 * fu.pg, 0, LW | RW | RR, EFAULT);
	fu_done();
}

static void test_reg_mr_read_only_memory_writable_access_efault(void **state)
{
	char *ro = fu_map(2 * fu.pg, PROT_READ);
	char *mixed = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);

	/* "writable" = LW, RW, RA or MW_BIND */
	fu_expect_reg_err(fu.pd, ro, 2 * fu.pg, (uintptr_t)ro, LW, EFAULT);
	fu_expect_reg_err(fu.pd, ro, 2 * fu.pg, (uintptr_t)ro, LW | RW, EFAULT);
	fu_expect_reg_err(fu.pd, ro, 2 * fu.pg, (uintptr_t)ro, LW | RA, EFAULT);
	fu_expect_reg_err(fu.pd, ro, 2 * fu.pg, (uintptr_t)ro, MWB, EFAULT);
	fu_expect_reg_err(fu.pd, ro + 1, 10, (uintptr_t)ro + 1, LW | ZB,
			  EFAULT);
	/* read-only access is fine on read-only memory */
	fu_expect_reg_ok(fu.pd, ro, 2 * fu.pg, (uintptr_t)ro, 0);
	fu_expect_reg_ok(fu.pd, ro, 2 * fu.pg, (uintptr_t)ro, RR);
	fu_expect_reg_ok(fu.pd, ro, 2 * fu.pg, (uintptr_t)ro, RR | RO);
	fu_expect_reg_ok(fu.pd, ro + 1, 10, (uintptr_t)ro + 1, ZB | RR);
	fu_expect_reg_ok(fu.pd, ro, 2 * fu.pg, (uintptr_t)ro, HUGE);

	/* second page read-only: only ranges touching it need care */
	assert_int_equal(mprotect(mixed + fu.pg, fu.pg, PROT_READ), 0);
	fu_expect_reg_err(fu.pd, mixed, 2 * fu.pg, (uintptr_t)mixed, LW,
			  EFAULT);
	fu_expect_reg_err(fu.pd, mixed + fu.pg - 8, 16,
			  (uintptr_t)mixed + fu.pg - 8, LW | RW, EFAULT);
	fu_expect_reg_ok(fu.pd, mixed, fu.pg, (uintptr_t)mixed, LW | RW);
	fu_expect_reg_ok(fu.pd, mixed, 2 * fu.pg, (uintptr_t)mixed, RR);
	munmap(ro, 2 * fu.pg);
	munmap(mixed, 2 * fu.pg);
	fu_done();
}

static void test_reg_mr_optional_bits_accepted(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;
	unsigned int b;

	fu_expect_reg_ok(fu.pd, buf, fu.pg, (uintptr_t)buf, RO);
	fu_expect_reg_ok(fu.pd, buf, fu.pg, (uintptr_t)buf, RO | LW | RW);
	for (b = 21; b <= 29; b++) {
		fu_expect_reg_ok(fu.pd, buf, fu.pg, (uintptr_t)buf, 1u << b);
		fu_expect_reg_ok(fu.pd, buf, fu.pg, (uintptr_t)buf,
				 (1u << b) | LW | RR);
	}
	fu_expect_reg_ok(fu.pd, buf, fu.pg, (uintptr_t)buf,
			 IBV_ACCESS_OPTIONAL_RANGE | LW | RW);
	fu_expect_reg_ok(fu.pd, buf, fu.pg, 0x40000,
			 IBV_ACCESS_OPTIONAL_RANGE | LW);

	/* constant access with an optional bit: the macro picks iova2 */
	mr = ibv_reg_mr(fu.pd, buf, fu.pg,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	fu_expect(mr != NULL, "ibv_reg_mr(LW|RO constant) failed: %s",
		  fu_errname(errno));
	if (mr)
		assert_int_equal(ibv_dereg_mr(mr), 0);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_fields_filled(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *a, *b;

	a = ibv_reg_mr(fu.pd, buf + 3, 1000,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	b = ibv_reg_mr(fu.pd, buf, 2 * fu.pg, 0);
	assert_non_null(a);
	assert_non_null(b);
	fu_expect(a->context == fu.ctx, "mr->context %p, want %p",
		  (void *)a->context, (void *)fu.ctx);
	fu_expect(a->pd == fu.pd, "mr->pd %p, want %p", (void *)a->pd,
		  (void *)fu.pd);
	fu_expect(a->addr == buf + 3, "mr->addr %p, want %p", a->addr, buf + 3);
	fu_expect_int(a->length, 1000, "mr->length");
	fu_expect(a->lkey == a->rkey, "lkey %#x != rkey %#x", a->lkey, a->rkey);
	fu_expect(b->lkey == b->rkey, "access 0: lkey %#x != rkey %#x", b->lkey,
		  b->rkey);
	fu_expect(a->handle != b->handle, "two live MRs share handle %u",
		  a->handle);
	fu_expect(a->lkey != b->lkey, "two live MRs share key %#x", a->lkey);
	assert_int_equal(ibv_dereg_mr(a), 0);
	assert_int_equal(ibv_dereg_mr(b), 0);
	munmap(buf, 2 * fu.pg);
	fu_done();
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Live MRs: index never 0 (spec 1.3), and no two share an index (1.1). */
static void test_reg_mr_live_keys_distinct_nonzero_index(void **state)
{
	enum { N = 1000 };
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr **mrs = calloc(N, sizeof(*mrs));
	uint32_t *idx = calloc(N, sizeof(*idx));
	int i, zero = 0, dup = 0, neq = 0;

	assert_non_null(mrs);
	assert_non_null(idx);
	for (i = 0; i < N; i++) {
		mrs[i] = ibv_reg_mr(fu.pd, buf + (i % 64), 64,
				    i & 1 ? IBV_ACCESS_LOCAL_WRITE : 0);
		assert_non_null(mrs[i]);
		idx[i] = FU_KEY_INDEX(mrs[i]->lkey);
		zero += idx[i] == 0;
		neq += mrs[i]->lkey != mrs[i]->rkey;
	}
	qsort(idx, N, sizeof(*idx), cmp_u32);
	for (i = 1; i < N; i++)
		dup += idx[i] == idx[i - 1];
	fu_expect(zero == 0, "%d of %d keys have index 0", zero, N);
	fu_expect(dup == 0, "%d of %d live MRs share a key index", dup, N);
	fu_expect(neq == 0, "%d of %d MRs have lkey != rkey", neq, N);
	for (i = 0; i < N; i++)
		assert_int_equal(ibv_dereg_mr(mrs[i]), 0);
	free(mrs);
	free(idx);
	munmap(buf, fu.pg);
	fu_done();
}

/*
 * Spec 1.3: indices are reused as late as possible and a reused slot gets a
 * new tag, so a key of a deregistered MR is never handed out again soon.
 */
static void test_reg_mr_stale_keys_not_reissued(void **state)
{
	struct ibv_device_attr attr;
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	uint32_t *keys;
	int i, n, dup = 0, zero = 0;
	struct ibv_mr *mr;
	uint32_t first;

	assert_int_equal(ibv_query_device(fu.ctx, &attr), 0);
	n = attr.max_mr > 1001 ? 1000 : attr.max_mr - 1;
	assert_true(n > 1);
	keys = calloc(n, sizeof(*keys));
	assert_non_null(keys);

	mr = ibv_reg_mr(fu.pd, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	first = mr->lkey;
	assert_int_equal(ibv_dereg_mr(mr), 0);
	mr = ibv_reg_mr(fu.pd, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	fu_expect(mr->lkey != first,
		  "re-registration right after dereg reissued key %#x", first);
	assert_int_equal(ibv_dereg_mr(mr), 0);

	for (i = 0; i < n; i++) {
		mr = ibv_reg_mr(fu.pd, buf, fu.pg, 0);
		assert_non_null(mr);
		keys[i] = mr->lkey;
		zero += FU_KEY_INDEX(mr->lkey) == 0;
		assert_int_equal(ibv_dereg_mr(mr), 0);
	}
	qsort(keys, n, sizeof(*keys), cmp_u32);
	for (i = 1; i < n; i++)
		dup += keys[i] == keys[i - 1];
	fu_expect(dup == 0, "%d stale keys reissued in %d reg/dereg cycles",
		  dup, n);
	fu_expect(zero == 0, "%d keys with index 0", zero);
	free(keys);
	munmap(buf, fu.pg);
	fu_done();
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int c, n = 0;

	assert_non_null(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void reg_dereg_cycles(char *buf, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct ibv_mr *mr = ibv_reg_mr(fu.pd, buf, 4 * fu.pg,
					       i % 3 ? IBV_ACCESS_LOCAL_WRITE
						     : IBV_ACCESS_ON_DEMAND);

		assert_non_null(mr);
		assert_int_equal(ibv_dereg_mr(mr), 0);
	}
}

static void test_reg_mr_cycles_do_not_leak(void **state)
{
	char *buf = fu_map(4 * fu.pg, PROT_READ | PROT_WRITE);
	size_t heap0, heap1;
	int fds0, fds1, maps0, maps1;

	reg_dereg_cycles(buf, 200); /* warm up lazily built state */
	heap0 = mallinfo2().uordblks;
	fds0 = count_dir("/proc/self/fd");
	maps0 = count_lines("/proc/self/maps");

	reg_dereg_cycles(buf, 10000);

	heap1 = mallinfo2().uordblks;
	fds1 = count_dir("/proc/self/fd");
	maps1 = count_lines("/proc/self/maps");
	fu_expect(heap1 <= heap0 + 256 * 1024,
		  "heap grew by %zu bytes over 10000 reg/dereg cycles",
		  heap1 - heap0);
	fu_expect_int(fds1, fds0, "open fds after 10000 cycles");
	fu_expect(maps1 <= maps0 + 4,
		  "mappings grew from %d to %d over 10000 cycles", maps0,
		  maps1);
	munmap(buf, 4 * fu.pg);
	fu_done();
}

static void test_reg_mr_hugetlb_accepted_on_plain_mr(void **state)
{
	char *buf = fu_map(4 * fu.pg, PROT_READ | PROT_WRITE);

	fu_expect_reg_ok(fu.pd, buf, 4 * fu.pg, (uintptr_t)buf, HUGE);
	fu_expect_reg_ok(fu.pd, buf, 4 * fu.pg, (uintptr_t)buf,
			 HUGE | LW | RW | RR);
	fu_expect_reg_ok(fu.pd, buf + 8, 100, 0x8008, HUGE | LW);
	/* explicit ODP + HUGETLB is the documented combination */
	fu_expect_reg_ok(fu.pd, buf, 4 * fu.pg, (uintptr_t)buf,
			 HUGE | ODP | LW);
	munmap(buf, 4 * fu.pg);
	fu_done();
}

static void test_reg_mr_implicit_odp_covers_address_space(void **state)
{
	static const unsigned int acc[] = {
		ODP,
		ODP | LW,
		ODP | LW | RW | RR | RA,
		ODP | RR | RO,
	};
	size_t i;
	int e;

	for (i = 0; i < sizeof(acc) / sizeof(acc[0]); i++) {
		for (e = 0; e < FU_N_ENTRY; e++) {
			struct ibv_mr *mr;

			errno = 0;
			mr = fu_reg_via(e, fu.pd, NULL, SIZE_MAX, 0, acc[i]);
			fu_expect(mr != NULL,
				  "%s implicit ODP access %#x failed: %s",
				  fu_entry_name[e], acc[i], fu_errname(errno));
			if (!mr)
				continue;
			fu_expect(mr->addr == NULL && mr->length == SIZE_MAX,
				  "implicit ODP mr addr %p length %#zx, want "
				  "NULL, SIZE_MAX",
				  mr->addr, mr->length);
			fu_expect(mr->lkey == mr->rkey &&
					  FU_KEY_INDEX(mr->lkey) != 0,
				  "implicit ODP keys lkey %#x rkey %#x",
				  mr->lkey, mr->rkey);
			fu_expect(mr->pd == fu.pd && mr->context == fu.ctx,
				  "implicit ODP mr pd/context not filled");
			assert_int_equal(ibv_dereg_mr(mr), 0);
		}
	}
	fu_done();
}

static void test_reg_mr_implicit_odp_shape_einval(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);

	/* SIZE_MAX with a non-NULL address */
	fu_expect_reg_err(fu.pd, buf, SIZE_MAX, (uintptr_t)buf, ODP, EINVAL);
	fu_expect_reg_err(fu.pd, (void *)(uintptr_t)fu.pg, SIZE_MAX, fu.pg,
			  ODP | LW, EINVAL);
	/* implicit with iova != 0 */
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0x1000, ODP, EINVAL);
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0x7f0000000000ULL, ODP | LW,
			  EINVAL);
	/* implicit + ZERO_BASED / HUGETLB */
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0, ODP | ZB, EINVAL);
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0, ODP | LW | ZB, EINVAL);
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0, ODP | HUGE, EINVAL);
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0, ODP | LW | HUGE, EINVAL);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_explicit_odp_skips_mapping_check(void **state)
{
	char *gone = fu_unmapped(8 * fu.pg);
	char *holed = fu_map_with_hole();
	char *ro = fu_map(fu.pg, PROT_READ);

	fu_expect_reg_ok(fu.pd, gone, 8 * fu.pg, (uintptr_t)gone, ODP);
	fu_expect_reg_ok(fu.pd, gone + 5, 100, (uintptr_t)gone + 5,
			 ODP | LW | RW | RR | RA);
	fu_expect_reg_ok(fu.pd, holed, 3 * fu.pg, (uintptr_t)holed, ODP | LW);
	fu_expect_reg_ok(fu.pd, ro, fu.pg, (uintptr_t)ro, ODP | LW | RW);
	fu_expect_reg_ok(fu.pd, gone, fu.pg, 0x3000, ODP | LW);
	fu_expect_reg_ok(fu.pd, gone + 1, fu.pg, 0x3000, ODP | ZB | LW);
	munmap(holed, 3 * fu.pg);
	munmap(ro, fu.pg);
	fu_done();
}

static void test_reg_mr_dereg_not_live_einval(void **state)
{
	struct ibv_mr *fake = fu_fake_object(fu.ctx);
	int ret;

	ret = ibv_dereg_mr(fake);
	fu_expect(ret == EINVAL, "ibv_dereg_mr(fake MR) gave %s, want EINVAL",
		  fu_errname(ret));
	ret = ibv_dereg_mr(NULL);
	fu_expect(ret == EINVAL, "ibv_dereg_mr(NULL) gave %s, want EINVAL",
		  fu_errname(ret));
	fu_done();
}

/* Spec 2.3 step 9: more than max_mr live MRs -> ENOMEM. */
static void test_reg_mr_more_than_max_mr_enomem(void **state)
{
	struct ibv_device_attr attr;
	struct ibv_mr **mrs, *extra;
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	int i, n;

	assert_int_equal(ibv_query_device(fu.ctx, &attr), 0);
	if (attr.max_mr <= 0 || attr.max_mr > (1 << 21))
		skip();
	n = attr.max_mr;
	mrs = calloc(n, sizeof(*mrs));
	assert_non_null(mrs);
	/* explicit ODP: no mapping check, so this stays fast */
	for (i = 0; i < n; i++) {
		mrs[i] = ibv_reg_mr(fu.pd, buf, 4096, IBV_ACCESS_ON_DEMAND);
		if (!mrs[i])
			break;
	}
	fu_expect(i == n, "only %d of max_mr %d MRs registered (%s)", i, n,
		  fu_errname(errno));
	if (i == n) {
		errno = 0;
		extra = ibv_reg_mr(fu.pd, buf, 4096, IBV_ACCESS_ON_DEMAND);
		fu_expect(extra == NULL && errno == ENOMEM,
			  "MR number max_mr+1: %s, want ENOMEM",
			  extra ? "succeeded" : fu_errname(errno));
		if (extra)
			ibv_dereg_mr(extra);
	}
	while (i-- > 0)
		assert_int_equal(ibv_dereg_mr(mrs[i]), 0);
	free(mrs);
	/* and the table is usable again */
	extra = ibv_reg_mr(fu.pd, buf, 4096, IBV_ACCESS_ON_DEMAND);
	fu_expect(extra != NULL, "registration after freeing all MRs: %s",
		  fu_errname(errno));
	if (extra)
		ibv_dereg_mr(extra);
	munmap(buf, fu.pg);
	fu_done();
}

/*
 * Spec 2.10, as rdma-core 44 answers (test_fork_init.c has the details):
 * a non-ODP registration before ibv_fork_init() makes it too late
 * (EINVAL) unless the kernel reports copy-on-fork (UNNEEDED). Nothing is
 * pinned, so registered memory is never madvise(MADV_DONTFORK)ed: a child
 * can still use it.
 */
static void test_reg_mr_fork_unneeded_memory_stays_inherited(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	enum ibv_fork_status st0 = ibv_is_fork_initialized();
	struct ibv_mr *mr, *odp;
	int status = -1;
	pid_t pid;

	mr = ibv_reg_mr(fu.pd, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	odp = ibv_reg_mr(fu.pd, buf + fu.pg, fu.pg,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	assert_non_null(mr);
	assert_non_null(odp);
	fu_expect_int(ibv_fork_init(), st0 == IBV_FORK_DISABLED ? EINVAL : 0,
		      "ibv_fork_init after registration");
	fu_expect_int(ibv_is_fork_initialized(), st0,
		      "ibv_is_fork_initialized after ibv_fork_init");
	buf[0] = 'p';
	buf[fu.pg] = 'q';
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* faults here if the range was MADV_DONTFORK'ed */
		int ok = buf[0] == 'p' && buf[fu.pg] == 'q';

		buf[1] = 'c';
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	fu_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child could not use registered memory (status %#x)", status);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dereg_mr(odp), 0);
	munmap(buf, 2 * fu.pg);
	fu_done();
}

enum { N_THREADS = 4, PER_THREAD = 250 };

struct reg_thread {
	pthread_barrier_t *barrier;
	char *buf;
	struct ibv_mr *mr[PER_THREAD];
	int failed;
};

static void *reg_thread_main(void *arg)
{
	struct reg_thread *t = arg;
	int i, round;

	pthread_barrier_wait(t->barrier);
	/* churn first, so allocation and release race with each other */
	for (round = 0; round < 4; round++) {
		for (i = 0; i < PER_THREAD; i++) {
			t->mr[i] = ibv_reg_mr(fu.pd, t->buf, fu.pg,
					      IBV_ACCESS_LOCAL_WRITE);
			if (!t->mr[i]) {
				t->failed++;
				return NULL;
			}
		}
		if (round == 3)
			break;
		for (i = 0; i < PER_THREAD; i++)
			t->failed += ibv_dereg_mr(t->mr[i]) != 0;
	}
	return NULL;
}

static void test_reg_mr_concurrent_registration_distinct_keys(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	pthread_barrier_t barrier;
	struct reg_thread t[N_THREADS];
	pthread_t tid[N_THREADS];
	uint32_t idx[N_THREADS * PER_THREAD];
	int i, j, n = 0, dup = 0, failed = 0;

	pthread_barrier_init(&barrier, NULL, N_THREADS);
	memset(t, 0, sizeof(t));
	for (i = 0; i < N_THREADS; i++) {
		t[i].barrier = &barrier;
		t[i].buf = buf;
		assert_int_equal(
			pthread_create(&tid[i], NULL, reg_thread_main, &t[i]),
			0);
	}
	for (i = 0; i < N_THREADS; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < N_THREADS; i++) {
		failed += t[i].failed;
		for (j = 0; j < PER_THREAD && t[i].mr[j]; j++)
			idx[n++] = FU_KEY_INDEX(t[i].mr[j]->lkey);
	}
	fu_expect(failed == 0, "%d concurrent reg/dereg calls failed", failed);
	qsort(idx, n, sizeof(idx[0]), cmp_u32);
	for (i = 1; i < n; i++)
		dup += idx[i] == idx[i - 1];
	fu_expect(dup == 0,
		  "%d of %d concurrently registered MRs share a key "
		  "index",
		  dup, n);
	for (i = 0; i < N_THREADS; i++)
		for (j = 0; j < PER_THREAD && t[i].mr[j]; j++)
			fu_expect_int(ibv_dereg_mr(t[i].mr[j]), 0, "dereg");
	pthread_barrier_destroy(&barrier);
	munmap(buf, fu.pg);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_reg_mr_pd_null_einval),
		FU_TEST(test_reg_mr_pd_not_live_einval),
		FU_TEST(test_reg_mr_iova_page_offset_mismatch_einval),
		FU_TEST(test_reg_mr_zero_based_lifts_page_offset_rule),
		FU_TEST(test_reg_mr_zero_based_keeps_user_addr),
		FU_TEST(test_reg_mr_undefined_access_bits_einval),
		FU_TEST(test_reg_mr_remote_write_or_atomic_needs_local_write),
		FU_TEST(test_reg_mr_access_flag_table_accepts),
		FU_TEST(test_reg_mr_flush_bits_eopnotsupp),
		FU_TEST(test_reg_mr_first_failing_check_sets_errno),
		FU_TEST(test_reg_mr_length_zero_einval),
		FU_TEST(test_reg_mr_range_overflow_einval),
		FU_TEST(test_reg_mr_unmapped_range_efault),
		FU_TEST(test_reg_mr_null_addr_efault),
		FU_TEST(test_reg_mr_read_only_memory_writable_access_efault),
		FU_TEST(test_reg_mr_optional_bits_accepted),
		FU_TEST(test_reg_mr_fields_filled),
		FU_TEST(test_reg_mr_live_keys_distinct_nonzero_index),
		FU_TEST(test_reg_mr_stale_keys_not_reissued),
		FU_TEST(test_reg_mr_cycles_do_not_leak),
		FU_TEST(test_reg_mr_hugetlb_accepted_on_plain_mr),
		FU_TEST(test_reg_mr_implicit_odp_covers_address_space),
		FU_TEST(test_reg_mr_implicit_odp_shape_einval),
		FU_TEST(test_reg_mr_explicit_odp_skips_mapping_check),
		FU_TEST(test_reg_mr_dereg_not_live_einval),
		FU_TEST(test_reg_mr_more_than_max_mr_enomem),
		FU_TEST(test_reg_mr_fork_unneeded_memory_stays_inherited),
		FU_TEST(test_reg_mr_concurrent_registration_distinct_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
