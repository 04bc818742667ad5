// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * qp.c - queue pairs: create, modify (the state machine of qp_state.c),
 * query, destroy, and the receive queue.
 *
 * The QP number is host-unique: (LID << SRDMA_QPN_SHIFT) | slot, so a QPN
 * names its context. The receive queue lives in the ring arena and its
 * entry in the segment's QP table, because the initiator delivering a
 * SEND pops the WQE itself; the send queue is private (the owner executes
 * its own sends, see engine/requester.c). Attributes the remote side must see
 * (state, qp_access_flags, qkey, peer, RNR timer) are mirrored into the
 * shared entry; the rest stays in qp->attr for ibv_query_qp.
 *
 * ERR: whoever moves a QP to ERR (the owner through modify_qp or a failed
 * send, an initiator after a responder error) flushes its receive queue
 * into the receive CQ with IBV_WC_WR_FLUSH_ERR under the RQ lock; receive
 * WQEs posted later complete with the flush status at once.
 */
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/srdma_parent_domain.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/qp_state.h"
#include "core/raw.h"
#include "transport/net/rawwire.h"
#include "core/restrack.h"
#include "core/xrc.h"
#include "transport/net/net.h"
#include "util/fault.h"
#include "util/log.h"

static inline uint32_t qpn_of(struct srdma_context *ctx, uint32_t slot)
{
	return (ctx->host.lid << SRDMA_QPN_SHIFT) | slot;
}

struct srdma_qp *srdma_qp_by_slot(struct srdma_context *ctx, uint32_t slot)
{
	return slot < SRDMA_SEG_QP_SLOTS ? ctx->qp_by_slot[slot] : NULL;
}

/* ---- receive queues (shared by QPs and SRQs) -------------------------- */

int srdma_rq_init(struct srdma_context *ctx, struct srdma_shm_rq *rq,
		  uint8_t *minit, uint32_t max_wr, uint32_t max_sge)
{
	uint32_t size = srdma_roundup_pow2(max_wr ? max_wr : 1);
	uint64_t off;
	int ret;

	if (!*minit) {
		ret = srdma_shm_mutex_init(&rq->rlock);
		if (ret)
			return ret;
		*minit = 1;
	}
	if (!max_sge)
		max_sge = 1;
	ret = srdma_arena_alloc(ctx, (uint64_t)size *
				(sizeof(struct srdma_shm_rwqe) +
				 max_sge * sizeof(struct srdma_shm_rsge)),
				&off);
	if (ret) {
		srdma_dbg("receive queue of %u WQEs x %u SGEs: no room in the "
			  "context's ring arena", size, max_sge);
		return ret;
	}
	rq->ring_off = off;
	rq->size = size;
	rq->max_sge = max_sge;
	rq->wqe_size = sizeof(struct srdma_shm_rwqe) +
		       max_sge * sizeof(struct srdma_shm_rsge);
	atomic_store(&rq->head, 0);
	atomic_store(&rq->tail, 0);
	return 0;
}

void srdma_rq_fini(struct srdma_context *ctx, struct srdma_shm_rq *rq)
{
	if (rq->size)
		srdma_arena_free(ctx, rq->ring_off,
				 (uint64_t)rq->size * rq->wqe_size);
	rq->size = 0;
}

/* Push WRs into @rq (owner). @max_wr: the limit the app was granted. */
int srdma_rq_push(struct srdma_shm_rq *rq, struct srdma_seg_hdr *seg,
		  uint32_t max_wr, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad)
{
	uint32_t size, wsz, max_sge;
	char *ring;
	int ret = 0;

	srdma_shm_lock(&rq->rlock);
	/* Immutable fields, but in memory anyone of the user can write:
	 * read once, check, use the copy. */
	size = rq->size;
	wsz = rq->wqe_size;
	max_sge = rq->max_sge;
	ring = srdma_seg_ring(seg, rq->ring_off, (uint64_t)size * wsz);
	if (!ring || !size || max_sge > SRDMA_MAX_SGE ||
	    wsz < sizeof(struct srdma_shm_rwqe) +
			  max_sge * sizeof(struct srdma_shm_rsge)) {
		srdma_shm_unlock(&rq->rlock);
		if (bad)
			*bad = wr;
		return EIO;
	}
	for (; wr; wr = wr->next) {
		uint64_t head = atomic_load_explicit(&rq->head,
						     memory_order_relaxed);
		struct srdma_shm_rwqe *w;
		int i;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			ret = EINVAL;
			break;
		}
		if (head - atomic_load(&rq->tail) >= max_wr) {
			ret = ENOMEM;
			break;
		}
		w = (struct srdma_shm_rwqe *)(ring +
					      (head & (size - 1)) * wsz);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			w->sge[i].addr = wr->sg_list[i].addr;
			w->sge[i].length = wr->sg_list[i].length;
			w->sge[i].lkey = wr->sg_list[i].lkey;
		}
		atomic_store_explicit(&rq->head, head + 1,
				      memory_order_release);
	}
	srdma_shm_unlock(&rq->rlock);
	if (ret && bad)
		*bad = wr;
	return ret;
}

