// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_relaxed.c - the Solaris OFUV relaxed-MR extension:
 * ibv_reg_mr_relaxed, ibv_dereg_mr_relaxed, ibv_flush_relaxed_mr (docs
 * verbs-semantics.md 7).
 *
 * Registration takes the ibv_reg_mr checks plus EINVAL for ON_DEMAND and
 * ZERO_BASED, and draws from a pool of max_fmr slots (EAGAIN when every
 * slot is live; pending slots are flushed inline). dereg_relaxed only marks
 * the MR pending; flush invalidates the pending MRs of a PD. Whether a
 * pending key still works is allowed either way and is not checked; what is
 * checked is what the API shows: return values, errno, pool capacity and
 * keys. Built against the fault-injection library it runs only the timer
 * race at its end (fault.relaxed_timer).
 */
#include <time.h>

#include <infiniband/verbs_relaxed.h>

#include "func_util.h"

#define LW IBV_ACCESS_LOCAL_WRITE
#define RW IBV_ACCESS_REMOTE_WRITE
#define RR IBV_ACCESS_REMOTE_READ
#define RA IBV_ACCESS_REMOTE_ATOMIC

#define expect_relaxed_err(pd, addr, len, access, want)                        \
	do {                                                                   \
		struct ibv_mr *m_;                                             \
		int e_;                                                        \
		errno = 0;                                                     \
		m_ = ibv_reg_mr_relaxed(pd, addr, len, (int)(access));         \
		e_ = errno;                                                    \
		fu_expect(                                                     \
			!m_ && e_ == (want),                                   \
			"reg_mr_relaxed(%p, %#zx, access %#x): %s, want %s",   \
			(void *)(addr), (size_t)(len), (unsigned int)(access), \
			m_ ? "succeeded" : fu_errname(e_), fu_errname(want));  \
		if (m_)                                                        \
			ibv_dereg_mr(m_);                                      \
	} while (0)

#define expect_relaxed_ok(pd, addr, len, access)                               \
	do {                                                                   \
		struct ibv_mr *m_;                                             \
		errno = 0;                                                     \
		m_ = ibv_reg_mr_relaxed(pd, addr, len, (int)(access));         \
		fu_expect(m_ != NULL,                                          \
			  "reg_mr_relaxed(%p, %#zx, access %#x): %s",          \
			  (void *)(addr), (size_t)(len),                       \
			  (unsigned int)(access), fu_errname(errno));          \
		if (m_)                                                        \
			fu_expect_int(ibv_dereg_mr(m_), 0,                     \
				      "ibv_dereg_mr(relaxed)");                \
	} while (0)

static int max_fmr(void)
{
	struct ibv_device_attr a;

	assert_int_equal(ibv_query_device(fu.ctx, &a), 0);
	assert_true(a.max_fmr > 0);
	return a.max_fmr;
}

static void test_relaxed_reg_same_errors_as_reg_mr(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	char *ro = fu_map(fu.pg, PROT_READ);
	char *gone = fu_unmapped(fu.pg);
	unsigned int b;

	expect_relaxed_err(NULL, buf, fu.pg, LW, EINVAL);
	expect_relaxed_err(fu_fake_object(fu.ctx), buf, fu.pg, LW, EINVAL);
	for (b = 10; b <= 19; b++)
		expect_relaxed_err(fu.pd, buf, fu.pg, (1u << b) | LW, EINVAL);
	expect_relaxed_err(fu.pd, buf, fu.pg, 1u << 30, EINVAL);
	expect_relaxed_err(fu.pd, buf, fu.pg, 1u << 31, EINVAL);
	expect_relaxed_err(fu.pd, buf, fu.pg, RW, EINVAL);
	expect_relaxed_err(fu.pd, buf, fu.pg, RA | RR, EINVAL);
	expect_relaxed_err(fu.pd, buf, fu.pg, IBV_ACCESS_FLUSH_GLOBAL | LW,
			   EOPNOTSUPP);
	expect_relaxed_err(fu.pd, buf, 0, LW, EINVAL);
	expect_relaxed_err(fu.pd, (void *)(UINTPTR_MAX - 100), fu.pg, 0,
			   EINVAL);
	expect_relaxed_err(fu.pd, (void *)(UINTPTR_MAX - 4094), 4094, 0,
			   EINVAL);
	expect_relaxed_err(fu.pd, gone, fu.pg, 0, EFAULT);
	expect_relaxed_err(fu.pd, NULL, fu.pg, 0, EFAULT);
	expect_relaxed_err(fu.pd, ro, fu.pg, LW, EFAULT);
	expect_relaxed_err(fu.pd, ro, fu.pg, IBV_ACCESS_MW_BIND, EFAULT);
	expect_relaxed_ok(fu.pd, ro, fu.pg, 0);
	expect_relaxed_ok(fu.pd, ro, fu.pg, RR);
	munmap(buf, 2 * fu.pg);
	munmap(ro, fu.pg);
	fu_done();
}

