// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * req.c - requester and completer of a net QP (net.h): what happens to a
 * send WQE of a QP whose peer is reached by RoCEv2 packets.
 *
 * The engine hands each validated send WQE to srdma_netreq_post() with the
 * QP's sq_lock held. We copy what we keep (SGE list, inline bytes) into a
 * ring of max_send_wr slots allocated on first use, so the steady state
 * never allocates, and send what the window allows at once. Three indices
 * walk the ring, all under sq_lock:
 *
 *   head  the oldest WQE not yet completed
 *   cur   the WQE being sent (packets before w->next_pkt are out)
 *   tail  the next free slot
 *
 * PSNs: a message of L bytes takes max(1, ceil(L / mtu)) PSNs, a READ
 * reserves one per response packet, an atomic one; w->first_psn is fixed
 * when the WQE is first sent, so a retransmission reuses the same PSNs.
 * r->psn is the next PSN to send, r->comp_psn the oldest PSN not yet
 * acknowledged (as rxe's req.psn and comp.psn, roce-wire.md §1.7).
 *
 * Sending (nr_send): segmentation into FIRST/MIDDLE/LAST/ONLY by the path
 * MTU, RETH on FIRST/ONLY with the whole length, ImmDt/IETH on LAST/ONLY,
 * SE on the last packet of a solicited SEND or WRITE_WITH_IMM, pad, ICRC;
 * AckReq on the last packet of every RC message and at least every 64
 * packets. RC stops when 128 PSNs are unacknowledged, when max_rd_atomic
 * READs/atomics are outstanding, at a fenced WQE behind an outstanding
 * READ/atomic, and during an RNR wait. Payload is gathered per packet
 * with the one key check (srdma_key_acquire on our key table: lkey, PD,
 * bounds) and copied with process_vm_readv on ourselves, so memory the
 * application unmapped is a LOC_PROT_ERR, never a crash (an lkey of the
 * context an imported context imports is checked in that context's table
 * and copied to or from its owner, core/import.c); packets are built
 * into a small per-QP batch of buffers and handed to the endpoint by one
 * function (nr_tx_flush), the place to switch to a batched send.
 *
 * Completing (srdma_netreq_input): ACKs are cumulative; an ACK or NAK past
 * an outstanding READ/atomic is an implied NAK (retry); READ responses
 * must come in PSN order (one past a gap retries at once, like an implied
 * NAK, once until progress or a timeout) and are placed at their offset
 * in the READ's SGEs (LOCAL_WRITE checked; at a re-issued READ's restart
 * PSN both FIRST/ONLY and a replayed MIDDLE/LAST are accepted); an
 * atomic ACK writes the original value. A
 * PSN sequence NAK acknowledges what precedes it and rewinds; other NAKs
 * fail the WQE with the remote status. RNR NAKs wait the responder's
 * timer and rewind, within rnr_retry; the retransmit timer (4.096 us x
 * 2^timeout) rewinds within retry_cnt, then fails the WQE with
 * RETRY_EXC_ERR: how a peer that vanished is reported. retry_cnt 7 means
 * 7 retries, as IBTA and ConnectX have it and as the host transport
 * does (rxe alone retries forever; with it a perftest survivor, which
 * asks for 7, would never learn that its peer died). rnr_retry 7 is
 * infinite, as everywhere.
 * Every response is checked against what is outstanding (PSN range,
 * opcode expected for the WQE at that PSN, payload length) before it is
 * used; anything else is dropped, counted and explained (SRDMA_LOG).
 *
 * Completions go out in WQE order through the engine (srdma_comp_req):
 * RC when acknowledged, UC and UD when the last packet is sent. A WQE that
 * fails locally stops the sender there and completes with its error once
 * everything before it has completed; the error moves the QP to ERR and
 * srdma_netreq_flush_locked() flushes what is behind.
 * Design and rxe differences: docs/design/net-requester.md.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/import.h"
#include "core/key_table.h"
#include "util/lattrace.h"
#include "core/qp_state.h"
#include "engine/engine.h"
#include "transport/net/gid.h"
#include "transport/net/net.h"
#include "util/log.h"
#include "util/selfcopy.h"

#define NR_WINDOW 128u		/* PSNs unacknowledged before we stop */
#define NR_ACK_EVERY 64u	/* packets without AckReq at most */
#define NR_BATCH 16u		/* packets built before they are sent */
#define NR_PKT_MAX (SRDMA_MAX_IB_HDR + 4096u + 4u + SRDMA_ICRC_BYTES)
#define NR_PSN_MASK 0xffffffu
/* Requests received this lately make a lone ACK a ping-pong's. */
#define LONE_ACK_RECENT_NS 100000000ull
#define NR_KIND_MR BIT(SRDMA_KIND_MR)

/* Test hooks (net.h). */
int (*srdma_netreq_tx_hook)(struct srdma_net_qp *nq,
			    const struct srdma_wire_path *p,
			    const struct iovec *iov, int n);
void (*srdma_netreq_comp_hook)(struct srdma_qp *qp, uint64_t wr_id,
			       uint32_t wr_opcode, bool signaled, int status,
			       uint32_t byte_len);

/* One send WQE as the requester keeps it. */
struct nr_wqe {
	uint64_t wr_id;
	uint32_t opcode;		/* enum ibv_wr_opcode */
	uint32_t send_flags;
	uint32_t imm;			/* imm_data (network order) / inv rkey */
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add, swap;
	uint64_t len;			/* message bytes */
	uint32_t num_sge;
	struct ibv_sge *sge;		/* r->sges[slot * max_sge ...] */
	uint8_t *inl;			/* inline copy, or NULL */
	bool signaled;
	uint32_t xrc_srqn;		/* XRC: the XRCETH's SRQ number */
	/* UD */
	struct srdma_wire_path ud_path;
	uint32_t ud_qpn, ud_qkey;
	bool ud_drop;			/* "sent" without a packet */
	/* local operations */
	struct ibv_mw *mw;
	uint32_t mw_new_rkey;
	struct ibv_mw_bind_info bind;
	/* progress */
	uint32_t npkts;			/* PSNs it takes */
	uint32_t first_psn;		/* valid once started */
	uint32_t next_pkt;		/* next packet to send */
	uint32_t rd_req_psn;		/* READ: PSN of the last request */
	uint64_t rd_done;		/* READ: bytes placed */
	int status;			/* error found locally, or SUCCESS */
	bool started;			/* PSNs assigned, keys checked */
	bool executed;			/* local op run */
	bool done;			/* ready to complete */
};

/* Requester state of one QP; everything under qp->sq_lock. */
struct srdma_netreq {
	struct srdma_net_qp *nq;	/* immutable */
	struct srdma_qp *qp;		/* immutable */
	uint32_t cap, max_sge, max_inline; /* ring geometry, set on alloc */
	struct nr_wqe *ring;		/* NULL until the first post */
	struct ibv_sge *sges;
	uint8_t *inl;			/* cap * max_inline bytes, or NULL */
	uint32_t head, cur, tail;	/* free-running ring indices */
	uint32_t psn;			/* next PSN to send */
	uint32_t comp_psn;		/* oldest PSN not acknowledged */
	uint32_t hi_psn;		/* one past the highest PSN sent */
	bool hi_valid;
	uint32_t noack;			/* packets since the last AckReq */
	uint32_t rd_out;		/* READ/atomic WQEs in [head, cur) */
	int retry_left, rnr_left;	/* -1: load from qp->attr */
	bool started_retry;		/* rewound, no progress since */
	bool fast_done;			/* rewound at once on a response
					 * showing a loss (implied NAK, READ
					 * gap), no progress or timeout since */
	bool err;			/* QP in ERR: nothing is sent */
	bool heard;			/* a response came since RTS (how
					 * RETRY_EXC_ERR is explained) */
	uint64_t rto_due;		/* retransmit deadline, 0: not running */
	uint64_t rto_ns;		/* wake-up published for it: rto_due,
					 * or earlier (stale, left to lapse so
					 * that a message does not cost a
					 * kick), 0: none */
	uint64_t rnr_ns;		/* RNR wait deadline, 0: none */
	/* transmit batch */
	uint8_t *txbuf;			/* NR_BATCH * NR_PKT_MAX */
	uint8_t ackbuf[SRDMA_NET_ACK_LEN]; /* the peer's held ACK, sent
					 * behind our batch (nr_tx_flush) */
	uint32_t txlen[NR_BATCH];
	const struct srdma_wire_path *txpath[NR_BATCH];
	uint32_t ntx;
};

