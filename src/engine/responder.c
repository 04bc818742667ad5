// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * responder.c - the responder stage: what a target does with an incoming
 * operation, written once for both transports (responder.h).
 *
 * Everything here reads or writes one target QP's entry in some context's
 * shared segment, that context's key table and receive rings, and the
 * target's memory. The host transport runs it in the initiator's thread
 * against another process's segment (the target stays passive); the net
 * transport runs it in our own progress thread against our own segment,
 * one packet at a time (srdma_resp_self()). So the rules live here and
 * nowhere else:
 *
 *  - the QP state that receives (RTR, RTS, SQD, SQE) and its access flags;
 *  - the one key check (srdma_key_acquire, architecture principle 3) for
 *    rkeys, for the lkeys of receive buffers, and the rule that a type 2
 *    window is used only through the QP it was bound through;
 *  - receive-queue consumption, SRQ limit events, the target's CQEs, in
 *    WQE order, and SEND_WITH_INV;
 *  - the atomic, serialised host-wide by srdma_host_atomic_lock();
 *  - moving the target QP to ERR with its receive queue flushed.
 *
 * The shared entries are writable by any process of the user, so every
 * field read from them is read once and checked before it indexes
 * anything (the receive ring, its WQE slots, the SGE count). Bytes move
 * with process_vm_writev/readv by the target's pid, or, when the target
 * is ourselves, with memcpy under the fault guard of util/selfcopy.c:
 * either way a fault is an error return, never a signal. Accesses to another
 * process's memory are marked in flight under one of our access records,
 * so a dereg there waits for them and can clear them if we die.
 *
 * What the responder decides is reported as an errno or a SRDMA_KCHK_*
 * code; turning that into statuses, NAKs and the requester's completion
 * is the caller's (the host requester in requester.c, the net responder
 * in transport/net/resp.c), as verbs-semantics §5.3-§5.5 say.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/import.h"
#include "core/qp_state.h"
#include "engine/responder.h"
#include "engine/tm.h"
#include "util/log.h"
#include "util/selfcopy.h"

#define KIND_MR BIT(SRDMA_KIND_MR)
#define KIND_ANY (BIT(SRDMA_KIND_MR) | BIT(SRDMA_KIND_MW1) | BIT(SRDMA_KIND_MW2))
#define QPN_SLOT(qpn) ((qpn) & ((1u << SRDMA_QPN_SHIFT) - 1))

/* iovecs per process_vm_* call (far below the kernel's IOV_MAX). */
#define CHUNK_IOV 64u

/* ---- memory of the target ------------------------------------------------ */

/* Copy between our iovs and [raddr, raddr + len) of the target. */
static int xcopy(struct srdma_peer *p, const struct iovec *liov,
		 uint32_t n, uint64_t raddr, uint64_t len, bool to_peer)
{
	struct iovec r = { (void *)(uintptr_t)raddr, len };
	ssize_t got;

	if (!len)
		return 0;
	if (p->self)
		got = srdma_self_vm_rw(liov, n, &r, 1, to_peer);
	else	/* checks that the pid still names the owner */
		got = srdma_peer_vm_rw(p, liov, n, &r, 1, to_peer);
	if (got == (ssize_t)len)
		return 0;
	if (got == -ESRCH || (got == -1 && p->self && errno == ESRCH))
		return -ESRCH;
	return -EFAULT;
}

/*
 * The sub-list of @src (@n iovecs) covering [off, off + len), at most
 * @max iovecs of it. Return: the iovecs written to @out; *@got the bytes
 * they cover (less than @len only when @max ran out).
 */
