/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * shm_layout.h - the host-wide shared state of softrdma, as an ABI.
 *
 * Everything here is read and written by several processes of one user,
 * possibly built from different softrdma versions, so every structure is
 * fixed-width, offset-based (no pointers), versioned and pinned with
 * static_assert. Two kinds of file live under SRDMA_DIR (mode 0700 dir,
 * 0600 files):
 *
 *   registry          one per host and user: which contexts are alive.
 *                     Entry i owns LID i+1 and the QP numbers
 *                     [(i+1) << SRDMA_QPN_SHIFT, (i+2) << SRDMA_QPN_SHIFT).
 *                     Writers serialise with flock(LOCK_EX) on the file;
 *                     readers are lock-free (state is published last).
 *   ctx.<lid>.<pid>   one per open device context: its key table (MRs and
 *                     MWs, validated by any initiator on the host), its
 *                     access records (what this context, as an initiator,
 *                     is touching right now, so a dead initiator's in-flight
 *                     marks can be cleared by whoever drains), and since
 *                     version 2 its data-path objects: CQ, QP and SRQ tables,
 *                     an async event ring and a ring arena holding CQ rings
 *                     and receive queues; since version 3 the key table's
 *                     index -> slot map is keyed by a 128-bit secret
 *                     instead of an affine scramble. Initiators in other
 *                     processes consume receive WQEs and post CQEs here
 *                     themselves (target passivity).
 *   chan.<lid>.<pid>.<n>, async.<lid>.<pid>
 *                     FIFOs: one byte per wake-up of a completion channel /
 *                     of the context's async event fd. The owner holds the
 *                     read end (the application's fd), initiators write.
 *   atomics           one per host and user: robust mutexes that serialise
 *                     every RDMA atomic on the host (IBV_ATOMIC_HCA).
 *
 * Design notes and the lock order: docs/design/host-segment.md.
 */
#ifndef SRDMA_TRANSPORT_HOST_SHM_LAYOUT_H
#define SRDMA_TRANSPORT_HOST_SHM_LAYOUT_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SRDMA_REG_MAGIC 0x47445253u	/* "SRDG" */
#define SRDMA_REG_VERSION 1
#define SRDMA_REG_ENTRIES 1023u		/* LIDs 1..1023 */
#define SRDMA_QPN_SHIFT 14		/* 16383 QPNs per context */

#define SRDMA_SEG_MAGIC 0x53445253u	/* "SRDS" */
#define SRDMA_SEG_VERSION 4		/* 3: keyed key map, per-object async
					 * queue; 4: resource table (rt_off) */

/* Registry entry states. */
enum {
	SRDMA_REG_FREE = 0,
	SRDMA_REG_LIVE = 1,	/* published: peers may resolve it */
	SRDMA_REG_CLAIMED = 2,	/* taken, segment being built */
};

struct srdma_reg_hdr {
	uint32_t magic;			/* SRDMA_REG_MAGIC */
	uint16_t version;		/* SRDMA_REG_VERSION */
	uint16_t hdr_size;		/* sizeof(struct srdma_reg_hdr) */
	uint32_t nentries;		/* SRDMA_REG_ENTRIES */
	uint32_t entry_size;		/* sizeof(struct srdma_reg_entry) */
	uint64_t entries_off;		/* byte offset of entry 0 */
	uint64_t reserved[5];
};
static_assert(sizeof(struct srdma_reg_hdr) == 64, "registry header is ABI");

struct srdma_reg_entry {
	_Atomic uint32_t state;		/* SRDMA_REG_*; release-published last */
	int32_t pid;			/* owner; written under flock */
	uint64_t start_time;		/* owner start (clock ticks since boot) */
	uint32_t lid;			/* index + 1; immutable */
	uint32_t uid;			/* owner uid */
	char seg_name[48];		/* "ctx.<lid>.<pid>", NUL terminated */
	char dev_name[32];		/* device the context opened */
	uint64_t open_time;		/* CLOCK_REALTIME seconds at open */
	/* Where the owner lives (locality.c), written under flock before
	 * LIVE: the inodes of its network and PID namespaces (0: unknown,
	 * an older writer), so that a peer knows whether the pid means
	 * anything to it and whether it shares its port 4791. */
	uint32_t ns_net;
	uint32_t ns_pid;
	_Atomic uint32_t reach;		/* SRDMA_REACH_*; cleared by the owner
					 * (relaxed) when it learns better */
	uint32_t reserved32;
};
static_assert(sizeof(struct srdma_reg_entry) == 128, "registry entry is ABI");

/* srdma_reg_entry.reach */
enum {
	/* The owner may attach the memory of other processes of its user,
	 * and expects them to attach its own (no Yama restriction, or
	 * CAP_SYS_PTRACE; process_vm_readv not refused). Without it on
	 * either side, two contexts of one registry talk over the net
	 * transport. */
	SRDMA_REACH_CMA = 1u << 0,
};

/* Key table entry kinds. */
enum {
	SRDMA_KIND_NONE = 0,
	SRDMA_KIND_MR = 1,
	SRDMA_KIND_MW1 = 2,
	SRDMA_KIND_MW2 = 3,
};

/* Key table entry states. */
enum {
	SRDMA_KEY_FREE = 0,	/* slot unused */
	SRDMA_KEY_VALID = 1,	/* grants access as described */
	SRDMA_KEY_INVALID = 2,	/* allocated, grants nothing (dereg/unbound) */
	SRDMA_KEY_PENDING = 3,	/* relaxed MR after dereg: still grants access */
};

/* Key table entry flags. */
enum {
	SRDMA_KEYF_ODP = 1 << 0,	/* on-demand: copy must tolerate faults */
	SRDMA_KEYF_IMPLICIT = 1 << 1,	/* implicit ODP: whole address space */
	SRDMA_KEYF_ZERO_BASED = 1 << 2,
	SRDMA_KEYF_DMABUF = 1 << 3,
	SRDMA_KEYF_RELAXED = 1 << 4,
	SRDMA_KEYF_HUGETLB = 1 << 5,
};

/*
 * One MR or MW. All fields except seq, key and inflight are written only by
 * the owning process, under its context lock, inside a seqlock write
 * section (seq odd). Readers in any process take a consistent snapshot with
 * srdma_key_snapshot() and never act on a torn one.
 */
struct srdma_shm_key {
	_Atomic uint32_t seq;		/* seqlock; odd while being written */
	_Atomic uint32_t key;		/* full current key, 0 when FREE */
	uint8_t kind;			/* SRDMA_KIND_*; seqlock */
	uint8_t state;			/* SRDMA_KEY_*; seqlock */
	uint16_t flags;			/* SRDMA_KEYF_*; seqlock */
	uint32_t access;		/* IBV_ACCESS_* granted; seqlock */
	uint32_t pd_handle;		/* owner PD (ibv_pd.handle); seqlock */
	uint32_t bind_qpn;		/* MW type 2: QP it was bound through */
	uint64_t iova;			/* start of the address window; seqlock */
	uint64_t length;		/* effective length; seqlock */
	uint64_t host_addr;		/* owner address of iova; seqlock */
	_Atomic uint32_t inflight;	/* accesses in progress; seq_cst */
	uint32_t mr_slot;		/* MW: slot of the MR it is bound to */
	uint64_t req_length;		/* length as requested (status only) */
};
static_assert(sizeof(struct srdma_shm_key) == 64, "key entry is ABI");

/*
 * An access record: this context (as initiator) holds one inflight mark on
 * slot @tag & 0xffffffff of the context in registry entry
 * (@tag >> 32) & 0x3ff whose owner is @target_pid/@target_start. Written by
 * the owner before the inflight increment (fields, then tag with release),
 * cleared by CAS of tag to 0 by whoever drops the mark.
 */
#define SRDMA_ACC_VALID (1ull << 63)
struct srdma_shm_access {
	_Atomic uint64_t tag;		/* 0 or SRDMA_ACC_VALID|reg<<32|slot */
	uint64_t target_start;		/* start time of the target owner */
	int32_t target_pid;		/* target owner */
	uint32_t reserved0;
	uint64_t reserved1;
};
static_assert(sizeof(struct srdma_shm_access) == 32, "access record is ABI");

#define SRDMA_SEG_ACCESS_RECORDS 64

struct srdma_seg_hdr {
	uint32_t magic;			/* SRDMA_SEG_MAGIC */
	uint16_t version;		/* SRDMA_SEG_VERSION */
	uint16_t hdr_size;		/* sizeof(struct srdma_seg_hdr) */
	int32_t owner_pid;		/* immutable */
	uint32_t lid;			/* immutable */
	uint64_t owner_start;		/* immutable; see srdma_reg_entry */
	uint64_t seg_size;		/* file size in bytes; immutable */
	char dev_name[32];		/* immutable */
	uint64_t key_off;		/* offset of the key table; immutable */
	uint32_t key_slots;		/* entries in the key table; immutable */
	uint32_t key_entry_size;	/* sizeof(struct srdma_shm_key) */
	/* version 3: SipHash-2-4 key of the map key index -> slot
	 * (key_table.c). A secret: it lets any process that reads it check
	 * keys of this context locally, so it never leaves the host (the
	 * network transport must not put it on the wire). Immutable. */
	uint64_t key_secret[2];
	uint64_t acc_off;		/* offset of the access records */
	uint32_t acc_count;		/* SRDMA_SEG_ACCESS_RECORDS */
	uint32_t acc_entry_size;	/* sizeof(struct srdma_shm_access) */
	_Atomic uint64_t n_reg;		/* counters for srdma status; relaxed */
	_Atomic uint64_t n_dereg;
	_Atomic uint64_t n_live_mr;
	_Atomic uint64_t n_live_mw;
	/* version 2: the data path; all immutable after publish */
	uint64_t cq_off;		/* CQ table */
	uint32_t cq_slots;
	uint32_t cq_entry_size;		/* sizeof(struct srdma_shm_cq) */
	uint64_t qp_off;		/* QP table, index = QPN low bits */
	uint32_t qp_slots;
	uint32_t qp_entry_size;		/* sizeof(struct srdma_shm_qp) */
	uint64_t srq_off;		/* SRQ table */
	uint32_t srq_slots;
	uint32_t srq_entry_size;	/* sizeof(struct srdma_shm_srq) */
	uint64_t arena_off;		/* rings; owner allocates, page units */
	uint64_t arena_size;
	uint64_t aq_off;		/* struct srdma_shm_aq */
	/* version 4: the resource table for srdma status (struct
	 * srdma_shm_rt, after the arena); immutable after publish */
	uint64_t rt_off;
	uint64_t rt_size;
	/* The owner's life marker (life.c): SRDMA_SEG_LIFE_OFF, or 0 when
	 * it holds none (an older owner: ask the kernel instead). Written
	 * before publish; checked once at map, like the offsets above. */
	uint64_t life_off;
	/* The context this one imports (ibv_import_device of another
	 * process's context, core/import.c): its LID and owner pid, 0 if
	 * none. Set by the importer before any QP of it exists, then
	 * immutable; responders turn to that context's key table for a key
	 * this one does not know (engine/responder.c, rmem_acquire). Older
	 * writers leave it 0. */
	uint32_t import_lid;
	int32_t import_pid;
	uint64_t reserved[1];
};
static_assert(sizeof(struct srdma_seg_hdr) == 256, "segment header is ABI");
static_assert(offsetof(struct srdma_seg_hdr, key_secret) == 80 &&
		      offsetof(struct srdma_seg_hdr, acc_off) == 96,
	      "segment header key fields are ABI");


/* ---- version 2: data-path objects -------------------------------------- */

/*
 * Locks in shared memory are glibc process-shared robust mutexes: a holder
 * that dies leaves EOWNERDEAD to the next locker, who repairs and goes on
 * (srdma_shm_lock()). Their size is part of this ABI.
 */
static_assert(sizeof(pthread_mutex_t) == 40, "shared mutex size is ABI");

#define SRDMA_SEG_CQ_SLOTS 4096u
#define SRDMA_SEG_QP_SLOTS (1u << SRDMA_QPN_SHIFT)	/* slot 0 unused */
#define SRDMA_SEG_SRQ_SLOTS 4096u
#define SRDMA_SEG_ARENA_SIZE (1ull << 30)		/* sparse */
/* Async queue: one pending record per object, a ring of object indices. */
#define SRDMA_SEG_AQ_OBJS                                                      \
	(SRDMA_SEG_QP_SLOTS + SRDMA_SEG_CQ_SLOTS + SRDMA_SEG_SRQ_SLOTS + 1u)
#define SRDMA_SEG_AQ_SLOTS 32768u	/* power of two >= SRDMA_SEG_AQ_OBJS */

/* Object table entry states (CQ, QP, SRQ). */
enum {
	SRDMA_OBJ_FREE = 0,
	SRDMA_OBJ_LIVE = 1,	/* published: initiators may use it */
};

/*
 * One completion: written by any producer (the owner for its own send
 * completions, an initiator for this context's receive completions)
 * under the CQ's plock, published by storing seq = position + 1 last
 * (release); consumed by the owner only.
 */
struct srdma_shm_cqe {
	_Atomic uint64_t seq;
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm;			/* imm_data (network order) or
					 * invalidated rkey */
	uint32_t qp_num;
	uint32_t src_qp;
	uint8_t status;			/* enum ibv_wc_status */
	uint8_t opcode;			/* enum ibv_wc_opcode */
	uint16_t wc_flags;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
	uint16_t pkey_index;
	uint16_t reserved0;
	uint32_t vendor_err;
	uint64_t ts_ns;			/* CLOCK_MONOTONIC ns when posted, if
					 * the CQ has SRDMA_CQF_TS, else 0 */
	uint64_t wall_ns;		/* CLOCK_REALTIME ns, SRDMA_CQF_WALL */
};
static_assert(sizeof(struct srdma_shm_cqe) == 64, "CQE is ABI");

/* srdma_shm_cq.flags: what producers stamp into each CQE. */
enum {
	SRDMA_CQF_TS = 1 << 0,		/* ts_ns (free-running clock) */
	SRDMA_CQF_WALL = 1 << 1,	/* wall_ns */
};

/* CQ arming, stored in srdma_shm_cq.armed. */
enum {
	SRDMA_CQ_DISARMED = 0,
	SRDMA_CQ_ARMED_ANY = 1,
	SRDMA_CQ_ARMED_SOLICITED = 2,
};

struct srdma_shm_cq {
	pthread_mutex_t plock;		/* producers (robust, pshared) */
	_Atomic uint32_t state;		/* SRDMA_OBJ_*; owner, release */
	uint32_t size;			/* ring slots, power of two; owner,
					 * changed only under plock (resize) */
	uint64_t ring_off;		/* segment offset; as size */
	uint64_t prod;			/* plock: next position to write */
	_Atomic uint64_t cons;		/* owner: next position to read */
	_Atomic uint32_t armed;		/* owner arms, producers disarm */
	_Atomic uint32_t fired;		/* producer that disarmed sets it,
					 * owner's get_cq_event clears it */
	_Atomic uint32_t overflow;	/* producers: a CQE did not fit */
	uint32_t chan;			/* completion channel number + 1, 0
					 * for none; immutable while LIVE */
	uint32_t gen;			/* bumped per create; immutable */
	uint32_t limit;			/* the application's cqe; as size */
	uint32_t flags;			/* SRDMA_CQF_*; immutable while LIVE */
	uint32_t reserved0;
	_Atomic uint64_t notified;	/* whoever claims an arming: the
					 * position after the CQE its event is
					 * for (mlx4's last_notified_index);
					 * the owner reads it when arming.
					 * Formerly reserved (zero). */
	uint64_t reserved[2];
};
static_assert(sizeof(struct srdma_shm_cq) == 128, "CQ entry is ABI");

/* A receive WQE in an RQ or SRQ ring (max_sge entries follow). */
struct srdma_shm_rsge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};
struct srdma_shm_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t reserved;
	struct srdma_shm_rsge sge[];
};
static_assert(sizeof(struct srdma_shm_rwqe) == 16, "receive WQE is ABI");

