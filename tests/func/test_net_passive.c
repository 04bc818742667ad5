// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_passive.c - target passivity with poll mode (issue 10, item 4;
 * docs/design/net-endpoint.md, "Progress"). While an application polls a
 * CQ of its context, the net progress thread leaves the UDP socket to the
 * application's inline polls; these tests check that it takes the socket
 * back whenever the application stops polling:
 *
 *   - a target that polled its CQ and then went idle (no verbs call at
 *     all) still has one-sided WRITEs served, by its progress thread,
 *     within the poll-mode window (SRDMA_NET_POLL_US, 300 ms here);
 *   - a target that polled and then arms its CQ and blocks in
 *     ibv_get_cq_event gets its event at once, not a window later
 *     (SRDMA_NET_POLL_US at 1 s here: the arming ends poll mode).
 *
 * Two contexts of one process (initiator and target). Over the wire only
 * under SRDMA_TRANSPORT=net (net.func.test_net_passive); on one host the
 * host transport passes the same checks.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include "func_util.h"

struct side {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[4096];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void side_init(struct side *s, bool channel)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = { 0 };

	assert_non_null(l);
	assert_non_null(l[0]);
	s->ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	assert_non_null(s->ctx);
	s->ch = NULL;
	if (channel) {
		s->ch = ibv_create_comp_channel(s->ctx);
		assert_non_null(s->ch);
	}
	s->pd = ibv_alloc_pd(s->ctx);
	assert_non_null(s->pd);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, s->ch, 0);
	assert_non_null(s->cq);
	s->mr = ibv_reg_mr(s->pd, s->buf, sizeof(s->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(s->mr);
	ia.send_cq = s->cq;
	ia.recv_cq = s->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 64;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.sq_sig_all = 1;
	s->qp = ibv_create_qp(s->pd, &ia);
	assert_non_null(s->qp);
	memset(s->buf, 0, sizeof(s->buf));
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
	assert_int_equal(ibv_destroy_cq(s->cq), 0);
	if (s->ch)
		assert_int_equal(ibv_destroy_comp_channel(s->ch), 0);
	assert_int_equal(ibv_dereg_mr(s->mr), 0);
	assert_int_equal(ibv_dealloc_pd(s->pd), 0);
	assert_int_equal(ibv_close_device(s->ctx), 0);
}

/* The target's application polls its empty CQ for @ms: poll mode. */
static void poll_for(struct side *s, unsigned int ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	struct ibv_wc wc;

	while (now_ns() < end)
		assert_int_equal(ibv_poll_cq(s->cq, 1, &wc), 0);
}

/* Wait for one completion on @s's CQ (polling), at most 10 s. */
static void wait_one(struct side *s)
{
	uint64_t end = now_ns() + 10000000000ull;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0 && now_ns() < end)
		;
	assert_int_equal(n, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

static void post_write(struct side *a, struct side *b, uint32_t off, char v)
{
	struct ibv_sge sge = { (uintptr_t)a->buf + off, 8, a->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	memset(a->buf + off, v, 8);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + off;
	wr.wr.rdma.rkey = b->mr->rkey;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
}

/* The target polls, then makes no verbs call at all: the initiator's
 * WRITEs are still executed (by the target's progress thread, once the
 * poll-mode window after its last poll has passed), and later ones at
 * the thread's usual pace. */
static void test_poll_then_idle(void **state)
{
	struct side a, b;
	uint64_t t0, first, rest;
	char want[8];
	int i;

	(void)state;
	setenv("SRDMA_NET_POLL_US", "300000", 1);
	side_init(&a, false);
	side_init(&b, false);
	connect_qp(&a, b.qp->qp_num);
	connect_qp(&b, a.qp->qp_num);
	poll_for(&b, 30);
	t0 = now_ns();
	post_write(&a, &b, 0, 'x');
	wait_one(&a);
	first = now_ns() - t0;
	memset(want, 'x', 8);
	assert_memory_equal(b.buf, want, 8);
	t0 = now_ns();
	for (i = 1; i <= 20; i++) {
		post_write(&a, &b, (uint32_t)i * 8, (char)('a' + i));
		wait_one(&a);
		memset(want, 'a' + i, 8);
		assert_memory_equal(b.buf + i * 8, want, 8);
	}
	rest = now_ns() - t0;
	print_message("first WRITE after the target's last poll: %.1f ms; "
		      "20 more: %.1f ms\n", first / 1e6, rest / 1e6);
	/* The window (0.3 s) plus a retransmit timeout (67 ms) and slack
	 * for a loaded machine. */
	assert_true(first < 3000000000ull);
	side_fini(&a);
	side_fini(&b);
	unsetenv("SRDMA_NET_POLL_US");
}

struct sender {
	struct side *a, *b;
	_Atomic uint64_t posted;
};

static void *send_later(void *arg)
{
	struct sender *s = arg;
	struct ibv_sge sge = { (uintptr_t)s->a->buf, 8, s->a->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct timespec ts = { 0, 50000000 };

	nanosleep(&ts, NULL);
	memcpy(s->a->buf, "passive", 8);
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	s->posted = now_ns();
	if (ibv_post_send(s->a->qp, &wr, &bad))
		return (void *)1;
	wait_one(s->a);
	return NULL;
}

/* The target polls (poll mode, a 1 s window), then arms its CQ and
 * blocks for the event: arming ends poll mode, so the SEND that comes
 * next is received by its progress thread at once and the event follows,
 * well before the window would have ended. */
static void test_notify_ends_poll_mode(void **state)
{
	struct ibv_sge rs;
	struct ibv_recv_wr rw = { 0 }, *rbad;
	struct sender snd;
	struct side a, b;
	struct ibv_cq *ecq;
	struct ibv_wc wc;
	pthread_t th;
	void *ectx, *ret;
	uint64_t waited;

	(void)state;
	setenv("SRDMA_NET_POLL_US", "1000000", 1);
	side_init(&a, false);
	side_init(&b, true);
	connect_qp(&a, b.qp->qp_num);
	connect_qp(&b, a.qp->qp_num);
	rs.addr = (uintptr_t)b.buf;
	rs.length = 64;
	rs.lkey = b.mr->lkey;
	rw.sg_list = &rs;
	rw.num_sge = 1;
	assert_int_equal(ibv_post_recv(b.qp, &rw, &rbad), 0);
	poll_for(&b, 30);
	assert_int_equal(ibv_req_notify_cq(b.cq, 0), 0);
	snd.a = &a;
	snd.b = &b;
	assert_int_equal(pthread_create(&th, NULL, send_later, &snd), 0);
	assert_int_equal(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
	waited = now_ns() - snd.posted;
	print_message("event %.1f ms after the SEND was posted\n",
		      waited / 1e6);
	fflush(stdout);
	assert_ptr_equal(ecq, b.cq);
	ibv_ack_cq_events(b.cq, 1);
	assert_int_equal(ibv_poll_cq(b.cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_memory_equal(b.buf, "passive", 8);
	assert_int_equal(pthread_join(th, &ret), 0);
	assert_null(ret);
	/* Without the hand-back it would be ~1 s (the window). */
	assert_true(waited < 500000000ull);
	side_fini(&a);
	side_fini(&b);
	unsetenv("SRDMA_NET_POLL_US");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_poll_then_idle),
		cmocka_unit_test(test_notify_ends_poll_mode),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
