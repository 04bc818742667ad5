// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_cq_arm.c - arming a CQ that still holds unpolled completions
 * (src/core/cq.c, srdma_cq_notify()).
 *
 * ibv_req_notify_cq(cq, 0) on a CQ whose unpolled CQEs came before the
 * arming raises the completion event at once, as mlx4/mlx5 do (their arm
 * doorbell carries the consumer index, and the HCA compares it with its
 * producer index). Programs rely on it: Open MPI's openib connection
 * manager (udcm) takes an event, polls once, handles the messages (which
 * takes a while: it sends and waits for an ACK), then arms again and waits
 * for the next event without polling in between; a message that arrived
 * during the handling was never read, and the connection hung for good
 * (sysfs.openib, about one run in a hundred).
 *
 * - A CQE that is waiting when the CQ is armed fires the event at once;
 *   an empty CQ armed stays quiet until the next completion; without
 *   arming nothing fires.
 * - A CQE whose event the application took, armed again before polling
 *   it (perftest's order: event, ack, arm, poll once), fires nothing:
 *   the next event is for the next completion.
 * - A solicited-only arming does not fire for a waiting unsolicited CQE
 *   (mlx5 arms for the next solicited completion).
 * - The udcm pattern itself: a thread that waits for an event, acks it,
 *   polls once, works for 300 us, re-arms and waits again, against a
 *   sender that sends the next message as soon as the previous one was
 *   polled (so it lands during the work, before the re-arm). Every
 *   message must be seen within two seconds.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "dp_util.h"

static struct dp_ep A, B;

static int setup(void **state)
{
	struct dp_conn k = { .access = DP_REMOTE_ACCESS };

	(void)state;
	dp_ep_open(&A, false);
	dp_ep_open(&B, true);
	dp_qp_create(&A, IBV_QPT_RC, 0);
	dp_qp_create(&B, IBV_QPT_RC, 0);
	dp_connect(&A, B.qp->qp_num, B.lid, &k);
	dp_connect(&B, A.qp->qp_num, A.lid, &k);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dp_ep_close(&A);
	dp_ep_close(&B);
	return 0;
}

#define ARM_TEST(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

/* Wait up to @ms for an event on B's channel; 1 if one came (acked). */
static int chan_event(int ms)
{
	struct pollfd pfd = { B.ch->fd, POLLIN, 0 };
	struct ibv_cq *cq = NULL;
	void *cq_ctx = NULL;

	if (poll(&pfd, 1, ms) <= 0)
		return 0;
	if (ibv_get_cq_event(B.ch, &cq, &cq_ctx))
		return 0;
	ibv_ack_cq_events(cq, 1);
	return cq == B.cq;
}

/* One SEND of 8 bytes from A to B; its send completion is polled. */
static void send_a_to_b(unsigned int flags)
{
	struct ibv_sge s = { (uintptr_t)A.buf, 8, A.mr->lkey };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | flags;
	wr.sg_list = &s;
	wr.num_sge = 1;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "SEND");
}

/* Let B's receive completion land without polling it: on the host
 * transport it is there before the sender's own; over the wire the
 * target's progress thread posts it a little later. */
static void wait_cqe_arrived(void)
{
	usleep(20000);
}

static void test_cq_arm_with_waiting_cqe_fires(void **state)
{
	struct ibv_wc wc;

	(void)state;
	dp_recv_buf(&B, 1, 0, 64);
	dp_recv_buf(&B, 2, 64, 64);
	send_a_to_b(0);
	wait_cqe_arrived();
	fu_expect(!chan_event(50), "an event without arming");
	assert_int_equal(ibv_req_notify_cq(B.cq, 0), 0);
	fu_expect(chan_event(1000),
		  "armed with a CQE waiting: no event (it would wait forever)");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "the waiting receive");
	/* Armed on an empty CQ: quiet until the next completion. */
	assert_int_equal(ibv_req_notify_cq(B.cq, 0), 0);
	fu_expect(!chan_event(50), "an event from arming an empty CQ");
	send_a_to_b(0);
	fu_expect(chan_event(1000), "no event for a completion after arming");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "second receive");
	/* One arming, one event: the CQ is disarmed again. */
	dp_recv_buf(&B, 3, 0, 64);
	send_a_to_b(0);
	fu_expect(!chan_event(50), "a second event from one arming");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "third receive");
	fu_done();
}

