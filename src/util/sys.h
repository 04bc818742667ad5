/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sys.h - system calls the library makes for itself, past any interposer.
 *
 * Debian's librspreload.so, LD_PRELOADed into a program, replaces
 * socket(): an AF_INET/AF_INET6 stream or datagram socket becomes an
 * rsocket, which is built on our own librdmacm and libibverbs. A socket
 * the library opens for itself (the net endpoint's UDP socket, the GID
 * table's interface queries, the CM's side channel) must never take that
 * path: it would re-enter the library, e.g. the sysfs refresh building
 * the GID table under its lock, and deadlock or recurse.
 */
#ifndef SRDMA_UTIL_SYS_H
#define SRDMA_UTIL_SYS_H

#include <sys/syscall.h>
#include <unistd.h>

/**
 * srdma_socket() - socket(2) straight from the kernel.
 * @domain, @type, @protocol: as for socket(2).
 *
 * Context: any. Return: a descriptor, or -1 with errno set.
 */
static inline int srdma_socket(int domain, int type, int protocol)
{
	return (int)syscall(SYS_socket, domain, type, protocol);
}

#endif
