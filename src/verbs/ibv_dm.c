// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_dm.c - ABI front end for device memory and object import.
 *
 * Device memory (core/dm.c): the verbs_context ops alloc_dm, free_dm and
 * reg_dm_mr behind verbs.h's inlines, and the ibv_dm copy functions the
 * inline ibv_memcpy_to/from_dm call. Positive errno returns, NULL + errno.
 *
 * Import (ibv_import_device/pd/mr/dm and the unimports): rdma-core shares
 * one kernel context between ibv_contexts through a dup of its command
 * fd. Our command fd is a dup of the context's segment, so the segment's
 * header names the context (owner pid, LID). Within the owning process an
 * import is an alias: ibv_import_device returns the context itself with
 * one more reference (ibv_close_device drops references until the last
 * one closes it), and ibv_import_pd/mr/dm return the very object whose
 * handle was given. The objects are then shared exactly as the man pages
 * describe (either side may destroy them; unimport forgets an alias and
 * touches nothing). A context of another process is imported into a
 * context of our own linked to it (core/import.c): its PDs and MRs become
 * local objects that name the owner's (docs/design/import.md).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dm.h"
#include "core/import.h"
#include "engine/engine.h"
#include "util/compiler.h"
#include "util/log.h"
#include "verbs/verbs_int.h"

/* ---- device memory ----------------------------------------------------- */

static int dm_copy_to(struct ibv_dm *dm, uint64_t dm_offset,
		      const void *host_addr, size_t length)
{
	return -srdma_dm_copy(dm, true, dm_offset, (void *)host_addr, length);
}

static int dm_copy_from(void *host_addr, struct ibv_dm *dm,
			uint64_t dm_offset, size_t length)
{
	return -srdma_dm_copy(dm, false, dm_offset, host_addr, length);
}

static struct ibv_dm *op_alloc_dm(struct ibv_context *context,
				  struct ibv_alloc_dm_attr *attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	bool inherited = false;
	struct srdma_dm *dm;
	int ret;

	if (!ctx && context &&
	    srdma_handle_check_inherited(to_sctx(context), SRDMA_OBJ_CTX)) {
		ctx = to_sctx(context);	/* a fork child's (dm.c) */
		inherited = true;
	}
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	ret = srdma_dm_alloc(ctx, inherited, attr, &dm);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	dm->ibdm.memcpy_to_dm = dm_copy_to;
	dm->ibdm.memcpy_from_dm = dm_copy_from;
	return &dm->ibdm;
}

static int op_free_dm(struct ibv_dm *dm)
{
	return -srdma_dm_free(dm);
}

static struct ibv_mr *op_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
				   uint64_t dm_offset, size_t length,
				   unsigned int access)
{
	struct srdma_mr *mr;
	int ret;

	ret = srdma_dm_reg_mr(pd, dm, dm_offset, length, access, &mr);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &mr->ibmr;
}

void srdma_verbs_set_dm_ops(struct srdma_context *ctx)
{
	struct verbs_context *v = &ctx->vctx;

	v->alloc_dm = op_alloc_dm;
	v->free_dm = op_free_dm;
	v->reg_dm_mr = op_reg_dm_mr;
}

/* ---- import ------------------------------------------------------------ */

/*
 * Extra references of contexts handed out by ibv_import_device. A short
 * list: imports are rare and few.
 */
struct import_ref {
	struct srdma_context *ctx;
	uint32_t refs;
	struct import_ref *next;
};

static pthread_mutex_t imp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct import_ref *imp_refs;	/* imp_lock */

struct ctx_match {
	uint32_t lid;
	dev_t dev;
	ino_t ino;
};

static bool ctx_match(const void *p, void *arg)
{
	const struct srdma_context *ctx = p;
	const struct ctx_match *m = arg;
	struct stat st;

	return ctx->host.lid == m->lid && !fstat(ctx->host.seg_fd, &st) &&
	       st.st_dev == m->dev && st.st_ino == m->ino;
}

SRDMA_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct srdma_seg_hdr hdr;
	struct ctx_match m;
	struct srdma_context *ctx;
	struct import_ref *r;
	struct stat st;

	if (cmd_fd < 0 || fstat(cmd_fd, &st)) {
		errno = EBADF;
		return NULL;
	}
	if (pread(cmd_fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    hdr.magic != SRDMA_SEG_MAGIC) {
		srdma_dbg("import_device: fd %d is not a context's fd",
			  cmd_fd);
		errno = EINVAL;
		return NULL;
	}
	if (hdr.owner_pid != getpid()) {
		int ret;

		srdma_engine_init();
		ret = srdma_import_ctx_open(srdma_device_get(), cmd_fd, &hdr,
					    &ctx);
		if (ret) {
			errno = -ret;
			return NULL;
		}
		srdma_verbs_set_ops(ctx);
		srdma_sysfs_refresh(true);	/* a new live LID */
		return &ctx->vctx.context;
	}
	m.lid = hdr.lid;
	m.dev = st.st_dev;
	m.ino = st.st_ino;
	ctx = srdma_handle_find(SRDMA_OBJ_CTX, ctx_match, &m);
	if (!ctx) {
		errno = EINVAL;	/* closed meanwhile */
		return NULL;
	}
	pthread_mutex_lock(&imp_lock);
	for (r = imp_refs; r && r->ctx != ctx; r = r->next)
		;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			pthread_mutex_unlock(&imp_lock);
			errno = ENOMEM;
			return NULL;
		}
		r->ctx = ctx;
		r->next = imp_refs;
		imp_refs = r;
	}
	r->refs++;
	pthread_mutex_unlock(&imp_lock);
	/* The fd is ours now (ibv_import_device(3)); the context keeps its
	 * own. */
	close(cmd_fd);
	return &ctx->vctx.context;
}

