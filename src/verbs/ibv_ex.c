// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_ex.c - the extended data-path interfaces: the ibv_wr_* work request
 * builder of struct ibv_qp_ex and the ibv_start_poll() family of struct
 * ibv_cq_ex. Both are tables of function pointers in the public object,
 * filled here once at create time; verbs.h's inlines call through them.
 *
 * Work request builder. Between wr_start and wr_complete each builder call
 * (wr_send, wr_rdma_write, ...) appends a struct ibv_send_wr to the QP's
 * batch (qp->bld), and the setters (wr_set_sge, wr_set_inline_data,
 * wr_set_ud_addr, ...) fill in the last one. wr_complete links the batch
 * and hands it to srdma_post_send(), the same engine entry ibv_post_send
 * uses, so both APIs share every post-time check; wr_abort drops it. No
 * builder call can fail: the first error is remembered in qp->bld_err,
 * every later call of the batch is ignored, and wr_complete returns the
 * error without posting anything (ibv_wr_post(3)).
 *
 * Each WR of the batch owns a fixed stretch of bld_stride() entries of
 * qp->bld_sge: its SGEs, or for inline data one SGE followed by the copied
 * bytes. Both arrays only grow (realloc), so while building a WR refers to
 * its stretch by its index alone; wr_complete turns indices into pointers
 * just before posting. Inline data is thus copied at call time into
 * builder-owned memory without an allocation per call, and nothing needs
 * freeing after the batch: srdma_post_send() executes each WR or copies
 * it (inline bytes included) before it returns. The arrays are freed with
 * the QP. IBV_SEND_INLINE in wr_flags is ignored (ibv_wr_post(3) defines
 * inline only through the setters); internally it marks the WRs whose data
 * came from a set_inline setter.
 *
 * Concurrency: the batch belongs to the thread between wr_start and
 * wr_complete/wr_abort; two threads must not build on one QP at the same
 * time. qp->sq_lock is not held across the batch, since srdma_post_send()
 * takes it itself.
 *
 * Extended CQ polling. start_poll takes cq->poll_lock and keeps it until
 * end_poll (or releases it at once when the CQ is empty, since the
 * application then does not call end_poll); the current CQE is copied to
 * cq->cur, and the read_* callbacks decode it the way srdma_cqe_to_wc()
 * fills a struct ibv_wc. Deferred sends (RNR retries) are progressed
 * before the lock is taken, as in ibv_poll_cq.
 *
 * Design: docs/design/data-path.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/dp.h"
#include "core/srq_tm.h"
#include "engine/engine.h"
#include "util/compiler.h"
#include "verbs/verbs_int.h"

/* First batch capacity in WRs; doubled on demand up to max_send_wr. */
#define BLD_MIN_WR 16u

static struct srdma_qp *qpx_to_sqp(struct ibv_qp_ex *ibqp)
{
	return container_of(ibqp, struct srdma_qp, ib.qp_ex);
}

static struct srdma_cq *cqx_to_scq(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct srdma_cq, ib.cq_ex);
}

/* ---- work request builder --------------------------------------------- */

/*
 * SGE entries per WR in qp->bld_sge: room for max_send_sge SGEs, or for
 * one SGE plus max_inline_data bytes, or for one SGE plus an ATOMIC_WRITE
 * operand (8 bytes). Constant for the QP (cap is immutable), at least 2.
 */
static uint32_t bld_stride(const struct srdma_qp *qp)
{
	uint32_t inl = 1 + (qp->cap.max_inline_data + sizeof(struct ibv_sge) -
			    1) / sizeof(struct ibv_sge);

	if (inl < 2)
		inl = 2;	/* the ATOMIC_WRITE operand */

	return qp->cap.max_send_sge > inl ? qp->cap.max_send_sge : inl;
}

/* The SGE stretch of batch entry @idx (valid until the next grow). */
static struct ibv_sge *bld_sges(struct srdma_qp *qp, uint32_t idx)
{
	return &qp->bld_sge[(size_t)idx * bld_stride(qp)];
}

