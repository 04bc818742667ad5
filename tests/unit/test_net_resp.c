// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_resp.c - the responder of a net QP (src/transport/net/resp.c)
 * driven packet by packet, against a real context, QPs, MRs and CQs.
 *
 * Requests are built with the wire codec and parsed back, as the endpoint
 * would hand them over; what the responder sends is caught by its test
 * hook, checked for its ICRC and parsed. The QP's net half is built here
 * by hand (no sockets, no endpoint): the responder only needs its path,
 * MTU, peer QPN and counters. What is checked is what roce-wire.md §1.7-
 * §1.14 and verbs-semantics §5 ask: in-order SEND delivery over several
 * packets, RNR NAK with the QP's timer, one NAK per PSN gap, duplicate
 * SEND re-ACKed, READ replayed from inside its response, an atomic
 * executed once, a bad rkey NAKed 0x62 with the QP in ERR, a bad length
 * NAKed 0x61, UC dropping a broken message, UD Q_Key drops and GRH, an
 * XRC TGT QP's SRQ from the XRCETH (and its refusals), and a storm of
 * random packets that must never crash or leak.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/xrc.h"
#include "transport/net/net.h"

#define MTU	  1024u
#define BUF	  65536u
#define PEER_QPN  0x4242u
#define RNR_TIMER 12
#define MAX_TX	  64

/*
 * The endpoint's functions, for a test binary that does not pull the
 * endpoint in: weak, so the real ones win when they are linked. The
 * responder sends through srdma_netresp_tx_hook here anyway.
 */
__attribute__((weak)) int srdma_net_send(struct srdma_context *ctx,
					 const struct srdma_wire_path *p,
					 const struct iovec *iov, int n)
{
	(void)ctx;
	(void)p;
	(void)iov;
	(void)n;
	return 0;
}

__attribute__((weak)) void srdma_net_drop(struct srdma_context *ctx,
					  struct srdma_net_qp *nq,
					  enum srdma_drop d, const char *why)
{
	(void)ctx;
	(void)why;
	if (nq && d < SRDMA_DROP_MAX)
		atomic_fetch_add(&nq->st->drops[d], 1);
}

/* ---- what the responder sent ------------------------------------------- */

struct txpkt {
	uint8_t bytes[MTU + 128];
	size_t len;
	struct srdma_pkt p;
	uint64_t cq_queued;	/* tx_cq's CQEs not polled when it left */
	uint32_t cq_fired;	/* tx_cq's event flag then */
};

static struct txpkt tx[MAX_TX];
static int ntx;
static bool tx_capture = true;
static struct srdma_cq *tx_cq;	/* the fixture's CQ */

