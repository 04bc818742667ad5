// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_dp.c - the public data-path objects: completion channels, CQs
 * (legacy and _ex), QPs (legacy and _ex), SRQs and address handles, plus
 * the context ops the verbs.h inlines call (poll_cq, req_notify_cq,
 * post_send, post_recv, post_srq_recv, bind_mw, create_cq_ex,
 * create_qp_ex).
 *
 * Each entry point validates the object pointer through the handle table
 * (a stale or foreign pointer is EINVAL, never a crash), calls the core,
 * and converts the core's -errno once, into the function's own public
 * convention (NULL + errno, positive errno, or -1 + errno). The hot ops
 * (poll_cq, post_*) trust their object pointer, as every provider does:
 * they are inline-called with a pointer the application got from us.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "engine/engine.h"
#include "util/compiler.h"
#include "util/lattrace.h"
#include "util/log.h"
#include "verbs/verbs_int.h"

static void *null_errno(int neg)
{
	errno = -neg;
	return NULL;
}

/* ---- completion channels ------------------------------------------------ */

SRDMA_EXPORT struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_chan *ch;
	int ret;

	if (!ctx)
		return null_errno(-EINVAL);
	ret = srdma_chan_create(ctx, &ch);
	if (ret)
		return null_errno(ret);
	return &ch->ibch;
}

SRDMA_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (srdma_handle_forget_inherited(channel, SRDMA_OBJ_CHAN)) {
		close(channel->fd);	/* our copy of the parent's FIFO */
		return 0;
	}
	if (!channel || !srdma_handle_check(channel, SRDMA_OBJ_CHAN))
		return EINVAL;
	return -srdma_chan_destroy(container_of(channel, struct srdma_chan,
						ibch));
}

SRDMA_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
				  struct ibv_cq **cq, void **cq_context)
{
	struct srdma_cq *scq;
	int ret;

	if (!channel || !cq || !cq_context ||
	    !srdma_handle_check(channel, SRDMA_OBJ_CHAN)) {
		errno = EINVAL;
		return -1;
	}
	/* About to block: the net progress thread must receive for us. */
	srdma_engine_ctx_blocks(container_of(channel, struct srdma_chan,
					     ibch)->ctx);
	ret = srdma_chan_get_event(container_of(channel, struct srdma_chan,
						ibch), &scq);
	if (ret) {
		errno = -ret;
		return -1;
	}
	*cq = &scq->ib.cq;
	*cq_context = scq->ib.cq.cq_context;
	return 0;
}

SRDMA_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq || !srdma_handle_check(cq, SRDMA_OBJ_CQ))
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- CQ ---------------------------------------------------------------- */

SRDMA_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
					  void *cq_context,
					  struct ibv_comp_channel *channel,
					  int comp_vector)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_cq_args a = {
		.cqe = cqe > 0 ? (uint32_t)cqe : 0,
		.cq_context = cq_context,
		.channel = channel,
		.comp_vector = comp_vector < 0 ? UINT32_MAX :
			       (uint32_t)comp_vector,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct srdma_cq *cq;
	int ret;

	if (!ctx)
		return null_errno(-EINVAL);
	ret = srdma_cq_create(ctx, &a, &cq);
	if (ret)
		return null_errno(ret);
	return &cq->ib.cq;
}

