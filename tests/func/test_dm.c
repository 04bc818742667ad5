// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_dm.c - device memory (docs/design/dm.md): ibv_alloc_dm,
 * ibv_free_dm, ibv_memcpy_to/from_dm, ibv_reg_dm_mr and RDMA to and from
 * DM MRs, and the in-process object import that shares a DM.
 *
 * Error paths, with the errno of rdma-core's man pages and, where they
 * are silent, mlx5's: bad attributes (comp_mask, length 0 or above
 * max_dm_size, alignment) EINVAL, the budget used up ENOMEM, copies out
 * of the DM EFAULT and in other than 4-byte units EINVAL, ZERO_BASED
 * missing or a bad access flag EINVAL, free with an MR EBUSY, double free
 * and copies after free EINVAL. Traffic: SEND from one DM MR into another
 * DM MR, RDMA WRITE into and READ from a remote DM MR, between two
 * contexts of this process and with a forked child whose DM is the
 * passive target (it makes no verbs call while the parent works on its
 * DM). Run again over the wire as net.func.test_dm.
 */
#include <fcntl.h>

#include "xproc_util.h"

#define DM_MAX (256u << 10)	/* what the device reports */

static struct ibv_dm *dm_alloc(struct ibv_context *ctx, size_t len,
			       uint32_t log_align, uint32_t comp_mask)
{
	struct ibv_alloc_dm_attr a = {
		.length = len,
		.log_align_req = log_align,
		.comp_mask = comp_mask,
	};

	return ibv_alloc_dm(ctx, &a);
}

#define expect_alloc_err(ctx, len, align, mask, want)                          \
	do {                                                                   \
		struct ibv_dm *d_;                                             \
		errno = 0;                                                     \
		d_ = dm_alloc(ctx, len, align, mask);                          \
		fu_expect(!d_ && errno == (want),                              \
			  "alloc_dm(%zu, align %u, mask %#x): %s, want %s",    \
			  (size_t)(len), (unsigned int)(align),                \
			  (unsigned int)(mask),                                \
			  d_ ? "succeeded" : fu_errname(errno),                \
			  fu_errname(want));                                   \
		if (d_)                                                        \
			ibv_free_dm(d_);                                       \
	} while (0)

static void test_dm_caps(void **state)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(fu.ctx, NULL, &ax), 0);
	fu_expect_int(ax.max_dm_size, DM_MAX, "max_dm_size");
	fu_done();
}

static void test_dm_alloc_bad_attr(void **state)
{
	struct ibv_dm *dm;

	expect_alloc_err(fu.ctx, 0, 0, 0, EINVAL);
	expect_alloc_err(fu.ctx, DM_MAX + 1, 0, 0, EINVAL);
	expect_alloc_err(fu.ctx, SIZE_MAX, 0, 0, EINVAL);
	expect_alloc_err(fu.ctx, 64, 0, 1, EINVAL);
	expect_alloc_err(fu.ctx, 64, 0, 0x80000000u, EINVAL);
	expect_alloc_err(fu.ctx, 64, 13, 0, EINVAL);
	/* Alignment up to a page is honoured. */
	dm = dm_alloc(fu.ctx, 100, 12, 0);
	assert_non_null(dm);
	fu_expect(dm->context == fu.ctx, "dm->context %p", (void *)dm->context);
	fu_expect(dm->comp_mask == 0, "dm->comp_mask %#x", dm->comp_mask);
	fu_expect_int(ibv_free_dm(dm), 0, "free_dm");
	fu_done();
}

