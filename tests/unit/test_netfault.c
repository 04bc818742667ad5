// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_netfault.c - SRDMA_NET_FAULT (transport/net/netfault.c): the spec
 * parser accepts what netfault.h documents and refuses the rest; the same
 * seed and salt give the same fate to every datagram, another salt
 * another; one rate does not move another's choices; rates come out as
 * asked over 100000 datagrams; reordering lets a datagram go right after
 * the next one (or after 1 ms), delay keeps order and releases on time;
 * directions are independent; held datagrams are copies; a callback may
 * send through the injector again.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "transport/net/netfault.h"

#define MAXLOG 300000

/* What the callbacks saw: datagram ids (first 4 bytes) in order. */
struct rec {
	uint32_t ids[MAXLOG];
	int n;
	struct srdma_netfault *f; /* for the re-entrant test */
	int resend;
};

static uint32_t id_of(const uint8_t *b)
{
	uint32_t id;

	memcpy(&id, b, sizeof(id));
	return id;
}

static int emit(void *arg, const struct srdma_wire_path *p,
		const struct iovec *iov, int n)
{
	struct rec *r = arg;

	(void)p;
	assert_true(n >= 1 && iov[0].iov_len >= 4);
	if (r->n < MAXLOG)
		r->ids[r->n++] = id_of(iov[0].iov_base);
	return 0;
}

static void deliver(void *arg, const struct srdma_wire_path *p,
		    const uint8_t *buf, size_t len)
{
	struct rec *r = arg;

	(void)p;
	assert_true(len >= 4);
	if (r->n < MAXLOG)
		r->ids[r->n++] = id_of(buf);
	if (r->resend) {
		/* Answer through the same injector: must not deadlock. */
		struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

		r->resend--;
		srdma_netfault_tx(r->f, p, &iov, 1, 0, emit, r);
	}
}

static struct srdma_wire_path path0;

/* Send ids 0..count-1, @step ns apart, ticking as the endpoint would. */
static void run_tx(struct srdma_netfault *f, struct rec *r, uint32_t count,
		   uint64_t step)
{
	uint64_t now = 1000000;
	uint32_t i;

	for (i = 0; i < count; i++, now += step) {
		uint8_t b[16] = {0};
		struct iovec iov[2] = {{b, 4}, {b + 4, 12}};

		memcpy(b, &i, 4);
		srdma_netfault_tick(f, now, emit, deliver, r);
		assert_int_equal(
			srdma_netfault_tx(f, &path0, iov, 2, now, emit, r), 0);
	}
	srdma_netfault_tick(f, now + 10000000000ull, emit, deliver, r);
}

static struct rec *rec_new(void)
{
	struct rec *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	return r;
}

static void test_spec(void **state)
{
	static const char *const good[] = {
		"loss=1%",
		"loss=1%,dup=0.5%,reorder=1%,delay=200us",
		"tx.loss=10%,rx.dup=1%",
		"loss=0.25",
		"loss = 1 %, delay=3ms",
		"delay=1s,rx.delay=0",
		"delay=750",
		"delay=10ns,REORDER=100%,dup=0",
		"loss=1%,",
	};
	static const char *const bad[] = {
		"loss",	      "loss=",	       "loss=200%", "loss=-1%",
		"loss=1.5",   "foo=1%",	       "delay=5y",  "tx.loss=abc",
		"delay=-3us", "xx.loss=1%",    "loss=1%%",  "delay=1us,dup",
		"=1%",	      "loss=1%;dup=1",
	};
	struct srdma_netfault *f;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		f = srdma_netfault_new(good[i], 1, 0);
		if (!f)
			fail_msg("refused: %s", good[i]);
		srdma_netfault_free(f);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		f = srdma_netfault_new(bad[i], 1, 0);
		if (f)
			fail_msg("accepted: %s", bad[i]);
		assert_int_equal(errno, EINVAL);
	}
	/* No spec: no injector, and that is no error. */
	errno = 5;
	assert_null(srdma_netfault_new(NULL, 1, 0));
	assert_int_equal(errno, 0);
	assert_null(srdma_netfault_new("", 1, 0));
	assert_null(srdma_netfault_new(" , ", 1, 0));
	assert_int_equal(errno, 0);

	/* From the environment, seed included. */
	setenv("SRDMA_NET_FAULT", "loss=5%", 1);
	setenv("SRDMA_NET_FAULT_SEED", "0x10", 1);
	f = srdma_netfault_from_env(3);
	assert_non_null(f);
	srdma_netfault_free(f);
	setenv("SRDMA_NET_FAULT_SEED", "12abc", 1);
	assert_null(srdma_netfault_from_env(3));
	assert_int_equal(errno, EINVAL);
	unsetenv("SRDMA_NET_FAULT_SEED");
	unsetenv("SRDMA_NET_FAULT");
	assert_null(srdma_netfault_from_env(3));
	assert_int_equal(errno, 0);
}

