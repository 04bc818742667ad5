// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_req.c - the net requester and completer (req.c) without an
 * endpoint: a real context, PD, MR and QP (below the ABI), the QP's net
 * half built by hand as connected, packets captured by the test hook and
 * decoded with the wire codec, responses (ACK, NAK, RNR NAK, READ
 * responses, atomic ACKs) fed to srdma_netreq_input(), timers run with
 * made-up times. Checks segmentation and headers, ICRC, AckReq, the
 * window, completion order, retransmission (sequence NAK, timeout, RNR),
 * budgets (RETRY_EXC_ERR, RNR_RETRY_EXC_ERR), READ placement, atomic
 * results, error NAKs, local protection errors, flush, UC and UD, and
 * that hostile responses are dropped and counted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/qp_state.h"
#include "engine/engine.h"
#include "transport/net/net.h"
#include "transport/net/wire.h"

#define MAXPKT 1024
#define BUFSZ  (1u << 20)

struct cap_pkt {
	uint8_t buf[4200];
	size_t len;
	struct srdma_pkt p;
	struct srdma_wire_path path;
};

struct comp {
	uint64_t wr_id;
	uint32_t op;
	bool signaled;
	int status;
	uint32_t len;
};

static struct {
	struct srdma_context *ctx;
	struct srdma_pd *pd;
	struct srdma_mr *mr;
	struct srdma_mr *mr2; /* post_wr's key when set */
	struct srdma_cq *cq;
	struct srdma_qp *qp;
	struct srdma_net_qp *nq;
	struct srdma_net_qp_stats st;
	uint8_t *buf;	    /* registered, BUFSZ */
	uint8_t *base;	    /* post_wr's offsets: buf, or else */
	struct cap_pkt *pk; /* captured packets */
	int npk;
	struct comp c[1024];
	int nc;
	bool tx_fail;
} E;

static int tx_hook(struct srdma_net_qp *nq, const struct srdma_wire_path *p,
		   const struct iovec *iov, int n)
{
	struct cap_pkt *c;
	size_t off = 0;
	int i;

	assert_ptr_equal(nq, E.nq);
	assert_true(E.npk < MAXPKT);
	c = &E.pk[E.npk++];
	for (i = 0; i < n; i++) {
		assert_true(off + iov[i].iov_len <= sizeof(c->buf));
		memcpy(c->buf + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	c->len = off;
	c->path = *p;
	/* Every packet parses and carries the right ICRC. */
	assert_int_equal(srdma_wire_parse(c->buf, c->len, &c->p),
			 SRDMA_DROP_NONE);
	assert_true(srdma_wire_icrc_check(p, c->buf, c->len));
	return E.tx_fail ? -EAGAIN : 0;
}

static void comp_hook(struct srdma_qp *qp, uint64_t wr_id, uint32_t op,
		      bool signaled, int status, uint32_t len)
{
	assert_ptr_equal(qp, E.qp);
	assert_true(E.nc < 1024);
	E.c[E.nc++] = (struct comp){wr_id, op, signaled, status, len};
}

static void gid4(uint8_t *g, uint8_t last)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = 198;
	g[13] = 18;
	g[14] = 0;
	g[15] = last;
}

static void env_up(enum ibv_qp_type type, uint32_t mtu, uint32_t sq_psn)
{
	struct srdma_mr_args a = {
		.length = BUFSZ,
		.access = IBV_ACCESS_LOCAL_WRITE,
		.dmabuf_fd = -1,
	};
	struct srdma_cq_args ca = {.cqe = 64};
	struct ibv_qp_init_attr_ex qa = {0};
	struct srdma_net_qp *nq;

	memset(&E, 0, sizeof(E));
	E.pk = calloc(MAXPKT, sizeof(*E.pk));
	assert_non_null(E.pk);
	E.buf = aligned_alloc(4096, BUFSZ);
	assert_non_null(E.buf);
	memset(E.buf, 0, BUFSZ);
	a.addr = E.buf;
	a.iova = (uintptr_t)E.buf;
	assert_int_equal(srdma_context_open(srdma_device_get(), &E.ctx), 0);
	assert_int_equal(srdma_pd_alloc(E.ctx, &E.pd), 0);
	assert_int_equal(srdma_mr_reg(&E.pd->ibpd, &a, &E.mr), 0);
	assert_int_equal(srdma_cq_create(E.ctx, &ca, &E.cq), 0);
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = &E.pd->ibpd;
	qa.send_cq = &E.cq->ib.cq;
	qa.recv_cq = &E.cq->ib.cq;
	qa.qp_type = type;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = 64;
	assert_int_equal(srdma_qp_create(E.ctx, &qa, &E.qp), 0);
	assert_null(E.qp->net);

	/* The net half, as qp_net.c builds it at RTR, by hand. */
	nq = calloc(1, sizeof(*nq));
	assert_non_null(nq);
	nq->qp = E.qp;
	nq->ctx = E.ctx;
	nq->qpn = E.qp->ib.qp.qp_num;
	nq->connected = type != IBV_QPT_UD;
	gid4(nq->path.sip, 1);
	gid4(nq->path.dip, 2);
	nq->path.sport = 0xc001;
	nq->path.dport = SRDMA_ROCE_PORT;
	nq->dqpn = 0x123;
	nq->mtu = mtu;
	nq->st = &E.st;
	nq->req = srdma_netreq_new(nq);
	assert_non_null(nq->req);
	E.nq = nq;
	E.qp->net = nq;
	E.qp->attr.timeout = 14;
	E.qp->attr.retry_cnt = 7;
	E.qp->attr.rnr_retry = 7;
	E.qp->attr.max_rd_atomic = 4;
	srdma_netreq_tx_hook = tx_hook;
	srdma_netreq_comp_hook = comp_hook;
	pthread_mutex_lock(&E.qp->sq_lock);
	srdma_netreq_reset(nq, sq_psn);
	pthread_mutex_unlock(&E.qp->sq_lock);
}

static void env_down(void)
{
	struct srdma_net_qp *nq = E.nq;

	pthread_mutex_lock(&E.qp->sq_lock);
	srdma_netreq_flush_locked(E.qp);
	pthread_mutex_unlock(&E.qp->sq_lock);
	srdma_netreq_free(nq->req);
	E.qp->net = NULL;
	free(nq);
	assert_int_equal(srdma_qp_destroy(E.qp), 0);
	assert_int_equal(srdma_cq_destroy(E.cq), 0);
	assert_int_equal(srdma_mr_dereg(&E.mr->ibmr), 0);
	if (E.mr2)
		assert_int_equal(srdma_mr_dereg(&E.mr2->ibmr), 0);
	assert_int_equal(srdma_pd_dealloc(E.pd), 0);
	assert_int_equal(srdma_context_close(E.ctx), 0);
	free(E.buf);
	free(E.pk);
	srdma_netreq_tx_hook = NULL;
	srdma_netreq_comp_hook = NULL;
}

/* ---- posting and responding -------------------------------------------------
 */

static int post_wr(uint64_t wr_id, uint32_t op, uint32_t off, uint32_t len,
		   uint32_t flags, uint64_t raddr)
{
	struct srdma_swqe *w = calloc(1, sizeof(*w) + sizeof(struct ibv_sge));
	int r;

	assert_non_null(w);
	w->wr_id = wr_id;
	w->opcode = op;
	w->send_flags = flags | IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->sge = w->sge_buf;
	w->sge[0].addr = (uintptr_t)(E.base ? E.base : E.buf) + off;
	w->sge[0].length = len;
	w->sge[0].lkey = (E.mr2 ? E.mr2 : E.mr)->ibmr.lkey;
	w->remote_addr = raddr;
	w->rkey = 0xabcd;
	w->imm = htobe32(0x5a5a0001);
	w->compare_add = 5;
	w->swap = 9;
	w->is_inline = flags & IBV_SEND_INLINE;
	pthread_mutex_lock(&E.qp->sq_lock);
	r = srdma_netreq_post(E.qp, w);
	pthread_mutex_unlock(&E.qp->sq_lock);
	free(w);
	return r;
}

static void respond(uint8_t op, uint32_t psn, uint8_t syndrome,
		    const void *payload, uint32_t paylen, uint64_t orig)
{
	struct srdma_pkt p = {0};
	struct srdma_wire_path from = E.nq->path;

	memcpy(from.sip, E.nq->path.dip, 16);
	memcpy(from.dip, E.nq->path.sip, 16);
	p.opcode = SRDMA_TR_RC | op;
	p.hdrs = srdma_wire_hdrs(p.opcode);
	p.psn = psn & 0xffffff;
	p.dqpn = E.nq->qpn;
	p.syndrome = syndrome;
	p.orig = orig;
	p.payload = payload;
	p.paylen = paylen;
	srdma_netreq_input(E.nq, &p, &from);
}

static void ack(uint32_t psn)
{
	respond(SRDMA_OP_ACK, psn, SRDMA_AETH_ACK, NULL, 0, 0);
}

static uint64_t drops(enum srdma_drop d)
{
	return atomic_load(&E.st.drops[d]);
}

static uint64_t later(uint64_t ns)
{
	return srdma_now_ns() + ns;
}

/* ---- tests
 * ------------------------------------------------------------------- */

static void test_send_segmentation(void **state)
{
	uint32_t i;

	env_up(IBV_QPT_RC, 1024, 100);
	for (i = 0; i < 4000; i++)
		E.buf[i] = (uint8_t)(i * 7);
	/* 2501 bytes: FIRST 1024, MIDDLE 1024, LAST 453 + pad 3. */
	assert_int_equal(post_wr(1, IBV_WR_SEND_WITH_IMM, 0, 2501,
				 IBV_SEND_SOLICITED, 0),
			 0);
	assert_int_equal(E.npk, 3);
	assert_int_equal(E.pk[0].p.opcode, SRDMA_OP_SEND_FIRST);
	assert_int_equal(E.pk[1].p.opcode, SRDMA_OP_SEND_MIDDLE);
	assert_int_equal(E.pk[2].p.opcode, SRDMA_OP_SEND_LAST_IMM);
	for (i = 0; i < 3; i++) {
		assert_int_equal(E.pk[i].p.psn, 100 + i);
		assert_int_equal(E.pk[i].p.dqpn, 0x123);
		assert_int_equal(E.pk[i].p.pkey, 0xffff);
		assert_int_equal(E.pk[i].p.ackreq, i == 2);
		assert_int_equal(E.pk[i].p.se, i == 2);
		assert_memory_equal(E.pk[i].p.payload, E.buf + i * 1024,
				    E.pk[i].p.paylen);
	}
	assert_int_equal(E.pk[0].p.paylen, 1024);
	assert_int_equal(E.pk[2].p.paylen, 453);
	assert_int_equal(E.pk[2].p.padcnt, 3);
	assert_int_equal(E.pk[2].p.imm, htobe32(0x5a5a0001));
	assert_int_equal(E.pk[2].len, 12 + 4 + 453 + 3 + 4);
	assert_int_equal(atomic_load(&E.st.tx_pkts), 3);
	assert_int_equal(E.nc, 0);

	/* WRITE 3000: RETH with the whole length on FIRST only. */
	assert_int_equal(post_wr(2, IBV_WR_RDMA_WRITE, 0, 3000, 0, 0x7000), 0);
	assert_int_equal(E.npk, 6);
	assert_int_equal(E.pk[3].p.opcode, SRDMA_OP_WRITE_FIRST);
	assert_true(E.pk[3].p.hdrs & SRDMA_HDR_RETH);
	assert_int_equal(E.pk[3].p.va, 0x7000);
	assert_int_equal(E.pk[3].p.rkey, 0xabcd);
	assert_int_equal(E.pk[3].p.dma_len, 3000);
	assert_int_equal(E.pk[4].p.opcode, SRDMA_OP_WRITE_MIDDLE);
	assert_int_equal(E.pk[5].p.opcode, SRDMA_OP_WRITE_LAST);
	assert_int_equal(E.pk[5].p.psn, 105);
	assert_false(E.pk[5].p.se);

	/* Small ones: WRITE_IMM ONLY (RETH + ImmDt), zero-length SEND,
	 * inline SEND, SEND_WITH_INV (IETH). */
	assert_int_equal(post_wr(3, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 10,
				 IBV_SEND_SOLICITED, 0x9000),
			 0);
	assert_int_equal(E.pk[6].p.opcode, SRDMA_OP_WRITE_ONLY_IMM);
	assert_int_equal(E.pk[6].p.dma_len, 10);
	assert_true(E.pk[6].p.se);
	assert_int_equal(post_wr(4, IBV_WR_SEND, 0, 0, 0, 0), 0);
	assert_int_equal(E.pk[7].p.opcode, SRDMA_OP_SEND_ONLY);
	assert_int_equal(E.pk[7].p.paylen, 0);
	assert_int_equal(post_wr(5, IBV_WR_SEND, 8, 20, IBV_SEND_INLINE, 0), 0);
	assert_int_equal(E.pk[8].p.paylen, 20);
	assert_memory_equal(E.pk[8].p.payload, E.buf + 8, 20);
	assert_int_equal(post_wr(6, IBV_WR_SEND_WITH_INV, 0, 4, 0, 0), 0);
	assert_int_equal(E.pk[9].p.opcode, SRDMA_OP_SEND_ONLY_INV);
	assert_int_equal(E.pk[9].p.inv_rkey, htobe32(0x5a5a0001));

	/* One cumulative ACK completes all six, in order. */
	ack(109);
	assert_int_equal(E.nc, 6);
	for (i = 0; i < 6; i++) {
		assert_int_equal(E.c[i].wr_id, i + 1);
		assert_int_equal(E.c[i].status, IBV_WC_SUCCESS);
	}
	assert_int_equal(E.c[0].len, 2501);
	assert_int_equal(E.c[1].len, 3000);
	assert_int_equal(E.c[1].op, IBV_WR_RDMA_WRITE);
	/* The timer's wake-up lapses without a retransmission. */
	assert_int_not_equal(atomic_load(&E.nq->deadline_ns), 0);
	assert_int_equal(srdma_netreq_timer(E.nq, later(1ull << 40)), 0);
	assert_int_equal(E.npk, 10);
	assert_int_equal(atomic_load(&E.st.timeouts), 0);
	env_down();
}

static void test_ackreq_every_64_and_window(void **state)
{
	int i, run = 0;

	env_up(IBV_QPT_RC, 256, 0xfffff0); /* PSNs wrap */
	/* 200 packets: only 128 go out (the window). */
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 200 * 256, 0, 0), 0);
	assert_int_equal(E.npk, 128);
	for (i = 0; i < E.npk; i++) {
		assert_int_equal(E.pk[i].p.psn, (0xfffff0 + i) & 0xffffff);
		run = E.pk[i].p.ackreq ? 0 : run + 1;
		assert_true(run < 64);
	}
	/* ACK of the 64th packet opens the window by 64. */
	ack(0xfffff0 + 63);
	assert_int_equal(E.npk, 192);
	assert_int_equal(E.nc, 0);
	ack(0xfffff0 + 191);
	assert_int_equal(E.npk, 200);
	assert_true(E.pk[199].p.ackreq);
	assert_int_equal(E.pk[199].p.opcode, SRDMA_OP_SEND_LAST);
	ack(0xfffff0 + 199);
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.c[0].len, 200 * 256);
	assert_int_equal(atomic_load(&E.st.retransmits), 0);
	env_down();
}

