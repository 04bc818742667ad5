/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * host.h - the host transport's view of host-wide state: the registry of
 * live contexts and the per-context control segments (shm_layout.h).
 *
 * A context attaches once (srdma_host_attach) at ibv_open_device: it claims
 * a registry entry, which fixes its LID and QPN range, and creates its
 * segment. Other processes map that segment read-write to validate keys
 * and mark accesses in flight. Nothing here touches application memory.
 */
#ifndef SRDMA_TRANSPORT_HOST_HOST_H
#define SRDMA_TRANSPORT_HOST_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>

#include "transport/host/shm_layout.h"

struct srdma_registry {
	int fd;				/* registry file, O_RDWR */
	struct srdma_reg_hdr *hdr;	/* mapping; immutable after open */
	struct srdma_reg_entry *ent;	/* hdr + sizeof(hdr): a constant,
					 * never entries_off from the file */
	size_t map_len;			/* SRDMA_REG_SIZE */
};

struct srdma_host_ctx {
	struct srdma_registry reg;	/* immutable after attach */
	int reg_index;			/* immutable; LID = reg_index + 1 */
	uint32_t lid;			/* immutable */
	int seg_fd;			/* immutable */
	struct srdma_seg_hdr *seg;	/* immutable mapping */
	size_t seg_size;		/* immutable */
	pid_t pid;			/* immutable: owner at attach time */
	uint64_t start_time;		/* immutable */
	char seg_name[48];		/* immutable */
	char dir[256];			/* immutable: SRDMA_DIR resolved (for
					 * messages; files go through dirfd) */
	int dirfd;			/* immutable: the checked directory */
	_Atomic uint64_t acc_busy;	/* bitmap of access records in use */
	int lid_fd;			/* immutable: srdma_lid_lock()'s socket,
					 * -1 without one */
	uint32_t ns_net, ns_pid;	/* immutable: srdma_ns_self() at attach */
	uint32_t reach;			/* immutable: SRDMA_REACH_* at attach */
	bool life_held;			/* immutable: our life thread holds
					 * the segment's life marker */
};

/* ---- locality (locality.c): may two contexts use the host transport? */

/**
 * srdma_ns_self() - the inodes of the calling process's network (@net) and
 * PID (@pid) namespaces, 0 where /proc does not tell. Context: any.
 */
void srdma_ns_self(uint32_t *net, uint32_t *pid);

/**
 * srdma_cma_self_ok() - may this process attach the memory of other
 * processes of its user, and they its own, as far as it can tell: Yama's
 * ptrace_scope is 0 (or absent), or 1 or 2 with CAP_SYS_PTRACE, and
 * process_vm_readv on itself is not refused. Never widens the rights
 * (no PR_SET_PTRACER). @why: receives the reason when false, else NULL.
 * Context: any; reads /proc, one system call.
 */
bool srdma_cma_self_ok(const char **why);

/**
 * srdma_cma_self_ok_scope() - srdma_cma_self_ok() with Yama's ptrace_scope
 * given (@scope; 0 when Yama is absent), for the tests.
 */
bool srdma_cma_self_ok_scope(int scope, const char **why);

/**
 * srdma_cma_probe() - would the kernel let us attach process @pid (our PID
 * namespace)? Reads one byte at address 0 of it: the permission checks
 * come before the access. Return: 0 (allowed), -EPERM (ptrace refused:
 * Yama, LSM, seccomp, another user), -ESRCH (no such process), or another
 * -errno. Context: any; one system call.
 */
int srdma_cma_probe(pid_t pid);

/**
 * srdma_lid_lock() - claim @lid in this network namespace, across state
 * directories and users: binds the abstract unix socket "srdma-lid.<lid>".
 * Return: the socket (keep it open while the LID is used; release it with
 * srdma_lid_unlock(); the process's death releases it too, and a fork
 * child does not keep it) or -EADDRINUSE when another context of
 * the namespace holds the LID, or another -errno. Context: any.
 */
int srdma_lid_lock(uint32_t lid);

/**
 * srdma_lid_unlock() - release a LID claimed with srdma_lid_lock() (@fd:
 * its socket; ignored when negative or already closed by a fork child).
 * Context: any.
 */
void srdma_lid_unlock(int fd);

/**
 * srdma_lid_held() - is @lid claimed (srdma_lid_lock()) by a live context
 * of this network namespace, whatever its PID namespace, user or state
 * directory? Context: any; two system calls and a socket.
 */
bool srdma_lid_held(uint32_t lid);

