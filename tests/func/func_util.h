// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * func_util.h - shared helpers for the functional tests in tests/func.
 *
 * Every test here talks to srdma0 only through the public ABI, exactly as
 * an application would. The helpers open the device, map memory in the
 * shapes the registration rules care about (unmapped, read-only, partly
 * unmapped), build "not a live object" pointers, and call every
 * registration entry point so one rule is checked through all of them.
 *
 * Expectations are soft: fu_expect() prints the failed rule and lets the
 * test go on, so one run lists every deviation; fu_done() then fails the
 * test if anything was reported. Set-up problems use hard cmocka asserts.
 */
#ifndef SRDMA_TESTS_FUNC_UTIL_H
#define SRDMA_TESTS_FUNC_UTIL_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

/* Not in the rdma-core v44 headers this project builds against. */
#ifndef IBV_ACCESS_FLUSH_GLOBAL
#define IBV_ACCESS_FLUSH_GLOBAL (1 << 8)
#endif
#ifndef IBV_ACCESS_FLUSH_PERSISTENT
#define IBV_ACCESS_FLUSH_PERSISTENT (1 << 9)
#endif
/* device_cap_flags_ex bits of newer rdma-core (IB_UVERBS_DEVICE_FLUSH_*). */
#define FU_DEVICE_FLUSH_GLOBAL	   (1ULL << 38)
#define FU_DEVICE_FLUSH_PERSISTENT (1ULL << 39)

#define FU_KEY_INDEX(k) ((uint32_t)(k) >> 8)

static int fu_failures;

/* True if port 1 is a RoCE port (link layer Ethernet, SRDMA_LINK_LAYER=eth). */
static inline bool fu_is_roce(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	return !ibv_query_port(ctx, 1, &pa) &&
	       pa.link_layer == IBV_LINK_LAYER_ETHERNET;
}

/*
 * Complete the address vector @ah as port 1's link layer needs it. On
 * InfiniBand nothing changes (the LID routes). On RoCE an AV must carry a
 * GRH, and every peer of these tests is a context of this host, whose
 * contexts share its IP GIDs (the QPN names the context), exactly as
 * processes sharing a RoCE NIC: the destination is our own GID, the first
 * IPv4-mapped one (::ffff:a.b.c.d, what perftest picks; a link-local GID
 * would need an interface scope on the wire), else GID 0, sent from the
 * same index. Makes no cmocka call, so a forked child may use it.
 */
static inline void fu_av_fix(struct ibv_context *ctx, struct ibv_ah_attr *ah)
{
	static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};
	struct ibv_port_attr pa;
	union ibv_gid g;
	int i, idx = 0;

	if (ibv_query_port(ctx, 1, &pa) ||
	    pa.link_layer != IBV_LINK_LAYER_ETHERNET)
		return;
	for (i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(ctx, 1, i, &g) &&
		    !memcmp(g.raw, v4mapped, sizeof(v4mapped))) {
			idx = i;
			break;
		}
	ah->is_global = 1;
	if (ibv_query_gid(ctx, 1, idx, &ah->grh.dgid))
		memset(&ah->grh.dgid, 0, sizeof(ah->grh.dgid));
	ah->grh.sgid_index = (uint8_t)idx;
	ah->grh.hop_limit = 64;
}

static inline void __attribute__((format(printf, 3, 4)))
fu_report(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "DEVIATION %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fu_failures++;
}

/* Soft check: report and continue. */
#define fu_expect(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			fu_report(__FILE__, __LINE__, __VA_ARGS__);            \
	} while (0)

#define fu_expect_int(got, want, what)                                         \
	do {                                                                   \
		long long g_ = (long long)(got), w_ = (long long)(want);       \
		fu_expect(g_ == w_, "%s: got %lld, want %lld", what, g_, w_);  \
	} while (0)

/* Fail the test if any soft check failed; resets the counter. */
static inline void fu_done(void)
{
	int n = fu_failures;

	fu_failures = 0;
	if (n)
		fail_msg("%d expectation(s) failed, see DEVIATION lines", n);
}

static inline size_t fu_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static inline const char *fu_errname(int e)
{
	static char buf[64];

	switch (e) {
	case 0:
		return "0";
	case EINVAL:
		return "EINVAL";
	case EFAULT:
		return "EFAULT";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	case EBUSY:
		return "EBUSY";
	case EACCES:
		return "EACCES";
	case EPERM:
		return "EPERM";
	case ENOENT:
		return "ENOENT";
	case ENOMEM:
		return "ENOMEM";
	case EAGAIN:
		return "EAGAIN";
	case EBADF:
		return "EBADF";
	default:
		snprintf(buf, sizeof(buf), "errno %d (%s)", e, strerror(e));
		return buf;
	}
}

