// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * completer.c - the completer stage: our own send completions and the
 * error rules of our QPs (engine.h), whichever transport ran the WQE.
 *
 * The host requester (requester.c) knows a WQE's result as soon as it
 * has run the responder against the target's segment, and completes it
 * at once; the net requester (transport/net/req.c) learns it from an
 * ACK, a NAK or a timeout, later. Both come here, under the QP's
 * sq_lock, so the rules are written once (verbs-semantics §5):
 *
 *  - a successful WQE is counted (srdma status) and gets a CQE only if
 *    it was signaled; a failed one always gets a CQE, with byte_len 0;
 *  - a failed WQE moves our QP to ERR: its receive queue is flushed (or,
 *    with an SRQ, LAST_WQE_REACHED is reported) and the transport's
 *    pending sends are flushed behind it (the host requester's deferred
 *    WQEs meet the ERR state when they are next tried and complete with
 *    WR_FLUSH_ERR then, in order).
 */
#include "core/core.h"
#include "core/dp.h"
#include "engine/engine.h"
#include "transport/net/net.h"

/* The WC opcode a send WR opcode completes with. */
static uint32_t wc_opcode(uint32_t op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}

void srdma_comp_post(struct srdma_qp *qp, uint64_t wr_id, uint32_t wr_opcode,
		     int status, uint32_t byte_len)
{
	struct srdma_shm_cqe c = { 0 };

	c.wr_id = wr_id;
	c.status = (uint8_t)status;
	c.opcode = (uint8_t)wc_opcode(wr_opcode);
	c.qp_num = qp->ib.qp.qp_num;
	c.byte_len = byte_len;
	srdma_cqe_post(qp->ctx, NULL, qp->send_cq->slot, &c, false);
}

void srdma_comp_qp_error_locked(struct srdma_qp *qp)
{
	uint32_t old = atomic_exchange(&qp->sh->state, IBV_QPS_ERR);

	qp->ib.qp.state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	if (old == IBV_QPS_ERR)
		return;
	if (!qp->srq)
		srdma_rq_flush(qp->ctx, NULL, qp->ctx->host.seg, qp->sh,
			       qp->ib.qp.qp_num);
	else
		srdma_aev_post(qp->ctx, NULL, IBV_EVENT_QP_LAST_WQE_REACHED,
			       SRDMA_AEV_OBJ_QP, qp->slot, qp->sh->gen);
	if (qp->net)
		srdma_netreq_flush_locked(qp);
}

void srdma_comp_req(struct srdma_qp *qp, uint64_t wr_id, uint32_t wr_opcode,
		    bool signaled, int status, uint32_t byte_len)
{
	if (status != IBV_WC_SUCCESS) {
		atomic_fetch_add_explicit(&qp->sh->n_err, 1,
					  memory_order_relaxed);
		srdma_comp_post(qp, wr_id, wr_opcode, status, 0);
		srdma_comp_qp_error_locked(qp);
		return;
	}
	atomic_fetch_add_explicit(&qp->sh->n_sent, 1, memory_order_relaxed);
	if (signaled)
		srdma_comp_post(qp, wr_id, wr_opcode, IBV_WC_SUCCESS, byte_len);
}
