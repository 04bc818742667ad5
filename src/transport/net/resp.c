// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * resp.c - responder of a net QP (net.h). Placeholder: the per-QP state
 * exists (so QPs of an Ethernet port can be created) but nothing is ever
 * received.
 */
#include <stdlib.h>

#include "transport/net/net.h"

struct srdma_netresp {
	uint32_t epsn;			/* resp_lock */
};

struct srdma_netresp *srdma_netresp_new(struct srdma_net_qp *nq)
{
	(void)nq;
	return calloc(1, sizeof(struct srdma_netresp));
}

void srdma_netresp_free(struct srdma_netresp *r)
{
	free(r);
}

void srdma_netresp_reset(struct srdma_net_qp *nq, uint32_t rq_psn)
{
	if (nq->resp)
		nq->resp->epsn = rq_psn;
}
