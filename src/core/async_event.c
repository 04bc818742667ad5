// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * async_event.c - the context's asynchronous event queue.
 *
 * Events (CQ overflow, QP fatal, SRQ limit, last WQE reached...) may be
 * raised by any process: an initiator that overflows our CQ or drains our
 * SRQ below its limit is the one that notices. So the queue lives in the
 * context's shared segment (struct srdma_shm_aq, robust mutex), and the
 * context's async_fd is the read end of a FIFO that gets one byte per
 * queued event: it polls readable while events wait, and
 * ibv_get_async_event() blocks in read() unless the application made the
 * fd non-blocking.
 *
 * Nothing is dropped. The queue is kept per object: a record per QP, CQ
 * and SRQ slot (and the port) holds a bit per event type still unread, and
 * a ring lists the records with pending bits in the order they got their
 * first one. A record is in the ring exactly while its bits are non-zero,
 * so the ring, larger than the number of records, cannot fill. An event
 * that finds its bit already set is merged with it (the same fatal event
 * of one object, raised twice before the owner read it, is reported once,
 * as the kernel may). The owner reads the head record's lowest pending
 * bit, maps (slot, generation) back to its object and drops events whose
 * object was destroyed meanwhile. Design: docs/design/data-path.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "util/log.h"

/* First record of each object kind in srdma_shm_aq.obj[]. */
#define AQ_QP_BASE 0u
#define AQ_CQ_BASE (AQ_QP_BASE + SRDMA_SEG_QP_SLOTS)
#define AQ_SRQ_BASE (AQ_CQ_BASE + SRDMA_SEG_CQ_SLOTS)
#define AQ_PORT_IDX (AQ_SRQ_BASE + SRDMA_SEG_SRQ_SLOTS)
static_assert(AQ_PORT_IDX + 1 == SRDMA_SEG_AQ_OBJS, "aq record map");

#define EVB(t) (1u << (t))
/* The event types each kind of object can have (bounds the FIFO bytes). */
#define AQ_QP_TYPES                                                            \
	(EVB(IBV_EVENT_QP_FATAL) | EVB(IBV_EVENT_QP_REQ_ERR) |                 \
	 EVB(IBV_EVENT_QP_ACCESS_ERR) | EVB(IBV_EVENT_COMM_EST) |              \
	 EVB(IBV_EVENT_SQ_DRAINED) | EVB(IBV_EVENT_PATH_MIG) |                 \
	 EVB(IBV_EVENT_PATH_MIG_ERR) | EVB(IBV_EVENT_QP_LAST_WQE_REACHED))
#define AQ_CQ_TYPES EVB(IBV_EVENT_CQ_ERR)
#define AQ_SRQ_TYPES                                                           \
	(EVB(IBV_EVENT_SRQ_ERR) | EVB(IBV_EVENT_SRQ_LIMIT_REACHED))
#define AQ_PORT_TYPES                                                          \
	(EVB(IBV_EVENT_DEVICE_FATAL) | EVB(IBV_EVENT_PORT_ACTIVE) |            \
	 EVB(IBV_EVENT_PORT_ERR) | EVB(IBV_EVENT_LID_CHANGE) |                 \
	 EVB(IBV_EVENT_PKEY_CHANGE) | EVB(IBV_EVENT_SM_CHANGE) |               \
	 EVB(IBV_EVENT_CLIENT_REREGISTER) | EVB(IBV_EVENT_GID_CHANGE))

/*
 * At most this many events can be pending at once (8 types per QP and per
 * port, 1 per CQ, 2 per SRQ), hence one byte each in the FIFO at most.
 */
#define AQ_MAX_PENDING                                                         \
	(8u * SRDMA_SEG_QP_SLOTS + SRDMA_SEG_CQ_SLOTS +                        \
	 2u * SRDMA_SEG_SRQ_SLOTS + 8u)
#define AQ_FIFO_BYTES (256u * 1024)
static_assert(AQ_FIFO_BYTES >= AQ_MAX_PENDING, "async FIFO holds them all");

/* One event as taken from the queue. */
struct aev {
	uint32_t type;			/* enum ibv_event_type */
	uint32_t obj;			/* SRDMA_AEV_OBJ_* */
	uint32_t slot;			/* object slot (QP: QPN low bits) */
	uint32_t gen;			/* object generation */
};

