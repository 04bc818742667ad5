// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * registry.c - the host registry: which softrdma contexts are alive, and
 * therefore which LIDs and QP-number ranges are taken.
 *
 * One file, SRDMA_DIR/registry, mapped shared by every process of the user.
 * Writers (attach, detach, reap) serialise with flock(LOCK_EX), which the
 * kernel drops when a holder dies, so a crash never wedges the registry.
 * Readers (srdma status, resolving a LID) are lock-free: an entry's fields
 * are written first and its state is published last with release order.
 * A dead owner is recognised by pid + process start time, so a recycled
 * pid never keeps a dead context alive. Not here: the segment contents
 * (segment.c) and anything about memory.
 *
 * Also here: resolving and checking the state directory (ours, 0700, not
 * a symlink; a squatted default falls back along a fixed list). The
 * registry's size and header are constants of its version, repaired
 * under the flock when damaged; entries are checked where they are used,
 * and a segment name from an entry is used only in its one legal form.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/host/host.h"
#include "util/log.h"

const char *srdma_host_dir_check(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return "cannot stat it";
	if (!S_ISDIR(st.st_mode))
		return "not a directory";
	if (st.st_uid != geteuid())
		return "owned by another user";
	if ((st.st_mode & 0777) != 0700)
		return "mode is not 0700";
	return NULL;
}

/*
 * Give a file we just created the mode we asked for: the process umask
 * may have masked owner bits (umask 0277 leaves 0400), and the next
 * process of the user could not open it. Only a file of ours; advisory.
 */
void srdma_host_fix_mode(int fd, mode_t mode)
{
	struct stat st;

	if (!fstat(fd, &st) && st.st_uid == geteuid() &&
	    (st.st_mode & 0777) != mode && fchmod(fd, mode))
		srdma_dbg("fchmod(%o): %s", (unsigned int)mode,
			  strerror(errno));
}

void *srdma_host_file_map(int dirfd, const char *name, size_t len,
			  bool create, bool (*check)(void *map, void *arg),
			  void *arg)
{
	void *map = MAP_FAILED;
	struct stat st;
	int fd;

	fd = openat(dirfd, name,
		    O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
			    (create ? O_CREAT : 0),
		    0600);
	if (fd < 0)
		return NULL;
	if (flock(fd, LOCK_EX))
		goto out;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		goto out_unlock;
	if (!st.st_size)	/* new: 0600 whatever the umask */
		srdma_host_fix_mode(fd, 0600);
	if ((size_t)st.st_size != len && ftruncate(fd, (off_t)len))
		goto out_unlock;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto out_unlock;
	srdma_shm_guard_add(map, len, -1);
	(void)madvise(map, len, MADV_DONTFORK);
	if (!check(map, arg)) {
		if (srdma_shm_guard_del(map))
			munmap(map, len);
		map = MAP_FAILED;
	}
out_unlock:
	flock(fd, LOCK_UN);
out:
	close(fd);
	return map == MAP_FAILED ? NULL : map;
}

/*
 * Create (0700) and open @path without following a symlink in its last
 * component, then check it. Return: the fd, or -errno with *@why set.
 */
static int dir_try(const char *path, const char **why)
{
	bool created = true;
	int fd, err;

	if (mkdir(path, 0700)) {
		if (errno != EEXIST) {
			err = errno;
			*why = strerror(err);
			return -err;
		}
		created = false;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		*why = err == ELOOP || err == ENOTDIR ?
			       "a symlink or not a directory" : strerror(err);
		return -err;
	}
	/* Ours only if we made it: never widen or narrow a directory
	 * found there (the check below judges that one). */
	if (created)
		srdma_host_fix_mode(fd, 0700);
	*why = srdma_host_dir_check(fd);
	if (*why) {
		close(fd);
		return -EACCES;
	}
	return fd;
}

