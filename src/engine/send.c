// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * send.c - the engine: executes send work requests, initiator side and
 * (for the target, which stays passive) responder side.
 *
 * ibv_post_send validates each WR (verbs-semantics §5.2) and executes it
 * at once, in the caller's thread: gather SGEs are checked against our
 * key table, the target QP, rkey and receive WQE against the target's
 * shared segment (the one key check, srdma_key_acquire, marks them in
 * flight so a concurrent dereg waits), bytes move with one
 * process_vm_writev/readv per remote span (the kernel's cross-memory
 * attach: a fault is an error return, never a signal), then the target's
 * completion (SEND, WRITE_WITH_IMM) and ours are posted. A WR that meets an
 * empty receive queue on RC (RNR) is kept, with every later WR of the QP
 * behind it, and retried by the next post_send, by polling the send CQ, and
 * by a timer thread that exists only while such WRs wait; its RNR budget
 * is (rnr_retry + 1) times the responder's RNR timer, 7 meaning forever.
 *
 * Statuses are those of §5.3-§5.5: local problems are the requester's
 * (LOC_*), responder problems are NAKs (REM_*) with the responder QP moved
 * to ERR and its receive queue flushed, UC drops what the responder would
 * reject, UD drops what cannot be delivered. A peer that is gone, or a QP
 * that is not connected back to us, is RETRY_EXC_ERR (RC, once the
 * transport retry budget has run out) or a silent drop (UC, UD). Every WR
 * asks whether its target process still exists (srdma_peer_gone: shared
 * memory, plus a pidfd poll at most once a millisecond per peer): the
 * copies address the target by pid, which a reaped owner may have passed
 * on, and a dead responder sends no RNR NAK, so rnr_retry = 7 must not
 * keep a WR waiting for it.
 * Any error moves our QP to ERR and flushes everything behind it.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/qp_state.h"
#include "util/log.h"

#define KIND_MR BIT(SRDMA_KIND_MR)
#define KIND_ANY (BIT(SRDMA_KIND_MR) | BIT(SRDMA_KIND_MW1) | BIT(SRDMA_KIND_MW2))
#define GRH_LEN 40u

enum exec_result {
	EXEC_DONE = 0,
	EXEC_RNR = 1,
};

/* What one execution decided, for both sides. */
struct outcome {
	int req_status;			/* our WC status */
	bool resp_error;		/* move the target QP to ERR */
	uint32_t resp_event;		/* async event for the target, or 0 */
	uint32_t byte_len;		/* our WC byte_len */
};

/* ---- helpers ------------------------------------------------------------- */

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
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}

static uint64_t sge_total(const struct srdma_swqe *w)
{
	uint64_t t = 0;
	uint32_t i;

	for (i = 0; i < w->num_sge; i++)
		t += w->sge[i].length;
	return t;
}

/* Our local buffers for one WR, checked and marked in flight. */
struct local_bufs {
	struct iovec iov[SRDMA_MAX_SGE];
	struct srdma_key_ref ref[SRDMA_MAX_SGE];
	uint32_t n;			/* iovs (zero-length SGEs skipped) */
	uint32_t nref;
	uint64_t len;
};

static void local_release(struct local_bufs *lb)
{
	uint32_t i;

	for (i = 0; i < lb->nref; i++)
		srdma_key_release(&lb->ref[i]);
	lb->nref = 0;
}

/* Check our SGEs (gather: access 0; scatter: LOCAL_WRITE). */
static int local_acquire(struct srdma_qp *qp, const struct srdma_swqe *w,
			 uint32_t access, struct local_bufs *lb)
{
	struct srdma_key_view v;
	uint32_t i;

	srdma_kt_view(&qp->ctx->kt, &v);
	lb->n = lb->nref = 0;
	lb->len = 0;
	for (i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];
		int r;

		if (!s->length)
			continue;
		if (w->is_inline) {
			lb->iov[lb->n].iov_base = (void *)(uintptr_t)s->addr;
		} else {
			r = srdma_key_acquire(&v, s->lkey, KIND_MR,
					      qp->pd->ibpd.handle, access,
					      s->addr, s->length, NULL, 0, 0,
					      0, &lb->ref[lb->nref]);
			if (r) {
				srdma_dbg("QP %#x wr_id %#llx: lkey %#x [%#llx+%u] %s",
					  qp->ib.qp.qp_num,
					  (unsigned long long)w->wr_id, s->lkey,
					  (unsigned long long)s->addr,
					  s->length, srdma_key_fail_str(r));
				local_release(lb);
				return -EACCES;
			}
			lb->iov[lb->n].iov_base =
				(void *)(uintptr_t)lb->ref[lb->nref].host_addr;
			lb->nref++;
		}
		lb->iov[lb->n].iov_len = s->length;
		lb->len += s->length;
		lb->n++;
	}
	return 0;
}

/* The sub-list of @lb covering [off, off + len). */
static uint32_t slice(const struct local_bufs *lb, uint64_t off, uint64_t len,
		      struct iovec *out)
{
	uint32_t i, n = 0;

	for (i = 0; i < lb->n && len; i++) {
		uint64_t l = lb->iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		out[n].iov_base = (char *)lb->iov[i].iov_base + off;
		out[n].iov_len = l - off < len ? l - off : len;
		len -= out[n].iov_len;
		off = 0;
		n++;
	}
	return n;
}

/* After a failed copy: were our own buffers the problem? */
static bool local_bad(const struct iovec *iov, uint32_t n, bool writable)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (srdma_mem_check((uintptr_t)iov[i].iov_base,
				    iov[i].iov_len, writable))
			return true;
	return false;
}

