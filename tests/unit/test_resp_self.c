// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_resp_self.c - the responder stage (engine/responder.h) run against
 * one of our own QPs, as the net transport's progress thread runs it on
 * each packet: srdma_resp_self() finds the QP, the split receive path
 * (rq_begin, rq_consume at the first packet, scatter per packet, the CQE
 * at the last) delivers into a receive posted on it, and the one key
 * check answers with the right SRDMA_KCHK_* code for rkeys (including a
 * type 2 window's QP rule), receive buffers and atomics.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/core.h"
#include "core/dp.h"
#include "engine/responder.h"

struct fix {
	struct srdma_context *ctx;
	struct srdma_pd *pd, *pd2;
	struct srdma_cq *cq;
	struct srdma_qp *qp;
	struct srdma_mr *mr;		/* buf: LOCAL_WRITE, REMOTE_*, BIND */
	struct srdma_mr *ro;		/* rbuf: no LOCAL_WRITE */
	struct srdma_mr *other;		/* obuf, in pd2 */
	char buf[8192] __attribute__((aligned(64)));
	char rbuf[256];
	char obuf[256];
};

static struct srdma_mr *reg(struct srdma_pd *pd, void *addr, size_t len,
			    unsigned int access)
{
	struct srdma_mr_args a = {
		.addr = addr,
		.length = len,
		.iova = (uintptr_t)addr,
		.access = access,
		.dmabuf_fd = -1,
	};
	struct srdma_mr *mr;

	assert_int_equal(srdma_mr_reg(&pd->ibpd, &a, &mr), 0);
	return mr;
}

/* A UD QP in RTR (it receives), with a CQ, and three MRs. */
static int setup(void **state)
{
	struct srdma_cq_args ca = { .cqe = 16 };
	struct ibv_qp_init_attr_ex qa = { 0 };
	struct ibv_qp_attr at = { 0 };
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(srdma_context_open(srdma_device_get(), &f->ctx), 0);
	assert_int_equal(srdma_pd_alloc(f->ctx, &f->pd), 0);
	assert_int_equal(srdma_pd_alloc(f->ctx, &f->pd2), 0);
	assert_int_equal(srdma_cq_create(f->ctx, &ca, &f->cq), 0);
	qa.qp_type = IBV_QPT_UD;
	qa.send_cq = &f->cq->ib.cq;
	qa.recv_cq = &f->cq->ib.cq;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 2;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = &f->pd->ibpd;
	assert_int_equal(srdma_qp_create(f->ctx, &qa, &f->qp), 0);
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qkey = 0x11111111;
	assert_int_equal(srdma_qp_modify(f->qp, &at, IBV_QP_STATE |
					 IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_QKEY), 0);
	at.qp_state = IBV_QPS_RTR;
	assert_int_equal(srdma_qp_modify(f->qp, &at, IBV_QP_STATE), 0);
	f->mr = reg(f->pd, f->buf, sizeof(f->buf),
		    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		    IBV_ACCESS_MW_BIND);
	f->ro = reg(f->pd, f->rbuf, sizeof(f->rbuf), IBV_ACCESS_REMOTE_READ);
	f->other = reg(f->pd2, f->obuf, sizeof(f->obuf),
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	assert_int_equal(srdma_mr_dereg(&f->mr->ibmr), 0);
	assert_int_equal(srdma_mr_dereg(&f->ro->ibmr), 0);
	assert_int_equal(srdma_mr_dereg(&f->other->ibmr), 0);
	assert_int_equal(srdma_qp_destroy(f->qp), 0);
	assert_int_equal(srdma_cq_destroy(f->cq), 0);
	assert_int_equal(srdma_pd_dealloc(f->pd2), 0);
	assert_int_equal(srdma_pd_dealloc(f->pd), 0);
	assert_int_equal(srdma_context_close(f->ctx), 0);
	free(f);
	return 0;
}

static void post_recv(struct fix *f, uint64_t wr_id, struct ibv_sge *sge,
		      int n)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sge,
				  .num_sge = n };
	struct ibv_recv_wr *bad;

	assert_int_equal(srdma_qp_post_recv(f->qp, &wr, &bad), 0);
}