/*
 * A receive queue (in a QP or an SRQ entry): the owner pushes under
 * rlock (head, release), consumers (initiators delivering a SEND) pop
 * under rlock (tail). The owner reuses a slot once tail passed it.
 */
struct srdma_shm_rq {
	pthread_mutex_t rlock;		/* robust, pshared */
	uint64_t ring_off;		/* segment offset; immutable */
	uint32_t size;			/* slots, power of two; immutable */
	uint32_t max_sge;		/* immutable */
	uint32_t wqe_size;		/* bytes per slot; immutable */
	uint32_t reserved0;
	_Atomic uint64_t head;		/* rlock; owner */
	_Atomic uint64_t tail;		/* rlock; consumers */
};
static_assert(sizeof(struct srdma_shm_rq) == 80, "receive queue is ABI");

struct srdma_shm_qp {
	struct srdma_shm_rq rq;		/* unused (size 0) with an SRQ */
	_Atomic uint32_t state;		/* enum ibv_qp_state; owner, and any
					 * initiator moving it to ERR */
	_Atomic uint32_t live;		/* SRDMA_OBJ_*; owner */
	uint32_t gen;			/* bumped per create; immutable */
	uint8_t type;			/* enum ibv_qp_type; immutable */
	uint8_t min_rnr_timer;		/* owner (modify) */
	uint16_t reserved0;
	uint32_t pd_handle;		/* immutable */
	_Atomic uint32_t access;	/* qp_access_flags; owner */
	_Atomic uint32_t qkey;		/* owner */
	_Atomic uint32_t dest_qpn;	/* RC/UC peer; owner */
	_Atomic uint32_t dlid;		/* RC/UC peer; owner */
	uint32_t send_cq;		/* CQ slot; immutable */
	uint32_t recv_cq;		/* CQ slot; immutable */
	uint32_t srq;			/* SRQ slot + 1, 0 for none; immutable */
	uint32_t sq_psn;		/* owner (status only) */
	uint32_t rq_psn;		/* owner (status only) */
	_Atomic uint64_t n_sent;	/* counters for srdma status; relaxed */
	_Atomic uint64_t n_recv;
	/* Net transport (Ethernet link layer): ring-arena offset of the QP's
	 * struct srdma_net_qp_stats (transport/net/net.h), 0 for none. Owner
	 * (QP create/destroy); read by srdma status. */
	_Atomic uint64_t net_st_off;
	/* version 4, for srdma status only: requester completions in error
	 * (relaxed, whoever completes), and the peer's GID of an RC/UC QP
	 * whose address vector has a GRH, 0 otherwise (owner, at modify to
	 * RTR; two relaxed words: a reader racing a modify may see half of
	 * each, which only status sees) */
	_Atomic uint64_t n_err;
	_Atomic uint64_t dgid[2];
	/* XRC (docs/design/xrc.md): the XRC domain of an XRC_RECV (TGT) QP,
	 * as srdma_xrcd.id; 0, 0 for every other type. Immutable. */
	uint64_t xrcd[2];
	uint64_t reserved[7];
};
static_assert(sizeof(struct srdma_shm_qp) == 256, "QP entry is ABI");
static_assert(offsetof(struct srdma_shm_qp, net_st_off) == 152,
	      "QP entry net_st_off is ABI");
