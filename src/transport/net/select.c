// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * select.c - which transport serves a destination (net.h). Placeholder
 * until it lands: always the host transport.
 */
#include "transport/net/net.h"

enum srdma_transport_mode srdma_transport_mode(void)
{
	return SRDMA_TRANSPORT_HOST;
}

bool srdma_net_dest(struct srdma_context *ctx, const struct ibv_ah_attr *ah,
		    uint32_t dqpn)
{
	(void)ctx;
	(void)ah;
	(void)dqpn;
	return false;
}
