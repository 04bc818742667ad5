// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_eintr.c - a signal interrupts the blocking verbs and rdma_cm calls
 * as it does with rdma-core: ibv_get_cq_event, ibv_get_async_event and
 * rdma_get_cm_event return -1 with errno EINTR when a signal whose handler
 * lacks SA_RESTART arrives while they sleep, and keep waiting when the
 * handler has SA_RESTART (the kernel restarts rdma-core's read()).
 *
 * qperf relies on the first: its SIGALRM (no SA_RESTART) ends a timed test
 * that sleeps in ibv_get_cq_event; before, softrdma retried the wait and
 * qperf's client hung until its peer gave up. Both ways of delivering the
 * signal are covered: alarm() to the blocked thread itself, as qperf does,
 * and pthread_kill() from another thread. Every wait has a deadline: a
 * call still asleep after it is a failure, and the helper then ends it by
 * producing the event it waits for.
 */
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdatomic.h>

#include "dp_util.h"

static atomic_int n_sig;

static void on_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(&n_sig, 1);
}

/* SIGUSR1 and SIGALRM go to on_signal, with or without SA_RESTART. */
static void handle(bool restart)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
	atomic_store(&n_sig, 0);
}

enum call { CQ_EVENT, ASYNC_EVENT, CM_EVENT };

static const char *call_name[] = {
	[CQ_EVENT] = "ibv_get_cq_event",
	[ASYNC_EVENT] = "ibv_get_async_event",
	[CM_EVENT] = "rdma_get_cm_event",
};

struct blocker {
	enum call call;
	struct dp_ep *ep;
	struct rdma_event_channel *cm_ch;
	pthread_t thr;
	atomic_bool started, done;
	int ret, err;
};

static void *block(void *arg)
{
	struct blocker *b = arg;
	struct ibv_async_event aev;
	struct rdma_cm_event *cev;
	struct ibv_cq *cq;
	void *cctx;
	int r = -1;

	atomic_store(&b->started, true);
	switch (b->call) {
	case CQ_EVENT:
		r = ibv_get_cq_event(b->ep->ch, &cq, &cctx);
		if (!r)
			ibv_ack_cq_events(cq, 1);
		break;
	case ASYNC_EVENT:
		r = ibv_get_async_event(b->ep->ctx, &aev);
		if (!r)
			ibv_ack_async_event(&aev);
		break;
	case CM_EVENT:
		r = rdma_get_cm_event(b->cm_ch, &cev);
		if (!r)
			rdma_ack_cm_event(cev);
		break;
	}
	b->err = r ? errno : 0;
	b->ret = r;
	atomic_store(&b->done, true);
	return NULL;
}

static bool wait_done(struct blocker *b, int ms)
{
	uint64_t end = dp_now_ms() + (uint64_t)ms;

	while (!atomic_load(&b->done) && dp_now_ms() < end)
		usleep(2000);
	return atomic_load(&b->done);
}

/* What ends the wait of @b if the signal did not (or must not). */
static void produce_event(struct blocker *b, struct dp_ep *peer,
			  struct rdma_cm_id *cm_id)
{
	struct ibv_wc wc;
	struct sockaddr_in sin;

	switch (b->call) {
	case CQ_EVENT:
		/* A SEND from the peer completes a receive on b's CQ. */
		dp_recv_buf(b->ep, 7, 0, 64);
		assert_int_equal(dp_post(peer->qp, 7, IBV_WR_SEND,
					 (uintptr_t)peer->buf, 8,
					 peer->mr->lkey, 0, 0), 0);
		dp_expect_wc(peer->cq, IBV_WC_SUCCESS, &wc, "wake-up SEND");
		break;
	case ASYNC_EVENT:
		/* Only the no-SA_RESTART case waits on it: fail there. */
		fail_msg("ibv_get_async_event did not return on the signal");
		break;
	case CM_EVENT:
		sin = (struct sockaddr_in){.sin_family = AF_INET,
					   .sin_addr.s_addr =
						   htonl(INADDR_LOOPBACK)};
		assert_int_equal(rdma_resolve_addr(cm_id, NULL,
						   (struct sockaddr *)&sin,
						   1000), 0);
		break;
	}
}

/*
 * Block in @call on a helper thread, signal it (pthread_kill), and check
 * the outcome: -1/EINTR at once without SA_RESTART; with SA_RESTART the
 * call must still be asleep, and return 0 once its event comes.
 */
