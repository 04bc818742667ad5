/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * srdma_parent_domain.h - the resource types softrdma passes to the custom
 * allocator of a parent domain (ibv_alloc_parent_domain(3)).
 *
 * When a QP, a CQ (created with IBV_CQ_INIT_ATTR_MASK_PD) or an SRQ is
 * created on a parent domain whose init attributes carry
 * IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS, the object's private part (the
 * memory only this process uses: its send-side bookkeeping, the CQ's
 * poll state) is obtained from alloc(pd, pd_context, size, alignment,
 * resource_type) with one of the values below, and returned with free()
 * and the same value when the object is destroyed. The queues a peer
 * process reaches (receive rings, CQ rings) live in shared segments and
 * never come from the allocator. As the man page asks, the upper 32 bits
 * hold the driver id (softrdma has none in enum rdma_driver_id:
 * RDMA_DRIVER_UNKNOWN, 0) and the lower 32 bits a code of ours.
 */
#ifndef INFINIBAND_SRDMA_PARENT_DOMAIN_H
#define INFINIBAND_SRDMA_PARENT_DOMAIN_H

#include <stdint.h>

#define SRDMA_RES_TYPE_QP	((uint64_t)1)	/* struct of a QP */
#define SRDMA_RES_TYPE_CQ	((uint64_t)2)	/* struct of a CQ */
#define SRDMA_RES_TYPE_SRQ	((uint64_t)3)	/* struct of an SRQ */

/* The alignment every such request asks for (a cache line). */
#define SRDMA_RES_ALIGN		64u

#endif /* INFINIBAND_SRDMA_PARENT_DOMAIN_H */
