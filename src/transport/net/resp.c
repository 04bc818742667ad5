// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * resp.c - the responder of a net QP: what a RoCE NIC's receive side does
 * with the requests of its peer (net.h, docs/design/net-responder.md).
 *
 * The endpoint hands us one parsed packet at a time (srdma_netresp_input),
 * in the context's progress thread or in an application thread that polls,
 * with nq->resp_lock taken here around all of our state. We decide where
 * the packet stands in the request stream and answer on the wire; every
 * rule about the target itself (QP state and access flags, the key check,
 * the receive queue, CQEs, async events, the memory copies) is the
 * engine's responder (engine/responder.h), shared with the host transport,
 * so a request is judged the same whichever way it came.
 *
 * RC, as rxe and the IBTA have it:
 *   - ePSN is the next PSN we expect. A packet beyond it draws one NAK
 *     (PSN sequence error, carrying ePSN); later out-of-order packets are
 *     dropped silently until ePSN arrives. A packet before it is a
 *     duplicate: SEND and WRITE are acknowledged again with ePSN - 1; a
 *     READ or an atomic is answered from the saved responder resource
 *     whose PSN range holds it (a READ is replayed reading memory again,
 *     an atomic returns the value saved when it ran, never running twice).
 *   - Resources: a ring of max_dest_rd_atomic entries (rounded up to a
 *     power of two, at least one), reused oldest first.
 *   - ACK when the packet asks (AckReq), cumulative; a receive CQE of
 *     the message is in its CQ before the ACK leaves, its completion
 *     event (the channel wake-up) only after (rc_input); atomics always get
 *     their ATOMIC_ACK, READs their responses; errors move the QP to
 *     ERR (async event posted) and THEN send a NAK carrying the failing
 *     packet's PSN (invalid request 0x61, remote access 0x62, remote
 *     operational 0x63), so the requester never sees RTS after it; RNR: an
 *     RNR NAK with the QP's min_rnr_timer, ePSN not advanced.
 *   - MSN counts completed messages and goes into every AETH.
 * UC: no answers; on a PSN gap the rest of the message is dropped until a
 * FIRST or ONLY packet; what RC would NAK is dropped. UD: only SEND_ONLY,
 * Q_Key checked, the 40-byte GRH area written before the payload.
 *
 * Receive WQEs: a message takes the head WQE at its first packet. From an
 * SRQ, which other QPs share, it is consumed at once and its CQE posted at
 * the end. From the QP's own receive queue, of which we are the only
 * consumer, it is only copied at the first packet and consumed with its
 * CQE at the end, so a UC message dropped half way leaves it where it was
 * (verbs-semantics §5.5, as the host transport and rxe do). A message
 * abandoned on UC keeps its WQE for the next one.
 *
 * Nothing in a packet is trusted: lengths, PSNs, keys and addresses are
 * checked against our state and the engine's before any byte moves; a
 * packet that fails is dropped and counted (srdma_net_drop) or answered
 * with the NAK the rules ask for. The memory a READ response carries is
 * copied per packet into the packet's own buffer, its rkey checked again
 * for each packet (the region may go away half way, as rxe rechecks).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/qp_state.h"
#include "engine/responder.h"
#include "transport/net/gid.h"
#include "transport/net/net.h"
#include "util/log.h"

#define GRH_BYTES 40u
#define MAX_MTU 4096u
/* Delayed ACKs (net-responder.md, "ACK timing"). */
#define ACK_DELAY_US_DEFAULT 20u	/* SRDMA_NET_ACK_DELAY_US */
#define ACK_DELAY_US_MAX 1000u
/* Our requester sent a request this recently: a reply may follow. Long
 * enough to outlast the scheduling stalls of a loaded machine (a
 * ping-pong whose round trip took > 1 ms stopped holding, and without
 * held ACKs its next round trips stall again). */
#define ACK_RECENT_NS 100000000ull
/* A QP whose own ACK timeout is shorter never holds an ACK back: the
 * peer's timeout is unknown, ours is the best guess at it. */
#define ACK_MIN_RTO_NS 1000000ull
/* Coalescing (net-responder.md, "Coalescing"): a held ACK skips one of
 * our requests only if they leave at most ACK_COALESCE_PACE_NS apart;
 * its deadline then moves to twice that interval plus a slack after
 * now, but never past ACK_COALESCE_MAX_NS after it was first held; it
 * covers at most ACK_COALESCE_MSGS messages; and after ACK_FAILS in a
 * row had to leave alone at their deadline with the peer silent since
 * (a loaded machine preempts a peer now and then: one is no sign), none
 * is skipped for a pause that starts at ACK_OFF_NS and doubles (up to
 * ACK_OFF_MAX_NS) while it keeps happening. SRDMA_NET_ACK_COALESCE=0
 * turns it off. */
#define ACK_FAILS 3u
#define ACK_COALESCE_PACE_NS 50000ull
#define ACK_COALESCE_SLACK_NS 5000ull
#define ACK_COALESCE_MAX_NS 200000ull
#define ACK_COALESCE_MSGS 8u
#define ACK_OFF_NS 10000000ull
#define ACK_OFF_MAX_NS 10000000000ull

int (*srdma_netresp_tx_hook)(struct srdma_net_qp *nq, const struct iovec *iov,
			     int n);

enum res_type {
	RES_NONE = 0,
	RES_READ,
	RES_ATOMIC,
	RES_AWRITE,			/* ATOMIC_WRITE, executed */
};

/* A responder resource: what a READ or an atomic needs for a replay. */
struct rd_res {
	enum res_type type;
	uint32_t first_psn, last_psn;
	uint64_t va;			/* READ: the request as executed */
	uint32_t rkey;
	uint32_t len;
	uint64_t orig;			/* ATOMIC: the value found */
};

enum msg_kind {
	MSG_NONE = 0,
	MSG_SEND,
	MSG_WRITE,
};

/* One packet to send: headers, payload (a READ response's bytes are
 * read straight into data[]), ICRC, and the iovecs over them. */
struct tx_slot {
	uint8_t hdr[SRDMA_MAX_IB_HDR];
	uint8_t icrc[4];
	int n;
	struct iovec iov[4];
	uint8_t data[MAX_MTU];
};

#define TX_BATCH 16		/* slots for ACKs, NAKs, atomic answers */
#define TX_READ_BATCH 64	/* slots once the QP has answered a READ */

/* All under nq->resp_lock. */
struct srdma_netresp {
	struct srdma_net_qp *nq;	/* immutable */
	uint32_t epsn;			/* next PSN expected */
	uint32_t ack_psn;		/* after the last SEND/WRITE packet
					 * taken: a duplicate SEND or WRITE is
					 * ACKed with ack_psn - 1, never with
					 * a READ's PSN (which would complete
					 * the READ without its data) */
	uint32_t msn;			/* messages completed (24 bits) */
	bool psn_nak;			/* RC: sequence NAK sent for epsn */
	bool uc_drop;			/* UC: dropping to the next FIRST */
	/* the message in progress (RC, UC) */
	enum msg_kind cur;
	uint64_t off;			/* its bytes received so far */
	uint64_t va;			/* WRITE: RETH */
	uint32_t rkey;
	uint32_t wlen;
	/* the receive WQE taken for it */
	bool have_wqe;
	bool consumed;			/* SRQ: consumed, CQE still owed */
	uint32_t xrc_srqn;		/* XRC: the SRQ of the message */
	struct srdma_rwqe wqe;
	/* READ and atomic resources */
	struct rd_res res[SRDMA_MAX_RD_ATOM];
	uint32_t res_mask;		/* entries - 1 */
	uint32_t res_next;
	/* Kept across resets: packets being sent; slots[] is allocated on
	 * first use (TX_BATCH, grown to TX_READ_BATCH at the first READ),
	 * or is &slot1 if that failed. A batch is sent when it holds
	 * tx_limit packets (READ responses: whole GSO runs, see
	 * read_batch()). */
	struct tx_slot *slots;
	int nslots, ntx, tx_limit;
	struct tx_slot slot1;
	/* Kept across resets: our own QP as the engine's target, taken on
	 * first use (a reference on the self peer), dropped at free; and
	 * the port's active MTU then (UD's limit). */
	bool have_t;
	struct srdma_target t;
	uint32_t port_mtu;
};

/* What handling a request decided, when it is not plain success. */
enum verdict {
	V_OK = 0,
	V_RNR,				/* no receive WQE */
	V_DROP,				/* already explained and counted */
	V_NAK_INV,			/* invalid request */
	V_NAK_ACC,			/* remote access error */
	V_NAK_OP,			/* remote operational error */
};

static bool op_is_send(uint8_t op)
{
	return op <= SRDMA_OP_SEND_ONLY_IMM || op == SRDMA_OP_SEND_LAST_INV ||
	       op == SRDMA_OP_SEND_ONLY_INV;
}

static bool op_is_write(uint8_t op)
{
	return op >= SRDMA_OP_WRITE_FIRST && op <= SRDMA_OP_WRITE_ONLY_IMM;
}

static bool op_is_atomic(uint8_t op)
{
	return op == SRDMA_OP_CMP_SWAP || op == SRDMA_OP_FETCH_ADD;
}

