// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mr.c - memory registration: ibv_reg_mr and friends, dereg, rereg,
 * advise (docs: verbs-semantics §2, §3, §6).
 *
 * Registration is check-then-apply. mr_check() is pure and evaluates the
 * rules in the order of §2.3, so the first failing rule decides errno,
 * exactly as rdma-core + the kernel would; only then is anything allocated
 * or published. A registered MR is a key-table entry in the context's
 * shared segment (so any initiator on the host can validate our keys)
 * plus the public struct ibv_mr. Nothing is pinned: a software device
 * reads the live address space, so "pinning" reduces to checking that the
 * range is mapped (and writable for writable access), which memcheck.c
 * does in O(VMAs) (on kernels before 6.11, small ranges are faulted in as
 * pinning would; never ODP ones, which are not checked).
 *
 * Dereg follows the ordering of §6 / architecture principle 4: unpublish
 * the handle, mark the key invalid (new accesses fail), drain in-flight
 * accesses (including other processes', with dead holders cleared), then
 * free the slot. After it returns, the memory is never touched again.
 *
 * Concurrency: every change to an MR happens under its context's lock; the
 * lock is dropped only while draining, after the key is already invalid.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dm.h"
#include "util/fault.h"
#include "util/log.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/* Bits 8 and 9 (FLUSH_GLOBAL / FLUSH_PERSISTENT) postdate rdma-core 44. */
#define ACC_FLUSH_GLOBAL (1u << 8)
#define ACC_FLUSH_PERSISTENT (1u << 9)
#define ACC_OPTIONAL_RANGE 0x3ff00000u	/* bits 20..29 */
#define ACC_DEFINED                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |   \
	 IBV_ACCESS_HUGETLB | ACC_FLUSH_GLOBAL | ACC_FLUSH_PERSISTENT |        \
	 ACC_OPTIONAL_RANGE)
#define ACC_DMABUF_OK                                                          \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_RELAXED_ORDERING)
#define ACC_WRITABLE                                                           \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
/* What a key-table entry records (the optional hints are dropped). */
#define ACC_RECORDED (ACC_DEFINED & ~ACC_OPTIONAL_RANGE)

/* The translation a registration resolves to. */
struct mr_plan {
	uint64_t iova;		/* start of the address window */
	uint64_t length;	/* effective length */
	uint64_t host_addr;	/* our address of iova */
	uint32_t flags;		/* SRDMA_MRF_* */
};

static bool page_off_ok(uint64_t a, uint64_t b)
{
	return (a & (srdma_page_size - 1)) == (b & (srdma_page_size - 1));
}

