// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_import_xproc.c - ibv_import_device/pd/mr across processes
 * (docs/design/import.md).
 *
 * A forked child, the owner, opens a context, PDs and MRs and passes the
 * context's cmd_fd to the parent over a unix socket (SCM_RIGHTS) with the
 * handles. The parent, the importer, imports the context, a PD and MRs,
 * checks that they describe the owner's objects (keys, address, length,
 * handle), creates a QP on the imported PD and moves bytes with the
 * owner's lkey: an RDMA WRITE from the owner's memory into a third
 * context's MR, an RDMA READ into the owner's memory (the owner checks
 * it), a FETCH_ADD whose result lands there; and a third context's WRITE
 * with the owner's rkey and SEND into a receive buffer of the owner's MR,
 * both through the importer's QP; the owner's device memory imported,
 * copied, registered and reached by RDMA, and its free on either side.
 * Over the wire (SRDMA_TRANSPORT=net, net.func.test_import_xproc) the
 * same WRs run through the net requester and responder, the owner's lkeys
 * included. Error paths: a bad fd, a non-context fd, bad handles, another
 * PD's MR, handles of a destroyed PD and MR, unimport twice, the importer's
 * dereg (a destroy, ibv_import_mr(3)), and the owner's death: imports
 * then fail with EINVAL and WRs through the owner's keys complete with
 * LOC_PROT_ERR, never touching whatever process has its pid next.
 *
 * The child never uses cmocka (xproc_util.h): it checks with XCHK.
 */
#include <fcntl.h>
#include <sys/uio.h>

#include "xproc_util.h"

#define LEN 4096u
#define IMP_ACCESS                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* What the owner tells the importer, with its cmd_fd. */
struct owner_info {
	uint32_t pd, pd2;		/* PD handles; pd2 holds mr2 */
	uint32_t mr, mr2, mr3;		/* MR handles: mr, mr3 in pd */
	uint32_t lkey, rkey;		/* of mr */
	uint32_t mr3_lkey;
	uint64_t addr, len;		/* of mr */
	int32_t pid;
	uint32_t dm, dm2;		/* DM handles (LEN bytes each) */
	uint32_t dm_rkey;		/* of an MR over dm, in pd */
};

#define DM_ACCESS (IMP_ACCESS | IBV_ACCESS_ZERO_BASED)

/* Send @n bytes at @p with @fd attached; 0 or -1. */
static int send_fd(int sock, int fd, const void *p, size_t n)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)(uintptr_t)p, n };
	struct msghdr m;
	struct cmsghdr *c;

	memset(&m, 0, sizeof(m));
	memset(cbuf, 0, sizeof(cbuf));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == (ssize_t)n ? 0 : -1;
}

/* Receive @n bytes into @p and the fd attached; the fd or -1. */
static int recv_fd(int sock, void *p, size_t n)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { p, n };
	struct msghdr m;
	struct cmsghdr *c;
	int fd = -1;

	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != (ssize_t)n)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* The owner: objects, fd out, then commands until 'X' or end of file. */
