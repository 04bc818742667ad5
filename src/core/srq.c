// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * srq.c - shared receive queues and address handles.
 *
 * An SRQ is a receive queue (struct srdma_shm_rq) in the SRQ table of the
 * segment, so initiators delivering a SEND to any QP attached to it pop
 * its WQEs themselves. The limit is armed by ibv_modify_srq(SRQ_LIMIT) and
 * disarmed by the consumer that leaves fewer WQEs than the limit queued;
 * that consumer raises IBV_EVENT_SRQ_LIMIT_REACHED in the owner's async
 * ring. The receive buffers are checked against the SRQ's PD
 * (verbs-semantics §5.1, step 3).
 *
 * Address handles are private: a UD send resolves the LID of the AH (or
 * its GID, which decodes to the LID) at post time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/srdma_parent_domain.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/xrc.h"
#include "core/srq_tm.h"
#include "util/fault.h"
#include "util/log.h"

/* Build and publish an SRQ; @xrcd and @cq are set for an XRC SRQ. */
static int srq_create(struct ibv_pd *ibpd, struct ibv_srq_init_attr *a,
		      struct srdma_xrcd *xrcd, struct srdma_cq *cq,
		      struct srdma_srq **out)
{
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);
	struct srdma_context *ctx;
	struct srdma_shm_srq *sh;
	struct srdma_srq *srq;
	uint32_t slot = 0, i;
	int ret;

	if (!pd || !a)
		return -EINVAL;
	ctx = pd->ctx;
	if (!a->attr.max_wr || a->attr.max_wr > SRDMA_MAX_SRQ_WR ||
	    a->attr.max_sge > SRDMA_MAX_SGE ||
	    a->attr.srq_limit > a->attr.max_wr) {
		srdma_dbg("create SRQ: max_wr %u max_sge %u srq_limit %u "
			  "refused (max_wr 1..%u, max_sge <= %u, limit <= "
			  "max_wr)", a->attr.max_wr, a->attr.max_sge,
			  a->attr.srq_limit, SRDMA_MAX_SRQ_WR, SRDMA_MAX_SGE);
		return -EINVAL;
	}
	if (SRDMA_FAULT(SRQ_ALLOC))
		return -ENOMEM;
	/* From the parent domain's allocator, if it has one. */
	srq = srdma_pd_obj_alloc(pd, sizeof(*srq), SRDMA_RES_TYPE_SRQ);
	if (!srq)
		return -ENOMEM;
	srq->ctx = ctx;
	srq->pd = pd;
	srq->max_wr = a->attr.max_wr;
	srq->max_sge = a->attr.max_sge ? a->attr.max_sge : 1;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < SRDMA_SEG_SRQ_SLOTS; i++) {
		slot = (ctx->next_srq + i) % SRDMA_SEG_SRQ_SLOTS;
		if (!ctx->srq_by_slot[slot])
			break;
	}
	if (i == SRDMA_SEG_SRQ_SLOTS) {
		srdma_dbg("create SRQ: all %u SRQs of the context in use "
			  "(max_srq)", SRDMA_SEG_SRQ_SLOTS);
		ret = -ENOMEM;
		goto err_unlock;
	}
	sh = srdma_seg_srq(ctx->host.seg, slot);
	ret = srdma_rq_init(ctx, &sh->rq, &ctx->srq_minit[slot], srq->max_wr,
			    srq->max_sge);
	if (ret)
		goto err_unlock;
	srq->slot = slot;
	srq->sh = sh;
	sh->gen++;
	sh->pd_handle = ibpd->handle;
	srq->xrcd = xrcd;
	srq->xrc_cq = cq;
	sh->xrc_cq = cq ? cq->slot + 1 : 0;
	sh->xrcd[0] = xrcd ? xrcd->id[0] : 0;
	sh->xrcd[1] = xrcd ? xrcd->id[1] : 0;
	atomic_store(&sh->limit, 0);
	atomic_store(&sh->error, 0);
	srq->ibsrq.context = ibpd->context;
	srq->ibsrq.srq_context = a->srq_context;
	srq->ibsrq.pd = ibpd;
	srq->ibsrq.handle = slot;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	ret = srdma_handle_add(srq, SRDMA_OBJ_SRQ);
	if (ret) {
		srdma_rq_fini(ctx, &sh->rq);
		goto err_unlock;
	}
	ctx->srq_by_slot[slot] = srq;
	ctx->next_srq = slot + 1;
	ctx->n_srq++;
	srdma_pd_hold(pd);
	if (xrcd) {
		atomic_fetch_add(&xrcd->usecnt, 1);
		cq->n_qp++;	/* the CQ may not go while we use it */
	}
	atomic_store_explicit(&sh->live, SRDMA_OBJ_LIVE, memory_order_release);
	pthread_mutex_unlock(&ctx->lock);
	a->attr.max_wr = srq->max_wr;
	a->attr.max_sge = srq->max_sge;
	*out = srq;
	return 0;