/* Rules 3 and 4 of §2.3 for ibv_reg_mr-style access. Pure. */
static int check_access(const struct srdma_context *ctx, unsigned int acc)
{
	if (acc & ~ACC_DEFINED) {
		srdma_dbg("access %#x: bits %#x are not access flags", acc,
			  acc & ~ACC_DEFINED);
		return -EINVAL;
	}
	if ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(acc & IBV_ACCESS_LOCAL_WRITE)) {
		srdma_dbg("access %#x: REMOTE_WRITE or REMOTE_ATOMIC needs "
			  "LOCAL_WRITE", acc);
		return -EINVAL;
	}
	if ((acc & IBV_ACCESS_ON_DEMAND) && !ctx->odp_enabled) {
		srdma_dbg("access %#x: ON_DEMAND, but ODP is off "
			  "(SRDMA_ODP=0)", acc);
		return -EOPNOTSUPP;
	}
	if (acc & (ACC_FLUSH_GLOBAL | ACC_FLUSH_PERSISTENT)) {
		srdma_dbg("access %#x: FLUSH_GLOBAL/FLUSH_PERSISTENT are not "
			  "offered", acc);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* Rule 6: length and overflow of [start, start + len) and its page end. */
static int check_range(uint64_t start, uint64_t len)
{
	uint64_t end;

	if (!len) {
		srdma_dbg("length 0");
		return -EINVAL;
	}
	if (__builtin_add_overflow(start, len, &end) ||
	    end > UINT64_MAX - (srdma_page_size - 1)) {
		srdma_dbg("[%#" PRIx64 ", +%" PRIu64 ") wraps the address space",
			  start, len);
		return -EINVAL;
	}
	return 0;
}

/*
 * mr_check() - every registration rule of §2.3 (and §2.8 for dma-buf, §7
 * for relaxed), in order; fills @plan. Pure: reads the address space map
 * but changes nothing.
 */
static int mr_check(struct srdma_context *ctx, const struct srdma_mr_args *a,
		    struct mr_plan *plan)
{
	unsigned int acc = a->access;
	uint64_t addr = (uintptr_t)a->addr;
	bool zb = acc & IBV_ACCESS_ZERO_BASED;
	bool odp = acc & IBV_ACCESS_ON_DEMAND;
	uint64_t end;
	int ret;

	memset(plan, 0, sizeof(*plan));
	if (a->dmabuf) {
		/* 2: offset and iova share the page offset. */
		if (!page_off_ok(a->dmabuf_offset, a->iova)) {
			srdma_dbg("dma-buf offset %#" PRIx64 " and iova %#"
				  PRIx64 " differ in their page offset",
				  a->dmabuf_offset, a->iova);
			return -EINVAL;
		}
		/* 3: dma-buf whitelist, then the LOCAL_WRITE rule. */
		if (acc & ~ACC_DMABUF_OK) {
			srdma_dbg("access %#x: bits %#x are not allowed on a "
				  "dma-buf MR", acc, acc & ~ACC_DMABUF_OK);
			return -EINVAL;
		}
		if ((acc & (IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_ATOMIC)) &&
		    !(acc & IBV_ACCESS_LOCAL_WRITE)) {
			srdma_dbg("access %#x: REMOTE_WRITE or REMOTE_ATOMIC "
				  "needs LOCAL_WRITE", acc);
			return -EINVAL;
		}
		ret = check_range(a->dmabuf_offset, a->length);
		if (ret)
			return ret;
		if (check_range(a->iova, a->length))
			return -EINVAL;	/* logged */
		plan->iova = a->iova;
		plan->length = a->length;
		plan->flags = SRDMA_MRF_DMABUF;
		if (acc & ACC_WRITABLE)
			plan->flags |= SRDMA_MRF_WRITABLE;
		return 0;
	}

	if (a->dm) {
		/* ibv_reg_dm_mr: the caller checked the DM window and the
		 * access whitelist (ZERO_BASED among them); the memory is
		 * ours and mapped. Only the LOCAL_WRITE rule is left. */
		ret = check_access(ctx, acc);
		if (ret)
			return ret;
		plan->iova = 0;
		plan->length = a->length;
		plan->host_addr = addr;
		plan->flags = SRDMA_MRF_ZERO_BASED;
		if (acc & ACC_WRITABLE)
			plan->flags |= SRDMA_MRF_WRITABLE;
		return 0;
	}

	/* 2: page-offset rule, lifted by ZERO_BASED. */
	if (!zb && a->iova != addr && !page_off_ok(addr, a->iova)) {
		srdma_dbg("addr %#" PRIx64 " and iova %#" PRIx64 " differ in "
			  "their page offset", addr, a->iova);
		return -EINVAL;
	}
	/* 3 and 4 */
	ret = check_access(ctx, acc);
	if (ret)
		return ret;
	if (a->relaxed && (acc & (IBV_ACCESS_ON_DEMAND |
				  IBV_ACCESS_ZERO_BASED))) {
		/* FMRs are physically mapped (§7) */
		srdma_dbg("access %#x: a relaxed MR cannot be ON_DEMAND or "
			  "ZERO_BASED", acc);
		return -EINVAL;
	}
	/* 5: implicit ODP shape. */
	if (odp && a->length == SIZE_MAX) {
		if (addr || a->iova ||
		    (acc & (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB))) {
			srdma_dbg("implicit ODP takes addr 0, iova 0, no "
				  "ZERO_BASED or HUGETLB (addr %#" PRIx64
				  ", iova %#" PRIx64 ", access %#x)", addr,
				  a->iova, acc);
			return -EINVAL;
		}
		plan->iova = 0;
		plan->length = UINT64_MAX;
		plan->host_addr = 0;
		plan->flags = SRDMA_MRF_ODP | SRDMA_MRF_IMPLICIT |
			      SRDMA_MRF_WRITABLE;
		return 0;
	}
	/* 6: length and overflow, of the memory and of the iova window. */
	ret = check_range(addr, a->length);
	if (ret)
		return ret;
	if (!zb && check_range(a->iova, a->length))
		return -EINVAL;	/* logged */
	/* 8: mapped, and writable for writable access (not for ODP). */
	if (!odp && ctx->mem_check) {
		ret = srdma_mem_check_pin(addr, a->length,
					  acc & ACC_WRITABLE);
		if (ret) {
			srdma_dbg("[%#" PRIx64 ", +%" PRIu64 ") is not %s",
				  addr, a->length,
				  ret != -EFAULT ? "checkable"
				  : (acc & ACC_WRITABLE) ? "mapped writable"
							 : "mapped");
			return ret;
		}
	}
	plan->iova = zb ? 0 : a->iova;
	plan->length = a->length;
	plan->host_addr = addr;
	if (a->relaxed) {
		/* Access extends to the end of the last page (§7). */
		end = (addr + a->length + srdma_page_size - 1) &
		      ~(uint64_t)(srdma_page_size - 1);
		plan->length = end - addr;
		plan->flags |= SRDMA_MRF_RELAXED;
	}
	if (odp)
		plan->flags |= SRDMA_MRF_ODP;
	if (zb)
		plan->flags |= SRDMA_MRF_ZERO_BASED;
	if (acc & IBV_ACCESS_HUGETLB)
		plan->flags |= SRDMA_MRF_HUGETLB;
	if (odp || (acc & ACC_WRITABLE))
		plan->flags |= SRDMA_MRF_WRITABLE;
	return 0;
}

/* Write the MR's current attributes into its key entry. Requires
 * ctx->lock. */
static void mr_publish_entry(struct srdma_mr *mr, uint8_t state)
{
	struct srdma_context *ctx = mr->pd->ctx;
	struct srdma_shm_key *e = &ctx->kt.ent[mr->slot];

	srdma_key_write_begin(e);
	SRDMA_KEY_PUT(e, kind, SRDMA_KIND_MR);
	SRDMA_KEY_PUT(e, state, state);
	SRDMA_KEY_PUT(e, flags, (uint16_t)(mr->flags & SRDMA_MRF_KEY_MASK));
	SRDMA_KEY_PUT(e, access, mr->access & ACC_RECORDED);
	SRDMA_KEY_PUT(e, pd_handle, mr->pd->ibpd.handle);
	SRDMA_KEY_PUT(e, bind_qpn, 0);
	SRDMA_KEY_PUT(e, iova, mr->iova);
	SRDMA_KEY_PUT(e, length, mr->length);
	SRDMA_KEY_PUT(e, host_addr, mr->host_addr);
	SRDMA_KEY_PUT(e, mr_slot, mr->slot);
	SRDMA_KEY_PUT(e, req_length, mr->ibmr.length);
	atomic_store_explicit(&e->key, mr->ibmr.lkey, memory_order_relaxed);
	srdma_key_write_end(e);
}

/* Is @fd a dma-buf (or, as a test aid, a memfd)? 0, -EBADF or -EINVAL. */
static int dmabuf_identify(struct srdma_context *ctx, int fd)
{
	char path[64], target[256];
	ssize_t n;

	if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
		srdma_dbg("dma-buf fd %d is not an open descriptor", fd);
		return -EBADF;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0) {
		srdma_dbg("dma-buf fd %d: cannot read its link: %m", fd);
		return -EBADF;
	}
	target[n] = 0;
	if (!strncmp(target, "/dmabuf:", 8) ||
	    !strncmp(target, "anon_inode:dmabuf", 17))
		return 0;
	if (ctx->dmabuf_memfd && !strncmp(target, "/memfd:", 7))
		return 0;
	srdma_dbg("fd %d (%s) is not a dma-buf", fd, target);
	return -EINVAL;
}

