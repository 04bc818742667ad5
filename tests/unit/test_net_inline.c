// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_inline.c - the inline receive path of the net endpoint
 * (srdma_net_progress, called by a polling application's ibv_poll_cq)
 * leaves the endpoint's drain lock alone while nothing is queued.
 *
 * Why it matters: a busy-polling application used to take the drain lock
 * around every empty recvmmsg, so it was often preempted holding it; its
 * progress thread, woken for a datagram, then waited until the
 * application was scheduled again. On a loaded machine that was hundreds
 * of milliseconds (measured: up to 884 ms), past the retry budget of a
 * peer (ibv_rc_pingpong: 8 x 67 ms), and net.multi failed with "transport
 * retry counter exceeded".
 *
 * The test counts, in its own thread, the pthread_mutex_trylock calls made
 * inside srdma_net_progress (interposed: the library is linked statically
 * into this executable), first on an idle endpoint (none allowed), then
 * with datagrams queued, which the inline path must still receive. Runs
 * in a network namespace of its own (needs root; skips otherwise).
 *
 * test_long_answer_keeps_poll_mode: an application that answers inline
 * what it polled for longer than the poll-mode window (a 1 MiB READ's
 * responses: hundreds of microseconds in one ibv_poll_cq) is still
 * polling; the progress thread must not take the socket back meanwhile
 * (it then received the peer's next datagrams itself and queued on the
 * drain lock behind the application, a futex wake per turn).
 *
 * test_lone_ack_ends_poll_mode: a lone ACK (srdma_net_lone_ack, which
 * req.c calls for a plain ACK that completes a ping-pong QP's last
 * request) received inline ends poll mode at once: an application that
 * then stops polling (ib_write_lat spins on memory) has the peer's next
 * datagrams received by the thread well within the window, not after it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "netns_util.h"
#include "net_lo_util.h"

#include "core/core.h"
#include "transport/net/net.h"
#include "transport/net/wire.h"

static bool have_netns;
static __thread bool counting;
static __thread unsigned int trylocks;

/* Interposed for the library (statically linked here); counts the calls
 * of the thread that set `counting`. */
typedef int (*trylock_fn)(pthread_mutex_t *);
static _Atomic trylock_fn real_trylock;

static trylock_fn resolve_trylock(void)
{
	trylock_fn f = atomic_load_explicit(&real_trylock,
					    memory_order_acquire);

	if (!f) {
		f = (trylock_fn)dlsym(RTLD_NEXT, "pthread_mutex_trylock");
		atomic_store_explicit(&real_trylock, f, memory_order_release);
	}
	return f;
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	if (counting)
		trylocks++;
	return resolve_trylock()(m);
}

static int progress_counted(struct srdma_context *ctx)
{
	int n;

	counting = true;
	n = srdma_net_progress(ctx, 16);
	counting = false;
	return n;
}

static void test_idle_no_lock(void **state)
{
	struct srdma_net_ep_stats s;
	struct srdma_context *ctx;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(4791),
				 .sin_addr.s_addr = htonl(0x7f000001) };
	uint8_t b[16] = { 0 };
	uint32_t qpn;
	int fd, i, got = 0;

	(void)state;
	if (!have_netns)
		skip();
	/* Without poll mode: in it the thread sleeps until the window's
	 * end, and an inline poll that finds it late runs the timer scan
	 * (a trylock of the timer lock, by design). What this test holds
	 * is the drain lock around an empty receive. */
	setenv("SRDMA_NET_POLL_US", "0", 1);
	test_lo_ctx(&ctx);
	/* Idle: no lock taken, nothing received. */
	trylocks = 0;
	for (i = 0; i < 1000; i++)
		assert_int_equal(progress_counted(ctx), 0);
	assert_int_equal(trylocks, 0);

	/* Queued: still received inline. The progress thread may take
	 * some; inline must take at least one of 200, sent in bursts that
	 * we poll for at once. A datagram for our LID's unknown QPN is
	 * dropped by cause after being received: enough here. */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	qpn = ctx->host.lid << SRDMA_QPN_SHIFT | 3;
	b[5] = (uint8_t)(qpn >> 16);
	b[6] = (uint8_t)(qpn >> 8);
	b[7] = (uint8_t)qpn;
	for (i = 0; i < 200 && !got; i++) {
		int k;

		for (k = 0; k < 8; k++)
			assert_true(sendto(fd, b, sizeof(b), 0,
					   (struct sockaddr *)&a,
					   sizeof(a)) == (ssize_t)sizeof(b));
		got = progress_counted(ctx);
	}
	assert_true(got > 0);
	assert_true(trylocks > 0);
	srdma_net_ep_stats(ctx, &s);
	assert_true(s.inline_rx > 0);
	close(fd);
	srdma_net_ctx_close(ctx);
	assert_int_equal(srdma_context_close(ctx), 0);
}

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* A 16-byte datagram for @qpn: its receiver drops it (no such QP), after
 * counting it received. */
