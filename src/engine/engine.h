/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * engine.h - what the engine offers the verbs front end (post_send,
 * poll-driven progress) and the transports: the completer (our own CQEs
 * and the error/flush rules of a QP).
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

struct ibv_mw;
struct ibv_mw_bind;
struct ibv_send_wr;
struct srdma_cq;
struct srdma_qp;
struct srdma_swqe;

/* ---- what the engine offers the verbs front end ----------------------- */

/**
 * srdma_engine_init() - install the engine's part of core's object
 * changes (core/dp.h srdma_engine_ops: flushing and dropping deferred
 * sends, the progress thread). Idempotent and cheap.
 * Context: before opening a context whose QPs will send.
 */
void srdma_engine_init(void);

/**
 * srdma_post_send() - validate each WR (post-time checks, §5.2) and
 * execute it now, hand it to the net transport, or queue it behind a WR
 * waiting for an RNR retry.
 * Return: 0, or a positive errno with *bad set (earlier WRs stay posted).
 */
int srdma_post_send(struct srdma_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad);

/* MW type 1 bind through ops.bind_mw. Return: 0 or positive errno. */
int srdma_bind_mw(struct srdma_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *bind);

/**
 * srdma_engine_cq_progress() - what a poll of @cq drives before it reads
 * the CQ: the deferred sends (RNR) of the QPs sending to @cq. One relaxed
 * load when none waits.
 * Context: the application's poll, no lock held.
 */
void srdma_engine_cq_progress(struct srdma_cq *cq);

/**
 * srdma_engine_cq_idle() - a poll found @cq empty: receive what the net
 * transport has queued for the context ourselves (srdma_net_progress_from:
 * a bounded, non-blocking drain of the endpoint's sockets, unless the
 * context has no endpoint or SRDMA_NET_INLINE=0, or another CQ of the
 * context polled empty and looked within the last few microseconds),
 * rather than wait for its progress thread to be woken and scheduled.
 * Return: datagrams handled (> 0: poll again).
 * Context: the application's poll, no lock held.
 */
int srdma_engine_cq_idle(struct srdma_cq *cq);

/**
 * srdma_engine_ctx_blocks() - the application is about to wait for a
 * completion event of @ctx (ibv_req_notify_cq, ibv_get_cq_event) rather
 * than poll: the net transport's progress thread takes receiving back
 * from the polling application at once (srdma_net_poll_end).
 * Context: the application, no lock held.
 */
void srdma_engine_ctx_blocks(struct srdma_context *ctx);

/* ---- what the engine offers the transports ----------------------------- */

struct srdma_context;
/**
 * srdma_raw_input() - a frame of @len bytes arrived on @ctx's interface
 * (transport/net/rawwire.c): put it into the receive queues @ctx's flows
 * steer it to, as a frame of the host is (no flow: dropped).
 * Context: the context's raw receiver thread; nothing held.
 */
void srdma_raw_input(struct srdma_context *ctx, const uint8_t *frame,
		     uint32_t len);

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