/* Count and explain a dropped request (the endpoint logs it once). */
static void drop(struct srdma_netresp *r, const struct srdma_pkt *pkt,
		 enum srdma_drop d, const char *why)
{
	char buf[192];

	if (srdma_log_level >= SRDMA_LOG_DEBUG) {
		snprintf(buf, sizeof(buf),
			 "%s (opcode %#x PSN %#x, ePSN %#x)", why,
			 pkt->opcode, pkt->psn, r->epsn);
		why = buf;
	}
	srdma_net_drop(r->nq->ctx, r->nq, d, why);
}

/* ePSN moves: `srdma status` shows it (nq->st->rq_psn). */
static void set_epsn(struct srdma_netresp *r, uint32_t psn)
{
	r->epsn = psn & 0xffffff;
	atomic_store_explicit(&r->nq->st->rq_psn, r->epsn,
			      memory_order_relaxed);
}

/* ---- sending ------------------------------------------------------------- */

static void tx_flush(struct srdma_netresp *r);

/* The slot for the next packet to send; its data[] takes the payload.
 * The batch is flushed first if it is full. */
static struct tx_slot *slot_next(struct srdma_netresp *r)
{
	if (!r->slots) {
		r->slots = malloc(TX_BATCH * sizeof(*r->slots));
		r->nslots = r->slots ? TX_BATCH : 1;
		if (!r->slots)
			r->slots = &r->slot1;
		r->tx_limit = r->nslots;
	}
	if (r->ntx >= r->tx_limit)
		tx_flush(r);
	/* A held ACK leaves before anything else we answer (a NAK, a READ
	 * response): in order, in the same batch. */
	if (atomic_load_explicit(&r->nq->ack_pending, memory_order_relaxed)) {
		struct tx_slot *sl = &r->slots[r->ntx];
		uint32_t len = srdma_netresp_ack_take(r->nq, sl->data);

		if (len) {
			sl->iov[0].iov_base = sl->data;
			sl->iov[0].iov_len = len;
			sl->n = 1;
			r->ntx++;
			if (r->ntx >= r->tx_limit)
				tx_flush(r);
		}
	}
	return &r->slots[r->ntx];
}

/* Queue the packet @pkt with @len payload bytes in @sl->data (taken by
 * slot_next()): headers, pad, ICRC. */
static void stage(struct srdma_netresp *r, struct tx_slot *sl,
		  struct srdma_pkt *pkt, uint32_t len)
{
	struct srdma_net_qp *nq = r->nq;
	static const uint8_t zeros[4];
	uint32_t hl, pad = srdma_wire_pad(len);
	int n = 0;

	pkt->pkey = SRDMA_DEFAULT_PKEY;
	pkt->dqpn = nq->dqpn & 0xffffff;
	pkt->paylen = len;
	pkt->padcnt = (uint8_t)pad;
	hl = srdma_wire_build(sl->hdr, pkt);
	if (!hl)
		return;
	sl->iov[n].iov_base = sl->hdr;
	sl->iov[n++].iov_len = hl;
	if (len) {
		sl->iov[n].iov_base = sl->data;
		sl->iov[n++].iov_len = len;
	}
	if (pad) {
		sl->iov[n].iov_base = (void *)zeros;
		sl->iov[n++].iov_len = pad;
	}
	srdma_wire_put_icrc(sl->icrc, srdma_wire_icrc(&nq->path, sl->iov, n));
	sl->iov[n].iov_base = sl->icrc;
	sl->iov[n++].iov_len = 4;
	sl->n = n;
	atomic_fetch_add_explicit(&nq->st->tx_pkts, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&nq->st->tx_bytes, hl + len + pad + 4,
				  memory_order_relaxed);
	r->ntx++;
}

/* Send what is queued, in one system call where the endpoint can. A
 * packet the socket refuses is lost, as on a wire: the requester's
 * retransmission recovers it. */
static void tx_flush(struct srdma_netresp *r)
{
	struct srdma_net_msg m[TX_READ_BATCH];
	int i, n = r->ntx;

	r->ntx = 0;
	if (!n)
		return;
	if (srdma_netresp_tx_hook) {
		for (i = 0; i < n; i++)
			srdma_netresp_tx_hook(r->nq, r->slots[i].iov,
					      r->slots[i].n);
		return;
	}
	if (n == 1) {
		srdma_net_send(r->nq->ctx, &r->nq->path, r->slots[0].iov,
			       r->slots[0].n);
		return;
	}
	for (i = 0; i < n; i++) {
		m[i].path = &r->nq->path;
		m[i].iov = r->slots[i].iov;
		m[i].n = r->slots[i].n;
	}
	srdma_net_send_batch(r->nq->ctx, m, n);
}

/* The transport bits of what our QP answers with: XRC for a TGT QP. */
static uint8_t resp_tr(const struct srdma_net_qp *nq)
{
	return nq->qp->type == IBV_QPT_XRC_RECV ? SRDMA_TR_XRC : SRDMA_TR_RC;
}

/* Build and send one payload-less packet now. */
static void xmit(struct srdma_netresp *r, struct srdma_pkt *pkt)
{
	stage(r, slot_next(r), pkt, 0);
	tx_flush(r);
}

/* An ACK, NAK or RNR NAK with @syndrome for @psn. */
static void send_ack(struct srdma_netresp *r, uint8_t syndrome, uint32_t psn)
{
	struct srdma_pkt a = { 0 };

	a.opcode = resp_tr(r->nq) | SRDMA_OP_ACK;
	a.psn = psn & 0xffffff;
	a.syndrome = syndrome;
	a.msn = r->msn;
	switch (SRDMA_AETH_TYPE(syndrome)) {
	case SRDMA_AETH_TYPE_ACK:
		/* Cumulative: it covers an ACK held back (older PSN). */
		atomic_store_explicit(&r->nq->ack_pending, 0,
				      memory_order_relaxed);
		break;
	case SRDMA_AETH_TYPE_NAK:
		atomic_fetch_add_explicit(&r->nq->st->naks_sent, 1,
					  memory_order_relaxed);
		break;
	case SRDMA_AETH_TYPE_RNR:
		atomic_fetch_add_explicit(&r->nq->st->rnr_sent, 1,
					  memory_order_relaxed);
		break;
	default:
		break;
	}
	xmit(r, &a);
}

static void send_atomic_ack(struct srdma_netresp *r, uint32_t psn,
			    uint64_t orig)
{
	struct srdma_pkt a = { 0 };

	a.opcode = resp_tr(r->nq) | SRDMA_OP_ATOMIC_ACK;
	a.psn = psn & 0xffffff;
	a.syndrome = SRDMA_AETH_ACK;
	a.msn = r->msn;
	a.orig = orig;
	xmit(r, &a);
}

/* rxe's answer to an ATOMIC_WRITE (first or replayed): READ_RESP_ONLY
 * with an AETH and no payload. */
static void send_awrite_ack(struct srdma_netresp *r, uint32_t psn)
{
	struct srdma_pkt a = { 0 };

	a.opcode = resp_tr(r->nq) | SRDMA_OP_READ_RESP_ONLY;
	a.psn = psn & 0xffffff;
	a.syndrome = SRDMA_AETH_ACK;
	a.msn = r->msn;
	xmit(r, &a);
}

/*
 * Set the send batch up for READ responses: TX_READ_BATCH slots (grown
 * from TX_BATCH at the first READ; kept if that fails), and a batch of
 * whole GSO runs: the endpoint sends up to SRDMA_WIRE_GSO_SEGS packets of
 * one size, SRDMA_WIRE_GSO_BYTES in all, as one datagram (net-
 * endpoint.md), so at MTU 4096 a batch of 60 leaves as 4 datagrams of 15
 * packets; 16 left as 15 + 1. A 1 MiB READ is 5 system calls and 18
 * datagrams instead of 16 and 32, on both sides of the veth.
 */
static void read_batch(struct srdma_netresp *r)
{
	uint32_t pkt = SRDMA_BTH_BYTES + SRDMA_AETH_BYTES + r->nq->mtu +
		       SRDMA_ICRC_BYTES;
	uint32_t run = SRDMA_WIRE_GSO_BYTES / pkt;

	if (r->ntx)
		tx_flush(r);
	if (!r->slots || r->nslots < TX_READ_BATCH) {
		struct tx_slot *n = malloc(TX_READ_BATCH * sizeof(*n));

		if (n) {
			if (r->slots != &r->slot1)
				free(r->slots);
			r->slots = n;
			r->nslots = TX_READ_BATCH;
		} else if (!r->slots) {
			r->slots = &r->slot1;
			r->nslots = 1;
		}
	}
	if (run > SRDMA_WIRE_GSO_SEGS)
		run = SRDMA_WIRE_GSO_SEGS;
	r->tx_limit = r->nslots;
	if (run && (uint32_t)r->nslots >= run)
		r->tx_limit = (int)(run * ((uint32_t)r->nslots / run));
}

