// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * requester.c - the requester stage: validates and converts send work
 * requests and runs each on its transport. A WR whose destination the
 * net transport serves (every WR of an RC/UC QP connected over it, local
 * operations included so they complete in order; a UD WR whose address
 * vector it serves) is handed to the net requester (srdma_netreq_post),
 * which completes it later; otherwise LOCAL_INV and BIND_MW run here and
 * every other WR runs on the host transport, below, in the caller's
 * thread.
 * Everything the target does (QP state and access, the key check of
 * rkeys and receive buffers, receive queues, the target's CQEs and
 * errors) is the responder's (responder.c), run here against the target's
 * shared segment; our own CQEs and error rules are the completer's
 * (completer.c).
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
 * memory, including the owner's life marker, which the kernel marks when
 * it exits): a dead responder sends no RNR NAK, so rnr_retry = 7 must not
 * keep a WR waiting for it. The copies address the target by pid, which a
 * reaped owner may have passed on: each asks again right before its
 * system call (srdma_peer_vm_rw).
 * Any error moves our QP to ERR and flushes everything behind it. A
 * WR posted behind deferred ones waits behind them whatever its
 * transport, so the send queue keeps its order.
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
#include "core/import.h"
#include "core/qp_state.h"
#include "core/raw.h"
#include "transport/net/rawwire.h"
#include "engine/engine.h"
#include "engine/progress.h"
#include "engine/responder.h"
#include "engine/tm.h"
#include "transport/host/mcast.h"
#include "transport/net/net.h"
#include "util/log.h"
#include "util/selfcopy.h"

#define KIND_MR BIT(SRDMA_KIND_MR)
#define GRH_LEN 40u

enum exec_result {
	EXEC_DONE = 0,
	EXEC_RNR = 1,		/* nothing happened: try again later */
	EXEC_NOMEM = 2,		/* the net requester's queue is full */
};

/* What one execution decided, for both sides. */
struct outcome {
	int req_status;			/* our WC status */
	bool resp_error;		/* move the target QP to ERR */
	uint32_t resp_event;		/* async event for the target, or 0 */
	uint32_t byte_len;		/* our WC byte_len */
	/* A rendezvous a TM SRQ matched, to read once our completion is
	 * posted (engine/tm.c): storage the caller provides, and whether
	 * it was filled. */
	struct srdma_rwqe *rndv;
	bool rndv_pending;
};

/* ---- helpers ------------------------------------------------------------- */

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
	struct srdma_import_io *imp;	/* SGEs of MRs imported from another
					 * process (core/import.c), or NULL */
};

static void local_release(struct local_bufs *lb)
{
	uint32_t i;

	for (i = 0; i < lb->nref; i++)
		srdma_key_release(&lb->ref[i]);
	lb->nref = 0;
	if (unlikely(lb->imp)) {
		srdma_import_release(lb->imp);
		lb->imp = NULL;
	}
}

/* A scatter into imported MRs went through a bounce buffer: write it
 * back to their owner. Return: 0 or -EFAULT. */
static int local_commit(struct local_bufs *lb)
{
	return unlikely(lb->imp) ? srdma_import_commit(lb->imp) : 0;
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
	lb->imp = NULL;
	for (i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];
		void *imported;
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
			/* Not ours: an MR of the context we import? */
			if (r == SRDMA_KCHK_NOKEY && unlikely(qp->ctx->import)) {
				r = srdma_import_acquire(
					qp->ctx, &lb->imp, sge_total(w),
					w->num_sge, qp->pd->ibpd.handle, s,
					access, &imported);
				if (!r) {
					lb->iov[lb->n].iov_base = imported;
					goto next;
				}
			}
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
next:
		lb->iov[lb->n].iov_len = s->length;
		lb->len += s->length;
		lb->n++;
	}
	return 0;
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

/* ---- target resolution (host transport) ---------------------------------- */

/* Resolve (@lid, @qpn) to a live QP entry of the right type. */
static bool resolve(struct srdma_qp *qp, uint32_t lid, uint32_t qpn,
		    struct srdma_target *t)
{
	struct srdma_peer *p;