/* A mapping of some context's segment (possibly our own, possibly dead). */
struct srdma_peer_seg {
	struct srdma_seg_hdr *seg;
	size_t size;
};

/**
 * srdma_host_dir() - resolve the state directory and open it.
 * @buf: receives the path; @len: its size
 * @dfd: receives an O_DIRECTORY fd of it (close it when done)
 *
 * SRDMA_DIR if set, else the first usable of /dev/shm/srdma-<euid>,
 * $XDG_RUNTIME_DIR/srdma, /run/user/<euid>/srdma and (root only)
 * /run/srdma-0: the same ordered list in every process of the user, so
 * they agree without talking. A directory is created 0700 if missing and
 * usable only if it is a real directory (not a symlink), owned by our
 * euid, and mode 0700 exactly. An explicit SRDMA_DIR that fails the check
 * is an error (logged); a default one that fails is skipped (logged at
 * info level). Return: 0 or -errno (-EACCES, -ELOOP, -ENOTDIR, ...).
 */
int srdma_host_dir(char *buf, size_t len, int *dfd);

/**
 * srdma_host_dir_check() - why the directory @path, opened as @fd, may not
 * be used, or NULL if it may (see srdma_host_dir()). Pure but for fstat.
 */
const char *srdma_host_dir_check(int fd);

/**
 * srdma_host_fix_mode() - give the file or directory @fd, if it is ours,
 * exactly @mode: for what we just created, whatever the process umask
 * masked (umask 0277 would leave a registry 0400 that no later process
 * of the user can open). Advisory: a failure is logged at debug level.
 */
void srdma_host_fix_mode(int fd, mode_t mode);

/**
 * srdma_host_file_map() - map the host-wide file @name of the state
 * directory @dirfd (the multicast table, the atomics locks): opened
 * without following a symlink, created 0600 (whatever the umask) if
 * @create, sized to @len, mapped shared, guarded (srdma_shm_guard_add())
 * and kept out of fork children (MADV_DONTFORK, as the segments).
 * @dirfd:  the state directory (SRDMA_DIR)
 * @name:   the file's name in it
 * @len:    its size: the layout's struct
 * @create: create the file if it does not exist
 * @check:  called with the mapping under an exclusive flock of the file,
 *          so that one process initialises a new (zeroed) file while the
 *          others wait: initialise it, or check that an existing one has
 *          this build's layout. Return true to keep the mapping, false to
 *          drop it (it is then unmapped and NULL returned).
 * @arg:    passed to @check
 *
 * Return: the mapping, or NULL (the file cannot be opened, is not a
 * regular file, cannot be sized or mapped, or @check refused it).
 */
void *srdma_host_file_map(int dirfd, const char *name, size_t len,
			  bool create, bool (*check)(void *map, void *arg),
			  void *arg);

/**
 * srdma_registry_open() - map (creating or repairing if needed) the host
 * registry under the directory @dfd.
 * Return: 0 or -errno (-EPROTO: a registry of another softrdma version).
 * A short file is extended and a damaged header rewritten (both logged);
 * entries are checked one by one where they are used.
 * Release with srdma_registry_close().
 */
int srdma_registry_open(int dfd, struct srdma_registry *r);
void srdma_registry_close(struct srdma_registry *r);

/**
 * srdma_registry_reap() - free registry entries whose owner is dead,
 * releasing the in-flight marks its access records still hold and removing
 * its segment file. Entries of another PID namespace (srdma_reg_entry
 * .ns_pid) are left to that namespace's openers.
 * Requires: the registry flock held exclusively (srdma_registry_lock()).
 * Return: number of entries reaped.
 */
int srdma_registry_reap(struct srdma_registry *r, int dfd);

/**
 * srdma_reg_entry_name_ok() - true if entry @idx's seg_name is exactly
 * "ctx.<idx + 1>.<its pid>", NUL terminated: the only names ever taken
 * from the registry to open or unlink a file.
 */
bool srdma_reg_entry_name_ok(const struct srdma_reg_entry *e, unsigned int idx);
int srdma_registry_lock(struct srdma_registry *r, bool exclusive);
void srdma_registry_unlock(struct srdma_registry *r);

/**
 * srdma_proc_start_time() - start time of @pid in clock ticks since boot.
 * Return: the start time, or 0 if the process does not exist.
 */
uint64_t srdma_proc_start_time(pid_t pid);

/**
 * srdma_proc_alive() - true if @pid exists and started at @start_time (a
 * recycled pid is not mistaken for the old owner).
 */
bool srdma_proc_alive(pid_t pid, uint64_t start_time);

