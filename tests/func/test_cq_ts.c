// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_cq_ts.c - completion timestamps (docs/design/dm.md): the clock the
 * device reports (hca_core_clock, completion_timestamp_mask,
 * ibv_query_rt_values_ex) and the stamps extended CQs created with
 * IBV_WC_EX_WITH_COMPLETION_TIMESTAMP / _WALLCLOCK carry: the free-running
 * clock (1 GHz, CLOCK_MONOTONIC) and the wall clock (CLOCK_REALTIME ns),
 * both taken when the completion was generated, so they fall between the
 * post and the poll, on the sender's CQ and on the receiver's. A CQ created
 * without the flags reads 0. Unsupported wc_flags stay EOPNOTSUPP.
 */
#include <time.h>

#include "dp_util.h"

#define CLOCK_KHZ 1000000u

static uint64_t ns_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_ts_caps(void **state)
{
	struct ibv_device_attr_ex ax;
	struct ibv_values_ex v;
	uint64_t before, after, raw;

	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(fu.ctx, NULL, &ax), 0);
	fu_expect_int(ax.hca_core_clock, CLOCK_KHZ, "hca_core_clock (kHz)");
	fu_expect(ax.completion_timestamp_mask == UINT64_MAX,
		  "completion_timestamp_mask %#llx",
		  (unsigned long long)ax.completion_timestamp_mask);

	memset(&v, 0, sizeof(v));
	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	before = ns_of(CLOCK_MONOTONIC);
	fu_expect_int(ibv_query_rt_values_ex(fu.ctx, &v), 0, "rt_values");
	after = ns_of(CLOCK_MONOTONIC);
	fu_expect_int(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK, "comp_mask out");
	raw = (uint64_t)v.raw_clock.tv_sec * 1000000000ull +
	      (uint64_t)v.raw_clock.tv_nsec;
	fu_expect(v.raw_clock.tv_nsec >= 0 && v.raw_clock.tv_nsec < 1000000000,
		  "raw_clock.tv_nsec %ld not normalised", v.raw_clock.tv_nsec);
	fu_expect(raw >= before && raw <= after,
		  "raw clock %llu outside [%llu, %llu]",
		  (unsigned long long)raw, (unsigned long long)before,
		  (unsigned long long)after);
	/* Nothing asked: nothing answered, still success. */
	memset(&v, 0, sizeof(v));
	fu_expect_int(ibv_query_rt_values_ex(fu.ctx, &v), 0, "rt_values, 0");
	fu_expect_int(v.comp_mask, 0, "comp_mask out, none asked");
	fu_done();
}

static struct ibv_cq_ex *cq_ex(struct ibv_context *ctx, uint64_t wc_flags)
{
	struct ibv_cq_init_attr_ex ca;

	memset(&ca, 0, sizeof(ca));
	ca.cqe = 16;
	ca.wc_flags = wc_flags;
	return ibv_create_cq_ex(ctx, &ca);
}

static void test_ts_bad_wc_flags(void **state)
{
	struct ibv_cq_ex *cq;

	errno = 0;
	cq = cq_ex(fu.ctx, IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_CVLAN);
	fu_expect(!cq && errno == EOPNOTSUPP, "cq_ex with CVLAN: %s",
		  cq ? "created" : fu_errname(errno));
	if (cq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	fu_done();
}

struct tep {
	struct dp_ep e;		/* ctx, pd, buffer, MR; its CQ unused */
	struct ibv_cq_ex *cq;
};

static void tep_open(struct tep *t, uint64_t wc_flags)
{
	struct ibv_qp_init_attr ia;

	dp_ep_open(&t->e, false);
	t->cq = cq_ex(t->e.ctx, IBV_WC_STANDARD_FLAGS | wc_flags);
	assert_non_null(t->cq);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ibv_cq_ex_to_cq(t->cq);
	ia.recv_cq = ibv_cq_ex_to_cq(t->cq);
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	t->e.qp = ibv_create_qp(t->e.pd, &ia);
	assert_non_null(t->e.qp);
}

static void tep_close(struct tep *t)
{
	ibv_destroy_qp(t->e.qp);
	t->e.qp = NULL;
	ibv_destroy_cq(ibv_cq_ex_to_cq(t->cq));
	dp_ep_close(&t->e);
}

/* Poll one completion of @cq (1 s at most); return its two stamps. */
static bool poll_ts(struct ibv_cq_ex *cq, uint64_t *ts, uint64_t *wall)
{
	struct ibv_poll_cq_attr pa = {0};
	uint64_t end = dp_now_ms() + 1000;
	int ret;

	while ((ret = ibv_start_poll(cq, &pa)) == ENOENT &&
	       dp_now_ms() < end)
		sched_yield();
	if (ret)
		return false;
	*ts = ibv_wc_read_completion_ts(cq);
	*wall = ibv_wc_read_completion_wallclock_ns(cq);
	ret = cq->status;
	ibv_end_poll(cq);
	return ret == IBV_WC_SUCCESS;
}

static void run_send(uint64_t flags_a, uint64_t flags_b, bool want)
{
	struct tep a, b;
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	uint64_t m0, w0, m1, w1, ts, wall;
	int side;

	tep_open(&a, flags_a);
	tep_open(&b, flags_b);
	dp_connect(&a.e, b.e.qp->qp_num, b.e.lid, &k);
	dp_connect(&b.e, a.e.qp->qp_num, a.e.lid, &k);
	dp_recv_buf(&b.e, 1, 0, 64);
	m0 = ns_of(CLOCK_MONOTONIC);
	w0 = ns_of(CLOCK_REALTIME);
	assert_int_equal(dp_post(a.e.qp, 2, IBV_WR_SEND, (uintptr_t)a.e.buf,
				 64, a.e.mr->lkey, 0, 0), 0);
	for (side = 0; side < 2; side++) {
		struct ibv_cq_ex *cq = side ? b.cq : a.cq;

		ts = wall = 1;
		fu_expect(poll_ts(cq, &ts, &wall), "%s: no good completion",
			  side ? "receiver" : "sender");
		m1 = ns_of(CLOCK_MONOTONIC);
		w1 = ns_of(CLOCK_REALTIME);
		if (!want) {
			fu_expect(ts == 0 && wall == 0,
				  "stamps %llu/%llu without the flags",
				  (unsigned long long)ts,
				  (unsigned long long)wall);
			continue;
		}
		fu_expect(ts >= m0 && ts <= m1,
			  "%s: completion ts %llu outside [%llu, %llu]",
			  side ? "receiver" : "sender",
			  (unsigned long long)ts, (unsigned long long)m0,
			  (unsigned long long)m1);
		fu_expect(wall >= w0 && wall <= w1 + 1000000,
			  "%s: wallclock %llu outside [%llu, %llu]",
			  side ? "receiver" : "sender",
			  (unsigned long long)wall, (unsigned long long)w0,
			  (unsigned long long)w1);
	}
	tep_close(&a);
	tep_close(&b);
	fu_done();
}

static void test_ts_stamped(void **state)
{
	const uint64_t both = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

	run_send(both, both, true);
}

static void test_ts_not_asked(void **state)
{
	run_send(0, 0, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_ts_caps),
		FU_TEST(test_ts_bad_wc_flags),
		FU_TEST(test_ts_stamped),
		FU_TEST(test_ts_not_asked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
