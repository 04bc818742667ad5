// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_dp_rc.c - the data path between two contexts of one process (docs
 * verbs-semantics.md 4 windows, 5.2-5.5 checks and completion statuses,
 * 6 dereg).
 *
 * A is the requester, B the responder; each has its own context, so
 * traffic takes the cross-context path. Each error test checks both
 * sides: the requester's WC status, the responder's WC where the tables
 * say one exists (and none where they say none), the QP states, and that
 * later WRs of a QP in ERR complete with IBV_WC_WR_FLUSH_ERR.
 */
#include "dp_util.h"

static struct dp_ep A, B;

/* Objects a test made beyond the endpoints, freed by the teardown. */
static struct ibv_mw *xmw[8];
static struct ibv_mr *xmr[8];
static struct ibv_pd *xpd[4];

static struct ibv_mw *track_mw(struct ibv_mw *mw)
{
	size_t i;

	assert_non_null(mw);
	for (i = 0; i < 8; i++)
		if (!xmw[i])
			return xmw[i] = mw;
	fail_msg("too many MWs");
	return NULL;
}

static struct ibv_mr *track_mr(struct ibv_mr *mr)
{
	size_t i;

	assert_non_null(mr);
	for (i = 0; i < 8; i++)
		if (!xmr[i])
			return xmr[i] = mr;
	fail_msg("too many MRs");
	return NULL;
}

static void untrack_mr(struct ibv_mr *mr)
{
	size_t i;

	for (i = 0; i < 8; i++)
		if (xmr[i] == mr)
			xmr[i] = NULL;
}

static struct ibv_pd *track_pd(struct ibv_pd *pd)
{
	size_t i;

	assert_non_null(pd);
	for (i = 0; i < 4; i++)
		if (!xpd[i])
			return xpd[i] = pd;
	fail_msg("too many PDs");
	return NULL;
}

static int setup(void **state)
{
	dp_ep_open(&A, false);
	dp_ep_open(&B, true);
	fu.pg = fu_page();
	fu_failures = 0;
	return 0;
}

static int teardown(void **state)
{
	size_t i;

	for (i = 0; i < 8; i++)
		if (xmw[i])
			ibv_dealloc_mw(xmw[i]);
	if (A.qp)
		ibv_destroy_qp(A.qp);
	if (B.qp)
		ibv_destroy_qp(B.qp);
	A.qp = B.qp = NULL;
	for (i = 0; i < 8; i++)
		if (xmr[i])
			ibv_dereg_mr(xmr[i]);
	for (i = 0; i < 4; i++)
		if (xpd[i])
			ibv_dealloc_pd(xpd[i]);
	memset(xmw, 0, sizeof(xmw));
	memset(xmr, 0, sizeof(xmr));
	memset(xpd, 0, sizeof(xpd));
	dp_ep_close(&A);
	dp_ep_close(&B);
	return 0;
}

#define DP_TEST(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

/* Connect A and B with QPs of @type; @acc_a/@acc_b their qp_access_flags. */
static void pair_k(enum ibv_qp_type type, const struct dp_conn *ka,
		   const struct dp_conn *kb)
{
	dp_qp_create(&A, type, 0);
	dp_qp_create(&B, type, 0);
	dp_connect(&A, B.qp->qp_num, A.lid, ka);
	dp_connect(&B, A.qp->qp_num, B.lid, kb);
}

static void pair(enum ibv_qp_type type, unsigned int acc_a, unsigned int acc_b)
{
	struct dp_conn ka = {.access = acc_a}, kb = {.access = acc_b};

	pair_k(type, &ka, &kb);
}

static void rc_pair(void)
{
	pair(IBV_QPT_RC, DP_REMOTE_ACCESS, DP_REMOTE_ACCESS);
}

/* Close a pair of RC QPs in place and open a fresh connected pair. */
static void rc_repair(void)
{
	ibv_destroy_qp(A.qp);
	ibv_destroy_qp(B.qp);
	A.qp = B.qp = NULL;
	rc_pair();
}

static const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_SEND:
		return "SEND";
	case IBV_WR_SEND_WITH_IMM:
		return "SEND_WITH_IMM";
	case IBV_WR_RDMA_READ:
		return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return "ATOMIC_CMP_AND_SWP";
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return "ATOMIC_FETCH_AND_ADD";
	case IBV_WR_SEND_WITH_INV:
		return "SEND_WITH_INV";
	default:
		return "?";
	}
}

/*
 * Bind a type 2 window over @mr through @e's QP with the key
 * ibv_inc_rkey(mw->rkey), as pyverbs does; the key is returned in @key.
 */
static struct ibv_mw *bind_type2(struct dp_ep *e, struct ibv_mr *mr,
				 uint64_t addr, uint64_t len,
				 unsigned int access, enum ibv_wc_status want,
				 uint32_t *key)
{
	struct ibv_mw *mw = track_mw(ibv_alloc_mw(e->pd, IBV_MW_TYPE_2));
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xb1;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	if (key)
		*key = wr.bind_mw.rkey;
	assert_int_equal(ibv_post_send(e->qp, &wr, &bad), 0);
	if (dp_expect_wc(e->cq, want, &wc, "type 2 bind"))
		fu_expect(wc.opcode == IBV_WC_BIND_MW,
			  "bind completion opcode %d, want IBV_WC_BIND_MW",
			  wc.opcode);
	return mw;
}

static struct ibv_mw *bind_type1(struct dp_ep *e, struct ibv_mr *mr,
				 uint64_t addr, uint64_t len,
				 unsigned int access, enum ibv_wc_status want)
{
	struct ibv_mw *mw = track_mw(ibv_alloc_mw(e->pd, IBV_MW_TYPE_1));
	struct ibv_mw_bind b;
	struct ibv_wc wc;

	memset(&b, 0, sizeof(b));
	b.wr_id = 0xb2;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = mr;
	b.bind_info.addr = addr;
	b.bind_info.length = len;
	b.bind_info.mw_access_flags = access;
	assert_int_equal(ibv_bind_mw(e->qp, mw, &b), 0);
	if (dp_expect_wc(e->cq, want, &wc, "type 1 bind"))
		fu_expect(wc.opcode == IBV_WC_BIND_MW,
			  "bind completion opcode %d, want IBV_WC_BIND_MW",
			  wc.opcode);
	return mw;
}

/* ---- 5.3: requester-side (local) errors -------------------------------- */

/*
 * A RDMA WRITE (or @op) from A with one gather SGE @s: A's WR completes
 * with @want, A goes to ERR and flushes; B is untouched and stays RTS.
 */
static void expect_local_error(enum ibv_wr_opcode op, struct ibv_sge s,
			       enum ibv_wc_status want, const char *what)
{
	struct ibv_wc wc;
	char what2[128];