/*
 * The READ responses for [va, va + len) under @rkey, PSNs from @psn on:
 * ONLY, or FIRST, MIDDLE..., LAST. A duplicate READ that starts inside
 * the original (a requester asking again for what it is missing) is
 * answered the same way, as a READ of its own range: our requester
 * expects FIRST or ONLY at the PSN of every READ request it sends. (rxe's
 * responder continues with MIDDLE/LAST there instead; see
 * docs/design/net-responder.md.) The key is checked again for every
 * packet's bytes. Return: 0, or the verdict with the PSN that failed in
 * *@bad_psn.
 */
static enum verdict read_reply(struct srdma_netresp *r,
			       struct srdma_target *t, uint64_t va,
			       uint32_t rkey, uint32_t len, uint32_t psn,
			       uint32_t *bad_psn)
{
	uint32_t mtu = r->nq->mtu;
	uint64_t off = 0;
	bool first = true;

	read_batch(r);
	do {
		uint32_t n = len - off < mtu ? (uint32_t)(len - off) : mtu;
		bool last = off + n == len;
		struct srdma_pkt p = { 0 };
		struct tx_slot *sl;
		uint8_t op;

		if (first)
			op = last ? SRDMA_OP_READ_RESP_ONLY :
				    SRDMA_OP_READ_RESP_FIRST;
		else
			op = last ? SRDMA_OP_READ_RESP_LAST :
				    SRDMA_OP_READ_RESP_MIDDLE;
		sl = slot_next(r);
		if (n) {
			struct srdma_rmem m;
			struct iovec io = { sl->data, n };
			int e;

			e = srdma_resp_rkey(t, rkey, IBV_ACCESS_REMOTE_READ,
					    va + off, n, &m);
			if (e != SRDMA_KCHK_OK) {
				tx_flush(r);
				*bad_psn = psn;
				return V_NAK_ACC;
			}
			e = srdma_resp_copy(t, &m, 0, &io, 1, n, false);
			srdma_resp_rkey_put(t, &m);
			if (e) {
				tx_flush(r);
				*bad_psn = psn;
				return V_NAK_ACC;
			}
		}
		p.opcode = resp_tr(r->nq) | op;
		p.psn = psn;
		p.syndrome = SRDMA_AETH_ACK;
		p.msn = r->msn;
		stage(r, sl, &p, n);
		psn = srdma_psn_add(psn, 1);
		off += n;
		first = false;
	} while (off < len);
	tx_flush(r);
	return V_OK;
}

/* ---- receive WQEs ---------------------------------------------------------- */

/* Take the head WQE for a new message (or keep the one a dropped UC
 * message left); @first: a SEND's first packet, whose TM header a
 * tag-matching SRQ matches (NULL otherwise). A matched rendezvous is left
 * to the application (IBV_WC_TM_RNDV_INCOMPLETE): we issue no READ of
 * our own. Return: 0, -EAGAIN (none: RNR), -EIO (queue unusable). */
static int wqe_take(struct srdma_netresp *r, struct srdma_target *t,
		    const struct iovec *first)
{
	struct srdma_rq_hold h;
	int e;

	if (r->have_wqe)
		return 0;
	e = srdma_resp_rq_begin_msg(t, &h, first, first ? 1 : 0,
				    first ? first->iov_len : 0, false);
	if (e)
		return e;
	r->wqe = h.w;
	r->consumed = h.w.srq;
	if (h.w.srq)
		srdma_resp_rq_consume(&h);
	else
		srdma_resp_rq_abort(&h);
	r->have_wqe = true;
	return 0;
}

/* Post @c for the WQE taken; consume it now if it still sits in the QP's
 * own receive queue. */
static void wqe_complete(struct srdma_netresp *r, struct srdma_target *t,
			 struct srdma_shm_cqe *c, bool solicited)
{
	struct srdma_rq_hold h;

	if (!r->have_wqe)
		return;
	r->have_wqe = false;
	if (r->consumed) {
		srdma_resp_recv_cqe(t, &r->wqe, c, solicited);
		return;
	}
	/* We are its queue's only consumer: the head is still ours unless
	 * the queue was flushed meanwhile. */
	if (srdma_resp_rq_begin(t, &h))
		return;
	if (h.w.wr_id != r->wqe.wr_id) {
		srdma_resp_rq_abort(&h);
		return;
	}
	srdma_resp_rq_complete(&h, c, solicited);
}

/* A message failed with the WQE taken: complete it with @status. */
static void wqe_fail(struct srdma_netresp *r, struct srdma_target *t,
		     uint8_t opcode, int status)
{
	struct srdma_shm_cqe c = { 0 };

	c.status = (uint8_t)status;
	c.opcode = opcode;
	c.src_qp = r->nq->dqpn;
	wqe_complete(r, t, &c, true);
}

/* Forget the WQE without completing it (the QP's own queue keeps it; a
 * consumed SRQ WQE must be completed instead: wqe_fail). */
static void wqe_forget(struct srdma_netresp *r)
{
	r->have_wqe = false;
}

/* ---- checks shared by RC and UC -------------------------------------------- */

/* Does @op fit the message in progress (no missing FIRST or LAST)? */
static bool seq_ok(const struct srdma_netresp *r, uint8_t op, uint32_t hdrs)
{
	switch (r->cur) {
	case MSG_SEND:
		return op_is_send(op) && !(hdrs & SRDMA_HDR_FIRST);
	case MSG_WRITE:
		return op_is_write(op) && !(hdrs & SRDMA_HDR_FIRST);
	default:
		return !(op_is_send(op) || op_is_write(op)) ||
		       (hdrs & SRDMA_HDR_FIRST);
	}
}

/* Payload length against the position in the message and the MTU, and a
 * pad count that fits the payload. */
static bool length_ok(const struct srdma_pkt *pkt, uint32_t hdrs,
		      uint32_t mtu)
{
	uint32_t n = pkt->paylen;

	if (n && !pkt->payload)
		return false;
	if (pkt->padcnt != srdma_wire_pad(n))
		return false;
	if (!(hdrs & SRDMA_HDR_PAYLOAD))
		return n == 0;
	if ((hdrs & SRDMA_HDR_ONLY) == SRDMA_HDR_ONLY)
		return n <= mtu;
	if (hdrs & (SRDMA_HDR_FIRST | SRDMA_HDR_MIDDLE))
		return n == mtu;
	return n >= 1 && n <= mtu;		/* LAST */
}

/* ---- SEND -------------------------------------------------------------------- */

/* The status and verdict of a failed scatter (host transport's choices:
 * too long is LOC_LEN_ERR / invalid request, a bad buffer LOC_PROT_ERR /
 * remote operational error). */
static enum verdict scatter_verdict(int e, int *status)
{
	if (e == -EMSGSIZE) {
		*status = IBV_WC_LOC_LEN_ERR;
		return V_NAK_INV;
	}
	*status = IBV_WC_LOC_PROT_ERR;
	return V_NAK_OP;
}

/*
 * One SEND packet of an RC or UC message, checked for sequence and length.
 * On an error, the WQE (if taken) is completed with its status where the
 * transport wants that: RC always; UC only when consumed from an SRQ
 * (else it stays in the queue, §5.5). *@event: the async event for RC.
 */
static enum verdict do_send(struct srdma_netresp *r, struct srdma_target *t,
			    const struct srdma_pkt *pkt, uint32_t hdrs,
			    bool rc, uint32_t *event)
{
	struct iovec io = { (void *)pkt->payload, pkt->paylen };
	struct srdma_shm_cqe c = { 0 };
	int e, status;
	enum verdict v;

	if (hdrs & SRDMA_HDR_FIRST) {
		e = wqe_take(r, t, &io);
		if (e == -EAGAIN)
			return V_RNR;
		if (e) {
			drop(r, pkt, SRDMA_DROP_OTHER, "receive queue unusable");
			return V_DROP;
		}
		r->cur = MSG_SEND;
		r->off = 0;
	}
	if (pkt->paylen) {
		e = srdma_resp_scatter(t, &r->wqe, r->off, &io, 1, pkt->paylen);
		if (e) {
			srdma_dbg("QP %#x: SEND PSN %#x: scatter at %llu: %d",
				  r->nq->qpn, pkt->psn,
				  (unsigned long long)r->off, e);
			v = scatter_verdict(e, &status);
			*event = v == V_NAK_INV ? IBV_EVENT_QP_REQ_ERR :
						  IBV_EVENT_QP_ACCESS_ERR;
			if (rc || r->consumed)
				wqe_fail(r, t, IBV_WC_RECV, status);
			return v;
		}
	}
	r->off += pkt->paylen;
	if (!(hdrs & SRDMA_HDR_LAST))
		return V_OK;
	c.opcode = IBV_WC_RECV;
	if (hdrs & SRDMA_HDR_IETH) {
		if (srdma_resp_invalidate(t, pkt->inv_rkey)) {
			srdma_dbg("QP %#x: SEND_WITH_INV of rkey %#x refused",
				  r->nq->qpn, pkt->inv_rkey);
			wqe_fail(r, t, IBV_WC_RECV, IBV_WC_REM_INV_REQ_ERR);
			*event = IBV_EVENT_QP_REQ_ERR;
			return V_NAK_INV;
		}
		c.wc_flags |= IBV_WC_WITH_INV;
		c.imm = pkt->inv_rkey;
	}
	if (hdrs & SRDMA_HDR_IMMDT) {
		c.wc_flags |= IBV_WC_WITH_IMM;
		c.imm = pkt->imm;
	}
	c.status = IBV_WC_SUCCESS;
	c.byte_len = (uint32_t)r->off;
	c.src_qp = r->nq->dqpn;
	wqe_complete(r, t, &c, pkt->se);
	r->cur = MSG_NONE;
	return V_OK;
}

