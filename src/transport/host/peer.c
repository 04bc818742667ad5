// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * peer.c - the host transport's view of other contexts as targets.
 *
 * An initiator resolves a destination LID to a registry entry, maps that
 * context's segment and caches it in ctx->peers[lid] (our own LID resolves
 * to our own segment, unmapped never). Peers are reference counted under
 * ctx->lock: srdma_peer_get() hands out a reference, which a QP keeps in
 * qp->peer (the engine only touches a peer under that QP's sq_lock, so the
 * QP's reference covers every access in flight) until it is re-pointed,
 * reset or destroyed. A peer whose owner died is retired from the cache
 * and released (segment unmapped, FIFOs and pidfd closed) when its last
 * reference goes; a live peer nobody references waits on a short LRU of
 * idle peers, so a UD QP alternating between a few destinations does not
 * map and unmap on every WR, and long-running servers stay flat however
 * many clients come and go (docs/design/lifetimes.md).
 *
 * Liveness has two levels. srdma_peer_alive() only reads shared memory
 * (the registry entry, the segment). srdma_peer_gone(), which every WR
 * calls (engine/requester.c resolve(), and the RNR path), adds the kernel's
 * word: a SIGKILLed owner leaves its registry entry LIVE until someone
 * reaps it, and without the kernel's word a WR with rnr_retry = 7 would
 * wait for a dead owner forever. The kernel's word is the owner's life
 * marker (life.c), a robust mutex in its segment that the kernel marks
 * when the owner exits or execs: one load. Owners without one (an older
 * build) are asked through a pidfd (or /proc where pidfd_open fails), at
 * most once per SRDMA_PEER_CHECK_NS per peer in srdma_peer_gone().
 *
 * The copies themselves (srdma_peer_vm_rw) address the owner by pid,
 * which a reaped owner hands on: every write asks the kernel's word right
 * before its system call, every read right after it (bytes read from a
 * gone owner are disowned). The marker makes that free; without one it is
 * a pidfd poll per copy. What remains is docs/design/lifetimes.md's "Pid
 * reuse".
 *
 * Wake-ups go through the peer's FIFOs (completion channels, async fd),
 * opened O_RDWR | O_NONBLOCK: holding a read end ourselves means a write
 * never raises SIGPIPE when the owner is gone, and never blocks. A
 * process at its fd limit cannot open one, yet the CQE or event is
 * already posted and the target asleep: the library keeps one spare fd
 * (taken when the first peer is mapped), gives it up to open the FIFO,
 * writes, closes, and takes it back, as the CM does for its listeners.
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
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "util/fault.h"
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

/* Liveness is asked of the kernel at most this often per peer. */
#define SRDMA_PEER_CHECK_NS 1000000ull		/* 1 ms */
/* Unreferenced live peers kept mapped (LRU) for reuse. */
#define SRDMA_PEER_IDLE_MAX 8u

/* The spare fd that lets a process out of fds still wake its peers. */
static pthread_mutex_t wake_spare_lock = PTHREAD_MUTEX_INITIALIZER;
static int wake_spare_fd = -1;		/* wake_spare_lock */

static pthread_once_t wake_spare_once = PTHREAD_ONCE_INIT;

/* fork(): a parent thread may have held the lock; the fd copy is ours. */
static void wake_spare_child(void)
{
	pthread_mutex_init(&wake_spare_lock, NULL);
}

static void wake_spare_init(void)
{
	pthread_atfork(NULL, NULL, wake_spare_child);
}

static void wake_spare_take(void)
{
	pthread_once(&wake_spare_once, wake_spare_init);
	pthread_mutex_lock(&wake_spare_lock);
	if (wake_spare_fd < 0)
		wake_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_mutex_unlock(&wake_spare_lock);
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
	/* Relaxed: a stale false only delays noticing by one retry. */
	if (atomic_load_explicit(&p->dead, memory_order_relaxed))
		return false;
	/* Its segment shrank under us (shm_guard.c): as good as dead. */
	if (srdma_shm_poisoned(p->seg))
		return false;
	/* A closed segment has its magic cleared: pairs with the release
	 * store in srdma_host_detach(). */
	if (__atomic_load_n(&p->seg->magic, __ATOMIC_ACQUIRE) !=
	    SRDMA_SEG_MAGIC)
		return false;
	e = &ctx->host.reg.ent[p->reg_index];
	return atomic_load_explicit(&e->state, memory_order_acquire) ==
	       SRDMA_REG_LIVE && e->pid == p->pid &&
	       e->start_time == p->start;
}

/*
 * The owner's life marker no longer says it exists (life.c): the holder's
 * tid gave way to FUTEX_OWNER_DIED (exit, exec) or to 0 (closed). The
 * kernel marks it before the process can be reaped, so while it reads
 * unchanged the pid names the owner. One load; acquire, so that what we
 * do next is not done before it.
 */
static bool life_lost(const struct srdma_peer *p)
{
	uint32_t w = (uint32_t)__atomic_load_n(p->life, __ATOMIC_ACQUIRE);

	return (w & ~(uint32_t)FUTEX_WAITERS) != p->life_tid;
}

/* The owner has exited (a zombie counts: it will never answer). */
static bool proc_exited(const struct srdma_peer *p)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };

	if (p->life)
		return life_lost(p);
	if (p->pidfd < 0)
		return !srdma_proc_alive(p->pid, p->start);
	/* A pidfd polls readable once its process has exited. */
	return poll(&pfd, 1, 0) == 1;
}

