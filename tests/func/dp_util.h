// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dp_util.h - helpers for the data-path functional tests (test_dp_*.c).
 *
 * An endpoint is one context with its PD, one CQ (send and receive), one
 * QP and a two-page buffer registered with every access bit. Two
 * endpoints, each in its own context (so traffic takes the cross-context
 * path), are connected to each other INIT -> RTR -> RTS. The polling
 * helpers never block for long: every wait has a deadline, so a missing
 * completion is reported instead of hanging the test.
 */
#ifndef SRDMA_TESTS_FUNC_DP_UTIL_H
#define SRDMA_TESTS_FUNC_DP_UTIL_H

#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <time.h>

#include "func_util.h"

#define DP_ALL_ACCESS                                                          \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_MW_BIND)
#define DP_REMOTE_ACCESS                                                       \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                    \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define DP_MAX_SGE    4
#define DP_MAX_INLINE 64
#define DP_QKEY	      0x11111111u

struct dp_ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch; /* or NULL */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah; /* UD: towards the other endpoint */
	char *buf;
	size_t len;
	struct ibv_mr *mr;
	uint16_t lid;
};

/* Knobs for dp_connect(); zero-filled means the defaults below. */
struct dp_conn {
	unsigned int access;   /* qp_access_flags of this side */
	uint8_t min_rnr_timer; /* this side as responder; default 1 */
	uint8_t rnr_retry;     /* this side as requester; default 0 */
	uint8_t timeout;       /* default 14 */
	uint8_t retry_cnt;     /* default 7 */
	uint8_t rd_atomic;     /* RC READ/atomic depth, both ways; default 4 */
	bool no_rts;	       /* stop in INIT */
};

static inline uint64_t dp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline uint16_t dp_port_lid(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	memset(&pa, 0, sizeof(pa));
	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	return pa.lid;
}

/* Open the device, PD, CQ (optionally with a channel), buffer and MR. */
static inline void dp_ep_open(struct dp_ep *e, bool channel)
{
	memset(e, 0, sizeof(*e));
	e->ctx = fu_open_srdma();
	e->pd = ibv_alloc_pd(e->ctx);
	assert_non_null(e->pd);
	if (channel) {
		e->ch = ibv_create_comp_channel(e->ctx);
		assert_non_null(e->ch);
	}
	e->cq = ibv_create_cq(e->ctx, 256, NULL, e->ch, 0);
	assert_non_null(e->cq);
	e->len = 2 * fu_page();
	e->buf = fu_map(e->len, PROT_READ | PROT_WRITE);
	e->mr = ibv_reg_mr(e->pd, e->buf, e->len, DP_ALL_ACCESS);
	assert_non_null(e->mr);
	e->lid = dp_port_lid(e->ctx);
}

static inline void dp_qp_create(struct dp_ep *e, enum ibv_qp_type type,
				int sig_all)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.qp_type = type;
	ia.sq_sig_all = sig_all;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = DP_MAX_SGE;
	ia.cap.max_recv_sge = DP_MAX_SGE;
	ia.cap.max_inline_data = DP_MAX_INLINE;
	e->qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(e->qp);
}

static inline void dp_ep_close(struct dp_ep *e)
{
	if (e->ah)
		ibv_destroy_ah(e->ah);
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, e->len);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->ch)
		ibv_destroy_comp_channel(e->ch);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	memset(e, 0, sizeof(*e));
}

/*
 * Bring @qp to RTS (RC/UC: connected to @rqpn at @rlid; UD: ready), or to
 * INIT only with k->no_rts. Makes no cmocka call, so a forked child may use
 * it. Returns 0 or the errno of the first ibv_modify_qp() that failed.
 */