	memset(B.buf, 0x5a, 64);
	if (op == IBV_WR_SEND)
		dp_recv_buf(&B, 0x77, 0, 64);
	assert_int_equal(dp_post(A.qp, 0x10, op, s.addr, s.length, s.lkey,
				 (uintptr_t)B.buf, B.mr->rkey),
			 0);
	snprintf(what2, sizeof(what2), "%s %s", op_name(op), what);
	if (dp_expect_wc(A.cq, want, &wc, what2))
		fu_expect(wc.wr_id == 0x10, "%s: wr_id %#" PRIx64, what2,
			  wc.wr_id);
	dp_expect_state(A.qp, IBV_QPS_ERR, what2);
	dp_expect_flushing(&A, what2);
	dp_expect_no_wc(B.cq, what2);
	dp_expect_state(B.qp, IBV_QPS_RTS, what2);
	fu_expect(((unsigned char *)B.buf)[0] == 0x5a,
		  "%s: target buffer changed", what2);
}

static void test_req_bad_lkey(void **state)
{
	struct ibv_sge s = {(uintptr_t)A.buf, 16, A.mr->lkey ^ 0x80};

	rc_pair();
	expect_local_error(IBV_WR_RDMA_WRITE, s, IBV_WC_LOC_PROT_ERR,
			   "lkey with a wrong tag");
	rc_repair();
	s.lkey = 0x00abcd00; /* an index nobody uses */
	expect_local_error(IBV_WR_SEND, s, IBV_WC_LOC_PROT_ERR, "unknown lkey");
	fu_done();
}

static void test_req_mw_key_as_lkey(void **state)
{
	struct ibv_mw *mw;
	struct ibv_sge s = {(uintptr_t)A.buf, 16, 0};

	rc_pair();
	mw = bind_type1(&A, A.mr, (uintptr_t)A.buf, A.len,
			IBV_ACCESS_REMOTE_READ, IBV_WC_SUCCESS);
	s.lkey = mw->rkey;
	expect_local_error(IBV_WR_RDMA_WRITE, s, IBV_WC_LOC_PROT_ERR,
			   "MW key as lkey");
	fu_done();
}

static void test_req_lkey_other_pd(void **state)
{
	struct ibv_pd *pd2 = track_pd(ibv_alloc_pd(A.ctx));
	struct ibv_mr *mr2 =
		track_mr(ibv_reg_mr(pd2, A.buf, A.len, DP_ALL_ACCESS));
	struct ibv_sge s = {(uintptr_t)A.buf, 16, mr2->lkey};

	rc_pair();
	expect_local_error(IBV_WR_RDMA_WRITE, s, IBV_WC_LOC_PROT_ERR,
			   "lkey of another PD");
	fu_done();
}

static void test_req_lkey_out_of_bounds(void **state)
{
	struct ibv_sge s = {(uintptr_t)A.buf + A.len - 4, 16, A.mr->lkey};

	rc_pair();
	expect_local_error(IBV_WR_RDMA_WRITE, s, IBV_WC_LOC_PROT_ERR,
			   "SGE past the MR end");
	rc_repair();
	s.addr = (uintptr_t)A.buf - 8;
	expect_local_error(IBV_WR_SEND, s, IBV_WC_LOC_PROT_ERR,
			   "SGE before the MR start");
	fu_done();
}

static void test_req_lkey_deregistered(void **state)
{
	struct ibv_mr *mr2 = ibv_reg_mr(A.pd, A.buf, A.len, DP_ALL_ACCESS);
	struct ibv_sge s = {(uintptr_t)A.buf, 16, 0};

	assert_non_null(mr2);
	s.lkey = mr2->lkey;
	assert_int_equal(ibv_dereg_mr(mr2), 0);
	rc_pair();
	expect_local_error(IBV_WR_RDMA_WRITE, s, IBV_WC_LOC_PROT_ERR,
			   "lkey of a deregistered MR");
	fu_done();
}

/* RDMA READ / ATOMIC destination without LOCAL_WRITE. */
static void test_req_read_dst_without_local_write(void **state)
{
	struct ibv_mr *ro = track_mr(ibv_reg_mr(A.pd, A.buf, A.len, 0));
	struct ibv_sge s = {(uintptr_t)A.buf, 16, ro->lkey};

	rc_pair();
	expect_local_error(IBV_WR_RDMA_READ, s, IBV_WC_LOC_PROT_ERR,
			   "into an SGE without LOCAL_WRITE");
	rc_repair();
	s.length = 8;
	expect_local_error(IBV_WR_ATOMIC_FETCH_AND_ADD, s, IBV_WC_LOC_PROT_ERR,
			   "result into an SGE without LOCAL_WRITE");
	fu_done();
}

static void expect_local_inv_error(uint32_t key, const char *what)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x11;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	if (dp_expect_wc(A.cq, IBV_WC_LOC_QP_OP_ERR, &wc, what))
		fu_expect(wc.wr_id == 0x11, "%s: wr_id %#" PRIx64, what,
			  wc.wr_id);
	dp_expect_state(A.qp, IBV_QPS_ERR, what);
	dp_expect_flushing(&A, what);
	dp_expect_state(B.qp, IBV_QPS_RTS, what);
}

static void test_req_local_inv_unknown_key(void **state)
{
	rc_pair();
	expect_local_inv_error(0x00abcd00, "LOCAL_INV of an unknown key");
	fu_done();
}

static void test_req_local_inv_type1_key(void **state)
{
	struct ibv_mw *mw;

	rc_pair();
	mw = bind_type1(&A, A.mr, (uintptr_t)A.buf, A.len,
			IBV_ACCESS_REMOTE_WRITE, IBV_WC_SUCCESS);
	expect_local_inv_error(mw->rkey, "LOCAL_INV of a type 1 window");
	fu_done();
}

static void test_req_local_inv_plain_mr(void **state)
{
	rc_pair();
	expect_local_inv_error(A.mr->rkey, "LOCAL_INV of a plain MR key");
	fu_done();
}

static void test_req_mw_bind_failure(void **state)
{
	struct ibv_mr *nobind = track_mr(
		ibv_reg_mr(A.pd, A.buf, A.len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));

	rc_pair();
	bind_type2(&A, nobind, (uintptr_t)A.buf, 64, IBV_ACCESS_REMOTE_WRITE,
		   IBV_WC_MW_BIND_ERR, NULL);
	dp_expect_state(A.qp, IBV_QPS_ERR, "type 2 bind, MR lacks MW_BIND");
	dp_expect_flushing(&A, "type 2 bind, MR lacks MW_BIND");
	rc_repair();
	bind_type1(&A, nobind, (uintptr_t)A.buf, 64, IBV_ACCESS_REMOTE_WRITE,
		   IBV_WC_MW_BIND_ERR);
	dp_expect_state(A.qp, IBV_QPS_ERR, "type 1 bind, MR lacks MW_BIND");
	dp_expect_flushing(&A, "type 1 bind, MR lacks MW_BIND");
	dp_expect_state(B.qp, IBV_QPS_RTS, "peer of a failed bind");
	fu_done();
}

/* ---- 5.4: responder-detected errors -------------------------------------- */