static_assert(offsetof(struct srdma_shm_qp, n_err) == 160 &&
		      offsetof(struct srdma_shm_qp, dgid) == 168,
	      "QP entry status fields are ABI");
static_assert(offsetof(struct srdma_shm_qp, xrcd) == 184,
	      "QP entry XRC domain is ABI");

struct srdma_shm_srq {
	struct srdma_shm_rq rq;
	_Atomic uint32_t live;		/* SRDMA_OBJ_*; owner */
	uint32_t gen;			/* immutable */
	uint32_t pd_handle;		/* immutable */
	_Atomic uint32_t limit;		/* owner arms; the consumer that
					 * crosses it disarms (0) */
	_Atomic uint32_t error;		/* owner: SRQ in error */
	/* XRC SRQ (docs/design/xrc.md): its CQ's slot + 1 (0: not an XRC
	 * SRQ) and its XRC domain (srdma_xrcd.id). Immutable. */
	uint32_t xrc_cq;
	uint64_t xrcd[2];
	/* Tag-matching SRQ: ring-arena offset of its struct srdma_shm_tm
	 * (core/srq_tm.h), 0 for any other SRQ. Owner, under rq.rlock;
	 * consumers read it under rq.rlock. An older peer reads the word as
	 * reserved and delivers to the SRQ's receives as to a basic SRQ. */
	uint64_t tm_off;
};
static_assert(sizeof(struct srdma_shm_srq) == 128, "SRQ entry is ABI");
static_assert(offsetof(struct srdma_shm_srq, xrc_cq) == 100 &&
		      offsetof(struct srdma_shm_srq, xrcd) == 104,
	      "SRQ entry XRC fields are ABI");
