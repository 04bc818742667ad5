// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sigwatch.c - our own copies of the C library's handler-installing
 * functions, so that the memcpy guard (selfcopy.c) learns of a new
 * SIGSEGV or SIGBUS handler without asking the kernel on every copy.
 *
 * The guard may memcpy only while its own SIGSEGV/SIGBUS handler is the
 * installed one: a handler installed after it would receive the fault of
 * a copy of ours. Asking the kernel (sigaction with no new action) costs
 * a system call of 0.2-0.3 us per copy, one on each side of every
 * one-way trip of a ping-pong. But a handler is installed through the C
 * library, and libibverbs.so comes before libc.so in the search order of
 * every program linked against it: so the library defines sigaction,
 * __sigaction, signal, bsd_signal, ssignal, sysv_signal, __sysv_signal,
 * sigset and sigignore itself (exported under the C library's own symbol
 * version, libibverbs.map), each forwarding to the C library's function
 * (dlsym RTLD_NEXT) and, once that returned, bumping a generation counter
 * when the signal is SIGSEGV or SIGBUS and the call may have changed its
 * disposition. The guard asks the kernel again only when the counter
 * moved (and every 1024 copies as a backstop). The C library's own
 * internal calls (signal() calls an internal sigaction) are covered by
 * interposing the outer function.
 *
 * Whether our copies are the ones the process binds to is checked once
 * (srdma_sigwatch_active): each name looked up as the application's
 * references are, with the C library's version. If any resolves
 * elsewhere, the guard keeps its system call per copy. What we can never
 * see is listed in sigwatch.h: raw rt_sigaction system calls, objects
 * bound with RTLD_DEEPBIND or in another dlmopen namespace, sigvec.
 *
 * The forwarding is async-signal-safe once the C library's functions are
 * resolved (a constructor does it; a call before that resolves lazily).
 *
 * A libibverbs that is not first - dlopen()ed by UCX's module loader, by
 * Open MPI's components, by pyverbs, or a dependency of libfabric, where
 * the C library comes before us in the global scope - cannot see the
 * calls. For those, the same file is also built as libsrdma_sigwatch.so
 * (SRDMA_SIGWATCH_PRELOAD), which `srdma run` preloads: a preloaded
 * object comes before the C library in every search order. It exports the
 * same interposers and a descriptor (struct srdma_sigwatch_ext,
 * sigwatch.h) with its counter and their addresses; libibverbs's
 * srdma_sigwatch_active() accepts the watch when every name binds either
 * to our own copies or to the descriptor's, and then reads the
 * descriptor's counter.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#ifndef SRDMA_SIGWATCH_PRELOAD
#include "util/log.h"
#endif
#include "util/sigwatch.h"

#if defined(__GLIBC__) && defined(__x86_64__)
#define LIBC_VER "GLIBC_2.2.5"	/* the node name in libibverbs.map */
#endif

/* Bumped (seq_cst) after each call through our interposers that may
 * have changed the disposition of SIGSEGV or SIGBUS, once the C
 * library's call has returned. */
static _Atomic unsigned long gen;

typedef int sa_fn(int, const struct sigaction *, struct sigaction *);
typedef __sighandler_t sig_fn(int, __sighandler_t);
typedef int ign_fn(int);

enum {
	W_SIGACTION,
	W___SIGACTION,
	W_SIGNAL,
	W_BSD_SIGNAL,
	W_SSIGNAL,
	W_SYSV_SIGNAL,
	W___SYSV_SIGNAL,
	W_SIGSET,
	W_SIGIGNORE,
	W_N
};

static const char *const names[W_N] = {
	"sigaction", "__sigaction", "signal", "bsd_signal", "ssignal",
	"sysv_signal", "__sysv_signal", "sigset", "sigignore",
};

/* The C library's functions: resolved by the constructor, or lazily. */
static void *_Atomic reals[W_N];

static void *real(int w)
{
	void *p = atomic_load_explicit(&reals[w], memory_order_acquire);

	if (!p) {
		p = dlsym(RTLD_NEXT, names[w]);
		atomic_store_explicit(&reals[w], p, memory_order_release);
	}
	return p;
}

__attribute__((constructor)) static void resolve(void)
{
	int w;

	for (w = 0; w < W_N; w++)
		real(w);
}