static struct ibv_cq_ex *op_create_cq_ex(struct ibv_context *context,
					 struct ibv_cq_init_attr_ex *attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	const uint64_t ok_flags = IBV_WC_STANDARD_FLAGS |
				  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK |
				  IBV_WC_EX_WITH_TM_INFO;
	struct srdma_cq_args a;
	struct srdma_cq *cq;
	int ret;

	if (!ctx || !attr)
		return null_errno(-EINVAL);
	if ((attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					    IBV_CQ_INIT_ATTR_MASK_PD)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) ||
	    (attr->wc_flags & ~ok_flags)) {
		srdma_dbg("create_cq_ex: comp_mask %#x flags %#x wc_flags "
			  "%#llx not supported (supported: flags "
			  "SINGLE_THREADED, wc_flags %#llx)", attr->comp_mask,
			  attr->flags, (unsigned long long)attr->wc_flags,
			  (unsigned long long)ok_flags);
		return null_errno(-EOPNOTSUPP);
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    !attr->parent_domain)
		return null_errno(-EINVAL);	/* must name a parent domain */
	a.cqe = attr->cqe;
	a.cq_context = attr->cq_context;
	a.channel = attr->channel;
	a.comp_vector = attr->comp_vector;
	a.wc_flags = attr->wc_flags;
	a.is_ex = true;
	a.parent_domain = attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD ?
			  attr->parent_domain : NULL;
	ret = srdma_cq_create(ctx, &a, &cq);
	if (ret)
		return null_errno(ret);
	srdma_verbs_cqex_init(cq);
	return &cq->ib.cq_ex;
}

SRDMA_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (!cq || !srdma_handle_check(cq, SRDMA_OBJ_CQ) || cqe <= 0)
		return EINVAL;
	return -srdma_cq_resize(to_scq(cq), (uint32_t)cqe);
}

SRDMA_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	if (srdma_handle_forget_inherited(cq, SRDMA_OBJ_CQ))
		return 0;
	if (!cq || !srdma_handle_check(cq, SRDMA_OBJ_CQ))
		return EINVAL;
	return -srdma_cq_destroy(to_scq(cq));
}

static int op_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	int n;

	if (srdma_ctx_inherited(to_scq(cq)->ctx))
		return -EINVAL;
	if (num_entries < 0)
		return -EINVAL;
	/* Progress first (it takes sq_lock and ctx->lock, poll_lock after). */
	srdma_engine_cq_progress(to_scq(cq));
	n = srdma_cq_poll(to_scq(cq), num_entries, wc);
	/* Nothing yet: receive what the net transport has queued for this
	 * context ourselves rather than wait for its progress thread to be
	 * woken and scheduled (net-endpoint.md, "inline path"). */
	if (!n && num_entries && srdma_engine_cq_idle(to_scq(cq)) > 0)
		n = srdma_cq_poll(to_scq(cq), num_entries, wc);
	if (n > 0)
		SRDMA_LT(SRDMA_LT_CQHIT);
	return n;
}

static int op_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	if (srdma_ctx_inherited(to_scq(cq)->ctx))
		return EINVAL;
	/* Events next, not polls: the net progress thread receives again. */
	srdma_engine_ctx_blocks(to_scq(cq)->ctx);
	return -srdma_cq_notify(to_scq(cq), solicited_only != 0);
}

/* ---- SRQ --------------------------------------------------------------- */

SRDMA_EXPORT struct ibv_srq *
ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr)
{
	struct srdma_srq *srq;
	int ret;

	ret = srdma_srq_create(pd, srq_init_attr, &srq);
	if (ret)
		return null_errno(ret);
	return &srq->ibsrq;
}

static struct srdma_srq *srq_lookup(struct ibv_srq *srq)
{
	if (!srq || !srdma_handle_check(srq, SRDMA_OBJ_SRQ))
		return NULL;
	return container_of(srq, struct srdma_srq, ibsrq);
}

SRDMA_EXPORT int ibv_modify_srq(struct ibv_srq *srq,
				struct ibv_srq_attr *srq_attr,
				int srq_attr_mask)
{
	struct srdma_srq *s = srq_lookup(srq);

	if (!s)
		return EINVAL;
	return -srdma_srq_modify(s, srq_attr, srq_attr_mask);
}

SRDMA_EXPORT int ibv_query_srq(struct ibv_srq *srq,
			       struct ibv_srq_attr *srq_attr)
{
	struct srdma_srq *s = srq_lookup(srq);

	if (!s)
		return EINVAL;
	return -srdma_srq_query(s, srq_attr);
}

