/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * dm.h - device memory (ibv_alloc_dm and friends, docs/design/dm.md).
 *
 * A DM is a block of the owning process's memory that only the library
 * hands out: the application reaches it through ibv_memcpy_to/from_dm and
 * through MRs registered over it with ibv_reg_dm_mr (zero-based), never
 * by address. Peers reach it exactly as any registered memory (the host
 * transport's cross-memory attach, the net responder's copy), so the
 * owner stays passive. All functions return 0 or -errno.
 */
#ifndef SRDMA_CORE_DM_H
#define SRDMA_CORE_DM_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

/* Device memory per context, reported as max_dm_size (ConnectX-6's MEMIC
 * size; a ConnectX-5 has 128 KiB). */
#define SRDMA_MAX_DM_SIZE (256u << 10)
/* Allocation granularity: every DM is charged in 64-byte units. */
#define SRDMA_DM_GRAIN 64u
/* ibv_memcpy_to/from_dm offsets and lengths: 4-byte units, as mlx5. */
#define SRDMA_DM_COPY_ALIGN 4u
/* Largest log_align_req: a page (every DM starts on one). */
#define SRDMA_DM_MAX_LOG_ALIGN 12u

struct srdma_dm {
	struct ibv_dm ibdm;		/* public; immutable while live */
	struct srdma_context *ctx;	/* immutable while live */
	uint8_t *base;			/* immutable while live: the memory */
	uint64_t length;		/* immutable while live: bytes asked */
	size_t map_len;			/* immutable while live */
	uint64_t charged;		/* immutable while live: in dm_used */
	bool fork_child;		/* immutable while live: allocated on
					 * a context inherited across fork() */
	_Atomic uint32_t n_mr;		/* atomic: MRs registered over it */
	struct srdma_dm *next_free;	/* dm_lock (dm.c): spare list */
};

/**
 * srdma_dm_alloc() - ibv_alloc_dm on @ctx (live, or inherited across
 * fork() when @inherited). Return: 0 with *out published, -EINVAL (bad
 * attr: comp_mask, length 0 or above max_dm_size, alignment above a
 * page), -ENOMEM (the context's device memory is used up).
 */
int srdma_dm_alloc(struct srdma_context *ctx, bool inherited,
		   const struct ibv_alloc_dm_attr *attr, struct srdma_dm **out);

/**
 * srdma_dm_free() - ibv_free_dm. Return: 0, -EINVAL (not a live DM: freed
 * already), -EBUSY (MRs are registered over it).
 */
int srdma_dm_free(struct ibv_dm *ibdm);

/**
 * srdma_dm_copy() - ibv_memcpy_to_dm (@to_dm) or ibv_memcpy_from_dm.
 * Return: 0, -EINVAL (not a live DM, or offset/length not 4-byte units),
 * -EFAULT (the range leaves the DM).
 */
int srdma_dm_copy(struct ibv_dm *ibdm, bool to_dm, uint64_t offset,
		  void *host, size_t length);

/**
 * srdma_dm_reg_mr() - ibv_reg_dm_mr: a zero-based MR over [@offset,
 * @offset + @length) of the DM. Return: 0 with *out, -EINVAL (not a live
 * DM or PD, another context's DM, ZERO_BASED missing, access beyond
 * LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC | ZERO_BASED,
 * range outside the DM), or srdma_mr_reg's errors.
 */
int srdma_dm_reg_mr(struct ibv_pd *ibpd, struct ibv_dm *ibdm, uint64_t offset,
		    size_t length, unsigned int access, struct srdma_mr **out);

/**
 * srdma_dm_mr_put() - an MR over @dm is gone (mr.c, at invalidation).
 */
void srdma_dm_mr_put(struct srdma_dm *dm);

/**
 * srdma_dm_find() - the live DM of @ctx whose handle is @handle, or NULL
 * (ibv_import_dm).
 */
struct srdma_dm *srdma_dm_find(struct srdma_context *ctx, uint32_t handle);

#endif
