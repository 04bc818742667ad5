/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * selfcopy.h - copying within our own address space with the semantics of
 * process_vm_readv/writev on ourselves (a fault is an error return, never
 * a signal), at the cost of a memcpy instead of a system call.
 */
#ifndef SRDMA_UTIL_SELFCOPY_H
#define SRDMA_UTIL_SELFCOPY_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/uio.h>

/**
 * srdma_self_vm_rw() - copy between two iovec lists of our own memory.
 * @liov: the "local" list, @nl entries.
 * @riov: the "remote" list (also ours), @nr entries.
 * @write: true: @liov -> @riov (process_vm_writev); false: @riov -> @liov.
 *
 * Copies min(total of @liov, total of @riov) bytes in list order, as
 * process_vm_writev/readv(getpid(), ...) would. With the fault guard on
 * (the default, see selfcopy.c) the bytes move with memcpy, and a page
 * that is unmapped, not readable, not writable or past the end of its file
 * ends the copy with -1/EFAULT instead of a signal; with it off, this is
 * process_vm_writev/readv on our own pid.
 *
 * Context: any thread; async-signal-safe it is not. Not for memory of
 * another process.
 * Return: the bytes copied (the whole amount), or -1 with errno EFAULT
 * (or process_vm_*'s errno when the guard is off). Unlike the system
 * call, a fault part-way returns -1, not a short count: callers that
 * compare the result with what they asked for see the same thing.
 */
ssize_t srdma_self_vm_rw(const struct iovec *liov, unsigned long nl,
			 const struct iovec *riov, unsigned long nr,
			 bool write);

/**
 * srdma_self_copy_guarded() - is the memcpy path in use?
 *
 * Installs the guard on first call (SRDMA_SELF_COPY=0 refuses it; builds
 * with AddressSanitizer or ThreadSanitizer default to off, since their
 * interceptors would judge the application's memory as ours).
 * Return: true if srdma_self_vm_rw() copies with memcpy under the guard.
 */
bool srdma_self_copy_guarded(void);

/**
 * srdma_thread_create_nosig() - pthread_create() for a library thread that
 * must take none of the application's signals.
 * @t: the new thread's id.
 * @fn, @arg: as for pthread_create().
 *
 * The thread starts with every asynchronous signal blocked, but the ones
 * the kernel raises for a fault in the thread itself (SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE, SIGTRAP, SIGSYS) deliverable: a blocked fault signal is
 * delivered anyway with its default action, which would kill the process
 * instead of letting the guard above turn a fault into EFAULT.
 *
 * Context: any thread; the caller's mask is unchanged on return.
 * Return: 0 or pthread_create()'s error number.
 */
int srdma_thread_create_nosig(pthread_t *t, void *(*fn)(void *), void *arg);

/**
 * srdma_self_copy_batch() - begin or end a batch of copies in this thread.
 * @begin: true to begin, false to end the batch begun last.
 *
 * Within a batch, the check that our signal handler is still installed
 * (one system call, see selfcopy.c) is made at the first copy only and
 * its answer reused by the others: for a receiver that lands dozens of
 * packets per drain. Batches nest.
 *
 * Context: the thread that copies; begin and end pair up in it.
 */
void srdma_self_copy_batch(bool begin);

/**
 * srdma_self_copy_queries() - how many times the guard asked the kernel
 * whose SIGSEGV/SIGBUS handler is installed (one per signal asked about).
 *
 * For tests and traces: with the signal watch active (sigwatch.h) a copy
 * asks only when a handler may have changed, and every 1024 copies.
 * Context: any thread.
 * Return: the process-wide count since the library was loaded.
 */
unsigned long srdma_self_copy_queries(void);

#endif
