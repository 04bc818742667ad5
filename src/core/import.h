/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * import.h - ibv_import_device/pd/mr of another process's context.
 *
 * Within one process an import is an alias (src/verbs/ibv_dm.c). Across
 * processes, the importer gets a context of its own (its own segment, LID
 * and QPNs, so its QPs are reachable as any context's) that holds a peer
 * reference to the owner's context, the "source": imported PDs are local
 * PDs carrying the owner's PD number, imported MRs are local descriptions
 * of the owner's key table entries, and the engine reaches their bytes in
 * the owner's address space through the same cross-memory attach that
 * serves any peer. Design: docs/design/import.md.
 */
#ifndef SRDMA_CORE_IMPORT_H
#define SRDMA_CORE_IMPORT_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/key_table.h"
#include "transport/host/shm_layout.h"

struct srdma_context;
struct srdma_device;
struct srdma_pd;
struct srdma_peer;

/* What an imported context knows of its source. All immutable. */
struct srdma_import {
	struct srdma_peer *peer;	/* the owner's context, one reference
					 * (dropped at close) */
	int32_t pid;			/* owner, as the fd's header named it */
	uint64_t start;			/* its start time */
	uint32_t lid;			/* its LID */
};

/* An MR imported from another process: a description, nothing owned. */
struct srdma_imr {
	struct ibv_mr ibmr;		/* immutable after publish */
	struct srdma_pd *pd;		/* immutable: holds one use of it */
};

/**
 * srdma_import_ctx_open() - ibv_import_device of @cmd_fd, a context fd of
 * another process whose segment header is @hdr (already read and its
 * magic checked): open a context of our own, find the owner's context in
 * the registry (LID, pid, start time and key secret must all match the
 * header, so a stale fd or a recycled LID or pid is refused), and link it
 * as the source. The new context's cmd_fd is @cmd_fd, so importing that
 * fd again reaches the same source.
 * Return: 0 with *@out set (and @cmd_fd owned by it), or -errno: -EINVAL
 * (the owner is gone, or the fd names no context live in our registry:
 * another SRDMA_DIR, another PID namespace), or what opening a context
 * returns. @cmd_fd is left open on failure. Context: any thread.
 */
int srdma_import_ctx_open(struct srdma_device *dev, int cmd_fd,
			  const struct srdma_seg_hdr *hdr,
			  struct srdma_context **out);

/**
 * srdma_import_ctx_fini() - at close of an imported context: drop the
 * source. No-op for another context. Context: srdma_context_close().
 */
void srdma_import_ctx_fini(struct srdma_context *ctx);

/**
 * srdma_import_live() - is @ctx an imported context whose source's owner
 * still lives? @strict asks the kernel now (control paths), else at the
 * peer machinery's rate (data paths). Context: any thread.
 */
bool srdma_import_live(struct srdma_context *ctx, bool strict);

/**
 * srdma_import_has_importers() - does a live context of another process
 * import @ctx (its segment header names @ctx as import_lid/import_pid)?
 * A registry scan that reads the header of each live context: for rare
 * paths only (a PD's shared uses that may be a dead importer's).
 * Context: any thread, no lock held.
 */
bool srdma_import_has_importers(struct srdma_context *ctx);

/**
 * srdma_import_pd() - ibv_import_pd of the source's PD @handle into the
 * imported context @ctx: a new local PD object with that number (each
 * import is its own object, released with ibv_unimport_pd or
 * ibv_dealloc_pd).
 * Return: 0 with *@out set, -EINVAL (not an imported context, or no live
 * PD @handle in the source, or the source is gone), -ENOMEM.
 */
int srdma_import_pd(struct srdma_context *ctx, uint32_t handle,
		    struct srdma_pd **out);

/**
 * srdma_import_pd_drop() - release an imported PD: ibv_unimport_pd
 * forgets it; with @destroy (ibv_dealloc_pd, which ibv_import_pd(3) makes
 * a destroy) the source's PD is destroyed for every process first, if no
 * object of any process uses it (its shared use word, from 0 to DEAD):
 * later imports of it are EINVAL, and so are its owner's and every
 * importer's uses of it (srdma_pd_lookup).
 * Return: 0, -EBUSY (objects of ours, or of the owner or another
 * importer, use it: nothing changed), -EINVAL (not an imported PD).
 */
int srdma_import_pd_drop(struct srdma_pd *pd, bool destroy);

/**
 * srdma_import_mr() - ibv_import_mr of the source's MR @handle (its key
 * table slot) on the imported PD @pd: the MR must be live (a valid key of
 * kind MR) and belong to @pd's PD number. lkey, rkey, addr, length and
 * handle are the owner's.
 * Return: 0 with *@out published, -EINVAL (no such MR, another PD's, the
 * source is gone), -ENOMEM.
 */
int srdma_import_mr(struct srdma_pd *pd, uint32_t handle,
		    struct srdma_imr **out);

/* Resolve a public MR pointer to an imported MR of ours, or NULL. Never
 * dereferences @ibmr when it is not one. */
struct srdma_imr *srdma_imr_lookup(struct ibv_mr *ibmr);

/**
 * srdma_import_mr_drop() - forget an imported MR (ibv_unimport_mr), and
 * with @destroy also invalidate its key in the source (ibv_dereg_mr from
 * the importer, which ibv_import_mr(3) makes a destroy), waiting for the
 * accesses already under way.
 * Return: 0, or -EINVAL (not an imported MR).
 */
int srdma_import_mr_drop(struct ibv_mr *ibmr, bool destroy);

/* ---- data path --------------------------------------------------------- */

/* The imported MRs one WR touches: marks in the source, bytes bounced. */
struct srdma_import_io {
	struct srdma_context *ctx;
	struct srdma_peer *peer;	/* the source; no reference of its own */
	char *buf;			/* bounce buffer for every span */
	uint64_t used;			/* bytes of buf handed out */
	uint64_t cap;
	uint32_t n;
	struct {
		struct srdma_key_ref ref;
		int rec;		/* our access record */
		uint64_t off;		/* in buf */
		uint64_t len;
		bool scatter;		/* written back by commit */
	} span[];
};

/**
 * srdma_import_acquire() - an SGE whose lkey our own key table does not
 * know, of a QP of PD number @pd in the imported context @ctx: check the
 * key in the source's table (the one key check, with @access), mark it in
 * flight under one of our access records, and give the caller a buffer of
 * its own that stands for the source's bytes: filled from them now for a
 * gather (@access 0), written back to them by srdma_import_commit() for a
 * scatter. *@io is created on first use (@total: the WR's SGE bytes, the
 * most the bounce buffer can need; @nsge its SGE count).
 * Context: the requester, for each WR; allocates (imported MRs only).
 * Return: SRDMA_KCHK_OK with *@local set, or the failing check
 * (SRDMA_KCHK_NOKEY also when @ctx is not imported, the source is gone,
 * or its memory could not be read).
 */
int srdma_import_acquire(struct srdma_context *ctx,
			 struct srdma_import_io **io, uint64_t total,
			 uint32_t nsge, uint32_t pd, const struct ibv_sge *s,
			 uint32_t access, void **local);

/**
 * srdma_import_check() - the one key check of SGE @s (its lkey, addr,
 * length) in the source's key table of the imported context @ctx, for a
 * QP of PD number @pd, without marking anything (a check before a WR's
 * first packet; each copy checks again).
 * Context: any thread. Return: SRDMA_KCHK_OK or the failing check
 * (SRDMA_KCHK_NOKEY also when @ctx is not imported or its source is gone).
 */
int srdma_import_check(struct srdma_context *ctx, uint32_t pd,
		       const struct ibv_sge *s, uint32_t access);

/**
 * srdma_import_copy() - move @len bytes between our buffers @liov (@nl
 * entries, @len bytes in all) and [@addr, @addr + @len) of the source's MR
 * @lkey: into the source (@to_source: a scatter, LOCAL_WRITE checked) or
 * out of it (a gather). The key is checked and marked in flight under one
 * of our access records for the copy, as srdma_import_acquire() does, and
 * the copy never addresses a pid that is no longer the owner's
 * (srdma_peer_vm_rw). For requesters that copy per packet (net), which
 * need no bounce buffer of their own: @liov is theirs.
 * Context: any thread. Return: 0; -EACCES with *@kchk the failing check
 * (SRDMA_KCHK_NOKEY also: not imported, source gone, no access record);
 * -EFAULT (the bytes could not be moved; *@kchk is SRDMA_KCHK_OK).
 */
int srdma_import_copy(struct srdma_context *ctx, uint32_t pd, uint32_t lkey,
		      uint64_t addr, const struct iovec *liov, uint32_t nl,
		      uint64_t len, bool to_source, int *kchk);

/**
 * srdma_import_commit() - write every scatter span back to the source.
 * Return: 0, or -EFAULT (the source is gone or its memory unmapped).
 */
int srdma_import_commit(struct srdma_import_io *io);

/* Release every mark and free @io (NULL: no-op). */
void srdma_import_release(struct srdma_import_io *io);

#endif