/* ---- small helpers ---------------------------------------------------------- */

/* RC and XRC INI: acknowledged, retried, READ and atomics. */
static bool reliable(const struct srdma_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND;
}

static inline uint32_t psn_dist(uint32_t a, uint32_t b)
{
	return (a - b) & NR_PSN_MASK;	/* a - b, unsigned, 24 bits */
}

static inline struct nr_wqe *slot(struct srdma_netreq *r, uint32_t i)
{
	return &r->ring[i % r->cap];
}

static bool is_rd_atomic(uint32_t op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_WRITE;
}

static bool is_atomic(uint32_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_WRITE;
}

static bool is_local(uint32_t op)
{
	return op == IBV_WR_LOCAL_INV || op == IBV_WR_BIND_MW;
}

static uint32_t qpn(const struct srdma_netreq *r)
{
	return r->qp->ib.qp.qp_num;
}

static uint32_t last_psn(const struct nr_wqe *w)
{
	return (w->first_psn + w->npkts - 1) & NR_PSN_MASK;
}

/* Path MTU in bytes: RC/UC as set at RTR (qp_net.c), UD the port's
 * active MTU (as rxe: a UD QP has no path). */
static uint32_t nr_mtu(const struct srdma_netreq *r)
{
	if (r->qp->type == IBV_QPT_UD)
		return 128u << srdma_gid_active_mtu(&r->qp->ctx->gids);
	return r->nq->mtu >= 256 && r->nq->mtu <= 4096 ? r->nq->mtu : 1024;
}

static bool outstanding(const struct srdma_netreq *r)
{
	return r->psn != r->comp_psn;
}

static void drop(struct srdma_netreq *r, enum srdma_drop d, const char *why)
{
	struct srdma_net_qp *nq = r->nq;

	if (srdma_netreq_tx_hook) {
		atomic_fetch_add_explicit(&nq->st->drops[d], 1,
					  memory_order_relaxed);
		srdma_dbg("QP %#x: drop (%s): %s", qpn(r), srdma_drop_str(d),
			  why);
		return;
	}
	srdma_net_drop(nq->ctx, nq, d, why);
}

static void count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Load the retry budgets from the QP's attributes (at start, and after
 * progress, as rxe's reset_retry_counters). */
static void reset_retry(struct srdma_netreq *r)
{
	r->retry_left = r->qp->attr.retry_cnt;
	r->rnr_left = r->qp->attr.rnr_retry;
	r->started_retry = false;
	r->fast_done = false;
}

/* ---- timers ------------------------------------------------------------------- */

/* Publish the earliest deadline; wake the endpoint when it got earlier. */
static void publish_deadline(struct srdma_netreq *r)
{
	struct srdma_net_qp *nq = r->nq;
	uint64_t d = r->rto_ns, old;

	if (r->rnr_ns && (!d || r->rnr_ns < d))
		d = r->rnr_ns;
	old = atomic_exchange_explicit(&nq->deadline_ns, d,
				       memory_order_relaxed);
	if (d && (!old || d < old) && !srdma_netreq_tx_hook)
		srdma_net_kick(nq->ctx, d);
}

/*
 * (Re)arm the retransmit timer from @now if PSNs are outstanding (as rxe:
 * armed by a send when not running, restarted by progress). Stopping it
 * leaves the published wake-up in place: it lapses harmlessly, and the
 * next message finds a wake-up already early enough, so a stream of
 * messages does not wake the progress thread for each one.
 */
static void arm_rto(struct srdma_netreq *r, uint64_t now, bool restart)
{
	uint64_t tmo;

	if (!reliable(r->qp) || !outstanding(r) || r->err ||
	    r->rnr_ns) {
		r->rto_due = 0;
		return;
	}
	if (r->rto_due && !restart)
		return;
	tmo = srdma_ack_timeout_ns(r->qp->attr.timeout);
	r->rto_due = tmo == UINT64_MAX ? 0 : now + tmo;
	if (r->rto_due && (!r->rto_ns || r->rto_ns > r->rto_due))
		r->rto_ns = r->rto_due;
}

/* ---- memory ------------------------------------------------------------------- */

/* Bytes [pos, pos + len) of the @nl buffers @liov as @sub (at most @nl
 * entries). Return: the entries of @sub. */
static uint32_t iov_part(const struct iovec *liov, uint32_t nl, uint64_t pos,
			 uint64_t len, struct iovec *sub)
{
	uint32_t i, n = 0;

	for (i = 0; i < nl && len; i++) {
		uint64_t l = liov[i].iov_len;

		if (pos >= l) {
			pos -= l;
			continue;
		}
		l -= pos;
		if (l > len)
			l = len;
		sub[n].iov_base = (uint8_t *)liov[i].iov_base + pos;
		sub[n++].iov_len = l;
		len -= l;
		pos = 0;
	}
	return n;
}

/*
 * sge_copyv() for a WR with SGEs of MRs imported from another process
 * (core/import.c; the context is imported): each SGE piece is copied on
 * its own, ours with the fault-guarded self copy, the owner's by
 * srdma_import_copy (its key table's check and mark, then cross-memory
 * attach straight between our @liov and the owner). Return: as sge_copyv.
 */
static int sge_copy_imported(struct srdma_netreq *r, struct nr_wqe *w,
			     uint64_t off, const struct iovec *liov,
			     uint32_t nl, uint64_t len, bool to_sge)
{
	struct srdma_qp *qp = r->qp;
	uint32_t pd = qp->pd->ibpd.handle;
	struct iovec sub[NR_BATCH], riov;
	struct srdma_key_view v;
	struct srdma_key_ref ref;
	uint64_t pos = 0;
	uint32_t i, ns;
	ssize_t got;
	int k, e;

	if (nl > NR_BATCH)
		return -EFAULT;		/* callers pass at most a batch */
	srdma_kt_view(&qp->ctx->kt, &v);
	for (i = 0; i < w->num_sge && len; i++) {
		const struct ibv_sge *s = &w->sge[i];
		uint64_t l;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		l = s->length - off < len ? s->length - off : len;
		ns = iov_part(liov, nl, pos, l, sub);
		k = srdma_key_acquire(&v, s->lkey, NR_KIND_MR, pd,
				      to_sge ? IBV_ACCESS_LOCAL_WRITE : 0,
				      s->addr + off, l, NULL, 0, 0, 0, &ref);
		if (k == SRDMA_KCHK_NOKEY) {
			e = srdma_import_copy(qp->ctx, pd, s->lkey,
					      s->addr + off, sub, ns, l, to_sge,
					      &k);
		} else if (!k) {
			riov.iov_base = (void *)(uintptr_t)ref.host_addr;
			riov.iov_len = l;
			got = srdma_self_vm_rw(sub, ns, &riov, 1, to_sge);
			srdma_key_release(&ref);
			e = got == (ssize_t)l ? 0 : -EFAULT;
		} else {
			e = -EACCES;
		}
		if (e) {
			srdma_dbg("QP %#x wr_id %#llx: lkey %#x [%#llx+%llu] %s",
				  qpn(r), (unsigned long long)w->wr_id,
				  s->lkey, (unsigned long long)(s->addr + off),
				  (unsigned long long)l,
				  e == -EACCES ? srdma_key_fail_str(k) :
						 "memory not accessible");
			return e;
		}
		pos += l;
		len -= l;
		off = 0;
	}
	return len ? -EACCES : 0;
}

/*
 * Copy between the @nl buffers @liov (@len bytes in all) and bytes
 * [off, off + len) of @w's SGEs: gather (@to_sge false, access 0) or
 * scatter (@to_sge true, LOCAL_WRITE). Every SGE piece is checked with
 * the one key check and held while copied; the copy is one system call
 * (process_vm_readv/writev on ourselves), so an unmapped page is an
 * error, not a signal, and a batch of packets costs one call.
 * Return: 0, -EACCES (key check) or -EFAULT (memory).
 */
