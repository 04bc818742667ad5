// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * relaxed_mr.c - ABI front end for the relaxed-MR extension (Solaris OFUV
 * signatures, declared in <infiniband/verbs_relaxed.h>, exported under the
 * version node IBVERBS_OFUV_1.0). Semantics: verbs-semantics §7 and
 * src/core/relaxed.c.
 */
#include <errno.h>

#include <infiniband/verbs_relaxed.h>

#include "core/core.h"
#include "util/compiler.h"
#include "verbs/verbs_int.h"

SRDMA_EXPORT struct ibv_mr *ibv_reg_mr_relaxed(struct ibv_pd *pd, void *addr,
					       size_t length, int access)
{
	struct srdma_mr_args a = {
		.addr = addr,
		.length = length,
		.iova = (uintptr_t)addr,
		.access = (unsigned int)access,
		.dmabuf_fd = -1,
		.relaxed = true,
	};

	return srdma_verbs_reg(pd, &a);
}

SRDMA_EXPORT int ibv_dereg_mr_relaxed(struct ibv_mr *mr)
{
	if (srdma_handle_forget_inherited(mr, SRDMA_OBJ_MR))
		return 0;	/* inherited across fork(): ours only */
	return -srdma_mr_dereg_relaxed(mr);
}

SRDMA_EXPORT int ibv_flush_relaxed_mr(struct ibv_pd *pd)
{
	return -srdma_mr_flush_relaxed(pd);
}