bool srdma_verbs_import_release(struct ibv_context *context)
{
	struct import_ref **pp, *r;
	bool alias = false;

	pthread_mutex_lock(&imp_lock);
	for (pp = &imp_refs; *pp; pp = &(*pp)->next) {
		r = *pp;
		if (&r->ctx->vctx.context != context)
			continue;
		alias = true;
		if (!--r->refs) {
			*pp = r->next;
			free(r);
		}
		break;
	}
	pthread_mutex_unlock(&imp_lock);
	return alias;
}

struct pd_match {
	struct srdma_context *ctx;
	uint32_t handle;
};

static bool pd_match(const void *p, void *arg)
{
	const struct srdma_pd *pd = p;
	const struct pd_match *m = arg;

	/* Each import of another process's PD is an object of its own. */
	return pd->ctx == m->ctx && pd->ibpd.handle == m->handle &&
	       !pd->imported;
}

SRDMA_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
					  uint32_t pd_handle)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct pd_match m = { .ctx = ctx, .handle = pd_handle };
	struct srdma_pd *pd;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	pd = srdma_handle_find(SRDMA_OBJ_PD, pd_match, &m);
	if (!pd && ctx->import) {
		int ret = srdma_import_pd(ctx, pd_handle, &pd);

		if (ret) {
			errno = -ret;
			return NULL;
		}
	}
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	return &pd->ibpd;
}

SRDMA_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
	struct srdma_pd *spd = srdma_pd_lookup_any(pd);
	int ret;

	/* Our own PD: an alias of the PD itself, nothing to undo. Another
	 * process's: drop this import (not while objects of ours use it),
	 * whether or not the PD was destroyed meanwhile. */
	if (!spd || !spd->imported)
		return;
	ret = srdma_import_pd_drop(spd, false);
	if (ret)
		srdma_warn("unimport_pd %u: %s", pd->handle, strerror(-ret));
}

struct mr_match {
	struct srdma_pd *pd;
	uint32_t handle;
};

static bool mr_match(const void *p, void *arg)
{
	const struct srdma_mr *mr = p;
	const struct mr_match *m = arg;

	/* Immutable fields only: the PD is checked under the lock. */
	return mr->ibmr.handle == m->handle &&
	       mr->ibmr.context == m->pd->ibpd.context;
}

SRDMA_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	struct srdma_pd *spd = srdma_pd_lookup(pd);
	struct mr_match m = { .pd = spd, .handle = mr_handle };
	struct srdma_mr *mr;

	if (!spd) {
		errno = EINVAL;
		return NULL;
	}
	if (spd->imported || (spd->prot && spd->prot->imported)) {
		struct srdma_imr *imr;
		int ret;

		ret = srdma_import_mr(spd->prot ? spd->prot : spd, mr_handle,
				      &imr);
		if (ret) {
			errno = -ret;
			return NULL;
		}
		return &imr->ibmr;
	}
	mr = srdma_handle_find(SRDMA_OBJ_MR, mr_match, &m);
	if (mr) {
		pthread_mutex_lock(&spd->ctx->lock);
		if (mr->pd != spd)
			mr = NULL;	/* another PD's MR */
		pthread_mutex_unlock(&spd->ctx->lock);
	}
	if (!mr) {
		errno = EINVAL;
		return NULL;
	}
	return &mr->ibmr;
}

SRDMA_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
	/* Another process's MR: forget our description of it, touch
	 * nothing of the owner's. Our own: an alias, nothing to undo. */
	srdma_import_mr_drop(mr, false);
}

SRDMA_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context,
					  uint32_t dm_handle)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct srdma_dm *dm;

	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	if (ctx->import && !(dm_handle & SRDMA_DM_LOCAL_HANDLE)) {
		/* Another process's DM: a mapping of its memory. */
		int ret = srdma_dm_import(ctx, dm_handle, &dm);

		if (ret) {
			errno = -ret;
			return NULL;
		}
		dm->ibdm.memcpy_to_dm = dm_copy_to;
		dm->ibdm.memcpy_from_dm = dm_copy_from;
		return &dm->ibdm;
	}
	dm = srdma_dm_find(ctx, dm_handle);
	if (!dm) {
		errno = EINVAL;
		return NULL;
	}
	return &dm->ibdm;
}

SRDMA_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
	/* Another process's DM: forget our mapping, touch nothing of the
	 * owner's. Our own: an alias of the DM itself, nothing to undo. */
	int ret = srdma_dm_unimport(dm);

	if (ret == -EBUSY)
		srdma_warn("unimport_dm %u: MRs of ours still use it; kept",
			   dm->handle);
}
