// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_net_endpoint.c - the net transport's endpoint (endpoint.c, demux.c)
 * in a network namespace of its own (needs root; skips otherwise):
 *
 *   - open and close, twice, and a fork child that must not keep the
 *     parent's socket in the reuseport group;
 *   - a flood of random datagrams (IPv4 and IPv6) to port 4791: nothing
 *     crashes, and every datagram is accounted for (dropped by cause,
 *     delivered, or forwarded);
 *   - dispatch: hand-made packets (srdma_wire_build, srdma_wire_icrc) from
 *     one context to another through srdma_net_send, over IPv4 and IPv6,
 *     reach the registered QP (through the test hook); bad ICRC, foreign
 *     P_Key and unknown QPN are dropped by cause; unregister waits out a
 *     packet being handled;
 *   - UDP GSO: batches of packets of one length (and a shorter last) go
 *     as GSO sends, over IPv4 (ICRCs patched for the kernel's
 *     identifications) and IPv6, some packets in several iovecs; all
 *     arrive once with right ICRCs; a kernel that refuses GSO (test
 *     hook) gets the batch one datagram each, and no GSO after;
 *     SRDMA_NET_GSO=0 sends none; the receiver's UDP GRO gets them
 *     whole and splits them;
 *   - several processes in one namespace, each with a context: datagrams
 *     for each one's LID reach it (steered or forwarded), also after one
 *     of them dies without closing and after a new one joins.
 */
#include <errno.h>
#include <pthread.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "netns_util.h"
#include "net_lo_util.h"

#include "core/core.h"
#include "transport/net/net.h"

static bool have_netns;

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static uint64_t drops_sum(const struct srdma_net_ep_stats *s)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < SRDMA_DROP_MAX; i++)
		n += s->drops[i];
	return n;
}

/* A datagram to 4791 over IPv4 or IPv6 loopback from an ordinary socket. */
static void send_to_4791(int fd4, int fd6, bool v6, const void *buf,
			 size_t len)
{
	if (v6) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6,
					  .sin6_port = htons(4791),
					  .sin6_addr = IN6ADDR_LOOPBACK_INIT };

		assert_true(sendto(fd6, buf, len, 0, (struct sockaddr *)&a,
				   sizeof(a)) == (ssize_t)len);
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_port = htons(4791),
					 .sin_addr.s_addr = htonl(0x7f000001) };

		assert_true(sendto(fd4, buf, len, 0, (struct sockaddr *)&a,
				   sizeof(a)) == (ssize_t)len);
	}
}

static void bth_dqpn(uint8_t *b, uint32_t qpn)
{
	b[4] = 0;
	b[5] = (uint8_t)(qpn >> 16);
	b[6] = (uint8_t)(qpn >> 8);
	b[7] = (uint8_t)qpn;
}

