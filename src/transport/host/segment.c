// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * segment.c - a context's control segment: creation at open, removal at
 * close, mapping other contexts' segments, and clearing in-flight marks
 * left by initiators that died mid-access.
 *
 * The segment is a sparse tmpfs file (SRDMA_DIR/ctx.<lid>.<pid>, 0600):
 * header, access records, then the key table. Only pages of key slots that
 * were ever used consume memory. The owner writes key entries (seqlock,
 * key_table.c); any process of the user may map it to validate keys and to
 * increment/decrement in-flight counts. Layout: shm_layout.h.
 *
 * Anyone of the user may also scribble over it or truncate it: a peer maps
 * it only at its exact constant size, checks every header field against
 * the layout constants once and from then on uses the constants; the
 * mapping is guarded against truncation (shm_guard.c). Files are reached
 * only through the context's directory fd, never following a symlink.
 * Design: docs/design/host-segment.md ("Hostile shared state").
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "transport/host/host.h"
#include "transport/net/gid.h"
#include "util/log.h"

static int claim_entry(struct srdma_host_ctx *h, const char *dev_name)
{
	struct srdma_registry *r = &h->reg;
	unsigned int i, start;
	int ret;

	ret = srdma_registry_lock(r, true);
	if (ret)
		return ret;
	srdma_registry_reap(r, h->dirfd);
	/* Start at a pid-derived entry so concurrent openers spread out
	 * and LIDs are not handed out in a guessable order from 1 (the PID
	 * namespace mixed in: every container's first process is pid 1). */
	start = ((unsigned int)h->pid + h->ns_pid * 2654435761u) %
		SRDMA_REG_ENTRIES;
	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		unsigned int idx = (start + i) % SRDMA_REG_ENTRIES;
		struct srdma_reg_entry *e = &r->ent[idx];

		if (atomic_load_explicit(&e->state, memory_order_acquire) !=
		    SRDMA_REG_FREE)
			continue;
		/* With an Ethernet port the LID (QPN >> SRDMA_QPN_SHIFT)
		 * names the context on this namespace's UDP port 4791:
		 * it must be unique there, also against contexts of other
		 * registries (another SRDMA_DIR, /dev/shm or user). */
		if (srdma_link_is_eth()) {
			int fd = srdma_lid_lock(idx + 1);

			if (fd == -EADDRINUSE) {
				srdma_dbg("lid %u: taken in this network "
					  "namespace (another registry)",
					  idx + 1);
				continue;
			}
			/* Other errors (no unix sockets?): as before. */
			h->lid_fd = fd < 0 ? -1 : fd;
		}
		e->pid = h->pid;
		e->start_time = h->start_time;
		e->lid = idx + 1;
		e->uid = (uint32_t)getuid();
		snprintf(e->seg_name, sizeof(e->seg_name), "ctx.%u.%d",
			 idx + 1, (int)h->pid);
		snprintf(e->dev_name, sizeof(e->dev_name), "%s", dev_name);
		e->open_time = (uint64_t)time(NULL);
		e->ns_net = h->ns_net;
		e->ns_pid = h->ns_pid;
		atomic_store_explicit(&e->reach, h->reach,
				      memory_order_relaxed);
		e->reserved32 = 0;
		/* Taken now, under the lock: no other opener can claim it,
		 * and a reaper frees it if we die before publishing. */
		atomic_store_explicit(&e->state, SRDMA_REG_CLAIMED,
				      memory_order_release);
		h->reg_index = (int)idx;
		h->lid = idx + 1;
		memcpy(h->seg_name, e->seg_name, sizeof(h->seg_name));
		srdma_registry_unlock(r);
		return 0;
	}
	srdma_registry_unlock(r);
	return -ENOSPC;
}

static void publish_entry(struct srdma_host_ctx *h, uint32_t state)
{
	struct srdma_reg_entry *e = &h->reg.ent[h->reg_index];

	srdma_registry_lock(&h->reg, true);
	/* Only while the entry is still ours: after the registry was wiped
	 * and the LID handed to someone else, it is theirs. */
	if (e->pid == h->pid && e->start_time == h->start_time)
		/* Fields were written in claim_entry(); readers that see
		 * LIVE see them. Pairs with the acquire loads of e->state. */
		atomic_store_explicit(&e->state, state, memory_order_release);
	srdma_registry_unlock(&h->reg);
}

