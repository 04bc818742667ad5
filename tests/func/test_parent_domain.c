// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_parent_domain.c - thread domains and parent domains
 * (ibv_alloc_td(3), ibv_alloc_parent_domain(3), docs/design/
 * parent-domain.md).
 *
 * Error paths first, each with its errno: a TD with comp_mask bits
 * (EINVAL), a TD in use by a parent domain (EBUSY), parent domains over
 * NULL, foreign, fake or parent PDs, with a foreign TD, unknown comp_mask
 * bits or ALLOCATORS without functions (EINVAL); a parent domain with a
 * QP, CQ, SRQ, MR, MW or AH on it, and a PD a parent domain holds (EBUSY);
 * double frees (EINVAL); ibv_create_cq_ex with IBV_CQ_INIT_ATTR_MASK_PD
 * and something not a parent domain (EINVAL).
 *
 * Then the custom allocator: it is called once per QP, CQ and SRQ created
 * on the parent domain with the documented resource types, alignment, PD
 * and pd_context; free gets back exactly the pointers alloc gave;
 * IBV_ALLOCATOR_USE_DEFAULT and a failing alloc behave as the man page
 * says; threads may create on one parent domain at once. Last, RDMA
 * between an MR on a parent domain and a QP on its protection PD, and
 * the other way round, windows and SRQs included (CTest runs this file
 * over the host and, as net.func.test_parent_domain, the net transport).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <infiniband/srdma_parent_domain.h>

#include "func_util.h"
#include "dp_util.h"

static struct ibv_td *alloc_td(struct ibv_context *ctx, uint32_t comp_mask)
{
	struct ibv_td_init_attr ta = {.comp_mask = comp_mask};

	return ibv_alloc_td(ctx, &ta);
}

static struct ibv_pd *alloc_parent(struct ibv_context *ctx, struct ibv_pd *pd,
				   struct ibv_td *td)
{
	struct ibv_parent_domain_init_attr pa;

	memset(&pa, 0, sizeof(pa));
	pa.pd = pd;
	pa.td = td;
	return ibv_alloc_parent_domain(ctx, &pa);
}

/* NULL with errno @want from ibv_alloc_parent_domain(@pa). */
static void expect_parent_err(struct ibv_parent_domain_init_attr *pa,
			      int want, const char *what)
{
	struct ibv_pd *p;

	errno = 0;
	p = ibv_alloc_parent_domain(fu.ctx, pa);
	fu_expect(!p && errno == want, "%s: got %p errno %s, want %s", what,
		  (void *)p, fu_errname(errno), fu_errname(want));
	if (p)
		ibv_dealloc_pd(p);
}

static void test_td_alloc_dealloc(void **state)
{
	struct ibv_td *td, *bad;

	td = alloc_td(fu.ctx, 0);
	assert_non_null(td);
	fu_expect(td->context == fu.ctx, "td->context %p", (void *)td->context);
	errno = 0;
	bad = alloc_td(fu.ctx, 1);
	fu_expect(!bad && errno == EINVAL, "TD comp_mask 1: %p %s",
		  (void *)bad, fu_errname(errno));
	errno = 0;
	bad = alloc_td(fu.ctx, 0x80000000u);
	fu_expect(!bad && errno == EINVAL, "TD comp_mask bit 31: %p %s",
		  (void *)bad, fu_errname(errno));
	fu_expect_int(ibv_dealloc_td(td), 0, "dealloc TD");
	fu_expect_int(ibv_dealloc_td(td), EINVAL, "dealloc TD twice");
	fu_expect_int(ibv_dealloc_td(fu_fake_object(fu.ctx)), EINVAL,
		      "dealloc a TD that is not one");
	fu_done();
}

