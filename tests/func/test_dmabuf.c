// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_dmabuf.c - ibv_reg_dmabuf_mr argument checks with the default
 * configuration (docs verbs-semantics.md 2.2 dma-buf column, 2.8).
 *
 * The arguments are validated first (page offset of offset vs iova, the
 * LW|RR|RW|RA|RO flag whitelist, the LW rule, length, overflow), then the
 * fd: not open -> EBADF, open but not a dma-buf -> EINVAL. A memfd is not
 * a dma-buf unless SRDMA_DMABUF_MEMFD=1 (see test_dmabuf_memfd.c). When the
 * host has a dma-buf heap, a real dma-buf is registered too.
 */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <linux/dma-heap.h>

#include "func_util.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW IBV_ACCESS_REMOTE_WRITE
#define RR IBV_ACCESS_REMOTE_READ
#define RA IBV_ACCESS_REMOTE_ATOMIC

static const unsigned int rejected_flags[] = {
	IBV_ACCESS_MW_BIND,
	IBV_ACCESS_ZERO_BASED,
	IBV_ACCESS_ON_DEMAND,
	IBV_ACCESS_HUGETLB,
	IBV_ACCESS_FLUSH_GLOBAL,
	IBV_ACCESS_FLUSH_PERSISTENT,
	1u << 21,
	1u << 22,
	1u << 25,
	1u << 29,
	1u << 10,
	1u << 15,
	1u << 19,
	1u << 30,
	1u << 31,
};
#define N_REJECTED (sizeof(rejected_flags) / sizeof(rejected_flags[0]))

static int memfd(size_t size)
{
	int fd = memfd_create("srdma-test", 0);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static void test_dmabuf_bad_fd_ebadf(void **state)
{
	int fd = memfd(fu.pg);

	close(fd); /* now certainly not open */
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, -1, LW, EBADF);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, -5, 0, EBADF);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, fd, LW, EBADF);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, 100000, RR, EBADF);
	fu_done();
}

static void test_dmabuf_non_dmabuf_fd_einval(void **state)
{
	int mfd = memfd(4 * fu.pg);
	int pfd[2];
	int nfd = open("/dev/null", O_RDWR);

	assert_int_equal(pipe(pfd), 0);
	assert_true(nfd >= 0);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, mfd, LW, EINVAL);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, mfd, 0, EINVAL);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, pfd[0], LW, EINVAL);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, nfd, LW, EINVAL);
	close(mfd);
	close(pfd[0]);
	close(pfd[1]);
	close(nfd);
	fu_done();
}

/* Flag checks run before the fd is looked at, so fd -1 gives EINVAL. */
static void test_dmabuf_flag_whitelist_einval(void **state)
{
	int mfd = memfd(fu.pg);
	size_t i;

	for (i = 0; i < N_REJECTED; i++) {
		fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, -1, rejected_flags[i],
				  EINVAL);
		fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, -1,
				  rejected_flags[i] | LW, EINVAL);
		fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, mfd,
				  rejected_flags[i] | LW | RR, EINVAL);
	}
	/* LW rule */
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, -1, RW, EINVAL);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, -1, RA | RR, EINVAL);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0, -1,
			  RW | IBV_ACCESS_RELAXED_ORDERING, EINVAL);
	close(mfd);
	fu_done();
}

static void test_dmabuf_bad_geometry_einval(void **state)
{
	/* offset and iova in different page positions */
	fu_expect_dmabuf_err(fu.pd, 0x10, fu.pg, 0x20, -1, LW, EINVAL);
	fu_expect_dmabuf_err(fu.pd, 0, fu.pg, 0x10010, -1, LW, EINVAL);
	fu_expect_dmabuf_err(fu.pd, fu.pg + 1, fu.pg, 0, -1, 0, EINVAL);
	/* length 0 */
	fu_expect_dmabuf_err(fu.pd, 0, 0, 0, -1, LW, EINVAL);
	/* offset + length wraps */
	fu_expect_dmabuf_err(fu.pd, UINT64_MAX - 4095, 2 * fu.pg, 0, -1, LW,
			  EINVAL);
	fu_expect_dmabuf_err(fu.pd, 1ULL << 63, 1ULL << 63, 0, -1, 0, EINVAL);
	/* PD */
	fu_expect_dmabuf_err(NULL, 0, fu.pg, 0, -1, LW, EINVAL);
	fu_expect_dmabuf_err(fu_fake_object(fu.ctx), 0, fu.pg, 0, -1, LW, EINVAL);
	fu_done();
}

/* Optional: a real dma-buf from the system heap, when the host has one. */
static void test_dmabuf_real_heap_buffer_registers(void **state)
{
	struct dma_heap_allocation_data alloc = {
		.len = 4 * fu.pg,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	struct ibv_mr *mr;
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	if (heap < 0)
		skip();
	if (ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &alloc) < 0) {
		close(heap);
		skip();
	}
	mr = ibv_reg_dmabuf_mr(fu.pd, fu.pg, 2 * fu.pg, 0x10000, (int)alloc.fd,
			       LW | RW | RR);
	fu_expect(mr != NULL || errno == EOPNOTSUPP,
		  "real dma-buf registration: %s", fu_errname(errno));
	if (mr) {
		fu_expect(mr->addr == (void *)(uintptr_t)fu.pg &&
				  mr->length == 2 * fu.pg,
			  "dma-buf mr addr %p len %#zx", mr->addr, mr->length);
		fu_expect_int(ibv_dereg_mr(mr), 0, "dereg dma-buf MR");
	}
	fu_expect_dmabuf_err(fu.pd, 3 * fu.pg, 2 * fu.pg, 0, (int)alloc.fd, LW,
			  EINVAL);
	close((int)alloc.fd);
	close(heap);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_dmabuf_bad_fd_ebadf),
		FU_TEST(test_dmabuf_non_dmabuf_fd_einval),
		FU_TEST(test_dmabuf_flag_whitelist_einval),
		FU_TEST(test_dmabuf_bad_geometry_einval),
		FU_TEST(test_dmabuf_real_heap_buffer_registers),
	};

	unsetenv("SRDMA_DMABUF_MEMFD");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