static const enum ibv_wr_opcode remote_ops[] = {
	IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_FETCH_AND_ADD,
	IBV_WR_ATOMIC_CMP_AND_SWP,
};
#define N_REMOTE_OPS (sizeof(remote_ops) / sizeof(remote_ops[0]))

/*
 * @op from A at (@raddr, @rkey) of B: A gets @want, B posts no
 * completion, both QPs end in ERR and flush. A fresh pair each call.
 */
static void expect_remote_error(enum ibv_wr_opcode op, uint64_t raddr,
				uint32_t rkey, enum ibv_wc_status want,
				const char *what)
{
	bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		      op == IBV_WR_ATOMIC_CMP_AND_SWP;
	uint32_t len = atomic ? 8 : 16;
	struct ibv_wc wc;
	char w[160];

	snprintf(w, sizeof(w), "%s %s", op_name(op), what);
	rc_repair();
	memset(B.buf, 0x5a, B.len);
	memset(A.buf, 0xa5, 64);
	assert_int_equal(dp_post(A.qp, 0x20, op, (uintptr_t)A.buf, len,
				 A.mr->lkey, raddr, rkey),
			 0);
	if (dp_expect_wc(A.cq, want, &wc, w))
		fu_expect(wc.wr_id == 0x20, "%s: wr_id %#" PRIx64, w, wc.wr_id);
	dp_expect_no_wc(B.cq, w);
	dp_expect_state(A.qp, IBV_QPS_ERR, w);
	dp_expect_state(B.qp, IBV_QPS_ERR, w);
	dp_expect_flushing(&A, w);
	dp_expect_flushing(&B, w);
	fu_expect(((unsigned char *)B.buf)[0] == 0x5a &&
			  ((unsigned char *)B.buf)[B.len - 1] == 0x5a,
		  "%s: target buffer changed", w);
	if (op == IBV_WR_RDMA_READ || atomic)
		fu_expect(((unsigned char *)A.buf)[0] == 0xa5,
			  "%s: local buffer changed", w);
}

static void test_resp_bad_rkey(void **state)
{
	size_t i;

	rc_pair();
	for (i = 0; i < N_REMOTE_OPS; i++) {
		expect_remote_error(remote_ops[i], (uintptr_t)B.buf,
				    B.mr->rkey ^ 0x40, IBV_WC_REM_ACCESS_ERR,
				    "rkey with a wrong tag");
		expect_remote_error(remote_ops[i], (uintptr_t)B.buf, 0,
				    IBV_WC_REM_ACCESS_ERR, "rkey 0");
	}
	fu_done();
}

static void test_resp_stale_rkey(void **state)
{
	struct ibv_mr *mr2 = ibv_reg_mr(B.pd, B.buf, B.len, DP_ALL_ACCESS);
	uint32_t stale;
	size_t i;

	assert_non_null(mr2);
	stale = mr2->rkey;
	assert_int_equal(ibv_dereg_mr(mr2), 0);
	rc_pair();
	for (i = 0; i < N_REMOTE_OPS; i++)
		expect_remote_error(remote_ops[i], (uintptr_t)B.buf, stale,
				    IBV_WC_REM_ACCESS_ERR,
				    "rkey of a deregistered MR");
	fu_done();
}

static void test_resp_rkey_other_pd(void **state)
{
	struct ibv_pd *pd2 = track_pd(ibv_alloc_pd(B.ctx));
	struct ibv_mr *mr2 =
		track_mr(ibv_reg_mr(pd2, B.buf, B.len, DP_ALL_ACCESS));
	size_t i;

	rc_pair();
	for (i = 0; i < N_REMOTE_OPS; i++)
		expect_remote_error(remote_ops[i], (uintptr_t)B.buf, mr2->rkey,
				    IBV_WC_REM_ACCESS_ERR,
				    "rkey of an MR in another PD");
	fu_done();
}

static void test_resp_mr_lacks_remote_access(void **state)
{
	static const unsigned int need[] = {
		IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_REMOTE_ATOMIC,
	};
	size_t i;

	rc_pair();
	for (i = 0; i < N_REMOTE_OPS; i++) {
		/* every bit but the one the operation needs */
		struct ibv_mr *mr2 = ibv_reg_mr(B.pd, B.buf, B.len,
						DP_ALL_ACCESS & ~need[i]);

		assert_non_null(mr2);
		expect_remote_error(remote_ops[i], (uintptr_t)B.buf, mr2->rkey,
				    IBV_WC_REM_ACCESS_ERR,
				    "MR lacking the REMOTE_* bit");
		ibv_dereg_mr(mr2);
	}
	fu_done();
}

static void test_resp_rkey_out_of_bounds(void **state)
{
	size_t i;

	rc_pair();
	for (i = 0; i < N_REMOTE_OPS; i++) {
		bool atomic = i >= 2;
		uint64_t end = (uintptr_t)B.buf + B.len;

		expect_remote_error(remote_ops[i], atomic ? end : end - 8,
				    B.mr->rkey, IBV_WC_REM_ACCESS_ERR,
				    "past the MR end");
		expect_remote_error(remote_ops[i], (uintptr_t)B.buf - 8,
				    B.mr->rkey, IBV_WC_REM_ACCESS_ERR,
				    "before the MR start");
	}
	fu_done();
}

/* WRITE_WITH_IMM with a bad rkey: the receive WQE completes in error. */
static void test_resp_write_imm_bad_rkey(void **state)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, 16, A.mr->lkey};
	struct ibv_wc wc;

	rc_pair();
	dp_recv_buf(&B, 0x31, 0, 64);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x30;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.imm_data = htonl(0x1234);
	wr.wr.rdma.remote_addr = (uintptr_t)B.buf;
	wr.wr.rdma.rkey = B.mr->rkey ^ 0x40;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_REM_ACCESS_ERR, NULL,
		     "WRITE_WITH_IMM bad rkey, requester");
	if (dp_expect_wc(B.cq, IBV_WC_LOC_ACCESS_ERR, &wc,
			 "WRITE_WITH_IMM bad rkey, responder"))
		fu_expect(wc.wr_id == 0x31, "responder wr_id %#" PRIx64,
			  wc.wr_id);
	dp_expect_state(A.qp, IBV_QPS_ERR, "WRITE_WITH_IMM requester");
	dp_expect_state(B.qp, IBV_QPS_ERR, "WRITE_WITH_IMM responder");
	dp_expect_flushing(&A, "WRITE_WITH_IMM requester");
	dp_expect_flushing(&B, "WRITE_WITH_IMM responder");
	fu_done();
}