static pthread_mutex_t *seg_life(struct srdma_seg_hdr *seg)
{
	return (pthread_mutex_t *)(void *)((char *)seg + SRDMA_SEG_LIFE_OFF);
}

int srdma_host_attach(struct srdma_host_ctx *h, const char *dev_name)
{
	size_t size = SRDMA_SEG_SIZE;
	void *map;
	int ret;

	h->seg_fd = -1;
	h->reg.fd = -1;
	h->dirfd = -1;
	h->lid_fd = -1;
	h->pid = getpid();
	h->start_time = srdma_proc_start_time(h->pid);
	srdma_ns_self(&h->ns_net, &h->ns_pid);
	{
		const char *why;

		h->reach = srdma_cma_self_ok(&why) ? SRDMA_REACH_CMA : 0;
		if (why)
			srdma_info("cross-memory attach to other processes "
				   "not possible (%s): their peers on this "
				   "host talk over the net transport", why);
	}
	ret = srdma_host_dir(h->dir, sizeof(h->dir), &h->dirfd);
	if (ret)
		return ret;
	ret = srdma_registry_open(h->dirfd, &h->reg);
	if (ret)
		goto err_close_dir;
	ret = claim_entry(h, dev_name);
	if (ret)
		goto err_close_reg;

	/* A leftover of a dead owner with our pid goes; never follow a
	 * link someone planted under our name. */
	unlinkat(h->dirfd, h->seg_name, 0);
	h->seg_fd = openat(h->dirfd, h->seg_name,
			   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			   0600);
	if (h->seg_fd < 0) {
		ret = -errno;
		goto err_free_entry;
	}
	srdma_host_fix_mode(h->seg_fd, 0600);	/* peers open it too */
	if (ftruncate(h->seg_fd, (off_t)size)) {
		ret = -errno;
		goto err_unlink;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, h->seg_fd,
		   0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_unlink;
	}
	srdma_shm_guard_add(map, size, -1);
	h->seg = map;
	h->seg_size = size;
	h->seg->version = SRDMA_SEG_VERSION;
	h->seg->hdr_size = sizeof(struct srdma_seg_hdr);
	h->seg->owner_pid = h->pid;
	h->seg->lid = h->lid;
	h->seg->owner_start = h->start_time;
	h->seg->seg_size = size;
	snprintf(h->seg->dev_name, sizeof(h->seg->dev_name), "%s", dev_name);
	h->seg->key_off = SRDMA_SEG_KEY_OFF;
	h->seg->key_slots = SRDMA_SEG_KEY_SLOTS;
	h->seg->key_entry_size = sizeof(struct srdma_shm_key);
	h->seg->acc_off = SRDMA_SEG_ACC_OFF;
	h->seg->cq_off = SRDMA_SEG_CQ_OFF;
	h->seg->cq_slots = SRDMA_SEG_CQ_SLOTS;
	h->seg->cq_entry_size = sizeof(struct srdma_shm_cq);
	h->seg->qp_off = SRDMA_SEG_QP_OFF;
	h->seg->qp_slots = SRDMA_SEG_QP_SLOTS;
	h->seg->qp_entry_size = sizeof(struct srdma_shm_qp);
	h->seg->srq_off = SRDMA_SEG_SRQ_OFF;
	h->seg->srq_slots = SRDMA_SEG_SRQ_SLOTS;
	h->seg->srq_entry_size = sizeof(struct srdma_shm_srq);
	h->seg->aq_off = SRDMA_SEG_AQ_OFF;
	h->seg->arena_off = SRDMA_SEG_ARENA_OFF;
	h->seg->arena_size = SRDMA_SEG_ARENA_SIZE;
	h->seg->rt_off = SRDMA_SEG_RT_OFF;
	h->seg->rt_size = sizeof(struct srdma_shm_rt);
	srdma_seg_rt(h->seg)->magic = SRDMA_RT_MAGIC;
	srdma_seg_rt(h->seg)->size = sizeof(struct srdma_shm_rt);
	ret = srdma_shm_mutex_init(&srdma_seg_aq(h->seg)->lock);
	if (ret)
		goto err_unmap;
	h->seg->acc_count = SRDMA_SEG_ACCESS_RECORDS;
	h->seg->acc_entry_size = sizeof(struct srdma_shm_access);
	/* Without a marker our initiators ask the kernel instead. */
	h->life_held = !srdma_life_hold(seg_life(h->seg));
	if (h->life_held)
		h->seg->life_off = SRDMA_SEG_LIFE_OFF;
	/* The key scramble parameters are set by the key table before the
	 * context is published; magic goes last. */
	return 0;

err_unmap:
	if (srdma_shm_guard_del(h->seg))
		munmap(h->seg, size);
	h->seg = NULL;
err_unlink:
	unlinkat(h->dirfd, h->seg_name, 0);
	close(h->seg_fd);
	h->seg_fd = -1;
err_free_entry:
	publish_entry(h, SRDMA_REG_FREE);
	srdma_lid_unlock(h->lid_fd);
	h->lid_fd = -1;
err_close_reg:
	srdma_registry_close(&h->reg);
err_close_dir:
	close(h->dirfd);
	h->dirfd = -1;
	return ret;
}