static void owner(int sock)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *mr2, *mr3, *dmr;
	struct ibv_alloc_dm_attr da = { .length = LEN };
	struct ibv_dm *dm, *dm2;
	struct ibv_pd *pd3 = NULL;
	struct ibv_mr *mr4 = NULL;
	struct ibv_qp *qp3;
	struct owner_info oi;
	uint32_t h;
	static char buf[LEN], buf2[LEN], buf3[LEN], dbuf[LEN];
	char cmd, want;
	size_t i;

	XCHK(!xp_open_pd_cq(&ctx, &pd, &cq, 16));
	XCHK((pd2 = ibv_alloc_pd(ctx)) != NULL);
	for (i = 0; i < LEN; i++)
		buf[i] = (char)('A' + i % 23);
	XCHK((mr = ibv_reg_mr(pd, buf, LEN, IMP_ACCESS)) != NULL);
	XCHK((mr2 = ibv_reg_mr(pd2, buf2, LEN, IMP_ACCESS)) != NULL);
	XCHK((mr3 = ibv_reg_mr(pd, buf3, LEN, IMP_ACCESS)) != NULL);
	memset(&oi, 0, sizeof(oi));
	oi.pd = pd->handle;
	oi.pd2 = pd2->handle;
	oi.mr = mr->handle;
	oi.mr2 = mr2->handle;
	oi.mr3 = mr3->handle;
	oi.lkey = mr->lkey;
	oi.rkey = mr->rkey;
	oi.mr3_lkey = mr3->lkey;
	oi.addr = (uintptr_t)mr->addr;
	oi.len = mr->length;
	oi.pid = getpid();
	XCHK((dm = ibv_alloc_dm(ctx, &da)) != NULL);
	XCHK((dm2 = ibv_alloc_dm(ctx, &da)) != NULL);
	for (i = 0; i < LEN; i++)
		dbuf[i] = (char)('a' + i % 19);
	XCHK(!ibv_memcpy_to_dm(dm, 0, dbuf, LEN));
	XCHK((dmr = ibv_reg_dm_mr(pd, dm, 0, LEN, DM_ACCESS)) != NULL);
	oi.dm = dm->handle;
	oi.dm2 = dm2->handle;
	oi.dm_rkey = dmr->rkey;
	XCHK(!send_fd(sock, ctx->cmd_fd, &oi, sizeof(oi)));
	for (;;) {
		cmd = xrecv_byte(sock);
		switch (cmd) {
		case 'V':	/* is buf all @want? */
			want = xrecv_byte(sock);
			for (i = 0; i < LEN && buf[i] == want; i++)
				;
			XCHK(!xsend_byte(sock, i == LEN ? 'y' : 'n'));
			break;
		case 'M':	/* destroy mr2, pd2 and mr3 */
			XCHK(!ibv_dereg_mr(mr2));
			XCHK(!ibv_dealloc_pd(pd2));
			XCHK(!ibv_dereg_mr(mr3));
			XCHK(!xsend_byte(sock, 'k'));
			break;
		case 'D':	/* is dm all @want? */
			want = xrecv_byte(sock);
			XCHK(!ibv_memcpy_from_dm(dbuf, dm, 0, LEN));
			for (i = 0; i < LEN && dbuf[i] == want; i++)
				;
			XCHK(!xsend_byte(sock, i == LEN ? 'y' : 'n'));
			break;
		case 'F':	/* drop the DM MR, free dm: its errno */
			if (dmr)
				XCHK(!ibv_dereg_mr(dmr));
			dmr = NULL;
			i = (size_t)ibv_free_dm(dm);
			if (!i)
				dm = NULL;
			XCHK(!xsend_byte(sock, (char)i));
			break;
		case 'G':	/* dm2 destroyed elsewhere: copy, then free */
			XCHK(!xsend_byte(sock, (char)ibv_memcpy_to_dm(dm2, 0,
								dbuf, 64)));
			XCHK(!xsend_byte(sock, (char)ibv_free_dm(dm2)));
			dm2 = NULL;
			break;
		case 'P':	/* a PD of nothing: its handle */
			XCHK((pd3 = ibv_alloc_pd(ctx)) != NULL);
			h = pd3->handle;
			XCHK(!xsend(sock, &h, sizeof(h)));
			break;
		case 'R':	/* an MR on it */
			XCHK((mr4 = ibv_reg_mr(pd3, buf3, LEN,
					       IMP_ACCESS)) != NULL);
			XCHK(!xsend_byte(sock, 'k'));
			break;
		case 'S':	/* drop that MR */
			XCHK(!ibv_dereg_mr(mr4));
			XCHK(!xsend_byte(sock, 'k'));
			break;
		case 'Q':	/* dealloc it: its errno */
			i = (size_t)ibv_dealloc_pd(pd3);
			XCHK(!xsend_byte(sock, (char)i));
			break;
		case 'T':	/* destroyed by the importer: use, then free */
			errno = 0;
			mr4 = ibv_reg_mr(pd3, buf3, LEN, IMP_ACCESS);
			XCHK(!xsend_byte(sock, mr4 ? 0 : (char)errno));
			errno = 0;
			qp3 = xp_qp_create(pd3, cq, NULL, IBV_QPT_RC, 4, 1, 0);
			XCHK(!xsend_byte(sock, qp3 ? 0 : (char)errno));
			XCHK(!xsend_byte(sock, (char)ibv_dealloc_pd(pd3)));
			pd3 = NULL;
			break;
		case 'X':	/* die with everything open */
			_exit(0);
		default:	/* end of file: clean up */
			if (dmr)
				XCHK(!ibv_dereg_mr(dmr));
			if (dm)
				XCHK(!ibv_free_dm(dm));
			if (dm2)
				XCHK(!ibv_free_dm(dm2));
			XCHK(!ibv_dereg_mr(mr));
			xp_close_pd_cq(ctx, pd, cq);
			_exit(0);
		}
	}
}

/* A context of the importer's own with an MR of @fill bytes. */
struct third {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[LEN];
};

static void third_open(struct third *t)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(xp_open_pd_cq(&t->ctx, &t->pd, &t->cq, 16), 0);
	t->mr = ibv_reg_mr(t->pd, t->buf, LEN, IMP_ACCESS);
	assert_non_null(t->mr);
}

static void third_close(struct third *t)
{
	if (t->qp)
		ibv_destroy_qp(t->qp);
	ibv_dereg_mr(t->mr);
	xp_close_pd_cq(t->ctx, t->pd, t->cq);
}