/* Remember the first error of the batch; later calls become no-ops. */
static void bld_fail(struct srdma_qp *qp, int err)
{
	if (!qp->bld_err)
		qp->bld_err = err;
}

/* Forget the batch; keeps the arrays for the next one. */
static void bld_reset(struct srdma_qp *qp)
{
	qp->bld_n = 0;
	qp->bld_err = 0;
}

/*
 * Make room for one more WR. A full send queue is ENOMEM, as on hardware:
 * a batch never holds more than max_send_wr WRs.
 * Return: 0 or -ENOMEM.
 */
static int bld_grow(struct srdma_qp *qp)
{
	uint32_t stride = bld_stride(qp);
	struct ibv_send_wr *wrs;
	struct ibv_sge *sges;
	uint32_t cap;

	if (qp->bld_n >= qp->cap.max_send_wr)
		return -ENOMEM;
	cap = qp->bld_cap ? qp->bld_cap * 2 : BLD_MIN_WR;
	if (cap > qp->cap.max_send_wr)
		cap = qp->cap.max_send_wr;
	wrs = realloc(qp->bld, cap * sizeof(*wrs));
	if (!wrs)
		return -ENOMEM;
	qp->bld = wrs; /* larger but bld_cap unchanged on failure */
	sges = realloc(qp->bld_sge, (size_t)cap * stride * sizeof(*sges));
	if (!sges)
		return -ENOMEM;
	qp->bld_sge = sges;
	qp->bld_cap = cap;
	return 0;
}

/*
 * Append a WR for @opcode with the application's current wr_id and
 * wr_flags. Return: the WR, or NULL when the batch has failed.
 */
static struct ibv_send_wr *bld_add(struct srdma_qp *qp,
				   enum ibv_wr_opcode opcode)
{
	struct ibv_send_wr *wr;
	int ret;

	if (qp->bld_err)
		return NULL;
	if (qp->bld_n == qp->bld_cap) {
		ret = bld_grow(qp);
		if (ret) {
			bld_fail(qp, -ret);
			return NULL;
		}
	}
	wr = &qp->bld[qp->bld_n++];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = qp->ib.qp_ex.wr_id;
	wr->opcode = opcode;
	wr->send_flags = qp->ib.qp_ex.wr_flags & ~(unsigned int)IBV_SEND_INLINE;
	return wr;
}

/* The WR a setter applies to. Return: it, or NULL when the batch failed. */
static struct ibv_send_wr *bld_last(struct srdma_qp *qp)
{
	if (qp->bld_err)
		return NULL;
	if (!qp->bld_n) {
		bld_fail(qp, EINVAL); /* a setter before any builder */
		return NULL;
	}
	return &qp->bld[qp->bld_n - 1];
}

static void qpx_wr_start(struct ibv_qp_ex *ibqp)
{
	bld_reset(qpx_to_sqp(ibqp));
}

/*
 * Post the batch. Return: 0, or a positive errno: the builder's first
 * error (nothing posted) or srdma_post_send()'s (the WRs before the
 * failing one are posted).
 */
static int qpx_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct srdma_qp *qp = qpx_to_sqp(ibqp);
	struct ibv_send_wr *bad, *wr;
	struct ibv_sge *sge;
	uint32_t i;
	int ret = qp->bld_err;

	if (srdma_ctx_inherited(qp->ctx))
		ret = EINVAL;	/* inherited across fork() */
	if (ret || !qp->bld_n)
		goto out_reset;
	for (i = 0; i < qp->bld_n; i++) {
		wr = &qp->bld[i];
		sge = bld_sges(qp, i);
		wr->next = i + 1 < qp->bld_n ? wr + 1 : NULL;
		wr->sg_list = wr->num_sge ? sge : NULL;
		if (wr->send_flags & IBV_SEND_INLINE)
			sge->addr = (uintptr_t)(sge + 1);
	}
	ret = srdma_post_send(qp, qp->bld, &bad);
out_reset:
	bld_reset(qp);
	return ret;
}

static void qpx_wr_abort(struct ibv_qp_ex *ibqp)
{
	bld_reset(qpx_to_sqp(ibqp));
}

