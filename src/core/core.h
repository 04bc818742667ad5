/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * core.h - softrdma's object model: device, context, PD, MR, MW and the
 * relaxed-MR pool. No I/O and no public symbols live below this line; the
 * front ends in src/verbs convert our 0 / -errno convention exactly once.
 *
 * Lifetimes (docs/design/lifetimes.md): objects are built completely, then
 * published (handle table + key table); destroy unpublishes, drains
 * in-flight users, then frees. Lock order: ctx->lock, then the handle
 * table's lock, then the registry flock.
 */
#ifndef SRDMA_CORE_CORE_H
#define SRDMA_CORE_CORE_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/key_table.h"
#include "util/compiler.h"
#include "transport/host/host.h"
#include "transport/net/gid.h"

/* ---- device limits (reported by ibv_query_device) --------------------- */
#define SRDMA_KEY_SLOTS SRDMA_SEG_KEY_SLOTS /* MRs + MWs + relaxed pool */
#define SRDMA_MAX_MR (1u << 17)
#define SRDMA_MAX_MW (1u << 16)
#define SRDMA_MAX_FMR 4096u		/* relaxed-MR pool per context */
#define SRDMA_MAX_MAP_PER_FMR 1u
#define SRDMA_MAX_PD (1u << 24)		/* mlx5: 2^24; a PD is private memory */
#define SRDMA_VENDOR_ID 0xffffffu	/* software device, as rxe */
#define SRDMA_VENDOR_PART_ID 0x5352u	/* "SR": not known to perftest */
#define SRDMA_HW_VER 1u
#define SRDMA_FW_VER "1.0.0"

/* ---- handle table: which pointers are live objects of ours ------------ */
enum srdma_obj_type {
	SRDMA_OBJ_CTX = 1,
	SRDMA_OBJ_PD,
	SRDMA_OBJ_MR,
	SRDMA_OBJ_MW,
	SRDMA_OBJ_CHAN,
	SRDMA_OBJ_CQ,
	SRDMA_OBJ_QP,
	SRDMA_OBJ_SRQ,
	SRDMA_OBJ_TD,	/* process-local values: the order is free */
	SRDMA_OBJ_AH,
	SRDMA_OBJ_DM,
	SRDMA_OBJ_XRCD,
	SRDMA_OBJ_WQ,		/* raw packet (core/raw.h) */
	SRDMA_OBJ_RWQ_TBL,
	SRDMA_OBJ_FLOW,
	SRDMA_OBJ_IMR,		/* an MR imported from another process */
};

/**
 * srdma_handle_add() - record @p as a live object of @type.
 * Return: 0 or -ENOMEM. Context: any thread.
 */
int srdma_handle_add(const void *p, enum srdma_obj_type type);
/* True if @p is a live object of @type. Never dereferences @p. */
bool srdma_handle_check(const void *p, enum srdma_obj_type type);
/* Forget @p. Returns false if it was not recorded as @type. */
bool srdma_handle_del(const void *p, enum srdma_obj_type type);

/* ---- fork -------------------------------------------------------------- */

/*
 * The fork generation: 0 in the process that loaded us, bumped by an
 * atfork child handler in every fork() child. Objects and contexts record
 * the generation they were created in; one that is older was inherited
 * from a parent and is dead in this process (docs/design/lifetimes.md,
 * "fork"). Atomic, read relaxed: it only changes while the child is
 * single-threaded.
 */
extern _Atomic uint32_t srdma_fork_gen;

/**
 * srdma_handle_forget_inherited() - if @p is an object of @type inherited
 * across fork(), forget it (this process's handle only) and return true.
 * Nothing else is touched: the object's memory is the child's copy of the
 * parent's, and everything it refers to belongs to the parent.
 * Context: destroy entry points, before any lock of the object.
 */
bool srdma_handle_forget_inherited(const void *p, enum srdma_obj_type type);

/**
 * srdma_handle_check_inherited() - is @p an object of @type inherited
 * across fork() (dead in this process, still recorded)? Never
 * dereferences @p. Context: any thread.
 */
bool srdma_handle_check_inherited(const void *p, enum srdma_obj_type type);

/**
 * srdma_handle_find() - the first live object of @type created in this
 * process for which @match(@p, @arg) is true, or NULL. A scan of the whole
 * table (object import only, never the data path). @match runs under the
 * table lock, so the object cannot be unpublished, nor therefore freed,
 * meanwhile; it must not call back into the handle table.
 */
