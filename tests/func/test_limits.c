// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_limits.c - the device limits are a real NIC's where software has no
 * reason to be smaller, what is reported can be created, and every refusal
 * is explained under SRDMA_LOG=debug (docs/design/limits.md).
 *
 * - ibv_query_device(_ex) and ibv_query_port report at least a ConnectX's
 *   values for the limits limits.md says are not smaller; max_cqe is
 *   4,194,303 and such a CQ is created without committing its 256 MiB
 *   (the context's segment file grows by a few pages), takes completions
 *   and can be resized; libfabric rxm's 262,144-entry CQ works.
 * - max_inline_data is rounded up and reported back (rdma_xclient asks for
 *   0 bytes, then sends 16 bytes inline from unregistered memory).
 * - Refusals (CQ size, ring arena full, inline size, XRC domain without
 *   OFLAGS, XRC INI QP without a send CQ, XRC SRQ without a domain, SRQ
 *   size, bad modify_qp) fail with the documented errno and
 *   leave a debug line naming the reason in SRDMA_LOG_FILE.
 *
 * main() sets SRDMA_LOG=debug and SRDMA_LOG_FILE before the library reads
 * them; each check looks only at what was logged since the previous one.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "dp_util.h"

static char log_path[512];
static long log_mark;

/* Forget what was logged so far. */
static void log_reset(void)
{
	struct stat st;

	log_mark = stat(log_path, &st) ? 0 : (long)st.st_size;
}

/* True if a line logged since log_reset() contains @what. */
static bool log_has(const char *what)
{
	FILE *f = fopen(log_path, "r");
	char line[1200];
	bool found = false;

	if (!f)
		return false;
	if (fseek(f, log_mark, SEEK_SET) == 0)
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

#define expect_logged(what)                                                    \
	fu_expect(log_has(what), "no debug line containing \"%s\" in %s",     \
		  what, log_path)

/* Bytes of tmpfs the context's segment file holds right now. */
static uint64_t seg_bytes(struct ibv_context *ctx)
{
	const char *dir = getenv("SRDMA_DIR");
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ctx.%u.%d", dir ? dir : ".",
		 dp_port_lid(ctx) ? dp_port_lid(ctx) : 0, (int)getpid());
	if (stat(path, &st))
		return UINT64_MAX;
	return (uint64_t)st.st_blocks * 512;
}

static void test_device_limits(void **state)
{
	struct ibv_context *ctx = fu_open_srdma();
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr *a = &ax.orig_attr;
	struct ibv_port_attr pa;

	(void)state;
	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ax), 0);
	/* At least ConnectX-5 (mlx5) where limits.md says "not smaller". */
	fu_expect(a->max_cqe >= 4194303, "max_cqe %d", a->max_cqe);
	fu_expect(a->max_qp_wr >= 32768, "max_qp_wr %d", a->max_qp_wr);
	fu_expect(a->max_sge >= 30 && a->max_sge_rd >= 30, "max_sge %d/%d",
		  a->max_sge, a->max_sge_rd);
	fu_expect(a->max_srq_wr >= 32767, "max_srq_wr %d", a->max_srq_wr);
	fu_expect(a->max_srq_sge >= 31, "max_srq_sge %d", a->max_srq_sge);
	fu_expect(a->max_qp_rd_atom >= 16 && a->max_qp_init_rd_atom >= 16,
		  "rd_atom %d/%d", a->max_qp_rd_atom, a->max_qp_init_rd_atom);
	fu_expect(a->max_pd >= 1 << 24, "max_pd %d", a->max_pd);
	fu_expect(a->max_ah >= 0x7fffffff, "max_ah %d", a->max_ah);
	fu_expect(a->max_mr_size == UINT64_MAX, "max_mr_size %#llx",
		  (unsigned long long)a->max_mr_size);
	fu_expect(a->atomic_cap == IBV_ATOMIC_HCA, "atomic_cap %d",
		  a->atomic_cap);
	fu_expect(ax.phys_port_cnt_ex == 1, "phys_port_cnt_ex %u",
		  ax.phys_port_cnt_ex);
	/* Smaller than mlx5, by design (limits.md): only sanity here. */
	fu_expect(a->max_qp >= 16383 && a->max_cq >= 4096 &&
		  a->max_srq >= 4096 && a->max_mr >= 1 << 17, "max_qp %d "
		  "max_cq %d max_srq %d max_mr %d", a->max_qp, a->max_cq,
		  a->max_srq, a->max_mr);
	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	fu_expect(pa.max_msg_sz >= 1u << 30, "max_msg_sz %#x", pa.max_msg_sz);
	fu_expect(pa.state == IBV_PORT_ACTIVE, "port state %d", pa.state);
	printf("limits: max_cqe %d max_qp_wr %d max_sge %d max_srq_wr %d "
	       "max_pd %d max_ah %d max_qp %d max_cq %d max_mr %d "
	       "max_msg_sz %#x\n", a->max_cqe, a->max_qp_wr, a->max_sge,
	       a->max_srq_wr, a->max_pd, a->max_ah, a->max_qp, a->max_cq,
	       a->max_mr, pa.max_msg_sz);
	ibv_close_device(ctx);
	fu_done();
}