/* ---- WRITE ------------------------------------------------------------------- */

/* One WRITE packet of an RC or UC message. */
static enum verdict do_write(struct srdma_netresp *r, struct srdma_target *t,
			     const struct srdma_pkt *pkt, uint32_t hdrs,
			     bool rc, uint32_t *event)
{
	bool imm = (hdrs & SRDMA_HDR_LAST) && (hdrs & SRDMA_HDR_IMMDT);
	struct srdma_shm_cqe c = { 0 };
	struct srdma_rmem m;
	int e;

	/* WRITE_WITH_IMM takes its WQE first: without one, nothing of
	 * this packet happens (RNR, retried as it is). */
	if (imm) {
		e = wqe_take(r, t, NULL);
		if (e == -EAGAIN)
			return V_RNR;
		if (e) {
			drop(r, pkt, SRDMA_DROP_OTHER, "receive queue unusable");
			return V_DROP;
		}
	}
	if (hdrs & SRDMA_HDR_FIRST) {
		*event = IBV_EVENT_QP_REQ_ERR;
		if (pkt->dma_len > SRDMA_MAX_MSG) {
			srdma_dbg("QP %#x: WRITE of %u bytes", r->nq->qpn,
				  pkt->dma_len);
			goto fail_inv;
		}
		if (!srdma_resp_qp_allows(t, IBV_ACCESS_REMOTE_WRITE)) {
			srdma_dbg("QP %#x: WRITE without REMOTE_WRITE",
				  r->nq->qpn);
			goto fail_inv;
		}
		r->va = pkt->va;
		r->rkey = pkt->rkey;
		r->wlen = pkt->dma_len;
		r->off = 0;
		r->cur = MSG_WRITE;
		/* The whole range, checked once here; an ONLY packet that
		 * carries all of it is checked below, the same range, once
		 * (the length errors before it keep their precedence: a
		 * length that does not match is checked here first). */
		if (r->wlen && !((hdrs & SRDMA_HDR_LAST) &&
				 pkt->paylen == r->wlen)) {
			e = srdma_resp_rkey(t, r->rkey,
					    IBV_ACCESS_REMOTE_WRITE, r->va,
					    r->wlen, &m);
			if (e != SRDMA_KCHK_OK)
				goto fail_acc;
			srdma_resp_rkey_put(t, &m);
		}
	}
	if ((uint64_t)pkt->paylen > r->wlen - r->off ||
	    ((hdrs & SRDMA_HDR_LAST) && r->off + pkt->paylen != r->wlen) ||
	    (!(hdrs & SRDMA_HDR_LAST) && r->off + pkt->paylen >= r->wlen)) {
		srdma_dbg("QP %#x: WRITE PSN %#x: %u bytes at %llu of %u",
			  r->nq->qpn, pkt->psn, pkt->paylen,
			  (unsigned long long)r->off, r->wlen);
		*event = IBV_EVENT_QP_REQ_ERR;
		goto fail_inv;
	}
	if (pkt->paylen) {
		struct iovec io = { (void *)pkt->payload, pkt->paylen };

		e = srdma_resp_rkey(t, r->rkey, IBV_ACCESS_REMOTE_WRITE,
				    r->va + r->off, pkt->paylen, &m);
		if (e != SRDMA_KCHK_OK)
			goto fail_acc;
		e = srdma_resp_copy(t, &m, 0, &io, 1, pkt->paylen, true);
		srdma_resp_rkey_put(t, &m);
		if (e)
			goto fail_acc;
	}
	r->off += pkt->paylen;
	if (!(hdrs & SRDMA_HDR_LAST))
		return V_OK;
	r->cur = MSG_NONE;
	if (imm) {
		c.status = IBV_WC_SUCCESS;
		c.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		c.byte_len = r->wlen;
		c.wc_flags = IBV_WC_WITH_IMM;
		c.imm = pkt->imm;
		c.src_qp = r->nq->dqpn;
		wqe_complete(r, t, &c, pkt->se);
	}
	return V_OK;

fail_acc:
	*event = IBV_EVENT_QP_ACCESS_ERR;
	if (imm && (rc || r->consumed))
		wqe_fail(r, t, IBV_WC_RECV_RDMA_WITH_IMM,
			 IBV_WC_LOC_ACCESS_ERR);
	else if (imm)
		wqe_forget(r);
	return V_NAK_ACC;
fail_inv:
	if (imm && r->consumed)
		wqe_fail(r, t, IBV_WC_RECV_RDMA_WITH_IMM,
			 IBV_WC_REM_INV_REQ_ERR);
	else if (imm)
		wqe_forget(r);
	return V_NAK_INV;
}

/* ---- READ and atomics (RC) ---------------------------------------------------- */

static struct rd_res *res_new(struct srdma_netresp *r)
{
	struct rd_res *s = &r->res[r->res_next++ & r->res_mask];

	memset(s, 0, sizeof(*s));
	return s;
}

/* The resource of @type whose PSN range holds @psn, or NULL. */
static struct rd_res *res_find(struct srdma_netresp *r, uint32_t psn,
			       enum res_type type)
{
	uint32_t i;

	for (i = 0; i <= r->res_mask; i++) {
		struct rd_res *s = &r->res[i];

		if (s->type == type && srdma_psn_cmp(psn, s->first_psn) >= 0 &&
		    srdma_psn_cmp(psn, s->last_psn) <= 0)
			return s;
	}
	return NULL;
}

/* Response packets of a READ of @len bytes. */
static uint32_t read_pkts(uint32_t len, uint32_t mtu)
{
	return len ? (uint32_t)(((uint64_t)len + mtu - 1) / mtu) : 1;
}

static enum verdict do_read(struct srdma_netresp *r, struct srdma_target *t,
			    const struct srdma_pkt *pkt, uint32_t *event,
			    uint32_t *bad_psn)
{
	uint32_t npkts = read_pkts(pkt->dma_len, r->nq->mtu);
	struct srdma_rmem m;
	struct rd_res *s;
	enum verdict v;

	*bad_psn = pkt->psn;
	*event = IBV_EVENT_QP_REQ_ERR;
	if (pkt->dma_len > SRDMA_MAX_MSG) {
		srdma_dbg("QP %#x: READ of %u bytes", r->nq->qpn,
			  pkt->dma_len);
		return V_NAK_INV;
	}
	if (!srdma_resp_qp_allows(t, IBV_ACCESS_REMOTE_READ)) {
		srdma_dbg("QP %#x: READ without REMOTE_READ", r->nq->qpn);
		return V_NAK_INV;
	}
	*event = IBV_EVENT_QP_ACCESS_ERR;
	if (pkt->dma_len) {
		if (srdma_resp_rkey(t, pkt->rkey, IBV_ACCESS_REMOTE_READ,
				    pkt->va, pkt->dma_len, &m) != SRDMA_KCHK_OK)
			return V_NAK_ACC;
		srdma_resp_rkey_put(t, &m);
	}
	s = res_new(r);
	s->type = RES_READ;
	s->first_psn = pkt->psn;
	s->last_psn = srdma_psn_add(pkt->psn, npkts - 1);
	s->va = pkt->va;
	s->rkey = pkt->rkey;
	s->len = pkt->dma_len;
	r->msn = (r->msn + 1) & 0xffffff;
	v = read_reply(r, t, pkt->va, pkt->rkey, pkt->dma_len, pkt->psn,
		       bad_psn);
	if (v != V_OK)
		s->type = RES_NONE;
	/* The responses used the request's PSNs up to last_psn. */
	set_epsn(r, srdma_psn_add(s->last_psn, 1));
	return v;
}

static enum verdict do_atomic(struct srdma_netresp *r, struct srdma_target *t,
			      const struct srdma_pkt *pkt, uint8_t op,
			      uint32_t *event)
{
	bool cas = op == SRDMA_OP_CMP_SWAP;
	struct srdma_rmem m;
	struct rd_res *s;
	uint64_t orig;
	int e;

	*event = IBV_EVENT_QP_REQ_ERR;
	if (!srdma_resp_qp_allows(t, IBV_ACCESS_REMOTE_ATOMIC) ||
	    (pkt->va & 7)) {
		srdma_dbg("QP %#x: atomic at %#llx refused (access or alignment)",
			  r->nq->qpn, (unsigned long long)pkt->va);
		return V_NAK_INV;
	}
	*event = IBV_EVENT_QP_ACCESS_ERR;
	if (srdma_resp_rkey(t, pkt->rkey, IBV_ACCESS_REMOTE_ATOMIC, pkt->va, 8,
			    &m) != SRDMA_KCHK_OK)
		return V_NAK_ACC;
	e = srdma_resp_atomic(t, &m, cas, cas ? pkt->compare : pkt->swap_add,
			      pkt->swap_add, &orig);
	srdma_resp_rkey_put(t, &m);
	if (e == -EIO)
		return V_NAK_OP;
	if (e)
		return V_NAK_ACC;
	s = res_new(r);
	s->type = RES_ATOMIC;
	s->first_psn = s->last_psn = pkt->psn;
	s->orig = orig;
	r->msn = (r->msn + 1) & 0xffffff;
	send_atomic_ack(r, pkt->psn, orig);
	set_epsn(r, srdma_psn_add(pkt->psn, 1));
	return V_OK;
}

