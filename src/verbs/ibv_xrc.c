// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_xrc.c - the XRC verbs the inlines of verbs.h call through the
 * verbs_context: open_xrcd, close_xrcd, create_srq_ex (XRC SRQs; a basic
 * SRQ never gets here, ibv_create_srq_ex turns it into ibv_create_srq),
 * get_srq_num and open_qp. XRC QPs themselves are created by
 * create_qp_ex (ibv_dp.c). Each converts core's -errno once.
 * Design: docs/design/xrc.md.
 */
#include <errno.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/xrc.h"
#include "util/log.h"
#include "verbs/verbs_int.h"

static struct ibv_xrcd *op_open_xrcd(struct ibv_context *context,
				     struct ibv_xrcd_init_attr *attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_xrcd *x;
	int ret;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	ret = srdma_xrcd_open(ctx, attr, &x);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &x->ibxrcd;
}

static int op_close_xrcd(struct ibv_xrcd *xrcd)
{
	return -srdma_xrcd_close(xrcd);
}

static struct ibv_srq *op_create_srq_ex(struct ibv_context *context,
					struct ibv_srq_init_attr_ex *attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_srq *srq;
	int ret;

	if (!ctx || !attr) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type == IBV_SRQT_TM)
		return srdma_verbs_create_srq_tm(context, attr); /* ibv_tm.c */
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ||
	    attr->srq_type != IBV_SRQT_XRC) {
		srdma_dbg("create_srq_ex: srq_type %d, comp_mask %#x not "
			  "supported (basic, XRC and tag-matching SRQs only)",
			  (int)attr->srq_type, attr->comp_mask);
		errno = EOPNOTSUPP;
		return NULL;
	}
	ret = srdma_srq_create_xrc(ctx, attr, &srq);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &srq->ibsrq;
}

static int op_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	if (!srq || !srq_num || !srdma_handle_check(srq, SRDMA_OBJ_SRQ))
		return EINVAL;
	*srq_num = srdma_srq_num(container_of(srq, struct srdma_srq, ibsrq));
	return 0;
}

static struct ibv_qp *op_open_qp(struct ibv_context *context,
				 struct ibv_qp_open_attr *attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_qp *qp;
	int ret;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	ret = srdma_qp_open(ctx, attr, &qp);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &qp->ib.qp;
}

void srdma_verbs_set_xrc_ops(struct srdma_context *ctx)
{
	struct verbs_context *v = &ctx->vctx;

	v->open_xrcd = op_open_xrcd;
	v->close_xrcd = op_close_xrcd;
	v->create_srq_ex = op_create_srq_ex;
	v->get_srq_num = op_get_srq_num;
	v->open_qp = op_open_qp;
}
