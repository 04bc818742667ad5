// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_atomic_write.c - RDMA ATOMIC WRITE (IBV_WR_ATOMIC_WRITE,
 * IBV_QP_EX_WITH_ATOMIC_WRITE; docs/design/dm.md): 8 bytes stored whole
 * at an 8-byte aligned remote address under REMOTE_WRITE access, through
 * ibv_wr_atomic_write and through ibv_post_send (operand in an SGE, or
 * inline whatever max_inline_data); the completion is IBV_WC_ATOMIC_WRITE.
 * Errors: unaligned address, operand not 8 bytes, a UC QP, a NULL operand
 * (EINVAL at post), a key without REMOTE_WRITE (REM_ACCESS_ERR), a QP
 * without remote write access (REM_INV_REQ_ERR). Atomicity: while one QP
 * stores two alternating patterns, FETCH_ADD(0) through another QP never
 * reads a mix of them. Every case runs over the wire too
 * (net.func.test_atomic_write, SRDMA_TRANSPORT=net: opcode 0x1D, RETH and
 * the 8-byte operand, answered with a READ_RESP_ONLY of no payload).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>

#include "dp_util.h"

#define PAT_A 0xaaaaaaaaaaaaaaaaull
#define PAT_B 0x5555555555555555ull

struct pair {
	struct dp_ep a, b;	/* a initiates, b is the target */
};

static struct ibv_qp *qpx_create(struct dp_ep *e, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr_ex ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.qp_type = type;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.pd = e->pd;
	ia.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			    IBV_QP_EX_WITH_RDMA_WRITE;
	return ibv_create_qp_ex(e->ctx, &ia);
}

static void pair_open(struct pair *p, unsigned int b_access)
{
	struct dp_conn ka = {.access = DP_REMOTE_ACCESS};
	struct dp_conn kb = {.access = b_access};

	dp_ep_open(&p->a, false);
	dp_ep_open(&p->b, false);
	p->a.qp = qpx_create(&p->a, IBV_QPT_RC);
	p->b.qp = qpx_create(&p->b, IBV_QPT_RC);
	assert_non_null(p->a.qp);
	assert_non_null(p->b.qp);
	dp_connect(&p->a, p->b.qp->qp_num, p->b.lid, &ka);
	dp_connect(&p->b, p->a.qp->qp_num, p->a.lid, &kb);
}

static void pair_close(struct pair *p)
{
	dp_ep_close(&p->a);
	dp_ep_close(&p->b);
}

/* ibv_wr_atomic_write of @val to @raddr/@rkey; the ibv_wr_complete code. */
static int wr_aw(struct ibv_qp *qp, uint64_t wr_id, uint32_t rkey,
		 uint64_t raddr, const void *val)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(x);
	x->wr_id = wr_id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(x, rkey, raddr, val);
	return ibv_wr_complete(x);
}

static void test_aw_cap(void **state)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(fu.ctx, NULL, &ax), 0);
	fu_expect(!!(ax.device_cap_flags_ex & (1ULL << 40)),
		  "ATOMIC_WRITE cap %d on a %s port",
		  !!(ax.device_cap_flags_ex & (1ULL << 40)),
		  fu_is_roce(fu.ctx) ? "RoCE" : "IB");
	fu_done();
}

