// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rereg.c - ibv_rereg_mr (docs verbs-semantics.md 3, and 6 for the PD
 * reference).
 *
 * Library-level input errors return IBV_REREG_MR_ERR_INPUT with errno
 * EINVAL; device-level errors return IBV_REREG_MR_ERR_CMD with the errno
 * of the failed check. Whatever fails, the MR must be exactly as before:
 * same fields, same keys, same PD reference, still deregisterable. Success
 * updates mr->pd / addr / length and keeps the keys (spec CHOICE). An MR
 * with bound windows (EBUSY) needs a QP to bind and is not covered here.
 *
 * SRDMA_DMABUF_MEMFD=1 is set before the device is opened so a memfd can
 * stand in for a dma-buf when checking that dma-buf MRs are refused.
 */
#include "func_util.h"

#define LW  IBV_ACCESS_LOCAL_WRITE
#define RW  IBV_ACCESS_REMOTE_WRITE
#define RR  IBV_ACCESS_REMOTE_READ
#define RA  IBV_ACCESS_REMOTE_ATOMIC
#define ODP IBV_ACCESS_ON_DEMAND

#define TRANS IBV_REREG_MR_CHANGE_TRANSLATION
#define CPD   IBV_REREG_MR_CHANGE_PD
#define CACC  IBV_REREG_MR_CHANGE_ACCESS

struct mr_snap {
	struct ibv_context *context;
	struct ibv_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey, rkey, handle;
};

static struct mr_snap snap(const struct ibv_mr *mr)
{
	struct mr_snap s;

	memset(&s, 0, sizeof(s)); /* padding too: snapshots are memcmp'd */
	s.context = mr->context;
	s.pd = mr->pd;
	s.addr = mr->addr;
	s.length = mr->length;
	s.lkey = mr->lkey;
	s.rkey = mr->rkey;
	s.handle = mr->handle;
	return s;
}

#define expect_unchanged(mr, before)                                           \
	do {                                                                   \
		struct mr_snap a_ = snap(mr);                                  \
		fu_expect(!memcmp(&a_, &(before), sizeof(a_)),                 \
			  "MR changed by a failed rereg: pd %p->%p addr "      \
			  "%p->%p len %#zx->%#zx lkey %#x->%#x rkey "          \
			  "%#x->%#x",                                          \
			  (void *)(before).pd, (void *)a_.pd, (before).addr,   \
			  a_.addr, (before).length, a_.length, (before).lkey,  \
			  a_.lkey, (before).rkey, a_.rkey);                    \
	} while (0)

/* Expect a failed rereg with @ret/@err that leaves @mr untouched. */
#define expect_rereg_fail(mr, flags, pd, addr, len, access, ret, err)          \
	do {                                                                   \
		struct mr_snap b_ = snap(mr);                                  \
		int r_, e_;                                                    \
		errno = 0;                                                     \
		r_ = ibv_rereg_mr(mr, flags, pd, addr, len, access);           \
		e_ = errno;                                                    \
		fu_expect(r_ == (ret) && e_ == (err),                          \
			  "rereg(flags %#x, access %#x) gave %d/%s, want "     \
			  "%d/%s",                                             \
			  (unsigned int)(flags), (unsigned int)(access), r_,   \
			  fu_errname(e_), (int)(ret), fu_errname(err));        \
		expect_unchanged(mr, b_);                                      \
	} while (0)

#define INPUT IBV_REREG_MR_ERR_INPUT
#define CMD   IBV_REREG_MR_ERR_CMD

static char *buf, *buf2, *ro;

static int rereg_setup(void **state)
{
	fu_setup(state);
	buf = fu_map(4 * fu.pg, PROT_READ | PROT_WRITE);
	buf2 = fu_map(4 * fu.pg, PROT_READ | PROT_WRITE);
	ro = fu_map(2 * fu.pg, PROT_READ);
	return 0;
}

static int rereg_teardown(void **state)
{
	munmap(buf, 4 * fu.pg);
	munmap(buf2, 4 * fu.pg);
	munmap(ro, 2 * fu.pg);
	return fu_teardown(state);
}

#define RR_TEST(t)                                                             \
	cmocka_unit_test_setup_teardown(t, rereg_setup, rereg_teardown)

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len,
			  unsigned int access)
{
	struct ibv_mr *mr =
		ibv_reg_mr_iova2(pd, addr, len, (uintptr_t)addr, access);

	assert_non_null(mr);
	return mr;
}