ssize_t srdma_peer_vm_rw(struct srdma_peer *p, const struct iovec *liov,
			 unsigned long nl, const struct iovec *riov,
			 unsigned long nr, bool to_peer)
{
	ssize_t got;

	/* Fault builds: a test kills the owner here and gives its pid to
	 * another process (tests/func/test_peer_death.c). */
	if (SRDMA_FAULT(PEER_COPY))
		SRDMA_FAULT_HOOK(PEER_COPY);
	/* A write must not start once the owner is gone: the pid may then
	 * name another process, which the copy would write into. */
	if (to_peer) {
		if (proc_exited(p))
			goto gone;
		got = process_vm_writev(p->pid, liov, nl, riov, nr, 0);
		return got < 0 ? -errno : got;
	}
	/* A read is judged after the copy: if the owner still exists now,
	 * it existed during the copy, so the pid named it throughout. */
	got = process_vm_readv(p->pid, liov, nl, riov, nr, 0);
	if (got < 0)
		got = -errno;
	if (proc_exited(p))
		goto gone;
	return got;

gone:
	srdma_dbg("peer lid %u (pid %d) has exited: no copy %s it",
		  p->lid, (int)p->pid, to_peer ? "into" : "out of");
	atomic_store_explicit(&p->dead, true, memory_order_relaxed);
	return -ESRCH;
}

bool srdma_peer_gone(struct srdma_context *ctx, struct srdma_peer *p)
{
	uint64_t now, next;

	if (p->self)
		return false;
	if (!srdma_peer_alive(ctx, p))
		return true;
	/* With a marker the kernel's word is one load: no rate needed. */
	if (p->life) {
		if (!life_lost(p))
			return false;
		goto gone;
	}
	now = srdma_now_ns();
	next = atomic_load_explicit(&p->next_check_ns, memory_order_relaxed);
	/* One caller per period asks the kernel; relaxed: only a rate. */
	if (now < next ||
	    !atomic_compare_exchange_strong_explicit(&p->next_check_ns, &next,
						     now + SRDMA_PEER_CHECK_NS,
						     memory_order_relaxed,
						     memory_order_relaxed))
		return false;
	if (!proc_exited(p))
		return false;
gone:
	srdma_dbg("peer lid %u (pid %d) has exited", p->lid, (int)p->pid);
	atomic_store_explicit(&p->dead, true, memory_order_relaxed);
	return true;
}