static uint32_t qpn(const struct fix *f)
{
	return f->qp->ib.qp.qp_num;
}

/* srdma_resp_self() finds live QPs of ours only. */
static void test_self_lookup(void **state)
{
	struct fix *f = *state;
	struct srdma_target t;

	assert_int_equal(srdma_resp_self(f->ctx, qpn(f), &t), 0);
	assert_ptr_equal(t.ctx, f->ctx);
	assert_true(t.p->self);
	assert_ptr_equal(t.qp, f->qp->sh);
	assert_int_equal(t.qpn, qpn(f));
	assert_true(srdma_resp_qp_receives(&t));
	assert_true(srdma_resp_qkey_ok(&t, 0x11111111));
	assert_false(srdma_resp_qkey_ok(&t, 0x11111112));
	srdma_resp_self_put(&t);
	/* Another slot (no QP there), slot 0, another context's LID. */
	assert_int_equal(srdma_resp_self(f->ctx, qpn(f) + 1, &t), -ENOENT);
	assert_int_equal(srdma_resp_self(f->ctx, qpn(f) &
					 ~((1u << SRDMA_QPN_SHIFT) - 1), &t),
			 -ENOENT);
	assert_int_equal(srdma_resp_self(f->ctx, qpn(f) +
					 (1u << SRDMA_QPN_SHIFT), &t),
			 -ENOENT);
}

/* A message in three "packets" into a receive of two SGEs: consumed at
 * the first, scattered per packet, its CQE at the last. */