static void test_null_and_zero_rates_pass_everything(void **state)
{
	struct rec *r = rec_new();
	struct srdma_netfault *f;
	struct srdma_netfault_stats st;
	int i;

	(void)state;
	run_tx(NULL, r, 1000, 1000);
	assert_int_equal(r->n, 1000);
	for (i = 0; i < 1000; i++)
		assert_int_equal(r->ids[i], i);
	srdma_netfault_stats(NULL, &st);
	assert_int_equal(st.seen[0], 0);

	r->n = 0;
	f = srdma_netfault_new("loss=0%,dup=0,reorder=0%", 7, 7);
	assert_non_null(f);
	run_tx(f, r, 1000, 1000);
	assert_int_equal(r->n, 1000);
	for (i = 0; i < 1000; i++)
		assert_int_equal(r->ids[i], i);
	srdma_netfault_stats(f, &st);
	assert_int_equal(st.seen[0], 1000);
	assert_int_equal(st.lost[0] + st.duped[0] + st.reordered[0], 0);
	srdma_netfault_free(f);
	free(r);
}

static void test_deterministic(void **state)
{
	const char *spec = "loss=5%,dup=5%,reorder=5%";
	struct rec *a = rec_new(), *b = rec_new(), *c = rec_new();
	struct srdma_netfault *f;

	(void)state;
	f = srdma_netfault_new(spec, 42, 9);
	run_tx(f, a, 20000, 1000);
	srdma_netfault_free(f);
	f = srdma_netfault_new(spec, 42, 9);
	run_tx(f, b, 20000, 1000);
	srdma_netfault_free(f);
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->ids, b->ids, sizeof(a->ids[0]) * (size_t)a->n);

	/* Another salt (another context), another seed: other fates. */
	f = srdma_netfault_new(spec, 42, 10);
	run_tx(f, c, 20000, 1000);
	srdma_netfault_free(f);
	assert_true(c->n != a->n ||
		    memcmp(a->ids, c->ids, sizeof(a->ids[0]) * (size_t)a->n));
	c->n = 0;
	f = srdma_netfault_new(spec, 43, 9);
	run_tx(f, c, 20000, 1000);
	srdma_netfault_free(f);
	assert_true(c->n != a->n ||
		    memcmp(a->ids, c->ids, sizeof(a->ids[0]) * (size_t)a->n));
	free(a);
	free(b);
	free(c);
}

/* Which of 0..count-1 never came out. */
static void lost_set(const struct rec *r, uint8_t *seen, uint32_t count)
{
	int i;

	memset(seen, 0, count);
	for (i = 0; i < r->n; i++)
		seen[r->ids[i]] = 1;
}

static void test_one_rate_does_not_move_another(void **state)
{
	static uint8_t s1[20000], s2[20000];
	struct rec *a = rec_new(), *b = rec_new();
	struct srdma_netfault *f;

	(void)state;
	f = srdma_netfault_new("loss=10%", 5, 5);
	run_tx(f, a, 20000, 1000);
	srdma_netfault_free(f);
	f = srdma_netfault_new("loss=10%,dup=20%,reorder=5%", 5, 5);
	run_tx(f, b, 20000, 1000);
	srdma_netfault_free(f);
	lost_set(a, s1, 20000);
	lost_set(b, s2, 20000);
	assert_memory_equal(s1, s2, sizeof(s1));
	free(a);
	free(b);
}

static void test_rates(void **state)
{
	const uint32_t n = 100000;
	struct rec *r = rec_new();
	struct srdma_netfault *f;
	struct srdma_netfault_stats st;

	(void)state;
	f = srdma_netfault_new("loss=10%,dup=5%,reorder=2%", 1, 0);
	run_tx(f, r, n, 2000);
	srdma_netfault_stats(f, &st);
	assert_int_equal(st.seen[0], n);
	assert_in_range(st.lost[0], n / 10 - 600, n / 10 + 600);
	/* dup and reorder apply to what survived the loss. */
	assert_in_range(st.duped[0], n * 9 / 200 - 450, n * 9 / 200 + 450);
	assert_in_range(st.reordered[0], n * 9 / 500 - 300, n * 9 / 500 + 300);
	assert_int_equal(st.held[0], 0);
	assert_int_equal(r->n, n - st.lost[0] + st.duped[0]);
	assert_int_equal(st.seen[1], 0);
	srdma_netfault_free(f);
	free(r);
}

