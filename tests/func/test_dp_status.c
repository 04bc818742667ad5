// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_dp_status.c - the error status PAIRS of verbs-semantics §5.3-5.5,
 * requester and responder side together, with the responder's QP state
 * and async event, checked the instant the requester sees its completion.
 *
 * The same binary runs on one host (func.test_dp_status: the host
 * transport) and over the wire (net.func.test_dp_status: SRDMA_TRANSPORT=net
 * inside one test host), and must give the same answers in both: a NIC's
 * responder moves its QP to ERR and raises its async event before its NAK
 * leaves, so a requester that has its error completion can never find the
 * responder still in RTS. Where the transport differs by nature (a UC
 * requester completes when its packets leave), the test waits, bounded.
 *
 * Cases: bad rkey (REM_ACCESS_ERR / QP ERR + QP_ACCESS_ERR event), a QP
 * without REMOTE_WRITE (REM_INV_REQ_ERR / QP ERR + QP_REQ_ERR event), a
 * receive too small (REM_INV_REQ_ERR / LOC_LEN_ERR), RNR exhaustion for
 * every finite rnr_retry 0..6 (RNR_RETRY_EXC_ERR, responder untouched),
 * SEND_WITH_INV naming an unknown key, UD with a wrong Q_Key and UC with a
 * bad rkey (dropped silently, both QPs stay RTS), a misaligned atomic
 * (EINVAL at post time), a READ into memory without LOCAL_WRITE
 * (LOC_PROT_ERR, nothing sent).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "func_util.h"
#include "dp_util.h"

static struct dp_ep A, B;

