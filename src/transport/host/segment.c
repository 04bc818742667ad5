// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * segment.c - a context's control segment: creation at open, removal at
 * close, mapping other contexts' segments, and clearing in-flight marks
 * left by initiators that died mid-access.
 *
 * The segment is a sparse tmpfs file (SRDMA_DIR/ctx.<lid>.<pid>, 0600):
 * header, access records, then the key table. Only pages of key slots that
 * were ever used consume memory. The owner writes key entries (seqlock,
 * key_table.c); any process of the user may map it to validate keys and to
 * increment/decrement in-flight counts. Layout: shm_layout.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transport/host/host.h"
#include "util/log.h"

#define SEG_ALIGN 4096u

struct seg_offs {
	uint64_t acc, key, cq, qp, srq, aq, arena;
};

static uint64_t align_up(uint64_t off)
{
	return (off + SEG_ALIGN - 1) & ~(uint64_t)(SEG_ALIGN - 1);
}

/* The one place that lays a segment out; peers recompute and compare. */
static size_t seg_layout(uint32_t key_slots, struct seg_offs *o)
{
	uint64_t off = sizeof(struct srdma_seg_hdr);

	o->acc = off;
	off += SRDMA_SEG_ACCESS_RECORDS * sizeof(struct srdma_shm_access);
	o->key = off = align_up(off);
	off += (uint64_t)key_slots * sizeof(struct srdma_shm_key);
	o->cq = off = align_up(off);
	off += (uint64_t)SRDMA_SEG_CQ_SLOTS * sizeof(struct srdma_shm_cq);
	o->qp = off = align_up(off);
	off += (uint64_t)SRDMA_SEG_QP_SLOTS * sizeof(struct srdma_shm_qp);
	o->srq = off = align_up(off);
	off += (uint64_t)SRDMA_SEG_SRQ_SLOTS * sizeof(struct srdma_shm_srq);
	o->aq = off = align_up(off);
	off += sizeof(struct srdma_shm_aq);
	o->arena = off = align_up(off);
	off += SRDMA_SEG_ARENA_SIZE;
	return (size_t)align_up(off);
}

static int claim_entry(struct srdma_host_ctx *h, const char *dev_name)
{
	struct srdma_registry *r = &h->reg;
	unsigned int i, start;
	int ret;

	ret = srdma_registry_lock(r, true);
	if (ret)
		return ret;
	srdma_registry_reap(r, h->dir);
	/* Start at a pid-derived entry so concurrent openers spread out
	 * and LIDs are not handed out in a guessable order from 1. */
	start = (unsigned int)h->pid % SRDMA_REG_ENTRIES;
	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		unsigned int idx = (start + i) % SRDMA_REG_ENTRIES;
		struct srdma_reg_entry *e = &r->ent[idx];

		if (atomic_load_explicit(&e->state, memory_order_acquire) !=
		    SRDMA_REG_FREE)
			continue;
		e->pid = h->pid;
		e->start_time = h->start_time;
		e->lid = idx + 1;
		e->uid = (uint32_t)getuid();
		snprintf(e->seg_name, sizeof(e->seg_name), "ctx.%u.%d",
			 idx + 1, (int)h->pid);
		snprintf(e->dev_name, sizeof(e->dev_name), "%s", dev_name);
		e->open_time = (uint64_t)time(NULL);
		/* Taken now, under the lock: no other opener can claim it,
		 * and a reaper frees it if we die before publishing. */
		atomic_store_explicit(&e->state, SRDMA_REG_CLAIMED,
				      memory_order_release);
		h->reg_index = (int)idx;
		h->lid = idx + 1;
		memcpy(h->seg_name, e->seg_name, sizeof(h->seg_name));
		srdma_registry_unlock(r);
		return 0;
	}
	srdma_registry_unlock(r);
	return -ENOSPC;
}

static void publish_entry(struct srdma_host_ctx *h, uint32_t state)
{
	struct srdma_reg_entry *e = &h->reg.ent[h->reg_index];

	srdma_registry_lock(&h->reg, true);
	/* Fields were written in claim_entry(); readers that see LIVE see
	 * them. Pairs with the acquire loads of e->state. */
	atomic_store_explicit(&e->state, state, memory_order_release);
	srdma_registry_unlock(&h->reg);
}