static int tx_hook(struct srdma_net_qp *nq, const struct iovec *iov, int n)
{
	struct txpkt *t;
	size_t len = 0;
	int i;

	if (!tx_capture)
		return 0;
	assert_true(ntx < MAX_TX);
	t = &tx[ntx++];
	for (i = 0; i < n; i++) {
		assert_true(len + iov[i].iov_len <= sizeof(t->bytes));
		memcpy(t->bytes + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	t->len = len;
	if (tx_cq) {
		t->cq_queued = tx_cq->sh->prod - atomic_load(&tx_cq->sh->cons);
		t->cq_fired = atomic_load(&tx_cq->sh->fired);
	}
	assert_int_equal(srdma_wire_parse(t->bytes, len, &t->p),
			 SRDMA_DROP_NONE);
	assert_true(srdma_wire_icrc_check(&nq->path, t->bytes, len));
	assert_int_equal(t->p.dqpn, PEER_QPN);
	assert_int_equal(t->p.pkey, SRDMA_DEFAULT_PKEY);
	return 0;
}

/* ---- the fixture ------------------------------------------------------- */

struct fx {
	struct srdma_context *ctx;
	struct srdma_pd *pd;
	struct srdma_cq *cq;
	struct srdma_mr *mr;
	struct srdma_srq *srq; /* or NULL */
	struct srdma_xrcd *xrcd; /* XRC_RECV: its domain (SRQ in it) */
	uint8_t *buf;	       /* BUF bytes, registered */
	struct srdma_qp *qp;
	struct srdma_net_qp nq;
	struct srdma_net_qp_stats st;
	struct srdma_wire_path peer; /* the peer's view: its datagrams */
	enum ibv_qp_type type;
};

/* The next fixture's QP takes its receives from an SRQ. */
static bool use_srq;

static void v4gid(uint8_t g[16], uint8_t last)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = 198;
	g[13] = 18;
	g[14] = 0;
	g[15] = last;
}

static struct fx *fx_new(enum ibv_qp_type type, uint32_t access, uint32_t epsn)
{
	struct srdma_cq_args ca = {.cqe = 256};
	struct ibv_qp_init_attr_ex qa = {0};
	struct srdma_mr_args ma = {0};
	struct ibv_qp_attr at = {0};
	struct fx *f = calloc(1, sizeof(*f));
	int mask;

	assert_non_null(f);
	f->type = type;
	assert_int_equal(srdma_context_open(srdma_device_get(), &f->ctx), 0);
	assert_int_equal(srdma_pd_alloc(f->ctx, &f->pd), 0);
	assert_int_equal(srdma_cq_create(f->ctx, &ca, &f->cq), 0);
	f->buf = aligned_alloc(4096, BUF);
	assert_non_null(f->buf);
	memset(f->buf, 0, BUF);
	ma.addr = f->buf;
	ma.length = BUF;
	ma.iova = (uintptr_t)f->buf;
	ma.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	assert_int_equal(srdma_mr_reg(&f->pd->ibpd, &ma, &f->mr), 0);

	if (type == IBV_QPT_XRC_RECV) {
		struct ibv_xrcd_init_attr xa = {0};
		struct ibv_srq_init_attr_ex sx = {0};

		xa.comp_mask = IBV_XRCD_INIT_ATTR_FD |
			       IBV_XRCD_INIT_ATTR_OFLAGS;
		xa.fd = -1;
		xa.oflags = O_CREAT;
		assert_int_equal(srdma_xrcd_open(f->ctx, &xa, &f->xrcd), 0);
		sx.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
		sx.srq_type = IBV_SRQT_XRC;
		sx.pd = &f->pd->ibpd;
		sx.xrcd = &f->xrcd->ibxrcd;
		sx.cq = &f->cq->ib.cq;
		sx.attr.max_wr = 64;
		sx.attr.max_sge = 4;
		assert_int_equal(srdma_srq_create_xrc(f->ctx, &sx, &f->srq), 0);
		qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
		qa.xrcd = &f->xrcd->ibxrcd;
	} else if (use_srq) {
		struct ibv_srq_init_attr sa = {0};

		sa.attr.max_wr = 64;
		sa.attr.max_sge = 4;
		assert_int_equal(srdma_srq_create(&f->pd->ibpd, &sa, &f->srq),
				 0);
		qa.srq = &f->srq->ibsrq;
	}
	if (type != IBV_QPT_XRC_RECV) {
		qa.comp_mask = IBV_QP_INIT_ATTR_PD;
		qa.pd = &f->pd->ibpd;
	}
	qa.send_cq = &f->cq->ib.cq;
	qa.recv_cq = &f->cq->ib.cq;
	qa.qp_type = type;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 4;
	assert_int_equal(srdma_qp_create(f->ctx, &qa, &f->qp), 0);

	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (type == IBV_QPT_UD) {
		at.qkey = 0x1111;
		mask |= IBV_QP_QKEY;
	} else {
		at.qp_access_flags = access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	assert_int_equal(srdma_qp_modify(f->qp, &at, mask), 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (type != IBV_QPT_UD) {
		at.path_mtu = IBV_MTU_1024;
		at.dest_qp_num = PEER_QPN;
		at.rq_psn = epsn;
		at.ah_attr.dlid = 7;
		at.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (type == IBV_QPT_RC || type == IBV_QPT_XRC_RECV) {
			at.max_dest_rd_atomic = 4;
			at.min_rnr_timer = RNR_TIMER;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
	}
	assert_int_equal(srdma_qp_modify(f->qp, &at, mask), 0);

	/* The net half, as qp_net.c would have built it at RTR. */
	f->nq.qp = f->qp;
	f->nq.ctx = f->ctx;
	f->nq.qpn = f->qp->ib.qp.qp_num;
	f->nq.connected = type != IBV_QPT_UD;
	v4gid(f->nq.path.sip, 1);
	v4gid(f->nq.path.dip, 2);
	f->nq.path.sport = 0xc001;
	f->nq.path.dport = SRDMA_ROCE_PORT;
	f->nq.dqpn = PEER_QPN;
	f->nq.mtu = MTU;
	f->nq.st = &f->st;
	pthread_mutex_init(&f->nq.resp_lock, NULL);
	f->nq.resp = srdma_netresp_new(&f->nq);
	assert_non_null(f->nq.resp);
	pthread_mutex_lock(&f->nq.resp_lock);
	srdma_netresp_reset(&f->nq, epsn);
	pthread_mutex_unlock(&f->nq.resp_lock);
	memcpy(f->peer.sip, f->nq.path.dip, 16);
	memcpy(f->peer.dip, f->nq.path.sip, 16);
	f->peer.sport = 0xc001;
	f->peer.dport = SRDMA_ROCE_PORT;

	srdma_netresp_tx_hook = tx_hook;
	tx_cq = f->cq;
	ntx = 0;
	tx_capture = true;
	return f;
}

static void fx_free(struct fx *f)
{
	struct ibv_wc wc[16];

	while (srdma_cq_poll(f->cq, 16, wc) > 0)
		;
	srdma_netresp_free(f->nq.resp);
	pthread_mutex_destroy(&f->nq.resp_lock);
	assert_int_equal(srdma_qp_destroy(f->qp), 0);
	if (f->srq)
		assert_int_equal(srdma_srq_destroy(f->srq), 0);
	if (f->xrcd)
		assert_int_equal(srdma_xrcd_close(&f->xrcd->ibxrcd), 0);
	assert_int_equal(srdma_mr_dereg(&f->mr->ibmr), 0);
	assert_int_equal(srdma_cq_destroy(f->cq), 0);
	assert_int_equal(srdma_pd_dealloc(f->pd), 0);
	assert_int_equal(srdma_context_close(f->ctx), 0);
	free(f->buf);
	free(f);
	srdma_netresp_tx_hook = NULL;
	tx_cq = NULL;
}

static uint32_t qp_state(struct fx *f)
{
	return atomic_load(&f->qp->sh->state);
}

static void post_recv(struct fx *f, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)f->buf + off, len, f->mr->ibmr.lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	if (f->srq)
		assert_int_equal(srdma_srq_post_recv(f->srq, &wr, &bad), 0);
	else
		assert_int_equal(srdma_qp_post_recv(f->qp, &wr, &bad), 0);
}

/* Post without judging the result (the fuzz may fill the queue). */
static void post_recv_try(struct fx *f, uint64_t wr_id, uint32_t off,
			  uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)f->buf + off, len, f->mr->ibmr.lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	if (f->srq)
		(void)srdma_srq_post_recv(f->srq, &wr, &bad);
	else
		(void)srdma_qp_post_recv(f->qp, &wr, &bad);
}

static int cq_poll(struct fx *f, struct ibv_wc *wc, int n)
{
	return srdma_cq_poll(f->cq, n, wc);
}

/* Build @p (+ @len payload bytes at @data) as bytes, parse it back the
 * way the endpoint does, and hand it to the responder. */
static void inject_from(struct fx *f, struct srdma_pkt *p, const void *data,
			uint32_t len, const struct srdma_wire_path *from)
{
	uint8_t b[SRDMA_MAX_IB_HDR + MTU + 8];
	struct srdma_pkt q;
	uint32_t hl, pad = srdma_wire_pad(len);

	if (!p->pkey)
		p->pkey = SRDMA_DEFAULT_PKEY;
	p->dqpn = f->nq.qpn;
	p->paylen = len;
	hl = srdma_wire_build(b, p);
	assert_true(hl > 0);
	assert_true(len <= MTU);
	if (len)
		memcpy(b + hl, data, len);
	memset(b + hl + len, 0, pad + 4);
	assert_int_equal(srdma_wire_parse(b, hl + len + pad + 4, &q),
			 SRDMA_DROP_NONE);
	srdma_netresp_input(&f->nq, &q, from);
}

static void inject(struct fx *f, struct srdma_pkt *p, const void *data,
		   uint32_t len)
{
	inject_from(f, p, data, len, &f->peer);
}

static struct srdma_pkt req(struct fx *f, uint8_t op, uint32_t psn)
{
	struct srdma_pkt p = {0};
	uint8_t tr = f->type == IBV_QPT_RC	   ? SRDMA_TR_RC
		     : f->type == IBV_QPT_UC	   ? SRDMA_TR_UC
		     : f->type == IBV_QPT_XRC_RECV ? SRDMA_TR_XRC
						   : SRDMA_TR_UD;

	p.opcode = tr | op;
	p.psn = psn;
	if (f->type == IBV_QPT_XRC_RECV)
		p.xrc_srqn = srdma_srq_num(f->srq);
	return p;
}

static void check_ack_tr(int i, uint8_t tr, uint8_t syndrome, uint32_t psn)
{
	assert_true(i < ntx);
	assert_int_equal(tx[i].p.opcode, tr | SRDMA_OP_ACK);
	assert_int_equal(tx[i].p.syndrome, syndrome);
	assert_int_equal(tx[i].p.psn, psn);
}

static void check_ack(int i, uint8_t syndrome, uint32_t psn)
{
	assert_true(i < ntx);
	assert_int_equal(tx[i].p.opcode, SRDMA_TR_RC | SRDMA_OP_ACK);
	assert_int_equal(tx[i].p.syndrome, syndrome);
	assert_int_equal(tx[i].p.psn, psn);
}

static uint8_t pat(uint32_t i)
{
	return (uint8_t)(i * 7 + 3);
}

/* ---- RC ------------------------------------------------------------------ */

/* A 2548-byte SEND in three packets lands in order; one ACK at the end. */
static void test_send_multi(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, 0, 100);
	uint8_t data[2548];
	struct srdma_pkt p;
	struct ibv_wc wc;
	uint32_t i;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = pat(i);
	post_recv(f, 0xaa, 0, 4096);
	p = req(f, SRDMA_OP_SEND_FIRST, 100);
	inject(f, &p, data, MTU);
	p = req(f, SRDMA_OP_SEND_MIDDLE, 101);
	inject(f, &p, data + MTU, MTU);
	assert_int_equal(ntx, 0);
	assert_int_equal(cq_poll(f, &wc, 1), 0);
	p = req(f, SRDMA_OP_SEND_LAST_IMM, 102);
	p.ackreq = true;
	p.se = true;
	p.imm = htobe32(0x1234);
	inject(f, &p, data + 2 * MTU, sizeof(data) - 2 * MTU);
	assert_int_equal(ntx, 1);
	check_ack(0, SRDMA_AETH_ACK, 102);
	assert_int_equal(tx[0].p.msn, 1);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 0xaa);
	assert_int_equal(wc.byte_len, sizeof(data));
	assert_int_equal(wc.src_qp, PEER_QPN);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x1234);
	assert_memory_equal(f->buf, data, sizeof(data));
	fx_free(f);
}

/* No receive WQE: RNR NAK with the QP's timer, ePSN unchanged; the retry
 * after a post_recv is delivered. */
static void test_rnr(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, 0, 5);
	struct srdma_pkt p;
	struct ibv_wc wc;

	(void)state;
	p = req(f, SRDMA_OP_SEND_ONLY, 5);
	p.ackreq = true;
	inject(f, &p, "hello", 5);
	assert_int_equal(ntx, 1);
	check_ack(0, SRDMA_AETH_RNR(RNR_TIMER), 5);
	assert_int_equal(atomic_load(&f->st.rnr_sent), 1);
	assert_int_equal(atomic_load(&f->st.naks_sent), 0);
	assert_int_equal(cq_poll(f, &wc, 1), 0);
	/* The rest of the requester's window is dropped silently. */
	p.psn = 6;
	inject(f, &p, "later", 5);
	assert_int_equal(ntx, 1);
	assert_int_equal(atomic_load(&f->st.drops[SRDMA_DROP_PSN]), 1);
	p.psn = 5;
	post_recv(f, 1, 0, 64);
	inject(f, &p, "hello", 5);
	assert_int_equal(ntx, 2);
	check_ack(1, SRDMA_AETH_ACK, 5);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 5);
	assert_memory_equal(f->buf, "hello", 5);
	assert_int_equal(qp_state(f), IBV_QPS_RTR);
	fx_free(f);
}

/* A gap draws one NAK carrying ePSN; what follows out of order is dropped
 * silently until ePSN comes. */
