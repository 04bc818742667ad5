// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * context.c - opening and closing a device context.
 *
 * Opening claims a host-unique LID (and with it a QPN range) in the host
 * registry, creates the context's shared control segment, sets up the key
 * table over it and only then publishes the segment to peers. The public
 * struct is a real verbs_context (sz and abi_compat as rdma-core sets
 * them); the ABI front end fills its op tables. Closing refuses while PDs
 * remain (every other object holds a PD), then unpublishes and removes the
 * segment.
 *
 * fork(): the context records the fork generation it was opened in. The
 * shared mappings it owns (its segment, the registry) are MADV_DONTFORK,
 * so a child does not even have them; everything inherited is refused at
 * the entry points before it could be reached (lifetimes.md, "fork").
 * Closing an inherited context in a child only closes this process's
 * copies of its descriptors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/import.h"
#include "core/restrack.h"
#include "transport/host/mcast.h"
#include "transport/net/net.h"
#include "util/fault.h"
#include "util/log.h"

static bool env_flag(const char *name, bool def)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return def;
	return strcmp(v, "0") && strcasecmp(v, "no") && strcasecmp(v, "off");
}

int srdma_fifo_open(struct srdma_context *ctx, const char *kind,
		    uint32_t num, char *path, size_t len)
{
	int fd;

	int dfd = ctx->host.dirfd;

	srdma_fifo_path(ctx, path, len, ctx->host.lid, ctx->host.pid, kind,
			num);
	unlinkat(dfd, path, 0);	/* a leftover of a dead owner with our pid */
	if (mkfifoat(dfd, path, 0600))
		return -errno;
	/* Ours, just made: 0600 whatever the umask masked (a FIFO 0400
	 * could not even be opened below, nor by the peers that wake us). */
	if (fchmodat(dfd, path, 0600, AT_SYMLINK_NOFOLLOW))
		srdma_dbg("fchmodat(%s, 0600): %s", path, strerror(errno));
	/* O_RDWR: the open does not wait for a writer, and the FIFO never
	 * reports EOF while we hold it. O_NOFOLLOW: never someone's link. */
	fd = openat(dfd, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int ret = -errno;

		unlinkat(dfd, path, 0);
		return ret;
	}
	return fd;
}

/*
 * Keep a shared mapping out of fork() children: the child's copy of the
 * library state must not reach the parent's shared memory, even by a bug.
 * Advisory: on failure the entry-point checks still stand.
 */
static void dontfork(void *p, size_t len)
{
	if (p && len && madvise(p, len, MADV_DONTFORK))
		srdma_dbg("madvise(MADV_DONTFORK, %zu bytes): %s", len,
			  strerror(errno));
}

int srdma_context_open(struct srdma_device *dev, struct srdma_context **out)
{
	struct srdma_context *ctx;
	struct ibv_context *ib;
	int ret;

	srdma_log_init();
	if (SRDMA_FAULT(CTX_ALLOC))
		return -ENOMEM;
	ctx = calloc(1, sizeof(*ctx));	/* large: object tables by slot */
	if (!ctx)
		return -ENOMEM;
	ctx->dev = dev;
	ctx->odp_enabled = env_flag("SRDMA_ODP", true);
	ctx->mem_check = env_flag("SRDMA_MR_CHECK", true);
	ctx->dmabuf_memfd = env_flag("SRDMA_DMABUF_MEMFD", false);
	ctx->relaxed_immediate = env_flag("SRDMA_RELAXED_IMMEDIATE", false);
	ctx->next_pd_handle = 1;
	ctx->rpending_tail = &ctx->rpending;
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->relaxed_cond, NULL);
	pthread_cond_init(&ctx->prog_cond, NULL);
	ctx->next_qp = 1;	/* QPN low bits 0 stay unused */
	ctx->fork_gen = atomic_load_explicit(&srdma_fork_gen,
					     memory_order_relaxed);

	ret = srdma_host_attach(&ctx->host, dev->ibdev.name);
	if (ret) {
		srdma_err("%s: cannot attach to host registry: %s",
			  dev->ibdev.name, strerror(-ret));
		goto err_free;
	}
	/* The port's GID table: IB, from the LID; Ethernet, from the
	 * namespace's interfaces (none up: no RoCE port, -ENODEV). */
	ret = srdma_gid_table_build(&ctx->gids, ctx->host.lid,
				    dev->node_guid);
	if (ret) {
		srdma_host_detach(&ctx->host);
		goto err_free;
	}
	dontfork(ctx->host.seg, ctx->host.seg_size);
	dontfork(ctx->host.reg.hdr, ctx->host.reg.map_len);
	ret = srdma_kt_init(&ctx->kt, srdma_seg_keys(ctx->host.seg),
			    SRDMA_KEY_SLOTS);
	if (ret)
		goto err_detach;
	ctx->host.seg->key_secret[0] = ctx->kt.secret[0];
	ctx->host.seg->key_secret[1] = ctx->kt.secret[1];

	ret = srdma_fifo_open(ctx, "async", 0, ctx->async_path,
			      sizeof(ctx->async_path));
	if (ret < 0)
		goto err_kt;
	ctx->async_fd = ret;
	srdma_async_init(ctx);
	/* Our segment or registry truncated: wake ibv_get_async_event()
	 * for IBV_EVENT_DEVICE_FATAL (srdma_async_get()). */
	srdma_shm_guard_wake(ctx->host.seg, ctx->async_fd);
	srdma_shm_guard_wake(ctx->host.reg.hdr, ctx->async_fd);
	ib = &ctx->vctx.context;
	ib->device = &dev->ibdev;
	ib->async_fd = ctx->async_fd;
	/* cmd_fd: the segment, so ibv_import_device-style dup() works. */
	ib->cmd_fd = dup(ctx->host.seg_fd);
	if (ib->cmd_fd < 0) {
		ret = -errno;
		goto err_efd;
	}
	ib->num_comp_vectors = 1;
	pthread_mutex_init(&ib->mutex, NULL);
	ib->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.sz = sizeof(struct verbs_context);

	ret = srdma_handle_add(ctx, SRDMA_OBJ_CTX);
	if (ret)
		goto err_cmdfd;
	srdma_rt_stamp(ctx);
	srdma_host_publish(&ctx->host);
	srdma_info("%s: context open, lid %u, segment %s", dev->ibdev.name,
		   ctx->host.lid, ctx->host.seg_name);
	*out = ctx;
	return 0;

