/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * responder.h - the responder stage of the engine: every rule a target
 * applies to an incoming operation, whichever transport brought it.
 *
 * The host transport calls these in the initiator's thread against the
 * target's shared segment (the target stays passive); the net transport
 * calls them in the target's own progress thread, one packet at a time,
 * against its own segment (a struct srdma_target naming the self peer).
 * So the QP state and access checks, the one key check (rkeys, receive
 * buffers' lkeys, type 2 windows' QP rule), receive-queue consumption and
 * the target's CQEs and async events are written once.
 *
 * Bytes move between iovecs in the caller's address space and the
 * target's memory: by process_vm_writev/readv for another process, and by
 * the same calls on ourselves for our own memory (a fault is then an
 * error return, never a signal). Return conventions: 0 or -errno;
 * srdma_resp_rkey() returns a SRDMA_KCHK_* code.
 */
#ifndef SRDMA_ENGINE_RESPONDER_H
#define SRDMA_ENGINE_RESPONDER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/core.h"
#include "core/dp.h"

/*
 * A target QP: an entry of some context's segment, and that context.
 * For an XRC_RECV (TGT) QP, srdma_resp_xrc_bind() then points the data
 * side (@p: key table, memory, receive queue, CQ) at the XRC SRQ the
 * XRCETH names, which may belong to another context of the host; the QP
 * side (state, access flags, peer, errors) stays with @qp_p.
 */
struct srdma_target {
	struct srdma_context *ctx;	/* ours: access records, logging */
	struct srdma_peer *p;		/* owner of the memory, keys and
					 * receive queue (self: net) */
	struct srdma_shm_qp *qp;	/* its QP entry */
	uint32_t qpn;
	struct srdma_peer *qp_p;	/* owner of @qp's entry (== @p but
					 * for XRC) */
	uint32_t pd;			/* PD of keys and receive buffers */
	uint32_t rcq;			/* CQ slot (in @p's segment) of
					 * receive completions */
	struct srdma_shm_srq *xsrq;	/* XRC: the SRQ bound, else NULL */
	uint32_t xsrq_slot;
	bool xsrq_ref;			/* XRC: @p is a reference of its own */
};

/* What a tag-matching SRQ made of a message (engine/tm.c). */
enum srdma_tm_kind {
	SRDMA_TM_NONE = 0,		/* not a TM receive */
	SRDMA_TM_EXPECTED,		/* eager, matched a tag */
	SRDMA_TM_RNDV,			/* rendezvous, matched: we read it */
	SRDMA_TM_RNDV_SW,		/* rendezvous, matched: the application
					 * reads it (TM_RNDV_INCOMPLETE) */
	SRDMA_TM_UNEXP,			/* tagged, unmatched: an SRQ receive */
	SRDMA_TM_NO_TAG,		/* NO_TAG: an SRQ receive */
};

struct srdma_rwqe_tm {
	uint8_t kind;			/* enum srdma_tm_kind */
	bool sync_req;			/* IBV_WC_TM_SYNC_REQ on its CQE */
	uint32_t idx;			/* tag entry (EXPECTED, RNDV*) */
	uint32_t cq;			/* the SRQ's CQ slot */
	uint32_t app_ctx;		/* from the TMH */
	uint64_t tag;			/* from the TMH */
	uint64_t skip;			/* message bytes not scattered */
	uint64_t rva;			/* RNDV: the sender's buffer */
	uint32_t rkey, rlen;
};

/* A receive WQE, copied out of the shared ring and checked. */
struct srdma_rwqe {
	uint64_t wr_id;
	uint32_t pd;			/* PD its buffers must be in */
	uint32_t nsge;			/* <= SRDMA_MAX_SGE, checked */
	uint64_t capacity;		/* sum of the SGE lengths (+ tm.skip:
					 * in message bytes) */
	bool srq;			/* taken from an SRQ */
	struct srdma_rwqe_tm tm;	/* kind SRDMA_TM_NONE but at a TM SRQ */
	struct srdma_shm_rsge sge[SRDMA_MAX_SGE];
};

/* A receive queue held locked with its head WQE (host transport). */
struct srdma_rq_hold {
	struct srdma_target *t;
	void *priv[4];			/* responder.c */
	struct srdma_rwqe w;		/* copy of the head WQE */
};

