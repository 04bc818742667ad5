// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_xrc.c - XRC (docs/design/xrc.md): XRC domains, XRC SRQs, XRC INI
 * (XRC_SEND) and TGT (XRC_RECV) QPs, ibv_open_qp, with the errno and
 * completion statuses of the man pages and of mlx5 (IBTA for the wire).
 *
 * - ibv_open_xrcd: a bad fd is EBADF; a file whose domain nobody holds,
 *   without O_CREAT, is EAGAIN; O_CREAT | O_EXCL on a held one is EINVAL;
 *   unknown oflags EINVAL, comp_mask without OFLAGS EINVAL, unknown
 *   comp_mask bits EOPNOTSUPP; the domain ends with its last holder.
 * - ibv_close_xrcd is EBUSY while an XRC SRQ or a TGT QP uses the domain,
 *   EINVAL on a closed one.
 * - Wrong QP types: post_recv on an INI QP, post_send on a TGT QP, a TGT
 *   QP without a domain, an XRC SRQ without CQ or as a QP's SRQ,
 *   ibv_open_qp of an RC QP, of another domain's TGT QP, or of a QPN that
 *   does not exist: EINVAL.
 * - Traffic from an INI QP in one context to a TGT QP in another: SEND
 *   (legacy WR and ibv_wr_set_xrc_srqn), SEND_WITH_IMM, WRITE, READ and
 *   FETCH_ADD, the receive completion on the XRC SRQ's CQ (qp_num the TGT
 *   QP, src_qp the INI QP); a handle from ibv_open_qp queries the QP.
 * - A remote SRQ number that names no SRQ, or an SRQ of another domain:
 *   IBV_WC_REM_ACCESS_ERR at the sender (NAK Remote Access Error, as IBTA
 *   and rxe's XRC say) and the TGT QP in ERR.
 * - One domain across processes: a child opens the domain of the same
 *   file (O_EXCL there is EINVAL: it exists), creates its own XRC SRQ, and
 *   receives what our INI QP sends through our TGT QP; it also opens our
 *   TGT QP with ibv_open_qp.
 *
 * Runs on the host transport (func.test_xrc) and over the wire inside one
 * test host (net.func.test_xrc, SRDMA_TRANSPORT=net).
 */
#include <fcntl.h>
#include <stdlib.h>

#include "xproc_util.h"

#define MSG 256

struct xs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	uint32_t srqn;
	struct ibv_qp *ini;	/* XRC_SEND */
	struct ibv_qp *tgt;	/* XRC_RECV */
	char *buf;
	size_t len;
	struct ibv_mr *mr;
	uint16_t lid;
};

static char dom_path[] = "/tmp/srdma-xrc-XXXXXX";
static int dom_fd = -1;

/* A file naming a domain, unique to this run. */
static void dom_file(void)
{
	if (dom_fd < 0) {
		dom_fd = mkstemp(dom_path);
		assert_true(dom_fd >= 0);
	}
}

static struct ibv_xrcd *xrcd_open(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = fd;
	a.oflags = oflags;
	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *xsrq_create(struct ibv_context *ctx, struct ibv_pd *pd,
				   struct ibv_xrcd *xrcd, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		      IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd;
	a.xrcd = xrcd;
	a.cq = cq;
	a.attr.max_wr = 64;
	a.attr.max_sge = 1;
	return ibv_create_srq_ex(ctx, &a);
}

static struct ibv_qp *tgt_create(struct ibv_context *ctx, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = x;
	return ibv_create_qp_ex(ctx, &a);
}

static struct ibv_qp *ini_create(struct ibv_context *ctx, struct ibv_pd *pd,
				 struct ibv_cq *cq, bool ex)
{
	struct ibv_qp_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_SEND;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	a.send_cq = cq;
	a.cap.max_send_wr = 64;
	a.cap.max_send_sge = 1;
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_SEND;
	}
	return ibv_create_qp_ex(ctx, &a);
}

