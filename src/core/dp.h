/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * dp.h - the data-path objects: completion channels, CQs, QPs, SRQs, AHs,
 * the peer cache, and what core asks of the engine (srdma_engine_ops).
 *
 * Every object that initiators in other processes must reach has a
 * private half (this file: owner bookkeeping, op tables, locks of this
 * process) and a shared half (an entry of the context's control segment,
 * shm_layout.h). The owner builds both, then publishes the shared entry
 * (live = LIVE, release); destroy unpublishes, takes and drops the
 * entry's shared lock (so an initiator inside a section has left it),
 * then frees. Initiators deliver SENDs into a peer's receive queue and
 * post the peer's completions themselves (architecture principle 1).
 *
 * Lock order: qp->sq_lock (the engine runs under it), ctx->lock,
 * cq->poll_lock, then shared locks (RQ/SRQ rlock before CQ plock, async
 * ring last), then the host atomic lock.
 * Design: docs/design/data-path.md.
 */
#ifndef SRDMA_CORE_DP_H
#define SRDMA_CORE_DP_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

/* ---- limits reported by ibv_query_device ------------------------------- */
/*
 * At least what a ConnectX (mlx5) reports wherever software has no reason
 * to be smaller; every value below a ConnectX's, and why, is listed in
 * docs/design/limits.md. Rings live in the context's sparse ring arena
 * (SRDMA_SEG_ARENA_SIZE): a CQ of SRDMA_MAX_CQE entries (256 MiB of 64-byte
 * CQEs) reserves address space, and tmpfs pages only as its CQEs are
 * written.
 */
#define SRDMA_MAX_CQE 4194303u		/* mlx5: 4,194,303 (2^22 - 1) */
#define SRDMA_MAX_QP_WR 32768u		/* mlx5: 32,768 */
#define SRDMA_MAX_SGE 32u		/* mlx5: 30 */
#define SRDMA_MAX_INLINE 1024u		/* mlx5: ~900 with 1 SGE */
#define SRDMA_MAX_SRQ_WR 32768u		/* mlx5: 32,767 */
#define SRDMA_MAX_RD_ATOM 16u		/* mlx5: 16 */
#define SRDMA_MAX_MSG (1u << 31)	/* mlx5: 1 GiB */
/* Inline data granted to a QP that asks for less: as rxe, room for its
 * send SGEs (16 bytes each), so an application that asks for 0 bytes and
 * sends one SGE's worth inline works; reported back in cap. */
#define SRDMA_INLINE_PER_SGE 16u

/* ---- peers: other contexts (or ourselves) as targets ------------------- */
struct srdma_peer {
	struct srdma_seg_hdr *seg;	/* mapped segment (ours: not owned) */
	size_t seg_size;
	pid_t pid;			/* target owner */
	uint64_t start;			/* its start time */
	int pidfd;			/* immutable: the owner's pidfd, or -1
					 * (check /proc instead) */
	uint32_t lid;
	int reg_index;
	bool self;			/* our own context */
	_Atomic bool dead;		/* set once its owner is known gone */
	_Atomic uint64_t next_check_ns;	/* rate of srdma_peer_gone()'s
					 * kernel check */
	int *life;			/* immutable: the lock word of the
					 * owner's life marker, or NULL */
	uint32_t life_tid;		/* immutable: its holder's tid */
	struct srdma_key_view kv;	/* its key table */
	pthread_mutex_t fd_lock;	/* wake-up FIFOs opened so far */
	int async_fd;			/* fd_lock; -1 until opened */
	int nchan;			/* fd_lock */
	int *chan_fd;			/* fd_lock; by channel number */
	unsigned int ref;		/* ctx->lock: references handed out by
					 * srdma_peer_get() */
	bool cached;			/* ctx->lock: in ctx->peers[lid] */
	struct srdma_peer *idle_prev;	/* ctx->lock: idle LRU (cached, */
	struct srdma_peer *idle_next;	/* ref 0), oldest first */
	struct srdma_peer *next_dead;	/* ctx->lock: retired (uncached)
					 * but still referenced */
};