static int dmabuf_map(struct srdma_context *ctx, struct srdma_mr *mr,
		      const struct srdma_mr_args *a)
{
	uint64_t off_in_page = a->dmabuf_offset & (srdma_page_size - 1);
	off_t size;
	size_t len;
	void *map;
	int prot = PROT_READ, ret;

	ret = dmabuf_identify(ctx, a->dmabuf_fd);
	if (ret)
		return ret;
	size = lseek(a->dmabuf_fd, 0, SEEK_END);
	if (size < 0 || a->length > (uint64_t)size ||
	    a->dmabuf_offset > (uint64_t)size - a->length) {
		srdma_dbg("dma-buf fd %d: [%#" PRIx64 ", +%" PRIu64 ") is "
			  "not within its %lld bytes", a->dmabuf_fd,
			  a->dmabuf_offset, a->length, (long long)size);
		return -EINVAL;
	}
	len = (size_t)((off_in_page + a->length + srdma_page_size - 1) &
		       ~(uint64_t)(srdma_page_size - 1));
	if (a->access & ACC_WRITABLE)
		prot |= PROT_WRITE;
	map = mmap(NULL, len, prot, MAP_SHARED, a->dmabuf_fd,
		   (off_t)(a->dmabuf_offset - off_in_page));
	if (map == MAP_FAILED) {
		srdma_dbg("dma-buf fd %d cannot be mapped by the CPU: %s",
			  a->dmabuf_fd, strerror(errno));
		return -EOPNOTSUPP;
	}
	mr->dmabuf_fd = fcntl(a->dmabuf_fd, F_DUPFD_CLOEXEC, 0);
	mr->dmabuf_map = map;
	mr->dmabuf_map_len = len;
	mr->host_addr = (uint64_t)(uintptr_t)map + off_in_page;
	return 0;
}

