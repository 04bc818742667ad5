// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rnr_many.c - more QPs of one context waiting in RNR than the
 * progress engine takes in one sweep (issue 9's neighbourhood: a WR
 * waiting on its peer must always be retried, so that it completes once
 * the responder posts a receive, or fails once the responder dies).
 *
 * 80 RC QPs of one context, one send CQ, rnr_retry 7, each sends one
 * SEND to its own QP of a second context that has no receive posted. The
 * responder then posts a receive for the QP that entered RNR first only.
 * Its SEND must complete although the 79 others still wait: the progress
 * sweep used to take the 64 most recent waiters every time, so the 65th
 * and older were never retried (by poll_cq or by the timer thread) and
 * the WR waited forever. Prints the time the SEND took.
 */
#include "dp_util.h"

#define NQP 80

static void test_rnr_beyond_one_sweep(void **state)
{
	struct dp_ep a, b;
	struct ibv_qp *qa[NQP], *qb[NQP];
	struct dp_conn k = {.access = DP_REMOTE_ACCESS, .rnr_retry = 7};
	struct ibv_wc wc;
	uint64_t t0, ms;
	int i, got;

	(void)state;
	dp_ep_open(&a, false);
	dp_ep_open(&b, false);
	for (i = 0; i < NQP; i++) {
		dp_qp_create(&a, IBV_QPT_RC, 0);
		dp_qp_create(&b, IBV_QPT_RC, 0);
		qa[i] = a.qp;
		qb[i] = b.qp;
	}
	for (i = 0; i < NQP; i++) {
		a.qp = qa[i];
		b.qp = qb[i];
		dp_connect(&a, qb[i]->qp_num, b.lid, &k);
		dp_connect(&b, qa[i]->qp_num, a.lid, &k);
	}
	for (i = 0; i < NQP; i++)
		assert_int_equal(dp_post(qa[i], (uint64_t)i, IBV_WR_SEND,
					 (uintptr_t)a.buf, 8, a.mr->lkey, 0, 0),
				 0);
	fu_expect(!dp_poll(a.cq, &wc, 50), "a SEND completed in RNR");

	b.qp = qb[0];
	dp_recv_buf(&b, 0, 0, 64);
	t0 = dp_now_ms();
	got = dp_poll(a.cq, &wc, 5000);
	ms = dp_now_ms() - t0;
	fu_expect(got && wc.wr_id == 0 && wc.status == IBV_WC_SUCCESS,
		  "the oldest of %d QPs in RNR: %s", NQP,
		  got ? ibv_wc_status_str(wc.status) : "no completion in 5 s");
	printf("rnr many: %d QPs waiting in RNR; the oldest, given a "
	       "receive, completed: %s after %llu ms\n", NQP,
	       got ? ibv_wc_status_str(wc.status) : "nothing",
	       (unsigned long long)ms);

	for (i = 0; i < NQP; i++) {
		ibv_destroy_qp(qa[i]);
		ibv_destroy_qp(qb[i]);
	}
	a.qp = b.qp = NULL;
	dp_ep_close(&a);
	dp_ep_close(&b);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rnr_beyond_one_sweep),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