/* A max_cqe CQ: created lazily, takes CQEs, resizes; rxm's size works. */
static void test_cq_max_cqe(void **state)
{
	struct dp_ep a, b;
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct ibv_device_attr da;
	struct ibv_cq *big, *rxm, *tmp;
	struct ibv_wc wc;
	uint64_t before, after;
	int i;

	(void)state;
	dp_ep_open(&a, false);
	dp_ep_open(&b, false);
	assert_int_equal(ibv_query_device(a.ctx, &da), 0);
	before = seg_bytes(a.ctx);
	big = ibv_create_cq(a.ctx, da.max_cqe, NULL, NULL, 0);
	fu_expect(big != NULL, "create_cq(max_cqe %d): %s", da.max_cqe,
		  fu_errname(errno));
	if (!big)
		goto out;
	/* All of it, and a size that may be asked for again. */
	fu_expect(big->cqe == da.max_cqe, "cqe %d, want %d", big->cqe,
		  da.max_cqe);
	after = seg_bytes(a.ctx);
	/* 256 MiB of CQEs reserved; only what is touched is committed. */
	fu_expect(after - before < (1u << 20), "a %d-entry CQ committed %llu "
		  "bytes of the segment", da.max_cqe,
		  (unsigned long long)(after - before));
	printf("limits: %d-entry CQ: segment file +%llu KiB on creation\n",
	       big->cqe, (unsigned long long)((after - before) >> 10));

	/* It works: A's QP completes its sends on it. */
	{
		struct ibv_qp_init_attr ia;

		memset(&ia, 0, sizeof(ia));
		ia.send_cq = big;
		ia.recv_cq = big;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 64;
		ia.cap.max_recv_wr = 64;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		a.qp = ibv_create_qp(a.pd, &ia);
		assert_non_null(a.qp);
	}
	dp_qp_create(&b, IBV_QPT_RC, 0);
	dp_connect(&a, b.qp->qp_num, b.lid, &k);
	dp_connect(&b, a.qp->qp_num, a.lid, &k);
	for (i = 0; i < 8; i++) {
		dp_recv_buf(&b, (uint64_t)i, 0, 64);
		assert_int_equal(dp_post(a.qp, (uint64_t)i, IBV_WR_SEND,
					 (uintptr_t)a.buf, 8, a.mr->lkey, 0,
					 0), 0);
		dp_expect_wc(big, IBV_WC_SUCCESS, &wc, "SEND on max CQ");
		dp_expect_wc(b.cq, IBV_WC_SUCCESS, &wc, "receive");
	}
	ibv_destroy_qp(a.qp);
	a.qp = NULL;
	assert_int_equal(ibv_resize_cq(big, da.max_cqe / 2), 0);
	assert_int_equal(ibv_resize_cq(big, big->cqe), 0);
	assert_int_equal(ibv_resize_cq(big, da.max_cqe), 0);
	fu_expect(big->cqe == da.max_cqe, "resized to max_cqe: cqe %d",
		  big->cqe);
	assert_int_equal(ibv_destroy_cq(big), 0);

	/* libfabric's verbs;ofi_rxm: a 262,144-entry CQ. */
	rxm = ibv_create_cq(a.ctx, 262144, NULL, NULL, 0);
	fu_expect(rxm != NULL, "create_cq(262144): %s", fu_errname(errno));
	if (rxm)
		ibv_destroy_cq(rxm);

	/* One more than max_cqe: EINVAL, explained. */
	log_reset();
	errno = 0;
	tmp = ibv_create_cq(a.ctx, da.max_cqe + 1, NULL, NULL, 0);
	fu_expect(!tmp && errno == EINVAL, "create_cq(max_cqe + 1): %p %s",
		  (void *)tmp, fu_errname(errno));
	expect_logged("max_cqe");
	if (tmp)
		ibv_destroy_cq(tmp);
out:
	dp_ep_close(&a);
	dp_ep_close(&b);
	fu_done();
}

