// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pd.c - protection domains.
 *
 * A PD is a handle number unique within its context (the number key table
 * entries and, later, QPs record, so a peer can compare PDs in shared
 * memory) plus a use count. Every MR, MW, QP, SRQ and AH holds one use;
 * dealloc answers EBUSY while any is left. Relaxed MRs awaiting invalidation
 * count too, so dealloc first flushes them (verbs-semantics §6 CHOICE).
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"
#include "core/restrack.h"
#include "util/fault.h"
#include "util/log.h"

struct srdma_pd *srdma_pd_lookup(struct ibv_pd *ibpd)
{
	if (!srdma_handle_check(ibpd, SRDMA_OBJ_PD))
		return NULL;
	return container_of(ibpd, struct srdma_pd, ibpd);
}

int srdma_pd_alloc(struct srdma_context *ctx, struct srdma_pd **out)
{
	struct srdma_pd *pd;
	int ret;

	if (SRDMA_FAULT(PD_ALLOC))
		return -ENOMEM;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->ctx = ctx;
	pd->ibpd.context = &ctx->vctx.context;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->n_pd >= SRDMA_MAX_PD) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	pd->ibpd.handle = ctx->next_pd_handle++;
	if (!ctx->next_pd_handle)
		ctx->next_pd_handle = 1;	/* 0 is never a PD */
	ret = srdma_handle_add(pd, SRDMA_OBJ_PD);
	if (ret)
		goto err_unlock;
	ctx->n_pd++;
	srdma_rt_pd_add(ctx, pd->ibpd.handle);	/* srdma status */
	pthread_mutex_unlock(&ctx->lock);
	*out = pd;
	return 0;

err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	free(pd);
	return ret;
}

int srdma_pd_dealloc(struct srdma_pd *pd)
{
	struct srdma_context *ctx = pd->ctx;

	pthread_mutex_lock(&ctx->lock);
	if (pd->n_pending)
		srdma_relaxed_flush_locked(ctx, pd, false);
	if (atomic_load(&pd->usecnt)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("pd %u: still used by %u object(s)", pd->ibpd.handle,
			  atomic_load(&pd->usecnt));
		return -EBUSY;
	}
	srdma_handle_del(pd, SRDMA_OBJ_PD);
	srdma_rt_pd_del(ctx, pd->ibpd.handle);
	ctx->n_pd--;
	pthread_mutex_unlock(&ctx->lock);
	free(pd);
	return 0;
}
