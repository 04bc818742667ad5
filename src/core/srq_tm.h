/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * srq_tm.h - tag-matching SRQs (IBV_SRQT_TM): the shared tag list and the
 * owner's side of it (create, ibv_post_srq_ops, destroy).
 *
 * A TM SRQ is a basic SRQ (its receives are the "unexpected" buffers)
 * plus a tag list in the ring arena, named by the SRQ entry's tm_off.
 * Whoever delivers a message to a QP on the SRQ matches it against the
 * list: an initiator of this host in its own thread, our progress thread
 * for the net transport (engine/tm.c). The owner edits the list in
 * ibv_post_srq_ops. Both hold the SRQ's rq.rlock, which guards every
 * mutable word below. Design: docs/design/tag-matching.md.
 */
#ifndef SRDMA_CORE_SRQ_TM_H
#define SRDMA_CORE_SRQ_TM_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/dp.h"

/* ---- limits reported in tm_caps ----------------------------------------- */
#define SRDMA_TM_MAX_TAGS 255u		/* mlx5: 2^k - 1 */
#define SRDMA_TM_MAX_OPS 32768u		/* mlx5: 1 << log_max_qp_sz */
#define SRDMA_TM_MAX_SGE 4u		/* mlx5: 1 */
#define SRDMA_TM_MAX_RNDV_HDR 64u	/* mlx5: 64 */
/* Unexpected messages the device may be ahead of the application before
 * an unexpected receive asks for a sync (IBV_WC_TM_SYNC_REQ), as mlx5. */
#define SRDMA_TM_MAX_SYNC_DIFF 0x3fffu

#define SRDMA_TM_MAGIC 0x53544d31u	/* "STM1" */

/* struct srdma_shm_tm_tag.state */
enum {
	SRDMA_TAG_FREE = 0,
	SRDMA_TAG_POSTED = 1,		/* in the list: may match */
	SRDMA_TAG_BUSY = 2,		/* matched a rendezvous whose data is
					 * still being read: not deletable */
};

/* One entry of the tag list (shared memory ABI). */
struct srdma_shm_tm_tag {
	uint32_t state;			/* rlock: SRDMA_TAG_* */
	uint32_t num_sge;		/* rlock; <= SRDMA_TM_MAX_SGE */
	uint32_t coherent;		/* rlock: added while the application
					 * had seen every unexpected message */
	uint32_t reserved;
	uint64_t seq;			/* rlock: order of addition */
	uint64_t tag;			/* rlock */
	uint64_t mask;			/* rlock */
	uint64_t wr_id;			/* rlock: the ADD's recv_wr_id */
	struct srdma_shm_rsge sge[SRDMA_TM_MAX_SGE];	/* rlock */
};
static_assert(sizeof(struct srdma_shm_tm_tag) == 112, "TM tag is ABI");

/* The list header, followed by max_tags entries (shared memory ABI). */
struct srdma_shm_tm {
	uint32_t magic;			/* SRDMA_TM_MAGIC; immutable */
	uint32_t max_tags;		/* immutable */
	uint32_t cq;			/* CQ slot of every TM completion;
					 * immutable */
	uint32_t hw_unexp;		/* rlock: unexpected messages the
					 * device delivered (wraps) */
	uint32_t sw_unexp;		/* rlock: the application's count, from
					 * the last op with IBV_OPS_TM_SYNC */
	uint32_t reserved0;
	uint64_t next_seq;		/* rlock */
	uint64_t reserved[5];
	struct srdma_shm_tm_tag tags[];
};
static_assert(sizeof(struct srdma_shm_tm) == 72, "TM list header is ABI");

/* Bytes of the list of @max_tags entries. */
static inline uint64_t srdma_tm_bytes(uint32_t max_tags)
{
	return sizeof(struct srdma_shm_tm) +
	       (uint64_t)max_tags * sizeof(struct srdma_shm_tm_tag);
}

/*
 * The tag and app_ctx of a matched message's CQE (wc_flags has
 * IBV_WC_TM_MATCH; as on mlx5, a rendezvous' later TM_DATA_VALID
 * completion has none) ride in CQE fields such a completion does not use
 * otherwise: imm and vendor_err (the tag), and pkey_index and reserved0
 * (app_ctx). The message's immediate (or invalidated rkey: wc_flags has
 * IBV_WC_WITH_IMM or IBV_WC_WITH_INV) then moves to slid, sl and
 * dlid_path_bits, which ibv_poll_cq(3) defines for UD only (a TM SRQ
 * serves RC QPs only). The poller zeroes the borrowed fields in the
 * ibv_wc and returns the immediate in imm_data (cq.c, srdma_cqe_imm());
 * ibv_wc_read_tm_info() hands out the tag.
 *
 * A writer built before the immediate moved leaves WITH_IMM clear on a
 * matched CQE (it lost the immediate), so readers see imm_data 0 there,
 * as they did; an older reader of a newer writer's CQE sees WITH_IMM with
 * imm_data 0 and the immediate in slid.
 */