err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	srdma_pd_obj_free(pd, srq, SRDMA_RES_TYPE_SRQ);
	return ret;
}

int srdma_srq_create(struct ibv_pd *ibpd, struct ibv_srq_init_attr *a,
		     struct srdma_srq **out)
{
	return srq_create(ibpd, a, NULL, NULL, out);
}

int srdma_srq_create_xrc(struct srdma_context *ctx,
			 struct ibv_srq_init_attr_ex *a, struct srdma_srq **out)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct ibv_srq_init_attr basic;
	struct srdma_xrcd *xrcd;
	struct srdma_pd *pd;
	struct srdma_cq *cq;
	int ret;

	if ((a->comp_mask & need) != need) {
		srdma_dbg("create XRC SRQ: comp_mask %#x lacks TYPE, PD, XRCD "
			  "or CQ", a->comp_mask);
		return -EINVAL;
	}
	xrcd = srdma_xrcd_lookup(a->xrcd);
	pd = srdma_pd_lookup(a->pd);
	if (!xrcd || xrcd->ctx != ctx || !pd || pd->ctx != ctx ||
	    !a->cq || !srdma_handle_check(a->cq, SRDMA_OBJ_CQ) ||
	    to_scq(a->cq)->ctx != ctx) {
		srdma_dbg("create XRC SRQ: xrcd %p, pd %p, cq %p: not all of "
			  "this context", (void *)a->xrcd, (void *)a->pd,
			  (void *)a->cq);
		return -EINVAL;
	}
	cq = to_scq(a->cq);
	basic.srq_context = a->srq_context;
	basic.attr = a->attr;
	ret = srq_create(a->pd, &basic, xrcd, cq, out);
	if (!ret)
		a->attr = basic.attr;
	return ret;
}

uint32_t srdma_srq_num(const struct srdma_srq *srq)
{
	return srq->ctx->host.lid << SRDMA_QPN_SHIFT | srq->slot;
}

