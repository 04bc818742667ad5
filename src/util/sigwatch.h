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
#include <stdint.h>

/*
 * The descriptor a preloaded libsrdma_sigwatch.so exports as
 * srdma_sigwatch_preload@SRDMA_SIGWATCH_1 (sigwatch.c built with
 * SRDMA_SIGWATCH_PRELOAD): an ABI between that library and libibverbs,
 * which may come from different builds, so libibverbs checks magic,
 * version and count before it uses the rest.
 */
#define SRDMA_SIGWATCH_EXT_NODE "SRDMA_SIGWATCH_1"
#define SRDMA_SIGWATCH_EXT_MAGIC 0x48435753u	/* "SWCH" */
#define SRDMA_SIGWATCH_EXT_VERSION 1u
#define SRDMA_SIGWATCH_NFNS 9u
struct srdma_sigwatch_ext {
	uint32_t magic;		/* SRDMA_SIGWATCH_EXT_MAGIC */
	uint32_t version;	/* SRDMA_SIGWATCH_EXT_VERSION */
	uint32_t nfns;		/* SRDMA_SIGWATCH_NFNS */
	uint32_t reserved;
	/* Bumped (seq_cst) after each call through the library's
	 * interposers that may have changed SIGSEGV's or SIGBUS's
	 * disposition, once the C library's call returned. */
	_Atomic unsigned long *gen;
	/* Its interposers, in the order sigaction, __sigaction, signal,
	 * bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset,
	 * sigignore. */
	void *fns[SRDMA_SIGWATCH_NFNS];
};

/**
 * srdma_sigwatch_active() - do our interposers see every handler change
 * made through the C library in this process?
 *
 * True when each of the names we interpose (sigaction, __sigaction,
 * signal, bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset,
 * sigignore), looked up as the application's own references look them up
 * (the C library's symbol version, from the global scope), is the copy in
 * this object, or each is the copy in a preloaded libsrdma_sigwatch.so
 * (struct srdma_sigwatch_ext; `srdma run` preloads it). False otherwise:
 * a libibverbs dlopen()ed with RTLD_LOCAL (pyverbs, UCX, Open MPI) or an
 * executable linked with the C library before us, without the preload; a
 * preloaded interposer or sanitizer runtime ahead of us; the copy of this
 * file linked into librdmacm; an architecture whose C library version we
 * do not know; SRDMA_SIGWATCH=0. Decided once, at the first call.
 *
 * What an active watch cannot see: rt_sigaction made as a raw system call
 * (syscall(2), inline assembly, a runtime without libc such as Go's), the
 * calls of an object bound with RTLD_DEEPBIND or loaded in another link
 * namespace (dlmopen), and the compat-only sigvec of old binaries.
 *
 * Context: any thread.
 * Return: true if srdma_sigwatch_generation() moves with every such change.
 */
bool srdma_sigwatch_active(void);

/**
 * srdma_sigwatch_generation() - the watch's counter of SIGSEGV/SIGBUS
 * disposition changes (of whichever copy srdma_sigwatch_active() chose).
 *
 * Context: any thread.
 * Return: the count (seq_cst load); 0 when the watch is off.
 */
unsigned long srdma_sigwatch_generation(void);

#endif