static void dmabuf_unmap(struct srdma_mr *mr)
{
	if (mr->dmabuf_map)
		munmap(mr->dmabuf_map, mr->dmabuf_map_len);
	if (mr->dmabuf_fd >= 0)
		close(mr->dmabuf_fd);
	mr->dmabuf_map = NULL;
	mr->dmabuf_fd = -1;
}

int srdma_mr_reg(struct ibv_pd *ibpd, const struct srdma_mr_args *a,
		 struct srdma_mr **out)
{
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);	/* rule 1 */
	struct srdma_context *ctx;
	struct srdma_mr *mr;
	struct mr_plan plan;
	uint32_t slot, key;
	int ret;

	if (!pd)
		return -EINVAL;
	ctx = pd->ctx;
	ret = mr_check(ctx, a, &plan);
	if (ret)
		return ret;

	if (SRDMA_FAULT(MR_ALLOC))
		return -ENOMEM;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->dmabuf_fd = -1;
	mr->pd = pd;
	mr->flags = plan.flags;
	mr->access = a->access;
	mr->iova = plan.iova;
	mr->length = plan.length;
	mr->host_addr = plan.host_addr;
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = a->dm ? NULL : a->addr;	/* DM: zero-based */
	mr->ibmr.length = a->length;
	mr->dm = a->dm;
	if (plan.flags & SRDMA_MRF_DMABUF) {
		mr->ibmr.addr = (void *)(uintptr_t)a->dmabuf_offset;
		ret = dmabuf_map(ctx, mr, a);
		if (ret)
			goto err_free;
	}

	pthread_mutex_lock(&ctx->lock);
	if (a->relaxed) {
		if (ctx->n_relaxed >= SRDMA_MAX_FMR && ctx->n_rpending &&
		    !ctx->relaxed_flushing)
			srdma_relaxed_flush_locked(ctx, NULL, false);
		if (ctx->n_relaxed >= SRDMA_MAX_FMR) {
			ret = -EAGAIN;	/* transient: retry after dereg */
			goto err_unlock;
		}
	} else if (ctx->n_mr >= SRDMA_MAX_MR) {
		ret = -ENOMEM;	/* rule 9 */
		goto err_unlock;
	}
	ret = srdma_kt_alloc(&ctx->kt, &slot, &key);
	if (ret)
		goto err_unlock;
	mr->slot = slot;
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	mr->ibmr.handle = slot;
	ret = srdma_handle_add(mr, SRDMA_OBJ_MR);
	if (ret)
		goto err_free_slot;
	mr_publish_entry(mr, SRDMA_KEY_VALID);
	srdma_pd_hold(pd);
	if (a->relaxed)
		ctx->n_relaxed++;
	else
		ctx->n_mr++;
	atomic_fetch_add_explicit(&ctx->host.seg->n_reg, 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&ctx->host.seg->n_live_mr, 1,
				  memory_order_relaxed);
	pthread_mutex_unlock(&ctx->lock);
	*out = mr;
	return 0;