#define SRDMA_TM_CQE_INFO IBV_WC_TM_MATCH
#define SRDMA_TM_CQE_IMM (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)

static inline void srdma_tm_cqe_set_info(struct srdma_shm_cqe *c,
					 uint64_t tag, uint32_t app_ctx)
{
	if (c->wc_flags & SRDMA_TM_CQE_IMM) {
		c->slid = (uint16_t)(c->imm >> 16);
		c->sl = (uint8_t)(c->imm >> 8);
		c->dlid_path_bits = (uint8_t)c->imm;
	} else {
		c->slid = 0;
		c->sl = 0;
		c->dlid_path_bits = 0;
	}
	c->imm = (uint32_t)tag;
	c->vendor_err = (uint32_t)(tag >> 32);
	c->pkey_index = (uint16_t)app_ctx;
	c->reserved0 = (uint16_t)(app_ctx >> 16);
}

/* The tag and app_ctx of @c: 0 unless it carries them. */
static inline void srdma_tm_cqe_info(const struct srdma_shm_cqe *c,
				     uint64_t *tag, uint32_t *app_ctx)
{
	if (!(c->wc_flags & SRDMA_TM_CQE_INFO)) {
		*tag = 0;
		*app_ctx = 0;
		return;
	}
	*tag = (uint64_t)c->vendor_err << 32 | c->imm;
	*app_ctx = (uint32_t)c->reserved0 << 16 | c->pkey_index;
}

/* imm_data of @c as the application sees it (network order raw). */
static inline uint32_t srdma_cqe_imm(const struct srdma_shm_cqe *c)
{
	if (!(c->wc_flags & SRDMA_TM_CQE_INFO))
		return c->imm;
	if (!(c->wc_flags & SRDMA_TM_CQE_IMM))
		return 0;
	return (uint32_t)c->slid << 16 | (uint32_t)c->sl << 8 |
	       c->dlid_path_bits;
}

/* True when @c's vendor_err, pkey_index, slid, sl and dlid_path_bits are
 * borrowed (read as 0). */
static inline bool srdma_cqe_tm_borrowed(const struct srdma_shm_cqe *c)
{
	return c->wc_flags & SRDMA_TM_CQE_INFO;
}

/**
 * srdma_srq_tm_create() - ibv_create_srq_ex() of an IBV_SRQT_TM SRQ.
 * @ibctx: the context
 * @a:     the application's attributes (max_wr/max_sge written back)
 * @out:   the SRQ
 *
 * Checks comp_mask (TYPE, PD, CQ and TM required, nothing unknown), the PD
 * and CQ (ours), tm_cap (1..SRDMA_TM_MAX_TAGS tags, 1..SRDMA_TM_MAX_OPS
 * ops), then builds a basic SRQ and hangs the tag list on it.
 * Context: any thread; takes ctx->lock.
 * Return: 0, -EINVAL (bad attributes, logged), -ENOMEM.
 */
int srdma_srq_tm_create(struct ibv_context *ibctx,
			struct ibv_srq_init_attr_ex *a, struct srdma_srq **out);

/**
 * srdma_srq_tm_post_ops() - ibv_post_srq_ops(): execute @wr and the WRs
 * chained to it, in order, each to completion (its CQE, when signaled or
 * failed, is in the SRQ's CQ before the next starts).
 * Return: 0; -EINVAL (not a TM SRQ, unknown opcode or flags, bad SGE
 * count, DEL handle out of range) or -ENOMEM (tag list full) with *@bad
 * the refused WR and the WRs before it executed.
 * Context: any thread; takes the SRQ's shared lock.
 */
int srdma_srq_tm_post_ops(struct srdma_srq *srq, struct ibv_ops_wr *wr,
			  struct ibv_ops_wr **bad);

/**
 * srdma_srq_tm_fini() - unhang and free the tag list of @srq, if it has
 * one (srdma_srq_destroy, after the SRQ entry is unpublished).
 * Context: ctx->lock held.
 */
void srdma_srq_tm_fini(struct srdma_srq *srq);

#endif
