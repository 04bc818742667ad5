// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_dmabuf_memfd.c - ibv_reg_dmabuf_mr with the SRDMA_DMABUF_MEMFD=1
 * test aid, which lets a memfd stand in for a dma-buf (docs
 * verbs-semantics.md 2.8).
 *
 * The variable is set before the device is opened. With it, the size and
 * mapping steps of dma-buf registration become testable: the MR fields
 * (mr->addr is the offset), offset + length against the buffer size, and
 * that the flag whitelist still applies to an acceptable fd. Kept apart
 * from test_dmabuf.c so each process sees one configuration.
 */
#include <fcntl.h>

#include "func_util.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW IBV_ACCESS_REMOTE_WRITE
#define RR IBV_ACCESS_REMOTE_READ
#define RA IBV_ACCESS_REMOTE_ATOMIC

static int mfd = -1;

static int memfd_setup(void **state)
{
	fu_setup(state);
	mfd = memfd_create("srdma-dmabuf", 0);
	assert_true(mfd >= 0);
	assert_int_equal(ftruncate(mfd, (off_t)(8 * fu.pg)), 0);
	return 0;
}

static int memfd_teardown(void **state)
{
	close(mfd);
	mfd = -1;
	return fu_teardown(state);
}

#define MFD_TEST(t)                                                            \
	cmocka_unit_test_setup_teardown(t, memfd_setup, memfd_teardown)

#define expect_dmabuf_ok(off, len, iova, access)                               \
	do {                                                                   \
		struct ibv_mr *m_;                                             \
		errno = 0;                                                     \
		m_ = ibv_reg_dmabuf_mr(fu.pd, off, len, iova, mfd,             \
				       (int)(access));                         \
		fu_expect(m_ != NULL,                                          \
			  "reg_dmabuf_mr(memfd, off %#" PRIx64 " len %#zx "    \
			  "iova %#" PRIx64 " access %#x): %s",                 \
			  (uint64_t)(off), (size_t)(len), (uint64_t)(iova),    \
			  (unsigned int)(access), fu_errname(errno));          \
		if (m_) {                                                      \
			fu_expect(                                             \
				m_->addr == (void *)(uintptr_t)(off) &&        \
					m_->length == (size_t)(len),           \
				"dma-buf mr addr %p len %#zx, want %#" PRIx64  \
				" %#zx",                                       \
				m_->addr, m_->length, (uint64_t)(off),         \
				(size_t)(len));                                \
			fu_expect(m_->pd == fu.pd && m_->context == fu.ctx,    \
				  "dma-buf mr pd/context not filled");         \
			fu_expect(m_->lkey == m_->rkey &&                      \
					  FU_KEY_INDEX(m_->lkey) != 0,         \
				  "dma-buf keys lkey %#x rkey %#x", m_->lkey,  \
				  m_->rkey);                                   \
			fu_expect_int(ibv_dereg_mr(m_), 0, "dereg dma-buf");   \
		}                                                              \
	} while (0)

#define expect_dmabuf_err(fd, off, len, iova, access, want)                    \
	fu_expect_dmabuf_err(fu.pd, off, len, iova, fd, access, want)

static void test_dmabuf_memfd_accepted_with_test_aid(void **state)
{
	expect_dmabuf_ok(0, fu.pg, 0, LW);
	expect_dmabuf_ok(fu.pg, 2 * fu.pg, 0x20000, LW | RW | RR);
	expect_dmabuf_ok(0x10, 100, 0x30010, RR);
	expect_dmabuf_ok(3 * fu.pg + 7, fu.pg, 7, 0);
	fu_done();
}

