// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * srq_tm.c - tag-matching SRQs, the owner's side: create, the list
 * operations of ibv_post_srq_ops (TAG_ADD, TAG_DEL, TAG_SYNC) and destroy.
 *
 * The list lives in shared memory (srq_tm.h) because whoever delivers a
 * message matches it: an initiator in another process on this host, or
 * our own progress thread for the net transport (engine/tm.c). An
 * operation runs to completion inside ibv_post_srq_ops, under the SRQ's
 * robust rq.rlock, and its CQE (when signaled, or on failure) is in the
 * SRQ's CQ before the next WR starts; so there is never an outstanding
 * operation and max_ops is only checked.
 *
 * Phase synchronisation, as the man page and mlx5 have it: the device
 * counts the unexpected messages it delivered (hw_unexp), the application
 * says how many it has handled (unexpected_cnt with IBV_OPS_TM_SYNC,
 * sw_unexp). A tag added while the two differ is not matched until they
 * agree again (its ADD completes with IBV_WC_TM_SYNC_REQ); tags added
 * while in sync match as usual.
 *
 * Errors follow mlx5: an unknown opcode or flag, a bad SGE count and a
 * DEL handle outside the list are refused with EINVAL, a full list with
 * ENOMEM (*bad_wr set, the WRs before it done); a DEL of a tag that is
 * not in the list (never added, deleted, consumed, or a rendezvous still
 * reading) completes with IBV_WC_TM_ERR, signaled or not.
 */
#include <errno.h>
#include <string.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/srq_tm.h"
#include "util/log.h"

#define TM_REQUIRED_MASK                                                       \
	(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ | \
	 IBV_SRQ_INIT_ATTR_TM)

static int tm_check_attr(struct ibv_context *ibctx,
			 const struct ibv_srq_init_attr_ex *a)
{
	struct srdma_pd *pd;

	if ((a->comp_mask & ~(uint32_t)(TM_REQUIRED_MASK)) ||
	    (a->comp_mask & TM_REQUIRED_MASK) != TM_REQUIRED_MASK) {
		srdma_dbg("create TM SRQ: comp_mask %#x refused (TYPE, PD, CQ "
			  "and TM required, nothing else)", a->comp_mask);
		return -EINVAL;
	}
	pd = srdma_pd_lookup(a->pd);
	if (!pd || &pd->ctx->vctx.context != ibctx) {
		srdma_dbg("create TM SRQ: no PD of this context");
		return -EINVAL;
	}
	if (!a->cq || !srdma_handle_check(a->cq, SRDMA_OBJ_CQ) ||
	    to_scq(a->cq)->ctx != pd->ctx) {
		srdma_dbg("create TM SRQ: no CQ of this context");
		return -EINVAL;
	}
	if (!a->tm_cap.max_num_tags ||
	    a->tm_cap.max_num_tags > SRDMA_TM_MAX_TAGS ||
	    !a->tm_cap.max_ops || a->tm_cap.max_ops > SRDMA_TM_MAX_OPS) {
		srdma_dbg("create TM SRQ: max_num_tags %u max_ops %u refused "
			  "(1..%u tags, 1..%u ops)", a->tm_cap.max_num_tags,
			  a->tm_cap.max_ops, SRDMA_TM_MAX_TAGS,
			  SRDMA_TM_MAX_OPS);
		return -EINVAL;
	}
	return 0;
}

int srdma_srq_tm_create(struct ibv_context *ibctx,
			struct ibv_srq_init_attr_ex *a, struct srdma_srq **out)
{
	struct ibv_srq_init_attr basic;
	struct srdma_context *ctx;
	struct srdma_shm_tm *tm;
	struct srdma_srq *srq;
	struct srdma_cq *cq;
	uint64_t off, bytes;
	int ret;

