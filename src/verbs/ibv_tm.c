// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_tm.c - the tag-matching front end: ibv_create_srq_ex of an
 * IBV_SRQT_TM SRQ, ibv_post_srq_ops, and the tm_caps ibv_query_device_ex
 * reports. The work is core/srq_tm.c's (the list) and engine/tm.c's (the
 * matching); this file converts their -errno once. Design:
 * docs/design/tag-matching.md.
 */
#include <errno.h>
#include <string.h>

#include "core/core.h"
#include "core/dp.h"
#include "core/srq_tm.h"
#include "util/log.h"
#include "verbs/verbs_int.h"

struct ibv_srq *srdma_verbs_create_srq_tm(struct ibv_context *context,
					  struct ibv_srq_init_attr_ex *attr)
{
	struct srdma_srq *srq;
	int ret;

	ret = srdma_srq_tm_create(context, attr, &srq);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &srq->ibsrq;
}

/* ibv_post_srq_ops() returns a positive errno. */
static int op_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *wr,
			   struct ibv_ops_wr **bad)
{
	if (!ibsrq || !srdma_handle_check(ibsrq, SRDMA_OBJ_SRQ)) {
		if (bad)
			*bad = wr;
		return EINVAL;
	}
	return -srdma_srq_tm_post_ops(container_of(ibsrq, struct srdma_srq,
						   ibsrq), wr, bad);
}

void srdma_verbs_fill_tm_caps(struct ibv_tm_caps *caps)
{
	caps->max_rndv_hdr_size = SRDMA_TM_MAX_RNDV_HDR;
	caps->max_num_tags = SRDMA_TM_MAX_TAGS;
	caps->flags = IBV_TM_CAP_RC;
	caps->max_ops = SRDMA_TM_MAX_OPS;
	caps->max_sge = SRDMA_TM_MAX_SGE;
}

void srdma_verbs_set_tm_ops(struct srdma_context *ctx)
{
	ctx->vctx.post_srq_ops = op_post_srq_ops;
}
