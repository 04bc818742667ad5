// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * xrcd.c - XRC domains (ibv_open_xrcd, ibv_close_xrcd).
 *
 * A domain opened through a file is named by that file's inode, so every
 * process of the host that opens the same file shares it, as the kernel's
 * uverbs keeps one XRC domain per inode and device. There is no daemon to
 * hold a host-wide table, so "does this domain exist?" is answered by
 * file locks: each opener holds a shared flock on a small file in the
 * state directory named after the inode (xrcd.<dev>.<ino>). A domain
 * exists exactly while someone holds that lock, and a holder that dies
 * releases it with its descriptors, so no entry can leak. O_CREAT and
 * O_EXCL are decided by trying an exclusive lock without blocking.
 *
 * Nothing here is on the data path: a domain's identity is copied into
 * the shared entries of its SRQs and TGT QPs when they are created
 * (srq.c, qp.c) and compared by the responder (engine/responder.c).
 * What the domain's objects may and may not do: docs/design/xrc.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/xrc.h"
#include "util/log.h"

/* Private domains: host-unique as (LID << 32) | this counter. */
static _Atomic uint32_t private_seq;

/*
 * Closed domains are kept for reuse, never freed: ibv_close_xrcd() is an
 * inline of verbs.h that reads xrcd->context before it calls us, so a
 * second close of the same pointer must find readable memory (then
 * EINVAL) rather than crash. The pool holds at most as many domains as
 * were ever open at once.
 */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srdma_xrcd *pool;		/* pool_lock */

static struct srdma_xrcd *xrcd_get(void)
{
	struct srdma_xrcd *x;

	pthread_mutex_lock(&pool_lock);
	x = pool;
	if (x)
		pool = x->pool_next;
	pthread_mutex_unlock(&pool_lock);
	if (x) {
		memset(x, 0, sizeof(*x));
		return x;
	}
	return calloc(1, sizeof(*x));
}

/* Back to the pool; ibxrcd.context stays as it was (see above). */
static void xrcd_put(struct srdma_xrcd *x)
{
	pthread_mutex_lock(&pool_lock);
	x->pool_next = pool;
	pool = x;
	pthread_mutex_unlock(&pool_lock);
}

/* Open (creating) the domain file of inode @st in the state directory. */
static int domain_file(struct srdma_context *ctx, const struct stat *st)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "xrcd.%" PRIx64 ".%" PRIx64,
		 (uint64_t)st->st_dev, (uint64_t)st->st_ino);
	fd = openat(ctx->host.dirfd, name,
		    O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		int e = errno;

		srdma_dbg("open_xrcd: cannot open %s/%s: %s", ctx->host.dir,
			  name, strerror(e));
		return -e;
	}
	return fd;
}

/*
 * Take the shared lock that makes us a holder of the domain, deciding
 * O_CREAT / O_EXCL on the way. Return: 0, -EAGAIN, -EINVAL, -errno.
 */
static int domain_join(int fd, int oflags)
{
	bool exists;

	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		exists = false;		/* nobody holds it */
	} else if (errno == EWOULDBLOCK) {
		exists = true;
	} else {
		return -errno;
	}
	if (!exists && !(oflags & O_CREAT)) {
		srdma_dbg("open_xrcd: no XRC domain for this file and no "
			  "O_CREAT");
		flock(fd, LOCK_UN);
		return -EAGAIN;
	}
	if (exists && (oflags & O_EXCL)) {
		srdma_dbg("open_xrcd: O_EXCL, but the XRC domain of this file "
			  "exists");
		return -EINVAL;
	}
	/* A creator turns its exclusive lock into a shared one; a joiner
	 * waits out a creator between the two steps. */
	if (flock(fd, LOCK_SH))
		return -errno;
	return 0;
}

int srdma_xrcd_open(struct srdma_context *ctx, struct ibv_xrcd_init_attr *a,
		    struct srdma_xrcd **out)
{
	struct srdma_xrcd *x;
	struct stat st;
	int fd = -1, ret;

	if (!a)
		return -EINVAL;
	if (a->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_RESERVED - 1)) {
		srdma_dbg("open_xrcd: comp_mask %#x has unknown bits",
			  a->comp_mask);
		return -EOPNOTSUPP;
	}
	if (!(a->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(a->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS)) {
		srdma_dbg("open_xrcd: comp_mask %#x lacks FD or OFLAGS",
			  a->comp_mask);
		return -EINVAL;
	}
	if (a->oflags & ~(O_CREAT | O_EXCL)) {
		srdma_dbg("open_xrcd: oflags %#x: only O_CREAT and O_EXCL",
			  a->oflags);
		return -EINVAL;
	}
	x = xrcd_get();
	if (!x)
		return -ENOMEM;
	x->ctx = ctx;
	x->lock_fd = -1;
	x->ibxrcd.context = &ctx->vctx.context;
	if (a->fd == -1) {
		x->id[0] = SRDMA_XRCD_PRIVATE;
		x->id[1] = (uint64_t)ctx->host.lid << 32 |
			   atomic_fetch_add(&private_seq, 1);
	} else {
		if (a->fd < 0 || fstat(a->fd, &st)) {
			srdma_dbg("open_xrcd: fd %d is not an open file",
				  a->fd);
			ret = -EBADF;
			goto err_free;
		}
		x->id[0] = SRDMA_XRCD_INODE | (uint64_t)st.st_dev;
		x->id[1] = (uint64_t)st.st_ino;
		fd = domain_file(ctx, &st);
		if (fd < 0) {
			ret = fd;
			goto err_free;
		}
		ret = domain_join(fd, a->oflags);
		if (ret)
			goto err_close;
		x->lock_fd = fd;
	}
	ret = srdma_handle_add(x, SRDMA_OBJ_XRCD);
	if (ret)
		goto err_close;
	*out = x;
	return 0;

err_close:
	if (fd >= 0)
		close(fd);
err_free:
	xrcd_put(x);
	return ret;
}

struct srdma_xrcd *srdma_xrcd_lookup(struct ibv_xrcd *ibxrcd)
{
	if (!ibxrcd || !srdma_handle_check(ibxrcd, SRDMA_OBJ_XRCD))
		return NULL;
	return container_of(ibxrcd, struct srdma_xrcd, ibxrcd);
}

int srdma_xrcd_close(struct ibv_xrcd *ibxrcd)
{
	struct srdma_xrcd *x = srdma_xrcd_lookup(ibxrcd);
	struct srdma_context *ctx;

	if (!x)
		return -EINVAL;
	ctx = x->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (atomic_load(&x->usecnt)) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("close_xrcd: %u XRC SRQs / TGT QPs still use it",
			  atomic_load(&x->usecnt));
		return -EBUSY;
	}
	if (!srdma_handle_del(x, SRDMA_OBJ_XRCD)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (x->lock_fd >= 0)
		close(x->lock_fd);	/* drops our hold on the domain */
	x->lock_fd = -1;
	xrcd_put(x);
	return 0;
}