static void test_rereg_input_errors_return_err_input(void **state)
{
	struct ibv_mr *mr = reg(fu.pd, buf, fu.pg, LW);
	struct ibv_pd *pd2 = ibv_alloc_pd(fu.ctx);

	assert_non_null(pd2);
	/* unknown flag bits */
	expect_rereg_fail(mr, 1 << 3, NULL, NULL, 0, 0, INPUT, EINVAL);
	expect_rereg_fail(mr, CPD | (1 << 3), pd2, NULL, 0, 0, INPUT, EINVAL);
	expect_rereg_fail(mr, (int)(1u << 31), NULL, NULL, 0, 0, INPUT, EINVAL);
	/* CHANGE_TRANSLATION with no address or no length */
	expect_rereg_fail(mr, TRANS, NULL, NULL, fu.pg, 0, INPUT, EINVAL);
	expect_rereg_fail(mr, TRANS, NULL, buf2, 0, 0, INPUT, EINVAL);
	expect_rereg_fail(mr, TRANS | CACC, NULL, buf2, 0, LW, INPUT, EINVAL);
	/* access without CHANGE_ACCESS */
	expect_rereg_fail(mr, CPD, pd2, NULL, 0, LW, INPUT, EINVAL);
	expect_rereg_fail(mr, TRANS, NULL, buf2, fu.pg, LW | RW, INPUT, EINVAL);
	/* no flags at all (spec CHOICE) */
	expect_rereg_fail(mr, 0, NULL, NULL, 0, 0, INPUT, EINVAL);
	/* input errors win over device errors */
	expect_rereg_fail(mr, CPD | (1 << 4), NULL, NULL, 0, 0, INPUT, EINVAL);
	expect_rereg_fail(mr, CPD, NULL, NULL, 0, RW, INPUT, EINVAL);

	fu_expect_int(ibv_dealloc_pd(pd2), 0, "pd2 untouched by failed rereg");
	fu_expect_int(ibv_dealloc_pd(fu.pd), EBUSY, "MR still pins its PD");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg after failed rereg");
	fu_done();
}

static void test_rereg_dmabuf_mr_err_input(void **state)
{
	int fd = memfd_create("rereg", 0);
	struct ibv_mr *mr;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4 * fu.pg), 0);
	mr = ibv_reg_dmabuf_mr(fu.pd, 0, 2 * fu.pg, 0, fd, LW);
	if (!mr) {
		close(fd);
		fail_msg("dma-buf MR on a memfd with SRDMA_DMABUF_MEMFD=1: %s",
			 fu_errname(errno));
	}
	expect_rereg_fail(mr, CACC, NULL, NULL, 0, LW | RW, INPUT, EINVAL);
	expect_rereg_fail(mr, TRANS, NULL, buf, fu.pg, 0, INPUT, EINVAL);
	expect_rereg_fail(mr, CPD, fu.pd, NULL, 0, 0, INPUT, EINVAL);
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg dma-buf MR");
	close(fd);
	fu_done();
}

static void test_rereg_change_pd_to_bad_pd_einval(void **state)
{
	struct ibv_mr *mr = reg(fu.pd, buf, fu.pg, LW | RW);
	struct ibv_context *ctx2 = fu_open_srdma();
	struct ibv_pd *other = ibv_alloc_pd(ctx2);

	assert_non_null(other);
	expect_rereg_fail(mr, CPD, NULL, NULL, 0, 0, CMD, EINVAL);
	expect_rereg_fail(mr, CPD, fu_fake_object(fu.ctx), NULL, 0, 0, CMD,
			  EINVAL);
	/* a live PD, but of another context */
	expect_rereg_fail(mr, CPD, other, NULL, 0, 0, CMD, EINVAL);
	fu_expect_int(ibv_dealloc_pd(other), 0, "other ctx PD not pinned");
	ibv_close_device(ctx2);
	fu_expect_int(ibv_dealloc_pd(fu.pd), EBUSY, "MR still pins its PD");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg after failed rereg");
	fu_done();
}

