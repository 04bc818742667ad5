// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * memcheck.c - is a range mapped (and writable)? The software stand-in for
 * the page pinning of ib_umem_get(), which fails with EFAULT on an
 * unmapped page or, for a writable registration, on a read-only one.
 *
 * We never probe by touching the memory (that would race with the
 * application, and a write probe could lose its stores). The kernel's
 * PROCMAP_QUERY ioctl on /proc/self/maps (Linux 6.11+) answers "which VMA
 * covers this address, with which permissions" in one system call, so the
 * cost depends on the number of VMAs the range spans, not on its size: a
 * 1 GiB buffer costs the same as 4 KiB. Older kernels fall back to parsing
 * /proc/self/maps. The maps fd is bound to the process that opened it, so
 * it is reopened after fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "util/log.h"

/* Kernel UAPI (include/uapi/linux/fs.h, 6.11); Debian 12's headers
 * predate it. The layout is the kernel's ABI. */
struct srdma_procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
static_assert(sizeof(struct srdma_procmap_query) == 104, "kernel UAPI");
#define SRDMA_PROCMAP_QUERY _IOWR('f', 17, struct srdma_procmap_query)
#define PMQ_READABLE 0x01
#define PMQ_WRITABLE 0x02

size_t srdma_page_size = 4096;

__attribute__((constructor)) static void page_size_init(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (ps > 0)
		srdma_page_size = (size_t)ps;
}

uint64_t srdma_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int maps_fd = -1;	/* atomic; changed under maps_lock */
static pthread_once_t maps_once = PTHREAD_ONCE_INIT;
static _Atomic int have_query = -1;	/* atomic; -1 unknown, 0 no ioctl */

/* A fork child inherits an fd that still describes the parent's address
 * space: drop it so the child opens its own. */
static void maps_child(void)
{
	int fd = atomic_exchange(&maps_fd, -1);

	if (fd >= 0)
		close(fd);
	pthread_mutex_init(&maps_lock, NULL);
}

/* SRDMA_MAPS_QUERY=fallback: behave as on a kernel without PROCMAP_QUERY. */
static void maps_init(void)
{
	const char *v = getenv("SRDMA_MAPS_QUERY");

	if (v && !strcmp(v, "fallback"))
		atomic_store(&have_query, 0);
	pthread_atfork(NULL, NULL, maps_child);
}

/* Returns an fd on /proc/self/maps of this process, or -errno. */
static int maps_get(void)
{
	int fd = atomic_load_explicit(&maps_fd, memory_order_acquire);

	if (likely(fd >= 0))
		return fd;
	pthread_once(&maps_once, maps_init);
	pthread_mutex_lock(&maps_lock);
	fd = atomic_load(&maps_fd);
	if (fd < 0) {
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
		else
			/* Pairs with the acquire load above. */
			atomic_store_explicit(&maps_fd, fd,
					      memory_order_release);
	}
	pthread_mutex_unlock(&maps_lock);
	return fd;
}

/*
 * One VMA per call: 0 and [*start, *end) with *prot (PMQ_* bits) for the
 * VMA covering @addr, -ENOENT if none, -ENOTTY without PROCMAP_QUERY.
 */
static int query_vma(int fd, uint64_t addr, uint64_t *start, uint64_t *end,
		     unsigned int *prot)
{
	struct srdma_procmap_query q = {
		.size = sizeof(q),
		.query_addr = addr,
	};

	if (ioctl(fd, SRDMA_PROCMAP_QUERY, &q))
		return errno == ENOENT ? -ENOENT : -ENOTTY;
	*start = q.vma_start;
	*end = q.vma_end;
	*prot = (unsigned int)q.vma_flags;
	return 0;
}

/* Fallback: walk /proc/self/maps text. Return 0 or -EFAULT. */
static int check_by_parsing(uint64_t addr, uint64_t end, bool writable)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	uint64_t cur = addr;
	int ret = -EFAULT;

	if (!f)
		return -EFAULT;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s", &s, &e, perms) != 3)
			continue;
		if (e <= cur)
			continue;
		if (s > cur)
			break;	/* hole */
		if (perms[0] != 'r' || (writable && perms[1] != 'w'))
			break;
		cur = e;
		if (cur >= end) {
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

int srdma_mem_check(uint64_t addr, uint64_t len, bool writable)
{
	uint64_t end = addr + len, cur = addr;
	int fd;

	if (!len)
		return 0;
	pthread_once(&maps_once, maps_init);
	fd = maps_get();
	if (fd < 0 || have_query == 0)
		return check_by_parsing(addr, end, writable);
	while (cur < end) {
		uint64_t s, e;
		unsigned int prot;
		int ret = query_vma(fd, cur, &s, &e, &prot);

		if (ret == -ENOTTY) {
			have_query = 0;
			return check_by_parsing(addr, end, writable);
		}
		if (ret || s > cur)
			return -EFAULT;
		if (!(prot & PMQ_READABLE) ||
		    (writable && !(prot & PMQ_WRITABLE)))
			return -EFAULT;
		cur = e;
	}
	return 0;
}