/* ---- builders ----------------------------------------------------------- */

static void qpx_wr_send(struct ibv_qp_ex *ibqp)
{
	bld_add(qpx_to_sqp(ibqp), IBV_WR_SEND);
}

static void qpx_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	struct ibv_send_wr *wr =
		bld_add(qpx_to_sqp(ibqp), IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm_data;
}

static void qpx_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr =
		bld_add(qpx_to_sqp(ibqp), IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void qpx_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
			      uint64_t remote_addr)
{
	struct ibv_send_wr *wr = bld_add(qpx_to_sqp(ibqp), IBV_WR_RDMA_WRITE);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = remote_addr;
	}
}

static void qpx_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	struct ibv_send_wr *wr =
		bld_add(qpx_to_sqp(ibqp), IBV_WR_RDMA_WRITE_WITH_IMM);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = remote_addr;
		wr->imm_data = imm_data;
	}
}

static void qpx_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			     uint64_t remote_addr)
{
	struct ibv_send_wr *wr = bld_add(qpx_to_sqp(ibqp), IBV_WR_RDMA_READ);

	if (wr) {
		wr->wr.rdma.rkey = rkey;
		wr->wr.rdma.remote_addr = remote_addr;
	}
}

static void qpx_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	struct ibv_send_wr *wr =
		bld_add(qpx_to_sqp(ibqp), IBV_WR_ATOMIC_CMP_AND_SWP);

	if (wr) {
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.remote_addr = remote_addr;
		wr->wr.atomic.compare_add = compare;
		wr->wr.atomic.swap = swap;
	}
}

static void qpx_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	struct ibv_send_wr *wr =
		bld_add(qpx_to_sqp(ibqp), IBV_WR_ATOMIC_FETCH_AND_ADD);

	if (wr) {
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.remote_addr = remote_addr;
		wr->wr.atomic.compare_add = add;
	}
}

static void qpx_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = bld_add(qpx_to_sqp(ibqp), IBV_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void qpx_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
			   uint32_t rkey,
			   const struct ibv_mw_bind_info *bind_info)
{
	struct srdma_qp *qp = qpx_to_sqp(ibqp);
	struct ibv_send_wr *wr;

	if (!bind_info) {
		bld_fail(qp, EINVAL);
		return;
	}
	wr = bld_add(qp, IBV_WR_BIND_MW);
	if (wr) {
		wr->bind_mw.mw = mw;
		wr->bind_mw.rkey = rkey;
		wr->bind_mw.bind_info = *bind_info;
	}
}

/*
 * ATOMIC_WRITE: the 8 bytes travel inline (the WR's stretch has room for
 * one SGE and 16 bytes, bld_stride()), whatever max_inline_data is: they
 * are the operation's operand, not a payload (requester.c).
 */
static void qpx_wr_atomic_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				uint64_t remote_addr, const void *atomic_wr)
{
	struct srdma_qp *qp = qpx_to_sqp(ibqp);
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;

	if (!atomic_wr) {
		bld_fail(qp, EINVAL);
		return;
	}
	wr = bld_add(qp, IBV_WR_ATOMIC_WRITE);
	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	sge = bld_sges(qp, qp->bld_n - 1);
	memcpy(sge + 1, atomic_wr, 8);
	sge->addr = 0;	/* fixed up in wr_complete */
	sge->length = 8;
	sge->lkey = 0;
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_INLINE;
}

/* Operations softrdma does not offer (not grantable in send_ops_flags). */
static void qpx_wr_send_tso(struct ibv_qp_ex *ibqp, void *hdr, uint16_t hdr_sz,
			    uint16_t mss)
{
	bld_fail(qpx_to_sqp(ibqp), EOPNOTSUPP);
}


/* XRC_SEND: the SRQ the last WR goes to; other types ignore it. */
static void qpx_wr_set_xrc_srqn(struct ibv_qp_ex *ibqp, uint32_t remote_srqn)
{
	struct ibv_send_wr *wr = bld_last(qpx_to_sqp(ibqp));

	if (wr)
		wr->qp_type.xrc.remote_srqn = remote_srqn;
}