static void test_parent_domain_bad_attr(void **state)
{
	struct ibv_context *other = fu_open_srdma();
	struct ibv_pd *opd = ibv_alloc_pd(other);
	struct ibv_td *otd = alloc_td(other, 0);
	struct ibv_pd *par = alloc_parent(fu.ctx, fu.pd, NULL);
	struct ibv_parent_domain_init_attr pa;

	assert_non_null(opd);
	assert_non_null(otd);
	assert_non_null(par);
	memset(&pa, 0, sizeof(pa));
	expect_parent_err(&pa, EINVAL, "NULL pd");
	pa.pd = opd;
	expect_parent_err(&pa, EINVAL, "pd of another context");
	pa.pd = fu_fake_object(fu.ctx);
	expect_parent_err(&pa, EINVAL, "not a pd");
	pa.pd = par;
	expect_parent_err(&pa, EINVAL, "pd is a parent domain");
	pa.pd = fu.pd;
	pa.comp_mask = 1u << 2;
	expect_parent_err(&pa, EINVAL, "unknown comp_mask bit 2");
	pa.comp_mask = 0;
	pa.td = otd;
	expect_parent_err(&pa, EINVAL, "td of another context");
	pa.td = fu_fake_object(fu.ctx);
	expect_parent_err(&pa, EINVAL, "not a td");
	pa.td = NULL;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	expect_parent_err(&pa, EINVAL, "ALLOCATORS without functions");
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent domain");
	fu_expect_int(ibv_dealloc_pd(par), EINVAL, "dealloc parent twice");
	fu_expect_int(ibv_dealloc_td(otd), 0, "dealloc TD");
	fu_expect_int(ibv_dealloc_pd(opd), 0, "dealloc other PD");
	fu_expect_int(ibv_close_device(other), 0, "close other context");
	fu_done();
}

static void test_td_busy_while_parent_uses_it(void **state)
{
	struct ibv_td *td = alloc_td(fu.ctx, 0);
	struct ibv_pd *par, *par2;

	assert_non_null(td);
	par = alloc_parent(fu.ctx, fu.pd, td);
	par2 = alloc_parent(fu.ctx, fu.pd, td);
	assert_non_null(par);
	assert_non_null(par2);
	fu_expect(par->handle == fu.pd->handle && par->context == fu.ctx,
		  "parent handle %u context %p, want %u %p", par->handle,
		  (void *)par->context, fu.pd->handle, (void *)fu.ctx);
	fu_expect_int(ibv_dealloc_td(td), EBUSY, "dealloc TD of 2 parents");
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent 1");
	fu_expect_int(ibv_dealloc_td(td), EBUSY, "dealloc TD of 1 parent");
	fu_expect_int(ibv_dealloc_pd(fu.pd), EBUSY, "dealloc PD of a parent");
	fu_expect_int(ibv_dealloc_pd(par2), 0, "dealloc parent 2");
	fu_expect_int(ibv_dealloc_td(td), 0, "dealloc idle TD");
	/* The PD is free again: the fixture's teardown deallocates it. */
	fu_done();
}

static struct ibv_cq_ex *create_cq_pd(struct ibv_context *ctx,
				      struct ibv_pd *pd)
{
	struct ibv_cq_init_attr_ex ca;

	memset(&ca, 0, sizeof(ca));
	ca.cqe = 16;
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = pd;
	return ibv_create_cq_ex(ctx, &ca);
}

static void test_cq_ex_needs_parent_domain(void **state)
{
	struct ibv_context *other = fu_open_srdma();
	struct ibv_pd *opd = ibv_alloc_pd(other);
	struct ibv_pd *opar = alloc_parent(other, opd, NULL);
	struct ibv_pd *par = alloc_parent(fu.ctx, fu.pd, NULL);
	struct ibv_cq_ex *cq;
	struct {
		struct ibv_pd *pd;
		const char *what;
	} bad[] = {
		{NULL, "NULL parent_domain"},
		{fu.pd, "a plain PD"},
		{opar, "a parent domain of another context"},
		{fu_fake_object(fu.ctx), "not a PD"},
	};
	size_t i;

	assert_non_null(opar);
	assert_non_null(par);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cq = create_cq_pd(fu.ctx, bad[i].pd);
		fu_expect(!cq && errno == EINVAL,
			  "create_cq_ex MASK_PD with %s: %p %s", bad[i].what,
			  (void *)cq, fu_errname(errno));
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	}
	cq = create_cq_pd(fu.ctx, par);
	fu_expect(cq != NULL, "create_cq_ex on parent: %s", fu_errname(errno));
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with CQ");
	if (cq)
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent after CQ");
	fu_expect_int(ibv_dealloc_pd(opar), 0, "dealloc other parent");
	fu_expect_int(ibv_dealloc_pd(opd), 0, "dealloc other PD");
	fu_expect_int(ibv_close_device(other), 0, "close other context");
	fu_done();
}

