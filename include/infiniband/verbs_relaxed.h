/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * verbs_relaxed.h - the relaxed memory-region extension of softrdma's
 * libibverbs.so.1 (the Solaris OFUV interface, same names and signatures).
 *
 * A relaxed MR is registered like ibv_reg_mr(), but access rights extend to
 * the end of the last page of the area, and deregistration may be deferred:
 * ibv_dereg_mr_relaxed() only marks the MR ready to be invalidated (its key
 * may keep working for a short, finite time), and ibv_flush_relaxed_mr()
 * forces invalidation of every such MR of a protection domain. Do not free
 * or reuse the memory of a relaxed MR before it has been flushed.
 *
 * Return values: ibv_reg_mr_relaxed() returns NULL with errno set (as
 * ibv_reg_mr(), plus EAGAIN when the relaxed pool is momentarily
 * exhausted: retry after deregistering or flushing; EINVAL for
 * IBV_ACCESS_ON_DEMAND or IBV_ACCESS_ZERO_BASED). The other two return 0 or
 * an errno value (EINVAL: not a relaxed MR / not a PD; EBUSY: windows are
 * still bound to the MR).
 */
#ifndef INFINIBAND_VERBS_RELAXED_H
#define INFINIBAND_VERBS_RELAXED_H

#include <stddef.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_mr *ibv_reg_mr_relaxed(struct ibv_pd *pd, void *addr,
				  size_t length, int access);
int ibv_dereg_mr_relaxed(struct ibv_mr *mr);
int ibv_flush_relaxed_mr(struct ibv_pd *pd);

#ifdef __cplusplus
}
#endif

#endif
