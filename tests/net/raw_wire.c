// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * raw_wire.c - one side of net.raw_wire (net_raw.sh): raw packet frames
 * between two test hosts over their veth, with SRDMA_RAW_WIRE=eth0.
 *
 *   raw_wire recv N   a raw QP with one flow (destination MAC
 *                     01:50:56:19:20:a7, ether type 0x88b5, the IEEE's
 *                     local experimental one: no stack of the hosts
 *                     takes it), N + 4 receive WQEs; prints "ready",
 *                     then expects exactly N frames, in order, each
 *                     byte as sent, and nothing else for 300 ms.
 *   raw_wire send N   2 frames of ether type 0x88b6 (no flow takes
 *                     them: mlx5's default drop on the other side), then
 *                     N frames of 0x88b5, each completing successfully.
 *
 * Exit: 0 pass, 1 fail (the reason on stderr).
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FRAME 96
#define BUF (64 * 1024)

static const uint8_t dmac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *buf;

static int fail(const char *what)
{
	fprintf(stderr, "raw_wire: FAIL: %s\n", what);
	return 1;
}

static int setup(struct ibv_qp **qp)
{
	struct ibv_device **list;
	int i, n = 0;
	struct ibv_qp_init_attr ia = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 64,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "srdma0"))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		return fail("open srdma0");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 128, NULL, NULL, 0);
	buf = calloc(1, BUF);
	if (!pd || !cq || !buf)
		return fail("PD, CQ or buffer");
	mr = ibv_reg_mr(pd, buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return fail("MR");
	ia.send_cq = ia.recv_cq = cq;
	*qp = ibv_create_qp(pd, &ia);
	if (!*qp)
		return fail("raw QP (root, SRDMA_RAW_WIRE an interface?)");
	if (ibv_modify_qp(*qp, &a, IBV_QP_STATE | IBV_QP_PORT))
		return fail("QP to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(*qp, &a, IBV_QP_STATE))
		return fail("QP to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(*qp, &a, IBV_QP_STATE))
		return fail("QP to RTS");
	return 0;
}

static void frame(uint8_t *f, uint16_t etype, int seq)
{
	int i;

	memcpy(f, dmac, 6);
	f[6] = 0x02;
	f[11] = 0x42;
	f[12] = (uint8_t)(etype >> 8);
	f[13] = (uint8_t)etype;
	for (i = 14; i < FRAME; i++)
		f[i] = (uint8_t)(seq * 31 + i);
}

static int poll_one(struct ibv_wc *wc, int ms)
{
	struct timespec ts = { 0, 1000000 };
	int i;

	for (i = 0; i <= ms; i++) {
		if (ibv_poll_cq(cq, 1, wc))
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int do_send(struct ibv_qp *qp, int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = FRAME,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int i;

	for (i = -2; i < n; i++) {
		frame(buf, i < 0 ? 0x88b6 : 0x88b5, i);
		if (ibv_post_send(qp, &wr, &bad))
			return fail("post_send");
		if (!poll_one(&wc, 2000) || wc.status != IBV_WC_SUCCESS)
			return fail("send completion");
	}
	printf("raw_wire: sent %d frames (2 for no flow)\n", n + 2);
	return 0;
}

static int do_recv(struct ibv_qp *qp, int n)
{
	struct ibv_flow_attr_eth {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} fa;
	uint8_t want[FRAME];
	struct ibv_flow *f;
	struct ibv_wc wc;
	int i;

	memset(&fa, 0, sizeof(fa));
	fa.attr.type = IBV_FLOW_ATTR_NORMAL;
	fa.attr.size = sizeof(fa.attr);
	fa.attr.num_of_specs = 1;
	fa.attr.port = 1;
	fa.eth.type = IBV_FLOW_SPEC_ETH;
	fa.eth.size = sizeof(fa.eth);
	memcpy(fa.eth.val.dst_mac, dmac, 6);
	memset(fa.eth.mask.dst_mac, 0xff, 6);
	fa.eth.val.ether_type = htobe16(0x88b5);
	fa.eth.mask.ether_type = 0xffff;
	f = ibv_create_flow(qp, &fa.attr);
	if (!f)
		return fail("create flow");
	for (i = 0; i < n + 4; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf + i * 2048u,
				       .length = 2048, .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i,
					  .sg_list = &sge, .num_sge = 1 },
				   *bad;

		if (ibv_post_recv(qp, &wr, &bad))
			return fail("post_recv");
	}
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < n; i++) {
		if (!poll_one(&wc, 10000))
			return fail("a frame did not arrive");
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)i ||
		    wc.byte_len != FRAME)
			return fail("a frame's completion");
		frame(want, 0x88b5, i);
		if (memcmp(buf + i * 2048u, want, FRAME))
			return fail("a frame's bytes");
	}
	if (poll_one(&wc, 300))
		return fail("a frame no flow takes was received");
	printf("raw_wire: received %d frames\n", n);
	return ibv_destroy_flow(f) ? fail("destroy flow") : 0;
}

int main(int argc, char **argv)
{
	struct ibv_qp *qp;
	int n, ret;

	if (argc != 3)
		return fail("usage: raw_wire recv|send N");
	n = atoi(argv[2]);
	if (n < 1 || n > 16)
		return fail("N must be 1..16");
	ret = setup(&qp);
	if (ret)
		return ret;
	ret = !strcmp(argv[1], "recv") ? do_recv(qp, n) : do_send(qp, n);
	if (!ret && (ibv_destroy_qp(qp) || ibv_dereg_mr(mr) ||
		     ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) ||
		     ibv_close_device(ctx)))
		return fail("teardown");
	return ret;
}
