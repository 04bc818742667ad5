/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * restrack.h - publishing a context's resources for `srdma status`.
 *
 * Most of what status shows is in the control segment already, because
 * the data path needs it there (key, CQ, QP and SRQ tables). This is the
 * rest: the PD list and a mirror of the net endpoint's counters, in the
 * segment's resource table (struct srdma_shm_rt, shm_layout.h). The owner
 * writes, any process of the user reads; nothing in the library reads it
 * back. Design: docs/design/host-segment.md, "The resource table".
 */
#ifndef SRDMA_CORE_RESTRACK_H
#define SRDMA_CORE_RESTRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/host/shm_layout.h"

struct srdma_context;

/**
 * srdma_rt_pd_add() - list PD @handle in the resource table (or count it
 * as unlisted when the table is full).
 * Context: the owner, ctx->lock held, after the PD is built.
 * Return: the slot's use word (zeroed; the PD's shared use count, which
 * importers change too), or NULL for an unlisted PD.
 */
_Atomic uint32_t *srdma_rt_pd_add(struct srdma_context *ctx, uint32_t handle);

/**
 * srdma_rt_pd_del() - withdraw PD @handle, before it is freed.
 * Context: the owner, ctx->lock held.
 */
void srdma_rt_pd_del(struct srdma_context *ctx, uint32_t handle);

/**
 * srdma_rt_stats_layout() - the fingerprint of what `srdma status` reads
 * without a version to check it: the offsets and sizes of struct
 * srdma_net_qp_stats' fields and the number of drop causes.
 *
 * A tool and a library built from different sources may agree on the
 * segment version and still disagree here; status compares the owner's
 * stamp with its own before reading any net QP counter.
 *
 * Return: the fingerprint, never 0.
 */
uint32_t srdma_rt_stats_layout(void);

/**
 * srdma_rt_stamp() - write srdma_rt_stats_layout() into @ctx's resource
 * table. Called once by the owner before the segment is published.
 * @ctx: the context
 */
void srdma_rt_stamp(struct srdma_context *ctx);

/**
 * srdma_rt_ep_mirror() - copy the context's net endpoint counters into the
 * resource table. Cheap (about 45 relaxed loads and stores); skipped when
 * another thread of the owner is mirroring at the same moment, or when the
 * context has no endpoint.
 * Context: any thread of the owner; no lock needed, none taken.
 * Return: true if a counter other than the progress thread's wake-ups
 * changed since the last mirror (or the copy was skipped for a concurrent
 * one): the progress thread then wakes once more within
 * SRDMA_RT_SETTLE_NS, so what a polling application received inline
 * after this copy is mirrored too.
 */
bool srdma_rt_ep_mirror(struct srdma_context *ctx);

/* How soon the progress thread mirrors again after activity (ns). */
#define SRDMA_RT_SETTLE_NS 100000000ull

/* A consistent copy of a resource table's endpoint mirror. */
struct srdma_rt_ep_snap {
	uint64_t time_ns;		   /* CLOCK_REALTIME of the mirror */
	uint64_t ep[SRDMA_RT_EP_WORDS];	   /* SRDMA_RT_EP_* */
	uint64_t drops[SRDMA_RT_EP_DROPS]; /* by enum srdma_drop */
};

/* srdma_rt_ep_snapshot() results. */
enum srdma_rt_snap {
	SRDMA_RT_SNAP_OK = 0,
	SRDMA_RT_SNAP_NONE, /* never mirrored: no net endpoint */
	SRDMA_RT_SNAP_TORN, /* writer died mid-update, or garbage */
};

/**
 * srdma_rt_ep_snapshot() - copy @rt's endpoint mirror into @out with the
 * seqlock protocol, giving up after a bounded number of tries. @rt may be
 * anything (another process's memory, written by anyone of the user).
 * Context: any process; never blocks, never writes @rt.
 * Return: enum srdma_rt_snap.
 */
enum srdma_rt_snap srdma_rt_ep_snapshot(struct srdma_shm_rt *rt,
					struct srdma_rt_ep_snap *out);

#endif