/* Copy between our iovs and [raddr, raddr + len) of the peer. */
static int xcopy(struct srdma_peer *p, const struct iovec *liov, uint32_t n,
		 uint64_t raddr, uint64_t len, bool to_peer)
{
	struct iovec r = { (void *)(uintptr_t)raddr, len };
	ssize_t got;

	if (!len)
		return 0;
	if (to_peer)
		got = process_vm_writev(p->pid, liov, n, &r, 1, 0);
	else
		got = process_vm_readv(p->pid, liov, n, &r, 1, 0);
	if (got == (ssize_t)len)
		return 0;
	if (got < 0 && errno == ESRCH)
		return -ESRCH;
	return -EFAULT;
}

/* A remote key, marked in flight under one of our access records. */
struct rref {
	struct srdma_key_ref ref;
	int rec;
};

static int remote_acquire(struct srdma_context *ctx, struct srdma_peer *p,
			  uint32_t key, unsigned int kinds, uint32_t pd,
			  uint32_t access, uint64_t addr, uint64_t len,
			  struct rref *rr)
{
	struct srdma_shm_access *rec = NULL;
	uint64_t tag = 0;
	int r;

	rr->rec = -1;
	if (!p->self) {
		while ((rr->rec = srdma_host_acc_reserve(&ctx->host)) < 0)
			sched_yield();
		rec = srdma_seg_access(ctx->host.seg, (unsigned int)rr->rec);
		tag = SRDMA_ACC_VALID | (uint64_t)p->reg_index << 32;
	}
	r = srdma_key_acquire(&p->kv, key, kinds, pd, access, addr, len, rec,
			      tag, p->pid, p->start, &rr->ref);
	if (r && rr->rec >= 0) {
		srdma_host_acc_release(&ctx->host, rr->rec);
		rr->rec = -1;
	}
	return r;
}

static void remote_release(struct srdma_context *ctx, struct rref *rr)
{
	srdma_key_release(&rr->ref);
	if (rr->rec >= 0)
		srdma_host_acc_release(&ctx->host, rr->rec);
	rr->rec = -1;
}

/* ---- target resolution --------------------------------------------------- */

struct target {
	struct srdma_peer *p;
	struct srdma_shm_qp *qp;
	uint32_t qpn;
};

static bool qp_receives(uint32_t st)
{
	return st == IBV_QPS_RTR || st == IBV_QPS_RTS || st == IBV_QPS_SQD ||
	       st == IBV_QPS_SQE;
}

/* Resolve (@lid, @qpn) to a live QP entry of the right type. */
static bool resolve(struct srdma_qp *qp, uint32_t lid, uint32_t qpn,
		    struct target *t)
{
	struct srdma_peer *p;
	struct srdma_shm_qp *sh;
	uint32_t slot = qpn & ((1u << SRDMA_QPN_SHIFT) - 1);

	/*
	 * QPNs are host-unique and name their context, so the QPN routes.
	 * The address vector's LID is not compared: on a real HCA, two
	 * contexts of one port share its LID, and programs that drive both
	 * ends (pyverbs) address the peer QP with their own LID.
	 */
	(void)lid;
	lid = qpn >> SRDMA_QPN_SHIFT;
	if (!slot)
		return false;
	/*
	 * qp->peer's reference covers every use of the peer by this WR.
	 * The copies address the target by pid: a SIGKILLed owner leaves
	 * its registry entry LIVE, and once it is reaped its pid may name
	 * another process of ours, whose memory the next WR would read or
	 * write. So every WR asks whether the owner still exists
	 * (srdma_peer_gone: the kernel is asked at most once a millisecond
	 * per peer, far below the time a pid takes to come round again).
	 */
	p = qp->peer;
	if (!p || p->lid != lid || srdma_peer_gone(qp->ctx, p)) {
		struct srdma_peer *np = srdma_peer_get(qp->ctx, lid);

		srdma_peer_put(qp->ctx, p);
		qp->peer = p = np;
		/* A cached peer comes back on the registry's word only. */
		if (!p || srdma_peer_gone(qp->ctx, p))
			return false;
	}
	sh = srdma_seg_qp(p->seg, slot);
	if (atomic_load_explicit(&sh->live, memory_order_acquire) !=
	    SRDMA_OBJ_LIVE || sh->type != qp->type)
		return false;
	t->p = p;
	t->qp = sh;
	t->qpn = qpn;
	return true;
}

/* RC/UC: the connected peer QP, which must be connected back to us. */
static bool resolve_connected(struct srdma_qp *qp, struct target *t)
{
	uint32_t dlid = atomic_load(&qp->sh->dlid);
	uint32_t dqpn = atomic_load(&qp->sh->dest_qpn);

	if (!resolve(qp, dlid, dqpn, t))
		return false;
	if (!qp_receives(atomic_load(&t->qp->state)))
		return false;
	return atomic_load(&t->qp->dest_qpn) == qp->ib.qp.qp_num;
}

/* Move the target QP to ERR (responder error) and flush it. */
static void target_error(struct srdma_qp *qp, struct target *t, uint32_t ev)
{
	uint32_t old = atomic_exchange(&t->qp->state, IBV_QPS_ERR);

	if (old == IBV_QPS_ERR)
		return;
	if (!t->qp->srq)
		srdma_rq_flush(qp->ctx, t->p, t->p->seg, t->qp, t->qpn);
	else
		srdma_aev_post(qp->ctx, t->p, IBV_EVENT_QP_LAST_WQE_REACHED,
			       SRDMA_AEV_OBJ_QP, t->qpn &
			       ((1u << SRDMA_QPN_SHIFT) - 1), t->qp->gen);
	if (ev)
		srdma_aev_post(qp->ctx, t->p, ev, SRDMA_AEV_OBJ_QP,
			       t->qpn & ((1u << SRDMA_QPN_SHIFT) - 1),
			       t->qp->gen);
}