static void test_split_receive(void **state)
{
	struct fix *f = *state;
	struct ibv_sge sge[2] = {
		{ (uintptr_t)f->buf, 10, f->mr->ibmr.lkey },
		{ (uintptr_t)f->buf + 100, 30, f->mr->ibmr.lkey },
	};
	const char msg[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	struct srdma_shm_cqe c = { 0 };
	struct srdma_rq_hold h;
	struct srdma_rwqe w;
	struct srdma_target t;
	struct ibv_wc wc;
	struct iovec iov;

	memset(f->buf, '.', 200);
	post_recv(f, 0xabc, sge, 2);
	assert_int_equal(srdma_resp_self(f->ctx, qpn(f), &t), 0);
	assert_int_equal(srdma_resp_rq_begin(&t, &h), 0);
	assert_int_equal(h.w.wr_id, 0xabc);
	assert_int_equal(h.w.nsge, 2);
	assert_int_equal(h.w.capacity, 40);
	assert_int_equal(h.w.pd, f->pd->ibpd.handle);
	assert_false(h.w.srq);
	w = h.w;
	srdma_resp_rq_consume(&h);
	/* Consumed: the queue is empty now (RNR). */
	assert_int_equal(srdma_resp_rq_begin(&t, &h), -EAGAIN);
	/* Packets of 8, 8 and 20 bytes; the second crosses the SGEs. */
	iov.iov_base = (void *)msg;
	iov.iov_len = 8;
	assert_int_equal(srdma_resp_scatter(&t, &w, 0, &iov, 1, 8), 0);
	iov.iov_base = (void *)(msg + 8);
	assert_int_equal(srdma_resp_scatter(&t, &w, 8, &iov, 1, 8), 0);
	iov.iov_base = (void *)(msg + 16);
	iov.iov_len = 20;
	assert_int_equal(srdma_resp_scatter(&t, &w, 16, &iov, 1, 20), 0);
	/* Past the capacity: LOC_LEN_ERR for the caller, nothing copied. */
	assert_int_equal(srdma_resp_scatter(&t, &w, 36, &iov, 1, 5),
			 -EMSGSIZE);
	c.status = IBV_WC_SUCCESS;
	c.opcode = IBV_WC_RECV;
	c.byte_len = 36;
	srdma_resp_recv_cqe(&t, &w, &c, false);
	srdma_resp_self_put(&t);

	assert_memory_equal(f->buf, msg, 10);
	assert_memory_equal(f->buf + 100, msg + 10, 26);
	assert_int_equal(f->buf[10], '.');
	assert_int_equal(f->buf[126], '.');
	assert_int_equal(srdma_cq_poll(f->cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 0xabc);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 36);
	assert_int_equal(wc.qp_num, qpn(f));
	assert_int_equal(srdma_cq_poll(f->cq, 1, &wc), 0);
}

/* rq_abort keeps the WQE; rq_complete consumes it and posts the CQE; a
 * receive buffer that fails its key check is -EACCES. */
static void test_rq_abort_complete_and_bad_lkey(void **state)
{
	struct fix *f = *state;
	struct ibv_sge sge = { (uintptr_t)f->rbuf, 16, f->ro->ibmr.lkey };
	struct srdma_shm_cqe c = { 0 };
	struct srdma_rq_hold h;
	struct srdma_target t;
	struct ibv_wc wc;
	struct iovec iov = { (void *)"hello", 5 };

	post_recv(f, 7, &sge, 1);
	assert_int_equal(srdma_resp_self(f->ctx, qpn(f), &t), 0);
	assert_int_equal(srdma_resp_rq_begin(&t, &h), 0);
	srdma_resp_rq_abort(&h);
	assert_int_equal(srdma_resp_rq_begin(&t, &h), 0);
	assert_int_equal(h.w.wr_id, 7);
	/* The MR lacks LOCAL_WRITE: responder LOC_PROT_ERR. */
	assert_int_equal(srdma_resp_scatter(&t, &h.w, 0, &iov, 1, 5),
			 -EACCES);
	c.status = IBV_WC_LOC_PROT_ERR;
	c.opcode = IBV_WC_RECV;
	srdma_resp_rq_complete(&h, &c, true);
	assert_int_equal(srdma_resp_rq_begin(&t, &h), -EAGAIN);
	srdma_resp_self_put(&t);
	assert_int_equal(srdma_cq_poll(f->cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(wc.qp_num, qpn(f));
}

/* The one key check for rkeys: each failing check has its code. */
static void test_rkey_checks(void **state)
{
	struct fix *f = *state;
	uintptr_t b = (uintptr_t)f->buf;
	uint32_t rkey = f->mr->ibmr.rkey;
	struct srdma_target t;
	struct srdma_rmem m;
	struct iovec iov = { (void *)"payload!", 8 };
	char back[8];

	assert_int_equal(srdma_resp_self(f->ctx, qpn(f), &t), 0);
	assert_int_equal(srdma_resp_rkey(&t, rkey, IBV_ACCESS_REMOTE_WRITE,
					 b + 4000, 8, &m), SRDMA_KCHK_OK);
	assert_int_equal(srdma_resp_copy(&t, &m, 0, &iov, 1, 8, true), 0);
	iov.iov_base = back;
	assert_int_equal(srdma_resp_copy(&t, &m, 0, &iov, 1, 8, false), 0);
	srdma_resp_rkey_put(&t, &m);
	assert_memory_equal(f->buf + 4000, "payload!", 8);
	assert_memory_equal(back, "payload!", 8);

	assert_int_equal(srdma_resp_rkey(&t, rkey ^ 0x80,
					 IBV_ACCESS_REMOTE_WRITE, b, 8, &m),
			 SRDMA_KCHK_NOKEY);
	assert_int_equal(srdma_resp_rkey(&t, rkey, IBV_ACCESS_REMOTE_WRITE,
					 b + sizeof(f->buf) - 4, 8, &m),
			 SRDMA_KCHK_BOUNDS);
	assert_int_equal(srdma_resp_rkey(&t, f->ro->ibmr.rkey,
					 IBV_ACCESS_REMOTE_WRITE,
					 (uintptr_t)f->rbuf, 8, &m),
			 SRDMA_KCHK_ACCESS);
	assert_int_equal(srdma_resp_rkey(&t, f->other->ibmr.rkey,
					 IBV_ACCESS_REMOTE_WRITE,
					 (uintptr_t)f->obuf, 8, &m),
			 SRDMA_KCHK_PD);
	srdma_resp_self_put(&t);
}

/* A type 2 window is used only through the QP it was bound through. */
static void test_mw2_qp_rule(void **state)
{
	struct fix *f = *state;
	struct ibv_mw_bind_info bi = {
		.mr = &f->mr->ibmr,
		.addr = (uintptr_t)f->buf + 1024,
		.length = 64,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct srdma_target t;
	struct srdma_rmem m;
	struct srdma_mw *mw;
	uint32_t rkey;

	assert_int_equal(srdma_mw_alloc(&f->pd->ibpd, IBV_MW_TYPE_2, &mw), 0);
	assert_int_equal(srdma_resp_self(f->ctx, qpn(f), &t), 0);
	/* Bound through another QP number: refused here. */
	rkey = ibv_inc_rkey(mw->ibmw.rkey);
	assert_int_equal(srdma_mw_bind_exec(f->ctx, f->pd, qpn(f) + 1,
					    &mw->ibmw, rkey, &bi), 0);
	assert_int_equal(srdma_resp_rkey(&t, rkey, IBV_ACCESS_REMOTE_WRITE,
					 bi.addr, 8, &m), SRDMA_KCHK_ACCESS);
	/* SEND_WITH_INV of it, then bound through this QP: accepted. */
	assert_int_equal(srdma_resp_invalidate(&t, rkey), 0);
	assert_int_equal(srdma_resp_rkey(&t, rkey, IBV_ACCESS_REMOTE_WRITE,
					 bi.addr, 8, &m), SRDMA_KCHK_STATE);
	rkey = ibv_inc_rkey(rkey);
	assert_int_equal(srdma_mw_bind_exec(f->ctx, f->pd, qpn(f), &mw->ibmw,
					    rkey, &bi), 0);
	assert_int_equal(srdma_resp_rkey(&t, rkey, IBV_ACCESS_REMOTE_WRITE,
					 bi.addr, 8, &m), SRDMA_KCHK_OK);
	srdma_resp_rkey_put(&t, &m);
	/* An MR's key cannot be invalidated remotely. */
	assert_int_equal(srdma_resp_invalidate(&t, f->mr->ibmr.rkey),
			 -EINVAL);
	assert_int_equal(srdma_resp_invalidate(&t, rkey), 0);
	srdma_resp_self_put(&t);
	assert_int_equal(srdma_mw_dealloc(&mw->ibmw), 0);
}

/* Both atomics on an aligned word, under the host-wide lock. */
static void test_atomic(void **state)
{
	struct fix *f = *state;
	uint64_t *word = (uint64_t *)(f->buf + 2048);
	struct srdma_target t;
	struct srdma_rmem m;
	uint64_t orig = 0;

	*word = 40;
	assert_int_equal(srdma_resp_self(f->ctx, qpn(f), &t), 0);
	assert_int_equal(srdma_resp_rkey(&t, f->mr->ibmr.rkey,
					 IBV_ACCESS_REMOTE_ATOMIC,
					 (uintptr_t)word, 8, &m),
			 SRDMA_KCHK_OK);
	assert_int_equal(srdma_resp_atomic(&t, &m, false, 2, 0, &orig), 0);
	assert_int_equal(orig, 40);
	assert_int_equal(*word, 42);
	assert_int_equal(srdma_resp_atomic(&t, &m, true, 41, 7, &orig), 0);
	assert_int_equal(orig, 42);
	assert_int_equal(*word, 42);
	assert_int_equal(srdma_resp_atomic(&t, &m, true, 42, 7, &orig), 0);
	assert_int_equal(orig, 42);
	assert_int_equal(*word, 7);
	srdma_resp_rkey_put(&t, &m);
	srdma_resp_self_put(&t);
}

/* A responder error moves the QP to ERR and flushes its receives. */
static void test_qp_error(void **state)
{
	struct fix *f = *state;
	struct ibv_sge sge = { (uintptr_t)f->buf, 16, f->mr->ibmr.lkey };
	struct srdma_target t;
	struct ibv_wc wc;

	post_recv(f, 99, &sge, 1);
	assert_int_equal(srdma_resp_self(f->ctx, qpn(f), &t), 0);
	srdma_resp_qp_error(&t, 0);
	assert_false(srdma_resp_qp_receives(&t));
	srdma_resp_self_put(&t);
	assert_int_equal(srdma_cq_poll(f->cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 99);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_self_lookup, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_split_receive, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_rq_abort_complete_and_bad_lkey, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rkey_checks, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mw2_qp_rule, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp_error, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
