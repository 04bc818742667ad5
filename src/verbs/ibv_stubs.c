// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_stubs.c - public libibverbs entry points that softrdma does not
 * implement yet, or never will.
 *
 * Every client we support is linked BIND_NOW, so each name in the
 * IBVERBS_1.x nodes must resolve at load time even if the program never
 * calls it (docs/abi.md section 0.2). The functions here exist only to
 * satisfy the loader. Each fails in its own function's public convention,
 * so a caller that does reach one sees an ordinary "not supported" error:
 *
 *   constructors           NULL with errno = EOPNOTSUPP
 *   int (errno) returns    EOPNOTSUPP, positive (destroy/modify/query)
 *   -1 + errno returns     -1 with errno = EOPNOTSUPP
 *   void                   nothing
 *
 * None of them dereferences its arguments, so they are safe with NULL.
 */
#include <errno.h>
#include <stddef.h>

#include <infiniband/verbs.h>

#include "util/compiler.h"

/* Stubs ignore their arguments by design, whatever the build flags. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/*
 * Data-path names softrdma does not offer: ECE and Ethernet L2
 * resolution.
 */

/* Zero means "no in-order guarantee", which is always a safe answer. */
SRDMA_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
					    enum ibv_wr_opcode op,
					    uint32_t flags)
{
	return 0;
}

SRDMA_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

SRDMA_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

SRDMA_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
					     struct ibv_ah_attr *attr,
					     uint8_t eth_mac[ETHERNET_LL_SIZE],
					     uint16_t *vid)
{
	return EOPNOTSUPP;
}

/*
 * Legacy provider registration. No public header declares it any more, so
 * the prototype is given here. Providers are never loaded (the device is
 * built in). The sysfs helpers are in ibv_sysfs.c.
 */
void ibv_register_driver(const char *name, void *init_func);

SRDMA_EXPORT void ibv_register_driver(const char *name, void *init_func)
{
}