static uint32_t slice(const struct iovec *src, uint32_t n, uint64_t off,
		      uint64_t len, struct iovec *out, uint32_t max,
		      uint64_t *got)
{
	uint32_t i, k = 0;

	*got = 0;
	for (i = 0; i < n && len && k < max; i++) {
		uint64_t l = src[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		out[k].iov_base = (char *)src[i].iov_base + off;
		out[k].iov_len = l - off < len ? l - off : len;
		len -= out[k].iov_len;
		*got += out[k].iov_len;
		off = 0;
		k++;
	}
	return k;
}

/* Move [soff, soff + len) of @src to or from [raddr, raddr + len) of @p:
 * one system call unless the span needs more than CHUNK_IOV iovecs. */
static int xcopy_span(struct srdma_peer *p, const struct iovec *src,
		      uint32_t n, uint64_t soff, uint64_t len, uint64_t raddr,
		      bool to_peer)
{
	struct iovec iov[CHUNK_IOV];
	uint64_t got;
	uint32_t k;
	int r;

	while (len) {
		k = slice(src, n, soff, len, iov, CHUNK_IOV, &got);
		if (!got)
			return -EFAULT;	/* @src is shorter than @len */
		r = xcopy(p, iov, k, raddr, got, to_peer);
		if (r)
			return r;
		soff += got;
		raddr += got;
		len -= got;
	}
	return 0;
}

/*
 * The context that the target's context imports (ibv_import_device of
 * another process's context, core/import.c), or NULL. Our own context's
 * source comes without a lock or a new reference (the net responder, and
 * WRs between our own QPs); another process's is looked up, with a
 * reference for the caller (*@ref). Its owner pid, from the target's
 * segment, must be that LID's owner.
 */
static struct srdma_peer *import_source(struct srdma_target *t, bool *ref)
{
	struct srdma_seg_hdr *seg = t->p->seg;
	uint32_t lid = seg->import_lid;
	int32_t pid = seg->import_pid;
	struct srdma_peer *s;

	*ref = false;
	if (likely(!lid))
		return NULL;
	if (t->p->self) {
		s = t->ctx->import ? t->ctx->import->peer : NULL;
		return s && !srdma_peer_gone(t->ctx, s) ? s : NULL;
	}
	*ref = true;
	s = srdma_peer_get(t->ctx, lid);
	if (s && (s->pid != pid || srdma_peer_gone(t->ctx, s))) {
		srdma_peer_put(t->ctx, s);
		s = NULL;
	}
	return s;
}

static int rmem_acquire_at(struct srdma_target *t, struct srdma_peer *p,
			   uint32_t key, unsigned int kinds, uint32_t pd,
			   uint32_t access, uint64_t addr, uint64_t len,
			   struct srdma_rmem *m);

/* Check @key in the target's table and mark the access in flight (under
 * one of our access records when the table is another process's). A key
 * the target's context does not know may be one of the context it
 * imports, whose memory it then is (m->src). */
static int rmem_acquire(struct srdma_target *t, uint32_t key,
			unsigned int kinds, uint32_t pd, uint32_t access,
			uint64_t addr, uint64_t len, struct srdma_rmem *m)
{
	struct srdma_peer *s;
	bool ref;
	int r;

	r = rmem_acquire_at(t, t->p, key, kinds, pd, access, addr, len, m);
	if (likely(r != SRDMA_KCHK_NOKEY))
		return r;
	s = import_source(t, &ref);
	if (!s)
		return r;
	r = rmem_acquire_at(t, s, key, kinds, pd, access, addr, len, m);
	if (r && ref)
		srdma_peer_put(t->ctx, s);
	else if (!r)
		m->src_ref = ref;
	return r;
}

static int rmem_acquire_at(struct srdma_target *t, struct srdma_peer *p,
			   uint32_t key, unsigned int kinds, uint32_t pd,
			   uint32_t access, uint64_t addr, uint64_t len,
			   struct srdma_rmem *m)
{
	struct srdma_context *ctx = t->ctx;
	struct srdma_shm_access *rec = NULL;
	uint64_t tag = 0;
	int r;

	m->rec = -1;
	m->src = p;
	m->src_ref = false;
	if (!p->self) {
		while ((m->rec = srdma_host_acc_reserve(&ctx->host)) < 0)
			sched_yield();
		rec = srdma_seg_access(ctx->host.seg, (unsigned int)m->rec);
		tag = SRDMA_ACC_VALID | (uint64_t)p->reg_index << 32;
	}
	r = srdma_key_acquire(&p->kv, key, kinds, pd, access, addr, len, rec,
			      tag, p->pid, p->start, &m->ref);
	if (r && m->rec >= 0) {
		srdma_host_acc_release(&ctx->host, m->rec);
		m->rec = -1;
	}
	return r;
}

void srdma_resp_rkey_put(struct srdma_target *t, struct srdma_rmem *m)
{
	srdma_key_release(&m->ref);
	if (m->rec >= 0)
		srdma_host_acc_release(&t->ctx->host, m->rec);
	m->rec = -1;
	if (unlikely(m->src_ref))	/* the import source's reference */
		srdma_peer_put(t->ctx, m->src);
	m->src_ref = false;
}

/* ---- the target QP ------------------------------------------------------- */

int srdma_resp_target(struct srdma_context *ctx, struct srdma_peer *p,
		      uint32_t qpn, int type, struct srdma_target *t)
{
	uint32_t slot = QPN_SLOT(qpn);
	struct srdma_shm_qp *sh;

	if (!slot)
		return -ENOENT;
	sh = srdma_seg_qp(p->seg, slot);
	if (atomic_load_explicit(&sh->live, memory_order_acquire) !=
	    SRDMA_OBJ_LIVE || (type >= 0 && sh->type != (uint8_t)type))
		return -ENOENT;
	t->ctx = ctx;
	t->p = p;
	t->qp = sh;
	t->qpn = qpn;
	t->qp_p = p;
	t->pd = sh->pd_handle;
	t->rcq = sh->recv_cq;
	t->xsrq = NULL;
	t->xsrq_slot = 0;
	t->xsrq_ref = false;
	return 0;
}

int srdma_resp_xrc_bind(struct srdma_target *t, uint32_t srqn)
{
	uint32_t lid = srqn >> SRDMA_QPN_SHIFT, slot = QPN_SLOT(srqn);
	struct srdma_peer *sp = t->qp_p;
	struct srdma_shm_srq *srq;
	bool ref = false;

	srdma_resp_xrc_unbind(t);
	if (slot >= SRDMA_SEG_SRQ_SLOTS || srqn > 0xffffff)
		goto bad;
	if (lid != sp->lid) {
		sp = srdma_peer_get(t->ctx, lid);
		if (!sp)
			goto bad;
		ref = true;
	}
	srq = srdma_seg_srq(sp->seg, slot);
	if (atomic_load_explicit(&srq->live, memory_order_acquire) !=
		    SRDMA_OBJ_LIVE || !srq->xrc_cq ||
	    srq->xrc_cq > SRDMA_SEG_CQ_SLOTS ||
	    srq->xrcd[0] != t->qp->xrcd[0] || srq->xrcd[1] != t->qp->xrcd[1] ||
	    !t->qp->xrcd[0]) {
		if (ref)
			srdma_peer_put(t->ctx, sp);
		goto bad;
	}
	t->p = sp;
	t->xsrq = srq;
	t->xsrq_slot = slot;
	t->xsrq_ref = ref;
	t->pd = srq->pd_handle;
	t->rcq = srq->xrc_cq - 1;
	return 0;

bad:
	srdma_dbg("QP %#x: XRC SRQ %#x: no such XRC SRQ in the QP's XRC "
		  "domain", t->qpn, srqn);
	return -ENOENT;
}

void srdma_resp_xrc_unbind(struct srdma_target *t)
{
	if (!t->xsrq)
		return;
	if (t->xsrq_ref)
		srdma_peer_put(t->ctx, t->p);
	t->p = t->qp_p;
	t->xsrq = NULL;
	t->xsrq_ref = false;
	t->pd = t->qp->pd_handle;
	t->rcq = t->qp->recv_cq;
}

int srdma_resp_self(struct srdma_context *ctx, uint32_t qpn,
		    struct srdma_target *t)
{
	struct srdma_peer *p;

	if (qpn >> SRDMA_QPN_SHIFT != ctx->host.lid)
		return -ENOENT;
	p = srdma_peer_get(ctx, ctx->host.lid);
	if (!p)
		return -ENOENT;
	if (!p->self || srdma_resp_target(ctx, p, qpn, -1, t)) {
		srdma_peer_put(ctx, p);
		return -ENOENT;
	}
	return 0;
}

void srdma_resp_self_put(struct srdma_target *t)
{
	srdma_resp_xrc_unbind(t);
	srdma_peer_put(t->ctx, t->p);
	t->p = NULL;
	t->qp = NULL;
}

bool srdma_resp_qp_receives(const struct srdma_target *t)
{
	uint32_t st = atomic_load(&t->qp->state);

	return st == IBV_QPS_RTR || st == IBV_QPS_RTS || st == IBV_QPS_SQD ||
	       st == IBV_QPS_SQE;
}

bool srdma_resp_connected_to(const struct srdma_target *t, uint32_t src_qpn)
{
	return srdma_resp_qp_receives(t) &&
	       atomic_load(&t->qp->dest_qpn) == src_qpn;
}

bool srdma_resp_qkey_ok(const struct srdma_target *t, uint32_t qkey)
{
	return atomic_load(&t->qp->qkey) == qkey;
}

uint64_t srdma_resp_rnr_timer_ns(const struct srdma_target *t)
{
	return srdma_rnr_timer_ns(t->qp->min_rnr_timer);
}

bool srdma_resp_qp_allows(const struct srdma_target *t, uint32_t access)
{
	return atomic_load(&t->qp->access) & access;
}

void srdma_resp_qp_error(struct srdma_target *t, uint32_t event)
{
	uint32_t old = atomic_exchange(&t->qp->state, IBV_QPS_ERR);

	if (old == IBV_QPS_ERR)
		return;
	if (!t->qp->srq)
		srdma_rq_flush(t->ctx, t->qp_p, t->qp_p->seg, t->qp, t->qpn);
	else
		srdma_aev_post(t->ctx, t->qp_p, IBV_EVENT_QP_LAST_WQE_REACHED,
			       SRDMA_AEV_OBJ_QP, QPN_SLOT(t->qpn), t->qp->gen);
	if (event)
		srdma_aev_post(t->ctx, t->qp_p, event, SRDMA_AEV_OBJ_QP,
			       QPN_SLOT(t->qpn), t->qp->gen);
}

/* ---- receive queue ------------------------------------------------------- */

/* h->priv: the queue and the SRQ entry (or NULL) held. */
#define HOLD_RQ(h) ((struct srdma_shm_rq *)(h)->priv[0])
#define HOLD_SRQ(h) ((struct srdma_shm_srq *)(h)->priv[1])

/* h->priv[2]: the tag list of a TM SRQ whose list matched @h->w. */
#define HOLD_TM(h) ((h)->priv[2])

static int rq_begin(struct srdma_target *t, struct srdma_rq_hold *h,
		    const struct iovec *msg, uint32_t n, uint64_t len,
		    bool rndv_offload)
{
	struct srdma_seg_hdr *seg = t->p->seg;
	const struct srdma_shm_rwqe *wqe;
	struct srdma_shm_srq *srq = NULL;
	struct srdma_shm_rq *rq;
	uint32_t size, wsz, max_sge, i;
	uint64_t tail, head;
	char *ring;

	h->t = t;
	if (t->xsrq) {
		srq = t->xsrq;
		rq = &srq->rq;
		h->w.pd = t->pd;
	} else if (t->qp->type == IBV_QPT_XRC_RECV) {
		return -EIO;	/* no SRQ bound: nothing to receive into */
	} else if (t->qp->srq) {
		uint32_t s = t->qp->srq - 1;

		if (s >= SRDMA_SEG_SRQ_SLOTS)
			return -EIO;
		srq = srdma_seg_srq(seg, s);
		rq = &srq->rq;
		h->w.pd = srq->pd_handle;
	} else {
		rq = &t->qp->rq;
		h->w.pd = t->qp->pd_handle;
	}
	srdma_shm_lock(&rq->rlock);
	/* Each field once, checked, so no index leaves the ring arena (or
	 * the WQE slot). */
	tail = atomic_load(&rq->tail);
	size = rq->size;
	wsz = rq->wqe_size;
	max_sge = rq->max_sge;
	ring = srdma_seg_ring(seg, rq->ring_off, (uint64_t)size * wsz);
	if ((srq && atomic_load(&srq->live) != SRDMA_OBJ_LIVE) ||
	    atomic_load(&t->qp->live) != SRDMA_OBJ_LIVE || !size || !ring ||
	    max_sge > SRDMA_MAX_SGE ||
	    wsz < sizeof(struct srdma_shm_rwqe) +
			  max_sge * sizeof(struct srdma_shm_rsge)) {
		srdma_shm_unlock(&rq->rlock);
		return -EIO;
	}
	h->priv[0] = rq;
	h->priv[1] = srq;
	HOLD_TM(h) = NULL;
	memset(&h->w.tm, 0, sizeof(h->w.tm));
	h->w.srq = srq != NULL;
	if (srq && msg && srq->tm_off) {
		int m = srdma_tm_match(seg, srq->tm_off, msg, n, len,
				       rndv_offload, &h->w, &HOLD_TM(h));

		if (m < 0) {
			srdma_shm_unlock(&rq->rlock);
			return -EIO;
		}
		if (m > 0)
			return 0;	/* the tag's buffer, not the ring's */
	}
	head = atomic_load_explicit(&rq->head, memory_order_acquire);
	if (tail >= head) {
		srdma_shm_unlock(&rq->rlock);
		return -EAGAIN;
	}
	wqe = (const struct srdma_shm_rwqe *)(ring + (tail & (size - 1)) * wsz);
	/*
	 * The next message's receive buffer, for writing, and the WQE after
	 * it (whose buffer the next message prefetches). A ring of receive
	 * buffers goes round (UCX posts thousands), so the line a SEND's
	 * payload lands in was cold, and the first locked instruction after
	 * the copy (the CQ's lock) waited for that store's miss: the CQE
	 * step took 140 ns in a ping-pong, 30 with this. Our own buffers
	 * only (a peer's addresses mean nothing here); the WQEs are stable
	 * under rlock; a prefetch never faults.
	 */
	if (t->p->self) {
		__builtin_prefetch(ring + ((tail + 2) & (size - 1)) * wsz, 0, 3);
		if (max_sge && tail + 1 < head) {
			const struct srdma_shm_rwqe *nx =
				(const struct srdma_shm_rwqe *)(ring +
				((tail + 1) & (size - 1)) * wsz);

			__builtin_prefetch((const void *)(uintptr_t)
					   nx->sge[0].addr, 1, 3);
		}
	}
	h->w.wr_id = wqe->wr_id;
	h->w.nsge = wqe->num_sge;
	if (h->w.nsge > max_sge)
		h->w.nsge = max_sge;
	h->w.capacity = 0;
	for (i = 0; i < h->w.nsge; i++) {
		h->w.sge[i] = wqe->sge[i];
		h->w.capacity += h->w.sge[i].length;
	}
	return 0;
}

int srdma_resp_rq_begin(struct srdma_target *t, struct srdma_rq_hold *h)
{
	return rq_begin(t, h, NULL, 0, 0, false);
}

int srdma_resp_rq_begin_msg(struct srdma_target *t, struct srdma_rq_hold *h,
			    const struct iovec *msg, uint32_t n, uint64_t len,
			    bool rndv_offload)
{
	return rq_begin(t, h, msg, n, len, rndv_offload);
}

/* A matched tag is consumed instead of the ring's head. True if so. */
static bool tm_taken(struct srdma_rq_hold *h)
{
	if (!HOLD_TM(h))
		return false;
	srdma_tm_consume(HOLD_TM(h), &h->w);
	return h->w.tm.kind != SRDMA_TM_UNEXP &&
	       h->w.tm.kind != SRDMA_TM_NO_TAG;
}

void srdma_resp_rq_abort(struct srdma_rq_hold *h)
{
	srdma_shm_unlock(&HOLD_RQ(h)->rlock);
}

/* The consumer that crosses an armed SRQ limit disarms it and tells the
 * owner. */
static void srq_limit(struct srdma_rq_hold *h, uint64_t tail)
{
	struct srdma_shm_srq *srq = HOLD_SRQ(h);
	struct srdma_target *t = h->t;
	uint32_t limit;

	if (!srq)
		return;
	limit = atomic_load(&srq->limit);
	if (limit && atomic_load(&HOLD_RQ(h)->head) - tail < limit &&
	    atomic_compare_exchange_strong(&srq->limit, &limit, 0))
		srdma_aev_post(t->ctx, t->p, IBV_EVENT_SRQ_LIMIT_REACHED,
			       SRDMA_AEV_OBJ_SRQ,
			       t->xsrq ? t->xsrq_slot : t->qp->srq - 1,
			       srq->gen);
}

void srdma_resp_rq_consume(struct srdma_rq_hold *h)
{
	struct srdma_shm_rq *rq = HOLD_RQ(h);
	uint64_t tail;

	if (tm_taken(h)) {
		srdma_shm_unlock(&rq->rlock);
		return;
	}
	tail = atomic_load(&rq->tail) + 1;
	atomic_store(&rq->tail, tail);
	srq_limit(h, tail);
	srdma_shm_unlock(&rq->rlock);
}

void srdma_resp_recv_cqe(struct srdma_target *t, const struct srdma_rwqe *w,
			 struct srdma_shm_cqe *c, bool solicited)
{
	uint32_t cq = t->rcq;

	/* A TM SRQ's receives complete on the SRQ's CQ, as TM CQEs. */
	if (w->tm.kind)
		cq = srdma_tm_cqe(w, c);
	c->wr_id = w->wr_id;
	c->qp_num = t->qpn;
	srdma_cqe_post(t->ctx, t->p, cq, c, solicited);
	atomic_fetch_add_explicit(&t->qp->n_recv, 1, memory_order_relaxed);
}

void srdma_resp_rq_complete(struct srdma_rq_hold *h, struct srdma_shm_cqe *c,
			    bool solicited)
{
	struct srdma_shm_rq *rq = HOLD_RQ(h);
	uint64_t tail;

	if (tm_taken(h)) {
		srdma_resp_recv_cqe(h->t, &h->w, c, solicited);
		srdma_shm_unlock(&rq->rlock);
		return;
	}
	tail = atomic_load(&rq->tail) + 1;
	atomic_store(&rq->tail, tail);
	srdma_resp_recv_cqe(h->t, &h->w, c, solicited);
	srq_limit(h, tail);
	srdma_shm_unlock(&rq->rlock);
}

int srdma_resp_scatter(struct srdma_target *t, const struct srdma_rwqe *w,
		       uint64_t off, const struct iovec *src, uint32_t n,
		       uint64_t len)
{
	uint64_t done = 0, soff = 0;
	uint32_t i;

	if (off > w->capacity || len > w->capacity - off)
		return -EMSGSIZE;
	if (w->tm.skip) {
		/* A matched TM message: its headers are not delivered. */
		uint64_t drop = off < w->tm.skip ? w->tm.skip - off : 0;

		if (drop >= len)
			return 0;
		soff = drop;
		len -= drop;
		off = off + drop - w->tm.skip;
	}
	for (i = 0; i < w->nsge && done < len; i++) {
		const struct srdma_shm_rsge *s = &w->sge[i];
		struct srdma_rmem m;
		uint64_t want;
		int r;

		if (off >= s->length) {
			off -= s->length;
			continue;
		}
		want = s->length - off;
		if (want > len - done)
			want = len - done;
		r = rmem_acquire(t, s->lkey, KIND_MR, w->pd,
				 IBV_ACCESS_LOCAL_WRITE, s->addr + off, want,
				 &m);
		if (r) {
			srdma_dbg("receive buffer lkey %#x [%#llx+%llu] of QP %#x: %s",
				  s->lkey, (unsigned long long)(s->addr + off),
				  (unsigned long long)want, t->qpn,
				  srdma_key_fail_str(r));
			return -EACCES;
		}
		r = xcopy_span(m.src, src, n, soff + done, want,
			       m.ref.host_addr, true);
		srdma_resp_rkey_put(t, &m);
		if (r)
			return r;
		done += want;
		off = 0;
	}
	return 0;
}

/* ---- remote memory ------------------------------------------------------- */

int srdma_resp_rkey(struct srdma_target *t, uint32_t rkey, uint32_t access,
		    uint64_t va, uint64_t len, struct srdma_rmem *m)
{
	int r = rmem_acquire(t, rkey, KIND_ANY, t->pd, access, va, len, m);

	if (r) {
		srdma_dbg("rkey %#x [%#llx+%llu] at QP %#x: %s", rkey,
			  (unsigned long long)va, (unsigned long long)len,
			  t->qpn, srdma_key_fail_str(r));
		return r;
	}
	if (m->ref.snap.kind == SRDMA_KIND_MW2 &&
	    m->ref.snap.bind_qpn != t->qpn) {
		srdma_resp_rkey_put(t, m);
		srdma_dbg("rkey %#x: type 2 window bound through QP %#x, used through %#x",
			  rkey, m->ref.snap.bind_qpn, t->qpn);
		return SRDMA_KCHK_ACCESS;
	}
	return SRDMA_KCHK_OK;
}

int srdma_resp_copy(struct srdma_target *t, const struct srdma_rmem *m,
		    uint64_t off, const struct iovec *iov, uint32_t n,
		    uint64_t len, bool to_target)
{
	(void)t;
	if (n <= CHUNK_IOV)
		return xcopy(m->src, iov, n, m->ref.host_addr + off, len,
			     to_target);
	return xcopy_span(m->src, iov, n, 0, len, m->ref.host_addr + off,
			  to_target);
}

int srdma_resp_atomic(struct srdma_target *t, const struct srdma_rmem *m,
		      bool cmp_swap, uint64_t cmp_add, uint64_t swap,
		      uint64_t *orig)
{
	struct iovec self;
	pthread_mutex_t *lk;
	uint64_t old, nv;
	int r;

	lk = srdma_host_atomic_lock(t->ctx, m->src->pid, m->ref.host_addr);
	if (!lk)
		return -EIO;
	self.iov_base = &old;
	self.iov_len = 8;
	r = xcopy(m->src, &self, 1, m->ref.host_addr, 8, false);
	if (!r) {
		if (cmp_swap)
			nv = old == cmp_add ? swap : old;
		else
			nv = old + cmp_add;
		self.iov_base = &nv;
		if (nv != old || !cmp_swap)
			r = xcopy(m->src, &self, 1, m->ref.host_addr, 8, true);
	}
	srdma_shm_unlock(lk);
	if (!r)
		*orig = old;
	return r;
}

int srdma_resp_atomic_write(struct srdma_target *t, const struct srdma_rmem *m,
			    uint64_t val)
{
	struct iovec self = { &val, 8 };
	pthread_mutex_t *lk;
	int r;

	lk = srdma_host_atomic_lock(t->ctx, m->src->pid, m->ref.host_addr);
	if (!lk)
		return -EIO;
	r = xcopy(m->src, &self, 1, m->ref.host_addr, 8, true);
	srdma_shm_unlock(lk);
	return r;
}

int srdma_resp_invalidate(struct srdma_target *t, uint32_t rkey)
{
	if (srdma_key_remote_invalidate(&t->p->kv, rkey, t->pd))
		return -EINVAL;
	return 0;
}