static int sge_copyv(struct srdma_netreq *r, struct nr_wqe *w, uint64_t off,
		     const struct iovec *liov, uint32_t nl, uint64_t len,
		     bool to_sge)
{
	struct srdma_qp *qp = r->qp;
	struct srdma_key_ref ref[SRDMA_MAX_SGE];
	struct iovec riov[SRDMA_MAX_SGE];
	struct srdma_key_view v;
	uint32_t i, n = 0;
	uint64_t want = len, off0 = off;
	ssize_t got;
	int ret = 0;

	if (!len)
		return 0;
	if (w->inl) {
		if (to_sge)
			return -EACCES;
		for (i = 0; i < nl; i++) {
			memcpy(liov[i].iov_base, w->inl + off,
			       liov[i].iov_len);
			off += liov[i].iov_len;
		}
		return 0;
	}
	srdma_kt_view(&qp->ctx->kt, &v);
	for (i = 0; i < w->num_sge && len; i++) {
		const struct ibv_sge *s = &w->sge[i];
		uint64_t l;
		int k;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		l = s->length - off < len ? s->length - off : len;
		k = srdma_key_acquire(&v, s->lkey, NR_KIND_MR,
				      qp->pd->ibpd.handle,
				      to_sge ? IBV_ACCESS_LOCAL_WRITE : 0,
				      s->addr + off, l, NULL, 0, 0, 0, &ref[n]);
		if (k == SRDMA_KCHK_NOKEY && unlikely(qp->ctx->import)) {
			/* An MR of the context we import: piece by piece. */
			for (i = 0; i < n; i++)
				srdma_key_release(&ref[i]);
			return sge_copy_imported(r, w, off0, liov, nl, want,
						 to_sge);
		}
		if (k) {
			srdma_dbg("QP %#x wr_id %#llx: lkey %#x [%#llx+%llu] %s",
				  qpn(r), (unsigned long long)w->wr_id,
				  s->lkey, (unsigned long long)(s->addr + off),
				  (unsigned long long)l, srdma_key_fail_str(k));
			ret = -EACCES;
			goto out;
		}
		riov[n].iov_base = (void *)(uintptr_t)ref[n].host_addr;
		riov[n].iov_len = l;
		n++;
		len -= l;
		off = 0;
	}
	if (len) {			/* beyond the SGEs: cannot happen */
		ret = -EACCES;
		goto out;
	}
	/* Our own memory: memcpy under the fault guard (util/selfcopy.c). */
	got = srdma_self_vm_rw(liov, nl, riov, n, to_sge);
	if (got != (ssize_t)want) {
		srdma_dbg("QP %#x wr_id %#llx: local memory not %s",
			  qpn(r), (unsigned long long)w->wr_id,
			  to_sge ? "writable" : "readable");
		ret = -EFAULT;
	}
out:
	for (i = 0; i < n; i++)
		srdma_key_release(&ref[i]);
	return ret;
}

static int sge_copy(struct srdma_netreq *r, struct nr_wqe *w, uint64_t off,
		    uint8_t *buf, uint64_t len, bool to_sge)
{
	struct iovec liov = { buf, len };

	return sge_copyv(r, w, off, &liov, 1, len, to_sge);
}

/* Check every SGE of @w whole (at start: a bad key fails the WQE before a
 * packet leaves). Return: 0 or -EACCES. */
static int sge_check(struct srdma_netreq *r, struct nr_wqe *w,
		     uint32_t access)
{
	struct srdma_qp *qp = r->qp;
	struct srdma_key_view v;
	struct srdma_key_snap snap;
	uint32_t i, s;

	if (w->inl)
		return 0;
	srdma_kt_view(&qp->ctx->kt, &v);
	for (i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *g = &w->sge[i];
		int k;

		if (!g->length)
			continue;
		k = srdma_key_check(&v, g->lkey, NR_KIND_MR,
				    qp->pd->ibpd.handle, access, g->addr,
				    g->length, &snap, &s);
		/* Not ours: an MR of the context we import? */
		if (k == SRDMA_KCHK_NOKEY && unlikely(qp->ctx->import))
			k = srdma_import_check(qp->ctx, qp->pd->ibpd.handle,
					       g, access);
		if (k) {
			srdma_dbg("QP %#x wr_id %#llx: lkey %#x [%#llx+%u] %s",
				  qpn(r), (unsigned long long)w->wr_id,
				  g->lkey, (unsigned long long)g->addr,
				  g->length, srdma_key_fail_str(k));
			return -EACCES;
		}
	}
	return 0;
}

/* ---- completion ------------------------------------------------------------- */

static void comp(struct srdma_netreq *r, uint64_t wr_id, uint32_t op,
		 bool signaled, int status, uint32_t byte_len)
{
	if (srdma_netreq_comp_hook)
		srdma_netreq_comp_hook(r->qp, wr_id, op, signaled, status,
				       byte_len);
	else
		srdma_comp_req(r->qp, wr_id, op, signaled, status, byte_len);
}

static void flush_all(struct srdma_netreq *r);

/* Complete the head WQE with @status and pop it. An error moves the QP to
 * ERR (srdma_comp_req) and flushes everything behind it. */
static void complete_head(struct srdma_netreq *r, int status)
{
	struct nr_wqe *w = slot(r, r->head);
	uint64_t wr_id = w->wr_id;
	uint32_t op = w->opcode;
	bool sig = w->signaled;
	uint32_t len = status == IBV_WC_SUCCESS ?
			       (is_atomic(op) ? 8u : (uint32_t)w->len) : 0;

	if (r->cur == r->head) {	/* failed before it was all sent */
		r->cur++;
	} else if (is_rd_atomic(op) && r->rd_out) {
		r->rd_out--;
	}
	r->head++;
	if (status != IBV_WC_SUCCESS) {
		srdma_dbg("QP %#x wr_id %#llx: completed with status %d",
			  qpn(r), (unsigned long long)wr_id, status);
		r->err = true;
		r->rto_ns = r->rto_due = r->rnr_ns = 0;
	}
	comp(r, wr_id, op, sig, status, len);
	if (status != IBV_WC_SUCCESS)
		flush_all(r);
}

/* Complete, in order, every WQE at the head that is finished. */
static void complete_ready(struct srdma_netreq *r)
{
	while (!r->err && r->head != r->tail) {
		struct nr_wqe *w = slot(r, r->head);

		if (w->done) {
			complete_head(r, IBV_WC_SUCCESS);
			continue;
		}
		/* A WQE that failed locally is reached by the sender (cur)
		 * and completes once all before it have. */
		if (w->status != IBV_WC_SUCCESS && r->cur == r->head) {
			complete_head(r, w->status);
			continue;
		}
		break;
	}
}

/* Flush everything still queued or unacknowledged, in order. */
static void flush_all(struct srdma_netreq *r)
{
	r->err = true;
	r->rto_ns = r->rto_due = r->rnr_ns = 0;
	while (r->head != r->tail) {
		struct nr_wqe *w = slot(r, r->head);
		uint64_t wr_id = w->wr_id;
		uint32_t op = w->opcode;

		r->head++;
		comp(r, wr_id, op, true, IBV_WC_WR_FLUSH_ERR, 0);
	}
	r->cur = r->head;
	r->rd_out = 0;
	if (r->ring)
		publish_deadline(r);
}

/* ---- transmit ------------------------------------------------------------------ */

/* Send the batch: the one place packets leave, in as few system calls
 * as the endpoint manages (sendmmsg). What is not sent is lost like a
 * packet on the wire and recovered by the protocol. @now: the caller's
 * clock reading of a moment ago (nr_send: one per post), 0 to read it. */
