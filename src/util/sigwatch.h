/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sigwatch.h - knowing, without a system call, whether the SIGSEGV or
 * SIGBUS disposition may have changed: the library exports the C
 * library's functions that install signal handlers (sigaction, signal and
 * their relatives), forwards every call to the C library, and counts the
 * calls that touch those two signals (sigwatch.c).
 */
#ifndef SRDMA_UTIL_SIGWATCH_H
#define SRDMA_UTIL_SIGWATCH_H

#include <stdbool.h>

/*
 * Bumped (seq_cst) after each call through our interposers that may have
 * changed the disposition of SIGSEGV or SIGBUS, once the C library's call
 * has returned. Read with atomic_load; hidden, one per linked copy.
 */
extern _Atomic unsigned long srdma_sigwatch_gen
	__attribute__((visibility("hidden")));

/**
 * srdma_sigwatch_active() - do our interposers see every handler change
 * made through the C library in this process?
 *
 * True when each of the names we interpose (sigaction, __sigaction,
 * signal, bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset,
 * sigignore), looked up as the application's own references look them up
 * (the C library's symbol version, from the global scope), is the copy in
 * this object. False when this copy is not first in the search order: a
 * libibverbs dlopen()ed with RTLD_LOCAL (pyverbs), an executable linked
 * with the C library before us, a preloaded interposer or sanitizer
 * runtime ahead of us, the copy of this file linked into librdmacm, an
 * architecture whose C library version we do not know, or
 * SRDMA_SIGWATCH=0. Decided once, at the first call.
 *
 * What an active watch cannot see: rt_sigaction made as a raw system call
 * (syscall(2), inline assembly, a runtime without libc such as Go's), the
 * calls of an object bound with RTLD_DEEPBIND or loaded in another link
 * namespace (dlmopen), and the compat-only sigvec of old binaries.
 *
 * Context: any thread.
 * Return: true if srdma_sigwatch_gen moves with every such change.
 */
bool srdma_sigwatch_active(void);

#endif