static void junk(struct srdma_context *from, uint32_t qpn)
{
	struct srdma_wire_path p;
	uint8_t b[16] = { 0 };
	struct iovec v = { b, sizeof(b) };

	test_lo_path(&p, false);
	b[5] = (uint8_t)(qpn >> 16);
	b[6] = (uint8_t)(qpn >> 8);
	b[7] = (uint8_t)qpn;
	assert_int_equal(srdma_net_send(from, &p, &v, 1), 0);
}

static struct srdma_context *la_a, *la_b;	/* peer, poller */
static pthread_t la_main;
static _Atomic int la_calls;
static _Atomic bool la_inline;

#define LA_WINDOW_MS 400
#define LA_STEP_MS 10
#define LA_STEPS 60		/* the answer: 1.5 windows long */
#define LA_PEER_AT 50		/* the peer sends 1.25 windows in */
#define LA_PEER_DGRAMS 8

/* The poller's "long answer": LA_STEPS sends of its own, LA_STEP_MS
 * apart; after the first window, the peer sends LA_PEER_DGRAMS datagrams
 * to it. */
static void la_hook(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
		    const struct srdma_wire_path *from)
{
	uint32_t peer_qpn = la_a->host.lid << SRDMA_QPN_SHIFT | 5;
	int i, k;

	(void)nq;
	(void)pkt;
	(void)from;
	la_inline = pthread_equal(pthread_self(), la_main);
	for (i = 0; i < LA_STEPS; i++) {
		sleep_ms(LA_STEP_MS);
		junk(la_b, peer_qpn);
		if (i == LA_PEER_AT)
			for (k = 0; k < LA_PEER_DGRAMS; k++)
				junk(la_a, nq->qpn + 1);
	}
	la_calls++;
}