/*
 * ATOMIC_WRITE: the 8 payload bytes into 8 aligned remote bytes as one
 * store under the host-wide atomic lock (srdma_resp_atomic_write, as on
 * one host). Remote write access of the QP and of the key, as rxe. A
 * resource remembers it so that a duplicate is answered, not stored again.
 */
static enum verdict do_atomic_write(struct srdma_netresp *r,
				    struct srdma_target *t,
				    const struct srdma_pkt *pkt,
				    uint32_t *event)
{
	struct srdma_rmem m;
	struct rd_res *s;
	uint64_t val;
	int e;

	*event = IBV_EVENT_QP_REQ_ERR;
	if (pkt->paylen != 8 || pkt->dma_len != 8 ||
	    !srdma_resp_qp_allows(t, IBV_ACCESS_REMOTE_WRITE) ||
	    (pkt->va & 7)) {
		srdma_dbg("QP %#x: ATOMIC_WRITE at %#llx refused (length, access or alignment)",
			  r->nq->qpn, (unsigned long long)pkt->va);
		return V_NAK_INV;
	}
	*event = IBV_EVENT_QP_ACCESS_ERR;
	if (srdma_resp_rkey(t, pkt->rkey, IBV_ACCESS_REMOTE_WRITE, pkt->va, 8,
			    &m) != SRDMA_KCHK_OK)
		return V_NAK_ACC;
	memcpy(&val, pkt->payload, 8);
	e = srdma_resp_atomic_write(t, &m, val);
	srdma_resp_rkey_put(t, &m);
	if (e == -EIO)
		return V_NAK_OP;
	if (e)
		return V_NAK_ACC;
	s = res_new(r);
	s->type = RES_AWRITE;
	s->first_psn = s->last_psn = pkt->psn;
	r->msn = (r->msn + 1) & 0xffffff;
	send_awrite_ack(r, pkt->psn);
	set_epsn(r, srdma_psn_add(pkt->psn, 1));
	return V_OK;
}

/* ---- delayed ACKs ------------------------------------------------------------- */

static pthread_once_t ack_once = PTHREAD_ONCE_INIT;
static uint64_t ack_delay_ns;		/* immutable after ack_once */
static bool ack_coalesce;		/* immutable after ack_once */

static void ack_init(void)
{
	const char *v = getenv("SRDMA_NET_ACK_DELAY_US");
	const char *c = getenv("SRDMA_NET_ACK_COALESCE");
	unsigned long us = ACK_DELAY_US_DEFAULT;
	char *end;

	ack_coalesce = !c || strcmp(c, "0");

	if (v && *v) {
		errno = 0;
		us = strtoul(v, &end, 10);
		if (errno || *end) {
			srdma_warn("SRDMA_NET_ACK_DELAY_US=%s: not a number of microseconds, using %u",
				   v, ACK_DELAY_US_DEFAULT);
			us = ACK_DELAY_US_DEFAULT;
		}
		if (us > ACK_DELAY_US_MAX)
			us = ACK_DELAY_US_MAX;
	}
	ack_delay_ns = (uint64_t)us * 1000u;
}

/*
 * May the ACK of this packet (the last of an RC SEND or WRITE, executed,
 * AckReq set) wait for a request of ours to ride behind? Only when a
 * reply is likely (our requester sent a request lately: ping-pong
 * traffic), when no timeout of the peer's is likely to be that short,
 * and when our application does not wait for events. @nowp: the clock
 * it read, for ack_hold (set whenever it returns true).
 */
static bool ack_may_wait(struct srdma_netresp *r, uint32_t hdrs,
			 uint64_t *nowp)
{
	struct srdma_net_qp *nq = r->nq;
	uint64_t sent, now;
	uint8_t tmo;

	pthread_once(&ack_once, ack_init);
	if (!ack_delay_ns || !(hdrs & SRDMA_HDR_LAST))
		return false;
	now = srdma_net_now_ns();
	*nowp = now;
	atomic_store_explicit(&nq->req_rx_ns, now, memory_order_relaxed);
	sent = atomic_load_explicit(&nq->req_tx_ns, memory_order_relaxed);
	if (!sent)
		return false;
	if (now - sent > ACK_RECENT_NS)
		return false;
	tmo = nq->qp->attr.timeout;
	if (tmo && srdma_ack_timeout_ns(tmo) < ACK_MIN_RTO_NS)
		return false;
	/* Not when our application waits for events: its peer would see
	 * our reply before its own send completion (the reply's event
	 * first), which no NIC does in the common case and perftest -e does
	 * not survive. */
	return !srdma_net_app_waits(nq->ctx);
}

/* Hold the ACK of @psn back: our requester's next request takes it along
 * (srdma_netresp_ack_take from req.c), or the timer sends it. A newer one
 * replaces an older one (ACKs are cumulative) and keeps its deadline. */
static void ack_hold(struct srdma_netresp *r, uint32_t psn, uint64_t now)
{
	struct srdma_net_qp *nq = r->nq;
	uint64_t w = SRDMA_NET_ACK_HELD | (uint64_t)(r->msn & 0xffffff) << 24 |
		     (psn & 0xffffff);
	uint64_t due;

	atomic_fetch_add_explicit(&nq->st->acks_delayed, 1,
				  memory_order_relaxed);
	if (atomic_exchange(&nq->ack_pending, w))
		return;
	/* A fresh hold: a fresh deadline (see srdma_netresp_ack_timer),
	 * from ack_may_wait's clock reading a moment ago (one per packet). */
	due = now;
	atomic_store_explicit(&nq->ack_held_ns, due, memory_order_relaxed);
	due += ack_delay_ns;
	atomic_store(&nq->ack_due_ns, due);
	srdma_net_ack_armed(nq->ctx, due);
}

uint32_t srdma_netresp_ack_take(struct srdma_net_qp *nq, uint8_t *buf)
{
	uint8_t b[SRDMA_MAX_IB_HDR + 4];
	struct srdma_pkt a = { 0 };
	struct iovec v;
	uint32_t hl;
	uint64_t w;

	if (!atomic_load_explicit(&nq->ack_pending, memory_order_relaxed))
		return 0;
	w = atomic_exchange(&nq->ack_pending, 0);
	if (!w)
		return 0;
	atomic_store_explicit(&nq->ack_last_msn, (uint32_t)(w >> 24) & 0xffffff,
			      memory_order_relaxed);
	atomic_store_explicit(&nq->ack_skip, 0, memory_order_relaxed);
	a.opcode = resp_tr(nq) | SRDMA_OP_ACK;
	a.psn = (uint32_t)w & 0xffffff;
	a.msn = (uint32_t)(w >> 24) & 0xffffff;
	a.syndrome = SRDMA_AETH_ACK;
	a.pkey = SRDMA_DEFAULT_PKEY;
	a.dqpn = nq->dqpn & 0xffffff;
	hl = srdma_wire_build(b, &a);
	if (!hl || hl + 4 > SRDMA_NET_ACK_LEN)
		return 0;
	v.iov_base = b;
	v.iov_len = hl;
	srdma_wire_put_icrc(b + hl, srdma_wire_icrc(&nq->path, &v, 1));
	memcpy(buf, b, hl + 4);
	atomic_fetch_add_explicit(&nq->st->tx_pkts, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&nq->st->tx_bytes, hl + 4,
				  memory_order_relaxed);
	return hl + 4;
}

/*
 * May the held ACK @w wait for a later request of ours? Only when our
 * requests come at a brisk pace (@now - @prev_tx since the last batch):
 * the next one is then likely soon, and the ACK's deadline moves to
 * after it (*@due), within ACK_COALESCE_MAX_NS of the first hold, so
 * that the ACK still rides a request instead of leaving alone; when it
 * covers few messages (the peer's send queue may be short); and not
 * during a pause after a coalesced ACK left alone at its deadline with
 * the peer silent since (it may have waited for it: perftest's
 * ib_write_lat waits for every send completion before it sends again).
 */
static bool ack_may_coalesce(struct srdma_net_qp *nq, uint64_t w,
			     uint64_t now, uint64_t prev_tx, uint64_t *due)
{
	uint32_t msn = (uint32_t)(w >> 24) & 0xffffff, last;
	uint64_t gap = now - prev_tx, held;

	pthread_once(&ack_once, ack_init);
	if (!ack_coalesce || !prev_tx || prev_tx >= now ||
	    gap > ACK_COALESCE_PACE_NS ||
	    now < atomic_load_explicit(&nq->ack_off_ns, memory_order_relaxed))
		return false;
	last = atomic_load_explicit(&nq->ack_last_msn, memory_order_relaxed);
	if (((msn - last) & 0xffffff) >= ACK_COALESCE_MSGS)
		return false;
	held = atomic_load_explicit(&nq->ack_held_ns, memory_order_relaxed);
	*due = now + 2 * gap + ACK_COALESCE_SLACK_NS;
	return held && *due <= held + ACK_COALESCE_MAX_NS;
}

