/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * verbs_int.h - shared by the libibverbs front-end files only: the ops
 * table setup and the port/device attribute builders used both by the
 * exported functions and by the verbs_context ops.
 */
#ifndef SRDMA_VERBS_VERBS_INT_H
#define SRDMA_VERBS_VERBS_INT_H

#include <infiniband/verbs.h>

#include "core/core.h"

/* Fill ctx->vctx.context.ops and the verbs_context extension ops. */
void srdma_verbs_set_ops(struct srdma_context *ctx);

/* qp_ex wr_* and cq_ex polling ops (ibv_ex.c). */
struct srdma_qp;
struct srdma_cq;
void srdma_verbs_qpex_init(struct srdma_qp *qp, uint64_t send_ops_flags);
void srdma_verbs_cqex_init(struct srdma_cq *cq);

/* The data-path ops of ibv_dp.c. */
void srdma_verbs_set_dp_ops(struct srdma_context *ctx);
/* The thread and parent domain ops of ibv_pd.c. */
void srdma_verbs_set_pd_ops(struct srdma_context *ctx);

/* XRC ops: open/close_xrcd, create_srq_ex, get_srq_num, open_qp
 * (ibv_xrc.c). */
void srdma_verbs_set_xrc_ops(struct srdma_context *ctx);
/* Raw packet steering ops: flows, WQs, indirection tables (ibv_raw.c). */
void srdma_verbs_set_raw_ops(struct srdma_context *ctx);
/* The RSS and WQ limits of query_device_ex (Ethernet port only). */
void srdma_raw_fill_device_attr_ex(struct ibv_device_attr_ex *a);

/* Device memory ops (ibv_dm.c). */
void srdma_verbs_set_dm_ops(struct srdma_context *ctx);

/* Tag matching (ibv_tm.c): ibv_create_srq_ex of an IBV_SRQT_TM SRQ (NULL
 * with errno on failure), ibv_post_srq_ops, the tm_caps of
 * ibv_query_device_ex. */
struct ibv_srq *srdma_verbs_create_srq_tm(struct ibv_context *context,
					  struct ibv_srq_init_attr_ex *attr);
void srdma_verbs_set_tm_ops(struct srdma_context *ctx);
void srdma_verbs_fill_tm_caps(struct ibv_tm_caps *caps);
/* ibv_attach_mcast/ibv_detach_mcast in the context's ops (ibv_mcast.c). */
void srdma_verbs_set_mcast_ops(struct srdma_context *ctx);
/**
 * srdma_verbs_import_release() - ibv_close_device of @context: if
 * ibv_import_device handed it out as an alias, drop one reference and
 * return true (the context stays open); false otherwise.
 */
bool srdma_verbs_import_release(struct ibv_context *context);

/* Attributes of the device / port 1 as this context reports them. */
void srdma_fill_device_attr(struct srdma_context *ctx,
			    struct ibv_device_attr *a);
void srdma_fill_port_attr(struct srdma_context *ctx, struct ibv_port_attr *a);
/* The same for port 1 of a context with LID @lid and GID table @gids
 * (the sysfs tree, ibv_sysfs.c, describes the port with no context). */
void srdma_port_attr_build(uint32_t lid, const struct srdma_gid_table *gids,
			   struct ibv_port_attr *a);

/**
 * srdma_sysfs_refresh() - bring the synthesised sysfs tree
 * (<state dir>/sysfs, docs/design/sysfs.md) up to date with the device's
 * state: interfaces and addresses (GIDs), live contexts (LID), link layer.
 * @force: false skips the work if this process refreshed less than a
 *	second ago (device listing); true always looks (a context opened or
 *	closed: the LID may change)
 * Writes only when something changed (one stamp compared); failures are
 * logged at debug level and otherwise ignored. Context: any thread;
 * serialised in the process by a mutex and between processes by flock on
 * the tree.
 */
void srdma_sysfs_refresh(bool force);
/* Resolve a public context; NULL if it is not a live context of ours. */
struct srdma_context *srdma_ctx_lookup(struct ibv_context *ctx);

/* srdma_mr_reg() in the NULL + errno convention of every reg entry. */
struct ibv_mr *srdma_verbs_reg(struct ibv_pd *pd,
			       const struct srdma_mr_args *a);

/*
 * Fork support state (ibv_misc.c), as rdma-core 44 keeps it: a non-ODP
 * registration before ibv_fork_init() makes it too late (EINVAL);
 * srdma_verbs_fork_env() applies RDMAV_FORK_SAFE / IBV_FORK_SAFE once,
 * from the first ibv_get_device_list().
 */
void srdma_verbs_fork_note_range(void);
void srdma_verbs_fork_env(void);

/*
 * Slots of an InfiniBand port's GID table, as a ConnectX-5 shows: GID[0]
 * (LID-derived) is the only filled one; the others read as the zero GID
 * and ibv_query_gid_ex reports them ENODATA, as a real table's empty
 * slots.
 */
#define SRDMA_GID_TBL_LEN 8
#define SRDMA_PKEY_DEFAULT 0xffff

#endif