static void test_long_answer_keeps_poll_mode(void **state)
{
	struct srdma_net_ep_stats s0, s1;
	struct srdma_net_qp nq;
	struct srdma_wire_path p;
	uint8_t b[64];
	struct iovec v = { b, 0 };
	struct srdma_pkt k = { .opcode = SRDMA_TR_RC | SRDMA_OP_SEND_ONLY,
			       .pkey = 0xffff, .psn = 1 };
	uint64_t by_thread;
	int i;

	(void)state;
	if (!have_netns)
		skip();
	setenv("SRDMA_NET_POLL_US", "400000", 1);	/* LA_WINDOW_MS */
	test_lo_ctx(&la_a);
	test_lo_ctx(&la_b);
	test_lo_qp(la_b, &nq, 7);
	la_main = pthread_self();
	srdma_net_input_hook = la_hook;

	/* Poll mode: the poller polls; the thread, woken by a datagram,
	 * takes the socket out of its set. */
	for (i = 0; i < 3000; i++) {
		srdma_net_progress(la_b, 16);
		srdma_net_ep_stats(la_b, &s0);
		if (s0.poll_handoffs)
			break;
		if (i % 100 == 0)
			junk(la_a, nq.qpn + 1);
		sleep_ms(1);
	}
	assert_true(s0.poll_handoffs > 0);
	srdma_net_progress(la_b, 16);
	srdma_net_ep_stats(la_b, &s0);

	/* The request: received inline, answered for 1.5 windows. */
	k.dqpn = nq.qpn;
	test_lo_path(&p, false);
	v.iov_len = srdma_wire_build(b, &k);
	srdma_wire_put_icrc(b + v.iov_len, srdma_wire_icrc(&p, &v, 1));
	v.iov_len += 4;
	assert_int_equal(srdma_net_send(la_a, &p, &v, 1), 0);
	for (i = 0; i < 5000 && !la_calls; i++)
		srdma_net_progress(la_b, 16);
	assert_int_equal(la_calls, 1);
	assert_true(la_inline);
	/* What the peer sent meanwhile waits for the poller, also when it
	 * comes back a little later (within the window). */
	sleep_ms(LA_WINDOW_MS / 4);
	for (i = 0; i < 100; i++) {
		srdma_net_progress(la_b, 16);
		srdma_net_ep_stats(la_b, &s1);
		if (s1.rx_dgrams - s0.rx_dgrams >= 1 + LA_PEER_DGRAMS)
			break;
		sleep_ms(1);
	}
	assert_true(s1.rx_dgrams - s0.rx_dgrams >= 1 + LA_PEER_DGRAMS);
	by_thread = (s1.rx_dgrams - s0.rx_dgrams) -
		    (s1.inline_rx - s0.inline_rx);
	print_message("received %llu, by the thread %llu, hand-offs %llu\n",
		      (unsigned long long)(s1.rx_dgrams - s0.rx_dgrams),
		      (unsigned long long)by_thread,
		      (unsigned long long)(s1.poll_handoffs -
					   s0.poll_handoffs));
	assert_int_equal(by_thread, 0);

	srdma_net_input_hook = NULL;
	srdma_net_qp_unregister(&nq);
	srdma_net_ctx_close(la_a);
	srdma_net_ctx_close(la_b);
	assert_int_equal(srdma_context_close(la_a), 0);
	assert_int_equal(srdma_context_close(la_b), 0);
	unsetenv("SRDMA_NET_POLL_US");
}

static struct srdma_context *lo_b;	/* the poller */

/* Stands for req.c: every packet for the QP is a lone ACK. */
static void lo_hook(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
		    const struct srdma_wire_path *from)
{
	(void)nq;
	(void)pkt;
	(void)from;
	srdma_net_lone_ack(lo_b);
}

#define LO_WINDOW_MS 1000

