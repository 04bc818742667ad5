// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cq.c - completion channels and completion queues.
 *
 * A CQ is a ring of 64-byte CQEs in the context's ring arena, described by
 * an entry of the segment's CQ table. Producers are the owner (its own
 * send completions) and initiators in other processes (this context's
 * receive completions, delivered by the sender: target passivity); they
 * serialise on the entry's robust plock and publish each CQE by storing
 * its sequence number (position + 1) last. The only consumer is the owner
 * (poll_cq, under a process-private poll_lock), lock-free against
 * producers: it reads a slot only once its sequence matches, then
 * release-stores cons, which producers read to see free room.
 *
 * Notification: req_notify_cq stores the arming in the entry; the producer
 * that finds the CQ armed (solicited-only: and the CQE solicited or an
 * error) disarms it with a CAS, sets `fired` and writes one byte into the
 * channel's FIFO, which the owner holds open as the channel's fd (so it
 * polls readable and ibv_get_cq_event can block in read()). Arming for
 * any completion while a CQE waits that is neither polled nor covered by
 * an event (`notified`) fires at once, as on ConnectX. A producer
 * may hold that wake-up back until it has done something first
 * (srdma_cq_defer_wakes: the net responder sends its ACK). A CQE that
 * finds the ring full is lost, the overflow is recorded and the owner gets
 * IBV_EVENT_CQ_ERR, as a hardware CQ overrun.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/srdma_parent_domain.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/srq_tm.h"
#include "transport/net/net.h"
#include "util/fault.h"
#include "util/log.h"

/* ---- ring arena ----------------------------------------------------------- */

/* Our ring's segment offset, from the private pointer (never re-read). */
static uint64_t ring_off(const struct srdma_cq *cq)
{
	return (uint64_t)((const char *)cq->ring -
			  (const char *)cq->ctx->host.seg);
}

static uint64_t page_round(uint64_t len)
{
	return (len + srdma_page_size - 1) & ~((uint64_t)srdma_page_size - 1);
}

int srdma_arena_alloc(struct srdma_context *ctx, uint64_t len, uint64_t *off)
{
	uint32_t i;

	len = page_round(len);
	if (!ctx->afree) {
		ctx->cap_afree = 64;
		ctx->afree = calloc(ctx->cap_afree, sizeof(*ctx->afree));
		if (!ctx->afree)
			return -ENOMEM;
		ctx->afree[0].off = SRDMA_SEG_ARENA_OFF;
		ctx->afree[0].len = SRDMA_SEG_ARENA_SIZE;
		ctx->n_afree = 1;
	}
	for (i = 0; i < ctx->n_afree; i++) {
		if (ctx->afree[i].len < len)
			continue;
		*off = ctx->afree[i].off;
		ctx->afree[i].off += len;
		ctx->afree[i].len -= len;
		if (!ctx->afree[i].len) {
			memmove(&ctx->afree[i], &ctx->afree[i + 1],
				(ctx->n_afree - i - 1) * sizeof(*ctx->afree));
			ctx->n_afree--;
		}
		return 0;
	}
	return -ENOMEM;
}

