// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_mr.c - ABI front end for memory registration (verbs-semantics §2,
 * §3, §6): ibv_reg_mr (the plain symbol the header's macro calls for
 * constant access flags), ibv_reg_mr_iova, ibv_reg_mr_iova2 (what the
 * macro calls otherwise), ibv_reg_dmabuf_mr, ibv_rereg_mr, ibv_dereg_mr.
 * All registration paths behave identically; the optional-range bits are
 * hints and are accepted everywhere but on the dma-buf path. Conventions:
 * NULL + errno, a positive errno for dereg, and a negative
 * ibv_rereg_mr_err_code with errno for rereg.
 */
#include <errno.h>

#include "core/core.h"
#include "core/import.h"
#include "util/compiler.h"
#include "verbs/verbs_int.h"

struct ibv_mr *srdma_verbs_reg(struct ibv_pd *pd,
			       const struct srdma_mr_args *a)
{
	struct srdma_mr *mr;
	int ret;

	ret = srdma_mr_reg(pd, a, &mr);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &mr->ibmr;
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t length,
			  uint64_t iova, unsigned int access)
{
	struct srdma_mr_args a = {
		.addr = addr,
		.length = length,
		.iova = iova,
		.access = access,
		.dmabuf_fd = -1,
	};

	/* rdma-core's ibv_dontfork_range() on non-ODP ranges, for the
	 * ibv_fork_init() "too late" rule only. */
	if (!(access & IBV_ACCESS_ON_DEMAND))
		srdma_verbs_fork_note_range();
	return srdma_verbs_reg(pd, &a);
}

#undef ibv_reg_mr
SRDMA_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				       size_t length, int access)
{
	return reg(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

#undef ibv_reg_mr_iova
SRDMA_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					    size_t length, uint64_t iova,
					    int access)
{
	return reg(pd, addr, length, iova, (unsigned int)access);
}

SRDMA_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					     size_t length, uint64_t iova,
					     unsigned int access)
{
	return reg(pd, addr, length, iova, access);
}

SRDMA_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd,
					      uint64_t offset, size_t length,
					      uint64_t iova, int fd,
					      int access)
{
	struct srdma_mr_args a = {
		.length = length,
		.iova = iova,
		.access = (unsigned int)access,
		.dmabuf = true,
		.dmabuf_fd = fd,
		.dmabuf_offset = offset,
	};

	return srdma_verbs_reg(pd, &a);
}

SRDMA_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
			      void *addr, size_t length, int access)
{
	int stage, ret;

	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
	    !(access & IBV_ACCESS_ON_DEMAND))
		srdma_verbs_fork_note_range();
	ret = srdma_mr_rereg(mr, flags, pd, addr, length, access, &stage);
	if (ret) {
		errno = -ret;
		return stage;
	}
	return 0;
}

SRDMA_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	/* A fork child's copy of its parent's MR: forget it, nothing more. */
	if (srdma_handle_forget_inherited(mr, SRDMA_OBJ_MR))
		return 0;
	/* Imported from another process: destroy it there (ibv_dm.c). */
	if (srdma_imr_lookup(mr))
		return -srdma_import_mr_drop(mr, true);
	return -srdma_mr_dereg(mr);
}