static void test_parent_busy_with_objects(void **state)
{
	struct ibv_pd *par = alloc_parent(fu.ctx, fu.pd, NULL);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr qa;
	struct ibv_ah_attr aa;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_ah *ah;

	assert_non_null(par);
	cq = ibv_create_cq(fu.ctx, 16, NULL, NULL, 0);
	assert_non_null(cq);
	fu_expect_int(ibv_dealloc_pd(fu.pd), EBUSY, "dealloc PD of a parent");

	mr = ibv_reg_mr(par, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	fu_expect(mr->pd == par, "mr->pd %p, want the parent", (void *)mr->pd);
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with MR");
	assert_int_equal(ibv_dereg_mr(mr), 0);

	mw = ibv_alloc_mw(par, IBV_MW_TYPE_2);
	assert_non_null(mw);
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with MW");
	assert_int_equal(ibv_dealloc_mw(mw), 0);

	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(par, &sa);
	assert_non_null(srq);
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with SRQ");

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.srq = srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	qp = ibv_create_qp(par, &qa);
	assert_non_null(qp);
	fu_expect(qp->pd == par, "qp->pd %p, want the parent", (void *)qp->pd);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with QP");
	assert_int_equal(ibv_destroy_qp(qp), 0);
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with SRQ");
	assert_int_equal(ibv_destroy_srq(srq), 0);

	memset(&aa, 0, sizeof(aa));
	aa.dlid = dp_port_lid(fu.ctx);
	aa.port_num = 1;
	fu_av_fix(fu.ctx, &aa);
	ah = ibv_create_ah(par, &aa);
	assert_non_null(ah);
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with AH");
	assert_int_equal(ibv_destroy_ah(ah), 0);

	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc idle parent");
	fu_expect_int(ibv_dealloc_pd(par), EINVAL, "dealloc parent twice");
	assert_int_equal(ibv_destroy_cq(cq), 0);
	munmap(buf, fu.pg);
	fu_done();
}

/* ---- the custom allocator ---------------------------------------------- */

#define N_LIVE 16

/* What the counting allocator saw; pd_context points here. */
struct counting {
	unsigned int n_alloc[4], n_free[4];	/* by SRDMA_RES_TYPE_* */
	unsigned int n_bad;			/* wrong pd/align/type */
	void *live[N_LIVE];			/* alloc gave, free not yet */
	struct ibv_pd *pd;			/* the parent domain */
	int mode;			/* 0 memalign, 1 USE_DEFAULT, 2 NULL */
};

static void *counting_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
			    size_t alignment, uint64_t resource_type)
{
	struct counting *c = pd_context;
	void *p = NULL;
	int i;

	if ((c->pd && pd != c->pd) || alignment != SRDMA_RES_ALIGN ||
	    resource_type < SRDMA_RES_TYPE_QP ||
	    resource_type > SRDMA_RES_TYPE_SRQ || !size) {
		c->n_bad++;
		return NULL;
	}
	c->n_alloc[resource_type]++;
	if (c->mode == 1)
		return IBV_ALLOCATOR_USE_DEFAULT;
	if (c->mode == 2)
		return NULL;
	if (posix_memalign(&p, alignment, size))
		return NULL;
	memset(p, 0xa5, size);	/* the library must not rely on zeros */
	for (i = 0; i < N_LIVE; i++) {
		if (!c->live[i]) {
			c->live[i] = p;
			return p;
		}
	}
	c->n_bad++;
	free(p);
	return NULL;
}

static void counting_free(struct ibv_pd *pd, void *pd_context, void *ptr,
			  uint64_t resource_type)
{
	struct counting *c = pd_context;
	int i;

	if ((c->pd && pd != c->pd) || resource_type < SRDMA_RES_TYPE_QP ||
	    resource_type > SRDMA_RES_TYPE_SRQ) {
		c->n_bad++;
		return;
	}
	c->n_free[resource_type]++;
	for (i = 0; i < N_LIVE; i++) {
		if (c->live[i] == ptr) {
			c->live[i] = NULL;
			free(ptr);
			return;
		}
	}
	c->n_bad++;	/* a pointer alloc never gave */
}