void *srdma_handle_find(enum srdma_obj_type type,
			bool (*match)(const void *p, void *arg), void *arg);

/* ---- device ------------------------------------------------------------ */

/*
 * Laid out as rdma-core's struct verbs_device: the ibv_device, then a
 * pointer that mlx5dv/efadv compare against their own ops (ours is NULL).
 */
struct srdma_device {
	struct ibv_device ibdev;	/* immutable after init */
	const void *verbs_ops;		/* always NULL: not an mlx5/efa device */
	uint64_t node_guid;		/* network order; immutable */
};

/**
 * srdma_device_get() - the software device, built on first use from
 * SRDMA_DEVICE (default srdma0). Return: the device, never NULL.
 */
struct srdma_device *srdma_device_get(void);

/* ---- context ------------------------------------------------------------ */
struct srdma_pd;
struct srdma_mr;
struct srdma_dm;
struct srdma_net_ctx;
struct srdma_import;

struct srdma_context {
	struct verbs_context vctx;	/* handed out as &vctx.context */
	struct srdma_device *dev;	/* immutable */
	pthread_mutex_t lock;		/* the context lock (see core.h) */
	struct srdma_host_ctx host;	/* immutable after open */
	struct srdma_gid_table gids;	/* immutable after open: port 1's GID
					 * table (transport/net/gid.c) */
	uint32_t fork_gen;		/* immutable: srdma_fork_gen at open */
	struct srdma_key_table kt;	/* lock */
	uint32_t next_pd_handle;	/* lock */
	uint32_t n_pd;			/* lock */
	uint32_t n_mr;			/* lock: live MRs (not relaxed) */
	uint32_t n_mw;			/* lock */
	uint32_t n_relaxed;		/* lock: relaxed MRs incl. pending */
	bool odp_enabled;		/* immutable: SRDMA_ODP != 0 */
	bool mem_check;			/* immutable: SRDMA_MR_CHECK != 0 */
	bool dmabuf_memfd;		/* immutable: SRDMA_DMABUF_MEMFD=1 */
	bool relaxed_immediate;		/* immutable: SRDMA_RELAXED_IMMEDIATE */
	int async_fd;			/* FIFO read end behind async_fd: one
					 * byte per event in the segment's
					 * async ring (srdma_aev_post) */
	_Atomic bool fatal_sent;	/* IBV_EVENT_DEVICE_FATAL reported
					 * (our shared state was truncated) */
	char async_path[320];		/* immutable: FIFO name under
					 * host.dirfd */
	/* data path (dp.h) */
	struct srdma_net_ctx *_Atomic net; /* net endpoint, set once on first
					 * use (transport/net), else NULL */
	struct srdma_peer *_Atomic peers[SRDMA_REG_ENTRIES + 1]; /* by LID;
					 * lock (peer.c) */
	struct srdma_peer *dead_peers;	/* lock: retired, still referenced */
	struct srdma_peer *peer_idle_head; /* lock: unreferenced live peers, */
	struct srdma_peer *peer_idle_tail; /* LRU, oldest first */
	uint32_t n_peer_idle;		/* lock */
	struct srdma_cq *cq_by_slot[SRDMA_SEG_CQ_SLOTS];	/* lock */
	struct srdma_qp *qp_by_slot[SRDMA_SEG_QP_SLOTS];	/* lock */
	struct srdma_srq *srq_by_slot[SRDMA_SEG_SRQ_SLOTS];	/* lock */
	uint8_t cq_minit[SRDMA_SEG_CQ_SLOTS];	/* lock: shared mutex built */
	uint8_t qp_minit[SRDMA_SEG_QP_SLOTS];	/* lock */
	uint8_t srq_minit[SRDMA_SEG_SRQ_SLOTS];	/* lock */
	uint32_t next_cq, next_qp, next_srq;	/* lock: allocation hints */
	uint32_t next_chan;		/* lock */
	uint32_t n_cq, n_qp, n_srq, n_chan; /* lock */
	struct { uint64_t off, len; } *afree;	/* lock: arena free list,
					 * sorted by offset */
	uint32_t n_afree, cap_afree;	/* lock */
	struct srdma_atomic_file *atomics; /* lock to set; then immutable */
	struct srdma_mcast_file *mcast;	/* lock to set; then immutable:
					 * the host's multicast groups
					 * (transport/host/mcast.c) */
	/* deferred sends (RNR): progress thread, started on first need */
	pthread_t prog_thread;		/* lock */
	bool prog_up, prog_stop;	/* lock */
	pthread_cond_t prog_cond;	/* with lock */
	uint32_t n_prog_qp;		/* lock: QPs with deferred sends */
	struct srdma_qp *prog_list;	/* lock: those QPs */
	/* relaxed MR deferred invalidation */
	pthread_t relaxed_thread;	/* lock: started on first pending */
	bool relaxed_thread_up;		/* lock */
	bool relaxed_stop;		/* lock */
	pthread_cond_t relaxed_cond;	/* with lock */
	uint32_t relaxed_flushing;	/* lock: flushes now draining; the last
					 * to end signals relaxed_cond */
	struct srdma_mr *rpending;	/* lock: pending relaxed MRs, oldest
					 * first, all PDs */
	struct srdma_mr **rpending_tail; /* lock */
	uint32_t n_rpending;		/* lock */
	/* device memory (dm.c) */
	_Atomic uint64_t dm_used;	/* atomic: bytes of live DMs */
	_Atomic uint32_t n_dm;		/* atomic: live DMs */
	/* import (core/import.h) */
	struct srdma_import *import;	/* immutable once handed out: the
					 * other process's context this one
					 * imports, or NULL */
};