/**
 * srdma_peer_get() - the target context with LID @lid, mapped, with a
 * reference for the caller.
 * Context: any thread; takes ctx->lock (the engine caches the result in
 * qp->peer, so this runs once per connection, not per WR).
 * Return: the peer, or NULL if no live context has that LID. A cached
 * peer whose owner died is retired first; the caller then sees NULL (or
 * the new owner of a reused LID). Release with srdma_peer_put().
 */
struct srdma_peer *srdma_peer_get(struct srdma_context *ctx, uint32_t lid);
/**
 * srdma_peer_put() - drop a reference from srdma_peer_get(); the last one
 * of a peer whose owner is gone unmaps it (NULL: no-op).
 * Context: any thread; takes ctx->lock (so not with it held).
 */
void srdma_peer_put(struct srdma_context *ctx, struct srdma_peer *p);
/* True if the peer's owner still holds its registry entry and is not
 * known dead. Lock-free, no system call: for every WR. */
bool srdma_peer_alive(struct srdma_context *ctx, struct srdma_peer *p);
/**
 * srdma_peer_gone() - true if the peer's owner is gone: registry entry
 * released or reused, or the process has exited (zombie included) or
 * exec'd, as its life marker says (one load), or for an owner without one
 * its pidfd (asked at most once a millisecond per peer).
 * Marks the peer dead, so srdma_peer_alive() answers false from then on.
 * Context: any thread, lock-free. Called for every WR before its target
 * is addressed by pid (a reaped owner's pid may be reused) and where a WR
 * waits on the peer (RNR): a clock read, a system call once a millisecond.
 */
bool srdma_peer_gone(struct srdma_context *ctx, struct srdma_peer *p);
/**
 * srdma_peer_wake_chan() / srdma_peer_wake_async() - write one byte into
 * the peer's completion channel @chan / async FIFO. Never blocks.
 */
void srdma_peer_wake_chan(struct srdma_context *ctx, struct srdma_peer *p,
			  uint32_t chan);
void srdma_peer_wake_async(struct srdma_context *ctx, struct srdma_peer *p);
/* Unmap every peer; at context close (no QP left). */
void srdma_peer_fini(struct srdma_context *ctx);
/* Name of a FIFO in the state directory (relative to ctx->host.dirfd):
 * kind "chan" (with @num) or "async" (num ignored). */
void srdma_fifo_path(const struct srdma_context *ctx, char *buf, size_t len,
		     uint32_t lid, pid_t pid, const char *kind, uint32_t num);

/**
 * srdma_host_atomic_lock() - the host-wide lock serialising RDMA atomics
 * on the 8-byte word at @addr of process @pid.
 * Return: the lock (already held), or NULL on error. Release with
 * srdma_shm_unlock().
 */
pthread_mutex_t *srdma_host_atomic_lock(struct srdma_context *ctx, pid_t pid,
					uint64_t addr);

/**
 * srdma_fifo_open() - create and open (O_RDWR) our wake-up FIFO of @kind
 * ("chan" with @num, or "async"); its path goes to @path.
 * Return: the fd, or -errno.
 */
int srdma_fifo_open(struct srdma_context *ctx, const char *kind,
		    uint32_t num, char *path, size_t len);

/* ---- completion channel ------------------------------------------------ */
struct srdma_chan {
	struct ibv_comp_channel ibch;	/* fd: FIFO read end, O_RDWR */
	struct srdma_context *ctx;	/* immutable */
	uint32_t num;			/* immutable: FIFO name suffix */
	_Atomic uint32_t ncq;		/* CQs attached */
	char path[320];			/* immutable: FIFO name in the
					 * state directory (host.dirfd) */
};

/* ---- CQ ------------------------------------------------------------------ */
struct srdma_qp;
struct srdma_net_qp;
struct srdma_shm_tm;

