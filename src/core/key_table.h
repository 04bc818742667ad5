/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * key_table.h - allocation of MR/MW keys and the one key check.
 *
 * A key is (index << 8 | tag): an allocation draws a random nonzero index
 * (its top nibble names the slot window it lives in, the rest is random;
 * see key_table.c) until the slot it maps to is free, and a random tag
 * different from the slot's previous one. The map index -> slot is
 * SipHash-2-4 under a per-context 128-bit secret (srdma_key_slot()), so
 * keys seen from a context say nothing about its other keys; the secret
 * sits in the segment header for same-user peers, which check keys of the
 * context locally. A key is valid only if it equals, all 32 bits, the key
 * stored in its slot, so a stale key misses. Entries live in the context's
 * shared segment (shm_layout.h); the owner writes them under its context
 * lock inside a seqlock section, any process reads them with
 * srdma_key_check() and marks an access in flight with srdma_key_acquire().
 * Design: docs/design/host-segment.md.
 */
#ifndef SRDMA_CORE_KEY_TABLE_H
#define SRDMA_CORE_KEY_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/host/shm_layout.h"

#define SRDMA_KEY_INDEX_MASK 0xffffffu
#define SRDMA_KT_LEVELS 9	/* slot windows of 1024 << 0..7, whole table */

struct srdma_host_ctx;

struct srdma_key_table {
	struct srdma_shm_key *ent;	/* immutable: the segment's table */
	uint32_t nslots;		/* immutable */
	uint32_t nused;			/* owner ctx lock */
	uint64_t secret[2];		/* immutable; mirrored in the header */
	uint64_t *used;			/* owner ctx lock: slot bitmap */
	uint32_t used_in[SRDMA_KT_LEVELS]; /* owner ctx lock: used slots
					    * in each level's window */
};

/* What srdma_key_check() looks at: a (possibly remote) key table. */
struct srdma_key_view {
	struct srdma_shm_key *ent;
	uint32_t nslots;
	uint64_t secret[2];		/* SipHash key of index -> slot */
};

/*
 * Every store to a seqlock-protected field of an entry (all but seq, key
 * and inflight, which are _Atomic) goes through SRDMA_KEY_PUT, inside
 * srdma_key_write_begin()/_end(). It is a relaxed atomic store: readers in
 * srdma_key_snapshot() load the same fields with relaxed atomics while a
 * write may be in progress and discard what they read if seq moved, so a
 * plain store would be a data race (C11, and TSan says so); the ordering
 * comes from the seq accesses and fences, not from these. SRDMA_KEY_GET is
 * the matching load, for a writer that reads a field outside a snapshot
 * (another process may be writing it: SEND_WITH_INV).
 */
#define SRDMA_KEY_PUT(e, field, v)                                             \
	__atomic_store_n(&(e)->field, (v), __ATOMIC_RELAXED)
#define SRDMA_KEY_GET(e, field) __atomic_load_n(&(e)->field, __ATOMIC_RELAXED)

/* A consistent copy of one entry. */
struct srdma_key_snap {
	uint32_t seq, key;
	uint8_t kind, state;
	uint16_t flags;
	uint32_t access, pd_handle, bind_qpn, mr_slot;
	uint64_t iova, length, host_addr;
};

/* Why a key check failed, in the fixed order of the checks. */
enum srdma_key_fail {
	SRDMA_KCHK_OK = 0,
	SRDMA_KCHK_NOKEY,	/* index 0, or not the key stored in its slot */
	SRDMA_KCHK_KIND,	/* MW key used as lkey, or vice versa */
	SRDMA_KCHK_PD,		/* object in another PD */
	SRDMA_KCHK_STATE,	/* deregistered / invalidated / unbound */
	SRDMA_KCHK_ACCESS,	/* access bit missing */
	SRDMA_KCHK_BOUNDS,	/* range outside the object */
};

/* An access in flight: release with srdma_key_release(). */
struct srdma_key_ref {
	struct srdma_shm_key *e;
	struct srdma_shm_access *rec;	/* initiator record, or NULL */
	uint64_t host_addr;		/* owner address of the first byte */
	struct srdma_key_snap snap;
};

/**
 * srdma_kt_init() - set up an empty key table over the segment's entries
 * and draw its secret (kt->secret, to be stored in the segment header).
 * @kt:  zeroed table
 * @ent: the segment's key entries; @nslots: their count, 1..2^24
 * Return: 0, -ENOMEM, or the getrandom() error (never a weak secret).
 */
int srdma_kt_init(struct srdma_key_table *kt, struct srdma_shm_key *ent,
		  uint32_t nslots);
void srdma_kt_fini(struct srdma_key_table *kt);

/**
 * srdma_kt_alloc() - draw a random key whose slot is free and reserve the
 * slot; the key's tag differs from the slot's previous key's tag.
 * Requires: the owner's context lock.
 * Context: nslots / free-slots tries expected, each ~10 ns.
 * Return: 0 with *slot and *key set, or -ENOMEM when the table is full.
 */
int srdma_kt_alloc(struct srdma_key_table *kt, uint32_t *slot,
		   uint32_t *key);

