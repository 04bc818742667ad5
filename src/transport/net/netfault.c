// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * netfault.c - SRDMA_NET_FAULT: seeded loss, duplication, reordering and
 * delay of datagrams (netfault.h has the spec and the guarantees).
 *
 * Each datagram's fate is decided under the lock from three draws of its
 * direction's splitmix64 stream: lost; else one or two copies; then
 * either held back for reordering (released right after the next datagram
 * of its direction goes out, or after delay + 1 ms), held for the delay,
 * or passed on at once. Held copies sit in one FIFO list with their due
 * time; what is to be released is unlinked under the lock and handed to
 * the callbacks after it is dropped.
 *
 * Built for tests, not speed: at most HOLD_MAX datagrams are held (beyond
 * that they pass at once, unharmed), and the list is scanned whole.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "transport/net/netfault.h"
#include "util/log.h"

#define HOLD_MAX       4096
#define REORDER_MAX_NS 1000000ull   /* a reordered datagram waits <= 1 ms */
#define ONE	       (1ull << 53) /* probability 1 on the draw's scale */

enum held_kind { HELD_DELAY, HELD_REORDER };

struct held {
	struct held *next;  /* f->lock */
	struct held *rnext; /* release list, private to one caller */
	enum srdma_netfault_dir dir;
	enum held_kind kind;
	bool taken;
	uint64_t due;
	struct srdma_wire_path path;
	size_t len;
	uint8_t data[];
};

struct srdma_netfault {
	/* Immutable after srdma_netfault_new(). */
	uint64_t loss[2], dup[2], reorder[2]; /* thresholds, out of ONE */
	uint64_t delay_ns[2];
	pthread_mutex_t lock;
	/* The rest under lock. */
	uint64_t rng[2];
	struct held *head;
	unsigned int nheld;
	struct srdma_netfault_stats st;
};

/* splitmix64's output function: a bijective 64-bit mixer. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t draw(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix64(*s) >> 11; /* 53 bits: compare with a threshold */
}

/* ---- the spec -------------------------------------------------------- */

static int parse_prob(const char *v, uint64_t *thr)
{
	char *end;
	double p = strtod(v, &end);

	if (end == v)
		return -EINVAL;
	if (*end == '%') {
		p /= 100;
		end++;
	}
	if (*end || !(p >= 0 && p <= 1))
		return -EINVAL;
	*thr = (uint64_t)(p * (double)ONE);
	return 0;
}

static int parse_time(const char *v, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double mult;
	} units[] = {
		{"", 1e3}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	char *end;
	double t = strtod(v, &end);
	size_t i;

	if (end == v || !(t >= 0 && t <= 3600))
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			*ns = (uint64_t)(t * units[i].mult);
			return 0;
		}
	return -EINVAL;
}

/* One KEY=VALUE item into @f. */
static int parse_item(struct srdma_netfault *f, char *item)
{
	int lo = 0, hi = 1, d, ret = 0;
	char *key = item, *val = strchr(item, '=');
	uint64_t v = 0;

	if (!val)
		return -EINVAL;
	*val++ = '\0';
	if (!strncasecmp(key, "tx.", 3)) {
		hi = 0;
		key += 3;
	} else if (!strncasecmp(key, "rx.", 3)) {
		lo = 1;
		key += 3;
	}
	if (!strcasecmp(key, "delay"))
		ret = parse_time(val, &v);
	else if (!strcasecmp(key, "loss") || !strcasecmp(key, "dup") ||
		 !strcasecmp(key, "reorder"))
		ret = parse_prob(val, &v);
	else
		ret = -EINVAL;
	if (ret)
		return ret;
	for (d = lo; d <= hi; d++) {
		if (!strcasecmp(key, "delay"))
			f->delay_ns[d] = v;
		else if (!strcasecmp(key, "loss"))
			f->loss[d] = v;
		else if (!strcasecmp(key, "dup"))
			f->dup[d] = v;
		else
			f->reorder[d] = v;
	}
	return 0;
}

/* Remove blanks from @s in place (items may be written "loss = 1%"). */
static void squeeze(char *s)
{
	char *o = s;

	for (; *s; s++)
		if (*s != ' ' && *s != '\t')
			*o++ = *s;
	*o = '\0';
}

