// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_pd.c - ABI front end for protection domains: NULL + errno for
 * ibv_alloc_pd, a positive errno for ibv_dealloc_pd (EBUSY while any object
 * uses the PD).
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
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);

	if (!pd && srdma_handle_forget_inherited(ibpd, SRDMA_OBJ_PD))
		return 0;	/* inherited across fork(): ours only */
	if (!pd)
		return EINVAL;
	return -srdma_pd_dealloc(pd);
}