SRDMA_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct srdma_srq *s = srq_lookup(srq);

	if (!s && srdma_handle_forget_inherited(srq, SRDMA_OBJ_SRQ))
		return 0;	/* inherited across fork(): ours only */
	if (!s)
		return EINVAL;
	return -srdma_srq_destroy(s);
}

static int op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad_wr)
{
	struct srdma_srq *s = container_of(srq, struct srdma_srq, ibsrq);

	if (srdma_ctx_inherited(s->ctx)) {
		*bad_wr = wr;
		return EINVAL;
	}
	return srdma_srq_post_recv(s, wr, bad_wr);
}

/* ---- QP ------------------------------------------------------------------ */

static struct ibv_qp *qp_create(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *a)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_qp *qp;
	int ret;

	if (!ctx)
		return null_errno(-EINVAL);
	ret = srdma_qp_create(ctx, a, &qp);
	if (ret)
		return null_errno(ret);
	if (qp->is_ex)
		srdma_verbs_qpex_init(qp, a->send_ops_flags);
	return &qp->ib.qp;
}

SRDMA_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
					  struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	if (!pd || !qp_init_attr || !srdma_pd_lookup(pd))
		return null_errno(-EINVAL);
	memset(&a, 0, sizeof(a));
	a.qp_context = qp_init_attr->qp_context;
	a.send_cq = qp_init_attr->send_cq;
	a.recv_cq = qp_init_attr->recv_cq;
	a.srq = qp_init_attr->srq;
	a.cap = qp_init_attr->cap;
	a.qp_type = qp_init_attr->qp_type;
	a.sq_sig_all = qp_init_attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = qp_create(pd->context, &a);
	if (qp)
		qp_init_attr->cap = a.cap;
	return qp;
}

static struct ibv_qp *op_create_qp_ex(struct ibv_context *context,
				      struct ibv_qp_init_attr_ex *a)
{
	if (!a)
		return null_errno(-EINVAL);
	return qp_create(context, a);
}

static struct srdma_qp *qp_lookup(struct ibv_qp *qp)
{
	if (!qp || !srdma_handle_check(qp, SRDMA_OBJ_QP))
		return NULL;
	return to_sqp(qp);
}

SRDMA_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			      int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct srdma_qp *s = qp_lookup(qp);

	if (!s)
		return EINVAL;
	return -srdma_qp_query(s, attr, attr_mask, init_attr);
}

SRDMA_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			       int attr_mask)
{
	struct srdma_qp *s = qp_lookup(qp);

	if (!s)
		return EINVAL;
	return -srdma_qp_modify(s, attr, attr_mask);
}

SRDMA_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
	struct srdma_qp *s = qp_lookup(qp);

	if (!s && srdma_handle_forget_inherited(qp, SRDMA_OBJ_QP))
		return 0;	/* inherited across fork(): ours only */
	if (!s)
		return EINVAL;
	return -srdma_qp_destroy(s);
}

/* NULL (errno untouched, as upstream) unless created with send ops. */
SRDMA_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct srdma_qp *s = qp_lookup(qp);

	if (!s || !s->is_ex)
		return NULL;
	return &s->ib.qp_ex;
}

/*
 * The hot ops below refuse objects inherited across fork() with one load
 * and compare (srdma_ctx_inherited), before any lock: a lock a parent
 * thread held at fork time stays locked in the child forever.
 */
static int op_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr)
{
	if (srdma_ctx_inherited(to_sqp(qp)->ctx)) {
		*bad_wr = wr;
		return EINVAL;
	}
	SRDMA_LT(SRDMA_LT_POST);
	return srdma_post_send(to_sqp(qp), wr, bad_wr);
}

static int op_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	if (srdma_ctx_inherited(to_sqp(qp)->ctx)) {
		*bad_wr = wr;
		return EINVAL;
	}
	return srdma_qp_post_recv(to_sqp(qp), wr, bad_wr);
}