void srdma_rq_flush(struct srdma_context *ctx, struct srdma_peer *p,
		    struct srdma_seg_hdr *seg, struct srdma_shm_qp *sh,
		    uint32_t qpn)
{
	struct srdma_shm_rq *rq = &sh->rq;
	uint32_t size = rq->size, wsz = rq->wqe_size, n = 0;
	char *ring;

	if (!size)
		return;
	srdma_shm_lock(&rq->rlock);
	size = rq->size;
	wsz = rq->wqe_size;
	ring = srdma_seg_ring(seg, rq->ring_off, (uint64_t)size * wsz);
	/* Bounded by the ring size: the counters may be garbage. */
	while (ring && wsz >= sizeof(struct srdma_shm_rwqe) && n++ < size &&
	       atomic_load(&rq->tail) < atomic_load(&rq->head)) {
		uint64_t t = atomic_load(&rq->tail);
		struct srdma_shm_rwqe *w = (struct srdma_shm_rwqe *)
			(ring + (t & (size - 1)) * wsz);
		struct srdma_shm_cqe c = { 0 };

		c.wr_id = w->wr_id;
		c.status = IBV_WC_WR_FLUSH_ERR;
		c.opcode = IBV_WC_RECV;
		c.qp_num = qpn;
		atomic_store(&rq->tail, t + 1);
		srdma_cqe_post(ctx, p, sh->recv_cq, &c, false);
	}
	srdma_shm_unlock(&rq->rlock);
}

/* ---- create / destroy --------------------------------------------------- */

static int check_cap(const struct ibv_qp_cap *cap, bool has_srq)
{
	if (cap->max_send_wr > SRDMA_MAX_QP_WR ||
	    cap->max_send_sge > SRDMA_MAX_SGE ||
	    cap->max_inline_data > SRDMA_MAX_INLINE ||
	    (!has_srq && (cap->max_recv_wr > SRDMA_MAX_QP_WR ||
			  cap->max_recv_sge > SRDMA_MAX_SGE))) {
		srdma_dbg("create QP: cap refused: send_wr %u send_sge %u "
			  "inline %u recv_wr %u recv_sge %u%s (max %u WRs, "
			  "%u SGEs, %u inline bytes)", cap->max_send_wr,
			  cap->max_send_sge, cap->max_inline_data,
			  cap->max_recv_wr, cap->max_recv_sge,
			  has_srq ? " (recv: SRQ)" : "", SRDMA_MAX_QP_WR,
			  SRDMA_MAX_SGE, SRDMA_MAX_INLINE);
		return -EINVAL;
	}
	return 0;
}

/* Inline bytes granted: what was asked, rounded up to the room of the
 * send SGEs (as rxe and mlx5 round up to their WQE), reported in cap. */
static uint32_t inline_grant(const struct ibv_qp_cap *cap)
{
	uint32_t room = cap->max_send_sge * SRDMA_INLINE_PER_SGE;

	if (room > SRDMA_MAX_INLINE)
		room = SRDMA_MAX_INLINE;
	return cap->max_inline_data > room ? cap->max_inline_data : room;
}

/*
 * An RSS QP (raw packet, with an indirection table and a hash
 * configuration) has no queue of its own: its frames land in the table's
 * WQs. Internally it uses the first WQ's CQ as both CQs (nothing is ever
 * posted to it) and a one-entry receive ring nobody fills; the public
 * send_cq and recv_cq stay NULL.
 */
static int rss_attr(struct srdma_context *ctx, struct ibv_qp_init_attr_ex *a,
		    struct ibv_qp_init_attr_ex *in)
{
	uint64_t rss = IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
	struct srdma_rwq_tbl *t;

	if ((a->comp_mask & rss) != rss || a->qp_type != IBV_QPT_RAW_PACKET) {
		srdma_dbg("create QP: an RSS QP is a raw packet QP with both "
			  "an indirection table and a hash configuration");
		return -EINVAL;
	}
	if (!a->rwq_ind_tbl ||
	    !srdma_handle_check(a->rwq_ind_tbl, SRDMA_OBJ_RWQ_TBL)) {
		srdma_dbg("create QP: %p is not an indirection table",
			  (void *)a->rwq_ind_tbl);
		return -EINVAL;
	}
	t = (struct srdma_rwq_tbl *)a->rwq_ind_tbl;
	if (t->ctx != ctx) {
		srdma_dbg("create QP: an indirection table of another context");
		return -EINVAL;
	}
	*in = *a;
	in->send_cq = in->recv_cq = &t->wq[0]->qp->recv_cq->ib.cq;
	in->srq = NULL;
	memset(&in->cap, 0, sizeof(in->cap));
	in->cap.max_recv_sge = 1;
	return 0;
}

static int qp_create(struct srdma_context *ctx, struct ibv_qp_init_attr_ex *a,
		     struct srdma_qp **out);

int srdma_qp_create(struct srdma_context *ctx,
		    struct ibv_qp_init_attr_ex *a, struct srdma_qp **out)
{
	struct ibv_qp_init_attr_ex in;
	struct srdma_qp *qp;
	int ret;

	if (a->qp_type == IBV_QPT_RAW_PACKET) {
		ret = srdma_raw_qp_allowed(ctx);
		if (ret)
			return ret;
	}
	if (!(a->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE |
			      IBV_QP_INIT_ATTR_RX_HASH)))
		return qp_create(ctx, a, out);
	ret = rss_attr(ctx, a, &in);
	if (ret)
		return ret;
	ret = qp_create(ctx, &in, &qp);
	if (ret)
		return ret;
	qp->ib.qp.send_cq = qp->ib.qp.recv_cq = NULL;
	qp->cap.max_recv_sge = 0;
	qp->attr.cap = qp->cap;
	a->cap = qp->cap;
	*out = qp;
	return 0;
}

int srdma_qp_create_wq(struct srdma_context *ctx,
		       struct ibv_qp_init_attr_ex *a, struct srdma_qp **out)
{
	return qp_create(ctx, a, out);
}