static struct ibv_pd *alloc_counting_parent(struct counting *c)
{
	struct ibv_parent_domain_init_attr pa;

	memset(&pa, 0, sizeof(pa));
	pa.pd = fu.pd;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
		       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.alloc = counting_alloc;
	pa.free = counting_free;
	pa.pd_context = c;
	c->pd = ibv_alloc_parent_domain(fu.ctx, &pa);
	assert_non_null(c->pd);
	return c->pd;
}

/* One QP, CQ (MASK_PD) and SRQ on @par; returns how many were created. */
static int make_objects(struct ibv_pd *par, struct ibv_cq_ex **cq,
			struct ibv_srq **srq, struct ibv_qp **qp)
{
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr qa;
	int n = 0;

	*srq = NULL;
	*qp = NULL;
	*cq = create_cq_pd(fu.ctx, par);
	if (!*cq)
		return n;
	n++;
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 8;
	sa.attr.max_sge = 1;
	*srq = ibv_create_srq(par, &sa);
	if (!*srq)
		return n;
	n++;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = ibv_cq_ex_to_cq(*cq);
	qa.recv_cq = ibv_cq_ex_to_cq(*cq);
	qa.srq = *srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_send_sge = 1;
	*qp = ibv_create_qp(par, &qa);
	if (*qp)
		n++;
	return n;
}

static void destroy_objects(struct ibv_cq_ex *cq, struct ibv_srq *srq,
			    struct ibv_qp *qp)
{
	if (qp)
		assert_int_equal(ibv_destroy_qp(qp), 0);
	if (srq)
		assert_int_equal(ibv_destroy_srq(srq), 0);
	if (cq)
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
}

static bool is_live(struct counting *c, const void *p)
{
	int i;

	for (i = 0; i < N_LIVE; i++)
		if (c->live[i] == p)
			return true;
	return false;
}

static void test_allocator_called_per_object(void **state)
{
	struct counting c;
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_pd *par;
	int t;

	memset(&c, 0, sizeof(c));
	par = alloc_counting_parent(&c);
	fu_expect_int(make_objects(par, &cq, &srq, &qp), 3,
		      "QP, CQ and SRQ on a parent domain with allocators");
	for (t = 1; t <= 3; t++)
		fu_expect(c.n_alloc[t] == 1 && c.n_free[t] == 0,
			  "type %d: %u allocs %u frees after create, want 1 0",
			  t, c.n_alloc[t], c.n_free[t]);
	/* The objects' public parts are what alloc gave. */
	fu_expect(is_live(&c, qp) && is_live(&c, srq) && is_live(&c, cq),
		  "qp %p srq %p cq %p not from the allocator", (void *)qp,
		  (void *)srq, (void *)cq);
	/* An object on the protection PD never calls the allocator. */
	{
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4}};
		struct ibv_srq *plain = ibv_create_srq(fu.pd, &sa);

		assert_non_null(plain);
		assert_int_equal(ibv_destroy_srq(plain), 0);
		fu_expect(c.n_alloc[SRDMA_RES_TYPE_SRQ] == 1,
			  "SRQ on the PD called the parent's allocator");
	}
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent in use");
	destroy_objects(cq, srq, qp);
	for (t = 1; t <= 3; t++)
		fu_expect(c.n_free[t] == 1, "type %d: %u frees, want 1", t,
			  c.n_free[t]);
	for (t = 0; t < N_LIVE; t++)
		fu_expect(!c.live[t], "alloc gave %p, free never got it",
			  c.live[t]);
	fu_expect(!c.n_bad, "%u bad calls (pd, alignment, type or pointer)",
		  c.n_bad);
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent");
	fu_done();
}

static void test_allocator_use_default(void **state)
{
	struct counting c;
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_pd *par;
	int t;

	memset(&c, 0, sizeof(c));
	c.mode = 1;
	par = alloc_counting_parent(&c);
	fu_expect_int(make_objects(par, &cq, &srq, &qp), 3,
		      "objects with IBV_ALLOCATOR_USE_DEFAULT");
	destroy_objects(cq, srq, qp);
	for (t = 1; t <= 3; t++)
		fu_expect(c.n_alloc[t] == 1 && c.n_free[t] == 0,
			  "type %d: %u allocs %u frees, want 1 0 (the "
			  "library's own memory goes back to the library)", t,
			  c.n_alloc[t], c.n_free[t]);
	fu_expect(!c.n_bad, "%u bad calls", c.n_bad);
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent");
	fu_done();
}

