/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * dm.h - device memory (ibv_alloc_dm and friends, docs/design/dm.md).
 *
 * A DM is a block of the owning process's memory that only the library
 * hands out: the application reaches it through ibv_memcpy_to/from_dm and
 * through MRs registered over it with ibv_reg_dm_mr (zero-based), never
 * by address. Peers reach it exactly as any registered memory (the host
 * transport's cross-memory attach, the net responder's copy), so the
 * owner stays passive. The memory is a file of SRDMA_DIR mapped shared
 * (dm.<lid>.<pid>.<handle>: a header page, then the bytes), so that a
 * process that imported the owner's context can import the DM by mapping
 * the same file (ibv_import_dm). All functions return 0 or -errno.
 */
#ifndef SRDMA_CORE_DM_H
#define SRDMA_CORE_DM_H

#include <assert.h>
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

/* Handles of DMs allocated on an imported context: far above the owner's
 * (which count from 1 below 2^31), so ibv_import_dm tells them apart. */
#define SRDMA_DM_LOCAL_HANDLE 0x80000000u

/*
 * The header page of a DM file, dm.<lid>.<pid>.<handle> under SRDMA_DIR
 * (mode 0600): shared by the owner and every process that imported the
 * DM, of possibly other softrdma builds, so an ABI; readers validate every
 * field against what they know of the owner before they map the bytes.
 */
#define SRDMA_DM_MAGIC 0x4d445253u	/* "SRDM" */
#define SRDMA_DM_VERSION 1u
#define SRDMA_DM_FREED 0x80000000u	/* in use: destroyed for everybody */

struct srdma_shm_dm {
	uint32_t magic;			/* SRDMA_DM_MAGIC; written last */
	uint16_t version;		/* SRDMA_DM_VERSION */
	uint16_t hdr_size;		/* sizeof(struct srdma_shm_dm) */
	int32_t owner_pid;		/* immutable: the allocating context's */
	uint32_t lid;			/* immutable: its LID */
	uint64_t owner_start;		/* immutable: its owner's start time */
	uint64_t length;		/* immutable: bytes asked */
	uint64_t data_off;		/* immutable: offset of the bytes */
	uint64_t data_len;		/* immutable: bytes there (pages) */
	uint32_t handle;		/* immutable: ibv_dm.handle */
	/* Atomic, any process (compare-and-swap): MRs registered over the
	 * DM in every process, or SRDMA_DM_FREED once someone destroyed it
	 * (set from 0 only: ibv_free_dm is EBUSY while any MR uses it). */
	_Atomic uint32_t use;
	uint64_t reserved[2];
};
static_assert(sizeof(struct srdma_shm_dm) == 72, "DM header is ABI");

struct srdma_dm {
	struct ibv_dm ibdm;		/* public; immutable while live */
	struct srdma_context *ctx;	/* immutable while live */
	uint8_t *base;			/* immutable while live: the memory */
	uint64_t length;		/* immutable while live: bytes asked */
	void *map;			/* immutable while live: what to unmap */
	size_t map_len;			/* immutable while live */
	uint64_t charged;		/* immutable while live: in dm_used */
	bool fork_child;		/* immutable while live: allocated on
					 * a context inherited across fork() */
	bool imported;			/* immutable while live: another
					 * process's DM (ibv_import_dm) */
	struct srdma_shm_dm *sh;	/* immutable while live: the header
					 * (in the file, or local_sh) */
	struct srdma_shm_dm local_sh;	/* the header of a private DM (fork
					 * child's) */
	char name[48];			/* immutable while live: the file */
	_Atomic uint32_t n_mr;		/* atomic: our MRs registered over it */
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
 * srdma_dm_free() - ibv_free_dm: destroy the DM for every process that
 * shares it, then release ours (also the owner's, when an importer
 * destroyed it first). Return: 0, -EINVAL (not a live DM: freed
 * already), -EBUSY (MRs of any process are registered over it).
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
 * srdma_dm_import() - ibv_import_dm of the source's DM @handle into the
 * imported context @ctx: map the owner's DM file after checking that its
 * header names that DM of that owner (pid, start time, LID, handle) and
 * that it is live. Each import is an object of its own (ibv_unimport_dm
 * forgets it, ibv_free_dm destroys the DM for everybody).
 * Return: 0 with *@out published, -EINVAL (not an imported context, no
 * such live DM, the owner gone), -ENOMEM.
 */
int srdma_dm_import(struct srdma_context *ctx, uint32_t handle,
		    struct srdma_dm **out);

/**
 * srdma_dm_unimport() - ibv_unimport_dm: forget an imported DM, touching
 * nothing of the owner's. A DM of ours (an alias) is left alone.
 * Return: 0, -EINVAL (not a live DM), -EBUSY (MRs of ours use it: kept).
 */
int srdma_dm_unimport(struct ibv_dm *ibdm);

/**
 * srdma_dm_find() - the live DM of @ctx whose handle is @handle, or NULL
 * (ibv_import_dm).
 */
struct srdma_dm *srdma_dm_find(struct srdma_context *ctx, uint32_t handle);

#endif