static inline int dp_qp_connect(struct ibv_qp *qp, uint32_t rqpn, uint16_t rlid,
				const struct dp_conn *k)
{
	enum ibv_qp_type type = qp->qp_type;
	uint8_t rd_atomic = k->rd_atomic ? k->rd_atomic : 4;
	struct ibv_qp_attr a;
	int mask, r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (type == IBV_QPT_UD) {
		a.qkey = DP_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = k->access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	r = ibv_modify_qp(qp, &a, mask);
	if (r || k->no_rts)
		return r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = rqpn;
		a.rq_psn = 0;
		a.ah_attr.dlid = rlid;
		a.ah_attr.port_num = 1;
		fu_av_fix(qp->context, &a.ah_attr);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
	}
	if (type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = rd_atomic;
		a.min_rnr_timer = k->min_rnr_timer ? k->min_rnr_timer : 1;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	r = ibv_modify_qp(qp, &a, mask);
	if (r)
		return r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (type == IBV_QPT_RC) {
		a.timeout = k->timeout ? k->timeout : 14;
		a.retry_cnt = k->retry_cnt ? k->retry_cnt : 7;
		a.rnr_retry = k->rnr_retry;
		a.max_rd_atomic = rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

/* dp_qp_connect() on @e's QP, asserting that every step succeeds. */
static inline void dp_connect(struct dp_ep *e, uint32_t rqpn, uint16_t rlid,
			      const struct dp_conn *k)
{
	assert_int_equal(dp_qp_connect(e->qp, rqpn, rlid, k), 0);
}

static inline enum ibv_qp_state dp_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* Poll one completion within @ms milliseconds; return 1 if one came. */
static inline int dp_poll(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t end = dp_now_ms() + (uint64_t)ms;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		assert_true(n >= 0);
		if (n)
			return 1;
		if (dp_now_ms() >= end)
			return 0;
		sched_yield();
	}
}

/* Expect the next completion of @cq to have @status; return it in @wc. */
#define dp_expect_wc(cq, status, wc, what)                                     \
	dp_expect_wc_at(__FILE__, __LINE__, cq, status, wc, what)
static inline bool dp_expect_wc_at(const char *file, int line,
				   struct ibv_cq *cq, enum ibv_wc_status status,
				   struct ibv_wc *wc, const char *what)
{
	struct ibv_wc tmp;

	if (!wc)
		wc = &tmp;
	memset(wc, 0, sizeof(*wc));
	if (!dp_poll(cq, wc, 1000)) {
		fu_report(file, line, "%s: no completion, want %s", what,
			  ibv_wc_status_str(status));
		return false;
	}
	if (wc->status != status) {
		fu_report(file, line, "%s: completion status %s (%d), want %s",
			  what, ibv_wc_status_str(wc->status), wc->status,
			  ibv_wc_status_str(status));
		return false;
	}
	return true;
}

/* Expect no completion on @cq (within a short while). */
#define dp_expect_no_wc(cq, what)                                              \
	dp_expect_no_wc_at(__FILE__, __LINE__, cq, what)
static inline void dp_expect_no_wc_at(const char *file, int line,
				      struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;

	if (dp_poll(cq, &wc, 10))
		fu_report(file, line,
			  "%s: unexpected completion wr_id %#" PRIx64
			  " status %s opcode %d",
			  what, wc.wr_id, ibv_wc_status_str(wc.status),
			  wc.opcode);
}

#define dp_expect_state(qp, st, what)                                          \
	do {                                                                   \
		enum ibv_qp_state s_ = dp_qp_state(qp);                        \
		fu_expect(s_ == (st), "%s: QP state %d, want %d", what, s_,    \
			  (int)(st));                                          \
	} while (0)

static inline int dp_post_recv(struct dp_ep *e, uint64_t wr_id,
			       struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = n;
	return ibv_post_recv(e->qp, &wr, &bad);
}

/* One receive of @len bytes at @off in the endpoint's buffer. */
static inline void dp_recv_buf(struct dp_ep *e, uint64_t wr_id, size_t off,
			       uint32_t len)
{
	struct ibv_sge s = {(uintptr_t)e->buf + off, len, e->mr->lkey};

	assert_int_equal(dp_post_recv(e, wr_id, &s, 1), 0);
}

/* Post one signaled send WR with one SGE. */
static inline int dp_post(struct ibv_qp *qp, uint64_t wr_id,
			  enum ibv_wr_opcode op, uint64_t laddr, uint32_t len,
			  uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge s = {laddr, len, lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/*
 * A QP in ERR: a new send WR and a new receive WR both complete with
 * IBV_WC_WR_FLUSH_ERR (and the CQ has nothing else first).
 */
#define dp_expect_flushing(e, what)                                            \
	dp_expect_flushing_at(__FILE__, __LINE__, e, what)
static inline void dp_expect_flushing_at(const char *file, int line,
					 struct dp_ep *e, const char *what)
{
	struct ibv_wc wc;
	int r;

	r = dp_post(e->qp, 0xf1, IBV_WR_SEND, (uintptr_t)e->buf, 8, e->mr->lkey,
		    0, 0);
	if (r) {
		fu_report(file, line, "%s: post_send in ERR returned %s", what,
			  fu_errname(r));
	} else if (dp_expect_wc_at(file, line, e->cq, IBV_WC_WR_FLUSH_ERR, &wc,
				   what) &&
		   wc.wr_id != 0xf1) {
		fu_report(file, line, "%s: flushed send wr_id %#" PRIx64, what,
			  wc.wr_id);
	}
	r = dp_post_recv(e, 0xf2, NULL, 0);
	if (r) {
		fu_report(file, line, "%s: post_recv in ERR returned %s", what,
			  fu_errname(r));
	} else if (dp_expect_wc_at(file, line, e->cq, IBV_WC_WR_FLUSH_ERR, &wc,
				   what) &&
		   wc.wr_id != 0xf2) {
		fu_report(file, line, "%s: flushed recv wr_id %#" PRIx64, what,
			  wc.wr_id);
	}
}

#endif /* SRDMA_TESTS_FUNC_DP_UTIL_H */