	if (!a)
		return -EINVAL;
	ret = tm_check_attr(ibctx, a);
	if (ret)
		return ret;
	memset(&basic, 0, sizeof(basic));
	basic.srq_context = a->srq_context;
	basic.attr = a->attr;
	ret = srdma_srq_create(a->pd, &basic, &srq);
	if (ret)
		return ret;
	ctx = srq->ctx;
	cq = to_scq(a->cq);
	bytes = srdma_tm_bytes(a->tm_cap.max_num_tags);
	pthread_mutex_lock(&ctx->lock);
	ret = srdma_arena_alloc(ctx, bytes, &off);
	if (ret) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("create TM SRQ: no room for %u tags in the ring "
			  "arena", a->tm_cap.max_num_tags);
		goto err_destroy;
	}
	tm = srdma_seg_ring(ctx->host.seg, off, bytes);
	/* Zeroed by the allocator: every tag FREE, both counts 0. */
	tm->magic = SRDMA_TM_MAGIC;
	tm->max_tags = a->tm_cap.max_num_tags;
	tm->cq = cq->slot;
	cq->n_qp++;		/* the CQ cannot go while the SRQ uses it */
	srq->tm = tm;
	srq->tm_off = off;
	srq->tm_bytes = bytes;
	srq->tm_cq = cq;
	/* No QP can be on the SRQ yet: nobody matches before this. */
	srdma_shm_lock(&srq->sh->rq.rlock);
	srq->sh->tm_off = off;
	srdma_shm_unlock(&srq->sh->rq.rlock);
	pthread_mutex_unlock(&ctx->lock);
	srq->ibsrq.srq_context = a->srq_context;
	a->attr.max_wr = basic.attr.max_wr;
	a->attr.max_sge = basic.attr.max_sge;
	*out = srq;
	return 0;

err_destroy:
	srdma_srq_destroy(srq);
	return ret;
}

void srdma_srq_tm_fini(struct srdma_srq *srq)
{
	if (!srq->tm)
		return;
	srdma_shm_lock(&srq->sh->rq.rlock);
	srq->sh->tm_off = 0;
	srdma_shm_unlock(&srq->sh->rq.rlock);
	srdma_arena_free(srq->ctx, srq->tm_off, srq->tm_bytes);
	srq->tm_cq->n_qp--;
	srq->tm = NULL;
}

/* ---- list operations ----------------------------------------------------- */

/* Post the completion of an operation to the SRQ's CQ. */
static void op_cqe(struct srdma_srq *srq, const struct ibv_ops_wr *wr,
		   uint8_t opcode, uint8_t status, uint16_t flags)
{
	struct srdma_shm_cqe c = { 0 };

	if (!(wr->flags & IBV_OPS_SIGNALED) && status == IBV_WC_SUCCESS)
		return;
	c.wr_id = wr->wr_id;
	c.status = status;
	c.opcode = opcode;
	c.wc_flags = flags;
	srdma_cqe_post(srq->ctx, NULL, srq->tm->cq, &c, false);
}

/* Pure check of one WR against the list. Requires rlock. */
static int op_check(const struct srdma_srq *srq, const struct ibv_ops_wr *wr,
		    uint32_t *free_idx)
{
	const struct srdma_shm_tm *tm = srq->tm;
	uint32_t i;

	if (wr->flags & ~(int)(IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC)) {
		srdma_dbg("post_srq_ops SRQ %u: flags %#x refused", srq->slot,
			  wr->flags);
		return -EINVAL;
	}
	switch (wr->opcode) {
	case IBV_WR_TAG_ADD:
		if (wr->tm.add.num_sge < 0 ||
		    wr->tm.add.num_sge > (int)SRDMA_TM_MAX_SGE ||
		    (wr->tm.add.num_sge && !wr->tm.add.sg_list)) {
			srdma_dbg("post_srq_ops SRQ %u: TAG_ADD with %d SGEs "
				  "refused (0..%u)", srq->slot,
				  wr->tm.add.num_sge, SRDMA_TM_MAX_SGE);
			return -EINVAL;
		}
		for (i = 0; i < tm->max_tags; i++)
			if (tm->tags[i].state == SRDMA_TAG_FREE)
				break;
		if (i == tm->max_tags) {
			srdma_dbg("post_srq_ops SRQ %u: TAG_ADD: the tag list "
				  "is full (%u tags)", srq->slot,
				  tm->max_tags);
			return -ENOMEM;
		}
		*free_idx = i;
		return 0;
	case IBV_WR_TAG_DEL:
		if (wr->tm.handle >= tm->max_tags) {
			srdma_dbg("post_srq_ops SRQ %u: TAG_DEL handle %u "
				  "outside the list (%u tags)", srq->slot,
				  wr->tm.handle, tm->max_tags);
			return -EINVAL;
		}
		return 0;
	case IBV_WR_TAG_SYNC:
		return 0;
	default:
		srdma_dbg("post_srq_ops SRQ %u: opcode %d refused (TAG_ADD, "
			  "TAG_DEL, TAG_SYNC)", srq->slot, (int)wr->opcode);
		return -EINVAL;
	}
}

