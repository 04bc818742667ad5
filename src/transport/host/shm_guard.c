// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * shm_guard.c - shared mappings that shrink under us raise no signal.
 *
 * The registry, our segment and every peer segment are files any process
 * of the user may truncate. A page past the new end of a MAP_SHARED file
 * raises SIGBUS on access, anywhere: in the data path, inside a robust
 * mutex operation of glibc, in srdma status. Checking the size before
 * each access cannot close the race, and a sigsetjmp around each access
 * cannot leave a robust-mutex operation half done. So the SIGBUS handler
 * repairs instead of unwinding: if the faulting address lies in a mapping
 * registered here, it replaces that whole mapping with private zero pages
 * (one mmap(MAP_FIXED), async-signal-safe as a system call), marks it
 * poisoned, optionally writes one byte to a wake-up fd, and returns; the
 * faulting instruction runs again on the zero page. Zero is a safe value
 * for every shared field (FREE, not LIVE, empty rings, unlocked mutexes),
 * so the access fails like one to a vanished object, and the layers
 * above turn "poisoned" into a dead peer or IBV_EVENT_DEVICE_FATAL.
 *
 * A poisoned mapping is never unmapped: a thread's glibc robust-mutex
 * list may still point into it. It only costs address space (the zero
 * pages are MAP_NORESERVE and untouched).
 *
 * A fault outside every registered range goes to the handler that was
 * installed before ours (or the default action, by re-raising through
 * SIG_DFL), so applications with their own SIGBUS handler keep it. An
 * application that replaces ours after opening a device loses the
 * protection (documented in docs/design/host-segment.md).
 *
 * Concurrency: the table is written under guard_lock (never in the
 * handler) and read lock-free by the handler: an entry's len is stored
 * before its base (release), the handler loads base first (acquire).
 *
 * fork(): guard_lock is held across fork() so the child's table is
 * consistent. The child keeps only entries whose range it still has (the
 * context's own segment and registry, and peer segments, are
 * MADV_DONTFORK), so a child's own mapping that later lands at such an
 * address faults as it would without us; and no entry of the child pokes
 * a wake-up fd, since those are its parent's FIFOs.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/host/host.h"
#include "util/log.h"

/* Peers (one per LID) times a few contexts, plus registries and ours. */
#define GUARD_SLOTS 4096

struct guard {
	_Atomic uintptr_t base;	   /* 0: free; guard_lock to set */
	_Atomic size_t len;	   /* guard_lock; before base */
	_Atomic int wake_fd;	   /* -1 or a fd to poke on poisoning */
	_Atomic uint32_t poisoned; /* CAS 0 -> 1 by the handler */
};

static struct guard guards[GUARD_SLOTS];
static _Atomic uint32_t guard_hwm;    /* slots ever used; guard_lock */
static _Atomic uint32_t poison_count; /* handler; relaxed */
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static struct sigaction old_bus; /* immutable after guard_once */
static bool installed;		 /* immutable after guard_once */

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (old_bus.sa_flags & SA_SIGINFO) {
		if (old_bus.sa_sigaction) {
			old_bus.sa_sigaction(sig, si, uc);
			return;
		}
	} else if (old_bus.sa_handler != SIG_DFL &&
		   old_bus.sa_handler != SIG_IGN && old_bus.sa_handler) {
		old_bus.sa_handler(sig);
		return;
	}
	/* Default action: return and fault again without us. */
	signal(sig, SIG_DFL);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	uint32_t i, n = atomic_load_explicit(&guard_hwm, memory_order_acquire);
	int saved = errno;

	for (i = 0; i < n; i++) {
		struct guard *g = &guards[i];
		/* Pairs with the release store of base in guard_add. */
		uintptr_t base =
			atomic_load_explicit(&g->base, memory_order_acquire);
		size_t len =
			atomic_load_explicit(&g->len, memory_order_relaxed);
		uint32_t zero = 0;
		int fd;

		if (!base || a < base || a - base >= len)
			continue;
		if (!atomic_compare_exchange_strong(&g->poisoned, &zero, 1)) {
			/* Another thread is replacing it: fault again. */
			errno = saved;
			return;
		}
		if (mmap((void *)base, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
				 MAP_NORESERVE,
			 -1, 0) == MAP_FAILED)
			break; /* cannot repair: let it be fatal */
		atomic_fetch_add_explicit(&poison_count, 1,
					  memory_order_relaxed);
		fd = atomic_load_explicit(&g->wake_fd, memory_order_relaxed);
		if (fd >= 0) {
			char b = 1;

			if (write(fd, &b, 1) < 0)
				(void)0; /* full: readable anyway */
		}
		errno = saved;
		return;
	}
	errno = saved;
	chain(sig, si, uc);
}