/* The whole budget, in any sizes; one more byte is ENOMEM until a free. */
static void test_dm_budget(void **state)
{
	struct ibv_dm *a, *b, *c;

	a = dm_alloc(fu.ctx, DM_MAX / 2, 0, 0);
	b = dm_alloc(fu.ctx, DM_MAX / 2, 6, 0);
	assert_non_null(a);
	assert_non_null(b);
	fu_expect(a->handle != b->handle, "two DMs share handle %u",
		  a->handle);
	expect_alloc_err(fu.ctx, 1, 0, 0, ENOMEM);
	fu_expect_int(ibv_free_dm(b), 0, "free_dm");
	/* Charged in 64-byte units: 4 bytes take 64. */
	c = dm_alloc(fu.ctx, DM_MAX / 2 - 64, 0, 0);
	assert_non_null(c);
	b = dm_alloc(fu.ctx, 4, 0, 0);
	assert_non_null(b);
	expect_alloc_err(fu.ctx, 4, 0, 0, ENOMEM);
	fu_expect_int(ibv_free_dm(b), 0, "free_dm");
	fu_expect_int(ibv_free_dm(c), 0, "free_dm");
	fu_expect_int(ibv_free_dm(a), 0, "free_dm");
	fu_done();
}

static void test_dm_copy(void **state)
{
	uint8_t in[256], out[256];
	struct ibv_dm *dm = dm_alloc(fu.ctx, 256, 0, 0);
	size_t i;

	assert_non_null(dm);
	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 + 1);
	fu_expect_int(ibv_memcpy_to_dm(dm, 0, in, 256), 0, "to_dm");
	memset(out, 0, sizeof(out));
	fu_expect_int(ibv_memcpy_from_dm(out, dm, 0, 256), 0, "from_dm");
	fu_expect(!memcmp(in, out, 256), "DM content differs");
	memset(out, 0, sizeof(out));
	fu_expect_int(ibv_memcpy_from_dm(out, dm, 128, 64), 0, "from_dm");
	fu_expect(!memcmp(in + 128, out, 64), "DM slice differs");
	fu_expect_int(ibv_memcpy_to_dm(dm, 256, in, 0), 0, "empty copy");
	/* Outside the DM: EFAULT; not in 4-byte units: EINVAL. */
	fu_expect_int(ibv_memcpy_to_dm(dm, 0, in, 260), EFAULT, "length");
	fu_expect_int(ibv_memcpy_to_dm(dm, 252, in, 8), EFAULT, "end");
	fu_expect_int(ibv_memcpy_to_dm(dm, 260, in, 4), EFAULT, "offset");
	fu_expect_int(ibv_memcpy_from_dm(out, dm, UINT64_MAX - 3, 8), EFAULT,
		      "offset overflow");
	fu_expect_int(ibv_memcpy_to_dm(dm, 2, in, 4), EINVAL, "offset 2");
	fu_expect_int(ibv_memcpy_from_dm(out, dm, 4, 3), EINVAL, "length 3");
	fu_expect_int(ibv_free_dm(dm), 0, "free_dm");
	/* After free: the copy functions and free itself refuse. */
	fu_expect_int(ibv_memcpy_to_dm(dm, 0, in, 4), EINVAL, "to_dm freed");
	fu_expect_int(ibv_memcpy_from_dm(out, dm, 0, 4), EINVAL,
		      "from_dm freed");
	fu_expect_int(ibv_free_dm(dm), EINVAL, "double free");
	fu_done();
}

#define expect_reg_dm_err(pd, dm, off, len, acc, want)                         \
	do {                                                                   \
		struct ibv_mr *m_;                                             \
		errno = 0;                                                     \
		m_ = ibv_reg_dm_mr(pd, dm, off, len, acc);                     \
		fu_expect(!m_ && errno == (want),                              \
			  "reg_dm_mr(off %zu, len %zu, access %#x): %s, "      \
			  "want %s",                                           \
			  (size_t)(off), (size_t)(len), (unsigned int)(acc),   \
			  m_ ? "succeeded" : fu_errname(errno),                \
			  fu_errname(want));                                   \
		if (m_)                                                        \
			ibv_dereg_mr(m_);                                      \
	} while (0)