static int qp_create(struct srdma_context *ctx, struct ibv_qp_init_attr_ex *a,
		     struct srdma_qp **out)
{
	struct srdma_cq *scq, *rcq;
	struct srdma_srq *srq = NULL;
	struct srdma_shm_qp *sh;
	struct srdma_pd *pd;
	struct srdma_qp *qp;
	uint32_t slot = 0, i;
	uint64_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			 IBV_QP_INIT_ATTR_CREATE_FLAGS |
			 IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
	int ret;

	bool tgt = a->qp_type == IBV_QPT_XRC_RECV;
	struct srdma_xrcd *xrcd = NULL;

	if (tgt) {
		/* XRC TGT: in an XRC domain, no PD, no CQ, no queue of its
		 * own (docs/design/xrc.md). */
		known |= IBV_QP_INIT_ATTR_XRCD;
		xrcd = (a->comp_mask & IBV_QP_INIT_ATTR_XRCD) ?
			       srdma_xrcd_lookup(a->xrcd) : NULL;
		if (!xrcd || xrcd->ctx != ctx) {
			srdma_dbg("create QP: XRC_RECV needs an XRC domain of "
				  "this context (comp_mask %#x, xrcd %p)",
				  a->comp_mask,
				  (a->comp_mask & IBV_QP_INIT_ATTR_XRCD) ?
					  (void *)a->xrcd : NULL);
			return -EINVAL;
		}
	} else if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD)) {
		srdma_dbg("create QP: no PD (comp_mask %#x)", a->comp_mask);
		return -EINVAL;
	}
	if (a->comp_mask & ~known) {
		srdma_dbg("create QP: comp_mask bits %#llx not supported",
			  (unsigned long long)(a->comp_mask & ~known));
		return -EOPNOTSUPP;
	}
	/* Of the creation flags only the multicast loopback block is
	 * offered (not scatter FCS, CVLAN stripping...). */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    (a->create_flags & ~(uint32_t)IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)) {
		srdma_dbg("create QP: create_flags %#x not supported",
			  a->create_flags);
		return -EOPNOTSUPP;
	}
	pd = tgt ? NULL : srdma_pd_lookup(a->pd);
	if (!tgt && (!pd || pd->ctx != ctx)) {
		srdma_dbg("create QP: %p is not a PD of this context",
			  (void *)a->pd);
		return -EINVAL;
	}
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC &&
	    a->qp_type != IBV_QPT_UD && a->qp_type != IBV_QPT_XRC_SEND &&
	    a->qp_type != IBV_QPT_RAW_PACKET && !tgt) {
		srdma_dbg("create QP: type %d not supported (RC, UC, UD, XRC "
			  "and raw packet are)", a->qp_type);
		return -EOPNOTSUPP;
	}
	if (tgt) {
		/* Neither CQ is used: completions go to the SRQ's CQ. */
		scq = rcq = NULL;
		a->srq = NULL;
		memset(&a->cap, 0, sizeof(a->cap));
	} else if (a->qp_type == IBV_QPT_XRC_SEND) {
		/* XRC INI: a send queue only (no receive CQ, no RQ). */
		if (!a->send_cq ||
		    !srdma_handle_check(a->send_cq, SRDMA_OBJ_CQ) ||
		    to_scq(a->send_cq)->ctx != ctx) {
			srdma_dbg("create QP: XRC_SEND needs a send CQ of "
				  "this context (send_cq %p)",
				  (void *)a->send_cq);
			return -EINVAL;
		}
		scq = rcq = to_scq(a->send_cq);
		a->srq = NULL;
		a->cap.max_recv_wr = 0;
		a->cap.max_recv_sge = 0;
	} else {
		if (!a->send_cq || !a->recv_cq ||
		    !srdma_handle_check(a->send_cq, SRDMA_OBJ_CQ) ||
		    !srdma_handle_check(a->recv_cq, SRDMA_OBJ_CQ)) {
			srdma_dbg("create QP: send_cq %p / recv_cq %p: not "
				  "both CQs", (void *)a->send_cq,
				  (void *)a->recv_cq);
			return -EINVAL;
		}
		scq = to_scq(a->send_cq);
		rcq = to_scq(a->recv_cq);
		if (scq->ctx != ctx || rcq->ctx != ctx) {
			srdma_dbg("create QP: a CQ of another context");
			return -EINVAL;
		}
	}
	if (a->srq) {
		if (!srdma_handle_check(a->srq, SRDMA_OBJ_SRQ)) {
			srdma_dbg("create QP: %p is not an SRQ",
				  (void *)a->srq);
			return -EINVAL;
		}
		srq = container_of(a->srq, struct srdma_srq, ibsrq);
		if (srq->ctx != ctx) {
			srdma_dbg("create QP: an SRQ of another context");
			return -EINVAL;
		}
		if (srq->xrcd) {
			srdma_dbg("create QP: an XRC SRQ serves XRC_RECV QPs "
				  "through its domain, not as a QP's SRQ");
			return -EINVAL;
		}
		/* Tag matching is an RC protocol (tm_caps.flags has
		 * IBV_TM_CAP_RC only), as on mlx5. */
		if (srq->tm && a->qp_type != IBV_QPT_RC) {
			srdma_dbg("create QP: a tag-matching SRQ serves RC "
				  "QPs only (qp_type %d)", a->qp_type);
			return -EINVAL;
		}
	}
	ret = check_cap(&a->cap, srq != NULL || tgt ||
				 a->qp_type == IBV_QPT_XRC_SEND);
	if (ret)
		return ret;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~(uint64_t)(IBV_QP_EX_WITH_RDMA_WRITE |
	     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
	     IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
	     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
	     IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV |
	     IBV_QP_EX_WITH_ATOMIC_WRITE))) {
		srdma_dbg("create QP: send_ops_flags %#llx not supported",
			  (unsigned long long)a->send_ops_flags);
		return -EOPNOTSUPP;
	}
	if (SRDMA_FAULT(QP_ALLOC))
		return -ENOMEM;
	/* From the parent domain's allocator, if it has one. */
	qp = srdma_pd_obj_alloc(pd, sizeof(*qp), SRDMA_RES_TYPE_QP);
	if (!qp)
		return -ENOMEM;
	pthread_mutex_init(&qp->sq_lock, NULL);
	qp->pend_tail = &qp->pend_head;
	qp->ctx = ctx;
	qp->pd = pd;
	qp->send_cq = scq;
	qp->block_self_mc = (a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
			    (a->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	qp->recv_cq = rcq;
	qp->srq = srq;
	qp->type = a->qp_type;
	qp->sq_sig_all = a->sq_sig_all;
	qp->is_ex = a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qp->xrcd = xrcd;
	qp->cap = a->cap;
	if (!qp->cap.max_send_sge && !tgt)
		qp->cap.max_send_sge = 1;
	qp->cap.max_inline_data = tgt ? 0 : inline_grant(&qp->cap);
	if (srq || tgt || a->qp_type == IBV_QPT_XRC_SEND) {
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
	} else if (!qp->cap.max_recv_sge) {
		qp->cap.max_recv_sge = 1;
	}

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < SRDMA_SEG_QP_SLOTS; i++) {
		slot = (ctx->next_qp + i) % SRDMA_SEG_QP_SLOTS;
		if (slot && !ctx->qp_by_slot[slot])
			break;
	}
	if (i == SRDMA_SEG_QP_SLOTS) {
		srdma_dbg("create QP: all %u QPs of the context in use "
			  "(max_qp)", SRDMA_SEG_QP_SLOTS - 1);
		ret = -ENOMEM;
		goto err_unlock;
	}
	sh = srdma_seg_qp(ctx->host.seg, slot);
	if (srq || tgt || a->qp_type == IBV_QPT_XRC_SEND) {
		if (!ctx->qp_minit[slot]) {
			ret = srdma_shm_mutex_init(&sh->rq.rlock);
			if (ret)
				goto err_unlock;
			ctx->qp_minit[slot] = 1;
		}
		sh->rq.size = 0;
	} else {
		ret = srdma_rq_init(ctx, &sh->rq, &ctx->qp_minit[slot],
				    qp->cap.max_recv_wr ? qp->cap.max_recv_wr
							: 1,
				    qp->cap.max_recv_sge);
		if (ret)
			goto err_unlock;
	}
	qp->slot = slot;
	qp->sh = sh;
	atomic_store(&sh->state, IBV_QPS_RESET);
	sh->gen++;
	sh->type = (uint8_t)a->qp_type;
	sh->min_rnr_timer = 0;
	sh->pd_handle = pd ? pd->ibpd.handle : 0;
	sh->xrcd[0] = xrcd ? xrcd->id[0] : 0;
	sh->xrcd[1] = xrcd ? xrcd->id[1] : 0;
	atomic_store(&sh->access, 0);
	atomic_store(&sh->qkey, 0);
	atomic_store(&sh->dest_qpn, 0);
	atomic_store(&sh->dlid, 0);
	sh->send_cq = scq ? scq->slot : 0;
	sh->recv_cq = rcq ? rcq->slot : 0;
	sh->srq = srq ? srq->slot + 1 : 0;
	sh->sq_psn = sh->rq_psn = 0;
	atomic_store(&sh->n_sent, 0);
	atomic_store(&sh->n_recv, 0);
	atomic_store(&sh->n_err, 0);
	atomic_store(&sh->dgid[0], 0);
	atomic_store(&sh->dgid[1], 0);

	qp->ib.qp.context = &ctx->vctx.context;
	qp->ib.qp.qp_context = a->qp_context;
	qp->ib.qp.pd = a->pd;
	qp->ib.qp.send_cq = a->send_cq;
	qp->ib.qp.recv_cq = a->recv_cq;
	qp->ib.qp.srq = a->srq;
	qp->ib.qp.handle = slot;
	qp->ib.qp.qp_num = qpn_of(ctx, slot);
	qp->ib.qp.state = IBV_QPS_RESET;
	qp->ib.qp.qp_type = a->qp_type;
	pthread_mutex_init(&qp->ib.qp.mutex, NULL);
	pthread_cond_init(&qp->ib.qp.cond, NULL);
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = IBV_MTU_1024;
	qp->attr.port_num = 1;
	qp->attr.cap = qp->cap;
	qp->attr.sq_draining = 0;
	if (qp->is_ex)
		qp->comp_mask = 1;	/* VERBS_QP_EX */
	ret = srdma_handle_add(qp, SRDMA_OBJ_QP);
	if (ret)
		goto err_rq;
	ctx->qp_by_slot[slot] = qp;
	ctx->next_qp = slot + 1;
	ctx->n_qp++;
	if (scq) {
		scq->n_qp++;
		rcq->n_qp++;
	}
	if (srq)
		srq->n_qp++;
	if (pd)
		srdma_pd_hold(pd);
	if (xrcd)
		atomic_fetch_add(&xrcd->usecnt, 1);
	atomic_store_explicit(&sh->live, SRDMA_OBJ_LIVE, memory_order_release);
	pthread_mutex_unlock(&ctx->lock);
	/* Raw packet QPs: their raw half (raw.c); frames, not RoCE. */
	if (a->qp_type == IBV_QPT_RAW_PACKET) {
		ret = srdma_raw_qp_setup(qp, a);
		if (ret) {
			srdma_qp_destroy(qp);
			return ret;
		}
	} else if (srdma_link_is_eth()) {
		/* net transport: a RoCE port's QPs get their net half. */
		ret = srdma_net_qp_create(qp);
		if (ret) {
			srdma_qp_destroy(qp);
			return ret;
		}
	}
	a->cap = qp->cap;
	*out = qp;
	return 0;

err_rq:
	srdma_rq_fini(ctx, &sh->rq);	/* no-op without a queue of its own */
err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_destroy(&qp->sq_lock);
	srdma_pd_obj_free(pd, qp, SRDMA_RES_TYPE_QP);
	return ret;
}