/* Responder qp_access_flags without the bit: invalid request. */
static void test_resp_qp_access_flags_missing(void **state)
{
	static const unsigned int need[] = {
		IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_REMOTE_ATOMIC,
	};
	size_t i;

	for (i = 0; i < N_REMOTE_OPS; i++) {
		bool atomic = i >= 2;
		struct ibv_wc wc;
		char w[128];

		snprintf(w, sizeof(w), "%s, responder qp_access_flags %#x",
			 op_name(remote_ops[i]), DP_REMOTE_ACCESS & ~need[i]);
		pair(IBV_QPT_RC, DP_REMOTE_ACCESS, DP_REMOTE_ACCESS & ~need[i]);
		memset(B.buf, 0x5a, 64);
		assert_int_equal(dp_post(A.qp, 0x40, remote_ops[i],
					 (uintptr_t)A.buf, atomic ? 8 : 16,
					 A.mr->lkey, (uintptr_t)B.buf,
					 B.mr->rkey),
				 0);
		dp_expect_wc(A.cq, IBV_WC_REM_INV_REQ_ERR, &wc, w);
		dp_expect_no_wc(B.cq, w);
		dp_expect_state(A.qp, IBV_QPS_ERR, w);
		dp_expect_state(B.qp, IBV_QPS_ERR, w);
		dp_expect_flushing(&A, w);
		dp_expect_flushing(&B, w);
		fu_expect(((unsigned char *)B.buf)[0] == 0x5a,
			  "%s: target changed", w);
		ibv_destroy_qp(A.qp);
		ibv_destroy_qp(B.qp);
		A.qp = B.qp = NULL;
	}
	fu_done();
}

/*
 * SEND from A into B's receive WQE @rs: A gets @req, B's WQE completes
 * with @resp, both QPs go to ERR and flush.
 */
static void expect_send_error(struct ibv_sge rs, uint32_t len,
			      enum ibv_wr_opcode op, uint32_t inv,
			      enum ibv_wc_status req, enum ibv_wc_status resp,
			      const char *what)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, len, A.mr->lkey};
	struct ibv_wc wc;
	char w[128];

	assert_int_equal(dp_post_recv(&B, 0x51, &rs, 1), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x50;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.invalidate_rkey = inv;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	snprintf(w, sizeof(w), "%s, requester", what);
	dp_expect_wc(A.cq, req, NULL, w);
	dp_expect_state(A.qp, IBV_QPS_ERR, w);
	dp_expect_flushing(&A, w);
	snprintf(w, sizeof(w), "%s, responder", what);
	if (dp_expect_wc(B.cq, resp, &wc, w))
		fu_expect(wc.wr_id == 0x51, "%s: wr_id %#" PRIx64, w, wc.wr_id);
	dp_expect_state(B.qp, IBV_QPS_ERR, w);
	dp_expect_flushing(&B, w);
}

static void test_resp_recv_bad_lkey(void **state)
{
	struct ibv_sge rs = {(uintptr_t)B.buf, 64, B.mr->lkey ^ 0x40};

	rc_pair();
	expect_send_error(rs, 32, IBV_WR_SEND, 0, IBV_WC_REM_OP_ERR,
			  IBV_WC_LOC_PROT_ERR,
			  "receive buffer with a bad lkey");
	fu_done();
}

static void test_resp_recv_other_pd(void **state)
{
	struct ibv_pd *pd2 = track_pd(ibv_alloc_pd(B.ctx));
	struct ibv_mr *mr2 =
		track_mr(ibv_reg_mr(pd2, B.buf, B.len, DP_ALL_ACCESS));
	struct ibv_sge rs = {(uintptr_t)B.buf, 64, mr2->lkey};

	rc_pair();
	expect_send_error(rs, 32, IBV_WR_SEND, 0, IBV_WC_REM_OP_ERR,
			  IBV_WC_LOC_PROT_ERR, "receive buffer in another PD");
	fu_done();
}

static void test_resp_recv_no_local_write(void **state)
{
	struct ibv_mr *ro = track_mr(ibv_reg_mr(B.pd, B.buf, B.len, 0));
	struct ibv_sge rs = {(uintptr_t)B.buf, 64, ro->lkey};

	rc_pair();
	expect_send_error(rs, 32, IBV_WR_SEND, 0, IBV_WC_REM_OP_ERR,
			  IBV_WC_LOC_PROT_ERR,
			  "receive buffer without LOCAL_WRITE");
	fu_done();
}

static void test_resp_recv_too_small(void **state)
{
	struct ibv_sge rs = {(uintptr_t)B.buf, 16, B.mr->lkey};

	rc_pair();
	expect_send_error(rs, 32, IBV_WR_SEND, 0, IBV_WC_REM_INV_REQ_ERR,
			  IBV_WC_LOC_LEN_ERR,
			  "SEND larger than the receive buffer");
	fu_done();
}

static void test_resp_send_inv_plain_mr(void **state)
{
	struct ibv_sge rs = {(uintptr_t)B.buf, 64, B.mr->lkey};

	rc_pair();
	expect_send_error(rs, 16, IBV_WR_SEND_WITH_INV, B.mr->rkey,
			  IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR,
			  "SEND_WITH_INV naming a plain MR key");
	fu_done();
}

static void test_resp_rnr_retry_exceeded(void **state)
{
	struct dp_conn ka = {.access = DP_REMOTE_ACCESS, .rnr_retry = 0};
	struct dp_conn kb = {.access = DP_REMOTE_ACCESS, .min_rnr_timer = 1};
	uint64_t t0;

	pair_k(IBV_QPT_RC, &ka, &kb);
	t0 = dp_now_ms();
	assert_int_equal(dp_post(A.qp, 0x60, IBV_WR_SEND, (uintptr_t)A.buf, 8,
				 A.mr->lkey, 0, 0),
			 0);
	dp_expect_wc(A.cq, IBV_WC_RNR_RETRY_EXC_ERR, NULL,
		     "SEND with no receive WQE, rnr_retry 0");
	fu_expect(dp_now_ms() - t0 < 500, "RNR failure took %" PRIu64 " ms",
		  dp_now_ms() - t0);
	dp_expect_state(A.qp, IBV_QPS_ERR, "RNR requester");
	dp_expect_flushing(&A, "RNR requester");
	dp_expect_no_wc(B.cq, "RNR responder");
	dp_expect_state(B.qp, IBV_QPS_RTS, "RNR responder");
	fu_done();
}

/* ---- 5.4: successful special cases ------------------------------------- */

static void test_ok_send_with_imm(void **state)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, 100, A.mr->lkey};
	struct ibv_wc wc;

	rc_pair();
	memset(A.buf, 0x3c, 100);
	dp_recv_buf(&B, 0x71, 0, 256);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x70;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.imm_data = htonl(0xcafe);
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "SEND_WITH_IMM requester"))
		fu_expect(wc.opcode == IBV_WC_SEND && wc.wr_id == 0x70,
			  "requester opcode %d wr_id %#" PRIx64, wc.opcode,
			  wc.wr_id);
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "SEND_WITH_IMM receiver")) {
		fu_expect(wc.opcode == IBV_WC_RECV, "opcode %d, want RECV",
			  wc.opcode);
		fu_expect_int(wc.byte_len, 100, "byte_len");
		fu_expect(wc.wc_flags & IBV_WC_WITH_IMM, "no IBV_WC_WITH_IMM");
		fu_expect(wc.imm_data == htonl(0xcafe), "imm_data %#x",
			  wc.imm_data);
		fu_expect_int(wc.qp_num, B.qp->qp_num, "qp_num");
		fu_expect_int(wc.src_qp, A.qp->qp_num, "src_qp");
		fu_expect_int(wc.wr_id, 0x71, "wr_id");
	}
	fu_expect(((unsigned char *)B.buf)[99] == 0x3c &&
			  ((unsigned char *)B.buf)[100] == 0,
		  "received data wrong");
	dp_expect_state(B.qp, IBV_QPS_RTS, "after SEND_WITH_IMM");
	fu_done();
}