static void nr_tx_flush(struct srdma_netreq *r, uint64_t now)
{
	struct srdma_net_qp *nq = r->nq;
	struct srdma_net_msg m[NR_BATCH + 1];
	struct iovec iov[NR_BATCH + 1];
	uint64_t bytes = 0;
	uint32_t i, n;
	int sent;

	SRDMA_LT(SRDMA_LT_FLUSH);
	if (!r->ntx)
		return;
	for (i = 0; i < r->ntx; i++) {
		iov[i].iov_base = r->txbuf + (size_t)i * NR_PKT_MAX;
		iov[i].iov_len = r->txlen[i];
		m[i].path = r->txpath[i];
		m[i].iov = &iov[i];
		m[i].n = 1;
		bytes += r->txlen[i];
	}
	n = r->ntx;
	/* Requests of an RC QP: an ACK our responder holds back for the
	 * peer rides right behind them (net-responder.md, "ACK timing"),
	 * so the peer executes our request before it sees its completion. */
	if (nq->connected && reliable(r->qp)) {
		uint64_t prev;

		if (!now)
			now = srdma_net_now_ns();
		/* Our previous request's time: the pace of the ping-pong,
		 * by which the ACK may wait for a later request. */
		prev = atomic_load_explicit(&nq->req_tx_ns,
					    memory_order_relaxed);
		atomic_store_explicit(&nq->req_tx_ns, now,
				      memory_order_relaxed);
		iov[n].iov_len = srdma_netresp_ack_ride(nq, r->ackbuf, now,
							prev);
		if (iov[n].iov_len) {
			iov[n].iov_base = r->ackbuf;
			m[n].path = &nq->path;
			m[n].iov = &iov[n];
			m[n].n = 1;
			n++;
			count(&nq->st->acks_piggybacked, 1);
		}
	}
	if (srdma_netreq_tx_hook) {
		for (i = 0, sent = 0; i < n; i++)
			if (!srdma_netreq_tx_hook(nq, m[i].path, m[i].iov, 1))
				sent++;
	} else {
		sent = srdma_net_send_batch(nq->ctx, m, (int)n);
	}
	if (sent > (int)r->ntx)
		sent = (int)r->ntx;	/* the ACK is counted by resp.c */
	if (sent != (int)r->ntx)
		srdma_dbg("QP %#x: %d of %u packets not sent (%d), left to recovery",
			  qpn(r), (int)r->ntx - (sent > 0 ? sent : 0), r->ntx,
			  sent);
	count(&nq->st->tx_pkts, r->ntx);
	count(&nq->st->tx_bytes, bytes);
	r->ntx = 0;
}

/* Write the headers of @pkt (@paylen bytes of payload to follow) into
 * batch slot @i. Return: the header length (0: opcode unknown). */
static uint32_t tx_hdr(struct srdma_netreq *r, uint32_t i,
		       struct srdma_pkt *pkt, uint32_t paylen)
{
	pkt->paylen = paylen;
	pkt->padcnt = (uint8_t)srdma_wire_pad(paylen);
	pkt->pkey = SRDMA_DEFAULT_PKEY;
	return srdma_wire_build(r->txbuf + (size_t)i * NR_PKT_MAX, pkt);
}

/* Batch slot r->ntx holds headers (@hl bytes) and payload: add the pad
 * and the ICRC over exactly what is sent, and queue it. */
static void tx_finish(struct srdma_netreq *r, uint32_t hl, uint32_t paylen,
		      uint32_t psn, const struct srdma_wire_path *path)
{
	uint8_t *b = r->txbuf + (size_t)r->ntx * NR_PKT_MAX;
	uint32_t pad = srdma_wire_pad(paylen), len = hl + paylen + pad;
	struct iovec iov = { b, len };

	memset(b + hl + paylen, 0, pad);
	srdma_wire_put_icrc(b + len, srdma_wire_icrc(path, &iov, 1));
	r->txlen[r->ntx] = len + SRDMA_ICRC_BYTES;
	r->txpath[r->ntx] = path;
	r->ntx++;
	if (r->qp->type != IBV_QPT_UD && r->hi_valid &&
	    srdma_psn_cmp(psn, r->hi_psn) < 0)
		count(&r->nq->st->retransmits, 1);
}

/* One packet without payload (READ request, atomic) into the batch. */
static int nr_tx_pkt(struct srdma_netreq *r, struct srdma_pkt *pkt,
		     const struct srdma_wire_path *path)
{
	uint32_t hl;

	if (r->ntx == NR_BATCH)
		nr_tx_flush(r, 0);
	hl = tx_hdr(r, r->ntx, pkt, 0);
	if (!hl)
		return -EINVAL;
	tx_finish(r, hl, 0, pkt->psn, path);
	return 0;
}

static uint8_t tr_bits(const struct srdma_netreq *r)
{
	switch (r->qp->type) {
	case IBV_QPT_UC:
		return SRDMA_TR_UC;
	case IBV_QPT_UD:
		return SRDMA_TR_UD;
	case IBV_QPT_XRC_SEND:
		return SRDMA_TR_XRC;
	default:
		return SRDMA_TR_RC;
	}
}


/* Opcode of packet @k of SEND/WRITE @w. */
static uint8_t data_opcode(const struct nr_wqe *w, uint32_t k)
{
	bool first = k == 0, last = k + 1 == w->npkts;
	bool write = w->opcode == IBV_WR_RDMA_WRITE ||
		     w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;

	if (write) {
		if (first && last)
			return w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ?
				       SRDMA_OP_WRITE_ONLY_IMM :
				       SRDMA_OP_WRITE_ONLY;
		if (first)
			return SRDMA_OP_WRITE_FIRST;
		if (!last)
			return SRDMA_OP_WRITE_MIDDLE;
		return w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ?
			       SRDMA_OP_WRITE_LAST_IMM :
			       SRDMA_OP_WRITE_LAST;
	}
	if (first && last) {
		if (w->opcode == IBV_WR_SEND_WITH_IMM)
			return SRDMA_OP_SEND_ONLY_IMM;
		if (w->opcode == IBV_WR_SEND_WITH_INV)
			return SRDMA_OP_SEND_ONLY_INV;
		return SRDMA_OP_SEND_ONLY;
	}
	if (first)
		return SRDMA_OP_SEND_FIRST;
	if (!last)
		return SRDMA_OP_SEND_MIDDLE;
	if (w->opcode == IBV_WR_SEND_WITH_IMM)
		return SRDMA_OP_SEND_LAST_IMM;
	if (w->opcode == IBV_WR_SEND_WITH_INV)
		return SRDMA_OP_SEND_LAST_INV;
	return SRDMA_OP_SEND_LAST;
}

/* AckReq for an RC packet: the last of a message, or after 64 without. */
static bool want_ack(struct srdma_netreq *r, bool last)
{
	if (!reliable(r->qp))
		return false;
	if (last || ++r->noack >= NR_ACK_EVERY) {
		r->noack = 0;
		return true;
	}
	return false;
}

/*
 * Send up to @max next packets of data WQE @w (SEND, WRITE, UD SEND):
 * headers into consecutive batch slots, then the payload of all of them
 * gathered with one key-checked copy, then pad and ICRC each.
 * Return: 0 or -errno (gather failed: nothing queued).
 */
static int send_data_pkts(struct srdma_netreq *r, struct nr_wqe *w,
			  uint32_t max)
{
	struct srdma_net_qp *nq = r->nq;
	const struct srdma_wire_path *path = &nq->path;
	struct iovec liov[NR_BATCH];
	uint32_t hl[NR_BATCH], plen[NR_BATCH], psn[NR_BATCH];
	uint32_t mtu = nr_mtu(r), n, i, k;
	uint64_t off0, total = 0;
	int e;

	if (r->ntx == NR_BATCH)
		nr_tx_flush(r, 0);
	n = w->npkts - w->next_pkt;
	if (n > max)
		n = max;
	if (n > NR_BATCH - r->ntx)
		n = NR_BATCH - r->ntx;
	off0 = (uint64_t)w->next_pkt * mtu;
	for (i = 0; i < n; i++) {
		struct srdma_pkt pkt = { 0 };
		bool last;

		k = w->next_pkt + i;
		last = k + 1 == w->npkts;
		plen[i] = (uint32_t)(w->len - (uint64_t)k * mtu < mtu ?
					     w->len - (uint64_t)k * mtu :
					     mtu);
		pkt.opcode = tr_bits(r) | data_opcode(w, k);
		pkt.psn = psn[i] = (w->first_psn + k) & NR_PSN_MASK;
		pkt.dqpn = nq->dqpn;
		pkt.hdrs = srdma_wire_hdrs(pkt.opcode);
		pkt.xrc_srqn = w->xrc_srqn;
		if (pkt.hdrs & SRDMA_HDR_RETH) {
			pkt.va = w->remote_addr;
			pkt.rkey = w->rkey;
			pkt.dma_len = (uint32_t)w->len;
		}
		if (pkt.hdrs & SRDMA_HDR_IMMDT)
			pkt.imm = w->imm;
		if (pkt.hdrs & SRDMA_HDR_IETH)
			pkt.inv_rkey = w->imm;
		if (pkt.hdrs & SRDMA_HDR_DETH) {
			pkt.qkey = w->ud_qkey;
			pkt.src_qp = qpn(r);
			pkt.dqpn = w->ud_qpn;
			path = &w->ud_path;
		}
		if (last && (w->send_flags & IBV_SEND_SOLICITED) &&
		    w->opcode != IBV_WR_RDMA_WRITE)
			pkt.se = true;
		pkt.ackreq = want_ack(r, last);
		hl[i] = tx_hdr(r, r->ntx + i, &pkt, plen[i]);
		if (!hl[i])
			return -EINVAL;
		liov[i].iov_base = r->txbuf + (size_t)(r->ntx + i) * NR_PKT_MAX +
				   hl[i];
		liov[i].iov_len = plen[i];
		total += plen[i];
	}
	e = sge_copyv(r, w, off0, liov, n, total, false);
	if (e)
		return e;
	for (i = 0; i < n; i++)
		tx_finish(r, hl[i], plen[i], psn[i], path);
	w->next_pkt += n;
	return 0;
}