/**
 * srdma_resp_self() - @qpn of our own context as a target (net): the
 * self peer (a reference, dropped by srdma_resp_self_put()) and the QP
 * entry, which must be live. Return: 0 or -ENOENT.
 */
int srdma_resp_self(struct srdma_context *ctx, uint32_t qpn,
		    struct srdma_target *t);
void srdma_resp_self_put(struct srdma_target *t);

/**
 * srdma_resp_target() - QP @qpn in the segment of @p (the host transport's
 * target, @p referenced by the caller) as a target: its entry must be
 * live and, unless @type is -1, of that enum ibv_qp_type. No reference is
 * taken. Return: 0 with @t filled, or -ENOENT.
 */
int srdma_resp_target(struct srdma_context *ctx, struct srdma_peer *p,
		      uint32_t qpn, int type, struct srdma_target *t);

/**
 * srdma_resp_xrc_bind() - XRC: direct the data side of @t (a TGT QP) to
 * the XRC SRQ number @srqn: it must be a live XRC SRQ of a context of
 * this host in the TGT QP's XRC domain. When another context owns it, a
 * reference to that peer is taken (dropped by srdma_resp_xrc_unbind()).
 * Return: 0, or -ENOENT (no such SRQ, or another domain: the responder
 * answers NAK Remote Access Error, as IBTA's XRC rules say).
 * Context: any thread; takes ctx->lock when another peer is needed.
 */
int srdma_resp_xrc_bind(struct srdma_target *t, uint32_t srqn);
/* Undo srdma_resp_xrc_bind() (no-op if nothing is bound). */
void srdma_resp_xrc_unbind(struct srdma_target *t);

/* True if the target QP's state receives (RTR, RTS, SQD, SQE). */
bool srdma_resp_qp_receives(const struct srdma_target *t);
/* RC/UC: true if the target QP receives and is connected to @src_qpn. */
bool srdma_resp_connected_to(const struct srdma_target *t, uint32_t src_qpn);
/* UD: true if @qkey is the target QP's Q_Key. */
bool srdma_resp_qkey_ok(const struct srdma_target *t, uint32_t qkey);
/* The RNR NAK timer the target QP asks for (its min_rnr_timer), in ns. */
uint64_t srdma_resp_rnr_timer_ns(const struct srdma_target *t);

/**
 * srdma_resp_rq_begin() - lock the target's receive queue (its SRQ's if
 * it has one) and copy its head WQE into @h->w.
 * Return: 0; -EAGAIN if the queue is empty (RNR); -EIO if the queue or
 * QP is not usable (gone, or its shared entry is inconsistent). On error
 * nothing is held.
 */
int srdma_resp_rq_begin(struct srdma_target *t, struct srdma_rq_hold *h);
/**
 * srdma_resp_rq_begin_msg() - srdma_resp_rq_begin() for a SEND whose
 * message starts with the @n iovecs @msg (@len bytes there, the caller's
 * memory: at least the first packet). At a tag-matching SRQ the message's
 * TM header is matched against the tag list (engine/tm.c): a match fills
 * @h->w with the tag's buffer instead of the queue's head, and
 * @rndv_offload says whether the caller reads a matched rendezvous itself
 * (srdma_tm_rndv_host) or leaves it to the application.
 * Return: as srdma_resp_rq_begin() (-EAGAIN only when the message needs
 * an SRQ receive and there is none).
 */
int srdma_resp_rq_begin_msg(struct srdma_target *t, struct srdma_rq_hold *h,
			    const struct iovec *msg, uint32_t n, uint64_t len,
			    bool rndv_offload);
/* Unlock; the WQE stays at the head. */
void srdma_resp_rq_abort(struct srdma_rq_hold *h);
/* Consume the head WQE (h->w stays as a private copy), post the SRQ limit
 * event if crossed, unlock. The CQE comes later (srdma_resp_recv_cqe). */
void srdma_resp_rq_consume(struct srdma_rq_hold *h);
/* Consume the head WQE and post its CQE @c (wr_id and qp_num filled in
 * here) while still holding the queue, then unlock: CQEs leave in WQE
 * order. */