static void test_dm_reg_mr(void **state)
{
	const unsigned int zb = IBV_ACCESS_ZERO_BASED;
	const unsigned int lw = IBV_ACCESS_LOCAL_WRITE;
	struct ibv_context *other = fu_open_srdma();
	struct ibv_pd *opd = ibv_alloc_pd(other);
	struct ibv_dm *dm = dm_alloc(fu.ctx, 1024, 0, 0);
	struct ibv_mr *mr, *mr0;

	assert_non_null(opd);
	assert_non_null(dm);
	expect_reg_dm_err(fu.pd, dm, 0, 1024, lw, EINVAL);	/* no ZB */
	expect_reg_dm_err(fu.pd, dm, 0, 1024, zb | lw | IBV_ACCESS_MW_BIND,
			  EINVAL);
	expect_reg_dm_err(fu.pd, dm, 0, 1024, zb | lw | IBV_ACCESS_ON_DEMAND,
			  EINVAL);
	expect_reg_dm_err(fu.pd, dm, 0, 1024, zb | IBV_ACCESS_REMOTE_WRITE,
			  EINVAL);	/* REMOTE_WRITE needs LOCAL_WRITE */
	expect_reg_dm_err(fu.pd, dm, 0, 1028, zb | lw, EINVAL);
	expect_reg_dm_err(fu.pd, dm, 1024, 4, zb | lw, EINVAL);
	expect_reg_dm_err(fu.pd, dm, 2048, 0, zb | lw, EINVAL);
	expect_reg_dm_err(fu.pd, dm, UINT64_MAX, 2, zb | lw, EINVAL);
	expect_reg_dm_err(opd, dm, 0, 64, zb | lw, EINVAL); /* other ctx */

	mr = ibv_reg_dm_mr(fu.pd, dm, 512, 512,
			   zb | lw | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(mr);
	fu_expect(mr->addr == NULL, "DM MR addr %p, want 0 (zero-based)",
		  mr->addr);
	fu_expect_int(mr->length, 512, "DM MR length");
	fu_expect(mr->pd == fu.pd, "DM MR pd");
	/* A zero-length registration (pyverbs does one) is valid. */
	mr0 = ibv_reg_dm_mr(fu.pd, dm, 1024, 0, zb | lw);
	fu_expect(mr0 != NULL, "zero-length DM MR: %s", fu_errname(errno));
	/* Busy while registered; rereg cannot move it off the DM. */
	fu_expect_int(ibv_free_dm(dm), EBUSY, "free_dm with MRs");
	fu_expect(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			       lw) != 0,
		  "rereg of a DM MR succeeded");
	fu_expect_int(ibv_dealloc_pd(fu.pd), EBUSY, "dealloc PD with DM MR");
	fu_expect_int(ibv_dereg_mr(mr), 0, "dereg DM MR");
	fu_expect_int(ibv_free_dm(dm), mr0 ? EBUSY : 0, "free_dm, one MR");
	if (mr0)
		fu_expect_int(ibv_dereg_mr(mr0), 0, "dereg zero-length MR");
	/* The context cannot close while it has DMs. */
	{
		struct ibv_dm *odm = dm_alloc(other, 64, 0, 0);

		assert_non_null(odm);
		assert_int_equal(ibv_dealloc_pd(opd), 0);
		fu_expect(ibv_close_device(other) == -1 && errno == EBUSY,
			  "close_device with a DM: %s", fu_errname(errno));
		fu_expect_int(ibv_free_dm(odm), 0, "free other DM");
	}
	fu_expect_int(ibv_free_dm(dm), 0, "free_dm after dereg");
	fu_expect_int(ibv_close_device(other), 0, "close other");
	fu_done();
}