static void test_ack_partial_and_order(void **state)
{
	env_up(IBV_QPT_RC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 100, 0, 0), 0);
	assert_int_equal(post_wr(2, IBV_WR_SEND, 0, 2048, 0, 0), 0);
	assert_int_equal(post_wr(3, IBV_WR_SEND, 0, 100, 0, 0), 0);
	ack(1); /* first packet of wr 2 */
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.c[0].wr_id, 1);
	ack(1); /* duplicate: dropped */
	assert_int_equal(drops(SRDMA_DROP_DUP), 1);
	ack(3);
	assert_int_equal(E.nc, 3);
	assert_int_equal(E.c[1].wr_id, 2);
	assert_int_equal(E.c[2].wr_id, 3);
	env_down();
}

static void test_nak_seq_retransmit(void **state)
{
	int i;

	env_up(IBV_QPT_RC, 1024, 10);
	for (i = 0; i < 3; i++)
		assert_int_equal(post_wr(i + 1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.npk, 3);
	/* The responder expects PSN 11: 10 is acknowledged, 11 and 12 go
	 * again. A second NAK for the same PSN does not rewind again. */
	respond(SRDMA_OP_ACK, 11, SRDMA_AETH_NAK_PSN, NULL, 0, 0);
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.npk, 5);
	assert_int_equal(E.pk[3].p.psn, 11);
	assert_int_equal(E.pk[4].p.psn, 12);
	respond(SRDMA_OP_ACK, 11, SRDMA_AETH_NAK_PSN, NULL, 0, 0);
	assert_int_equal(E.npk, 5);
	assert_int_equal(atomic_load(&E.st.retransmits), 2);
	assert_int_equal(atomic_load(&E.st.naks_rcvd), 2);
	ack(12);
	assert_int_equal(E.nc, 3);
	env_down();
}

