// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_pd.c - ABI front end for protection domains: NULL + errno for
 * ibv_alloc_pd, a positive errno for ibv_dealloc_pd (EBUSY while any object
 * uses the PD, or a parent domain holds it). Also the verbs_context ops
 * behind verbs.h's inline ibv_alloc_td, ibv_dealloc_td and
 * ibv_alloc_parent_domain (docs/design/parent-domain.md); a parent domain
 * is deallocated with ibv_dealloc_pd.
 */
#include <errno.h>

#include "core/core.h"
#include "util/compiler.h"
#include "verbs/verbs_int.h"

SRDMA_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_pd *pd;
	int ret;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	ret = srdma_pd_alloc(ctx, &pd);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &pd->ibpd;
}

SRDMA_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	/* Also a PD another process destroyed: we free our part. */
	struct srdma_pd *pd = srdma_pd_lookup_any(ibpd);

	if (!pd && srdma_handle_forget_inherited(ibpd, SRDMA_OBJ_PD))
		return 0;	/* inherited across fork(): ours only */
	if (!pd)
		return EINVAL;
	return -srdma_pd_dealloc(pd);
}

/* ---- thread and parent domains (verbs_context ops) -------------------- */

static struct ibv_td *op_alloc_td(struct ibv_context *context,
				  struct ibv_td_init_attr *init_attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_td *td;
	int ret;

	ret = ctx ? srdma_td_alloc(ctx, init_attr, &td) : -EINVAL;
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &td->ibtd;
}

static int op_dealloc_td(struct ibv_td *td)
{
	if (srdma_handle_forget_inherited(td, SRDMA_OBJ_TD))
		return 0;	/* inherited across fork(): ours only */
	return -srdma_td_dealloc(td);
}

static struct ibv_pd *
op_alloc_parent_domain(struct ibv_context *context,
		       struct ibv_parent_domain_init_attr *attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_pd *pd;
	int ret;

	ret = ctx ? srdma_parent_domain_alloc(ctx, attr, &pd) : -EINVAL;
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &pd->ibpd;
}

void srdma_verbs_set_pd_ops(struct srdma_context *ctx)
{
	struct verbs_context *v = &ctx->vctx;

	v->alloc_td = op_alloc_td;
	v->dealloc_td = op_dealloc_td;
	v->alloc_parent_domain = op_alloc_parent_domain;
}