static void test_ok_write_with_imm(void **state)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, 300, A.mr->lkey};
	struct ibv_wc wc;

	rc_pair();
	memset(A.buf, 0x4b, 300);
	dp_recv_buf(&B, 0x81, 0, 8); /* SGEs unused by WRITE_WITH_IMM */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x80;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.imm_data = htonl(0xbeef);
	wr.wr.rdma.remote_addr = (uintptr_t)B.buf + 1000;
	wr.wr.rdma.rkey = B.mr->rkey;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "WRITE_WITH_IMM requester"))
		fu_expect(wc.opcode == IBV_WC_RDMA_WRITE, "requester opcode %d",
			  wc.opcode);
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc,
			 "WRITE_WITH_IMM receiver")) {
		fu_expect(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM,
			  "opcode %d, want RECV_RDMA_WITH_IMM", wc.opcode);
		fu_expect_int(wc.byte_len, 300, "byte_len");
		fu_expect(wc.wc_flags & IBV_WC_WITH_IMM, "no IBV_WC_WITH_IMM");
		fu_expect(wc.imm_data == htonl(0xbeef), "imm_data %#x",
			  wc.imm_data);
		fu_expect_int(wc.wr_id, 0x81, "wr_id");
	}
	fu_expect(((unsigned char *)B.buf)[1000] == 0x4b &&
			  ((unsigned char *)B.buf)[1299] == 0x4b &&
			  ((unsigned char *)B.buf)[1300] == 0 &&
			  ((unsigned char *)B.buf)[0] == 0,
		  "written data wrong");
	fu_done();
}

static void test_ok_send_with_inv_type2(void **state)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, 16, A.mr->lkey};
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t key;

	rc_pair();
	mw = bind_type2(&B, B.mr, (uintptr_t)B.buf + 512, 256,
			IBV_ACCESS_REMOTE_WRITE, IBV_WC_SUCCESS, &key);
	/*
	 * verbs-semantics 1.3: a type 2 bind does not rewrite mw->rkey (the
	 * consumer owns the new key). This caught src/core/mw.c
	 * srdma_mw_bind_exec() storing the new key into ibv_mw->rkey for
	 * type 2 windows as well (fixed in 6a45ad5).
	 */
	fu_expect(mw->rkey != key,
		  "type 2 bind rewrote mw->rkey to the new key %#x", key);
	/* The window works before it is invalidated. */
	memset(A.buf, 0x21, 16);
	assert_int_equal(dp_post(A.qp, 0x90, IBV_WR_RDMA_WRITE,
				 (uintptr_t)A.buf, 16, A.mr->lkey,
				 (uintptr_t)B.buf + 512, key),
			 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "WRITE through the window");
	fu_expect(((unsigned char *)B.buf)[512] == 0x21,
		  "write through window lost");

	dp_recv_buf(&B, 0x92, 0, 64);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x91;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.invalidate_rkey = key;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "SEND_WITH_INV requester");
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "SEND_WITH_INV receiver")) {
		fu_expect(wc.opcode == IBV_WC_RECV, "opcode %d", wc.opcode);
		fu_expect(wc.wc_flags & IBV_WC_WITH_INV, "no IBV_WC_WITH_INV");
		fu_expect(wc.invalidated_rkey == key,
			  "invalidated_rkey %#x, want %#x", wc.invalidated_rkey,
			  key);
		fu_expect_int(wc.byte_len, 16, "byte_len");
	}
	/* The key is dead now. */
	assert_int_equal(dp_post(A.qp, 0x93, IBV_WR_RDMA_WRITE,
				 (uintptr_t)A.buf, 16, A.mr->lkey,
				 (uintptr_t)B.buf + 512, key),
			 0);
	dp_expect_wc(A.cq, IBV_WC_REM_ACCESS_ERR, NULL,
		     "WRITE with an invalidated window key");
	dp_expect_no_wc(B.cq, "WRITE with an invalidated window key");
	dp_expect_state(B.qp, IBV_QPS_ERR, "after invalidated-key WRITE");
	/* The window is FREE: the MR deregisters. */
	untrack_mr(B.mr);
	fu_expect_int(ibv_dereg_mr(B.mr), 0, "dereg MR after remote inv");
	B.mr = NULL;
	fu_done();
}

static void test_ok_atomics(void **state)
{
	uint64_t *tgt = (uint64_t *)(B.buf + 64);
	uint64_t *res = (uint64_t *)A.buf;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, 8, A.mr->lkey};
	struct ibv_wc wc;

	rc_pair();
	*tgt = 100;
	memset(&wr, 0, sizeof(wr));
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = (uintptr_t)tgt;
	wr.wr.atomic.rkey = B.mr->rkey;

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 23;
	*res = 0;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "FETCH_ADD")) {
		fu_expect(wc.opcode == IBV_WC_FETCH_ADD, "opcode %d",
			  wc.opcode);
		fu_expect_int(wc.byte_len, 8, "FETCH_ADD byte_len");
	}
	fu_expect_int(*res, 100, "FETCH_ADD original value");
	fu_expect_int(*tgt, 123, "FETCH_ADD target");

	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 99; /* mismatch: no swap */
	wr.wr.atomic.swap = 7;
	*res = 0;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "CMP_SWP mismatch"))
		fu_expect(wc.opcode == IBV_WC_COMP_SWAP, "opcode %d",
			  wc.opcode);
	fu_expect_int(*res, 123, "CMP_SWP (mismatch) original value");
	fu_expect_int(*tgt, 123, "CMP_SWP (mismatch) target");

	wr.wr.atomic.compare_add = 123; /* match: swap */
	*res = 0;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "CMP_SWP match");
	fu_expect_int(*res, 123, "CMP_SWP (match) original value");
	fu_expect_int(*tgt, 7, "CMP_SWP (match) target");

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = (uint64_t)-8; /* wraps */
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "FETCH_ADD negative");
	fu_expect_int(*res, 7, "FETCH_ADD (negative) original value");
	fu_expect(*tgt == (uint64_t)-1, "FETCH_ADD wrap: target %#" PRIx64,
		  *tgt);
	dp_expect_no_wc(B.cq, "atomics at the responder");
	fu_done();
}