/* Open a side: context, PD, CQ, domain (@fd, O_CREAT), SRQ, both QPs and
 * a registered buffer. No cmocka: 0 or -1 (a child uses it too). */
static int xs_open(struct xs *s, int fd, bool ex)
{
	memset(s, 0, sizeof(*s));
	if (xp_open_pd_cq(&s->ctx, &s->pd, &s->cq, 256))
		return -1;
	s->xrcd = xrcd_open(s->ctx, fd, O_CREAT);
	if (!s->xrcd)
		return -1;
	s->srq = xsrq_create(s->ctx, s->pd, s->xrcd, s->cq);
	if (!s->srq || ibv_get_srq_num(s->srq, &s->srqn))
		return -1;
	s->tgt = tgt_create(s->ctx, s->xrcd);
	s->ini = ini_create(s->ctx, s->pd, s->cq, ex);
	if (!s->tgt || !s->ini)
		return -1;
	s->len = 4 * MSG;
	s->buf = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->buf, s->len, DP_ALL_ACCESS);
	if (!s->mr || xp_port_lid(s->ctx, &s->lid))
		return -1;
	return 0;
}

static void xs_close(struct xs *s)
{
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->buf && s->buf != MAP_FAILED)
		munmap(s->buf, s->len);
	if (s->ini)
		ibv_destroy_qp(s->ini);
	if (s->tgt)
		ibv_destroy_qp(s->tgt);
	if (s->srq)
		ibv_destroy_srq(s->srq);
	if (s->xrcd)
		ibv_close_xrcd(s->xrcd);
	xp_close_pd_cq(s->ctx, s->pd, s->cq);
}

/*
 * Connect an XRC QP to @rqpn at @rlid (the kernel's masks for its type).
 * No cmocka. Return 0 or the errno of the failing modify.
 */
static int xrc_connect(struct ibv_qp *qp, uint32_t rqpn, uint16_t rlid)
{
	bool tgt = qp->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = tgt ? DP_REMOTE_ACCESS : 0;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = rqpn;
	a.ah_attr.dlid = rlid;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	fu_av_fix(qp->context, &a.ah_attr);
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  (tgt ? IBV_QP_MAX_DEST_RD_ATOMIC |
							 IBV_QP_MIN_RNR_TIMER
					       : 0));
	if (r)
		return r;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					     IBV_QP_TIMEOUT |
					     (tgt ? 0 : IBV_QP_RETRY_CNT |
							IBV_QP_RNR_RETRY |
							IBV_QP_MAX_QP_RD_ATOMIC));
}

/* One WR of @op from @s's INI QP to SRQ @srqn, MSG bytes at @off. */
static int xpost(struct xs *s, enum ibv_wr_opcode op, uint32_t srqn,
		 size_t off, uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, MSG, s->mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.qp_type.xrc.remote_srqn = srqn;
	wr.imm_data = htonl(0x1234);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		sge.length = 8;
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(s->ini, &wr, &bad);
}

static int xrecv_post(struct xs *s, size_t off, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, MSG, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_srq_recv(s->srq, &wr, &bad);
}

/* ---- ibv_open_xrcd / ibv_close_xrcd -------------------------------------- */

