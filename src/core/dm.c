// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dm.c - device memory: ibv_alloc_dm, ibv_free_dm, ibv_memcpy_to/from_dm
 * and ibv_reg_dm_mr (docs/design/dm.md).
 *
 * A NIC's device memory is a small on-chip SRAM that the host maps and
 * peers reach by RDMA through zero-based MRs. Here it is a private
 * anonymous mapping of the owning process, charged against a per-context
 * budget of max_dm_size bytes. Nothing else about it is special: an MR
 * over it is an ordinary zero-based registration whose key entry points
 * at the mapping, so the host transport (cross-memory attach) and the net
 * responder reach it without the owner doing anything.
 *
 * Rules, as rdma-core's man pages give them and mlx5 applies them where
 * the man pages are silent: comp_mask must be 0 and the length at most
 * max_dm_size (EINVAL); the budget exhausted is ENOMEM (the kernel's
 * answer); copies use 4-byte units (EINVAL) inside the DM (EFAULT);
 * ibv_free_dm is EBUSY while an MR uses the DM (the kernel's usecnt).
 *
 * Stale pointers: ibv_free_dm and ibv_memcpy_*_dm are inline in the
 * application and read dm->context or the copy function pointers before
 * we can check anything. Freed DM structs are therefore never returned to
 * malloc: they go to a spare list and keep their context and function
 * pointers, so a double free or a copy after free reaches our check and
 * fails with EINVAL instead of touching freed memory. The list is bounded
 * by the most DMs ever live at once.
 *
 * fork(): a DM may be allocated on a context inherited from the parent
 * (the child's copy of a real uverbs fd still works too): it is private
 * memory of the child, charged to the child's copy of the budget, and
 * used by copies only (its context has no live PD to register it with).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/dm.h"
#include "util/fault.h"
#include "util/log.h"

#define DM_ACCESS_OK                                                           \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_ZERO_BASED)

static pthread_mutex_t dm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srdma_dm *dm_spare;	/* dm_lock: freed DM structs */
static uint32_t dm_next_handle = 1;	/* dm_lock: process-wide */

/* Hold dm_lock across fork() so the child's spare list is consistent. */
static void dm_prepare(void)
{
	pthread_mutex_lock(&dm_lock);
}

static void dm_unlock(void)
{
	pthread_mutex_unlock(&dm_lock);
}

__attribute__((constructor)) static void dm_register_atfork(void)
{
	pthread_atfork(dm_prepare, dm_unlock, dm_unlock);
}

/* Charge @n bytes to @ctx's budget, or fail without charging. */
static bool dm_charge(struct srdma_context *ctx, uint64_t n)
{
	uint64_t used = atomic_load(&ctx->dm_used);

	do {
		if (used > SRDMA_MAX_DM_SIZE || n > SRDMA_MAX_DM_SIZE - used)
			return false;
	} while (!atomic_compare_exchange_weak(&ctx->dm_used, &used,
					       used + n));
	return true;
}

int srdma_dm_alloc(struct srdma_context *ctx, bool inherited,
		   const struct ibv_alloc_dm_attr *attr, struct srdma_dm **out)
{
	struct srdma_dm *dm;
	uint64_t charged;
	size_t map_len;
	void *base;
	int ret;

	if (!attr || attr->comp_mask)
		return -EINVAL;
	if (!attr->length || attr->length > SRDMA_MAX_DM_SIZE) {
		srdma_dbg("alloc_dm: length %zu, max_dm_size %u", attr->length,
			  SRDMA_MAX_DM_SIZE);
		return -EINVAL;
	}
	if (attr->log_align_req > SRDMA_DM_MAX_LOG_ALIGN)
		return -EINVAL;
	charged = (attr->length + SRDMA_DM_GRAIN - 1) &
		  ~(uint64_t)(SRDMA_DM_GRAIN - 1);
	if (!dm_charge(ctx, charged)) {
		srdma_dbg("alloc_dm: %" PRIu64 " bytes: device memory used up",
			  charged);
		return -ENOMEM;
	}
	map_len = (attr->length + srdma_page_size - 1) &
		  ~(srdma_page_size - 1);
	base = SRDMA_FAULT(DM_ALLOC) ? MAP_FAILED
		: mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		ret = -ENOMEM;
		goto err_uncharge;
	}

	pthread_mutex_lock(&dm_lock);
	dm = dm_spare;
	if (dm)
		dm_spare = dm->next_free;
	pthread_mutex_unlock(&dm_lock);
	if (!dm)
		dm = calloc(1, sizeof(*dm));
	if (!dm) {
		ret = -ENOMEM;
		goto err_unmap;
	}
	memset(dm, 0, sizeof(*dm));
	dm->ctx = ctx;
	dm->base = base;
	dm->length = attr->length;
	dm->map_len = map_len;
	dm->charged = charged;
	dm->fork_child = inherited;
	dm->ibdm.context = &ctx->vctx.context;
	pthread_mutex_lock(&dm_lock);
	dm->ibdm.handle = dm_next_handle++;
	if (!dm_next_handle)
		dm_next_handle = 1;
	pthread_mutex_unlock(&dm_lock);
	ret = srdma_handle_add(dm, SRDMA_OBJ_DM);
	if (ret)
		goto err_spare;
	atomic_fetch_add(&ctx->n_dm, 1);
	*out = dm;
	return 0;

err_spare:
	pthread_mutex_lock(&dm_lock);
	dm->next_free = dm_spare;
	dm_spare = dm;
	pthread_mutex_unlock(&dm_lock);
err_unmap:
	munmap(base, map_len);
err_uncharge:
	atomic_fetch_sub(&ctx->dm_used, charged);
	return ret;
}

static struct srdma_dm *dm_lookup(struct ibv_dm *ibdm)
{
	if (!srdma_handle_check(ibdm, SRDMA_OBJ_DM))
		return NULL;
	return container_of(ibdm, struct srdma_dm, ibdm);
}

int srdma_dm_free(struct ibv_dm *ibdm)
{
	struct srdma_dm *dm = dm_lookup(ibdm);

	if (!dm) {
		/* A fork child freeing its parent's DM: forget it. The
		 * child's copy of the mapping is left to exit/exec. */
		if (ibdm && srdma_handle_forget_inherited(ibdm, SRDMA_OBJ_DM))
			return 0;
		return -EINVAL;
	}
	if (atomic_load(&dm->n_mr)) {
		srdma_dbg("free_dm %u: %u MR(s) still registered",
			  ibdm->handle, atomic_load(&dm->n_mr));
		return -EBUSY;
	}
	/* A concurrent free may have won between the check and here. */
	if (!srdma_handle_del(dm, SRDMA_OBJ_DM))
		return -EINVAL;
	munmap(dm->base, dm->map_len);
	atomic_fetch_sub(&dm->ctx->dm_used, dm->charged);
	atomic_fetch_sub(&dm->ctx->n_dm, 1);
	/* ibdm keeps its context and copy functions (see the header). */
	dm->base = NULL;
	dm->length = 0;
	pthread_mutex_lock(&dm_lock);
	dm->next_free = dm_spare;
	dm_spare = dm;
	pthread_mutex_unlock(&dm_lock);
	return 0;
}

int srdma_dm_copy(struct ibv_dm *ibdm, bool to_dm, uint64_t offset,
		  void *host, size_t length)
{
	struct srdma_dm *dm = dm_lookup(ibdm);

	if (!dm)
		return -EINVAL;
	if (offset > dm->length || length > dm->length - offset)
		return -EFAULT;
	if ((offset | length) & (SRDMA_DM_COPY_ALIGN - 1))
		return -EINVAL;
	if (!length)
		return 0;
	if (!host)
		return -EFAULT;
	if (to_dm)
		memcpy(dm->base + offset, host, length);
	else
		memcpy(host, dm->base + offset, length);
	return 0;
}

int srdma_dm_reg_mr(struct ibv_pd *ibpd, struct ibv_dm *ibdm, uint64_t offset,
		    size_t length, unsigned int access, struct srdma_mr **out)
{
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);
	struct srdma_dm *dm = dm_lookup(ibdm);
	struct srdma_mr_args a;
	int ret;

	if (!pd || !dm || dm->ctx != pd->ctx)
		return -EINVAL;
	if (!(access & IBV_ACCESS_ZERO_BASED) || (access & ~DM_ACCESS_OK)) {
		srdma_dbg("reg_dm_mr: access %#x (ZERO_BASED required; "
			  "allowed %#x)", access, DM_ACCESS_OK);
		return -EINVAL;
	}
	if (offset > dm->length || length > dm->length - offset)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.addr = dm->base + offset;
	a.length = length;
	a.iova = 0;
	a.access = access;
	a.dmabuf_fd = -1;
	a.dm = dm;
	/* Counted first, so a racing free_dm sees the MR coming. */
	atomic_fetch_add(&dm->n_mr, 1);
	ret = srdma_mr_reg(ibpd, &a, out);
	if (ret)
		atomic_fetch_sub(&dm->n_mr, 1);
	return ret;
}

void srdma_dm_mr_put(struct srdma_dm *dm)
{
	atomic_fetch_sub(&dm->n_mr, 1);
}

struct dm_match {
	struct srdma_context *ctx;
	uint32_t handle;
};

static bool dm_match(const void *p, void *arg)
{
	const struct srdma_dm *dm = p;
	const struct dm_match *m = arg;

	return dm->ctx == m->ctx && dm->ibdm.handle == m->handle;
}

struct srdma_dm *srdma_dm_find(struct srdma_context *ctx, uint32_t handle)
{
	struct dm_match m = { .ctx = ctx, .handle = handle };

	return srdma_handle_find(SRDMA_OBJ_DM, dm_match, &m);
}