/* Open srdma0; hard-fails if it is not listed. */
static inline struct ibv_context *fu_open_srdma(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n = 0;

	list = ibv_get_device_list(&n);
	assert_non_null(list);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "srdma0"))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	return ctx;
}

static inline void *fu_map(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

/*
 * A range that is certainly unmapped, and stays so for the test. The kernel
 * picks a large gap (so this works under ASan/TSan layouts too); ranges are
 * handed out from its bottom, while new mappings are placed top-down from
 * its top, so the library's own allocations do not land in them. Each call
 * returns a different range, so two of them never overlap.
 */
static inline void *fu_unmapped(size_t len)
{
	static const size_t span = (size_t)1 << 32;
	static char *base;
	static size_t used;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int tries;

	len = (len + pg - 1) / pg * pg;
	for (tries = 0; tries < 8; tries++) {
		char *p;
		void *q;

		if (!base || used + len + pg > span / 4) {
			void *r = mmap(NULL, span, PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS |
					       MAP_NORESERVE,
				       -1, 0);

			assert_true(r != MAP_FAILED);
			munmap(r, span);
			base = r;
			used = 0;
		}
		p = base + used;
		used += len + pg; /* a guard page between ranges */
		q = mmap(p, len, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0);
		if (q == MAP_FAILED) {
			base = NULL;
			continue;
		}
		munmap(q, len);
		if (q == p)
			return p;
		base = NULL;
	}
	fail_msg("no unmapped range found");
	return NULL;
}

/* Three pages in an unmapped area, the middle one unmapped again. */
static inline void *fu_map_with_hole(void)
{
	size_t pg = fu_page();
	char *p = fu_unmapped(3 * pg);

	assert_true(mmap(p, 3 * pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0) == p);
	assert_int_equal(munmap(p + pg, pg), 0);
	return p;
}

/*
 * A pointer to a zero-filled object that no library call ever returned:
 * "not a live object of this library". It sits in the middle of a large
 * zeroed buffer so an implementation that looks around it reads zeros.
 */
static inline void *fu_fake_object(struct ibv_context *ctx)
{
	static uint64_t arena[16384];
	void *obj = &arena[8192];

	memset(arena, 0, sizeof(arena));
	/* context is the first member of ibv_pd, ibv_mr and ibv_mw */
	*(struct ibv_context **)obj = ctx;
	return obj;
}

/* Registration entry points; all must behave identically (spec 2.1). */
enum fu_entry {
	FU_REG_MR,	/* ibv_reg_mr symbol, iova == addr only */
	FU_REG_MR_IOVA, /* ibv_reg_mr_iova symbol */
	FU_IOVA2,	/* ibv_reg_mr_iova2 */
	FU_MACRO_VAR,	/* header macros with a non-constant access */
	FU_N_ENTRY,
};

static const char *const fu_entry_name[FU_N_ENTRY] = {
	"ibv_reg_mr",
	"ibv_reg_mr_iova",
	"ibv_reg_mr_iova2",
	"ibv_reg_mr macro (variable access)",
};

static inline struct ibv_mr *fu_reg_via(enum fu_entry e, struct ibv_pd *pd,
					void *addr, size_t len, uint64_t iova,
					unsigned int access)
{
	volatile unsigned int va = access;

	switch (e) {
	case FU_REG_MR:
		return (ibv_reg_mr)(pd, addr, len, (int)access);
	case FU_REG_MR_IOVA:
		return (ibv_reg_mr_iova)(pd, addr, len, iova, (int)access);
	case FU_IOVA2:
		return ibv_reg_mr_iova2(pd, addr, len, iova, access);
	case FU_MACRO_VAR:
		if (iova == (uintptr_t)addr)
			return ibv_reg_mr(pd, addr, len, va);
		return ibv_reg_mr_iova(pd, addr, len, iova, va);
	default:
		return NULL;
	}
}

static inline bool fu_entry_applies(enum fu_entry e, void *addr, uint64_t iova)
{
	return e != FU_REG_MR || iova == (uintptr_t)addr;
}

/* Expect every applicable entry point to fail with errno @want. */
/* ibv_reg_dmabuf_mr must fail with errno @want (an MR it returns anyway is
 * deregistered). */
#define fu_expect_dmabuf_err(pd, off, len, iova, fd, access, want)             \
	do {                                                                   \
		struct ibv_mr *m_;                                             \
		int e_;                                                        \
		errno = 0;                                                     \
		m_ = ibv_reg_dmabuf_mr(pd, off, len, iova, fd, (int)(access)); \
		e_ = errno;                                                    \
		fu_expect(!m_ && e_ == (want),                                 \
			  "reg_dmabuf_mr(off %#" PRIx64 " len %#zx iova "      \
			  "%#" PRIx64 " fd %d access %#x): %s, want %s",       \
			  (uint64_t)(off), (size_t)(len), (uint64_t)(iova),    \
			  (int)(fd), (unsigned int)(access),                   \
			  m_ ? "succeeded" : fu_errname(e_),                   \
			  fu_errname(want));                                   \
		if (m_)                                                        \
			ibv_dereg_mr(m_);                                      \
	} while (0)

#define fu_expect_reg_err(pd, addr, len, iova, access, want)                   \
	fu_expect_reg_err_at(__FILE__, __LINE__, pd, addr, len, iova, access,  \
			     want)
static inline void fu_expect_reg_err_at(const char *file, int line,
					struct ibv_pd *pd, void *addr,
					size_t len, uint64_t iova,
					unsigned int access, int want)
{
	int e;

	for (e = 0; e < FU_N_ENTRY; e++) {
		struct ibv_mr *mr;

		if (!fu_entry_applies(e, addr, iova))
			continue;
		errno = 0;
		mr = fu_reg_via(e, pd, addr, len, iova, access);
		if (mr) {
			fu_report(file, line,
				  "%s(addr %p len %#zx iova %#" PRIx64
				  " access %#x) succeeded, want %s",
				  fu_entry_name[e], addr, len, iova, access,
				  fu_errname(want));
			ibv_dereg_mr(mr);
		} else if (errno != want) {
			int got = errno;

			fu_report(file, line,
				  "%s(addr %p len %#zx iova %#" PRIx64
				  " access %#x) errno %s, want %s",
				  fu_entry_name[e], addr, len, iova, access,
				  fu_errname(got), fu_errname(want));
		}
	}
}

/*
 * Expect every applicable entry point to succeed and fill the MR as
 * spec 2.1 says; deregisters each MR again.
 */
#define fu_expect_reg_ok(pd, addr, len, iova, access)                          \
	fu_expect_reg_ok_at(__FILE__, __LINE__, pd, addr, len, iova, access)
static inline void fu_expect_reg_ok_at(const char *file, int line,
				       struct ibv_pd *pd, void *addr,
				       size_t len, uint64_t iova,
				       unsigned int access)
{
	int e;

	for (e = 0; e < FU_N_ENTRY; e++) {
		struct ibv_mr *mr;
		int ret;

		if (!fu_entry_applies(e, addr, iova))
			continue;
		errno = 0;
		mr = fu_reg_via(e, pd, addr, len, iova, access);
		if (!mr) {
			int got = errno;

			fu_report(file, line,
				  "%s(addr %p len %#zx iova %#" PRIx64
				  " access %#x) failed with %s, want success",
				  fu_entry_name[e], addr, len, iova, access,
				  fu_errname(got));
			continue;
		}
		if (mr->context != pd->context || mr->pd != pd ||
		    mr->addr != addr || mr->length != len ||
		    mr->lkey != mr->rkey || FU_KEY_INDEX(mr->lkey) == 0)
			fu_report(file, line,
				  "%s(access %#x): mr fields ctx %p pd %p "
				  "addr %p len %#zx lkey %#x rkey %#x; want "
				  "ctx %p pd %p addr %p len %#zx lkey==rkey "
				  "index!=0",
				  fu_entry_name[e], access, (void *)mr->context,
				  (void *)mr->pd, mr->addr, mr->length,
				  mr->lkey, mr->rkey, (void *)pd->context,
				  (void *)pd, addr, len);
		ret = ibv_dereg_mr(mr);
		if (ret)
			fu_report(file, line, "%s(access %#x): dereg gave %s",
				  fu_entry_name[e], access, fu_errname(ret));
	}
}

/* Standard per-file fixture: one context and one PD. */
struct fu_env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	size_t pg;
};

static struct fu_env fu;

static inline int fu_setup(void **state)
{
	fu.ctx = fu_open_srdma();
	fu.pd = ibv_alloc_pd(fu.ctx);
	assert_non_null(fu.pd);
	fu.pg = fu_page();
	fu_failures = 0;
	return 0;
}

static inline int fu_teardown(void **state)
{
	if (fu.pd)
		ibv_dealloc_pd(fu.pd);
	if (fu.ctx)
		ibv_close_device(fu.ctx);
	memset(&fu, 0, sizeof(fu));
	return 0;
}

#define FU_TEST(t) cmocka_unit_test_setup_teardown(t, fu_setup, fu_teardown)

#endif /* SRDMA_TESTS_FUNC_UTIL_H */
