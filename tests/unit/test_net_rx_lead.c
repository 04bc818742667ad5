// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_rx_lead.c - an application that polls several empty CQs of
 * one context in turn looks at the UDP socket once per round, not once
 * per CQ (srdma_net_progress_from), and a CQ polled alone still receives.
 *
 * Why it matters: UCX polls four CQs per round of its progress loop (its
 * RC and UD interfaces, receive and send). Each empty poll used to make
 * its own system call on the socket (a poll(2) or an empty recvmmsg,
 * ~0.4 us each here), so a round took four of them: a datagram waited on
 * average half a round to be received, and as long again before the poll
 * of the CQ it completed to came round.
 *
 * The test counts, in its own thread, the poll, recvmsg and recvmmsg
 * calls made inside the library (interposed: it is linked statically
 * into this executable): three "CQs" polled in turn on an idle endpoint
 * must make about one look per round; a single poller, once the others
 * stop, must look at once (after the hand-over delay) and receive a
 * queued datagram; srdma_net_progress (no poller named) looks every
 * time. Runs in a network namespace of its own (needs root; skips
 * otherwise).
 */
#include <dlfcn.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "netns_util.h"

#include "core/core.h"
#include "transport/net/net.h"

static bool have_netns;
static __thread bool counting;
static __thread unsigned int looks;

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*recvmmsg_fn)(int, struct mmsghdr *, unsigned int, int,
			   struct timespec *);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
static _Atomic poll_fn real_poll;
static _Atomic recvmmsg_fn real_recvmmsg;
static _Atomic recvmsg_fn real_recvmsg;

static void resolve(void)
{
	atomic_store(&real_poll, (poll_fn)dlsym(RTLD_NEXT, "poll"));
	atomic_store(&real_recvmmsg,
		     (recvmmsg_fn)dlsym(RTLD_NEXT, "recvmmsg"));
	atomic_store(&real_recvmsg, (recvmsg_fn)dlsym(RTLD_NEXT, "recvmsg"));
}

/* Interposed for the library; counts the calls of the thread that set
 * `counting`. */
int poll(struct pollfd *fds, nfds_t n, int tmo)
{
	if (counting)
		looks++;
	return atomic_load(&real_poll)(fds, n, tmo);
}

int recvmmsg(int fd, struct mmsghdr *m, unsigned int n, int flags,
	     struct timespec *tmo)
{
	if (counting)
		looks++;
	return atomic_load(&real_recvmmsg)(fd, m, n, flags, tmo);
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	if (counting)
		looks++;
	return atomic_load(&real_recvmsg)(fd, m, flags);
}

static int progress(struct srdma_context *ctx, const void *who)
{
	int n;

	counting = true;
	n = who ? srdma_net_progress_from(ctx, who, 16)
		: srdma_net_progress(ctx, 16);
	counting = false;
	return n;
}

static void spin_us(unsigned int us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000ll + b.tv_nsec - a.tv_nsec <
	       (long long)us * 1000);
}

#define ROUNDS 3000

static void rounds(const char *poll_us)
{
	static const char cq[3];	/* three pollers: their addresses */
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(4791),
				 .sin_addr.s_addr = htonl(0x7f000001) };
	struct srdma_net_ep_stats s0, s1;
	struct srdma_context *ctx;
	uint8_t b[16] = { 0 };
	unsigned int per_round;
	uint32_t qpn;
	int fd, i, k, got = 0;

	setenv("SRDMA_NET_POLL_US", poll_us, 1);
	assert_int_equal(srdma_context_open(srdma_device_get(), &ctx), 0);
	assert_non_null(srdma_net_ctx_get(ctx));

	/* Idle, three pollers in turn: one look per round (a round that
	 * took longer than the hand-over delay, preempted, may look
	 * twice; half of them may). Before: three per round. */
	looks = 0;
	for (i = 0; i < ROUNDS; i++)
		for (k = 0; k < 3; k++)
			assert_int_equal(progress(ctx, &cq[k]), 0);
	per_round = looks * 100 / ROUNDS;
	print_message("SRDMA_NET_POLL_US=%s: %u looks in %d rounds of 3 polls\n",
		      poll_us, looks, ROUNDS);
	assert_true(looks >= ROUNDS);
	assert_true(per_round <= 150);

	/* No poller named: every call looks. */
	looks = 0;
	for (i = 0; i < 100; i++)
		assert_int_equal(progress(ctx, NULL), 0);
	assert_int_equal(looks, 100);

	/* The others stop: the third, polled alone, looks again once the
	 * hand-over delay has passed, and receives what is queued (a
	 * datagram for an unknown QPN of ours: dropped by cause after
	 * being counted received). */
	for (k = 0; k < 2; k++)
		assert_int_equal(progress(ctx, &cq[k]), 0);
	spin_us(50);
	looks = 0;
	assert_int_equal(progress(ctx, &cq[2]), 0);
	assert_int_equal(looks, 1);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	qpn = ctx->host.lid << SRDMA_QPN_SHIFT | 3;
	b[5] = (uint8_t)(qpn >> 16);
	b[6] = (uint8_t)(qpn >> 8);
	b[7] = (uint8_t)qpn;
	srdma_net_ep_stats(ctx, &s0);
	for (i = 0; i < 200 && !got; i++) {
		for (k = 0; k < 4; k++)
			assert_true(sendto(fd, b, sizeof(b), 0,
					   (struct sockaddr *)&a,
					   sizeof(a)) == (ssize_t)sizeof(b));
		for (k = 0; k < 100 && !got; k++)
			got = progress(ctx, &cq[2]);
	}
	assert_true(got > 0);
	srdma_net_ep_stats(ctx, &s1);
	assert_true(s1.inline_rx > s0.inline_rx);
	close(fd);
	srdma_net_ctx_close(ctx);
	assert_int_equal(srdma_context_close(ctx), 0);
	unsetenv("SRDMA_NET_POLL_US");
}

/* Without poll mode: the look is a poll(2) (the thread owns the socket). */
static void test_one_look_per_round(void **state)
{
	(void)state;
	if (!have_netns)
		skip();
	rounds("0");
}

/* In poll mode: the look is the receive itself (one slot: recvmsg). */
static void test_one_look_per_round_poll_mode(void **state)
{
	(void)state;
	if (!have_netns)
		skip();
	rounds("1000000");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_look_per_round),
		cmocka_unit_test(test_one_look_per_round_poll_mode),
	};

	resolve();	/* before any thread */
	have_netns = test_private_netns("test_net_rx_lead");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