static_assert(offsetof(struct srdma_shm_srq, tm_off) == 120,
	      "SRQ entry tm_off is ABI");

/* Async events posted by anyone for the owner to read. */
enum {
	SRDMA_AEV_OBJ_NONE = 0,
	SRDMA_AEV_OBJ_CQ = 1,
	SRDMA_AEV_OBJ_QP = 2,
	SRDMA_AEV_OBJ_SRQ = 3,
	SRDMA_AEV_OBJ_PORT = 4,
};

/*
 * The async queue (version 3). Events are kept per object, not per
 * occurrence: obj[] has one record per object that can have events (QP
 * slots, then CQ slots, then SRQ slots, then the port), holding a bit per
 * enum ibv_event_type not yet read and the generation of the object they
 * belong to. ring[] lists, in the order they first got an event, the
 * indices of the records with pending bits: a record is in the ring
 * exactly while its bits are non-zero, so the ring (larger than obj[])
 * can never be full and no event of a distinct object is ever lost. The
 * same event of the same object, raised again before the owner read it,
 * is merged into the pending one. Design: docs/design/data-path.md.
 */
struct srdma_shm_aq_obj {
	uint32_t pending;		/* lock: bit 1 << enum ibv_event_type */
	uint32_t gen;			/* lock: object generation of pending */
};
static_assert(sizeof(struct srdma_shm_aq_obj) == 8, "aq record is ABI");

