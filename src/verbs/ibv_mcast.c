// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_mcast.c - ibv_attach_mcast and ibv_detach_mcast, and their slots
 * in struct ibv_context_ops (programs built against old headers call
 * through the table). Positive errno, as libibverbs. The work is core's
 * (core/mcast.c); docs/design/multicast.md.
 */
#include <errno.h>

#include <infiniband/verbs.h>

#include "core/core.h"
#include "core/dp.h"
#include "util/compiler.h"
#include "verbs/verbs_int.h"

static struct srdma_qp *mc_qp(struct ibv_qp *qp)
{
	if (!qp || !srdma_handle_check(qp, SRDMA_OBJ_QP))
		return NULL;
	return to_sqp(qp);
}

SRDMA_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				  uint16_t lid)
{
	struct srdma_qp *s = mc_qp(qp);

	if (!s)
		return EINVAL;
	return -srdma_qp_attach_mcast(s, gid, lid);
}

SRDMA_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				  uint16_t lid)
{
	struct srdma_qp *s = mc_qp(qp);

	if (!s)
		return EINVAL;
	return -srdma_qp_detach_mcast(s, gid, lid);
}

/* The table's slots are typeless since rdma-core 17 (old binaries call
 * them with the ibv_attach_mcast signature); void (*)(void) is the one
 * cast between function types that C compilers leave unremarked. */
typedef void *(*compat_fn)(void);

void srdma_verbs_set_mcast_ops(struct srdma_context *ctx)
{
	ctx->vctx.context.ops._compat_attach_mcast =
		(compat_fn)(void (*)(void))ibv_attach_mcast;
	ctx->vctx.context.ops._compat_detach_mcast =
		(compat_fn)(void (*)(void))ibv_detach_mcast;
}