/* CQs of max_cqe until the context's ring arena is full: ENOMEM, logged;
 * the memory comes back at destroy. */
static void test_cq_arena_full(void **state)
{
	struct ibv_context *ctx = fu_open_srdma();
	struct ibv_device_attr da;
	struct ibv_cq *cq[64];
	int n = 0, i, err = 0;

	(void)state;
	assert_int_equal(ibv_query_device(ctx, &da), 0);
	log_reset();
	while (n < 64) {
		cq[n] = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
		if (!cq[n]) {
			err = errno;
			break;
		}
		n++;
	}
	fu_expect(n >= 3 && n < 64 && err == ENOMEM, "%d max_cqe CQs, then "
		  "%s", n, fu_errname(err));
	expect_logged("ring arena");
	printf("limits: %d CQs of %d entries fit one context's ring arena, "
	       "then %s\n", n, da.max_cqe, fu_errname(err));
	for (i = 0; i < n; i++)
		assert_int_equal(ibv_destroy_cq(cq[i]), 0);
	cq[0] = ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0);
	fu_expect(cq[0] != NULL, "after destroying them: %s",
		  fu_errname(errno));
	if (cq[0])
		ibv_destroy_cq(cq[0]);
	ibv_close_device(ctx);
	fu_done();
}

/* rdma_xclient's pattern: 0 bytes of inline data asked, 16 sent inline
 * from memory that is not registered (lkey 0). */
static void test_inline_rounded_up(void **state)
{
	struct dp_ep a, b;
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct ibv_qp_init_attr ia, qia;
	struct ibv_qp_attr qa;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	char msg[16] = "inline: 16 byte";
	struct ibv_qp *q;

	(void)state;
	dp_ep_open(&a, false);
	dp_ep_open(&b, false);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = a.cq;
	ia.recv_cq = a.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 0;
	a.qp = ibv_create_qp(a.pd, &ia);
	assert_non_null(a.qp);
	fu_expect(ia.cap.max_inline_data >= 16, "max_inline_data 0 granted "
		  "as %u, want >= 16 (one SGE's worth)",
		  ia.cap.max_inline_data);
	assert_int_equal(ibv_query_qp(a.qp, &qa, IBV_QP_CAP, &qia), 0);
	fu_expect(qa.cap.max_inline_data == ia.cap.max_inline_data &&
		  qia.cap.max_inline_data == ia.cap.max_inline_data,
		  "query_qp: inline %u/%u, create reported %u",
		  qa.cap.max_inline_data, qia.cap.max_inline_data,
		  ia.cap.max_inline_data);
	printf("limits: max_inline_data 0 with 1 send SGE granted as %u\n",
	       ia.cap.max_inline_data);
	dp_qp_create(&b, IBV_QPT_RC, 0);
	dp_connect(&a, b.qp->qp_num, b.lid, &k);
	dp_connect(&b, a.qp->qp_num, a.lid, &k);
	dp_recv_buf(&b, 1, 0, 64);
	sge = (struct ibv_sge){(uintptr_t)msg, sizeof(msg), 0};
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	fu_expect_int(ibv_post_send(a.qp, &wr, &bad), 0, "16 bytes inline");
	memset(msg, 'x', sizeof(msg));	/* inline: ours again at once */
	dp_expect_wc(a.cq, IBV_WC_SUCCESS, &wc, "inline SEND");
	dp_expect_wc(b.cq, IBV_WC_SUCCESS, &wc, "its receive");
	fu_expect(!memcmp(b.buf, "inline: 16 byte", 16), "received %.16s",
		  b.buf);

	/* Asked above what the device has: EINVAL, explained. */
	log_reset();
	ia.cap.max_inline_data = 1025;
	errno = 0;
	q = ibv_create_qp(a.pd, &ia);
	fu_expect(!q && errno == EINVAL, "inline 1025: %p %s", (void *)q,
		  fu_errname(errno));
	expect_logged("inline");
	if (q)
		ibv_destroy_qp(q);
	dp_ep_close(&a);
	dp_ep_close(&b);
	fu_done();
}

/* Bad XRC requests, an oversized SRQ and an illegal modify: refused and
 * explained. */