	/*
	 * QPNs are host-unique and name their context, so the QPN routes.
	 * The address vector's LID is not compared: on a real HCA, two
	 * contexts of one port share its LID, and programs that drive both
	 * ends (pyverbs) address the peer QP with their own LID.
	 */
	(void)lid;
	lid = qpn >> SRDMA_QPN_SHIFT;
	if (!(qpn & ((1u << SRDMA_QPN_SHIFT) - 1)))
		return false;
	/*
	 * qp->peer's reference covers every use of the peer by this WR.
	 * A SIGKILLed owner leaves its registry entry LIVE: every WR asks
	 * whether the owner still exists (srdma_peer_gone: its life marker,
	 * one load), so a dead peer's WR ends as the transport says and a
	 * new owner of the LID is mapped. That is not what keeps a reaped
	 * owner's pid, which may name another process, from being written:
	 * each copy asks again right before its system call
	 * (srdma_peer_vm_rw), since the owner may die after this point.
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
	/* XRC: an INI QP talks to a TGT QP. */
	return !srdma_resp_target(qp->ctx, p, qpn,
				  qp->type == IBV_QPT_XRC_SEND ?
					  IBV_QPT_XRC_RECV : qp->type, t);
}

/* RC/UC: the connected peer QP, which must be connected back to us. */
static bool resolve_connected(struct srdma_qp *qp, struct srdma_target *t)
{
	uint32_t dlid = atomic_load(&qp->sh->dlid);
	uint32_t dqpn = atomic_load(&qp->sh->dest_qpn);

	if (!resolve(qp, dlid, dqpn, t))
		return false;
	return srdma_resp_connected_to(t, qp->ib.qp.qp_num);
}

/* ---- the operations ------------------------------------------------------ */

/*
 * The requester's status when the responder's process is gone (a copy got
 * ESRCH): RC retries unanswered until RETRY_EXC_ERR; UC and UD packets are
 * simply lost on the wire, so the send completes successfully.
 */