static void test_ok_multi_sge(void **state)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge g[3], r[3];
	unsigned char *a = (unsigned char *)A.buf, *b = (unsigned char *)B.buf;
	struct ibv_wc wc;
	int i;

	rc_pair();
	for (i = 0; i < 4096; i++)
		a[i] = (unsigned char)(i * 7 + 1);
	/* gather: [0,10) [100,120) [300,330) = 60 bytes */
	g[0] = (struct ibv_sge){(uintptr_t)a, 10, A.mr->lkey};
	g[1] = (struct ibv_sge){(uintptr_t)a + 100, 20, A.mr->lkey};
	g[2] = (struct ibv_sge){(uintptr_t)a + 300, 30, A.mr->lkey};
	/* scatter: 5 + 25 + 100 bytes of room */
	r[0] = (struct ibv_sge){(uintptr_t)b + 1000, 5, B.mr->lkey};
	r[1] = (struct ibv_sge){(uintptr_t)b + 2000, 25, B.mr->lkey};
	r[2] = (struct ibv_sge){(uintptr_t)b + 3000, 100, B.mr->lkey};
	assert_int_equal(dp_post_recv(&B, 0xa1, r, 3), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xa0;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = g;
	wr.num_sge = 3;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "3-SGE SEND");
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "3-SGE receive"))
		fu_expect_int(wc.byte_len, 60, "3-SGE receive byte_len");
	{
		unsigned char want[60], got[60];

		memcpy(want, a, 10);
		memcpy(want + 10, a + 100, 20);
		memcpy(want + 30, a + 300, 30);
		memcpy(got, b + 1000, 5);
		memcpy(got + 5, b + 2000, 25);
		memcpy(got + 30, b + 3000, 30);
		fu_expect(!memcmp(want, got, 60), "SEND gather/scatter data");
		fu_expect(b[3030] == 0 && b[1005] == 0, "scatter overran");
	}

	/* WRITE gathers, READ scatters. */
	memset(b, 0, B.len);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b + 4000;
	wr.wr.rdma.rkey = B.mr->rkey;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "3-SGE WRITE"))
		fu_expect_int(wc.byte_len, 60, "3-SGE WRITE byte_len");
	fu_expect(!memcmp(b + 4000, a, 10) && !memcmp(b + 4010, a + 100, 20) &&
			  !memcmp(b + 4030, a + 300, 30) && b[4060] == 0,
		  "WRITE gather data");
	for (i = 0; i < 60; i++)
		b[5000 + i] = (unsigned char)(0x80 + i);
	memset(a, 0, 4096);
	g[0].length = 10;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)b + 5000;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "3-SGE READ")) {
		fu_expect(wc.opcode == IBV_WC_RDMA_READ, "opcode %d",
			  wc.opcode);
		fu_expect_int(wc.byte_len, 60, "3-SGE READ byte_len");
	}
	fu_expect(!memcmp(a, b + 5000, 10) && !memcmp(a + 100, b + 5010, 20) &&
			  !memcmp(a + 300, b + 5030, 30) && a[10] == 0 &&
			  a[120] == 0 && a[330] == 0,
		  "READ scatter data");
	fu_done();
}

static void test_ok_inline_send(void **state)
{
	char msg[48];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge s = {(uintptr_t)msg, sizeof(msg), 0}; /* lkey unused */
	struct ibv_wc wc;

	rc_pair();
	memset(msg, 'i', sizeof(msg));
	dp_recv_buf(&B, 0xb1, 0, 64);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xb0;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	wr.sg_list = &s;
	wr.num_sge = 1;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	memset(msg, 'x', sizeof(msg)); /* copied at post time */
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "inline SEND");
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "inline receive"))
		fu_expect_int(wc.byte_len, sizeof(msg), "byte_len");
	fu_expect(B.buf[0] == 'i' && B.buf[47] == 'i' && B.buf[48] == 0,
		  "inline data");
	/* Inline beyond max_inline_data is refused at post time. */
	{
		static char big[DP_MAX_INLINE * 32];
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qia;

		assert_int_equal(ibv_query_qp(A.qp, &qa, IBV_QP_CAP, &qia), 0);
		s.addr = (uintptr_t)big;
		s.length = qa.cap.max_inline_data + 1;
		if (s.length <= sizeof(big)) {
			bad = NULL;
			fu_expect_int(ibv_post_send(A.qp, &wr, &bad), EINVAL,
				      "inline longer than max_inline_data");
			fu_expect(bad == &wr, "bad_wr %p", (void *)bad);
		}
	}
	fu_done();
}

static void test_ok_unsignaled(void **state)
{
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_sge s = {(uintptr_t)A.buf, 8, A.mr->lkey};
	struct ibv_wc wc;
	int i;

	rc_pair();
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = 0xc0 + (uint64_t)i;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].sg_list = &s;
		wr[i].num_sge = 1;
		wr[i].wr.rdma.remote_addr = (uintptr_t)B.buf + 8 * i;
		wr[i].wr.rdma.rkey = B.mr->rkey;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[1].send_flags = IBV_SEND_SIGNALED;
	memset(A.buf, 0x66, 8);
	assert_int_equal(ibv_post_send(A.qp, wr, &bad), 0);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "signaled WR"))
		fu_expect_int(wc.wr_id, 0xc1, "only the signaled WR completes");
	dp_expect_no_wc(A.cq, "unsignaled WRs");
	fu_expect(B.buf[0] == 0x66 && B.buf[16] == 0x66,
		  "unsignaled WRITEs executed");
	fu_done();
}

static void test_chain_bad_wr_in_middle(void **state)
{
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_sge s[DP_MAX_SGE + 1];
	struct ibv_wc wc;
	int i;

	rc_pair();
	for (i = 0; i <= DP_MAX_SGE; i++)
		s[i] = (struct ibv_sge){(uintptr_t)A.buf, 8, A.mr->lkey};
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = 0xd0 + (uint64_t)i;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].sg_list = s;
		wr[i].num_sge = 1;
		wr[i].wr.rdma.remote_addr = (uintptr_t)B.buf + 8 * i;
		wr[i].wr.rdma.rkey = B.mr->rkey;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[1].num_sge = DP_MAX_SGE + 1;
	memset(A.buf, 0x77, 8);
	fu_expect_int(ibv_post_send(A.qp, wr, &bad), EINVAL,
		      "chain with a bad WR");
	fu_expect(bad == &wr[1], "bad_wr %p, want %p (the 2nd WR)", (void *)bad,
		  (void *)&wr[1]);
	if (dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "first WR of the chain"))
		fu_expect_int(wc.wr_id, 0xd0, "first WR's wr_id");
	dp_expect_no_wc(A.cq, "WRs from the bad one on");
	fu_expect(B.buf[0] == 0x77, "first WR executed");
	fu_expect(B.buf[8] == 0 && B.buf[16] == 0,
		  "WRs from the bad one on not executed");
	dp_expect_state(A.qp, IBV_QPS_RTS, "after post-time EINVAL");
	fu_done();
}