int srdma_host_attach(struct srdma_host_ctx *h, const char *dev_name,
		      uint32_t key_slots)
{
	struct seg_offs o;
	char path[320];
	size_t size;
	void *map;
	int ret;

	h->seg_fd = -1;
	h->reg.fd = -1;
	h->pid = getpid();
	h->start_time = srdma_proc_start_time(h->pid);
	ret = srdma_host_dir(h->dir, sizeof(h->dir));
	if (ret)
		return ret;
	ret = srdma_registry_open(h->dir, &h->reg);
	if (ret)
		return ret;
	ret = claim_entry(h, dev_name);
	if (ret)
		goto err_close_reg;

	size = seg_layout(key_slots, &o);
	snprintf(path, sizeof(path), "%s/%s", h->dir, h->seg_name);
	h->seg_fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (h->seg_fd < 0) {
		ret = -errno;
		goto err_free_entry;
	}
	if (ftruncate(h->seg_fd, (off_t)size)) {
		ret = -errno;
		goto err_unlink;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, h->seg_fd,
		   0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_unlink;
	}
	h->seg = map;
	h->seg_size = size;
	h->seg->version = SRDMA_SEG_VERSION;
	h->seg->hdr_size = sizeof(struct srdma_seg_hdr);
	h->seg->owner_pid = h->pid;
	h->seg->lid = h->lid;
	h->seg->owner_start = h->start_time;
	h->seg->seg_size = size;
	snprintf(h->seg->dev_name, sizeof(h->seg->dev_name), "%s", dev_name);
	h->seg->key_off = o.key;
	h->seg->key_slots = key_slots;
	h->seg->key_entry_size = sizeof(struct srdma_shm_key);
	h->seg->acc_off = o.acc;
	h->seg->cq_off = o.cq;
	h->seg->cq_slots = SRDMA_SEG_CQ_SLOTS;
	h->seg->cq_entry_size = sizeof(struct srdma_shm_cq);
	h->seg->qp_off = o.qp;
	h->seg->qp_slots = SRDMA_SEG_QP_SLOTS;
	h->seg->qp_entry_size = sizeof(struct srdma_shm_qp);
	h->seg->srq_off = o.srq;
	h->seg->srq_slots = SRDMA_SEG_SRQ_SLOTS;
	h->seg->srq_entry_size = sizeof(struct srdma_shm_srq);
	h->seg->aq_off = o.aq;
	h->seg->arena_off = o.arena;
	h->seg->arena_size = SRDMA_SEG_ARENA_SIZE;
	ret = srdma_shm_mutex_init(&srdma_seg_aq(h->seg)->lock);
	if (ret)
		goto err_unmap;
	h->seg->acc_count = SRDMA_SEG_ACCESS_RECORDS;
	h->seg->acc_entry_size = sizeof(struct srdma_shm_access);
	/* The key scramble parameters are set by the key table before the
	 * context is published; magic goes last. */
	return 0;

err_unmap:
	munmap(h->seg, size);
	h->seg = NULL;
err_unlink:
	unlink(path);
	close(h->seg_fd);
	h->seg_fd = -1;
err_free_entry:
	publish_entry(h, SRDMA_REG_FREE);
err_close_reg:
	srdma_registry_close(&h->reg);
	return ret;
}

void srdma_host_publish(struct srdma_host_ctx *h)
{
	/* Pairs with the acquire load of magic in srdma_peer_seg_map(). */
	__atomic_store_n(&h->seg->magic, SRDMA_SEG_MAGIC, __ATOMIC_RELEASE);
	publish_entry(h, SRDMA_REG_LIVE);
}

void srdma_host_detach(struct srdma_host_ctx *h)
{
	char path[320];

	if (!h->seg)
		return;
	/* A peer still mapping us must see we are gone even when this
	 * process reopens and gets our LID back (same pid and start time):
	 * clear the magic (pairs with the acquire load in
	 * srdma_peer_alive()). Then unpublish so no new peer maps us, then
	 * remove the file. */
	__atomic_store_n(&h->seg->magic, 0, __ATOMIC_RELEASE);
	publish_entry(h, SRDMA_REG_FREE);
	snprintf(path, sizeof(path), "%s/%s", h->dir, h->seg_name);
	unlink(path);
	munmap(h->seg, h->seg_size);
	close(h->seg_fd);
	h->seg = NULL;
	h->seg_fd = -1;
	srdma_registry_close(&h->reg);
}

int srdma_peer_seg_map(const char *dir, const char *seg_name,
		       struct srdma_peer_seg *p)
{
	struct srdma_seg_hdr *s;
	char path[320];
	struct stat st;
	struct seg_offs o;
	int fd, ret = 0;
	void *map;