/* ---- responder: receive queue -------------------------------------------- */

struct rq_ctx {
	struct srdma_shm_rq *rq;
	struct srdma_shm_srq *srq;	/* or NULL */
	uint32_t pd;			/* PD the receive buffers must be in */
	struct srdma_shm_rwqe *wqe;	/* head WQE, rlock held */
	uint32_t nsge;			/* its SGE count, checked */
};

/* Lock the target's RQ and find its next WQE. Return false if none. */
static bool rq_begin(struct target *t, struct rq_ctx *rc)
{
	struct srdma_seg_hdr *seg = t->p->seg;
	uint32_t size, wsz, max_sge;
	uint64_t tail;
	char *ring;

	if (t->qp->srq) {
		uint32_t s = t->qp->srq - 1;

		if (s >= SRDMA_SEG_SRQ_SLOTS)
			return false;
		rc->srq = srdma_seg_srq(seg, s);
		rc->rq = &rc->srq->rq;
		rc->pd = rc->srq->pd_handle;
	} else {
		rc->srq = NULL;
		rc->rq = &t->qp->rq;
		rc->pd = t->qp->pd_handle;
	}
	srdma_shm_lock(&rc->rq->rlock);
	/* The target's entry is writable by any process of the user: read
	 * each field once and check the copies, so no index leaves the
	 * ring arena (or the WQE slot). */
	tail = atomic_load(&rc->rq->tail);
	size = rc->rq->size;
	wsz = rc->rq->wqe_size;
	max_sge = rc->rq->max_sge;
	ring = srdma_seg_ring(seg, rc->rq->ring_off, (uint64_t)size * wsz);
	if ((rc->srq && atomic_load(&rc->srq->live) != SRDMA_OBJ_LIVE) ||
	    atomic_load(&t->qp->live) != SRDMA_OBJ_LIVE || !size || !ring ||
	    max_sge > SRDMA_MAX_SGE ||
	    wsz < sizeof(struct srdma_shm_rwqe) +
			  max_sge * sizeof(struct srdma_shm_rsge) ||
	    tail >= atomic_load_explicit(&rc->rq->head,
					 memory_order_acquire)) {
		srdma_shm_unlock(&rc->rq->rlock);
		return false;
	}
	rc->wqe = (struct srdma_shm_rwqe *)(ring + (tail & (size - 1)) * wsz);
	rc->nsge = rc->wqe->num_sge;
	if (rc->nsge > max_sge)
		rc->nsge = max_sge;
	return true;
}

/* Consume the WQE, post the target's CQE, unlock. */
static void rq_complete(struct srdma_qp *qp, struct target *t,
			struct rq_ctx *rc, struct srdma_shm_cqe *c,
			bool solicited)
{
	uint64_t tail = atomic_load(&rc->rq->tail) + 1;
	uint32_t limit;

	c->wr_id = rc->wqe->wr_id;
	c->qp_num = t->qpn;
	atomic_store(&rc->rq->tail, tail);
	srdma_cqe_post(qp->ctx, t->p, t->qp->recv_cq, c, solicited);
	atomic_fetch_add_explicit(&t->qp->n_recv, 1, memory_order_relaxed);
	if (rc->srq) {
		limit = atomic_load(&rc->srq->limit);
		if (limit && atomic_load(&rc->rq->head) - tail < limit &&
		    atomic_compare_exchange_strong(&rc->srq->limit, &limit, 0))
			srdma_aev_post(qp->ctx, t->p,
				       IBV_EVENT_SRQ_LIMIT_REACHED,
				       SRDMA_AEV_OBJ_SRQ,
				       t->qp->srq - 1, rc->srq->gen);
	}
	srdma_shm_unlock(&rc->rq->rlock);
}

static void rq_abort(struct rq_ctx *rc)
{
	srdma_shm_unlock(&rc->rq->rlock);
}

/*
 * Scatter @len bytes of @lb (from @off) into the WQE's buffers at @skip
 * bytes into them. Return: 0, -EACCES (a receive buffer failed the key
 * check: responder LOC_PROT), -EFAULT (copy failed), -ESRCH (peer gone).
 */
static int scatter(struct srdma_qp *qp, struct target *t, struct rq_ctx *rc,
		   struct local_bufs *lb, uint64_t skip, uint64_t len,
		   const void *prefix, uint32_t prefix_len)
{
	struct iovec iov[SRDMA_MAX_SGE + 1];
	uint64_t done = 0, pdone = 0;
	uint32_t i;

	for (i = 0; i < rc->nsge && (done < len || pdone < prefix_len);
	     i++) {
		struct srdma_shm_rsge s = rc->wqe->sge[i];
		uint64_t want, base = 0, from_prefix = 0;
		struct rref rr;
		uint32_t n = 0;
		int r;

		if (skip >= s.length) {
			skip -= s.length;
			continue;
		}
		want = s.length - skip;
		if (pdone < prefix_len) {
			from_prefix = prefix_len - pdone < want ?
				      prefix_len - pdone : want;
		}
		if (want - from_prefix > len - done)
			want = from_prefix + (len - done);
		r = remote_acquire(qp->ctx, t->p, s.lkey, KIND_MR, rc->pd,
				   IBV_ACCESS_LOCAL_WRITE, s.addr + skip, want,
				   &rr);
		if (r) {
			srdma_dbg("receive buffer lkey %#x [%#llx+%llu] of QP %#x: %s",
				  s.lkey, (unsigned long long)(s.addr + skip),
				  (unsigned long long)want, t->qpn,
				  srdma_key_fail_str(r));
			return -EACCES;
		}
		if (from_prefix) {
			iov[0].iov_base = (char *)prefix + pdone;
			iov[0].iov_len = from_prefix;
			n = 1;
			pdone += from_prefix;
			base = from_prefix;
		}
		n += slice(lb, done, want - base, iov + n);
		r = xcopy(t->p, iov, n, rr.ref.host_addr, want, true);
		remote_release(qp->ctx, &rr);
		if (r)
			return r;
		done += want - base;
		skip = 0;
	}
	return 0;
}