static void test_relaxed_reg_on_demand_or_zero_based_einval(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);

	expect_relaxed_err(fu.pd, buf, fu.pg, IBV_ACCESS_ON_DEMAND, EINVAL);
	expect_relaxed_err(fu.pd, buf, fu.pg, IBV_ACCESS_ON_DEMAND | LW,
			   EINVAL);
	expect_relaxed_err(fu.pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND, EINVAL);
	expect_relaxed_err(fu.pd, buf, fu.pg, IBV_ACCESS_ZERO_BASED, EINVAL);
	expect_relaxed_err(fu.pd, buf, fu.pg, IBV_ACCESS_ZERO_BASED | LW | RW,
			   EINVAL);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_relaxed_reg_accepts_mr_access_flags(void **state)
{
	static const unsigned int good[] = {
		0,
		LW,
		RR,
		LW | RW,
		LW | RA,
		LW | RW | RR | RA,
		IBV_ACCESS_MW_BIND,
		IBV_ACCESS_HUGETLB | LW,
		IBV_ACCESS_RELAXED_ORDERING | LW,
		(1u << 25) | LW,
	};
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		expect_relaxed_ok(fu.pd, buf, 2 * fu.pg, good[i]);
		expect_relaxed_ok(fu.pd, buf + 100, 1000, good[i]);
	}
	munmap(buf, 2 * fu.pg);
	fu_done();
}