static void expect_post_einval(struct ibv_qp *qp, struct ibv_send_wr *wr,
			       const char *what)
{
	struct ibv_send_wr *bad = NULL;

	fu_expect_int(ibv_post_send(qp, wr, &bad), EINVAL, what);
	fu_expect(bad == wr, "%s: bad_wr %p, want %p", what, (void *)bad,
		  (void *)wr);
}

static void test_post_time_einval(void **state)
{
	struct ibv_sge s[DP_MAX_SGE + 1];
	struct ibv_send_wr wr;
	int i;

	rc_pair();
	for (i = 0; i <= DP_MAX_SGE; i++)
		s[i] = (struct ibv_sge){(uintptr_t)A.buf + 8 * i, 8,
					A.mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.rkey = B.mr->rkey;
	wr.wr.atomic.remote_addr = (uintptr_t)B.buf + 4;
	expect_post_einval(A.qp, &wr, "FETCH_ADD remote_addr % 8 == 4");
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = (uintptr_t)B.buf + 1;
	expect_post_einval(A.qp, &wr, "CMP_SWP remote_addr % 8 == 1");
	wr.wr.atomic.remote_addr = (uintptr_t)B.buf;
	s[0].length = 4;
	expect_post_einval(A.qp, &wr, "CMP_SWP SGE length 4");
	s[0].length = 16;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	expect_post_einval(A.qp, &wr, "FETCH_ADD SGE length 16");
	s[0].length = 8;
	wr.opcode = IBV_WR_SEND;
	wr.num_sge = DP_MAX_SGE + 1;
	expect_post_einval(A.qp, &wr, "num_sge > max_send_sge");
	wr.opcode = IBV_WR_RDMA_WRITE;
	expect_post_einval(A.qp, &wr, "WRITE num_sge > max_send_sge");
	dp_expect_no_wc(A.cq, "post-time errors");
	dp_expect_state(A.qp, IBV_QPS_RTS, "after post-time errors");
	/* The QP still works. */
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)B.buf;
	wr.wr.rdma.rkey = B.mr->rkey;
	assert_int_equal(ibv_post_send(A.qp, &wr, &(struct ibv_send_wr *){0}),
			 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "WRITE after post errors");
	fu_done();
}

static void test_post_send_in_init(void **state)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS, .no_rts = true};
	struct ibv_sge s = {(uintptr_t)A.buf, 8, A.mr->lkey};
	struct ibv_send_wr wr;

	dp_qp_create(&A, IBV_QPT_RC, 1);
	dp_connect(&A, 0, A.lid, &k);
	dp_expect_state(A.qp, IBV_QPS_INIT, "QP in INIT");
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	expect_post_einval(A.qp, &wr, "SEND in INIT");
	/* Receives are allowed from INIT. */
	fu_expect_int(dp_post_recv(&A, 1, &s, 1), 0, "post_recv in INIT");
	dp_expect_no_wc(A.cq, "SEND in INIT");
	fu_done();
}

/* dereg_mr is EBUSY while a type 1 or a type 2 window is bound. */
static void test_dereg_busy_with_bound_windows(void **state)
{
	struct ibv_mr *mr = ibv_reg_mr(B.pd, B.buf, B.len, DP_ALL_ACCESS);
	struct ibv_mw *m1;
	struct ibv_mw_bind b;
	uint32_t key2;
	struct ibv_send_wr wr, *bad = NULL;

	assert_non_null(mr);
	track_mr(mr);
	rc_pair();
	m1 = bind_type1(&B, mr, (uintptr_t)B.buf, 128, IBV_ACCESS_REMOTE_READ,
			IBV_WC_SUCCESS);
	fu_expect_int(ibv_dereg_mr(mr), EBUSY, "dereg with a type 1 bound");
	bind_type2(&B, mr, (uintptr_t)B.buf + 128, 128, IBV_ACCESS_REMOTE_WRITE,
		   IBV_WC_SUCCESS, &key2);
	fu_expect_int(ibv_dereg_mr(mr), EBUSY,
		      "dereg with type 1 and type 2 bound");
	/* The MR is unchanged: the window over it still works. */
	memset(A.buf, 0x12, 8);
	assert_int_equal(dp_post(A.qp, 0xe0, IBV_WR_RDMA_WRITE,
				 (uintptr_t)A.buf, 8, A.mr->lkey,
				 (uintptr_t)B.buf + 128, key2),
			 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL,
		     "WRITE via window after EBUSY");
	fu_expect(B.buf[128] == 0x12, "write through the window");

	/* Unbind type 1 (zero length): still busy with type 2. */
	memset(&b, 0, sizeof(b));
	b.wr_id = 0xe1;
	b.send_flags = IBV_SEND_SIGNALED;
	assert_int_equal(ibv_bind_mw(B.qp, m1, &b), 0);
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, NULL, "type 1 unbind");
	fu_expect_int(ibv_dereg_mr(mr), EBUSY, "dereg with type 2 bound");

	/* Invalidate type 2: now it deregisters. */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xe2;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key2;
	assert_int_equal(ibv_post_send(B.qp, &wr, &bad), 0);
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, NULL, "LOCAL_INV of type 2");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg after unbind/invalidate");
	untrack_mr(mr);
	fu_done();
}

/* ---- 5.5: UC and UD --------------------------------------------------------
 */

