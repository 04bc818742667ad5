// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pd.c - protection domains, parent domains and thread domains.
 *
 * A PD is a handle number unique within its context (the number key table
 * entries and, later, QPs record, so a peer can compare PDs in shared
 * memory) plus a use count. Every MR, MW, QP, SRQ and AH holds one use;
 * dealloc answers EBUSY while any is left. Relaxed MRs awaiting invalidation
 * count too, so dealloc first flushes them (verbs-semantics §6 CHOICE).
 *
 * A parent domain (ibv_alloc_parent_domain(3)) is a struct srdma_pd of its
 * own - its own handle, its own use count, so the objects created on it
 * keep it from being deallocated - whose number is its protection PD's.
 * Every check that matters to protection compares numbers (key entries,
 * QPs and SRQs in shared memory, windows against QPs and MRs), so an MR
 * registered on the parent domain works for a QP on the protection PD and
 * the other way round, with no change to any check. It holds one use of
 * the protection PD and one of its thread domain, dropped when it goes.
 * Its custom allocator provides the private part of the QPs, CQs and SRQs
 * created on it (srdma_pd_obj_alloc); the buffers it gave are listed in
 * the parent domain so each goes back to the function that owns it.
 * docs/design/parent-domain.md has the whole contract.
 *
 * A thread domain is a hint that the application serialises the objects
 * on it. We accept it, validate it and keep a reference; it changes no
 * locking (our locks are uncontended mutexes: cheap, and they also guard
 * against the progress thread, which a hint from the application cannot
 * speak for).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/srdma_parent_domain.h>

#include "core/core.h"
#include "core/import.h"
#include "core/restrack.h"
#include "util/fault.h"
#include "util/log.h"

struct srdma_pd *srdma_pd_lookup_any(struct ibv_pd *ibpd)
{
	if (!srdma_handle_check(ibpd, SRDMA_OBJ_PD))
		return NULL;
	return container_of(ibpd, struct srdma_pd, ibpd);
}

struct srdma_pd *srdma_pd_lookup(struct ibv_pd *ibpd)
{
	struct srdma_pd *pd = srdma_pd_lookup_any(ibpd);
	_Atomic uint32_t *use;

	if (!pd)
		return NULL;
	use = pd->prot ? pd->prot->rt_use : pd->rt_use;
	if (use && (atomic_load(use) & SRDMA_RT_PD_DEAD)) {
		srdma_dbg("pd %u: destroyed by another process", ibpd->handle);
		return NULL;
	}
	return pd;
}

void srdma_pd_hold(struct srdma_pd *pd)
{
	uint32_t u;

	atomic_fetch_add(&pd->usecnt, 1);
	if (!pd->rt_use)
		return;
	u = atomic_load(pd->rt_use);
	do {
		if ((u & ~SRDMA_RT_PD_DEAD) == ~SRDMA_RT_PD_DEAD)
			return;		/* saturated */
	} while (!atomic_compare_exchange_weak(pd->rt_use, &u, u + 1));
}

void srdma_pd_unhold(struct srdma_pd *pd)
{
	uint32_t u;

	if (pd->rt_use) {
		u = atomic_load(pd->rt_use);
		do {
			if (!(u & ~SRDMA_RT_PD_DEAD))
				break;	/* another process broke it */
		} while (!atomic_compare_exchange_weak(pd->rt_use, &u, u - 1));
	}
	atomic_fetch_sub(&pd->usecnt, 1);
}

bool srdma_pd_destroy_shared(_Atomic uint32_t *use)
{
	uint32_t u;

	if (!use)
		return true;
	u = atomic_load(use);
	do {
		if (u & SRDMA_RT_PD_DEAD)
			return true;
		if (u)
			return false;
	} while (!atomic_compare_exchange_weak(use, &u, SRDMA_RT_PD_DEAD));
	return true;
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
	/* srdma status, and importers (core/import.c) */
	pd->rt_use = srdma_rt_pd_add(ctx, pd->ibpd.handle);
	pthread_mutex_unlock(&ctx->lock);
	*out = pd;
	return 0;

err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	free(pd);
	return ret;
}

/* srdma_pd_dealloc() of a parent domain: drops its uses of PD and TD. */
static int parent_dealloc(struct srdma_pd *pd)
{
	struct srdma_context *ctx = pd->ctx;

	pthread_mutex_lock(&ctx->lock);
	if (pd->n_pending)
		srdma_relaxed_flush_locked(ctx, pd, false);
	if (atomic_load(&pd->usecnt)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("parent domain %p: still used by %u object(s)",
			  (void *)&pd->ibpd, atomic_load(&pd->usecnt));
		return -EBUSY;
	}
	srdma_handle_del(pd, SRDMA_OBJ_PD);
	srdma_pd_unhold(pd->prot);
	if (pd->td)
		atomic_fetch_sub(&pd->td->usecnt, 1);
	ctx->n_pd--;
	pthread_mutex_unlock(&ctx->lock);
	free(pd->custom);
	free(pd);
	return 0;
}

