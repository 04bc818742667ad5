// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mw.c - memory window allocation and deallocation (verbs-semantics §4.1).
 *
 * A window is an entry of the same key table as MRs, with its own kind
 * (MW1 / MW2), so an MW key can never pass as an lkey. A new type 1 window
 * is "valid but empty" (VALID, length 0: it grants nothing); a new type 2
 * window is free for binding (INVALID). Dealloc unbinds first, so the MR's
 * bound-window count drops and the key stops working before the slot is
 * drained and freed.
 *
 * Binding (§4.2, §4.3) and local invalidation execute in the send queue
 * of the QP they were posted on (engine/requester.c calls back here), under the
 * context lock. A peer's SEND_WITH_INV writes only the shared key entry;
 * the owner notices when it next looks (srdma_mr_sync_bound_locked()).
 */
#include <errno.h>
#include <stdlib.h>

#include "core/dp.h"

#include "core/core.h"
#include "util/fault.h"
#include "util/log.h"

/*
 * Write the fields of a window bound to nothing: no access, no range, no
 * MR, no QP. Requires srdma_key_write_begin(@e) (the stores are relaxed;
 * the key entry's sequence count publishes them).
 */
static void key_put_unbound(struct srdma_shm_key *e)
{
	SRDMA_KEY_PUT(e, access, 0);
	SRDMA_KEY_PUT(e, iova, 0);
	SRDMA_KEY_PUT(e, length, 0);
	SRDMA_KEY_PUT(e, host_addr, 0);
	SRDMA_KEY_PUT(e, mr_slot, UINT32_MAX);
	SRDMA_KEY_PUT(e, flags, 0);
	SRDMA_KEY_PUT(e, bind_qpn, 0);
}

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
	SRDMA_KEY_PUT(e, kind,
		      type == IBV_MW_TYPE_1 ? SRDMA_KIND_MW1 : SRDMA_KIND_MW2);
	SRDMA_KEY_PUT(e, state,
		      type == IBV_MW_TYPE_1 ? SRDMA_KEY_VALID :
					      SRDMA_KEY_INVALID);
	SRDMA_KEY_PUT(e, pd_handle, ibpd->handle);
	key_put_unbound(e);
	SRDMA_KEY_PUT(e, req_length, 0);
	atomic_store_explicit(&e->key, key, memory_order_relaxed);
	srdma_key_write_end(e);
	srdma_pd_hold(pd);
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
	srdma_mw_set_mr_locked(mw, NULL);
	pthread_mutex_unlock(&ctx->lock);
	srdma_key_drain(&ctx->kt, mw->slot, &ctx->host);
	pthread_mutex_lock(&ctx->lock);
	srdma_kt_release(&ctx->kt, mw->slot);
	ctx->n_mw--;
	srdma_pd_unhold(mw->pd);
	atomic_fetch_sub_explicit(&ctx->host.seg->n_live_mw, 1,
				  memory_order_relaxed);
	pthread_mutex_unlock(&ctx->lock);
	free(mw);
	return 0;
}

struct srdma_mw *srdma_mw_lookup(struct ibv_mw *ibmw)
{
	if (!ibmw || !srdma_handle_check(ibmw, SRDMA_OBJ_MW))
		return NULL;
	return container_of(ibmw, struct srdma_mw, ibmw);
}

void srdma_mw_set_mr_locked(struct srdma_mw *mw, struct srdma_mr *mr)
{
	struct srdma_mw **pp;

	if (mw->mr == mr)
		return;
	if (mw->mr) {
		for (pp = &mw->mr->bound; *pp; pp = &(*pp)->next_bound) {
			if (*pp == mw) {
				*pp = mw->next_bound;
				break;
			}
		}
		atomic_fetch_sub(&mw->mr->bound_mws, 1);
	}
	mw->mr = mr;
	mw->next_bound = NULL;
	if (mr) {
		mw->next_bound = mr->bound;
		mr->bound = mw;
		atomic_fetch_add(&mr->bound_mws, 1);
	}
}

uint32_t srdma_mr_sync_bound_locked(struct srdma_context *ctx,
				    struct srdma_mr *mr)
{
	struct srdma_mw *mw = mr->bound, *next;

	for (; mw; mw = next) {
		struct srdma_key_snap s;

		next = mw->next_bound;
		if (srdma_key_snapshot(&ctx->kt.ent[mw->slot], &s) &&
		    s.state != SRDMA_KEY_VALID)
			srdma_mw_set_mr_locked(mw, NULL);
	}
	return atomic_load(&mr->bound_mws);
}

int srdma_mw_local_invalidate(struct srdma_context *ctx, struct srdma_pd *pd,
			      uint32_t key)
{
	struct srdma_key_view v;
	struct srdma_key_snap s;
	uint32_t slot;
	int r;

	srdma_kt_view(&ctx->kt, &v);
	r = srdma_key_check(&v, key, BIT(SRDMA_KIND_MW2), pd->ibpd.handle, 0,
			    0, 0, &s, &slot);
	if (r == SRDMA_KCHK_STATE)
		return 0;	/* already free */
	if (r) {
		srdma_dbg("LOCAL_INV of key %#x: %s", key,
			  srdma_key_fail_str(r));
		return -EINVAL;
	}
	pthread_mutex_lock(&ctx->lock);
	/* The MR's bound list catches up in srdma_mr_sync_bound_locked(). */
	srdma_key_set_state(&ctx->kt.ent[slot], SRDMA_KEY_INVALID);
	pthread_mutex_unlock(&ctx->lock);
	srdma_key_drain(&ctx->kt, slot, &ctx->host);
	return 0;
}