static void test_reorder_goes_after_the_next(void **state)
{
	struct rec *r = rec_new();
	struct srdma_netfault *f;
	struct srdma_netfault_stats st;
	static uint8_t once[10000];
	uint32_t max = 0;
	int i, swaps = 0;

	(void)state;
	/* 100 µs apart: the next datagram always comes within the 1 ms. */
	f = srdma_netfault_new("reorder=10%", 3, 1);
	run_tx(f, r, 10000, 100000);
	srdma_netfault_stats(f, &st);
	assert_int_equal(r->n, 10000);
	/* Each reordered datagram comes out right after the one (or run of
	 * reordered ones) that followed it: never more than a few places
	 * late, never early; exactly the reordered ones come out behind a
	 * later one, and each comes out once. */
	for (i = 0; i < r->n; i++) {
		if (r->ids[i] != (uint32_t)i) {
			assert_true((int)r->ids[i] > i - 10);
			assert_true((int)r->ids[i] < i + 10);
		}
		if (i && r->ids[i] < max)
			swaps++;
		if (!i || r->ids[i] > max)
			max = r->ids[i];
		assert_false(once[r->ids[i]]);
		once[r->ids[i]] = 1;
	}
	assert_true(swaps > 900);
	assert_int_equal(swaps, st.reordered[0]);
	srdma_netfault_free(f);

	/* Nothing follows: released by the tick after 1 ms, not before. */
	r->n = 0;
	f = srdma_netfault_new("reorder=100%", 3, 1);
	{
		uint8_t b[4] = {7, 0, 0, 0};
		struct iovec iov = {b, 4};

		srdma_netfault_tx(f, &path0, &iov, 1, 5000, emit, r);
		assert_int_equal(r->n, 0);
		assert_int_equal(
			srdma_netfault_tick(f, 5000 + 999999, emit, deliver, r),
			5000 + 1000000);
		assert_int_equal(r->n, 0);
		assert_int_equal(srdma_netfault_tick(f, 5000 + 1000000, emit,
						     deliver, r),
				 0);
		assert_int_equal(r->n, 1);
		assert_int_equal(r->ids[0], 7);
	}
	srdma_netfault_free(f);
	free(r);
}