/* The application's count; a sync that catches up makes every posted tag
 * matchable. Requires rlock. */
static void op_sync(struct srdma_shm_tm *tm, const struct ibv_ops_wr *wr)
{
	uint32_t i;

	if (!(wr->flags & IBV_OPS_TM_SYNC))
		return;
	tm->sw_unexp = wr->tm.unexpected_cnt;
	if (tm->sw_unexp != tm->hw_unexp)
		return;
	for (i = 0; i < tm->max_tags; i++)
		if (tm->tags[i].state == SRDMA_TAG_POSTED)
			tm->tags[i].coherent = 1;
}

/* Apply one checked WR. Requires rlock; cannot fail (a DEL of a tag not
 * in the list is a TM_ERR completion). */
static void op_apply(struct srdma_srq *srq, struct ibv_ops_wr *wr,
		     uint32_t idx)
{
	struct srdma_shm_tm *tm = srq->tm;
	struct srdma_shm_tm_tag *g;
	uint16_t flags = 0;
	uint8_t status = IBV_WC_SUCCESS;
	int i;

	op_sync(tm, wr);
	switch (wr->opcode) {
	case IBV_WR_TAG_ADD:
		g = &tm->tags[idx];
		g->num_sge = (uint32_t)wr->tm.add.num_sge;
		for (i = 0; i < wr->tm.add.num_sge; i++) {
			g->sge[i].addr = wr->tm.add.sg_list[i].addr;
			g->sge[i].length = wr->tm.add.sg_list[i].length;
			g->sge[i].lkey = wr->tm.add.sg_list[i].lkey;
		}
		g->tag = wr->tm.add.tag;
		g->mask = wr->tm.add.mask;
		g->wr_id = wr->tm.add.recv_wr_id;
		g->seq = tm->next_seq++;
		g->coherent = tm->sw_unexp == tm->hw_unexp;
		g->state = SRDMA_TAG_POSTED;
		wr->tm.handle = idx;
		if (!g->coherent)
			flags = IBV_WC_TM_SYNC_REQ;
		op_cqe(srq, wr, IBV_WC_TM_ADD, status, flags);
		break;
	case IBV_WR_TAG_DEL:
		g = &tm->tags[wr->tm.handle];
		if (g->state != SRDMA_TAG_POSTED) {
			srdma_dbg("post_srq_ops SRQ %u: TAG_DEL handle %u: no "
				  "such tag in the list (%s)", srq->slot,
				  wr->tm.handle,
				  g->state == SRDMA_TAG_BUSY ?
					  "rendezvous in progress" :
					  "free or consumed");
			status = IBV_WC_TM_ERR;
		} else {
			g->state = SRDMA_TAG_FREE;
		}
		if (tm->sw_unexp != tm->hw_unexp)
			flags = IBV_WC_TM_SYNC_REQ;
		op_cqe(srq, wr, IBV_WC_TM_DEL, status, flags);
		break;
	default:			/* IBV_WR_TAG_SYNC */
		op_cqe(srq, wr, IBV_WC_TM_SYNC, status, 0);
		break;
	}
}

int srdma_srq_tm_post_ops(struct srdma_srq *srq, struct ibv_ops_wr *wr,
			  struct ibv_ops_wr **bad)
{
	uint32_t idx = 0;
	int ret = 0;

	if (!srq->tm) {
		srdma_dbg("post_srq_ops: SRQ %u is not a tag-matching SRQ",
			  srq->slot);
		if (bad)
			*bad = wr;
		return -EINVAL;
	}
	srdma_shm_lock(&srq->sh->rq.rlock);
	for (; wr; wr = wr->next) {
		ret = op_check(srq, wr, &idx);
		if (ret) {
			if (bad)
				*bad = wr;
			break;
		}
		op_apply(srq, wr, idx);
	}
	srdma_shm_unlock(&srq->sh->rq.rlock);
	return ret;
}