int srdma_pd_dealloc(struct srdma_pd *pd)
{
	struct srdma_context *ctx = pd->ctx;

	if (pd->prot)
		return parent_dealloc(pd);
	if (pd->imported)	/* another process's PD: destroy it there */
		return srdma_import_pd_drop(pd, true);
	pthread_mutex_lock(&ctx->lock);
	if (pd->n_pending)
		srdma_relaxed_flush_locked(ctx, pd, false);
	if (atomic_load(&pd->usecnt)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("pd %u: still used by %u object(s)", pd->ibpd.handle,
			  atomic_load(&pd->usecnt));
		return -EBUSY;
	}
	/* Objects of processes that imported it count too (the kernel's
	 * usecnt of a shared PD); destroyed by one of them already: only
	 * our description is left to free. */
	if (!srdma_pd_destroy_shared(pd->rt_use)) {
		pthread_mutex_unlock(&ctx->lock);
		if (srdma_import_has_importers(ctx)) {
			srdma_dbg("pd %u: still used by objects of another process",
				  pd->ibpd.handle);
			return -EBUSY;
		}
		/* Nobody imports us any more: the uses left are those of
		 * importers that died with objects on the PD. */
		pthread_mutex_lock(&ctx->lock);
		if (atomic_load(&pd->usecnt)) {
			pthread_mutex_unlock(&ctx->lock);
			return -EBUSY;
		}
		srdma_info("pd %u: %u use(s) of dead importers dropped",
			   pd->ibpd.handle,
			   atomic_load(pd->rt_use) & ~SRDMA_RT_PD_DEAD);
		atomic_store(pd->rt_use, SRDMA_RT_PD_DEAD);
	}
	srdma_handle_del(pd, SRDMA_OBJ_PD);
	srdma_rt_pd_del(ctx, pd->ibpd.handle);
	ctx->n_pd--;
	pthread_mutex_unlock(&ctx->lock);
	free(pd);
	return 0;
}

static struct srdma_td *td_lookup(struct ibv_td *ibtd)
{
	if (!srdma_handle_check(ibtd, SRDMA_OBJ_TD))
		return NULL;
	return container_of(ibtd, struct srdma_td, ibtd);
}

int srdma_parent_domain_alloc(struct srdma_context *ctx,
			      const struct ibv_parent_domain_init_attr *attr,
			      struct srdma_pd **out)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct srdma_pd *prot, *pd;
	struct srdma_td *td = NULL;
	int ret;

	if (!attr)
		return -EINVAL;
	if (attr->comp_mask & ~known) {
		srdma_dbg("alloc_parent_domain: comp_mask bits %#x unknown",
			  attr->comp_mask & ~known);
		return -EINVAL;
	}
	prot = srdma_pd_lookup(attr->pd);
	if (!prot || prot->ctx != ctx || prot->prot) {
		srdma_dbg("alloc_parent_domain: %p is not a protection domain "
			  "of this context", (void *)attr->pd);
		return -EINVAL;
	}
	if (attr->td) {
		td = td_lookup(attr->td);
		if (!td || td->ctx != ctx) {
			srdma_dbg("alloc_parent_domain: %p is not a thread "
				  "domain of this context", (void *)attr->td);
			return -EINVAL;
		}
	}
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free)) {
		srdma_dbg("alloc_parent_domain: ALLOCATORS without both alloc "
			  "and free");
		return -EINVAL;
	}
	if (SRDMA_FAULT(PD_ALLOC))
		return -ENOMEM;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->ctx = ctx;
	pd->ibpd.context = &ctx->vctx.context;
	pd->ibpd.handle = prot->ibpd.handle;	/* the PD's number */
	pd->prot = prot;
	pd->td = td;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;

	/* The PD and TD were looked up without ctx->lock: a racing dealloc
	 * of either is the application's use after free, as on hardware. */
	pthread_mutex_lock(&ctx->lock);
	if (ctx->n_pd >= SRDMA_MAX_PD) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	ret = srdma_handle_add(pd, SRDMA_OBJ_PD);
	if (ret)
		goto err_unlock;
	srdma_pd_hold(prot);
	if (td)
		atomic_fetch_add(&td->usecnt, 1);
	ctx->n_pd++;
	pthread_mutex_unlock(&ctx->lock);
	*out = pd;
	return 0;

err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	free(pd);
	return ret;
}

/* ---- custom allocators ------------------------------------------------ */