static void test_delay_keeps_order(void **state)
{
	struct rec *r = rec_new();
	struct srdma_netfault *f;
	uint8_t b[4];
	struct iovec iov = {b, 4};
	uint32_t i;

	(void)state;
	f = srdma_netfault_new("delay=200us", 1, 1);
	for (i = 0; i < 5; i++) {
		memcpy(b, &i, 4);
		srdma_netfault_tx(f, &path0, &iov, 1, 1000 + i * 40000, emit,
				  r);
	}
	assert_int_equal(r->n, 0);
	assert_int_equal(srdma_netfault_tick(f, 200000, emit, deliver, r),
			 201000);
	assert_int_equal(r->n, 0);
	assert_int_equal(srdma_netfault_tick(f, 251000, emit, deliver, r),
			 281000);
	assert_int_equal(r->n, 2);
	assert_int_equal(srdma_netfault_tick(f, 10000000, emit, deliver, r), 0);
	assert_int_equal(r->n, 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(r->ids[i], i);
	srdma_netfault_free(f);

	/* A later datagram lets due ones go first, without a tick. */
	r->n = 0;
	f = srdma_netfault_new("delay=1ms", 1, 1);
	i = 1;
	memcpy(b, &i, 4);
	srdma_netfault_tx(f, &path0, &iov, 1, 0, emit, r);
	i = 2;
	memcpy(b, &i, 4);
	srdma_netfault_tx(f, &path0, &iov, 1, 2000000, emit, r);
	assert_int_equal(r->n, 1);
	assert_int_equal(r->ids[0], 1);
	/* Freed with one still held: dropped, no leak. */
	srdma_netfault_free(f);
	free(r);
}

static void test_directions(void **state)
{
	struct rec *r = rec_new();
	struct srdma_netfault *f;
	struct srdma_netfault_stats st;
	uint8_t b[4] = {9, 0, 0, 0};
	struct iovec iov = {b, 4};
	int i;

	(void)state;
	f = srdma_netfault_new("tx.loss=100%,rx.dup=100%", 1, 1);
	for (i = 0; i < 10; i++)
		srdma_netfault_tx(f, &path0, &iov, 1, 0, emit, r);
	assert_int_equal(r->n, 0);
	for (i = 0; i < 10; i++)
		srdma_netfault_rx(f, &path0, b, 4, 0, deliver, r);
	assert_int_equal(r->n, 20);
	srdma_netfault_stats(f, &st);
	assert_int_equal(st.lost[SRDMA_NETFAULT_TX], 10);
	assert_int_equal(st.duped[SRDMA_NETFAULT_RX], 10);
	assert_int_equal(st.lost[SRDMA_NETFAULT_RX], 0);
	srdma_netfault_free(f);
	free(r);
}

static void test_held_are_copies_and_reentry(void **state)
{
	struct rec *r = rec_new();
	struct srdma_netfault *f;
	uint8_t b[8] = {1, 0, 0, 0, 'x', 'y', 'z', 'w'};

	(void)state;
	f = srdma_netfault_new("rx.delay=10us,dup=100%", 1, 1);
	r->f = f;
	r->resend = 2;
	srdma_netfault_rx(f, &path0, b, sizeof(b), 0, deliver, r);
	memset(b, 0xee, sizeof(b)); /* the caller reuses its buffer */
	assert_int_equal(r->n, 0);
	/* Released: delivered twice; each delivery sends through the same
	 * injector (tx, dup 100%: two emits each). */
	srdma_netfault_tick(f, 10000, emit, deliver, r);
	assert_int_equal(r->n, 2 + 2 * 2);
	for (int i = 0; i < r->n; i++)
		assert_int_equal(r->ids[i], 1);
	srdma_netfault_free(f);
	free(r);
}

/* Several senders and a receiver at once, a ticker releasing what is
 * held: every datagram is accounted for (for TSan and ASan). */
struct mt {
	struct srdma_netfault *f;
	_Atomic uint64_t emitted, delivered, clock;
	_Atomic bool stop;
	int id;
};

static int mt_emit(void *arg, const struct srdma_wire_path *p,
		   const struct iovec *iov, int n)
{
	struct mt *m = arg;

	(void)p;
	(void)iov;
	(void)n;
	atomic_fetch_add(&m->emitted, 1);
	return 0;
}

static void mt_deliver(void *arg, const struct srdma_wire_path *p,
		       const uint8_t *buf, size_t len)
{
	struct mt *m = arg;

	(void)p;
	(void)buf;
	(void)len;
	atomic_fetch_add(&m->delivered, 1);
}

static void *mt_sender(void *arg)
{
	struct mt *m = arg;
	uint8_t b[64] = {0};
	struct iovec iov = {b, sizeof(b)};
	int i;

	for (i = 0; i < 20000; i++) {
		uint64_t now = atomic_fetch_add(&m->clock, 100);

		srdma_netfault_tx(m->f, &path0, &iov, 1, now, mt_emit, m);
	}
	return NULL;
}

static void *mt_receiver(void *arg)
{
	struct mt *m = arg;
	uint8_t b[64] = {0};
	int i;

	for (i = 0; i < 20000; i++) {
		uint64_t now = atomic_fetch_add(&m->clock, 100);

		srdma_netfault_rx(m->f, &path0, b, sizeof(b), now, mt_deliver,
				  m);
	}
	return NULL;
}

static void *mt_ticker(void *arg)
{
	struct mt *m = arg;

	while (!atomic_load(&m->stop))
		srdma_netfault_tick(m->f, atomic_load(&m->clock), mt_emit,
				    mt_deliver, m);
	return NULL;
}

static void test_threads(void **state)
{
	struct mt m = {0};
	struct srdma_netfault_stats st;
	pthread_t t[5];
	int i;

	(void)state;
	m.f = srdma_netfault_new("loss=5%,dup=5%,reorder=5%,delay=50us", 1, 1);
	assert_non_null(m.f);
	pthread_create(&t[0], NULL, mt_ticker, &m);
	for (i = 1; i < 4; i++)
		pthread_create(&t[i], NULL, mt_sender, &m);
	pthread_create(&t[4], NULL, mt_receiver, &m);
	for (i = 1; i < 5; i++)
		pthread_join(t[i], NULL);
	atomic_store(&m.stop, true);
	pthread_join(t[0], NULL);
	/* Whatever is still held goes now. */
	assert_int_equal(srdma_netfault_tick(m.f, UINT64_MAX / 2, mt_emit,
					     mt_deliver, &m),
			 0);
	srdma_netfault_stats(m.f, &st);
	assert_int_equal(st.seen[0], 60000);
	assert_int_equal(st.seen[1], 20000);
	assert_int_equal(st.held[0] + st.held[1], 0);
	assert_int_equal(atomic_load(&m.emitted),
			 st.seen[0] - st.lost[0] + st.duped[0]);
	assert_int_equal(atomic_load(&m.delivered),
			 st.seen[1] - st.lost[1] + st.duped[1]);
	srdma_netfault_free(m.f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_null_and_zero_rates_pass_everything),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_one_rate_does_not_move_another),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_reorder_goes_after_the_next),
		cmocka_unit_test(test_delay_keeps_order),
		cmocka_unit_test(test_directions),
		cmocka_unit_test(test_held_are_copies_and_reentry),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