static void test_relaxed_reg_fills_mr(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr, *plain;

	mr = ibv_reg_mr_relaxed(fu.pd, buf + 24, 1000, LW | RW | RR);
	plain = ibv_reg_mr(fu.pd, buf, fu.pg, LW);
	assert_non_null(mr);
	assert_non_null(plain);
	fu_expect(mr->context == fu.ctx && mr->pd == fu.pd,
		  "relaxed mr context/pd not filled");
	/* requested values, not the page-rounded effective bounds */
	fu_expect(mr->addr == buf + 24 && mr->length == 1000,
		  "relaxed mr addr %p len %#zx, want %p 0x3e8", mr->addr,
		  mr->length, buf + 24);
	fu_expect(mr->lkey == mr->rkey && FU_KEY_INDEX(mr->lkey) != 0,
		  "relaxed keys lkey %#x rkey %#x", mr->lkey, mr->rkey);
	fu_expect(FU_KEY_INDEX(mr->lkey) != FU_KEY_INDEX(plain->lkey),
		  "relaxed and plain MR share key index (%#x, %#x)", mr->lkey,
		  plain->lkey);
	fu_expect_int(ibv_dereg_mr(plain), 0, "dereg plain MR");
	fu_expect_int(ibv_dereg_mr_relaxed(mr), 0, "dereg_relaxed");
	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush");
	munmap(buf, 2 * fu.pg);
	fu_done();
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_relaxed_dereg_returns_at_once(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr = ibv_reg_mr_relaxed(fu.pd, buf, fu.pg, LW | RW);
	double t;
	int ret;

	assert_non_null(mr);
	t = now_ms();
	ret = ibv_dereg_mr_relaxed(mr);
	t = now_ms() - t;
	fu_expect_int(ret, 0, "ibv_dereg_mr_relaxed");
	fu_expect(t < 50, "ibv_dereg_mr_relaxed took %.1f ms", t);
	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush");
	munmap(buf, fu.pg);
	fu_done();
}

static void test_relaxed_flush_idempotent(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush, nothing pending");
	mr = ibv_reg_mr_relaxed(fu.pd, buf, fu.pg, LW);
	assert_non_null(mr);
	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush, one live MR");
	fu_expect_int(ibv_dereg_mr_relaxed(mr), 0, "dereg_relaxed");
	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush, one pending");
	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush again");
	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush a third time");
	munmap(buf, fu.pg);
	fu_done();
}

static void test_relaxed_flush_bad_pd_einval(void **state)
{
	int ret;

	ret = ibv_flush_relaxed_mr(NULL);
	fu_expect(ret == EINVAL, "flush(NULL) gave %s", fu_errname(ret));
	ret = ibv_flush_relaxed_mr(fu_fake_object(fu.ctx));
	fu_expect(ret == EINVAL, "flush(fake PD) gave %s", fu_errname(ret));
	fu_done();
}

static void test_relaxed_dereg_non_relaxed_mr_einval(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr = ibv_reg_mr(fu.pd, buf, fu.pg, LW);
	struct ibv_mr *odp =
		ibv_reg_mr(fu.pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND);
	int ret;

	assert_non_null(mr);
	assert_non_null(odp);
	ret = ibv_dereg_mr_relaxed(mr);
	fu_expect(ret == EINVAL, "dereg_relaxed(plain MR) gave %s",
		  fu_errname(ret));
	ret = ibv_dereg_mr_relaxed(odp);
	fu_expect(ret == EINVAL, "dereg_relaxed(ODP MR) gave %s",
		  fu_errname(ret));
	ret = ibv_dereg_mr_relaxed(fu_fake_object(fu.ctx));
	fu_expect(ret == EINVAL, "dereg_relaxed(fake MR) gave %s",
		  fu_errname(ret));
	ret = ibv_dereg_mr_relaxed(NULL);
	fu_expect(ret == EINVAL, "dereg_relaxed(NULL) gave %s",
		  fu_errname(ret));
	/* the plain MRs are untouched */
	fu_expect_int(ibv_dealloc_pd(fu.pd), EBUSY, "PD still pinned");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg plain MR");
	fu_expect_int(ibv_dereg_mr(odp), 0, "dereg ODP MR");
	munmap(buf, fu.pg);
	fu_done();
}

struct pool {
	int n;
	struct ibv_mr **mr;
	uint32_t *keys;
};

/* Register up to @n relaxed MRs; returns how many succeeded. */
static int pool_fill(struct pool *p, char *buf, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		p->mr[i] = ibv_reg_mr_relaxed(fu.pd, buf, fu.pg, LW | RW);
		if (!p->mr[i])
			break;
		p->keys[i] = p->mr[i]->lkey;
	}
	return i;
}

static void pool_init(struct pool *p, int n)
{
	p->n = n;
	p->mr = calloc(n + 1, sizeof(*p->mr));
	p->keys = calloc(n + 1, sizeof(*p->keys));
	assert_non_null(p->mr);
	assert_non_null(p->keys);
}

static void pool_fini(struct pool *p)
{
	free(p->mr);
	free(p->keys);
}

