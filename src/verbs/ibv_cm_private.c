// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_cm_private.c - the private calls softrdma's librdmacm makes into
 * libibverbs (cm_private.h).
 *
 * The CM holds a peer's DISCONNECTED back until the application has
 * polled the completions its QP had when the peer's DREQ arrived
 * (docs/design/cm.md, "DISCONNECTED after the completions"). To know
 * that, it reads where the QP's CQs stand: the CQ rings live in this
 * library's objects, so this library reads them and the CM gets numbers.
 */
#include <errno.h>
#include <string.h>

#include "core/core.h"
#include "core/dp.h"
#include "util/compiler.h"
#include "verbs/cm_private.h"

SRDMA_EXPORT int srdma_priv_qp_cq_marks(struct ibv_context *ctx, uint32_t qpn,
					struct srdma_priv_cq_marks *m)
{
	struct srdma_cq_marks cm;
	struct srdma_context *sctx;
	int ret;

	if (!ctx || !m)
		return -EINVAL;
	sctx = to_sctx(ctx);
	if (srdma_ctx_inherited(sctx))
		return -ENOENT;
	ret = srdma_qp_cq_marks(sctx, qpn, &cm);
	if (ret)
		return ret;
	memcpy(m->prod, cm.prod, sizeof(m->prod));
	memcpy(m->cons, cm.cons, sizeof(m->cons));
	m->sq_busy = cm.sq_busy;
	return 0;
}