static void test_rnr_retry_and_exhaustion(void **state)
{
	uint64_t t0;

	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.rnr_retry = 1;
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(post_wr(2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	/* Times are given explicitly, from before the NAK: a preempted
	 * (loaded, sanitized) run cannot push "now" past the 1.28 ms. */
	t0 = srdma_now_ns();
	respond(SRDMA_OP_ACK, 0, SRDMA_AETH_RNR(14), NULL, 0, 0); /* 1.28 ms */
	assert_int_equal(atomic_load(&E.st.rnr_rcvd), 1);
	assert_int_equal(E.npk, 2);
	/* Not before the responder's timer. */
	srdma_netreq_timer(E.nq, t0 + 1000000);
	assert_int_equal(E.npk, 2);
	assert_true(atomic_load(&E.nq->deadline_ns) >= t0 + 1280000);
	srdma_netreq_timer(E.nq, later(2000000));
	assert_int_equal(E.npk, 4);
	assert_int_equal(E.pk[2].p.psn, 0);
	assert_int_equal(E.pk[3].p.psn, 1);
	/* The budget is spent: the WQE fails, the one behind is flushed. */
	respond(SRDMA_OP_ACK, 0, SRDMA_AETH_RNR(14), NULL, 0, 0);
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(E.c[1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(E.c[1].wr_id, 2);
	/* In ERR: a new WR is flushed at once. */
	assert_int_equal(post_wr(3, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.nc, 3);
	assert_int_equal(E.c[2].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(E.npk, 4);
	env_down();
}

static void test_rnr_then_progress_resets_budget(void **state)
{
	int i;

	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.rnr_retry = 1;
	for (i = 0; i < 3; i++) {
		assert_int_equal(post_wr(i + 1, IBV_WR_SEND, 0, 8, 0, 0), 0);
		respond(SRDMA_OP_ACK, i, SRDMA_AETH_RNR(1), NULL, 0, 0);
		srdma_netreq_timer(E.nq, later(1000000));
		ack(i);
	}
	assert_int_equal(E.nc, 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(E.c[i].status, IBV_WC_SUCCESS);
	env_down();
}

static void test_timeout_retry_exhaustion(void **state)
{
	uint64_t t = srdma_now_ns();
	int i;

	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.timeout = 10; /* 4.19 ms */
	E.qp->attr.retry_cnt = 2;
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 1500, 0, 0), 0);
	assert_int_equal(post_wr(2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.npk, 3);
	assert_true(atomic_load(&E.nq->deadline_ns) >= t + 4000000);
	/* First packet acknowledged: the timeout resends only the rest. */
	ack(0);
	srdma_netreq_timer(E.nq, t + 1000000); /* not yet */
	assert_int_equal(E.npk, 3);
	for (i = 1; i <= 2; i++) {
		t += 10000000;
		srdma_netreq_timer(E.nq, later(10000000ull * i));
		assert_int_equal(E.npk, 3 + 2 * i);
		assert_int_equal(E.pk[1 + 2 * i].p.psn, 1);
		assert_int_equal(E.pk[1 + 2 * i].p.opcode, SRDMA_OP_SEND_LAST);
		assert_int_equal(E.pk[2 + 2 * i].p.psn, 2);
	}
	assert_int_equal(E.nc, 0);
	srdma_netreq_timer(E.nq, later(40000000));
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[0].status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(E.c[1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(atomic_load(&E.st.timeouts), 3);
	assert_int_equal(atomic_load(&E.st.retransmits), 4);
	assert_int_equal(atomic_load(&E.nq->deadline_ns), 0);
	env_down();
}

static void test_timeout_zero_never(void **state)
{
	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.timeout = 0;
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(atomic_load(&E.nq->deadline_ns), 0);
	assert_int_equal(srdma_netreq_timer(E.nq, later(1000000000000ull)), 0);
	assert_int_equal(E.npk, 1);
	assert_int_equal(E.nc, 0);
	env_down();
}

static void test_read_placement_and_retry(void **state)
{
	static uint8_t data[2500];
	uint32_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 1);
	env_up(IBV_QPT_RC, 1024, 50);
	E.qp->attr.timeout = 8;
	assert_int_equal(post_wr(1, IBV_WR_RDMA_READ, 4096, 2500, 0, 0x10000),
			 0);
	assert_int_equal(E.npk, 1);
	assert_int_equal(E.pk[0].p.opcode, SRDMA_OP_READ_REQ);
	assert_int_equal(E.pk[0].p.psn, 50);
	assert_int_equal(E.pk[0].p.va, 0x10000);
	assert_int_equal(E.pk[0].p.dma_len, 2500);
	assert_true(E.pk[0].p.ackreq);
	/* A SEND behind it takes PSN 53 (the READ reserved 50..52). */
	assert_int_equal(post_wr(2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.pk[1].p.psn, 53);

	/* Out of order, wrong opcode, wrong length: all dropped. The gap
	 * (50 lost) re-issues the READ at once, and the SEND behind it. */
	respond(SRDMA_OP_READ_RESP_MIDDLE, 51, 0, data + 1024, 1024, 0);
	assert_int_equal(drops(SRDMA_DROP_PSN), 1);
	assert_int_equal(E.npk, 4);
	assert_int_equal(E.pk[2].p.opcode, SRDMA_OP_READ_REQ);
	assert_int_equal(E.pk[2].p.psn, 50);
	assert_int_equal(E.pk[3].p.psn, 53);
	respond(SRDMA_OP_READ_RESP_MIDDLE, 50, 0, data, 1024, 0);
	assert_int_equal(drops(SRDMA_DROP_OPCODE), 1);
	respond(SRDMA_OP_READ_RESP_FIRST, 50, SRDMA_AETH_ACK, data, 1000, 0);
	assert_int_equal(drops(SRDMA_DROP_LENGTH), 1);

	respond(SRDMA_OP_READ_RESP_FIRST, 50, SRDMA_AETH_ACK, data, 1024, 0);
	assert_memory_equal(E.buf + 4096, data, 1024);
	assert_int_equal(E.nc, 0);
	/* The rest is lost: the timeout re-issues the READ for it. */
	srdma_netreq_timer(E.nq, later(100000000));
	assert_int_equal(E.pk[4].p.opcode, SRDMA_OP_READ_REQ);
	assert_int_equal(E.pk[4].p.psn, 51);
	assert_int_equal(E.pk[4].p.va, 0x10000 + 1024);
	assert_int_equal(E.pk[4].p.dma_len, 2500 - 1024);
	assert_int_equal(E.pk[5].p.psn, 53); /* and the SEND again */
	respond(SRDMA_OP_READ_RESP_FIRST, 51, SRDMA_AETH_ACK, data + 1024, 1024,
		0);
	respond(SRDMA_OP_READ_RESP_LAST, 52, SRDMA_AETH_ACK, data + 2048, 452,
		0);
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.c[0].wr_id, 1);
	assert_int_equal(E.c[0].len, 2500);
	assert_memory_equal(E.buf + 4096, data, sizeof(data));
	ack(53);
	assert_int_equal(E.nc, 2);
	env_down();
}

static void test_implied_nak(void **state)
{
	static uint8_t data[16] = {1, 2, 3};

	env_up(IBV_QPT_RC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_RDMA_READ, 0, 16, 0, 0x2000), 0);
	assert_int_equal(post_wr(2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.npk, 2);
	/* The SEND is acknowledged, the READ's response never came. */
	ack(1);
	assert_int_equal(E.nc, 0);
	assert_int_equal(E.npk, 4);
	assert_int_equal(E.pk[2].p.opcode, SRDMA_OP_READ_REQ);
	assert_int_equal(E.pk[2].p.psn, 0);
	respond(SRDMA_OP_READ_RESP_ONLY, 0, SRDMA_AETH_ACK, data, 16, 0);
	ack(1);
	assert_int_equal(E.nc, 2);
	assert_memory_equal(E.buf, data, 16);
	/* A plain ACK inside a READ's PSNs is not trusted. */
	assert_int_equal(post_wr(3, IBV_WR_RDMA_READ, 0, 16, 0, 0x2000), 0);
	ack(2);
	assert_int_equal(E.nc, 2);
	assert_int_equal(drops(SRDMA_DROP_OPCODE), 1);
	env_down();
}

static void test_atomic(void **state)
{
	uint64_t v;

	env_up(IBV_QPT_RC, 1024, 7);
	assert_int_equal(
		post_wr(1, IBV_WR_ATOMIC_CMP_AND_SWP, 64, 8, 0, 0x3000), 0);
	assert_int_equal(
		post_wr(2, IBV_WR_ATOMIC_FETCH_AND_ADD, 72, 8, 0, 0x3008), 0);
	assert_int_equal(E.npk, 2);
	assert_int_equal(E.pk[0].p.opcode, SRDMA_OP_CMP_SWAP);
	assert_int_equal(E.pk[0].p.swap_add, 9);
	assert_int_equal(E.pk[0].p.compare, 5);
	assert_int_equal(E.pk[0].p.va, 0x3000);
	assert_int_equal(E.pk[1].p.opcode, SRDMA_OP_FETCH_ADD);
	assert_int_equal(E.pk[1].p.swap_add, 5);
	assert_int_equal(E.pk[1].p.psn, 8);
	/* An atomic ACK for the wrong PSN or a READ response: dropped. */
	respond(SRDMA_OP_READ_RESP_ONLY, 7, SRDMA_AETH_ACK, "12345678", 8, 0);
	assert_int_equal(drops(SRDMA_DROP_OPCODE), 1);
	respond(SRDMA_OP_ATOMIC_ACK, 7, SRDMA_AETH_ACK, NULL, 0,
		0x1122334455667788ull);
	respond(SRDMA_OP_ATOMIC_ACK, 8, SRDMA_AETH_ACK, NULL, 0, 42);
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[0].len, 8);
	memcpy(&v, E.buf + 64, 8);
	assert_int_equal(v, 0x1122334455667788ull);
	memcpy(&v, E.buf + 72, 8);
	assert_int_equal(v, 42);
	env_down();
}

static void test_max_rd_atomic(void **state)
{
	static uint8_t d[8];

	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.max_rd_atomic = 1;
	assert_int_equal(post_wr(1, IBV_WR_RDMA_READ, 0, 8, 0, 0x1000), 0);
	assert_int_equal(post_wr(2, IBV_WR_RDMA_READ, 8, 8, 0, 0x1000), 0);
	assert_int_equal(post_wr(3, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.npk, 1); /* the second READ waits */
	respond(SRDMA_OP_READ_RESP_ONLY, 0, SRDMA_AETH_ACK, d, 8, 0);
	assert_int_equal(E.npk, 3);
	assert_int_equal(E.pk[1].p.psn, 1);
	assert_int_equal(E.pk[2].p.psn, 2);
	env_down();
}

static void test_error_naks(void **state)
{
	static const struct {
		uint8_t syn;
		int st;
	} t[] = {
		{SRDMA_AETH_NAK_INV, IBV_WC_REM_INV_REQ_ERR},
		{SRDMA_AETH_NAK_ACC, IBV_WC_REM_ACCESS_ERR},
		{SRDMA_AETH_NAK_OPS, IBV_WC_REM_OP_ERR},
	};
	unsigned int i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		env_up(IBV_QPT_RC, 1024, 0);
		assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
		assert_int_equal(post_wr(2, IBV_WR_RDMA_WRITE, 0, 8, 0, 0), 0);
		assert_int_equal(post_wr(3, IBV_WR_SEND, 0, 8, 0, 0), 0);
		respond(SRDMA_OP_ACK, 1, t[i].syn, NULL, 0, 0);
		assert_int_equal(E.nc, 3);
		assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
		assert_int_equal(E.c[1].status, t[i].st);
		assert_int_equal(E.c[1].wr_id, 2);
		assert_int_equal(E.c[2].status, IBV_WC_WR_FLUSH_ERR);
		/* Nothing more is accepted or sent. */
		ack(2);
		assert_int_equal(drops(SRDMA_DROP_STATE), 1);
		assert_int_equal(srdma_netreq_timer(E.nq, later(1ull << 40)),
				 0);
		assert_int_equal(E.npk, 3);
		env_down();
	}
}

static void test_local_protection(void **state)
{
	struct srdma_swqe *w = calloc(1, sizeof(*w) + sizeof(struct ibv_sge));

	env_up(IBV_QPT_RC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	/* Bad lkey: the WQE fails before a packet leaves, but only after
	 * the one before it completes. */
	w->wr_id = 2;
	w->opcode = IBV_WR_SEND;
	w->num_sge = 1;
	w->sge = w->sge_buf;
	w->sge[0].addr = (uintptr_t)E.buf;
	w->sge[0].length = 8;
	w->sge[0].lkey = E.mr->ibmr.lkey ^ 0x100;
	pthread_mutex_lock(&E.qp->sq_lock);
	assert_int_equal(srdma_netreq_post(E.qp, w), 0);
	pthread_mutex_unlock(&E.qp->sq_lock);
	assert_int_equal(post_wr(3, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.npk, 1);
	assert_int_equal(E.nc, 0);
	ack(0);
	assert_int_equal(E.nc, 3);
	assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
	assert_int_equal(E.c[1].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(E.c[1].signaled, false); /* errors always */
	assert_int_equal(E.c[2].status, IBV_WC_WR_FLUSH_ERR);
	env_down();

	/* Out of the MR's bounds; READ into memory without LOCAL_WRITE is
	 * covered by the same check (access bit). */
	env_up(IBV_QPT_RC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_SEND, BUFSZ - 4, 8, 0, 0), 0);
	assert_int_equal(E.npk, 0);
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.c[0].status, IBV_WC_LOC_PROT_ERR);
	env_down();
	free(w);
}

static void test_flush(void **state)
{
	int i;

	env_up(IBV_QPT_RC, 256, 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(post_wr(i + 1, IBV_WR_SEND, 0, 256 * 60, 0, 0),
				 0);
	ack(59);
	assert_int_equal(E.nc, 1);
	pthread_mutex_lock(&E.qp->sq_lock);
	srdma_netreq_flush_locked(E.qp);
	srdma_netreq_flush_locked(E.qp); /* idempotent */
	pthread_mutex_unlock(&E.qp->sq_lock);
	assert_int_equal(E.nc, 4);
	for (i = 1; i < 4; i++) {
		assert_int_equal(E.c[i].wr_id, i + 1);
		assert_int_equal(E.c[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	env_down();
}

static void test_queue_bound(void **state)
{
	int i;

	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.timeout = 0;
	for (i = 0; i < 64; i++)
		assert_int_equal(post_wr(i, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(post_wr(64, IBV_WR_SEND, 0, 8, 0, 0), -ENOMEM);
	ack(0);
	assert_int_equal(post_wr(64, IBV_WR_SEND, 0, 8, 0, 0), 0);
	env_down();
}

static void test_hostile_responses(void **state)
{
	struct srdma_pkt p = {0};
	struct srdma_wire_path from;

	env_up(IBV_QPT_RC, 1024, 0);
	ack(0); /* nothing ever posted */
	assert_int_equal(drops(SRDMA_DROP_STATE), 1);
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	ack(5); /* never sent */
	assert_int_equal(drops(SRDMA_DROP_PSN), 1);
	ack(0xfffffe); /* far behind */
	assert_int_equal(drops(SRDMA_DROP_PSN) + drops(SRDMA_DROP_DUP), 2);
	respond(SRDMA_OP_ACK, 0, 0x40, NULL, 0, 0); /* reserved type */
	assert_int_equal(drops(SRDMA_DROP_OTHER), 1);
	respond(SRDMA_OP_SEND_ONLY, 0, 0, NULL, 0, 0); /* a request */
	assert_int_equal(drops(SRDMA_DROP_OPCODE), 1);
	/* From another address. */
	from = E.nq->path;
	p.opcode = SRDMA_OP_ACK;
	p.hdrs = srdma_wire_hdrs(p.opcode);
	p.syndrome = SRDMA_AETH_ACK;
	srdma_netreq_input(E.nq, &p, &from);
	assert_int_equal(drops(SRDMA_DROP_SOURCE), 1);
	/* UC transport bits on an RC QP. */
	memcpy(from.sip, E.nq->path.dip, 16);
	memcpy(from.dip, E.nq->path.sip, 16);
	p.opcode = SRDMA_TR_UC | SRDMA_OP_SEND_ONLY;
	srdma_netreq_input(E.nq, &p, &from);
	assert_int_equal(drops(SRDMA_DROP_TRANSPORT), 1);
	assert_int_equal(E.nc, 0);
	ack(0);
	assert_int_equal(E.nc, 1);
	env_down();
}

static void test_uc_completes_when_sent(void **state)
{
	env_up(IBV_QPT_UC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_RDMA_WRITE, 0, 2000, 0, 0x100), 0);
	assert_int_equal(post_wr(2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.npk, 3);
	assert_int_equal(E.pk[0].p.opcode, SRDMA_TR_UC | SRDMA_OP_WRITE_FIRST);
	assert_int_equal(E.pk[1].p.opcode, SRDMA_TR_UC | SRDMA_OP_WRITE_LAST);
	assert_false(E.pk[1].p.ackreq);
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[0].len, 2000);
	assert_int_equal(atomic_load(&E.nq->deadline_ns), 0);
	env_down();
}

static void test_ud(void **state)
{
	struct srdma_swqe *w = calloc(1, sizeof(*w) + sizeof(struct ibv_sge));
	union ibv_gid dgid;

	env_up(IBV_QPT_UD, 1024, 0);
	if (!E.ctx->gids.n) {
		env_down();
		free(w);
		skip();
	}
	gid4(dgid.raw, 9);
	w->opcode = IBV_WR_SEND_WITH_IMM;
	w->send_flags = IBV_SEND_SIGNALED;
	w->imm = 0x11223344;
	w->num_sge = 1;
	w->sge = w->sge_buf;
	w->sge[0].addr = (uintptr_t)E.buf;
	w->sge[0].length = 100;
	w->sge[0].lkey = E.mr->ibmr.lkey;
	w->ud_qpn = 0x77;
	w->ud_qkey = 0x1234;
	w->ud_ah.is_global = 1;
	w->ud_ah.grh.dgid = dgid;
	w->ud_ah.grh.sgid_index = 0;
	pthread_mutex_lock(&E.qp->sq_lock);
	w->wr_id = 1;
	assert_int_equal(srdma_netreq_post(E.qp, w), 0);
	w->wr_id = 2;
	w->sge[0].length = 5000; /* > MTU: "sent", no packet */
	assert_int_equal(srdma_netreq_post(E.qp, w), 0);
	pthread_mutex_unlock(&E.qp->sq_lock);
	assert_int_equal(E.npk, 1);
	assert_int_equal(E.pk[0].p.opcode,
			 SRDMA_TR_UD | SRDMA_OP_SEND_ONLY_IMM);
	assert_int_equal(E.pk[0].p.qkey, 0x1234);
	assert_int_equal(E.pk[0].p.src_qp, E.nq->qpn);
	assert_int_equal(E.pk[0].p.dqpn, 0x77);
	assert_memory_equal(E.pk[0].path.dip, dgid.raw, 16);
	assert_memory_equal(E.pk[0].path.sip, E.ctx->gids.e[0].gid.raw, 16);
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
	assert_int_equal(E.c[1].status, IBV_WC_SUCCESS);
	assert_int_equal(E.c[1].len, 5000);
	env_down();
	free(w);
}

static void test_send_failure_recovered(void **state)
{
	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.timeout = 5;
	E.tx_fail = true; /* the socket drops it */
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	E.tx_fail = false;
	srdma_netreq_timer(E.nq, later(10000000));
	assert_int_equal(E.npk, 2);
	ack(0);
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
	env_down();
}

static void test_multi_sge_gather_and_scatter(void **state)
{
	static const uint32_t off[3] = {100, 5000, 9000},
			      len[3] = {700, 1500, 900};
	struct srdma_swqe *w =
		calloc(1, sizeof(*w) + 3 * sizeof(struct ibv_sge));
	uint8_t want[3100], got[3100];
	uint32_t i, j, n = 0;

	env_up(IBV_QPT_RC, 1024, 0);
	for (i = 0; i < 12000; i++)
		E.buf[i] = (uint8_t)(i * 31 + 7);
	w->wr_id = 1;
	w->opcode = IBV_WR_SEND;
	w->num_sge = 3;
	w->sge = w->sge_buf;
	for (i = 0; i < 3; i++) {
		w->sge[i].addr = (uintptr_t)E.buf + off[i];
		w->sge[i].length = len[i];
		w->sge[i].lkey = E.mr->ibmr.lkey;
		for (j = 0; j < len[i]; j++)
			want[n++] = E.buf[off[i] + j];
	}
	pthread_mutex_lock(&E.qp->sq_lock);
	assert_int_equal(srdma_netreq_post(E.qp, w), 0);
	pthread_mutex_unlock(&E.qp->sq_lock);
	assert_int_equal(E.npk, 4);
	for (i = 0, n = 0; i < 4; i++) {
		memcpy(got + n, E.pk[i].p.payload, E.pk[i].p.paylen);
		n += E.pk[i].p.paylen;
	}
	assert_int_equal(n, 3100);
	assert_memory_equal(got, want, 3100);
	ack(3);
	assert_int_equal(E.nc, 1);

	/* A READ scatters into the same three pieces. */
	for (i = 0; i < 3100; i++)
		want[i] = (uint8_t)(255 - i);
	w->wr_id = 2;
	w->opcode = IBV_WR_RDMA_READ;
	pthread_mutex_lock(&E.qp->sq_lock);
	assert_int_equal(srdma_netreq_post(E.qp, w), 0);
	pthread_mutex_unlock(&E.qp->sq_lock);
	respond(SRDMA_OP_READ_RESP_FIRST, 4, SRDMA_AETH_ACK, want, 1024, 0);
	respond(SRDMA_OP_READ_RESP_MIDDLE, 5, 0, want + 1024, 1024, 0);
	respond(SRDMA_OP_READ_RESP_MIDDLE, 6, 0, want + 2048, 1024, 0);
	respond(SRDMA_OP_READ_RESP_LAST, 7, SRDMA_AETH_ACK, want + 3072, 28, 0);
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[1].status, IBV_WC_SUCCESS);
	for (i = 0, n = 0; i < 3; i++) {
		assert_memory_equal(E.buf + off[i], want + n, len[i]);
		n += len[i];
	}
	env_down();
	free(w);
}

/* An MR over 4 fresh pages whose upper two the application unmaps after
 * registering; post_wr addresses it from now on. */
static uint8_t *half_unmapped_mr(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct srdma_mr_args a = {.access = IBV_ACCESS_LOCAL_WRITE,
				  .dmabuf_fd = -1};
	uint8_t *m;

	m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	a.addr = m;
	a.length = 4 * pg;
	a.iova = (uintptr_t)m;
	assert_int_equal(srdma_mr_reg(&E.pd->ibpd, &a, &E.mr2), 0);
	munmap(m + 2 * pg, 2 * pg); /* the application's mistake */
	E.base = m;
	return m;
}

static void test_unmapped_memory_is_an_error(void **state)
{
	uint32_t pg = (uint32_t)sysconf(_SC_PAGESIZE);
	uint8_t *m;

	env_up(IBV_QPT_RC, 1024, 0);
	m = half_unmapped_mr();
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 100, 0, 0), 0);
	assert_int_equal(E.npk, 1);
	/* Its second packet would read the unmapped pages. */
	assert_int_equal(post_wr(2, IBV_WR_SEND, 2 * pg - 1024, 2048, 0, 0), 0);
	assert_int_equal(post_wr(3, IBV_WR_SEND, 0, 8, 0, 0), 0);
	ack(0);
	assert_int_equal(E.nc, 3);
	assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
	assert_int_equal(E.c[1].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(E.c[2].status, IBV_WC_WR_FLUSH_ERR);
	env_down();
	munmap(m, 2 * pg);

	/* A READ response into unmapped memory: an error too. */
	env_up(IBV_QPT_RC, 1024, 0);
	m = half_unmapped_mr();
	assert_int_equal(
		post_wr(1, IBV_WR_RDMA_READ, 2 * pg - 1024, 2048, 0, 0x1000),
		0);
	respond(SRDMA_OP_READ_RESP_FIRST, 0, SRDMA_AETH_ACK, E.pk, 1024, 0);
	assert_int_equal(E.nc, 0);
	respond(SRDMA_OP_READ_RESP_LAST, 1, SRDMA_AETH_ACK, E.pk, 1024, 0);
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.c[0].status, IBV_WC_LOC_PROT_ERR);
	env_down();
	munmap(m, 2 * pg);
}

static void test_local_inv_failure_in_order(void **state)
{
	env_up(IBV_QPT_RC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(post_wr(2, IBV_WR_LOCAL_INV, 0, 0, 0, 0), 0);
	assert_int_equal(post_wr(3, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(E.npk, 1); /* stops at the failed LOCAL_INV */
	assert_int_equal(E.nc, 0);
	ack(0);
	assert_int_equal(E.nc, 3);
	assert_int_equal(E.c[1].status, IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(E.c[1].op, IBV_WR_LOCAL_INV);
	assert_int_equal(E.c[2].status, IBV_WC_WR_FLUSH_ERR);
	env_down();
}

static void test_timer_restarts_lazily(void **state)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	uint64_t t2, next;

	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.timeout = 10; /* 4.19 ms */
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	ack(0);
	nanosleep(&ts, NULL);
	/* The first message's wake-up is stale: it does not fire for the
	 * second, it moves on to the second's deadline. */
	t2 = srdma_now_ns();
	assert_int_equal(post_wr(2, IBV_WR_SEND, 0, 8, 0, 0), 0);
	next = srdma_netreq_timer(E.nq, t2 + 1000000);
	assert_true(next >= t2 + 4000000);
	assert_int_equal(E.npk, 2);
	assert_int_equal(atomic_load(&E.st.timeouts), 0);
	srdma_netreq_timer(E.nq, t2 + 10000000);
	assert_int_equal(E.npk, 3);
	assert_int_equal(atomic_load(&E.st.timeouts), 1);
	ack(1);
	assert_int_equal(E.nc, 2);
	env_down();
}

static void test_fence_waits_for_read(void **state)
{
	static uint8_t d[8];

	env_up(IBV_QPT_RC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_RDMA_READ, 0, 8, 0, 0x1000), 0);
	assert_int_equal(post_wr(2, IBV_WR_SEND, 0, 8, IBV_SEND_FENCE, 0), 0);
	assert_int_equal(E.npk, 1);
	respond(SRDMA_OP_READ_RESP_ONLY, 0, SRDMA_AETH_ACK, d, 8, 0);
	assert_int_equal(E.npk, 2);
	assert_int_equal(E.pk[1].p.opcode, SRDMA_OP_SEND_ONLY);
	assert_int_equal(E.pk[1].p.psn, 1);
	env_down();
}

/* ---- a lossy responder: end-to-end against a model ----------------------- */

#define RM_SIZE	 65536u
#define RM_WRITE 0u	/* WRITEs land in [0, 32K) */
#define RM_READ	 32768u /* READs read [32K, 60K), never written */
#define RM_ATOM	 61440u /* atomics: 8-byte slots from 60K */
#define SRC_SIZE 8192u	/* gather source: E.buf[0, 8K) */
#define DST_BASE 16384u /* READ/atomic destinations from 16K */

static struct {
	uint32_t seed;
	unsigned int loss; /* percent, each direction */
	unsigned int rnr;  /* percent of SEND starts answered RNR */
	uint8_t rmem[RM_SIZE];
	uint8_t model[RM_SIZE]; /* rmem as in-order execution leaves it */
	uint32_t epsn;
	bool nak_sent;
	uint64_t wva; /* WRITE in progress: next VA */
	struct {
		uint32_t psn;
		uint64_t orig;
	} atom[512]; /* atomic results, for replay */
	int natom;
	int seen; /* captured packets handled */
	struct srdma_pkt rsp[4096];
	uint8_t rdata[4096][1024];
	int nrsp;
} L;

static uint32_t rnd(void)
{
	L.seed = L.seed * 1103515245u + 12345u;
	return L.seed >> 8;
}

static void rsp_add(uint8_t op, uint32_t psn, uint8_t syn, const void *d,
		    uint32_t len, uint64_t orig)
{
	struct srdma_pkt *p;

	if (rnd() % 100 < L.loss)
		return;
	assert_true(L.nrsp < 4096);
	p = &L.rsp[L.nrsp];
	memset(p, 0, sizeof(*p));
	p->opcode = SRDMA_TR_RC | op;
	p->hdrs = srdma_wire_hdrs(p->opcode);
	p->psn = psn & 0xffffff;
	p->syndrome = syn;
	p->orig = orig;
	if (len)
		memcpy(L.rdata[L.nrsp], d, len);
	p->payload = L.rdata[L.nrsp];
	p->paylen = len;
	L.nrsp++;
}

/* The responder's answer to one request packet (roce-wire.md 1.7-1.12). */
static void lossy_responder(const struct srdma_pkt *q, uint32_t mtu)
{
	uint8_t op = q->opcode & 0x1f;
	int32_t d = srdma_psn_cmp(q->psn, L.epsn);
	uint32_t i, n;

	if (rnd() % 100 < L.loss)
		return; /* lost on the way there */
	if (op == SRDMA_OP_READ_REQ) {
		/* New or duplicate: (re)play from memory never written. */
		if (d > 0)
			goto ahead;
		n = q->dma_len > mtu ? (q->dma_len + mtu - 1) / mtu : 1;
		for (i = 0; i < n; i++) {
			uint32_t l = q->dma_len - i * mtu < mtu
					     ? q->dma_len - i * mtu
					     : mtu;
			uint8_t o = n == 1	 ? SRDMA_OP_READ_RESP_ONLY
				    : i == 0	 ? SRDMA_OP_READ_RESP_FIRST
				    : i + 1 == n ? SRDMA_OP_READ_RESP_LAST
						 : SRDMA_OP_READ_RESP_MIDDLE;

			rsp_add(o, q->psn + i, SRDMA_AETH_ACK,
				L.rmem + q->va + (uint64_t)i * mtu, l, 0);
		}
		if (!d) {
			L.epsn = (L.epsn + n) & 0xffffff;
			L.nak_sent = false;
		}
		return;
	}
	if (op == SRDMA_OP_FETCH_ADD) {
		uint64_t v;
		int k;

		if (d > 0)
			goto ahead;
		for (k = 0; k < L.natom; k++)
			if (L.atom[k].psn == q->psn)
				break;
		if (k == L.natom) {
			assert_int_equal(d, 0);
			memcpy(&v, L.rmem + q->va, 8);
			L.atom[L.natom].psn = q->psn;
			L.atom[L.natom++].orig = v;
			v += q->swap_add;
			memcpy(L.rmem + q->va, &v, 8);
			L.epsn = (L.epsn + 1) & 0xffffff;
			L.nak_sent = false;
		}
		rsp_add(SRDMA_OP_ATOMIC_ACK, q->psn, SRDMA_AETH_ACK, NULL, 0,
			L.atom[k].orig);
		return;
	}
	/* SEND and WRITE packets */
	if (d < 0) { /* duplicate: ACK what we have */
		rsp_add(SRDMA_OP_ACK, L.epsn - 1, SRDMA_AETH_ACK, NULL, 0, 0);
		return;
	}
	if (d > 0)
		goto ahead;
	if ((op == SRDMA_OP_SEND_FIRST || op == SRDMA_OP_SEND_ONLY) &&
	    rnd() % 100 < L.rnr) {
		rsp_add(SRDMA_OP_ACK, q->psn, SRDMA_AETH_RNR(1), NULL, 0, 0);
		return;
	}
	if (q->hdrs & SRDMA_HDR_RETH)
		L.wva = q->va;
	if (op >= SRDMA_OP_WRITE_FIRST && op <= SRDMA_OP_WRITE_ONLY_IMM) {
		memcpy(L.rmem + L.wva, q->payload, q->paylen);
		L.wva += q->paylen;
	}
	L.epsn = (L.epsn + 1) & 0xffffff;
	L.nak_sent = false;
	if (q->ackreq)
		rsp_add(SRDMA_OP_ACK, q->psn, SRDMA_AETH_ACK, NULL, 0, 0);
	return;
ahead:
	if (!L.nak_sent)
		rsp_add(SRDMA_OP_ACK, L.epsn, SRDMA_AETH_NAK_PSN, NULL, 0, 0);
	L.nak_sent = true;
}

static void lossy_run(uint32_t seed, unsigned int loss, unsigned int rnr)
{
	enum { N = 300 };
	struct {
		uint32_t op, len, loc, rem;
		uint64_t add, orig;
	} wq[N];
	uint64_t t = srdma_now_ns();
	int posted = 0, steps = 0, i;
	uint32_t dst = DST_BASE, mtu = 256;
	struct srdma_wire_path from;

	memset(&L, 0, sizeof(L));
	L.seed = seed;
	L.loss = loss;
	L.rnr = rnr;
	env_up(IBV_QPT_RC, mtu, 0xfffe00);
	E.qp->attr.timeout = 12; /* 16.8 ms, on the made-up clock */
	E.qp->attr.max_rd_atomic = 2;
	L.epsn = 0xfffe00;
	from = E.nq->path;
	memcpy(from.sip, E.nq->path.dip, 16);
	memcpy(from.dip, E.nq->path.sip, 16);
	for (i = 0; i < (int)RM_SIZE; i++)
		L.rmem[i] = L.model[i] = (uint8_t)rnd();
	for (i = 0; i < (int)SRC_SIZE; i++)
		E.buf[i] = (uint8_t)rnd();
	/* The work, and what in-order execution makes of it. */
	for (i = 0; i < N; i++) {
		uint32_t k = rnd() % 10;

		wq[i].len = rnd() % 3000;
		wq[i].loc = rnd() % (SRC_SIZE - 3000);
		if (k < 4) {
			wq[i].op = IBV_WR_RDMA_WRITE;
			wq[i].rem = RM_WRITE + rnd() % (32768 - 3000);
			memcpy(L.model + wq[i].rem, E.buf + wq[i].loc,
			       wq[i].len);
		} else if (k < 7) {
			wq[i].op = IBV_WR_SEND;
		} else if (k < 9) {
			wq[i].op = IBV_WR_RDMA_READ;
			wq[i].rem = RM_READ + rnd() % (28672 - 3000);
			wq[i].loc = dst;
			dst += wq[i].len;
		} else {
			uint64_t v;

			wq[i].op = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wq[i].rem = RM_ATOM + 8 * (rnd() % 16);
			wq[i].len = 8;
			wq[i].loc = dst;
			dst += 8;
			wq[i].add = rnd();
			memcpy(&v, L.model + wq[i].rem, 8);
			wq[i].orig = v;
			v += wq[i].add;
			memcpy(L.model + wq[i].rem, &v, 8);
		}
	}
	while (E.nc < N) {
		assert_true(++steps < 20000);
		while (posted < N) {
			struct srdma_swqe *w =
				calloc(1, sizeof(*w) + sizeof(struct ibv_sge));
			int r;

			w->wr_id = (uint64_t)posted;
			w->opcode = wq[posted].op;
			w->send_flags = IBV_SEND_SIGNALED;
			w->num_sge = 1;
			w->sge = w->sge_buf;
			w->sge[0].addr = (uintptr_t)E.buf + wq[posted].loc;
			w->sge[0].length = wq[posted].len;
			w->sge[0].lkey = E.mr->ibmr.lkey;
			w->remote_addr = wq[posted].rem;
			w->compare_add = wq[posted].add;
			pthread_mutex_lock(&E.qp->sq_lock);
			r = srdma_netreq_post(E.qp, w);
			pthread_mutex_unlock(&E.qp->sq_lock);
			free(w);
			if (r == -ENOMEM)
				break;
			assert_int_equal(r, 0);
			posted++;
		}
		/* Requests to the responder, responses back, until quiet. */
		while (L.seen < E.npk) {
			if (E.npk > MAXPKT - 200) { /* recycle the capture */
				memmove(E.pk, E.pk + L.seen,
					(size_t)(E.npk - L.seen) *
						sizeof(*E.pk));
				for (i = 0; i < E.npk - L.seen; i++)
					E.pk[i].p.payload =
						E.pk[i].buf + E.pk[i].p.hdr_len;
				E.npk -= L.seen;
				L.seen = 0;
			}
			L.nrsp = 0;
			while (L.seen < E.npk)
				lossy_responder(&E.pk[L.seen++].p, mtu);
			for (i = 0; i < L.nrsp; i++)
				srdma_netreq_input(E.nq, &L.rsp[i], &from);
		}
		if (E.nc < N) {
			t += 20000000; /* 20 ms later */
			if (t < srdma_now_ns())
				t = srdma_now_ns();
			srdma_netreq_timer(E.nq, t);
		}
	}
	for (i = 0; i < N; i++) {
		assert_int_equal(E.c[i].wr_id, (uint64_t)i);
		assert_int_equal(E.c[i].status, IBV_WC_SUCCESS);
	}
	for (i = 0; i < N; i++) {
		if (wq[i].op == IBV_WR_RDMA_READ)
			assert_memory_equal(E.buf + wq[i].loc,
					    L.rmem + wq[i].rem, wq[i].len);
		if (wq[i].op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			assert_memory_equal(E.buf + wq[i].loc, &wq[i].orig, 8);
	}
	assert_memory_equal(L.rmem, L.model, RM_SIZE);
	print_message(
		"seed %u loss %u%% rnr %u%%: %d steps, %llu packets, "
		"%llu retransmitted, %llu timeouts, %llu NAKs, "
		"%llu RNR NAKs, %llu dropped as duplicates\n",
		seed, loss, rnr, steps,
		(unsigned long long)atomic_load(&E.st.tx_pkts),
		(unsigned long long)atomic_load(&E.st.retransmits),
		(unsigned long long)atomic_load(&E.st.timeouts),
		(unsigned long long)atomic_load(&E.st.naks_rcvd),
		(unsigned long long)atomic_load(&E.st.rnr_rcvd),
		(unsigned long long)atomic_load(&E.st.drops[SRDMA_DROP_DUP]));
	if (loss) {
		assert_true(atomic_load(&E.st.retransmits) > 0);
		assert_true(atomic_load(&E.st.timeouts) > 0);
		assert_true(atomic_load(&E.st.naks_rcvd) > 0);
	}
	if (rnr)
		assert_true(atomic_load(&E.st.rnr_rcvd) > 0);
	env_down();
}

static void test_lossy_responder(void **state)
{
	lossy_run(1, 0, 0);
	lossy_run(2, 5, 0);
	/* 10 % each way: retry_cnt 7 is 7 retries without progress (IBTA,
	 * not rxe's forever), which 20 % loss each way exhausts now and
	 * then, as it would on a real fabric. */
	lossy_run(3, 10, 10);
}

static void test_nak_seq_atomics(void **state)
{
	int i;

	env_up(IBV_QPT_RC, 1024, 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(post_wr(i + 1, IBV_WR_ATOMIC_FETCH_AND_ADD,
					 64 + 8 * i, 8, 0, 0x3000),
				 0);
	assert_int_equal(E.npk, 4);
	/* The first request was lost: the responder NAKs its PSN. */
	respond(SRDMA_OP_ACK, 0, SRDMA_AETH_NAK_PSN, NULL, 0, 0);
	assert_int_equal(E.npk, 8);
	assert_int_equal(E.pk[4].p.psn, 0);
	for (i = 0; i < 4; i++)
		respond(SRDMA_OP_ATOMIC_ACK, i, SRDMA_AETH_ACK, NULL, 0, i);
	assert_int_equal(E.nc, 4);
	env_down();
}

/* A READ re-issued from its middle: a responder that replays the original
 * READ's MIDDLE/LAST at the restart PSN (rxe, NICs) is placed, as is one
 * that answers the new request with FIRST/ONLY. */
static void test_read_restart_replay(void **state)
{
	static uint8_t data[2500];
	uint32_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	env_up(IBV_QPT_RC, 1024, 50);
	E.qp->attr.timeout = 8;
	assert_int_equal(post_wr(1, IBV_WR_RDMA_READ, 4096, 2500, 0, 0x10000),
			 0);
	respond(SRDMA_OP_READ_RESP_FIRST, 50, SRDMA_AETH_ACK, data, 1024, 0);
	srdma_netreq_timer(E.nq, later(100000000));
	assert_int_equal(E.npk, 2);
	assert_int_equal(E.pk[1].p.opcode, SRDMA_OP_READ_REQ);
	assert_int_equal(E.pk[1].p.psn, 51);
	/* rxe's replay: MIDDLE at the restart PSN, then LAST. */
	respond(SRDMA_OP_READ_RESP_MIDDLE, 51, 0, data + 1024, 1024, 0);
	respond(SRDMA_OP_READ_RESP_LAST, 52, SRDMA_AETH_ACK, data + 2048, 452,
		0);
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
	assert_memory_equal(E.buf + 4096, data, sizeof(data));
	assert_int_equal(drops(SRDMA_DROP_OPCODE), 0);

	/* The restart's rest fits one packet: a replayed LAST does it. */
	memset(E.buf + 4096, 0, sizeof(data));
	assert_int_equal(post_wr(2, IBV_WR_RDMA_READ, 4096, 2048, 0, 0x10000),
			 0);
	respond(SRDMA_OP_READ_RESP_FIRST, 53, SRDMA_AETH_ACK, data, 1024, 0);
	srdma_netreq_timer(E.nq, later(200000000));
	assert_int_equal(E.pk[E.npk - 1].p.opcode, SRDMA_OP_READ_REQ);
	assert_int_equal(E.pk[E.npk - 1].p.psn, 54);
	respond(SRDMA_OP_READ_RESP_LAST, 54, SRDMA_AETH_ACK, data + 1024, 1024,
		0);
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[1].status, IBV_WC_SUCCESS);
	assert_memory_equal(E.buf + 4096, data, 2048);
	/* A MIDDLE at a READ's own first PSN is still wrong. */
	assert_int_equal(post_wr(3, IBV_WR_RDMA_READ, 4096, 2048, 0, 0x10000),
			 0);
	respond(SRDMA_OP_READ_RESP_MIDDLE, 55, 0, data, 1024, 0);
	assert_int_equal(drops(SRDMA_DROP_OPCODE), 1);
	env_down();
}

/* A READ response past the expected PSN means loss: the READ is re-issued
 * at once, once until progress (no storm from the rest of the burst). */
static void test_read_gap_retries_at_once(void **state)
{
	static uint8_t data[3072];
	uint32_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 5 + 1);
	env_up(IBV_QPT_RC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_RDMA_READ, 0, 3072, 0, 0x10000),
			 0);
	respond(SRDMA_OP_READ_RESP_FIRST, 0, SRDMA_AETH_ACK, data, 1024, 0);
	/* 1 lost; 2 arrives: re-issued from 1 without the timer. */
	respond(SRDMA_OP_READ_RESP_LAST, 2, SRDMA_AETH_ACK, data + 2048, 1024,
		0);
	assert_int_equal(E.npk, 2);
	assert_int_equal(E.pk[1].p.opcode, SRDMA_OP_READ_REQ);
	assert_int_equal(E.pk[1].p.psn, 1);
	assert_int_equal(E.pk[1].p.dma_len, 2048);
	/* A duplicate past the gap does not rewind again. */
	respond(SRDMA_OP_READ_RESP_LAST, 2, SRDMA_AETH_ACK, data + 2048, 1024,
		0);
	assert_int_equal(E.npk, 2);
	assert_int_equal(drops(SRDMA_DROP_PSN), 2);
	respond(SRDMA_OP_READ_RESP_FIRST, 1, SRDMA_AETH_ACK, data + 1024, 1024,
		0);
	respond(SRDMA_OP_READ_RESP_LAST, 2, SRDMA_AETH_ACK, data + 2048, 1024,
		0);
	assert_int_equal(E.nc, 1);
	assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
	assert_memory_equal(E.buf, data, sizeof(data));
	env_down();
}

/* UC has no SEND with Invalidate on the wire: LOC_QP_OP_ERR, in order. */
static void test_uc_send_with_inv(void **state)
{
	env_up(IBV_QPT_UC, 1024, 0);
	assert_int_equal(post_wr(1, IBV_WR_SEND, 0, 8, 0, 0), 0);
	assert_int_equal(post_wr(2, IBV_WR_SEND_WITH_INV, 0, 8, 0, 0), 0);
	assert_int_equal(E.npk, 1);
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
	assert_int_equal(E.c[1].status, IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(E.c[1].op, IBV_WR_SEND_WITH_INV);
	env_down();
}

/* The engine hands a net QP's local operations to the net requester, so
 * a LOCAL_INV completes after the SEND before it is acknowledged. */
static void test_engine_local_op_in_order(void **state)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr[2], *bad = NULL;

	env_up(IBV_QPT_RC, 1024, 0);
	atomic_store(&E.qp->sh->state, IBV_QPS_RTS);
	memset(wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)E.buf;
	sge.length = 8;
	sge.lkey = E.mr->ibmr.lkey;
	wr[0].wr_id = 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].sg_list = &sge;
	wr[0].num_sge = 1;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].next = &wr[1];
	wr[1].wr_id = 2;
	wr[1].opcode = IBV_WR_LOCAL_INV;
	wr[1].invalidate_rkey = 0x7777; /* no such key: it fails */
	wr[1].send_flags = IBV_SEND_SIGNALED;
	assert_int_equal(srdma_post_send(E.qp, wr, &bad), 0);
	assert_int_equal(E.npk, 1);
	assert_int_equal(E.nc, 0);
	ack(0);
	assert_int_equal(E.nc, 2);
	assert_int_equal(E.c[0].wr_id, 1);
	assert_int_equal(E.c[0].status, IBV_WC_SUCCESS);
	assert_int_equal(E.c[1].wr_id, 2);
	assert_int_equal(E.c[1].status, IBV_WC_LOC_QP_OP_ERR);
	env_down();
}

/* Atomics under loss: after a timeout's rewind, a later response showing
 * that the resent head's answer was lost again retries at once (once). */
/* An ACK our responder holds back for the peer rides right behind our
 * next request, in the same batch (net-responder.md, "ACK timing"). */
static void test_held_ack_rides_behind_request(void **state)
{
	(void)state;
	env_up(IBV_QPT_RC, 1024, 100);
	atomic_store(&E.nq->ack_pending,
		     SRDMA_NET_ACK_HELD | 7ull << 24 | 0x4321);
	atomic_store(&E.nq->ack_due_ns, later(1000000));
	assert_int_equal(post_wr(1, IBV_WR_RDMA_WRITE, 0, 8, IBV_SEND_INLINE,
				 0x1000), 0);
	assert_int_equal(E.npk, 2);
	assert_int_equal(E.pk[0].p.opcode, SRDMA_TR_RC | SRDMA_OP_WRITE_ONLY);
	assert_int_equal(E.pk[0].p.psn, 100);
	assert_int_equal(E.pk[1].p.opcode, SRDMA_TR_RC | SRDMA_OP_ACK);
	assert_int_equal(E.pk[1].p.syndrome, SRDMA_AETH_ACK);
	assert_int_equal(E.pk[1].p.psn, 0x4321);
	assert_int_equal(E.pk[1].p.msn, 7);
	assert_int_equal(E.pk[1].p.dqpn, 0x123);
	assert_memory_equal(&E.pk[1].path, &E.nq->path, sizeof(E.nq->path));
	assert_int_equal(atomic_load(&E.nq->ack_pending), 0);
	assert_int_equal(atomic_load(&E.st.acks_piggybacked), 1);
	assert_true(atomic_load(&E.nq->req_tx_ns) != 0);
	/* Nothing held: the request alone; the deadline finds nothing. */
	assert_int_equal(post_wr(2, IBV_WR_RDMA_WRITE, 0, 8, IBV_SEND_INLINE,
				 0x1000), 0);
	assert_int_equal(E.npk, 3);
	assert_int_equal(srdma_netresp_ack_timer(E.nq, UINT64_MAX - 1), 0);
	assert_int_equal(E.npk, 3);
	ack(101);
	assert_int_equal(E.nc, 2);
	env_down();
}

static void test_atomic_fast_retry_after_timeout(void **state)
{
	uint32_t n;

	env_up(IBV_QPT_RC, 1024, 0);
	E.qp->attr.timeout = 8;
	assert_int_equal(post_wr(1, IBV_WR_ATOMIC_FETCH_AND_ADD, 64, 8, 0,
				 0x3000), 0);
	assert_int_equal(post_wr(2, IBV_WR_ATOMIC_FETCH_AND_ADD, 72, 8, 0,
				 0x3008), 0);
	assert_int_equal(post_wr(3, IBV_WR_ATOMIC_FETCH_AND_ADD, 80, 8, 0,
				 0x3010), 0);
	assert_int_equal(E.npk, 3);
	/* Nothing came back: the timer resends all three. */
	srdma_netreq_timer(E.nq, later(100000000));
	assert_int_equal(E.npk, 6);
	/* The answer to PSN 1 shows PSN 0's was lost (again): at once. */
	respond(SRDMA_OP_ATOMIC_ACK, 1, SRDMA_AETH_ACK, NULL, 0, 7);
	assert_int_equal(E.npk, 9);
	assert_int_equal(E.pk[6].p.psn, 0);
	n = E.npk;
	/* The rest of the burst does not rewind again. */
	respond(SRDMA_OP_ATOMIC_ACK, 2, SRDMA_AETH_ACK, NULL, 0, 8);
	respond(SRDMA_OP_ATOMIC_ACK, 1, SRDMA_AETH_ACK, NULL, 0, 7);
	assert_int_equal(E.npk, n);
	respond(SRDMA_OP_ATOMIC_ACK, 0, SRDMA_AETH_ACK, NULL, 0, 6);
	respond(SRDMA_OP_ATOMIC_ACK, 1, SRDMA_AETH_ACK, NULL, 0, 7);
	respond(SRDMA_OP_ATOMIC_ACK, 2, SRDMA_AETH_ACK, NULL, 0, 8);
	assert_int_equal(E.nc, 3);
	assert_int_equal(E.c[2].status, IBV_WC_SUCCESS);
	env_down();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_segmentation),
		cmocka_unit_test(test_held_ack_rides_behind_request),
		cmocka_unit_test(test_ackreq_every_64_and_window),
		cmocka_unit_test(test_ack_partial_and_order),
		cmocka_unit_test(test_nak_seq_retransmit),
		cmocka_unit_test(test_rnr_retry_and_exhaustion),
		cmocka_unit_test(test_rnr_then_progress_resets_budget),
		cmocka_unit_test(test_timeout_retry_exhaustion),
		cmocka_unit_test(test_timeout_zero_never),
		cmocka_unit_test(test_timer_restarts_lazily),
		cmocka_unit_test(test_read_placement_and_retry),
		cmocka_unit_test(test_implied_nak),
		cmocka_unit_test(test_atomic),
		cmocka_unit_test(test_max_rd_atomic),
		cmocka_unit_test(test_fence_waits_for_read),
		cmocka_unit_test(test_nak_seq_atomics),
		cmocka_unit_test(test_lossy_responder),
		cmocka_unit_test(test_error_naks),
		cmocka_unit_test(test_local_protection),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_hostile_responses),
		cmocka_unit_test(test_uc_completes_when_sent),
		cmocka_unit_test(test_ud),
		cmocka_unit_test(test_send_failure_recovered),
		cmocka_unit_test(test_multi_sge_gather_and_scatter),
		cmocka_unit_test(test_unmapped_memory_is_an_error),
		cmocka_unit_test(test_local_inv_failure_in_order),
		cmocka_unit_test(test_read_restart_replay),
		cmocka_unit_test(test_read_gap_retries_at_once),
		cmocka_unit_test(test_uc_send_with_inv),
		cmocka_unit_test(test_engine_local_op_in_order),
		cmocka_unit_test(test_atomic_fast_retry_after_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