struct srdma_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	} ib;				/* public; must stay first */
	struct srdma_context *ctx;	/* immutable */
	struct srdma_chan *ch;		/* immutable; NULL without channel */
	uint32_t slot;			/* immutable */
	struct srdma_shm_cq *sh;	/* immutable */
	pthread_mutex_t poll_lock;	/* consumers of this process */
	struct srdma_shm_cqe *ring;	/* poll_lock (resize swaps it) */
	uint64_t ring_bytes;		/* poll_lock */
	uint64_t wc_flags;		/* immutable: cq_ex wc_flags */
	bool is_ex;			/* immutable */
	struct srdma_shm_cqe cur;	/* poll_lock: cq_ex current entry */
	uint32_t n_qp;			/* ctx->lock: QPs using it */
	_Atomic uint32_t n_pending_qp;	/* QPs with deferred sends */
	struct srdma_pd *pd;		/* immutable: its parent domain
					 * (IBV_CQ_INIT_ATTR_MASK_PD) or NULL */
};

/**
 * srdma_cqe_post() - produce one completion into CQ @slot of @seg.
 * @p: the peer owning @seg (for the wake-up), or NULL for ourselves
 * @solicited: the completion is for a solicited message
 * Context: any process; takes the CQ's plock.
 * Return: 0, or -ENOSPC when the CQ overflowed (the owner gets
 * IBV_EVENT_CQ_ERR), -ENOENT when the CQ is gone.
 */
int srdma_cqe_post(struct srdma_context *ctx, struct srdma_peer *p,
		   uint32_t slot, const struct srdma_shm_cqe *cqe,
		   bool solicited);

/**
 * srdma_cq_defer_wakes() - hold back, in the calling thread, the
 * completion events srdma_cqe_post() raises (@on true), or deliver those
 * held and stop holding (@on false). The CQEs themselves are published at
 * once and the CQs' arming consumed then; only the channel wake-up (and
 * the flag ibv_get_cq_event reads) waits. At most 8 are held; more are
 * delivered at once. The net responder holds the event of a receive
 * completion until the message's ACK has left, as on a NIC.
 * Context: any thread; per-thread state.
 */
void srdma_cq_defer_wakes(bool on);
int srdma_cq_poll(struct srdma_cq *cq, int n, struct ibv_wc *wc);
/* Drop every queued CQE of QP @qpn (modify to RESET, as HCAs do). */
void srdma_cq_clean(struct srdma_cq *cq, uint32_t qpn);
/* Read one CQE (cq_ex). Return: 0, -ENOENT when empty. poll_lock held. */
int srdma_cq_pop(struct srdma_cq *cq, struct srdma_shm_cqe *out);
void srdma_cqe_to_wc(const struct srdma_shm_cqe *e, struct ibv_wc *wc);

/* Progress of a QP's CQs: [0] its send CQ, [1] its receive CQ. */
struct srdma_cq_marks {
	uint64_t prod[2];	/* CQEs produced so far (a position) */
	uint64_t cons[2];	/* CQEs polled so far (a position) */
	uint32_t sq_busy;	/* net send WRs whose CQE is not in the CQ
				 * yet (queued or not yet acknowledged) */
};

/**
 * srdma_qp_cq_marks() - where the CQs of QP @qpn of @ctx stand. The CM
 * compares two readings to learn whether the application has polled the
 * completions present at the first (cma_event.c, DISCONNECTED). A CQ
 * the QP lacks reads 0/0. Positions only grow, but cleaning a destroyed
 * QP's CQEs out lowers prod. Also how many of its send WRs on the net
 * transport have no CQE yet (queued, or not acknowledged by the peer).
 * Return: 0, or -ENOENT when @ctx has no such QP (destroyed, or another
 * context's). Context: any thread; pins the QP under ctx->lock, then
 * takes its sq_lock and each CQ's plock without it.
 */
int srdma_qp_cq_marks(struct srdma_context *ctx, uint32_t qpn,
		      struct srdma_cq_marks *m);

/**
 * srdma_aev_post() - queue async event @type of object (@obj, @slot, @gen)
 * in the async queue of @p's context (NULL: our own) and wake its owner's
 * async fd. Never drops an event of a distinct object; the same event of
 * the same object still unread is merged with it. Events of an older
 * generation than one pending in the slot are dropped (that object is
 * gone). Context: any thread; takes the queue's shared lock.
 */
void srdma_aev_post(struct srdma_context *ctx, struct srdma_peer *p,
		    uint32_t type, uint32_t obj, uint32_t slot, uint32_t gen);