static void test_xrcd_open_errors(void **state)
{
	struct ibv_context *ctx = fu_open_srdma();
	struct ibv_xrcd_init_attr a;
	struct ibv_xrcd *x1, *x2, *x;

	(void)state;
	dom_file();
	/* A descriptor that is not open. */
	x = xrcd_open(ctx, 1000, O_CREAT);
	fu_expect(!x && errno == EBADF, "bad fd: %p %s", (void *)x,
		  fu_errname(errno));
	/* Nobody holds this file's domain: without O_CREAT, EAGAIN. */
	x = xrcd_open(ctx, dom_fd, 0);
	fu_expect(!x && errno == EAGAIN, "no domain, no O_CREAT: %p %s",
		  (void *)x, fu_errname(errno));
	x1 = xrcd_open(ctx, dom_fd, O_CREAT | O_EXCL);
	fu_expect(x1 != NULL, "O_CREAT | O_EXCL on a new domain: %s",
		  fu_errname(errno));
	x = xrcd_open(ctx, dom_fd, O_CREAT | O_EXCL);
	fu_expect(!x && errno == EINVAL, "O_EXCL on an existing domain: %p %s",
		  (void *)x, fu_errname(errno));
	x2 = xrcd_open(ctx, dom_fd, 0);
	fu_expect(x2 != NULL, "joining an existing domain: %s",
		  fu_errname(errno));
	x = xrcd_open(ctx, dom_fd, O_TRUNC);
	fu_expect(!x && errno == EINVAL, "oflags O_TRUNC: %p %s", (void *)x,
		  fu_errname(errno));
	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD;
	a.fd = dom_fd;
	x = ibv_open_xrcd(ctx, &a);
	fu_expect(!x && errno == EINVAL, "comp_mask without OFLAGS: %p %s",
		  (void *)x, fu_errname(errno));
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS |
		      IBV_XRCD_INIT_ATTR_RESERVED;
	x = ibv_open_xrcd(ctx, &a);
	fu_expect(!x && errno == EOPNOTSUPP, "comp_mask unknown bit: %p %s",
		  (void *)x, fu_errname(errno));
	/* Private domains need no file. */
	x = xrcd_open(ctx, -1, O_CREAT);
	fu_expect(x != NULL, "private domain: %s", fu_errname(errno));
	if (x)
		fu_expect_int(ibv_close_xrcd(x), 0, "close private domain");
	if (x1)
		fu_expect_int(ibv_close_xrcd(x1), 0, "close creator");
	/* Still held by x2. */
	x = xrcd_open(ctx, dom_fd, 0);
	fu_expect(x != NULL, "domain held by its other handle: %s",
		  fu_errname(errno));
	if (x)
		ibv_close_xrcd(x);
	if (x2)
		fu_expect_int(ibv_close_xrcd(x2), 0, "close last holder");
	x = xrcd_open(ctx, dom_fd, 0);
	fu_expect(!x && errno == EAGAIN, "domain gone with its last holder: "
		  "%p %s", (void *)x, fu_errname(errno));
	if (x2)
		fu_expect_int(ibv_close_xrcd(x2), EINVAL, "close twice");
	ibv_close_device(ctx);
	fu_done();
}

static void test_xrcd_close_busy(void **state)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_xrcd *x;
	struct ibv_srq *srq;
	struct ibv_qp *tgt;

	(void)state;
	assert_int_equal(xp_open_pd_cq(&ctx, &pd, &cq, 16), 0);
	x = xrcd_open(ctx, -1, O_CREAT);
	assert_non_null(x);
	srq = xsrq_create(ctx, pd, x, cq);
	assert_non_null(srq);
	fu_expect_int(ibv_close_xrcd(x), EBUSY, "close with an XRC SRQ");
	fu_expect_int(ibv_destroy_cq(cq), EBUSY, "destroy the XRC SRQ's CQ");
	fu_expect_int(ibv_destroy_srq(srq), 0, "destroy XRC SRQ");
	tgt = tgt_create(ctx, x);
	assert_non_null(tgt);
	fu_expect_int(ibv_close_xrcd(x), EBUSY, "close with a TGT QP");
	fu_expect_int(ibv_destroy_qp(tgt), 0, "destroy TGT QP");
	fu_expect_int(ibv_close_xrcd(x), 0, "close idle domain");
	xp_close_pd_cq(ctx, pd, cq);
	fu_done();
}

/* ---- wrong types ------------------------------------------------------- */