void srdma_resp_rq_complete(struct srdma_rq_hold *h, struct srdma_shm_cqe *c,
			    bool solicited);
/* Post the CQE @c for @w, consumed earlier (wr_id and qp_num filled in
 * here), and count the receive. */
void srdma_resp_recv_cqe(struct srdma_target *t, const struct srdma_rwqe *w,
			 struct srdma_shm_cqe *c, bool solicited);

/**
 * srdma_resp_scatter() - copy @len bytes from @src (@n iovecs, caller's
 * memory) into @w's buffers, starting @off bytes into them. Every buffer
 * touched passes the key check (its lkey, PD w->pd, LOCAL_WRITE).
 * Return: 0; -EMSGSIZE (off + len > capacity: LOC_LEN_ERR); -EACCES (a
 * buffer failed the key check: LOC_PROT_ERR at the responder); -EFAULT
 * (the copy failed); -ESRCH (the target's owner is gone).
 */
int srdma_resp_scatter(struct srdma_target *t, const struct srdma_rwqe *w,
		       uint64_t off, const struct iovec *src, uint32_t n,
		       uint64_t len);

/* Remote memory named by an rkey, marked in flight. */
struct srdma_rmem {
	struct srdma_key_ref ref;
	int rec;			/* access record, or -1 */
	struct srdma_peer *src;		/* whose memory it is: the target's
					 * owner, or the context it imports
					 * (then with a reference) */
	bool src_ref;			/* that reference is held */
};

/**
 * srdma_resp_rkey() - the one key check for an rkey: [va, va + len) with
 * @access (one IBV_ACCESS_REMOTE_* bit) in the target QP's PD, including
 * the rule that a type 2 window is used only through the QP it was bound
 * through; explains a failure under SRDMA_LOG. The QP's own access flags
 * are not checked here (srdma_resp_qp_allows).
 * Return: SRDMA_KCHK_OK with @m marked in flight (release with
 * srdma_resp_rkey_put), or the failing check.
 */
int srdma_resp_rkey(struct srdma_target *t, uint32_t rkey, uint32_t access,
		    uint64_t va, uint64_t len, struct srdma_rmem *m);
void srdma_resp_rkey_put(struct srdma_target *t, struct srdma_rmem *m);

/* True if the target QP's access flags allow @access (REMOTE_*). */
bool srdma_resp_qp_allows(const struct srdma_target *t, uint32_t access);

/**
 * srdma_resp_copy() - move @len bytes between @iov (caller's memory) and
 * the target memory of @m, @off bytes after the checked start: into the
 * target when @to_target (WRITE), out of it otherwise (READ).
 * Return: 0, -EFAULT, -ESRCH.
 */
int srdma_resp_copy(struct srdma_target *t, const struct srdma_rmem *m,
		    uint64_t off, const struct iovec *iov, uint32_t n,
		    uint64_t len, bool to_target);

/**
 * srdma_resp_atomic() - execute CMP_SWAP (@cmp_swap) or FETCH_ADD on the
 * 8 aligned bytes of @m under the host-wide atomic lock; the value found
 * goes to @orig. Return: 0, -EFAULT, -ESRCH, -EIO (no lock).
 */
int srdma_resp_atomic(struct srdma_target *t, const struct srdma_rmem *m,
		      bool cmp_swap, uint64_t cmp_add, uint64_t swap,
		      uint64_t *orig);

/**
 * srdma_resp_atomic_write() - ATOMIC_WRITE: store @val into the 8 aligned
 * bytes of @m under the host-wide atomic lock (the one srdma_resp_atomic
 * takes). Return: 0, -EFAULT, -ESRCH, -EIO (no lock).
 */
int srdma_resp_atomic_write(struct srdma_target *t, const struct srdma_rmem *m,
			    uint64_t val);

/* SEND_WITH_INV: invalidate @rkey in the target QP's PD. 0 or -EINVAL. */
int srdma_resp_invalidate(struct srdma_target *t, uint32_t rkey);

/* Move the target QP to ERR (a responder error), flush its receive queue
 * and post @event (0: none). */
void srdma_resp_qp_error(struct srdma_target *t, uint32_t event);

#endif