static void test_relaxed_pool_exhaustion_eagain(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct pool p;
	struct ibv_mr *extra;
	int n = max_fmr(), got, i;

	if (n > 65536)
		skip();
	pool_init(&p, n);
	got = pool_fill(&p, buf, n);
	fu_expect(got == n, "only %d of max_fmr %d relaxed MRs: %s", got, n,
		  fu_errname(errno));
	if (got == n) {
		errno = 0;
		extra = ibv_reg_mr_relaxed(fu.pd, buf, fu.pg, LW);
		fu_expect(!extra && errno == EAGAIN,
			  "relaxed MR max_fmr+1: %s, want EAGAIN",
			  extra ? "succeeded" : fu_errname(errno));
		if (extra)
			ibv_dereg_mr(extra);
		/* a plain MR does not come from the pool */
		extra = ibv_reg_mr(fu.pd, buf, fu.pg, LW);
		fu_expect(extra != NULL, "plain MR with full relaxed pool: %s",
			  fu_errname(errno));
		if (extra)
			ibv_dereg_mr(extra);
	}
	/* ibv_dereg_mr frees a slot immediately */
	if (got > 0) {
		fu_expect_int(ibv_dereg_mr(p.mr[--got]), 0,
			      "ibv_dereg_mr(relaxed)");
		p.mr[got] = ibv_reg_mr_relaxed(fu.pd, buf, fu.pg, LW);
		fu_expect(p.mr[got] != NULL,
			  "relaxed MR after ibv_dereg_mr freed a slot: %s",
			  fu_errname(errno));
		if (p.mr[got])
			got++;
	}
	for (i = 0; i < got; i++)
		assert_int_equal(ibv_dereg_mr(p.mr[i]), 0);
	pool_fini(&p);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_relaxed_full_pool_flushes_pending_inline(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *extra;
	struct pool p;
	int n = max_fmr(), got, i;

	if (n > 65536)
		skip();
	pool_init(&p, n);
	got = pool_fill(&p, buf, n);
	assert_int_equal(got, n);
	/* one pending slot: the next registration flushes it and succeeds */
	assert_int_equal(ibv_dereg_mr_relaxed(p.mr[0]), 0);
	extra = ibv_reg_mr_relaxed(fu.pd, buf, fu.pg, LW);
	fu_expect(extra != NULL,
		  "full pool with one pending slot: %s, want success",
		  fu_errname(errno));
	if (extra) {
		fu_expect(extra->lkey != p.keys[0],
			  "reused slot kept the stale key %#x", p.keys[0]);
		assert_int_equal(ibv_dereg_mr(extra), 0);
	}
	for (i = 1; i < got; i++)
		assert_int_equal(ibv_dereg_mr(p.mr[i]), 0);
	pool_fini(&p);
	munmap(buf, fu.pg);
	fu_done();
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* After dereg_relaxed + flush the whole pool is reusable with new keys. */
static void test_relaxed_flush_frees_slots_with_new_keys(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct pool a, b;
	int n = max_fmr(), i, got, reissued = 0;

	if (n > 65536)
		skip();
	pool_init(&a, n);
	pool_init(&b, n);
	assert_int_equal(pool_fill(&a, buf, n), n);
	for (i = 0; i < n; i++)
		assert_int_equal(ibv_dereg_mr_relaxed(a.mr[i]), 0);
	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush");
	got = pool_fill(&b, buf, n);
	fu_expect(got == n, "after flush only %d of %d slots reusable: %s", got,
		  n, fu_errname(errno));
	qsort(a.keys, n, sizeof(uint32_t), cmp_u32);
	for (i = 0; i < got; i++)
		reissued += bsearch(&b.keys[i], a.keys, n, sizeof(uint32_t),
				    cmp_u32) != NULL;
	fu_expect(reissued == 0, "%d flushed keys were handed out again",
		  reissued);
	for (i = 0; i < got; i++)
		assert_int_equal(ibv_dereg_mr(b.mr[i]), 0);
	pool_fini(&a);
	pool_fini(&b);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_relaxed_dereg_mr_is_immediate(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_pd *pd = ibv_alloc_pd(fu.ctx);
	struct ibv_mr *mr;

	assert_non_null(pd);
	mr = ibv_reg_mr_relaxed(pd, buf, fu.pg, LW | RR);
	assert_non_null(mr);
	fu_expect_int(ibv_dereg_mr(mr), 0, "ibv_dereg_mr(relaxed)");
	/* nothing pending and nothing live: the PD is free at once */
	fu_expect_int(ibv_dealloc_pd(pd), 0, "dealloc PD after dereg");
	munmap(buf, fu.pg);
	fu_done();
}

#ifdef RELAXED_FAULT
/*
 * Built against the fault-injection library (fault.relaxed_timer): the
 * timer thread against a flush that is draining with the context lock
 * dropped. The MR_DRAIN point calls srdma_test_fault_hook() in that
 * window; the hook holds it open past the 100 ms deadline of another PD's
 * pending MR, so the timer wakes to an expired MR while a flush is under
 * way. The timer must wait for that flush, not loop holding the lock the
 * flush needs to finish (which hung the flush for good).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

static struct {
	pthread_t main;			/* only this thread's flush is held */
	atomic_bool armed;		/* hold the next main-thread drain */
	atomic_bool held;		/* a drain was held */
} T;

void srdma_test_fault_hook(const char *site);
__attribute__((visibility("default"))) void
srdma_test_fault_hook(const char *site)
{
	struct timespec hold = { 0, 400 * 1000 * 1000 };

	if (strcmp(site, "MR_DRAIN") || !pthread_equal(pthread_self(), T.main) ||
	    !atomic_exchange(&T.armed, false))
		return;
	nanosleep(&hold, NULL);
	atomic_store(&T.held, true);
}

static void on_alarm(int sig)
{
	static const char msg[] =
		"ibv_flush_relaxed_mr hung: the relaxed timer starved it\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static void test_relaxed_timer_waits_for_draining_flush(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_pd *pd2 = ibv_alloc_pd(fu.ctx);
	struct ibv_mr *a, *b;

	assert_non_null(pd2);
	a = ibv_reg_mr_relaxed(fu.pd, buf, fu.pg, LW);
	b = ibv_reg_mr_relaxed(pd2, buf + fu.pg, fu.pg, LW);
	assert_non_null(a);
	assert_non_null(b);
	T.main = pthread_self();
	signal(SIGALRM, on_alarm);
	alarm(10);
	/* b, pending first, stays listed while the flush of fu.pd drains a. */
	fu_expect_int(ibv_dereg_mr_relaxed(b), 0, "dereg_relaxed(b)");
	fu_expect_int(ibv_dereg_mr_relaxed(a), 0, "dereg_relaxed(a)");
	atomic_store(&T.armed, true);
	fu_expect_int(ibv_flush_relaxed_mr(fu.pd), 0, "flush while b expires");
	fu_expect(atomic_load(&T.held), "the MR_DRAIN hook never held a drain");
	/* The lock is free again (b, if not reaped yet, goes with pd2). */
	fu_expect_int(ibv_dealloc_pd(pd2), 0, "dealloc_pd(pd2)");
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_relaxed_timer_waits_for_draining_flush),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_relaxed_reg_same_errors_as_reg_mr),
		FU_TEST(test_relaxed_reg_on_demand_or_zero_based_einval),
		FU_TEST(test_relaxed_reg_accepts_mr_access_flags),
		FU_TEST(test_relaxed_reg_fills_mr),
		FU_TEST(test_relaxed_dereg_returns_at_once),
		FU_TEST(test_relaxed_flush_idempotent),
		FU_TEST(test_relaxed_flush_bad_pd_einval),
		FU_TEST(test_relaxed_dereg_non_relaxed_mr_einval),
		FU_TEST(test_relaxed_pool_exhaustion_eagain),
		FU_TEST(test_relaxed_full_pool_flushes_pending_inline),
		FU_TEST(test_relaxed_flush_frees_slots_with_new_keys),
		FU_TEST(test_relaxed_dereg_mr_is_immediate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