int srdma_host_dir(char *buf, size_t len, int *dfd)
{
	const char *env = getenv("SRDMA_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	unsigned int uid = (unsigned int)geteuid();
	char cand[4][256], first_why[128] = "";
	const char *why = NULL;
	int i, n = 0, fd, ret = -EACCES;

	if (env && *env) {
		if (strlen(env) >= len)
			return -ENAMETOOLONG;
		fd = dir_try(env, &why);
		if (fd < 0) {
			srdma_err("SRDMA_DIR %s refused: %s", env, why);
			return fd;
		}
		snprintf(buf, len, "%s", env);
		*dfd = fd;
		return 0;
	}
	snprintf(cand[n++], sizeof(cand[0]), "/dev/shm/srdma-%u", uid);
	if (xdg && *xdg == '/' &&
	    snprintf(cand[n], sizeof(cand[0]), "%s/srdma", xdg) <
		    (int)sizeof(cand[0]))
		n++;
	snprintf(cand[n++], sizeof(cand[0]), "/run/user/%u/srdma", uid);
	if (!uid)
		snprintf(cand[n++], sizeof(cand[0]), "/run/srdma-0");
	for (i = 0; i < n; i++) {
		if (i && !strcmp(cand[i], cand[i - 1]))
			continue;
		if (strlen(cand[i]) >= len) {
			ret = -ENAMETOOLONG;
			continue;
		}
		fd = dir_try(cand[i], &why);
		if (fd >= 0) {
			if (i)
				srdma_info("state directory %s (%s: %s)",
					   cand[i], cand[0], first_why);
			snprintf(buf, len, "%s", cand[i]);
			*dfd = fd;
			return 0;
		}
		if (!i)
			snprintf(first_why, sizeof(first_why), "%s", why);
		if (fd != -ENOENT)	/* a missing parent is no news */
			srdma_info("state directory %s unusable: %s", cand[i],
				   why);
		if (!i)
			ret = fd;
	}
	srdma_err("no usable state directory: %s: %s; set SRDMA_DIR to a "
		  "private directory (mode 0700)", cand[0], first_why);
	return ret;
}

/* Start time of @pid, 0 if absent; *@state gets the stat state letter. */
static uint64_t proc_stat(pid_t pid, char *state)
{
	char path[64], buf[1024];
	unsigned long long start = 0;
	const char *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* comm may contain spaces and parentheses: fields restart after ')' */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* p[2] is field 3 (state); start time is field 22. */
	if (state)
		*state = p[1] && p[2] ? p[2] : '?';
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (sscanf(p, "%llu", &start) != 1)
		return 0;
	return start ? start : 1;
}

uint64_t srdma_proc_start_time(pid_t pid)
{
	return proc_stat(pid, NULL);
}

bool srdma_proc_alive(pid_t pid, uint64_t start_time)
{
	char state = '?';

	if (pid <= 0)
		return false;
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	if (proc_stat(pid, &state) != start_time)
		return false;
	/* A zombie (or dying) process will never release anything: where
	 * nobody reaps children quickly (containers) it can linger. */
	return state != 'Z' && state != 'X' && state != 'x';
}

int srdma_registry_lock(struct srdma_registry *r, bool exclusive)
{
	while (flock(r->fd, exclusive ? LOCK_EX : LOCK_SH))
		if (errno != EINTR)
			return -errno;
	return 0;
}

void srdma_registry_unlock(struct srdma_registry *r)
{
	flock(r->fd, LOCK_UN);
}

/* Write the header fields (constants of this version); magic last. */
static void reg_hdr_init(struct srdma_reg_hdr *h)
{
	h->version = SRDMA_REG_VERSION;
	h->hdr_size = sizeof(struct srdma_reg_hdr);
	h->nentries = SRDMA_REG_ENTRIES;
	h->entry_size = sizeof(struct srdma_reg_entry);
	h->entries_off = sizeof(struct srdma_reg_hdr);
	/* Publish: readers check magic first. Pairs with the acquire load
	 * in srdma_registry_open() of other openers. */
	__atomic_store_n(&h->magic, SRDMA_REG_MAGIC, __ATOMIC_RELEASE);
}

static bool reg_hdr_ok(const struct srdma_reg_hdr *h)
{
	return h->version == SRDMA_REG_VERSION &&
	       h->hdr_size == sizeof(struct srdma_reg_hdr) &&
	       h->nentries == SRDMA_REG_ENTRIES &&
	       h->entry_size == sizeof(struct srdma_reg_entry) &&
	       h->entries_off == sizeof(struct srdma_reg_hdr);
}

int srdma_registry_open(int dfd, struct srdma_registry *r)
{
	size_t len = SRDMA_REG_SIZE;
	struct srdma_reg_hdr *h;
	struct stat st;
	uint32_t magic;
	void *map;
	int ret;

	r->hdr = NULL;
	r->fd = openat(dfd, "registry",
		       O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		       0600);
	if (r->fd < 0)
		return -errno;
	ret = srdma_registry_lock(r, true);
	if (ret)
		goto err_close;
	if (fstat(r->fd, &st)) {
		ret = -errno;
		goto err_unlock;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		srdma_err("registry: not a regular file of ours");
		ret = -EPROTO;
		goto err_unlock;
	}
	if (!st.st_size)	/* new: 0600 whatever the umask */
		srdma_host_fix_mode(r->fd, 0600);
	if ((size_t)st.st_size != len) {
		/* New (0), or shortened/extended by someone: the size is a
		 * constant, and what lies past it is nobody's. */
		if (st.st_size)
			srdma_warn("registry: %lld bytes, want %zu: resized",
				   (long long)st.st_size, len);
		if (ftruncate(r->fd, (off_t)len)) {
			ret = -errno;
			goto err_unlock;
		}
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_unlock;
	}
	/* Guarded before the first access: someone may shrink it now. */
	srdma_shm_guard_add(map, len, -1);
	h = map;
	magic = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
	if (magic == SRDMA_REG_MAGIC && h->version != SRDMA_REG_VERSION) {
		srdma_err("registry: version %u, not %u: another softrdma "
			  "version uses this directory", h->version,
			  SRDMA_REG_VERSION);
		ret = -EPROTO;
		goto err_unmap;
	}
	if (magic != SRDMA_REG_MAGIC || !reg_hdr_ok(h)) {
		/* Every header field is a constant of this version. */
		if (magic)
			srdma_warn("registry: damaged header rewritten");
		reg_hdr_init(h);
	}
	r->hdr = h;
	r->map_len = len;
	r->ent = (struct srdma_reg_entry *)(h + 1);
	srdma_registry_unlock(r);
	return 0;

err_unmap:
	if (srdma_shm_guard_del(map))
		munmap(map, len);
err_unlock:
	srdma_registry_unlock(r);
err_close:
	close(r->fd);
	r->fd = -1;
	return ret;
}

void srdma_registry_close(struct srdma_registry *r)
{
	if (r->hdr && srdma_shm_guard_del(r->hdr))
		munmap(r->hdr, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	r->hdr = NULL;
	r->ent = NULL;
	r->fd = -1;
}

bool srdma_reg_entry_name_ok(const struct srdma_reg_entry *e, unsigned int idx)
{
	char want[sizeof(e->seg_name)];
	int n;

	n = snprintf(want, sizeof(want), "ctx.%u.%d", idx + 1, (int)e->pid);
	return e->pid > 0 && n > 0 && (size_t)n < sizeof(want) &&
	       !memcmp(e->seg_name, want, (size_t)n + 1);
}

/*
 * Drop every in-flight mark the dead context @dead_seg still holds on other
 * contexts' key tables. Requires: registry flock held.
 */
static void release_marks_of(struct srdma_registry *r, int dfd,
			     struct srdma_seg_hdr *dead_seg)
{
	unsigned int i;

	for (i = 0; i < SRDMA_SEG_ACCESS_RECORDS; i++) {
		struct srdma_shm_access *a = srdma_seg_access(dead_seg, i);
		uint64_t tag = atomic_load_explicit(&a->tag,
						    memory_order_acquire);
		struct srdma_reg_entry *te;
		struct srdma_peer_seg ps;
		uint32_t slot, ti;

		if (!(tag & SRDMA_ACC_VALID))
			continue;
		ti = (uint32_t)(tag >> 32) & 0x3ff;
		slot = (uint32_t)tag;
		if (ti >= SRDMA_REG_ENTRIES || slot >= SRDMA_SEG_KEY_SLOTS)
			continue;
		te = &r->ent[ti];
		if (atomic_load_explicit(&te->state, memory_order_acquire) !=
			    SRDMA_REG_LIVE ||
		    te->pid != a->target_pid ||
		    te->start_time != a->target_start ||
		    !srdma_reg_entry_name_ok(te, ti))
			continue;	/* target gone: nobody waits */
		if (srdma_peer_seg_map(dfd, te->seg_name, &ps))
			continue;
		/* Whoever clears the tag drops the mark, exactly once. */
		if (atomic_compare_exchange_strong(&a->tag, &tag, 0))
			atomic_fetch_sub(&srdma_seg_keys(ps.seg)[slot].inflight,
					 1);
		srdma_peer_seg_unmap(&ps);
	}
}

int srdma_registry_reap(struct srdma_registry *r, int dfd)
{
	unsigned int i;
	uint32_t my_netns, my_pidns;
	int n = 0;

	srdma_ns_self(&my_netns, &my_pidns);

	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r->ent[i];
		struct srdma_peer_seg ps;
		uint32_t st = atomic_load_explicit(&e->state,
						   memory_order_acquire);
		pid_t pid = e->pid;

		if (st == SRDMA_REG_FREE)
			continue;
		if (st != SRDMA_REG_LIVE && st != SRDMA_REG_CLAIMED) {
			srdma_warn("registry entry %u: bad state %u, freed", i,
				   st);
			atomic_store_explicit(&e->state, SRDMA_REG_FREE,
					      memory_order_release);
			continue;
		}
		/* The pid of a context of another PID namespace (a /dev/shm
		 * shared by containers) means nothing here: its own
		 * namespace's openers judge it. */
		if (e->ns_pid && my_pidns && e->ns_pid != my_pidns)
			continue;
		if (srdma_proc_alive(pid, e->start_time))
			continue;
		/* Only a well-formed name is opened or removed, and only
		 * inside our directory (the name has no '/'). */
		if (srdma_reg_entry_name_ok(e, i)) {
			if (!srdma_peer_seg_map(dfd, e->seg_name, &ps)) {
				release_marks_of(r, dfd, ps.seg);
				srdma_peer_seg_unmap(&ps);
			}
			unlinkat(dfd, e->seg_name, 0);
		} else {
			srdma_warn("registry entry %u: malformed segment name",
				   i);
		}
		if (pid > 0)
			srdma_host_unlink_fifos(dfd, i + 1, pid);
		srdma_info("reaped dead context lid %u pid %d", i + 1,
			   (int)pid);
		atomic_store_explicit(&e->state, SRDMA_REG_FREE,
				      memory_order_release);
		n++;
	}
	return n;
}

void srdma_host_unlink_fifos(int dfd, uint32_t lid, pid_t pid)
{
	char chan[64], async[64], dm[64];
	struct dirent *d;
	size_t clen, dlen;
	DIR *dp;
	int fd;

	snprintf(chan, sizeof(chan), "chan.%u.%d.", lid, (int)pid);
	snprintf(async, sizeof(async), "async.%u.%d", lid, (int)pid);
	/* and its device memory (core/dm.c) */
	snprintf(dm, sizeof(dm), "dm.%u.%d.", lid, (int)pid);
	clen = strlen(chan);
	dlen = strlen(dm);
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return;
	}
	while ((d = readdir(dp))) {
		if (strncmp(d->d_name, chan, clen) &&
		    strcmp(d->d_name, async) && strncmp(d->d_name, dm, dlen))
			continue;
		unlinkat(dfd, d->d_name, 0);
	}
	closedir(dp);
}