static void changed(int sig)
{
	if (sig == SIGSEGV || sig == SIGBUS)
		atomic_fetch_add(&gen, 1);
}

static int sa_common(int w, int sig, const struct sigaction *act,
		     struct sigaction *old)
{
	sa_fn *f = (sa_fn *)real(w);
	int ret;

	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	ret = f(sig, act, old);
	if (act)
		changed(sig);
	return ret;
}

static __sighandler_t sig_common(int w, int sig, __sighandler_t h)
{
	sig_fn *f = (sig_fn *)real(w);
	__sighandler_t ret;

	if (!f) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	ret = f(sig, h);
	changed(sig);
	return ret;
}

/* The interposers: global bodies (their addresses identify this copy;
 * the version scripts keep the sw_ names themselves local), exported
 * under the C library's names by the .symver directives below. */
#define SW_API __attribute__((visibility("default")))
SW_API int sw_sigaction(int sig, const struct sigaction *act,
			struct sigaction *old);
SW_API int sw___sigaction(int sig, const struct sigaction *act,
			  struct sigaction *old);
SW_API __sighandler_t sw_signal(int sig, __sighandler_t h);
SW_API __sighandler_t sw_bsd_signal(int sig, __sighandler_t h);
SW_API __sighandler_t sw_ssignal(int sig, __sighandler_t h);
SW_API __sighandler_t sw_sysv_signal(int sig, __sighandler_t h);
SW_API __sighandler_t sw___sysv_signal(int sig, __sighandler_t h);
SW_API __sighandler_t sw_sigset(int sig, __sighandler_t h);
SW_API int sw_sigignore(int sig);

int
sw_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sa_common(W_SIGACTION, sig, act, old);
}

int
sw___sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sa_common(W___SIGACTION, sig, act, old);
}

__sighandler_t
sw_signal(int sig, __sighandler_t h)
{
	return sig_common(W_SIGNAL, sig, h);
}

__sighandler_t
sw_bsd_signal(int sig, __sighandler_t h)
{
	return sig_common(W_BSD_SIGNAL, sig, h);
}

__sighandler_t
sw_ssignal(int sig, __sighandler_t h)
{
	return sig_common(W_SSIGNAL, sig, h);
}

__sighandler_t
sw_sysv_signal(int sig, __sighandler_t h)
{
	return sig_common(W_SYSV_SIGNAL, sig, h);
}

__sighandler_t
sw___sysv_signal(int sig, __sighandler_t h)
{
	return sig_common(W___SYSV_SIGNAL, sig, h);
}

__sighandler_t
sw_sigset(int sig, __sighandler_t h)
{
	return sig_common(W_SIGSET, sig, h);
}

int sw_sigignore(int sig)
{
	ign_fn *f = (ign_fn *)real(W_SIGIGNORE);
	int ret;

	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	ret = f(sig);
	changed(sig);
	return ret;
}

/*
 * Exported names. Each gets the C library's version as a NON-default
 * version (name@GLIBC_2.2.5, one '@'): the dynamic linker binds programs'
 * versioned references (name@GLIBC_2.2.5, recorded against libc.so.6) to
 * the first object in the search order that has that name and version,
 * which is us; but the static linker never resolves a reference against a
 * non-default version, so a program linked against our libibverbs still
 * records sigaction & co. as the C library's and runs unchanged on
 * rdma-core's libibverbs (lint.sigwatch_link checks it). With a default
 * version (name@@GLIBC_2.2.5) such a program would need "GLIBC_2.2.5 from
 * libibverbs.so.1" and fail to start anywhere else. librdmacm's map keeps
 * its copy local.
 */