static void test_psn_gap(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, 0, 0xfffffe);
	struct srdma_pkt p;
	struct ibv_wc wc;

	(void)state;
	post_recv(f, 1, 0, 64);
	post_recv(f, 2, 64, 64);
	p = req(f, SRDMA_OP_SEND_ONLY, 0); /* two ahead, across the wrap */
	p.ackreq = true;
	inject(f, &p, "x", 1);
	assert_int_equal(ntx, 1);
	check_ack(0, SRDMA_AETH_NAK_PSN, 0xfffffe);
	p.psn = 1;
	inject(f, &p, "y", 1);
	assert_int_equal(ntx, 1);
	assert_int_equal(atomic_load(&f->st.naks_sent), 1);
	assert_int_equal(atomic_load(&f->st.drops[SRDMA_DROP_PSN]), 2);
	assert_int_equal(cq_poll(f, &wc, 1), 0);
	p.psn = 0xfffffe;
	inject(f, &p, "a", 1);
	p.psn = 0xffffff;
	inject(f, &p, "b", 1);
	assert_int_equal(ntx, 3);
	check_ack(1, SRDMA_AETH_ACK, 0xfffffe);
	check_ack(2, SRDMA_AETH_ACK, 0xffffff);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 2);
	/* A new gap gets a new NAK. */
	p.psn = 5;
	inject(f, &p, "c", 1);
	assert_int_equal(ntx, 4);
	check_ack(3, SRDMA_AETH_NAK_PSN, 0);
	fx_free(f);
}

/* A duplicate SEND is not delivered again, only re-ACKed with the last
 * acknowledged PSN. */
static void test_dup_send(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, IBV_ACCESS_REMOTE_READ, 10);
	struct srdma_pkt p;
	struct ibv_wc wc;

	(void)state;
	post_recv(f, 1, 0, 64);
	post_recv(f, 2, 64, 64);
	p = req(f, SRDMA_OP_SEND_ONLY, 10);
	p.ackreq = true;
	inject(f, &p, "one", 3);
	p.psn = 11;
	inject(f, &p, "two", 3);
	assert_int_equal(ntx, 2);
	p.psn = 10;
	inject(f, &p, "one", 3);
	assert_int_equal(ntx, 3);
	check_ack(2, SRDMA_AETH_ACK, 11);
	assert_int_equal(tx[2].p.msn, 2);
	assert_int_equal(atomic_load(&f->st.dups_rcvd), 1);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(cq_poll(f, &wc, 1), 0);
	/* After a READ (PSN 12), a duplicate SEND is still ACKed with 11:
	 * an ACK at 12 would tell the requester the READ is done. */
	p = req(f, SRDMA_OP_READ_REQ, 12);
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 4);
	assert_int_equal(tx[3].p.opcode, SRDMA_OP_READ_RESP_ONLY);
	p = req(f, SRDMA_OP_SEND_ONLY, 11);
	inject(f, &p, "two", 3);
	check_ack(4, SRDMA_AETH_ACK, 11);
	fx_free(f);
}

/* A READ answered in MTU packets; its duplicate from the second PSN is a
 * subset and is answered from there, as a READ of its own range (FIRST,
 * LAST); one that is not a subset is dropped. */
static void test_read_replay(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, IBV_ACCESS_REMOTE_READ, 200);
	uint64_t va;
	struct srdma_pkt p;
	uint32_t i;

	(void)state;
	for (i = 0; i < 4096; i++)
		f->buf[i] = pat(i);
	va = (uintptr_t)f->buf;
	p = req(f, SRDMA_OP_READ_REQ, 200);
	p.va = va;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 2500;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 3);
	assert_int_equal(tx[0].p.opcode, SRDMA_OP_READ_RESP_FIRST);
	assert_int_equal(tx[1].p.opcode, SRDMA_OP_READ_RESP_MIDDLE);
	assert_int_equal(tx[2].p.opcode, SRDMA_OP_READ_RESP_LAST);
	for (i = 0; i < 3; i++) {
		assert_int_equal(tx[i].p.psn, 200 + i);
		assert_int_equal(tx[i].p.paylen, i < 2 ? MTU : 2500 - 2 * MTU);
		assert_memory_equal(tx[i].p.payload, f->buf + i * MTU,
				    tx[i].p.paylen);
	}
	assert_int_equal(tx[0].p.syndrome, SRDMA_AETH_ACK);
	assert_int_equal(tx[2].p.msn, 1);
	/* Memory changes; the replay reads it again. */
	f->buf[MTU] ^= 0xff;
	p.psn = 201;
	p.va = va + MTU;
	p.dma_len = 2500 - MTU;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 5);
	assert_int_equal(tx[3].p.opcode, SRDMA_OP_READ_RESP_FIRST);
	assert_int_equal(tx[3].p.psn, 201);
	assert_int_equal(tx[3].p.payload[0], f->buf[MTU]);
	assert_int_equal(tx[4].p.opcode, SRDMA_OP_READ_RESP_LAST);
	assert_int_equal(tx[4].p.psn, 202);
	assert_int_equal(atomic_load(&f->st.dups_rcvd), 1);
	/* Not a subset: longer than the original, or another rkey. */
	p.dma_len = 2500;
	inject(f, &p, NULL, 0);
	p.dma_len = 100;
	p.rkey ^= 1;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 5);
	assert_int_equal(atomic_load(&f->st.drops[SRDMA_DROP_DUP]), 2);
	/* The whole READ again, from its first PSN. */
	p = req(f, SRDMA_OP_READ_REQ, 200);
	p.va = va;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 2500;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 8);
	assert_int_equal(tx[5].p.opcode, SRDMA_OP_READ_RESP_FIRST);
	/* ePSN moved past the response: 203 is new. A zero-length READ
	 * gets one empty READ_RESP_ONLY without a key check. */
	p = req(f, SRDMA_OP_READ_REQ, 203);
	p.rkey = 0xdead;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 9);
	assert_int_equal(tx[8].p.opcode, SRDMA_OP_READ_RESP_ONLY);
	assert_int_equal(tx[8].p.paylen, 0);
	assert_int_equal(tx[8].p.psn, 203);
	assert_int_equal(qp_state(f), IBV_QPS_RTR);
	fx_free(f);
}

/* A READ longer than one send batch: every response in order, each with
 * its bytes; then one beyond the region: NAK remote access, QP in ERR. */
static void test_read_big(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, IBV_ACCESS_REMOTE_READ, 0xfffff0);
	uint32_t i, len = 40 * MTU + 5, psn;
	struct srdma_pkt p;

	(void)state;
	for (i = 0; i < BUF; i++)
		f->buf[i] = pat(i);
	p = req(f, SRDMA_OP_READ_REQ, 0xfffff0);
	p.va = (uintptr_t)f->buf + 3;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = len;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 41);
	for (i = 0, psn = 0xfffff0; i < 41; i++, psn = (psn + 1) & 0xffffff) {
		uint8_t want = i == 0	 ? SRDMA_OP_READ_RESP_FIRST
			       : i == 40 ? SRDMA_OP_READ_RESP_LAST
					 : SRDMA_OP_READ_RESP_MIDDLE;

		assert_int_equal(tx[i].p.opcode, want);
		assert_int_equal(tx[i].p.psn, psn);
		assert_int_equal(tx[i].p.paylen, i == 40 ? 5 : MTU);
		assert_memory_equal(tx[i].p.payload, f->buf + 3 + i * MTU,
				    tx[i].p.paylen);
	}
	assert_int_equal(atomic_load(&f->st.tx_pkts), 41);
	/* ePSN is past the responses. */
	p = req(f, SRDMA_OP_READ_REQ, (0xfffff0 + 41) & 0xffffff);
	p.va = (uintptr_t)f->buf + BUF - 8;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 16;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 42);
	check_ack(41, SRDMA_AETH_NAK_ACC, (0xfffff0 + 41) & 0xffffff);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);
}

/* An atomic runs once: its duplicate gets the saved original value. */
static void test_atomic_once(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, IBV_ACCESS_REMOTE_ATOMIC, 300);
	uint64_t *w;
	struct srdma_pkt p;

	(void)state;
	w = (uint64_t *)(f->buf + 64);
	*w = 10;
	p = req(f, SRDMA_OP_FETCH_ADD, 300);
	p.va = (uintptr_t)w;
	p.rkey = f->mr->ibmr.rkey;
	p.swap_add = 5;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 1);
	assert_int_equal(tx[0].p.opcode, SRDMA_OP_ATOMIC_ACK);
	assert_int_equal(tx[0].p.orig, 10);
	assert_int_equal(tx[0].p.psn, 300);
	assert_int_equal(*w, 15);
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 2);
	assert_int_equal(tx[1].p.orig, 10);
	assert_int_equal(*w, 15);
	/* CMP_SWAP, then misaligned: invalid request, QP in ERR. */
	p = req(f, SRDMA_OP_CMP_SWAP, 301);
	p.va = (uintptr_t)w;
	p.rkey = f->mr->ibmr.rkey;
	p.compare = 15;
	p.swap_add = 99;
	inject(f, &p, NULL, 0);
	assert_int_equal(tx[2].p.orig, 15);
	assert_int_equal(*w, 99);
	p.psn = 302;
	p.va += 4;
	inject(f, &p, NULL, 0);
	check_ack(3, SRDMA_AETH_NAK_INV, 302);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);
}

