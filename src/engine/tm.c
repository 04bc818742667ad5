// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * tm.c - tag matching at the receiving device (tm.h).
 *
 * A message for a QP on a tag-matching SRQ starts with a TM header
 * (struct ibv_tmh: opcode, app_ctx, tag; a rendezvous adds struct ibv_rvh:
 * the sender's va, rkey, len). The responder hands us its first bytes
 * while it holds the SRQ's rq.rlock, and we decide where it goes, as mlx5
 * does:
 *
 *  - EAGER or RNDV whose tag matches a posted, matchable entry (the oldest
 *    such entry; entry matches when (tag & mask) == (entry.tag & mask)):
 *    the entry's buffer. EAGER lands there without its 16-byte header
 *    (IBV_WC_TM_RECV, TM_MATCH | TM_DATA_VALID). RNDV is reported matched
 *    (TM_MATCH) and then read from the sender into the buffer
 *    (TM_DATA_VALID, a second completion) and answered with a FIN message;
 *    where the transport cannot read (net), the whole message lands in the
 *    buffer with IBV_WC_TM_RNDV_INCOMPLETE, mlx5's "software rendezvous".
 *  - EAGER or RNDV matching nothing, or only tags added out of phase: the
 *    head receive of the SRQ, whole (IBV_WC_TM_RECV, no TM flags), and
 *    the device's unexpected count goes up.
 *  - NO_TAG, any other opcode, a message shorter than a TM header: the
 *    head receive of the SRQ, whole (IBV_WC_TM_NO_TAG).
 *
 * Every completion goes to the SRQ's CQ. The list is shared memory other
 * processes of the user can write, so each field is read once and checked
 * before it indexes anything.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include <infiniband/tm_types.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/srq_tm.h"
#include "engine/tm.h"
#include "util/log.h"
#include "util/selfcopy.h"

#define TMH_LEN ((uint32_t)sizeof(struct ibv_tmh))
#define RVH_LEN ((uint32_t)sizeof(struct ibv_rvh))
/* Skip of a rendezvous read by the device: no byte of the message lands. */
#define SKIP_ALL ((uint64_t)SRDMA_MAX_MSG * 4)

/* Copy the first bytes (at most @want) of the message into @buf: the
 * caller's memory, which may fault. Return: the bytes copied. */
static uint32_t read_head(const struct iovec *msg, uint32_t n, uint64_t len,
			  uint8_t *buf, uint32_t want)
{
	struct iovec r[4], l;
	uint32_t i, k = 0, got = 0;

	if (len < want)
		want = (uint32_t)len;
	for (i = 0; i < n && got < want && k < 4; i++) {
		size_t take = msg[i].iov_len;

		if (!take)
			continue;
		if (take > want - got)
			take = want - got;
		r[k].iov_base = msg[i].iov_base;
		r[k].iov_len = take;
		got += (uint32_t)take;
		k++;
	}
	if (!got)
		return 0;
	l.iov_base = buf;
	l.iov_len = got;
	if (srdma_self_vm_rw(&l, 1, r, k, false) != (ssize_t)got)
		return 0;	/* faulted: treated as too short for a TMH */
	return got;
}

static struct srdma_shm_tm *tm_map(struct srdma_seg_hdr *seg, uint64_t off)
{
	struct srdma_shm_tm *tm = srdma_seg_ring(seg, off, sizeof(*tm));
	uint32_t max;

	if (!tm || tm->magic != SRDMA_TM_MAGIC)
		return NULL;
	max = tm->max_tags;
	if (!max || max > SRDMA_TM_MAX_TAGS ||
	    !srdma_seg_ring(seg, off, srdma_tm_bytes(max)))
		return NULL;
	return tm;
}

/* The oldest posted entry @tag matches, or -1. Requires rlock. */
static int tm_find(const struct srdma_shm_tm *tm, uint32_t max, uint64_t tag)
{
	bool in_sync = tm->sw_unexp == tm->hw_unexp;
	uint64_t best_seq = UINT64_MAX;
	int best = -1;
	uint32_t i;

	for (i = 0; i < max; i++) {
		const struct srdma_shm_tm_tag *g = &tm->tags[i];

		if (g->state != SRDMA_TAG_POSTED || (!g->coherent && !in_sync))
			continue;
		if ((tag & g->mask) != (g->tag & g->mask))
			continue;
		if (g->seq < best_seq) {
			best_seq = g->seq;
			best = (int)i;
		}
	}
	return best;
}

int srdma_tm_match(struct srdma_seg_hdr *seg, uint64_t tm_off,
		   const struct iovec *msg, uint32_t n, uint64_t len,
		   bool rndv_offload, struct srdma_rwqe *w, void **tmp)
{
	uint8_t hdr[TMH_LEN + RVH_LEN];
	struct srdma_shm_tm *tm = tm_map(seg, tm_off);
	const struct srdma_shm_tm_tag *g;
	struct ibv_tmh tmh;
	struct ibv_rvh rvh;
	uint32_t got, i, max;
	uint64_t tag;
	int idx;

	if (!tm)
		return -EIO;
	*tmp = tm;
	max = tm->max_tags;
	w->tm.cq = tm->cq;
	w->tm.kind = SRDMA_TM_NO_TAG;
	got = read_head(msg, n, len, hdr, sizeof(hdr));
	if (got < TMH_LEN)
		return 0;
	memcpy(&tmh, hdr, TMH_LEN);
	if (tmh.opcode != IBV_TMH_EAGER && tmh.opcode != IBV_TMH_RNDV)
		return 0;
	tag = be64toh(tmh.tag);
	idx = tmh.opcode == IBV_TMH_RNDV && got < TMH_LEN + RVH_LEN ?
		      -1 : tm_find(tm, max, tag);
	if (idx < 0) {
		w->tm.kind = SRDMA_TM_UNEXP;
		w->tm.sync_req = tm->hw_unexp + 1 - tm->sw_unexp >
				 SRDMA_TM_MAX_SYNC_DIFF;
		return 0;
	}
	g = &tm->tags[idx];
	w->wr_id = g->wr_id;
	w->nsge = g->num_sge < SRDMA_TM_MAX_SGE ? g->num_sge :
						  SRDMA_TM_MAX_SGE;
	w->capacity = 0;
	for (i = 0; i < w->nsge; i++) {
		w->sge[i] = g->sge[i];
		w->capacity += w->sge[i].length;
	}
	w->tm.idx = (uint32_t)idx;
	w->tm.tag = tag;
	w->tm.app_ctx = be32toh(tmh.app_ctx);
	if (tmh.opcode == IBV_TMH_EAGER) {
		w->tm.kind = SRDMA_TM_EXPECTED;
		w->tm.skip = TMH_LEN;
		w->capacity += TMH_LEN;
	} else if (rndv_offload) {
		memcpy(&rvh, hdr + TMH_LEN, RVH_LEN);
		w->tm.kind = SRDMA_TM_RNDV;
		w->tm.rva = be64toh(rvh.va);
		w->tm.rkey = be32toh(rvh.rkey);
		w->tm.rlen = be32toh(rvh.len);
		w->tm.skip = SKIP_ALL;
		w->capacity = SKIP_ALL;
	} else {
		w->tm.kind = SRDMA_TM_RNDV_SW;
	}
	return 1;
}

void srdma_tm_consume(void *tmp, const struct srdma_rwqe *w)
{
	struct srdma_shm_tm *tm = tmp;
	struct srdma_shm_tm_tag *g;

	switch (w->tm.kind) {
	case SRDMA_TM_UNEXP:
		tm->hw_unexp++;
		break;
	case SRDMA_TM_EXPECTED:
	case SRDMA_TM_RNDV_SW:
	case SRDMA_TM_RNDV:
		g = &tm->tags[w->tm.idx];	/* idx < max_tags: matched */
		g->state = w->tm.kind == SRDMA_TM_RNDV ? SRDMA_TAG_BUSY :
							 SRDMA_TAG_FREE;
		break;
	default:
		break;
	}
}

uint32_t srdma_tm_cqe(const struct srdma_rwqe *w, struct srdma_shm_cqe *c)
{
	bool ok = c->status == IBV_WC_SUCCESS;

	switch (w->tm.kind) {
	case SRDMA_TM_EXPECTED:
		c->opcode = IBV_WC_TM_RECV;
		c->byte_len = c->byte_len > w->tm.skip ?
				      c->byte_len - (uint32_t)w->tm.skip : 0;
		if (ok) {
			c->wc_flags = (c->wc_flags & SRDMA_TM_CQE_IMM) |
				      IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
			srdma_tm_cqe_set_info(c, w->tm.tag, w->tm.app_ctx);
		}
		break;
	case SRDMA_TM_RNDV:
		c->opcode = IBV_WC_TM_RECV;
		c->byte_len = 0;
		if (ok) {
			c->wc_flags = (c->wc_flags & SRDMA_TM_CQE_IMM) |
				      IBV_WC_TM_MATCH;
			srdma_tm_cqe_set_info(c, w->tm.tag, w->tm.app_ctx);
		}
		break;
	case SRDMA_TM_RNDV_SW:
		c->opcode = IBV_WC_TM_RECV;
		if (ok) {
			c->status = IBV_WC_TM_RNDV_INCOMPLETE;
			c->wc_flags = (c->wc_flags & SRDMA_TM_CQE_IMM) |
				      IBV_WC_TM_MATCH;
			srdma_tm_cqe_set_info(c, w->tm.tag, w->tm.app_ctx);
		}
		break;
	case SRDMA_TM_UNEXP:
		c->opcode = IBV_WC_TM_RECV;
		if (w->tm.sync_req)
			c->wc_flags |= IBV_WC_TM_SYNC_REQ;
		break;
	default:
		c->opcode = IBV_WC_TM_NO_TAG;
		break;
	}
	return w->tm.cq;
}

/* ---- rendezvous on one host ---------------------------------------------- */

/* The tag of @w leaves the list and its data completion is posted. */
static void rndv_done(struct srdma_target *t, const struct srdma_rwqe *w,
		      uint8_t status, uint32_t byte_len)
{
	struct srdma_shm_cqe c = { 0 };
	struct srdma_shm_srq *srq;
	struct srdma_shm_tm *tm;
	uint32_t s = t->qp->srq - 1;

	if (s >= SRDMA_SEG_SRQ_SLOTS)
		return;
	srq = srdma_seg_srq(t->p->seg, s);
	srdma_shm_lock(&srq->rq.rlock);
	tm = tm_map(t->p->seg, srq->tm_off);
	if (!tm || atomic_load(&srq->live) != SRDMA_OBJ_LIVE ||
	    w->tm.idx >= tm->max_tags ||
	    tm->tags[w->tm.idx].state != SRDMA_TAG_BUSY) {
		srdma_shm_unlock(&srq->rq.rlock);
		return;		/* the SRQ went away meanwhile */
	}
	tm->tags[w->tm.idx].state = SRDMA_TAG_FREE;
	c.wr_id = w->wr_id;
	c.status = status;
	c.opcode = IBV_WC_TM_RECV;
	c.qp_num = t->qpn;
	if (status == IBV_WC_SUCCESS) {
		c.byte_len = byte_len;
		c.wc_flags = IBV_WC_TM_DATA_VALID;
	}
	srdma_cqe_post(t->ctx, t->p, tm->cq, &c, false);
	srdma_shm_unlock(&srq->rq.rlock);
}

/* The FIN message into the sender's receive queue (@me). */
static void rndv_fin(struct srdma_target *me, const struct srdma_target *t,
		     const struct srdma_rwqe *w)
{
	struct ibv_tmh fin = { 0 };
	struct iovec io = { &fin, sizeof(fin) };
	struct srdma_shm_cqe c = { 0 };
	struct srdma_rq_hold h;
	int r;

	fin.opcode = IBV_TMH_FIN;
	fin.app_ctx = htobe32(w->tm.app_ctx);
	fin.tag = htobe64(w->tm.tag);
	if (srdma_resp_rq_begin(me, &h)) {
		srdma_dbg("QP %#x: rendezvous FIN from QP %#x dropped: no "
			  "receive posted", me->qpn, t->qpn);
		return;
	}
	r = srdma_resp_scatter(me, &h.w, 0, &io, 1, sizeof(fin));
	c.status = r == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR :
		   r ? IBV_WC_LOC_PROT_ERR : IBV_WC_SUCCESS;
	c.opcode = IBV_WC_RECV;
	c.byte_len = r ? 0 : (uint32_t)sizeof(fin);
	c.src_qp = t->qpn;
	c.slid = (uint16_t)(t->qpn >> SRDMA_QPN_SHIFT);
	srdma_resp_rq_complete(&h, &c, false);
}

void srdma_tm_rndv_host(struct srdma_context *ctx, uint32_t qpn,
			struct srdma_target *t, const struct srdma_rwqe *w)
{
	struct srdma_rwqe dst = *w;
	struct srdma_target me;
	struct srdma_rmem m;
	struct iovec io;
	uint8_t status = IBV_WC_SUCCESS;
	uint32_t i;
	int r;

	/* The tag's buffer, as a plain receive buffer. */
	memset(&dst.tm, 0, sizeof(dst.tm));
	dst.capacity = 0;
	for (i = 0; i < dst.nsge; i++)
		dst.capacity += dst.sge[i].length;
	if (srdma_resp_self(ctx, qpn, &me)) {
		rndv_done(t, w, IBV_WC_GENERAL_ERR, 0);
		return;
	}
	if (w->tm.rlen > dst.capacity) {
		srdma_dbg("QP %#x: rendezvous of %u bytes into a tag buffer of "
			  "%llu", t->qpn, w->tm.rlen,
			  (unsigned long long)dst.capacity);
		status = IBV_WC_LOC_LEN_ERR;
	} else if (!srdma_resp_qp_allows(&me, IBV_ACCESS_REMOTE_READ)) {
		srdma_dbg("QP %#x: rendezvous read refused: QP %#x has no "
			  "REMOTE_READ access", t->qpn, qpn);
		status = IBV_WC_REM_INV_REQ_ERR;
	} else if (w->tm.rlen &&
		   srdma_resp_rkey(&me, w->tm.rkey, IBV_ACCESS_REMOTE_READ,
				   w->tm.rva, w->tm.rlen, &m) != SRDMA_KCHK_OK) {
		status = IBV_WC_REM_ACCESS_ERR;
	} else if (w->tm.rlen && !m.src->self) {
		/* A key of the context ours imports: not in our memory. */
		srdma_resp_rkey_put(&me, &m);
		status = IBV_WC_REM_ACCESS_ERR;
	} else if (w->tm.rlen) {
		io.iov_base = (void *)(uintptr_t)m.ref.host_addr;
		io.iov_len = w->tm.rlen;
		r = srdma_resp_scatter(t, &dst, 0, &io, 1, w->tm.rlen);
		srdma_resp_rkey_put(&me, &m);
		if (r) {
			srdma_dbg("QP %#x: rendezvous of %u bytes: %d", t->qpn,
				  w->tm.rlen, r);
			status = r == -EACCES ? IBV_WC_LOC_PROT_ERR :
					       IBV_WC_REM_ACCESS_ERR;
		}
	}
	rndv_done(t, w, status, w->tm.rlen);
	if (status == IBV_WC_SUCCESS)
		rndv_fin(&me, t, w);
	srdma_resp_self_put(&me);
}