/* ---- SRQ ------------------------------------------------------------------ */
struct srdma_srq {
	struct ibv_srq ibsrq;		/* public */
	struct srdma_context *ctx;	/* immutable */
	struct srdma_pd *pd;		/* immutable */
	uint32_t slot;			/* immutable */
	struct srdma_shm_srq *sh;	/* immutable */
	uint32_t max_wr, max_sge;	/* immutable: as granted */
	uint32_t n_qp;			/* ctx->lock */
	uint32_t srq_limit;		/* ctx->lock: last armed limit */
	/* XRC SRQ (core/xrc.h), else NULL: */
	struct srdma_xrcd *xrcd;	/* immutable */
	struct srdma_cq *xrc_cq;	/* immutable: where its CQEs go */
	/* IBV_SRQT_TM (core/srq_tm.c): the tag list in the ring arena and
	 * the CQ of its completions; immutable after create, NULL/0 for
	 * other SRQs. */
	struct srdma_shm_tm *tm;
	uint64_t tm_off, tm_bytes;
	struct srdma_cq *tm_cq;
};

/* ---- AH -------------------------------------------------------------------- */
struct srdma_ah {
	struct ibv_ah ibah;		/* public */
	struct srdma_pd *pd;		/* immutable */
	struct ibv_ah_attr attr;	/* immutable */
	uint32_t dlid;			/* immutable: resolved LID */
};

/* ---- QP -------------------------------------------------------------------- */

/* A send WQE as the engine executes it (deferred ones are heap copies). */
struct srdma_swqe {
	struct srdma_swqe *next;
	uint64_t wr_id;
	uint32_t opcode;		/* enum ibv_wr_opcode */
	uint32_t send_flags;
	uint32_t imm;			/* imm_data (network order) / inv rkey */
	uint32_t num_sge;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t ud_dlid, ud_qpn, ud_qkey; /* UD */
	struct ibv_ah_attr ud_ah;	/* UD: for the GRH */
	uint64_t compare_add, swap;
	struct ibv_mw *mw;		/* BIND_MW */
	uint32_t mw_new_rkey;
	struct ibv_mw_bind_info bind;
	uint64_t first_try_ns;		/* RNR bookkeeping */
	uint64_t lost_ns;		/* target unreachable since (RC) */
	uint32_t rnr_tries;
	uint32_t xrc_srqn;		/* XRC_SEND: the remote SRQ number */
	bool is_inline;
	struct ibv_sge *sge;		/* points into sge_buf or the WR */
	struct ibv_sge sge_buf[];	/* deferred copies (+ inline bytes) */
};

struct srdma_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	} ib;				/* public; must stay first */
	uint32_t comp_mask;		/* as rdma-core's verbs_qp */
	struct srdma_context *ctx;	/* immutable */
	struct srdma_pd *pd;		/* immutable */
	struct srdma_cq *send_cq;	/* immutable */
	struct srdma_cq *recv_cq;	/* immutable */
	struct srdma_srq *srq;		/* immutable */
	uint32_t slot;			/* immutable: QPN low bits */
	struct srdma_shm_qp *sh;	/* immutable */
	enum ibv_qp_type type;		/* immutable */
	bool sq_sig_all;		/* immutable */
	bool is_ex;			/* immutable: created with send_ops */
	struct ibv_qp_cap cap;		/* immutable: as granted */
	/* attributes, for query and the engine: sq_lock */
	struct ibv_qp_attr attr;
	struct srdma_net_qp *net;	/* immutable: the net half (Ethernet
					 * link layer), or NULL */
	struct srdma_peer *peer;	/* sq_lock: a reference to the RC/UC
					 * destination, UD: the last one */
	/* send queue: sq_lock */
	pthread_mutex_t sq_lock;
	struct srdma_swqe *pend_head, **pend_tail;
	uint32_t n_pend;
	/* qp_ex WR builder: sq_lock held between wr_start and complete */
	struct ibv_send_wr *bld;
	struct ibv_sge *bld_sge;
	uint32_t bld_n, bld_cap;
	int bld_err;
	_Atomic uint32_t busy;		/* pinned by a progress sweep */
	struct srdma_qp *prog_next;	/* ctx->lock: ctx->prog_list */
	/* XRC (core/xrc.h, docs/design/xrc.md) */
	struct srdma_xrcd *xrcd;	/* immutable: XRC_RECV's domain */
	/* A handle from ibv_open_qp: @open_of is the TGT QP it names when
	 * that QP is ours (@sh is then its entry), NULL when another
	 * context owns it (@sh is in @open_peer's segment). Immutable. */
	bool opened;
	struct srdma_qp *open_of;
	struct srdma_peer *open_peer;
	uint32_t n_open;		/* ctx->lock: live handles opened on us */
	bool zombie;			/* ctx->lock: destroyed by its creator
					 * while opened: freed with the last
					 * opened handle */
	struct srdma_raw_qp *raw;	/* raw packet QP's half (core/raw.h),
					 * set before the QP is handed out;
					 * else NULL */
	_Atomic uint32_t n_mcast;	/* atomic: multicast attachments
					 * (ibv_attach_mcast); destroy refuses
					 * while not 0 */
	bool block_self_mc;		/* immutable: created with
					 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB */
};