/* A WRITE with a bad rkey: NAK remote access error, the QP in ERR, and
 * nothing received after. */
static void test_bad_rkey(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, IBV_ACCESS_REMOTE_WRITE, 1);
	struct srdma_pkt p;

	(void)state;
	p = req(f, SRDMA_OP_WRITE_ONLY, 1);
	p.va = (uintptr_t)f->buf;
	p.rkey = f->mr->ibmr.rkey + 1;
	p.dma_len = 8;
	p.ackreq = true;
	inject(f, &p, "abcdefgh", 8);
	assert_int_equal(ntx, 1);
	check_ack(0, SRDMA_AETH_NAK_ACC, 1);
	assert_int_equal(atomic_load(&f->st.naks_sent), 1);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	assert_int_equal(f->buf[0], 0);
	p.psn = 2;
	p.rkey = f->mr->ibmr.rkey;
	inject(f, &p, "abcdefgh", 8);
	assert_int_equal(ntx, 1);
	assert_int_equal(atomic_load(&f->st.drops[SRDMA_DROP_STATE]), 1);
	fx_free(f);
}

/* A WRITE in two packets with immediate data at the end; then a WRITE
 * beyond the region. */
static void test_write_imm(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, IBV_ACCESS_REMOTE_WRITE, 40);
	uint8_t data[1500];
	struct srdma_pkt p;
	struct ibv_wc wc;
	uint32_t i;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = pat(i);
	post_recv(f, 9, 0, 0);
	p = req(f, SRDMA_OP_WRITE_FIRST, 40);
	p.va = (uintptr_t)f->buf + 8192;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = sizeof(data);
	inject(f, &p, data, MTU);
	p = req(f, SRDMA_OP_WRITE_LAST_IMM, 41);
	p.imm = htobe32(77);
	p.ackreq = true;
	inject(f, &p, data + MTU, sizeof(data) - MTU);
	assert_int_equal(ntx, 1);
	check_ack(0, SRDMA_AETH_ACK, 41);
	assert_memory_equal(f->buf + 8192, data, sizeof(data));
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.byte_len, sizeof(data));
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(be32toh(wc.imm_data), 77);
	/* WRITE_ONLY_IMM without a receive WQE: RNR, nothing written. */
	p = req(f, SRDMA_OP_WRITE_ONLY_IMM, 42);
	p.va = (uintptr_t)f->buf;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 4;
	inject(f, &p, "zzzz", 4);
	check_ack(1, SRDMA_AETH_RNR(RNR_TIMER), 42);
	assert_int_equal(f->buf[0], 0);
	/* Beyond the region: remote access error. */
	p = req(f, SRDMA_OP_WRITE_ONLY, 42);
	p.va = (uintptr_t)f->buf + BUF - 2;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 4;
	inject(f, &p, "zzzz", 4);
	check_ack(2, SRDMA_AETH_NAK_ACC, 42);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);
}

/* Lengths that break the rules: invalid request, QP in ERR. */
static void test_bad_length(void **state)
{
	struct fx *f;
	struct srdma_pkt p;
	struct ibv_wc wc;

	(void)state;
	/* SEND_FIRST shorter than the MTU. */
	f = fx_new(IBV_QPT_RC, 0, 1);
	post_recv(f, 1, 0, 4096);
	p = req(f, SRDMA_OP_SEND_FIRST, 1);
	inject(f, &p, f->buf + 8192, 100);
	check_ack(0, SRDMA_AETH_NAK_INV, 1);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);

	/* WRITE_ONLY whose payload is not the RETH length. */
	f = fx_new(IBV_QPT_RC, IBV_ACCESS_REMOTE_WRITE, 1);
	p = req(f, SRDMA_OP_WRITE_ONLY, 1);
	p.va = (uintptr_t)f->buf;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 9;
	inject(f, &p, "12345678", 8);
	check_ack(0, SRDMA_AETH_NAK_INV, 1);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);

	/* SEND_MIDDLE with no message started. */
	f = fx_new(IBV_QPT_RC, 0, 1);
	post_recv(f, 1, 0, 4096);
	p = req(f, SRDMA_OP_SEND_MIDDLE, 1);
	inject(f, &p, f->buf + 8192, MTU);
	check_ack(0, SRDMA_AETH_NAK_INV, 1);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);

	/* A SEND longer than the receive buffer: LOC_LEN_ERR there, NAK
	 * invalid request to the requester. */
	f = fx_new(IBV_QPT_RC, 0, 1);
	post_recv(f, 1, 0, 16);
	p = req(f, SRDMA_OP_SEND_ONLY, 1);
	inject(f, &p, f->buf + 8192, 17);
	check_ack(0, SRDMA_AETH_NAK_INV, 1);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);

	/* A WRITE without REMOTE_WRITE on the QP: invalid request. */
	f = fx_new(IBV_QPT_RC, 0, 1);
	p = req(f, SRDMA_OP_WRITE_ONLY, 1);
	p.va = (uintptr_t)f->buf;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 4;
	inject(f, &p, "abcd", 4);
	check_ack(0, SRDMA_AETH_NAK_INV, 1);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);
}

/* SEND_WITH_INV of a plain MR's key: the receive completes with
 * REM_INV_REQ_ERR, the requester gets an invalid-request NAK. */
static void test_send_inv(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, 0, 3);
	struct srdma_pkt p;
	struct ibv_wc wc;

	(void)state;
	post_recv(f, 4, 0, 64);
	p = req(f, SRDMA_OP_SEND_ONLY_INV, 3);
	p.inv_rkey = f->mr->ibmr.rkey;
	inject(f, &p, "inv", 3);
	check_ack(0, SRDMA_AETH_NAK_INV, 3);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	fx_free(f);
}

/* A packet from anyone but the QP's peer, or of another transport. */
static void test_source_transport(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, 0, 1);
	struct srdma_wire_path other;
	struct srdma_pkt p;

	(void)state;
	post_recv(f, 1, 0, 64);
	other = f->peer;
	other.sip[15] = 3;
	p = req(f, SRDMA_OP_SEND_ONLY, 1);
	inject_from(f, &p, "x", 1, &other);
	assert_int_equal(atomic_load(&f->st.drops[SRDMA_DROP_SOURCE]), 1);
	p.opcode = SRDMA_TR_UC | SRDMA_OP_SEND_ONLY;
	inject(f, &p, "x", 1);
	assert_int_equal(atomic_load(&f->st.drops[SRDMA_DROP_TRANSPORT]), 1);
	assert_int_equal(ntx, 0);
	fx_free(f);
}

/* ---- delayed ACKs (net-responder.md, "ACK timing") ----------------------- */

static bool polls;

/* The application waits for events unless it "polls". */
static bool app_waits(struct srdma_context *ctx)
{
	(void)ctx;
	return !polls;
}

/* Our requester sent lately: the ACK of a SEND is held back; its timer
 * sends it (not before its deadline), a newer one replaces it and keeps
 * the deadline, the requester can take it (srdma_netresp_ack_take: built
 * whole, ICRC right). A NAK, an RNR NAK, READ responses and atomic ACKs
 * are never held, and a held ACK leaves before them, in order. Without
 * recent requests, or with a short ACK timeout, nothing is held. */
/* "Our requester sent lately" (100 ms) decides whether an ACK is held:
 * renew it before each step that expects a hold, so a slow run (a loaded
 * machine, TSan) does not age it out between steps. */
static void fresh(struct fx *f)
{
	atomic_store(&f->nq.req_tx_ns, srdma_net_now_ns());
}

