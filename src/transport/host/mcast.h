/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mcast.h - the host's multicast group table (file "mcast" in the state
 * directory): which UD QPs of which contexts are attached to which
 * multicast group. Design: docs/design/multicast.md.
 */
#ifndef SRDMA_TRANSPORT_HOST_MCAST_H
#define SRDMA_TRANSPORT_HOST_MCAST_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct srdma_context;

/* Limits, advertised in ibv_query_device (max_mcast_grp,
 * max_mcast_qp_attach, max_total_mcast_qp_attach). Host-wide: the device
 * is one for every context of the host. */
#define SRDMA_MCAST_GROUPS 256u
#define SRDMA_MCAST_QP_ATTACH 64u
#define SRDMA_MCAST_TOTAL 4096u

/* The multicast QPN of IBA 10.5.2 (DQPN of every multicast packet). */
#define SRDMA_MCAST_QPN 0xffffffu
/* IB multicast LIDs: 0xc000..0xfffe (0xffff is the permissive LID). */
#define SRDMA_MCAST_LID_BASE 0xc000u

/* ---- shared layout (ABI: version bump on any change) -------------------- */

#define SRDMA_MCAST_MAGIC 0x4d445253u	/* "SRDM" */
#define SRDMA_MCAST_VERSION 1u

/* One attachment: (QP, MGID, MLID) as ibv_attach_mcast named it. */
struct srdma_mcast_member {
	uint32_t qpn;		/* the attached QP (names its context) */
	uint16_t mlid;		/* the LID given to ibv_attach_mcast */
	uint16_t reserved;
	int32_t pid;		/* owning context's process and its start */
	uint32_t reserved2;	/* time: a dead owner's records are stale */
	uint64_t start_time;
};

/* A group: its MGID and its members m[0..n-1] (compact). */
struct srdma_mcast_group {
	uint8_t mgid[16];
	uint32_t n;
	uint32_t reserved;
	struct srdma_mcast_member m[SRDMA_MCAST_QP_ATTACH];
};

/* Every field below the header is read and written under @lock only. */
struct srdma_mcast_file {
	uint32_t magic;		/* SRDMA_MCAST_MAGIC, stored last at init */
	uint32_t version;
	uint32_t ngroups_max;	/* SRDMA_MCAST_GROUPS */
	uint32_t nqp_max;	/* SRDMA_MCAST_QP_ATTACH */
	uint32_t ngroups;	/* lock: groups in use, g[0..ngroups-1] */
	uint32_t total;		/* lock: members over all groups */
	uint64_t reserved[5];
	pthread_mutex_t lock;	/* robust, process-shared */
	uint8_t pad[64 - sizeof(pthread_mutex_t) % 64];
	struct srdma_mcast_group g[SRDMA_MCAST_GROUPS];
};

/* ---- entry points ------------------------------------------------------- */

/**
 * srdma_gid_is_mcast() - true if @gid is a multicast GID: ff00::/8, or an
 * IPv4-mapped multicast address (::ffff:224.0.0.0/4), as the kernel's
 * rdma_is_multicast_addr(). Context: any.
 */
bool srdma_gid_is_mcast(const uint8_t gid[16]);

/**
 * srdma_mcast_attach() - attach QP @qpn of @ctx to (@mgid, @mlid).
 * Context: any thread; takes the table's shared lock.
 * Return: 0 when attached now, 1 when it was attached already (one copy
 * is delivered however often a QP attaches), -ENOMEM when a limit is
 * reached (groups, QPs per group, total) or the table cannot be mapped.
 */
int srdma_mcast_attach(struct srdma_context *ctx, uint32_t qpn,
		       const uint8_t mgid[16], uint16_t mlid);

/**
 * srdma_mcast_detach() - undo srdma_mcast_attach() of the same triple.
 * Context: any thread; takes the table's shared lock.
 * Return: 0, or -EINVAL when the QP is not attached to (@mgid, @mlid).
 */
int srdma_mcast_detach(struct srdma_context *ctx, uint32_t qpn,
		       const uint8_t mgid[16], uint16_t mlid);

/* A destination of one multicast send. */
struct srdma_mcast_dest {
	uint32_t qpn;
	pid_t pid;		/* owner at attach time */
	uint64_t start_time;
};

/**
 * srdma_mcast_members() - the QPs a multicast packet reaches: with @mgid,
 * those attached to that MGID; without (a packet without GRH, IB only),
 * those attached with MLID @mlid. Each QP once. When @lid is not 0, only
 * the QPs of context @lid (the net receiver's own).
 * Context: any thread; takes the table's shared lock briefly.
 * Return: the number written to @out (at most @max), 0 when the table
 * was never created.
 */
unsigned int srdma_mcast_members(struct srdma_context *ctx,
				 const uint8_t *mgid, uint16_t mlid,
				 uint32_t lid, struct srdma_mcast_dest *out,
				 unsigned int max);

/**
 * srdma_mcast_ctx_fini() - unmap the table (context close).
 */
void srdma_mcast_ctx_fini(struct srdma_context *ctx);

#endif