err_cmdfd:
	close(ib->cmd_fd);
err_efd:
	close(ctx->async_fd);
	unlinkat(ctx->host.dirfd, ctx->async_path, 0);
err_kt:
	srdma_kt_fini(&ctx->kt);
err_detach:
	srdma_host_detach(&ctx->host);
err_free:
	free(ctx);
	return ret;
}

/* The engine's table (dp.h); installed once, read lock-free. */
static const struct srdma_engine_ops *_Atomic engine_ops;

void srdma_engine_ops_set(const struct srdma_engine_ops *ops)
{
	atomic_store_explicit(&engine_ops, ops, memory_order_release);
}

const struct srdma_engine_ops *srdma_engine_ops_get(void)
{
	return atomic_load_explicit(&engine_ops, memory_order_acquire);
}

int srdma_context_close(struct srdma_context *ctx)
{
	const struct srdma_engine_ops *eng;

	if (!srdma_handle_check(ctx, SRDMA_OBJ_CTX))
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->n_pd) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_warn("context lid %u: %u PD(s) still allocated",
			   ctx->host.lid, ctx->n_pd);
		return -EBUSY;
	}
	if (atomic_load(&ctx->n_dm)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_warn("context lid %u: %u DM(s) still allocated",
			   ctx->host.lid, atomic_load(&ctx->n_dm));
		return -EBUSY;
	}
	pthread_mutex_unlock(&ctx->lock);
	srdma_relaxed_stop(ctx);
	eng = srdma_engine_ops_get();
	if (eng)
		eng->ctx_stop(ctx);
	/* The net transport's endpoint (thread, sockets), if one was opened. */
	if (atomic_load(&ctx->net))
		srdma_net_ctx_close(ctx);
	srdma_handle_del(ctx, SRDMA_OBJ_CTX);
	srdma_import_ctx_fini(ctx);	/* its source's peer reference */
	srdma_peer_fini(ctx);
	srdma_mcast_ctx_fini(ctx);
	unlinkat(ctx->host.dirfd, ctx->async_path, 0);
	srdma_host_detach(&ctx->host);
	srdma_kt_fini(&ctx->kt);
	close(ctx->vctx.context.cmd_fd);
	close(ctx->async_fd);
	free(ctx->afree);
	pthread_cond_destroy(&ctx->relaxed_cond);
	pthread_cond_destroy(&ctx->prog_cond);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return 0;
}

void srdma_context_drop_inherited(struct srdma_context *ctx)
{
	/* Our copies of the descriptors only: the mappings are absent here
	 * (MADV_DONTFORK), and their addresses may already be reused. */
	int fds[] = { ctx->vctx.context.cmd_fd, ctx->async_fd,
		      ctx->host.seg_fd, ctx->host.reg.fd, ctx->host.dirfd };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
}