void srdma_host_publish(struct srdma_host_ctx *h)
{
	/* Pairs with the acquire load of magic in srdma_peer_seg_map(). */
	__atomic_store_n(&h->seg->magic, SRDMA_SEG_MAGIC, __ATOMIC_RELEASE);
	publish_entry(h, SRDMA_REG_LIVE);
}

void srdma_host_detach(struct srdma_host_ctx *h)
{
	struct stat a, b;

	if (!h->seg)
		return;
	/* A peer still mapping us must see we are gone even when this
	 * process reopens and gets our LID back (same pid and start time):
	 * clear the magic (pairs with the acquire load in
	 * srdma_peer_alive()). Then unpublish so no new peer maps us, then
	 * remove the file: ours only (the name may have been replaced
	 * meanwhile). */
	__atomic_store_n(&h->seg->magic, 0, __ATOMIC_RELEASE);
	publish_entry(h, SRDMA_REG_FREE);
	if (!fstatat(h->dirfd, h->seg_name, &a, AT_SYMLINK_NOFOLLOW) &&
	    !fstat(h->seg_fd, &b) && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino)
		unlinkat(h->dirfd, h->seg_name, 0);
	/* The marker leaves the life thread's robust list before its memory
	 * goes (if it cannot, the mapping stays: the list points into it). */
	if ((!h->life_held || h->pid != getpid() ||
	     !srdma_life_release(seg_life(h->seg))) &&
	    srdma_shm_guard_del(h->seg))
		munmap(h->seg, h->seg_size);
	close(h->seg_fd);
	h->seg = NULL;
	h->seg_fd = -1;
	srdma_registry_close(&h->reg);
	close(h->dirfd);
	h->dirfd = -1;
	srdma_lid_unlock(h->lid_fd);
	h->lid_fd = -1;
}

/* Every header field must be what this build writes (once, here). */
static bool seg_hdr_ok(const struct srdma_seg_hdr *s)
{
	return s->version == SRDMA_SEG_VERSION &&
	       s->hdr_size == sizeof(*s) &&
	       s->seg_size == SRDMA_SEG_SIZE &&
	       s->key_off == SRDMA_SEG_KEY_OFF &&
	       s->key_slots == SRDMA_SEG_KEY_SLOTS &&
	       s->key_entry_size == sizeof(struct srdma_shm_key) &&
	       s->acc_off == SRDMA_SEG_ACC_OFF &&
	       s->acc_count == SRDMA_SEG_ACCESS_RECORDS &&
	       s->acc_entry_size == sizeof(struct srdma_shm_access) &&
	       s->cq_off == SRDMA_SEG_CQ_OFF &&
	       s->cq_slots == SRDMA_SEG_CQ_SLOTS &&
	       s->cq_entry_size == sizeof(struct srdma_shm_cq) &&
	       s->qp_off == SRDMA_SEG_QP_OFF &&
	       s->qp_slots == SRDMA_SEG_QP_SLOTS &&
	       s->qp_entry_size == sizeof(struct srdma_shm_qp) &&
	       s->srq_off == SRDMA_SEG_SRQ_OFF &&
	       s->srq_slots == SRDMA_SEG_SRQ_SLOTS &&
	       s->srq_entry_size == sizeof(struct srdma_shm_srq) &&
	       s->aq_off == SRDMA_SEG_AQ_OFF &&
	       s->arena_off == SRDMA_SEG_ARENA_OFF &&
	       s->arena_size == SRDMA_SEG_ARENA_SIZE &&
	       s->rt_off == SRDMA_SEG_RT_OFF &&
	       s->rt_size == sizeof(struct srdma_shm_rt) &&
	       s->lid >= 1 && s->lid <= SRDMA_REG_ENTRIES &&
	       s->owner_pid > 0;
}

