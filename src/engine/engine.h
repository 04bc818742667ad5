/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * engine.h - what the engine offers the transports: the completer (our
 * own CQEs and the error/flush rules of a QP) and the requester's hand-off
 * to the net transport.
 *
 * The engine is three stages that know nothing of how bytes travel
 * (docs/design/data-path.md): the requester (requester.c) validates and
 * converts send WRs and hands each to its transport; the responder
 * (responder.c, responder.h) checks an incoming operation against the
 * target QP, its keys and its receive queue and applies it; the completer
 * (completer.c) turns results into CQEs and moves QPs to ERR. The host
 * transport runs the responder in the initiator's thread against the
 * target's shared segment; the net transport runs it in the target's
 * progress thread, on each packet.
 */
#ifndef SRDMA_ENGINE_ENGINE_H
#define SRDMA_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

struct srdma_qp;
struct srdma_swqe;

/**
 * srdma_comp_req() - complete send WQE @wr_id of @qp (@wr_opcode: its
 * enum ibv_wr_opcode) with @status: a CQE on the send CQ if the WQE was
 * signaled or the status is not IBV_WC_SUCCESS; an error status also
 * moves the QP to ERR (srdma_comp_qp_error_locked). Counts the send.
 * Context: qp->sq_lock held.
 */
void srdma_comp_req(struct srdma_qp *qp, uint64_t wr_id, uint32_t wr_opcode,
		    bool signaled, int status, uint32_t byte_len);

/**
 * srdma_comp_qp_error_locked() - move our QP to ERR after a failed WR:
 * flush its receive queue (or report LAST_WQE_REACHED with an SRQ) and
 * its transport's pending sends. No-op if already in ERR.
 * Context: qp->sq_lock held.
 */
void srdma_comp_qp_error_locked(struct srdma_qp *qp);

/**
 * srdma_comp_post() - post the CQE of send WQE @wr_id of @qp with @status
 * on the send CQ, and nothing else (no count, no state change): for
 * WR_FLUSH_ERR of WQEs met in a QP already in ERR.
 * Context: qp->sq_lock held.
 */
void srdma_comp_post(struct srdma_qp *qp, uint64_t wr_id, uint32_t wr_opcode,
		     int status, uint32_t byte_len);

#endif