/* Remember @p as a buffer of @pd's alloc(). Takes ctx->lock. */
static int custom_add(struct srdma_pd *pd, void *p)
{
	struct srdma_context *ctx = pd->ctx;
	int ret = 0;

	pthread_mutex_lock(&ctx->lock);
	if (pd->n_custom == pd->cap_custom) {
		uint32_t cap = pd->cap_custom ? 2 * pd->cap_custom : 8;
		void **n = realloc(pd->custom, cap * sizeof(*n));

		if (!n) {
			ret = -ENOMEM;
			goto out;
		}
		pd->custom = n;
		pd->cap_custom = cap;
	}
	pd->custom[pd->n_custom++] = p;
out:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* Forget @p if @pd's alloc() gave it; true if it did. Takes ctx->lock. */
static bool custom_del(struct srdma_pd *pd, void *p)
{
	struct srdma_context *ctx = pd->ctx;
	bool found = false;
	uint32_t i;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < pd->n_custom; i++) {
		if (pd->custom[i] == p) {
			pd->custom[i] = pd->custom[--pd->n_custom];
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	return found;
}

void *srdma_pd_obj_alloc(struct srdma_pd *pd, size_t size, uint64_t type)
{
	void *p;

	if (!pd || !pd->alloc)
		return calloc(1, size);
	p = pd->alloc(&pd->ibpd, pd->pd_context, size, SRDMA_RES_ALIGN, type);
	if (p == IBV_ALLOCATOR_USE_DEFAULT)
		return calloc(1, size);
	if (!p) {
		srdma_dbg("parent domain %p: alloc(%zu, type %llu) failed",
			  (void *)&pd->ibpd, size, (unsigned long long)type);
		errno = ENOMEM;
		return NULL;
	}
	if (((uintptr_t)p % SRDMA_RES_ALIGN) || custom_add(pd, p)) {
		srdma_dbg("parent domain %p: alloc gave %p, misaligned or "
			  "not recordable", (void *)&pd->ibpd, p);
		pd->free(&pd->ibpd, pd->pd_context, p, type);
		errno = ENOMEM;
		return NULL;
	}
	memset(p, 0, size);	/* the man page asks alloc to; be sure */
	return p;
}

void srdma_pd_obj_free(struct srdma_pd *pd, void *p, uint64_t type)
{
	if (p && pd && pd->alloc && custom_del(pd, p))
		pd->free(&pd->ibpd, pd->pd_context, p, type);
	else
		free(p);
}

/* ---- thread domains --------------------------------------------------- */

/*
 * Freed thread domains are kept for the next ibv_alloc_td rather than
 * given back to malloc: verbs.h's inline ibv_dealloc_td reads td->context
 * before we see the call, so a second dealloc of a TD must still find
 * readable memory naming its context, to be refused with EINVAL rather
 * than crash. The pool holds at most as many TDs as were ever live at once.
 */
static pthread_mutex_t td_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srdma_td *td_pool;	/* td_pool_lock */

static struct srdma_td *td_get(void)
{
	struct srdma_td *td;

	pthread_mutex_lock(&td_pool_lock);
	td = td_pool;
	if (td)
		td_pool = td->pool_next;
	pthread_mutex_unlock(&td_pool_lock);
	if (td)
		memset(td, 0, sizeof(*td));
	else
		td = calloc(1, sizeof(*td));
	return td;
}

static void td_put(struct srdma_td *td)
{
	pthread_mutex_lock(&td_pool_lock);
	td->pool_next = td_pool;
	td_pool = td;
	pthread_mutex_unlock(&td_pool_lock);
}

int srdma_td_alloc(struct srdma_context *ctx,
		   const struct ibv_td_init_attr *attr, struct srdma_td **out)
{
	struct srdma_td *td;
	int ret;

	if (!attr || attr->comp_mask) {
		srdma_dbg("alloc_td: comp_mask %#x: no bit is defined",
			  attr ? attr->comp_mask : 0);
		return -EINVAL;
	}
	td = td_get();
	if (!td)
		return -ENOMEM;
	td->ctx = ctx;
	td->ibtd.context = &ctx->vctx.context;
	pthread_mutex_lock(&ctx->lock);
	ret = srdma_handle_add(td, SRDMA_OBJ_TD);
	if (!ret)
		ctx->n_pd++;	/* a TD also keeps the context open */
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		td_put(td);
		return ret;
	}
	*out = td;
	return 0;
}

int srdma_td_dealloc(struct ibv_td *ibtd)
{
	struct srdma_td *td = td_lookup(ibtd);
	struct srdma_context *ctx;

	if (!td)
		return -EINVAL;
	ctx = td->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (atomic_load(&td->usecnt)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("td %p: still used by %u parent domain(s)",
			  (void *)ibtd, atomic_load(&td->usecnt));
		return -EBUSY;
	}
	if (!srdma_handle_del(td, SRDMA_OBJ_TD)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;	/* a racing dealloc won */
	}
	ctx->n_pd--;
	pthread_mutex_unlock(&ctx->lock);
	td_put(td);	/* keeps td->ibtd.context readable */
	return 0;
}
