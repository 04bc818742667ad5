// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_wake_nofd.c - an initiator that is out of file descriptors still
 * wakes its target's completion channel.
 *
 * The wake-up of another context's channel is a byte written into its
 * FIFO, which the initiator opens on first use. A process at its fd limit
 * could not open it: the CQE was posted and the CQ disarmed, but the
 * target, asleep in ibv_get_cq_event, was never woken (on hardware the
 * initiator's fd table plays no part). Two contexts of this process: B
 * waits on its channel, A (same process, so the same fd table) sends to
 * B after every fd was taken. Prints whether and when B's channel woke.
 */
#include <fcntl.h>
#include <sys/resource.h>

#include "dp_util.h"

static void test_wake_without_fds(void **state)
{
	struct dp_ep a, b;
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct ibv_wc wc;
	struct rlimit old, lim;
	struct pollfd pfd;
	int fds[4096], n = 0, i, r;
	uint64_t t0;

	(void)state;
	dp_ep_open(&a, false);
	dp_ep_open(&b, true);
	dp_qp_create(&a, IBV_QPT_RC, 0);
	dp_qp_create(&b, IBV_QPT_RC, 0);
	dp_connect(&a, b.qp->qp_num, b.lid, &k);
	dp_connect(&b, a.qp->qp_num, a.lid, &k);
	/* A first SEND maps B as A's peer while fds remain. */
	dp_recv_buf(&b, 1, 0, 64);
	assert_int_equal(dp_post(a.qp, 1, IBV_WR_SEND, (uintptr_t)a.buf, 8,
				 a.mr->lkey, 0, 0), 0);
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "first SEND");
	dp_expect_wc(b.cq, IBV_WC_SUCCESS, &wc, "first receive");

	dp_recv_buf(&b, 2, 0, 64);
	assert_int_equal(ibv_req_notify_cq(b.cq, 0), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = 256;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	while (n < 4096 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	fu_expect(errno == EMFILE, "filling the fd table: %s",
		  fu_errname(errno));
	assert_int_equal(dp_post(a.qp, 2, IBV_WR_SEND, (uintptr_t)a.buf, 8,
				 a.mr->lkey, 0, 0), 0);
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "SEND out of fds");
	pfd.fd = b.ch->fd;
	pfd.events = POLLIN;
	t0 = dp_now_ms();
	r = poll(&pfd, 1, 3000);
	fu_expect(r == 1, "the target's channel was not woken (%d)", r);
	printf("wake nofd: initiator out of fds (%d taken); target's channel "
	       "%s after %llu ms\n", n, r == 1 ? "woke" : "did not wake",
	       (unsigned long long)(dp_now_ms() - t0));
	for (i = 0; i < n; i++)
		close(fds[i]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	if (r == 1) {
		struct ibv_cq *cq;
		void *cctx;

		assert_int_equal(ibv_get_cq_event(b.ch, &cq, &cctx), 0);
		ibv_ack_cq_events(cq, 1);
	}
	dp_ep_close(&a);
	dp_ep_close(&b);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wake_without_fds),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