struct srdma_shm_aq {
	pthread_mutex_t lock;		/* robust, pshared */
	uint64_t head;			/* lock: next ring entry to read */
	uint64_t tail;			/* lock: next ring entry to write */
	uint64_t merged;		/* lock: events merged into a pending
					 * one (status only) */
	uint64_t reserved[3];
	struct srdma_shm_aq_obj obj[SRDMA_SEG_AQ_OBJS];
	uint32_t ring[SRDMA_SEG_AQ_SLOTS];	/* lock: obj[] indices */
};
static_assert(SRDMA_SEG_AQ_SLOTS >= SRDMA_SEG_AQ_OBJS &&
		      (SRDMA_SEG_AQ_SLOTS & (SRDMA_SEG_AQ_SLOTS - 1)) == 0,
	      "the async ring holds every object at once");
static_assert(sizeof(struct srdma_shm_aq) ==
		      88 + 8 * SRDMA_SEG_AQ_OBJS + 4 * SRDMA_SEG_AQ_SLOTS,
	      "async queue is ABI");

/* ---- version 4: the resource table (srdma status) ---------------------- */

/*
 * What `srdma status` cannot find in the tables above: the context's PDs,
 * and a mirror of its net endpoint's counters, which live in process
 * memory (struct srdma_net_ep_stats). Written by the owner only (core/
 * restrack.c), read by anyone; nothing in the library reads it back.
 * Design: docs/design/host-segment.md, "The resource table".
 */