uint32_t srdma_netresp_ack_ride(struct srdma_net_qp *nq, uint8_t *buf,
				uint64_t now, uint64_t prev_tx)
{
	uint64_t w = atomic_load_explicit(&nq->ack_pending,
					  memory_order_relaxed), due, cur;
	uint32_t skip, len;

	if (!w)
		return 0;
	if (ack_may_coalesce(nq, w, now, prev_tx, &due)) {
		/* Later, never earlier: a deadline that passes meanwhile
		 * (the timer is sending it) is left alone. */
		cur = atomic_load(&nq->ack_due_ns);
		while (cur && cur > now && cur < due &&
		       !atomic_compare_exchange_weak(&nq->ack_due_ns, &cur,
						     due))
			;
		atomic_store_explicit(&nq->ack_skip, SRDMA_NET_ACK_SKIPPED |
				      ((uint32_t)(w >> 24) & 0xffffff),
				      memory_order_relaxed);
		atomic_fetch_add_explicit(&nq->st->acks_coalesced, 1,
					  memory_order_relaxed);
		return 0;
	}
	skip = atomic_load_explicit(&nq->ack_skip, memory_order_relaxed);
	len = srdma_netresp_ack_take(nq, buf);
	if (len && skip && (skip & 0xffffff) != ((w >> 24) & 0xffffff)) {
		/* The peer sent on while we held it: it did not wait. */
		atomic_store_explicit(&nq->ack_fails, 0, memory_order_relaxed);
		atomic_store_explicit(&nq->ack_backoff_ns, 0,
				      memory_order_relaxed);
	}
	return len;
}

/* A coalesced ACK left alone at its deadline at @now, the peer silent
 * since: the third in a row stops coalescing on @nq for a while, longer
 * each time. */
static void ack_backoff(struct srdma_net_qp *nq, uint64_t now)
{
	uint64_t b = atomic_load_explicit(&nq->ack_backoff_ns,
					  memory_order_relaxed);

	if (atomic_fetch_add_explicit(&nq->ack_fails, 1,
				      memory_order_relaxed) + 1 < ACK_FAILS)
		return;
	atomic_store_explicit(&nq->ack_fails, 0, memory_order_relaxed);

	b = !b ? ACK_OFF_NS : b >= ACK_OFF_MAX_NS / 2 ? ACK_OFF_MAX_NS : 2 * b;
	atomic_store_explicit(&nq->ack_backoff_ns, b, memory_order_relaxed);
	atomic_store_explicit(&nq->ack_off_ns, now + b, memory_order_relaxed);
	srdma_dbg("QP %#x: a coalesced ACK left alone at its deadline: no coalescing for %" PRIu64 " ms",
		  nq->qpn, b / 1000000u);
}

bool srdma_netresp_ack_flush(struct srdma_net_qp *nq)
{
	uint8_t b[SRDMA_NET_ACK_LEN];
	struct iovec v = { b, 0 };

	v.iov_len = srdma_netresp_ack_take(nq, b);
	if (!v.iov_len)
		return false;
	if (srdma_netresp_tx_hook)
		srdma_netresp_tx_hook(nq, &v, 1);
	else
		srdma_net_send(nq->ctx, &nq->path, &v, 1);
	return true;
}

uint64_t srdma_netresp_ack_timer(struct srdma_net_qp *nq, uint64_t now)
{
	uint64_t due = atomic_load(&nq->ack_due_ns), w;
	uint32_t skip;

	if (!due)
		return 0;
	if (due > now) {
		if (atomic_load(&nq->ack_pending))
			return due;
		/* Taken by a request meanwhile: nothing to wait for. */
		atomic_compare_exchange_strong(&nq->ack_due_ns, &due, 0);
		return atomic_load(&nq->ack_due_ns);
	}
	/* Clear first: a hold after this sets a fresh deadline, or its ACK
	 * is taken by the flush below. */
	if (!atomic_compare_exchange_strong(&nq->ack_due_ns, &due, 0))
		return due;	/* re-armed meanwhile: that deadline */
	skip = atomic_load_explicit(&nq->ack_skip, memory_order_relaxed);
	w = atomic_load_explicit(&nq->ack_pending, memory_order_relaxed);
	/* Coalesced, and the peer sent nothing since: it may have waited. */
	if (srdma_netresp_ack_flush(nq) && skip &&
	    (skip & 0xffffff) == ((w >> 24) & 0xffffff))
		ack_backoff(nq, now);
	return 0;
}

/* ---- RC ------------------------------------------------------------------------ */

/* A request before ePSN: answer it again from what we kept, never
 * executing it twice (§1.12). */
static void rc_duplicate(struct srdma_netresp *r, struct srdma_target *t,
			 const struct srdma_pkt *pkt, uint8_t op)
{
	struct rd_res *s;
	uint32_t bad_psn;

	atomic_fetch_add_explicit(&r->nq->st->dups_rcvd, 1,
				  memory_order_relaxed);
	if (op_is_send(op) || op_is_write(op)) {
		send_ack(r, SRDMA_AETH_ACK, srdma_psn_add(r->ack_psn, 0xffffff));
		return;
	}
	if (op == SRDMA_OP_READ_REQ) {
		uint64_t end = pkt->va + pkt->dma_len;

		s = res_find(r, pkt->psn, RES_READ);
		if (!s) {
			drop(r, pkt, SRDMA_DROP_DUP, "duplicate READ, no resource");
			return;
		}
		if (pkt->va < s->va || pkt->dma_len > s->len ||
		    end < pkt->va || end > s->va + s->len ||
		    pkt->rkey != s->rkey ||
		    srdma_psn_cmp(srdma_psn_add(pkt->psn,
						read_pkts(pkt->dma_len,
							  r->nq->mtu) - 1),
				  s->last_psn) > 0) {
			drop(r, pkt, SRDMA_DROP_DUP,
			     "duplicate READ not within the original");
			return;
		}
		if (read_reply(r, t, pkt->va, pkt->rkey, pkt->dma_len,
			       pkt->psn, &bad_psn) != V_OK) {
			srdma_dbg("QP %#x: READ replay PSN %#x: rkey %#x refused",
				  r->nq->qpn, bad_psn, pkt->rkey);
			/* ERR first: see the end of rc_input(). */
			srdma_resp_qp_error(t, IBV_EVENT_QP_ACCESS_ERR);
			send_ack(r, SRDMA_AETH_NAK_ACC, bad_psn);
		}
		return;
	}
	if (op_is_atomic(op)) {
		s = res_find(r, pkt->psn, RES_ATOMIC);
		if (!s) {
			drop(r, pkt, SRDMA_DROP_DUP,
			     "duplicate atomic, no resource");
			return;
		}
		send_atomic_ack(r, pkt->psn, s->orig);
		return;
	}
	if (op == SRDMA_OP_ATOMIC_WRITE) {
		/* Replayed from the resource, never stored again. */
		s = res_find(r, pkt->psn, RES_AWRITE);
		if (!s) {
			drop(r, pkt, SRDMA_DROP_DUP,
			     "duplicate ATOMIC_WRITE, no resource");
			return;
		}
		send_awrite_ack(r, pkt->psn);
		return;
	}
	drop(r, pkt, SRDMA_DROP_DUP, "duplicate of an unknown request");
}

