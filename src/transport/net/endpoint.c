// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * endpoint.c - the net transport's per-context endpoint (net.h).
 * Placeholder until it lands: no endpoint can be opened, so no QP is
 * ever reachable over the wire.
 */
#include <errno.h>
#include <stddef.h>

#include "transport/net/net.h"

struct srdma_net_ctx *srdma_net_ctx_get(struct srdma_context *ctx)
{
	(void)ctx;
	errno = ENOSYS;
	return NULL;
}

void srdma_net_ctx_close(struct srdma_context *ctx)
{
	(void)ctx;
}

int srdma_net_qp_register(struct srdma_net_qp *nq)
{
	(void)nq;
	return -ENOSYS;
}

void srdma_net_qp_unregister(struct srdma_net_qp *nq)
{
	(void)nq;
}