#define SRDMA_RT_MAGIC 0x54525253u	/* "SRRT" */
#define SRDMA_RT_PD_SLOTS 4096u
#define SRDMA_RT_EP_DROPS 32u

/* Endpoint counters, by index into srdma_shm_rt.ep[] (ABI: append only). */
enum {
	SRDMA_RT_EP_RX_DGRAMS,
	SRDMA_RT_EP_RX_LOCAL,
	SRDMA_RT_EP_FWD_OUT,
	SRDMA_RT_EP_FWD_IN,
	SRDMA_RT_EP_TX_DGRAMS,
	SRDMA_RT_EP_TX_BYTES,
	SRDMA_RT_EP_TX_ERRORS,
	SRDMA_RT_EP_WAKEUPS,
	SRDMA_RT_EP_INLINE_RX,
	SRDMA_RT_EP_ICRC_OTHER_ID,
	SRDMA_RT_EP_TX_GSO_SEGS,
	SRDMA_RT_EP_RX_GRO_SEGS,
	SRDMA_RT_EP_POLL_HANDOFFS,
	SRDMA_RT_EP_LONE_ACKS,
	SRDMA_RT_EP_NCOUNTERS
};
#define SRDMA_RT_EP_WORDS 32u

/* A PD: its handle (ibv_pd.handle), 0 when the slot is free. */
#define SRDMA_RT_PD_DEAD 0x80000000u	/* use: destroyed (core/import.c) */
struct srdma_shm_rt_pd {
	_Atomic uint32_t handle;	/* owner, under its context lock */
	/* Objects on the PD in the owner and in every process that imported
	 * it (atomic, any process; core/pd.c srdma_pd_hold), with
	 * SRDMA_RT_PD_DEAD once the PD was destroyed, set by compare-and-
	 * swap from 0 by whoever deallocates it. Zeroed by the owner before
	 * it publishes a handle; older writers left it 0. Untrusted: only
	 * compared, never used to size or index anything. */
	_Atomic uint32_t use;
};
static_assert(sizeof(struct srdma_shm_rt_pd) == 8, "rt PD entry is ABI");