/* ---- setters ------------------------------------------------------------ */

static void qpx_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct srdma_qp *qp = qpx_to_sqp(ibqp);
	struct ibv_send_wr *wr = bld_last(qp);

	if (!wr)
		return;
	if (num_sge > qp->cap.max_send_sge || (num_sge && !sg_list)) {
		bld_fail(qp, EINVAL);
		return;
	}
	if (num_sge)
		memcpy(bld_sges(qp, qp->bld_n - 1), sg_list,
		       num_sge * sizeof(*sg_list));
	wr->num_sge = (int)num_sge;
	wr->send_flags &= ~(unsigned int)IBV_SEND_INLINE;
}

static void qpx_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey, uint64_t addr,
			   uint32_t length)
{
	const struct ibv_sge sge = {
		.addr = addr,
		.length = length,
		.lkey = lkey,
	};

	qpx_wr_set_sge_list(ibqp, 1, &sge);
}

/* Inline data is defined only for SENDs and RDMA WRITEs (ibv_wr_post(3)). */
static bool opcode_takes_inline(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return true;
	default:
		return false;
	}
}

/*
 * Copy the buffers into the WR's stretch: one SGE (address fixed up in
 * wr_complete) followed by the concatenated bytes, at most max_inline_data
 * of them, which bld_stride() made room for.
 */
static void qpx_wr_set_inline_data_list(struct ibv_qp_ex *ibqp, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct srdma_qp *qp = qpx_to_sqp(ibqp);
	struct ibv_send_wr *wr = bld_last(qp);
	struct ibv_sge *sge;
	size_t total = 0, i;
	char *p;

	if (!wr)
		return;
	if (!opcode_takes_inline(wr->opcode) || (num_buf && !buf_list)) {
		bld_fail(qp, EINVAL);
		return;
	}
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->cap.max_inline_data - total) {
			bld_fail(qp, EINVAL);
			return;
		}
		total += buf_list[i].length;
	}
	sge = bld_sges(qp, qp->bld_n - 1);
	p = (char *)(sge + 1);
	for (i = 0; i < num_buf; i++) {
		if (!buf_list[i].length)
			continue;
		memcpy(p, buf_list[i].addr, buf_list[i].length);
		p += buf_list[i].length;
	}
	sge->addr = 0;
	sge->length = (uint32_t)total;
	sge->lkey = 0;
	wr->num_sge = 1;
	wr->send_flags |= IBV_SEND_INLINE;
}

static void qpx_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
				   size_t length)
{
	const struct ibv_data_buf buf = {
		.addr = addr,
		.length = length,
	};

	qpx_wr_set_inline_data_list(ibqp, 1, &buf);
}

/* UD only: on other QPs wr.ud would overwrite wr.rdma / wr.atomic. */
static void qpx_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct srdma_qp *qp = qpx_to_sqp(ibqp);
	struct ibv_send_wr *wr = bld_last(qp);

	if (!wr)
		return;
	if (qp->type != IBV_QPT_UD) {
		bld_fail(qp, EINVAL);
		return;
	}
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = remote_qpn;
	wr->wr.ud.remote_qkey = remote_qkey;
}

/**
 * srdma_verbs_qpex_init() - fill the ibv_wr_* ops of an extended QP.
 * @qp:             QP being created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
 * @send_ops_flags: the operations the application asked for
 *
 * Every op is set whatever @send_ops_flags says, so no pointer an inline
 * of verbs.h may call is NULL; the flags were already checked against
 * what softrdma supports, and the operation it lacks (TSO) makes
 * wr_complete fail with EOPNOTSUPP. Starts an empty batch.
 *
 * Context: create path, before the QP is published; takes no lock.
 */
