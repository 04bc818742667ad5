// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * key_table.c - allocation and lock-free checking of MR/MW keys.
 *
 * Keys are unpredictable (issue 9, ReDMArk): an adversary who has seen
 * any number of keys of a context guesses another valid one with
 * probability live keys / 2^32 per try, no better than blind. Allocation
 * (owner only, under the context lock) draws a random nonzero 24-bit index
 * from the kernel CSPRNG and maps it to a slot with SipHash-2-4 under the
 * context's 128-bit secret; if that slot is taken it draws again. The tag
 * is random too and differs from the slot's previous tag (rxe rule), so a
 * reused slot never gets back a key it had. The key check maps the index
 * the same way (one SipHash, ~10 ns) and accepts only the exact key stored
 * in the slot. Index 0 is never produced and never looked up. Rationale
 * and the alternatives weighed: docs/design/host-segment.md, "Keys".
 *
 * Readers, in any process, use a seqlock snapshot: fields are read with
 * relaxed atomics between two reads of seq, and the snapshot is retried if
 * seq was odd or moved. An access is marked in flight by incrementing the
 * entry's inflight count (seq_cst) and then re-reading seq (seq_cst); a
 * dereg first moves the entry out of VALID (a seqlock write, seq_cst) and
 * then reads inflight (seq_cst). By the total order of seq_cst operations
 * either the dereg sees the mark and waits, or the accessor sees the new
 * seq and backs out: nothing lands after dereg returns.
 */
#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "core/key_table.h"
#include "transport/host/host.h"
#include "util/compiler.h"
#include "util/fault.h"
#include "util/log.h"
#include "util/siphash.h"

/*
 * Key material comes from the kernel's CSPRNG, fetched 256 bytes at a time
 * (one getrandom() per ~64 registrations instead of one each). A fork child
 * drops the buffer so parent and child never hand out the same tags.
 */
static pthread_mutex_t rnd_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t rnd_buf[64];	/* rnd_lock */
static unsigned int rnd_left;	/* rnd_lock: unused words in rnd_buf */
static pthread_once_t rnd_once = PTHREAD_ONCE_INIT;

static void rnd_child(void)
{
	rnd_left = 0;
	pthread_mutex_init(&rnd_lock, NULL);
}

static void rnd_init(void)
{
	pthread_atfork(NULL, NULL, rnd_child);
}

static uint32_t rand32(void)
{
	uint32_t v;

	pthread_once(&rnd_once, rnd_init);
	pthread_mutex_lock(&rnd_lock);
	if (!rnd_left) {
		if (getrandom(rnd_buf, sizeof(rnd_buf), GRND_NONBLOCK) !=
		    sizeof(rnd_buf)) {
			struct timespec ts;
			unsigned int i;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			for (i = 0; i < ARRAY_SIZE(rnd_buf); i++)
				rnd_buf[i] ^= ((uint32_t)ts.tv_nsec + i) *
					      2654435761u;
		}
		rnd_left = ARRAY_SIZE(rnd_buf);
	}
	v = rnd_buf[--rnd_left];
	pthread_mutex_unlock(&rnd_lock);
	return v;
}

/*
 * Levels keep the table's resident memory proportional to the keys that
 * are live, not to the keys ever made. Slots are spread over windows
 * [0, 1024 << level) of the table; the top nibble of an index names its
 * level (0..7, and 8..15 all mean level 8, the whole table), the other
 * 20 (level 8: 23) bits are random. An allocation uses the smallest
 * window that is at most half full, so a process with a few hundred live
 * keys touches 64 KiB of entries however many it registers over its life
 * (a random slot in the whole table would, over time, touch every page of
 * it: 16 MiB). What the level reveals is roughly how many keys are live;
 * a key still has 28 unpredictable bits (20 of index, 8 of tag).
 */
#define KT_LEVEL_SHIFT 20
#define KT_TOP_LEVEL (SRDMA_KT_LEVELS - 1)
#define KT_BASE_WINDOW 1024u

static uint32_t level_window(uint32_t nslots, unsigned int level)
{
	uint32_t w = level >= KT_TOP_LEVEL ? nslots : KT_BASE_WINDOW << level;

	return w < nslots ? w : nslots;
}

static unsigned int index_level(uint32_t index)
{
	unsigned int l = index >> KT_LEVEL_SHIFT;

	return l < KT_TOP_LEVEL ? l : KT_TOP_LEVEL;
}

/*
 * The slot of a nonzero index: the top 32 bits of SipHash-2-4 of the
 * index (3 bytes, little-endian) scaled to its level's window by a
 * multiply (Lemire), so each slot of the window has an equal share of the
 * level's indices, +- one.
 */