/* Import within the process: an alias context sees the same DM. */
static void test_dm_import(void **state)
{
	struct ibv_dm *dm = dm_alloc(fu.ctx, 128, 0, 0), *idm;
	struct ibv_context *ictx;
	struct ibv_pd *ipd;
	uint32_t in = 0x12345678, out = 0;

	assert_non_null(dm);
	ictx = ibv_import_device(dup(fu.ctx->cmd_fd));
	assert_non_null(ictx);
	idm = ibv_import_dm(ictx, dm->handle);
	assert_non_null(idm);
	fu_expect_int(ibv_memcpy_to_dm(dm, 64, &in, 4), 0, "to_dm");
	fu_expect_int(ibv_memcpy_from_dm(&out, idm, 64, 4), 0, "from_dm");
	fu_expect_int(out, in, "data through the imported DM");
	errno = 0;
	fu_expect(!ibv_import_dm(ictx, dm->handle + 1000) && errno == EINVAL,
		  "import of a missing DM: %s", fu_errname(errno));
	ipd = ibv_import_pd(ictx, fu.pd->handle);
	fu_expect(ipd != NULL, "import_pd: %s", fu_errname(errno));
	ibv_unimport_pd(ipd);
	ibv_unimport_dm(idm);
	errno = 0;
	fu_expect(!ibv_import_device(-1) && errno == EBADF,
		  "import_device(-1): %s", fu_errname(errno));
	{
		int fd = open("/dev/null", O_RDONLY);

		errno = 0;
		fu_expect(!ibv_import_device(fd) && errno == EINVAL,
			  "import_device(/dev/null): %s", fu_errname(errno));
		close(fd);
	}
	/* Closing the alias leaves the context open. */
	fu_expect_int(ibv_close_device(ictx), 0, "close imported context");
	fu_expect_int(ibv_memcpy_from_dm(&out, dm, 64, 4), 0, "DM still live");
	fu_expect_int(ibv_free_dm(dm), 0, "free_dm");
	fu_done();
}

/* ---- traffic ------------------------------------------------------------ */

#define TLEN 1024u
#define DM_ACC                                                                 \
	(IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |                      \
	 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct dm_ep {
	struct dp_ep e;
	struct ibv_dm *dm;
	struct ibv_mr *dmr;
};

/* A DM of TLEN bytes and a zero-based MR over all of it. Returns 0. */
static int dm_ep_add(struct dm_ep *d)
{
	d->dm = dm_alloc(d->e.ctx, TLEN, 0, 0);
	if (!d->dm)
		return -1;
	d->dmr = ibv_reg_dm_mr(d->e.pd, d->dm, 0, TLEN, DM_ACC);
	return d->dmr ? 0 : -1;
}

static void dm_ep_del(struct dm_ep *d)
{
	if (d->dmr)
		ibv_dereg_mr(d->dmr);
	if (d->dm)
		ibv_free_dm(d->dm);
	d->dmr = NULL;
	d->dm = NULL;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13);
}

static void test_dm_traffic_local(void **state)
{
	struct dm_ep a, b;
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	uint8_t pat[TLEN], got[TLEN];
	struct ibv_sge s;
	struct ibv_wc wc;

	dp_ep_open(&a.e, false);
	dp_ep_open(&b.e, false);
	assert_int_equal(dm_ep_add(&a), 0);
	assert_int_equal(dm_ep_add(&b), 0);
	dp_qp_create(&a.e, IBV_QPT_RC, 0);
	dp_qp_create(&b.e, IBV_QPT_RC, 0);
	dp_connect(&a.e, b.e.qp->qp_num, b.e.lid, &k);
	dp_connect(&b.e, a.e.qp->qp_num, a.e.lid, &k);

	/* SEND from A's DM into a receive in B's DM (zero-based SGEs). */
	fill(pat, TLEN, 1);
	assert_int_equal(ibv_memcpy_to_dm(a.dm, 0, pat, TLEN), 0);
	s = (struct ibv_sge){256, 512, b.dmr->lkey};
	assert_int_equal(dp_post_recv(&b.e, 7, &s, 1), 0);
	assert_int_equal(dp_post(a.e.qp, 1, IBV_WR_SEND, 0, 512, a.dmr->lkey,
				 0, 0), 0);
	dp_expect_wc(a.e.cq, IBV_WC_SUCCESS, &wc, "send from DM");
	if (dp_expect_wc(b.e.cq, IBV_WC_SUCCESS, &wc, "receive into DM"))
		fu_expect_int(wc.byte_len, 512, "received bytes");
	memset(got, 0, sizeof(got));
	assert_int_equal(ibv_memcpy_from_dm(got, b.dm, 256, 512), 0);
	fu_expect(!memcmp(got, pat, 512), "SEND: B's DM differs");

	/* WRITE from A's plain buffer into B's DM at offset 100... */
	fill((uint8_t *)a.e.buf, 600, 9);
	assert_int_equal(dp_post(a.e.qp, 2, IBV_WR_RDMA_WRITE,
				 (uintptr_t)a.e.buf, 600, a.e.mr->lkey, 100,
				 b.dmr->rkey), 0);
	dp_expect_wc(a.e.cq, IBV_WC_SUCCESS, &wc, "write into remote DM");
	assert_int_equal(ibv_memcpy_from_dm(got, b.dm, 100, 600), 0);
	fu_expect(!memcmp(got, a.e.buf, 600), "WRITE: B's DM differs");
	/* ... and READ it back into A's DM. */
	assert_int_equal(dp_post(a.e.qp, 3, IBV_WR_RDMA_READ, 0, 600,
				 a.dmr->lkey, 100, b.dmr->rkey), 0);
	dp_expect_wc(a.e.cq, IBV_WC_SUCCESS, &wc, "read from remote DM");
	assert_int_equal(ibv_memcpy_from_dm(got, a.dm, 0, 600), 0);
	fu_expect(!memcmp(got, a.e.buf, 600), "READ: A's DM differs");
	/* Beyond the DM MR: a remote access error, not a stray write. */
	assert_int_equal(dp_post(a.e.qp, 4, IBV_WR_RDMA_WRITE,
				 (uintptr_t)a.e.buf, 64, a.e.mr->lkey,
				 TLEN - 32, b.dmr->rkey), 0);
	dp_expect_wc(a.e.cq, IBV_WC_REM_ACCESS_ERR, &wc, "write past the DM");

	dm_ep_del(&a);
	dm_ep_del(&b);
	dp_ep_close(&a.e);
	dp_ep_close(&b.e);
	fu_done();
}

