// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_qp_destroy_cq.c - after ibv_destroy_qp() returns, no CQ hands out a
 * completion of that QP, as with mlx4/mlx5 (their destroy_qp cleans the
 * QP's CQEs out of its CQs); the completions of the other QPs sharing the
 * CQ stay, in order.
 *
 * Why it matters: libfabric's verbs;ofi_rxm endpoint shares one CQ between
 * all its connections. When it closes a connection (its own teardown, or
 * the peer's disconnect) it destroys the QP, drains the shared CQ, and
 * reposts the receive buffer of every successful receive it finds on the
 * connection's endpoint - which it has just freed. With the QP's
 * completions left in the CQ (rxe's behaviour) a message that arrived just
 * before the close made fi_pingpong -e rdm crash; with them cleaned out it
 * never sees such a receive (docs/design/stacks.md, "libfabric rxm").
 *
 * 1. A message delivered to one of two connected QPs sharing a CQ, not
 *    polled, then that QP destroyed: the CQ holds the other QP's receive
 *    only (the case rxm hit).
 * 2. Two QPs on one CQ, receives posted on both, both moved to ERR (each
 *    receive flushed), one destroyed: the other's flushes only, in order.
 * 3. A flushed send of a QP with a CQ of its own for sends: gone from
 *    that CQ with the QP; the receive CQ (another one) keeps nothing
 *    either.
 */
#include "dp_util.h"

#define NRECV 4

static struct dp_ep A, B;

static int setup(void **state)
{
	(void)state;
	dp_ep_open(&A, false);
	dp_ep_open(&B, false);
	fu.pg = fu_page();
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

/* An RC QP of @e on @scq / @rcq. */
static struct ibv_qp *make_qp(struct dp_ep *e, struct ibv_cq *scq,
			      struct ibv_cq *rcq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	assert_non_null(qp);
	return qp;
}

static void recv_on(struct ibv_qp *qp, struct dp_ep *e, uint64_t wr_id,
		    size_t off)
{
	struct ibv_sge s = { (uintptr_t)e->buf + off, 64, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
}

static void to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
}

/* Everything @cq holds: poll until it has been empty for 50 ms. */
static int drain(struct ibv_cq *cq, struct ibv_wc *wc, int max)
{
	int n = 0;

	while (n < max && dp_poll(cq, wc + n, 50))
		n++;
	return n;
}

static void test_destroy_takes_delivered_receive(void **state)
{
	struct dp_conn k = { .access = DP_ALL_ACCESS };
	struct ibv_qp *a1, *a2, *b1, *b2;
	struct ibv_wc wc[4];
	uint32_t b2_qpn;
	int n, i;

	(void)state;
	a1 = make_qp(&A, A.cq, A.cq);
	a2 = make_qp(&A, A.cq, A.cq);
	b1 = make_qp(&B, B.cq, B.cq);
	b2 = make_qp(&B, B.cq, B.cq);
	b2_qpn = b2->qp_num;
	assert_int_equal(dp_qp_connect(a1, b1->qp_num, B.lid, &k), 0);
	assert_int_equal(dp_qp_connect(b1, a1->qp_num, A.lid, &k), 0);
	assert_int_equal(dp_qp_connect(a2, b2->qp_num, B.lid, &k), 0);
	assert_int_equal(dp_qp_connect(b2, a2->qp_num, A.lid, &k), 0);
	recv_on(b1, &B, 11, 0);
	recv_on(b2, &B, 21, 64);
	memset(A.buf, 0x5a, 64);
	assert_int_equal(dp_post(a1, 1, IBV_WR_SEND, (uintptr_t)A.buf, 32,
				 A.mr->lkey, 0, 0), 0);
	assert_int_equal(dp_post(a2, 2, IBV_WR_SEND, (uintptr_t)A.buf, 48,
				 A.mr->lkey, 0, 0), 0);
	/* Both sends acknowledged: both receive CQEs are in B's CQ. */
	for (i = 0; i < 2; i++)
		dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "send");
	assert_int_equal(ibv_destroy_qp(b1), 0);

	n = drain(B.cq, wc, 4);
	fu_expect_int(n, 1, "receive CQEs left after destroying one of two QPs");
	for (i = 0; i < n; i++)
		fu_expect(wc[i].qp_num == b2_qpn && wc[i].wr_id == 21 &&
				  wc[i].status == IBV_WC_SUCCESS &&
				  wc[i].byte_len == 48,
			  "CQE %d: QP %#x wr_id %llu status %d len %u, want "
			  "QP %#x wr_id 21, 48 bytes",
			  i, wc[i].qp_num, (unsigned long long)wc[i].wr_id,
			  wc[i].status, wc[i].byte_len, b2_qpn);
	assert_int_equal(ibv_destroy_qp(b2), 0);
	assert_int_equal(ibv_destroy_qp(a1), 0);
	assert_int_equal(ibv_destroy_qp(a2), 0);
	fu_done();
}

static void test_destroy_takes_flushed_receives(void **state)
{
	struct dp_conn k = { .access = IBV_ACCESS_LOCAL_WRITE, .no_rts = true };
	struct ibv_wc wc[4 * NRECV];
	struct ibv_qp *gone, *kept;
	uint32_t kept_qpn;
	int n, i;

	(void)state;
	gone = make_qp(&B, B.cq, B.cq);
	kept = make_qp(&B, B.cq, B.cq);
	kept_qpn = kept->qp_num;
	assert_int_equal(dp_qp_connect(gone, 0, 0, &k), 0);
	assert_int_equal(dp_qp_connect(kept, 0, 0, &k), 0);
	for (i = 0; i < NRECV; i++) {
		recv_on(gone, &B, 100 + i, 64 * i);
		recv_on(kept, &B, 200 + i, 512 + 64 * i);
	}
	to_err(gone);
	to_err(kept);
	/* Let every flush land before the destroy, as rxm's CQ had them. */
	usleep(20000);
	assert_int_equal(ibv_destroy_qp(gone), 0);

	n = drain(B.cq, wc, 4 * NRECV);
	fu_expect_int(n, NRECV, "CQEs left after destroying one of two QPs");
	for (i = 0; i < n; i++)
		fu_expect(wc[i].qp_num == kept_qpn &&
				  wc[i].wr_id == 200u + (unsigned int)i &&
				  wc[i].status == IBV_WC_WR_FLUSH_ERR,
			  "CQE %d: QP %#x wr_id %llu status %d, want QP %#x "
			  "wr_id %d flushed",
			  i, wc[i].qp_num, (unsigned long long)wc[i].wr_id,
			  wc[i].status, kept_qpn, 200 + i);
	assert_int_equal(ibv_destroy_qp(kept), 0);
	fu_done();
}

static void test_destroy_takes_send_cqes(void **state)
{
	struct dp_conn k = { .no_rts = true };
	struct ibv_cq *scq;
	struct ibv_wc wc[4];
	struct ibv_qp *qp;

	(void)state;
	scq = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	assert_non_null(scq);
	qp = make_qp(&B, scq, B.cq);
	assert_int_equal(dp_qp_connect(qp, 0, 0, &k), 0);
	recv_on(qp, &B, 9, 0);
	to_err(qp);
	/* A send posted in ERR is flushed: a CQE in the send CQ. */
	assert_int_equal(dp_post(qp, 7, IBV_WR_SEND, (uintptr_t)B.buf, 8,
				 B.mr->lkey, 0, 0), 0);
	usleep(20000);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	fu_expect_int(drain(scq, wc, 4), 0, "send CQEs left of a destroyed QP");
	fu_expect_int(drain(B.cq, wc, 4), 0,
		      "receive CQEs left of a destroyed QP");
	assert_int_equal(ibv_destroy_cq(scq), 0);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_destroy_takes_delivered_receive, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_destroy_takes_flushed_receives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_destroy_takes_send_cqes,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