static uint32_t index_to_slot(const uint64_t secret[2], uint32_t nslots,
			      uint32_t index)
{
	uint64_t h = srdma_siphash24_short(secret, index, 3);
	uint32_t w = level_window(nslots, index_level(index));

	return (uint32_t)(((h >> 32) * w) >> 32);
}

uint32_t srdma_key_slot(const struct srdma_key_view *v, uint32_t key)
{
	uint32_t index = key >> 8;

	if (!index)
		return UINT32_MAX;
	return index_to_slot(v->secret, v->nslots, index);
}

int srdma_kt_init(struct srdma_key_table *kt, struct srdma_shm_key *ent,
		  uint32_t nslots)
{
	ssize_t n;

	srdma_assert(nslots && nslots <= SRDMA_KEY_INDEX_MASK + 1);
	/* Blocking until the CSPRNG is seeded (early boot only): the secret
	 * must never be weak, unlike rand32()'s fallback. */
	do
		n = getrandom(kt->secret, sizeof(kt->secret), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(kt->secret))
		return n < 0 ? -errno : -EIO;
	kt->used = calloc((nslots + 63) / 64, sizeof(uint64_t));
	if (!kt->used)
		return -ENOMEM;
	kt->ent = ent;
	kt->nslots = nslots;
	return 0;
}

void srdma_kt_fini(struct srdma_key_table *kt)
{
	free(kt->used);
	kt->used = NULL;
}

static uint8_t fresh_tag(uint8_t old)
{
	uint8_t t;

	do
		t = (uint8_t)rand32();
	while (t == old);
	return t;
}

uint32_t srdma_kt_new_tag(struct srdma_key_table *kt, uint32_t slot)
{
	uint32_t old = atomic_load_explicit(&kt->ent[slot].key,
					    memory_order_relaxed);

	return (old & ~0xffu) | fresh_tag((uint8_t)old);
}

/*
 * Tries before srdma_kt_alloc() gives up although a slot is free. Below
 * the top level the window is at most half full, so a draw hits a free
 * slot with probability >= 1/2. At the top level, with one free slot of
 * 2^18, a draw hits it with probability 2^-18, so 2^26 tries all miss with
 * probability e^-256; the cap only guards against a slot that no index
 * maps to (2^23 indices over 2^18 slots: probability ~e^-32 per slot).
 */
#define ALLOC_TRIES (1u << 26)

/* Count @slot in (or out of) every window that contains it. */
static void count_slot(struct srdma_key_table *kt, uint32_t slot, int d)
{
	unsigned int l;

	for (l = 0; l < SRDMA_KT_LEVELS; l++)
		if (slot < level_window(kt->nslots, l))
			kt->used_in[l] += (uint32_t)d;
}

int srdma_kt_alloc(struct srdma_key_table *kt, uint32_t *slot, uint32_t *key)
{
	unsigned int tries, level;

	if (SRDMA_FAULT(KT_ALLOC) || kt->nused >= kt->nslots)
		return -ENOMEM;
	for (level = 0; level < KT_TOP_LEVEL; level++)
		if (2 * kt->used_in[level] < level_window(kt->nslots, level))
			break;
	for (tries = 0; tries < ALLOC_TRIES; tries++) {
		uint32_t index, s;
		uint8_t old;

		if (level < KT_TOP_LEVEL)
			index = level << KT_LEVEL_SHIFT |
				(rand32() & ((1u << KT_LEVEL_SHIFT) - 1));
		else
			index = (uint32_t)KT_TOP_LEVEL << KT_LEVEL_SHIFT |
				(rand32() & SRDMA_KEY_INDEX_MASK);
		if (!index)
			continue;
		s = index_to_slot(kt->secret, kt->nslots, index);
		if (kt->used[s / 64] & (1ull << (s % 64)))
			continue;
		kt->used[s / 64] |= 1ull << (s % 64);
		kt->nused++;
		count_slot(kt, s, 1);
		old = (uint8_t)atomic_load_explicit(&kt->ent[s].key,
						    memory_order_relaxed);
		*slot = s;
		*key = index << 8 | fresh_tag(old);
		return 0;
	}
	srdma_warn("key table: no free slot found in %u tries (%u of %u used)",
		   ALLOC_TRIES, kt->nused, kt->nslots);
	return -ENOMEM;
}

void srdma_kt_free(struct srdma_key_table *kt, uint32_t slot)
{
	srdma_assert(kt->used[slot / 64] & (1ull << (slot % 64)));
	kt->used[slot / 64] &= ~(1ull << (slot % 64));
	kt->nused--;
	count_slot(kt, slot, -1);
}