static void test_delayed_ack(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC,
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
			      10);
	uint8_t b[SRDMA_NET_ACK_LEN];
	struct srdma_pkt p, q;
	struct ibv_wc wc[8];
	uint64_t due, *w;
	uint32_t len;
	int i;

	(void)state;
	srdma_net_app_waits_hook = app_waits;
	polls = true;
	for (i = 0; i < 6; i++)
		post_recv(f, (uint64_t)i, (uint32_t)i * 64, 64);
	/* No request of ours lately: ACKed at once. */
	p = req(f, SRDMA_OP_SEND_ONLY, 10);
	p.ackreq = true;
	inject(f, &p, "a", 1);
	assert_int_equal(ntx, 1);
	check_ack(0, SRDMA_AETH_ACK, 10);
	/* Our requester just sent and the application polls: held, the
	 * message delivered all the same. */
	atomic_store(&f->nq.req_tx_ns, srdma_net_now_ns());
	p.psn = 11;
	inject(f, &p, "b", 1);
	assert_int_equal(ntx, 1);
	assert_int_equal(atomic_load(&f->st.acks_delayed), 1);
	assert_int_equal(cq_poll(f, wc, 8), 2);
	due = atomic_load(&f->nq.ack_due_ns);
	assert_true(due > srdma_net_now_ns() - 1000000);
	assert_int_equal(srdma_netresp_ack_timer(&f->nq, due - 1), due);
	assert_int_equal(ntx, 1);
	/* A newer one replaces it and keeps the first one's deadline. */
	p.psn = 12;
	fresh(f);
	inject(f, &p, "c", 1);
	assert_int_equal(ntx, 1);
	assert_int_equal(atomic_load(&f->nq.ack_due_ns), due);
	assert_int_equal(srdma_netresp_ack_timer(&f->nq, due), 0);
	assert_int_equal(ntx, 2);
	check_ack(1, SRDMA_AETH_ACK, 12);
	assert_int_equal(tx[1].p.msn, 3);
	assert_int_equal(atomic_load(&f->nq.ack_pending), 0);
	assert_int_equal(atomic_load(&f->nq.ack_due_ns), 0);
	/* Taken by the requester: a whole ACK packet, once. */
	p.psn = 13;
	fresh(f);
	inject(f, &p, "d", 1);
	len = srdma_netresp_ack_take(&f->nq, b);
	assert_int_equal(len, SRDMA_NET_ACK_LEN);
	assert_int_equal(srdma_wire_parse(b, len, &q), SRDMA_DROP_NONE);
	assert_true(srdma_wire_icrc_check(&f->nq.path, b, len));
	assert_int_equal(q.opcode, SRDMA_TR_RC | SRDMA_OP_ACK);
	assert_int_equal(q.syndrome, SRDMA_AETH_ACK);
	assert_int_equal(q.psn, 13);
	assert_int_equal(q.msn, 4);
	assert_int_equal(q.dqpn, PEER_QPN);
	assert_int_equal(srdma_netresp_ack_take(&f->nq, b), 0);
	/* Its deadline passes with nothing to send. */
	assert_int_equal(srdma_netresp_ack_timer(&f->nq, UINT64_MAX - 1), 0);
	assert_int_equal(ntx, 2);
	/* Held, then a PSN gap: the ACK first, then the NAK, at once. */
	p.psn = 14;
	fresh(f);
	inject(f, &p, "e", 1);
	assert_int_equal(ntx, 2);
	p.psn = 16;
	inject(f, &p, "f", 1);
	assert_int_equal(ntx, 4);
	check_ack(2, SRDMA_AETH_ACK, 14);
	check_ack(3, SRDMA_AETH_NAK_PSN, 15);
	/* A READ: its response at once, after the held ACK. */
	p.psn = 15;
	inject(f, &p, "g", 1);
	assert_int_equal(ntx, 4);
	p = req(f, SRDMA_OP_READ_REQ, 16);
	p.va = (uintptr_t)f->buf;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 8;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 6);
	check_ack(4, SRDMA_AETH_ACK, 15);
	assert_int_equal(tx[5].p.opcode, SRDMA_OP_READ_RESP_ONLY);
	/* An atomic: its ACK at once. */
	w = (uint64_t *)(f->buf + 1024);
	*w = 1;
	p = req(f, SRDMA_OP_FETCH_ADD, 17);
	p.va = (uintptr_t)w;
	p.rkey = f->mr->ibmr.rkey;
	p.swap_add = 1;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 7);
	assert_int_equal(tx[6].p.opcode, SRDMA_OP_ATOMIC_ACK);
	/* No receive WQE left: the RNR NAK at once. */
	assert_int_equal(cq_poll(f, wc, 8), 4);
	p = req(f, SRDMA_OP_SEND_ONLY, 18);
	p.ackreq = true;
	inject(f, &p, "h", 1);
	assert_int_equal(ntx, 8);
	check_ack(7, SRDMA_AETH_RNR(RNR_TIMER), 18);
	/* A short ACK timeout of ours: never held. */
	post_recv(f, 20, 0, 64);
	post_recv(f, 21, 0, 64);
	f->qp->attr.timeout = 5;	/* 131 us */
	inject(f, &p, "h", 1);
	assert_int_equal(ntx, 9);
	check_ack(8, SRDMA_AETH_ACK, 18);
	/* Held, then flushed (what qp_net.c does when the QP goes to ERR or
	 * away); a reset forgets one. */
	f->qp->attr.timeout = 14;
	p.psn = 19;
	fresh(f);
	inject(f, &p, "i", 1);
	assert_int_equal(ntx, 9);
	assert_true(srdma_netresp_ack_flush(&f->nq));
	assert_int_equal(ntx, 10);
	check_ack(9, SRDMA_AETH_ACK, 19);
	assert_false(srdma_netresp_ack_flush(&f->nq));
	atomic_store(&f->nq.ack_pending, SRDMA_NET_ACK_HELD | 19);
	pthread_mutex_lock(&f->nq.resp_lock);
	srdma_netresp_reset(&f->nq, 30);
	pthread_mutex_unlock(&f->nq.resp_lock);
	assert_false(srdma_netresp_ack_flush(&f->nq));
	assert_int_equal(atomic_load(&f->st.acks_delayed), 6);
	srdma_net_app_waits_hook = NULL;
	fx_free(f);
}

/* Coalescing (net-responder.md, "Coalescing"): a held ACK skips our
 * requests while they come at a brisk pace, its deadline moving to after
 * the next one (never earlier, never past 200 us after the hold), for at
 * most 8 messages; at a slow pace it rides at once. Three coalesced ACKs
 * in a row that left alone at their deadline, the peer silent since,
 * pause coalescing (10 ms); a peer that sends on while we hold one ends
 * the back-off. */
static void test_ack_coalesce(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, 0, 1);
	uint8_t b[SRDMA_NET_ACK_LEN];
	struct srdma_pkt p, q;
	struct ibv_wc wc[16];
	uint64_t now, due, held;
	uint32_t psn = 1, i, len;

	(void)state;
	srdma_net_app_waits_hook = app_waits;
	polls = true;
	for (i = 0; i < 16; i++)
		post_recv(f, i, 0, 64);
	p = req(f, SRDMA_OP_SEND_ONLY, psn);
	p.ackreq = true;
	/* Held; our requests 10 us apart: the first skips it and moves its
	 * deadline to after the next (now + 2 x 10 us + the slack). */
	fresh(f);
	inject(f, &p, "a", 1);
	assert_int_equal(ntx, 0);
	held = atomic_load(&f->nq.ack_held_ns);
	now = srdma_net_now_ns();
	assert_int_equal(srdma_netresp_ack_ride(&f->nq, b, now, now - 10000), 0);
	assert_int_equal(atomic_load(&f->st.acks_coalesced), 1);
	assert_true(atomic_load(&f->nq.ack_pending) != 0);
	assert_int_equal(atomic_load(&f->nq.ack_due_ns), now + 25000);
	/* The peer sends on; our next request takes the newer ACK along
	 * once the pace is slow (60 us), with its MSN: cumulative. */
	p.psn = ++psn;
	fresh(f);
	inject(f, &p, "b", 1);
	assert_int_equal(atomic_load(&f->nq.ack_held_ns), held);
	len = srdma_netresp_ack_ride(&f->nq, b, now + 60000, now);
	assert_int_equal(len, SRDMA_NET_ACK_LEN);
	assert_int_equal(srdma_wire_parse(b, len, &q), SRDMA_DROP_NONE);
	assert_int_equal(q.psn, psn);
	assert_int_equal(q.msn, 2);
	assert_int_equal(atomic_load(&f->nq.ack_pending), 0);
	assert_int_equal(ntx, 0);
	/* No previous request, or a deadline that would move past 200 us
	 * after the hold: it rides at once. */
	p.psn = ++psn;
	fresh(f);
	inject(f, &p, "c", 1);
	now = srdma_net_now_ns();
	assert_int_equal(srdma_netresp_ack_ride(&f->nq, b, now, 0),
			 SRDMA_NET_ACK_LEN);
	p.psn = ++psn;
	fresh(f);
	inject(f, &p, "d", 1);
	held = atomic_load(&f->nq.ack_held_ns);
	assert_int_equal(srdma_netresp_ack_ride(&f->nq, b, held + 160000,
						held + 120000),
			 SRDMA_NET_ACK_LEN);
	/* At most 8 messages per ACK. */
	for (i = 0; i < 8; i++) {
		p.psn = ++psn;
		fresh(f);
		inject(f, &p, "e", 1);
		now = srdma_net_now_ns();
		len = srdma_netresp_ack_ride(&f->nq, b, now, now - 1000);
		if (len)
			break;
	}
	assert_int_equal(i, 7);
	assert_int_equal(len, SRDMA_NET_ACK_LEN);
	assert_int_equal(cq_poll(f, wc, 16), 12);
	/* A peer that waits for its ACK: skipped, then alone at the deadline,
	 * three times in a row; then no coalescing for 10 ms. */
	for (i = 0; i < 3; i++) {
		post_recv(f, 100 + i, 0, 64);
		p.psn = ++psn;
		fresh(f);
		inject(f, &p, "f", 1);
		now = srdma_net_now_ns();
		assert_int_equal(srdma_netresp_ack_ride(&f->nq, b, now,
							now - 1000), 0);
		due = atomic_load(&f->nq.ack_due_ns);
		assert_int_equal(srdma_netresp_ack_timer(&f->nq, due), 0);
		assert_int_equal(ntx, (int)i + 1);
		check_ack((int)i, SRDMA_AETH_ACK, psn);
	}
	assert_true(atomic_load(&f->nq.ack_off_ns) > srdma_net_now_ns());
	assert_int_equal(atomic_load(&f->nq.ack_backoff_ns), 10000000);
	post_recv(f, 200, 0, 64);
	p.psn = ++psn;
	fresh(f);
	inject(f, &p, "g", 1);
	now = srdma_net_now_ns();
	assert_int_equal(srdma_netresp_ack_ride(&f->nq, b, now, now - 1000),
			 SRDMA_NET_ACK_LEN);
	/* After the pause: a peer that sends on while we hold one (a newer
	 * ACK replaced the skipped one) ends the back-off. */
	now = atomic_load(&f->nq.ack_off_ns);
	post_recv(f, 201, 0, 64);
	post_recv(f, 202, 0, 64);
	p.psn = ++psn;
	fresh(f);
	inject(f, &p, "h", 1);
	atomic_store(&f->nq.ack_held_ns, now);
	assert_int_equal(srdma_netresp_ack_ride(&f->nq, b, now, now - 1000), 0);
	p.psn = ++psn;
	inject(f, &p, "i", 1);
	assert_int_equal(srdma_netresp_ack_ride(&f->nq, b, now + 70000, now),
			 SRDMA_NET_ACK_LEN);
	assert_int_equal(atomic_load(&f->nq.ack_backoff_ns), 0);
	assert_int_equal(atomic_load(&f->nq.ack_fails), 0);
	assert_int_equal(ntx, 3);
	srdma_net_app_waits_hook = NULL;
	fx_free(f);
}

