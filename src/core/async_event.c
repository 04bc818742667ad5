// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * async_event.c - the context's asynchronous event queue.
 *
 * Events (CQ overflow, QP fatal, SRQ limit, last WQE reached...) may be
 * raised by any process: an initiator that overflows our CQ or drains our
 * SRQ below its limit is the one that notices. So the queue is a small
 * ring in the context's shared segment (struct srdma_shm_aq, robust
 * mutex), and the context's async_fd is the read end of a FIFO that gets
 * one byte per queued event: it polls readable exactly while events wait,
 * and ibv_get_async_event() blocks in read() unless the application made
 * the fd non-blocking. The ring names objects by slot and generation; the
 * owner maps them back to its pointers, and drops events whose object is
 * gone (destroyed meanwhile).
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "util/log.h"

void srdma_aev_post(struct srdma_context *ctx, struct srdma_peer *p,
		    uint32_t type, uint32_t obj, uint32_t slot, uint32_t gen)
{
	struct srdma_seg_hdr *seg = p ? p->seg : ctx->host.seg;
	struct srdma_shm_aq *aq = srdma_seg_aq(seg);
	bool queued = false;

	srdma_shm_lock(&aq->lock);
	if (aq->tail - aq->head < SRDMA_SEG_AQ_SLOTS) {
		struct srdma_shm_aev *e = &aq->ev[aq->tail % SRDMA_SEG_AQ_SLOTS];

		e->type = type;
		e->obj = obj;
		e->slot = slot;
		e->gen = gen;
		aq->tail++;
		queued = true;
	} else {
		aq->dropped++;
	}
	srdma_shm_unlock(&aq->lock);
	if (!queued) {
		srdma_warn("async event %u dropped: queue full", type);
		return;
	}
	if (p && !p->self) {
		srdma_peer_wake_async(ctx, p);
	} else {
		char b = 1;

		if (write(ctx->async_fd, &b, 1) != 1)
			srdma_warn("async FIFO write failed");
	}
}

/* Map a ring entry to the owner's object. Requires ctx->lock. */
static bool resolve(struct srdma_context *ctx, const struct srdma_shm_aev *e,
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
		struct srdma_shm_aev e;
		bool have = false;
		char b;
		ssize_t n = read(ctx->async_fd, &b, 1);

		if (n < 0 && errno == EINTR)
			continue;
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
		srdma_shm_lock(&aq->lock);
		if (aq->head != aq->tail) {
			e = aq->ev[aq->head % SRDMA_SEG_AQ_SLOTS];
			aq->head++;
			have = true;
		}
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
