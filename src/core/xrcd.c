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
 * The last holder removes the file: on close it tries to turn its shared
 * lock into an exclusive one without blocking, and only when that works
 * (nobody else holds it) unlinks the file before closing it. An opener
 * may have opened the file just before that unlink and locked it just
 * after: once it holds its lock, it checks that the name still leads to
 * the inode it locked, and starts over when it does not. A failed open
 * (EAGAIN: no domain, no O_CREAT) removes the file it created the same
 * way. Only a holder that dies leaves its file behind (the next last
 * holder of that domain removes it).
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

/* The name of the domain file of inode @st in the state directory. */
static void domain_name(char *name, size_t len, const struct stat *st)
{
	snprintf(name, len, "xrcd.%" PRIx64 ".%" PRIx64, (uint64_t)st->st_dev,
		 (uint64_t)st->st_ino);
}

/* Open (creating) the domain file @name in the state directory. */
static int domain_file(struct srdma_context *ctx, const char *name)
{
	int fd;

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

/* True if @name in the state directory is still the file open as @fd. */
static bool domain_file_current(struct srdma_context *ctx, int fd,
				const char *name)
{
	struct stat a, b;

	return !fstat(fd, &a) &&
	       !fstatat(ctx->host.dirfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * Give up the domain file @fd (named @name): if we are its only holder,
 * remove it first. Converting our lock to an exclusive one drops the
 * shared lock when it fails; we are closing anyway.
 */
static void domain_leave(struct srdma_context *ctx, int fd, const char *name)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 &&
	    domain_file_current(ctx, fd, name))
		unlinkat(ctx->host.dirfd, name, 0);
	close(fd);
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
		return -EAGAIN;		/* still holding LOCK_EX */
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

/*
 * Become a holder of the domain of inode @st: @x->lock_fd holds the
 * shared lock of its file, which is still the file the name leads to.
 */
static int domain_hold(struct srdma_context *ctx, struct srdma_xrcd *x,
		       const struct stat *st, int oflags)
{
	unsigned int tries;
	int fd, ret;

	domain_name(x->lock_name, sizeof(x->lock_name), st);
	for (tries = 0; tries < 1000; tries++) {
		fd = domain_file(ctx, x->lock_name);
		if (fd < 0)
			return fd;
		ret = domain_join(fd, oflags);
		if (ret == -EAGAIN) {
			/* Nobody holds it: the file goes with us. */
			domain_leave(ctx, fd, x->lock_name);
			return ret;
		}
		if (ret) {
			close(fd);
			return ret;
		}
		if (domain_file_current(ctx, fd, x->lock_name)) {
			x->lock_fd = fd;
			return 0;
		}
		/* Its last holder removed it between our open and our
		 * lock: that domain ended; look again. */
		close(fd);
	}
	srdma_dbg("open_xrcd: %s/%s keeps being replaced", ctx->host.dir,
		  x->lock_name);
	return -EAGAIN;
}

int srdma_xrcd_open(struct srdma_context *ctx, struct ibv_xrcd_init_attr *a,
		    struct srdma_xrcd **out)
{
	struct srdma_xrcd *x;
	struct stat st;
	int ret;

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
		ret = domain_hold(ctx, x, &st, a->oflags);
		if (ret)
			goto err_free;
	}
	ret = srdma_handle_add(x, SRDMA_OBJ_XRCD);
	if (ret)
		goto err_leave;
	*out = x;
	return 0;

err_leave:
	if (x->lock_fd >= 0)
		domain_leave(ctx, x->lock_fd, x->lock_name);
	x->lock_fd = -1;
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
	if (x->lock_fd >= 0)	/* drops our hold on the domain */
		domain_leave(ctx, x->lock_fd, x->lock_name);
	x->lock_fd = -1;
	xrcd_put(x);
	return 0;
}

void srdma_xrcd_drop_inherited(struct ibv_xrcd *ibxrcd)
{
	struct srdma_xrcd *x = container_of(ibxrcd, struct srdma_xrcd, ibxrcd);

	if (x->lock_fd >= 0)
		close(x->lock_fd);
	x->lock_fd = -1;
}