/* An application that waits for events gets no held ACK: its peer sees
 * the ACK before our reply, as from a NIC. */
static void test_delayed_ack_events(void **state)
{
	struct fx *f = fx_new(IBV_QPT_RC, 0, 1);
	struct srdma_pkt p;

	(void)state;
	srdma_net_app_waits_hook = app_waits;
	polls = false;
	post_recv(f, 1, 0, 64);
	post_recv(f, 2, 64, 64);
	atomic_store(&f->nq.req_tx_ns, srdma_net_now_ns());
	p = req(f, SRDMA_OP_SEND_ONLY, 1);
	p.ackreq = true;
	inject(f, &p, "a", 1);
	assert_int_equal(ntx, 1);
	check_ack(0, SRDMA_AETH_ACK, 1);
	polls = true;
	p.psn = 2;
	inject(f, &p, "b", 1);
	assert_int_equal(ntx, 1);
	assert_int_equal(atomic_load(&f->st.acks_delayed), 1);
	assert_true(srdma_netresp_ack_flush(&f->nq));
	check_ack(1, SRDMA_AETH_ACK, 2);
	srdma_net_app_waits_hook = NULL;
	fx_free(f);
}

/* UC never ACKs, held or not. */
static void test_delayed_ack_uc(void **state)
{
	struct fx *f = fx_new(IBV_QPT_UC, 0, 1);
	struct srdma_pkt p;

	(void)state;
	srdma_net_app_waits_hook = app_waits;
	polls = true;
	post_recv(f, 1, 0, 64);
	atomic_store(&f->nq.req_tx_ns, srdma_net_now_ns());
	p = req(f, SRDMA_OP_SEND_ONLY, 1);
	inject(f, &p, "a", 1);
	srdma_net_app_waits_hook = NULL;
	assert_int_equal(ntx, 0);
	assert_int_equal(atomic_load(&f->nq.ack_pending), 0);
	fx_free(f);
}

/* ---- UC --------------------------------------------------------------------
 */

/* A message with a lost packet is dropped; its WQE takes the next one. */
static void test_uc_gap(void **state)
{
	struct fx *f = fx_new(IBV_QPT_UC, IBV_ACCESS_REMOTE_WRITE, 10);
	uint8_t data[2 * MTU + 10];
	struct srdma_pkt p;
	struct ibv_wc wc;

	(void)state;
	memset(data, 0x5a, sizeof(data));
	post_recv(f, 1, 0, 4096);
	p = req(f, SRDMA_OP_SEND_FIRST, 10);
	inject(f, &p, data, MTU);
	/* 11 is lost */
	p = req(f, SRDMA_OP_SEND_LAST, 12);
	inject(f, &p, data, 10);
	assert_int_equal(cq_poll(f, &wc, 1), 0);
	p = req(f, SRDMA_OP_SEND_ONLY, 13);
	inject(f, &p, "fresh", 5);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, 5);
	assert_memory_equal(f->buf, "fresh", 5);
	/* UC: a bad rkey is dropped silently, the QP stays. */
	p = req(f, SRDMA_OP_WRITE_ONLY, 14);
	p.va = (uintptr_t)f->buf;
	p.rkey = 0x77;
	p.dma_len = 4;
	inject(f, &p, "abcd", 4);
	assert_int_equal(ntx, 0);
	assert_int_equal(qp_state(f), IBV_QPS_RTR);
	/* Too long for the buffer: dropped, the WQE stays for the next. */
	post_recv(f, 2, 0, 8);
	p = req(f, SRDMA_OP_SEND_ONLY, 15);
	inject(f, &p, data, 9);
	assert_int_equal(cq_poll(f, &wc, 1), 0);
	p.psn = 16;
	inject(f, &p, data, 8);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(ntx, 0);
	fx_free(f);
}

/* ---- SRQ -------------------------------------------------------------------
 */

/* From an SRQ the WQE is consumed at the first packet: a message in
 * three packets completes once; a UC message too long for its buffer
 * completes it with LOC_LEN_ERR (it cannot go back), the QP stays. */
/*
 * XRC TGT (docs/design/xrc.md): every request names the XRC SRQ in its
 * XRCETH; a message lands in that SRQ and its CQ, the answers carry the
 * XRC transport (ACK 0xb1, READ response 0xb0) and no XRCETH. An SRQ
 * number that names no SRQ of the domain, or a middle packet that names
 * another SRQ than its message's first: NAK Remote Access Error, the QP
 * in ERR, a WQE already taken back flushed.
 */
static void test_xrc(void **state)
{
	uint8_t data[MTU + 100];
	struct srdma_pkt p;
	struct ibv_wc wc;
	struct fx *f;
	uint32_t i, srqn;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = pat(i);
	f = fx_new(IBV_QPT_XRC_RECV, IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_WRITE, 5);
	srqn = srdma_srq_num(f->srq);
	post_recv(f, 31, 0, 4096);
	post_recv(f, 32, 4096, 4096);
	p = req(f, SRDMA_OP_SEND_FIRST, 5);
	inject(f, &p, data, MTU);
	p = req(f, SRDMA_OP_SEND_LAST, 6);
	p.ackreq = true;
	inject(f, &p, data + MTU, 100);
	check_ack_tr(0, SRDMA_TR_XRC, SRDMA_AETH_ACK, 6);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, sizeof(data));
	assert_int_equal(wc.qp_num, f->nq.qpn);
	assert_memory_equal(f->buf, data, sizeof(data));
	/* READ: the key in the SRQ's PD; the response is XRC's. */
	p = req(f, SRDMA_OP_READ_REQ, 7);
	p.va = (uintptr_t)f->buf;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 64;
	inject(f, &p, NULL, 0);
	assert_int_equal(ntx, 2);
	assert_int_equal(tx[1].p.opcode,
			 SRDMA_TR_XRC | SRDMA_OP_READ_RESP_ONLY);
	assert_false(tx[1].p.hdrs & SRDMA_HDR_XRCETH);
	assert_memory_equal(tx[1].p.payload, data, 64);
	/* A middle packet naming another SRQ. */
	p = req(f, SRDMA_OP_SEND_FIRST, 8);
	inject(f, &p, data, MTU);
	p = req(f, SRDMA_OP_SEND_LAST, 9);
	p.xrc_srqn = srqn + 1;
	inject(f, &p, data, 4);
	check_ack_tr(2, SRDMA_TR_XRC, SRDMA_AETH_NAK_ACC, 9);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 32);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	fx_free(f);

	/* A request naming no SRQ of the domain. */
	f = fx_new(IBV_QPT_XRC_RECV, 0, 1);
	post_recv(f, 41, 0, 4096);
	p = req(f, SRDMA_OP_SEND_ONLY, 1);
	p.xrc_srqn = srdma_srq_num(f->srq) ^ 0x100;
	inject(f, &p, data, 8);
	check_ack_tr(0, SRDMA_TR_XRC, SRDMA_AETH_NAK_ACC, 1);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	assert_int_equal(cq_poll(f, &wc, 1), 0);
	fx_free(f);
}