void srdma_arena_free(struct srdma_context *ctx, uint64_t off, uint64_t len)
{
	uint32_t i;

	len = page_round(len);
	/*
	 * Callers pass offsets kept in our segment, which anyone of the user
	 * can overwrite: a range outside the arena, unaligned, or overlapping
	 * free space is not ours to free (leaked, never touched).
	 */
	for (i = 0; i < ctx->n_afree && ctx->afree[i].off < off; i++)
		;
	if (!srdma_seg_ring(ctx->host.seg, off, len) ||
	    off % srdma_page_size ||
	    (i > 0 && ctx->afree[i - 1].off + ctx->afree[i - 1].len > off) ||
	    (i < ctx->n_afree && ctx->afree[i].off - off < len)) {
		srdma_warn("context lid %u: arena range %#llx+%#llx is not "
			   "in use: not freed (segment damaged?)",
			   ctx->host.lid, (unsigned long long)off,
			   (unsigned long long)len);
		return;
	}
	/* Give the pages back to tmpfs; they read as zeroes again. */
	if (fallocate(ctx->host.seg_fd, FALLOC_FL_PUNCH_HOLE |
		      FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		memset(srdma_seg_ptr(ctx->host.seg, off), 0, len);
	if (i > 0 && ctx->afree[i - 1].off + ctx->afree[i - 1].len == off) {
		ctx->afree[i - 1].len += len;
		if (i < ctx->n_afree && off + len == ctx->afree[i].off) {
			ctx->afree[i - 1].len += ctx->afree[i].len;
			memmove(&ctx->afree[i], &ctx->afree[i + 1],
				(ctx->n_afree - i - 1) * sizeof(*ctx->afree));
			ctx->n_afree--;
		}
		return;
	}
	if (i < ctx->n_afree && off + len == ctx->afree[i].off) {
		ctx->afree[i].off = off;
		ctx->afree[i].len += len;
		return;
	}
	if (ctx->n_afree == ctx->cap_afree) {
		void *n = realloc(ctx->afree, 2 * ctx->cap_afree *
				  sizeof(*ctx->afree));

		if (!n) {
			srdma_warn("arena: %llu bytes leaked (no memory)",
				   (unsigned long long)len);
			return;
		}
		ctx->afree = n;
		ctx->cap_afree *= 2;
	}
	memmove(&ctx->afree[i + 1], &ctx->afree[i],
		(ctx->n_afree - i) * sizeof(*ctx->afree));
	ctx->afree[i].off = off;
	ctx->afree[i].len = len;
	ctx->n_afree++;
}

/* The capacity ibv_create_cq/ibv_resize_cq report: the ring's, but never
 * above max_cqe (a ring of 2^22 holds 4,194,304; what an application
 * reads back must be a size it may ask for again). */
static uint32_t cqe_reported(uint32_t size)
{
	return size > SRDMA_MAX_CQE ? SRDMA_MAX_CQE : size;
}

/* ---- completion channels ------------------------------------------------ */

int srdma_chan_create(struct srdma_context *ctx, struct srdma_chan **out)
{
	struct srdma_chan *ch = calloc(1, sizeof(*ch));
	int fd, ret;

	if (!ch)
		return -ENOMEM;
	pthread_mutex_lock(&ctx->lock);
	ch->num = ctx->next_chan++;
	pthread_mutex_unlock(&ctx->lock);
	fd = srdma_fifo_open(ctx, "chan", ch->num, ch->path, sizeof(ch->path));
	if (fd < 0) {
		free(ch);
		return fd;
	}
	ch->ctx = ctx;
	ch->ibch.context = &ctx->vctx.context;
	ch->ibch.fd = fd;
	ch->ibch.refcnt = 0;
	ret = srdma_handle_add(ch, SRDMA_OBJ_CHAN);
	if (ret) {
		close(fd);
		unlinkat(ctx->host.dirfd, ch->path, 0);
		free(ch);
		return ret;
	}
	pthread_mutex_lock(&ctx->lock);
	ctx->n_chan++;
	pthread_mutex_unlock(&ctx->lock);
	*out = ch;
	return 0;
}

int srdma_chan_destroy(struct srdma_chan *ch)
{
	struct srdma_context *ctx = ch->ctx;

	if (atomic_load(&ch->ncq))
		return -EBUSY;
	if (!srdma_handle_del(ch, SRDMA_OBJ_CHAN))
		return -EINVAL;
	unlinkat(ctx->host.dirfd, ch->path, 0);
	close(ch->ibch.fd);
	pthread_mutex_lock(&ctx->lock);
	ctx->n_chan--;
	pthread_mutex_unlock(&ctx->lock);
	free(ch);
	return 0;
}

int srdma_chan_get_event(struct srdma_chan *ch, struct srdma_cq **out)
{
	struct srdma_context *ctx = ch->ctx;

	for (;;) {
		char b;
		ssize_t n = read(ch->ibch.fd, &b, 1);
		uint32_t i;

		/* A signal ends the wait with -EINTR, as rdma-core's read()
		 * does: qperf's SIGALRM must be able to stop a blocked
		 * ibv_get_cq_event (a handler with SA_RESTART never gets
		 * here: the kernel restarts the read). */
		if (n != 1)
			return n < 0 ? -errno : -EIO;
		pthread_mutex_lock(&ctx->lock);
		for (i = 0; i < SRDMA_SEG_CQ_SLOTS; i++) {
			struct srdma_cq *cq = ctx->cq_by_slot[i];

			if (!cq || cq->ch != ch ||
			    !atomic_exchange(&cq->sh->fired, 0))
				continue;
			pthread_mutex_unlock(&ctx->lock);
			*out = cq;
			return 0;
		}
		pthread_mutex_unlock(&ctx->lock);
		/* A wake-up for a CQ destroyed meanwhile: wait for more. */
	}
}

/* ---- CQ ------------------------------------------------------------------- */

int srdma_cq_create(struct srdma_context *ctx, const struct srdma_cq_args *a,
		    struct srdma_cq **out)
{
	struct srdma_chan *ch = NULL;
	struct srdma_pd *pd = NULL;
	struct srdma_shm_cq *sh;
	struct srdma_cq *cq;
	uint32_t size, slot, i;
	uint64_t off;
	int ret;

	if (!a->cqe || a->cqe > SRDMA_MAX_CQE) {
		srdma_dbg("create CQ: %u entries refused (1..%u, max_cqe)",
			  a->cqe, SRDMA_MAX_CQE);
		return -EINVAL;
	}
	if (a->comp_vector >= (uint32_t)ctx->vctx.context.num_comp_vectors) {
		srdma_dbg("create CQ: comp_vector %d refused (the device has "
			  "%d)", (int)a->comp_vector,
			  ctx->vctx.context.num_comp_vectors);
		return -EINVAL;
	}
	if (a->channel) {
		if (!srdma_handle_check(a->channel, SRDMA_OBJ_CHAN)) {
			srdma_dbg("create CQ: %p is not a completion channel",
				  (void *)a->channel);
			return -EINVAL;
		}
		ch = container_of(a->channel, struct srdma_chan, ibch);
		if (ch->ctx != ctx) {
			srdma_dbg("create CQ: completion channel of another "
				  "context");
			return -EINVAL;
		}
	}
	if (a->parent_domain) {
		pd = srdma_pd_lookup(a->parent_domain);
		if (!pd || pd->ctx != ctx || !pd->prot) {
			srdma_dbg("create CQ: %p is not a parent domain of "
				  "this context", (void *)a->parent_domain);
			return -EINVAL;
		}
	}
	if (SRDMA_FAULT(CQ_ALLOC))
		return -ENOMEM;
	/* From the parent domain's allocator, if it has one. */
	cq = srdma_pd_obj_alloc(pd, sizeof(*cq), SRDMA_RES_TYPE_CQ);
	if (!cq)
		return -ENOMEM;
	cq->pd = pd;
	size = srdma_roundup_pow2(a->cqe < 2 ? 2 : a->cqe);
	pthread_mutex_init(&cq->poll_lock, NULL);
	cq->ctx = ctx;
	cq->ch = ch;
	cq->is_ex = a->is_ex;
	cq->wc_flags = a->wc_flags;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < SRDMA_SEG_CQ_SLOTS; i++) {
		slot = (ctx->next_cq + i) % SRDMA_SEG_CQ_SLOTS;
		if (!ctx->cq_by_slot[slot])
			break;
	}
	if (i == SRDMA_SEG_CQ_SLOTS) {
		srdma_dbg("create CQ: all %u CQs of the context in use (max_cq)",
			  SRDMA_SEG_CQ_SLOTS);
		ret = -ENOMEM;
		goto err_unlock;
	}
	ret = srdma_arena_alloc(ctx, (uint64_t)size *
				sizeof(struct srdma_shm_cqe), &off);
	if (ret) {
		srdma_dbg("create CQ: no room for %u CQEs in the context's "
			  "%llu MiB ring arena", size,
			  (unsigned long long)(SRDMA_SEG_ARENA_SIZE >> 20));
		goto err_unlock;
	}
	sh = srdma_seg_cq(ctx->host.seg, slot);
	if (!ctx->cq_minit[slot]) {
		ret = srdma_shm_mutex_init(&sh->plock);
		if (ret)
			goto err_arena;
		ctx->cq_minit[slot] = 1;
	}
	cq->slot = slot;
	cq->sh = sh;
	cq->ring = srdma_seg_ptr(ctx->host.seg, off);
	cq->ring_bytes = (uint64_t)size * sizeof(struct srdma_shm_cqe);
	sh->size = size;
	sh->ring_off = off;
	sh->prod = 0;
	atomic_store(&sh->cons, 0);
	atomic_store(&sh->armed, SRDMA_CQ_DISARMED);
	atomic_store(&sh->fired, 0);
	atomic_store(&sh->notified, 0);
	atomic_store(&sh->overflow, 0);
	sh->chan = ch ? ch->num + 1 : 0;
	sh->gen++;
	sh->limit = a->cqe;
	sh->flags = ((a->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) ?
		     SRDMA_CQF_TS : 0) |
		    ((a->wc_flags &
		      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) ?
		     SRDMA_CQF_WALL : 0);

	cq->ib.cq.context = &ctx->vctx.context;
	cq->ib.cq.channel = a->channel;
	cq->ib.cq.cq_context = a->cq_context;
	cq->ib.cq.handle = slot;
	cq->ib.cq.cqe = (int)cqe_reported(size);
	pthread_mutex_init(&cq->ib.cq.mutex, NULL);
	pthread_cond_init(&cq->ib.cq.cond, NULL);
	ret = srdma_handle_add(cq, SRDMA_OBJ_CQ);
	if (ret)
		goto err_arena;
	if (ch)
		atomic_fetch_add(&ch->ncq, 1);
	ctx->cq_by_slot[slot] = cq;
	ctx->next_cq = slot + 1;
	ctx->n_cq++;
	if (pd)
		srdma_pd_hold(pd);
	/* Published: producers may post from now on. */
	atomic_store_explicit(&sh->state, SRDMA_OBJ_LIVE, memory_order_release);
	pthread_mutex_unlock(&ctx->lock);
	*out = cq;
	return 0;

err_arena:
	srdma_arena_free(ctx, off, (uint64_t)size *
			 sizeof(struct srdma_shm_cqe));
err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_destroy(&cq->poll_lock);
	srdma_pd_obj_free(pd, cq, SRDMA_RES_TYPE_CQ);
	return ret;
}

int srdma_cq_destroy(struct srdma_cq *cq)
{
	struct srdma_context *ctx = cq->ctx;
	struct srdma_shm_cq *sh = cq->sh;
	struct srdma_pd *pd = cq->pd;

	pthread_mutex_lock(&ctx->lock);
	if (cq->n_qp) {
		pthread_mutex_unlock(&ctx->lock);
		return -EBUSY;
	}
	if (!srdma_handle_del(cq, SRDMA_OBJ_CQ)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	/* Unpublish, then wait out a producer inside its section. */
	srdma_shm_lock(&sh->plock);
	atomic_store(&sh->state, SRDMA_OBJ_FREE);
	srdma_shm_unlock(&sh->plock);
	ctx->cq_by_slot[cq->slot] = NULL;
	ctx->n_cq--;
	srdma_arena_free(ctx, ring_off(cq), cq->ring_bytes);
	pthread_mutex_unlock(&ctx->lock);
	if (cq->ch)
		atomic_fetch_sub(&cq->ch->ncq, 1);
	pthread_mutex_destroy(&cq->poll_lock);
	pthread_mutex_destroy(&cq->ib.cq.mutex);
	pthread_cond_destroy(&cq->ib.cq.cond);
	srdma_pd_obj_free(pd, cq, SRDMA_RES_TYPE_CQ);
	if (pd)
		srdma_pd_unhold(pd);	/* last: the free used it */
	return 0;
}

int srdma_cq_resize(struct srdma_cq *cq, uint32_t cqe)
{
	struct srdma_context *ctx = cq->ctx;
	struct srdma_shm_cq *sh = cq->sh;
	struct srdma_shm_cqe *nring;
	uint32_t size, osize;
	uint64_t off, old_off, pos, cons, nbytes;
	int ret;

	if (!cqe || cqe > SRDMA_MAX_CQE) {
		srdma_dbg("resize CQ %u: %u entries refused (1..%u, max_cqe)",
			  cq->slot, cqe, SRDMA_MAX_CQE);
		return -EINVAL;
	}
	size = srdma_roundup_pow2(cqe < 2 ? 2 : cqe);
	nbytes = (uint64_t)size * sizeof(struct srdma_shm_cqe);
	pthread_mutex_lock(&ctx->lock);
	pthread_mutex_lock(&cq->poll_lock);
	ret = srdma_arena_alloc(ctx, nbytes, &off);
	if (ret) {
		srdma_dbg("resize CQ %u: no room for %u CQEs in the ring arena",
			  cq->slot, size);
		goto out;
	}
	nring = srdma_seg_ptr(ctx->host.seg, off);
	srdma_shm_lock(&sh->plock);
	cons = atomic_load(&sh->cons);
	if (sh->prod - cons > size) {
		uint64_t queued = sh->prod - cons;

		srdma_shm_unlock(&sh->plock);
		srdma_arena_free(ctx, off, nbytes);
		srdma_dbg("resize CQ %u to %u entries refused: %llu CQEs are "
			  "queued", cq->slot, cqe, (unsigned long long)queued);
		ret = -EINVAL;	/* would not hold what is queued */
		goto out;
	}
	osize = (uint32_t)(cq->ring_bytes / sizeof(struct srdma_shm_cqe));
	for (pos = cons; pos < sh->prod; pos++) {
		struct srdma_shm_cqe *o = &cq->ring[pos & (osize - 1)];
		struct srdma_shm_cqe *n = &nring[pos & (size - 1)];

		memcpy((char *)n + sizeof(n->seq), (char *)o + sizeof(o->seq),
		       sizeof(*n) - sizeof(n->seq));
		atomic_store_explicit(&n->seq, atomic_load(&o->seq),
				      memory_order_relaxed);
	}
	old_off = ring_off(cq);
	sh->ring_off = off;
	sh->size = size;
	sh->limit = cqe;
	srdma_shm_unlock(&sh->plock);
	srdma_arena_free(ctx, old_off, cq->ring_bytes);
	cq->ring = nring;
	cq->ring_bytes = nbytes;
	cq->ib.cq.cqe = (int)cqe_reported(size);
out:
	pthread_mutex_unlock(&cq->poll_lock);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/*
 * Wake-ups a thread holds back (srdma_cq_defer_wakes): the CQE is
 * published and the arming consumed at once, the event (fired + the
 * channel byte) delivered when the deferral ends. Per thread; a handful at
 * most (one message's receive completion, or its error flushes).
 */
#define DEFER_MAX 8
struct cq_wake {
	struct srdma_context *ctx;
	struct srdma_peer *p;
	struct srdma_shm_cq *sh;
	uint32_t slot;
};
static __thread bool defer_on;
static __thread unsigned int defer_n;
static __thread struct cq_wake defer_w[DEFER_MAX];

/* Deliver a completion event claimed from @sh's arming. */
static void cq_wake(const struct cq_wake *w)
{
	atomic_store(&w->sh->fired, 1);
	if (w->p && !w->p->self) {
		srdma_peer_wake_chan(w->ctx, w->p, w->sh->chan);
	} else {
		struct srdma_cq *cq = w->ctx->cq_by_slot[w->slot];
		char b = 1;

		if (cq && cq->ch && write(cq->ch->ibch.fd, &b, 1) != 1)
			srdma_warn("channel FIFO write failed");
	}
}

void srdma_cq_defer_wakes(bool on)
{
	unsigned int i, n = defer_n;

	defer_on = on;
	if (on)
		return;
	defer_n = 0;
	for (i = 0; i < n; i++)
		cq_wake(&defer_w[i]);
}

int srdma_cq_notify(struct srdma_cq *cq, bool solicited_only)
{
	struct srdma_shm_cq *sh = cq->sh;
	uint32_t armed = SRDMA_CQ_ARMED_ANY;
	uint64_t pos, cons, seen, mask;
	bool missed;

	atomic_store(&sh->armed, solicited_only ? SRDMA_CQ_ARMED_SOLICITED :
						  SRDMA_CQ_ARMED_ANY);
	if (solicited_only)
		return 0;
	/*
	 * A CQE that is neither polled nor covered by an event (it came
	 * while the CQ was disarmed) fires the event at once, as ConnectX
	 * does (the CQ remembers the index it last notified; the arm
	 * doorbell carries the consumer index). Open MPI's udcm polls,
	 * handles what it got, then arms, and never polls between: a
	 * message arriving meanwhile was never read. A CQE whose event the
	 * application took but has not polled yet (perftest arms, then
	 * polls) fires nothing. Pairs with the fence in srdma_cqe_post():
	 * either the producer sees the arming, or we see its CQE (or both;
	 * the CAS on armed lets one of us deliver the event).
	 */
	atomic_thread_fence(memory_order_seq_cst);
	pthread_mutex_lock(&cq->poll_lock);
	mask = cq->ring_bytes / sizeof(struct srdma_shm_cqe) - 1;
	cons = atomic_load_explicit(&sh->cons, memory_order_relaxed);
	seen = atomic_load(&sh->notified);
	pos = seen - cons <= mask ? seen : cons;	/* damaged: bounded */
	missed = atomic_load_explicit(&cq->ring[pos & mask].seq,
				      memory_order_relaxed) == pos + 1;
	pthread_mutex_unlock(&cq->poll_lock);
	if (missed && atomic_compare_exchange_strong(&sh->armed, &armed,
						     SRDMA_CQ_DISARMED)) {
		struct cq_wake w = { cq->ctx, NULL, sh, cq->slot };

		atomic_store(&sh->notified, pos + 1);
		cq_wake(&w);
	}
	return 0;
}

int srdma_cqe_post(struct srdma_context *ctx, struct srdma_peer *p,
		   uint32_t slot, const struct srdma_shm_cqe *cqe,
		   bool solicited)
{
	struct srdma_shm_cqe *ring;
	uint32_t size;
	bool died;
	struct srdma_seg_hdr *seg = p ? p->seg : ctx->host.seg;
	struct srdma_shm_cq *sh;
	struct srdma_shm_cqe *e;
	uint32_t armed;
	uint64_t pos;

	if (slot >= SRDMA_SEG_CQ_SLOTS)
		return -ENOENT;
	sh = srdma_seg_cq(seg, slot);
	died = srdma_shm_lock(&sh->plock);
	/* Read ring and size once, check the copy (the entry is writable
	 * by any process of the user): no index leaves the ring arena. */
	size = sh->size;
	ring = srdma_seg_ring(seg, sh->ring_off,
			      (uint64_t)size * sizeof(*e));
	if (died && size && ring) {
		/* A producer died after publishing a CQE but before moving
		 * prod past it: complete its step. */
		e = ring + (sh->prod & (size - 1));
		if (atomic_load(&e->seq) == sh->prod + 1)
			sh->prod++;
	}
	if (atomic_load_explicit(&sh->state, memory_order_acquire) !=
	    SRDMA_OBJ_LIVE || !size || !ring) {
		srdma_shm_unlock(&sh->plock);
		return -ENOENT;
	}
	pos = sh->prod;
	if (pos - atomic_load_explicit(&sh->cons, memory_order_acquire) >=
	    size) {
		uint32_t gen = sh->gen;
		bool first = !atomic_exchange(&sh->overflow, 1);

		srdma_shm_unlock(&sh->plock);
		srdma_warn("CQ %u of lid %u overflowed: completion lost", slot,
			   p ? p->lid : ctx->host.lid);
		if (first)
			srdma_aev_post(ctx, p, IBV_EVENT_CQ_ERR,
				       SRDMA_AEV_OBJ_CQ, slot, gen);
		return -ENOSPC;
	}
	e = ring + (pos & (size - 1));
	memcpy((char *)e + sizeof(e->seq), (const char *)cqe + sizeof(e->seq),
	       sizeof(*e) - sizeof(e->seq));
	/* Completion timestamps, as a NIC stamps a CQE when writing it. */
	if (unlikely(sh->flags & (SRDMA_CQF_TS | SRDMA_CQF_WALL))) {
		e->ts_ns = (sh->flags & SRDMA_CQF_TS) ? srdma_now_ns() : 0;
		e->wall_ns = (sh->flags & SRDMA_CQF_WALL) ?
			     srdma_wall_ns() : 0;
	}
	/* Publish the CQE, then the position (prod moves last). */
	atomic_store_explicit(&e->seq, pos + 1, memory_order_release);
	sh->prod = pos + 1;
	srdma_shm_unlock(&sh->plock);

	/* The CQE is published before the arming is read. Pairs with the
	 * fence in srdma_cq_notify(). */
	atomic_thread_fence(memory_order_seq_cst);
	armed = atomic_load(&sh->armed);
	if (armed == SRDMA_CQ_ARMED_ANY ||
	    (armed == SRDMA_CQ_ARMED_SOLICITED &&
	     (solicited || cqe->status != IBV_WC_SUCCESS))) {
		if (atomic_compare_exchange_strong(&sh->armed, &armed,
						   SRDMA_CQ_DISARMED)) {
			struct cq_wake w = { ctx, p, sh, slot };

			/* This CQE has its event (srdma_cq_notify()). */
			atomic_store(&sh->notified, pos + 1);

			if (defer_on && defer_n < DEFER_MAX)
				defer_w[defer_n++] = w;
			else
				cq_wake(&w);
		}
	}
	return 0;
}

void srdma_cq_clean(struct srdma_cq *cq, uint32_t qpn)
{
	struct srdma_shm_cq *sh = cq->sh;
	uint64_t pos, out, end;
	uint32_t mask;

	pthread_mutex_lock(&cq->poll_lock);
	srdma_shm_lock(&sh->plock);
	mask = (uint32_t)(cq->ring_bytes / sizeof(struct srdma_shm_cqe)) - 1;
	pos = out = atomic_load(&sh->cons);
	end = sh->prod;
	if (end - pos > (uint64_t)mask + 1)
		end = pos + mask + 1;	/* damaged counters: stay bounded */
	for (; pos < end; pos++) {
		struct srdma_shm_cqe *e = &cq->ring[pos & mask];

		if (e->qp_num == qpn)
			continue;
		if (out != pos) {
			struct srdma_shm_cqe *d = &cq->ring[out & mask];

			memcpy((char *)d + sizeof(d->seq),
			       (char *)e + sizeof(e->seq),
			       sizeof(*d) - sizeof(d->seq));
			atomic_store_explicit(&d->seq, out + 1,
					      memory_order_release);
		}
		out++;
	}
	for (pos = out; pos < end; pos++)
		atomic_store(&cq->ring[pos & mask].seq, 0);
	sh->prod = out;
	srdma_shm_unlock(&sh->plock);
	pthread_mutex_unlock(&cq->poll_lock);
}

int srdma_cq_pop(struct srdma_cq *cq, struct srdma_shm_cqe *out)
{
	struct srdma_shm_cq *sh = cq->sh;
	uint64_t pos = atomic_load_explicit(&sh->cons, memory_order_relaxed);
	uint64_t mask = cq->ring_bytes / sizeof(struct srdma_shm_cqe) - 1;
	struct srdma_shm_cqe *e = &cq->ring[pos & mask];

	if (atomic_load_explicit(&e->seq, memory_order_acquire) != pos + 1)
		return -ENOENT;
	*out = *e;
	/* Frees the slot for producers. */
	atomic_store_explicit(&sh->cons, pos + 1, memory_order_release);
	return 0;
}

void srdma_cqe_to_wc(const struct srdma_shm_cqe *e, struct ibv_wc *wc)
{
	wc->wr_id = e->wr_id;
	wc->status = (enum ibv_wc_status)e->status;
	wc->opcode = (enum ibv_wc_opcode)e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->imm_data = e->imm;
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->wc_flags = e->wc_flags;
	wc->pkey_index = e->pkey_index;
	wc->slid = e->slid;
	wc->sl = e->sl;
	wc->dlid_path_bits = e->dlid_path_bits;
	/* A matched TM receive carries its tag there, its immediate in
	 * slid/sl/dlid_path_bits (srq_tm.h). */
	if (srdma_cqe_tm_borrowed(e)) {
		wc->vendor_err = 0;
		wc->imm_data = srdma_cqe_imm(e);
		wc->pkey_index = 0;
		wc->slid = 0;
		wc->sl = 0;
		wc->dlid_path_bits = 0;
	}
}

int srdma_cq_poll(struct srdma_cq *cq, int n, struct ibv_wc *wc)
{
	struct srdma_shm_cqe e;
	int i;

	if (n < 0)
		return -EINVAL;
	pthread_mutex_lock(&cq->poll_lock);
	for (i = 0; i < n; i++) {
		if (srdma_cq_pop(cq, &e))
			break;
		srdma_cqe_to_wc(&e, &wc[i]);
	}
	pthread_mutex_unlock(&cq->poll_lock);
	return i;
}

/* Where @cq stands: CQEs produced and consumed so far (positions). */
static void cq_positions(struct srdma_cq *cq, uint64_t *prod, uint64_t *cons)
{
	srdma_shm_lock(&cq->sh->plock);
	*prod = cq->sh->prod;
	srdma_shm_unlock(&cq->sh->plock);
	*cons = atomic_load_explicit(&cq->sh->cons, memory_order_acquire);
}

int srdma_qp_cq_marks(struct srdma_context *ctx, uint32_t qpn,
		      struct srdma_cq_marks *m)
{
	uint32_t slot = qpn & ((1u << SRDMA_QPN_SHIFT) - 1);
	struct srdma_cq *cq[2];
	struct srdma_qp *qp;
	int i;

	pthread_mutex_lock(&ctx->lock);
	qp = qpn >> SRDMA_QPN_SHIFT == ctx->host.lid
		     ? srdma_qp_by_slot(ctx, slot)
		     : NULL;
	if (!qp || qp->opened || qp->zombie) {
		pthread_mutex_unlock(&ctx->lock);
		return -ENOENT;
	}
	/* Destroy waits out the pin (as a progress sweep's), and a CQ
	 * outlives its QPs: sq_lock may not be taken under ctx->lock. */
	atomic_fetch_add(&qp->busy, 1);
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_lock(&qp->sq_lock);
	/* Not qp->n_pend: a send deferred for RNR on this host waits for
	 * the peer's application, which will never answer once gone. */
	m->sq_busy = srdma_netreq_outstanding_locked(qp);
	pthread_mutex_unlock(&qp->sq_lock);
	cq[0] = qp->send_cq;
	cq[1] = qp->recv_cq;
	for (i = 0; i < 2; i++) {
		if (cq[i])
			cq_positions(cq[i], &m->prod[i], &m->cons[i]);
		else
			m->prod[i] = m->cons[i] = 0;
	}
	atomic_fetch_sub(&qp->busy, 1);
	return 0;
}