int srdma_srq_destroy(struct srdma_srq *srq)
{
	struct srdma_context *ctx = srq->ctx;
	struct srdma_shm_srq *sh = srq->sh;
	struct srdma_pd *pd = srq->pd;

	pthread_mutex_lock(&ctx->lock);
	if (srq->n_qp) {
		pthread_mutex_unlock(&ctx->lock);
		return -EBUSY;
	}
	if (!srdma_handle_del(srq, SRDMA_OBJ_SRQ)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	srdma_shm_lock(&sh->rq.rlock);
	atomic_store(&sh->live, SRDMA_OBJ_FREE);
	srdma_shm_unlock(&sh->rq.rlock);
	ctx->srq_by_slot[srq->slot] = NULL;
	srdma_rq_fini(ctx, &sh->rq);
	srdma_srq_tm_fini(srq);		/* a TM SRQ's tag list (srq_tm.c) */
	ctx->n_srq--;
	if (srq->xrcd) {
		srq->xrc_cq->n_qp--;
		atomic_fetch_sub(&srq->xrcd->usecnt, 1);
	}
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_destroy(&srq->ibsrq.mutex);
	pthread_cond_destroy(&srq->ibsrq.cond);
	srdma_pd_obj_free(pd, srq, SRDMA_RES_TYPE_SRQ);
	srdma_pd_unhold(pd);	/* last: the free used @pd */
	return 0;
}

int srdma_srq_modify(struct srdma_srq *srq, struct ibv_srq_attr *a, int mask)
{
	if (!a || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))) {
		srdma_dbg("modify SRQ %u: mask %#x refused", srq->slot, mask);
		return -EINVAL;
	}
	/* Resizing is not offered (no IBV_DEVICE_SRQ_RESIZE semantics
	 * beyond the granted size): growing within it is a no-op. */
	if ((mask & IBV_SRQ_MAX_WR) && a->max_wr > srq->max_wr) {
		srdma_dbg("modify SRQ %u: max_wr %u refused: SRQs do not "
			  "grow (created with %u)", srq->slot, a->max_wr,
			  srq->max_wr);
		return -EINVAL;
	}
	if (mask & IBV_SRQ_LIMIT) {
		if (a->srq_limit > srq->max_wr) {
			srdma_dbg("modify SRQ %u: srq_limit %u above max_wr "
				  "%u", srq->slot, a->srq_limit, srq->max_wr);
			return -EINVAL;
		}
		pthread_mutex_lock(&srq->ctx->lock);
		srq->srq_limit = a->srq_limit;
		pthread_mutex_unlock(&srq->ctx->lock);
		atomic_store(&srq->sh->limit, a->srq_limit);
	}
	return 0;
}

int srdma_srq_query(struct srdma_srq *srq, struct ibv_srq_attr *a)
{
	if (!a)
		return -EINVAL;
	a->max_wr = srq->max_wr;
	a->max_sge = srq->max_sge;
	a->srq_limit = atomic_load(&srq->sh->limit);
	return 0;
}

int srdma_srq_post_recv(struct srdma_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	return srdma_rq_push(&srq->sh->rq, srq->ctx->host.seg, srq->max_wr, wr,
			     bad);
}

/* ---- address handles ----------------------------------------------------- */

int srdma_ah_create(struct ibv_pd *ibpd, struct ibv_ah_attr *a,
		    struct srdma_ah **out)
{
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);
	struct srdma_ah *ah;
	uint32_t lid;
	int ret;

	if (!pd || !a)
		return -EINVAL;
	if (a->port_num != 1) {
		srdma_dbg("create AH: port_num %u refused (one port)",
			  a->port_num);
		return -EINVAL;
	}
	if (srdma_link_is_eth()) {
		/* RoCE: a GRH with one of our GIDs; the QPN routes, the
		 * LID is unused (0). */
		if (!a->is_global ||
		    a->grh.sgid_index >= pd->ctx->gids.n) {
			srdma_dbg("create AH: RoCE port needs a GRH with "
				  "sgid_index < %u (is_global %u, index %u)",
				  pd->ctx->gids.n, a->is_global,
				  a->grh.sgid_index);
			return -EINVAL;
		}
		lid = 0;
	} else {
		if (a->is_global && a->grh.sgid_index >= 1) {
			srdma_dbg("create AH: sgid_index %u refused (one GID)",
				  a->grh.sgid_index);
			return -EINVAL;
		}
		lid = srdma_av_lid(a);
		if (!lid) {
			srdma_dbg("create AH: no destination LID (dlid 0 and "
				  "no GRH naming one)");
			return -EINVAL;
		}
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ah->pd = pd;
	ah->attr = *a;
	ah->dlid = lid;
	ah->ibah.context = ibpd->context;
	ah->ibah.pd = ibpd;
	ah->ibah.handle = lid;
	ret = srdma_handle_add(ah, SRDMA_OBJ_AH);
	if (ret) {
		free(ah);
		return ret;
	}
	srdma_pd_hold(pd);
	*out = ah;
	return 0;
}

int srdma_ah_destroy(struct srdma_ah *ah)
{
	if (!srdma_handle_del(ah, SRDMA_OBJ_AH))
		return -EINVAL;
	srdma_pd_unhold(ah->pd);
	free(ah);
	return 0;
}