static inline struct srdma_qp *to_sqp(struct ibv_qp *qp)
{
	return (struct srdma_qp *)qp;
}

static inline struct srdma_cq *to_scq(struct ibv_cq *cq)
{
	return (struct srdma_cq *)cq;
}

/* ---- object entry points (core) ----------------------------------------- */
int srdma_chan_create(struct srdma_context *ctx, struct srdma_chan **out);
int srdma_chan_destroy(struct srdma_chan *ch);
/* Block (unless the fd is non-blocking) for the next fired CQ.
 * Return: 0, -EAGAIN (non-blocking, nothing fired) or -EINTR (a signal
 * interrupted the wait, as rdma-core's ibv_get_cq_event). */
int srdma_chan_get_event(struct srdma_chan *ch, struct srdma_cq **out);

struct srdma_cq_args {
	uint32_t cqe;
	void *cq_context;
	struct ibv_comp_channel *channel;
	uint32_t comp_vector;
	uint64_t wc_flags;
	bool is_ex;
	struct ibv_pd *parent_domain;	/* IBV_CQ_INIT_ATTR_MASK_PD, or NULL */
};
int srdma_cq_create(struct srdma_context *ctx, const struct srdma_cq_args *a,
		    struct srdma_cq **out);
int srdma_cq_destroy(struct srdma_cq *cq);
int srdma_cq_resize(struct srdma_cq *cq, uint32_t cqe);
int srdma_cq_notify(struct srdma_cq *cq, bool solicited_only);

int srdma_srq_create(struct ibv_pd *ibpd, struct ibv_srq_init_attr *a,
		     struct srdma_srq **out);
int srdma_srq_destroy(struct srdma_srq *srq);
int srdma_srq_modify(struct srdma_srq *srq, struct ibv_srq_attr *a, int mask);
int srdma_srq_query(struct srdma_srq *srq, struct ibv_srq_attr *a);
int srdma_srq_post_recv(struct srdma_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad);

int srdma_qp_create(struct srdma_context *ctx,
		    struct ibv_qp_init_attr_ex *a, struct srdma_qp **out);
int srdma_qp_destroy(struct srdma_qp *qp);

/**
 * srdma_qp_attach_mcast() - ibv_attach_mcast: attach UD QP @qp to the
 * multicast group @gid (LID @lid, checked on an InfiniBand port only).
 * Context: any thread (core/mcast.c).
 * Return: 0 (also when attached already), -EINVAL (not UD, not a
 * multicast GID or LID), -ENOMEM (a multicast limit), or the net
 * endpoint's -errno (joining the IP group on an Ethernet port).
 */
int srdma_qp_attach_mcast(struct srdma_qp *qp, const union ibv_gid *gid,
			  uint16_t lid);
/**
 * srdma_qp_detach_mcast() - ibv_detach_mcast: undo an attach of the same
 * (@gid, @lid). Return: 0, or -EINVAL (bad arguments, or not attached).
 */
int srdma_qp_detach_mcast(struct srdma_qp *qp, const union ibv_gid *gid,
			  uint16_t lid);
int srdma_qp_modify(struct srdma_qp *qp, struct ibv_qp_attr *attr, int mask);
int srdma_qp_query(struct srdma_qp *qp, struct ibv_qp_attr *attr, int mask,
		   struct ibv_qp_init_attr *init);