static void test_rereg_change_translation_checks_new_range(void **state)
{
	char *gone = fu_unmapped(2 * fu.pg);
	char *holed = fu_map_with_hole();
	struct ibv_mr *mr = reg(fu.pd, buf, fu.pg, LW);
	struct ibv_mr *mr0 = reg(fu.pd, buf, fu.pg, 0);

	expect_rereg_fail(mr, TRANS, NULL, gone, fu.pg, 0, CMD, EFAULT);
	expect_rereg_fail(mr, TRANS, NULL, holed, 3 * fu.pg, 0, CMD, EFAULT);
	expect_rereg_fail(mr0, TRANS, NULL, gone, fu.pg, 0, CMD, EFAULT);
	/* LW MR onto read-only memory */
	expect_rereg_fail(mr, TRANS, NULL, ro, fu.pg, 0, CMD, EFAULT);
	/* new access checked against the new range */
	expect_rereg_fail(mr0, TRANS | CACC, NULL, ro, fu.pg, LW, CMD, EFAULT);
	/* arithmetic */
	expect_rereg_fail(mr, TRANS, NULL, (void *)(UINTPTR_MAX - 100), fu.pg,
			  0, CMD, EINVAL);
	expect_rereg_fail(mr, TRANS, NULL, buf, SIZE_MAX, 0, CMD, EINVAL);
	expect_rereg_fail(mr, TRANS, NULL, (void *)(UINTPTR_MAX - 4094), 4094,
			  0, CMD, EINVAL);
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg after failed rereg");
	fu_expect_int(ibv_dereg_mr(mr0), 0, "dereg after failed rereg");
	munmap(holed, 3 * fu.pg);
	fu_done();
}

static void test_rereg_change_access_bad_flags(void **state)
{
	struct ibv_mr *mr = reg(fu.pd, buf, fu.pg, LW);

	expect_rereg_fail(mr, CACC, NULL, NULL, 0, RW, CMD, EINVAL);
	expect_rereg_fail(mr, CACC, NULL, NULL, 0, RA | RR, CMD, EINVAL);
	expect_rereg_fail(mr, CACC, NULL, NULL, 0, LW | (1u << 12), CMD,
			  EINVAL);
	expect_rereg_fail(mr, CACC, NULL, NULL, 0, LW | (1u << 31), CMD,
			  EINVAL);
	expect_rereg_fail(mr, CACC, NULL, NULL, 0, LW | IBV_ACCESS_FLUSH_GLOBAL,
			  CMD, EOPNOTSUPP);
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg after failed rereg");
	fu_done();
}

static void test_rereg_toggling_on_demand_einval(void **state)
{
	struct ibv_mr *mr = reg(fu.pd, buf, fu.pg, LW);
	struct ibv_mr *odp = reg(fu.pd, buf, fu.pg, ODP | LW);

	expect_rereg_fail(mr, CACC, NULL, NULL, 0, ODP | LW, CMD, EINVAL);
	expect_rereg_fail(odp, CACC, NULL, NULL, 0, LW, CMD, EINVAL);
	expect_rereg_fail(odp, CACC, NULL, NULL, 0, LW | RW, CMD, EINVAL);
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg after failed rereg");
	fu_expect_int(ibv_dereg_mr(odp), 0, "dereg after failed rereg");
	fu_done();
}

/* Kernel ib_umem_check_rereg: a read-only registration can't gain write. */
static void test_rereg_adding_write_to_read_only_mr_eacces(void **state)
{
	static const unsigned int ro_acc[] = {0, RR};
	static const unsigned int wr_acc[] = {
		LW, LW | RW, LW | RA, IBV_ACCESS_MW_BIND, RR | LW,
	};
	size_t i, j;

	for (i = 0; i < 2; i++) {
		/* registered on read-only memory */
		struct ibv_mr *mr = reg(fu.pd, ro, fu.pg, ro_acc[i]);
		/* registered read-only on writable memory */
		struct ibv_mr *mw = reg(fu.pd, buf, fu.pg, ro_acc[i]);

		for (j = 0; j < sizeof(wr_acc) / sizeof(wr_acc[0]); j++) {
			expect_rereg_fail(mr, CACC, NULL, NULL, 0, wr_acc[j],
					  CMD, EACCES);
			expect_rereg_fail(mw, CACC, NULL, NULL, 0, wr_acc[j],
					  CMD, EACCES);
		}
		fu_expect_int(ibv_dereg_mr(mr), 0, "dereg after failed rereg");
		fu_expect_int(ibv_dereg_mr(mw), 0, "dereg after failed rereg");
	}
	fu_done();
}