static void test_allocator_failure(void **state)
{
	struct counting c;
	struct ibv_cq_ex *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_pd *par;

	memset(&c, 0, sizeof(c));
	c.mode = 2;
	par = alloc_counting_parent(&c);
	errno = 0;
	fu_expect_int(make_objects(par, &cq, &srq, &qp), 0,
		      "CQ when alloc returns NULL");
	fu_expect(errno == ENOMEM, "errno %s, want ENOMEM",
		  fu_errname(errno));
	/* The CQ's failure changed nothing: a QP fails the same way. */
	c.mode = 0;
	cq = create_cq_pd(fu.ctx, par);
	assert_non_null(cq);
	c.mode = 2;
	{
		struct ibv_qp_init_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(cq);
		qa.qp_type = IBV_QPT_UD;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		errno = 0;
		qp = ibv_create_qp(par, &qa);
		fu_expect(!qp && errno == ENOMEM, "QP when alloc fails: %p %s",
			  (void *)qp, fu_errname(errno));
	}
	destroy_objects(cq, NULL, NULL);
	fu_expect(c.n_free[SRDMA_RES_TYPE_CQ] == 1 &&
		  !c.n_free[SRDMA_RES_TYPE_QP], "frees: cq %u qp %u",
		  c.n_free[SRDMA_RES_TYPE_CQ], c.n_free[SRDMA_RES_TYPE_QP]);
	fu_expect(!c.n_bad, "%u bad calls", c.n_bad);
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent (nothing on it)");
	fu_done();
}

/* Threads creating and destroying SRQs on one parent domain at once: the
 * allocator's bookkeeping is shared (and run under TSan). */
#define N_THREADS 4
#define N_ROUNDS  64

static _Atomic unsigned int mt_alloc, mt_free;

static void *mt_alloc_fn(struct ibv_pd *pd, void *pd_context, size_t size,
			 size_t alignment, uint64_t resource_type)
{
	void *p = NULL;

	(void)pd;
	(void)pd_context;
	(void)resource_type;
	if (posix_memalign(&p, alignment, size))
		return NULL;
	atomic_fetch_add(&mt_alloc, 1);
	return p;
}

static void mt_free_fn(struct ibv_pd *pd, void *pd_context, void *ptr,
		       uint64_t resource_type)
{
	(void)pd;
	(void)pd_context;
	(void)resource_type;
	atomic_fetch_add(&mt_free, 1);
	free(ptr);
}

static void *mt_worker(void *arg)
{
	struct ibv_pd *par = arg;
	long bad = 0;
	int i;

	for (i = 0; i < N_ROUNDS; i++) {
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = 2}};
		struct ibv_srq *srq = ibv_create_srq(par, &sa);

		if (!srq || ibv_destroy_srq(srq))
			bad++;
	}
	return (void *)bad;
}

static void test_allocator_threads(void **state)
{
	struct ibv_parent_domain_init_attr pa;
	pthread_t th[N_THREADS];
	struct ibv_pd *par;
	long bad = 0;
	int i;

	memset(&pa, 0, sizeof(pa));
	pa.pd = fu.pd;
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	pa.alloc = mt_alloc_fn;
	pa.free = mt_free_fn;
	par = ibv_alloc_parent_domain(fu.ctx, &pa);
	assert_non_null(par);
	atomic_store(&mt_alloc, 0);
	atomic_store(&mt_free, 0);
	for (i = 0; i < N_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, mt_worker, par),
				 0);
	for (i = 0; i < N_THREADS; i++) {
		void *r;

		assert_int_equal(pthread_join(th[i], &r), 0);
		bad += (long)r;
	}
	fu_expect(!bad, "%ld SRQ create/destroy failures", bad);
	fu_expect(atomic_load(&mt_alloc) == N_THREADS * N_ROUNDS &&
		  atomic_load(&mt_free) == N_THREADS * N_ROUNDS,
		  "%u allocs %u frees, want %d each", atomic_load(&mt_alloc),
		  atomic_load(&mt_free), N_THREADS * N_ROUNDS);
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent");
	fu_done();
}