static void guard_prepare(void)
{
	pthread_mutex_lock(&guard_lock);
}

static void guard_parent(void)
{
	pthread_mutex_unlock(&guard_lock);
}

/* In the child, single-threaded: drop what the child does not have. */
static void guard_child(void)
{
	uint32_t i, n = atomic_load_explicit(&guard_hwm, memory_order_relaxed);
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);

	for (i = 0; i < n; i++) {
		struct guard *g = &guards[i];
		uintptr_t base =
			atomic_load_explicit(&g->base, memory_order_relaxed);
		unsigned char v;

		atomic_store_explicit(&g->wake_fd, -1, memory_order_relaxed);
		if (base && mincore((void *)base, ps, &v) && errno == ENOMEM)
			atomic_store_explicit(&g->base, 0,
					      memory_order_relaxed);
	}
	pthread_mutex_unlock(&guard_lock);
}

static void install(void)
{
	struct sigaction sa;

	if (pthread_atfork(guard_prepare, guard_parent, guard_child))
		srdma_warn("SIGBUS guard: no fork handlers");

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &old_bus)) {
		srdma_warn("cannot install the SIGBUS guard: %s",
			   strerror(errno));
		return;
	}
	installed = true;
}

int srdma_shm_guard_add(void *base, size_t len, int wake_fd)
{
	uint32_t i, n;
	int ret = -ENOSPC;

	pthread_once(&guard_once, install);
	if (!installed)
		return -ENOSYS;
	pthread_mutex_lock(&guard_lock);
	n = atomic_load_explicit(&guard_hwm, memory_order_relaxed);
	for (i = 0; i < GUARD_SLOTS; i++) {
		struct guard *g = &guards[i];

		if (atomic_load_explicit(&g->base, memory_order_relaxed))
			continue;
		atomic_store_explicit(&g->len, len, memory_order_relaxed);
		atomic_store_explicit(&g->wake_fd, wake_fd,
				      memory_order_relaxed);
		atomic_store_explicit(&g->poisoned, 0, memory_order_relaxed);
		/* Pairs with the acquire load of base in on_sigbus(). */
		atomic_store_explicit(&g->base, (uintptr_t)base,
				      memory_order_release);
		if (i >= n)
			atomic_store_explicit(&guard_hwm, i + 1,
					      memory_order_release);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&guard_lock);
	if (ret)
		srdma_warn("shared mapping %p: guard table full", base);
	return ret;
}

static struct guard *guard_find(const void *base)
{
	uint32_t i, n = atomic_load_explicit(&guard_hwm, memory_order_acquire);

	for (i = 0; i < n; i++)
		if (atomic_load_explicit(&guards[i].base,
					 memory_order_acquire) ==
		    (uintptr_t)base)
			return &guards[i];
	return NULL;
}

void srdma_shm_guard_wake(void *base, int wake_fd)
{
	struct guard *g;

	pthread_mutex_lock(&guard_lock);
	g = guard_find(base);
	if (g)
		atomic_store_explicit(&g->wake_fd, wake_fd,
				      memory_order_relaxed);
	pthread_mutex_unlock(&guard_lock);
}

bool srdma_shm_guard_del(void *base)
{
	struct guard *g;
	bool poisoned = false;

	pthread_mutex_lock(&guard_lock);
	g = guard_find(base);
	if (g) {
		poisoned = atomic_load(&g->poisoned);
		atomic_store_explicit(&g->base, 0, memory_order_release);
	}
	pthread_mutex_unlock(&guard_lock);
	return !poisoned;
}

bool srdma_shm_poisoned(const void *base)
{
	struct guard *g;

	/* Fast path: nothing was ever poisoned in this process. */
	if (!atomic_load_explicit(&poison_count, memory_order_relaxed))
		return false;
	g = guard_find(base);
	return g && atomic_load_explicit(&g->poisoned, memory_order_relaxed);
}

unsigned int srdma_shm_poison_count(void)
{
	return atomic_load_explicit(&poison_count, memory_order_relaxed);
}