/* Drop deferred sends without completions (destroy, reset). sq_lock. */
static void sq_drop_locked(struct srdma_qp *qp)
{
	const struct srdma_engine_ops *eng = srdma_engine_ops_get();

	if (eng)
		eng->sq_drop_locked(qp);
}

static void qp_free(struct srdma_qp *qp);

/* Close a handle from ibv_open_qp; the last one of a TGT QP its creator
 * destroyed meanwhile destroys it. */
static int qp_close_opened(struct srdma_qp *h)
{
	struct srdma_context *ctx = h->ctx;
	struct srdma_qp *real = h->open_of;
	bool last = false;

	pthread_mutex_lock(&ctx->lock);
	if (!srdma_handle_del(h, SRDMA_OBJ_QP)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	if (real) {
		real->n_open--;
		last = !real->n_open && real->zombie;
	}
	pthread_mutex_unlock(&ctx->lock);
	srdma_peer_put(ctx, h->open_peer);
	pthread_mutex_destroy(&h->sq_lock);
	pthread_mutex_destroy(&h->ib.qp.mutex);
	pthread_cond_destroy(&h->ib.qp.cond);
	free(h);
	if (last)
		qp_free(real);
	return 0;
}

/*
 * Take @qp's completions still queued out of its CQs, as mlx4/mlx5 do on
 * the RESET transition and in destroy_qp (their __mlx*_cq_clean): a CQ
 * shared with other QPs then never hands out a wr_id of a QP that was
 * reset or is gone, and the other QPs' CQEs keep their order. libfabric's
 * verbs;ofi_rxm relies on it: after destroying a connection's QP it reposts
 * the buffer of every successful receive it still polls on that
 * connection's endpoint, which it has freed (docs/design/stacks.md).
 * Callers make sure nothing completes for @qp any more.
 */
static void clean_cqs(struct srdma_qp *qp)
{
	if (qp->send_cq)
		srdma_cq_clean(qp->send_cq, qp->ib.qp.qp_num);
	if (qp->recv_cq && qp->recv_cq != qp->send_cq)
		srdma_cq_clean(qp->recv_cq, qp->ib.qp.qp_num);
}

int srdma_qp_destroy(struct srdma_qp *qp)
{
	struct srdma_context *ctx = qp->ctx;
	bool keep;

	if (qp->opened)
		return qp_close_opened(qp);
	pthread_mutex_lock(&ctx->lock);
	if (!srdma_handle_check(qp, SRDMA_OBJ_QP)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	/* As the kernel's uverbs: detach first (ibv_detach_mcast). */
	if (atomic_load(&qp->n_mcast)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("destroy QP %#x: still attached to %u multicast group(s)",
			  qp->ib.qp.qp_num, atomic_load(&qp->n_mcast));
		return -EBUSY;
	}
	if (qp->raw && qp->raw->n_flow) {
		srdma_dbg("destroy QP %#x: %u flows still steer to it",
			  qp->ib.qp.qp_num, qp->raw->n_flow);
		pthread_mutex_unlock(&ctx->lock);
		return -EBUSY;
	}
	if (!srdma_handle_del(qp, SRDMA_OBJ_QP)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	/* A TGT QP still opened elsewhere in this process lives on, as the
	 * kernel keeps it for its other handles; no new handle may open it
	 * from now on either way. */
	keep = qp->n_open > 0;
	qp->zombie = true;
	pthread_mutex_unlock(&ctx->lock);
	if (!keep)
		qp_free(qp);
	return 0;
}

/* Unpublish, drain and free @qp (its handle is already gone). */
static void qp_free(struct srdma_qp *qp)
{
	const struct srdma_engine_ops *eng = srdma_engine_ops_get();
	struct srdma_context *ctx = qp->ctx;
	struct srdma_shm_qp *sh = qp->sh;
	struct srdma_pd *pd = qp->pd;
	bool wire;

	pthread_mutex_lock(&ctx->lock);
	wire = qp->raw && qp->raw->wire;
	srdma_raw_qp_release_locked(qp);	/* no flow left: cannot fail */
	/* Unpublish, then wait out an initiator inside the RQ section. */
	srdma_shm_lock(&sh->rq.rlock);
	atomic_store(&sh->live, SRDMA_OBJ_FREE);
	atomic_store(&sh->state, IBV_QPS_RESET);
	srdma_shm_unlock(&sh->rq.rlock);
	ctx->qp_by_slot[qp->slot] = NULL;
	/* No new sweep may pin it: it stayed listed until sq_drop_locked()
	 * below, so a sweep could pin it after the wait and use it freed. */
	if (eng)
		eng->qp_forget_locked(qp);
	pthread_mutex_unlock(&ctx->lock);
	if (wire)
		srdma_rawwire_put(ctx);	/* its receiver may take ctx->lock */

	/* A progress sweep that pinned it before may still hold it. */
	while (atomic_load(&qp->busy))
		sched_yield();
	if (qp->net)
		srdma_rt_ep_mirror(ctx);	/* srdma status: final counts */
	srdma_net_qp_destroy(qp);	/* net transport (no-op without) */
	pthread_mutex_lock(&qp->sq_lock);
	sq_drop_locked(qp);
	srdma_peer_put(ctx, qp->peer);
	qp->peer = NULL;
	pthread_mutex_unlock(&qp->sq_lock);
	/* Nothing completes for it any more (unpublished, SQ dropped): take
	 * its completions still queued out of its CQs, as mlx4/mlx5 do. */
	clean_cqs(qp);

	pthread_mutex_lock(&ctx->lock);
	srdma_rq_fini(ctx, &sh->rq);	/* no-op without a queue of its own */
	ctx->n_qp--;
	if (qp->send_cq) {
		qp->send_cq->n_qp--;
		qp->recv_cq->n_qp--;
	}
	if (qp->srq)
		qp->srq->n_qp--;
	if (qp->xrcd)
		atomic_fetch_sub(&qp->xrcd->usecnt, 1);
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_destroy(&qp->sq_lock);
	pthread_mutex_destroy(&qp->ib.qp.mutex);
	pthread_cond_destroy(&qp->ib.qp.cond);
	free(qp->bld);
	free(qp->bld_sge);
	srdma_pd_obj_free(pd, qp, SRDMA_RES_TYPE_QP);
	if (pd)
		srdma_pd_unhold(pd); /* last: the free used @pd */
}

/* ---- modify / query ----------------------------------------------------- */

/* The LID an address vector names (the GID decodes to it, see
 * ibv_device.c gid_of()). */
uint32_t srdma_av_lid(const struct ibv_ah_attr *ah)
{
	if (ah->dlid)
		return ah->dlid;
	/* A RoCE GID is an IP address: it names no LID (the QPN routes). */
	if (ah->is_global && !srdma_link_is_eth())
		return be64toh(ah->grh.dgid.global.interface_id) & 0xffff;
	return 0;
}

void srdma_qp_set_error(struct srdma_qp *qp)
{
	const struct srdma_engine_ops *eng = srdma_engine_ops_get();
	struct srdma_context *ctx = qp->ctx;
	uint32_t old;

	old = atomic_exchange(&qp->sh->state, IBV_QPS_ERR);
	qp->ib.qp.state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	if (qp->srq) {
		if (old != IBV_QPS_ERR)
			srdma_aev_post(ctx, NULL, IBV_EVENT_QP_LAST_WQE_REACHED,
				       SRDMA_AEV_OBJ_QP, qp->slot,
				       qp->sh->gen);
	} else {
		srdma_rq_flush(ctx, NULL, ctx->host.seg, qp->sh,
			       qp->ib.qp.qp_num);
	}
	pthread_mutex_lock(&qp->sq_lock);
	if (eng)
		eng->sq_flush_locked(qp);
	pthread_mutex_unlock(&qp->sq_lock);
}

/* srdma status: the peer GID of an AV with a GRH (0 without one). */
static void srdma_qp_publish_dgid(struct srdma_shm_qp *sh,
				  const struct ibv_ah_attr *ah)
{
	uint64_t w[2] = {0, 0};

	if (ah->is_global)
		memcpy(w, ah->grh.dgid.raw, sizeof(w));
	atomic_store_explicit(&sh->dgid[0], w[0], memory_order_relaxed);
	atomic_store_explicit(&sh->dgid[1], w[1], memory_order_relaxed);
}

int srdma_qp_modify(struct srdma_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct srdma_qp_limits lim = {
		.max_qp_rd_atom = SRDMA_MAX_RD_ATOM,
		.max_qp_dest_rd_atom = SRDMA_MAX_RD_ATOM,
		.gid_tbl_len = 1,
	};
	enum ibv_qp_state cur, next;
	struct srdma_shm_qp *sh = qp->sh;
	const char *why;
	int ret;

	if (!attr)
		return -EINVAL;
	/* As the kernel's uverbs: attributes of the half an XRC QP does not
	 * have are ignored, not refused (perftest -c XRC passes RC's). */
	if (qp->type == IBV_QPT_XRC_SEND)
		mask &= ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	else if (qp->type == IBV_QPT_XRC_RECV)
		mask &= ~(IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY);
	if (qp->opened) {
		if (qp->open_of)
			return srdma_qp_modify(qp->open_of, attr, mask);
		srdma_dbg("modify_qp %#x: a handle from ibv_open_qp on a QP "
			  "of another process: modify it through its creator",
			  qp->ib.qp.qp_num);
		return -EOPNOTSUPP;
	}
	if (qp->raw && qp->raw->tbl) {
		srdma_dbg("modify_qp %#x: an RSS QP has no state to change "
			  "(its WQs do; mlx5 refuses too)", qp->ib.qp.qp_num);
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&qp->sq_lock);
	cur = (enum ibv_qp_state)atomic_load(&sh->state);
	next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur &&
	    !(attr->cur_qp_state == IBV_QPS_RTS && cur == IBV_QPS_SQD)) {
		srdma_dbg("modify_qp %#x: cur_qp_state %s, but the QP is %s",
			  qp->ib.qp.qp_num,
			  srdma_qp_state_str(attr->cur_qp_state),
			  srdma_qp_state_str(cur));
		ret = -EINVAL;
		goto out;
	}
	/* RoCE port: GRH required, SGIDs and MTU as the port shows them. */
	if (srdma_link_is_eth()) {
		lim.gid_tbl_len = qp->ctx->gids.n;
		lim.grh_required = true;
		lim.max_path_mtu = srdma_gid_active_mtu(&qp->ctx->gids);
	}
	why = srdma_qp_attr_why(qp->type, attr, mask, &lim);
	ret = why ? -EINVAL : srdma_qp_modify_why(qp->type, cur, next, mask,
						   &why);
	/* net transport: choose it, set its path and PSNs (qp_net.c). */
	if (!ret) {
		ret = srdma_net_qp_modify(qp, attr, mask);
		why = "net transport refused the path";
	}
	if (ret) {
		srdma_dbg("modify_qp %#x: %s -> %s with mask %#x refused: %s",
			  qp->ib.qp.qp_num, srdma_qp_state_str(cur),
			  srdma_qp_state_str(next), mask, why);
		goto out;
	}
	/* Checked: apply. */
	if (mask & IBV_QP_ACCESS_FLAGS) {
		qp->attr.qp_access_flags = attr->qp_access_flags;
		atomic_store(&sh->access, attr->qp_access_flags);
	}
	if (mask & IBV_QP_PKEY_INDEX)
		qp->attr.pkey_index = attr->pkey_index;
	if (mask & IBV_QP_PORT)
		qp->attr.port_num = attr->port_num;
	if (mask & IBV_QP_QKEY) {
		qp->attr.qkey = attr->qkey;
		atomic_store(&sh->qkey, attr->qkey);
	}
	if (mask & IBV_QP_AV) {
		qp->attr.ah_attr = attr->ah_attr;
		atomic_store(&sh->dlid, srdma_av_lid(&attr->ah_attr));
		srdma_qp_publish_dgid(sh, &attr->ah_attr);
		srdma_peer_put(qp->ctx, qp->peer);
		qp->peer = NULL;
	}
	if (mask & IBV_QP_ALT_PATH) {
		qp->attr.alt_ah_attr = attr->alt_ah_attr;
		qp->attr.alt_pkey_index = attr->alt_pkey_index;
		qp->attr.alt_port_num = attr->alt_port_num;
		qp->attr.alt_timeout = attr->alt_timeout;
	}
	if (mask & IBV_QP_PATH_MTU)
		qp->attr.path_mtu = attr->path_mtu;
	if (mask & IBV_QP_TIMEOUT)
		qp->attr.timeout = attr->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		qp->attr.retry_cnt = attr->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		qp->attr.rnr_retry = attr->rnr_retry;
	if (mask & IBV_QP_RQ_PSN) {
		qp->attr.rq_psn = attr->rq_psn & 0xffffff;
		sh->rq_psn = qp->attr.rq_psn;
	}
	if (mask & IBV_QP_SQ_PSN) {
		qp->attr.sq_psn = attr->sq_psn & 0xffffff;
		sh->sq_psn = qp->attr.sq_psn;
	}
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER) {
		qp->attr.min_rnr_timer = attr->min_rnr_timer;
		sh->min_rnr_timer = attr->min_rnr_timer;
	}
	if (mask & IBV_QP_PATH_MIG_STATE)
		qp->attr.path_mig_state = attr->path_mig_state;
	if (mask & IBV_QP_DEST_QPN) {
		qp->attr.dest_qp_num = attr->dest_qp_num & 0xffffff;
		atomic_store(&sh->dest_qpn, qp->attr.dest_qp_num);
		srdma_peer_put(qp->ctx, qp->peer);
		qp->peer = NULL;
	}
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->attr.en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IBV_QP_RATE_LIMIT)
		qp->attr.rate_limit = attr->rate_limit;
	if (mask & IBV_QP_STATE) {
		qp->attr.qp_state = next;
		qp->attr.cur_qp_state = next;
		qp->ib.qp.state = next;
		if (next == IBV_QPS_RESET) {
			sq_drop_locked(qp);
			clean_cqs(qp);
			if (!qp->srq && sh->rq.size) {
				srdma_shm_lock(&sh->rq.rlock);
				atomic_store(&sh->rq.tail,
					     atomic_load(&sh->rq.head));
				srdma_shm_unlock(&sh->rq.rlock);
			}
			srdma_peer_put(qp->ctx, qp->peer);
			qp->peer = NULL;
		}
		if (next != IBV_QPS_ERR)
			atomic_store(&sh->state, next);
	}
out:
	pthread_mutex_unlock(&qp->sq_lock);
	if (!ret && (mask & IBV_QP_STATE) && next == IBV_QPS_ERR)
		srdma_qp_set_error(qp);
	return ret;
}