/* ---- traffic across a parent domain and its protection PD ------------- */

static struct dp_ep A, B;

static int setup_pair(void **state)
{
	dp_ep_open(&A, false);
	dp_ep_open(&B, false);
	fu.pg = fu_page();
	fu_failures = 0;
	return 0;
}

static int teardown_pair(void **state)
{
	dp_ep_close(&A);
	dp_ep_close(&B);
	return 0;
}

/* A RC QP of @e on @pd (its own CQ), connected later. */
static struct ibv_qp *rc_qp_on(struct dp_ep *e, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	assert_non_null(qp);
	return qp;
}

static void connect_pair(void)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};

	dp_connect(&A, B.qp->qp_num, B.lid, &k);
	dp_connect(&B, A.qp->qp_num, A.lid, &k);
}

/*
 * @qp of A writes 64 bytes from its @lmr to B's MR; B writes into A's
 * @rmr (through a window's @rkey when nonzero); A reads it back.
 */
static void rdma_rounds(struct ibv_mr *lmr, struct ibv_mr *rmr, uint32_t rkey,
			const char *what)
{
	char *l = lmr->addr, *r = rmr->addr;
	struct ibv_wc wc;

	memset(l, 'a', 64);
	memset(B.buf, 0, 64);
	fu_expect_int(dp_post(A.qp, 1, IBV_WR_RDMA_WRITE, (uintptr_t)l, 64,
			      lmr->lkey, (uintptr_t)B.buf, B.mr->rkey), 0,
		      what);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, what))
		fu_expect(B.buf[63] == 'a', "%s: write not landed", what);
	memset(B.buf, 'b', 64);
	memset(r, 0, 64);
	if (!rkey)
		rkey = rmr->rkey;
	fu_expect_int(dp_post(B.qp, 2, IBV_WR_RDMA_WRITE, (uintptr_t)B.buf, 64,
			      B.mr->lkey, (uintptr_t)r, rkey), 0, what);
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, what))
		fu_expect(r[0] == 'b' && r[63] == 'b',
			  "%s: B's write into A not landed", what);
	memset(B.buf + 64, 'c', 64);
	fu_expect_int(dp_post(A.qp, 3, IBV_WR_RDMA_READ, (uintptr_t)r, 64,
			      rmr->lkey, (uintptr_t)B.buf + 64, B.mr->rkey), 0,
		      what);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, what))
		fu_expect(r[0] == 'c' && r[63] == 'c', "%s: read not landed",
			  what);
}

static void test_rdma_qp_on_parent_mr_on_pd(void **state)
{
	struct ibv_pd *par = alloc_parent(A.ctx, A.pd, NULL);

	assert_non_null(par);
	A.qp = rc_qp_on(&A, par);
	B.qp = rc_qp_on(&B, B.pd);
	connect_pair();
	/* A's only MR is on its protection PD. */
	rdma_rounds(A.mr, A.mr, 0, "QP on parent, MR on PD");
	assert_int_equal(ibv_destroy_qp(A.qp), 0);
	A.qp = NULL;
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent");
	fu_done();
}

static void test_rdma_qp_on_pd_mr_on_parent(void **state)
{
	struct ibv_pd *par = alloc_parent(A.ctx, A.pd, NULL);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	assert_non_null(par);
	mr = ibv_reg_mr(par, buf, fu.pg, DP_ALL_ACCESS);
	assert_non_null(mr);
	A.qp = rc_qp_on(&A, A.pd);
	B.qp = rc_qp_on(&B, B.pd);
	connect_pair();
	rdma_rounds(mr, mr, 0, "QP on PD, MR on parent");
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with MR");
	assert_int_equal(ibv_dereg_mr(mr), 0);
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent");
	munmap(buf, fu.pg);
	fu_done();
}