static void test_refusals_logged(void **state)
{
	struct dp_ep a;
	struct ibv_xrcd_init_attr xa;
	struct ibv_qp_init_attr_ex qx;
	struct ibv_srq_init_attr sa;
	struct ibv_srq_init_attr_ex sx;
	struct ibv_qp_attr qa;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	int r;

	(void)state;
	dp_ep_open(&a, false);

	log_reset();
	memset(&xa, 0, sizeof(xa));
	xa.comp_mask = IBV_XRCD_INIT_ATTR_FD;
	xa.fd = -1;
	xa.oflags = O_CREAT;
	errno = 0;
	xrcd = ibv_open_xrcd(a.ctx, &xa);
	fu_expect(!xrcd && errno == EINVAL, "open_xrcd without OFLAGS: %p %s",
		  (void *)xrcd, fu_errname(errno));
	expect_logged("OFLAGS");

	log_reset();
	memset(&qx, 0, sizeof(qx));
	qx.qp_type = IBV_QPT_XRC_SEND;
	qx.recv_cq = a.cq;
	qx.pd = a.pd;
	qx.comp_mask = IBV_QP_INIT_ATTR_PD;
	qx.cap.max_send_wr = 1;
	qx.cap.max_send_sge = 1;
	errno = 0;
	qp = ibv_create_qp_ex(a.ctx, &qx);
	fu_expect(!qp && errno == EINVAL, "XRC_SEND QP without send CQ: %p %s",
		  (void *)qp, fu_errname(errno));
	expect_logged("XRC_SEND");

	log_reset();
	memset(&sx, 0, sizeof(sx));
	sx.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
		       IBV_SRQ_INIT_ATTR_CQ;
	sx.srq_type = IBV_SRQT_XRC;
	sx.pd = a.pd;
	sx.cq = a.cq;
	sx.attr.max_wr = 1;
	sx.attr.max_sge = 1;
	errno = 0;
	srq = ibv_create_srq_ex(a.ctx, &sx);
	fu_expect(!srq && errno == EINVAL, "XRC SRQ without XRCD: %p %s",
		  (void *)srq, fu_errname(errno));
	expect_logged("XRC SRQ");

	log_reset();
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 1u << 20;
	sa.attr.max_sge = 1;
	errno = 0;
	srq = ibv_create_srq(a.pd, &sa);
	fu_expect(!srq && errno == EINVAL, "SRQ of 2^20 WRs: %p %s",
		  (void *)srq, fu_errname(errno));
	expect_logged("create SRQ");

	/* RESET -> RTR skips INIT. */
	dp_qp_create(&a, IBV_QPT_RC, 0);
	log_reset();
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	r = ibv_modify_qp(a.qp, &qa, IBV_QP_STATE);
	fu_expect(r == EINVAL, "RESET -> RTR: %d", r);
	expect_logged("transition not allowed");
	/* INIT without the attributes it requires. */
	log_reset();
	qa.qp_state = IBV_QPS_INIT;
	r = ibv_modify_qp(a.qp, &qa, IBV_QP_STATE);
	fu_expect(r == EINVAL, "RESET -> INIT without port: %d", r);
	expect_logged("requires");
	log_reset();
	qa.port_num = 2;
	qa.qp_access_flags = 0;
	r = ibv_modify_qp(a.qp, &qa, IBV_QP_STATE | IBV_QP_PORT |
			  IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS);
	fu_expect(r == EINVAL, "RESET -> INIT on port 2: %d", r);
	expect_logged("port_num");
	dp_ep_close(&a);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_limits),
		cmocka_unit_test(test_cq_max_cqe),
		cmocka_unit_test(test_cq_arena_full),
		cmocka_unit_test(test_inline_rounded_up),
		cmocka_unit_test(test_refusals_logged),
	};
	bool keep;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Before the first verbs call: the library reads these once. */
	/* A log file named by the caller is kept (to read the lines). */
	keep = getenv("SRDMA_LOG_FILE") && *getenv("SRDMA_LOG_FILE");
	if (keep)
		snprintf(log_path, sizeof(log_path), "%s",
			 getenv("SRDMA_LOG_FILE"));
	else
		snprintf(log_path, sizeof(log_path),
			 "/tmp/srdma-test-limits-%d.log", (int)getpid());
	setenv("SRDMA_LOG", "debug", 1);
	setenv("SRDMA_LOG_FILE", log_path, 1);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	if (!keep)
		unlink(log_path);
	return ret;
}