/**
 * srdma_life_hold() - make @m (in our segment) a robust process-shared
 * mutex and have this process's life thread lock it, so that the kernel
 * marks it FUTEX_OWNER_DIED when this process exits or execs (life.c).
 * Context: srdma_host_attach(); starts the life thread on first use.
 * Return: 0, or -errno (no marker: initiators then ask the kernel).
 */
int srdma_life_hold(pthread_mutex_t *m);
/**
 * srdma_life_release() - the life thread unlocks @m, taking it off its
 * robust list; only then may @m's memory be unmapped.
 * Return: 0, or -errno: @m must then stay mapped.
 */
int srdma_life_release(pthread_mutex_t *m);

struct srdma_peer;
struct iovec;
/**
 * srdma_peer_vm_rw() - move bytes between our @liov and the peer's @riov
 * (process_vm_writev when @to_peer, else process_vm_readv), never into or
 * out of a process that is not the peer's owner: the kernel's word (the
 * owner's life marker, one load; without one its pidfd or /proc) is asked
 * right before every write and right after every read, whose bytes are
 * then disowned if the owner has gone.
 * The remaining window (a write whose target dies, is reaped and has its
 * pid handed out again between that check and the system call) is
 * docs/design/lifetimes.md's "Pid reuse".
 * Context: any thread; @p referenced; not for our own context (p->self).
 * Return: bytes moved, -ESRCH if the owner is gone (marked dead), or the
 * system call's -errno.
 */
ssize_t srdma_peer_vm_rw(struct srdma_peer *p, const struct iovec *liov,
			 unsigned long nl, const struct iovec *riov,
			 unsigned long nr, bool to_peer);

/**
 * srdma_host_unlink_fifos() - remove the wake-up FIFOs (completion
 * channels, async fd) of the context @lid owned by @pid, and its device
 * memory files (dm.<lid>.<pid>.*, core/dm.c).
 */
void srdma_host_unlink_fifos(int dfd, uint32_t lid, pid_t pid);

/**
 * srdma_host_attach() - claim a registry entry and create this context's
 * segment (fixed layout: SRDMA_SEG_KEY_SLOTS key entries, which is also
 * the slot count every key table and every peer's key view must use,
 * since a key's slot depends on it).
 * @h: zeroed by the caller; filled on success
 * @dev_name: device name recorded for srdma status
 * Context: ibv_open_device; may block on the registry flock.
 * Return: 0, -ENOSPC when all LIDs are taken, or another -errno.
 */
int srdma_host_attach(struct srdma_host_ctx *h, const char *dev_name);

/**
 * srdma_host_publish() - make the attached segment visible to peers
 * (segment magic, then the registry entry's LIVE state).
 * Requires: the header, including the key scramble parameters, is complete.
 */
void srdma_host_publish(struct srdma_host_ctx *h);

/**
 * srdma_host_detach() - release the registry entry and delete the segment.
 * Requires: no access of ours is in flight anywhere.
 */
void srdma_host_detach(struct srdma_host_ctx *h);

/**
 * srdma_host_seg_intact() - true if our own segment still has its size
 * and header (not truncated, not overwritten). Slow: one fstat.
 * A peer that finds a segment malformed wakes its owner's async fd, whose
 * srdma_async_get() then asks this and reports IBV_EVENT_DEVICE_FATAL.
 */
bool srdma_host_seg_intact(struct srdma_host_ctx *h);

/**
 * srdma_peer_seg_map() - map the segment named @seg_name under the
 * directory @dfd (O_NOFOLLOW, a regular file of ours of exactly
 * SRDMA_SEG_SIZE bytes) and check every header field against this
 * build's layout, once. The mapping is guarded (srdma_shm_guard_add()).
 * Return: 0 or -errno (-EPROTO for a malformed or foreign-version segment).
 */
int srdma_peer_seg_map(int dfd, const char *seg_name,
		       struct srdma_peer_seg *p);
void srdma_peer_seg_unmap(struct srdma_peer_seg *p);

/*
 * ---- guarding shared mappings against truncation (shm_guard.c) ---------
 *
 * Any process of the user can shrink a file we map; touching a page past
 * the new end raises SIGBUS. Every shared mapping is registered here; our
 * SIGBUS handler replaces a registered mapping that faults with private
 * zero pages, marks it poisoned and lets the access go on. Callers notice
 * with srdma_shm_poisoned() (a peer is then treated as dead; our own
 * segment or registry makes the context report IBV_EVENT_DEVICE_FATAL).
 * Faults elsewhere go to the handler installed before ours.
 */

