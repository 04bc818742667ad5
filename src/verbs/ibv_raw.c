// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_raw.c - the verbs_context ops of raw packet steering: flows
 * (ibv_create_flow, ibv_destroy_flow), receive work queues (ibv_create_wq,
 * ibv_modify_wq, ibv_destroy_wq) and indirection tables
 * (ibv_create_rwq_ind_table, ibv_destroy_rwq_ind_table). verbs.h's
 * inlines call these; they resolve and check the public object, call
 * core/raw.c and convert its 0 / -errno once: NULL + errno for creators,
 * a positive errno for the others. Raw packet QPs themselves and RSS QPs
 * come through ibv_create_qp(_ex) (ibv_dp.c). Design:
 * docs/design/raw-packet.md.
 */
#include <errno.h>

#include "core/raw.h"
#include "util/log.h"
#include "verbs/verbs_int.h"

static struct ibv_flow *op_create_flow(struct ibv_qp *qp,
				       struct ibv_flow_attr *attr)
{
	struct srdma_flow *f;
	int ret;

	if (!qp || !srdma_handle_check(qp, SRDMA_OBJ_QP) || !attr) {
		errno = EINVAL;
		return NULL;
	}
	ret = srdma_flow_create(to_sqp(qp), attr, &f);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &f->ib;
}

static int op_destroy_flow(struct ibv_flow *flow)
{
	if (!srdma_handle_check(flow, SRDMA_OBJ_FLOW))
		return EINVAL;
	return -srdma_flow_destroy(container_of(flow, struct srdma_flow, ib));
}

static struct ibv_wq *op_create_wq(struct ibv_context *context,
				   struct ibv_wq_init_attr *attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_wq *wq;
	int ret;

	if (!ctx || !attr) {
		errno = EINVAL;
		return NULL;
	}
	ret = srdma_wq_create(ctx, attr, &wq);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &wq->ibwq;
}

static int op_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr)
{
	if (!srdma_handle_check(wq, SRDMA_OBJ_WQ) || !attr)
		return EINVAL;
	return -srdma_wq_modify(container_of(wq, struct srdma_wq, ibwq), attr);
}

static int op_destroy_wq(struct ibv_wq *wq)
{
	if (!srdma_handle_check(wq, SRDMA_OBJ_WQ))
		return EINVAL;
	return -srdma_wq_destroy(container_of(wq, struct srdma_wq, ibwq));
}

static struct ibv_rwq_ind_table *
op_create_rwq_ind_table(struct ibv_context *context,
			struct ibv_rwq_ind_table_init_attr *attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_rwq_tbl *t;
	int ret;

	if (!ctx || !attr) {
		errno = EINVAL;
		return NULL;
	}
	ret = srdma_rwq_tbl_create(ctx, attr, &t);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &t->ib;
}

static int op_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl)
{
	if (!srdma_handle_check(tbl, SRDMA_OBJ_RWQ_TBL))
		return EINVAL;
	return -srdma_rwq_tbl_destroy(container_of(tbl, struct srdma_rwq_tbl,
						   ib));
}

void srdma_verbs_set_raw_ops(struct srdma_context *ctx)
{
	struct verbs_context *v = &ctx->vctx;

	v->ibv_create_flow = op_create_flow;
	v->ibv_destroy_flow = op_destroy_flow;
	v->create_wq = op_create_wq;
	v->modify_wq = op_modify_wq;
	v->destroy_wq = op_destroy_wq;
	v->create_rwq_ind_table = op_create_rwq_ind_table;
	v->destroy_rwq_ind_table = op_destroy_rwq_ind_table;
}

void srdma_raw_fill_device_attr_ex(struct ibv_device_attr_ex *a)
{
	if (!srdma_link_is_eth())
		return;
	a->rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
	a->rss_caps.max_rwq_indirection_tables = SRDMA_MAX_RWQ_TBL;
	a->rss_caps.max_rwq_indirection_table_size = 1u << SRDMA_RSS_LOG_MAX;
	a->rss_caps.rx_hash_fields_mask = SRDMA_RSS_FIELDS;
	a->rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	a->max_wq_type_rq = SRDMA_SEG_QP_SLOTS - 1;
}