static void test_rereg_implicit_odp_translation_eopnotsupp(void **state)
{
	struct ibv_mr *imr = reg(fu.pd, NULL, SIZE_MAX, ODP | LW);
	int ret;

	expect_rereg_fail(imr, TRANS, NULL, buf, fu.pg, 0, CMD, EOPNOTSUPP);
	/* access may change as long as ON_DEMAND stays */
	ret = ibv_rereg_mr(imr, CACC, NULL, NULL, 0, ODP | LW | RW | RR);
	fu_expect(ret == 0, "implicit ODP CHANGE_ACCESS gave %d/%s", ret,
		  fu_errname(errno));
	fu_expect(imr->addr == NULL && imr->length == SIZE_MAX,
		  "implicit MR now addr %p len %#zx", imr->addr, imr->length);
	fu_expect_int(ibv_dereg_mr(imr), 0, "dereg implicit MR");
	fu_done();
}

/* A failing combined rereg applies none of its parts. */
static void test_rereg_combined_failure_applies_nothing(void **state)
{
	struct ibv_mr *mr = reg(fu.pd, buf, fu.pg, LW);
	struct ibv_pd *pd2 = ibv_alloc_pd(fu.ctx);
	char *gone = fu_unmapped(fu.pg);

	assert_non_null(pd2);
	expect_rereg_fail(mr, CPD | CACC, pd2, NULL, 0, RW, CMD, EINVAL);
	expect_rereg_fail(mr, CPD | TRANS, pd2, gone, fu.pg, 0, CMD, EFAULT);
	expect_rereg_fail(mr, CPD | TRANS | CACC, pd2, buf2, fu.pg,
			  LW | (1u << 15), CMD, EINVAL);
	expect_rereg_fail(mr, TRANS | CACC, NULL, buf2, fu.pg,
			  LW | IBV_ACCESS_FLUSH_PERSISTENT, CMD, EOPNOTSUPP);
	fu_expect_int(ibv_dealloc_pd(pd2), 0,
		      "pd2 gained a reference from a failed rereg");
	fu_expect_int(ibv_dealloc_pd(fu.pd), EBUSY, "MR still pins its PD");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg after failed rereg");
	fu_done();
}

static void test_rereg_success_updates_fields_keeps_keys(void **state)
{
	struct ibv_mr *mr = reg(fu.pd, buf, fu.pg, LW);
	struct ibv_pd *pd2 = ibv_alloc_pd(fu.ctx);
	uint32_t key = mr->lkey;
	int ret;

	assert_non_null(pd2);
	ret = ibv_rereg_mr(mr, CACC, NULL, NULL, 0, LW | RW | RR | RA);
	fu_expect(ret == 0, "CHANGE_ACCESS gave %d/%s", ret, fu_errname(errno));
	fu_expect(mr->lkey == key && mr->rkey == key,
		  "keys %#x/%#x after CHANGE_ACCESS, want %#x", mr->lkey,
		  mr->rkey, key);

	/* RELAXED_ORDERING and the other optional bits are accepted too */
	ret = ibv_rereg_mr(mr, CACC, NULL, NULL, 0,
			   LW | RW | RR | RA | IBV_ACCESS_RELAXED_ORDERING |
				   (1 << 25));
	fu_expect(ret == 0, "CHANGE_ACCESS with optional bits gave %d/%s", ret,
		  fu_errname(errno));

	ret = ibv_rereg_mr(mr, TRANS, NULL, buf2 + 16, 2 * fu.pg, 0);
	fu_expect(ret == 0, "CHANGE_TRANSLATION gave %d/%s", ret,
		  fu_errname(errno));
	fu_expect(mr->addr == buf2 + 16 && mr->length == 2 * fu.pg,
		  "after CHANGE_TRANSLATION addr %p len %#zx, want %p %#zx",
		  mr->addr, mr->length, buf2 + 16, 2 * fu.pg);
	fu_expect(mr->lkey == key && mr->rkey == key,
		  "keys %#x/%#x after CHANGE_TRANSLATION, want %#x", mr->lkey,
		  mr->rkey, key);

	ret = ibv_rereg_mr(mr, CPD, pd2, NULL, 0, 0);
	fu_expect(ret == 0, "CHANGE_PD gave %d/%s", ret, fu_errname(errno));
	fu_expect(mr->pd == pd2, "after CHANGE_PD mr->pd %p, want %p",
		  (void *)mr->pd, (void *)pd2);
	fu_expect(mr->lkey == key && mr->rkey == key,
		  "keys %#x/%#x after CHANGE_PD, want %#x", mr->lkey, mr->rkey,
		  key);

	ret = ibv_rereg_mr(mr, TRANS | CPD | CACC, fu.pd, buf, fu.pg, RR);
	fu_expect(ret == 0, "all three flags gave %d/%s", ret,
		  fu_errname(errno));
	fu_expect(mr->pd == fu.pd && mr->addr == buf && mr->length == fu.pg,
		  "after all three flags pd %p addr %p len %#zx",
		  (void *)mr->pd, mr->addr, mr->length);
	fu_expect(mr->context == fu.ctx, "mr->context changed");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg rereg'd MR");
	fu_expect_int(ibv_dealloc_pd(pd2), 0, "dealloc pd2");
	fu_done();
}