/* A fresh RC QP on @pd (with @cq) connected to a fresh QP of @t. */
static struct ibv_qp *connect_to(struct ibv_pd *pd, struct ibv_cq *cq,
				 struct third *t)
{
	struct dp_conn k = { .access = IMP_ACCESS };
	struct ibv_qp *qp;
	uint16_t lid = 0, tlid = 0;

	if (t->qp)
		ibv_destroy_qp(t->qp);
	t->qp = xp_qp_create(t->pd, t->cq, NULL, IBV_QPT_RC, 16, 2, 0);
	assert_non_null(t->qp);
	qp = xp_qp_create(pd, cq, NULL, IBV_QPT_RC, 16, 2, 0);
	assert_non_null(qp);
	assert_int_equal(xp_port_lid(pd->context, &lid), 0);
	assert_int_equal(xp_port_lid(t->ctx, &tlid), 0);
	assert_int_equal(dp_qp_connect(qp, t->qp->qp_num, tlid, &k), 0);
	assert_int_equal(dp_qp_connect(t->qp, qp->qp_num, lid, &k), 0);
	return qp;
}

/* Post one WR and expect its completion with @status. */
static void expect_wr(struct ibv_qp *qp, struct ibv_cq *cq,
		      enum ibv_wr_opcode op, uint64_t laddr, uint32_t lkey,
		      uint64_t raddr, uint32_t rkey, enum ibv_wc_status status,
		      const char *what)
{
	struct ibv_wc wc;

	assert_int_equal(dp_post(qp, 7, op, laddr, LEN, lkey, raddr, rkey),
			 0);
	fu_expect(dp_poll(cq, &wc, 10000), "%s: no completion", what);
	fu_expect(wc.status == status, "%s: status %s, want %s", what,
		  ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
}

/*
 * FETCH_ADD whose result lands in the owner's MR (a scatter through the
 * owner's lkey), read back with a WRITE from it (a gather).
 */
static void fetch_add_into_owner(struct ibv_qp *qp, struct ibv_cq *cq,
				 const struct owner_info *oi, struct third *t)
{
	struct ibv_sge s = { oi->addr, 8, oi->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	uint64_t v = 41, got;
	struct ibv_wc wc;

	memcpy(t->buf, &v, 8);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = (uintptr_t)t->buf;
	wr.wr.atomic.rkey = t->mr->rkey;
	wr.wr.atomic.compare_add = 1;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
	fu_expect(dp_poll(cq, &wc, 10000) && wc.status == IBV_WC_SUCCESS,
		  "FETCH_ADD into the owner's MR: %s",
		  ibv_wc_status_str(wc.status));
	memcpy(&got, t->buf, 8);
	fu_expect(got == 42, "FETCH_ADD target %llu", (unsigned long long)got);
	memset(t->buf, 0, LEN);
	expect_wr(qp, cq, IBV_WR_RDMA_WRITE, oi->addr, oi->lkey,
		  (uintptr_t)t->buf, t->mr->rkey, IBV_WC_SUCCESS,
		  "WRITE back from the owner's MR");
	memcpy(&got, t->buf, 8);
	fu_expect(got == 41 && t->buf[8] == 'c',
		  "the owner's MR after FETCH_ADD: %llu",
		  (unsigned long long)got);
}

/*
 * One SEND gathering from our own MR and from the owner's (after
 * fetch_add_into_owner, its bytes past the first 8 are 'c') into @t.
 */
static void send_mixed(struct ibv_qp *qp, struct ibv_cq *cq,
		       const struct owner_info *oi, struct ibv_mr *lmr,
		       const char *local, struct third *t)
{
	struct ibv_sge sg[2] = { { (uintptr_t)local, 100, lmr->lkey },
				 { oi->addr + 8, 2000, oi->lkey } };
	struct ibv_sge rs = { (uintptr_t)t->buf, LEN, t->mr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 3, .sg_list = &rs, .num_sge = 1 };
	struct ibv_recv_wr *rbad = NULL;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;
	size_t i;

	memset(t->buf, 0, LEN);
	assert_int_equal(ibv_post_recv(t->qp, &rw, &rbad), 0);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sg;
	wr.num_sge = 2;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
	fu_expect(dp_poll(cq, &wc, 10000) && wc.status == IBV_WC_SUCCESS,
		  "SEND from a local and the owner's MR: %s",
		  ibv_wc_status_str(wc.status));
	fu_expect(dp_poll(t->cq, &wc, 10000) && wc.status == IBV_WC_SUCCESS &&
			  wc.byte_len == 2100,
		  "receive of the mixed SEND: %s, %u bytes",
		  ibv_wc_status_str(wc.status), wc.byte_len);
	for (i = 0; i < 2100 && t->buf[i] == (i < 100 ? local[i] : 'c'); i++)
		;
	fu_expect(i == 2100, "mixed SEND: byte %zu differs", i);
}

/*
 * The owner's device memory: imported, copied to and from, registered by
 * us and reached by RDMA through our MR and through the owner's rkey; the
 * owner's free is EBUSY while our MR uses it, then every access of ours
 * is EINVAL. Our ibv_free_dm of another DM destroys it for the owner.
 */
static void dm_xproc(int sock, struct ibv_context *ictx, struct ibv_pd *ipd,
		     struct ibv_cq *cq, const struct owner_info *oi,
		     struct third *t)
{
	static char b[LEN];
	struct ibv_dm *dm, *dm2, *dm3;
	struct ibv_mr *dmr;
	struct ibv_qp *qp;
	size_t i;

	fu_expect(!ibv_import_dm(ictx, 0x7fff0001) && errno == EINVAL,
		  "import_dm(bad handle): %s", fu_errname(errno));
	dm = ibv_import_dm(ictx, oi->dm);
	fu_expect(dm != NULL, "import_dm: %s", fu_errname(errno));
	assert_non_null(dm);
	fu_expect(dm->handle == oi->dm && dm->context == ictx,
		  "imported DM: handle %u", dm->handle);
	dm3 = ibv_import_dm(ictx, oi->dm);
	fu_expect(dm3 && dm3 != dm, "second import_dm: %s",
		  fu_errname(errno));
	ibv_unimport_dm(dm3);

	/* Copies: the owner's bytes, and ours seen by the owner. */
	fu_expect_int(ibv_memcpy_from_dm(b, dm, 0, LEN), 0, "memcpy_from_dm");
	for (i = 0; i < LEN && b[i] == (char)('a' + i % 19); i++)
		;
	fu_expect(i == LEN, "memcpy_from_dm: byte %zu differs", i);
	fu_expect_int(ibv_memcpy_to_dm(dm, 2, b, 4), EINVAL,
		      "memcpy_to_dm at an unaligned offset");
	fu_expect_int(ibv_memcpy_to_dm(dm, LEN - 4, b, 8), EFAULT,
		      "memcpy_to_dm past the end");
	memset(b, 'e', LEN);
	fu_expect_int(ibv_memcpy_to_dm(dm, 0, b, LEN), 0, "memcpy_to_dm");
	assert_int_equal(xsend_byte(sock, 'D'), 0);
	assert_int_equal(xsend_byte(sock, 'e'), 0);
	fu_expect(xrecv_byte(sock) == 'y', "the owner's DM after memcpy_to_dm");

	/* Our MR over it: a WRITE from it, a peer's WRITE into it. */
	dmr = ibv_reg_dm_mr(ipd, dm, 0, LEN, DM_ACCESS);
	fu_expect(dmr != NULL, "reg_dm_mr on the imported DM: %s",
		  fu_errname(errno));
	assert_non_null(dmr);
	qp = connect_to(ipd, cq, t);
	memset(t->buf, 0, LEN);
	expect_wr(qp, cq, IBV_WR_RDMA_WRITE, 0, dmr->lkey, (uintptr_t)t->buf,
		  t->mr->rkey, IBV_WC_SUCCESS, "WRITE from the imported DM");
	fu_expect(t->buf[0] == 'e' && t->buf[LEN - 1] == 'e',
		  "WRITE from the imported DM: %#x", t->buf[0]);
	memset(t->buf, 'f', LEN);
	expect_wr(t->qp, t->cq, IBV_WR_RDMA_WRITE, (uintptr_t)t->buf,
		  t->mr->lkey, 0, dmr->rkey, IBV_WC_SUCCESS,
		  "peer's WRITE into our MR over the imported DM");
	assert_int_equal(xsend_byte(sock, 'D'), 0);
	assert_int_equal(xsend_byte(sock, 'f'), 0);
	fu_expect(xrecv_byte(sock) == 'y', "the owner's DM after WRITE");
	/* The owner's DM MR's rkey at our QP (an imported rkey). */
	memset(t->buf, 'g', LEN);
	expect_wr(t->qp, t->cq, IBV_WR_RDMA_WRITE, (uintptr_t)t->buf,
		  t->mr->lkey, 0, oi->dm_rkey, IBV_WC_SUCCESS,
		  "peer's WRITE with the owner's DM rkey");
	fu_expect_int(ibv_memcpy_from_dm(b, dm, 0, LEN), 0,
		      "memcpy_from_dm after WRITE");
	fu_expect(b[0] == 'g' && b[LEN - 1] == 'g',
		  "the imported DM after the peer's WRITE: %#x", b[0]);
	ibv_destroy_qp(qp);

	/* The owner cannot free it while our MR uses it. */
	assert_int_equal(xsend_byte(sock, 'F'), 0);
	fu_expect_int(xrecv_byte(sock), EBUSY,
		      "the owner's free_dm while our MR uses it");
	fu_expect_int(ibv_dereg_mr(dmr), 0, "dereg of our DM MR");
	assert_int_equal(xsend_byte(sock, 'F'), 0);
	fu_expect_int(xrecv_byte(sock), 0, "the owner's free_dm");
	/* Freed by the owner: our object errs, never crashes. */
	fu_expect_int(ibv_memcpy_from_dm(b, dm, 0, LEN), EINVAL,
		      "memcpy_from_dm after the owner's free");
	fu_expect_int(ibv_memcpy_to_dm(dm, 0, b, 4), EINVAL,
		      "memcpy_to_dm after the owner's free");
	fu_expect(!ibv_reg_dm_mr(ipd, dm, 0, LEN, DM_ACCESS) && errno == EINVAL,
		  "reg_dm_mr after the owner's free: %s", fu_errname(errno));
	fu_expect(!ibv_import_dm(ictx, oi->dm) && errno == EINVAL,
		  "import_dm of a freed DM: %s", fu_errname(errno));
	ibv_unimport_dm(dm);

	/* Our free destroys the owner's DM. */
	dm2 = ibv_import_dm(ictx, oi->dm2);
	fu_expect(dm2 != NULL, "import_dm(dm2): %s", fu_errname(errno));
	assert_non_null(dm2);
	fu_expect_int(ibv_free_dm(dm2), 0, "free_dm of an imported DM");
	fu_expect(!ibv_import_dm(ictx, oi->dm2) && errno == EINVAL,
		  "import_dm after our free: %s", fu_errname(errno));
	assert_int_equal(xsend_byte(sock, 'G'), 0);
	fu_expect_int(xrecv_byte(sock), EINVAL,
		      "the owner's memcpy_to_dm after our free");
	fu_expect_int(xrecv_byte(sock), 0,
		      "the owner's free_dm after our free");
}

/*
 * ibv_dealloc_pd of an imported PD destroys the owner's PD, unless an
 * object of any process uses it (EBUSY); after it the PD is gone for the
 * owner and for every import.
 */
static void pd_destroy_xproc(int sock, struct ibv_context *ictx)
{
	static char b[LEN];
	struct ibv_pd *ipd, *ipd2;
	struct ibv_mr *mr;
	uint32_t h = 0;

	assert_int_equal(xsend_byte(sock, 'P'), 0);
	assert_int_equal(xrecv(sock, &h, sizeof(h)), 0);
	ipd = ibv_import_pd(ictx, h);
	ipd2 = ibv_import_pd(ictx, h);
	fu_expect(ipd && ipd2, "import_pd(pd3): %s", fu_errname(errno));
	assert_non_null(ipd);
	assert_non_null(ipd2);

	/* Our MR on it: neither side may destroy it. */
	mr = ibv_reg_mr(ipd2, b, LEN, IMP_ACCESS);
	assert_non_null(mr);
	assert_int_equal(xsend_byte(sock, 'Q'), 0);
	fu_expect_int(xrecv_byte(sock), EBUSY,
		      "the owner's dealloc_pd while our MR uses it");
	fu_expect_int(ibv_dealloc_pd(ipd), EBUSY,
		      "dealloc_pd of an import while our MR uses the PD");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg of our MR");
	/* The owner's MR on it. */
	assert_int_equal(xsend_byte(sock, 'R'), 0);
	assert_int_equal(xrecv_byte(sock), 'k');
	fu_expect_int(ibv_dealloc_pd(ipd), EBUSY,
		      "dealloc_pd of an import while the owner's MR uses it");
	assert_int_equal(xsend_byte(sock, 'S'), 0);
	assert_int_equal(xrecv_byte(sock), 'k');

	/* Nothing uses it: destroyed for everybody. */
	fu_expect_int(ibv_dealloc_pd(ipd), 0, "dealloc_pd of an import");
	fu_expect(!ibv_import_pd(ictx, h) && errno == EINVAL,
		  "import_pd of a destroyed PD: %s", fu_errname(errno));
	errno = 0;
	fu_expect(!ibv_reg_mr(ipd2, b, LEN, IMP_ACCESS) && errno == EINVAL,
		  "reg_mr on another import of a destroyed PD: %s",
		  fu_errname(errno));
	ibv_unimport_pd(ipd2);
	assert_int_equal(xsend_byte(sock, 'T'), 0);
	fu_expect_int(xrecv_byte(sock), EINVAL,
		      "the owner's reg_mr on its destroyed PD");
	fu_expect_int(xrecv_byte(sock), EINVAL,
		      "the owner's create_qp on its destroyed PD");
	fu_expect_int(xrecv_byte(sock), 0,
		      "the owner's dealloc_pd of its destroyed PD");
}

static void test_import_xproc(void **state)
{
	struct ibv_pd *ipd, *ipd2, *lpd;
	struct ibv_mr *imr, *imr2, *imr3, *lmr;
	struct ibv_context *ictx, *c2;
	struct owner_info oi;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct third t;
	static char local[LEN];
	int sock, fd, keep, pfd[2], st;
	pid_t pid;
	size_t i;

	(void)state;
	alarm(120);
	pid = xp_spawn(&sock, owner, 120);
	fd = recv_fd(sock, &oi, sizeof(oi));
	assert_true(fd >= 0);
	keep = dup(fd);
	assert_true(keep >= 0);

	/* Not a context's fd. */
	fu_expect(!ibv_import_device(-1) && errno == EBADF,
		  "import_device(-1): %s", fu_errname(errno));
	assert_int_equal(pipe(pfd), 0);
	fu_expect(!ibv_import_device(pfd[0]) && errno == EINVAL,
		  "import_device(pipe): %s", fu_errname(errno));
	close(pfd[0]);
	close(pfd[1]);

	/* The context, a PD, an MR: the owner's objects. */
	ictx = ibv_import_device(fd);
	fu_expect(ictx != NULL, "import_device: %s", fu_errname(errno));
	assert_non_null(ictx);
	fu_expect(!ibv_import_pd(ictx, 0x7fff1234) && errno == EINVAL,
		  "import_pd(bad handle): %s", fu_errname(errno));
	ipd = ibv_import_pd(ictx, oi.pd);
	fu_expect(ipd != NULL, "import_pd: %s", fu_errname(errno));
	assert_non_null(ipd);
	fu_expect_int(ipd->handle, oi.pd, "imported PD handle");
	fu_expect(ipd->context == ictx, "imported PD's context");
	fu_expect(!ibv_import_mr(ipd, oi.mr2) && errno == EINVAL,
		  "import_mr(another PD's MR): %s", fu_errname(errno));
	fu_expect(!ibv_import_mr(ipd, 0xffffffu) && errno == EINVAL,
		  "import_mr(bad handle): %s", fu_errname(errno));
	imr = ibv_import_mr(ipd, oi.mr);
	fu_expect(imr != NULL, "import_mr: %s", fu_errname(errno));
	assert_non_null(imr);
	fu_expect(imr->lkey == oi.lkey && imr->rkey == oi.rkey &&
			  (uintptr_t)imr->addr == oi.addr &&
			  imr->length == oi.len && imr->handle == oi.mr &&
			  imr->pd == ipd && imr->context == ictx,
		  "imported MR: lkey %#x rkey %#x addr %p len %zu handle %u",
		  imr->lkey, imr->rkey, imr->addr, imr->length, imr->handle);

	errno = 0;
	fu_expect(ibv_rereg_mr(imr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			       IBV_ACCESS_LOCAL_WRITE) ==
				  IBV_REREG_MR_ERR_INPUT &&
			  errno == EINVAL,
		  "rereg of an imported MR: %s", fu_errname(errno));

	/* Import twice, unimport twice: each import is an object. */
	ipd2 = ibv_import_pd(ictx, oi.pd);
	fu_expect(ipd2 && ipd2 != ipd, "second import_pd: %s",
		  fu_errname(errno));
	imr2 = ibv_import_mr(ipd2, oi.mr);
	fu_expect(imr2 && imr2 != imr, "second import_mr: %s",
		  fu_errname(errno));
	fu_expect(ibv_dealloc_pd(ipd2) == EBUSY,
		  "dealloc of an imported PD in use");
	ibv_unimport_mr(imr2);
	ibv_unimport_mr(imr2);
	ibv_unimport_pd(ipd2);
	ibv_unimport_pd(ipd2);

	/* QPs and local objects of the importer on the imported context. */
	cq = ibv_create_cq(ictx, 16, NULL, NULL, 0);
	assert_non_null(cq);
	lpd = ibv_alloc_pd(ictx);
	assert_non_null(lpd);
	fu_expect(lpd->handle != oi.pd, "local PD handle %u", lpd->handle);
	memset(local, 'L', sizeof(local));
	lmr = ibv_reg_mr(ipd, local, LEN, IMP_ACCESS);
	assert_non_null(lmr);
	third_open(&t);
	qp = connect_to(ipd, cq, &t);

	/* Our own MR on the imported PD works as any MR. */
	expect_wr(qp, cq, IBV_WR_RDMA_WRITE, (uintptr_t)local, lmr->lkey,
		  (uintptr_t)t.buf, t.mr->rkey, IBV_WC_SUCCESS,
		  "WRITE from a local MR of the imported PD");
	fu_expect(t.buf[0] == 'L' && t.buf[LEN - 1] == 'L', "local WRITE");
	/* WRITE from the owner's memory through its lkey. */
	expect_wr(qp, cq, IBV_WR_RDMA_WRITE, oi.addr, oi.lkey,
		  (uintptr_t)t.buf, t.mr->rkey, IBV_WC_SUCCESS,
		  "WRITE from the owner's MR");
	for (i = 0; i < LEN && t.buf[i] == (char)('A' + i % 23); i++)
		;
	fu_expect(i == LEN,
		  "WRITE from the owner's MR: byte %zu differs", i);
	/* READ into the owner's memory: the owner sees it. */
	memset(t.buf, 'c', LEN);
	expect_wr(qp, cq, IBV_WR_RDMA_READ, oi.addr, oi.lkey,
		  (uintptr_t)t.buf, t.mr->rkey, IBV_WC_SUCCESS,
		  "READ into the owner's MR");
	assert_int_equal(xsend_byte(sock, 'V'), 0);
	assert_int_equal(xsend_byte(sock, 'c'), 0);
	fu_expect(xrecv_byte(sock) == 'y',
		  "the owner's memory after READ");
	fetch_add_into_owner(qp, cq, &oi, &t);
	send_mixed(qp, cq, &oi, lmr, local, &t);
	ibv_destroy_qp(qp);
	qp = connect_to(ipd, cq, &t);

	/* A peer's WRITE to our QP with the owner's rkey lands in the
	 * owner's memory. */
	memset(t.buf, 'w', LEN);
	expect_wr(t.qp, t.cq, IBV_WR_RDMA_WRITE, (uintptr_t)t.buf,
		  t.mr->lkey, oi.addr, oi.rkey, IBV_WC_SUCCESS,
		  "peer's WRITE with the owner's rkey");
	assert_int_equal(xsend_byte(sock, 'V'), 0);
	assert_int_equal(xsend_byte(sock, 'w'), 0);
	fu_expect(xrecv_byte(sock) == 'y', "the owner's memory after WRITE");
	/* A SEND into a receive buffer of the owner's MR. */
	{
		struct ibv_sge rs = { oi.addr, LEN, oi.lkey };
		struct ibv_recv_wr rw = { .wr_id = 9, .sg_list = &rs,
					  .num_sge = 1 }, *bad = NULL;
		struct ibv_wc wc;

		assert_int_equal(ibv_post_recv(qp, &rw, &bad), 0);
		memset(t.buf, 's', LEN);
		expect_wr(t.qp, t.cq, IBV_WR_SEND, (uintptr_t)t.buf,
			  t.mr->lkey, 0, 0, IBV_WC_SUCCESS,
			  "peer's SEND into the owner's MR");
		fu_expect(dp_poll(cq, &wc, 10000) && wc.status == IBV_WC_SUCCESS &&
				  wc.wr_id == 9 && wc.byte_len == LEN,
			  "receive into the owner's MR: %s",
			  ibv_wc_status_str(wc.status));
		assert_int_equal(xsend_byte(sock, 'V'), 0);
		assert_int_equal(xsend_byte(sock, 's'), 0);
		fu_expect(xrecv_byte(sock) == 'y',
			  "the owner's memory after SEND");
	}
	ibv_destroy_qp(qp);
	dm_xproc(sock, ictx, ipd, cq, &oi, &t);
	qp = connect_to(ipd, cq, &t);
	/* The local PD of the imported context is another PD. */
	expect_wr(qp, cq, IBV_WR_RDMA_WRITE, (uintptr_t)local, 0x12345678,
		  (uintptr_t)t.buf, t.mr->rkey, IBV_WC_LOC_PROT_ERR,
		  "WRITE with an unknown lkey");
	ibv_destroy_qp(qp);

	/* The importer's dereg destroys; the owner's dereg still works. */
	imr3 = ibv_import_mr(ipd, oi.mr3);
	fu_expect(imr3 != NULL, "import_mr(mr3): %s", fu_errname(errno));
	assert_non_null(imr3);
	fu_expect_int(ibv_dereg_mr(imr3), 0, "importer's dereg");
	fu_expect(!ibv_import_mr(ipd, oi.mr3) && errno == EINVAL,
		  "import_mr after the importer's dereg: %s",
		  fu_errname(errno));
	qp = connect_to(ipd, cq, &t);
	expect_wr(qp, cq, IBV_WR_RDMA_WRITE, (uintptr_t)oi.addr, oi.mr3_lkey,
		  (uintptr_t)t.buf, t.mr->rkey, IBV_WC_LOC_PROT_ERR,
		  "WRITE through a destroyed MR's lkey");
	ibv_destroy_qp(qp);

	pd_destroy_xproc(sock, ictx);

	/* Handles of a destroyed PD and MR. */
	assert_int_equal(xsend_byte(sock, 'M'), 0);
	assert_int_equal(xrecv_byte(sock), 'k');
	fu_expect(!ibv_import_pd(ictx, oi.pd2) && errno == EINVAL,
		  "import_pd(destroyed PD): %s", fu_errname(errno));
	fu_expect(!ibv_import_mr(ipd, oi.mr3) && errno == EINVAL,
		  "import_mr(destroyed MR): %s", fu_errname(errno));

	/* The owner dies with everything open. */
	assert_int_equal(xsend_byte(sock, 'X'), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && !WEXITSTATUS(st), "owner exit status %#x",
		  st);
	fu_expect(!ibv_import_pd(ictx, oi.pd) && errno == EINVAL,
		  "import_pd after the owner died: %s", fu_errname(errno));
	fu_expect(!ibv_import_mr(ipd, oi.mr) && errno == EINVAL,
		  "import_mr after the owner died: %s", fu_errname(errno));
	c2 = ibv_import_device(keep);
	fu_expect(!c2 && errno == EINVAL,
		  "import_device after the owner died: %s", fu_errname(errno));
	if (!c2)
		close(keep);
	qp = connect_to(ipd, cq, &t);
	expect_wr(qp, cq, IBV_WR_RDMA_WRITE, oi.addr, oi.lkey,
		  (uintptr_t)t.buf, t.mr->rkey, IBV_WC_LOC_PROT_ERR,
		  "WRITE through a dead owner's lkey");
	ibv_destroy_qp(qp);

	/* Teardown: an imported PD in use cannot go, then can. */
	fu_expect(ibv_dealloc_pd(ipd) == EBUSY, "dealloc of a used import");
	ibv_unimport_mr(imr);
	fu_expect_int(ibv_dereg_mr(lmr), 0, "dereg of a local MR");
	ibv_unimport_pd(ipd);
	fu_expect_int(ibv_dealloc_pd(lpd), 0, "dealloc of a local PD");
	fu_expect_int(ibv_destroy_cq(cq), 0, "destroy CQ");
	fu_expect_int(ibv_close_device(ictx), 0, "close imported context");
	third_close(&t);
	close(sock);
	alarm(0);
	fu_done();
}

/* An importer that dies with MRs on the owner's PD and DM. */
static void dying_importer(int sock)
{
	static char b[LEN];
	struct owner_info oi;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_dm *dm;
	uint32_t h;
	int fd;

	fd = recv_fd(sock, &oi, sizeof(oi));
	XCHK(fd >= 0);
	XCHK(!xrecv(sock, &h, sizeof(h)));
	XCHK((ctx = ibv_import_device(fd)) != NULL);
	XCHK((pd = ibv_import_pd(ctx, h)) != NULL);
	XCHK(ibv_reg_mr(pd, b, LEN, IMP_ACCESS) != NULL);
	XCHK((dm = ibv_import_dm(ctx, oi.dm2)) != NULL);
	XCHK(ibv_reg_dm_mr(pd, dm, 0, LEN, DM_ACCESS) != NULL);
	XCHK(!xsend_byte(sock, 'k'));
	_exit(0);
}

/*
 * The uses of an importer that died are not the owner's to wait for: once
 * no live context imports the owner's, its ibv_dealloc_pd and ibv_free_dm
 * succeed.
 */
static void test_import_dead_importer(void **state)
{
	struct owner_info oi;
	int sock, s2, fd, st;
	pid_t pid, pid2;
	uint32_t h = 0;

	(void)state;
	alarm(120);
	pid = xp_spawn(&sock, owner, 120);
	fd = recv_fd(sock, &oi, sizeof(oi));
	assert_true(fd >= 0);
	assert_int_equal(xsend_byte(sock, 'P'), 0);
	assert_int_equal(xrecv(sock, &h, sizeof(h)), 0);
	pid2 = xp_spawn(&s2, dying_importer, 60);
	assert_int_equal(send_fd(s2, fd, &oi, sizeof(oi)), 0);
	assert_int_equal(xsend(s2, &h, sizeof(h)), 0);
	fu_expect(xrecv_byte(s2) == 'k', "the importer's MR on the PD");
	assert_int_equal(waitpid(pid2, &st, 0), pid2);
	close(s2);
	assert_int_equal(xsend_byte(sock, 'Q'), 0);
	fu_expect_int(xrecv_byte(sock), 0,
		      "the owner's dealloc_pd after its importer died");
	assert_int_equal(xsend_byte(sock, 'G'), 0);
	fu_expect_int(xrecv_byte(sock), 0,
		      "the owner's memcpy_to_dm after its importer died");
	fu_expect_int(xrecv_byte(sock), 0,
		      "the owner's free_dm after its importer died");
	close(fd);
	close(sock);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && !WEXITSTATUS(st), "owner exit status %#x",
		  st);
	alarm(0);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import_xproc),
		cmocka_unit_test(test_import_dead_importer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