/* Bytes the head WQE takes: its SGEs up to the checked count rq_begin()
 * kept (the WQE's own num_sge is shared memory and may be anything). */
static uint64_t wqe_capacity(const struct rq_ctx *rc)
{
	uint64_t t = 0;
	uint32_t i;

	for (i = 0; i < rc->nsge; i++)
		t += rc->wqe->sge[i].length;
	return t;
}

/* ---- the operations -------------------------------------------------------- */

/* Remote key for WRITE/READ/ATOMIC, incl. the type 2B window's QP rule. */
static int rkey_acquire(struct srdma_qp *qp, struct target *t, uint32_t rkey,
			uint32_t access, uint64_t addr, uint64_t len,
			struct rref *rr)
{
	int r = remote_acquire(qp->ctx, t->p, rkey, KIND_ANY,
			       t->qp->pd_handle, access, addr, len, rr);

	if (r) {
		srdma_dbg("QP %#x: rkey %#x [%#llx+%llu] at QP %#x: %s",
			  qp->ib.qp.qp_num, rkey, (unsigned long long)addr,
			  (unsigned long long)len, t->qpn,
			  srdma_key_fail_str(r));
		return r;
	}
	if (rr->ref.snap.kind == SRDMA_KIND_MW2 &&
	    rr->ref.snap.bind_qpn != t->qpn) {
		remote_release(qp->ctx, rr);
		srdma_dbg("rkey %#x: type 2 window bound through QP %#x, used through %#x",
			  rkey, rr->ref.snap.bind_qpn, t->qpn);
		return SRDMA_KCHK_ACCESS;
	}
	return 0;
}

/*
 * The requester's status when the responder's process is gone (a copy got
 * ESRCH): RC retries unanswered until RETRY_EXC_ERR; UC and UD packets are
 * simply lost on the wire, so the send completes successfully.
 */
static enum ibv_wc_status peer_gone_status(const struct srdma_qp *qp)
{
	return qp->type == IBV_QPT_RC ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS;
}

/* A failed copy: whose fault? */
static void copy_failed(const struct srdma_qp *qp, struct outcome *o, int r,
			const struct iovec *liov, uint32_t n,
			bool local_writable, int remote_status)
{
	if (r == -ESRCH) {
		o->req_status = peer_gone_status(qp);
		return;
	}
	if (local_bad(liov, n, local_writable)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return;
	}
	o->req_status = remote_status;
	o->resp_error = true;
	o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
}

static int exec_send(struct srdma_qp *qp, struct srdma_swqe *w,
		     struct target *t, struct outcome *o)
{
	struct local_bufs lb;
	struct rq_ctx rc;
	struct srdma_shm_cqe c = { 0 };
	uint8_t grh[GRH_LEN];
	uint32_t prefix = 0;
	bool ud = qp->type == IBV_QPT_UD, uc = qp->type == IBV_QPT_UC;
	int r;