int srdma_qp_query(struct srdma_qp *qp, struct ibv_qp_attr *attr, int mask,
		   struct ibv_qp_init_attr *init)
{
	if (!attr || !init)
		return -EINVAL;
	if (qp->opened) {
		int ret = 0;

		if (qp->open_of) {
			ret = srdma_qp_query(qp->open_of, attr, mask, init);
		} else {
			memset(attr, 0, sizeof(*attr));
			memset(init, 0, sizeof(*init));
			attr->qp_state = (enum ibv_qp_state)atomic_load(
				&qp->sh->state);
			attr->cur_qp_state = attr->qp_state;
			attr->port_num = 1;
			init->qp_type = IBV_QPT_XRC_RECV;
		}
		init->qp_context = qp->ib.qp.qp_context;
		qp->ib.qp.state = attr->qp_state;
		return ret;
	}
	(void)mask;	/* everything is cheap: fill it all, as providers do */
	pthread_mutex_lock(&qp->sq_lock);
	*attr = qp->attr;
	attr->qp_state = (enum ibv_qp_state)atomic_load(&qp->sh->state);
	attr->cur_qp_state = attr->qp_state;
	attr->cap = qp->cap;
	memset(init, 0, sizeof(*init));
	init->qp_context = qp->ib.qp.qp_context;
	init->send_cq = qp->ib.qp.send_cq;
	init->recv_cq = qp->ib.qp.recv_cq;
	init->srq = qp->ib.qp.srq;
	init->cap = qp->cap;
	init->qp_type = qp->type;
	init->sq_sig_all = qp->sq_sig_all;
	pthread_mutex_unlock(&qp->sq_lock);
	qp->ib.qp.state = attr->qp_state;
	return 0;
}