int srdma_qp_post_recv(struct srdma_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad);
/**
 * srdma_qp_set_error() - move the QP to ERR (from the owner's side) and
 * flush its queues. Requires nothing held.
 */
void srdma_qp_set_error(struct srdma_qp *qp);
/* Flush the receive queue @rq of QP entry @sh into its CQ (any process). */
void srdma_rq_flush(struct srdma_context *ctx, struct srdma_peer *p,
		    struct srdma_seg_hdr *seg, struct srdma_shm_qp *sh,
		    uint32_t qpn);

int srdma_ah_create(struct ibv_pd *ibpd, struct ibv_ah_attr *a,
		    struct srdma_ah **out);
int srdma_ah_destroy(struct srdma_ah *ah);

/* Private lookups for async events and poll-side progress. */
struct srdma_qp *srdma_qp_by_slot(struct srdma_context *ctx, uint32_t slot);

/* Receive queues, shared by QPs and SRQs (qp.c). */
int srdma_rq_init(struct srdma_context *ctx, struct srdma_shm_rq *rq,
		  uint8_t *minit, uint32_t max_wr, uint32_t max_sge);
void srdma_rq_fini(struct srdma_context *ctx, struct srdma_shm_rq *rq);
int srdma_rq_push(struct srdma_shm_rq *rq, struct srdma_seg_hdr *seg,
		  uint32_t max_wr, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad);
/* The LID an address vector names (dlid, or the LID in the GID). */
uint32_t srdma_av_lid(const struct ibv_ah_attr *ah);

/* Windows (mw.c), executed from a QP's send queue. 0 or -errno. */
int srdma_mw_local_invalidate(struct srdma_context *ctx, struct srdma_pd *pd,
			      uint32_t key);
int srdma_mw_bind_exec(struct srdma_context *ctx, struct srdma_pd *qpd,
		       uint32_t qpn, struct ibv_mw *ibmw, uint32_t new_rkey,
		       const struct ibv_mw_bind_info *b);

/* ---- arena -------------------------------------------------------------- */
/* Allocate @len bytes (page-rounded, zeroed) of the ring arena; ctx->lock. */
int srdma_arena_alloc(struct srdma_context *ctx, uint64_t len, uint64_t *off);
void srdma_arena_free(struct srdma_context *ctx, uint64_t off, uint64_t len);

/* ---- what core asks of the engine --------------------------------------- */
/*
 * Layers call downward only (verbs -> core -> engine -> transport): core
 * never names an engine function. Where core changes a QP or a context
 * under its own locks and the engine must take part (its deferred sends,
 * its progress thread), it calls through this table, which the engine
 * fills and installs (srdma_engine_init, called by the verbs front end
 * before it opens a context). Without it (core used alone, as by unit
 * tests) no send was ever executed: there is nothing to flush, drop or
 * stop.
 */
struct srdma_engine_ops {
	/* Complete @qp's pending sends (deferred, or in its net requester)
	 * with WR_FLUSH_ERR (QP now in ERR).
	 * Context: qp->sq_lock held. */
	void (*sq_flush_locked)(struct srdma_qp *qp);
	/* Drop @qp's deferred sends without completions (RESET, destroy).
	 * Context: qp->sq_lock held. */
	void (*sq_drop_locked)(struct srdma_qp *qp);
	/* Take @qp off what the engine's progress sweeps pin: after this,
	 * only a sweep that pinned it before (qp->busy) can still touch it.
	 * Context: ctx->lock held. */
	void (*qp_forget_locked)(struct srdma_qp *qp);
	/* Context close: stop the engine's threads of @ctx. Nothing held. */
	void (*ctx_stop)(struct srdma_context *ctx);
};

/**
 * srdma_engine_ops_set() - install the engine's table (every call installs
 * the same one). Context: any thread, before the contexts that need it are
 * opened.
 */
void srdma_engine_ops_set(const struct srdma_engine_ops *ops);
/* The installed table, or NULL. Lock-free. */
const struct srdma_engine_ops *srdma_engine_ops_get(void);

#endif