struct srdma_shm_rt {
	uint32_t magic;			/* SRDMA_RT_MAGIC; immutable */
	uint32_t size;			/* sizeof(struct srdma_shm_rt) */
	_Atomic uint32_t n_pd;		/* live PDs; owner (context lock) */
	_Atomic uint32_t pd_unlisted;	/* live PDs not in pd[] (it was full) */
	/* Endpoint mirror: a seqlock written by one owner thread at a time
	 * (the CAS that makes ep_seq odd is the writer's lock), read with
	 * srdma_rt_ep_snapshot(). ep_seq 0: never mirrored (no endpoint). */
	_Atomic uint32_t ep_seq;
	/* The layout of what status reads here and in the ring arena but no
	 * version pins: struct srdma_net_qp_stats (net.h) and the drop
	 * causes (srdma_rt_stats_layout(), core/restrack.c). Written by the
	 * owner before publish, then immutable; 0 from a library older
	 * than the field. */
	uint32_t stats_layout;
	_Atomic uint64_t ep_time_ns;	/* CLOCK_REALTIME of the last mirror */
	_Atomic uint64_t ep[SRDMA_RT_EP_WORDS];	/* SRDMA_RT_EP_* */
	_Atomic uint64_t ep_drops[SRDMA_RT_EP_DROPS]; /* by enum srdma_drop */
	uint64_t reserved[60];
	struct srdma_shm_rt_pd pd[SRDMA_RT_PD_SLOTS];
};
static_assert(SRDMA_RT_EP_NCOUNTERS <= SRDMA_RT_EP_WORDS,
	      "endpoint counters fit");
static_assert(offsetof(struct srdma_shm_rt, pd) == 1024 &&
		      sizeof(struct srdma_shm_rt) ==
			      1024 + 8 * SRDMA_RT_PD_SLOTS,
	      "resource table is ABI");

