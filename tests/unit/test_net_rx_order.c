// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_rx_order.c - the net endpoint hands a QP its datagrams in the
 * order they arrived, also when poll mode ends while the polling
 * application holds one it received inline.
 *
 * Why it matters: the inline receive (srdma_net_progress in poll mode)
 * takes a datagram off the socket first and the drain lock after. An
 * application preempted between the two (a loaded machine) let its poll
 * window run out; the progress thread took the socket back, received the
 * next datagrams and handled them first. RC took that for reordering on
 * the wire (a sequence NAK and a retransmission each time); UC, which
 * drops a message whose packets come out of order, lost the message, and
 * ibv_uc_pingpong waited for good (net.wire's UC pair, under load).
 *
 * The test: poll mode on (a short window), two datagrams for one
 * registered QP sent back to back, then one inline poll whose first
 * pthread_mutex_lock after receiving (the drain lock) is held up for
 * three windows (interposed: the library is linked statically into this
 * executable). The QP's input hook records the order: PSN 1, then PSN 2.
 * Runs in a network namespace of its own (needs root; skips otherwise).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "netns_util.h"
#include "net_lo_util.h"

#include "core/core.h"
#include "transport/net/net.h"
#include "transport/net/wire.h"

#define WINDOW_MS 20		/* SRDMA_NET_POLL_US */
#define STALL_MS (3 * WINDOW_MS)

static bool have_netns;
static __thread bool stall_armed;	/* this thread's next lock waits */

typedef int (*lock_fn)(pthread_mutex_t *);
static _Atomic lock_fn real_lock;

static lock_fn resolve_lock(void)
{
	lock_fn f = atomic_load_explicit(&real_lock, memory_order_acquire);

	if (!f) {
		f = (lock_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
		atomic_store_explicit(&real_lock, f, memory_order_release);
	}
	return f;
}

static void sleep_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* Interposed for the library: the arming thread's next lock waits first
 * (the drain lock, which the inline receive takes with a datagram in
 * hand: an application preempted right there). */
int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (stall_armed) {
		stall_armed = false;
		sleep_ms(STALL_MS);
	}
	return resolve_lock()(m);
}

static struct srdma_context *a, *b;	/* sender, poller */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t seen[8];		/* PSNs handed to the QP, in order */
static unsigned int nseen;		/* seen_lock */

static void hook(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
		 const struct srdma_wire_path *from)
{
	(void)nq;
	(void)from;
	resolve_lock()(&seen_lock);
	if (nseen < 8)
		seen[nseen++] = pkt->psn;
	pthread_mutex_unlock(&seen_lock);
}

static unsigned int nseen_now(void)
{
	unsigned int n;

	resolve_lock()(&seen_lock);
	n = nseen;
	pthread_mutex_unlock(&seen_lock);
	return n;
}

/* A UC SEND_ONLY with @psn to @qpn, from a. */
static void send_psn(uint32_t qpn, uint32_t psn)
{
	struct srdma_pkt k = { .opcode = SRDMA_TR_UC | SRDMA_OP_SEND_ONLY,
			       .pkey = 0xffff, .dqpn = qpn, .psn = psn };
	assert_int_equal(test_lo_send(a, &k), 0);
}

static void test_order_kept_at_poll_end(void **state)
{
	struct srdma_net_ep_stats s;
	struct srdma_net_qp nq;
	unsigned int i;

	(void)state;
	if (!have_netns)
		skip();
	setenv("SRDMA_NET_POLL_US", "20000", 1);	/* WINDOW_MS */
	test_lo_ctx(&a);
	test_lo_ctx(&b);
	test_lo_qp(b, &nq, 7);
	srdma_net_input_hook = hook;

	/* Poll mode: the poller polls; the thread, woken by a datagram,
	 * takes the socket out of its set. */
	for (i = 0; i < 3000; i++) {
		srdma_net_progress(b, 16);
		srdma_net_ep_stats(b, &s);
		if (s.poll_handoffs)
			break;
		if (i % 100 == 0)
			send_psn(nq.qpn, 0);
		sleep_ms(1);
	}
	assert_true(s.poll_handoffs > 0);
	/* Whatever the warm-up left, handled. */
	for (i = 0; i < 20; i++) {
		srdma_net_progress(b, 16);
		sleep_ms(1);
	}
	resolve_lock()(&seen_lock);
	nseen = 0;
	pthread_mutex_unlock(&seen_lock);

	/* Two back to back; one inline poll, held up after its receive. */
	send_psn(nq.qpn, 1);
	send_psn(nq.qpn, 2);
	stall_armed = true;
	srdma_net_progress(b, 16);
	stall_armed = false;
	for (i = 0; i < 200 && nseen_now() < 2; i++) {
		srdma_net_progress(b, 16);
		sleep_ms(1);
	}
	print_message("handed over in the order: %u %u (%u)\n", seen[0],
		      seen[1], nseen);
	assert_int_equal(nseen_now(), 2);
	assert_int_equal(seen[0], 1);
	assert_int_equal(seen[1], 2);

	srdma_net_input_hook = NULL;
	srdma_net_qp_unregister(&nq);
	srdma_net_ctx_close(a);
	srdma_net_ctx_close(b);
	assert_int_equal(srdma_context_close(a), 0);
	assert_int_equal(srdma_context_close(b), 0);
	unsetenv("SRDMA_NET_POLL_US");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_kept_at_poll_end),
	};

	resolve_lock();		/* before any thread */
	have_netns = test_private_netns("test_net_rx_order");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