static void test_srq(void **state)
{
	uint8_t data[2 * MTU + 100];
	struct srdma_pkt p;
	struct ibv_wc wc;
	struct fx *f;
	uint32_t i;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = pat(i);
	use_srq = true;
	f = fx_new(IBV_QPT_RC, 0, 7);
	use_srq = false;
	post_recv(f, 11, 0, 4096);
	post_recv(f, 12, 4096, 4096);
	p = req(f, SRDMA_OP_SEND_FIRST, 7);
	inject(f, &p, data, MTU);
	p = req(f, SRDMA_OP_SEND_MIDDLE, 8);
	inject(f, &p, data + MTU, MTU);
	p = req(f, SRDMA_OP_SEND_LAST, 9);
	p.ackreq = true;
	inject(f, &p, data + 2 * MTU, 100);
	check_ack(0, SRDMA_AETH_ACK, 9);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 11);
	assert_int_equal(wc.byte_len, sizeof(data));
	assert_memory_equal(f->buf, data, sizeof(data));
	/* A message cut off by a QP error: its SRQ WQE comes back flushed
	 * when the QP is reset. */
	p = req(f, SRDMA_OP_SEND_FIRST, 10);
	inject(f, &p, data, MTU);
	p = req(f, SRDMA_OP_SEND_ONLY, 11);
	inject(f, &p, data, 4); /* missing LAST */
	check_ack(1, SRDMA_AETH_NAK_INV, 11);
	assert_int_equal(qp_state(f), IBV_QPS_ERR);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 12);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	fx_free(f);

	use_srq = true;
	f = fx_new(IBV_QPT_UC, 0, 1);
	use_srq = false;
	post_recv(f, 21, 0, 100);
	p = req(f, SRDMA_OP_SEND_ONLY, 1);
	inject(f, &p, data, 101);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 21);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(qp_state(f), IBV_QPS_RTR);
	/* A UC message whose LAST is lost keeps its WQE for the next. */
	post_recv(f, 22, 0, 4096);
	p = req(f, SRDMA_OP_SEND_FIRST, 2);
	inject(f, &p, data, MTU);
	p = req(f, SRDMA_OP_SEND_ONLY, 4);
	inject(f, &p, "next", 4);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 22);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 4);
	assert_int_equal(ntx, 0);
	fx_free(f);
}

/*
 * The receive CQE of a message is in its CQ when the ACK leaves (a
 * requester that sees its send complete finds it there: test_dp_xproc),
 * but its completion event is raised only after the ACK, as on a NIC,
 * where an application woken by the event always answers after the ACK:
 * otherwise a ping-pong's answer can overtake the ACK, and perftest -e
 * (one channel for its send and receive CQs) at the peer takes the
 * receive event for its send's and reads a send completion that is not
 * there (net.ib_send_lat_events). RC SEND from the QP's queue and from an
 * SRQ, WRITE_WITH_IMM; a SEND that asks for no ACK still raises its event.
 */
static void arm_and_check_event_after_ack(struct fx *f,
					  struct srdma_pkt *p,
					  const void *data, uint32_t len,
					  uint64_t wr_id, uint32_t opcode,
					  uint32_t byte_len)
{
	struct ibv_wc wc;
	int n0 = ntx;

	assert_int_equal(srdma_cq_notify(f->cq, false), 0);
	p->ackreq = true;
	inject(f, p, data, len);
	assert_int_equal(ntx, n0 + 1);
	check_ack(n0, SRDMA_AETH_ACK, p->psn);
	assert_int_equal(tx[n0].cq_queued, 1);
	assert_int_equal(tx[n0].cq_fired, 0);
	/* ... and the event right after. */
	assert_int_equal(atomic_exchange(&f->cq->sh->fired, 0), 1);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, opcode);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.byte_len, byte_len);
}

static void test_ack_before_cqe(void **state)
{
	struct srdma_pkt p;
	struct ibv_wc wc;
	struct fx *f;

	(void)state;
	f = fx_new(IBV_QPT_RC, IBV_ACCESS_REMOTE_WRITE, 300);
	post_recv(f, 1, 0, 64);
	p = req(f, SRDMA_OP_SEND_ONLY, 300);
	arm_and_check_event_after_ack(f, &p, "ping", 4, 1, IBV_WC_RECV, 4);
	/* The last packet of a longer SEND. */
	post_recv(f, 2, 0, 4096);
	p = req(f, SRDMA_OP_SEND_FIRST, 301);
	inject(f, &p, f->buf + 8192, MTU);
	assert_int_equal(ntx, 1);
	p = req(f, SRDMA_OP_SEND_LAST_IMM, 302);
	p.imm = htobe32(5);
	arm_and_check_event_after_ack(f, &p, "pong", 4, 2, IBV_WC_RECV,
				      MTU + 4);
	/* WRITE_WITH_IMM: the receive completion it consumes. */
	post_recv(f, 3, 0, 0);
	p = req(f, SRDMA_OP_WRITE_ONLY_IMM, 303);
	p.va = (uintptr_t)f->buf + 8192;
	p.rkey = f->mr->ibmr.rkey;
	p.dma_len = 4;
	p.imm = htobe32(6);
	arm_and_check_event_after_ack(f, &p, "wimm", 4, 3,
				      IBV_WC_RECV_RDMA_WITH_IMM, 4);
	/* No AckReq (a requester may ask later): completed all the same. */
	post_recv(f, 4, 0, 64);
	assert_int_equal(srdma_cq_notify(f->cq, false), 0);
	p = req(f, SRDMA_OP_SEND_ONLY, 304);
	inject(f, &p, "quiet", 5);
	assert_int_equal(ntx, 3);
	assert_int_equal(atomic_exchange(&f->cq->sh->fired, 0), 1);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	fx_free(f);

	use_srq = true;
	f = fx_new(IBV_QPT_RC, 0, 9);
	use_srq = false;
	post_recv(f, 7, 0, 64);
	p = req(f, SRDMA_OP_SEND_ONLY, 9);
	arm_and_check_event_after_ack(f, &p, "srq", 3, 7, IBV_WC_RECV, 3);
	fx_free(f);
}

/* ---- UD --------------------------------------------------------------------
 */

static void test_ud(void **state)
{
	struct fx *f = fx_new(IBV_QPT_UD, 0, 0);
	struct srdma_pkt p;
	struct ibv_wc wc;
	uint8_t *ip;

	(void)state;
	post_recv(f, 5, 0, 256);
	p = req(f, SRDMA_OP_SEND_ONLY_IMM, 0);
	p.qkey = 0x2222;
	p.src_qp = 0x99;
	p.imm = htobe32(3);
	inject(f, &p, "datagram", 8);
	assert_int_equal(atomic_load(&f->st.drops[SRDMA_DROP_QKEY]), 1);
	assert_int_equal(cq_poll(f, &wc, 1), 0);
	p.qkey = 0x1111;
	inject(f, &p, "datagram", 8);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 40 + 8);
	assert_int_equal(wc.src_qp, 0x99);
	assert_true(wc.wc_flags & IBV_WC_GRH);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_memory_equal(f->buf + 40, "datagram", 8);
	/* 20 zero bytes, then the IPv4 header from the peer to us. */
	ip = f->buf + 20;
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(ip[9], 17);
	assert_memory_equal(ip + 12, f->peer.sip + 12, 4);
	assert_memory_equal(ip + 16, f->peer.dip + 12, 4);
	assert_int_equal(ip[2] << 8 | ip[3], 20 + 8 + 12 + 8 + 4 + 8 + 4);
	/* No WQE: dropped. A buffer too small for GRH + payload:
	 * LOC_LEN_ERR. */
	inject(f, &p, "datagram", 8);
	assert_int_equal(atomic_load(&f->st.drops[SRDMA_DROP_RNR]), 1);
	post_recv(f, 6, 0, 44);
	inject(f, &p, "datagram", 8);
	assert_int_equal(cq_poll(f, &wc, 1), 1);
	assert_int_equal(wc.status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(ntx, 0);
	fx_free(f);
}

/* ---- anything at all ------------------------------------------------------
 */

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Random packets, mostly near the right PSN and keys so they get deep:
 * nothing may crash, hang or leak, and the QP entry must stay usable. */