static void test_xrc_wrong_types(void **state)
{
	struct ibv_srq_init_attr_ex sa;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_open_attr oa;
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_send_wr swr, *sbad;
	struct ibv_xrcd *other;
	struct ibv_qp *q;
	struct ibv_srq *srq;
	struct xs s;

	(void)state;
	assert_int_equal(xs_open(&s, -1, false), 0);
	fu_expect_int(ibv_post_recv(s.ini, &rwr, &rbad), EINVAL,
		      "post_recv on XRC_SEND");
	memset(&swr, 0, sizeof(swr));
	swr.opcode = IBV_WR_SEND;
	fu_expect_int(ibv_post_send(s.tgt, &swr, &sbad), EINVAL,
		      "post_send on XRC_RECV");
	q = tgt_create(s.ctx, NULL);
	fu_expect(!q && errno == EINVAL, "XRC_RECV without domain: %p %s",
		  (void *)q, fu_errname(errno));
	memset(&sa, 0, sizeof(sa));
	sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_XRCD;
	sa.srq_type = IBV_SRQT_XRC;
	sa.pd = s.pd;
	sa.xrcd = s.xrcd;
	sa.attr.max_wr = 4;
	srq = ibv_create_srq_ex(s.ctx, &sa);
	fu_expect(!srq && errno == EINVAL, "XRC SRQ without CQ: %p %s",
		  (void *)srq, fu_errname(errno));
	/* An XRC SRQ is reached through its domain, not as a QP's SRQ. */
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ia.recv_cq = s.cq;
	ia.srq = s.srq;
	ia.cap.max_send_wr = 1;
	q = ibv_create_qp(s.pd, &ia);
	fu_expect(!q && errno == EINVAL, "RC QP on an XRC SRQ: %p %s",
		  (void *)q, fu_errname(errno));
	/* ibv_open_qp: only a TGT QP of the same domain. */
	memset(&oa, 0, sizeof(oa));
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		       IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.xrcd = s.xrcd;
	oa.qp_num = s.ini->qp_num;
	q = ibv_open_qp(s.ctx, &oa);
	fu_expect(!q && errno == EINVAL, "open_qp of an INI QP: %p %s",
		  (void *)q, fu_errname(errno));
	oa.qp_num = s.tgt->qp_num + 100;
	q = ibv_open_qp(s.ctx, &oa);
	fu_expect(!q && errno == EINVAL, "open_qp of no QP: %p %s", (void *)q,
		  fu_errname(errno));
	other = xrcd_open(s.ctx, -1, O_CREAT);
	assert_non_null(other);
	oa.qp_num = s.tgt->qp_num;
	oa.xrcd = other;
	q = ibv_open_qp(s.ctx, &oa);
	fu_expect(!q && errno == EINVAL, "open_qp through another domain: "
		  "%p %s", (void *)q, fu_errname(errno));
	oa.xrcd = s.xrcd;
	oa.qp_type = IBV_QPT_RC;
	q = ibv_open_qp(s.ctx, &oa);
	fu_expect(!q && errno == EINVAL, "open_qp type RC: %p %s", (void *)q,
		  fu_errname(errno));
	ibv_close_xrcd(other);
	xs_close(&s);
	fu_done();
}

/* ---- traffic ------------------------------------------------------------- */

/* Two sides, each its own context: a's INI -> b's TGT, b's TGT back. */
static void pair_open(struct xs *a, struct xs *b, bool ex)
{
	assert_int_equal(xs_open(a, -1, ex), 0);
	assert_int_equal(xs_open(b, -1, ex), 0);
	assert_int_equal(xrc_connect(a->ini, b->tgt->qp_num, b->lid), 0);
	assert_int_equal(xrc_connect(b->tgt, a->ini->qp_num, a->lid), 0);
}