/*
 * The segment @name is damaged: wake its owner's async fd (one byte into
 * async.<lid>.<pid>, if that is a FIFO), so that it checks its segment
 * and reports IBV_EVENT_DEVICE_FATAL (srdma_host_seg_intact()).
 */
static void poke_owner(int dfd, const char *name)
{
	unsigned int lid;
	int pid, end = 0, fd;
	char fifo[64], b = 1;
	struct stat st;

	if (sscanf(name, "ctx.%u.%d%n", &lid, &pid, &end) != 2 ||
	    name[end] || pid <= 0)
		return;
	snprintf(fifo, sizeof(fifo), "async.%u.%d", lid, pid);
	fd = openat(dfd, fifo,
		    O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && S_ISFIFO(st.st_mode) && write(fd, &b, 1) < 0)
		srdma_dbg("%s: %s", fifo, strerror(errno));
	close(fd);
}

bool srdma_host_seg_intact(struct srdma_host_ctx *h)
{
	const struct srdma_seg_hdr *s = h->seg;
	struct stat st;

	if (srdma_shm_poisoned(h->seg) || fstat(h->seg_fd, &st) ||
	    (uint64_t)st.st_size != SRDMA_SEG_SIZE)
		return false;
	return __atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) ==
		       SRDMA_SEG_MAGIC &&
	       seg_hdr_ok(s) && s->owner_pid == h->pid && s->lid == h->lid &&
	       s->owner_start == h->start_time;
}

int srdma_peer_seg_map(int dfd, const char *seg_name,
		       struct srdma_peer_seg *p)
{
	size_t size = SRDMA_SEG_SIZE;
	struct srdma_seg_hdr *s;
	struct stat st;
	int fd, ret = 0;
	void *map;

	p->seg = NULL;
	if (!memchr(seg_name, 0, 48) || strchr(seg_name, '/') ||
	    strncmp(seg_name, "ctx.", 4))
		return -EINVAL;
	fd = openat(dfd, seg_name,
		    O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (uint64_t)st.st_size != size) {
		ret = -EPROTO;
		goto out;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	/* Guarded before the first access: it may shrink any time. A fork
	 * child does not inherit it: it is the parent's window on a peer. */
	srdma_shm_guard_add(map, size, -1);
	(void)madvise(map, size, MADV_DONTFORK);
	s = map;
	/* Validate once, before trusting anything (R8); from now on the
	 * accessors use the constants these fields were checked against. */
	if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != SRDMA_SEG_MAGIC ||
	    !seg_hdr_ok(s)) {
		if (srdma_shm_guard_del(map))
			munmap(map, size);
		ret = -EPROTO;
		goto out;
	}
	p->seg = s;
	p->size = size;
out:
	close(fd);
	if (ret == -EPROTO)
		poke_owner(dfd, seg_name);
	return ret;
}

void srdma_peer_seg_unmap(struct srdma_peer_seg *p)
{
	if (p->seg && srdma_shm_guard_del(p->seg))
		munmap(p->seg, p->size);
	p->seg = NULL;
}

int srdma_host_release_dead_holders(struct srdma_host_ctx *h, uint32_t slot)
{
	struct srdma_registry *r = &h->reg;
	uint64_t want = SRDMA_ACC_VALID |
			((uint64_t)(unsigned int)h->reg_index << 32) | slot;
	unsigned int i, j;
	int n = 0;

	if (srdma_registry_lock(r, false))
		return 0;
	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r->ent[i];
		struct srdma_peer_seg ps;

		if ((int)i == h->reg_index ||
		    atomic_load_explicit(&e->state, memory_order_acquire) !=
			    SRDMA_REG_LIVE ||
		    srdma_proc_alive(e->pid, e->start_time) ||
		    !srdma_reg_entry_name_ok(e, i))
			continue;
		if (srdma_peer_seg_map(h->dirfd, e->seg_name, &ps))
			continue;
		for (j = 0; j < SRDMA_SEG_ACCESS_RECORDS; j++) {
			struct srdma_shm_access *a =
				srdma_seg_access(ps.seg, j);
			uint64_t tag = want;

			if (a->target_pid != h->pid ||
			    a->target_start != h->start_time)
				continue;
			if (atomic_compare_exchange_strong(&a->tag, &tag, 0)) {
				atomic_fetch_sub(
					&srdma_seg_keys(h->seg)[slot].inflight,
					1);
				n++;
			}
		}
		srdma_peer_seg_unmap(&ps);
	}
	srdma_registry_unlock(r);
	if (n)
		srdma_info("slot %u: cleared %d mark(s) of dead initiators",
			   slot, n);
	return n;
}