int srdma_qp_post_recv(struct srdma_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	uint32_t st = atomic_load(&qp->sh->state);
	int ret;

	if (qp->srq || st == IBV_QPS_RESET || qp->type == IBV_QPT_XRC_SEND ||
	    qp->type == IBV_QPT_XRC_RECV) {
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	ret = srdma_rq_push(&qp->sh->rq, qp->ctx->host.seg, qp->cap.max_recv_wr,
			    wr, bad);
	/* In ERR, what was posted completes with the flush status now. */
	if (atomic_load(&qp->sh->state) == IBV_QPS_ERR)
		srdma_rq_flush(qp->ctx, NULL, qp->ctx->host.seg, qp->sh,
			       qp->ib.qp.qp_num);
	return ret;
}

/* ---- ibv_open_qp ------------------------------------------------------- */

int srdma_qp_open(struct srdma_context *ctx, struct ibv_qp_open_attr *a,
		  struct srdma_qp **out)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			      IBV_QP_OPEN_ATTR_TYPE;
	struct srdma_peer *p = NULL;
	struct srdma_qp *real = NULL, *h;
	struct srdma_shm_qp *sh;
	struct srdma_xrcd *xrcd;
	uint32_t lid, slot;

	if (!a)
		return -EINVAL;
	if ((a->comp_mask & need) != need ||
	    (a->comp_mask & ~(uint32_t)(IBV_QP_OPEN_ATTR_RESERVED - 1))) {
		srdma_dbg("open_qp: comp_mask %#x (NUM, XRCD and TYPE are "
			  "required)", a->comp_mask);
		return -EINVAL;
	}
	xrcd = srdma_xrcd_lookup(a->xrcd);
	if (!xrcd || xrcd->ctx != ctx || a->qp_type != IBV_QPT_XRC_RECV) {
		srdma_dbg("open_qp: xrcd %p of this context and type "
			  "XRC_RECV needed (type %d)", (void *)a->xrcd,
			  a->qp_type);
		return -EINVAL;
	}
	lid = a->qp_num >> SRDMA_QPN_SHIFT;
	slot = a->qp_num & ((1u << SRDMA_QPN_SHIFT) - 1);
	if (!slot || a->qp_num > 0xffffff)
		goto no_qp;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	pthread_mutex_lock(&ctx->lock);
	if (lid == ctx->host.lid) {
		real = ctx->qp_by_slot[slot];
		if (!real || real->zombie || real->type != IBV_QPT_XRC_RECV ||
		    real->xrcd->id[0] != xrcd->id[0] ||
		    real->xrcd->id[1] != xrcd->id[1]) {
			pthread_mutex_unlock(&ctx->lock);
			free(h);
			goto no_qp;
		}
		sh = real->sh;
	} else {
		pthread_mutex_unlock(&ctx->lock);
		p = srdma_peer_get(ctx, lid);
		if (!p) {
			free(h);
			goto no_qp;
		}
		sh = srdma_seg_qp(p->seg, slot);
		if (atomic_load_explicit(&sh->live, memory_order_acquire) !=
			    SRDMA_OBJ_LIVE || sh->type != IBV_QPT_XRC_RECV ||
		    sh->xrcd[0] != xrcd->id[0] || sh->xrcd[1] != xrcd->id[1]) {
			srdma_peer_put(ctx, p);
			free(h);
			goto no_qp;
		}
		pthread_mutex_lock(&ctx->lock);
	}
	h->ctx = ctx;
	h->type = IBV_QPT_XRC_RECV;
	h->opened = true;
	h->open_of = real;
	h->open_peer = p;
	h->sh = sh;
	h->slot = slot;
	pthread_mutex_init(&h->sq_lock, NULL);
	h->pend_tail = &h->pend_head;
	h->ib.qp.context = &ctx->vctx.context;
	h->ib.qp.qp_context = a->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT ?
				      a->qp_context : NULL;
	h->ib.qp.handle = slot;
	h->ib.qp.qp_num = a->qp_num;
	h->ib.qp.state = (enum ibv_qp_state)atomic_load(&sh->state);
	h->ib.qp.qp_type = IBV_QPT_XRC_RECV;
	pthread_mutex_init(&h->ib.qp.mutex, NULL);
	pthread_cond_init(&h->ib.qp.cond, NULL);
	if (srdma_handle_add(h, SRDMA_OBJ_QP)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_peer_put(ctx, p);
		pthread_mutex_destroy(&h->sq_lock);
		pthread_mutex_destroy(&h->ib.qp.mutex);
		pthread_cond_destroy(&h->ib.qp.cond);
		free(h);
		return -ENOMEM;
	}
	if (real)
		real->n_open++;
	pthread_mutex_unlock(&ctx->lock);
	*out = h;
	return 0;

no_qp:
	srdma_dbg("open_qp: no XRC_RECV QP %#x in this XRC domain", a->qp_num);
	return -EINVAL;
}