/*
 * Windows: the QP that binds must be in the window's PD (C10-72) and a
 * type 2 window's MR in its PD too; a parent domain counts as its PD.
 * Type 1 (ibv_bind_mw): window and MR on the parent, QP on the PD, then
 * window and MR on the PD, QP on the parent (verbs.h's ibv_bind_mw itself
 * refuses an MR whose ibv_pd pointer is not the window's: EPERM). Type 2
 * (IBV_WR_BIND_MW): window on the parent, MR and QP on the PD. B writes
 * through the window each time.
 */
static void test_mw_across_parent_and_pd(void **state)
{
	struct ibv_pd *par = alloc_parent(A.ctx, A.pd, NULL);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	const unsigned int acc = DP_ALL_ACCESS | IBV_ACCESS_MW_BIND;
	struct ibv_send_wr wr, *bad;
	struct ibv_mw_bind_info *bi;
	struct ibv_mr *mr_par, *mr_pd;
	struct ibv_mw_bind mb;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t rkey;
	int round;

	assert_non_null(par);
	mr_par = ibv_reg_mr(par, buf, fu.pg, acc);
	mr_pd = ibv_reg_mr(A.pd, buf, fu.pg, acc);
	assert_non_null(mr_par);
	assert_non_null(mr_pd);
	for (round = 0; round < 3; round++) {
		struct ibv_pd *mw_pd = round == 1 ? A.pd : par;
		struct ibv_pd *qp_pd = round == 1 ? par : A.pd;
		struct ibv_mr *bmr = round == 0 ? mr_par : mr_pd;

		mw = ibv_alloc_mw(mw_pd, round == 2 ? IBV_MW_TYPE_2 :
						      IBV_MW_TYPE_1);
		assert_non_null(mw);
		A.qp = rc_qp_on(&A, qp_pd);
		B.qp = rc_qp_on(&B, B.pd);
		connect_pair();
		if (round < 2) {
			memset(&mb, 0, sizeof(mb));
			mb.wr_id = 7;
			mb.send_flags = IBV_SEND_SIGNALED;
			bi = &mb.bind_info;
			bi->mr = bmr;
			bi->addr = (uintptr_t)buf;
			bi->length = 128;
			bi->mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
			fu_expect_int(ibv_bind_mw(A.qp, mw, &mb), 0,
				      "type 1 bind_mw");
			rkey = mw->rkey;
		} else {
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = 7;
			wr.opcode = IBV_WR_BIND_MW;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.bind_mw.mw = mw;
			wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
			bi = &wr.bind_mw.bind_info;
			bi->mr = bmr;
			bi->addr = (uintptr_t)buf;
			bi->length = 128;
			bi->mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
			fu_expect_int(ibv_post_send(A.qp, &wr, &bad), 0,
				      "type 2 bind");
			rkey = wr.bind_mw.rkey;
		}
		if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "bind")) {
			memset(B.buf, 'w', 64);
			memset(buf, 0, 64);
			fu_expect_int(dp_post(B.qp, 9, IBV_WR_RDMA_WRITE,
					      (uintptr_t)B.buf, 64, B.mr->lkey,
					      (uintptr_t)buf, rkey), 0,
				      "write through window");
			if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc,
					 "write through window"))
				fu_expect(buf[0] == 'w' && buf[63] == 'w',
					  "round %d: not landed", round);
		}
		assert_int_equal(ibv_destroy_qp(A.qp), 0);
		assert_int_equal(ibv_destroy_qp(B.qp), 0);
		A.qp = B.qp = NULL;
		assert_int_equal(ibv_dealloc_mw(mw), 0);
	}
	assert_int_equal(ibv_dereg_mr(mr_par), 0);
	assert_int_equal(ibv_dereg_mr(mr_pd), 0);
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent");
	munmap(buf, fu.pg);
	fu_done();
}

/* SENDs into an SRQ on B's parent domain, consumed by B's QP on the PD,
 * the receive buffer's MR on the PD. */