static const uint8_t ops[] = {
	SRDMA_OP_SEND_FIRST,	SRDMA_OP_SEND_MIDDLE,
	SRDMA_OP_SEND_LAST,	SRDMA_OP_SEND_LAST_IMM,
	SRDMA_OP_SEND_ONLY,	SRDMA_OP_SEND_ONLY_IMM,
	SRDMA_OP_WRITE_FIRST,	SRDMA_OP_WRITE_MIDDLE,
	SRDMA_OP_WRITE_LAST,	SRDMA_OP_WRITE_LAST_IMM,
	SRDMA_OP_WRITE_ONLY,	SRDMA_OP_WRITE_ONLY_IMM,
	SRDMA_OP_READ_REQ,	SRDMA_OP_CMP_SWAP,
	SRDMA_OP_FETCH_ADD,	SRDMA_OP_SEND_LAST_INV,
	SRDMA_OP_SEND_ONLY_INV, SRDMA_OP_ACK,
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* Everything that says a packet was not taken as the next one. */
static uint64_t counted(struct fx *f)
{
	uint64_t n = atomic_load(&f->st.naks_sent) +
		     atomic_load(&f->st.rnr_sent) +
		     atomic_load(&f->st.dups_rcvd);
	int d;

	for (d = 0; d < SRDMA_DROP_MAX; d++)
		n += atomic_load(&f->st.drops[d]);
	return n;
}

static void fuzz_one(enum ibv_qp_type type, int rounds)
{
	uint32_t cursor = 0;
	uint64_t before;
	struct fx *f = fx_new(type,
			      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_REMOTE_ATOMIC,
			      0);
	static uint8_t junk[MTU + 4];
	struct ibv_wc wc[16];
	int i, k, ncqe = 0, nerr = 0;

	tx_capture = false;
	for (i = 0; i < (int)sizeof(junk); i++)
		junk[i] = (uint8_t)rnd();
	for (i = 0; i < rounds; i++) {
		struct srdma_pkt p = {0};
		uint64_t r = rnd(), s = rnd();
		uint32_t len;

		p.opcode = (uint8_t)r;
		if (r & 0x300) /* mostly a request of our transport */
			p.opcode =
				(uint8_t)(ops[(r >> 20) % NOPS] |
					  (type == IBV_QPT_RC	? SRDMA_TR_RC
					   : type == IBV_QPT_UC ? SRDMA_TR_UC
					   : type == IBV_QPT_XRC_RECV
						   ? SRDMA_TR_XRC
						   : SRDMA_TR_UD));
		if (type == IBV_QPT_UD && (r & 0x400000))
			p.opcode = SRDMA_TR_UD |
				   ((r & 0x800000) ? SRDMA_OP_SEND_ONLY
						   : SRDMA_OP_SEND_ONLY_IMM);
		/* mostly the PSN expected, as far as we can tell */
		if (!(r & 0x3c0000))
			p.psn = (uint32_t)(s & 0xffffff);
		else if (r & 0x40000)
			p.psn = srdma_psn_add(cursor, (uint32_t)(s % 5) - 2);
		else
			p.psn = cursor;
		before = counted(f);
		p.ackreq = r & 0x400;
		p.se = r & 0x800;
		p.va = (r & 0x1000) ? (uintptr_t)f->buf + (s >> 40) % BUF
				    : rnd();
		p.rkey = (r & 0x2000) ? f->mr->ibmr.rkey : (uint32_t)rnd();
		p.dma_len = (r & 0x4000) ? (uint32_t)(s >> 24) % 5000
					 : (uint32_t)rnd();
		p.swap_add = rnd();
		p.compare = rnd();
		p.qkey = (r & 0x8000) ? 0x1111 : (uint32_t)rnd();
		p.src_qp = (uint32_t)rnd();
		p.inv_rkey = (uint32_t)rnd();
		p.imm = (uint32_t)rnd();
		/* XRC: mostly our SRQ, else any number. */
		if (f->xrcd)
			p.xrc_srqn = (r & 0x1000000) ? (uint32_t)rnd() & 0xffffff
						     : srdma_srq_num(f->srq);
		len = (uint32_t)(rnd() % (MTU + 1));
		if ((r & 0x10000) ||
		    (srdma_wire_hdrs(p.opcode) &
		     (SRDMA_HDR_FIRST | SRDMA_HDR_MIDDLE)) == SRDMA_HDR_FIRST ||
		    (srdma_wire_hdrs(p.opcode) & SRDMA_HDR_MIDDLE))
			len = (r & 0x20000) ? MTU : len;
		if (!srdma_wire_hdrs(p.opcode) ||
		    !(srdma_wire_hdrs(p.opcode) & SRDMA_HDR_PAYLOAD))
			len = 0;
		if (srdma_wire_hdrs(p.opcode)) {
			inject(f, &p, junk, len);
		} else {
			/* what the parser would refuse, handed over raw */
			p.payload = junk;
			p.paylen = (uint32_t)(rnd() % sizeof(junk));
			p.padcnt = (uint8_t)rnd();
			srdma_netresp_input(&f->nq, &p, &f->peer);
		}
		/* Follow the responder's ePSN: UC expects the next PSN after
		 * any packet, RC after one it took (a READ takes one PSN per
		 * response packet). */
		if (type == IBV_QPT_UC)
			cursor = srdma_psn_add(p.psn, 1);
		else if (counted(f) == before && qp_state(f) != IBV_QPS_ERR &&
			 p.psn == cursor)
			cursor = srdma_psn_add(
				cursor, (p.opcode & 0x1f) == SRDMA_OP_READ_REQ
						? (p.dma_len + MTU - 1) / MTU +
							  !p.dma_len
						: 1);
		if (!(i % 7))
			post_recv_try(f, i, (uint32_t)(rnd() % (BUF - 4096)),
				      (uint32_t)(rnd() % 4096));
		while ((k = cq_poll(f, wc, 16)) > 0)
			ncqe += k;
		if (qp_state(f) == IBV_QPS_ERR || !(i % 61)) {
			nerr += qp_state(f) == IBV_QPS_ERR;
			/* As modify ERR -> RESET -> INIT -> RTR would. */
			atomic_store(&f->qp->sh->state, IBV_QPS_RTR);
			pthread_mutex_lock(&f->nq.resp_lock);
			srdma_netresp_reset(&f->nq, cursor);
			pthread_mutex_unlock(&f->nq.resp_lock);
		}
	}
	printf("  %s: %d packets, %llu sent, %llu NAKs, %llu RNR NAKs, %llu "
	       "dups, %d CQEs, %d QP errors; dropped:",
	       type == IBV_QPT_RC	  ? "RC"
	       : type == IBV_QPT_UC	  ? "UC"
	       : type == IBV_QPT_XRC_RECV ? "XRC"
					  : "UD",
	       rounds, (unsigned long long)atomic_load(&f->st.tx_pkts),
	       (unsigned long long)atomic_load(&f->st.naks_sent),
	       (unsigned long long)atomic_load(&f->st.rnr_sent),
	       (unsigned long long)atomic_load(&f->st.dups_rcvd), ncqe, nerr);
	for (i = 1; i < SRDMA_DROP_MAX; i++)
		if (atomic_load(&f->st.drops[i]))
			printf(" %s %llu", srdma_drop_str((enum srdma_drop)i),
			       (unsigned long long)atomic_load(
				       &f->st.drops[i]));
	printf("\n");
	fx_free(f);
}

static void test_garbage(void **state)
{
	(void)state;
	fuzz_one(IBV_QPT_RC, 100000);
	fuzz_one(IBV_QPT_UC, 50000);
	fuzz_one(IBV_QPT_UD, 20000);
	use_srq = true;
	fuzz_one(IBV_QPT_RC, 50000);
	fuzz_one(IBV_QPT_UC, 20000);
	fuzz_one(IBV_QPT_UD, 10000);
	use_srq = false;
	fuzz_one(IBV_QPT_XRC_RECV, 50000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_multi),
		cmocka_unit_test(test_rnr),
		cmocka_unit_test(test_psn_gap),
		cmocka_unit_test(test_dup_send),
		cmocka_unit_test(test_read_replay),
		cmocka_unit_test(test_read_big),
		cmocka_unit_test(test_atomic_once),
		cmocka_unit_test(test_bad_rkey),
		cmocka_unit_test(test_write_imm),
		cmocka_unit_test(test_bad_length),
		cmocka_unit_test(test_send_inv),
		cmocka_unit_test(test_source_transport),
		cmocka_unit_test(test_uc_gap),
		cmocka_unit_test(test_srq),
		cmocka_unit_test(test_xrc),
		cmocka_unit_test(test_ack_before_cqe),
		cmocka_unit_test(test_ud),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_delayed_ack),
		cmocka_unit_test(test_delayed_ack_events),
		cmocka_unit_test(test_ack_coalesce),
		cmocka_unit_test(test_delayed_ack_uc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
