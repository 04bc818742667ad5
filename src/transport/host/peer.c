// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * peer.c - the host transport's view of other contexts as targets.
 *
 * An initiator resolves a destination LID to a registry entry, maps that
 * context's segment once and caches it in ctx->peers[lid] (our own LID
 * resolves to our own segment, unmapped never). The cache is checked on
 * every use against the registry entry (pid and start time), so a peer
 * that died is noticed at the next operation, and a LID taken over by a
 * new process is mapped afresh; retired peers stay allocated until our
 * context closes, because other threads may still hold the pointer.
 *
 * Wake-ups go through the peer's FIFOs (completion channels, async fd),
 * opened O_RDWR | O_NONBLOCK: holding a read end ourselves means a write
 * never raises SIGPIPE when the owner is gone, and never blocks.
 *
 * RDMA atomics are serialised host-wide by the robust mutexes of the
 * "atomics" file, hashed by (target pid, address): every atomic on the
 * host, from any process, takes the same lock for the same word.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "util/log.h"

void srdma_fifo_path(const struct srdma_context *ctx, char *buf, size_t len,
		     uint32_t lid, pid_t pid, const char *kind, uint32_t num)
{
	if (!strcmp(kind, "chan"))
		snprintf(buf, len, "chan.%u.%d.%u", lid, (int)pid, num);
	else
		snprintf(buf, len, "%s.%u.%d", kind, lid, (int)pid);
	(void)ctx;
}

static void peer_init_common(struct srdma_peer *p)
{
	pthread_mutex_init(&p->fd_lock, NULL);
	p->async_fd = -1;
	p->kv.ent = srdma_seg_keys(p->seg);
	p->kv.nslots = SRDMA_SEG_KEY_SLOTS;	/* validated at map */
	p->kv.secret[0] = p->seg->key_secret[0];
	p->kv.secret[1] = p->seg->key_secret[1];
}

bool srdma_peer_alive(struct srdma_context *ctx, struct srdma_peer *p)
{
	struct srdma_reg_entry *e;

	if (p->self)
		return true;
	/* Its segment shrank under us (shm_guard.c): as good as dead. */
	if (srdma_shm_poisoned(p->seg))
		return false;
	e = &ctx->host.reg.ent[p->reg_index];
	return atomic_load_explicit(&e->state, memory_order_acquire) ==
	       SRDMA_REG_LIVE && e->pid == p->pid &&
	       e->start_time == p->start;
}

static struct srdma_peer *peer_map(struct srdma_context *ctx, uint32_t lid)
{
	struct srdma_reg_entry *e = &ctx->host.reg.ent[lid - 1];
	struct srdma_peer_seg ps;
	struct srdma_peer *p;
	char name[48];
	pid_t pid;
	uint64_t start;

	if (atomic_load_explicit(&e->state, memory_order_acquire) !=
	    SRDMA_REG_LIVE)
		return NULL;
	/* Copy, then check the copy: the entry may change under us. */
	pid = e->pid;
	start = e->start_time;
	memcpy(name, e->seg_name, sizeof(name));
	name[sizeof(name) - 1] = 0;
	if (!srdma_proc_alive(pid, start))
		return NULL;
	{
		char want[sizeof(name)];

		snprintf(want, sizeof(want), "ctx.%u.%d", lid, (int)pid);
		if (strcmp(name, want))
			return NULL;
	}
	if (srdma_peer_seg_map(ctx->host.dirfd, name, &ps))
		return NULL;
	if (ps.seg->owner_pid != pid || ps.seg->lid != lid) {
		srdma_peer_seg_unmap(&ps);
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		srdma_peer_seg_unmap(&ps);
		return NULL;
	}
	p->seg = ps.seg;
	p->seg_size = ps.size;
	p->pid = pid;
	p->start = start;
	p->lid = lid;
	p->reg_index = (int)lid - 1;
	peer_init_common(p);
	return p;
}

struct srdma_peer *srdma_peer_get(struct srdma_context *ctx, uint32_t lid)
{
	struct srdma_peer *p;

	if (!lid || lid > SRDMA_REG_ENTRIES)
		return NULL;
	p = atomic_load_explicit(&ctx->peers[lid], memory_order_acquire);
	if (p && srdma_peer_alive(ctx, p))
		return p;

	pthread_mutex_lock(&ctx->lock);
	p = atomic_load_explicit(&ctx->peers[lid], memory_order_relaxed);
	if (p && !srdma_peer_alive(ctx, p)) {
		/* Retire: other threads may still hold it. */
		atomic_store(&ctx->peers[lid], NULL);
		p->next_dead = ctx->dead_peers;
		ctx->dead_peers = p;
		p = NULL;
	}
	if (!p) {
		if (lid == ctx->host.lid) {
			p = calloc(1, sizeof(*p));
			if (p) {
				p->seg = ctx->host.seg;
				p->seg_size = ctx->host.seg_size;
				p->pid = ctx->host.pid;
				p->start = ctx->host.start_time;
				p->lid = lid;
				p->reg_index = ctx->host.reg_index;
				p->self = true;
				peer_init_common(p);
			}
		} else {
			p = peer_map(ctx, lid);
		}
		if (p)
			atomic_store_explicit(&ctx->peers[lid], p,
					      memory_order_release);
	}
	pthread_mutex_unlock(&ctx->lock);
	return p;
}

