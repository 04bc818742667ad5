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
#include <unistd.h>
#include <cmocka.h>

#include "core/core.h"
#include "transport/net/net.h"

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

static void lo_up(void)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (fd >= 0 && !ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	if (fd >= 0)
		close(fd);
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
	assert_int_equal(srdma_context_open(srdma_device_get(), &ctx), 0);
	assert_non_null(srdma_net_ctx_get(ctx));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_no_lock),
	};

	resolve_trylock();	/* before any thread */
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "test_net_inline: no network namespace (%s): needs root; skipping\n",
			strerror(errno));
	} else {
		have_netns = true;
		lo_up();
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