int srdma_host_acc_reserve(struct srdma_host_ctx *h)
{
	uint64_t busy = atomic_load_explicit(&h->acc_busy,
					     memory_order_relaxed);

	for (;;) {
		int idx;

		if (busy == UINT64_MAX)
			return -EAGAIN;
		idx = __builtin_ctzll(~busy);
		if (atomic_compare_exchange_weak_explicit(
			    &h->acc_busy, &busy, busy | (1ull << idx),
			    memory_order_acquire, memory_order_relaxed))
			return idx;
	}
}

void srdma_host_acc_release(struct srdma_host_ctx *h, int idx)
{
	atomic_fetch_and_explicit(&h->acc_busy, ~(1ull << idx),
				  memory_order_release);
}

int srdma_shm_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int ret;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	ret = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -ret;
}

/*
 * A robust mutex whose lock word names a thread that does not exist can
 * never be released: its owner's robust list (which the kernel walks at
 * thread exit) never had it, because the word was written by someone
 * else — garbage from another process of the user, or a list whose
 * pointers in shared memory were damaged. Do what the kernel does for a
 * dead owner: keep the waiters bit, set OWNER_DIED, clear the TID and
 * wake a waiter, so the next lock attempt gets EOWNERDEAD. A CAS, so a
 * word that changed meanwhile (a real owner) is left alone.
 */
static void shm_lock_reap_stale(pthread_mutex_t *m)
{
	_Atomic int *word = (_Atomic int *)(void *)&m->__data.__lock;
	int w = atomic_load_explicit(word, memory_order_relaxed);
	pid_t tid = (pid_t)(w & FUTEX_TID_MASK);

	if (!tid || (w & FUTEX_OWNER_DIED) || !kill(tid, 0) ||
	    errno != ESRCH)
		return;
	/* seq_cst: pairs with the acquiring CAS of whoever locks next. */
	if (atomic_compare_exchange_strong(word, &w,
					   (w & FUTEX_WAITERS) |
						   FUTEX_OWNER_DIED)) {
		srdma_warn("shared lock %p held by thread %d, which does not "
			   "exist: released", (void *)m, (int)tid);
		syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
}

#ifdef __SANITIZE_THREAD__
#include <sanitizer/tsan_interface.h>
/*
 * ThreadSanitizer's pthread_mutex_timedlock() interceptor records the
 * lock only when it returns 0, while its lock and trylock interceptors
 * also count EOWNERDEAD as acquired (which it is): without this, our
 * unlock after recovering a dead holder's lock is reported as "unlock of
 * an unlocked mutex". Tell it, in TSan builds only.
 */
static void tsan_note_owner_dead(pthread_mutex_t *m)
{
	__tsan_mutex_pre_lock(m, __tsan_mutex_try_lock);
	__tsan_mutex_post_lock(m, __tsan_mutex_try_lock, 0);
}
#else
static inline void tsan_note_owner_dead(pthread_mutex_t *m)
{
	(void)m;
}
#endif

bool srdma_shm_lock(pthread_mutex_t *m)
{
	struct timespec ts;
	int ret;

	/*
	 * Timed, so that a waiter whose lock vanished under it (the file
	 * was truncated while it slept in the kernel) wakes up, touches the
	 * page, gets it poisoned (shm_guard.c) and goes on; and so that a
	 * lock "held" by a thread that does not exist is noticed.
	 */
	ret = pthread_mutex_trylock(m);	/* uncontended: no clock read */
	while (ret == EBUSY || ret == ETIMEDOUT) {
		if (ret == ETIMEDOUT)
			shm_lock_reap_stale(m);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		ret = pthread_mutex_timedlock(m, &ts);
		if (ret == EOWNERDEAD)
			tsan_note_owner_dead(m);
	}

	if (ret == EOWNERDEAD) {
		/* The holder died inside its section. Every section in the
		 * segment publishes its result with one final store, so the
		 * protected state is consistent; the caller may repair more. */
		pthread_mutex_consistent(m);
		srdma_dbg("shared lock %p: previous holder died", (void *)m);
		return true;
	}
	if (ret)
		srdma_err("shared lock %p: %s", (void *)m, strerror(ret));
	return false;
}

void srdma_shm_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}