void srdma_verbs_qpex_init(struct srdma_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *x = &qp->ib.qp_ex;

	x->wr_start = qpx_wr_start;
	x->wr_complete = qpx_wr_complete;
	x->wr_abort = qpx_wr_abort;
	x->wr_send = qpx_wr_send;
	x->wr_send_imm = qpx_wr_send_imm;
	x->wr_send_inv = qpx_wr_send_inv;
	x->wr_send_tso = qpx_wr_send_tso;
	x->wr_rdma_write = qpx_wr_rdma_write;
	x->wr_rdma_write_imm = qpx_wr_rdma_write_imm;
	x->wr_rdma_read = qpx_wr_rdma_read;
	x->wr_atomic_cmp_swp = qpx_wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = qpx_wr_atomic_fetch_add;
	x->wr_atomic_write = qpx_wr_atomic_write;
	x->wr_local_inv = qpx_wr_local_inv;
	x->wr_bind_mw = qpx_wr_bind_mw;
	x->wr_set_sge = qpx_wr_set_sge;
	x->wr_set_sge_list = qpx_wr_set_sge_list;
	x->wr_set_inline_data = qpx_wr_set_inline_data;
	x->wr_set_inline_data_list = qpx_wr_set_inline_data_list;
	x->wr_set_ud_addr = qpx_wr_set_ud_addr;
	x->wr_set_xrc_srqn = qpx_wr_set_xrc_srqn;
	bld_reset(qp);
}

/* ---- extended CQ polling ------------------------------------------------ */

/* Pop the next CQE into cq->cur and expose wr_id/status. Requires
 * poll_lock. Return: 0 or ENOENT. */
static int cqx_load(struct srdma_cq *cq)
{
	if (srdma_cq_pop(cq, &cq->cur))
		return ENOENT;
	cq->ib.cq_ex.wr_id = cq->cur.wr_id;
	cq->ib.cq_ex.status = (enum ibv_wc_status)cq->cur.status;
	return 0;
}

/*
 * Return: 0 with poll_lock held until end_poll; ENOENT (CQ empty) or
 * EINVAL (unknown attr->comp_mask) with nothing held.
 */
static int cqx_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct srdma_cq *cq = cqx_to_scq(ibcq);
	int ret;

	if (attr && attr->comp_mask)
		return EINVAL;
	if (srdma_ctx_inherited(cq->ctx))
		return EINVAL;	/* inherited across fork(): before any lock */
	/* Before poll_lock: progress takes sq_lock and ctx->lock. */
	srdma_engine_cq_progress(cq);
	pthread_mutex_lock(&cq->poll_lock);
	ret = cqx_load(cq);
	if (ret)
		pthread_mutex_unlock(&cq->poll_lock);
	/* Empty: the net transport's inline path, as ibv_poll_cq. */
	if (ret == ENOENT && srdma_engine_cq_idle(cq) > 0) {
		pthread_mutex_lock(&cq->poll_lock);
		ret = cqx_load(cq);
		if (ret)
			pthread_mutex_unlock(&cq->poll_lock);
	}
	return ret;
}

/* Requires poll_lock (from start_poll); keeps it. Return: 0 or ENOENT. */
static int cqx_next_poll(struct ibv_cq_ex *ibcq)
{
	return cqx_load(cqx_to_scq(ibcq));
}

static void cqx_end_poll(struct ibv_cq_ex *ibcq)
{
	pthread_mutex_unlock(&cqx_to_scq(ibcq)->poll_lock);
}

/* The readers below require poll_lock and a current entry. */
static enum ibv_wc_opcode cqx_read_opcode(struct ibv_cq_ex *ibcq)
{
	return (enum ibv_wc_opcode)cqx_to_scq(ibcq)->cur.opcode;
}

static uint32_t cqx_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	const struct srdma_shm_cqe *c = &cqx_to_scq(ibcq)->cur;

	return srdma_cqe_tm_borrowed(c) ? 0 : c->vendor_err;
}

static uint32_t cqx_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return cqx_to_scq(ibcq)->cur.byte_len;
}

/* Immediate data (network order), or with IBV_WC_WITH_INV the invalidated
 * rkey: ibv_wc_read_invalidated_rkey() calls this too. A matched TM
 * receive keeps it elsewhere (core/srq_tm.h). */