/* Send the READ request of @w for what is not yet placed. */
static int send_read_req(struct srdma_netreq *r, struct nr_wqe *w)
{
	struct srdma_net_qp *nq = r->nq;
	struct srdma_pkt pkt = { 0 };
	uint32_t done_pkts = (uint32_t)(w->rd_done / nr_mtu(r));

	pkt.opcode = tr_bits(r) | SRDMA_OP_READ_REQ;
	pkt.hdrs = srdma_wire_hdrs(pkt.opcode);
	pkt.xrc_srqn = w->xrc_srqn;
	pkt.psn = (w->first_psn + done_pkts) & NR_PSN_MASK;
	pkt.dqpn = nq->dqpn;
	pkt.va = w->remote_addr + w->rd_done;
	pkt.rkey = w->rkey;
	pkt.dma_len = (uint32_t)(w->len - w->rd_done);
	pkt.ackreq = want_ack(r, true);
	w->rd_req_psn = pkt.psn;
	return nr_tx_pkt(r, &pkt, &nq->path);
}

static int send_atomic(struct srdma_netreq *r, struct nr_wqe *w)
{
	struct srdma_net_qp *nq = r->nq;
	struct srdma_pkt pkt = { 0 };

	pkt.opcode = tr_bits(r) | (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
					   SRDMA_OP_CMP_SWAP :
					   SRDMA_OP_FETCH_ADD);
	pkt.hdrs = srdma_wire_hdrs(pkt.opcode);
	pkt.xrc_srqn = w->xrc_srqn;
	pkt.psn = w->first_psn;
	pkt.dqpn = nq->dqpn;
	pkt.va = w->remote_addr;
	pkt.rkey = w->rkey;
	if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
		pkt.swap_add = w->swap;
		pkt.compare = w->compare_add;
	} else {
		pkt.swap_add = w->compare_add;
	}
	pkt.ackreq = want_ack(r, true);
	return nr_tx_pkt(r, &pkt, &nq->path);
}

/* ATOMIC_WRITE: RETH and the 8-byte operand gathered at post (rxe's
 * layout); the responder answers with a READ_RESP_ONLY of no payload. */
static int send_atomic_write(struct srdma_netreq *r, struct nr_wqe *w)
{
	struct srdma_net_qp *nq = r->nq;
	struct srdma_pkt pkt = { 0 };
	uint32_t hl;

	pkt.opcode = tr_bits(r) | SRDMA_OP_ATOMIC_WRITE;
	pkt.hdrs = srdma_wire_hdrs(pkt.opcode);
	pkt.xrc_srqn = w->xrc_srqn;
	pkt.psn = w->first_psn;
	pkt.dqpn = nq->dqpn;
	pkt.va = w->remote_addr;
	pkt.rkey = w->rkey;
	pkt.dma_len = 8;
	pkt.ackreq = true;
	if (r->ntx == NR_BATCH)
		nr_tx_flush(r, 0);
	hl = tx_hdr(r, r->ntx, &pkt, 8);
	if (!hl)
		return -EINVAL;
	memcpy(r->txbuf + (size_t)r->ntx * NR_PKT_MAX + hl, &w->compare_add, 8);
	tx_finish(r, hl, 8, pkt.psn, &nq->path);
	return 0;
}

/* Run local operation @w (LOCAL_INV, BIND_MW) when the sender reaches it. */
static void run_local(struct srdma_netreq *r, struct nr_wqe *w)
{
	struct srdma_qp *qp = r->qp;

	w->executed = true;
	if (w->opcode == IBV_WR_LOCAL_INV) {
		if (srdma_mw_local_invalidate(qp->ctx, qp->pd, w->imm))
			w->status = IBV_WC_LOC_QP_OP_ERR;
	} else if (srdma_mw_bind_exec(qp->ctx, qp->pd, qpn(r), w->mw,
				      w->mw_new_rkey, &w->bind)) {
		w->status = IBV_WC_MW_BIND_ERR;
	}
	if (w->status == IBV_WC_SUCCESS)
		w->done = true;
}

/* First transmission of @w: PSNs, whole-SGE key check. */
static void start_wqe(struct srdma_netreq *r, struct nr_wqe *w)
{
	uint32_t access = is_rd_atomic(w->opcode) ? IBV_ACCESS_LOCAL_WRITE : 0;

	w->started = true;
	w->first_psn = r->psn;
	if (w->status == IBV_WC_SUCCESS && sge_check(r, w, access))
		w->status = IBV_WC_LOC_PROT_ERR;
}

/*
 * Send what the window allows, from cur on; complete what that finishes
 * (UC, UD, local operations). sq_lock held.
 */
static void nr_send(struct srdma_netreq *r, uint64_t now)
{
	struct srdma_qp *qp = r->qp;
	bool rc = reliable(qp);
	uint32_t max_rd = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;
	bool sent = false;

	if (r->err || r->rnr_ns || !r->ring)
		return;
	if (r->retry_left < 0)
		reset_retry(r);
	while (r->cur != r->tail && !r->err) {
		struct nr_wqe *w = slot(r, r->cur);
		int e = 0;

		if (is_rd_atomic(w->opcode) && r->rd_out >= max_rd)
			break;
		if ((w->send_flags & IBV_SEND_FENCE) && r->rd_out)
			break;
		if (!w->started)
			start_wqe(r, w);
		if (w->status != IBV_WC_SUCCESS) {
			/* Failed locally: stop here; it completes in order. */
			nr_tx_flush(r, now);
			complete_ready(r);
			break;
		}
		if (is_local(w->opcode)) {
			if (!w->executed)
				run_local(r, w);
			if (w->status != IBV_WC_SUCCESS)
				continue;	/* completes in order above */
			r->cur++;
			complete_ready(r);
			continue;
		}
		if (rc && psn_dist(r->psn, r->comp_psn) >= NR_WINDOW)
			break;
		if (w->opcode == IBV_WR_RDMA_READ) {
			e = send_read_req(r, w);
			if (!e) {
				r->psn = (w->first_psn + w->npkts) &
					 NR_PSN_MASK;
				w->next_pkt = w->npkts;
				r->rd_out++;
				r->cur++;
			}
		} else if (is_atomic(w->opcode)) {
			e = w->opcode == IBV_WR_ATOMIC_WRITE ?
				    send_atomic_write(r, w) :
				    send_atomic(r, w);
			if (!e) {
				r->psn = (w->first_psn + 1) & NR_PSN_MASK;
				w->next_pkt = 1;
				r->rd_out++;
				r->cur++;
			}
		} else if (w->ud_drop) {
			/* UD beyond the MTU: "sent" (C10-93.1.1). */
			srdma_dbg("QP %#x wr_id %#llx: UD message of %llu bytes > MTU %u, completed unsent",
				  qpn(r), (unsigned long long)w->wr_id,
				  (unsigned long long)w->len, nr_mtu(r));
			w->done = true;
			r->cur++;
		} else {
			uint32_t room = rc ? NR_WINDOW - psn_dist(r->psn,
								  r->comp_psn) :
					     NR_BATCH;

			e = send_data_pkts(r, w, room);
			if (!e) {
				r->psn = (w->first_psn + w->next_pkt) &
					 NR_PSN_MASK;
				if (w->next_pkt == w->npkts) {
					r->cur++;
					if (!rc) {
						/* UC/UD: done when sent */
						nr_tx_flush(r, now);
						w->done = true;
					}
				}
			}
		}
		if (e) {
			w->status = IBV_WC_LOC_PROT_ERR;
			continue;	/* completes in order above */
		}
		sent = true;
		if (!r->hi_valid || srdma_psn_cmp(r->psn, r->hi_psn) > 0) {
			r->hi_psn = r->psn;
			r->hi_valid = true;
		}
		if (!rc)
			complete_ready(r);
	}
	nr_tx_flush(r, now);
	atomic_store_explicit(&r->nq->st->sq_psn, r->psn,
			      memory_order_relaxed);
	if (sent)
		arm_rto(r, now, false);
	publish_deadline(r);
}

