/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * net_lo_util.h - what the net transport's unit tests share for talking
 * to themselves over loopback inside their private network namespace
 * (netns_util.h): the path from 127.0.0.1 (or ::1) to itself on our
 * ports, one packet built, given its ICRC and sent along it, and the
 * contexts and bare net QPs the tests send between (cmocka's asserts:
 * include <cmocka.h> first).
 */
#ifndef SRDMA_TEST_NET_LO_UTIL_H
#define SRDMA_TEST_NET_LO_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "core/core.h"
#include "transport/net/net.h"
#include "transport/net/wire.h"

/* @p: loopback to loopback, IPv4-mapped (or ::1 when @v6), our ports. */
static inline void test_lo_path(struct srdma_wire_path *p, bool v6)
{
	static const uint8_t lo4[16] = { [10] = 0xff, [11] = 0xff, [12] = 127,
					 [15] = 1 };
	static const uint8_t lo6[16] = { [15] = 1 };

	memset(p, 0, sizeof(*p));
	memcpy(p->sip, v6 ? lo6 : lo4, 16);
	memcpy(p->dip, v6 ? lo6 : lo4, 16);
	p->sport = SRDMA_NET_SPORT;
	p->dport = SRDMA_ROCE_PORT;
}

/* Build @k (headers only, no payload), add its ICRC and send it from
 * @from over the IPv4 loopback path. Return: srdma_net_send()'s. */
static inline int test_lo_send(struct srdma_context *from,
			       const struct srdma_pkt *k)
{
	struct srdma_wire_path p;
	uint8_t buf[64];
	struct iovec v = { buf, 0 };

	test_lo_path(&p, false);
	v.iov_len = srdma_wire_build(buf, k);
	srdma_wire_put_icrc(buf + v.iov_len, srdma_wire_icrc(&p, &v, 1));
	v.iov_len += 4;
	return srdma_net_send(from, &p, &v, 1);
}

/* *@c: a new context of srdma0 with its net endpoint open. */
static inline void test_lo_ctx(struct srdma_context **c)
{
	assert_int_equal(srdma_context_open(srdma_device_get(), c), 0);
	assert_non_null(srdma_net_ctx_get(*c));
}

/* @nq: a bare net QP of @ctx (no verbs QP behind it) in QPN slot @slot,
 * registered with the endpoint, for the input hooks to see. */
static inline void test_lo_qp(struct srdma_context *ctx,
			      struct srdma_net_qp *nq, uint32_t slot)
{
	memset(nq, 0, sizeof(*nq));
	nq->ctx = ctx;
	nq->qpn = ctx->host.lid << SRDMA_QPN_SHIFT | slot;
	assert_int_equal(srdma_net_qp_register(nq), 0);
}

#endif