static void check_call(enum call call, bool restart)
{
	struct dp_ep a, b;
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct rdma_cm_id *cm_id = NULL;
	struct blocker bl;
	uint64_t t0;

	memset(&bl, 0, sizeof(bl));
	bl.call = call;
	dp_ep_open(&a, false);
	dp_ep_open(&b, true);
	bl.ep = &b;
	if (call == CQ_EVENT) {
		dp_qp_create(&a, IBV_QPT_RC, 0);
		dp_qp_create(&b, IBV_QPT_RC, 0);
		dp_connect(&a, b.qp->qp_num, b.lid, &k);
		dp_connect(&b, a.qp->qp_num, a.lid, &k);
		assert_int_equal(ibv_req_notify_cq(b.cq, 0), 0);
	}
	if (call == CM_EVENT) {
		bl.cm_ch = rdma_create_event_channel();
		assert_non_null(bl.cm_ch);
		assert_int_equal(rdma_create_id(bl.cm_ch, &cm_id, NULL,
						RDMA_PS_TCP), 0);
	}
	handle(restart);
	assert_int_equal(pthread_create(&bl.thr, NULL, block, &bl), 0);
	while (!atomic_load(&bl.started))
		usleep(1000);
	usleep(100 * 1000);	/* asleep in the call by now */
	fu_expect(!atomic_load(&bl.done), "%s returned %d (%s) before the "
		  "signal", call_name[call], bl.ret, fu_errname(bl.err));
	t0 = dp_now_ms();
	assert_int_equal(pthread_kill(bl.thr, SIGUSR1), 0);
	if (!restart) {
		bool done = wait_done(&bl, 3000);

		fu_expect(done, "%s: still blocked 3 s after a signal without "
			  "SA_RESTART", call_name[call]);
		if (!done) {
			produce_event(&bl, &a, cm_id);
			wait_done(&bl, 10000);
		}
		fu_expect(bl.ret == -1 && bl.err == EINTR,
			  "%s after a signal: %d %s, want -1 EINTR",
			  call_name[call], bl.ret, fu_errname(bl.err));
		printf("eintr: %-20s no SA_RESTART: returned %d %s "
		       "after %llu ms\n", call_name[call], bl.ret,
		       fu_errname(bl.err),
		       (unsigned long long)(dp_now_ms() - t0));
	} else {
		usleep(200 * 1000);
		fu_expect(!atomic_load(&bl.done),
			  "%s returned %d (%s) on a SA_RESTART signal",
			  call_name[call], bl.ret, fu_errname(bl.err));
		produce_event(&bl, &a, cm_id);
		fu_expect(wait_done(&bl, 5000), "%s: no return after its "
			  "event", call_name[call]);
		/* Checked only now: ThreadSanitizer runs the handler when
		 * the interrupted call returns, not when the signal comes. */
		fu_expect(atomic_load(&n_sig) == 1, "signal not delivered");
		fu_expect(bl.ret == 0, "%s after its event: %d %s",
			  call_name[call], bl.ret, fu_errname(bl.err));
		printf("eintr: %-20s SA_RESTART: kept waiting, returned %d "
		       "on its event\n", call_name[call], bl.ret);
	}
	pthread_join(bl.thr, NULL);
	if (cm_id)
		rdma_destroy_id(cm_id);
	if (bl.cm_ch)
		rdma_destroy_event_channel(bl.cm_ch);
	dp_ep_close(&a);
	dp_ep_close(&b);
	fu_done();
}

static void test_cq_event_eintr(void **state)
{
	(void)state;
	check_call(CQ_EVENT, false);
}

static void test_cq_event_restart(void **state)
{
	(void)state;
	check_call(CQ_EVENT, true);
}

static void test_async_event_eintr(void **state)
{
	(void)state;
	check_call(ASYNC_EVENT, false);
}

static void test_cm_event_eintr(void **state)
{
	(void)state;
	check_call(CM_EVENT, false);
}

static void test_cm_event_restart(void **state)
{
	(void)state;
	check_call(CM_EVENT, true);
}

/* qperf's pattern: alarm() in the thread that then sleeps in the call. */
static void test_cq_event_alarm(void **state)
{
	struct dp_ep b;
	struct ibv_cq *cq;
	void *cctx;
	uint64_t t0;
	int r, e;

	(void)state;
	dp_ep_open(&b, true);
	assert_int_equal(ibv_req_notify_cq(b.cq, 0), 0);
	handle(false);
	t0 = dp_now_ms();
	alarm(1);
	r = ibv_get_cq_event(b.ch, &cq, &cctx);
	e = errno;
	alarm(0);
	fu_expect(r == -1 && e == EINTR, "ibv_get_cq_event under alarm(1): "
		  "%d %s, want -1 EINTR", r, fu_errname(e));
	printf("eintr: alarm(1) ended ibv_get_cq_event after %llu ms: %d "
	       "%s\n", (unsigned long long)(dp_now_ms() - t0), r,
	       fu_errname(e));
	dp_ep_close(&b);
	fu_done();
}

/* A call that never returns must not hang the run (the alarm test has
 * nothing else to end its wait). */
static void *watchdog(void *arg)
{
	static const char m[] = "WATCHDOG: test_eintr hung in a blocking call\n";

	(void)arg;
	sleep(60);
	if (write(2, m, sizeof(m) - 1) < 0)
		_exit(98);
	_exit(99);
}

int main(void)
{
	pthread_t wd;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cq_event_eintr),
		cmocka_unit_test(test_cq_event_restart),
		cmocka_unit_test(test_cq_event_alarm),
		cmocka_unit_test(test_async_event_eintr),
		cmocka_unit_test(test_cm_event_eintr),
		cmocka_unit_test(test_cm_event_restart),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* SIGUSR1/SIGALRM go to the thread they are sent to: the watchdog
	 * blocks them, so alarm() reaches the test's thread. */
	{
		sigset_t set, old;

		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		sigaddset(&set, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &set, &old);
		if (pthread_create(&wd, NULL, watchdog, NULL))
			return 1;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