static void test_cq_arm_after_taken_event_is_quiet(void **state)
{
	struct ibv_wc wc;
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		dp_recv_buf(&B, (uint64_t)i, (size_t)i * 64, 64);
	assert_int_equal(ibv_req_notify_cq(B.cq, 0), 0);
	for (i = 0; i < 3; i++) {
		send_a_to_b(0);
		fu_expect(chan_event(1000), "round %d: no event", i);
		/* Re-armed with the CQE of that event not yet polled. */
		assert_int_equal(ibv_req_notify_cq(B.cq, 0), 0);
		fu_expect(!chan_event(50),
			  "round %d: a second event for a CQE whose event was "
			  "taken", i);
		dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "receive");
		fu_expect(ibv_poll_cq(B.cq, 1, &wc) == 0,
			  "round %d: more than one receive", i);
	}
	fu_done();
}

static void test_cq_arm_solicited_ignores_waiting_unsolicited(void **state)
{
	struct ibv_wc wc;

	(void)state;
	dp_recv_buf(&B, 1, 0, 64);
	dp_recv_buf(&B, 2, 64, 64);
	send_a_to_b(0);
	wait_cqe_arrived();
	assert_int_equal(ibv_req_notify_cq(B.cq, 1), 0);
	fu_expect(!chan_event(50),
		  "solicited-only arming fired for a waiting unsolicited CQE");
	send_a_to_b(IBV_SEND_SOLICITED);
	fu_expect(chan_event(1000), "no event for a solicited completion");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "first receive");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "second receive");
	fu_done();
}

/* ---- the udcm pattern ---------------------------------------------------- */

#define MSGS 100

static atomic_uint seen;		/* receives polled by the dispatcher */
static atomic_bool quit;
static atomic_bool started;		/* the dispatcher armed the CQ */
static atomic_int disp_err;		/* first error of the dispatcher */

static void *dispatcher(void *arg)
{
	struct ibv_wc wc[4];
	int i, n;

	(void)arg;
	if (ibv_req_notify_cq(B.cq, 0)) {
		atomic_store(&disp_err, 1);
		return NULL;
	}
	atomic_store(&started, true);
	while (!atomic_load(&quit)) {
		if (!chan_event(100))
			continue;
		n = ibv_poll_cq(B.cq, 4, wc);	/* once, as udcm */
		if (n < 0) {
			atomic_store(&disp_err, 2);
			return NULL;
		}
		for (i = 0; i < n; i++) {
			struct ibv_sge s = { (uintptr_t)B.buf, 64, B.mr->lkey };
			struct ibv_recv_wr r = { .sg_list = &s, .num_sge = 1 };
			struct ibv_recv_wr *bad;

			if (wc[i].status != IBV_WC_SUCCESS ||
			    ibv_post_recv(B.qp, &r, &bad))
				atomic_store(&disp_err, 3);
		}
		atomic_fetch_add(&seen, (unsigned int)n);
		usleep(300);		/* handling: the next message comes */
		if (ibv_req_notify_cq(B.cq, 0)) {
			atomic_store(&disp_err, 4);
			return NULL;
		}
	}
	return NULL;
}

static void test_cq_arm_poll_once_then_arm(void **state)
{
	pthread_t th;
	unsigned int i;

	(void)state;
	for (i = 0; i < 16; i++)
		dp_recv_buf(&B, i, 0, 64);
	atomic_store(&seen, 0);
	atomic_store(&quit, false);
	atomic_store(&disp_err, 0);
	atomic_store(&started, false);
	assert_int_equal(pthread_create(&th, NULL, dispatcher, NULL), 0);
	while (!atomic_load(&started) && !atomic_load(&disp_err))
		usleep(100);
	for (i = 0; i < MSGS; i++) {
		uint64_t end = dp_now_ms() + 2000;

		send_a_to_b(0);
		while (atomic_load(&seen) < i + 1 && dp_now_ms() < end)
			usleep(20);
		if (atomic_load(&seen) < i + 1) {
			fu_report(__FILE__, __LINE__,
				  "message %u was delivered but never seen: "
				  "its CQE waits in an armed CQ without an "
				  "event", i);
			break;
		}
	}
	atomic_store(&quit, true);
	pthread_join(th, NULL);
	fu_expect_int(atomic_load(&disp_err), 0, "dispatcher error");
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ARM_TEST(test_cq_arm_with_waiting_cqe_fires),
		ARM_TEST(test_cq_arm_after_taken_event_is_quiet),
		ARM_TEST(test_cq_arm_solicited_ignores_waiting_unsolicited),
		ARM_TEST(test_cq_arm_poll_once_then_arm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
