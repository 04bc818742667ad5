// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * handle.c - the set of live object pointers handed to the application.
 *
 * Applications pass back pointers (ibv_pd *, ibv_mr *, ...) that may be
 * NULL, stale or of the wrong type. Real hardware stacks crash on those; we
 * answer EINVAL instead. The check never dereferences the pointer: it looks
 * the pointer value up in a process-wide open-addressing hash set, keyed by
 * address, that also records the object's type. Control path only (one
 * mutex); the data path never consults it.
 *
 * fork(): every entry also records the fork generation it was added in.
 * The child's atfork handler bumps srdma_fork_gen, so in a child every
 * inherited pointer stops being a live object (EINVAL everywhere, like a
 * destroyed one) without touching a single entry; the entries stay so
 * that destroy calls can recognise them and forget them locally
 * (srdma_handle_forget_inherited). The table lock is taken across fork()
 * so the child's copy of the table is consistent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/core.h"
#include "util/fault.h"
#include "util/log.h"

struct hslot {
	uintptr_t p;		/* 0 empty, 1 tombstone */
	uint32_t type;
	uint32_t gen;		/* srdma_fork_gen when added */
};

/* Bumped in each fork child, before any thread of it runs. The child is
 * single-threaded when it changes, so relaxed loads suffice everywhere. */
_Atomic uint32_t srdma_fork_gen;

static pthread_mutex_t h_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hslot *h_tab;	/* h_lock */
static size_t h_cap;		/* h_lock: power of two */
static size_t h_used;		/* h_lock: live + tombstones */
static size_t h_live;		/* h_lock */

#define TOMB ((uintptr_t)1)

static uint32_t cur_gen(void)
{
	return atomic_load_explicit(&srdma_fork_gen, memory_order_relaxed);
}

/* Hold h_lock across fork() so that the child's copy is consistent. */
static void h_prepare(void)
{
	pthread_mutex_lock(&h_lock);
}

static void h_parent(void)
{
	pthread_mutex_unlock(&h_lock);
}

static void h_child(void)
{
	atomic_fetch_add_explicit(&srdma_fork_gen, 1, memory_order_relaxed);
	/* Taken by h_prepare() in the thread that is now the child's only
	 * one: it is ours to release. */
	pthread_mutex_unlock(&h_lock);
}

/* Registered at load, before any object can exist. */
__attribute__((constructor)) static void h_register_atfork(void)
{
	pthread_atfork(h_prepare, h_parent, h_child);
}

static size_t hash_ptr(uintptr_t p, size_t cap)
{
	uint64_t x = (uint64_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

/* Requires h_lock. */
static struct hslot *find(uintptr_t p)
{
	size_t i;

	if (!h_cap)
		return NULL;
	for (i = hash_ptr(p, h_cap);; i = (i + 1) & (h_cap - 1)) {
		if (h_tab[i].p == p)
			return &h_tab[i];
		if (!h_tab[i].p)
			return NULL;
	}
}

/* Requires h_lock. */
static int grow(void)
{
	size_t ncap = h_cap ? h_cap * 2 : 1024, i;
	struct hslot *nt, *old = h_tab;

	if (h_live * 4 < h_cap)
		ncap = h_cap;	/* mostly tombstones: rehash in place size */
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	for (i = 0; i < h_cap; i++) {
		size_t j;

		if (old[i].p <= TOMB)
			continue;
		for (j = hash_ptr(old[i].p, ncap); nt[j].p;
		     j = (j + 1) & (ncap - 1))
			;
		nt[j] = old[i];
	}
	free(old);
	h_tab = nt;
	h_cap = ncap;
	h_used = h_live;
	return 0;
}

int srdma_handle_add(const void *p, enum srdma_obj_type type)
{
	uintptr_t v = (uintptr_t)p;
	int ret = 0;
	size_t i;

	if (SRDMA_FAULT(HANDLE_ADD))
		return -ENOMEM;
	pthread_mutex_lock(&h_lock);
	if ((h_used + 1) * 2 > h_cap) {
		ret = grow();
		if (ret)
			goto out;
	}
	for (i = hash_ptr(v, h_cap); h_tab[i].p > TOMB;
	     i = (i + 1) & (h_cap - 1))
		;
	if (!h_tab[i].p)
		h_used++;
	h_tab[i].p = v;
	h_tab[i].type = type;
	h_tab[i].gen = cur_gen();
	h_live++;
out:
	pthread_mutex_unlock(&h_lock);
	return ret;
}

bool srdma_handle_check(const void *p, enum srdma_obj_type type)
{
	struct hslot *s;
	bool ok;

	if (!p)
		return false;
	pthread_mutex_lock(&h_lock);
	s = find((uintptr_t)p);
	ok = s && s->type == type && s->gen == cur_gen();
	pthread_mutex_unlock(&h_lock);
	return ok;
}

/*
 * Tombstone @p's slot if it holds a @type object created in this process
 * (@inherited false) or inherited across fork() (@inherited true).
 * Returns whether it did; takes h_lock.
 */
static bool del_matching(const void *p, enum srdma_obj_type type,
			 bool inherited)
{
	struct hslot *s;
	bool ok = false;

	if (!p)
		return false;
	pthread_mutex_lock(&h_lock);
	s = find((uintptr_t)p);
	if (s && s->type == type && (s->gen != cur_gen()) == inherited) {
		s->p = TOMB;
		h_live--;
		ok = true;
	}
	pthread_mutex_unlock(&h_lock);
	return ok;
}

bool srdma_handle_del(const void *p, enum srdma_obj_type type)
{
	return del_matching(p, type, false);
}

bool srdma_handle_forget_inherited(const void *p, enum srdma_obj_type type)
{
	bool ok = del_matching(p, type, true);

	if (ok)
		srdma_dbg("%p: object inherited across fork() forgotten", p);
	return ok;
}

bool srdma_handle_check_inherited(const void *p, enum srdma_obj_type type)
{
	struct hslot *s;
	bool ok;

	if (!p)
		return false;
	pthread_mutex_lock(&h_lock);
	s = find((uintptr_t)p);
	ok = s && s->type == type && s->gen != cur_gen();
	pthread_mutex_unlock(&h_lock);
	return ok;
}

void *srdma_handle_find(enum srdma_obj_type type,
			bool (*match)(const void *p, void *arg), void *arg)
{
	void *found = NULL;
	size_t i;

	pthread_mutex_lock(&h_lock);
	for (i = 0; i < h_cap && !found; i++)
		if (h_tab[i].p > TOMB && h_tab[i].type == type &&
		    h_tab[i].gen == cur_gen() &&
		    match((const void *)h_tab[i].p, arg))
			found = (void *)h_tab[i].p;
	pthread_mutex_unlock(&h_lock);
	return found;
}
