// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_ops.c - the per-context op tables that verbs.h's inline functions
 * call through: struct ibv_context_ops (ibv_post_send, ibv_poll_cq,
 * ibv_alloc_mw, ...) and the verbs_context extension ops (query_port,
 * query_device_ex, advise_mr, ...). No op the headers may call is left
 * NULL unless the inline turns NULL into a clean EOPNOTSUPP itself.
 * The data-path ops (poll_cq, post_send, create_qp_ex, ...) are set by
 * srdma_verbs_set_dp_ops() in ibv_dp.c.
 */
#include <errno.h>
#include <string.h>

#include "core/core.h"
#include "core/dm.h"
#include "util/compiler.h"
#include "util/log.h"
#include "verbs/verbs_int.h"

static struct ibv_mw *op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct srdma_mw *mw;
	int ret;

	ret = srdma_mw_alloc(pd, type, &mw);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &mw->ibmw;
}

static int op_dealloc_mw(struct ibv_mw *mw)
{
	if (srdma_handle_forget_inherited(mw, SRDMA_OBJ_MW))
		return 0;	/* inherited across fork(): ours only */
	return -srdma_mw_dealloc(mw);
}

static int op_query_port(struct ibv_context *context, uint8_t port_num,
			 struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct ibv_port_attr a;

	if (!ctx || !port_attr || port_num != 1)
		return EINVAL;
	srdma_fill_port_attr(ctx, &a);
	memcpy(port_attr, &a,
	       port_attr_len < sizeof(a) ? port_attr_len : sizeof(a));
	return 0;
}

#define SRDMA_DEVICE_ATOMIC_WRITE (1ULL << 40)

static int op_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr,
			      size_t attr_size)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct ibv_device_attr_ex a;

	/* A fork child may query its parent's context for the device's
	 * immutable limits, as before ibv_alloc_dm there (ibv_dm.c; pyverbs
	 * does): nothing read below is shared memory. */
	if (!ctx && context &&
	    srdma_handle_check_inherited(to_sctx(context), SRDMA_OBJ_CTX))
		ctx = to_sctx(context);
	if (!ctx || !attr)
		return EINVAL;
	if (input && input->comp_mask)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	srdma_fill_device_attr(ctx, &a.orig_attr);
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
	if (ctx->odp_enabled) {
		a.odp_caps.general_caps = IBV_ODP_SUPPORT |
					  IBV_ODP_SUPPORT_IMPLICIT;
		a.odp_caps.per_transport_caps.rc_odp_caps =
			IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
			IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
		a.odp_caps.per_transport_caps.uc_odp_caps =
			IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
		a.odp_caps.per_transport_caps.ud_odp_caps =
			IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
			IBV_ODP_SUPPORT_SRQ_RECV;
		/* XRC moves bytes through the same paths as RC. */
		a.xrc_odp_caps = IBV_ODP_SUPPORT_SEND |
				 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
				 IBV_ODP_SUPPORT_ATOMIC |
				 IBV_ODP_SUPPORT_SRQ_RECV;
	}
	a.phys_port_cnt_ex = 1;
	/* ATOMIC_WRITE (IB_UVERBS_DEVICE_ATOMIC_WRITE, newer than rdma-core
	 * 44's headers): both transports carry it (docs/design/dm.md). */
	a.device_cap_flags_ex |= SRDMA_DEVICE_ATOMIC_WRITE;
	a.max_dm_size = SRDMA_MAX_DM_SIZE;	/* core/dm.h */
	srdma_verbs_fill_tm_caps(&a.tm_caps);	/* ibv_tm.c */
	/* Completion timestamps (core/clock.c): a 64-bit 1 GHz counter. */
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = SRDMA_HCA_CORE_CLOCK_KHZ;
	srdma_raw_fill_device_attr_ex(&a);	/* RSS, WQs (ibv_raw.c) */
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

/*
 * The device's free-running clock (core/clock.c). mlx5 returns its cycle
 * count in raw_clock.tv_nsec with tv_sec 0; the man page gives a timespec.
 * At 1 GHz the normalised timespec of the counter reads the same both
 * ways (tv_sec * 10^9 + tv_nsec is the tick count).
 */
static int op_query_rt_values(struct ibv_context *context,
			      struct ibv_values_ex *values)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	uint64_t now;

	if (!ctx || !values)
		return EINVAL;
	if (!(values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK)) {
		values->comp_mask = 0;
		return 0;
	}
	now = srdma_now_ns();
	values->raw_clock.tv_sec = (time_t)(now / 1000000000u);
	values->raw_clock.tv_nsec = (long)(now % 1000000000u);
	values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	return 0;
}

static int op_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			uint32_t flags, struct ibv_sge *sg_list,
			uint32_t num_sge)
{
	return -srdma_mr_advise(pd, advice, flags, sg_list, num_sge);
}

#undef ibv_query_port
void srdma_verbs_set_ops(struct srdma_context *ctx)
{
	struct ibv_context_ops *ops = &ctx->vctx.context.ops;
	struct verbs_context *v = &ctx->vctx;

	/* As libibverbs does for binaries built against 1.1.8 headers. */
	ops->_compat_query_device = ibv_query_device;
	ops->_compat_query_port = ibv_query_port;
	ops->alloc_mw = op_alloc_mw;
	ops->dealloc_mw = op_dealloc_mw;
	srdma_verbs_set_dp_ops(ctx);
	srdma_verbs_set_pd_ops(ctx);

	v->query_port = op_query_port;
	v->query_device_ex = op_query_device_ex;
	v->advise_mr = op_advise_mr;
	v->query_rt_values = op_query_rt_values;
	srdma_verbs_set_xrc_ops(ctx);	/* ibv_xrc.c */
	srdma_verbs_set_dm_ops(ctx);
	srdma_verbs_set_tm_ops(ctx);
	srdma_verbs_set_raw_ops(ctx);
	srdma_verbs_set_mcast_ops(ctx);
}