static void test_rereg_translation_with_access_grants_write(void **state)
{
	struct ibv_mr *mr = reg(fu.pd, ro, fu.pg, RR);
	int ret;

	/* new writable memory validated together with the new access */
	ret = ibv_rereg_mr(mr, TRANS | CACC, NULL, buf, fu.pg, LW | RW | RR);
	fu_expect(ret == 0, "TRANSLATION|ACCESS to writable memory: %d/%s", ret,
		  fu_errname(errno));
	/* and a read-only MR may move onto read-only memory */
	ret = ibv_rereg_mr(mr, TRANS | CACC, NULL, ro + 8, 100, 0);
	fu_expect(ret == 0, "TRANSLATION|ACCESS 0 to read-only memory: %d/%s",
		  ret, fu_errname(errno));
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg rereg'd MR");
	fu_done();
}

static void test_rereg_explicit_odp_translation_skips_mapping(void **state)
{
	struct ibv_mr *mr = reg(fu.pd, buf, fu.pg, ODP | LW);
	char *gone = fu_unmapped(4 * fu.pg);
	int ret;

	ret = ibv_rereg_mr(mr, TRANS, NULL, gone, 4 * fu.pg, 0);
	fu_expect(ret == 0, "ODP CHANGE_TRANSLATION to unmapped: %d/%s", ret,
		  fu_errname(errno));
	ret = ibv_rereg_mr(mr, CACC, NULL, NULL, 0, ODP | LW | RW);
	fu_expect(ret == 0, "ODP CHANGE_ACCESS keeping ON_DEMAND: %d/%s", ret,
		  fu_errname(errno));
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg ODP MR");
	fu_done();
}

static void test_rereg_change_pd_moves_pd_reference(void **state)
{
	struct ibv_pd *pd1 = ibv_alloc_pd(fu.ctx);
	struct ibv_pd *pd2 = ibv_alloc_pd(fu.ctx);
	struct ibv_mr *mr;
	int ret;

	assert_non_null(pd1);
	assert_non_null(pd2);
	mr = reg(pd1, buf, fu.pg, LW);
	ret = ibv_rereg_mr(mr, CPD, pd2, NULL, 0, 0);
	fu_expect(ret == 0, "CHANGE_PD gave %d/%s", ret, fu_errname(errno));
	fu_expect_int(ibv_dealloc_pd(pd1), 0, "dealloc the PD the MR left");
	fu_expect_int(ibv_dealloc_pd(pd2), EBUSY,
		      "dealloc the PD the MR moved to");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg moved MR");
	fu_expect_int(ibv_dealloc_pd(pd2), 0, "dealloc pd2 after dereg");
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		RR_TEST(test_rereg_input_errors_return_err_input),
		RR_TEST(test_rereg_dmabuf_mr_err_input),
		RR_TEST(test_rereg_change_pd_to_bad_pd_einval),
		RR_TEST(test_rereg_change_translation_checks_new_range),
		RR_TEST(test_rereg_change_access_bad_flags),
		RR_TEST(test_rereg_toggling_on_demand_einval),
		RR_TEST(test_rereg_adding_write_to_read_only_mr_eacces),
		RR_TEST(test_rereg_implicit_odp_translation_eopnotsupp),
		RR_TEST(test_rereg_combined_failure_applies_nothing),
		RR_TEST(test_rereg_success_updates_fields_keeps_keys),
		RR_TEST(test_rereg_translation_with_access_grants_write),
		RR_TEST(test_rereg_explicit_odp_translation_skips_mapping),
		RR_TEST(test_rereg_change_pd_moves_pd_reference),
	};

	setenv("SRDMA_DMABUF_MEMFD", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