int srdma_mw_bind_exec(struct srdma_context *ctx, struct srdma_pd *qpd,
		       uint32_t qpn, struct ibv_mw *ibmw, uint32_t new_rkey,
		       const struct ibv_mw_bind_info *b)
{
	const unsigned int ok_access = IBV_ACCESS_LOCAL_WRITE |
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND |
		IBV_ACCESS_ZERO_BASED | IBV_ACCESS_RELAXED_ORDERING |
		IBV_ACCESS_OPTIONAL_RANGE;
	struct srdma_mw *mw = srdma_mw_lookup(ibmw);
	struct srdma_mr *mr = NULL;
	struct srdma_shm_key *e;
	struct srdma_key_snap ms;
	bool type2, zb, unbind;
	const char *why = NULL;
	int ret = -EINVAL;

	if (!mw)
		return -EINVAL;
	type2 = ibmw->type == IBV_MW_TYPE_2;
	zb = b->mw_access_flags & IBV_ACCESS_ZERO_BASED;
	unbind = !b->length;
	pthread_mutex_lock(&ctx->lock);
	e = &ctx->kt.ent[mw->slot];
	if ((new_rkey >> 8) != (atomic_load(&e->key) >> 8))
		why = "key index is not the window's";
	else if (type2 && SRDMA_KEY_GET(e, state) == SRDMA_KEY_VALID)
		why = "type 2 window already bound (o10-37.2.30)";
	else if (mw->pd->ibpd.handle != qpd->ibpd.handle)
		why = "QP and window in different PDs (C10-72)";
	else if (type2 && (!b->mr || unbind))
		why = "type 2 bind without MR or length (o10-37.2.40)";
	else if (b->mw_access_flags & ~ok_access)
		why = "unsupported window access";
	if (!why && !unbind) {
		if (!b->mr || !srdma_handle_check(b->mr, SRDMA_OBJ_MR)) {
			why = "MR is not a live MR";
		} else {
			mr = container_of(b->mr, struct srdma_mr, ibmr);
			if (!srdma_key_snapshot(&ctx->kt.ent[mr->slot], &ms) ||
			    ms.state != SRDMA_KEY_VALID)
				why = "MR invalid";
			else if (mr->pd->ibpd.handle != mw->pd->ibpd.handle)
				why = "MR and window in different PDs";
			else if (mr->flags & SRDMA_MRF_ZERO_BASED)
				why = "MR is zero based";
			else if (!(mr->access & IBV_ACCESS_MW_BIND))
				why = "MR lacks MW_BIND (C10-73)";
			else if ((b->mw_access_flags &
				  (IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_ATOMIC)) &&
				 !(mr->access & IBV_ACCESS_LOCAL_WRITE))
				why = "remote write/atomic window over an MR without LOCAL_WRITE (C10-74)";
			else if (b->addr < mr->iova ||
				 b->length > mr->length ||
				 b->addr - mr->iova > mr->length - b->length)
				why = "window outside the MR (C10-75)";
		}
	}
	if (why) {
		srdma_dbg("bind of window %#x: %s", ibmw->rkey, why);
		goto out;
	}
	srdma_key_write_begin(e);
	atomic_store_explicit(&e->key, new_rkey, memory_order_relaxed);
	if (unbind) {
		/* type 1: valid but empty */
		SRDMA_KEY_PUT(e, state, SRDMA_KEY_VALID);
		key_put_unbound(e);
	} else {
		SRDMA_KEY_PUT(e, state, SRDMA_KEY_VALID);
		SRDMA_KEY_PUT(e, access,
			      b->mw_access_flags & (IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC));
		SRDMA_KEY_PUT(e, iova, zb ? 0 : b->addr);
		SRDMA_KEY_PUT(e, length, b->length);
		SRDMA_KEY_PUT(e, req_length, b->length);
		SRDMA_KEY_PUT(e, host_addr,
			      mr->host_addr + (b->addr - mr->iova));
		SRDMA_KEY_PUT(e, mr_slot, mr->slot);
		SRDMA_KEY_PUT(e, flags, zb ? SRDMA_KEYF_ZERO_BASED : 0);
		SRDMA_KEY_PUT(e, bind_qpn, type2 ? qpn : 0);
	}
	srdma_key_write_end(e);
	srdma_mw_set_mr_locked(mw, unbind ? NULL : mr);
	/* Type 1: ibv_bind_mw() already set it at post time. Type 2: the
	 * consumer owns the new key; mw->rkey is not rewritten (1.3). */
	if (!type2)
		ibmw->rkey = new_rkey;
	ret = 0;
out:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}