static void test_xrc_traffic(void **state)
{
	struct ibv_qp_open_attr oa;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp_ex *qx;
	struct ibv_wc wc;
	struct ibv_qp *h;
	struct xs a, b;
	uint64_t v;

	(void)state;
	pair_open(&a, &b, true);
	memset(a.buf, 'a', a.len);
	memset(b.buf, 0, b.len);
	/* SEND into b's SRQ; the CQE on the SRQ's CQ names the TGT QP. */
	assert_int_equal(xrecv_post(&b, 0, 7), 0);
	assert_int_equal(xpost(&a, IBV_WR_SEND, b.srqn, 0, 0, 0, 1), 0);
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "sender");
	if (dp_expect_wc(b.cq, IBV_WC_SUCCESS, &wc, "receiver")) {
		fu_expect(wc.wr_id == 7 && wc.opcode == IBV_WC_RECV &&
				  wc.byte_len == MSG &&
				  wc.qp_num == b.tgt->qp_num &&
				  wc.src_qp == a.ini->qp_num,
			  "recv CQE: wr_id %llu opcode %d len %u qp %#x src %#x",
			  (unsigned long long)wc.wr_id, wc.opcode, wc.byte_len,
			  wc.qp_num, wc.src_qp);
	}
	fu_expect(b.buf[0] == 'a' && b.buf[MSG - 1] == 'a', "SEND data");
	/* SEND_WITH_IMM. */
	assert_int_equal(xrecv_post(&b, MSG, 8), 0);
	assert_int_equal(xpost(&a, IBV_WR_SEND_WITH_IMM, b.srqn, 0, 0, 0, 2),
			 0);
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "sender");
	if (dp_expect_wc(b.cq, IBV_WC_SUCCESS, &wc, "receiver"))
		fu_expect((wc.wc_flags & IBV_WC_WITH_IMM) &&
				  wc.imm_data == htonl(0x1234),
			  "imm: flags %#x imm %#x", wc.wc_flags, wc.imm_data);
	/* WRITE and READ: keys checked in the SRQ's PD. */
	memset(a.buf, 'w', MSG);
	assert_int_equal(xpost(&a, IBV_WR_RDMA_WRITE, b.srqn, 0,
			       (uintptr_t)b.buf + 2 * MSG, b.mr->rkey, 3),
			 0);
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "sender");
	fu_expect(b.buf[2 * MSG] == 'w', "WRITE data");
	memset(b.buf + 3 * MSG, 'r', MSG);
	assert_int_equal(xpost(&a, IBV_WR_RDMA_READ, b.srqn, MSG,
			       (uintptr_t)b.buf + 3 * MSG, b.mr->rkey, 4),
			 0);
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "sender");
	fu_expect(a.buf[MSG] == 'r', "READ data");
	memset(b.buf, 0, 8);
	assert_int_equal(xpost(&a, IBV_WR_ATOMIC_FETCH_AND_ADD, b.srqn,
			       2 * MSG, (uintptr_t)b.buf, b.mr->rkey, 5),
			 0);
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "sender");
	memcpy(&v, b.buf, 8);
	fu_expect(v == 5, "FETCH_ADD result %llu", (unsigned long long)v);
	/* The extended API names the SRQ with ibv_wr_set_xrc_srqn. */
	qx = ibv_qp_to_qp_ex(a.ini);
	assert_non_null(qx);
	assert_int_equal(xrecv_post(&b, 0, 9), 0);
	ibv_wr_start(qx);
	qx->wr_id = 10;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_xrc_srqn(qx, b.srqn);
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 16);
	fu_expect_int(ibv_wr_complete(qx), 0, "wr_complete");
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "sender");
	if (dp_expect_wc(b.cq, IBV_WC_SUCCESS, &wc, "receiver"))
		fu_expect(wc.wr_id == 9 && wc.byte_len == 16,
			  "qp_ex recv: wr_id %llu len %u",
			  (unsigned long long)wc.wr_id, wc.byte_len);
	/* Another handle on b's TGT QP. */
	memset(&oa, 0, sizeof(oa));
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		       IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.xrcd = b.xrcd;
	oa.qp_num = b.tgt->qp_num;
	h = ibv_open_qp(b.ctx, &oa);
	fu_expect(h != NULL, "open_qp: %s", fu_errname(errno));
	if (h) {
		fu_expect(h->qp_num == b.tgt->qp_num &&
				  h->qp_type == IBV_QPT_XRC_RECV,
			  "opened handle: qpn %#x type %d", h->qp_num,
			  h->qp_type);
		memset(&qa, 0, sizeof(qa));
		fu_expect_int(ibv_query_qp(h, &qa, IBV_QP_STATE, &ia), 0,
			      "query opened handle");
		fu_expect(qa.qp_state == IBV_QPS_RTS, "opened state %d",
			  qa.qp_state);
		/* The creator's destroy leaves it to the other handle. */
		fu_expect_int(ibv_destroy_qp(b.tgt), 0, "destroy creator");
		b.tgt = NULL;
		fu_expect_int(ibv_close_xrcd(b.xrcd), EBUSY,
			      "close domain with an opened TGT QP");
		fu_expect_int(ibv_destroy_qp(h), 0, "destroy opened handle");
	}
	xs_close(&a);
	xs_close(&b);
	fu_done();
}

