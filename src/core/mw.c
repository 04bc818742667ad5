// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mw.c - memory window allocation and deallocation (verbs-semantics §4.1).
 *
 * A window is an entry of the same key table as MRs, with its own kind
 * (MW1 / MW2), so an MW key can never pass as an lkey. A new type 1 window
 * is "valid but empty" (VALID, length 0: it grants nothing); a new type 2
 * window is free for binding (INVALID). Binding arrives with the data path;
 * dealloc unbinds first, so the MR's bound-window count drops and the key
 * stops working before the slot is drained and freed.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"
#include "util/fault.h"
#include "util/log.h"

int srdma_mw_alloc(struct ibv_pd *ibpd, enum ibv_mw_type type,
		   struct srdma_mw **out)
{
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);
	struct srdma_context *ctx;
	struct srdma_shm_key *e;
	struct srdma_mw *mw;
	uint32_t slot, key;
	int ret;

	if (!pd)
		return -EINVAL;
	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return -EINVAL;
	ctx = pd->ctx;
	if (SRDMA_FAULT(MW_ALLOC))
		return -ENOMEM;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	mw->pd = pd;
	mw->ibmw.context = ibpd->context;
	mw->ibmw.pd = ibpd;
	mw->ibmw.type = type;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->n_mw >= SRDMA_MAX_MW) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	ret = srdma_kt_alloc(&ctx->kt, &slot, &key);
	if (ret)
		goto err_unlock;
	mw->slot = slot;
	mw->ibmw.rkey = key;
	mw->ibmw.handle = slot;
	ret = srdma_handle_add(mw, SRDMA_OBJ_MW);
	if (ret)
		goto err_free_slot;
	e = &ctx->kt.ent[slot];
	srdma_key_write_begin(e);
	e->kind = type == IBV_MW_TYPE_1 ? SRDMA_KIND_MW1 : SRDMA_KIND_MW2;
	e->state = type == IBV_MW_TYPE_1 ? SRDMA_KEY_VALID : SRDMA_KEY_INVALID;
	e->flags = 0;
	e->access = 0;
	e->pd_handle = ibpd->handle;
	e->bind_qpn = 0;
	e->iova = 0;
	e->length = 0;
	e->host_addr = 0;
	e->mr_slot = UINT32_MAX;
	e->req_length = 0;
	atomic_store_explicit(&e->key, key, memory_order_relaxed);
	srdma_key_write_end(e);
	atomic_fetch_add(&pd->usecnt, 1);
	ctx->n_mw++;
	atomic_fetch_add_explicit(&ctx->host.seg->n_live_mw, 1,
				  memory_order_relaxed);
	pthread_mutex_unlock(&ctx->lock);
	*out = mw;
	return 0;

err_free_slot:
	srdma_kt_free(&ctx->kt, slot);
err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	free(mw);
	return ret;
}

int srdma_mw_dealloc(struct ibv_mw *ibmw)
{
	struct srdma_context *ctx;
	struct srdma_mw *mw;

	if (!srdma_handle_check(ibmw, SRDMA_OBJ_MW))
		return -EINVAL;
	mw = container_of(ibmw, struct srdma_mw, ibmw);
	ctx = mw->pd->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (!srdma_handle_del(mw, SRDMA_OBJ_MW)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	/* Unbound: the key stops working. */
	srdma_key_set_state(&ctx->kt.ent[mw->slot], SRDMA_KEY_INVALID);
	if (mw->mr) {
		atomic_fetch_sub(&mw->mr->bound_mws, 1);
		mw->mr = NULL;
	}
	pthread_mutex_unlock(&ctx->lock);
	srdma_key_drain(&ctx->kt, mw->slot, &ctx->host);
	pthread_mutex_lock(&ctx->lock);
	srdma_kt_release(&ctx->kt, mw->slot);
	ctx->n_mw--;
	atomic_fetch_sub(&mw->pd->usecnt, 1);
	atomic_fetch_sub_explicit(&ctx->host.seg->n_live_mw, 1,
				  memory_order_relaxed);
	pthread_mutex_unlock(&ctx->lock);
	free(mw);
	return 0;
}