/*
 * ---- the segment layout, fixed by this ABI version ---------------------
 *
 * Every offset and count in struct srdma_seg_hdr must equal these values:
 * a peer checks each header field once when it maps a segment, and from
 * then on every accessor (host.h) uses these constants, never a value
 * re-read from shared memory, so a header overwritten later cannot steer
 * anyone outside the mapping.
 */
#define SRDMA_SEG_KEY_SLOTS (1u << 18)
#define SRDMA_SEG_ALIGN_UP(x) (((uint64_t)(x) + 4095u) & ~(uint64_t)4095u)
#define SRDMA_SEG_ACC_OFF ((uint64_t)sizeof(struct srdma_seg_hdr))
#define SRDMA_SEG_KEY_OFF                                                      \
	SRDMA_SEG_ALIGN_UP(SRDMA_SEG_ACC_OFF + SRDMA_SEG_ACCESS_RECORDS *      \
					       sizeof(struct srdma_shm_access))
/* The life marker (a robust pthread_mutex_t) in the padding before the
 * key table; an owner that holds none leaves life_off 0. */
#define SRDMA_SEG_LIFE_OFF (SRDMA_SEG_KEY_OFF - 64)
#define SRDMA_SEG_CQ_OFF                                                       \
	SRDMA_SEG_ALIGN_UP(SRDMA_SEG_KEY_OFF + (uint64_t)SRDMA_SEG_KEY_SLOTS * \
					       sizeof(struct srdma_shm_key))
#define SRDMA_SEG_QP_OFF                                                       \
	SRDMA_SEG_ALIGN_UP(SRDMA_SEG_CQ_OFF + (uint64_t)SRDMA_SEG_CQ_SLOTS *   \
					      sizeof(struct srdma_shm_cq))
#define SRDMA_SEG_SRQ_OFF                                                      \
	SRDMA_SEG_ALIGN_UP(SRDMA_SEG_QP_OFF + (uint64_t)SRDMA_SEG_QP_SLOTS *   \
					      sizeof(struct srdma_shm_qp))
#define SRDMA_SEG_AQ_OFF                                                       \
	SRDMA_SEG_ALIGN_UP(SRDMA_SEG_SRQ_OFF + (uint64_t)SRDMA_SEG_SRQ_SLOTS * \
					       sizeof(struct srdma_shm_srq))
#define SRDMA_SEG_ARENA_OFF                                                    \
	SRDMA_SEG_ALIGN_UP(SRDMA_SEG_AQ_OFF + sizeof(struct srdma_shm_aq))
#define SRDMA_SEG_RT_OFF                                                       \
	SRDMA_SEG_ALIGN_UP(SRDMA_SEG_ARENA_OFF + SRDMA_SEG_ARENA_SIZE)
#define SRDMA_SEG_SIZE                                                         \
	SRDMA_SEG_ALIGN_UP(SRDMA_SEG_RT_OFF + sizeof(struct srdma_shm_rt))

static_assert(SRDMA_SEG_LIFE_OFF >= SRDMA_SEG_ACC_OFF +
			  SRDMA_SEG_ACCESS_RECORDS *
				  sizeof(struct srdma_shm_access) &&
		      SRDMA_SEG_LIFE_OFF + sizeof(pthread_mutex_t) <=
			      SRDMA_SEG_KEY_OFF,
	      "the life marker fits in the padding before the key table");

/* Registry: the file is exactly this long, entry 0 right after the header. */
#define SRDMA_REG_SIZE                                                         \
	(sizeof(struct srdma_reg_hdr) +                                        \
	 (size_t)SRDMA_REG_ENTRIES * sizeof(struct srdma_reg_entry))

/* The host's atomic lock table (file "atomics"). */
#define SRDMA_ATOMIC_MAGIC 0x41445253u	/* "SRDA" */
#define SRDMA_ATOMIC_LOCKS 256u
struct srdma_atomic_file {
	uint32_t magic;
	uint32_t nlocks;
	uint64_t reserved[7];
	pthread_mutex_t lock[SRDMA_ATOMIC_LOCKS];	/* robust, pshared */
};

#endif