static inline struct srdma_context *to_sctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct srdma_context, vctx.context);
}

/*
 * True when @ctx was opened by a parent of this process: it and everything
 * created on it are dead here. The data-path guard (one load and compare,
 * no system call); the control path relies on the handle table instead.
 */
static inline bool srdma_ctx_inherited(const struct srdma_context *ctx)
{
	return unlikely(ctx->fork_gen !=
			atomic_load_explicit(&srdma_fork_gen,
					     memory_order_relaxed));
}

/**
 * srdma_context_open() - open a context on @dev: claim a LID, create the
 * control segment and key table, fill the verbs_context.
 * Return: 0 with *out set, or -errno.
 */
int srdma_context_open(struct srdma_device *dev, struct srdma_context **out);

/**
 * srdma_context_close() - close a context. Its objects must be gone.
 * Return: 0 or -EBUSY while PDs are left.
 */
int srdma_context_close(struct srdma_context *ctx);

/**
 * srdma_context_drop_inherited() - ibv_close_device of a context inherited
 * across fork(), after srdma_handle_forget_inherited(): close this
 * process's copies of its descriptors. Touches no shared state and takes
 * no lock (a parent thread may have held ctx->lock at fork time).
 */
void srdma_context_drop_inherited(struct srdma_context *ctx);

/**
 * srdma_async_get() - dequeue one event, blocking unless async_fd was made
 * non-blocking by the application. Return: 0 or -errno (-EAGAIN; -EINTR
 * when a signal interrupts the wait, as rdma-core's ibv_get_async_event).
 */
int srdma_async_get(struct srdma_context *ctx, struct ibv_async_event *ev);

/**
 * srdma_async_init() - size the async FIFO (@ctx->async_fd, just opened)
 * for every event the queue can hold pending. Best effort, never fails.
 * Context: context open, before the context is published.
 */
void srdma_async_init(struct srdma_context *ctx);

/* ---- PD ---------------------------------------------------------------- */
typedef void *(*srdma_pd_alloc_fn)(struct ibv_pd *pd, void *pd_context,
				   size_t size, size_t alignment,
				   uint64_t resource_type);
typedef void (*srdma_pd_free_fn)(struct ibv_pd *pd, void *pd_context,
				 void *ptr, uint64_t resource_type);

/*
 * A PD, or a parent domain (docs/design/parent-domain.md): then @prot is
 * the protection PD it holds one use of, and ibpd.handle is @prot's number,
 * so key and QP checks, which compare PD numbers, treat the two alike.
 */
