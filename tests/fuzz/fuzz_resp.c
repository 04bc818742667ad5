// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fuzz_resp.c - libFuzzer target over what a hostile datagram reaches
 * after the parser: the net responder (resp.c, with the engine's checks
 * and memory access behind it) and the requester's response input
 * (req.c), on a real context with RC, UC and UD QPs and a registered
 * buffer, no sockets (the endpoint's test hooks catch what is sent).
 *
 * Input: one control byte, then the UDP payload (BTH through ICRC). The
 * control byte picks the QP (bits 0-1: 0 the one of the opcode's
 * transport, else RC, UC, UD: a mismatch the responder must refuse) and
 * which fields
 * the harness corrects after srdma_wire_parse() so that packets get past
 * the cheap refusals and deep into the protocol: bit 3 the R_Key, bit 4 the VA
 * (into the buffer), bit 5 the PSN (the next one this harness expects), bit 6
 * posts a receive first, bit 7 the Q_Key. As in the endpoint, a packet the
 * parser refuses or whose P_Key is not the default goes no further, and the
 * DQPN is always the QP's (the endpoint finds the QP by it); bit 2 sends a
 * non-response to the requester as well, which must refuse it.
 *
 * Checked beyond ASan/UBSan: every packet the responder sends in answer
 * parses and carries the right ICRC for its path. The QP is brought back
 * from ERR (as a RESET/INIT/RTR would) so the run goes on.
 *
 * Seeds: tests/fuzz/corpus-resp/, one valid packet per opcode behind the
 * control byte 0xf8 (every correction, a receive posted): written by
 * tests/net/wire_gen.c corpus DIR 0xf8.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "transport/net/net.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MTU	 1024u
#define BUF	 65536u
#define PEER_QPN 0x4242u
#define QKEY	 0x1111u

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "fuzz_resp: %s:%d: %s\n", __FILE__,    \
				__LINE__, #c);                                 \
			abort();                                               \
		}                                                              \
	} while (0)

struct fx {
	struct srdma_context *ctx;
	struct srdma_pd *pd;
	struct srdma_cq *cq;
	struct srdma_mr *mr;
	uint8_t *buf;
	struct srdma_qp *qp[3];
	struct srdma_net_qp nq[3];
	struct srdma_net_qp_stats st[3];
	struct srdma_wire_path peer;
	uint32_t psn[3];
};

static struct fx fx;
static char tmpdir[] = "/tmp/srdma-fuzz-XXXXXX"; /* ours to remove, if made */
static bool made_tmpdir;

/* At exit (libFuzzer's time is up): leave no state directory behind. */
static void cleanup(void)
{
	srdma_context_close(fx.ctx);
	if (made_tmpdir) {
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd))
			fprintf(stderr, "fuzz_resp: could not remove %s\n",
				tmpdir);
	}
}

static void v4gid(uint8_t g[16], uint8_t last)
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	g[12] = 198;
	g[13] = 18;
	g[15] = last;
}