void srdma_key_write_begin(struct srdma_shm_key *e)
{
	unsigned int tries = 0;

	/*
	 * Writers exclude each other by taking seq from even to odd: the
	 * owner (under its context lock) and, for SEND_WITH_INV, an
	 * initiator in another process. A writer that died mid-update left
	 * seq odd for good; after a long wait we take over its section.
	 * seq_cst: ordered before the drain's read of inflight (see the
	 * file comment); also a release for readers' snapshots.
	 */
	for (;;) {
		uint32_t seq = atomic_load(&e->seq);

		if (seq & 1) {
			if (++tries < (1u << 24)) {
				cpu_relax();
				continue;
			}
			seq--;	/* abandoned section: adopt it */
		}
		if (atomic_compare_exchange_strong(&e->seq, &seq, seq + 1))
			break;
	}
	atomic_thread_fence(memory_order_release);
}

int srdma_key_remote_invalidate(const struct srdma_key_view *v, uint32_t key,
				uint32_t pd)
{
	struct srdma_key_snap snap;
	struct srdma_shm_key *e;
	unsigned int spins = 0;
	uint32_t slot;
	int r;

	r = srdma_key_check(v, key, BIT(SRDMA_KIND_MW2), pd, 0, 0, 0, &snap,
			    &slot);
	if (r == SRDMA_KCHK_STATE)
		return 0;	/* already invalid: success (siw) */
	if (r)
		return r;
	e = &v->ent[slot];
	srdma_key_write_begin(e);
	if (atomic_load(&e->key) == key &&
	    SRDMA_KEY_GET(e, kind) == SRDMA_KIND_MW2)
		SRDMA_KEY_PUT(e, state, SRDMA_KEY_INVALID);
	srdma_key_write_end(e);
	/* Accesses through the window that began before: let them end. */
	while (atomic_load(&e->inflight) && ++spins < (1u << 20))
		sched_yield();
	return 0;
}

void srdma_key_write_end(struct srdma_shm_key *e)
{
	uint32_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);

	/* Pairs with the acquire load of seq in srdma_key_snapshot(). */
	atomic_store(&e->seq, seq + 1);
}

void srdma_key_set_state(struct srdma_shm_key *e, uint8_t state)
{
	srdma_key_write_begin(e);
	SRDMA_KEY_PUT(e, state, state);
	srdma_key_write_end(e);
}

void srdma_kt_release(struct srdma_key_table *kt, uint32_t slot)
{
	srdma_key_set_state(&kt->ent[slot], SRDMA_KEY_FREE);
	srdma_kt_free(kt, slot);
}

/* Relaxed loads: see SRDMA_KEY_PUT in key_table.h. */
#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* A writer holds seq odd for a few stores; a writer that died mid-update
 * leaves it odd forever, so readers give up after this many tries. */
#define SNAPSHOT_TRIES (1u << 22)

bool srdma_key_snapshot(struct srdma_shm_key *e, struct srdma_key_snap *s)
{
	unsigned int tries;

	for (tries = 0; tries < SNAPSHOT_TRIES; tries++) {
		uint32_t seq = atomic_load_explicit(&e->seq,
						    memory_order_acquire);

		if (seq & 1) {
			cpu_relax();
			continue;
		}
		s->key = atomic_load_explicit(&e->key, memory_order_relaxed);
		s->kind = LD(e->kind);
		s->state = LD(e->state);
		s->flags = LD(e->flags);
		s->access = LD(e->access);
		s->pd_handle = LD(e->pd_handle);
		s->bind_qpn = LD(e->bind_qpn);
		s->mr_slot = LD(e->mr_slot);
		s->iova = LD(e->iova);
		s->length = LD(e->length);
		s->host_addr = LD(e->host_addr);
		/* Pairs with the release fence in srdma_key_write_begin(). */
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&e->seq, memory_order_relaxed) ==
		    seq) {
			s->seq = seq;
			return true;
		}
	}
	srdma_warn("key entry %p stays torn (writer died mid-update?)",
		   (void *)e);
	return false;
}

/* True if [addr, addr + len) lies inside [base, base + size); never wraps. */
static bool range_ok(uint64_t base, uint64_t size, uint64_t addr, uint64_t len)
{
	if (!len)	/* nothing is accessed (C9-88) */
		return true;
	return addr >= base && len <= size && addr - base <= size - len;
}