struct srdma_pd {
	struct ibv_pd ibpd;		/* immutable after publish */
	struct srdma_context *ctx;	/* immutable */
	_Atomic uint32_t usecnt;	/* atomic: MRs, MWs, QPs, ... */
	uint32_t n_pending;		/* ctx->lock: relaxed MRs of this PD
					 * awaiting invalidation */
	/* parent domain only; all immutable (NULL on a plain PD): */
	struct srdma_pd *prot;		/* its protection domain */
	struct srdma_td *td;		/* its thread domain, or NULL */
	srdma_pd_alloc_fn alloc;	/* custom allocator, or NULL */
	srdma_pd_free_fn free;
	void *pd_context;
	void **custom;			/* ctx->lock: live buffers alloc gave */
	uint32_t n_custom, cap_custom;	/* ctx->lock */
	bool imported;			/* immutable: ibv_import_pd of another
					 * process's PD (core/import.c) */
	_Atomic uint32_t *rt_use;	/* immutable: the PD's use word in
					 * its owner's resource table (atomic,
					 * shared with importers), or NULL */
};

/* A thread domain: a hint only (docs/design/parent-domain.md). */
struct srdma_td {
	struct ibv_td ibtd;		/* immutable after publish */
	struct srdma_context *ctx;	/* immutable */
	_Atomic uint32_t usecnt;	/* atomic: parent domains using it */
	struct srdma_td *pool_next;	/* pd.c's pool lock: freed TDs */
};

int srdma_pd_alloc(struct srdma_context *ctx, struct srdma_pd **out);
/**
 * srdma_parent_domain_alloc() - ibv_alloc_parent_domain(3): validate
 * @attr (EINVAL: no or not a plain PD of @ctx, a TD of another context,
 * unknown comp_mask bits, ALLOCATORS without both functions), then build a
 * parent domain holding one use of the PD and of the TD.
 * Return: 0 or -errno. Context: any thread; takes ctx->lock.
 */
int srdma_parent_domain_alloc(struct srdma_context *ctx,
			      const struct ibv_parent_domain_init_attr *attr,
			      struct srdma_pd **out);
/**
 * srdma_td_alloc() - ibv_alloc_td(3). Return: 0, -EINVAL (comp_mask bits
 * set: none is defined), -ENOMEM. Context: any thread.
 */
int srdma_td_alloc(struct srdma_context *ctx,
		   const struct ibv_td_init_attr *attr, struct srdma_td **out);
/**
 * srdma_td_dealloc() - ibv_dealloc_td(3). Return: 0, -EINVAL (not a live
 * TD of ours), -EBUSY (a parent domain still uses it).
 */
int srdma_td_dealloc(struct ibv_td *ibtd);
/**
 * srdma_pd_obj_alloc() - zeroed private memory of @size for an object of
 * @type (SRDMA_RES_TYPE_*) created on @pd: from @pd's custom allocator
 * when it is a parent domain with one (and it does not answer
 * IBV_ALLOCATOR_USE_DEFAULT), else from calloc. @pd may be NULL.
 * Return: the memory, or NULL (out of memory, or alloc returned NULL).
 * Context: any thread, no lock of ours held (alloc may call verbs).
 */
void *srdma_pd_obj_alloc(struct srdma_pd *pd, size_t size, uint64_t type);
/**
 * srdma_pd_obj_free() - give back what srdma_pd_obj_alloc(@pd, .., @type)
 * returned: to @pd's free() if its alloc() gave it, else to free().
 * Context: any thread, no lock of ours held.
 */
void srdma_pd_obj_free(struct srdma_pd *pd, void *p, uint64_t type);
/* Return: 0, -EINVAL (not a PD), -EBUSY (objects still use it; a parent
 * domain uses it). Deallocates parent domains too. */
int srdma_pd_dealloc(struct srdma_pd *pd);
/* Resolve a public PD pointer; NULL if it is not a live PD of ours, or
 * if another process destroyed it (an imported context's PD, or ours
 * imported elsewhere: ibv_dealloc_pd of an import destroys it). */
struct srdma_pd *srdma_pd_lookup(struct ibv_pd *ibpd);
/* srdma_pd_lookup() that also resolves a PD another process destroyed
 * (for ibv_dealloc_pd and ibv_unimport_pd, which release it). */
struct srdma_pd *srdma_pd_lookup_any(struct ibv_pd *ibpd);
/**
 * srdma_pd_hold() / srdma_pd_unhold() - an object (MR, MW, QP, SRQ, AH,
 * CQ or parent domain) starts or stops using @pd: its use count, and the
 * PD's shared use word, which lets a process that imported the PD tell
 * whether anybody uses it (ibv_dealloc_pd of an import, core/import.c).
 * The shared word is another process's too: it saturates rather than
 * wraps. Context: any thread.
 */
