/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cm_private.h - what softrdma's librdmacm asks of its own libibverbs
 * beyond the verbs API.
 *
 * librdmacm links the libibverbs.so.1 next to it, so these names travel
 * in a private version node (SRDMA_PRIVATE_1, libibverbs.map) that no
 * installed header declares: they are not an interface for applications
 * and may change with any release of the pair. Return convention: 0 or
 * a negative errno, as inside the library.
 */
#ifndef SRDMA_VERBS_CM_PRIVATE_H
#define SRDMA_VERBS_CM_PRIVATE_H

#include <stdint.h>

#include <infiniband/verbs.h>

/* Progress of a QP's CQs: [0] its send CQ, [1] its receive CQ. */
struct srdma_priv_cq_marks {
	uint64_t prod[2]; /* CQEs produced so far (a position) */
	uint64_t cons[2]; /* CQEs polled so far (a position) */
	uint32_t sq_busy; /* net send WRs whose CQE is not in the CQ yet */
};

/**
 * srdma_priv_qp_cq_marks() - where the send and receive CQs of QP @qpn
 * of @ctx stand: how many CQEs were produced and how many polled, as
 * positions that only grow (except that destroying or resetting a QP
 * cleans its CQEs out, which lowers prod). A CQ the QP lacks reads 0/0.
 * And how many send WRs of the QP on the net transport have no CQE yet
 * (between hosts: queued, or waiting for the peer's ACK). Sends deferred
 * for RNR on one host are not counted: they wait for the peer's
 * application.
 * @ctx: a context of this library
 * @qpn: the QP's number; a destroyed QP is looked up safely
 * @m:   the reading
 * Return: 0, or -ENOENT when @ctx has no such QP (destroyed, opened
 * from another context, or @ctx inherited across fork()).
 * Context: any thread; takes the context's and the QP's locks briefly.
 */
int srdma_priv_qp_cq_marks(struct ibv_context *ctx, uint32_t qpn,
			   struct srdma_priv_cq_marks *m);

#endif
