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

int srdma_host_dir(char *buf, size_t len)
{
	const char *env = getenv("SRDMA_DIR");
	struct stat st;
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else
		n = snprintf(buf, len, "/dev/shm/srdma-%u",
			     (unsigned int)getuid());
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	if (stat(buf, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != getuid()) {
		srdma_err("%s belongs to uid %u, not to us", buf,
			  (unsigned int)st.st_uid);
		return -EACCES;
	}
	return 0;
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

int srdma_registry_open(const char *dir, struct srdma_registry *r)
{
	size_t len = sizeof(struct srdma_reg_hdr) +
		     SRDMA_REG_ENTRIES * sizeof(struct srdma_reg_entry);
	char path[320];
	struct stat st;
	void *map;
	int ret;

	snprintf(path, sizeof(path), "%s/registry", dir);
	r->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (r->fd < 0)
		return -errno;
	ret = srdma_registry_lock(r, true);
	if (ret)
		goto err_close;
	if (fstat(r->fd, &st)) {
		ret = -errno;
		goto err_unlock;
	}
	if ((size_t)st.st_size < len && ftruncate(r->fd, (off_t)len)) {
		ret = -errno;
		goto err_unlock;
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto err_unlock;
	}
	r->hdr = map;
	r->map_len = len;
	if (r->hdr->magic == 0) {
		r->hdr->version = SRDMA_REG_VERSION;
		r->hdr->hdr_size = sizeof(struct srdma_reg_hdr);
		r->hdr->nentries = SRDMA_REG_ENTRIES;
		r->hdr->entry_size = sizeof(struct srdma_reg_entry);
		r->hdr->entries_off = sizeof(struct srdma_reg_hdr);
		/* Publish: readers check magic first. Pairs with the acquire
		 * load below in other openers. */
		__atomic_store_n(&r->hdr->magic, SRDMA_REG_MAGIC,
				 __ATOMIC_RELEASE);
	} else if (__atomic_load_n(&r->hdr->magic, __ATOMIC_ACQUIRE) !=
			   SRDMA_REG_MAGIC ||
		   r->hdr->version != SRDMA_REG_VERSION ||
		   r->hdr->nentries != SRDMA_REG_ENTRIES ||
		   r->hdr->entry_size != sizeof(struct srdma_reg_entry)) {
		srdma_err("%s: foreign or corrupt registry", path);
		ret = -EPROTO;
		goto err_unmap;
	}
	r->ent = (struct srdma_reg_entry *)((char *)map +
					    r->hdr->entries_off);
	srdma_registry_unlock(r);
	return 0;

err_unmap:
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
	if (r->hdr)
		munmap(r->hdr, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	r->hdr = NULL;
	r->ent = NULL;
	r->fd = -1;
}

/*
 * Drop every in-flight mark the dead context @dead_seg still holds on other
 * contexts' key tables. Requires: registry flock held.
 */
static void release_marks_of(struct srdma_registry *r, const char *dir,
			     struct srdma_seg_hdr *dead_seg)
{
	unsigned int i;

	for (i = 0; i < dead_seg->acc_count; i++) {
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
		if (ti >= SRDMA_REG_ENTRIES)
			continue;
		te = &r->ent[ti];
		if (atomic_load_explicit(&te->state, memory_order_acquire) !=
			    SRDMA_REG_LIVE ||
		    te->pid != a->target_pid ||
		    te->start_time != a->target_start)
			continue;	/* target gone: nobody waits */
		if (srdma_peer_seg_map(dir, te->seg_name, &ps))
			continue;
		/* Whoever clears the tag drops the mark, exactly once. */
		if (slot < ps.seg->key_slots &&
		    atomic_compare_exchange_strong(&a->tag, &tag, 0))
			atomic_fetch_sub(&srdma_seg_keys(ps.seg)[slot].inflight,
					 1);
		srdma_peer_seg_unmap(&ps);
	}
}

int srdma_registry_reap(struct srdma_registry *r, const char *dir)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r->ent[i];
		struct srdma_peer_seg ps;
		char path[320];

		uint32_t st = atomic_load_explicit(&e->state,
						   memory_order_acquire);

		if (st != SRDMA_REG_LIVE && st != SRDMA_REG_CLAIMED)
			continue;
		if (srdma_proc_alive(e->pid, e->start_time))
			continue;
		if (!srdma_peer_seg_map(dir, e->seg_name, &ps)) {
			release_marks_of(r, dir, ps.seg);
			srdma_peer_seg_unmap(&ps);
		}
		snprintf(path, sizeof(path), "%s/%s", dir, e->seg_name);
		unlink(path);
		srdma_host_unlink_fifos(dir, e->lid, e->pid);
		srdma_info("reaped dead context lid %u pid %d", e->lid, e->pid);
		atomic_store_explicit(&e->state, SRDMA_REG_FREE,
				      memory_order_release);
		n++;
	}
	return n;
}

void srdma_host_unlink_fifos(const char *dir, uint32_t lid, pid_t pid)
{
	char chan[64], async[64], path[600];
	struct dirent *d;
	size_t clen;
	DIR *dp;

	snprintf(chan, sizeof(chan), "chan.%u.%d.", lid, (int)pid);
	snprintf(async, sizeof(async), "async.%u.%d", lid, (int)pid);
	clen = strlen(chan);
	dp = opendir(dir);
	if (!dp)
		return;
	while ((d = readdir(dp))) {
		if (strncmp(d->d_name, chan, clen) && strcmp(d->d_name, async))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		unlink(path);
	}
	closedir(dp);
}