/*
 * Cross-process, passive target: the child allocates a DM, registers it,
 * publishes its rkey and waits on the socket (no verbs call) while the
 * parent WRITEs into and READs from it; then the child checks its DM.
 */
struct dm_info {
	uint32_t qpn;
	uint16_t lid;
	uint32_t rkey;
};

static void dm_child(int fd)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct dm_info mine, peer;
	uint8_t pat[TLEN], got[TLEN];
	struct dm_ep c;
	char go;

	memset(&c, 0, sizeof(c));
	c.e.ctx = fu_open_srdma();
	XCHK(c.e.ctx);
	c.e.pd = ibv_alloc_pd(c.e.ctx);
	c.e.cq = ibv_create_cq(c.e.ctx, 16, NULL, NULL, 0);
	XCHK(c.e.pd && c.e.cq);
	XCHK(dm_ep_add(&c) == 0);
	{
		struct ibv_qp_init_attr ia = {
			.send_cq = c.e.cq, .recv_cq = c.e.cq,
			.qp_type = IBV_QPT_RC,
			.cap = {.max_send_wr = 4, .max_recv_wr = 4,
				.max_send_sge = 1, .max_recv_sge = 1},
		};
		struct ibv_port_attr pa;

		c.e.qp = ibv_create_qp(c.e.pd, &ia);
		XCHK(c.e.qp);
		XCHK(!ibv_query_port(c.e.ctx, 1, &pa));
		mine.lid = pa.lid;
	}
	fill(pat, TLEN, 77);
	XCHK(!ibv_memcpy_to_dm(c.dm, 0, pat, TLEN));
	mine.qpn = c.e.qp->qp_num;
	mine.rkey = c.dmr->rkey;
	XCHK(!xsend(fd, &mine, sizeof(mine)));
	XCHK(!xrecv(fd, &peer, sizeof(peer)));
	XCHK(!dp_qp_connect(c.e.qp, peer.qpn, peer.lid, &k));
	XCHK(!xsend(fd, &mine, 1));		/* ready */
	XCHK(!xrecv(fd, &go, 1));		/* parent done: passive till here */
	XCHK(!ibv_memcpy_from_dm(got, c.dm, 0, TLEN));
	/* The parent wrote 256 bytes of 0x5a at offset 512. */
	memset(pat + 512, 0x5a, 256);
	XCHK(!memcmp(got, pat, TLEN));
	dm_ep_del(&c);
	ibv_destroy_qp(c.e.qp);
	ibv_destroy_cq(c.e.cq);
	ibv_dealloc_pd(c.e.pd);
	ibv_close_device(c.e.ctx);
	_exit(0);
}