/* A remote SRQ number that names no SRQ of the TGT QP's domain. */
static void bad_srqn(bool other_domain)
{
	struct ibv_wc wc;
	struct xs a, b, c;
	uint32_t srqn;

	pair_open(&a, &b, false);
	if (other_domain) {
		/* c's SRQ: another domain, same host. */
		assert_int_equal(xs_open(&c, -1, false), 0);
		assert_int_equal(xrecv_post(&c, 0, 1), 0);
		srqn = c.srqn;
	} else {
		srqn = b.srqn + 1;	/* no SRQ in that slot */
	}
	assert_int_equal(xrecv_post(&b, 0, 1), 0);
	assert_int_equal(xpost(&a, IBV_WR_SEND, srqn, 0, 0, 0, 1), 0);
	dp_expect_wc(a.cq, IBV_WC_REM_ACCESS_ERR, &wc, "sender");
	fu_expect(dp_qp_state(b.tgt) == IBV_QPS_ERR, "TGT QP state %d",
		  dp_qp_state(b.tgt));
	dp_expect_no_wc(b.cq, "receiver SRQ");
	if (other_domain) {
		dp_expect_no_wc(c.cq, "other domain's SRQ");
		xs_close(&c);
	}
	xs_close(&a);
	xs_close(&b);
	fu_done();
}

static void test_xrc_bad_srqn(void **state)
{
	(void)state;
	bad_srqn(false);
}

static void test_xrc_srq_of_other_domain(void **state)
{
	(void)state;
	bad_srqn(true);
}

/* ---- one domain, two processes ----------------------------------------- */

struct xinfo {
	uint32_t srqn;
	uint32_t tgt_qpn;
	int ok_excl;		/* child: O_EXCL refused with EINVAL */
	int ok_open;		/* child: ibv_open_qp of our TGT QP worked */
};

/* The child: joins the domain of the same file, makes its own XRC SRQ,
 * receives one message, checks it, reports. No cmocka. */
