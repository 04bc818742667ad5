// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_fault_send.c - with SRDMA_NET_FAULT, a send never delivers a
 * held received datagram from inside the sending call.
 *
 * Why it matters: srdma_net_send_batch() released every held datagram that
 * was due, received ones included, and delivered those on the spot. Its
 * callers hold the QP's sq_lock (the requester's nr_tx_flush) or resp_lock
 * (the responder's ACKs), which the delivery of a datagram for that QP
 * takes again: under reorder or delay faults the requester deadlocked in
 * its own send, took no ACK, NAK or timer any more, and the pair hung
 * until killed (net.fault_dupreorder.ib_send_bw and .ib_write_bw, about 1
 * run in 50 under load).
 *
 * The test: SRDMA_NET_FAULT=rx.delay=2ms (every received datagram held
 * 2 ms), a datagram from one context to a registered QP of the other, and
 * that other context's sends in a loop for 100 ms, each inside a marker
 * the QP's input hook checks: the held datagram must reach the hook (from
 * the progress thread), never from inside a send; 20 rounds. Before the
 * fix the sending loop, which looks at the held datagrams every few
 * microseconds, delivered nearly all of them itself. Runs in a network
 * namespace of its own (needs root; skips otherwise).
 */
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

#define ROUNDS 20

static bool have_netns;
static pthread_t tester;
static _Atomic bool in_send;		/* the tester is inside a send */
static _Atomic int delivered, in_send_deliveries;

static void hook(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
		 const struct srdma_wire_path *from)
{
	(void)nq;
	(void)pkt;
	(void)from;
	if (pthread_equal(pthread_self(), tester) && atomic_load(&in_send))
		in_send_deliveries++;
	delivered++;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A UC SEND_ONLY to @qpn, from @from. */
static void send_to(struct srdma_context *from, uint32_t qpn)
{
	struct srdma_pkt k = { .opcode = SRDMA_TR_UC | SRDMA_OP_SEND_ONLY,
			       .pkey = 0xffff, .dqpn = qpn, .psn = 1 };
	assert_int_equal(test_lo_send(from, &k), 0);
}

static void test_send_delivers_no_held_rx(void **state)
{
	struct srdma_context *a, *b;
	struct srdma_net_qp nq;
	uint32_t elsewhere;
	int round;

	(void)state;
	if (!have_netns)
		skip();
	setenv("SRDMA_NET_FAULT", "rx.delay=2ms", 1);
	setenv("SRDMA_NET_POLL_US", "0", 1);
	test_lo_ctx(&a);
	test_lo_ctx(&b);
	test_lo_qp(b, &nq, 7);
	/* b's sends go to a QPN of a that does not exist (dropped there). */
	elsewhere = a->host.lid << SRDMA_QPN_SHIFT | 9;
	tester = pthread_self();
	srdma_net_input_hook = hook;

	for (round = 0; round < ROUNDS; round++) {
		uint64_t end;
		int before = delivered;

		send_to(a, nq.qpn);
		end = now_ns() + 100000000u;
		while (now_ns() < end) {
			atomic_store(&in_send, true);
			send_to(b, elsewhere);
			atomic_store(&in_send, false);
		}
		assert_int_equal(delivered, before + 1);
	}
	print_message("%d held datagrams delivered, %d of them inside a send\n",
		      delivered, in_send_deliveries);
	assert_int_equal(in_send_deliveries, 0);

	srdma_net_input_hook = NULL;
	srdma_net_qp_unregister(&nq);
	srdma_net_ctx_close(a);
	srdma_net_ctx_close(b);
	assert_int_equal(srdma_context_close(a), 0);
	assert_int_equal(srdma_context_close(b), 0);
	unsetenv("SRDMA_NET_FAULT");
	unsetenv("SRDMA_NET_POLL_US");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_delivers_no_held_rx),
	};

	have_netns = test_private_netns("test_net_fault_send");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