err_free_slot:
	srdma_kt_free(&ctx->kt, slot);
err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	dmabuf_unmap(mr);
err_free:
	free(mr);
	return ret;
}

void srdma_mr_invalidate_locked(struct srdma_context *ctx,
				struct srdma_mr **mrs, unsigned int n)
{
	unsigned int i;

	/* (1) New lookups fail from here on. */
	for (i = 0; i < n; i++)
		srdma_key_set_state(&ctx->kt.ent[mrs[i]->slot],
				    SRDMA_KEY_INVALID);
	/* (2) Wait for accesses already in flight, without the lock. */
	pthread_mutex_unlock(&ctx->lock);
	/* Fault builds: a test holds the unlocked window open here (the
	 * relaxed timer must not starve a flush that wants the lock back). */
	SRDMA_FAULT_HOOK(MR_DRAIN);
	for (i = 0; i < n; i++)
		srdma_key_drain(&ctx->kt, mrs[i]->slot, &ctx->host);
	pthread_mutex_lock(&ctx->lock);
	/* (3) Release everything; the slot is reused later with a new tag. */
	for (i = 0; i < n; i++) {
		struct srdma_mr *mr = mrs[i];

		srdma_kt_release(&ctx->kt, mr->slot);
		if (mr->flags & SRDMA_MRF_RELAXED)
			ctx->n_relaxed--;
		else
			ctx->n_mr--;
		srdma_pd_unhold(mr->pd);
		atomic_fetch_add_explicit(&ctx->host.seg->n_dereg, 1,
					  memory_order_relaxed);
		atomic_fetch_sub_explicit(&ctx->host.seg->n_live_mr, 1,
					  memory_order_relaxed);
		dmabuf_unmap(mr);
		if (mr->dm)
			srdma_dm_mr_put(mr->dm);
		free(mr);
	}
}