struct srdma_netfault *srdma_netfault_new(const char *spec, uint64_t seed,
					  uint64_t salt)
{
	struct srdma_netfault *f;
	char *copy, *item, *save = NULL;
	int ret = 0, d;

	if (!spec || !spec[strspn(spec, " \t,")]) {
		errno = 0;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	copy = strdup(spec);
	if (!f || !copy) {
		ret = -ENOMEM;
		goto free;
	}
	squeeze(copy);
	for (item = strtok_r(copy, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		ret = parse_item(f, item);
		if (ret) {
			srdma_err("SRDMA_NET_FAULT: bad item '%s' in '%s' "
				  "(want loss|dup|reorder=N%%|0..1, delay=T"
				  "[ns|us|ms|s], optionally tx. or rx.)",
				  item, spec);
			goto free;
		}
	}
	for (d = 0; d < 2; d++)
		f->rng[d] = mix64(seed ^ mix64(salt ^ mix64((uint64_t)d + 1)));
	ret = pthread_mutex_init(&f->lock, NULL);
	if (ret) {
		ret = -ret;
		goto free;
	}
	free(copy);
	srdma_info("SRDMA_NET_FAULT=%s seed %llu salt %llu", spec,
		   (unsigned long long)seed, (unsigned long long)salt);
	return f;

free:
	free(copy);
	free(f);
	errno = -ret;
	return NULL;
}

struct srdma_netfault *srdma_netfault_from_env(uint64_t salt)
{
	const char *spec = getenv("SRDMA_NET_FAULT");
	const char *s = getenv("SRDMA_NET_FAULT_SEED");
	uint64_t seed = 1;

	if (s && *s) {
		char *end;

		errno = 0;
		seed = strtoull(s, &end, 0);
		if (errno || *end) {
			srdma_err("SRDMA_NET_FAULT_SEED: not a number: '%s'",
				  s);
			errno = EINVAL;
			return NULL;
		}
	}
	return srdma_netfault_new(spec, seed, salt);
}

/* ---- holding and releasing ------------------------------------------- */

/* Keep a copy of the datagram; false if we cannot (it then passes). */
static bool hold(struct srdma_netfault *f, enum srdma_netfault_dir dir,
		 enum held_kind kind, uint64_t due,
		 const struct srdma_wire_path *p, const struct iovec *iov,
		 int n)
{
	struct held *h, **tail;
	size_t len = 0, off = 0;
	int i;

	if (f->nheld >= HOLD_MAX)
		return false;
	for (i = 0; i < n; i++)
		len += iov[i].iov_len;
	h = malloc(sizeof(*h) + len);
	if (!h)
		return false;
	h->next = NULL;
	h->rnext = NULL;
	h->dir = dir;
	h->kind = kind;
	h->taken = false;
	h->due = due;
	h->path = *p;
	h->len = len;
	for (i = 0; i < n; i++) {
		memcpy(h->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	for (tail = &f->head; *tail; tail = &(*tail)->next)
		;
	*tail = h;
	f->nheld++;
	f->st.held[dir]++;
	return true;
}

/*
 * Mark what is to be released at @now in the directions of @dirs (bit per
 * direction), plus, when @passed has bit d, every datagram of direction d
 * held for reordering (a datagram of d has just gone past them). A
 * released non-reordered datagram likewise lets the reordered ones held
 * before it go, right after it. Unlink the marked, return them in order.
 */
static struct held *take(struct srdma_netfault *f, uint64_t now,
			 unsigned int dirs, unsigned int passed)
{
	struct held *e, *r, **pp, *first = NULL, **last = &first;

	for (e = f->head; e; e = e->next) {
		if (e->taken || !(dirs & 1u << e->dir) || e->due > now)
			continue;
		e->taken = true;
		*last = e;
		last = &e->rnext;
		if (e->kind == HELD_REORDER)
			continue;
		for (r = f->head; r != e; r = r->next)
			if (!r->taken && r->kind == HELD_REORDER &&
			    r->dir == e->dir) {
				r->taken = true;
				*last = r;
				last = &r->rnext;
			}
	}
	for (e = f->head; e; e = e->next)
		if (!e->taken && e->kind == HELD_REORDER &&
		    passed & 1u << e->dir) {
			e->taken = true;
			*last = e;
			last = &e->rnext;
		}
	*last = NULL;
	for (pp = &f->head; *pp;) {
		e = *pp;
		if (e->taken) {
			*pp = e->next;
			f->nheld--;
			f->st.held[e->dir]--;
		} else {
			pp = &e->next;
		}
	}
	return first;
}

/* Hand the release list to the callbacks (no lock held) and free it. */
static int release(struct held *e, srdma_netfault_emit_fn emit,
		   srdma_netfault_deliver_fn deliver, void *arg)
{
	struct held *next;
	int ret = 0, r;

	for (; e; e = next) {
		next = e->rnext;
		if (e->dir == SRDMA_NETFAULT_TX) {
			struct iovec iov = {.iov_base = e->data,
					    .iov_len = e->len};

			r = emit ? emit(arg, &e->path, &iov, 1) : 0;
			if (r && !ret)
				ret = r;
		} else if (deliver) {
			deliver(arg, &e->path, e->data, e->len);
		}
		free(e);
	}
	return ret;
}

/* Say which datagram was lost on purpose (SRDMA_LOG=debug): the n-th of
 * its direction, and its BTH's opcode and PSN when it has one, so that a
 * run's retransmissions can be matched with the losses that caused them. */
static void lost_dbg(enum srdma_netfault_dir d, uint64_t nth,
		     const struct iovec *iov, int n)
{
	const uint8_t *b = n >= 1 ? iov[0].iov_base : NULL;

	if (b && iov[0].iov_len >= 12)
		srdma_dbg("%s datagram %llu lost (opcode %#x, PSN %#x)",
			  d == SRDMA_NETFAULT_TX ? "tx" : "rx",
			  (unsigned long long)nth, b[0],
			  (unsigned int)b[9] << 16 | (unsigned int)b[10] << 8 |
				  b[11]);
	else
		srdma_dbg("%s datagram %llu lost",
			  d == SRDMA_NETFAULT_TX ? "tx" : "rx",
			  (unsigned long long)nth);
}

/*
 * Decide the fate of one datagram of direction @d (lock held): return the
 * number of copies to pass on now (0, 1, 2), holding them instead where
 * the draws say so. @before: held ones whose time has come, to release
 * before it; @after: reordered ones it lets go, to release after it.
 */
static int decide(struct srdma_netfault *f, enum srdma_netfault_dir d,
		  const struct srdma_wire_path *p, const struct iovec *iov,
		  int n, uint64_t now, struct held **before,
		  struct held **after)
{
	uint64_t r_loss = draw(&f->rng[d]), r_dup = draw(&f->rng[d]);
	uint64_t r_reorder = draw(&f->rng[d]);
	enum held_kind kind = HELD_DELAY;
	uint64_t due = now + f->delay_ns[d];
	int copies, i, held = 0;

	f->st.seen[d]++;
	*before = take(f, now, 1u << d, 0);
	*after = NULL;
	if (r_loss < f->loss[d]) {
		f->st.lost[d]++;
		lost_dbg(d, f->st.seen[d], iov, n);
		return 0;
	}
	copies = r_dup < f->dup[d] ? 2 : 1;
	if (copies == 2)
		f->st.duped[d]++;
	if (r_reorder < f->reorder[d]) {
		kind = HELD_REORDER;
		due += REORDER_MAX_NS;
	} else if (!f->delay_ns[d]) {
		*after = take(f, now, 0, 1u << d);
		return copies;
	}
	for (i = 0; i < copies; i++)
		held += hold(f, d, kind, due, p, iov, n);
	if (held && kind == HELD_REORDER)
		f->st.reordered[d]++;
	else if (held)
		f->st.delayed[d]++;
	return copies - held;
}

int srdma_netfault_tx(struct srdma_netfault *f, const struct srdma_wire_path *p,
		      const struct iovec *iov, int n, uint64_t now,
		      srdma_netfault_emit_fn emit, void *arg)
{
	struct held *before, *after;
	int copies, ret, r, i;

	if (!f)
		return emit(arg, p, iov, n);
	pthread_mutex_lock(&f->lock);
	copies = decide(f, SRDMA_NETFAULT_TX, p, iov, n, now, &before, &after);
	pthread_mutex_unlock(&f->lock);
	release(before, emit, NULL, arg);
	ret = 0;
	for (i = 0; i < copies; i++) {
		r = emit(arg, p, iov, n);
		if (r && !ret)
			ret = r;
	}
	release(after, emit, NULL, arg);
	return ret;
}

void srdma_netfault_rx(struct srdma_netfault *f,
		       const struct srdma_wire_path *p, const uint8_t *buf,
		       size_t len, uint64_t now,
		       srdma_netfault_deliver_fn deliver, void *arg)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	struct held *before, *after;
	int copies, i;

	if (!f) {
		deliver(arg, p, buf, len);
		return;
	}
	pthread_mutex_lock(&f->lock);
	copies = decide(f, SRDMA_NETFAULT_RX, p, &iov, 1, now, &before, &after);
	pthread_mutex_unlock(&f->lock);
	release(before, NULL, deliver, arg);
	for (i = 0; i < copies; i++)
		deliver(arg, p, buf, len);
	release(after, NULL, deliver, arg);
}

uint64_t srdma_netfault_tick(struct srdma_netfault *f, uint64_t now,
			     srdma_netfault_emit_fn emit_tx,
			     srdma_netfault_deliver_fn deliver_rx, void *arg)
{
	unsigned int dirs = (emit_tx ? 1u << SRDMA_NETFAULT_TX : 0) |
			    (deliver_rx ? 1u << SRDMA_NETFAULT_RX : 0);
	struct held *rel, *e;
	uint64_t next = 0;

	if (!f)
		return 0;
	pthread_mutex_lock(&f->lock);
	rel = take(f, now, dirs, 0);
	for (e = f->head; e; e = e->next)
		if (!next || e->due < next)
			next = e->due;
	pthread_mutex_unlock(&f->lock);
	release(rel, emit_tx, deliver_rx, arg);
	return next;
}

void srdma_netfault_stats(struct srdma_netfault *f,
			  struct srdma_netfault_stats *st)
{
	if (!f) {
		memset(st, 0, sizeof(*st));
		return;
	}
	pthread_mutex_lock(&f->lock);
	*st = f->st;
	pthread_mutex_unlock(&f->lock);
}

void srdma_netfault_free(struct srdma_netfault *f)
{
	struct held *e, *next;

	if (!f)
		return;
	for (e = f->head; e; e = next) {
		next = e->next;
		free(e);
	}
	pthread_mutex_destroy(&f->lock);
	free(f);
}