	if (local_acquire(qp, w, 0, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = (uint32_t)lb.len;
	if (ud && lb.len > 4096)	/* beyond the MTU: "sent", dropped */
		goto out;
	if (!rq_begin(t, &rc)) {
		local_release(&lb);
		if (ud || uc)
			return EXEC_DONE;	/* dropped */
		return EXEC_RNR;
	}
	if (ud) {
		prefix = GRH_LEN;
		memset(grh, 0, sizeof(grh));
		if (w->ud_ah.is_global) {
			union ibv_gid sgid;

			grh[0] = 6 << 4;	/* IP version 6 */
			*(uint16_t *)&grh[4] = htobe16((uint16_t)lb.len);
			grh[6] = 0x1b;		/* next header: IB */
			grh[7] = w->ud_ah.grh.hop_limit;
			/* Our GID at the AH's index (the AH checked it):
			 * the LID-derived one on IB, an IP GID on RoCE. */
			sgid = w->ud_ah.grh.sgid_index < qp->ctx->gids.n
				       ? qp->ctx->gids.e[w->ud_ah.grh.sgid_index].gid
				       : qp->ctx->gids.e[0].gid;
			memcpy(&grh[8], sgid.raw, 16);
			memcpy(&grh[24], w->ud_ah.grh.dgid.raw, 16);
			c.wc_flags |= IBV_WC_GRH;
		}
	}
	if (lb.len + prefix > wqe_capacity(&rc)) {
		if (uc && !rc.srq) {	/* silently dropped */
			rq_abort(&rc);
			goto out;
		}
		c.status = IBV_WC_LOC_LEN_ERR;
		c.opcode = IBV_WC_RECV;
		rq_complete(qp, t, &rc, &c, true);
		if (!ud) {
			o->req_status = uc ? IBV_WC_SUCCESS :
					     IBV_WC_REM_INV_REQ_ERR;
			o->resp_error = true;
			o->resp_event = IBV_EVENT_QP_REQ_ERR;
		}
		goto out;
	}
	if (w->opcode == IBV_WR_SEND_WITH_INV) {
		r = srdma_key_remote_invalidate(&t->p->kv, w->imm,
						t->qp->pd_handle);
		if (r) {
			c.status = IBV_WC_REM_INV_REQ_ERR;
			c.opcode = IBV_WC_RECV;
			rq_complete(qp, t, &rc, &c, true);
			o->req_status = IBV_WC_REM_INV_REQ_ERR;
			o->resp_error = true;
			o->resp_event = IBV_EVENT_QP_REQ_ERR;
			goto out;
		}
		c.wc_flags |= IBV_WC_WITH_INV;
		c.imm = w->imm;
	}
	r = scatter(qp, t, &rc, &lb, 0, lb.len, grh, prefix);
	if (r == -EACCES && uc && !rc.srq) {
		/* UC: the responder drops it, the WQE stays (§5.5). */
		rq_abort(&rc);
		goto out;
	}
	if (r == -EACCES) {
		c.status = IBV_WC_LOC_PROT_ERR;
		c.opcode = IBV_WC_RECV;
		rq_complete(qp, t, &rc, &c, true);
		o->req_status = ud || uc ? IBV_WC_SUCCESS : IBV_WC_REM_OP_ERR;
		o->resp_error = !ud && !uc;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
		goto out;
	}
	if (r) {
		if (r == -ESRCH || local_bad(lb.iov, lb.n, false)) {
			rq_abort(&rc);
			o->req_status = r == -ESRCH ? peer_gone_status(qp) :
					IBV_WC_LOC_PROT_ERR;
			goto out;
		}
		c.status = IBV_WC_LOC_PROT_ERR;
		c.opcode = IBV_WC_RECV;
		rq_complete(qp, t, &rc, &c, true);
		o->req_status = ud || uc ? IBV_WC_SUCCESS : IBV_WC_REM_OP_ERR;
		o->resp_error = !ud;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
		goto out;
	}
	c.status = IBV_WC_SUCCESS;
	c.opcode = IBV_WC_RECV;
	c.byte_len = (uint32_t)(lb.len + prefix);
	if (w->opcode == IBV_WR_SEND_WITH_IMM) {
		c.wc_flags |= IBV_WC_WITH_IMM;
		c.imm = w->imm;
	}
	c.src_qp = qp->ib.qp.qp_num;
	c.slid = (uint16_t)qp->ctx->host.lid;
	c.sl = ud ? w->ud_ah.sl : qp->attr.ah_attr.sl;
	rq_complete(qp, t, &rc, &c, w->send_flags & IBV_SEND_SOLICITED);
out:
	local_release(&lb);
	return EXEC_DONE;
}

static int exec_write(struct srdma_qp *qp, struct srdma_swqe *w,
		      struct target *t, struct outcome *o)
{
	bool imm = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool uc = qp->type == IBV_QPT_UC;
	struct srdma_shm_cqe c = { 0 };
	struct local_bufs lb;
	struct rq_ctx rc;
	struct rref rr;
	int r;

	if (local_acquire(qp, w, 0, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = (uint32_t)lb.len;
	if (imm && !rq_begin(t, &rc)) {
		local_release(&lb);
		return uc ? EXEC_DONE : EXEC_RNR;
	}
	if (!(atomic_load(&t->qp->access) & IBV_ACCESS_REMOTE_WRITE)) {
		if (!uc) {
			o->req_status = IBV_WC_REM_INV_REQ_ERR;
			o->resp_error = true;
			o->resp_event = IBV_EVENT_QP_REQ_ERR;
		}
		goto fail_imm;
	}
	if (lb.len) {
		r = rkey_acquire(qp, t, w->rkey, IBV_ACCESS_REMOTE_WRITE,
				 w->remote_addr, lb.len, &rr);
		if (r) {
			if (!uc) {
				o->req_status = IBV_WC_REM_ACCESS_ERR;
				o->resp_error = true;
				o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
				if (imm) {
					c.status = IBV_WC_LOC_ACCESS_ERR;
					c.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
					rq_complete(qp, t, &rc, &c, true);
					imm = false;
				}
			}
			goto fail_imm;
		}
		r = xcopy(t->p, lb.iov, lb.n, rr.ref.host_addr, lb.len, true);
		remote_release(qp->ctx, &rr);
		if (r) {
			copy_failed(qp, o, r, lb.iov, lb.n, false,
				    IBV_WC_REM_ACCESS_ERR);
			if (uc && o->req_status == IBV_WC_REM_ACCESS_ERR) {
				o->req_status = IBV_WC_SUCCESS;
				o->resp_error = false;
			}
			goto fail_imm;
		}
	}
	if (imm) {
		c.status = IBV_WC_SUCCESS;
		c.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		c.byte_len = (uint32_t)lb.len;
		c.wc_flags = IBV_WC_WITH_IMM;
		c.imm = w->imm;
		c.src_qp = qp->ib.qp.qp_num;
		c.slid = (uint16_t)qp->ctx->host.lid;
		rq_complete(qp, t, &rc, &c, w->send_flags & IBV_SEND_SOLICITED);
	}
	local_release(&lb);
	return EXEC_DONE;

fail_imm:
	if (imm)
		rq_abort(&rc);
	local_release(&lb);
	return EXEC_DONE;
}

static int exec_read(struct srdma_qp *qp, struct srdma_swqe *w,
		     struct target *t, struct outcome *o)
{
	struct local_bufs lb;
	struct rref rr;
	int r;

	if (local_acquire(qp, w, IBV_ACCESS_LOCAL_WRITE, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = (uint32_t)lb.len;
	if (!(atomic_load(&t->qp->access) & IBV_ACCESS_REMOTE_READ)) {
		o->req_status = IBV_WC_REM_INV_REQ_ERR;
		o->resp_error = true;
		o->resp_event = IBV_EVENT_QP_REQ_ERR;
		goto out;
	}
	if (lb.len) {
		r = rkey_acquire(qp, t, w->rkey, IBV_ACCESS_REMOTE_READ,
				 w->remote_addr, lb.len, &rr);
		if (r) {
			o->req_status = IBV_WC_REM_ACCESS_ERR;
			o->resp_error = true;
			o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
			goto out;
		}
		r = xcopy(t->p, lb.iov, lb.n, rr.ref.host_addr, lb.len, false);
		remote_release(qp->ctx, &rr);
		if (r)
			copy_failed(qp, o, r, lb.iov, lb.n, true,
				    IBV_WC_REM_ACCESS_ERR);
	}
out:
	local_release(&lb);
	return EXEC_DONE;
}

static int exec_atomic(struct srdma_qp *qp, struct srdma_swqe *w,
		       struct target *t, struct outcome *o)
{
	struct iovec self;
	struct local_bufs lb;
	pthread_mutex_t *m;
	uint64_t old, nv;
	struct rref rr;
	int r;

	if (local_acquire(qp, w, IBV_ACCESS_LOCAL_WRITE, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = 8;
	if (!(atomic_load(&t->qp->access) & IBV_ACCESS_REMOTE_ATOMIC) ||
	    (w->remote_addr & 7)) {
		o->req_status = IBV_WC_REM_INV_REQ_ERR;
		o->resp_error = true;
		o->resp_event = IBV_EVENT_QP_REQ_ERR;
		goto out;
	}
	r = rkey_acquire(qp, t, w->rkey, IBV_ACCESS_REMOTE_ATOMIC,
			 w->remote_addr, 8, &rr);
	if (r) {
		o->req_status = IBV_WC_REM_ACCESS_ERR;
		o->resp_error = true;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
		goto out;
	}
	m = srdma_host_atomic_lock(qp->ctx, t->p->pid, rr.ref.host_addr);
	if (!m) {
		remote_release(qp->ctx, &rr);
		o->req_status = IBV_WC_GENERAL_ERR;
		goto out;
	}
	self.iov_base = &old;
	self.iov_len = 8;
	r = xcopy(t->p, &self, 1, rr.ref.host_addr, 8, false);
	if (!r) {
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP)
			nv = old == w->compare_add ? w->swap : old;
		else
			nv = old + w->compare_add;
		self.iov_base = &nv;
		if (nv != old || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			r = xcopy(t->p, &self, 1, rr.ref.host_addr, 8, true);
	}
	srdma_shm_unlock(m);
	remote_release(qp->ctx, &rr);
	if (r) {
		o->req_status = r == -ESRCH ? peer_gone_status(qp) :
				IBV_WC_REM_ACCESS_ERR;
		o->resp_error = r != -ESRCH;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
		goto out;
	}
	/* The original value into our buffer (it may be unmapped). */
	{
		struct srdma_peer me = { .pid = getpid() };
		uint32_t i;
		uint64_t off = 0;

		for (i = 0; i < lb.n; i++) {
			struct iovec src = { (char *)&old + off,
					     lb.iov[i].iov_len };

			if (xcopy(&me, &src, 1,
				  (uintptr_t)lb.iov[i].iov_base,
				  lb.iov[i].iov_len, true)) {
				o->req_status = IBV_WC_LOC_PROT_ERR;
				break;
			}
			off += lb.iov[i].iov_len;
		}
	}
out:
	local_release(&lb);
	return EXEC_DONE;
}

/* ---- local operations (bind, invalidate) --------------------------------- */

static int exec_local_inv(struct srdma_qp *qp, struct srdma_swqe *w,
			  struct outcome *o)
{
	if (srdma_mw_local_invalidate(qp->ctx, qp->pd, w->imm))
		o->req_status = IBV_WC_LOC_QP_OP_ERR;
	return EXEC_DONE;
}

static int exec_bind(struct srdma_qp *qp, struct srdma_swqe *w,
		     struct outcome *o)
{
	if (srdma_mw_bind_exec(qp->ctx, qp->pd, qp->ib.qp.qp_num, w->mw,
			       w->mw_new_rkey, &w->bind))
		o->req_status = IBV_WC_MW_BIND_ERR;
	return EXEC_DONE;
}

/* ---- one WR ------------------------------------------------------------------ */

static void post_own(struct srdma_qp *qp, struct srdma_swqe *w, int status,
		     uint32_t byte_len)
{
	struct srdma_shm_cqe c = { 0 };

	c.wr_id = w->wr_id;
	c.status = (uint8_t)status;
	c.opcode = (uint8_t)wc_opcode(w->opcode);
	c.qp_num = qp->ib.qp.qp_num;
	c.byte_len = byte_len;
	srdma_cqe_post(qp->ctx, NULL, qp->send_cq->slot, &c, false);
}

/* Our QP to ERR after a failed WR; sq_lock held. */
static void own_error_locked(struct srdma_qp *qp)
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
}

/*
 * RC request that nobody answers (target gone, or not connected back): as
 * on a fabric it is retried until the transport retry budget, timeout x
 * (retry_cnt + 1), counted from the first unanswered try, runs out
 * (timeout 0: forever). Return EXEC_RNR (retry later) or EXEC_DONE with
 * RETRY_EXC_ERR in @o.
 */
static int unanswered(struct srdma_qp *qp, struct srdma_swqe *w,
		      struct outcome *o)
{
	uint64_t now = srdma_now_ns();
	uint64_t tmo = srdma_ack_timeout_ns(qp->attr.timeout);

	if (!w->lost_ns)
		w->lost_ns = now;
	if (tmo == UINT64_MAX ||
	    now - w->lost_ns <= tmo * (qp->attr.retry_cnt + 1ull))
		return EXEC_RNR;
	srdma_dbg("QP %#x: peer lid %u QP %#x gone, unreachable or not connected back",
		  qp->ib.qp.qp_num, atomic_load(&qp->sh->dlid),
		  atomic_load(&qp->sh->dest_qpn));
	o->req_status = IBV_WC_RETRY_EXC_ERR;
	return EXEC_DONE;
}

/* Execute @w. sq_lock held. Return EXEC_DONE (completion posted as needed)
 * or EXEC_RNR (nothing happened; retry later). */
static int exec_wr(struct srdma_qp *qp, struct srdma_swqe *w)
{
	struct outcome o = { .req_status = IBV_WC_SUCCESS };
	struct target t;
	bool signaled = qp->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
	uint32_t st = atomic_load(&qp->sh->state);
	int r = EXEC_DONE;

	if (st == IBV_QPS_ERR) {
		post_own(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
		return EXEC_DONE;
	}
	if (sge_total(w) > SRDMA_MAX_MSG) {
		o.req_status = IBV_WC_LOC_LEN_ERR;
		goto done;
	}
	switch (w->opcode) {
	case IBV_WR_LOCAL_INV:
		r = exec_local_inv(qp, w, &o);
		goto done;
	case IBV_WR_BIND_MW:
		r = exec_bind(qp, w, &o);
		goto done;
	default:
		break;
	}
	if (qp->type == IBV_QPT_UD) {
		if (!resolve(qp, w->ud_dlid, w->ud_qpn, &t) ||
		    !qp_receives(atomic_load(&t.qp->state))) {
			o.byte_len = (uint32_t)sge_total(w);
			goto done;	/* nobody there: dropped */
		}
		if (atomic_load(&t.qp->qkey) != w->ud_qkey)
			goto done;	/* Q_Key violation: dropped */
		r = exec_send(qp, w, &t, &o);
		goto done;
	}
	if (!resolve_connected(qp, &t)) {
		if (qp->type != IBV_QPT_RC)
			goto done;	/* UC: lost on the wire */
		r = unanswered(qp, w, &o);
		if (r == EXEC_RNR)
			return r;
		goto done;
	}
	switch (w->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
		r = exec_send(qp, w, &t, &o);
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		r = exec_write(qp, w, &t, &o);
		break;
	case IBV_WR_RDMA_READ:
		r = exec_read(qp, w, &t, &o);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		r = exec_atomic(qp, w, &t, &o);
		break;
	default:
		o.req_status = IBV_WC_LOC_QP_OP_ERR;
		break;
	}
	if (r == EXEC_RNR) {
		uint64_t now = srdma_now_ns();
		uint64_t tmo = srdma_rnr_timer_ns(t.qp->min_rnr_timer);

		/* A dead responder sends no RNR NAK: from now on the
		 * request goes unanswered (the kernel is asked at most once
		 * a millisecond, only on this retry path). */
		if (srdma_peer_gone(qp->ctx, t.p)) {
			r = unanswered(qp, w, &o);
			if (r == EXEC_RNR)
				return r;
			goto done;
		}
		if (!w->first_try_ns)
			w->first_try_ns = now;
		if (qp->attr.rnr_retry == 7 ||
		    now - w->first_try_ns <= tmo * (qp->attr.rnr_retry + 1ull))
			return EXEC_RNR;
		o.req_status = IBV_WC_RNR_RETRY_EXC_ERR;
		r = EXEC_DONE;
	}
	if (o.resp_error)
		target_error(qp, &t, o.resp_event);
done:
	if (o.req_status != IBV_WC_SUCCESS) {
		post_own(qp, w, o.req_status, 0);
		own_error_locked(qp);
	} else {
		atomic_fetch_add_explicit(&qp->sh->n_sent, 1,
					  memory_order_relaxed);
		if (signaled)
			post_own(qp, w, IBV_WC_SUCCESS, o.byte_len);
	}
	return r;
}

/* ---- post_send -------------------------------------------------------------- */

static bool opcode_ok(enum ibv_qp_type type, uint32_t op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
	case IBV_WR_SEND_WITH_INV:
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return type == IBV_QPT_RC;
	default:
		return false;
	}
}

/* §5.2 checks and conversion into @w (sge pointing into @wr). */
static int convert(struct srdma_qp *qp, struct ibv_send_wr *wr,
		   struct srdma_swqe *w)
{
	uint64_t total = 0;
	int i;

	if (!opcode_ok(qp->type, wr->opcode))
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	memset(w, 0, offsetof(struct srdma_swqe, sge_buf));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->num_sge = (uint32_t)wr->num_sge;
	w->sge = wr->sg_list;
	if ((wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ &&
	    wr->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) {
		if (total > qp->cap.max_inline_data)
			return EINVAL;
		w->is_inline = true;
	}
	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		w->imm = wr->imm_data;
		break;
	case IBV_WR_SEND_WITH_INV:
		w->imm = wr->invalidate_rkey;
		break;
	case IBV_WR_LOCAL_INV:
		w->imm = wr->invalidate_rkey;
		break;
	default:
		break;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if ((wr->wr.atomic.remote_addr & 7) || total != 8)
			return EINVAL;
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		break;
	case IBV_WR_BIND_MW:
		if (wr->num_sge)
			return EINVAL;
		w->mw = wr->bind_mw.mw;
		w->mw_new_rkey = wr->bind_mw.rkey;
		w->bind = wr->bind_mw.bind_info;
		break;
	default:
		break;
	}
	if (qp->type == IBV_QPT_UD) {
		struct srdma_ah *ah;

		if (!wr->wr.ud.ah || !srdma_handle_check(wr->wr.ud.ah,
							 SRDMA_OBJ_AH))
			return EINVAL;
		ah = container_of(wr->wr.ud.ah, struct srdma_ah, ibah);
		w->ud_dlid = ah->dlid;
		w->ud_ah = ah->attr;
		w->ud_qpn = wr->wr.ud.remote_qpn;
		w->ud_qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ?
			     atomic_load(&qp->sh->qkey) :
			     wr->wr.ud.remote_qkey;
	}
	return 0;
}

/* A heap copy of @w that outlives the application's WR (and inline data). */
static struct srdma_swqe *defer_copy(const struct srdma_swqe *w)
{
	uint64_t inl = w->is_inline ? sge_total(w) : 0;
	struct srdma_swqe *d;
	uint32_t i;
	char *p;

	d = malloc(sizeof(*d) + w->num_sge * sizeof(struct ibv_sge) + inl);
	if (!d)
		return NULL;
	memcpy(d, w, sizeof(*d));
	d->next = NULL;
	d->sge = d->sge_buf;
	if (w->is_inline) {
		p = (char *)&d->sge_buf[1];
		for (i = 0, inl = 0; i < w->num_sge; i++) {
			memcpy(p + inl, (void *)(uintptr_t)w->sge[i].addr,
			       w->sge[i].length);
			inl += w->sge[i].length;
		}
		d->sge_buf[0].addr = (uintptr_t)p;
		d->sge_buf[0].length = (uint32_t)inl;
		d->sge_buf[0].lkey = 0;
		d->num_sge = 1;
	} else {
		memcpy(d->sge_buf, w->sge, w->num_sge * sizeof(struct ibv_sge));
	}
	return d;
}

static void pend_add_locked(struct srdma_qp *qp, struct srdma_swqe *d)
{
	*qp->pend_tail = d;
	qp->pend_tail = &d->next;
	if (!qp->n_pend++) {
		atomic_fetch_add(&qp->send_cq->n_pending_qp, 1);
		srdma_progress_need(qp);
	}
}

static void pend_pop_locked(struct srdma_qp *qp)
{
	struct srdma_swqe *d = qp->pend_head;

	qp->pend_head = d->next;
	if (!qp->pend_head)
		qp->pend_tail = &qp->pend_head;
	free(d);
	if (!--qp->n_pend) {
		atomic_fetch_sub(&qp->send_cq->n_pending_qp, 1);
		srdma_progress_done(qp);
	}
}

static void progress_locked(struct srdma_qp *qp)
{
	while (qp->pend_head) {
		if (exec_wr(qp, qp->pend_head) == EXEC_RNR)
			return;
		pend_pop_locked(qp);
	}
}

void srdma_sq_flush_locked(struct srdma_qp *qp)
{
	while (qp->pend_head) {
		post_own(qp, qp->pend_head, IBV_WC_WR_FLUSH_ERR, 0);
		pend_pop_locked(qp);
	}
}

int srdma_post_send(struct srdma_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad)
{
	union {
		struct srdma_swqe w;
		char buf[sizeof(struct srdma_swqe)];
	} u;
	uint32_t st;
	int ret = 0;

	pthread_mutex_lock(&qp->sq_lock);
	st = atomic_load(&qp->sh->state);
	if (st != IBV_QPS_RTS && st != IBV_QPS_ERR && st != IBV_QPS_SQD &&
	    st != IBV_QPS_SQE) {
		ret = EINVAL;
		goto out;
	}
	if (qp->pend_head)
		progress_locked(qp);
	for (; wr; wr = wr->next) {
		ret = convert(qp, wr, &u.w);
		if (ret)
			break;
		if (qp->pend_head) {
			struct srdma_swqe *d;

			if (qp->n_pend >= qp->cap.max_send_wr) {
				ret = ENOMEM;
				break;
			}
			d = defer_copy(&u.w);
			if (!d) {
				ret = ENOMEM;
				break;
			}
			pend_add_locked(qp, d);
			continue;
		}
		if (exec_wr(qp, &u.w) == EXEC_RNR) {
			struct srdma_swqe *d = defer_copy(&u.w);

			if (!d) {
				ret = ENOMEM;
				break;
			}
			pend_add_locked(qp, d);
		}
	}
out:
	pthread_mutex_unlock(&qp->sq_lock);
	if (ret && bad)
		*bad = wr;
	return ret;
}

void srdma_qp_progress(struct srdma_qp *qp)
{
	pthread_mutex_lock(&qp->sq_lock);
	progress_locked(qp);
	pthread_mutex_unlock(&qp->sq_lock);
}

int srdma_bind_mw(struct srdma_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr = { 0 };
	struct ibv_send_wr *bad;
	uint32_t st = atomic_load(&qp->sh->state);
	int ret;

	if (!bind || !srdma_mw_lookup(mw) || mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED)
		return EINVAL;
	if (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC)
		return EINVAL;
	if (st != IBV_QPS_RTS)
		return EINVAL;
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	mw->rkey = wr.bind_mw.rkey;
	ret = srdma_post_send(qp, &wr, &bad);
	return ret;
}