static int setup(void **state)
{
	(void)state;
	dp_ep_open(&A, false);
	dp_ep_open(&B, false);
	fu_failures = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dp_ep_close(&A);
	dp_ep_close(&B);
	return 0;
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

static void pair_k(enum ibv_qp_type type, const struct dp_conn *ka,
		   const struct dp_conn *kb)
{
	dp_qp_create(&A, type, 0);
	dp_qp_create(&B, type, 0);
	dp_connect(&A, B.qp->qp_num, A.lid, ka);
	dp_connect(&B, A.qp->qp_num, B.lid, kb);
}

static void pair(enum ibv_qp_type type, unsigned int acc_b)
{
	struct dp_conn ka = {.access = DP_REMOTE_ACCESS}, kb = {.access = acc_b};

	pair_k(type, &ka, &kb);
}

/* Close both QPs (between the cases of one test). */
static void unpair(void)
{
	ibv_destroy_qp(A.qp);
	ibv_destroy_qp(B.qp);
	A.qp = B.qp = NULL;
}

/* The next async event of @e's context is @type on its QP (within 2 s). */
static void expect_qp_event(struct dp_ep *e, enum ibv_event_type type,
			    const char *what)
{
	struct pollfd p = {.fd = e->ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;

	if (poll(&p, 1, 2000) != 1) {
		fu_expect(0, "%s: no async event", what);
		return;
	}
	assert_int_equal(ibv_get_async_event(e->ctx, &ev), 0);
	fu_expect(ev.event_type == type, "%s: async event %d, want %d", what,
		  ev.event_type, type);
	fu_expect(ev.element.qp == e->qp, "%s: event for another QP", what);
	ibv_ack_async_event(&ev);
}

/* No async event pending on @e's context. */
static void expect_no_event(struct dp_ep *e, const char *what)
{
	struct pollfd p = {.fd = e->ctx->async_fd, .events = POLLIN};

	fu_expect(poll(&p, 1, 0) == 0, "%s: unexpected async event", what);
}

/* 5.3: a WRITE with a bad rkey. The responder is in ERR, with its event,
 * as soon as the requester has REM_ACCESS_ERR. */
static void test_bad_rkey(void **state)
{
	(void)state;
	pair(IBV_QPT_RC, DP_REMOTE_ACCESS);
	assert_int_equal(dp_post(A.qp, 1, IBV_WR_RDMA_WRITE, (uintptr_t)A.buf,
				 16, A.mr->lkey, (uintptr_t)B.buf,
				 B.mr->rkey ^ 0x40), 0);
	dp_expect_wc(A.cq, IBV_WC_REM_ACCESS_ERR, NULL, "bad rkey, requester");
	dp_expect_state(B.qp, IBV_QPS_ERR, "bad rkey, responder");
	dp_expect_state(A.qp, IBV_QPS_ERR, "bad rkey, requester");
	expect_qp_event(&B, IBV_EVENT_QP_ACCESS_ERR, "bad rkey, responder");
	dp_expect_no_wc(B.cq, "bad rkey, responder");
	dp_expect_flushing(&A, "bad rkey, requester");
	fu_done();
}

/* 5.3: a WRITE to a QP that does not allow REMOTE_WRITE. */
static void test_write_not_allowed(void **state)
{
	(void)state;
	pair(IBV_QPT_RC, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(dp_post(A.qp, 2, IBV_WR_RDMA_WRITE, (uintptr_t)A.buf,
				 16, A.mr->lkey, (uintptr_t)B.buf, B.mr->rkey),
			 0);
	dp_expect_wc(A.cq, IBV_WC_REM_INV_REQ_ERR, NULL,
		     "WRITE not allowed, requester");
	dp_expect_state(B.qp, IBV_QPS_ERR, "WRITE not allowed, responder");
	expect_qp_event(&B, IBV_EVENT_QP_REQ_ERR, "WRITE not allowed");
	fu_done();
}

/* 5.3: a SEND longer than the receive buffer. */
static void test_recv_too_small(void **state)
{
	struct ibv_wc wc;

	(void)state;
	pair(IBV_QPT_RC, DP_REMOTE_ACCESS);
	dp_recv_buf(&B, 0x30, 0, 8);
	assert_int_equal(dp_post(A.qp, 3, IBV_WR_SEND, (uintptr_t)A.buf, 32,
				 A.mr->lkey, 0, 0), 0);
	dp_expect_wc(A.cq, IBV_WC_REM_INV_REQ_ERR, NULL,
		     "receive too small, requester");
	dp_expect_state(B.qp, IBV_QPS_ERR, "receive too small, responder");
	if (dp_expect_wc(B.cq, IBV_WC_LOC_LEN_ERR, &wc,
			 "receive too small, responder"))
		fu_expect(wc.wr_id == 0x30, "receive too small: wr_id %#" PRIx64,
			  wc.wr_id);
	expect_qp_event(&B, IBV_EVENT_QP_REQ_ERR, "receive too small");
	fu_done();
}

/* 5.3: no receive WQE, for every finite RNR budget: RNR_RETRY_EXC_ERR at
 * the requester only; the responder completes nothing and stays RTS. */
static void test_rnr_budgets(void **state)
{
	uint8_t n;

	(void)state;
	for (n = 0; n <= 6; n++) {
		struct dp_conn ka = {.access = DP_REMOTE_ACCESS,
				     .rnr_retry = n};
		struct dp_conn kb = {.access = DP_REMOTE_ACCESS,
				     .min_rnr_timer = 1};
		char w[64];

		snprintf(w, sizeof(w), "RNR, rnr_retry %u", n);
		pair_k(IBV_QPT_RC, &ka, &kb);
		assert_int_equal(dp_post(A.qp, 0x40 + n, IBV_WR_SEND,
					 (uintptr_t)A.buf, 8, A.mr->lkey, 0, 0),
				 0);
		dp_expect_wc(A.cq, IBV_WC_RNR_RETRY_EXC_ERR, NULL, w);
		dp_expect_state(A.qp, IBV_QPS_ERR, w);
		dp_expect_no_wc(B.cq, w);
		dp_expect_state(B.qp, IBV_QPS_RTS, w);
		expect_no_event(&B, w);
		unpair();
	}
	fu_done();
}

/* 5.3: SEND_WITH_INV naming a key nobody has. */
static void test_send_inv_unknown_key(void **state)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, 16, A.mr->lkey};
	struct ibv_wc wc;

	(void)state;
	pair(IBV_QPT_RC, DP_REMOTE_ACCESS);
	dp_recv_buf(&B, 0x51, 0, 64);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x50;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.invalidate_rkey = 0x00ffff42;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_REM_INV_REQ_ERR, NULL,
		     "SEND_WITH_INV unknown key, requester");
	dp_expect_state(B.qp, IBV_QPS_ERR,
			"SEND_WITH_INV unknown key, responder");
	if (dp_expect_wc(B.cq, IBV_WC_REM_INV_REQ_ERR, &wc,
			 "SEND_WITH_INV unknown key, responder"))
		fu_expect(wc.wr_id == 0x51, "SEND_WITH_INV: wr_id %#" PRIx64,
			  wc.wr_id);
	fu_done();
}