/**
 * srdma_shm_guard_add() - guard [@base, @base + @len); on poisoning, write
 * one byte to @wake_fd if it is >= 0. Installs the handler on first use.
 * Return: 0, or -ENOSPC when the table is full (the mapping is unguarded).
 */
int srdma_shm_guard_add(void *base, size_t len, int wake_fd);
/* Set the wake-up fd of the guarded mapping at @base. */
void srdma_shm_guard_wake(void *base, int wake_fd);
/**
 * srdma_shm_guard_del() - stop guarding @base.
 * Return: true if the caller may munmap it; false if it was poisoned (a
 * thread's robust-mutex list may point into it: it stays mapped, private).
 */
bool srdma_shm_guard_del(void *base);
/* True if the guarded mapping at @base was poisoned. Lock-free. */
bool srdma_shm_poisoned(const void *base);
/* Number of mappings poisoned so far in this process (for tests). */
unsigned int srdma_shm_poison_count(void);

/**
 * srdma_host_release_dead_holders() - drop the in-flight marks that dead
 * initiators hold on @slot of our own key table.
 * Context: called by a drain that waited too long; takes the registry
 * flock shared.
 * Return: number of marks released.
 */
int srdma_host_release_dead_holders(struct srdma_host_ctx *h, uint32_t slot);

/**
 * srdma_host_acc_reserve() / srdma_host_acc_release() - an access record of
 * this context for one in-flight access.
 * Return: record index, or -EAGAIN when all are busy (caller retries).
 */
int srdma_host_acc_reserve(struct srdma_host_ctx *h);
void srdma_host_acc_release(struct srdma_host_ctx *h, int idx);

/*
 * Accessors: offsets are this ABI's constants (shm_layout.h), never read
 * back from the header. Callers bound the index by the table's size.
 */
static inline struct srdma_shm_access *
srdma_seg_access(struct srdma_seg_hdr *s, unsigned int i)
{
	return (struct srdma_shm_access *)((char *)s + SRDMA_SEG_ACC_OFF) + i;
}

/**
 * srdma_shm_mutex_init() - make @m a process-shared robust mutex.
 * Return: 0 or -errno.
 */
int srdma_shm_mutex_init(pthread_mutex_t *m);
/**
 * srdma_shm_lock() - lock a shared mutex, recovering it when its holder
 * died. Return: true if the previous holder died inside its section.
 */
bool srdma_shm_lock(pthread_mutex_t *m);
void srdma_shm_unlock(pthread_mutex_t *m);

static inline struct srdma_shm_cq *srdma_seg_cq(struct srdma_seg_hdr *s,
						unsigned int i)
{
	return (struct srdma_shm_cq *)((char *)s + SRDMA_SEG_CQ_OFF) + i;
}

static inline struct srdma_shm_qp *srdma_seg_qp(struct srdma_seg_hdr *s,
						unsigned int i)
{
	return (struct srdma_shm_qp *)((char *)s + SRDMA_SEG_QP_OFF) + i;
}

static inline struct srdma_shm_srq *srdma_seg_srq(struct srdma_seg_hdr *s,
						  unsigned int i)
{
	return (struct srdma_shm_srq *)((char *)s + SRDMA_SEG_SRQ_OFF) + i;
}

static inline struct srdma_shm_aq *srdma_seg_aq(struct srdma_seg_hdr *s)
{
	return (struct srdma_shm_aq *)((char *)s + SRDMA_SEG_AQ_OFF);
}

static inline void *srdma_seg_ptr(struct srdma_seg_hdr *s, uint64_t off)
{
	return (char *)s + off;
}

/**
 * srdma_seg_ring() - [@off, @off + @len) of the ring arena, or NULL if it
 * does not lie inside it (@off and @len may be anything, e.g. read from
 * shared memory: no sum can wrap).
 */
static inline void *srdma_seg_ring(struct srdma_seg_hdr *s, uint64_t off,
				   uint64_t len)
{
	const uint64_t end = SRDMA_SEG_ARENA_OFF + SRDMA_SEG_ARENA_SIZE;

	if (off < SRDMA_SEG_ARENA_OFF || off > end || len > end - off)
		return NULL;
	return (char *)s + off;
}

/* The resource table (version 4), at its constant offset. */
static inline struct srdma_shm_rt *srdma_seg_rt(struct srdma_seg_hdr *s)
{
	return (struct srdma_shm_rt *)((char *)s + SRDMA_SEG_RT_OFF);
}

static inline struct srdma_shm_key *srdma_seg_keys(struct srdma_seg_hdr *s)
{
	return (struct srdma_shm_key *)((char *)s + SRDMA_SEG_KEY_OFF);
}

#endif