static __be32 cqx_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return (__be32)srdma_cqe_imm(&cqx_to_scq(ibcq)->cur);
}

static uint32_t cqx_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return cqx_to_scq(ibcq)->cur.qp_num;
}

static uint32_t cqx_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return cqx_to_scq(ibcq)->cur.src_qp;
}

static unsigned int cqx_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return cqx_to_scq(ibcq)->cur.wc_flags;
}

static uint32_t cqx_read_slid(struct ibv_cq_ex *ibcq)
{
	const struct srdma_shm_cqe *c = &cqx_to_scq(ibcq)->cur;

	return srdma_cqe_tm_borrowed(c) ? 0 : c->slid;
}

static uint8_t cqx_read_sl(struct ibv_cq_ex *ibcq)
{
	const struct srdma_shm_cqe *c = &cqx_to_scq(ibcq)->cur;

	return srdma_cqe_tm_borrowed(c) ? 0 : c->sl;
}

static uint8_t cqx_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	const struct srdma_shm_cqe *c = &cqx_to_scq(ibcq)->cur;

	return srdma_cqe_tm_borrowed(c) ? 0 : c->dlid_path_bits;
}

/* Stamped by the producer when the CQ was created with the flag (cq.c):
 * the free-running clock in ticks of hca_core_clock (1 GHz), and the wall
 * clock in nanoseconds. 0 without the flag. */
static uint64_t cqx_read_completion_ts(struct ibv_cq_ex *ibcq)
{
	return cqx_to_scq(ibcq)->cur.ts_ns;
}

static uint64_t cqx_read_completion_wallclock_ns(struct ibv_cq_ex *ibcq)
{
	return cqx_to_scq(ibcq)->cur.wall_ns;
}

/* No VLANs or flow tags: they read as zero. */

static uint16_t cqx_read_cvlan(struct ibv_cq_ex *ibcq)
{
	return 0;
}

static uint32_t cqx_read_flow_tag(struct ibv_cq_ex *ibcq)
{
	return 0;
}

/* The tag and app_ctx of a matched TM receive (core/srq_tm.h), else 0. */
static void cqx_read_tm_info(struct ibv_cq_ex *ibcq,
			     struct ibv_wc_tm_info *tm_info)
{
	memset(tm_info, 0, sizeof(*tm_info));
	srdma_tm_cqe_info(&cqx_to_scq(ibcq)->cur, &tm_info->tag,
			  &tm_info->priv);
}

/**
 * srdma_verbs_cqex_init() - fill the polling ops of an extended CQ.
 * @cq: CQ being created through ibv_create_cq_ex
 *
 * Every read_* op is set whatever wc_flags the application asked for;
 * the ones softrdma has no data for (cvlan, flow tag, tag matching)
 * read as zero, as do timestamps the CQ was not created for.
 *
 * Context: create path, before the CQ is published; takes no lock.
 */
void srdma_verbs_cqex_init(struct srdma_cq *cq)
{
	struct ibv_cq_ex *x = &cq->ib.cq_ex;

	x->start_poll = cqx_start_poll;
	x->next_poll = cqx_next_poll;
	x->end_poll = cqx_end_poll;
	x->read_opcode = cqx_read_opcode;
	x->read_vendor_err = cqx_read_vendor_err;
	x->read_byte_len = cqx_read_byte_len;
	x->read_imm_data = cqx_read_imm_data;
	x->read_qp_num = cqx_read_qp_num;
	x->read_src_qp = cqx_read_src_qp;
	x->read_wc_flags = cqx_read_wc_flags;
	x->read_slid = cqx_read_slid;
	x->read_sl = cqx_read_sl;
	x->read_dlid_path_bits = cqx_read_dlid_path_bits;
	x->read_completion_ts = cqx_read_completion_ts;
	x->read_completion_wallclock_ns = cqx_read_completion_wallclock_ns;
	x->read_cvlan = cqx_read_cvlan;
	x->read_flow_tag = cqx_read_flow_tag;
	x->read_tm_info = cqx_read_tm_info;
}
