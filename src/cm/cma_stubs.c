// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_stubs.c - the librdmacm entry points softrdma does not offer, and
 * rdma_event_str.
 *
 * Every RDMACM_1.x name must resolve when a client starts (they link
 * BIND_NOW), so the features not offered fail cleanly in their public
 * convention: -1 with errno = EOPNOTSUPP, NULL with errno = EOPNOTSUPP, or
 * nothing for void. They are multicast, ECE and the rsocket API; rpoll()
 * and rselect() are real, passing straight through to poll() and select(),
 * because the rdmacm examples use them on ordinary fds and an rsocket fd
 * can never exist.
 */
#include <errno.h>
#include <stddef.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "util/compiler.h"

/* Stubs ignore their arguments by design, whatever the build flags. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

static int fail_eopnotsupp(void)
{
	errno = EOPNOTSUPP;
	return -1;
}

static const char *const cm_event_strs[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
};

SRDMA_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	if ((int)event < 0 || (size_t)event >= ARRAY_SIZE(cm_event_strs))
		return "UNKNOWN EVENT";
	return cm_event_strs[event];
}

/*
 * Enhanced connection establishment: the device offers no ECE options, so
 * there is nothing to set, read or reject with.
 */

SRDMA_EXPORT int rdma_reject_ece(struct rdma_cm_id *id,
				 const void *private_data,
				 uint8_t private_data_len)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return fail_eopnotsupp();
}

/*
 * Multicast: not offered. The device reports max_mcast_grp = 0 and
 * ibv_attach_mcast fails with EOPNOTSUPP, so joining fails the same way
 * (pyverbs' multicast tests skip on max_mcast_grp == 0).
 */

SRDMA_EXPORT int rdma_join_multicast(struct rdma_cm_id *id,
				     struct sockaddr *addr, void *context)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int
rdma_join_multicast_ex(struct rdma_cm_id *id,
		       struct rdma_cm_join_mc_attr_ex *mc_join_attr,
		       void *context)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id,
				      struct sockaddr *addr)
{
	return fail_eopnotsupp();
}

/*
 * The rsocket API. No rsocket can be created, so every call on a socket
 * fails; the two multiplexers serve plain fds, which is all the rdmacm
 * examples hand them.
 */

SRDMA_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

SRDMA_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
			 fd_set *exceptfds, struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

SRDMA_EXPORT int rsocket(int domain, int type, int protocol)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rbind(int socket, const struct sockaddr *addr,
		       socklen_t addrlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rlisten(int socket, int backlog)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rconnect(int socket, const struct sockaddr *addr,
			  socklen_t addrlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rshutdown(int socket, int how)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rclose(int socket)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			       struct sockaddr *src_addr, socklen_t *addrlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			     const struct sockaddr *dest_addr,
			     socklen_t addrlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rgetpeername(int socket, struct sockaddr *addr,
			      socklen_t *addrlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rgetsockname(int socket, struct sockaddr *addr,
			      socklen_t *addrlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rsetsockopt(int socket, int level, int optname,
			     const void *optval, socklen_t optlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			     socklen_t *optlen)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rfcntl(int socket, int cmd, ...)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot,
			  int flags, off_t offset)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	return fail_eopnotsupp();
}

/* Returns size_t, so the error is (size_t)-1. */
SRDMA_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
			     off_t offset, int flags)
{
	return (size_t)fail_eopnotsupp();
}