static void test_dmabuf_memfd_whitelisted_flags_accepted(void **state)
{
	static const unsigned int good[] = {
		0,
		LW,
		RR,
		LW | RW,
		LW | RA,
		LW | RW | RR | RA,
		IBV_ACCESS_RELAXED_ORDERING,
		IBV_ACCESS_RELAXED_ORDERING | LW | RW,
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		expect_dmabuf_ok(0, 2 * fu.pg, 0, good[i]);
	fu_done();
}

static void test_dmabuf_memfd_other_flags_einval(void **state)
{
	static const unsigned int bad[] = {
		IBV_ACCESS_MW_BIND,
		IBV_ACCESS_ZERO_BASED,
		IBV_ACCESS_ON_DEMAND,
		IBV_ACCESS_HUGETLB,
		IBV_ACCESS_FLUSH_GLOBAL,
		IBV_ACCESS_FLUSH_PERSISTENT,
		1u << 21,
		1u << 24,
		1u << 29,
		1u << 12,
		1u << 30,
		1u << 31,
		RW,
		RA,
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		expect_dmabuf_err(mfd, 0, fu.pg, 0, bad[i], EINVAL);
		expect_dmabuf_err(mfd, 0, fu.pg, 0, bad[i] | RR, EINVAL);
	}
	fu_done();
}

static void test_dmabuf_memfd_range_beyond_size_einval(void **state)
{
	size_t size = 8 * fu.pg;

	expect_dmabuf_err(mfd, 0, size + 1, 0, LW, EINVAL);
	expect_dmabuf_err(mfd, fu.pg, size, 0, LW, EINVAL);
	expect_dmabuf_err(mfd, size, 1, 0, 0, EINVAL);
	expect_dmabuf_err(mfd, size - 8, 16, fu.pg - 8, RR, EINVAL);
	/* exactly up to the end is fine */
	expect_dmabuf_ok(0, size, 0, LW);
	expect_dmabuf_ok(size - 8, 8, fu.pg - 8, LW);
	fu_done();
}

static void test_dmabuf_memfd_geometry_checks_still_apply(void **state)
{
	expect_dmabuf_err(mfd, 0x10, fu.pg, 0x20, LW, EINVAL);
	expect_dmabuf_err(mfd, 0, 0, 0, LW, EINVAL);
	expect_dmabuf_err(mfd, UINT64_MAX - 4095, 2 * fu.pg, 0, LW, EINVAL);
	expect_dmabuf_err(-1, 0, fu.pg, 0, LW, EBADF);
	fu_done();
}

static void test_dmabuf_memfd_non_memfd_still_einval(void **state)
{
	int pfd[2];

	assert_int_equal(pipe(pfd), 0);
	expect_dmabuf_err(pfd[0], 0, fu.pg, 0, LW, EINVAL);
	close(pfd[0]);
	close(pfd[1]);
	fu_done();
}

static void test_dmabuf_memfd_mr_pins_pd_and_has_own_key(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *dmr, *mr;

	assert_non_null(pd);
	dmr = ibv_reg_dmabuf_mr(pd, 0, fu.pg, 0, mfd, LW);
	mr = ibv_reg_mr(pd, buf, fu.pg, LW);
	assert_non_null(dmr);
	assert_non_null(mr);
	fu_expect(FU_KEY_INDEX(dmr->lkey) != FU_KEY_INDEX(mr->lkey),
		  "dma-buf and plain MR share key index (%#x, %#x)", dmr->lkey,
		  mr->lkey);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	fu_expect_int(ibv_dealloc_pd(pd), EBUSY, "dealloc PD with dma-buf MR");
	fu_expect_int(ibv_dereg_mr(dmr), 0, "dereg dma-buf MR");
	fu_expect_int(ibv_dealloc_pd(pd), 0, "dealloc PD after dereg");
	munmap(buf, fu.pg);
	fu_done();
}

/*
 * Spec 2.8 step 4: without write-type access the buffer is mapped
 * read-only, so a write-sealed memfd registers for reading.
 */
static void test_dmabuf_memfd_read_only_access_on_sealed_memfd(void **state)
{
	int fd = memfd_create("srdma-sealed", MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(2 * fu.pg)), 0);
	assert_int_equal(fcntl(fd, F_ADD_SEALS,
			       F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW),
			 0);
	{
		int saved = mfd;

		mfd = fd;
		expect_dmabuf_ok(0, 2 * fu.pg, 0, 0);
		expect_dmabuf_ok(0, fu.pg, 0, RR);
		expect_dmabuf_ok(fu.pg, fu.pg, 0,
				 RR | IBV_ACCESS_RELAXED_ORDERING);
		mfd = saved;
	}
	close(fd);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		MFD_TEST(test_dmabuf_memfd_accepted_with_test_aid),
		MFD_TEST(test_dmabuf_memfd_whitelisted_flags_accepted),
		MFD_TEST(test_dmabuf_memfd_other_flags_einval),
		MFD_TEST(test_dmabuf_memfd_range_beyond_size_einval),
		MFD_TEST(test_dmabuf_memfd_geometry_checks_still_apply),
		MFD_TEST(test_dmabuf_memfd_non_memfd_still_einval),
		MFD_TEST(test_dmabuf_memfd_mr_pins_pd_and_has_own_key),
		MFD_TEST(test_dmabuf_memfd_read_only_access_on_sealed_memfd),
	};

	/* before any device is opened */
	setenv("SRDMA_DMABUF_MEMFD", "1", 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