/* Rewind to the oldest unacknowledged PSN (rxe's req_retry): the head
 * resumes after its acknowledged packets (a READ re-issued for the rest),
 * everything after it is sent again from its first packet. */
static void rewind_to_comp(struct srdma_netreq *r)
{
	uint32_t i;

	for (i = r->head; i != r->cur + 1 && i != r->tail; i++) {
		struct nr_wqe *w = slot(r, i);

		if (!w->started || is_local(w->opcode))
			continue;
		if (i == r->head && !is_rd_atomic(w->opcode))
			w->next_pkt = psn_dist(r->comp_psn, w->first_psn);
		else
			w->next_pkt = 0;
	}
	r->cur = r->head;
	r->psn = r->comp_psn;
	r->rd_out = 0;
	r->noack = 0;
}

/* Retransmit timer or NAK: retry within retry_cnt, or fail the head. */
static void retry(struct srdma_netreq *r, uint64_t now, const char *why)
{
	if (r->retry_left < 0)
		reset_retry(r);
	if (r->retry_left == 0) {
		/* Once per QP (it goes to ERR): at info level, with what
		 * tells a peer that never answered (not in RTR yet, gone,
		 * unreachable) from one that stopped answering. */
		srdma_info("QP %#x: %s, retry_cnt %u exhausted at PSN %#x: %s",
			   qpn(r), why, r->qp->attr.retry_cnt, r->comp_psn,
			   r->heard ? "the peer answered, then fell silent" :
			   "no response from the peer since RTS (its QP not "
			   "in RTR yet, or unreachable)");
		complete_head(r, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	r->retry_left--;
	srdma_dbg("QP %#x: %s, retransmit from PSN %#x (%d retries left)",
		  qpn(r), why, r->comp_psn, r->retry_left);
	r->started_retry = true;
	rewind_to_comp(r);
	r->rto_due = 0;
	nr_send(r, now);
	arm_rto(r, now, true);
	publish_deadline(r);
}

/*
 * A response shows that an earlier one was lost (implied NAK, a READ
 * response past a gap): retry at once, as rxe does, rather than on the
 * timer. At most once until progress or a timeout, so that the rest of
 * a burst, stale responses to the first transmission and duplicates do
 * not rewind again and again.
 */
static void fast_retry(struct srdma_netreq *r, uint64_t now, const char *why)
{
	if (r->fast_done) {
		srdma_dbg("QP %#x: %s at PSN %#x, already resent", qpn(r), why,
			  r->comp_psn);
		return;
	}
	r->fast_done = true;
	retry(r, now, why);
}

/* ---- responses ------------------------------------------------------------------ */

/* Progress: a response moved comp_psn or completed a WQE. */
static void progress(struct srdma_netreq *r, uint64_t now)
{
	reset_retry(r);
	arm_rto(r, now, true);
}

static int rd_place(struct srdma_netreq *r, struct nr_wqe *w,
		    const struct srdma_pkt *pkt, uint64_t now)
{
	uint32_t mtu = nr_mtu(r);
	uint64_t rem = w->len - w->rd_done;
	bool first = pkt->psn == w->rd_req_psn;
	uint8_t op = pkt->opcode & ~SRDMA_TR_MASK, want;
	uint32_t want_len = rem <= mtu ? (uint32_t)rem : mtu;

	if (first)
		want = rem <= mtu ? SRDMA_OP_READ_RESP_ONLY :
				    SRDMA_OP_READ_RESP_FIRST;
	else
		want = rem <= mtu ? SRDMA_OP_READ_RESP_LAST :
				    SRDMA_OP_READ_RESP_MIDDLE;
	/*
	 * At the restart PSN of a READ re-issued from its middle, a
	 * responder may answer the new request (FIRST/ONLY, ours) or replay
	 * the original READ's MIDDLE/LAST for that PSN (rxe, NICs): the
	 * bytes at that offset are the same, so both are placed.
	 */
	if (first && w->rd_req_psn != w->first_psn &&
	    ((want == SRDMA_OP_READ_RESP_ONLY &&
	      op == SRDMA_OP_READ_RESP_LAST) ||
	     (want == SRDMA_OP_READ_RESP_FIRST &&
	      op == SRDMA_OP_READ_RESP_MIDDLE)))
		want = op;
	if (op != want) {
		drop(r, SRDMA_DROP_OPCODE,
		     "READ response opcode not the one expected at its PSN");
		return 0;
	}
	if (pkt->paylen != want_len) {
		drop(r, SRDMA_DROP_LENGTH, "READ response payload length");
		return 0;
	}
	if (sge_copy(r, w, w->rd_done, (uint8_t *)pkt->payload, want_len,
		     true)) {
		complete_head(r, IBV_WC_LOC_PROT_ERR);
		return -1;
	}
	w->rd_done += want_len;
	r->comp_psn = (pkt->psn + 1) & NR_PSN_MASK;
	if (want == SRDMA_OP_READ_RESP_ONLY ||
	    want == SRDMA_OP_READ_RESP_LAST)
		w->done = true;
	progress(r, now);
	return 0;
}

static void atomic_place(struct srdma_netreq *r, struct nr_wqe *w,
			 const struct srdma_pkt *pkt, uint64_t now)
{
	uint64_t orig = pkt->orig;

	if (sge_copy(r, w, 0, (uint8_t *)&orig, 8, true)) {
		complete_head(r, IBV_WC_LOC_PROT_ERR);
		return;
	}
	r->comp_psn = (pkt->psn + 1) & NR_PSN_MASK;
	w->done = true;
	progress(r, now);
}

static void nak_status(struct srdma_netreq *r, uint8_t syn)
{
	int st;

	count(&r->nq->st->naks_rcvd, 1);
	switch (syn) {
	case SRDMA_AETH_NAK_INV:
		st = IBV_WC_REM_INV_REQ_ERR;
		break;
	case SRDMA_AETH_NAK_ACC:
		st = IBV_WC_REM_ACCESS_ERR;
		break;
	default:		/* remote operational, and unknown codes (rxe) */
		st = IBV_WC_REM_OP_ERR;
		break;
	}
	srdma_dbg("QP %#x: NAK %#x for PSN range of wr_id %#llx", qpn(r), syn,
		  (unsigned long long)slot(r, r->head)->wr_id);
	complete_head(r, st);
}

static void rnr(struct srdma_netreq *r, const struct srdma_pkt *pkt,
		uint64_t now)
{
	uint64_t wait = srdma_rnr_timer_ns(pkt->syndrome & 0x1f);

	count(&r->nq->st->rnr_rcvd, 1);
	if (psn_dist(pkt->psn, r->comp_psn)) {
		r->comp_psn = pkt->psn;	/* what precedes it was received */
		reset_retry(r);
	}
	if (r->rnr_left < 0)
		reset_retry(r);
	if (r->rnr_left == 0) {
		srdma_dbg("QP %#x: RNR NAK, rnr_retry exhausted", qpn(r));
		complete_head(r, IBV_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	if (r->rnr_left != 7)
		r->rnr_left--;
	srdma_dbg("QP %#x: RNR NAK at PSN %#x, retry in %llu ns", qpn(r),
		  pkt->psn, (unsigned long long)wait);
	r->rnr_ns = now + wait;
	r->rto_due = 0;
	publish_deadline(r);
}

/* One response, QP checks passed. sq_lock held. */
static void response(struct srdma_netreq *r, const struct srdma_pkt *pkt,
		     uint64_t now)
{
	uint8_t op = pkt->opcode & ~SRDMA_TR_MASK;
	uint8_t type = SRDMA_AETH_TYPE(pkt->syndrome);
	uint32_t span = psn_dist(r->psn, r->comp_psn);
	uint32_t d = psn_dist(pkt->psn, r->comp_psn);
	struct nr_wqe *w;

	if (op != SRDMA_OP_ACK && op != SRDMA_OP_ATOMIC_ACK &&
	    (op < SRDMA_OP_READ_RESP_FIRST || op > SRDMA_OP_READ_RESP_ONLY)) {
		drop(r, SRDMA_DROP_OPCODE, "request opcode at the requester");
		return;
	}
	if ((pkt->hdrs & SRDMA_HDR_AETH) && type != SRDMA_AETH_TYPE_ACK &&
	    (op != SRDMA_OP_ACK || (type != SRDMA_AETH_TYPE_NAK &&
				    type != SRDMA_AETH_TYPE_RNR))) {
		drop(r, SRDMA_DROP_OTHER, "AETH syndrome not valid here");
		return;
	}
	if (!span || d >= span) {
		/* Not outstanding: before comp_psn a duplicate, else never
		 * sent. */
		if (span && psn_dist(r->comp_psn, pkt->psn) - 1 <
				    NR_PSN_MASK / 2)
			drop(r, SRDMA_DROP_DUP, "response to a completed PSN");
		else
			drop(r, SRDMA_DROP_PSN,
			     "response PSN outside what is outstanding");
		return;
	}
	/* Complete what the response implicitly acknowledges. */
	for (;;) {
		complete_ready(r);
		if (r->err || r->head == r->tail) {
			drop(r, SRDMA_DROP_OTHER, "no WQE for the response");
			return;
		}
		w = slot(r, r->head);
		if (!w->started || is_local(w->opcode)) {
			drop(r, SRDMA_DROP_OTHER, "no WQE for the response");
			return;
		}
		if (psn_dist(pkt->psn, w->first_psn) < w->npkts)
			break;		/* it is for the head */
		/* Past the head's last PSN. */
		if (is_rd_atomic(w->opcode)) {
			/* Its response was lost: implied NAK. */
			srdma_dbg("QP %#x: response %#x (syndrome %#x) at PSN %#x is past the unanswered READ/atomic at PSN %#x",
				  qpn(r), pkt->opcode, pkt->syndrome,
				  pkt->psn, w->first_psn);
			fast_retry(r, now, "implied NAK");
			return;
		}
		r->comp_psn = (last_psn(w) + 1) & NR_PSN_MASK;
		w->done = true;
		progress(r, now);
	}
	switch (op) {
	case SRDMA_OP_ACK:
		if (type == SRDMA_AETH_TYPE_ACK) {
			if (is_rd_atomic(w->opcode)) {
				drop(r, SRDMA_DROP_OPCODE,
				     "ACK inside a READ/atomic's PSNs");
				return;
			}
			r->comp_psn = (pkt->psn + 1) & NR_PSN_MASK;
			if (pkt->psn == last_psn(w))
				w->done = true;
			progress(r, now);
			break;
		}
		if (type == SRDMA_AETH_TYPE_RNR) {
			if (is_rd_atomic(w->opcode)) {
				drop(r, SRDMA_DROP_OPCODE,
				     "RNR NAK for a READ/atomic");
				return;
			}
			rnr(r, pkt, now);
			return;
		}
		if (pkt->syndrome == SRDMA_AETH_NAK_PSN) {
			count(&r->nq->st->naks_rcvd, 1);
			if (r->rnr_ns) {
				srdma_dbg("QP %#x: sequence NAK at PSN %#x ignored: RNR wait",
					  qpn(r), pkt->psn);
				return;	/* the RNR wait goes back anyway */
			}
			if (is_rd_atomic(w->opcode) &&
			    pkt->psn != r->comp_psn) {
				drop(r, SRDMA_DROP_PSN,
				     "sequence NAK inside a READ's responses");
				return;
			}
			if (pkt->psn != r->comp_psn) {
				r->comp_psn = pkt->psn;
				progress(r, now);
			} else if (r->started_retry) {
				srdma_dbg("QP %#x: sequence NAK at PSN %#x ignored: already resent from there",
					  qpn(r), pkt->psn);
				return;	/* already going back there */
			}
			retry(r, now, "PSN sequence NAK");
			return;
		}
		nak_status(r, pkt->syndrome);
		return;
	case SRDMA_OP_ATOMIC_ACK:
		if (!is_atomic(w->opcode) ||
		    w->opcode == IBV_WR_ATOMIC_WRITE) {
			drop(r, SRDMA_DROP_OPCODE, "atomic ACK for a non-atomic");
			return;
		}
		atomic_place(r, w, pkt, now);
		break;
	default:			/* READ_RESP_* */
		if (w->opcode == IBV_WR_ATOMIC_WRITE) {
			/* rxe's answer: READ_RESP_ONLY, no payload. */
			if (op != SRDMA_OP_READ_RESP_ONLY || pkt->paylen ||
			    pkt->psn != r->comp_psn) {
				drop(r, SRDMA_DROP_OPCODE,
				     "not an ATOMIC_WRITE response");
				return;
			}
			r->comp_psn = (pkt->psn + 1) & NR_PSN_MASK;
			w->done = true;
			progress(r, now);
			break;
		}
		if (w->opcode != IBV_WR_RDMA_READ) {
			drop(r, SRDMA_DROP_OPCODE,
			     "READ response for a non-READ");
			return;
		}
		if (pkt->psn != r->comp_psn) {
			/*
			 * Past the expected PSN: the responses between were
			 * lost. Retry at once (rxe) rather than on the
			 * timer, once until progress so that the rest of a
			 * burst, or duplicates, do not rewind again.
			 */
			drop(r, SRDMA_DROP_PSN, "READ response out of order");
			fast_retry(r, now, "READ response past a lost one");
			return;
		}
		if (rd_place(r, w, pkt, now))
			return;
		break;
	}
	complete_ready(r);
}

static bool same_gid(const uint8_t *a, const uint8_t *b)
{
	return !memcmp(a, b, 16);
}

void srdma_netreq_input(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
			const struct srdma_wire_path *from)
{
	struct srdma_qp *qp = nq->qp;
	struct srdma_netreq *r;
	uint64_t now = srdma_net_now_ns(), rx;
	uint32_t comp;

	pthread_mutex_lock(&qp->sq_lock);
	r = nq->req;
	if (!r) {
		srdma_net_drop(nq->ctx, nq, SRDMA_DROP_STATE, "no requester");
		goto out;
	}
	if (!reliable(qp) || !nq->connected ||
	    (pkt->opcode & SRDMA_TR_MASK) != tr_bits(r)) {
		drop(r, SRDMA_DROP_TRANSPORT,
		     "response on a non-RC QP, or of another transport");
		goto out;
	}
	if (!same_gid(from->sip, nq->path.dip) ||
	    !same_gid(from->dip, nq->path.sip)) {
		drop(r, SRDMA_DROP_SOURCE, "response from another address");
		goto out;
	}
	srdma_net_crx_hint(nq->ctx, from);
	if (r->err || !r->ring) {
		drop(r, SRDMA_DROP_STATE, "requester not running");
		goto out;
	}
	comp = r->comp_psn;
	r->heard = true;
	response(r, pkt, now);
	if (!r->err)
		nr_send(r, now);
	publish_deadline(r);
	/* A plain ACK that completed our last request, on a QP whose peer
	 * also sends us requests: a ping-pong peer's held ACK that left
	 * alone, its reply still to come (net-endpoint.md, "Poll mode"). */
	rx = atomic_load_explicit(&nq->req_rx_ns, memory_order_relaxed);
	if ((pkt->opcode & 0x1f) == SRDMA_OP_ACK && !r->err &&
	    r->comp_psn != comp && !outstanding(r) && rx &&
	    now - rx < LONE_ACK_RECENT_NS)
		srdma_net_lone_ack(nq->ctx);
out:
	pthread_mutex_unlock(&qp->sq_lock);
}

uint64_t srdma_netreq_timer(struct srdma_net_qp *nq, uint64_t now)
{
	struct srdma_qp *qp = nq->qp;
	struct srdma_netreq *r;
	uint64_t next;

	pthread_mutex_lock(&qp->sq_lock);
	r = nq->req;
	if (!r || r->err || !r->ring) {
		atomic_store_explicit(&nq->deadline_ns, 0,
				      memory_order_relaxed);
		pthread_mutex_unlock(&qp->sq_lock);
		return 0;
	}
	if (r->rnr_ns && now >= r->rnr_ns) {
		r->rnr_ns = 0;
		srdma_dbg("QP %#x: RNR wait over, resend from PSN %#x",
			  qpn(r), r->comp_psn);
		rewind_to_comp(r);
		nr_send(r, now);
		arm_rto(r, now, true);
	}
	if (r->rto_ns && now >= r->rto_ns) {
		r->rto_ns = 0;
		if (r->rto_due && now < r->rto_due) {
			r->rto_ns = r->rto_due;	/* restarted since */
		} else if (r->rto_due && outstanding(r)) {
			r->rto_due = 0;
			count(&nq->st->timeouts, 1);
			r->started_retry = false;
			r->fast_done = false;
			retry(r, now, "retransmit timer expired");
		} else {
			r->rto_due = 0;
		}
	}
	publish_deadline(r);
	next = atomic_load_explicit(&nq->deadline_ns, memory_order_relaxed);
	pthread_mutex_unlock(&qp->sq_lock);
	return next;
}

/* ---- posting ------------------------------------------------------------------- */

static int ring_alloc(struct srdma_netreq *r)
{
	struct srdma_qp *qp = r->qp;

	r->cap = qp->cap.max_send_wr ? qp->cap.max_send_wr : 1;
	r->max_sge = qp->cap.max_send_sge ? qp->cap.max_send_sge : 1;
	if (r->max_sge > SRDMA_MAX_SGE)
		r->max_sge = SRDMA_MAX_SGE;
	r->max_inline = qp->cap.max_inline_data;
	r->ring = calloc(r->cap, sizeof(*r->ring));
	r->sges = calloc((size_t)r->cap * r->max_sge, sizeof(*r->sges));
	r->txbuf = malloc((size_t)NR_BATCH * NR_PKT_MAX);
	if (r->max_inline)
		r->inl = malloc((size_t)r->cap * r->max_inline);
	if (!r->ring || !r->sges || !r->txbuf ||
	    (r->max_inline && !r->inl)) {
		free(r->ring);
		free(r->sges);
		free(r->txbuf);
		free(r->inl);
		r->ring = NULL;
		r->sges = NULL;
		r->txbuf = NULL;
		r->inl = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* UD: the path of one WR from its address vector. */
static int ud_path(struct srdma_netreq *r, const struct srdma_swqe *sw,
		   struct srdma_wire_path *p)
{
	const struct srdma_gid_table *t = &r->qp->ctx->gids;

	if (!sw->ud_ah.is_global || sw->ud_ah.grh.sgid_index >= t->n)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	memcpy(p->sip, t->e[sw->ud_ah.grh.sgid_index].gid.raw, 16);
	memcpy(p->dip, sw->ud_ah.grh.dgid.raw, 16);
	p->sport = SRDMA_NET_SPORT;	/* the endpoint's (net.h) */
	p->dport = SRDMA_ROCE_PORT;
	return 0;
}

int srdma_netreq_post(struct srdma_qp *qp, const struct srdma_swqe *sw)
{
	struct srdma_net_qp *nq = qp->net;
	struct srdma_netreq *r = nq->req;
	struct nr_wqe *w;
	uint32_t i, s, mtu = nr_mtu(r);

	SRDMA_LT(SRDMA_LT_NRPOST);
	if (!r->ring && ring_alloc(r))
		return -ENOMEM;
	if (r->tail - r->head >= r->cap)
		return -ENOMEM;
	if (sw->num_sge > r->max_sge)
		return -EINVAL;	/* the engine validated against the cap */
	s = r->tail % r->cap;
	w = &r->ring[s];
	memset(w, 0, sizeof(*w));
	w->wr_id = sw->wr_id;
	w->opcode = sw->opcode;
	w->send_flags = sw->send_flags;
	w->imm = sw->imm;
	w->rkey = sw->rkey;
	w->remote_addr = sw->remote_addr;
	w->compare_add = sw->compare_add;
	w->swap = sw->swap;
	w->xrc_srqn = sw->xrc_srqn;
	w->signaled = qp->sq_sig_all || (sw->send_flags & IBV_SEND_SIGNALED);
	w->status = IBV_WC_SUCCESS;
	w->num_sge = sw->num_sge;
	w->sge = &r->sges[(size_t)s * r->max_sge];
	for (i = 0; i < sw->num_sge; i++) {
		w->sge[i] = sw->sge[i];
		w->len += sw->sge[i].length;
	}
	if (is_local(w->opcode)) {
		w->mw = sw->mw;
		w->mw_new_rkey = sw->mw_new_rkey;
		w->bind = sw->bind;
		w->len = 0;
	} else if (w->opcode == IBV_WR_ATOMIC_WRITE) {
		/* The operand travels in the packet: gather it now (an
		 * inline operand is the caller's memory, read at post). */
		uint8_t *d = (uint8_t *)&w->compare_add;

		if (w->len != 8)
			return -EINVAL;	/* the engine checked: exactly 8 */
		if (sw->is_inline) {
			for (i = 0; i < sw->num_sge; i++) {
				memcpy(d, (const void *)(uintptr_t)
					       sw->sge[i].addr,
				       sw->sge[i].length);
				d += sw->sge[i].length;
			}
		} else if (sge_copy(r, w, 0, d, 8, false)) {
			srdma_dbg("QP %#x wr_id %#llx: ATOMIC_WRITE operand not readable",
				  qpn(r), (unsigned long long)w->wr_id);
			w->status = IBV_WC_LOC_PROT_ERR;
		}
		w->num_sge = 0;	/* gathered: nothing left to check */
	} else if (sw->is_inline && w->len) {
		uint8_t *d = r->inl + (size_t)s * r->max_inline;

		if (w->len > r->max_inline)
			return -EINVAL;
		for (i = 0; i < sw->num_sge; i++) {
			memcpy(d, (const void *)(uintptr_t)sw->sge[i].addr,
			       sw->sge[i].length);
			d += sw->sge[i].length;
		}
		w->inl = r->inl + (size_t)s * r->max_inline;
	}
	if (is_atomic(w->opcode))
		w->len = 8;
	if (w->len > SRDMA_MAX_MSG)
		w->status = IBV_WC_LOC_LEN_ERR;
	else if (qp->type == IBV_QPT_UC && w->opcode == IBV_WR_SEND_WITH_INV)
		/* UC has no SEND with Invalidate on the wire (IBTA, rxe);
		 * the host transport allows it between our own QPs. */
		w->status = IBV_WC_LOC_QP_OP_ERR;
	w->npkts = w->len > mtu ? (uint32_t)((w->len + mtu - 1) / mtu) : 1;
	if (is_atomic(w->opcode))
		w->npkts = 1;
	if (qp->type == IBV_QPT_UD) {
		w->ud_qpn = sw->ud_qpn;
		w->ud_qkey = sw->ud_qkey;
		if (ud_path(r, sw, &w->ud_path)) {
			srdma_dbg("QP %#x wr_id %#llx: UD address vector names no GID of ours, dropped",
				  qpn(r), (unsigned long long)w->wr_id);
			w->ud_drop = true;
		}
		if (w->len > mtu)
			w->ud_drop = true;
		w->npkts = 1;
	}
	r->tail++;
	if (r->err || atomic_load(&qp->sh->state) == IBV_QPS_ERR) {
		flush_all(r);
		return 0;
	}
	nr_send(r, srdma_net_now_ns());
	return 0;
}

void srdma_netreq_flush_locked(struct srdma_qp *qp)
{
	struct srdma_netreq *r = qp->net ? qp->net->req : NULL;

	if (r)
		flush_all(r);
}

struct srdma_netreq *srdma_netreq_new(struct srdma_net_qp *nq)
{
	struct srdma_netreq *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->nq = nq;
	r->qp = nq->qp;
	r->retry_left = r->rnr_left = -1;
	return r;
}

void srdma_netreq_free(struct srdma_netreq *r)
{
	if (!r)
		return;
	free(r->ring);
	free(r->sges);
	free(r->inl);
	free(r->txbuf);
	free(r);
}

void srdma_netreq_reset(struct srdma_net_qp *nq, uint32_t sq_psn)
{
	struct srdma_netreq *r = nq->req;

	if (!r)
		return;
	r->head = r->cur = r->tail = 0;
	r->psn = r->comp_psn = sq_psn & NR_PSN_MASK;
	r->hi_valid = false;
	r->noack = r->rd_out = 0;
	r->retry_left = r->rnr_left = -1;
	r->started_retry = false;
	r->fast_done = false;
	r->err = false;
	r->heard = false;
	r->rto_ns = r->rto_due = r->rnr_ns = 0;
	r->ntx = 0;
	atomic_store_explicit(&nq->deadline_ns, 0, memory_order_relaxed);
}

uint32_t srdma_netreq_outstanding_locked(struct srdma_qp *qp)
{
	struct srdma_netreq *r = qp->net ? qp->net->req : NULL;

	return r ? r->tail - r->head : 0;
}