static void rc_input(struct srdma_netresp *r, struct srdma_target *t,
		     const struct srdma_pkt *pkt, uint32_t hdrs)
{
	uint8_t op = pkt->opcode & 0x1f;
	int32_t d = srdma_psn_cmp(pkt->psn, r->epsn);
	uint32_t event = 0, nak_psn = pkt->psn;
	enum verdict v;
	uint8_t syn;

	if (d > 0) {
		if (r->psn_nak) {
			drop(r, pkt, SRDMA_DROP_PSN,
			     "out of sequence (NAK already sent)");
			return;
		}
		r->psn_nak = true;
		send_ack(r, SRDMA_AETH_NAK_PSN, r->epsn);
		drop(r, pkt, SRDMA_DROP_PSN, "out of sequence, NAK sent");
		return;
	}
	if (d < 0) {
		rc_duplicate(r, t, pkt, op);
		return;
	}
	r->psn_nak = false;
	if (!seq_ok(r, op, hdrs)) {
		srdma_dbg("QP %#x: opcode %#x PSN %#x: missing FIRST or LAST",
			  r->nq->qpn, pkt->opcode, pkt->psn);
		event = IBV_EVENT_QP_REQ_ERR;
		v = V_NAK_INV;
		goto fail;
	}
	if (!length_ok(pkt, hdrs, r->nq->mtu)) {
		srdma_dbg("QP %#x: opcode %#x PSN %#x: %u bytes, pad %u, MTU %u",
			  r->nq->qpn, pkt->opcode, pkt->psn, pkt->paylen,
			  pkt->padcnt, r->nq->mtu);
		event = IBV_EVENT_QP_REQ_ERR;
		v = V_NAK_INV;
		goto fail;
	}
	if (op_is_send(op) || op_is_write(op)) {
		/*
		 * A receive completion is posted before the ACK (a requester
		 * that sees its send complete finds our CQE there), but its
		 * event is delivered after: on a NIC the ACK is out long
		 * before an application woken by the event can answer, so
		 * its answer never overtakes the ACK and the peer sees its
		 * send completion first. Otherwise a peer waiting on one
		 * channel for both CQs (perftest -e) could take the receive
		 * event for its send's. (An ACK held back, ack_hold, rides
		 * behind our next request on purpose, but only for an
		 * application that does not wait for events.)
		 */
		srdma_cq_defer_wakes(true);
		if (op_is_send(op))
			v = do_send(r, t, pkt, hdrs, true, &event);
		else
			v = do_write(r, t, pkt, hdrs, true, &event);
		if (v != V_OK)
			srdma_cq_defer_wakes(false);	/* errors: as before */
	} else if (op == SRDMA_OP_READ_REQ) {
		v = do_read(r, t, pkt, &event, &nak_psn);
		if (v == V_OK)
			return;		/* the responses are the answer */
	} else if (op_is_atomic(op)) {
		v = do_atomic(r, t, pkt, op, &event);
		if (v == V_OK)
			return;
	} else if (op == SRDMA_OP_ATOMIC_WRITE) {
		v = do_atomic_write(r, t, pkt, &event);
		if (v == V_OK)
			return;
	} else {
		drop(r, pkt, SRDMA_DROP_OPCODE, "not a request");
		return;
	}
	switch (v) {
	case V_OK:
		break;
	case V_RNR:
		/* Like a sequence NAK: what follows in the requester's
		 * window is dropped silently until it retries ePSN. */
		srdma_dbg("QP %#x: PSN %#x: no receive WQE, RNR NAK",
			  r->nq->qpn, pkt->psn);
		send_ack(r, SRDMA_AETH_RNR(t->qp->min_rnr_timer), pkt->psn);
		r->psn_nak = true;
		return;
	case V_DROP:
		return;
	default:
		goto fail;
	}
	set_epsn(r, srdma_psn_add(pkt->psn, 1));
	r->ack_psn = r->epsn;
	if (hdrs & SRDMA_HDR_LAST)
		r->msn = (r->msn + 1) & 0xffffff;
	if (pkt->ackreq) {
		uint64_t now = 0;

		if (ack_may_wait(r, hdrs, &now))
			ack_hold(r, pkt->psn, now);
		else
			send_ack(r, SRDMA_AETH_ACK, pkt->psn);
	}
	srdma_cq_defer_wakes(false);
	return;

fail:
	/* A WQE consumed from an SRQ for this message goes back flushed;
	 * one still in the QP's own queue is flushed with the queue. */
	if (r->have_wqe && r->consumed)
		wqe_fail(r, t, IBV_WC_RECV, IBV_WC_WR_FLUSH_ERR);
	wqe_forget(r);
	syn = v == V_NAK_INV ? SRDMA_AETH_NAK_INV :
	      v == V_NAK_ACC ? SRDMA_AETH_NAK_ACC : SRDMA_AETH_NAK_OPS;
	srdma_dbg("QP %#x: opcode %#x PSN %#x refused: NAK %#x, QP to ERR",
		  r->nq->qpn, pkt->opcode, nak_psn, syn);
	r->cur = MSG_NONE;
	/* The QP is in ERR (its flushes and async event posted) BEFORE the
	 * NAK leaves, as on a NIC and on one host: a requester that sees
	 * its error completion and then queries this QP finds ERR. */
	srdma_resp_qp_error(t, event);
	send_ack(r, syn, nak_psn);
}

/* ---- XRC ----------------------------------------------------------------------- */

/*
 * A TGT QP: RC's rules, with the data side of the target bound to the SRQ
 * the packet's XRCETH names (its PD, memory, queue and CQ) for the time
 * of the packet. Every packet of a message must name the SRQ its first
 * one named. No such SRQ in our domain: NAK Remote Access Error and the
 * QP to ERR, as IBTA's XRC rules (and one host) say; a duplicate or
 * out-of-sequence packet that names none is only dropped.
 */
static void xrc_input(struct srdma_netresp *r, struct srdma_target *t,
		      const struct srdma_pkt *pkt, uint32_t hdrs)
{
	bool mid = r->have_wqe && !(hdrs & SRDMA_HDR_FIRST), bad;

	if (mid && pkt->xrc_srqn != r->xrc_srqn) {
		bad = true;
		/* The message's own SRQ gets its WQE back, flushed. */
		srdma_resp_xrc_bind(t, r->xrc_srqn);
	} else {
		bad = srdma_resp_xrc_bind(t, pkt->xrc_srqn) != 0;
	}
	if (bad) {
		if (srdma_psn_cmp(pkt->psn, r->epsn)) {
			srdma_resp_xrc_unbind(t);
			drop(r, pkt, SRDMA_DROP_OTHER,
			     "XRCETH names no SRQ of the QP's domain");
			return;
		}
		if (r->have_wqe && r->consumed && t->xsrq)
			wqe_fail(r, t, IBV_WC_RECV, IBV_WC_WR_FLUSH_ERR);
		wqe_forget(r);
		r->cur = MSG_NONE;
		srdma_resp_xrc_unbind(t);
		srdma_dbg("QP %#x: PSN %#x: XRC SRQ %#x refused: NAK %#x, QP "
			  "to ERR", r->nq->qpn, pkt->psn, pkt->xrc_srqn,
			  SRDMA_AETH_NAK_ACC);
		srdma_resp_qp_error(t, IBV_EVENT_QP_ACCESS_ERR);
		send_ack(r, SRDMA_AETH_NAK_ACC, pkt->psn);
		return;
	}
	if (hdrs & SRDMA_HDR_FIRST)
		r->xrc_srqn = pkt->xrc_srqn;
	rc_input(r, t, pkt, hdrs);
	srdma_resp_xrc_unbind(t);
}

/* ---- UC ------------------------------------------------------------------------ */

/* Give up the message in progress; its WQE stays for the next one. */
static void uc_abandon(struct srdma_netresp *r)
{
	r->cur = MSG_NONE;
	r->off = 0;
}

static void uc_input(struct srdma_netresp *r, struct srdma_target *t,
		     const struct srdma_pkt *pkt, uint32_t hdrs)
{
	uint8_t op = pkt->opcode & 0x1f;
	uint32_t event = 0;
	enum verdict v;

	if (r->uc_drop || pkt->psn != r->epsn) {
		if (!(hdrs & SRDMA_HDR_FIRST)) {
			uc_abandon(r);
			r->uc_drop = true;
			set_epsn(r, srdma_psn_add(pkt->psn, 1));
			drop(r, pkt, SRDMA_DROP_PSN,
			     "UC: dropping to the next FIRST/ONLY");
			return;
		}
		r->uc_drop = false;
		uc_abandon(r);
	}
	set_epsn(r, srdma_psn_add(pkt->psn, 1));
	if ((hdrs & SRDMA_HDR_FIRST) && r->cur != MSG_NONE)
		uc_abandon(r);		/* its LAST never came */
	if (!seq_ok(r, op, hdrs) || !length_ok(pkt, hdrs, r->nq->mtu)) {
		uc_abandon(r);
		r->uc_drop = !(hdrs & SRDMA_HDR_LAST);
		drop(r, pkt, SRDMA_DROP_LENGTH,
		     "UC: sequence or length error, message dropped");
		return;
	}
	if (op_is_send(op))
		v = do_send(r, t, pkt, hdrs, false, &event);
	else if (op_is_write(op))
		v = do_write(r, t, pkt, hdrs, false, &event);
	else
		v = V_DROP;
	if (v == V_OK || v == V_DROP)
		return;
	uc_abandon(r);
	r->uc_drop = !(hdrs & SRDMA_HDR_LAST);
	if (v == V_RNR) {
		drop(r, pkt, SRDMA_DROP_RNR, "UC: no receive WQE");
		return;
	}
	if (hdrs & SRDMA_HDR_IETH) {
		/* A refused SEND_WITH_INV completed its WQE with an error,
		 * and the QP goes to ERR, as on one host. */
		srdma_resp_qp_error(t, event);
	}
	drop(r, pkt, SRDMA_DROP_OTHER, "UC: request refused, dropped");
}

/* ---- UD ------------------------------------------------------------------------ */

/*
 * The 40-byte GRH area of a UD receive: an IPv6 header, or 20 zero bytes
 * and an IPv4 header, as the datagram carried it (as far as a socket
 * shows it: TTL and traffic class are not known here, 64 and 0 stand in;
 * the IPv4 ID is 0 with DF, as softrdma sends).
 */
static void make_grh(uint8_t g[GRH_BYTES], const struct srdma_wire_path *from,
		     uint32_t udp_payload)
{
	uint8_t ip[SRDMA_IPV6_HDR_BYTES], udp[SRDMA_UDP_HDR_BYTES];
	size_t n = srdma_wire_ip_udp(from, udp_payload, ip, udp);

	memset(g, 0, GRH_BYTES);
	memcpy(g + GRH_BYTES - n, ip, n);
}