/**
 * srdma_kt_new_tag() - a key with the index of @slot's current key and a
 * fresh tag (MW rebind). Requires: the owner's context lock.
 */
uint32_t srdma_kt_new_tag(struct srdma_key_table *kt, uint32_t slot);

/**
 * srdma_kt_free() - return @slot; its entry must already be FREE with no
 * access in flight. Requires: the owner's context lock.
 */
void srdma_kt_free(struct srdma_key_table *kt, uint32_t slot);

/**
 * srdma_kt_release() - mark @slot FREE and return it to the allocator (the
 * end of every MR/MW: after invalidate and drain). Requires: the owner's
 * context lock and no access in flight.
 */
void srdma_kt_release(struct srdma_key_table *kt, uint32_t slot);

/*
 * Slot that @key would live in, or UINT32_MAX for index 0. Every other
 * index maps to some slot: only the comparison with the key stored there
 * (srdma_key_check()) says whether @key is valid. Lock-free, ~10 ns.
 */
uint32_t srdma_key_slot(const struct srdma_key_view *v, uint32_t key);

/**
 * srdma_key_write_begin() / srdma_key_write_end() - bracket every change of
 * an entry's seqlock-protected fields. Requires: the owner's context lock.
 */
void srdma_key_write_begin(struct srdma_shm_key *e);
void srdma_key_write_end(struct srdma_shm_key *e);

/**
 * srdma_key_set_state() - change only the state of @e, as one seqlock
 * write (invalidate, relaxed PENDING). Requires: the owner's context lock.
 */
void srdma_key_set_state(struct srdma_shm_key *e, uint8_t state);

/**
 * srdma_key_snapshot() - consistent copy of @e. Lock-free; retries while
 * the owner is mid-write.
 * Return: true, or false if the entry stayed torn (its writer died during
 * an update): callers treat that as an unknown key.
 */
bool srdma_key_snapshot(struct srdma_shm_key *e, struct srdma_key_snap *s);

/**
 * srdma_key_check() - THE key check (architecture principle 3).
 * @v:      the key table the key belongs to
 * @key:    lkey / rkey to check
 * @kinds:  BIT(SRDMA_KIND_*) accepted (MR only for lkeys)
 * @pd:     PD handle of the work queue doing the access
 * @access: IBV_ACCESS_* bits the operation needs (0 for a local read)
 * @addr, @len: the range in the object's address space; @len 0 is never
 *          checked against anything (C9-88) and always passes
 * @snap:   out: the entry the decision was taken on
 * @slot:   out: its slot
 * Order: key exists, tag, kind, PD, state, access, bounds (overflow-safe).
 * Context: any thread, any process; lock-free.
 * Return: SRDMA_KCHK_OK or the first failing check.
 */
int srdma_key_check(const struct srdma_key_view *v, uint32_t key,
		    unsigned int kinds, uint32_t pd, uint32_t access,
		    uint64_t addr, uint64_t len, struct srdma_key_snap *snap,
		    uint32_t *slot);

/**
 * srdma_key_acquire() - check @key as srdma_key_check() does and mark the
 * access in flight, so a concurrent dereg waits for srdma_key_release().
 * @rec: the initiator's access record when the key table belongs to
 *       another process (so the mark can be cleared if we die), else NULL;
 *       @rec_tag/@target_pid/@target_start describe the target for it
 * Return: SRDMA_KCHK_OK with @ref filled, or the failing check.
 */
int srdma_key_acquire(const struct srdma_key_view *v, uint32_t key,
		      unsigned int kinds, uint32_t pd, uint32_t access,
		      uint64_t addr, uint64_t len,
		      struct srdma_shm_access *rec, uint64_t rec_tag,
		      int32_t target_pid, uint64_t target_start,
		      struct srdma_key_ref *ref);
void srdma_key_release(struct srdma_key_ref *ref);

/**
 * srdma_key_drain() - wait until no access to @slot is in flight.
 * Requires: the entry was already made non-VALID (new acquires fail).
 * Context: may sleep; never hangs on a dead initiator (its marks are
 * cleared through @h).
 */
void srdma_key_drain(struct srdma_key_table *kt, uint32_t slot,
		     struct srdma_host_ctx *h);

/**
 * srdma_key_remote_invalidate() - SEND_WITH_INV at the responder: make the
 * type 2 window @key of PD @pd in table @v invalid (any process may call
 * this; writers exclude each other through the seqlock), then wait for
 * accesses through it that already started.
 * Return: SRDMA_KCHK_OK (also for a window already invalid) or the check
 * that failed (unknown key, type 1 window or MR, other PD).
 */
int srdma_key_remote_invalidate(const struct srdma_key_view *v, uint32_t key,
				uint32_t pd);

/* Human-readable reason, for logs. */
const char *srdma_key_fail_str(int fail);

static inline void srdma_kt_view(const struct srdma_key_table *kt,
				 struct srdma_key_view *v)
{
	v->ent = kt->ent;
	v->nslots = kt->nslots;
	v->secret[0] = kt->secret[0];
	v->secret[1] = kt->secret[1];
}

#endif