static void peer_free(struct srdma_peer *p)
{
	int i;

	for (i = 0; i < p->nchan; i++)
		if (p->chan_fd[i] >= 0)
			close(p->chan_fd[i]);
	free(p->chan_fd);
	if (p->async_fd >= 0)
		close(p->async_fd);
	if (!p->self) {
		struct srdma_peer_seg ps = { p->seg, p->seg_size };

		srdma_peer_seg_unmap(&ps);
	}
	pthread_mutex_destroy(&p->fd_lock);
	free(p);
}

void srdma_peer_fini(struct srdma_context *ctx)
{
	struct srdma_peer *p;
	uint32_t i;

	for (i = 0; i <= SRDMA_REG_ENTRIES; i++) {
		p = atomic_load(&ctx->peers[i]);
		if (p)
			peer_free(p);
		atomic_store(&ctx->peers[i], NULL);
	}
	while ((p = ctx->dead_peers)) {
		ctx->dead_peers = p->next_dead;
		peer_free(p);
	}
	if (ctx->atomics) {
		if (srdma_shm_guard_del(ctx->atomics))
			munmap(ctx->atomics, sizeof(*ctx->atomics));
		ctx->atomics = NULL;
	}
}

static int fifo_open_peer(struct srdma_context *ctx, struct srdma_peer *p,
			  const char *kind, uint32_t num)
{
	char name[64];
	struct stat st;
	int fd;

	srdma_fifo_path(ctx, name, sizeof(name), p->lid, p->pid, kind, num);
	fd = openat(ctx->host.dirfd, name,
		    O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) || !S_ISFIFO(st.st_mode))) {
		close(fd);	/* not a FIFO: nobody to wake */
		fd = -1;
	}
	return fd;
}

static void wake(int fd)
{
	char b = 1;

	/* EAGAIN: 64 KiB of unread wake-ups, the fd is readable anyway. */
	if (fd >= 0 && write(fd, &b, 1) != 1 && errno != EAGAIN)
		srdma_dbg("wake-up write: %s", strerror(errno));
}

void srdma_peer_wake_chan(struct srdma_context *ctx, struct srdma_peer *p,
			  uint32_t chan)
{
	int fd = -1;

	if (!chan)
		return;
	chan--;
	pthread_mutex_lock(&p->fd_lock);
	if ((int)chan >= p->nchan) {
		int n = (int)chan + 8, i;
		int *a = realloc(p->chan_fd, (size_t)n * sizeof(int));

		if (a) {
			for (i = p->nchan; i < n; i++)
				a[i] = -1;
			p->chan_fd = a;
			p->nchan = n;
		}
	}
	if ((int)chan < p->nchan) {
		if (p->chan_fd[chan] < 0)
			p->chan_fd[chan] = fifo_open_peer(ctx, p, "chan", chan);
		fd = p->chan_fd[chan];
	}
	wake(fd);
	pthread_mutex_unlock(&p->fd_lock);
}

void srdma_peer_wake_async(struct srdma_context *ctx, struct srdma_peer *p)
{
	pthread_mutex_lock(&p->fd_lock);
	if (p->async_fd < 0)
		p->async_fd = fifo_open_peer(ctx, p, "async", 0);
	wake(p->async_fd);
	pthread_mutex_unlock(&p->fd_lock);
}

/* Map (creating and initialising under flock if needed) "atomics". */
static struct srdma_atomic_file *atomics_map(struct srdma_context *ctx)
{
	struct srdma_atomic_file *f = MAP_FAILED;
	struct stat st;
	uint32_t i;
	int fd;

	fd = openat(ctx->host.dirfd, "atomics",
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (flock(fd, LOCK_EX))
		goto out;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out_unlock;
	if ((size_t)st.st_size != sizeof(*f) && ftruncate(fd, sizeof(*f)))
		goto out_unlock;
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED)
		goto out_unlock;
	srdma_shm_guard_add(f, sizeof(*f), -1);
	if (f->magic != SRDMA_ATOMIC_MAGIC) {
		for (i = 0; i < SRDMA_ATOMIC_LOCKS; i++)
			srdma_shm_mutex_init(&f->lock[i]);
		f->nlocks = SRDMA_ATOMIC_LOCKS;
		__atomic_store_n(&f->magic, SRDMA_ATOMIC_MAGIC,
				 __ATOMIC_RELEASE);
	} else if (f->nlocks != SRDMA_ATOMIC_LOCKS) {
		if (srdma_shm_guard_del(f))
			munmap(f, sizeof(*f));
		f = MAP_FAILED;
	}
out_unlock:
	flock(fd, LOCK_UN);
out:
	close(fd);
	return f == MAP_FAILED ? NULL : f;
}

pthread_mutex_t *srdma_host_atomic_lock(struct srdma_context *ctx, pid_t pid,
					uint64_t addr)
{
	struct srdma_atomic_file *f = __atomic_load_n(&ctx->atomics,
						      __ATOMIC_ACQUIRE);
	uint64_t h;
	pthread_mutex_t *m;

	if (!f) {
		pthread_mutex_lock(&ctx->lock);
		if (!ctx->atomics)
			__atomic_store_n(&ctx->atomics, atomics_map(ctx),
					 __ATOMIC_RELEASE);
		f = ctx->atomics;
		pthread_mutex_unlock(&ctx->lock);
		if (!f)
			return NULL;
	}
	h = ((addr >> 3) ^ ((uint64_t)pid << 20)) * 0x9e3779b97f4a7c15ull;
	m = &f->lock[h >> 56 & (SRDMA_ATOMIC_LOCKS - 1)];
	srdma_shm_lock(m);
	return m;
}