/* 5.5: UC WRITE with a bad rkey: dropped, nobody errs, the next works. */
static void test_uc_bad_rkey(void **state)
{
	uint64_t t0;

	(void)state;
	pair(IBV_QPT_UC, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(dp_post(A.qp, 6, IBV_WR_RDMA_WRITE, (uintptr_t)A.buf,
				 16, A.mr->lkey, (uintptr_t)B.buf,
				 B.mr->rkey ^ 0x40), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UC bad rkey, requester");
	dp_expect_no_wc(B.cq, "UC bad rkey, responder");
	dp_expect_state(B.qp, IBV_QPS_RTS, "UC bad rkey, responder");
	expect_no_event(&B, "UC bad rkey, responder");
	memset(A.buf, 0x5a, 16);
	assert_int_equal(dp_post(A.qp, 7, IBV_WR_RDMA_WRITE, (uintptr_t)A.buf,
				 16, A.mr->lkey, (uintptr_t)B.buf, B.mr->rkey),
			 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UC WRITE after");
	t0 = dp_now_ms();
	while (*(volatile char *)&B.buf[15] != 0x5a && dp_now_ms() - t0 < 2000)
		usleep(1000);
	fu_expect(B.buf[15] == 0x5a, "UC WRITE after a dropped one: no data");
	fu_done();
}

/* 5.5: UD SEND with the wrong Q_Key: dropped silently. */
static void test_ud_wrong_qkey(void **state)
{
	struct dp_conn k = {0};
	struct ibv_ah_attr aa;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, 16, A.mr->lkey};

	(void)state;
	dp_qp_create(&A, IBV_QPT_UD, 0);
	dp_qp_create(&B, IBV_QPT_UD, 0);
	dp_connect(&A, 0, 0, &k);
	dp_connect(&B, 0, 0, &k);
	memset(&aa, 0, sizeof(aa));
	aa.dlid = B.lid;
	aa.port_num = 1;
	fu_av_fix(A.ctx, &aa);
	A.ah = ibv_create_ah(A.pd, &aa);
	assert_non_null(A.ah);
	dp_recv_buf(&B, 0x70, 0, 64 + 40);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x71;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.ud.ah = A.ah;
	wr.wr.ud.remote_qpn = B.qp->qp_num;
	wr.wr.ud.remote_qkey = DP_QKEY ^ 1;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UD wrong Q_Key, requester");
	dp_expect_no_wc(B.cq, "UD wrong Q_Key, responder");
	dp_expect_state(B.qp, IBV_QPS_RTS, "UD wrong Q_Key, responder");
	/* The right key still gets through. */
	wr.wr.ud.remote_qkey = DP_QKEY;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UD right Q_Key, requester");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, NULL, "UD right Q_Key, responder");
	fu_done();
}

/* 5.5: a misaligned atomic is refused at post time, nothing sent. */
static void test_atomic_misaligned(void **state)
{
	(void)state;
	pair(IBV_QPT_RC, DP_REMOTE_ACCESS);
	fu_expect(dp_post(A.qp, 8, IBV_WR_ATOMIC_FETCH_AND_ADD,
			  (uintptr_t)A.buf, 8, A.mr->lkey,
			  (uintptr_t)B.buf + 4, B.mr->rkey) == EINVAL,
		  "misaligned atomic not refused with EINVAL");
	dp_expect_no_wc(A.cq, "misaligned atomic, requester");
	dp_expect_state(A.qp, IBV_QPS_RTS, "misaligned atomic, requester");
	dp_expect_state(B.qp, IBV_QPS_RTS, "misaligned atomic, responder");
	fu_done();
}

/* 5.4: a READ into local memory without LOCAL_WRITE: LOC_PROT_ERR. */
static void test_read_dst_no_local_write(void **state)
{
	struct ibv_mr *ro;

	(void)state;
	pair(IBV_QPT_RC, DP_REMOTE_ACCESS);
	ro = ibv_reg_mr(A.pd, A.buf + 4096, 4096, IBV_ACCESS_REMOTE_READ);
	assert_non_null(ro);
	assert_int_equal(dp_post(A.qp, 9, IBV_WR_RDMA_READ,
				 (uintptr_t)A.buf + 4096, 16, ro->lkey,
				 (uintptr_t)B.buf, B.mr->rkey), 0);
	dp_expect_wc(A.cq, IBV_WC_LOC_PROT_ERR, NULL,
		     "READ into memory without LOCAL_WRITE");
	dp_expect_state(A.qp, IBV_QPS_ERR, "READ without LOCAL_WRITE");
	dp_expect_no_wc(B.cq, "READ without LOCAL_WRITE, responder");
	dp_expect_state(B.qp, IBV_QPS_RTS, "READ without LOCAL_WRITE, responder");
	expect_no_event(&B, "READ without LOCAL_WRITE, responder");
	unpair();
	assert_int_equal(ibv_dereg_mr(ro), 0);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_bad_rkey),
		T(test_write_not_allowed),
		T(test_recv_too_small),
		T(test_rnr_budgets),
		T(test_send_inv_unknown_key),
		T(test_uc_bad_rkey),
		T(test_ud_wrong_qkey),
		T(test_atomic_misaligned),
		T(test_read_dst_no_local_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
