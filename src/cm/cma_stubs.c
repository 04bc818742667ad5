// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_stubs.c - load-time placeholders for librdmacm and the rsocket API.
 *
 * rping, udaddy, ucmatose, rdma_server/rdma_client, perftest and pyverbs
 * all link librdmacm BIND_NOW, so every RDMACM_1.x name must resolve when
 * they start, whether or not they call it. Until the user-space connection
 * manager exists, each entry point here fails cleanly in its public
 * convention:
 *
 *   int returns            -1 with errno = EOPNOTSUPP
 *   pointer returns        NULL with errno = EOPNOTSUPP
 *   void                   nothing (there is nothing to release)
 *
 * Three calls are real because they need no connection manager:
 * rdma_event_str() (a string table), and rpoll()/rselect(), which the
 * rdmacm examples use on ordinary fds and which pass straight through to
 * poll() and select(); an rsocket fd can never exist, so nothing is lost.
 *
 * The CM work replaces the rdma_* stubs with real files and deletes them
 * here; the rsocket stubs are expected to stay.
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

static void *null_eopnotsupp(void)
{
	errno = EOPNOTSUPP;
	return NULL;
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

/* Devices: no list can be built until the CM knows our verbs devices. */

SRDMA_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	if (num_devices)
		*num_devices = 0;
	return null_eopnotsupp();
}

SRDMA_EXPORT void rdma_free_devices(struct ibv_context **list)
{
}

/* Event channels and events. */

SRDMA_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	return null_eopnotsupp();
}

SRDMA_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
}

SRDMA_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				   struct rdma_cm_event **event)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	return fail_eopnotsupp();
}

/* Identifiers and endpoints. */

SRDMA_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
				struct rdma_cm_id **id, void *context,
				enum rdma_port_space ps)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_create_ep(struct rdma_cm_id **id,
				struct rdma_addrinfo *res, struct ibv_pd *pd,
				struct ibv_qp_init_attr *qp_init_attr)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
}

SRDMA_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
				 struct rdma_event_channel *channel)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
				 void *optval, size_t optlen)
{
	return fail_eopnotsupp();
}

/* Addressing. */

SRDMA_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				  const struct rdma_addrinfo *hints,
				  struct rdma_addrinfo **res)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
}

SRDMA_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id,
				   struct sockaddr *src_addr,
				   struct sockaddr *dst_addr, int timeout_ms)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	return fail_eopnotsupp();
}

/* Port numbers are returned in network order; 0 means "none". */
SRDMA_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return 0;
}

SRDMA_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return 0;
}

/* Queue pairs and SRQs. */

SRDMA_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
				struct ibv_qp_init_attr *qp_init_attr)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				   struct ibv_qp_init_attr_ex *qp_init_attr)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
}

SRDMA_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				    struct ibv_srq_init_attr_ex *attr)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
}

SRDMA_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id,
				   struct ibv_qp_attr *qp_attr,
				   int *qp_attr_mask)
{
	return fail_eopnotsupp();
}

/* Connection management. */

SRDMA_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_get_request(struct rdma_cm_id *listen,
				  struct rdma_cm_id **id)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_connect(struct rdma_cm_id *id,
			      struct rdma_conn_param *conn_param)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_accept(struct rdma_cm_id *id,
			     struct rdma_conn_param *conn_param)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			     uint8_t private_data_len)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_reject_ece(struct rdma_cm_id *id,
				 const void *private_data,
				 uint8_t private_data_len)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	return fail_eopnotsupp();
}

SRDMA_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
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

/* Multicast. */

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
