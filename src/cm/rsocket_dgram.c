// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rsocket_dgram.c - datagram rsockets (placeholder while stream lands).
 */
#include <errno.h>

#include "cm/rsocket_int.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

int srdma_rsd_create(int domain, int type)
{
	errno = EOPNOTSUPP;
	return -1;
}

int srdma_rsd_bind(struct rsock *rs, const struct sockaddr *addr,
		   socklen_t len)
{
	errno = EOPNOTSUPP;
	return -1;
}

ssize_t srdma_rsd_sendto(struct rsock *rs, const void *buf, size_t len,
			 int flags, const struct sockaddr *to, socklen_t tolen)
{
	errno = EOPNOTSUPP;
	return -1;
}

ssize_t srdma_rsd_recvfrom(struct rsock *rs, void *buf, size_t len, int flags,
			   struct sockaddr *from, socklen_t *fromlen)
{
	errno = EOPNOTSUPP;
	return -1;
}

int srdma_rsd_connect(struct rsock *rs, const struct sockaddr *addr,
		      socklen_t len)
{
	errno = EOPNOTSUPP;
	return -1;
}

int srdma_rsd_getsockname(struct rsock *rs, struct sockaddr *addr,
			  socklen_t *len)
{
	errno = EOPNOTSUPP;
	return -1;
}

int srdma_rsd_getpeername(struct rsock *rs, struct sockaddr *addr,
			  socklen_t *len)
{
	errno = EOPNOTSUPP;
	return -1;
}

void srdma_rsd_close(struct rsock *rs)
{
}

short srdma_rsd_revents(struct rsock *rs, short events)
{
	return 0;
}

int srdma_rsd_waitfds(struct rsock *rs, struct pollfd *pfd)
{
	return 0;
}

void srdma_rsd_after_wait(struct rsock *rs)
{
}