int srdma_mr_dereg(struct ibv_mr *ibmr)
{
	struct srdma_context *ctx;
	struct srdma_mr *mr;

	if (!srdma_handle_check(ibmr, SRDMA_OBJ_MR))
		return -EINVAL;
	mr = container_of(ibmr, struct srdma_mr, ibmr);
	ctx = to_sctx(ibmr->context);	/* immutable; mr->pd is not */
	pthread_mutex_lock(&ctx->lock);
	/* Re-check under the lock: a concurrent dereg may have won. */
	if (!srdma_handle_check(ibmr, SRDMA_OBJ_MR)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	if (srdma_mr_sync_bound_locked(ctx, mr)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("mr key %#x: %u window(s) still bound", ibmr->lkey,
			  atomic_load(&mr->bound_mws));
		return -EBUSY;
	}
	srdma_handle_del(mr, SRDMA_OBJ_MR);
	srdma_relaxed_unlink_locked(ctx, mr);
	srdma_mr_invalidate_locked(ctx, &mr, 1);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/* ---- rereg ------------------------------------------------------------- */

int srdma_mr_rereg(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd,
		   void *addr, size_t length, int access, int *stage)
{
	const int all = IBV_REREG_MR_CHANGE_TRANSLATION |
			IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
	unsigned int acc = (unsigned int)access;
	struct srdma_pd *npd = NULL;
	struct srdma_context *ctx;
	struct srdma_mr *mr;
	struct mr_plan plan;
	unsigned int new_acc;
	int ret;

	/* Library-level checks: the MR stays valid, ERR_INPUT. */
	*stage = IBV_REREG_MR_ERR_INPUT;
	if (!srdma_handle_check(ibmr, SRDMA_OBJ_MR))
		return -EINVAL;
	mr = container_of(ibmr, struct srdma_mr, ibmr);
	if (!flags || (flags & ~all)) {
		srdma_dbg("rereg_mr: flags %#x (none, or unknown bits)", flags);
		return -EINVAL;
	}
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) {
		srdma_dbg("rereg_mr: CHANGE_TRANSLATION with a NULL address or "
			  "length 0");
		return -EINVAL;
	}
	if (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS)) {
		srdma_dbg("rereg_mr: access %#x given without CHANGE_ACCESS",
			  access);
		return -EINVAL;
	}

	*stage = IBV_REREG_MR_ERR_CMD;
	ctx = to_sctx(ibmr->context);
	pthread_mutex_lock(&ctx->lock);
	if (!srdma_handle_check(ibmr, SRDMA_OBJ_MR)) {
		*stage = IBV_REREG_MR_ERR_INPUT;
		ret = -EINVAL;
		goto out;
	}
	/* Only plain address MRs can be re-registered. */
	if ((mr->flags & (SRDMA_MRF_DMABUF | SRDMA_MRF_RELAXED)) || mr->dm) {
		*stage = IBV_REREG_MR_ERR_INPUT;
		ret = -EINVAL;
		goto out;
	}
	if (srdma_mr_sync_bound_locked(ctx, mr)) {
		ret = -EBUSY;
		goto out;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		npd = srdma_pd_lookup(ibpd);
		if (!npd || npd->ctx != ctx) {
			ret = -EINVAL;
			goto out;
		}
	}
	new_acc = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? acc : mr->access;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		ret = check_access(ctx, acc);
		if (ret)
			goto out;
		if ((acc ^ mr->access) &
		    (IBV_ACCESS_ON_DEMAND | IBV_ACCESS_ZERO_BASED)) {
			ret = -EINVAL;	/* cannot toggle ODP / zero-based */
			goto out;
		}
		/* Memory validated read-only cannot become writable
		 * without a new translation (ib_umem_check_rereg). */
		if ((acc & ACC_WRITABLE) &&
		    !(mr->flags & SRDMA_MRF_WRITABLE) &&
		    !(flags & IBV_REREG_MR_CHANGE_TRANSLATION)) {
			ret = -EACCES;
			goto out;
		}
	}
	plan.iova = mr->iova;
	plan.length = mr->length;
	plan.host_addr = mr->host_addr;
	plan.flags = mr->flags;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		struct srdma_mr_args a = {
			.addr = addr,
			.length = length,
			.iova = (uintptr_t)addr,
			.access = new_acc,
			.dmabuf_fd = -1,
		};

		if (mr->flags & SRDMA_MRF_IMPLICIT) {
			ret = -EOPNOTSUPP;
			goto out;
		}
		ret = mr_check(ctx, &a, &plan);
		if (ret)
			goto out;
	} else if ((flags & IBV_REREG_MR_CHANGE_ACCESS) &&
		   (new_acc & ACC_WRITABLE)) {
		plan.flags |= SRDMA_MRF_WRITABLE;
	}

	/* Apply: cannot fail. One seqlock section, so an access sees the
	 * old attributes or the new ones, never a mix. */
	if (npd && npd != mr->pd) {
		srdma_pd_hold(npd);
		srdma_pd_unhold(mr->pd);
		mr->pd = npd;
		mr->ibmr.pd = &npd->ibpd;
	}
	mr->access = new_acc;
	mr->iova = plan.iova;
	mr->length = plan.length;
	mr->host_addr = plan.host_addr;
	mr->flags = plan.flags;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->ibmr.addr = addr;
		mr->ibmr.length = length;
	}
	mr_publish_entry(mr, SRDMA_KEY_VALID);
	ret = 0;
out:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* ---- advise ------------------------------------------------------------ */

int srdma_mr_advise(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);
	struct srdma_key_view v;
	uint32_t i;

	if (!pd) {
		srdma_dbg("advise_mr: %p is not a PD", (void *)ibpd);
		return -EINVAL;
	}
	if (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) {
		srdma_dbg("advise_mr: unknown flags %#x", flags);
		return -EINVAL;
	}
	if (!num_sge || !sg_list) {
		srdma_dbg("advise_mr: no SGE");
		return -EINVAL;
	}
	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) {
		srdma_dbg("advise_mr: advice %d is not a prefetch", advice);
		return -EOPNOTSUPP;
	}
	srdma_kt_view(&pd->ctx->kt, &v);
	/* Check every SGE before acting on any. */
	for (i = 0; i < num_sge; i++) {
		struct srdma_key_snap s;
		uint32_t slot;
		int r;

		r = srdma_key_check(&v, sg_list[i].lkey,
				    BIT(SRDMA_KIND_MR) | BIT(SRDMA_KIND_MW1) |
					    BIT(SRDMA_KIND_MW2),
				    ibpd->handle, 0, sg_list[i].addr,
				    sg_list[i].length, &s, &slot);
		if (r == SRDMA_KCHK_NOKEY) {
			srdma_dbg("advise_mr: SGE %u: no lkey %#x", i,
				  sg_list[i].lkey);
			return -EFAULT;
		}
		/* A window key is a caller error whatever its state. */
		if (s.kind != SRDMA_KIND_MR) {
			srdma_dbg("advise_mr: SGE %u: %#x is a window key", i,
				  sg_list[i].lkey);
			return -EINVAL;
		}
		if (r == SRDMA_KCHK_PD || r == SRDMA_KCHK_STATE ||
		    r == SRDMA_KCHK_BOUNDS) {
			srdma_dbg("advise_mr: SGE %u: lkey %#x %s", i,
				  sg_list[i].lkey,
				  r == SRDMA_KCHK_PD ? "is of another PD"
				  : r == SRDMA_KCHK_STATE ? "is not valid"
				  : "does not cover the range");
			return -EFAULT;
		}
		if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
		    !(s.access & IBV_ACCESS_LOCAL_WRITE)) {
			srdma_dbg("advise_mr: SGE %u: PREFETCH_WRITE on an MR "
				  "without LOCAL_WRITE", i);
			return -EPERM;
		}
		if (!(s.flags & SRDMA_KEYF_ODP)) {
			srdma_dbg("advise_mr: SGE %u: lkey %#x is not an ODP "
				  "MR", i, sg_list[i].lkey);
			return -ENOENT;
		}
	}
	for (i = 0; i < num_sge; i++) {
		struct srdma_key_snap s;
		uint32_t slot;
		uint64_t host, start, end;
		int adv;

		if (!sg_list[i].length ||
		    srdma_key_check(&v, sg_list[i].lkey, BIT(SRDMA_KIND_MR),
				    ibpd->handle, 0, sg_list[i].addr,
				    sg_list[i].length, &s, &slot))
			continue;
		host = s.host_addr + (sg_list[i].addr - s.iova);
		start = host & ~(uint64_t)(srdma_page_size - 1);
		end = host + sg_list[i].length;
		adv = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE
			      ? MADV_POPULATE_WRITE
		      : advice == IBV_ADVISE_MR_ADVICE_PREFETCH
			      ? MADV_POPULATE_READ
			      : MADV_WILLNEED;
		/* Advisory: a page that cannot be faulted in now will fail
		 * the access that needs it, exactly as on an ODP HCA. */
		madvise((void *)(uintptr_t)start, (size_t)(end - start), adv);
	}
	return 0;
}
