// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_qp_destroy_cq.c - destroying a QP takes its completions still
 * queued out of the CQs it used, as a NIC's provider does (mlx4, mlx5):
 * a CQ shared by several QPs must never hand out a wr_id of a QP that is
 * gone. libfabric's verbs;ofi_rxm endpoint shares one CQ between its
 * connections; on a disconnect it closed a connection's QP and freed its
 * receive buffers, then polled a flushed receive of that QP from the CQ
 * and reposted it on the freed endpoint (a crash in fi_pingpong -e rdm).
 *
 * 1. Two QPs on one CQ, receives posted on both, both moved to ERR (each
 *    receive flushed: a CQE each), then one destroyed: the CQ holds the
 *    other QP's flushes only, in order, and nothing of the destroyed one.
 * 2. A flushed send of a QP with a CQ of its own for sends: gone from
 *    that CQ with the QP.
 */
#include "func_util.h"

#define NRECV 4

static struct ibv_qp *make_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp(fu.pd, &ia);

	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
			 0);
	return qp;
}

static void to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
}

/* Post NRECV receives of 64 bytes at @buf, wr_id @base + i. */
static void post_recvs(struct ibv_qp *qp, struct ibv_mr *mr, char *buf,
		       uint64_t base)
{
	struct ibv_recv_wr *bad;
	int i;

	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)(buf + 64 * i),
				       .length = 64, .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = base + i, .sg_list = &sge,
					  .num_sge = 1 };

		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
	}
}

/* Poll everything the CQ holds (waiting briefly for flushes to land). */
static int drain(struct ibv_cq *cq, struct ibv_wc *wc, int max)
{
	int n = 0, r, idle;

	for (idle = 0; idle < 200 && n < max; ) {
		r = ibv_poll_cq(cq, max - n, wc + n);
		assert_true(r >= 0);
		if (r) {
			n += r;
			idle = 0;
		} else {
			idle++;
			usleep(1000);
		}
	}
	return n;
}

static void test_destroy_takes_its_cqes(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_wc wc[4 * NRECV];
	struct ibv_qp *gone, *kept;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	uint32_t kept_qpn;
	int n, i;

	(void)state;
	mr = ibv_reg_mr(fu.pd, buf, fu.pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	cq = ibv_create_cq(fu.ctx, 64, NULL, NULL, 0);
	assert_non_null(cq);
	gone = make_qp(cq);
	kept = make_qp(cq);
	kept_qpn = kept->qp_num;
	post_recvs(gone, mr, buf, 100);
	post_recvs(kept, mr, buf + 512, 200);
	to_err(gone);
	to_err(kept);
	/* Let the flushes land before the destroy, as rxm's CQ had them. */
	usleep(20000);
	assert_int_equal(ibv_destroy_qp(gone), 0);

	n = drain(cq, wc, 4 * NRECV);
	fu_expect_int(n, NRECV, "CQEs left after destroying one of two QPs");
	for (i = 0; i < n; i++) {
		fu_expect(wc[i].qp_num == kept_qpn,
			  "CQE %d (wr_id %llu) is of QP %#x, destroyed", i,
			  (unsigned long long)wc[i].wr_id, wc[i].qp_num);
		fu_expect(wc[i].wr_id == 200u + (unsigned)i &&
				  wc[i].status == IBV_WC_WR_FLUSH_ERR,
			  "CQE %d: wr_id %llu status %d, want %d flushed", i,
			  (unsigned long long)wc[i].wr_id, wc[i].status,
			  200 + i);
	}
	assert_int_equal(ibv_destroy_qp(kept), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_destroy_takes_its_send_cqes(void **state)
{
	struct ibv_send_wr swr = { .wr_id = 7, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
	};
	struct ibv_send_wr *sbad;
	struct ibv_cq *scq, *rcq;
	struct ibv_wc wc[4];
	struct ibv_qp *qp;

	(void)state;
	scq = ibv_create_cq(fu.ctx, 16, NULL, NULL, 0);
	rcq = ibv_create_cq(fu.ctx, 16, NULL, NULL, 0);
	assert_non_null(scq);
	assert_non_null(rcq);
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	qp = ibv_create_qp(fu.pd, &ia);
	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
			 0);
	to_err(qp);
	/* A send posted in ERR is flushed: a CQE in the send CQ. */
	assert_int_equal(ibv_post_send(qp, &swr, &sbad), 0);
	usleep(20000);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	fu_expect_int(drain(scq, wc, 4), 0,
		      "send CQEs left of a destroyed QP");
	assert_int_equal(ibv_destroy_cq(scq), 0);
	assert_int_equal(ibv_destroy_cq(rcq), 0);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_destroy_takes_its_cqes),
		FU_TEST(test_destroy_takes_its_send_cqes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
