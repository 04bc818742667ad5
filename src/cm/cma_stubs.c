// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_stubs.c - the librdmacm entry points softrdma does not offer, and
 * rdma_event_str.
 *
 * Every RDMACM_1.x name must resolve when a client starts (they link
 * BIND_NOW), so the features not offered fail cleanly in their public
 * convention: -1 with errno = EOPNOTSUPP, NULL with errno = EOPNOTSUPP, or
 * nothing for void. They are ECE. The rsocket API lives in
 * rsocket.c and rsocket_dgram.c.
 */
#include <errno.h>
#include <stddef.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

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