static void test_aw_stores(void **state)
{
	uint64_t v = 0x0123456789abcdefull, got;
	uint64_t *dst;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct pair p;

	pair_open(&p, DP_REMOTE_ACCESS);
	dst = (uint64_t *)(p.b.buf + 64);
	*dst = 0;
	assert_int_equal(wr_aw(p.a.qp, 1, p.b.mr->rkey, (uintptr_t)dst, &v),
			 0);
	if (dp_expect_wc(p.a.cq, IBV_WC_SUCCESS, &wc, "wr_atomic_write")) {
		fu_expect_int(wc.opcode, IBV_WC_ATOMIC_WRITE, "wc opcode");
		fu_expect_int(wc.wr_id, 1, "wr_id");
	}
	fu_expect(*dst == v, "stored %#llx, want %#llx",
		  (unsigned long long)*dst, (unsigned long long)v);
	dp_expect_no_wc(p.b.cq, "target CQ");

	/* ibv_post_send: the operand from an SGE of a registered buffer... */
	memcpy(p.a.buf, &(uint64_t){PAT_A}, 8);
	s = (struct ibv_sge){(uintptr_t)p.a.buf, 8, p.a.mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = p.b.mr->rkey;
	assert_int_equal(ibv_post_send(p.a.qp, &wr, &bad), 0);
	dp_expect_wc(p.a.cq, IBV_WC_SUCCESS, &wc, "post_send ATOMIC_WRITE");
	memcpy(&got, dst, 8);
	fu_expect(got == PAT_A, "SGE operand: %#llx", (unsigned long long)got);
	/* ... or inline, although max_inline_data is 0 here. */
	got = PAT_B;
	s = (struct ibv_sge){(uintptr_t)&got, 8, 0};
	wr.wr_id = 3;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	assert_int_equal(ibv_post_send(p.a.qp, &wr, &bad), 0);
	dp_expect_wc(p.a.cq, IBV_WC_SUCCESS, &wc, "inline ATOMIC_WRITE");
	fu_expect(*dst == PAT_B, "inline operand: %#llx",
		  (unsigned long long)*dst);
	pair_close(&p);
	fu_done();
}

static void test_aw_post_errors(void **state)
{
	uint64_t v = 1;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge s;
	struct pair p;
	struct ibv_qp *uc;
	struct ibv_qp_init_attr ia;

	pair_open(&p, DP_REMOTE_ACCESS);
	fu_expect_int(wr_aw(p.a.qp, 1, p.b.mr->rkey, (uintptr_t)p.b.buf + 4,
			    &v), EINVAL, "unaligned remote address");
	fu_expect_int(wr_aw(p.a.qp, 1, p.b.mr->rkey, (uintptr_t)p.b.buf,
			    NULL), EINVAL, "NULL operand");
	s = (struct ibv_sge){(uintptr_t)p.a.buf, 4, p.a.mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)p.b.buf;
	wr.wr.rdma.rkey = p.b.mr->rkey;
	fu_expect_int(ibv_post_send(p.a.qp, &wr, &bad), EINVAL,
		      "4-byte operand");
	dp_expect_no_wc(p.a.cq, "refused posts");
	/* A UC QP has no atomics. */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = p.a.cq;
	ia.qp_type = IBV_QPT_UC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	uc = ibv_create_qp(p.a.pd, &ia);
	assert_non_null(uc);
	s.length = 8;
	fu_expect_int(ibv_post_send(uc, &wr, &bad), EINVAL, "on a UC QP");
	ibv_destroy_qp(uc);
	pair_close(&p);
	fu_done();
}

static void test_aw_remote_errors(void **state)
{
	uint64_t v = 7;
	struct ibv_mr *ro;
	struct ibv_wc wc;
	struct pair p;

	/* A key without REMOTE_WRITE. */
	pair_open(&p, DP_REMOTE_ACCESS);
	ro = ibv_reg_mr(p.b.pd, p.b.buf, fu_page(),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(ro);
	assert_int_equal(wr_aw(p.a.qp, 1, ro->rkey, (uintptr_t)p.b.buf, &v),
			 0);
	dp_expect_wc(p.a.cq, IBV_WC_REM_ACCESS_ERR, &wc, "read-only key");
	ibv_dereg_mr(ro);
	pair_close(&p);
	/* A responder QP without remote write access. */
	pair_open(&p, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(wr_aw(p.a.qp, 1, p.b.mr->rkey, (uintptr_t)p.b.buf,
			       &v), 0);
	dp_expect_wc(p.a.cq, IBV_WC_REM_INV_REQ_ERR, &wc,
		     "QP without REMOTE_WRITE");
	pair_close(&p);
	fu_done();
}

/* Atomicity: a writer alternates two patterns, a reader FETCH_ADDs 0. */
struct race {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint32_t rkey;
	uint64_t raddr;
	int n, bad;
	atomic_bool stop;
};

static void *writer(void *arg)
{
	struct race *r = arg;
	uint64_t pat[2] = {PAT_A, PAT_B};
	struct ibv_wc wc;
	int i;

	for (i = 0; i < r->n && !atomic_load(&r->stop); i++) {
		if (wr_aw(r->qp, (uint64_t)i, r->rkey, r->raddr, &pat[i & 1]) ||
		    !dp_poll(r->cq, &wc, 1000) || wc.status != IBV_WC_SUCCESS) {
			r->bad++;
			break;
		}
	}
	atomic_store(&r->stop, true);
	return NULL;
}

static void test_aw_atomic_vs_fetch_add(void **state)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct dp_ep w, rd, t;
	struct ibv_qp *t2;
	struct race r;
	pthread_t th;
	uint64_t *dst, old;
	int reads = 0, torn = 0;
	struct ibv_wc wc;

	dp_ep_open(&w, false);
	dp_ep_open(&rd, false);
	dp_ep_open(&t, false);
	w.qp = qpx_create(&w, IBV_QPT_RC);
	rd.qp = qpx_create(&rd, IBV_QPT_RC);
	t.qp = qpx_create(&t, IBV_QPT_RC);
	t2 = qpx_create(&t, IBV_QPT_RC);
	assert_true(w.qp && rd.qp && t.qp && t2);
	dp_connect(&w, t.qp->qp_num, t.lid, &k);
	dp_connect(&t, w.qp->qp_num, w.lid, &k);
	assert_int_equal(dp_qp_connect(t2, rd.qp->qp_num, rd.lid, &k), 0);
	dp_connect(&rd, t2->qp_num, t.lid, &k);
	dst = (uint64_t *)t.buf;
	*dst = PAT_A;

	memset(&r, 0, sizeof(r));
	r.qp = w.qp;
	r.cq = w.cq;
	r.rkey = t.mr->rkey;
	r.raddr = (uintptr_t)dst;
	r.n = 2000;
	assert_int_equal(pthread_create(&th, NULL, writer, &r), 0);
	while (!atomic_load(&r.stop) && reads < 2000) {
		assert_int_equal(dp_post(rd.qp, 9, IBV_WR_ATOMIC_FETCH_AND_ADD,
					 (uintptr_t)rd.buf, 8, rd.mr->lkey,
					 (uintptr_t)dst, t.mr->rkey), 0);
		/* dp_post adds 1: undo it with the next one's view. */
		if (!dp_poll(rd.cq, &wc, 1000) ||
		    wc.status != IBV_WC_SUCCESS) {
			torn = -1;
			break;
		}
		memcpy(&old, rd.buf, 8);
		/* Values seen: a pattern, plus the adds since its store. */
		if ((old & ~0xffffull) != (PAT_A & ~0xffffull) &&
		    (old & ~0xffffull) != (PAT_B & ~0xffffull))
			torn++;
		reads++;
	}
	atomic_store(&r.stop, true);
	pthread_join(th, NULL);
	fu_expect(torn == 0, "%d torn values in %d reads", torn, reads);
	fu_expect(r.bad == 0, "writer failed");
	fu_expect(reads > 0, "no reads");
	ibv_destroy_qp(t2);
	dp_ep_close(&w);
	dp_ep_close(&rd);
	dp_ep_close(&t);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_aw_cap),
		FU_TEST(test_aw_stores),
		FU_TEST(test_aw_post_errors),
		FU_TEST(test_aw_remote_errors),
		FU_TEST(test_aw_atomic_vs_fetch_add),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
