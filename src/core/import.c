// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * import.c - importing another process's context, PDs and MRs.
 *
 * rdma-core shares one kernel context between processes through its
 * command fd (ibv_import_device(3)). Our cmd_fd is an fd of the context's
 * shared segment, so a process that receives it (SCM_RIGHTS, pidfd_getfd)
 * can read the owner's identity from the segment header. What the
 * importer can share is exactly what the segment publishes: the owner's
 * key table (MRs), its PD numbers (the resource table) and, by
 * cross-memory attach, the bytes behind its keys. The importer's own
 * objects (QPs, CQs, its MRs) live in a context of its own, the imported
 * context, whose PDs carry the owner's PD numbers; the requester turns to
 * the owner's key table for an lkey its own table does not know
 * (srdma_import_acquire), bouncing the bytes through a buffer of ours.
 *
 * Nothing here writes the owner's state except an importer's
 * ibv_dereg_mr, which invalidates the key (the seqlock writers of the key
 * table exclude each other, as SEND_WITH_INV's do), and the PD's shared
 * use word in the owner's resource table: every object of any process on
 * the PD counts there (core/pd.c, srdma_pd_hold), and an importer's
 * ibv_dealloc_pd destroys the PD for everybody by a compare-and-swap of
 * that word from 0 to DEAD. Device memory is shared as a file both map
 * (core/dm.c). The owner's library
 * never learns of its importers: it may destroy what they imported at any
 * time, after which their imports name dead objects and every access
 * through them fails the key check. The owner's death is the peer
 * machinery's business (srdma_peer_gone: registry, pidfd); accesses ask it
 * before addressing the owner's pid.
 *
 * The net requester, which gathers and scatters per packet, copies each
 * imported SGE piece straight between its packet buffer and the owner
 * (srdma_import_copy: the same key check and mark, one call per piece).
 * Design and limits: docs/design/import.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/import.h"
#include "util/log.h"

#define KIND_MR BIT(SRDMA_KIND_MR)

/* Local PD numbers of an imported context start here, far above the
 * owner's (which count up from 1), so that a local PD never passes the
 * PD check of an imported MR, nor an imported PD that of a local one. */
#define IMPORT_LOCAL_PD_BASE 0x80000000u

/* ---- context ------------------------------------------------------------ */

int srdma_import_ctx_open(struct srdma_device *dev, int cmd_fd,
			  const struct srdma_seg_hdr *hdr,
			  struct srdma_context **out)
{
	struct srdma_context *ctx;
	struct srdma_import *imp;
	struct srdma_peer *p;
	int ret;

	if (hdr->lid == 0 || hdr->lid > SRDMA_REG_ENTRIES)
		return -EINVAL;
	imp = calloc(1, sizeof(*imp));
	if (!imp)
		return -ENOMEM;
	ret = srdma_context_open(dev, &ctx);
	if (ret)
		goto err_free;
	p = srdma_peer_get(ctx, hdr->lid);
	/* The fd's owner, not whoever holds its LID now: the start time
	 * rules out a recycled pid, the key secret (128 random bits drawn at
	 * open) another context, e.g. of another SRDMA_DIR. */
	if (!p || p->self || p->pid != hdr->owner_pid ||
	    p->start != hdr->owner_start ||
	    p->seg->key_secret[0] != hdr->key_secret[0] ||
	    p->seg->key_secret[1] != hdr->key_secret[1] ||
	    srdma_peer_gone(ctx, p)) {
		srdma_dbg("import_device: context lid %u of pid %d is not live in this host's registry",
			  hdr->lid, hdr->owner_pid);
		ret = -EINVAL;
		goto err_put;
	}
	imp->peer = p;
	imp->pid = p->pid;
	imp->start = p->start;
	imp->lid = p->lid;
	pthread_mutex_lock(&ctx->lock);
	ctx->next_pd_handle = IMPORT_LOCAL_PD_BASE;
	pthread_mutex_unlock(&ctx->lock);
	ctx->import = imp;
	/* For responders: keys of this context's QPs may be the source's
	 * (no QP exists yet, so nobody reads these before they are set). */
	ctx->host.seg->import_pid = imp->pid;
	ctx->host.seg->import_lid = imp->lid;
	/* The fd is ours now (ibv_import_device(3)): it becomes the new
	 * context's cmd_fd, so it can be passed on and imported again. */
	close(ctx->vctx.context.cmd_fd);
	ctx->vctx.context.cmd_fd = cmd_fd;
	srdma_info("context lid %u imports context lid %u of pid %d",
		   ctx->host.lid, imp->lid, imp->pid);
	*out = ctx;
	return 0;

err_put:
	srdma_peer_put(ctx, p);
	srdma_context_close(ctx);
err_free:
	free(imp);
	return ret;
}

void srdma_import_ctx_fini(struct srdma_context *ctx)
{
	struct srdma_import *imp = ctx->import;

	if (!imp)
		return;
	ctx->import = NULL;
	srdma_peer_put(ctx, imp->peer);
	free(imp);
}

/*
 * The source of @ctx, or NULL (not imported, or its owner is gone). The
 * data path asks srdma_peer_gone() at its rate (the kernel at most once a
 * millisecond); the control path (@strict) always asks the kernel, so
 * that an import right after the owner's death is refused.
 */
static struct srdma_peer *source(struct srdma_context *ctx, bool strict)
{
	struct srdma_import *imp = ctx->import;

	if (!imp)
		return NULL;
	if (strict)	/* relaxed: only srdma_peer_gone()'s rate */
		atomic_store_explicit(&imp->peer->next_check_ns, 0,
				      memory_order_relaxed);
	if (srdma_peer_gone(ctx, imp->peer)) {
		srdma_dbg("context lid %u: the context it imports (lid %u, pid %d) is gone",
			  ctx->host.lid, imp->lid, imp->pid);
		return NULL;
	}
	return imp->peer;
}

bool srdma_import_live(struct srdma_context *ctx, bool strict)
{
	return source(ctx, strict) != NULL;
}

bool srdma_import_has_importers(struct srdma_context *ctx)
{
	struct srdma_registry *r = &ctx->host.reg;
	struct srdma_seg_hdr hdr;
	unsigned int i;
	bool hit;
	int fd;

	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r->ent[i];

		if ((int)i == ctx->host.reg_index ||
		    atomic_load_explicit(&e->state, memory_order_acquire) !=
			    SRDMA_REG_LIVE ||
		    !srdma_reg_entry_name_ok(e, i) ||
		    !srdma_proc_alive(e->pid, e->start_time))
			continue;
		/* Its header names the context it imports; read, not
		 * mapped: nothing of it is kept. */
		fd = openat(ctx->host.dirfd, e->seg_name,
			    O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		hit = pread(fd, &hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
		      hdr.magic == SRDMA_SEG_MAGIC &&
		      hdr.import_lid == ctx->host.lid &&
		      hdr.import_pid == ctx->host.pid;
		close(fd);
		if (hit)
			return true;
	}
	return false;
}

/* ---- PD ------------------------------------------------------------------ */

/* PD @handle's slot in the owner's resource table, if it is listed and
 * not destroyed; else NULL. */
static struct srdma_shm_rt_pd *source_pd(struct srdma_peer *p,
					 uint32_t handle)
{
	struct srdma_shm_rt *rt = srdma_seg_rt(p->seg);
	uint32_t i;

	for (i = 0; i < SRDMA_RT_PD_SLOTS; i++)
		if (atomic_load_explicit(&rt->pd[i].handle,
					 memory_order_acquire) == handle)
			return atomic_load(&rt->pd[i].use) & SRDMA_RT_PD_DEAD ?
				       NULL :
				       &rt->pd[i];
	return NULL;
}

int srdma_import_pd(struct srdma_context *ctx, uint32_t handle,
		    struct srdma_pd **out)
{
	struct srdma_peer *p = source(ctx, true);
	struct srdma_shm_rt_pd *slot = NULL;
	struct srdma_pd *pd;
	int ret;

	if (!p)
		return -EINVAL;
	if (handle && handle < IMPORT_LOCAL_PD_BASE)
		slot = source_pd(p, handle);
	if (!slot) {
		srdma_dbg("import_pd: pid %d has no live PD %u", p->pid,
			  handle);
		return -EINVAL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->ctx = ctx;
	pd->rt_use = &slot->use;	/* the source's: mapped while we are */
	pd->ibpd.context = &ctx->vctx.context;
	pd->ibpd.handle = handle;
	pd->imported = true;
	pthread_mutex_lock(&ctx->lock);
	ret = srdma_handle_add(pd, SRDMA_OBJ_PD);
	if (ret) {
		pthread_mutex_unlock(&ctx->lock);
		free(pd);
		return ret;
	}
	ctx->n_pd++;
	pthread_mutex_unlock(&ctx->lock);
	*out = pd;
	return 0;
}

/*
 * Destroy the source's PD of our import @pd for everybody: its use word
 * from 0 (no object of any process on it) to DEAD. Its slot must still
 * hold our handle: the owner may have deallocated the PD (slot cleared)
 * and even listed another PD in the slot since; a destroy that lands on
 * another PD's word is undone at once. Return: 0 (destroyed now, or gone
 * already), -EBUSY (objects use it).
 */
static int source_pd_destroy(struct srdma_pd *pd)
{
	struct srdma_shm_rt_pd *slot =
		container_of(pd->rt_use, struct srdma_shm_rt_pd, use);
	uint32_t handle = pd->ibpd.handle, zero_dead = SRDMA_RT_PD_DEAD;
	struct srdma_peer *p = source(pd->ctx, true);

	if (!p || atomic_load(&slot->handle) != handle)
		return 0;		/* nothing left to destroy */
	if (atomic_load(pd->rt_use) & SRDMA_RT_PD_DEAD)
		return 0;
	if (!srdma_pd_destroy_shared(pd->rt_use)) {
		srdma_dbg("dealloc_pd %u: objects of pid %d or of its importers use it",
			  handle, p->pid);
		return -EBUSY;
	}
	if (atomic_load(&slot->handle) != handle)	/* not ours: undo */
		atomic_compare_exchange_strong(pd->rt_use, &zero_dead, 0);
	else
		srdma_dbg("pd %u of pid %d destroyed by its importer", handle,
			  p->pid);
	return 0;
}

int srdma_import_pd_drop(struct srdma_pd *pd, bool destroy)
{
	struct srdma_context *ctx = pd->ctx;
	int ret;

	if (!pd->imported)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (atomic_load(&pd->usecnt)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("pd %u: still used by %u object(s) of ours",
			  pd->ibpd.handle, atomic_load(&pd->usecnt));
		return -EBUSY;
	}
	if (destroy) {
		ret = source_pd_destroy(pd);
		if (ret) {
			pthread_mutex_unlock(&ctx->lock);
			return ret;
		}
	}
	if (!srdma_handle_del(pd, SRDMA_OBJ_PD)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	ctx->n_pd--;
	pthread_mutex_unlock(&ctx->lock);
	free(pd);
	return 0;
}

/* ---- MR ------------------------------------------------------------------ */

int srdma_import_mr(struct srdma_pd *pd, uint32_t handle,
		    struct srdma_imr **out)
{
	struct srdma_context *ctx = pd->ctx;
	struct srdma_peer *p = source(ctx, true);
	struct srdma_key_snap s;
	struct srdma_imr *mr;
	int ret;

	if (!p || !pd->imported)
		return -EINVAL;
	if (handle >= SRDMA_SEG_KEY_SLOTS ||
	    !srdma_key_snapshot(&p->kv.ent[handle], &s) ||
	    s.kind != SRDMA_KIND_MR || s.state != SRDMA_KEY_VALID ||
	    !s.key || s.pd_handle != pd->ibpd.handle) {
		srdma_dbg("import_mr: pid %d has no MR %u in PD %u", p->pid,
			  handle, pd->ibpd.handle);
		return -EINVAL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->ibmr.context = &ctx->vctx.context;
	mr->ibmr.pd = &pd->ibpd;
	mr->ibmr.handle = handle;
	mr->ibmr.lkey = s.key;
	mr->ibmr.rkey = s.key;
	/* As the owner's ibv_mr: the address registered (zero-based device
	 * memory: NULL) and the length asked for. */
	mr->ibmr.addr = s.flags & SRDMA_KEYF_ZERO_BASED ?
				NULL :
				(void *)(uintptr_t)s.host_addr;
	mr->ibmr.length = s.length;
	ret = srdma_handle_add(mr, SRDMA_OBJ_IMR);
	if (ret) {
		free(mr);
		return ret;
	}
	atomic_fetch_add(&pd->usecnt, 1);
	*out = mr;
	return 0;
}

struct srdma_imr *srdma_imr_lookup(struct ibv_mr *ibmr)
{
	if (!srdma_handle_check(ibmr, SRDMA_OBJ_IMR))
		return NULL;
	return container_of(ibmr, struct srdma_imr, ibmr);
}

/* Invalidate the source's key of @mr, then let accesses under way end. */
static void source_invalidate(struct srdma_imr *mr)
{
	struct srdma_context *ctx = mr->pd->ctx;
	struct srdma_peer *p = source(ctx, true);
	struct srdma_shm_key *e;
	unsigned int spins = 0;

	if (!p)
		return;		/* nothing left to destroy */
	e = &p->kv.ent[mr->ibmr.handle];
	srdma_key_write_begin(e);
	if (atomic_load(&e->key) == mr->ibmr.lkey &&
	    SRDMA_KEY_GET(e, kind) == SRDMA_KIND_MR &&
	    SRDMA_KEY_GET(e, state) == SRDMA_KEY_VALID)
		SRDMA_KEY_PUT(e, state, SRDMA_KEY_INVALID);
	srdma_key_write_end(e);
	/* Bounded: a dead holder's mark is the owner's dereg to clear. */
	while (atomic_load(&e->inflight) && ++spins < (1u << 20))
		sched_yield();
	srdma_dbg("mr key %#x of pid %d invalidated by its importer",
		  mr->ibmr.lkey, p->pid);
}

int srdma_import_mr_drop(struct ibv_mr *ibmr, bool destroy)
{
	struct srdma_imr *mr = srdma_imr_lookup(ibmr);

	if (!mr || !srdma_handle_del(mr, SRDMA_OBJ_IMR))
		return -EINVAL;
	if (destroy)
		source_invalidate(mr);
	atomic_fetch_sub(&mr->pd->usecnt, 1);
	free(mr);
	return 0;
}

/* ---- data path ----------------------------------------------------------- */

/* Access records are few (64 per context): wait a little for one. */
static int rec_reserve(struct srdma_context *ctx)
{
	unsigned int tries;
	int rec;

	for (tries = 0; tries < 10000; tries++) {
		rec = srdma_host_acc_reserve(&ctx->host);
		if (rec >= 0)
			return rec;
		sched_yield();
	}
	return -1;
}

/* Copy @len bytes between our @local and the source's @addr. */
static int source_copy(struct srdma_peer *p, void *local, uint64_t addr,
		       uint64_t len, bool to_source)
{
	struct iovec l = { local, len }, r = { (void *)(uintptr_t)addr, len };

	return srdma_peer_vm_rw(p, &l, 1, &r, 1, to_source) == (ssize_t)len ?
		       0 :
		       -EFAULT;
}

static int io_new(struct srdma_context *ctx, struct srdma_peer *p,
		  uint64_t total, uint32_t nsge, struct srdma_import_io **out)
{
	struct srdma_import_io *io;

	io = calloc(1, sizeof(*io) + nsge * sizeof(io->span[0]));
	if (!io)
		return -ENOMEM;
	io->buf = malloc(total ? total : 1);
	if (!io->buf) {
		free(io);
		return -ENOMEM;
	}
	io->ctx = ctx;
	io->peer = p;
	io->cap = total;
	*out = io;
	return 0;
}

int srdma_import_acquire(struct srdma_context *ctx,
			 struct srdma_import_io **iop, uint64_t total,
			 uint32_t nsge, uint32_t pd, const struct ibv_sge *s,
			 uint32_t access, void **local)
{
	struct srdma_peer *p = source(ctx, false);
	struct srdma_shm_access *rec;
	struct srdma_import_io *io;
	uint64_t tag;
	int r, idx;

	if (!p)
		return SRDMA_KCHK_NOKEY;
	if (!*iop && io_new(ctx, p, total, nsge, iop)) {
		srdma_warn("imported lkey %#x: no memory for a bounce buffer of %llu bytes",
			   s->lkey, (unsigned long long)total);
		return SRDMA_KCHK_NOKEY;
	}
	io = *iop;
	if (io->n >= nsge || s->length > io->cap - io->used)
		return SRDMA_KCHK_BOUNDS;	/* not the WR sized for */
	idx = rec_reserve(ctx);
	if (idx < 0) {
		srdma_dbg("imported lkey %#x: no access record free", s->lkey);
		return SRDMA_KCHK_NOKEY;
	}
	rec = srdma_seg_access(ctx->host.seg, (unsigned int)idx);
	tag = SRDMA_ACC_VALID | (uint64_t)p->reg_index << 32;
	r = srdma_key_acquire(&p->kv, s->lkey, KIND_MR, pd, access, s->addr,
			      s->length, rec, tag, p->pid, p->start,
			      &io->span[io->n].ref);
	if (r) {
		srdma_host_acc_release(&ctx->host, idx);
		return r;
	}
	io->span[io->n].rec = idx;
	io->span[io->n].off = io->used;
	io->span[io->n].len = s->length;
	io->span[io->n].scatter = access & IBV_ACCESS_LOCAL_WRITE;
	io->n++;
	if (!(access & IBV_ACCESS_LOCAL_WRITE) &&
	    (srdma_peer_gone(ctx, p) ||
	     source_copy(p, io->buf + io->used,
			 io->span[io->n - 1].ref.host_addr, s->length,
			 false))) {
		srdma_dbg("imported lkey %#x: the bytes of pid %d cannot be read",
			  s->lkey, p->pid);
		return SRDMA_KCHK_NOKEY;	/* released with the rest */
	}
	*local = io->buf + io->used;
	io->used += s->length;
	return SRDMA_KCHK_OK;
}

int srdma_import_check(struct srdma_context *ctx, uint32_t pd,
		       const struct ibv_sge *s, uint32_t access)
{
	struct srdma_peer *p = source(ctx, false);
	struct srdma_key_snap snap;
	uint32_t slot;

	if (!p)
		return SRDMA_KCHK_NOKEY;
	return srdma_key_check(&p->kv, s->lkey, KIND_MR, pd, access, s->addr,
			       s->length, &snap, &slot);
}

int srdma_import_copy(struct srdma_context *ctx, uint32_t pd, uint32_t lkey,
		      uint64_t addr, const struct iovec *liov, uint32_t nl,
		      uint64_t len, bool to_source, int *kchk)
{
	struct srdma_peer *p = source(ctx, false);
	struct srdma_key_ref ref;
	struct iovec riov;
	uint64_t tag;
	ssize_t got;
	int idx;

	*kchk = SRDMA_KCHK_NOKEY;
	if (!p)
		return -EACCES;
	idx = rec_reserve(ctx);
	if (idx < 0) {
		srdma_dbg("imported lkey %#x: no access record free", lkey);
		return -EACCES;
	}
	tag = SRDMA_ACC_VALID | (uint64_t)p->reg_index << 32;
	*kchk = srdma_key_acquire(&p->kv, lkey, KIND_MR, pd,
				  to_source ? IBV_ACCESS_LOCAL_WRITE : 0, addr,
				  len, srdma_seg_access(ctx->host.seg,
							(unsigned int)idx),
				  tag, p->pid, p->start, &ref);
	if (*kchk) {
		srdma_host_acc_release(&ctx->host, idx);
		return -EACCES;
	}
	riov.iov_base = (void *)(uintptr_t)ref.host_addr;
	riov.iov_len = len;
	got = srdma_peer_vm_rw(p, liov, nl, &riov, 1, to_source);
	srdma_key_release(&ref);
	srdma_host_acc_release(&ctx->host, idx);
	if (got != (ssize_t)len) {
		srdma_dbg("imported lkey %#x: the bytes of pid %d cannot be %s",
			  lkey, p->pid, to_source ? "written" : "read");
		return -EFAULT;
	}
	return 0;
}

int srdma_import_commit(struct srdma_import_io *io)
{
	uint32_t i;

	if (!io)
		return 0;
	for (i = 0; i < io->n; i++) {
		if (!io->span[i].scatter)
			continue;
		if (srdma_peer_gone(io->ctx, io->peer) ||
		    source_copy(io->peer, io->buf + io->span[i].off,
				io->span[i].ref.host_addr, io->span[i].len,
				true)) {
			srdma_dbg("imported lkey %#x: the bytes of pid %d cannot be written",
				  io->span[i].ref.snap.key, io->peer->pid);
			return -EFAULT;
		}
	}
	return 0;
}

void srdma_import_release(struct srdma_import_io *io)
{
	uint32_t i;

	if (!io)
		return;
	for (i = 0; i < io->n; i++) {
		srdma_key_release(&io->span[i].ref);
		srdma_host_acc_release(&io->ctx->host, io->span[i].rec);
	}
	free(io->buf);
	free(io);
}