static void test_uc_write_bad_rkey_dropped(void **state)
{
	struct ibv_wc wc;
	uint64_t t0;

	pair(IBV_QPT_UC, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(dp_post(A.qp, 0xf0, IBV_WR_RDMA_WRITE,
				 (uintptr_t)A.buf, 16, A.mr->lkey,
				 (uintptr_t)B.buf, B.mr->rkey ^ 0x40),
			 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "UC WRITE with a bad rkey");
	dp_expect_no_wc(B.cq, "UC responder");
	dp_expect_state(B.qp, IBV_QPS_RTS, "UC responder");
	dp_expect_state(A.qp, IBV_QPS_RTS, "UC requester");
	/* Both still work. */
	memset(A.buf, 0x44, 16);
	assert_int_equal(dp_post(A.qp, 0xf1, IBV_WR_RDMA_WRITE,
				 (uintptr_t)A.buf, 16, A.mr->lkey,
				 (uintptr_t)B.buf, B.mr->rkey),
			 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "UC WRITE");
	/* A UC requester completes when its packets are sent, not when
	 * they land (no ACK): over the wire the data may follow shortly. */
	t0 = dp_now_ms();
	while (*(volatile char *)&B.buf[15] != 0x44 && dp_now_ms() - t0 < 2000)
		usleep(1000);
	fu_expect(B.buf[15] == 0x44, "UC WRITE data");
	fu_done();
}

static void ud_pair(void)
{
	struct dp_conn k = {0};
	struct ibv_ah_attr aa;

	dp_qp_create(&A, IBV_QPT_UD, 0);
	dp_qp_create(&B, IBV_QPT_UD, 0);
	dp_connect(&A, 0, 0, &k);
	dp_connect(&B, 0, 0, &k);
	memset(&aa, 0, sizeof(aa));
	aa.dlid = B.lid;
	aa.port_num = 1;
	fu_av_fix(A.ctx, &aa);
	A.ah = ibv_create_ah(A.pd, &aa);
	assert_non_null(A.ah);
}

static int ud_send(uint32_t len, uint32_t qkey)
{
	struct ibv_sge s = {(uintptr_t)A.buf, len, A.mr->lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x100;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.ud.ah = A.ah;
	wr.wr.ud.remote_qpn = B.qp->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(A.qp, &wr, &bad);
}

static void test_ud_recv_too_small(void **state)
{
	struct ibv_wc wc;

	ud_pair();
	/* Positive control: payload + 40 fits exactly. */
	memset(A.buf, 0x55, 100);
	dp_recv_buf(&B, 0x101, 0, 140);
	assert_int_equal(ud_send(100, DP_QKEY), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UD SEND");
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "UD receive"))
		fu_expect_int(wc.byte_len, 140, "UD byte_len (payload + GRH)");
	fu_expect(B.buf[40] == 0x55 && B.buf[139] == 0x55,
		  "UD payload after the 40-byte GRH area");

	dp_recv_buf(&B, 0x102, 0, 139);
	assert_int_equal(ud_send(100, DP_QKEY), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UD SEND into a small buffer");
	if (dp_expect_wc(B.cq, IBV_WC_LOC_LEN_ERR, &wc,
			 "UD receive buffer < payload + 40"))
		fu_expect_int(wc.wr_id, 0x102, "wr_id");
	fu_done();
}

static void test_ud_wrong_qkey_dropped(void **state)
{
	struct ibv_wc wc;

	ud_pair();
	dp_recv_buf(&B, 0x111, 0, 256);
	assert_int_equal(ud_send(16, DP_QKEY + 1), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UD SEND with a wrong qkey");
	dp_expect_no_wc(B.cq, "UD wrong qkey");
	dp_expect_state(B.qp, IBV_QPS_RTS, "UD receiver");
	/* The receive WQE is still there for a correct SEND. */
	assert_int_equal(ud_send(16, DP_QKEY), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UD SEND with the qkey");
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "UD receive"))
		fu_expect_int(wc.wr_id, 0x111, "wr_id");
	fu_done();
}

/* ---- completion channel -------------------------------------------------- */

/* Wait up to @ms for an event on B's channel; 1 if one came. */
static int chan_event(int ms)
{
	struct pollfd pfd = {B.ch->fd, POLLIN, 0};
	struct ibv_cq *cq = NULL;
	void *cq_ctx = NULL;
	int n = poll(&pfd, 1, ms);

	if (n <= 0)
		return 0;
	assert_int_equal(ibv_get_cq_event(B.ch, &cq, &cq_ctx), 0);
	fu_expect(cq == B.cq, "event for CQ %p, want %p", (void *)cq,
		  (void *)B.cq);
	ibv_ack_cq_events(cq, 1);
	return 1;
}

static void send_a_to_b(unsigned int flags)
{
	struct ibv_sge s = {(uintptr_t)A.buf, 8, A.mr->lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | flags;
	wr.sg_list = &s;
	wr.num_sge = 1;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "SEND");
}

static void test_chan_wakes_on_peer_send(void **state)
{
	struct ibv_wc wc;

	rc_pair();
	dp_recv_buf(&B, 1, 0, 64);
	dp_recv_buf(&B, 2, 64, 64);
	assert_int_equal(ibv_req_notify_cq(B.cq, 0), 0);
	fu_expect(!chan_event(0), "event before any completion");
	send_a_to_b(0);
	fu_expect(chan_event(1000), "no event for the peer's SEND");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "receive");
	/* Not re-armed: the next completion does not fire. */
	send_a_to_b(0);
	fu_expect(!chan_event(50), "event without re-arming");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "second receive");
	fu_done();
}

static void test_chan_solicited_only(void **state)
{
	struct ibv_wc wc;

	rc_pair();
	dp_recv_buf(&B, 1, 0, 64);
	dp_recv_buf(&B, 2, 64, 64);
	assert_int_equal(ibv_req_notify_cq(B.cq, 1), 0);
	send_a_to_b(0);
	fu_expect(!chan_event(50),
		  "solicited-only arm fired by an unsolicited SEND");
	send_a_to_b(IBV_SEND_SOLICITED);
	fu_expect(chan_event(1000),
		  "solicited-only arm not fired by IBV_SEND_SOLICITED");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "first receive");
	fu_expect(!(wc.wc_flags & IBV_WC_WITH_IMM), "flags");
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "second receive");
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* 5.3 */
		DP_TEST(test_req_bad_lkey),
		DP_TEST(test_req_mw_key_as_lkey),
		DP_TEST(test_req_lkey_other_pd),
		DP_TEST(test_req_lkey_out_of_bounds),
		DP_TEST(test_req_lkey_deregistered),
		DP_TEST(test_req_read_dst_without_local_write),
		DP_TEST(test_req_local_inv_unknown_key),
		DP_TEST(test_req_local_inv_type1_key),
		DP_TEST(test_req_local_inv_plain_mr),
		DP_TEST(test_req_mw_bind_failure),
		/* 5.4 errors */
		DP_TEST(test_resp_bad_rkey),
		DP_TEST(test_resp_stale_rkey),
		DP_TEST(test_resp_rkey_other_pd),
		DP_TEST(test_resp_mr_lacks_remote_access),
		DP_TEST(test_resp_rkey_out_of_bounds),
		DP_TEST(test_resp_write_imm_bad_rkey),
		DP_TEST(test_resp_qp_access_flags_missing),
		DP_TEST(test_resp_recv_bad_lkey),
		DP_TEST(test_resp_recv_other_pd),
		DP_TEST(test_resp_recv_no_local_write),
		DP_TEST(test_resp_recv_too_small),
		DP_TEST(test_resp_send_inv_plain_mr),
		DP_TEST(test_resp_rnr_retry_exceeded),
		/* 5.4 successes, 5.2 post-time, 6 */
		DP_TEST(test_ok_send_with_imm),
		DP_TEST(test_ok_write_with_imm),
		DP_TEST(test_ok_send_with_inv_type2),
		DP_TEST(test_ok_atomics),
		DP_TEST(test_ok_multi_sge),
		DP_TEST(test_ok_inline_send),
		DP_TEST(test_ok_unsignaled),
		DP_TEST(test_chain_bad_wr_in_middle),
		DP_TEST(test_post_time_einval),
		DP_TEST(test_post_send_in_init),
		DP_TEST(test_dereg_busy_with_bound_windows),
		/* 5.5 */
		DP_TEST(test_uc_write_bad_rkey_dropped),
		DP_TEST(test_ud_recv_too_small),
		DP_TEST(test_ud_wrong_qkey_dropped),
		/* completion channel */
		DP_TEST(test_chan_wakes_on_peer_send),
		DP_TEST(test_chan_solicited_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