static int check_snap(const struct srdma_key_snap *s, uint32_t key,
		      unsigned int kinds, uint32_t pd, uint32_t access,
		      uint64_t addr, uint64_t len)
{
	if (s->key != key || s->state == SRDMA_KEY_FREE)
		return SRDMA_KCHK_NOKEY;
	if (!(kinds & BIT(s->kind)))
		return SRDMA_KCHK_KIND;
	if (s->pd_handle != pd)
		return SRDMA_KCHK_PD;
	if (s->state != SRDMA_KEY_VALID && s->state != SRDMA_KEY_PENDING)
		return SRDMA_KCHK_STATE;
	if ((s->access & access) != access)
		return SRDMA_KCHK_ACCESS;
	if (!range_ok(s->iova, s->length, addr, len))
		return SRDMA_KCHK_BOUNDS;
	return SRDMA_KCHK_OK;
}

int srdma_key_check(const struct srdma_key_view *v, uint32_t key,
		    unsigned int kinds, uint32_t pd, uint32_t access,
		    uint64_t addr, uint64_t len, struct srdma_key_snap *snap,
		    uint32_t *slot)
{
	uint32_t s = srdma_key_slot(v, key);

	if (s == UINT32_MAX)
		return SRDMA_KCHK_NOKEY;
	*slot = s;
	if (!srdma_key_snapshot(&v->ent[s], snap))
		return SRDMA_KCHK_NOKEY;
	return check_snap(snap, key, kinds, pd, access, addr, len);
}

int srdma_key_acquire(const struct srdma_key_view *v, uint32_t key,
		      unsigned int kinds, uint32_t pd, uint32_t access,
		      uint64_t addr, uint64_t len,
		      struct srdma_shm_access *rec, uint64_t rec_tag,
		      int32_t target_pid, uint64_t target_start,
		      struct srdma_key_ref *ref)
{
	for (;;) {
		struct srdma_shm_key *e;
		uint32_t slot;
		int ret;

		ret = srdma_key_check(v, key, kinds, pd, access, addr, len,
				      &ref->snap, &slot);
		if (ret)
			return ret;
		e = &v->ent[slot];
		if (rec) {
			rec->target_pid = target_pid;
			rec->target_start = target_start;
			/* Pairs with the acquire loads of tag by reapers. */
			atomic_store_explicit(&rec->tag, rec_tag | slot,
					      memory_order_release);
		}
		atomic_fetch_add(&e->inflight, 1);	/* seq_cst */
		if (atomic_load(&e->seq) == ref->snap.seq) {	/* seq_cst */
			ref->e = e;
			ref->rec = rec;
			ref->host_addr = ref->snap.host_addr +
					 (addr - ref->snap.iova);
			return SRDMA_KCHK_OK;
		}
		/* The owner changed the entry meanwhile: back out, retry. */
		ref->e = e;
		ref->rec = rec;
		srdma_key_release(ref);
	}
}

void srdma_key_release(struct srdma_key_ref *ref)
{
	if (ref->rec) {
		uint64_t tag = atomic_load_explicit(&ref->rec->tag,
						    memory_order_relaxed);

		/* If a reaper already cleared our record it also dropped
		 * the mark (only possible if we were thought dead). */
		if (!atomic_compare_exchange_strong(&ref->rec->tag, &tag, 0))
			return;
	}
	atomic_fetch_sub_explicit(&ref->e->inflight, 1, memory_order_release);
	ref->e = NULL;
}

void srdma_key_drain(struct srdma_key_table *kt, uint32_t slot,
		     struct srdma_host_ctx *h)
{
	struct srdma_shm_key *e = &kt->ent[slot];
	struct timespec ts = { 0, 20000 };
	unsigned int spins = 0;

	/* seq_cst: pairs with the accessor's inflight increment. */
	while (atomic_load(&e->inflight)) {
		if (++spins < 1000) {
			cpu_relax();
			continue;
		}
		nanosleep(&ts, NULL);
		if (h && spins % 500 == 0)
			srdma_host_release_dead_holders(h, slot);
	}
}

const char *srdma_key_fail_str(int fail)
{
	static const char *const s[] = {
		[SRDMA_KCHK_OK] = "ok",
		[SRDMA_KCHK_NOKEY] = "no such key (unknown index or stale tag)",
		[SRDMA_KCHK_KIND] = "wrong kind of key",
		[SRDMA_KCHK_PD] = "protection domain mismatch",
		[SRDMA_KCHK_STATE] = "key not valid (deregistered/invalidated)",
		[SRDMA_KCHK_ACCESS] = "access right missing",
		[SRDMA_KCHK_BOUNDS] = "range outside the region",
	};

	return (fail >= 0 && fail < (int)ARRAY_SIZE(s)) ? s[fail] : "?";
}
