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
 *                     MWs, validated by any initiator on the host) and its
 *                     access records (what this context, as an initiator,
 *                     is touching right now, so a dead initiator's in-flight
 *                     marks can be cleared by whoever drains).
 *
 * Design notes and the lock order: docs/design/host-segment.md.
 */
#ifndef SRDMA_TRANSPORT_HOST_SHM_LAYOUT_H
#define SRDMA_TRANSPORT_HOST_SHM_LAYOUT_H

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>

#define SRDMA_REG_MAGIC 0x47445253u	/* "SRDG" */
#define SRDMA_REG_VERSION 1
#define SRDMA_REG_ENTRIES 1023u		/* LIDs 1..1023 */
#define SRDMA_QPN_SHIFT 14		/* 16383 QPNs per context */

#define SRDMA_SEG_MAGIC 0x53445253u	/* "SRDS" */
#define SRDMA_SEG_VERSION 1

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
	uint64_t reserved[2];
};
static_assert(sizeof(struct srdma_reg_entry) == 128, "registry entry is ABI");

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
	uint32_t key_mul;		/* index scramble (odd), see key_table.c */
	uint32_t key_mul_inv;		/* key_mul^-1 mod 2^24 */
	uint32_t key_xor;		/* index scramble xor, 24 bits */
	uint32_t reserved0;
	uint64_t acc_off;		/* offset of the access records */
	uint32_t acc_count;		/* SRDMA_SEG_ACCESS_RECORDS */
	uint32_t acc_entry_size;	/* sizeof(struct srdma_shm_access) */
	_Atomic uint64_t n_reg;		/* counters for srdma status; relaxed */
	_Atomic uint64_t n_dereg;
	_Atomic uint64_t n_live_mr;
	_Atomic uint64_t n_live_mw;
	uint64_t reserved[14];
};
static_assert(sizeof(struct srdma_seg_hdr) == 256, "segment header is ABI");

#endif