static enum ibv_wc_status peer_gone_status(const struct srdma_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND ?
		       IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS;
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

/* UD: the GRH the receiver finds in front of the payload (40 bytes). */
static void build_grh(struct srdma_qp *qp, const struct srdma_swqe *w,
		      uint64_t len, uint8_t *grh)
{
	union ibv_gid sgid;

	grh[0] = 6 << 4;	/* IP version 6 */
	*(uint16_t *)&grh[4] = htobe16((uint16_t)len);
	grh[6] = 0x1b;		/* next header: IB */
	grh[7] = w->ud_ah.grh.hop_limit;
	/* Our GID at the AH's index (the AH checked it): the LID-derived
	 * one on IB, an IP GID on RoCE. */
	sgid = w->ud_ah.grh.sgid_index < qp->ctx->gids.n
		       ? qp->ctx->gids.e[w->ud_ah.grh.sgid_index].gid
		       : qp->ctx->gids.e[0].gid;
	memcpy(&grh[8], sgid.raw, 16);
	memcpy(&grh[24], w->ud_ah.grh.dgid.raw, 16);
}

static int exec_send(struct srdma_qp *qp, struct srdma_swqe *w,
		     struct srdma_target *t, struct outcome *o)
{
	struct local_bufs lb;
	struct srdma_rq_hold h;
	struct srdma_shm_cqe c = { 0 };
	struct iovec withgrh[SRDMA_MAX_SGE + 1];
	const struct iovec *src;
	uint8_t grh[GRH_LEN];
	uint32_t prefix = 0, nsrc;
	bool ud = qp->type == IBV_QPT_UD, uc = qp->type == IBV_QPT_UC;
	int r;

	if (local_acquire(qp, w, 0, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = (uint32_t)lb.len;
	if (ud && lb.len > 4096)	/* beyond the MTU: "sent", dropped */
		goto out;
	/* The message's first bytes: a TM SRQ matches its TM header. */
	if (srdma_resp_rq_begin_msg(t, &h, ud ? NULL : lb.iov, lb.n, lb.len,
				    true)) {
		local_release(&lb);
		if (ud || uc)
			return EXEC_DONE;	/* dropped */
		return EXEC_RNR;
	}
	src = lb.iov;
	nsrc = lb.n;
	if (ud) {
		prefix = GRH_LEN;
		memset(grh, 0, sizeof(grh));
		if (w->ud_ah.is_global) {
			build_grh(qp, w, lb.len, grh);
			c.wc_flags |= IBV_WC_GRH;
		}
		withgrh[0].iov_base = grh;
		withgrh[0].iov_len = GRH_LEN;
		memcpy(&withgrh[1], lb.iov, lb.n * sizeof(struct iovec));
		src = withgrh;
		nsrc = lb.n + 1;
	}
	if (lb.len + prefix > h.w.capacity) {
		if (uc && !h.w.srq) {	/* silently dropped */
			srdma_resp_rq_abort(&h);
			goto out;
		}
		c.status = IBV_WC_LOC_LEN_ERR;
		c.opcode = IBV_WC_RECV;
		srdma_resp_rq_complete(&h, &c, true);
		if (!ud) {
			o->req_status = uc ? IBV_WC_SUCCESS :
					     IBV_WC_REM_INV_REQ_ERR;
			o->resp_error = true;
			o->resp_event = IBV_EVENT_QP_REQ_ERR;
		}
		goto out;
	}
	if (w->opcode == IBV_WR_SEND_WITH_INV) {
		if (srdma_resp_invalidate(t, w->imm)) {
			c.status = IBV_WC_REM_INV_REQ_ERR;
			c.opcode = IBV_WC_RECV;
			srdma_resp_rq_complete(&h, &c, true);
			o->req_status = IBV_WC_REM_INV_REQ_ERR;
			o->resp_error = true;
			o->resp_event = IBV_EVENT_QP_REQ_ERR;
			goto out;
		}
		c.wc_flags |= IBV_WC_WITH_INV;
		c.imm = w->imm;
	}
	r = srdma_resp_scatter(t, &h.w, 0, src, nsrc, lb.len + prefix);
	if (r == -EACCES && uc && !h.w.srq) {
		/* UC: the responder drops it, the WQE stays (§5.5). */
		srdma_resp_rq_abort(&h);
		goto out;
	}
	if (r == -EACCES) {
		c.status = IBV_WC_LOC_PROT_ERR;
		c.opcode = IBV_WC_RECV;
		srdma_resp_rq_complete(&h, &c, true);
		o->req_status = ud || uc ? IBV_WC_SUCCESS : IBV_WC_REM_OP_ERR;
		o->resp_error = !ud && !uc;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
		goto out;
	}
	if (r) {
		if (r == -ESRCH || local_bad(lb.iov, lb.n, false)) {
			srdma_resp_rq_abort(&h);
			o->req_status = r == -ESRCH ? peer_gone_status(qp) :
					IBV_WC_LOC_PROT_ERR;
			goto out;
		}
		c.status = IBV_WC_LOC_PROT_ERR;
		c.opcode = IBV_WC_RECV;
		srdma_resp_rq_complete(&h, &c, true);
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
	if (h.w.tm.kind == SRDMA_TM_RNDV && o->rndv) {
		*o->rndv = h.w;
		o->rndv_pending = true;
	}
	srdma_resp_rq_complete(&h, &c, w->send_flags & IBV_SEND_SOLICITED);
out:
	local_release(&lb);
	return EXEC_DONE;
}

static int exec_write(struct srdma_qp *qp, struct srdma_swqe *w,
		      struct srdma_target *t, struct outcome *o)
{
	bool imm = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool uc = qp->type == IBV_QPT_UC;
	struct srdma_shm_cqe c = { 0 };
	struct local_bufs lb;
	struct srdma_rq_hold h;
	struct srdma_rmem m;
	int r;

	if (local_acquire(qp, w, 0, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = (uint32_t)lb.len;
	if (imm && srdma_resp_rq_begin(t, &h)) {
		local_release(&lb);
		return uc ? EXEC_DONE : EXEC_RNR;
	}
	if (!srdma_resp_qp_allows(t, IBV_ACCESS_REMOTE_WRITE)) {
		if (!uc) {
			o->req_status = IBV_WC_REM_INV_REQ_ERR;
			o->resp_error = true;
			o->resp_event = IBV_EVENT_QP_REQ_ERR;
		}
		goto fail_imm;
	}
	if (lb.len) {
		r = srdma_resp_rkey(t, w->rkey, IBV_ACCESS_REMOTE_WRITE,
				    w->remote_addr, lb.len, &m);
		if (r) {
			if (!uc) {
				o->req_status = IBV_WC_REM_ACCESS_ERR;
				o->resp_error = true;
				o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
				if (imm) {
					c.status = IBV_WC_LOC_ACCESS_ERR;
					c.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
					srdma_resp_rq_complete(&h, &c, true);
					imm = false;
				}
			}
			goto fail_imm;
		}
		r = srdma_resp_copy(t, &m, 0, lb.iov, lb.n, lb.len, true);
		srdma_resp_rkey_put(t, &m);
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
		srdma_resp_rq_complete(&h, &c,
				       w->send_flags & IBV_SEND_SOLICITED);
	}
	local_release(&lb);
	return EXEC_DONE;

fail_imm:
	if (imm)
		srdma_resp_rq_abort(&h);
	local_release(&lb);
	return EXEC_DONE;
}

static int exec_read(struct srdma_qp *qp, struct srdma_swqe *w,
		     struct srdma_target *t, struct outcome *o)
{
	struct local_bufs lb;
	struct srdma_rmem m;
	int r;

	if (local_acquire(qp, w, IBV_ACCESS_LOCAL_WRITE, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = (uint32_t)lb.len;
	if (!srdma_resp_qp_allows(t, IBV_ACCESS_REMOTE_READ)) {
		o->req_status = IBV_WC_REM_INV_REQ_ERR;
		o->resp_error = true;
		o->resp_event = IBV_EVENT_QP_REQ_ERR;
		goto out;
	}
	if (lb.len) {
		r = srdma_resp_rkey(t, w->rkey, IBV_ACCESS_REMOTE_READ,
				    w->remote_addr, lb.len, &m);
		if (r) {
			o->req_status = IBV_WC_REM_ACCESS_ERR;
			o->resp_error = true;
			o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
			goto out;
		}
		r = srdma_resp_copy(t, &m, 0, lb.iov, lb.n, lb.len, false);
		srdma_resp_rkey_put(t, &m);
		if (r)
			copy_failed(qp, o, r, lb.iov, lb.n, true,
				    IBV_WC_REM_ACCESS_ERR);
		else if (local_commit(&lb))
			o->req_status = IBV_WC_LOC_PROT_ERR;
	}
out:
	local_release(&lb);
	return EXEC_DONE;
}

/* Write @len bytes at @src into our own buffers @iov (which may have been
 * unmapped since they were checked: an error return, never a signal). */
static int own_write(const void *src, const struct iovec *iov, uint32_t n)
{
	struct iovec from = { (void *)src, 0 };
	uint32_t i;

	for (i = 0; i < n; i++)
		from.iov_len += iov[i].iov_len;
	if (srdma_self_vm_rw(&from, 1, iov, n, true) != (ssize_t)from.iov_len)
		return -EFAULT;
	return 0;
}

static int exec_atomic(struct srdma_qp *qp, struct srdma_swqe *w,
		       struct srdma_target *t, struct outcome *o)
{
	struct local_bufs lb;
	struct srdma_rmem m;
	uint64_t old;
	int r;

	if (local_acquire(qp, w, IBV_ACCESS_LOCAL_WRITE, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = 8;
	if (!srdma_resp_qp_allows(t, IBV_ACCESS_REMOTE_ATOMIC) ||
	    (w->remote_addr & 7)) {
		o->req_status = IBV_WC_REM_INV_REQ_ERR;
		o->resp_error = true;
		o->resp_event = IBV_EVENT_QP_REQ_ERR;
		goto out;
	}
	r = srdma_resp_rkey(t, w->rkey, IBV_ACCESS_REMOTE_ATOMIC,
			    w->remote_addr, 8, &m);
	if (r) {
		o->req_status = IBV_WC_REM_ACCESS_ERR;
		o->resp_error = true;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
		goto out;
	}
	r = srdma_resp_atomic(t, &m, w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP,
			      w->compare_add, w->swap, &old);
	srdma_resp_rkey_put(t, &m);
	if (r == -EIO) {
		o->req_status = IBV_WC_GENERAL_ERR;
		goto out;
	}
	if (r) {
		o->req_status = r == -ESRCH ? peer_gone_status(qp) :
				IBV_WC_REM_ACCESS_ERR;
		o->resp_error = r != -ESRCH;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
		goto out;
	}
	/* The original value into our buffer (it may be unmapped). */
	if (own_write(&old, lb.iov, lb.n) || local_commit(&lb))
		o->req_status = IBV_WC_LOC_PROT_ERR;
out:
	local_release(&lb);
	return EXEC_DONE;
}

/*
 * ATOMIC_WRITE: the 8-byte operand into 8 aligned remote bytes, in one
 * store under the host-wide atomic lock, so CMP_SWAP/FETCH_ADD of any
 * process see it whole (IBTA 1.5 9.4.7). It needs REMOTE_WRITE access
 * (QP and key), as rxe and mlx5.
 */
static int exec_atomic_write(struct srdma_qp *qp, struct srdma_swqe *w,
			     struct srdma_target *t, struct outcome *o)
{
	struct local_bufs lb;
	struct srdma_rmem m;
	uint64_t val;
	struct iovec to = { &val, sizeof(val) };
	int r;

	if (local_acquire(qp, w, 0, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	/* Gather the operand (our own memory, which may be unmapped). */
	if (srdma_self_vm_rw(&to, 1, lb.iov, lb.n, false) !=
	    (ssize_t)sizeof(val)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		goto out;
	}
	o->byte_len = 8;
	if (!srdma_resp_qp_allows(t, IBV_ACCESS_REMOTE_WRITE)) {
		o->req_status = IBV_WC_REM_INV_REQ_ERR;
		o->resp_error = true;
		o->resp_event = IBV_EVENT_QP_REQ_ERR;
		goto out;
	}
	r = srdma_resp_rkey(t, w->rkey, IBV_ACCESS_REMOTE_WRITE,
			    w->remote_addr, 8, &m);
	if (r) {
		o->req_status = IBV_WC_REM_ACCESS_ERR;
		o->resp_error = true;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
		goto out;
	}
	r = srdma_resp_atomic_write(t, &m, val);
	srdma_resp_rkey_put(t, &m);
	if (r == -EIO)
		o->req_status = IBV_WC_GENERAL_ERR;
	else if (r) {
		o->req_status = r == -ESRCH ? peer_gone_status(qp) :
				IBV_WC_REM_ACCESS_ERR;
		o->resp_error = r != -ESRCH;
		o->resp_event = IBV_EVENT_QP_ACCESS_ERR;
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

/* ---- one WR -------------------------------------------------------------- */

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

/* ---- raw packet QPs ------------------------------------------------------ */

/*
 * Put one frame into the receive queue of raw QP or WQ @d (another
 * context, any process of the host), as a NIC does: no receive WQE, a
 * QP not ready, a destination gone: the frame is dropped; a WQE too small
 * completes with LOC_LEN_ERR (the QP stays usable, as for UD).
 */
static void raw_deliver(struct srdma_context *ctx,
			const struct srdma_raw_dest *d, const uint8_t *frame,
			uint32_t len)
{
	struct srdma_peer *p = srdma_peer_get(ctx, d->qpn >> SRDMA_QPN_SHIFT);
	struct iovec iov = { (void *)(uintptr_t)frame, len };
	struct srdma_shm_cqe c = { 0 };
	struct srdma_target t;
	struct srdma_rq_hold h;
	int r;

	if (!p)
		return;
	/* A flow of a dead owner whose LID came round again is not ours. */
	if (p->pid != d->pid || p->start != d->start ||
	    srdma_peer_gone(ctx, p) ||
	    srdma_resp_target(ctx, p, d->qpn, IBV_QPT_RAW_PACKET, &t) ||
	    !srdma_resp_qp_receives(&t) || srdma_resp_rq_begin(&t, &h))
		goto out;
	c.opcode = IBV_WC_RECV;
	if (len > h.w.capacity) {
		c.status = IBV_WC_LOC_LEN_ERR;
		srdma_resp_rq_complete(&h, &c, false);
		goto out;
	}
	r = srdma_resp_scatter(&t, &h.w, 0, &iov, 1, len);
	if (r == -ESRCH) {
		srdma_resp_rq_abort(&h);
		goto out;
	}
	c.status = r ? IBV_WC_LOC_PROT_ERR : IBV_WC_SUCCESS;
	c.byte_len = r ? 0 : len;
	srdma_resp_rq_complete(&h, &c, false);
out:
	srdma_peer_put(ctx, p);
}

void srdma_raw_input(struct srdma_context *ctx, const uint8_t *frame,
		     uint32_t len)
{
	struct srdma_raw_dest dst[16];
	int i, n;

	n = srdma_flow_route(ctx, frame, len, true, dst, (int)ARRAY_SIZE(dst));
	for (i = 0; i < n; i++)
		raw_deliver(ctx, &dst[i], frame, len);
}

/*
 * A raw packet QP's SEND: gather the frame, route it through the host
 * flow table (core/raw.c) and deliver a copy to each destination. The
 * send completes successfully whether or not anyone received it, as on
 * the wire; a frame above SRDMA_RAW_MAX_FRAME is LOC_LEN_ERR.
 */
static int exec_raw(struct srdma_qp *qp, struct srdma_swqe *w,
		    struct outcome *o)
{
	struct srdma_raw_dest dst[16];
	uint8_t frame[SRDMA_RAW_MAX_FRAME];
	struct local_bufs lb;
	struct iovec fiov;
	int i, n;

	if (local_acquire(qp, w, 0, &lb)) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		return EXEC_DONE;
	}
	o->byte_len = (uint32_t)lb.len;
	if (lb.len > SRDMA_RAW_MAX_FRAME) {
		srdma_dbg("QP %#x wr_id %#llx: frame of %llu bytes (at most %u)",
			  qp->ib.qp.qp_num, (unsigned long long)w->wr_id,
			  (unsigned long long)lb.len, SRDMA_RAW_MAX_FRAME);
		o->req_status = IBV_WC_LOC_LEN_ERR;
		goto out;
	}
	fiov.iov_base = frame;
	fiov.iov_len = lb.len;
	if (lb.len && srdma_self_vm_rw(&fiov, 1, lb.iov, lb.n, false) !=
			      (ssize_t)lb.len) {
		o->req_status = IBV_WC_LOC_PROT_ERR;
		goto out;
	}
	n = srdma_flow_route(qp->ctx, frame, (uint32_t)lb.len, false, dst,
			     (int)ARRAY_SIZE(dst));
	for (i = 0; i < n; i++)
		raw_deliver(qp->ctx, &dst[i], frame, (uint32_t)lb.len);
	/* SRDMA_RAW_WIRE: out of the interface too. */
	srdma_rawwire_send(qp->ctx, frame, (uint32_t)lb.len);
out:
	local_release(&lb);
	return EXEC_DONE;
}

/* Does the net transport carry @w? RC/UC: the QP's destination chose it
 * at RTR; UD: per WR, by its address vector. */
static bool via_net(struct srdma_qp *qp, const struct srdma_swqe *w)
{
	if (!qp->net)
		return false;
	if (qp->type == IBV_QPT_UD)
		return srdma_net_dest(qp->ctx, &w->ud_ah, w->ud_qpn);
	return qp->net->connected;
}

/*
 * UD to a multicast group: one copy to each QP of this host attached to
 * it (the host's group table, transport/host/mcast.c), checked as any UD
 * receive (state, Q_Key, a receive WQE, else dropped for that QP alone);
 * our own QP too when attached, unless created with
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, as mlx4/mlx5 and rxe loop back. On an
 * Ethernet port the WR also goes to the wire (the group's IP address),
 * for other hosts; the members this host reaches are served here only
 * (the endpoint does not loop its multicast back). Return as exec_wr;
 * *@net set when the net requester took the WR (it completes it).
 */
/* Does UD WR @w address a multicast group (its MGID, or without a GRH,
 * on InfiniBand, a multicast LID)? */
static bool ud_is_mcast(const struct srdma_qp *qp, const struct srdma_swqe *w)
{
	(void)qp;
	if (w->ud_ah.is_global)
		return srdma_gid_is_mcast(w->ud_ah.grh.dgid.raw);
	return !srdma_link_is_eth() && w->ud_dlid >= SRDMA_MCAST_LID_BASE &&
	       w->ud_dlid != 0xffff;
}

static int exec_mcast(struct srdma_qp *qp, struct srdma_swqe *w,
		      struct outcome *o, bool *net)
{
	struct srdma_mcast_dest d[SRDMA_MCAST_QP_ATTACH];
	bool grh = w->ud_ah.is_global, eth = srdma_link_is_eth();
	struct srdma_target t;
	unsigned int n, i;

	o->byte_len = (uint32_t)sge_total(w);
	*net = false;
	/* IBA: a multicast DLID (or, with a GRH, MGID) and DQPN 0xffffff
	 * together; anything else reaches nobody. */
	if (!ud_is_mcast(qp, w) || w->ud_qpn != SRDMA_MCAST_QPN)
		return EXEC_DONE;
	if (eth && grh && qp->net && srdma_net_mcast_wire() &&
	    srdma_transport_mode() != SRDMA_TRANSPORT_HOST) {
		if (srdma_netreq_post(qp, w))
			return EXEC_NOMEM;	/* nothing happened */
		*net = true;
	}
	n = srdma_mcast_members(qp->ctx, grh ? w->ud_ah.grh.dgid.raw : NULL,
				(uint16_t)w->ud_dlid, 0, d, SRDMA_MCAST_QP_ATTACH);
	for (i = 0; i < n; i++) {
		struct outcome one = { .req_status = IBV_WC_SUCCESS };

		if (d[i].qpn == qp->ib.qp.qp_num && qp->block_self_mc)
			continue;
		if (eth && !srdma_net_host_reaches(qp->ctx, d[i].qpn))
			continue;	/* the wire's */
		/* A member whose process died (and whose LID another
		 * context may own now), or whose QP slot was reused since
		 * the snapshot, is stale: skipped. */
		if (!resolve(qp, 0, d[i].qpn, &t) || t.p->pid != d[i].pid ||
		    t.p->start != d[i].start_time ||
		    t.qp->gen != d[i].qp_gen ||
		    !srdma_resp_qp_receives(&t) ||
		    !srdma_resp_qkey_ok(&t, w->ud_qkey))
			continue;
		exec_send(qp, w, &t, &one);
		if (one.req_status == IBV_WC_LOC_PROT_ERR) {
			o->req_status = IBV_WC_LOC_PROT_ERR;
			break;	/* our gather list: no copy can go */
		}
	}
	return EXEC_DONE;
}

/* Execute @w. sq_lock held. Return EXEC_DONE (completion posted as needed,
 * or handed to the net transport, which completes it later), EXEC_RNR
 * (nothing happened; retry later) or EXEC_NOMEM (nothing happened; the
 * net requester is full). */
static int exec_wr(struct srdma_qp *qp, struct srdma_swqe *w)
{
	struct srdma_rwqe rndv;		/* not zeroed: o.rndv_pending says */
	struct outcome o = { .req_status = IBV_WC_SUCCESS, .rndv = &rndv };
	struct srdma_target t;
	bool signaled = qp->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
	uint32_t st = atomic_load(&qp->sh->state);
	int r = EXEC_DONE;

	if (st == IBV_QPS_ERR) {
		srdma_comp_post(qp, w->wr_id, w->opcode, IBV_WC_WR_FLUSH_ERR, 0);
		return EXEC_DONE;
	}
	if (qp->type == IBV_QPT_RAW_PACKET) {
		r = exec_raw(qp, w, &o);
		goto done;
	}
	/* A connected net QP: the net requester runs every WR (local
	 * operations and LOC_LEN_ERR included) so completions keep order
	 * with the WRs still waiting for ACKs. */
	if (qp->net && qp->type != IBV_QPT_UD && via_net(qp, w))
		return srdma_netreq_post(qp, w) ? EXEC_NOMEM : EXEC_DONE;
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
	if (qp->type == IBV_QPT_UD &&
	    (w->ud_qpn == SRDMA_MCAST_QPN || ud_is_mcast(qp, w))) {
		bool net;

		r = exec_mcast(qp, w, &o, &net);
		if (net || r == EXEC_NOMEM)
			return r;	/* the net requester completes it */
		goto done;
	}
	if (via_net(qp, w))
		return srdma_netreq_post(qp, w) ? EXEC_NOMEM : EXEC_DONE;
	if (qp->type == IBV_QPT_UD) {
		if (!resolve(qp, w->ud_dlid, w->ud_qpn, &t) ||
		    !srdma_resp_qp_receives(&t)) {
			o.byte_len = (uint32_t)sge_total(w);
			goto done;	/* nobody there: dropped */
		}
		if (!srdma_resp_qkey_ok(&t, w->ud_qkey))
			goto done;	/* Q_Key violation: dropped */
		r = exec_send(qp, w, &t, &o);
		goto done;
	}
	if (!resolve_connected(qp, &t)) {
		if (qp->type == IBV_QPT_UC)
			goto done;	/* UC: lost on the wire */
		r = unanswered(qp, w, &o);
		if (r == EXEC_RNR)
			return r;
		goto done;
	}
	/* XRC: the XRCETH's SRQ, in the TGT QP's domain, receives, and its
	 * PD guards the keys (NAK Remote Access Error otherwise). */
	if (qp->type == IBV_QPT_XRC_SEND &&
	    srdma_resp_xrc_bind(&t, w->xrc_srqn)) {
		o.req_status = IBV_WC_REM_ACCESS_ERR;
		srdma_resp_qp_error(&t, IBV_EVENT_QP_ACCESS_ERR);
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
	case IBV_WR_ATOMIC_WRITE:
		r = exec_atomic_write(qp, w, &t, &o);
		break;
	default:
		o.req_status = IBV_WC_LOC_QP_OP_ERR;
		break;
	}
	if (r == EXEC_RNR) {
		uint64_t now = srdma_now_ns();
		uint64_t tmo = srdma_resp_rnr_timer_ns(&t);

		/* A dead responder sends no RNR NAK: from now on the
		 * request goes unanswered (the kernel is asked at most once
		 * a millisecond, only on this retry path). */
		if (srdma_peer_gone(qp->ctx, t.p)) {
			srdma_resp_xrc_unbind(&t);
			r = unanswered(qp, w, &o);
			if (r == EXEC_RNR)
				return r;
			goto done;
		}
		if (!w->first_try_ns)
			w->first_try_ns = now;
		if (qp->attr.rnr_retry == 7 ||
		    now - w->first_try_ns <= tmo * (qp->attr.rnr_retry + 1ull)) {
			srdma_resp_xrc_unbind(&t);
			return EXEC_RNR;
		}
		o.req_status = IBV_WC_RNR_RETRY_EXC_ERR;
		r = EXEC_DONE;
	}
	if (o.resp_error)
		srdma_resp_qp_error(&t, o.resp_event);
	srdma_resp_xrc_unbind(&t);
done:
	srdma_comp_req(qp, w->wr_id, w->opcode, signaled, o.req_status,
		       o.byte_len);
	/* The receiving device reads a matched rendezvous after it acked
	 * the request: after our completion, before the FIN. */
	if (o.rndv_pending)
		srdma_tm_rndv_host(qp->ctx, qp->ib.qp.qp_num, &t, &rndv);
	return r;
}

/* ---- post_send ----------------------------------------------------------- */

static bool opcode_ok(enum ibv_qp_type type, uint32_t op)
{
	if (type == IBV_QPT_XRC_RECV)
		return false;	/* a TGT QP has no send queue */
	if (type == IBV_QPT_RAW_PACKET)
		return op == IBV_WR_SEND;	/* a frame, nothing else */
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
	case IBV_WR_SEND_WITH_INV:
		return type == IBV_QPT_RC || type == IBV_QPT_UC ||
		       type == IBV_QPT_XRC_SEND;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_WRITE:
		return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND;
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
	if (qp->type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	if ((wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ &&
	    wr->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
	    wr->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) {
		/* An ATOMIC_WRITE operand is no payload: any QP inlines it. */
		if (total > qp->cap.max_inline_data &&
		    wr->opcode != IBV_WR_ATOMIC_WRITE)
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
	case IBV_WR_ATOMIC_WRITE:
		/* 8 bytes (the operand, from the SGEs or inline) to an
		 * 8-byte aligned remote address (rdma-core's ibv_wr_post). */
		if ((wr->wr.rdma.remote_addr & 7) || total != 8)
			return EINVAL;
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
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
	} else if (w->num_sge) {	/* a zero-length WR may have no list */
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
		if (exec_wr(qp, qp->pend_head) != EXEC_DONE)
			return;
		pend_pop_locked(qp);
	}
}

void srdma_sq_flush_locked(struct srdma_qp *qp)
{
	while (qp->pend_head) {
		srdma_comp_post(qp, qp->pend_head->wr_id,
				qp->pend_head->opcode, IBV_WC_WR_FLUSH_ERR, 0);
		pend_pop_locked(qp);
	}
	/* The send queue of a net QP lives in its requester. */
	if (qp->net)
		srdma_netreq_flush_locked(qp);
}

void srdma_sq_drop_locked(struct srdma_qp *qp)
{
	struct srdma_swqe *w;

	while ((w = qp->pend_head)) {
		qp->pend_head = w->next;
		free(w);
	}
	qp->pend_tail = &qp->pend_head;
	if (qp->n_pend) {
		qp->n_pend = 0;
		atomic_fetch_sub(&qp->send_cq->n_pending_qp, 1);
		srdma_progress_done(qp);
	}
}

/* What core asks of the engine (core/dp.h). */
static const struct srdma_engine_ops engine_ops = {
	.sq_flush_locked = srdma_sq_flush_locked,
	.sq_drop_locked = srdma_sq_drop_locked,
	.qp_forget_locked = srdma_progress_forget_locked,
	.ctx_stop = srdma_progress_stop,
};

void srdma_engine_init(void)
{
	srdma_engine_ops_set(&engine_ops);
}

int srdma_post_send(struct srdma_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad)
{
	union {
		struct srdma_swqe w;
		char buf[sizeof(struct srdma_swqe)];
	} u;
	uint32_t st;
	int ret = 0, r;

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
		r = exec_wr(qp, &u.w);
		if (r == EXEC_NOMEM) {
			ret = ENOMEM;
			break;
		}
		if (r == EXEC_RNR) {
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