static int pidfd_open_pid(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static struct srdma_peer *peer_map(struct srdma_context *ctx, uint32_t lid)
{
	struct srdma_reg_entry *e = &ctx->host.reg.ent[lid - 1];
	struct srdma_peer_seg ps;
	struct srdma_peer *p;
	uint32_t life_tid;
	char name[48];
	int *life;
	int pidfd;
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
	/* Open the pidfd first: the start time checked after it proves it
	 * names the owner, not a process that recycled its pid. */
	pidfd = pidfd_open_pid(pid);
	if (pidfd < 0)
		srdma_dbg("pidfd_open(%d): %s; liveness through /proc",
			  (int)pid, strerror(errno));
	if (!srdma_proc_alive(pid, start))
		goto fail;
	{
		char want[sizeof(name)];

		snprintf(want, sizeof(want), "ctx.%u.%d", lid, (int)pid);
		if (strcmp(name, want))
			goto fail;
	}
	if (srdma_peer_seg_map(ctx->host.dirfd, name, &ps))
		goto fail;
	if (ps.seg->owner_pid != pid || ps.seg->lid != lid)
		goto fail_unmap;
	life = NULL;
	life_tid = 0;
	if (ps.seg->life_off == SRDMA_SEG_LIFE_OFF) {
		/* Checked after the start time: the holder is a thread of
		 * the owner, or the marker already says it is gone. */
		pthread_mutex_t *m = (pthread_mutex_t *)(void *)
			((char *)ps.seg + SRDMA_SEG_LIFE_OFF);

		life = &m->__data.__lock;
		life_tid = (uint32_t)__atomic_load_n(life, __ATOMIC_ACQUIRE) &
			   ~(uint32_t)FUTEX_WAITERS;
		if (!life_tid || (life_tid & FUTEX_OWNER_DIED)) {
			srdma_dbg("peer lid %u (pid %d): its life marker says "
				  "it is gone", lid, (int)pid);
			goto fail_unmap;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		goto fail_unmap;
	p->seg = ps.seg;
	p->seg_size = ps.size;
	p->pid = pid;
	p->start = start;
	p->pidfd = pidfd;
	p->life = life;
	p->life_tid = life_tid;
	p->lid = lid;
	p->reg_index = (int)lid - 1;
	peer_init_common(p);
	return p;

fail_unmap:
	srdma_peer_seg_unmap(&ps);
fail:
	if (pidfd >= 0)
		close(pidfd);
	return NULL;
}

static struct srdma_peer *peer_self(struct srdma_context *ctx)
{
	struct srdma_peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->seg = ctx->host.seg;
	p->seg_size = ctx->host.seg_size;
	p->pid = ctx->host.pid;
	p->start = ctx->host.start_time;
	p->pidfd = -1;
	p->lid = ctx->host.lid;
	p->reg_index = ctx->host.reg_index;
	p->self = true;
	peer_init_common(p);
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
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (!p->self) {
		struct srdma_peer_seg ps = { p->seg, p->seg_size };

		srdma_peer_seg_unmap(&ps);
	}
	pthread_mutex_destroy(&p->fd_lock);
	free(p);
}

/* Idle LRU (ctx->lock): unreferenced, cached, believed alive. */
static void idle_del(struct srdma_context *ctx, struct srdma_peer *p)
{
	if (p->idle_prev)
		p->idle_prev->idle_next = p->idle_next;
	else
		ctx->peer_idle_head = p->idle_next;
	if (p->idle_next)
		p->idle_next->idle_prev = p->idle_prev;
	else
		ctx->peer_idle_tail = p->idle_prev;
	p->idle_prev = p->idle_next = NULL;
	ctx->n_peer_idle--;
}

static void idle_add(struct srdma_context *ctx, struct srdma_peer *p)
{
	p->idle_next = NULL;
	p->idle_prev = ctx->peer_idle_tail;
	if (ctx->peer_idle_tail)
		ctx->peer_idle_tail->idle_next = p;
	else
		ctx->peer_idle_head = p;
	ctx->peer_idle_tail = p;
	ctx->n_peer_idle++;
}

/* Take @p out of the cache (ctx->lock); the caller frees it or keeps it
 * on the retired list while references remain. */
static void uncache(struct srdma_context *ctx, struct srdma_peer *p)
{
	atomic_store_explicit(&ctx->peers[p->lid], NULL,
			      memory_order_relaxed);
	p->cached = false;
}

/* Retire the cached @p whose owner is gone (ctx->lock). */
static void retire(struct srdma_context *ctx, struct srdma_peer *p)
{
	uncache(ctx, p);
	if (!p->ref) {
		idle_del(ctx, p);
		peer_free(p);
		return;
	}
	p->next_dead = ctx->dead_peers;
	ctx->dead_peers = p;
}

/* Release idle peers whose owner left, and the oldest beyond the cap. */
static void idle_sweep(struct srdma_context *ctx)
{
	struct srdma_peer *p, *next;

	for (p = ctx->peer_idle_head; p; p = next) {
		next = p->idle_next;
		if (srdma_peer_gone(ctx, p))
			retire(ctx, p);
	}
	while (ctx->n_peer_idle > SRDMA_PEER_IDLE_MAX)
		retire(ctx, ctx->peer_idle_head);
}

struct srdma_peer *srdma_peer_get(struct srdma_context *ctx, uint32_t lid)
{
	struct srdma_peer *p;

	if (!lid || lid > SRDMA_REG_ENTRIES)
		return NULL;
	pthread_mutex_lock(&ctx->lock);
	p = atomic_load_explicit(&ctx->peers[lid], memory_order_relaxed);
	if (p && !srdma_peer_alive(ctx, p)) {
		retire(ctx, p);
		p = NULL;
	}
	if (!p) {
		idle_sweep(ctx);
		if (lid != ctx->host.lid)
			wake_spare_take();
		p = lid == ctx->host.lid ? peer_self(ctx) : peer_map(ctx, lid);
		if (p) {
			p->cached = true;
			atomic_store_explicit(&ctx->peers[lid], p,
					      memory_order_relaxed);
		}
	} else if (!p->ref) {
		idle_del(ctx, p);
	}
	if (p)
		p->ref++;
	pthread_mutex_unlock(&ctx->lock);
	return p;
}

void srdma_peer_put(struct srdma_context *ctx, struct srdma_peer *p)
{
	struct srdma_peer **pp;

	if (!p)
		return;
	pthread_mutex_lock(&ctx->lock);
	if (--p->ref)
		goto out;
	if (p->cached) {
		if (srdma_peer_alive(ctx, p)) {
			idle_add(ctx, p);
			idle_sweep(ctx);
		} else {
			uncache(ctx, p);
			peer_free(p);
		}
		goto out;
	}
	/* Retired while referenced: its last user just left. */
	for (pp = &ctx->dead_peers; *pp; pp = &(*pp)->next_dead) {
		if (*pp == p) {
			*pp = p->next_dead;
			break;
		}
	}
	peer_free(p);
out:
	pthread_mutex_unlock(&ctx->lock);
}

void srdma_peer_fini(struct srdma_context *ctx)
{
	struct srdma_peer *p;
	uint32_t i;

	/* Close: every QP is gone, so no reference is used any more. */
	for (i = 0; i <= SRDMA_REG_ENTRIES; i++) {
		p = atomic_load(&ctx->peers[i]);
		if (p)
			peer_free(p);
		atomic_store(&ctx->peers[i], NULL);
	}
	ctx->peer_idle_head = ctx->peer_idle_tail = NULL;
	ctx->n_peer_idle = 0;
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

/* Open the peer's FIFO: the fd, or -errno. */
static int fifo_open_peer(struct srdma_context *ctx, struct srdma_peer *p,
			  const char *kind, uint32_t num)
{
	char name[64];
	struct stat st;
	int fd;

	srdma_fifo_path(ctx, name, sizeof(name), p->lid, p->pid, kind, num);
	fd = openat(ctx->host.dirfd, name,
		    O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode)) {
		close(fd);	/* not a FIFO: nobody to wake */
		return -ENOENT;
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

/*
 * Open the peer's FIFO for one wake-up; on running out of fds, through
 * the spare fd. Requires p->fd_lock. Return the fd to cache, or -1 (the
 * wake-up was done without one, or nobody is there to wake).
 */
static int fifo_wake_open(struct srdma_context *ctx, struct srdma_peer *p,
			  const char *kind, uint32_t num)
{
	int fd = fifo_open_peer(ctx, p, kind, num);

	if (fd >= 0 || (fd != -EMFILE && fd != -ENFILE))
		return fd < 0 ? -1 : fd;
	pthread_mutex_lock(&wake_spare_lock);
	if (wake_spare_fd >= 0) {
		close(wake_spare_fd);
		fd = fifo_open_peer(ctx, p, kind, num);
		if (fd >= 0) {
			wake(fd);
			close(fd);
		}
		/* Another thread may have taken the freed slot: then the
		 * spare is lost until fds free up (wake_spare_take). */
		wake_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&wake_spare_lock);
	if (fd < 0)
		srdma_warn("out of file descriptors: cannot wake lid %u (%s)",
			   p->lid, kind);
	return -1;
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
			p->chan_fd[chan] = fifo_wake_open(ctx, p, "chan", chan);
		fd = p->chan_fd[chan];
	}
	wake(fd);
	pthread_mutex_unlock(&p->fd_lock);
}

void srdma_peer_wake_async(struct srdma_context *ctx, struct srdma_peer *p)
{
	pthread_mutex_lock(&p->fd_lock);
	if (p->async_fd < 0)
		p->async_fd = fifo_wake_open(ctx, p, "async", 0);
	wake(p->async_fd);
	pthread_mutex_unlock(&p->fd_lock);
}

/* Initialise a new "atomics" file, or check an existing one's layout
 * (srdma_host_file_map(), under its flock). */
static bool atomics_check(void *map, void *arg)
{
	struct srdma_atomic_file *f = map;
	uint32_t i;

	(void)arg;
	if (f->magic != SRDMA_ATOMIC_MAGIC) {
		for (i = 0; i < SRDMA_ATOMIC_LOCKS; i++)
			srdma_shm_mutex_init(&f->lock[i]);
		f->nlocks = SRDMA_ATOMIC_LOCKS;
		__atomic_store_n(&f->magic, SRDMA_ATOMIC_MAGIC,
				 __ATOMIC_RELEASE);
		return true;
	}
	return f->nlocks == SRDMA_ATOMIC_LOCKS;
}

/* Map (creating and initialising under flock if needed) "atomics". */
static struct srdma_atomic_file *atomics_map(struct srdma_context *ctx)
{
	return srdma_host_file_map(ctx->host.dirfd, "atomics",
				   sizeof(struct srdma_atomic_file), true,
				   atomics_check, NULL);
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
