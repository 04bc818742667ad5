/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * raw.h - raw packet QPs, flow steering and RSS on an Ethernet port:
 * receive work queues (ibv_wq), indirection tables, RSS QPs, flows, and
 * the host-wide flow table that decides which QPs a frame reaches.
 *
 * A receive work queue is a hidden receive-only raw packet QP (its QPN is
 * the WQ number), so a frame lands in it exactly as in a raw QP's receive
 * queue: through the responder's receive-queue rules, from any process.
 * Design: docs/design/raw-packet.md.
 */
#ifndef SRDMA_CORE_RAW_H
#define SRDMA_CORE_RAW_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "core/dp.h"

#define SRDMA_RSS_KEY_LEN 40u		/* Toeplitz key (mlx5: 40 bytes) */
#define SRDMA_RSS_LOG_MAX 8u		/* indirection table: 256 WQs */
#define SRDMA_RAW_MAX_FRAME 9216u	/* a jumbo frame, FCS excluded */
#define SRDMA_RSS_FIELDS (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | \
			  IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 | \
			  IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP | \
			  IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)
#define SRDMA_MAX_RWQ_TBL 256u		/* indirection tables per context */

struct srdma_wq {
	struct ibv_wq ibwq;		/* public */
	struct srdma_context *ctx;	/* immutable */
	struct srdma_qp *qp;		/* immutable: receive-only raw QP */
	uint32_t n_tbl;			/* ctx->lock: tables naming it */
};

struct srdma_rwq_tbl {
	struct ibv_rwq_ind_table ib;	/* public */
	struct srdma_context *ctx;	/* immutable */
	uint32_t size;			/* immutable: 1 << log_size */
	struct srdma_wq **wq;		/* immutable: size entries */
	uint32_t n_qp;			/* ctx->lock: RSS QPs using it */
};

/* What a raw packet QP has beyond an ordinary QP (qp->raw). */
struct srdma_raw_qp {
	struct srdma_rwq_tbl *tbl;	/* immutable: RSS QP's table, or NULL */
	uint64_t hash_fields;		/* immutable: IBV_RX_HASH_* */
	uint8_t hash_key[SRDMA_RSS_KEY_LEN]; /* immutable */
	uint32_t n_flow;		/* ctx->lock: flows steering to it */
	bool wire;			/* immutable: counted by rawwire.c */
};

struct srdma_flow {
	struct ibv_flow ib;		/* public */
	struct srdma_qp *qp;		/* immutable */
	uint32_t slot;			/* immutable: host flow table slot */
};

/**
 * srdma_raw_qp_allowed() - may this process create a raw packet QP on
 * @ctx's port? As mlx5: an Ethernet port (else -EOPNOTSUPP) and
 * CAP_NET_RAW in the effective set (else -EPERM). Logs the refusal.
 */
int srdma_raw_qp_allowed(struct srdma_context *ctx);

/**
 * srdma_raw_qp_setup() - give @qp (raw packet type, just created) its
 * raw half; for an RSS QP check and take @a's hash configuration and
 * indirection table. Return: 0, -EINVAL (bad hash key, table),
 * -EOPNOTSUPP (hash function or fields not offered), -ENOMEM.
 * Context: creation, nothing held.
 */
int srdma_raw_qp_setup(struct srdma_qp *qp,
		       const struct ibv_qp_init_attr_ex *a);
/**
 * srdma_raw_qp_release_locked() - the raw half of @qp at destroy.
 * Return: 0, or -EBUSY while flows still steer to it (nothing changed).
 * Context: destroy, ctx->lock held. The caller then drops the wire
 * (srdma_rawwire_put()) if r->wire was set, without ctx->lock.
 */
int srdma_raw_qp_release_locked(struct srdma_qp *qp);

/**
 * srdma_qp_create_wq() - srdma_qp_create() for the hidden raw packet QP
 * of a work queue: no CAP_NET_RAW needed (mlx5 asks it of the RSS QP).
 * Defined in qp.c.
 */
int srdma_qp_create_wq(struct srdma_context *ctx,
		       struct ibv_qp_init_attr_ex *a, struct srdma_qp **out);

/* Work queues (ibv_create_wq and friends): 0 or -errno. */
int srdma_wq_create(struct srdma_context *ctx, struct ibv_wq_init_attr *a,
		    struct srdma_wq **out);
int srdma_wq_modify(struct srdma_wq *wq, struct ibv_wq_attr *a);
int srdma_wq_destroy(struct srdma_wq *wq);
int srdma_rwq_tbl_create(struct srdma_context *ctx,
			 struct ibv_rwq_ind_table_init_attr *a,
			 struct srdma_rwq_tbl **out);
int srdma_rwq_tbl_destroy(struct srdma_rwq_tbl *t);

/**
 * srdma_flow_create() - steer the frames matching @a's specs to @qp
 * (a raw packet QP or an RSS QP), in the host-wide flow table.
 * Return: 0; -EINVAL (a malformed attribute or spec: size, port, a spec
 * type verbs does not know, contradicting specs); -EOPNOTSUPP (a spec,
 * flow type or flag verbs knows but softrdma does not offer); -ENOSPC
 * (the host flow table is full); -EIO (the table cannot be opened).
 */
int srdma_flow_create(struct srdma_qp *qp, struct ibv_flow_attr *a,
		      struct srdma_flow **out);
int srdma_flow_destroy(struct srdma_flow *f);

/**
 * srdma_flow_route() - the QPs of other contexts (any process of the
 * host) that frame @frame of @len bytes reaches: the flows of the best
 * (lowest) priority that match, one destination each (an RSS flow picks
 * its WQ by the Toeplitz hash); no flow, no destination (mlx5's default
 * drop). Frames are not looped back to the sending context, as mlx5's
 * default self-loopback block. Each destination comes with the owner's
 * pid and start time, to be compared with the peer resolved for it.
 * @from_wire: the frame came from the interface (transport/net/rawwire.c):
 * only @ctx's own flows apply, instead of all but @ctx's.
 * Return: the number of destinations written (at most @max), or -errno.
 * Context: any thread; takes the flow table's shared lock.
 */
struct srdma_raw_dest {
	uint32_t qpn;
	int32_t pid;
	uint64_t start;
};
int srdma_flow_route(struct srdma_context *ctx, const uint8_t *frame,
		     uint32_t len, bool from_wire, struct srdma_raw_dest *dst,
		     int max);

/**
 * srdma_toeplitz() - the Toeplitz hash of @n bytes of @in under @key
 * (SRDMA_RSS_KEY_LEN bytes; at most key length - 4 input bytes).
 */
uint32_t srdma_toeplitz(const uint8_t *key, const uint8_t *in, uint32_t n);

#endif