/*
 * A RoCE port has no service level, so a UD completion's sl says what
 * kind of packet arrived, as ConnectX reports it: bit 3 set for a UDP
 * (RoCEv2) frame, bits 2:0 the L3 header, 1 IPv6, 2 IPv4. UCX's ud_verbs
 * reads it to find the destination address in the GRH area (the last 4
 * bytes for IPv4, the last 16 for IPv6); with 0 it compares the last 16
 * bytes of an IPv4 header with its GIDs and drops every datagram.
 */
static uint8_t ud_roce_pkt_type(const struct srdma_wire_path *from)
{
	return srdma_gid_is_v4(from->sip) ? 0x8 | 0x2 : 0x8 | 0x1;
}

static void ud_input(struct srdma_netresp *r, struct srdma_target *t,
		     const struct srdma_pkt *pkt, uint32_t hdrs,
		     const struct srdma_wire_path *from)
{
	uint8_t op = pkt->opcode & 0x1f;
	uint32_t mtu = r->port_mtu;
	struct srdma_shm_cqe c = { 0 };
	struct srdma_rq_hold h;
	uint8_t grh[GRH_BYTES];
	struct iovec io[2];
	int e, status;

	if ((op != SRDMA_OP_SEND_ONLY && op != SRDMA_OP_SEND_ONLY_IMM) ||
	    !(hdrs & SRDMA_HDR_DETH)) {
		drop(r, pkt, SRDMA_DROP_OPCODE, "UD: not SEND_ONLY");
		return;
	}
	if (!srdma_resp_qkey_ok(t, pkt->qkey)) {
		drop(r, pkt, SRDMA_DROP_QKEY, "UD: Q_Key mismatch");
		return;
	}
	if (!length_ok(pkt, hdrs, mtu)) {
		drop(r, pkt, SRDMA_DROP_LENGTH, "UD: payload beyond the MTU");
		return;
	}
	e = srdma_resp_rq_begin(t, &h);
	if (e == -EAGAIN) {
		drop(r, pkt, SRDMA_DROP_RNR, "UD: no receive WQE");
		return;
	}
	if (e) {
		drop(r, pkt, SRDMA_DROP_OTHER, "UD: receive queue unusable");
		return;
	}
	make_grh(grh, from,
		 pkt->hdr_len + pkt->paylen + pkt->padcnt + 4);
	io[0].iov_base = grh;
	io[0].iov_len = GRH_BYTES;
	io[1].iov_base = (void *)pkt->payload;
	io[1].iov_len = pkt->paylen;
	c.opcode = IBV_WC_RECV;
	e = srdma_resp_scatter(t, &h.w, 0, io, pkt->paylen ? 2 : 1,
			       GRH_BYTES + pkt->paylen);
	if (e) {
		scatter_verdict(e, &status);
		srdma_dbg("QP %#x: UD receive of %u bytes: %d", r->nq->qpn,
			  pkt->paylen, e);
		c.status = (uint8_t)status;
		srdma_resp_rq_complete(&h, &c, true);
		return;
	}
	c.status = IBV_WC_SUCCESS;
	c.byte_len = GRH_BYTES + pkt->paylen;
	c.wc_flags = IBV_WC_GRH;
	if (hdrs & SRDMA_HDR_IMMDT) {
		c.wc_flags |= IBV_WC_WITH_IMM;
		c.imm = pkt->imm;
	}
	c.src_qp = pkt->src_qp & 0xffffff;
	c.pkey_index = 0;
	c.sl = ud_roce_pkt_type(from);
	srdma_resp_rq_complete(&h, &c, pkt->se);
}

/* ---- entry points ---------------------------------------------------------------- */

static uint8_t qp_transport(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return SRDMA_TR_RC;
	case IBV_QPT_UC:
		return SRDMA_TR_UC;
	case IBV_QPT_UD:
		return SRDMA_TR_UD;
	case IBV_QPT_XRC_RECV:
		return SRDMA_TR_XRC;
	default:
		return 0xff;
	}
}

/* Our QP as a target of the engine's responder, or NULL if its entry is
 * not live (resp_lock held). */
static struct srdma_target *target(struct srdma_netresp *r)
{
	if (!r->have_t &&
	    !srdma_resp_self(r->nq->ctx, r->nq->qpn, &r->t)) {
		r->have_t = true;
		r->port_mtu = 128u << srdma_gid_active_mtu(&r->nq->ctx->gids);
	}
	return r->have_t ? &r->t : NULL;
}

void srdma_netresp_input(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
			 const struct srdma_wire_path *from)
{
	enum ibv_qp_type type = nq->qp->type;
	struct srdma_netresp *r;
	struct srdma_target *t;
	uint32_t hdrs;

	pthread_mutex_lock(&nq->resp_lock);
	r = nq->resp;
	/* rx_pkts and rx_bytes: counted by the endpoint's dispatch. */
	if (!r) {
		srdma_net_drop(nq->ctx, nq, SRDMA_DROP_STATE, "no responder");
		goto unlock;
	}
	/* The layout comes from the opcode, never from the caller's word. */
	hdrs = srdma_wire_hdrs(pkt->opcode);
	if (!hdrs || (hdrs & (SRDMA_HDR_AETH | SRDMA_HDR_ATOMICACKETH)) ||
	    (pkt->opcode & 0x1f) == SRDMA_OP_READ_RESP_MIDDLE) {
		drop(r, pkt, SRDMA_DROP_OPCODE, "not a request opcode");
		goto unlock;
	}
	if ((pkt->opcode & SRDMA_TR_MASK) != qp_transport(type)) {
		drop(r, pkt, SRDMA_DROP_TRANSPORT,
		     "opcode's transport is not the QP's");
		goto unlock;
	}
	if (type != IBV_QPT_UD &&
	    (!nq->connected || memcmp(from->sip, nq->path.dip, 16) ||
	     memcmp(from->dip, nq->path.sip, 16))) {
		drop(r, pkt, SRDMA_DROP_SOURCE, "not from the QP's peer");
		goto unlock;
	}
	if (type != IBV_QPT_UD)
		srdma_net_crx_hint(nq->ctx, from);
	if (pkt->paylen > MAX_MTU || (pkt->paylen && !pkt->payload)) {
		drop(r, pkt, SRDMA_DROP_LENGTH, "payload impossible");
		goto unlock;
	}
	if (type != IBV_QPT_UD && (nq->mtu < 256 || nq->mtu > MAX_MTU)) {
		drop(r, pkt, SRDMA_DROP_STATE, "no path MTU");
		goto unlock;
	}
	t = target(r);
	if (!t) {
		drop(r, pkt, SRDMA_DROP_STATE, "QP gone");
		goto unlock;
	}
	if (!srdma_resp_qp_receives(t)) {
		drop(r, pkt, SRDMA_DROP_STATE, "QP state does not receive");
		goto unlock;
	}
	switch (type) {
	case IBV_QPT_RC:
		rc_input(r, t, pkt, hdrs);
		break;
	case IBV_QPT_XRC_RECV:
		xrc_input(r, t, pkt, hdrs);
		break;
	case IBV_QPT_UC:
		uc_input(r, t, pkt, hdrs);
		break;
	default:
		ud_input(r, t, pkt, hdrs, from);
		break;
	}
unlock:
	pthread_mutex_unlock(&nq->resp_lock);
}

struct srdma_netresp *srdma_netresp_new(struct srdma_net_qp *nq)
{
	struct srdma_netresp *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->nq = nq;
	return r;
}

void srdma_netresp_free(struct srdma_netresp *r)
{
	if (!r)
		return;
	if (r->have_t)
		srdma_resp_self_put(&r->t);
	if (r->slots != &r->slot1)
		free(r->slots);
	free(r);
}

void srdma_netresp_reset(struct srdma_net_qp *nq, uint32_t rq_psn)
{
	struct srdma_netresp *r = nq->resp;
	struct srdma_target *t;

	if (!r)
		return;
	/* A WQE consumed from an SRQ for a message that never finished
	 * goes back to the application as flushed. */
	if (r->have_wqe && r->consumed && (t = target(r))) {
		struct srdma_shm_cqe c = { 0 };

		c.status = IBV_WC_WR_FLUSH_ERR;
		c.opcode = IBV_WC_RECV;
		srdma_resp_recv_cqe(t, &r->wqe, &c, false);
	}
	memset(r, 0, offsetof(struct srdma_netresp, slots));
	r->nq = nq;
	/* A held ACK belongs to the old connection. */
	atomic_store(&nq->ack_pending, 0);
	atomic_store(&nq->ack_due_ns, 0);
	set_epsn(r, rq_psn);
	r->ack_psn = r->epsn;
	/*
	 * The ring holds as many resources as any QP may have outstanding
	 * (the device's max_qp_rd_atom): never fewer than the QP's
	 * max_dest_rd_atomic, which is not applied yet when the RTR modify
	 * calls us. More entries only keep more history for replays.
	 */
	r->res_mask = SRDMA_MAX_RD_ATOM - 1;
}