static void test_lone_ack_ends_poll_mode(void **state)
{
	struct srdma_net_ep_stats s0, s1;
	struct srdma_context *a;
	struct srdma_net_qp nq;
	struct srdma_wire_path p;
	uint8_t b[64];
	struct iovec v = { b, 0 };
	struct srdma_pkt k = { .opcode = SRDMA_TR_RC | SRDMA_OP_ACK,
			       .pkey = 0xffff, .psn = 1 };
	int i, got = 0;

	(void)state;
	if (!have_netns)
		skip();
	setenv("SRDMA_NET_POLL_US", "1000000", 1);	/* LO_WINDOW_MS */
	test_lo_ctx(&a);
	test_lo_ctx(&lo_b);
	test_lo_qp(lo_b, &nq, 7);
	srdma_net_input_hook = lo_hook;

	/* Poll mode, as in the test above. */
	for (i = 0; i < 3000; i++) {
		srdma_net_progress(lo_b, 16);
		srdma_net_ep_stats(lo_b, &s0);
		if (s0.poll_handoffs)
			break;
		if (i % 100 == 0)
			junk(a, nq.qpn + 1);
		sleep_ms(1);
	}
	assert_true(s0.poll_handoffs > 0);
	srdma_net_progress(lo_b, 16);
	srdma_net_ep_stats(lo_b, &s0);

	/* The lone ACK, received inline; then the poller stops polling. */
	k.dqpn = nq.qpn;
	test_lo_path(&p, false);
	v.iov_len = srdma_wire_build(b, &k);
	srdma_wire_put_icrc(b + v.iov_len, srdma_wire_icrc(&p, &v, 1));
	v.iov_len += 4;
	assert_int_equal(srdma_net_send(a, &p, &v, 1), 0);
	for (i = 0; i < 100000 && !got; i++)
		got = srdma_net_progress(lo_b, 16);
	assert_true(got > 0);
	srdma_net_ep_stats(lo_b, &s1);
	assert_int_equal(s1.lone_acks - s0.lone_acks, 1);

	/* The peer's reply: the thread receives it, long before the
	 * window (1 s) would have ended. */
	sleep_ms(20);
	srdma_net_ep_stats(lo_b, &s0);
	junk(a, nq.qpn + 1);
	for (i = 0; i < 200; i++) {
		sleep_ms(1);
		srdma_net_ep_stats(lo_b, &s1);
		if (s1.rx_dgrams > s0.rx_dgrams)
			break;
	}
	print_message("the reply was received after ~%d ms\n", i + 1);
	assert_true(s1.rx_dgrams > s0.rx_dgrams);
	assert_int_equal(s1.inline_rx, s0.inline_rx);

	srdma_net_input_hook = NULL;
	srdma_net_qp_unregister(&nq);
	srdma_net_ctx_close(a);
	srdma_net_ctx_close(lo_b);
	assert_int_equal(srdma_context_close(a), 0);
	assert_int_equal(srdma_context_close(lo_b), 0);
	unsetenv("SRDMA_NET_POLL_US");
}

/*
 * An application that armed a CQ and then polls on is a polling one
 * again after ARM_POLLS (256) polls: UCX arms its CQs while it connects
 * and then busy-polls, and the 100 ms during which an arm used to count
 * (no poll mode, no held ACKs) covered all or part of Open MPI's 8-byte
 * ping-pong, which then ran on thread wake-ups (two-moded: ~6.5 or ~15
 * us). An event-driven application (a few polls per arm) still counts
 * as waiting.
 */
static void test_polls_after_arm(void **state)
{
	struct srdma_context *ctx;
	int i;

	(void)state;
	if (!have_netns)
		skip();
	setenv("SRDMA_NET_POLL_US", "200", 1);
	test_lo_ctx(&ctx);
	assert_false(srdma_net_app_waits(ctx));
	srdma_net_poll_end(ctx);		/* ibv_req_notify_cq */
	assert_true(srdma_net_app_waits(ctx));
	/* event-driven: a few polls per arm, arm again */
	for (i = 0; i < 100; i++) {
		int k;

		for (k = 0; k < 4; k++)
			assert_int_equal(srdma_net_progress(ctx, 16), 0);
		srdma_net_poll_end(ctx);
		assert_true(srdma_net_app_waits(ctx));
	}
	/* polling on: waits no more (poll_stamp asks the same) */
	for (i = 0; i < 255; i++)
		srdma_net_progress(ctx, 16);
	assert_true(srdma_net_app_waits(ctx));
	srdma_net_progress(ctx, 16);
	assert_false(srdma_net_app_waits(ctx));
	/* armed again: waits again */
	srdma_net_poll_end(ctx);
	assert_true(srdma_net_app_waits(ctx));
	srdma_net_ctx_close(ctx);
	assert_int_equal(srdma_context_close(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_no_lock),
		cmocka_unit_test(test_long_answer_keeps_poll_mode),
		cmocka_unit_test(test_lone_ack_ends_poll_mode),
		cmocka_unit_test(test_polls_after_arm),
	};

	resolve_trylock();	/* before any thread */
	have_netns = test_private_netns("test_net_inline");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