static void test_send_to_srq_on_parent(void **state)
{
	struct ibv_pd *par = alloc_parent(B.ctx, B.pd, NULL);
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr ia;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge s;
	struct ibv_srq *srq;
	struct ibv_wc wc;
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};

	assert_non_null(par);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(par, &sa);
	assert_non_null(srq);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = B.cq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_send_sge = 1;
	B.qp = ibv_create_qp(B.pd, &ia);
	assert_non_null(B.qp);
	A.qp = rc_qp_on(&A, A.pd);
	dp_connect(&A, B.qp->qp_num, B.lid, &k);
	dp_connect(&B, A.qp->qp_num, A.lid, &k);
	s.addr = (uintptr_t)B.buf;
	s.length = 64;
	s.lkey = B.mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 11;
	rwr.sg_list = &s;
	rwr.num_sge = 1;
	fu_expect_int(ibv_post_srq_recv(srq, &rwr, &rbad), 0, "post_srq_recv");
	memset(B.buf, 0, 64);
	memset(A.buf, 's', 64);
	fu_expect_int(dp_post(A.qp, 12, IBV_WR_SEND, (uintptr_t)A.buf, 64,
			      A.mr->lkey, 0, 0), 0, "send");
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "send completion");
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "SRQ receive"))
		fu_expect(wc.wr_id == 11 && B.buf[0] == 's' &&
			  B.buf[63] == 's', "SRQ receive: wr_id %llu",
			  (unsigned long long)wc.wr_id);
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent with SRQ");
	assert_int_equal(ibv_destroy_qp(B.qp), 0);
	B.qp = NULL;
	assert_int_equal(ibv_destroy_srq(srq), 0);
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent");
	fu_done();
}

/* UD: QP and AH on the parent domain, MR on the PD. */
static void test_ud_on_parent(void **state)
{
	struct ibv_pd *par = alloc_parent(A.ctx, A.pd, NULL);
	struct ibv_qp_init_attr ia;
	struct ibv_send_wr wr, *bad;
	struct ibv_ah_attr aa;
	struct dp_conn k = {0};
	struct ibv_sge s;
	struct ibv_wc wc;

	assert_non_null(par);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = A.cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	A.qp = ibv_create_qp(par, &ia);
	assert_non_null(A.qp);
	dp_qp_create(&B, IBV_QPT_UD, 0);
	dp_connect(&A, 0, A.lid, &k);
	dp_connect(&B, 0, B.lid, &k);
	dp_recv_buf(&B, 5, 0, 40 + 64);
	memset(&aa, 0, sizeof(aa));
	aa.dlid = B.lid;
	aa.port_num = 1;
	fu_av_fix(A.ctx, &aa);
	A.ah = ibv_create_ah(par, &aa);
	assert_non_null(A.ah);
	memset(A.buf, 'u', 64);
	s.addr = (uintptr_t)A.buf;
	s.length = 64;
	s.lkey = A.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 6;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.ud.ah = A.ah;
	wr.wr.ud.remote_qpn = B.qp->qp_num;
	wr.wr.ud.remote_qkey = DP_QKEY;
	fu_expect_int(ibv_post_send(A.qp, &wr, &bad), 0, "UD send");
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "UD send completion");
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "UD receive"))
		fu_expect(B.buf[40] == 'u' && B.buf[40 + 63] == 'u',
			  "UD payload not landed");
	fu_expect_int(ibv_dealloc_pd(par), EBUSY, "dealloc parent: QP, AH");
	ibv_destroy_ah(A.ah);
	A.ah = NULL;
	ibv_destroy_qp(A.qp);
	A.qp = NULL;
	fu_expect_int(ibv_dealloc_pd(par), 0, "dealloc parent");
	fu_done();
}

#define PAIR_TEST(t) cmocka_unit_test_setup_teardown(t, setup_pair, \
						     teardown_pair)

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_td_alloc_dealloc),
		FU_TEST(test_parent_domain_bad_attr),
		FU_TEST(test_td_busy_while_parent_uses_it),
		FU_TEST(test_cq_ex_needs_parent_domain),
		FU_TEST(test_parent_busy_with_objects),
		FU_TEST(test_allocator_called_per_object),
		FU_TEST(test_allocator_use_default),
		FU_TEST(test_allocator_failure),
		FU_TEST(test_allocator_threads),
		PAIR_TEST(test_rdma_qp_on_parent_mr_on_pd),
		PAIR_TEST(test_rdma_qp_on_pd_mr_on_parent),
		PAIR_TEST(test_mw_across_parent_and_pd),
		PAIR_TEST(test_send_to_srq_on_parent),
		PAIR_TEST(test_ud_on_parent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