/* The record of (@obj, @slot) if @type is an event it can have. */
static bool aq_index(uint32_t obj, uint32_t slot, uint32_t type,
		     uint32_t *idx)
{
	uint32_t types;

	if (type >= 32)
		return false;
	switch (obj) {
	case SRDMA_AEV_OBJ_QP:
		*idx = AQ_QP_BASE + slot;
		types = slot < SRDMA_SEG_QP_SLOTS ? AQ_QP_TYPES : 0;
		break;
	case SRDMA_AEV_OBJ_CQ:
		*idx = AQ_CQ_BASE + slot;
		types = slot < SRDMA_SEG_CQ_SLOTS ? AQ_CQ_TYPES : 0;
		break;
	case SRDMA_AEV_OBJ_SRQ:
		*idx = AQ_SRQ_BASE + slot;
		types = slot < SRDMA_SEG_SRQ_SLOTS ? AQ_SRQ_TYPES : 0;
		break;
	case SRDMA_AEV_OBJ_PORT:
		*idx = AQ_PORT_IDX;
		types = AQ_PORT_TYPES;
		break;
	default:
		types = 0;
	}
	return types & EVB(type);
}

/*
 * A holder of aq->lock died inside its section: rebuild the ring from the
 * records, so each record with pending bits is listed once, in the order
 * the ring had (a record the dead poster had not listed yet goes last).
 * Requires aq->lock.
 */
static void aq_repair(struct srdma_shm_aq *aq)
{
	uint64_t seen[(SRDMA_SEG_AQ_OBJS + 63) / 64] = {0};
	uint64_t n = aq->tail - aq->head, rd, wr = aq->head;
	uint32_t idx;

	if (n > SRDMA_SEG_AQ_SLOTS)
		n = 0;
	for (rd = aq->head; rd != aq->head + n; rd++) {
		idx = aq->ring[rd % SRDMA_SEG_AQ_SLOTS];
		if (idx >= SRDMA_SEG_AQ_OBJS || !aq->obj[idx].pending ||
		    (seen[idx / 64] & (1ull << (idx % 64))))
			continue;
		seen[idx / 64] |= 1ull << (idx % 64);
		aq->ring[wr++ % SRDMA_SEG_AQ_SLOTS] = idx;
	}
	for (idx = 0; idx < SRDMA_SEG_AQ_OBJS; idx++)
		if (aq->obj[idx].pending &&
		    !(seen[idx / 64] & (1ull << (idx % 64))))
			aq->ring[wr++ % SRDMA_SEG_AQ_SLOTS] = idx;
	aq->tail = wr;
	srdma_warn("async queue: a process died while posting; repaired "
		   "(%llu pending objects)",
		   (unsigned long long)(aq->tail - aq->head));
}

static void aq_lock(struct srdma_shm_aq *aq)
{
	if (srdma_shm_lock(&aq->lock))
		aq_repair(aq);
}

void srdma_async_init(struct srdma_context *ctx)
{
	/*
	 * One byte per pending event; the default 64 KiB could be exceeded
	 * only by thousands of objects with several unread event types each.
	 * Best effort: a user over its pipe quota keeps the default size.
	 */
	if (fcntl(ctx->async_fd, F_SETPIPE_SZ, (int)AQ_FIFO_BYTES) < 0)
		srdma_dbg("async FIFO: cannot grow to %u bytes: %d",
			  AQ_FIFO_BYTES, errno);
}

void srdma_aev_post(struct srdma_context *ctx, struct srdma_peer *p,
		    uint32_t type, uint32_t obj, uint32_t slot, uint32_t gen)
{
	struct srdma_seg_hdr *seg = p ? p->seg : ctx->host.seg;
	struct srdma_shm_aq *aq = srdma_seg_aq(seg);
	struct srdma_shm_aq_obj *o;
	bool wake = false;
	uint32_t idx;

	if (!aq_index(obj, slot, type, &idx)) {
		srdma_warn("async event %u for object %u slot %u: invalid",
			   type, obj, slot);
		return;
	}
	aq_lock(aq);
	o = &aq->obj[idx];
	if (o->pending && o->gen != gen) {
		/*
		 * Pending events of another generation: if ours is the older
		 * one, its object is gone (the owner drops such events anyway).
		 * Otherwise theirs was destroyed and the slot reused: the new
		 * object takes the record over, in its ring position. The
		 * FIFO already holds at least one byte for it.
		 */
		if ((int32_t)(gen - o->gen) > 0) {
			o->pending = EVB(type);
			o->gen = gen;
		}
	} else if (o->pending & EVB(type)) {
		aq->merged++;
	} else {
		if (!o->pending)
			aq->ring[aq->tail++ % SRDMA_SEG_AQ_SLOTS] = idx;
		o->pending |= EVB(type);
		o->gen = gen;
		wake = true;
	}
	srdma_shm_unlock(&aq->lock);
	if (!wake)
		return;
	if (p && !p->self) {
		srdma_peer_wake_async(ctx, p);
	} else {
		char b = 1;

		if (write(ctx->async_fd, &b, 1) != 1)
			srdma_warn("async FIFO write failed");
	}
}

