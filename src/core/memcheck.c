// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * memcheck.c - is a range mapped (and writable)? The software stand-in for
 * the page pinning of ib_umem_get(), which fails with EFAULT on an
 * unmapped page or, for a writable registration, on a read-only one.
 *
 * We never probe by touching the memory from user space: a read probe can
 * fault, and a write probe races with the application (a store between
 * our read and our write-back is lost). Three ways to ask the kernel
 * instead, in order of preference:
 *
 *  1. PROCMAP_QUERY (Linux 6.11+): an ioctl on /proc/self/maps answers
 *     "which VMA covers this address, with which permissions". One call
 *     per VMA of the range, whatever its size or the number of mappings.
 *  2. Without it (Debian 12's 6.1), MADV_POPULATE_WRITE / _READ (5.14+)
 *     over the range: the kernel faults every page in exactly as
 *     get_user_pages() does when a real HCA pins a registration, and fails
 *     on a hole (ENOMEM) or a VMA without the permission (EINVAL). Nothing
 *     is written and nothing raced: the fault path takes the page table
 *     lock, and a write fault only breaks copy-on-write or allocates, as
 *     pinning with FOLL_WRITE does. It costs per page, so it is used for
 *     ranges up to populate_max_pages(), and only for registrations
 *     (srdma_mem_check_pin()); ODP registrations are never checked, so
 *     ODP memory is never populated.
 *  3. /proc/self/maps, read whole with read() and split only at '\n' (the
 *     kernel escapes a newline in a path as "\012", so a newline always
 *     ends a line, however long the path). Exact and free of side effects,
 *     but the kernel formats every mapping below the range first: tens of
 *     microseconds with 50 mappings, a millisecond with 5,000. It answers
 *     large ranges and every failure of (2): a hole or a permission
 *     problem, but also what (2) refuses and a VMA still covers (VM_IO or
 *     VM_PFNMAP mappings, a file mapping past EOF), so that every path
 *     gives PROCMAP_QUERY's answers.
 *
 * Only an answer meaning "this ioctl does not exist here" (ENOTTY, EINVAL,
 * ...), confirmed on a freshly opened fd, switches (1) off for the life of
 * the process; a transient error (EINTR, EAGAIN, ENOMEM, ...) is retried a
 * few times and then answered by (2)/(3) for that one call. The maps fd is
 * bound to the process that opened it, so it is reopened after fork.
 * SRDMA_MAPS_QUERY=fallback starts without (1), as on a 6.1 kernel;
 * SRDMA_MAPS_QUERY=parse uses (3) alone (test aids, read once). Design:
 * docs/design/memcheck.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "util/fault.h"
#include "util/log.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

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

/* How many times an interrupted or refused-for-now ioctl is retried. */
#define QUERY_RETRIES 3

/*
 * Measured on 2 cores under load (bench/run_reg_bench.sh): populating a
 * writable range costs ~1.3 us plus ~0.25 us per page (two calls); reading
 * /proc/self/maps ~20 us plus ~0.3 us per line the kernel formats. So
 * populate up to POPULATE_BASE_PAGES plus as many pages as the last read of
 * the maps file went through lines (both sides grow alike), never more
 * than POPULATE_MAX_PAGES.
 */
#define POPULATE_BASE_PAGES 64
#define POPULATE_MAX_PAGES 65536	/* 256 MiB with 4 KiB pages */

/* The header of a maps line, "start-end perms ": at most 39 bytes. */
#define MAPS_HDR_MAX 64
/*
 * The kernel formats lines until it has as many bytes as read() asked for
 * (at most a page at a time), ~0.4 us a line. Ask for little first, as
 * the line that decides is often near the top, then for more.
 */
#define MAPS_FIRST_READ 1024
#define MAPS_CHUNK 8192

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

enum maps_mode {
	MAPS_QUERY,	/* (1), falling back per call on transient errors */
	MAPS_FALLBACK,	/* (2) for small ranges, (3) for the rest */
	MAPS_PARSE,	/* (3) only */
};

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int maps_fd = -1;	/* atomic; changed under maps_lock */
static pthread_once_t maps_once = PTHREAD_ONCE_INIT;
static _Atomic int maps_mode;		/* atomic (relaxed): enum maps_mode */
/* atomic (relaxed): lines the last maps read went through; a cost hint */
static _Atomic unsigned int maps_lines;

/* A fork child inherits an fd that still describes the parent's address
 * space: drop it so the child opens its own. */
static void maps_child(void)
{
	int fd = atomic_exchange(&maps_fd, -1);

	if (fd >= 0)
		close(fd);
	pthread_mutex_init(&maps_lock, NULL);
}

/* Does this kernel have MADV_POPULATE_* (5.14+), and may we call it?
 * Asked about a page of our own stack, which is certainly mapped. */
static bool have_populate(void)
{
	char here;
	uintptr_t page = (uintptr_t)&here & ~(uintptr_t)(srdma_page_size - 1);

	return !madvise((void *)page, srdma_page_size, MADV_POPULATE_READ);
}

static void maps_init(void)
{
	const char *v = getenv("SRDMA_MAPS_QUERY");
	int mode = MAPS_QUERY;

	if (v && !strcmp(v, "fallback"))
		mode = MAPS_FALLBACK;
	else if (v && !strcmp(v, "parse"))
		mode = MAPS_PARSE;
	else if (v && *v && strcmp(v, "auto"))
		srdma_warn("SRDMA_MAPS_QUERY=%s: not auto, fallback or parse; "
			   "using auto", v);
	if (mode == MAPS_FALLBACK && !have_populate())
		mode = MAPS_PARSE;
	atomic_store_explicit(&maps_mode, mode, memory_order_relaxed);
	pthread_atfork(NULL, NULL, maps_child);
}

/* Returns an fd on /proc/self/maps of this process, or -errno. */
static int maps_get(void)
{
	int fd = atomic_load_explicit(&maps_fd, memory_order_acquire);

	if (likely(fd >= 0))
		return fd;
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

/* ---- (1) PROCMAP_QUERY ------------------------------------------------- */

#ifdef SRDMA_FAULT_INJECTION
static _Atomic bool fault_no_ioctl;	/* atomic: MAPS_QUERY_ENOTTY hit */
#define FAULT_NO_IOCTL_SET() atomic_store(&fault_no_ioctl, true)
#define FAULT_NO_IOCTL() atomic_load(&fault_no_ioctl)
#else
#define FAULT_NO_IOCTL_SET() ((void)0)
#define FAULT_NO_IOCTL() false
#endif

/*
 * One VMA per call: 0 and [*start, *end) with *prot (PMQ_* bits) for the
 * VMA covering @addr; -ENOENT if none; -EOPNOTSUPP if @fd does not answer
 * the ioctl at all; -EAGAIN if it failed for now (already retried).
 */
static int query_vma(int fd, uint64_t addr, uint64_t *start, uint64_t *end,
		     unsigned int *prot)
{
	struct srdma_procmap_query q;
	int tries, err;

	/* Fault points: the kernel refuses for now (every retry too), or
	 * lacks the ioctl from this evaluation on. */
	if (SRDMA_FAULT(MAPS_QUERY_EAGAIN))
		return -EAGAIN;
	if (SRDMA_FAULT(MAPS_QUERY_ENOTTY))
		FAULT_NO_IOCTL_SET();
	for (tries = 0;; tries++) {
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_addr = addr;
		if (FAULT_NO_IOCTL())
			err = ENOTTY;
		else if (SRDMA_FAULT(MAPS_QUERY_EINTR))
			err = EINTR;
		else if (!ioctl(fd, SRDMA_PROCMAP_QUERY, &q))
			break;
		else
			err = errno;
		switch (err) {
		case ENOENT:
			return -ENOENT;
		case ENOTTY:	/* no such ioctl: Linux < 6.11 */
		case EINVAL:	/* ... or a layer that rejects it */
		case E2BIG:
		case ENOSYS:
		case EOPNOTSUPP:
		case EBADF:	/* our fd was closed behind our back */
			return -EOPNOTSUPP;
		case EINTR:
		case EAGAIN:
			if (tries < QUERY_RETRIES)
				continue;
			return -EAGAIN;
		default:	/* ENOMEM, ESRCH, ...: not an answer */
			return -EAGAIN;
		}
	}
	*start = q.vma_start;
	*end = q.vma_end;
	*prot = (unsigned int)q.vma_flags;
	return 0;
}

/*
 * @fd did not answer the ioctl. Before concluding the kernel lacks it, ask
 * on a fresh fd: the application may have closed ours and reused the
 * number. Returns query_vma()'s answer on the fresh fd, which replaces the
 * stale one; -EOPNOTSUPP if it fails there too (then the ioctl path is
 * off for good).
 */
static int query_vma_fresh(int stale, uint64_t addr, uint64_t *start,
			   uint64_t *end, unsigned int *prot)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -EAGAIN;
	ret = query_vma(fd, addr, start, end, prot);
	if (ret == -EOPNOTSUPP) {
		close(fd);
		atomic_store_explicit(&maps_mode,
				      have_populate() ? MAPS_FALLBACK
						      : MAPS_PARSE,
				      memory_order_relaxed);
		srdma_info("PROCMAP_QUERY unsupported: registrations are "
			   "checked with MADV_POPULATE and /proc/self/maps");
		return -EOPNOTSUPP;
	}
	/* Never close @stale: the number may belong to the application. */
	pthread_mutex_lock(&maps_lock);
	if (atomic_load(&maps_fd) == stale)
		/* Pairs with the acquire load in maps_get(). */
		atomic_store_explicit(&maps_fd, fd, memory_order_release);
	else
		close(fd);	/* another thread replaced it already */
	pthread_mutex_unlock(&maps_lock);
	return ret;
}

/* 0, -EFAULT, or -EAGAIN: no answer from the ioctl, ask another way. */
static int check_by_query(uint64_t addr, uint64_t end, bool writable)
{
	uint64_t cur = addr;
	int fd = maps_get();

	if (fd < 0)
		return -EAGAIN;
	while (cur < end) {
		uint64_t s, e;
		unsigned int prot;
		int ret = query_vma(fd, cur, &s, &e, &prot);

		if (ret == -EOPNOTSUPP) {
			ret = query_vma_fresh(fd, cur, &s, &e, &prot);
			fd = maps_get();
			if (ret == -EOPNOTSUPP || fd < 0)
				return -EAGAIN;
		}
		if (ret == -EAGAIN)
			return -EAGAIN;
		if (ret || s > cur)
			return -EFAULT;
		if (!(prot & PMQ_READABLE) ||
		    (writable && !(prot & PMQ_WRITABLE)))
			return -EFAULT;
		cur = e;
	}
	return 0;
}

/* ---- (2) MADV_POPULATE ------------------------------------------------- */

/* Pages of [addr, end), or UINT64_MAX if rounding would wrap. */
static uint64_t range_pages(uint64_t addr, uint64_t end)
{
	uint64_t mask = srdma_page_size - 1;

	if (end > UINT64_MAX - mask)
		return UINT64_MAX;
	return (((end + mask) & ~mask) - (addr & ~mask)) / srdma_page_size;
}

static uint64_t populate_max_pages(void)
{
	uint64_t n = POPULATE_BASE_PAGES +
		     atomic_load_explicit(&maps_lines, memory_order_relaxed);

	return n < POPULATE_MAX_PAGES ? n : POPULATE_MAX_PAGES;
}

/* 0 if every page of [addr, addr + pages) faulted in (writable when
 * @writable, readable always); otherwise -errno of the failing call,
 * which is not an answer by itself (see the header). */
static int check_by_populate(uint64_t addr, uint64_t pages, bool writable)
{
	void *start = (void *)(uintptr_t)(addr & ~(uint64_t)(srdma_page_size -
							     1));
	size_t len = (size_t)pages * srdma_page_size;

	if (writable && madvise(start, len, MADV_POPULATE_WRITE))
		return -errno;
	/* PROCMAP_QUERY wants VM_READ too, and a PROT_WRITE-only mapping
	 * passes the write fault; the second call is cheap after it. */
	if (madvise(start, len, MADV_POPULATE_READ))
		return -errno;
	return 0;
}

/* ---- (3) /proc/self/maps ----------------------------------------------- */

/* Parse hex digits at *p (< lim) into *v. Return: false if there are none
 * or more than 16. */
static bool parse_hex(const char **p, const char *lim, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int n = 0;

	for (; s < lim; s++, n++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			break;
		if (n == 16)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	if (!n)
		return false;
	*p = s;
	*v = x;
	return true;
}

/* The header "start-end perms " of a line that starts at @p; the line's
 * known bytes end at @lim. Return: false if it is not one. */
static bool parse_header(const char *p, const char *lim, uint64_t *s,
			 uint64_t *e, bool *r, bool *w)
{
	if (!parse_hex(&p, lim, s) || p >= lim || *p++ != '-' ||
	    !parse_hex(&p, lim, e) || p >= lim || *p++ != ' ' ||
	    lim - p < 5 || p[4] != ' ')
		return false;
	*r = p[0] == 'r';
	*w = p[1] == 'w';
	return *s < *e;
}

struct maps_walk {
	uint64_t cur, end;	/* what remains to be covered */
	bool writable;
	int ret;		/* 1 while undecided, then 0 or -EFAULT */
};

/* Feed one mapping (in address order) to the walk. */
static void walk_step(struct maps_walk *wk, uint64_t s, uint64_t e, bool r,
		      bool w)
{
	if (e <= wk->cur)
		return;
	if (s > wk->cur || !r || (wk->writable && !w)) {
		wk->ret = -EFAULT;	/* a hole, or a VMA we may not use */
		return;
	}
	wk->cur = e;
	if (wk->cur >= wk->end)
		wk->ret = 0;
}

/*
 * Read /proc/self/maps and decide. A line starts only at the start of the
 * file or after '\n'; of each line only the header is parsed, the rest
 * (a path of any length) is skipped up to the next '\n'. Return: 0,
 * -EFAULT, or -errno if the file could not be read (no answer).
 */
static int check_by_parsing(uint64_t addr, uint64_t end, bool writable)
{
	struct maps_walk wk = {
		.cur = addr, .end = end, .writable = writable, .ret = 1};
	char buf[MAPS_CHUNK + MAPS_HDR_MAX];
	size_t have = 0;		/* bytes in buf */
	size_t want = MAPS_FIRST_READ;	/* bytes to ask for next */
	bool skipping = false;		/* inside a line already parsed */
	bool eof = false;
	unsigned int lines = 0;
	int fd, ret;

	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (wk.ret > 0 && !eof) {
		const char *p = buf, *lim, *nl;
		ssize_t n = read(fd, buf + have, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (want < MAPS_CHUNK)
			want *= 2;
		if (n < 0) {
			wk.ret = -errno;
			break;
		}
		eof = n == 0;
		have += (size_t)n;
		lim = buf + have;
		while (p < lim && wk.ret > 0) {
			uint64_t s, e;
			bool r, w;

			nl = memchr(p, '\n', (size_t)(lim - p));
			if (skipping) {
				skipping = !nl;
				p = nl ? nl + 1 : lim;
				continue;
			}
			/* A line start: wait for its whole header. */
			if (!nl && !eof && lim - p < MAPS_HDR_MAX)
				break;
			if (!parse_header(p, nl ? nl : lim, &s, &e, &r, &w)) {
				srdma_warn("unexpected /proc/self/maps line "
					   "%u", lines + 1);
				wk.ret = -EFAULT;
				break;
			}
			lines++;
			walk_step(&wk, s, e, r, w);
			skipping = !nl;
			p = nl ? nl + 1 : lim;
		}
		/* Keep an incomplete header for the next read. */
		have = (size_t)(lim - p);
		memmove(buf, p, have);
	}
	close(fd);
	atomic_store_explicit(&maps_lines, lines, memory_order_relaxed);
	ret = wk.ret;
	return ret > 0 ? -EFAULT : ret;	/* end of file: not covered */
}

/* ---- entry points ------------------------------------------------------ */

static int mode_get(void)
{
	pthread_once(&maps_once, maps_init);
	return atomic_load_explicit(&maps_mode, memory_order_relaxed);
}

int srdma_mem_check(uint64_t addr, uint64_t len, bool writable)
{
	uint64_t end = addr + len;
	int ret;

	if (!len)
		return 0;
	if (end < addr)
		return -EFAULT;
	if (mode_get() == MAPS_QUERY) {
		ret = check_by_query(addr, end, writable);
		if (ret != -EAGAIN)
			return ret;
	}
	ret = check_by_parsing(addr, end, writable);
	return ret == -EFAULT || !ret ? ret : -EFAULT;
}

int srdma_mem_check_pin(uint64_t addr, uint64_t len, bool writable)
{
	uint64_t end = addr + len, pages;
	int mode, ret;

	if (!len)
		return 0;
	if (end < addr)
		return -EFAULT;
	mode = mode_get();
	if (mode == MAPS_QUERY) {
		ret = check_by_query(addr, end, writable);
		if (ret != -EAGAIN)
			return ret;
		mode = mode_get();	/* MAPS_FALLBACK now, or transient */
	}
	pages = range_pages(addr, end);
	if (pages == UINT64_MAX)
		return -EFAULT;
	if (mode != MAPS_PARSE && pages <= populate_max_pages() &&
	    !check_by_populate(addr, pages, writable))
		return 0;
	ret = check_by_parsing(addr, end, writable);
	if (ret == 0 || ret == -EFAULT)
		return ret;
	/* The maps file could not be read (no fd left?). A successful
	 * populate is a "yes" we can trust, if the range is not huge. */
	srdma_dbg("/proc/self/maps unreadable: %s", strerror(-ret));
	if (mode != MAPS_PARSE && pages <= POPULATE_MAX_PAGES &&
	    !check_by_populate(addr, pages, writable))
		return 0;
	return ret;
}