/* What the responder sends must be a packet, with its ICRC. */
static int tx_check(struct srdma_net_qp *nq, const struct iovec *iov, int n)
{
	static uint8_t b[SRDMA_MAX_IB_HDR + 4096 + 8];
	struct srdma_pkt p;
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++) {
		CHECK(len + iov[i].iov_len <= sizeof(b));
		memcpy(b + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	CHECK(srdma_wire_parse(b, len, &p) == SRDMA_DROP_NONE);
	CHECK(srdma_wire_icrc_check(&nq->path, b, len));
	return 0;
}

static int req_tx(struct srdma_net_qp *nq, const struct srdma_wire_path *p,
		  const struct iovec *iov, int n)
{
	(void)p;
	return tx_check(nq, iov, n);
}

static void req_comp(struct srdma_qp *qp, uint64_t wr_id, uint32_t wr_opcode,
		     bool signaled, int status, uint32_t byte_len)
{
	(void)qp;
	(void)wr_id;
	(void)wr_opcode;
	(void)signaled;
	(void)status;
	(void)byte_len;
}

static void reset(int k, uint32_t psn)
{
	struct srdma_net_qp *nq = &fx.nq[k];

	atomic_store(&fx.qp[k]->sh->state, IBV_QPS_RTR);
	pthread_mutex_lock(&fx.qp[k]->sq_lock);
	pthread_mutex_lock(&nq->resp_lock);
	srdma_netresp_reset(nq, psn);
	pthread_mutex_unlock(&nq->resp_lock);
	pthread_mutex_unlock(&fx.qp[k]->sq_lock);
	fx.psn[k] = psn;
}

static void qp_new(int k, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr_ex qa = {0};
	struct ibv_qp_attr at = {0};
	struct srdma_net_qp *nq = &fx.nq[k];
	int mask;

	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = &fx.pd->ibpd;
	qa.send_cq = &fx.cq->ib.cq;
	qa.recv_cq = &fx.cq->ib.cq;
	qa.qp_type = type;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 4;
	CHECK(srdma_qp_create(fx.ctx, &qa, &fx.qp[k]) == 0);
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (type == IBV_QPT_UD) {
		at.qkey = QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ |
				     IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	CHECK(srdma_qp_modify(fx.qp[k], &at, mask) == 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (type != IBV_QPT_UD) {
		at.path_mtu = IBV_MTU_1024;
		at.dest_qp_num = PEER_QPN;
		at.ah_attr.dlid = 7;
		at.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (type == IBV_QPT_RC) {
			at.max_dest_rd_atomic = 4;
			at.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
	}
	CHECK(srdma_qp_modify(fx.qp[k], &at, mask) == 0);

	/* The net half, as qp_net.c builds it at RTR. */
	nq->qp = fx.qp[k];
	nq->ctx = fx.ctx;
	nq->qpn = fx.qp[k]->ib.qp.qp_num;
	nq->connected = type != IBV_QPT_UD;
	v4gid(nq->path.sip, 1);
	v4gid(nq->path.dip, 2);
	nq->path.sport = 0xc001;
	nq->path.dport = SRDMA_ROCE_PORT;
	nq->dqpn = PEER_QPN;
	nq->mtu = MTU;
	nq->st = &fx.st[k];
	pthread_mutex_init(&nq->resp_lock, NULL);
	nq->resp = srdma_netresp_new(nq);
	CHECK(nq->resp);
	nq->req = srdma_netreq_new(nq);
	CHECK(nq->req);
	reset(k, 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct srdma_cq_args ca = {.cqe = 1024};
	struct srdma_mr_args ma = {0};
	(void)argc;
	(void)argv;
	if (!getenv("SRDMA_DIR")) {
		CHECK(mkdtemp(tmpdir));
		made_tmpdir = true;
		setenv("SRDMA_DIR", tmpdir, 1);
	}
	CHECK(srdma_context_open(srdma_device_get(), &fx.ctx) == 0);
	CHECK(srdma_pd_alloc(fx.ctx, &fx.pd) == 0);
	CHECK(srdma_cq_create(fx.ctx, &ca, &fx.cq) == 0);
	fx.buf = aligned_alloc(4096, BUF);
	CHECK(fx.buf);
	memset(fx.buf, 0, BUF);
	ma.addr = fx.buf;
	ma.length = BUF;
	ma.iova = (uintptr_t)fx.buf;
	ma.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	CHECK(srdma_mr_reg(&fx.pd->ibpd, &ma, &fx.mr) == 0);
	srdma_netresp_tx_hook = tx_check;
	srdma_netreq_tx_hook = req_tx;
	srdma_netreq_comp_hook = req_comp;
	qp_new(0, IBV_QPT_RC);
	qp_new(1, IBV_QPT_UC);
	qp_new(2, IBV_QPT_UD);
	v4gid(fx.peer.sip, 2);
	v4gid(fx.peer.dip, 1);
	fx.peer.sport = 0xc001;
	fx.peer.dport = SRDMA_ROCE_PORT;
	atexit(cleanup);
	return 0;
}

static bool is_response(uint8_t opcode)
{
	uint8_t op = opcode & 0x1f;

	return op >= SRDMA_OP_READ_RESP_FIRST && op <= SRDMA_OP_ATOMIC_ACK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ibv_wc wc[16];
	struct srdma_pkt p;
	uint8_t ctl;
	int k;

	if (size < 1)
		return 0;
	ctl = data[0];
	if (srdma_wire_parse(data + 1, size - 1, &p) != SRDMA_DROP_NONE)
		return 0;
	if ((p.pkey & 0x7fff) != 0x7fff)
		return 0;
	k = (ctl & 3)					? (ctl & 3) - 1
	    : (p.opcode & SRDMA_TR_MASK) == SRDMA_TR_UC ? 1
	    : (p.opcode & SRDMA_TR_MASK) == SRDMA_TR_UD ? 2
							: 0;
	p.dqpn = fx.nq[k].qpn;
	if (ctl & 0x08)
		p.rkey = fx.mr->ibmr.rkey;
	if (ctl & 0x10)
		p.va = (uintptr_t)fx.buf + p.va % BUF;
	if (ctl & 0x20)
		p.psn = fx.psn[k];
	if (ctl & 0x80)
		p.qkey = QKEY;
	if (ctl & 0x40) {
		struct ibv_sge sge = {(uintptr_t)fx.buf +
					      (p.psn * 64u) % (BUF - 4096),
				      4096, fx.mr->ibmr.lkey};
		struct ibv_recv_wr wr = {
			.wr_id = p.psn, .sg_list = &sge, .num_sge = 1};
		struct ibv_recv_wr *bad;

		(void)srdma_qp_post_recv(fx.qp[k], &wr, &bad);
	}
	/* The PSN the next request of this QP should carry. */
	if (!is_response(p.opcode)) {
		uint32_t n = 1;

		if ((p.opcode & 0x1f) == SRDMA_OP_READ_REQ && p.dma_len > MTU)
			n = (p.dma_len + MTU - 1) / MTU;
		if (ctl & 0x20 || srdma_psn_cmp(p.psn, fx.psn[k]) >= 0)
			fx.psn[k] = srdma_psn_add(p.psn, n);
	}
	if (is_response(p.opcode) || (ctl & 0x04))
		srdma_netreq_input(&fx.nq[k], &p, &fx.peer);
	if (!is_response(p.opcode))
		srdma_netresp_input(&fx.nq[k], &p, &fx.peer);

	while (srdma_cq_poll(fx.cq, 16, wc) > 0)
		;
	if (atomic_load(&fx.qp[k]->sh->state) == IBV_QPS_ERR)
		reset(k, fx.psn[k]);
	return 0;
}
