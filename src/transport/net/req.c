// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * req.c - requester and completer of a net QP (net.h). Placeholder: the
 * per-QP state exists (so QPs of an Ethernet port can be created) but
 * holds nothing, and nothing is ever sent.
 */
#include <stdlib.h>

#include "transport/net/net.h"

struct srdma_netreq {
	uint32_t psn;			/* sq_lock */
};

struct srdma_netreq *srdma_netreq_new(struct srdma_net_qp *nq)
{
	(void)nq;
	return calloc(1, sizeof(struct srdma_netreq));
}

void srdma_netreq_free(struct srdma_netreq *r)
{
	free(r);
}

void srdma_netreq_reset(struct srdma_net_qp *nq, uint32_t sq_psn)
{
	if (nq->req)
		nq->req->psn = sq_psn;
}

void srdma_netreq_flush_locked(struct srdma_qp *qp)
{
	(void)qp;
}