void srdma_pd_hold(struct srdma_pd *pd);
void srdma_pd_unhold(struct srdma_pd *pd);
/**
 * srdma_pd_destroy_shared() - mark the PD of use word @use destroyed for
 * every process, if no object of any process uses it (compare-and-swap
 * of 0 to SRDMA_RT_PD_DEAD). @use NULL: nothing shared, true.
 * Return: true if the PD is destroyed now or was already; false (EBUSY)
 * if objects use it.
 */
bool srdma_pd_destroy_shared(_Atomic uint32_t *use);

/* ---- MR ---------------------------------------------------------------- */
enum {
	/* The low 16 bits are the key entry's flags, published as they are. */
	SRDMA_MRF_ODP = SRDMA_KEYF_ODP,
	SRDMA_MRF_IMPLICIT = SRDMA_KEYF_IMPLICIT,
	SRDMA_MRF_ZERO_BASED = SRDMA_KEYF_ZERO_BASED,
	SRDMA_MRF_DMABUF = SRDMA_KEYF_DMABUF,
	SRDMA_MRF_RELAXED = SRDMA_KEYF_RELAXED,
	SRDMA_MRF_HUGETLB = SRDMA_KEYF_HUGETLB,
	SRDMA_MRF_KEY_MASK = 0xffff,
	/* Owner-only state above them. */
	SRDMA_MRF_WRITABLE = 1 << 16,	/* memory validated writable */
};

enum srdma_relaxed_state {
	SRDMA_RELAXED_LIVE = 0,
	SRDMA_RELAXED_PENDING,		/* dereg_relaxed'd, key still valid */
};

struct srdma_mr {
	struct ibv_mr ibmr;		/* public fields; ctx->lock for rereg */
	struct srdma_pd *pd;		/* ctx->lock */
	uint32_t slot;			/* immutable */
	uint32_t flags;			/* ctx->lock: SRDMA_MRF_* */
	uint32_t access;		/* ctx->lock */
	uint64_t iova;			/* ctx->lock: start of the window */
	uint64_t length;		/* ctx->lock: effective length */
	uint64_t host_addr;		/* ctx->lock: owner address of iova */
	_Atomic uint32_t bound_mws;	/* atomic: windows bound to us */
	struct srdma_mw *bound;		/* ctx->lock: those windows */
	/* dma-buf */
	void *dmabuf_map;		/* immutable */
	size_t dmabuf_map_len;		/* immutable */
	int dmabuf_fd;			/* immutable; -1 if none */
	struct srdma_dm *dm;		/* immutable: device memory under
					 * an ibv_reg_dm_mr MR, else NULL */
	/* relaxed */
	enum srdma_relaxed_state rstate; /* ctx->lock */
	uint64_t pending_since_ns;	/* ctx->lock */
	struct srdma_mr *next_pending;	/* ctx->lock */
};

/* Everything the registration entry points pass down. */
struct srdma_mr_args {
	void *addr;
	uint64_t length;
	uint64_t iova;
	unsigned int access;
	bool dmabuf;			/* ibv_reg_dmabuf_mr */
	int dmabuf_fd;
	uint64_t dmabuf_offset;
	bool relaxed;			/* ibv_reg_mr_relaxed */
	struct srdma_dm *dm;		/* ibv_reg_dm_mr: @addr is inside
					 * this DM, checked by the caller;
					 * @length may be 0 */
};

/**
 * srdma_mr_reg() - register memory (verbs-semantics §2, in its check order).
 * @ibpd: PD as given by the application (validated here)
 * Return: 0 with *out published, or -errno (EINVAL, EOPNOTSUPP, EFAULT,
 * ENOMEM, EBADF, EAGAIN for an exhausted relaxed pool).
 */
int srdma_mr_reg(struct ibv_pd *ibpd, const struct srdma_mr_args *a,
		 struct srdma_mr **out);

/**
 * srdma_mr_dereg() - invalidate, drain, free (§6). Return: 0, -EINVAL (not
 * a live MR), -EBUSY (windows bound).
 */
int srdma_mr_dereg(struct ibv_mr *ibmr);

/**
 * srdma_mr_rereg() - §3. Return: 0, or -errno with *stage set to
 * IBV_REREG_MR_ERR_INPUT or IBV_REREG_MR_ERR_CMD; the MR is unchanged on
 * failure.
 */
int srdma_mr_rereg(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd,
		   void *addr, size_t length, int access, int *stage);

/**
 * srdma_mr_advise() - ibv_advise_mr (§2.5). Return: 0 or -errno.
 */