static int op_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		      struct ibv_mw_bind *mw_bind)
{
	struct srdma_qp *s = qp_lookup(qp);

	if (!s)
		return EINVAL;
	return srdma_bind_mw(s, mw, mw_bind);
}

/* ---- address handles --------------------------------------------------- */

SRDMA_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
					  struct ibv_ah_attr *attr)
{
	struct srdma_ah *ah;
	int ret;

	ret = srdma_ah_create(pd, attr, &ah);
	if (ret)
		return null_errno(ret);
	return &ah->ibah;
}

SRDMA_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (srdma_handle_forget_inherited(ah, SRDMA_OBJ_AH))
		return 0;
	if (!ah || !srdma_handle_check(ah, SRDMA_OBJ_AH))
		return EINVAL;
	return -srdma_ah_destroy(container_of(ah, struct srdma_ah, ibah));
}

SRDMA_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context,
				     uint8_t port_num, struct ibv_wc *wc,
				     struct ibv_grh *grh,
				     struct ibv_ah_attr *ah_attr)
{
	if (!srdma_ctx_lookup(context) || !wc || !ah_attr || port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (wc->wc_flags & IBV_WC_GRH) {
		if (!grh) {
			errno = EINVAL;
			return -1;
		}
		union ibv_gid to = grh->dgid;

		ah_attr->is_global = 1;
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) &
					  0xfffff;
		ah_attr->grh.hop_limit = 0xff;
		ah_attr->grh.traffic_class =
			(be32toh(grh->version_tclass_flow) >> 20) & 0xff;
		ah_attr->grh.sgid_index = 0;
		if (srdma_link_is_eth() &&
		    (be32toh(grh->version_tclass_flow) >> 28) != 6) {
			/*
			 * RoCEv2 over IPv4: 20 zero bytes, then the IPv4
			 * header (version 4, TOS at byte 1, addresses at
			 * 12 and 16); the GIDs are the IPv4-mapped ones.
			 */
			const uint8_t *ip4 = (const uint8_t *)grh + 20;

			if ((ip4[0] >> 4) != 4) {
				errno = EINVAL;
				return -1;
			}
			memset(&ah_attr->grh.dgid, 0, sizeof(union ibv_gid));
			ah_attr->grh.dgid.raw[10] = 0xff;
			ah_attr->grh.dgid.raw[11] = 0xff;
			memcpy(&ah_attr->grh.dgid.raw[12], ip4 + 12, 4);
			to = ah_attr->grh.dgid;
			memcpy(&to.raw[12], ip4 + 16, 4);
			ah_attr->grh.flow_label = 0;
			ah_attr->grh.traffic_class = ip4[1];
		}
		/* RoCE: the GID the message was sent to names our SGID. */
		if (srdma_link_is_eth()) {
			int idx = srdma_gid_find(&to_sctx(context)->gids,
						 &to);

			ah_attr->grh.sgid_index = idx > 0 ? (uint8_t)idx : 0;
		}
	}
	return 0;
}

SRDMA_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
						  struct ibv_wc *wc,
						  struct ibv_grh *grh,
						  uint8_t port_num)
{
	struct ibv_ah_attr a;

	if (!pd || ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}

/* ---- op tables ------------------------------------------------------------ */

void srdma_verbs_set_dp_ops(struct srdma_context *ctx)
{
	struct ibv_context_ops *ops = &ctx->vctx.context.ops;
	struct verbs_context *v = &ctx->vctx;

	ops->poll_cq = op_poll_cq;
	ops->req_notify_cq = op_req_notify_cq;
	ops->post_send = op_post_send;
	ops->post_recv = op_post_recv;
	ops->post_srq_recv = op_post_srq_recv;
	ops->bind_mw = op_bind_mw;
	v->create_cq_ex = op_create_cq_ex;
	v->create_qp_ex = op_create_qp_ex;
}