static void test_open_close(void **state)
{
	struct srdma_context *ctx;
	struct srdma_net_ctx *ep;
	int round, st;
	pid_t pid;

	(void)state;
	if (!have_netns)
		skip();
	for (round = 0; round < 2; round++) {
		assert_int_equal(srdma_context_open(srdma_device_get(), &ctx), 0);
		ep = srdma_net_ctx_get(ctx);
		assert_non_null(ep);
		assert_ptr_equal(srdma_net_ctx_get(ctx), ep);
		if (round == 1) {
			/* The child drops the parent's sockets at fork. */
			pid = fork();
			assert_true(pid >= 0);
			if (!pid) {
				sleep_ms(300);
				_exit(srdma_net_progress(ctx, 10) == 0 ? 0 : 1);
			}
		}
		srdma_net_ctx_close(ctx);
		assert_null(atomic_load(&ctx->net));
		assert_int_equal(srdma_context_close(ctx), 0);
		if (round == 1) {
			/* While the child lives, port 4791 must be free of
			 * the parent's socket: a new context gets it and
			 * receives. */
			struct srdma_net_ep_stats s;
			uint8_t b[16] = { 0 };
			int fd4 = socket(AF_INET, SOCK_DGRAM, 0);
			int i;

			assert_int_equal(srdma_context_open(srdma_device_get(),
							    &ctx), 0);
			assert_non_null(srdma_net_ctx_get(ctx));
			bth_dqpn(b, ctx->host.lid << SRDMA_QPN_SHIFT | 3);
			for (i = 0; i < 20; i++)
				send_to_4791(fd4, -1, false, b, sizeof(b));
			for (i = 0; i < 200; i++) {
				srdma_net_ep_stats(ctx, &s);
				if (s.rx_local == 20)
					break;
				sleep_ms(10);
			}
			assert_int_equal(s.rx_local, 20);
			close(fd4);
			srdma_net_ctx_close(ctx);
			assert_int_equal(srdma_context_close(ctx), 0);
			assert_int_equal(waitpid(pid, &st, 0), pid);
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
	}
}

/* Random datagrams, some aimed at our LID, some at others, some short. */
static void test_flood(void **state)
{
	struct srdma_context *ctx;
	struct srdma_net_ep_stats s;
	uint8_t b[2100];
	int fd4 = socket(AF_INET, SOCK_DGRAM, 0);
	int fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
	uint64_t sent = 0, acc;
	unsigned int seed = 12345;
	int round, i, j;

	(void)state;
	if (!have_netns)
		skip();
	test_lo_ctx(&ctx);
	for (round = 0; round < 40; round++) {
		for (i = 0; i < 100; i++) {
			size_t len = (size_t)(rand_r(&seed) % 3) == 0 ?
				     (size_t)(rand_r(&seed) % 16) :
				     (size_t)(rand_r(&seed) % sizeof(b));

			for (j = 0; j < (int)len; j++)
				b[j] = (uint8_t)rand_r(&seed);
			if (len >= 8 && rand_r(&seed) % 2)
				bth_dqpn(b, ctx->host.lid << SRDMA_QPN_SHIFT |
					 (rand_r(&seed) & 0x3fff));
			send_to_4791(fd4, fd6, rand_r(&seed) % 2, b, len);
			sent++;
		}
		/* Half the time the application drains inline (as
		 * ibv_poll_cq on an empty CQ does). */
		if (round % 2)
			srdma_net_progress(ctx, round % 4 == 1 ? 64 : 16);
		sleep_ms(2);
	}
	for (i = 0; i < 500; i++) {
		srdma_net_ep_stats(ctx, &s);
		acc = drops_sum(&s) + s.fwd_out;
		if (s.rx_dgrams == sent && acc == sent)
			break;
		sleep_ms(10);
	}
	print_message("flood: %llu sent, %llu received (%llu inline), %llu dropped, %llu forwarded, %llu wake-ups\n",
		      (unsigned long long)sent,
		      (unsigned long long)s.rx_dgrams,
		      (unsigned long long)s.inline_rx,
		      (unsigned long long)drops_sum(&s),
		      (unsigned long long)s.fwd_out,
		      (unsigned long long)s.wakeups);
	assert_int_equal(s.rx_dgrams, sent);
	/* Nothing but this context in the namespace: every datagram is
	 * dropped (random bytes never pass the parser and the ICRC), and
	 * none can be forwarded to a LID nobody has. */
	assert_int_equal(drops_sum(&s), sent);
	assert_int_equal(s.fwd_out, 0);
	assert_true(s.drops[SRDMA_DROP_SHORT] > 0);
	assert_true(s.drops[SRDMA_DROP_QPN] > 0);
	close(fd4);
	close(fd6);
	srdma_net_ctx_close(ctx);
	assert_int_equal(srdma_context_close(ctx), 0);
}

/* ---- dispatch ----------------------------------------------------------- */

static _Atomic int hook_calls;
static _Atomic uint32_t hook_qpn, hook_psn;
static _Atomic int hook_sleep_ms;

static void hook(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
		 const struct srdma_wire_path *from)
{
	(void)from;
	assert_int_equal(nq->qpn, pkt->dqpn);
	hook_qpn = pkt->dqpn;
	hook_psn = pkt->psn;
	if (hook_sleep_ms)
		sleep_ms(hook_sleep_ms);
	hook_calls++;
}

/* An RC SEND_ONLY with 5 bytes of payload, ICRC for @p (spoiled if
 * @bad_icrc); returns the datagram length. */
static size_t make_send(uint8_t *b, const struct srdma_wire_path *p,
			uint32_t qpn, uint32_t psn, uint16_t pkey,
			bool bad_icrc)
{
	struct srdma_pkt k = { .opcode = SRDMA_TR_RC | SRDMA_OP_SEND_ONLY,
			       .pkey = pkey, .dqpn = qpn, .psn = psn,
			       .ackreq = true, .paylen = 5 };
	uint32_t h = srdma_wire_build(b, &k), n;
	struct iovec v;

	assert_true(h > 0);
	memcpy(b + h, "hello", 5);
	n = h + 5 + srdma_wire_pad(5);
	memset(b + h + 5, 0, srdma_wire_pad(5));
	v.iov_base = b;
	v.iov_len = n;
	srdma_wire_put_icrc(b + n, srdma_wire_icrc(p, &v, 1) ^ bad_icrc);
	return n + 4;
}

static void wait_calls(int n)
{
	int i;

	for (i = 0; i < 300 && hook_calls < n; i++)
		sleep_ms(10);
	assert_int_equal(hook_calls, n);
}

static void *unregister_thread(void *arg)
{
	srdma_net_qp_unregister(arg);
	return NULL;
}

static void test_dispatch(void **state)
{
	struct srdma_context *a, *b;
	struct srdma_net_ep_stats s;
	struct srdma_net_qp nq;
	struct srdma_wire_path p;
	uint8_t buf[128];
	struct iovec v;
	pthread_t th;
	uint64_t t0;
	int v6;

	(void)state;
	if (!have_netns)
		skip();
	test_lo_ctx(&a);
	test_lo_ctx(&b);
	memset(&nq, 0, sizeof(nq));
	nq.ctx = b;
	nq.qpn = b->host.lid << SRDMA_QPN_SHIFT | 7;
	/* A QPN of another context is refused. */
	nq.qpn ^= 1u << SRDMA_QPN_SHIFT;
	assert_int_equal(srdma_net_qp_register(&nq), -EINVAL);
	nq.qpn ^= 1u << SRDMA_QPN_SHIFT;
	assert_int_equal(srdma_net_qp_register(&nq), 0);
	srdma_net_input_hook = hook;
	hook_calls = 0;
	for (v6 = 0; v6 < 2; v6++) {
		test_lo_path(&p, v6);
		v.iov_base = buf;
		v.iov_len = make_send(buf, &p, nq.qpn, 100 + v6, 0xffff,
				      false);
		assert_int_equal(srdma_net_send(a, &p, &v, 1), 0);
		wait_calls(v6 + 1);
		assert_int_equal(hook_qpn, nq.qpn);
		assert_int_equal(hook_psn, 100 + v6);
		/* Bad ICRC, other P_Key, unknown QPN: dropped, by cause. */
		v.iov_len = make_send(buf, &p, nq.qpn, 1, 0xffff, true);
		assert_int_equal(srdma_net_send(a, &p, &v, 1), 0);
		v.iov_len = make_send(buf, &p, nq.qpn, 1, 0x8001, false);
		assert_int_equal(srdma_net_send(a, &p, &v, 1), 0);
		v.iov_len = make_send(buf, &p, nq.qpn + 1, 1, 0xffff, false);
		assert_int_equal(srdma_net_send(a, &p, &v, 1), 0);
		/* A source port we do not send from is refused. */
		p.sport = 5000;
		assert_int_equal(srdma_net_send(a, &p, &v, 1), -EINVAL);
	}
	for (t0 = 0; t0 < 300; t0++) {
		srdma_net_ep_stats(b, &s);
		if (s.drops[SRDMA_DROP_QPN] == 2)
			break;
		sleep_ms(10);
	}
	assert_int_equal(s.drops[SRDMA_DROP_ICRC], 2);
	assert_int_equal(s.drops[SRDMA_DROP_PKEY], 2);
	assert_int_equal(s.drops[SRDMA_DROP_QPN], 2);
	assert_int_equal(hook_calls, 2);
	srdma_net_ep_stats(a, &s);
	assert_int_equal(s.tx_dgrams, 8);
	/* Unregister while a packet is being handled: it waits. */
	hook_sleep_ms = 200;
	test_lo_path(&p, false);
	v.iov_len = make_send(buf, &p, nq.qpn, 7, 0xffff, false);
	assert_int_equal(srdma_net_send(a, &p, &v, 1), 0);
	for (t0 = 0; t0 < 300 && !atomic_load(&nq.refs); t0++)
		sleep_ms(1);
	assert_int_equal(atomic_load(&nq.refs), 1);
	assert_int_equal(pthread_create(&th, NULL, unregister_thread, &nq), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(hook_calls, 3);	/* finished before unregister */
	assert_int_equal(atomic_load(&nq.refs), 0);
	hook_sleep_ms = 0;
	/* Unregistered: its packets are unknown QPNs now. */
	assert_int_equal(srdma_net_send(a, &p, &v, 1), 0);
	for (t0 = 0; t0 < 300; t0++) {
		srdma_net_ep_stats(b, &s);
		if (s.drops[SRDMA_DROP_QPN] == 3)
			break;
		sleep_ms(10);
	}
	assert_int_equal(s.drops[SRDMA_DROP_QPN], 3);
	srdma_net_input_hook = NULL;
	srdma_net_ctx_close(a);
	srdma_net_ctx_close(b);
	assert_int_equal(srdma_context_close(a), 0);
	assert_int_equal(srdma_context_close(b), 0);
}

/* ---- UDP GSO --------------------------------------------------------------- */

#define GSO_N 48
static _Atomic uint64_t gso_seen[2];	/* PSNs 0..127 delivered */
static _Atomic int gso_dup;

static void gso_hook(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
		     const struct srdma_wire_path *from)
{
	uint64_t bit = 1ull << (pkt->psn & 63);

	(void)nq;
	(void)from;
	if (pkt->psn < 128 &&
	    (atomic_fetch_or(&gso_seen[pkt->psn / 64], bit) & bit))
		gso_dup++;
	hook_calls++;
}

/* RC SEND_ONLY, @paylen bytes of payload, ICRC for @p: its length. */
static size_t make_pkt(uint8_t *b, const struct srdma_wire_path *p,
		       uint32_t qpn, uint32_t psn, uint32_t paylen)
{
	struct srdma_pkt k = { .opcode = SRDMA_TR_RC | SRDMA_OP_SEND_ONLY,
			       .pkey = 0xffff, .dqpn = qpn, .psn = psn,
			       .paylen = paylen };
	uint32_t h = srdma_wire_build(b, &k), n, i;
	struct iovec v;

	for (i = 0; i < paylen; i++)
		b[h + i] = (uint8_t)(psn + i);
	n = h + paylen + srdma_wire_pad(paylen);
	memset(b + h + paylen, 0, srdma_wire_pad(paylen));
	v.iov_base = b;
	v.iov_len = n;
	srdma_wire_put_icrc(b + n, srdma_wire_icrc(p, &v, 1));
	return n + 4;
}

/*
 * One batch of GSO_N packets from @a to @nq (on @b), PSNs @psn0.. :
 * runs of one length with a shorter last, lone ones between, some packets
 * in several iovecs (one with its ICRC split across two). Every packet
 * must arrive once with a right ICRC (no drop at @b), and the caller's
 * buffers must not change. Return: the sender's GSO segments for it.
 */
static uint64_t gso_batch(struct srdma_context *a, struct srdma_context *b,
			  struct srdma_net_qp *nq, bool v6, uint32_t psn0)
{
	static uint8_t buf[GSO_N][1200], copy[GSO_N][1200];
	struct iovec iov[GSO_N][3];
	struct srdma_net_msg m[GSO_N];
	struct srdma_net_ep_stats sa0, sa, sb0, sb;
	struct srdma_wire_path p;
	size_t len[GSO_N];
	int i, t;

	test_lo_path(&p, v6);
	srdma_net_ep_stats(a, &sa0);
	srdma_net_ep_stats(b, &sb0);
	gso_seen[0] = gso_seen[1] = 0;
	gso_dup = 0;
	hook_calls = 0;
	for (i = 0; i < GSO_N; i++) {
		/* 0-19: 1000 B, 20: 600 B (last of a run), 21-22: 300 B
		 * (a run of its own), 23: 1100 B alone, 24-46: 1000 B, 47:
		 * 10 B */
		uint32_t pl = i < 20 ? 1000 : i == 20 ? 600 : i < 23 ? 300 :
			      i == 23 ? 1100 : i < 47 ? 1000 : 10;

		len[i] = make_pkt(buf[i], &p, nq->qpn, psn0 + (uint32_t)i, pl);
		memcpy(copy[i], buf[i], len[i]);
		m[i].path = &p;
		m[i].iov = iov[i];
		if (i % 5 == 1) {	/* header, payload, ICRC */
			iov[i][0] = (struct iovec){ buf[i], 12 };
			iov[i][1] = (struct iovec){ buf[i] + 12, len[i] - 16 };
			iov[i][2] = (struct iovec){ buf[i] + len[i] - 4, 4 };
			m[i].n = 3;
		} else if (i % 5 == 3) { /* the ICRC split in two */
			iov[i][0] = (struct iovec){ buf[i], len[i] - 2 };
			iov[i][1] = (struct iovec){ buf[i] + len[i] - 2, 2 };
			m[i].n = 2;
		} else {
			iov[i][0] = (struct iovec){ buf[i], len[i] };
			m[i].n = 1;
		}
	}
	assert_int_equal(srdma_net_send_batch(a, m, GSO_N), GSO_N);
	for (t = 0; t < 300 && hook_calls < GSO_N; t++)
		sleep_ms(10);
	assert_int_equal(hook_calls, GSO_N);
	assert_int_equal(gso_dup, 0);
	/* PSNs psn0..psn0+47, each once (psn0 is 0 or 64) */
	assert_true(gso_seen[psn0 / 64] == (1ull << GSO_N) - 1);
	srdma_net_ep_stats(b, &sb);
	assert_int_equal(drops_sum(&sb), drops_sum(&sb0));
	for (i = 0; i < GSO_N; i++)
		assert_memory_equal(buf[i], copy[i], len[i]);
	srdma_net_ep_stats(a, &sa);
	assert_int_equal(sa.tx_dgrams - sa0.tx_dgrams, GSO_N);
	assert_int_equal(sa.tx_errors, sa0.tx_errors);
	return sa.tx_gso_segs - sa0.tx_gso_segs;
}

static void test_gso(void **state)
{
	struct srdma_net_ep_stats s;
	struct srdma_context *a, *b, *c;
	struct srdma_net_qp nq;
	int v6;

	(void)state;
	if (!have_netns)
		skip();
	test_lo_ctx(&a);
	test_lo_ctx(&b);
	test_lo_qp(b, &nq, 9);
	srdma_net_input_hook = gso_hook;
	/* Runs 0-20 (21 segments), 21-22, 24-47 (24): 47 segments in GSO
	 * sends, IPv4 ones with patched ICRCs (the receiver in strict mode
	 * too: unit.test_wire), IPv6 ones as they are. */
	for (v6 = 0; v6 < 2; v6++)
		assert_int_equal(gso_batch(a, b, &nq, v6, 0), 47);
	/* UDP GRO at b: the GSO sends arrived whole over the loopback and
	 * were split into their packets (each judged above). */
	srdma_net_ep_stats(b, &s);
	assert_true(s.rx_gro_segs > 0);
	/* The kernel refuses GSO: the batch goes one datagram each, and
	 * the endpoint sends no GSO again. */
	atomic_store(&srdma_net_gso_refuse, EIO);
	assert_int_equal(gso_batch(a, b, &nq, false, 64), 0);
	atomic_store(&srdma_net_gso_refuse, 0);
	assert_int_equal(gso_batch(a, b, &nq, false, 0), 0);
	/* SRDMA_NET_GSO=0: never. */
	setenv("SRDMA_NET_GSO", "0", 1);
	test_lo_ctx(&c);
	unsetenv("SRDMA_NET_GSO");
	assert_int_equal(gso_batch(c, b, &nq, false, 0), 0);
	srdma_net_input_hook = NULL;
	srdma_net_qp_unregister(&nq);
	srdma_net_ctx_close(a);
	srdma_net_ctx_close(b);
	srdma_net_ctx_close(c);
	assert_int_equal(srdma_context_close(a), 0);
	assert_int_equal(srdma_context_close(b), 0);
	assert_int_equal(srdma_context_close(c), 0);
}

/* ---- timers -------------------------------------------------------------- */

static _Atomic int timer_calls;
static _Atomic uint64_t timer_late_ns;	/* worst lateness seen */

static _Atomic uint64_t timer_gap_ns;

/* Fires 5 times, timer_gap_ns apart, then disarms. */
static uint64_t timer_hook(struct srdma_net_qp *nq, uint64_t now)
{
	uint64_t due = atomic_load(&nq->deadline_ns), next;

	if (now - due > timer_late_ns)
		timer_late_ns = now - due;
	/* A gap of 0: due again at once (the thread must not sleep). */
	next = ++timer_calls < 5 ? now + timer_gap_ns : 0;
	atomic_store(&nq->deadline_ns, next);
	return next;
}

static void test_timers(void **state)
{
	struct srdma_net_ep_stats s;
	struct srdma_context *ctx;
	struct srdma_net_qp nq;
	int round, i;

	(void)state;
	if (!have_netns)
		skip();
	test_lo_ctx(&ctx);
	srdma_net_timer_hook = timer_hook;
	test_lo_qp(ctx, &nq, 9);
	/* Round 0: armed in the future, re-armed 20 ms on; round 1: already
	 * due when armed, and due again at once each time. */
	for (round = 0; round < 2; round++) {
		timer_gap_ns = round ? 0 : 20000000u;
		timer_calls = 0;
		timer_late_ns = 0;
		atomic_store(&nq.deadline_ns, srdma_net_now_ns() +
			     (round ? 0 : 30000000u) - (round ? 1000 : 0));
		srdma_net_kick(ctx, atomic_load(&nq.deadline_ns));
		for (i = 0; i < 300 && timer_calls < 5; i++)
			sleep_ms(10);
		assert_int_equal(timer_calls, 5);
		/* Not a tick too late (a loaded machine: generous), and
		 * no spinning in between. */
		print_message("timers: round %d, worst lateness %llu us\n",
			      round,
			      (unsigned long long)timer_late_ns / 1000);
		assert_true(timer_late_ns < 500000000u);
	}
	srdma_net_ep_stats(ctx, &s);
	print_message("timers: %llu wake-ups for 10 expiries\n",
		      (unsigned long long)s.wakeups);
	assert_true(s.wakeups < 100);
	sleep_ms(100);
	assert_int_equal(timer_calls, 5);	/* disarmed: no more */
	srdma_net_qp_unregister(&nq);
	srdma_net_timer_hook = NULL;
	srdma_net_ctx_close(ctx);
	assert_int_equal(srdma_context_close(ctx), 0);
}

/* ---- several processes ------------------------------------------------ */

struct member {
	pid_t pid;
	int cmd, rep;			/* pipes: to it, from it */
	uint32_t lid;
	bool alive;
	uint64_t expect;
	uint64_t fwd_seen;		/* fwd_in at the previous round */
};

struct report {
	uint64_t rx_local, rx_dgrams, fwd_in, fwd_out, drops;
};

/* The member process: a context with an endpoint, answering commands. */
static void member_main(int cmd, int rep)
{
	struct srdma_context *ctx;
	struct srdma_net_ep_stats s;
	struct report r;
	uint32_t lid;
	char c;

	if (srdma_context_open(srdma_device_get(), &ctx) ||
	    !srdma_net_ctx_get(ctx))
		_exit(2);
	lid = ctx->host.lid;
	if (write(rep, &lid, sizeof(lid)) != sizeof(lid))
		_exit(3);
	while (read(cmd, &c, 1) == 1) {
		if (c == 'r') {
			srdma_net_ep_stats(ctx, &s);
			r.rx_local = s.rx_local;
			r.rx_dgrams = s.rx_dgrams;
			r.fwd_in = s.fwd_in;
			r.fwd_out = s.fwd_out;
			r.drops = drops_sum(&s);
			if (write(rep, &r, sizeof(r)) != sizeof(r))
				_exit(3);
		} else if (c == 'k') {
			_exit(0);	/* dies without closing anything */
		} else {
			break;
		}
	}
	srdma_net_ctx_close(ctx);
	_exit(srdma_context_close(ctx) ? 4 : 0);
}

static void member_start(struct member *m)
{
	int c[2], r[2];

	assert_int_equal(pipe(c), 0);
	assert_int_equal(pipe(r), 0);
	m->pid = fork();
	assert_true(m->pid >= 0);
	if (!m->pid) {
		close(c[1]);
		close(r[0]);
		member_main(c[0], r[1]);
	}
	close(c[0]);
	close(r[1]);
	m->cmd = c[1];
	m->rep = r[0];
	assert_int_equal(read(m->rep, &m->lid, sizeof(m->lid)),
			 sizeof(m->lid));
	m->alive = true;
	m->expect = 0;
	m->fwd_seen = 0;
}

static void member_report(struct member *m, struct report *r)
{
	assert_int_equal(write(m->cmd, "r", 1), 1);
	assert_int_equal(read(m->rep, r, sizeof(*r)), sizeof(*r));
}

static void member_end(struct member *m, char how)
{
	int st;

	assert_int_equal(write(m->cmd, &how, 1), 1);
	assert_int_equal(waitpid(m->pid, &st, 0), m->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(m->cmd);
	close(m->rep);
	m->alive = false;
}

/* Send @per datagrams to each live member, then check each got them all.
 * Return: how many of them were forwarded (not steered). */
static uint64_t round_trip(struct member *m, int n, int per, const char *what)
{
	int fd4 = socket(AF_INET, SOCK_DGRAM, 0);
	int fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
	uint64_t fwd = 0, total = 0;
	struct report r;
	uint8_t b[64];
	int i, k, t;

	memset(b, 0, sizeof(b));
	for (k = 0; k < per; k++)
		for (i = 0; i < n; i++) {
			if (!m[i].alive)
				continue;
			bth_dqpn(b, m[i].lid << SRDMA_QPN_SHIFT | (k + 2));
			send_to_4791(fd4, fd6, k % 2, b, sizeof(b));
			m[i].expect++;
			if (k % 16 == 15) {
				/* New flows: the kernel's fallback hashes
				 * them to various members. */
				sleep_ms(1);
				close(fd4);
				close(fd6);
				fd4 = socket(AF_INET, SOCK_DGRAM, 0);
				fd6 = socket(AF_INET6, SOCK_DGRAM, 0);
			}
		}
	for (i = 0; i < n; i++) {
		if (!m[i].alive)
			continue;
		for (t = 0; t < 300; t++) {
			member_report(&m[i], &r);
			if (r.rx_local >= m[i].expect)
				break;
			sleep_ms(10);
		}
		assert_int_equal(r.rx_local, m[i].expect);
		fwd += r.fwd_in - m[i].fwd_seen;
		m[i].fwd_seen = r.fwd_in;
		total += per;
	}
	print_message("%s: %llu datagrams, %llu of them forwarded\n", what,
		      (unsigned long long)total, (unsigned long long)fwd);
	close(fd4);
	close(fd6);
	return fwd;
}

static void test_several_processes(void **state)
{
	struct member m[5];
	uint64_t fwd;
	int i;

	(void)state;
	if (!have_netns)
		skip();
	memset(m, 0, sizeof(m));
	for (i = 0; i < 4; i++)
		member_start(&m[i]);
	/* Steering is exact while the table mirrors the kernel: nothing
	 * needs forwarding. */
	assert_int_equal(round_trip(m, 4, 200, "4 members"), 0);
	/* One leaves cleanly, one dies: the rest still get theirs. */
	member_end(&m[1], 'q');
	assert_int_equal(round_trip(m, 4, 200, "after a clean leave"), 0);
	member_end(&m[0], 'k');
	fwd = round_trip(m, 4, 200, "after a death");
	/* Misdirected datagrams (if the dead member's index was not the
	 * last, many flows hash to the wrong survivor) made the survivor
	 * that got them repair the steering. */
	if (fwd)
		assert_int_equal(round_trip(m, 4, 200, "after the repair"), 0);
	member_start(&m[4]);
	assert_int_equal(round_trip(m, 5, 200, "after a join"), 0);
	for (i = 0; i < 5; i++)
		if (m[i].alive)
			member_end(&m[i], 'q');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_close),
		cmocka_unit_test(test_flood),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_gso),
		cmocka_unit_test(test_timers),
		cmocka_unit_test(test_several_processes),
	};

	signal(SIGPIPE, SIG_IGN);
	have_netns = test_private_netns("test_net_endpoint");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