int srdma_mr_advise(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);

/* relaxed MRs (§7) */
int srdma_mr_dereg_relaxed(struct ibv_mr *ibmr);
int srdma_mr_flush_relaxed(struct ibv_pd *ibpd);
/**
 * srdma_relaxed_flush_locked() - invalidate pending relaxed MRs of @pd (of
 * every PD when @pd is NULL), or only those older than the deferral delay
 * when @only_expired. Requires ctx->lock; drops and retakes it while
 * draining in-flight accesses.
 */
void srdma_relaxed_flush_locked(struct srdma_context *ctx,
				struct srdma_pd *pd, bool only_expired);
/* Queue a relaxed MR for deferred invalidation. Requires ctx->lock. */
void srdma_relaxed_defer_locked(struct srdma_context *ctx,
				struct srdma_mr *mr);
/* Unlink @mr from the pending list if it is there. Requires ctx->lock. */
void srdma_relaxed_unlink_locked(struct srdma_context *ctx,
				 struct srdma_mr *mr);
/**
 * srdma_mr_invalidate_locked() - the dereg ordering of §6 for @n MRs of
 * one context: mark every key invalid, drain each (ctx->lock dropped
 * meanwhile), free slots, PD uses, handles and the MR structs.
 * Requires ctx->lock; the MRs must already be unpublished from the handle
 * table and have no bound windows.
 */
void srdma_mr_invalidate_locked(struct srdma_context *ctx,
				struct srdma_mr **mrs, unsigned int n);
void srdma_relaxed_stop(struct srdma_context *ctx);

/* ---- MW ---------------------------------------------------------------- */
struct srdma_mw {
	struct ibv_mw ibmw;		/* public fields */
	struct srdma_pd *pd;		/* immutable */
	uint32_t slot;			/* immutable */
	struct srdma_mr *mr;		/* ctx->lock: MR bound to, or NULL */
	struct srdma_mw *next_bound;	/* ctx->lock: mr->bound list */
};

int srdma_mw_alloc(struct ibv_pd *ibpd, enum ibv_mw_type type,
		   struct srdma_mw **out);
int srdma_mw_dealloc(struct ibv_mw *ibmw);
/**
 * srdma_mr_sync_bound_locked() - forget windows bound to @mr that a peer
 * invalidated meanwhile (SEND_WITH_INV writes the shared entry only).
 * Requires ctx->lock. Return: windows still bound.
 */
uint32_t srdma_mr_sync_bound_locked(struct srdma_context *ctx,
				    struct srdma_mr *mr);
/* Link @mw to @mr's bound list (NULL: unlink). Requires ctx->lock. */
void srdma_mw_set_mr_locked(struct srdma_mw *mw, struct srdma_mr *mr);
struct srdma_mw *srdma_mw_lookup(struct ibv_mw *ibmw);

/* ---- memory checks ----------------------------------------------------- */

/**
 * srdma_mem_check() - is [addr, addr + len) fully mapped and readable, and
 * writable when @writable? Asks the kernel (PROCMAP_QUERY, or without it
 * /proc/self/maps); never touches the memory or its residency.
 * Context: any thread. Return: 0, or -EFAULT.
 */
int srdma_mem_check(uint64_t addr, uint64_t len, bool writable);

/**
 * srdma_mem_check_pin() - srdma_mem_check() for a registration: the same
 * answers, but without PROCMAP_QUERY it may fault the pages in (as a
 * writable pin does on an HCA: copy-on-write broken, zero pages replaced).
 * Never call it for ODP memory, which must stay unpopulated.
 * Context: any thread. Return: 0, -EFAULT, or -errno (e.g. -EMFILE) when
 * the answer could not be obtained.
 */
int srdma_mem_check_pin(uint64_t addr, uint64_t len, bool writable);

/* Monotonic nanoseconds. */
uint64_t srdma_now_ns(void);
/**
 * srdma_wall_ns() - CLOCK_REALTIME in nanoseconds (completion wallclock
 * timestamps, clock.c). Context: any thread.
 */
uint64_t srdma_wall_ns(void);
/* The free-running device clock is srdma_now_ns(): 1 GHz, reported as
 * hca_core_clock in kHz. */
#define SRDMA_HCA_CORE_CLOCK_KHZ 1000000u

/* Page size, cached. */
extern size_t srdma_page_size;

#endif
