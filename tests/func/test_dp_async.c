// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_dp_async.c - asynchronous events raised by the data path: a CQ that
 * overflows (IBV_EVENT_CQ_ERR), an SRQ drained below its armed limit
 * (IBV_EVENT_SRQ_LIMIT_REACHED, raised by the sender's process), and the
 * async fd as a pollable, blocking/non-blocking fd. Two contexts of one
 * process: traffic between them takes the cross-context path.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "func_util.h"

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[4096];
};

static struct ibv_context *open_dev(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c;

	assert_non_null(l);
	assert_non_null(l[0]);
	c = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	assert_non_null(c);
	return c;
}

static void side_init(struct side *s, int cqe, bool srq)
{
	struct ibv_qp_init_attr ia = { 0 };

	s->ctx = open_dev();
	s->pd = ibv_alloc_pd(s->ctx);
	assert_non_null(s->pd);
	s->cq = ibv_create_cq(s->ctx, cqe, NULL, NULL, 0);
	assert_non_null(s->cq);
	if (srq) {
		struct ibv_srq_init_attr sa = { 0 };

		sa.attr.max_wr = 16;
		sa.attr.max_sge = 1;
		s->srq = ibv_create_srq(s->pd, &sa);
		assert_non_null(s->srq);
	}
	s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(s->mr);
	ia.send_cq = s->cq;
	ia.recv_cq = s->cq;
	ia.srq = s->srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.sq_sig_all = 1;
	s->qp = ibv_create_qp(s->pd, &ia);
	assert_non_null(s->qp);
}

static void connect_qp(struct side *s, uint32_t dqpn)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a = { 0 };

	assert_int_equal(ibv_query_port(s->ctx, 1, &pa), 0);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.ah_attr.dlid = pa.lid;
	a.ah_attr.port_num = 1;
	fu_av_fix(s->qp->context, &a.ah_attr);
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV |
				       IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	assert_int_equal(ibv_modify_qp(s->qp, &a, IBV_QP_STATE |
				       IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

static void side_fini(struct side *s)
{
	assert_int_equal(ibv_destroy_qp(s->qp), 0);
	if (s->srq)
		assert_int_equal(ibv_destroy_srq(s->srq), 0);
	assert_int_equal(ibv_destroy_cq(s->cq), 0);
	assert_int_equal(ibv_dereg_mr(s->mr), 0);
	assert_int_equal(ibv_dealloc_pd(s->pd), 0);
	assert_int_equal(ibv_close_device(s->ctx), 0);
}

static void write_one(struct side *a, struct side *b)
{
	struct ibv_sge sge = { (uintptr_t)a->buf, 8, a->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf;
	wr.wr.rdma.rkey = b->mr->rkey;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
}

static void test_cq_overflow_event(void **state)
{
	struct side a, b;
	struct ibv_async_event ev;
	struct pollfd pfd;
	int i, flags;

	(void)state;
	side_init(&a, 4, false);
	side_init(&b, 4, false);
	connect_qp(&a, b.qp->qp_num);
	connect_qp(&b, a.qp->qp_num);
	/* No event yet: the async fd is not readable. */
	pfd.fd = a.ctx->async_fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 0), 0);
	/* More signaled completions than the CQ holds. */
	for (i = 0; i < a.cq->cqe + 2; i++)
		write_one(&a, &b);
	assert_int_equal(poll(&pfd, 1, 1000), 1);
	assert_int_equal(ibv_get_async_event(a.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
	assert_ptr_equal(ev.element.cq, a.cq);
	ibv_ack_async_event(&ev);
	/* Nothing else queued: a non-blocking fd says EAGAIN. */
	flags = fcntl(a.ctx->async_fd, F_GETFL);
	assert_int_equal(fcntl(a.ctx->async_fd, F_SETFL, flags | O_NONBLOCK),
			 0);
	assert_int_equal(ibv_get_async_event(a.ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	side_fini(&a);
	side_fini(&b);
}

static void test_srq_limit_event(void **state)
{
	struct side a, b;
	struct ibv_async_event ev;
	struct ibv_srq_attr sa = { 0 };
	struct ibv_recv_wr rw = { 0 }, *rbad;
	struct ibv_sge rs;
	struct ibv_wc wc[8];
	int i, n = 0;

	(void)state;
	side_init(&a, 64, false);
	side_init(&b, 64, true);
	connect_qp(&a, b.qp->qp_num);
	connect_qp(&b, a.qp->qp_num);
	rs.addr = (uintptr_t)b.buf;
	rs.length = 64;
	rs.lkey = b.mr->lkey;
	rw.sg_list = &rs;
	rw.num_sge = 1;
	for (i = 0; i < 4; i++)
		assert_int_equal(ibv_post_srq_recv(b.srq, &rw, &rbad), 0);
	sa.srq_limit = 3;
	assert_int_equal(ibv_modify_srq(b.srq, &sa, IBV_SRQ_LIMIT), 0);
	/* Two SENDs leave 2 < 3 WQEs: the sender raises the event. */
	for (i = 0; i < 2; i++) {
		struct ibv_sge sge = { (uintptr_t)a.buf, 16, a.mr->lkey };
		struct ibv_send_wr wr = { 0 }, *bad;

		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		assert_int_equal(ibv_post_send(a.qp, &wr, &bad), 0);
	}
	assert_int_equal(ibv_get_async_event(b.ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, b.srq);
	ibv_ack_async_event(&ev);
	/* The limit disarmed itself. */
	assert_int_equal(ibv_query_srq(b.srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 0);
	while (n < 2) {
		int r = ibv_poll_cq(b.cq, 8, wc);

		assert_true(r >= 0);
		for (i = 0; i < r; i++)
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		n += r;
	}
	side_fini(&a);
	side_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cq_overflow_event),
		cmocka_unit_test(test_srq_limit_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
