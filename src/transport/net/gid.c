// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * gid.c - link layer and GID table (gid.h). Placeholder: InfiniBand only.
 */
#include "transport/net/gid.h"

bool srdma_link_is_eth(void)
{
	return false;
}