static void test_dm_traffic_xproc_passive(void **state)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct dm_info mine, peer;
	uint8_t pat[TLEN];
	struct ibv_wc wc;
	struct dp_ep p;
	int sv[2], st;
	pid_t pid;
	char c;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(sv[0]);
		dm_child(sv[1]);
	}
	close(sv[1]);
	dp_ep_open(&p, false);
	dp_qp_create(&p, IBV_QPT_RC, 0);
	assert_int_equal(xrecv(sv[0], &peer, sizeof(peer)), 0);
	mine.qpn = p.qp->qp_num;
	mine.lid = p.lid;
	mine.rkey = 0;
	assert_int_equal(xsend(sv[0], &mine, sizeof(mine)), 0);
	dp_connect(&p, peer.qpn, peer.lid, &k);
	assert_int_equal(xrecv(sv[0], &c, 1), 0);

	/* READ the child's whole DM, then WRITE 256 bytes into it. */
	memset(p.buf, 0, TLEN);
	assert_int_equal(dp_post(p.qp, 1, IBV_WR_RDMA_READ, (uintptr_t)p.buf,
				 TLEN, p.mr->lkey, 0, peer.rkey), 0);
	dp_expect_wc(p.cq, IBV_WC_SUCCESS, &wc, "read from passive DM");
	fill(pat, TLEN, 77);
	fu_expect(!memcmp(p.buf, pat, TLEN), "READ: the child's DM differs");
	memset(p.buf + 2048, 0x5a, 256);
	assert_int_equal(dp_post(p.qp, 2, IBV_WR_RDMA_WRITE,
				 (uintptr_t)p.buf + 2048, 256, p.mr->lkey, 512,
				 peer.rkey), 0);
	dp_expect_wc(p.cq, IBV_WC_SUCCESS, &wc, "write into passive DM");
	assert_int_equal(xsend(sv[0], &c, 1), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "child status %#x", st);
	close(sv[0]);
	dp_ep_close(&p);
	fu_done();
}

/* A fork child may allocate DM on its parent's context (pyverbs does). */
static void test_dm_fork_child_alloc(void **state)
{
	struct ibv_dm *dm = dm_alloc(fu.ctx, 64, 0, 0);
	pid_t pid;
	int st;

	assert_non_null(dm);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct ibv_device_attr_ex ax;
		struct ibv_dm *c;
		uint32_t v = 0xabcd, w = 0;

		XCHK(!ibv_query_device_ex(fu.ctx, NULL, &ax));
		XCHK(ax.max_dm_size == DM_MAX);
		c = dm_alloc(fu.ctx, DM_MAX / 8, 0, 0);
		XCHK(c);
		XCHK(!ibv_memcpy_to_dm(c, 8, &v, 4));
		XCHK(!ibv_memcpy_from_dm(&w, c, 8, 4));
		XCHK(w == v);
		XCHK(!ibv_free_dm(c));
		/* The parent's DM is dead here; freeing forgets it. */
		XCHK(ibv_memcpy_to_dm(dm, 0, &v, 4) == EINVAL);
		XCHK(!ibv_free_dm(dm));
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x",
		  st);
	fu_expect_int(ibv_free_dm(dm), 0, "parent's free_dm");
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_dm_caps),
		FU_TEST(test_dm_alloc_bad_attr),
		FU_TEST(test_dm_budget),
		FU_TEST(test_dm_copy),
		FU_TEST(test_dm_reg_mr),
		FU_TEST(test_dm_import),
		FU_TEST(test_dm_traffic_local),
		FU_TEST(test_dm_traffic_xproc_passive),
		FU_TEST(test_dm_fork_child_alloc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
