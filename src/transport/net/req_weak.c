// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * req_weak.c - weak stand-ins for what req.c needs from parts of the net
 * transport and the engine that are built in parallel (endpoint.c:
 * srdma_net_send/kick/drop; the engine's completer: srdma_comp_req). The
 * real definitions override these at link time as soon as they exist;
 * this file goes away then. Nothing here is ever reached on a path that
 * matters: without an endpoint no net QP is connected.
 */
#include <errno.h>

#include "engine/engine.h"
#include "transport/net/net.h"

__attribute__((weak)) int srdma_net_send(struct srdma_context *ctx,
					 const struct srdma_wire_path *p,
					 const struct iovec *iov, int n)
{
	(void)ctx;
	(void)p;
	(void)iov;
	(void)n;
	return -ENOSYS;
}

__attribute__((weak)) void srdma_net_kick(struct srdma_context *ctx,
					  uint64_t deadline_ns)
{
	(void)ctx;
	(void)deadline_ns;
}

__attribute__((weak)) void srdma_net_drop(struct srdma_context *ctx,
					  struct srdma_net_qp *nq,
					  enum srdma_drop d, const char *why)
{
	(void)ctx;
	(void)why;
	if (nq)
		atomic_fetch_add_explicit(&nq->st->drops[d], 1,
					  memory_order_relaxed);
}

__attribute__((weak)) void srdma_comp_req(struct srdma_qp *qp,
					  uint64_t wr_id, uint32_t wr_opcode,
					  bool signaled, int status,
					  uint32_t byte_len)
{
	(void)qp;
	(void)wr_id;
	(void)wr_opcode;
	(void)signaled;
	(void)status;
	(void)byte_len;
}