/*
 * Take the oldest pending event: the lowest type bit of the record at the
 * ring's head (a record leaves the ring with its last bit). Requires
 * aq->lock. Return false if none is pending.
 */
static bool aq_take(struct srdma_shm_aq *aq, struct aev *e)
{
	struct srdma_shm_aq_obj *o;
	uint32_t idx;

	if (aq->tail - aq->head > SRDMA_SEG_AQ_SLOTS)
		aq_repair(aq);	/* corrupted indices: trust the records */
	for (; aq->head != aq->tail; aq->head++) {
		idx = aq->ring[aq->head % SRDMA_SEG_AQ_SLOTS];
		if (idx < SRDMA_SEG_AQ_OBJS && aq->obj[idx].pending)
			break;
	}
	if (aq->head == aq->tail)
		return false;
	o = &aq->obj[idx];
	e->type = (uint32_t)__builtin_ctz(o->pending);
	e->gen = o->gen;
	o->pending &= ~EVB(e->type);
	if (!o->pending)
		aq->head++;
	if (idx >= AQ_PORT_IDX) {
		e->obj = SRDMA_AEV_OBJ_PORT;
		e->slot = 0;
	} else if (idx >= AQ_SRQ_BASE) {
		e->obj = SRDMA_AEV_OBJ_SRQ;
		e->slot = idx - AQ_SRQ_BASE;
	} else if (idx >= AQ_CQ_BASE) {
		e->obj = SRDMA_AEV_OBJ_CQ;
		e->slot = idx - AQ_CQ_BASE;
	} else {
		e->obj = SRDMA_AEV_OBJ_QP;
		e->slot = idx - AQ_QP_BASE;
	}
	return true;
}

/* Map a ring entry to the owner's object. Requires ctx->lock. */
static bool resolve(struct srdma_context *ctx, const struct aev *e,
		    struct ibv_async_event *ev)
{
	ev->event_type = (enum ibv_event_type)e->type;
	switch (e->obj) {
	case SRDMA_AEV_OBJ_CQ: {
		struct srdma_cq *cq = e->slot < SRDMA_SEG_CQ_SLOTS ?
				      ctx->cq_by_slot[e->slot] : NULL;

		if (!cq || cq->sh->gen != e->gen)
			return false;
		ev->element.cq = &cq->ib.cq;
		return true;
	}
	case SRDMA_AEV_OBJ_QP: {
		struct srdma_qp *qp = e->slot < SRDMA_SEG_QP_SLOTS ?
				      ctx->qp_by_slot[e->slot] : NULL;

		if (!qp || qp->sh->gen != e->gen)
			return false;
		ev->element.qp = &qp->ib.qp;
		return true;
	}
	case SRDMA_AEV_OBJ_SRQ: {
		struct srdma_srq *srq = e->slot < SRDMA_SEG_SRQ_SLOTS ?
					ctx->srq_by_slot[e->slot] : NULL;

		if (!srq || srq->sh->gen != e->gen)
			return false;
		ev->element.srq = &srq->ibsrq;
		return true;
	}
	case SRDMA_AEV_OBJ_PORT:
		ev->element.port_num = 1;
		return true;
	default:
		return false;
	}
}

int srdma_async_get(struct srdma_context *ctx, struct ibv_async_event *ev)
{
	struct srdma_shm_aq *aq = srdma_seg_aq(ctx->host.seg);

	for (;;) {
		struct aev e;
		bool have;
		char b;
		ssize_t n = read(ctx->async_fd, &b, 1);

		/* -EINTR on a signal, as rdma-core (see srdma_chan_get_event) */
		if (n != 1)
			return n < 0 ? -errno : -EIO;
		/* Our segment was truncated or overwritten, or our registry
		 * mapping shrank (shm_guard.c; a peer that found our segment
		 * malformed woke us): the device is gone for this context.
		 * Reported once. */
		if (!atomic_load(&ctx->fatal_sent) &&
		    (srdma_shm_poisoned(ctx->host.reg.hdr) ||
		     !srdma_host_seg_intact(&ctx->host)) &&
		    !atomic_exchange(&ctx->fatal_sent, true)) {
			srdma_err("context lid %u: shared state damaged by "
				  "another process: device fatal",
				  ctx->host.lid);
			ev->event_type = IBV_EVENT_DEVICE_FATAL;
			ev->element.port_num = 1;
			return 0;
		}
		aq_lock(aq);
		have = aq_take(aq, &e);
		srdma_shm_unlock(&aq->lock);
		if (!have)
			continue;
		pthread_mutex_lock(&ctx->lock);
		have = resolve(ctx, &e, ev);
		pthread_mutex_unlock(&ctx->lock);
		if (have)
			return 0;
		srdma_dbg("async event %u for a destroyed object dropped",
			  e.type);
	}
}