#ifdef LIBC_VER
#define SW_EXPORT(fn, name) \
	__asm__(".symver " #fn ", " #name "@" LIBC_VER)
SW_EXPORT(sw_sigaction, sigaction);
SW_EXPORT(sw___sigaction, __sigaction);
SW_EXPORT(sw_signal, signal);
SW_EXPORT(sw_bsd_signal, bsd_signal);
SW_EXPORT(sw_ssignal, ssignal);
SW_EXPORT(sw_sysv_signal, sysv_signal);
SW_EXPORT(sw___sysv_signal, __sysv_signal);
SW_EXPORT(sw_sigset, sigset);
SW_EXPORT(sw_sigignore, sigignore);
#endif

#ifdef LIBC_VER
/* This copy's interposers, in names[] order. */
#define OURS                                                            \
	{                                                               \
		(void *)sw_sigaction, (void *)sw___sigaction,           \
		(void *)sw_signal, (void *)sw_bsd_signal,               \
		(void *)sw_ssignal, (void *)sw_sysv_signal,             \
		(void *)sw___sysv_signal, (void *)sw_sigset,            \
		(void *)sw_sigignore,                                   \
	}
#endif

#ifdef SRDMA_SIGWATCH_PRELOAD
/*
 * libsrdma_sigwatch.so: the interposers above and this descriptor, for a
 * libibverbs that the process loads where its own copies cannot come
 * first (sigwatch.h). Exported as srdma_sigwatch_preload@SRDMA_SIGWATCH_1
 * (tools/sigwatch_preload.map).
 */
#ifdef LIBC_VER
__attribute__((visibility("default")))
const struct srdma_sigwatch_ext srdma_sigwatch_preload = {
	.magic = SRDMA_SIGWATCH_EXT_MAGIC,
	.version = SRDMA_SIGWATCH_EXT_VERSION,
	.nfns = W_N,
	.gen = &gen,
	.fns = OURS,
};
#endif
#else /* libibverbs (and the unit tests' static copy) */

_Static_assert(W_N == SRDMA_SIGWATCH_NFNS, "sigwatch.h's name count");

static pthread_once_t once = PTHREAD_ONCE_INIT;
/* The counter of the copy that every name binds to; NULL: no watch.
 * Immutable after once. */
static _Atomic unsigned long *watch_gen;

#ifdef LIBC_VER
/* A preloaded libsrdma_sigwatch.so's descriptor, if one is loaded and
 * well formed (it may come from another build: checked, never trusted
 * further than its own fields). */
static const struct srdma_sigwatch_ext *preloaded(void)
{
	const struct srdma_sigwatch_ext *x =
		dlvsym(RTLD_DEFAULT, "srdma_sigwatch_preload",
		       SRDMA_SIGWATCH_EXT_NODE);

	if (!x || x->magic != SRDMA_SIGWATCH_EXT_MAGIC ||
	    x->version != SRDMA_SIGWATCH_EXT_VERSION || x->nfns != W_N ||
	    !x->gen)
		return NULL;
	return x;
}
#endif

static void decide(void)
{
	const char *e = getenv("SRDMA_SIGWATCH");
#ifdef LIBC_VER
	const void *ours[W_N] = OURS;
	const struct srdma_sigwatch_ext *x = preloaded();
	bool own = true, pre = x != NULL;
	void *p;
	int w;
#endif

	if (e && !strcmp(e, "0")) {
		srdma_dbg("signal handler watch off (SRDMA_SIGWATCH=0): the memcpy guard asks the kernel per copy");
		return;
	}
#ifdef LIBC_VER
	/* Every name must bind to one copy: ours, or the preloaded one. */
	for (w = 0; w < W_N; w++) {
		p = dlvsym(RTLD_DEFAULT, names[w], LIBC_VER);
		own = own && p == ours[w];
		pre = pre && p == x->fns[w];
		if (!own && !pre) {
			srdma_dbg("signal handler watch off (%s binds elsewhere%s): the memcpy guard asks the kernel per copy",
				  names[w],
				  x ? "" : "; `srdma run` preloads libsrdma_sigwatch.so for a libibverbs that comes after the C library");
			return;
		}
	}
	if (own) {
		watch_gen = &gen;
		srdma_dbg("signal handler watch on (libibverbs's own interposers)");
	} else {
		watch_gen = x->gen;
		srdma_dbg("signal handler watch on (the preloaded libsrdma_sigwatch.so)");
	}
#else
	srdma_dbg("signal handler watch off (C library version unknown here): the memcpy guard asks the kernel per copy");
#endif
}

bool srdma_sigwatch_active(void)
{
	pthread_once(&once, decide);
	return watch_gen != NULL;
}

unsigned long srdma_sigwatch_generation(void)
{
	pthread_once(&once, decide);
	return watch_gen ? atomic_load(watch_gen) : 0;
}
#endif