	if (!memchr(seg_name, 0, 48) || strchr(seg_name, '/'))
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", dir, seg_name);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if ((size_t)st.st_size < sizeof(*s)) {
		ret = -EPROTO;
		goto out;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		   MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	s = map;
	/* Validate before trusting any offset (R8). */
	if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != SRDMA_SEG_MAGIC ||
	    s->version != SRDMA_SEG_VERSION ||
	    s->hdr_size != sizeof(*s) ||
	    s->key_entry_size != sizeof(struct srdma_shm_key) ||
	    s->acc_entry_size != sizeof(struct srdma_shm_access) ||
	    s->acc_count != SRDMA_SEG_ACCESS_RECORDS ||
	    s->seg_size != (uint64_t)st.st_size ||
	    seg_layout(s->key_slots, &o) != s->seg_size ||
	    o.acc != s->acc_off || o.key != s->key_off ||
	    o.cq != s->cq_off || s->cq_slots != SRDMA_SEG_CQ_SLOTS ||
	    s->cq_entry_size != sizeof(struct srdma_shm_cq) ||
	    o.qp != s->qp_off || s->qp_slots != SRDMA_SEG_QP_SLOTS ||
	    s->qp_entry_size != sizeof(struct srdma_shm_qp) ||
	    o.srq != s->srq_off || s->srq_slots != SRDMA_SEG_SRQ_SLOTS ||
	    s->srq_entry_size != sizeof(struct srdma_shm_srq) ||
	    o.aq != s->aq_off || o.arena != s->arena_off ||
	    s->arena_size != SRDMA_SEG_ARENA_SIZE) {
		munmap(map, (size_t)st.st_size);
		ret = -EPROTO;
		goto out;
	}
	p->seg = s;
	p->size = (size_t)st.st_size;
out:
	close(fd);
	return ret;
}

void srdma_peer_seg_unmap(struct srdma_peer_seg *p)
{
	if (p->seg)
		munmap(p->seg, p->size);
	p->seg = NULL;
}

int srdma_host_release_dead_holders(struct srdma_host_ctx *h, uint32_t slot)
{
	struct srdma_registry *r = &h->reg;
	uint64_t want = SRDMA_ACC_VALID |
			((uint64_t)(unsigned int)h->reg_index << 32) | slot;
	unsigned int i, j;
	int n = 0;

	if (srdma_registry_lock(r, false))
		return 0;
	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r->ent[i];
		struct srdma_peer_seg ps;

		if ((int)i == h->reg_index ||
		    atomic_load_explicit(&e->state, memory_order_acquire) !=
			    SRDMA_REG_LIVE ||
		    srdma_proc_alive(e->pid, e->start_time))
			continue;
		if (srdma_peer_seg_map(h->dir, e->seg_name, &ps))
			continue;
		for (j = 0; j < ps.seg->acc_count; j++) {
			struct srdma_shm_access *a =
				srdma_seg_access(ps.seg, j);
			uint64_t tag = want;

			if (a->target_pid != h->pid ||
			    a->target_start != h->start_time)
				continue;
			if (atomic_compare_exchange_strong(&a->tag, &tag, 0)) {
				atomic_fetch_sub(
					&srdma_seg_keys(h->seg)[slot].inflight,
					1);
				n++;
			}
		}
		srdma_peer_seg_unmap(&ps);
	}
	srdma_registry_unlock(r);
	if (n)
		srdma_info("slot %u: cleared %d mark(s) of dead initiators",
			   slot, n);
	return n;
}

int srdma_host_acc_reserve(struct srdma_host_ctx *h)
{
	uint64_t busy = atomic_load_explicit(&h->acc_busy,
					     memory_order_relaxed);

	for (;;) {
		int idx;

		if (busy == UINT64_MAX)
			return -EAGAIN;
		idx = __builtin_ctzll(~busy);
		if (atomic_compare_exchange_weak_explicit(
			    &h->acc_busy, &busy, busy | (1ull << idx),
			    memory_order_acquire, memory_order_relaxed))
			return idx;
	}
}

void srdma_host_acc_release(struct srdma_host_ctx *h, int idx)
{
	atomic_fetch_and_explicit(&h->acc_busy, ~(1ull << idx),
				  memory_order_release);
}

int srdma_shm_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int ret;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	ret = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -ret;
}

bool srdma_shm_lock(pthread_mutex_t *m)
{
	int ret = pthread_mutex_lock(m);

	if (ret == EOWNERDEAD) {
		/* The holder died inside its section. Every section in the
		 * segment publishes its result with one final store, so the
		 * protected state is consistent; the caller may repair more. */
		pthread_mutex_consistent(m);
		srdma_dbg("shared lock %p: previous holder died", (void *)m);
		return true;
	}
	if (ret)
		srdma_err("shared lock %p: %s", (void *)m, strerror(ret));
	return false;
}

void srdma_shm_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}