static void child(int fd)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_xrcd *x, *xe;
	struct ibv_srq *srq;
	struct ibv_qp_open_attr oa;
	struct ibv_qp *h;
	struct ibv_wc wc;
	struct xinfo in, out;
	struct ibv_mr *mr;
	char *buf;
	int i, df, n = 0;

	memset(&out, 0, sizeof(out));
	df = open(dom_path, O_RDONLY);
	XCHK(df >= 0);
	XCHK(!xp_open_pd_cq(&ctx, &pd, &cq, 16));
	x = xrcd_open(ctx, df, O_CREAT);
	XCHK(x);
	xe = xrcd_open(ctx, df, O_CREAT | O_EXCL);
	out.ok_excl = !xe && errno == EINVAL;
	srq = xsrq_create(ctx, pd, x, cq);
	XCHK(srq && !ibv_get_srq_num(srq, &out.srqn));
	buf = calloc(1, MSG);
	XCHK(buf);
	mr = ibv_reg_mr(pd, buf, MSG, IBV_ACCESS_LOCAL_WRITE);
	XCHK(mr);
	{
		struct ibv_sge sge = { (uintptr_t)buf, MSG, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 42, .sg_list = &sge,
					  .num_sge = 1 };
		struct ibv_recv_wr *bad;

		XCHK(!ibv_post_srq_recv(srq, &wr, &bad));
	}
	XCHK(!xsend(fd, &out, sizeof(out)));
	XCHK(!xrecv(fd, &in, sizeof(in)));
	memset(&oa, 0, sizeof(oa));
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		       IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.xrcd = x;
	oa.qp_num = in.tgt_qpn;
	h = ibv_open_qp(ctx, &oa);
	out.ok_open = h && h->qp_num == in.tgt_qpn;
	for (i = 0; i < 5000 && !n; i++) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (!n)
			usleep(1000);
	}
	XCHK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 42 &&
	     wc.byte_len == MSG && wc.qp_num == in.tgt_qpn);
	for (i = 0; i < MSG; i++)
		XCHK(buf[i] == 'x');
	XCHK(!xsend(fd, &out, sizeof(out)));
	if (h)
		ibv_destroy_qp(h);
	ibv_dereg_mr(mr);
	ibv_destroy_srq(srq);
	ibv_close_xrcd(x);
	xp_close_pd_cq(ctx, pd, cq);
	close(df);
}

static void test_xrc_domain_across_processes(void **state)
{
	struct xinfo in, out;
	struct ibv_wc wc;
	struct xs a, b;
	int fd, st;
	pid_t pid;

	(void)state;
	dom_file();
	/* b's domain is the file's; a sends through b's TGT QP to the
	 * child's SRQ in the same domain. */
	assert_int_equal(xs_open(&a, -1, false), 0);
	assert_int_equal(xs_open(&b, dom_fd, false), 0);
	assert_int_equal(xrc_connect(a.ini, b.tgt->qp_num, b.lid), 0);
	assert_int_equal(xrc_connect(b.tgt, a.ini->qp_num, a.lid), 0);
	pid = xp_spawn(&fd, child, 30);
	assert_int_equal(xrecv(fd, &in, sizeof(in)), 0);
	fu_expect(in.ok_excl, "child: O_EXCL on our domain not EINVAL");
	memset(&out, 0, sizeof(out));
	out.tgt_qpn = b.tgt->qp_num;
	assert_int_equal(xsend(fd, &out, sizeof(out)), 0);
	memset(a.buf, 'x', MSG);
	assert_int_equal(xpost(&a, IBV_WR_SEND, in.srqn, 0, 0, 0, 1), 0);
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "sender");
	assert_int_equal(xrecv(fd, &in, sizeof(in)), 0);
	fu_expect(in.ok_open, "child: ibv_open_qp of our TGT QP failed");
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && !WEXITSTATUS(st), "child status %#x", st);
	close(fd);
	xs_close(&a);
	xs_close(&b);
	fu_done();
}

static int teardown(void **state)
{
	(void)state;
	if (dom_fd >= 0) {
		close(dom_fd);
		unlink(dom_path);
		dom_fd = -1;
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xrcd_open_errors),
		cmocka_unit_test(test_xrcd_close_busy),
		cmocka_unit_test(test_xrc_wrong_types),
		cmocka_unit_test(test_xrc_traffic),
		cmocka_unit_test(test_xrc_bad_srqn),
		cmocka_unit_test(test_xrc_srq_of_other_domain),
		cmocka_unit_test(test_xrc_domain_across_processes),
	};

	return cmocka_run_group_tests(tests, NULL, teardown);
}
