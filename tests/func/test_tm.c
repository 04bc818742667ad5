// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_tm.c - tag-matching SRQs (IBV_SRQT_TM; docs/design/tag-matching.md)
 * through the public ABI, with mlx5's behaviour as the reference:
 *
 *  - tm_caps, and the refusals of ibv_create_srq_ex (comp_mask without CQ
 *    or TM, 0 or too many tags or ops, a CQ of another context: EINVAL)
 *    and of ibv_destroy_cq while the SRQ uses the CQ (EBUSY);
 *  - ibv_post_srq_ops: unknown opcode or flags, bad SGE count, DEL handle
 *    outside the list (EINVAL, *bad_wr set, earlier WRs done), a full
 *    list (ENOMEM), DEL of a tag not in the list (IBV_WC_TM_ERR, even
 *    unsignaled), ops on a basic SRQ (EINVAL);
 *  - matching: tag masks, the oldest matching tag first, the TMH not
 *    delivered, tag and app_ctx by ibv_wc_read_tm_info, a consumed tag
 *    gone; unmatched tagged messages and NO_TAG ones land whole in SRQ
 *    receives (IBV_WC_TM_RECV without TM flags / IBV_WC_TM_NO_TAG);
 *  - phase sync: a tag added while the application is behind the
 *    device's unexpected count completes with IBV_WC_TM_SYNC_REQ and does
 *    not match until a TAG_SYNC catches up;
 *  - rendezvous: on one host the device reads the sender's buffer
 *    (TM_MATCH, then TM_DATA_VALID) and sends a FIN; a bad rkey or a too
 *    small tag buffer fails the data completion; over the wire
 *    (net.func.test_tm) a matched rendezvous is left to the application:
 *    IBV_WC_TM_RNDV_INCOMPLETE with the message in the tag's buffer;
 *  - a SEND_WITH_IMM keeps its immediate (IBV_WC_WITH_IMM, imm_data) when
 *    matched, unexpected or NO_TAG, through ibv_poll_cq and the extended
 *    CQ, with the tag still reported and no stray UD fields;
 *  - a UD or UC QP on a TM SRQ is refused (EINVAL): tag matching is RC;
 *  - an eager message larger than its tag's buffer: IBV_WC_LOC_LEN_ERR on
 *    the tag's completion, IBV_WC_REM_INV_REQ_ERR at the sender;
 *  - a sender in another process (the host transport's target stays
 *    passive: the sender's thread matches against the list in the
 *    receiver's segment): an eager match, an unexpected message and a
 *    rendezvous read from the sender's memory, with its FIN.
 */
#include <endian.h>
#include <strings.h>

#include <infiniband/tm_types.h>

#include "xproc_util.h"

#define NTAGS 8
#define RBUF_OFF 2048		/* receiver: tag buffers from here */

static bool on_wire(void)
{
	const char *v = getenv("SRDMA_TRANSPORT");

	return v && !strcasecmp(v, "net") && fu_is_roce(fu.ctx);
}

struct tm_pair {
	struct dp_ep s;			/* sender: plain RC QP */
	struct dp_ep r;			/* receiver: QP on the TM SRQ */
	struct ibv_cq_ex *cqx;		/* receiver's CQ (SRQ and QP) */
	struct ibv_srq *srq;
};

/* A completion as read through the extended CQ. */
struct tmwc {
	uint64_t wr_id;
	int status, opcode;
	unsigned int flags;
	uint32_t byte_len;
	uint64_t tag;
	uint32_t priv;
	uint32_t imm;			/* host order, with IBV_WC_WITH_IMM */
	uint32_t slid, vendor_err;
};

static struct ibv_srq *tm_srq_create(struct ibv_context *ctx,
				     struct ibv_pd *pd, struct ibv_cq *cq,
				     uint32_t comp_mask, uint32_t ntags,
				     uint32_t nops)
{
	struct ibv_srq_init_attr_ex a;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 64;
	a.attr.max_sge = 1;
	a.comp_mask = comp_mask;
	a.srq_type = IBV_SRQT_TM;
	a.pd = pd;
	a.cq = cq;
	a.tm_cap.max_num_tags = ntags;
	a.tm_cap.max_ops = nops;
	return ibv_create_srq_ex(ctx, &a);
}

#define TM_MASK                                                                \
	(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ | \
	 IBV_SRQ_INIT_ATTR_TM)

static struct ibv_cq_ex *tm_cq_create(struct ibv_context *ctx)
{
	struct ibv_cq_init_attr_ex ca;

	memset(&ca, 0, sizeof(ca));
	ca.cqe = 256;
	ca.wc_flags = IBV_WC_EX_WITH_TM_INFO | IBV_WC_STANDARD_FLAGS;
	return ibv_create_cq_ex(ctx, &ca);
}

static void tm_open(struct tm_pair *p, uint32_t ntags)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct ibv_qp_init_attr ia;

	memset(p, 0, sizeof(*p));
	dp_ep_open(&p->s, false);
	dp_ep_open(&p->r, false);
	dp_qp_create(&p->s, IBV_QPT_RC, 0);
	p->cqx = tm_cq_create(p->r.ctx);
	assert_non_null(p->cqx);
	p->srq = tm_srq_create(p->r.ctx, p->r.pd, ibv_cq_ex_to_cq(p->cqx),
			       TM_MASK, ntags, 16);
	assert_non_null(p->srq);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ibv_cq_ex_to_cq(p->cqx);
	ia.recv_cq = ibv_cq_ex_to_cq(p->cqx);
	ia.srq = p->srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_send_sge = 1;
	p->r.qp = ibv_create_qp(p->r.pd, &ia);
	assert_non_null(p->r.qp);
	dp_connect(&p->s, p->r.qp->qp_num, p->r.lid, &k);
	dp_connect(&p->r, p->s.qp->qp_num, p->s.lid, &k);
}

static void tm_close(struct tm_pair *p)
{
	ibv_destroy_qp(p->r.qp);
	p->r.qp = NULL;
	assert_int_equal(ibv_destroy_srq(p->srq), 0);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(p->cqx)), 0);
	dp_ep_close(&p->s);
	dp_ep_close(&p->r);
}

/* The next completion of @cq within a second; false if none. */
static bool tm_poll(struct ibv_cq_ex *cq, struct tmwc *w)
{
	struct ibv_poll_cq_attr pa = {0};
	struct ibv_wc_tm_info ti;
	uint64_t end = dp_now_ms() + 1000;
	int r;

	memset(w, 0, sizeof(*w));
	while ((r = ibv_start_poll(cq, &pa)) == ENOENT) {
		if (dp_now_ms() >= end)
			return false;
		sched_yield();
	}
	assert_int_equal(r, 0);
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->flags = ibv_wc_read_wc_flags(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	ibv_wc_read_tm_info(cq, &ti);
	w->tag = ti.tag;
	w->priv = ti.priv;
	if (w->flags & IBV_WC_WITH_IMM)
		w->imm = be32toh(ibv_wc_read_imm_data(cq));
	w->slid = ibv_wc_read_slid(cq);
	w->vendor_err = ibv_wc_read_vendor_err(cq);
	ibv_end_poll(cq);
	return true;
}

#define tm_expect(p, wr_id_, status_, opcode_, flags_, what)                   \
	tm_expect_at(__FILE__, __LINE__, p, wr_id_, status_, opcode_, flags_,  \
		     what, NULL)
#define tm_expect_wc(p, wr_id_, status_, opcode_, flags_, what, w)             \
	tm_expect_at(__FILE__, __LINE__, p, wr_id_, status_, opcode_, flags_,  \
		     what, w)
static bool tm_expect_at(const char *file, int line, struct tm_pair *p,
			 uint64_t wr_id, int status, int opcode,
			 unsigned int flags, const char *what, struct tmwc *out)
{
	struct tmwc w;

	if (!out)
		out = &w;
	if (!tm_poll(p->cqx, out)) {
		fu_report(file, line, "%s: no completion", what);
		return false;
	}
	if (out->wr_id != wr_id || out->status != status ||
	    out->opcode != opcode || out->flags != flags) {
		fu_report(file, line,
			  "%s: wr_id %#" PRIx64 " status %s opcode %d flags "
			  "%#x, want wr_id %#" PRIx64 " %s opcode %d flags %#x",
			  what, out->wr_id, ibv_wc_status_str(out->status),
			  out->opcode, out->flags, wr_id,
			  ibv_wc_status_str(status), opcode, flags);
		return false;
	}
	return true;
}

static void tm_expect_none(struct tm_pair *p, const char *what)
{
	struct tmwc w;
	struct ibv_poll_cq_attr pa = {0};

	if (ibv_start_poll(p->cqx, &pa) == 0) {
		w.wr_id = p->cqx->wr_id;
		w.opcode = ibv_wc_read_opcode(p->cqx);
		ibv_end_poll(p->cqx);
		fu_expect(0, "%s: unexpected completion wr_id %#" PRIx64
			  " opcode %d", what, w.wr_id, w.opcode);
	}
}

/* Post one op; return ibv_post_srq_ops()'s value, the handle in *@h. */
static int tm_op(struct tm_pair *p, enum ibv_ops_wr_opcode op, int flags,
		 uint64_t wr_id, uint64_t tag, uint64_t mask, uint32_t off,
		 uint32_t len, uint32_t *h)
{
	struct ibv_sge s = {(uintptr_t)p->r.buf + off, len, p->r.mr->lkey};
	struct ibv_ops_wr wr, *bad = NULL;
	int r;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.flags = flags;
	if (op == IBV_WR_TAG_DEL)
		wr.tm.handle = h ? *h : 0;
	wr.tm.add.recv_wr_id = wr_id;
	wr.tm.add.sg_list = &s;
	wr.tm.add.num_sge = 1;
	wr.tm.add.tag = tag;
	wr.tm.add.mask = mask;
	r = ibv_post_srq_ops(p->srq, &wr, &bad);
	if (r)
		fu_expect(bad == &wr, "bad_wr not set on error %d", r);
	else if (h && op == IBV_WR_TAG_ADD)
		*h = wr.tm.handle;
	return r;
}

/* Add a tag whose buffer is slot @i (256 bytes) of the receiver's buffer,
 * expecting its TM_ADD completion with @flags. */
static uint32_t tm_add(struct tm_pair *p, uint64_t wr_id, uint64_t tag,
		       uint64_t mask, int i, unsigned int flags)
{
	uint32_t h = 0;

	assert_int_equal(tm_op(p, IBV_WR_TAG_ADD, IBV_OPS_SIGNALED, wr_id, tag,
			       mask, RBUF_OFF + 256 * i, 256, &h), 0);
	tm_expect(p, wr_id, IBV_WC_SUCCESS, IBV_WC_TM_ADD, flags, "TAG_ADD");
	return h;
}

static void tm_sync(struct tm_pair *p, uint32_t cnt)
{
	struct ibv_ops_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x5c;
	wr.opcode = IBV_WR_TAG_SYNC;
	wr.flags = IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC;
	wr.tm.unexpected_cnt = cnt;
	assert_int_equal(ibv_post_srq_ops(p->srq, &wr, &bad), 0);
	tm_expect(p, 0x5c, IBV_WC_SUCCESS, IBV_WC_TM_SYNC, 0, "TAG_SYNC");
}

/* An ordinary receive of the SRQ: 256 bytes at the start of the buffer. */
static void tm_srq_recv(struct tm_pair *p, uint64_t wr_id)
{
	struct ibv_sge s = {(uintptr_t)p->r.buf, 256, p->r.mr->lkey};
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &s;
	wr.num_sge = 1;
	assert_int_equal(ibv_post_srq_recv(p->srq, &wr, &bad), 0);
}

/* Send @len bytes whose TMH is (@op, @app, @tag), payload byte @fill, as
 * @wop (SEND, or SEND_WITH_IMM carrying @imm in host order); expect the
 * sender's completion @st. */
static void tm_post(struct tm_pair *p, enum ibv_wr_opcode wop, uint32_t imm,
		    uint8_t op, uint32_t app, uint64_t tag, uint32_t len,
		    char fill, enum ibv_wc_status st)
{
	struct ibv_sge s = {(uintptr_t)p->s.buf, len, p->s.mr->lkey};
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_tmh h = {0};
	struct ibv_wc wc;

	memset(p->s.buf, fill, len);
	h.opcode = op;
	h.app_ctx = htobe32(app);
	h.tag = htobe64(tag);
	memcpy(p->s.buf, &h, len < sizeof(h) ? len : sizeof(h));
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x5e;
	wr.opcode = wop;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(imm);
	wr.sg_list = &s;
	wr.num_sge = 1;
	assert_int_equal(ibv_post_send(p->s.qp, &wr, &bad), 0);
	if (dp_expect_wc(p->s.cq, st, &wc, "send"))
		fu_expect(wc.wr_id == 0x5e, "send wr_id %#" PRIx64, wc.wr_id);
}

static void tm_send(struct tm_pair *p, uint8_t op, uint32_t app, uint64_t tag,
		    uint32_t len, char fill, enum ibv_wc_status st)
{
	tm_post(p, IBV_WR_SEND, 0, op, app, tag, len, fill, st);
}

static void tm_send_imm(struct tm_pair *p, uint8_t op, uint32_t app,
			uint64_t tag, uint32_t len, char fill, uint32_t imm)
{
	tm_post(p, IBV_WR_SEND_WITH_IMM, imm, op, app, tag, len, fill,
		IBV_WC_SUCCESS);
}

static void test_tm_caps(void **state)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(fu.ctx, NULL, &ax), 0);
	fu_expect(ax.tm_caps.flags & IBV_TM_CAP_RC, "no IBV_TM_CAP_RC");
	fu_expect(ax.tm_caps.max_num_tags >= NTAGS, "max_num_tags %u",
		  ax.tm_caps.max_num_tags);
	fu_expect(ax.tm_caps.max_ops > 0, "max_ops 0");
	fu_expect(ax.tm_caps.max_sge >= 1, "max_sge 0");
	fu_expect(ax.tm_caps.max_rndv_hdr_size >=
			  sizeof(struct ibv_tmh) + sizeof(struct ibv_rvh),
		  "max_rndv_hdr_size %u", ax.tm_caps.max_rndv_hdr_size);
	fu_done();
}

static void test_tm_create_errors(void **state)
{
	struct ibv_device_attr_ex ax;
	struct ibv_context *other = fu_open_srdma();
	struct ibv_cq *ocq = ibv_create_cq(other, 16, NULL, NULL, 0);
	struct ibv_cq_ex *cqx = tm_cq_create(fu.ctx);
	struct ibv_cq *cq = ibv_cq_ex_to_cq(cqx);
	uint32_t max_tags, max_ops;
	struct ibv_srq *srq;

	assert_non_null(cqx);
	assert_non_null(ocq);
	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(fu.ctx, NULL, &ax), 0);
	max_tags = ax.tm_caps.max_num_tags;
	max_ops = ax.tm_caps.max_ops;
#define BAD(what, ...)                                                         \
	do {                                                                   \
		errno = 0;                                                     \
		srq = tm_srq_create(fu.ctx, fu.pd, __VA_ARGS__);               \
		fu_expect(!srq && errno == EINVAL, "%s: %p errno %s", what,    \
			  (void *)srq, fu_errname(errno));                     \
		if (srq)                                                       \
			ibv_destroy_srq(srq);                                  \
	} while (0)
	BAD("no CQ in comp_mask", cq, TM_MASK & ~IBV_SRQ_INIT_ATTR_CQ, 4, 4);
	BAD("no TM in comp_mask", cq, TM_MASK & ~IBV_SRQ_INIT_ATTR_TM, 4, 4);
	BAD("NULL CQ", NULL, TM_MASK, 4, 4);
	BAD("CQ of another context", ocq, TM_MASK, 4, 4);
	BAD("0 tags", cq, TM_MASK, 0, 4);
	BAD("too many tags", cq, TM_MASK, max_tags + 1, 4);
	BAD("0 ops", cq, TM_MASK, 4, 0);
	BAD("too many ops", cq, TM_MASK, 4, max_ops + 1);
#undef BAD
	srq = tm_srq_create(fu.ctx, fu.pd, cq, TM_MASK, max_tags, max_ops);
	assert_non_null(srq);
	fu_expect_int(ibv_destroy_cq(cq), EBUSY, "destroy the SRQ's CQ");
	fu_expect_int(ibv_destroy_srq(srq), 0, "destroy TM SRQ");
	fu_expect_int(ibv_destroy_cq(cq), 0, "destroy CQ");
	ibv_destroy_cq(ocq);
	ibv_close_device(other);
	fu_done();
}

static void test_tm_ops_errors(void **state)
{
	struct ibv_srq_init_attr ba = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_ops_wr w[3], *bad;
	struct ibv_srq *basic;
	struct tm_pair p;
	uint32_t h[NTAGS], hx;
	int i;

	tm_open(&p, NTAGS);
	fu_expect_int(tm_op(&p, (enum ibv_ops_wr_opcode)7, IBV_OPS_SIGNALED, 1,
			    0, 0, RBUF_OFF, 64, NULL),
		      EINVAL, "unknown opcode");
	fu_expect_int(tm_op(&p, IBV_WR_TAG_ADD, 1 << 5, 1, 0, 0, RBUF_OFF, 64,
			    NULL),
		      EINVAL, "unknown flag");
	hx = NTAGS;
	fu_expect_int(tm_op(&p, IBV_WR_TAG_DEL, IBV_OPS_SIGNALED, 1, 0, 0, 0, 0,
			    &hx),
		      EINVAL, "DEL handle outside the list");
	/* Too many SGEs. */
	memset(w, 0, sizeof(w));
	w[0].opcode = IBV_WR_TAG_ADD;
	w[0].tm.add.num_sge = 64;
	bad = NULL;
	fu_expect_int(ibv_post_srq_ops(p.srq, &w[0], &bad), EINVAL,
		      "TAG_ADD with 64 SGEs");
	fu_expect(bad == &w[0], "bad_wr");
	w[0].tm.add.num_sge = -1;
	fu_expect_int(ibv_post_srq_ops(p.srq, &w[0], &bad), EINVAL,
		      "TAG_ADD with -1 SGEs");
	tm_expect_none(&p, "refused ops");
	/* A DEL of a tag never added fails in its completion, signaled or
	 * not. */
	hx = 3;
	fu_expect_int(tm_op(&p, IBV_WR_TAG_DEL, 0, 0xd1, 0, 0, 0, 0, &hx), 0,
		      "DEL of a free handle");
	tm_expect(&p, 0xd1, IBV_WC_TM_ERR, IBV_WC_TM_DEL, 0, "DEL free tag");
	/* Fill the list (unsignaled ADDs complete silently). */
	for (i = 0; i < NTAGS; i++)
		fu_expect_int(tm_op(&p, IBV_WR_TAG_ADD, 0, 0x100 + i, i, ~0ull,
				    RBUF_OFF, 64, &h[i]),
			      0, "TAG_ADD");
	tm_expect_none(&p, "unsignaled ADDs");
	fu_expect_int(tm_op(&p, IBV_WR_TAG_ADD, IBV_OPS_SIGNALED, 0x1ff, 99,
			    ~0ull, RBUF_OFF, 64, NULL),
		      ENOMEM, "TAG_ADD to a full list");
	/* A chain: DEL, ADD (takes the freed entry), ADD (full: refused),
	 * SYNC (not reached). */
	memset(w, 0, sizeof(w));
	w[0].wr_id = 0xa0;
	w[0].opcode = IBV_WR_TAG_DEL;
	w[0].flags = IBV_OPS_SIGNALED;
	w[0].tm.handle = h[2];
	w[0].next = &w[1];
	w[1].wr_id = 0xa1;
	w[1].opcode = IBV_WR_TAG_ADD;
	w[1].flags = IBV_OPS_SIGNALED;
	w[1].tm.add.tag = 50;
	w[1].next = &w[2];
	w[2] = w[1];
	w[2].wr_id = 0xa2;
	w[2].next = NULL;
	bad = NULL;
	fu_expect_int(ibv_post_srq_ops(p.srq, w, &bad), ENOMEM, "chain");
	fu_expect(bad == &w[2], "chain: bad_wr %p, want the third",
		  (void *)bad);
	tm_expect(&p, 0xa0, IBV_WC_SUCCESS, IBV_WC_TM_DEL, 0, "chain DEL");
	tm_expect(&p, 0xa1, IBV_WC_SUCCESS, IBV_WC_TM_ADD, 0, "chain ADD");
	fu_expect(w[1].tm.handle == h[2], "ADD reused handle %u, want %u",
		  w[1].tm.handle, h[2]);
	tm_expect_none(&p, "refused WR of the chain");
	/* DEL twice: the second finds nothing. */
	fu_expect_int(tm_op(&p, IBV_WR_TAG_DEL, IBV_OPS_SIGNALED, 0xd2, 0, 0,
			    0, 0, &h[0]),
		      0, "DEL");
	tm_expect(&p, 0xd2, IBV_WC_SUCCESS, IBV_WC_TM_DEL, 0, "DEL");
	fu_expect_int(tm_op(&p, IBV_WR_TAG_DEL, IBV_OPS_SIGNALED, 0xd3, 0, 0,
			    0, 0, &h[0]),
		      0, "DEL again");
	tm_expect(&p, 0xd3, IBV_WC_TM_ERR, IBV_WC_TM_DEL, 0, "DEL again");
	/* A basic SRQ has no tag list. */
	basic = ibv_create_srq(p.r.pd, &ba);
	assert_non_null(basic);
	memset(w, 0, sizeof(w));
	w[0].opcode = IBV_WR_TAG_SYNC;
	bad = NULL;
	fu_expect_int(ibv_post_srq_ops(basic, w, &bad), EINVAL,
		      "ops on a basic SRQ");
	fu_expect(bad == &w[0], "bad_wr on a basic SRQ");
	ibv_destroy_srq(basic);
	tm_close(&p);
	fu_done();
}

static void test_tm_eager(void **state)
{
	struct tm_pair p;
	struct tmwc w;
	struct ibv_wc wc;
	uint32_t h5;
	char *slot;

	tm_open(&p, NTAGS);
	/* Tags 0x1X (mask 0xf0) in slot 0, 0x15 exactly in slot 1, another
	 * 0x1X in slot 2: a 0x15 goes to slot 0 (oldest), the next to slot
	 * 1, a 0x17 to slot 2, a 0x25 to none. */
	tm_add(&p, 0xa0, 0x10, 0xf0, 0, 0);
	h5 = tm_add(&p, 0xa1, 0x15, ~0ull, 1, 0);
	tm_add(&p, 0xa2, 0x1f, 0xf0, 2, 0);
	tm_send(&p, IBV_TMH_EAGER, 0xc0ffee, 0x15, 100, 'x', IBV_WC_SUCCESS);
	if (tm_expect_wc(&p, 0xa0, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
			 IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "eager 0x15",
			 &w)) {
		fu_expect(w.byte_len == 100 - sizeof(struct ibv_tmh),
			  "byte_len %u", w.byte_len);
		fu_expect(w.tag == 0x15 && w.priv == 0xc0ffee,
			  "tm_info tag %#" PRIx64 " priv %#x", w.tag, w.priv);
	}
	slot = p.r.buf + RBUF_OFF;
	fu_expect(slot[0] == 'x' && slot[83] == 'x' && slot[84] == 0,
		  "payload without its TMH at the tag's buffer");
	tm_send(&p, IBV_TMH_EAGER, 1, 0x15, 32, 'y', IBV_WC_SUCCESS);
	tm_expect(&p, 0xa1, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		  IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "second 0x15");
	/* The consumed tag is no longer in the list. */
	fu_expect_int(tm_op(&p, IBV_WR_TAG_DEL, IBV_OPS_SIGNALED, 0xd5, 0, 0,
			    0, 0, &h5),
		      0, "DEL consumed");
	tm_expect(&p, 0xd5, IBV_WC_TM_ERR, IBV_WC_TM_DEL, 0, "DEL consumed");
	/* ibv_poll_cq sees the TM opcode and flags, and no stray fields. */
	tm_send(&p, IBV_TMH_EAGER, 7, 0x17, 16, 'z', IBV_WC_SUCCESS);
	if (dp_expect_wc(ibv_cq_ex_to_cq(p.cqx), IBV_WC_SUCCESS, &wc,
			 "ibv_poll_cq of a TM receive")) {
		fu_expect(wc.wr_id == 0xa2 && wc.opcode == IBV_WC_TM_RECV &&
				  wc.byte_len == 0 &&
				  wc.wc_flags == (IBV_WC_TM_MATCH |
						  IBV_WC_TM_DATA_VALID) &&
				  wc.vendor_err == 0 && wc.imm_data == 0 &&
				  wc.qp_num == p.r.qp->qp_num &&
				  wc.src_qp == p.s.qp->qp_num,
			  "wc wr_id %#" PRIx64 " opcode %d len %u flags %#x "
			  "vendor_err %#x imm %#x qp %#x src %#x",
			  wc.wr_id, wc.opcode, wc.byte_len, wc.wc_flags,
			  wc.vendor_err, wc.imm_data, wc.qp_num, wc.src_qp);
	}
	/* Unmatched: the SRQ receive gets it whole. */
	tm_srq_recv(&p, 0xb0);
	tm_send(&p, IBV_TMH_EAGER, 7, 0x25, 40, 'u', IBV_WC_SUCCESS);
	if (tm_expect_wc(&p, 0xb0, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0,
			 "unexpected", &w))
		fu_expect(w.byte_len == 40 && w.tag == 0, "len %u tag %#" PRIx64,
			  w.byte_len, w.tag);
	fu_expect(p.r.buf[0] == IBV_TMH_EAGER && p.r.buf[16] == 'u',
		  "unexpected message lands whole");
	/* A message of several packets (path MTU 1024), to a tag added
	 * once the application has handled that unexpected message. */
	tm_sync(&p, 1);
	assert_int_equal(tm_op(&p, IBV_WR_TAG_ADD, IBV_OPS_SIGNALED, 0xa9, 0x99,
			       ~0ull, RBUF_OFF, 4096, NULL),
			 0);
	tm_expect(&p, 0xa9, IBV_WC_SUCCESS, IBV_WC_TM_ADD, 0, "big ADD");
	memset(p.r.buf + RBUF_OFF, 0, 4096);
	tm_send(&p, IBV_TMH_EAGER, 0, 0x99, 16 + 3000, 'm', IBV_WC_SUCCESS);
	if (tm_expect_wc(&p, 0xa9, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
			 IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "3000 bytes",
			 &w))
		fu_expect(w.byte_len == 3000, "byte_len %u", w.byte_len);
	fu_expect(p.r.buf[RBUF_OFF] == 'm' &&
			  p.r.buf[RBUF_OFF + 2999] == 'm' &&
			  p.r.buf[RBUF_OFF + 3000] == 0,
		  "3000 bytes at the start of the tag's buffer");
	tm_close(&p);
	fu_done();
}

static void test_tm_imm(void **state)
{
	const unsigned int match = IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
	struct tm_pair p;
	struct ibv_wc wc;
	struct tmwc w;

	tm_open(&p, NTAGS);
	/* Matched, read through the extended CQ: tag and immediate. */
	tm_add(&p, 0xa0, 0x33, ~0ull, 0, 0);
	tm_send_imm(&p, IBV_TMH_EAGER, 0xfeed, 0x33, 48, 'i', 0x12345678);
	if (tm_expect_wc(&p, 0xa0, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
			 match | IBV_WC_WITH_IMM, "matched with imm", &w))
		fu_expect(w.imm == 0x12345678 && w.tag == 0x33 &&
				  w.priv == 0xfeed && w.byte_len == 32 &&
				  w.slid == 0 && w.vendor_err == 0,
			  "imm %#x tag %#" PRIx64 " priv %#x len %u slid %#x "
			  "vendor_err %#x",
			  w.imm, w.tag, w.priv, w.byte_len, w.slid,
			  w.vendor_err);
	fu_expect(p.r.buf[RBUF_OFF] == 'i' && p.r.buf[RBUF_OFF + 31] == 'i' &&
			  p.r.buf[RBUF_OFF + 32] == 0,
		  "payload without its TMH");
	/* Matched, read through ibv_poll_cq. */
	tm_add(&p, 0xa1, 0x34, ~0ull, 1, 0);
	tm_send_imm(&p, IBV_TMH_EAGER, 2, 0x34, 16, 'j', 0xa5a5a5a5);
	if (dp_expect_wc(ibv_cq_ex_to_cq(p.cqx), IBV_WC_SUCCESS, &wc,
			 "ibv_poll_cq of a TM receive with imm"))
		fu_expect(wc.wr_id == 0xa1 && wc.opcode == IBV_WC_TM_RECV &&
				  wc.wc_flags == (match | IBV_WC_WITH_IMM) &&
				  be32toh(wc.imm_data) == 0xa5a5a5a5 &&
				  wc.vendor_err == 0 && wc.pkey_index == 0 &&
				  wc.slid == 0 && wc.sl == 0 &&
				  wc.dlid_path_bits == 0 &&
				  wc.src_qp == p.s.qp->qp_num,
			  "wc wr_id %#" PRIx64 " opcode %d flags %#x imm %#x "
			  "vendor_err %#x pkey %u slid %u sl %u src %#x",
			  wc.wr_id, wc.opcode, wc.wc_flags,
			  be32toh(wc.imm_data), wc.vendor_err, wc.pkey_index,
			  wc.slid, wc.sl, wc.src_qp);
	/* Unexpected and NO_TAG: the immediate as on any receive. */
	tm_srq_recv(&p, 0xb0);
	tm_send_imm(&p, IBV_TMH_EAGER, 3, 0x99, 24, 'u', 0x01020304);
	if (tm_expect_wc(&p, 0xb0, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
			 IBV_WC_WITH_IMM, "unexpected with imm", &w))
		fu_expect(w.imm == 0x01020304 && w.tag == 0 && w.byte_len == 24,
			  "imm %#x tag %#" PRIx64 " len %u", w.imm, w.tag,
			  w.byte_len);
	tm_srq_recv(&p, 0xb1);
	tm_send_imm(&p, IBV_TMH_NO_TAG, 3, 0, 20, 'n', 0xcafe);
	if (tm_expect_wc(&p, 0xb1, IBV_WC_SUCCESS, IBV_WC_TM_NO_TAG,
			 IBV_WC_WITH_IMM, "NO_TAG with imm", &w))
		fu_expect(w.imm == 0xcafe && w.byte_len == 20, "imm %#x len %u",
			  w.imm, w.byte_len);
	/* A plain send after them still has no immediate. */
	tm_sync(&p, 1);
	tm_add(&p, 0xa2, 0x35, ~0ull, 2, 0);
	tm_send(&p, IBV_TMH_EAGER, 4, 0x35, 16, 'k', IBV_WC_SUCCESS);
	tm_expect(&p, 0xa2, IBV_WC_SUCCESS, IBV_WC_TM_RECV, match,
		  "matched without imm");
	tm_close(&p);
	fu_done();
}

/* Tag matching is RC only: ibv_create_qp() of another type on a TM SRQ
 * fails with EINVAL. */
static void test_tm_qp_types(void **state)
{
	static const enum ibv_qp_type bad[] = {IBV_QPT_UD, IBV_QPT_UC};
	struct ibv_qp_init_attr ia;
	struct tm_pair p;
	struct ibv_qp *qp;
	size_t i;

	tm_open(&p, NTAGS);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = ibv_cq_ex_to_cq(p.cqx);
		ia.recv_cq = ibv_cq_ex_to_cq(p.cqx);
		ia.srq = p.srq;
		ia.qp_type = bad[i];
		ia.cap.max_send_wr = 4;
		ia.cap.max_send_sge = 1;
		errno = 0;
		qp = ibv_create_qp(p.r.pd, &ia);
		fu_expect(!qp && errno == EINVAL,
			  "QP type %d on a TM SRQ: %p errno %s", bad[i],
			  (void *)qp, fu_errname(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}
	/* RC still works (tm_open made one), and the SRQ is unharmed. */
	tm_add(&p, 0xa0, 1, ~0ull, 0, 0);
	tm_send(&p, IBV_TMH_EAGER, 1, 1, 20, 'r', IBV_WC_SUCCESS);
	tm_expect(&p, 0xa0, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		  IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "RC after refusals");
	tm_close(&p);
	fu_done();
}

static void test_tm_no_tag(void **state)
{
	struct tm_pair p;
	struct tmwc w;

	tm_open(&p, NTAGS);
	tm_add(&p, 0xa0, 0, 0, 0, 0);	/* mask 0: matches any tag */
	tm_srq_recv(&p, 0xb0);
	tm_srq_recv(&p, 0xb1);
	tm_srq_recv(&p, 0xb2);
	tm_send(&p, IBV_TMH_NO_TAG, 1, 5, 64, 'n', IBV_WC_SUCCESS);
	if (tm_expect_wc(&p, 0xb0, IBV_WC_SUCCESS, IBV_WC_TM_NO_TAG, 0,
			 "NO_TAG", &w))
		fu_expect(w.byte_len == 64, "NO_TAG byte_len %u", w.byte_len);
	/* Shorter than a TMH, or a FIN at a TM SRQ: as NO_TAG. */
	tm_send(&p, IBV_TMH_EAGER, 1, 5, 8, 's', IBV_WC_SUCCESS);
	tm_expect(&p, 0xb1, IBV_WC_SUCCESS, IBV_WC_TM_NO_TAG, 0, "short");
	tm_send(&p, IBV_TMH_FIN, 1, 5, 16, 'f', IBV_WC_SUCCESS);
	tm_expect(&p, 0xb2, IBV_WC_SUCCESS, IBV_WC_TM_NO_TAG, 0, "FIN");
	/* The wildcard tag is still there. */
	tm_send(&p, IBV_TMH_EAGER, 1, 5, 16, 'e', IBV_WC_SUCCESS);
	tm_expect(&p, 0xa0, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		  IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "wildcard");
	tm_close(&p);
	fu_done();
}

static void test_tm_phase(void **state)
{
	struct tm_pair p;

	tm_open(&p, NTAGS);
	tm_add(&p, 0xa0, 1, ~0ull, 0, 0);
	tm_srq_recv(&p, 0xb0);
	tm_srq_recv(&p, 0xb1);
	tm_send(&p, IBV_TMH_EAGER, 0, 2, 32, 'u', IBV_WC_SUCCESS);
	tm_expect(&p, 0xb0, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0, "unexpected 2");
	/* Out of phase (the application has not handled that message): the
	 * ADD asks for a sync and tag 2 does not match yet. */
	tm_add(&p, 0xa2, 2, ~0ull, 1, IBV_WC_TM_SYNC_REQ);
	tm_send(&p, IBV_TMH_EAGER, 0, 2, 32, 'v', IBV_WC_SUCCESS);
	tm_expect(&p, 0xb1, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0,
		  "tag added out of phase");
	/* A tag added in phase still matches meanwhile. */
	tm_send(&p, IBV_TMH_EAGER, 0, 1, 32, 'w', IBV_WC_SUCCESS);
	tm_expect(&p, 0xa0, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		  IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "tag added in phase");
	/* Caught up: tag 2 matches. */
	tm_sync(&p, 2);
	tm_send(&p, IBV_TMH_EAGER, 0, 2, 32, 'x', IBV_WC_SUCCESS);
	tm_expect(&p, 0xa2, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		  IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "after the sync");
	tm_add(&p, 0xa3, 3, ~0ull, 2, 0);
	tm_close(&p);
	fu_done();
}

/* Write a rendezvous request into the sender's buffer: TMH + RVH naming
 * @len bytes at offset 1024 of the sender's buffer under @rkey. */
static void rndv_req(struct tm_pair *p, uint64_t tag, uint32_t app,
		     uint32_t rkey, uint32_t len)
{
	struct ibv_tmh h = {0};
	struct ibv_rvh v;

	memset(p->s.buf + 1024, 'R', len);
	h.opcode = IBV_TMH_RNDV;
	h.app_ctx = htobe32(app);
	h.tag = htobe64(tag);
	v.va = htobe64((uintptr_t)p->s.buf + 1024);
	v.rkey = htobe32(rkey);
	v.len = htobe32(len);
	memcpy(p->s.buf, &h, sizeof(h));
	memcpy(p->s.buf + sizeof(h), &v, sizeof(v));
	assert_int_equal(dp_post(p->s.qp, 0x5e, IBV_WR_SEND,
				 (uintptr_t)p->s.buf, 64, p->s.mr->lkey, 0, 0),
			 0);
}

static void test_tm_rndv(void **state)
{
	struct tm_pair p;
	struct ibv_tmh fin;
	struct ibv_wc wc;
	struct tmwc w;

	tm_open(&p, NTAGS);
	dp_recv_buf(&p.s, 0xf0, 512, 64);	/* for the FIN */
	tm_add(&p, 0xa0, 9, ~0ull, 0, 0);
	rndv_req(&p, 9, 0xabc, p.s.mr->rkey, 200);
	dp_expect_wc(p.s.cq, IBV_WC_SUCCESS, &wc, "rendezvous request");
	if (on_wire()) {
		/* Software rendezvous: the request lands in the tag's
		 * buffer for the application to read. */
		if (tm_expect_wc(&p, 0xa0, IBV_WC_TM_RNDV_INCOMPLETE,
				 IBV_WC_TM_RECV, IBV_WC_TM_MATCH, "sw rndv",
				 &w))
			fu_expect(w.tag == 9 && w.priv == 0xabc &&
					  w.byte_len == 64,
				  "tag %#" PRIx64 " priv %#x len %u", w.tag,
				  w.priv, w.byte_len);
		fu_expect(!memcmp(p.r.buf + RBUF_OFF, p.s.buf, 64),
			  "request in the tag's buffer");
		tm_close(&p);
		fu_done();
		return;
	}
	if (tm_expect_wc(&p, 0xa0, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
			 IBV_WC_TM_MATCH, "rndv matched", &w))
		fu_expect(w.tag == 9 && w.priv == 0xabc, "tag %#" PRIx64
			  " priv %#x", w.tag, w.priv);
	if (tm_expect_wc(&p, 0xa0, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
			 IBV_WC_TM_DATA_VALID, "rndv data", &w))
		fu_expect(w.byte_len == 200, "rndv byte_len %u", w.byte_len);
	fu_expect(p.r.buf[RBUF_OFF] == 'R' && p.r.buf[RBUF_OFF + 199] == 'R' &&
			  p.r.buf[RBUF_OFF + 200] == 0,
		  "rendezvous data in the tag's buffer");
	if (dp_expect_wc(p.s.cq, IBV_WC_SUCCESS, &wc, "FIN")) {
		memcpy(&fin, p.s.buf + 512, sizeof(fin));
		fu_expect(wc.opcode == IBV_WC_RECV && wc.wr_id == 0xf0 &&
				  wc.byte_len == sizeof(fin) &&
				  fin.opcode == IBV_TMH_FIN &&
				  be32toh(fin.app_ctx) == 0xabc &&
				  be64toh(fin.tag) == 9,
			  "FIN opcode %d len %u tmh %u/%#x/%#" PRIx64,
			  wc.opcode, wc.byte_len, fin.opcode,
			  be32toh(fin.app_ctx), be64toh(fin.tag));
	}
	/* A bad rkey: the data completion fails, no FIN. */
	tm_add(&p, 0xa1, 10, ~0ull, 1, 0);
	rndv_req(&p, 10, 1, p.s.mr->rkey ^ 0x80, 100);
	dp_expect_wc(p.s.cq, IBV_WC_SUCCESS, &wc, "request, bad rkey");
	tm_expect(&p, 0xa1, IBV_WC_SUCCESS, IBV_WC_TM_RECV, IBV_WC_TM_MATCH,
		  "bad rkey: matched");
	tm_expect(&p, 0xa1, IBV_WC_REM_ACCESS_ERR, IBV_WC_TM_RECV, 0,
		  "bad rkey: data");
	dp_expect_no_wc(p.s.cq, "no FIN after a failed read");
	/* More than the tag's buffer holds. */
	tm_add(&p, 0xa2, 11, ~0ull, 2, 0);
	rndv_req(&p, 11, 1, p.s.mr->rkey, 300);
	dp_expect_wc(p.s.cq, IBV_WC_SUCCESS, &wc, "request, too long");
	tm_expect(&p, 0xa2, IBV_WC_SUCCESS, IBV_WC_TM_RECV, IBV_WC_TM_MATCH,
		  "too long: matched");
	tm_expect(&p, 0xa2, IBV_WC_LOC_LEN_ERR, IBV_WC_TM_RECV, 0,
		  "too long: data");
	tm_close(&p);
	fu_done();
}

static void test_tm_len_err(void **state)
{
	struct tm_pair p;

	tm_open(&p, NTAGS);
	tm_add(&p, 0xa0, 4, ~0ull, 0, 0);
	/* 256-byte buffer: 16 + 256 bytes fit, 16 + 257 do not. */
	tm_send(&p, IBV_TMH_EAGER, 0, 4, 16 + 257, 'l',
		IBV_WC_REM_INV_REQ_ERR);
	tm_expect(&p, 0xa0, IBV_WC_LOC_LEN_ERR, IBV_WC_TM_RECV, 0,
		  "eager too long");
	tm_close(&p);
	fu_done();
}

/* ---- a sender in another process ---------------------------------------- */

struct xp_hello {
	uint32_t qpn;
	uint16_t lid;
};

static void xp_sender(int fd)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct xp_hello me, peer;
	struct ibv_sge sg;
	struct ibv_recv_wr rw, *rbad;
	struct ibv_send_wr sw, *sbad;
	struct ibv_tmh h = {0}, fin;
	struct ibv_rvh v;
	struct ibv_wc wc;
	char *buf;
	int i;

	XCHK(!xp_open_pd_cq(&ctx, &pd, &cq, 64));
	buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	XCHK(buf != MAP_FAILED);
	mr = ibv_reg_mr(pd, buf, 8192, DP_ALL_ACCESS);
	XCHK(mr);
	qp = xp_qp_create(pd, cq, NULL, IBV_QPT_RC, 8, 1, 1);
	XCHK(qp);
	XCHK(!xp_port_lid(ctx, &me.lid));
	me.qpn = qp->qp_num;
	XCHK(!xsend(fd, &me, sizeof(me)) && !xrecv(fd, &peer, sizeof(peer)));
	XCHK(!dp_qp_connect(qp, peer.qpn, peer.lid, &k));
	/* The FIN's receive. */
	sg = (struct ibv_sge){(uintptr_t)buf + 4096, 64, mr->lkey};
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 0xf1;
	rw.sg_list = &sg;
	rw.num_sge = 1;
	XCHK(!ibv_post_recv(qp, &rw, &rbad));
	XCHK(xrecv_byte(fd) == 'g');
	/* Eager tag 1, unexpected tag 2, rendezvous tag 3 (200 bytes at
	 * buf + 1024). */
	for (i = 0; i < 3; i++) {
		memset(buf, 'a' + i, 64);
		h.opcode = i == 2 ? IBV_TMH_RNDV : IBV_TMH_EAGER;
		h.app_ctx = htobe32(0x100 + i);
		h.tag = htobe64(1 + i);
		memcpy(buf, &h, sizeof(h));
		if (i == 2) {
			memset(buf + 1024, 'R', 200);
			v.va = htobe64((uintptr_t)buf + 1024);
			v.rkey = htobe32(mr->rkey);
			v.len = htobe32(200);
			memcpy(buf + sizeof(h), &v, sizeof(v));
		}
		sg = (struct ibv_sge){(uintptr_t)buf, 64, mr->lkey};
		memset(&sw, 0, sizeof(sw));
		sw.wr_id = i;
		sw.opcode = IBV_WR_SEND;
		sw.sg_list = &sg;
		sw.num_sge = 1;
		XCHK(!ibv_post_send(qp, &sw, &sbad));
		XCHK(dp_poll(cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
		     wc.opcode == IBV_WC_SEND);
	}
	XCHK(dp_poll(cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
	     wc.opcode == IBV_WC_RECV && wc.wr_id == 0xf1);
	memcpy(&fin, buf + 4096, sizeof(fin));
	XCHK(fin.opcode == IBV_TMH_FIN && be64toh(fin.tag) == 3 &&
	     be32toh(fin.app_ctx) == 0x102);
	XCHK(!xsend_byte(fd, 'd'));
	XCHK(xrecv_byte(fd) == 'q');
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	xp_close_pd_cq(ctx, pd, cq);
}

static void test_tm_xproc(void **state)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct ibv_qp_init_attr ia;
	struct xp_hello me, peer;
	struct tm_pair p;
	struct tmwc w;
	int fd, st;
	pid_t pid;

	if (on_wire()) {	/* the child's context would be on the wire */
		fu_done();
		return;
	}
	/* The receiver of tm_open() without its local sender. */
	memset(&p, 0, sizeof(p));
	dp_ep_open(&p.r, false);
	p.cqx = tm_cq_create(p.r.ctx);
	assert_non_null(p.cqx);
	p.srq = tm_srq_create(p.r.ctx, p.r.pd, ibv_cq_ex_to_cq(p.cqx),
			      TM_MASK, NTAGS, 16);
	assert_non_null(p.srq);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ibv_cq_ex_to_cq(p.cqx);
	ia.recv_cq = ibv_cq_ex_to_cq(p.cqx);
	ia.srq = p.srq;
	ia.qp_type = IBV_QPT_RC;
	p.r.qp = ibv_create_qp(p.r.pd, &ia);
	assert_non_null(p.r.qp);
	tm_add(&p, 0xa1, 1, ~0ull, 0, 0);
	tm_add(&p, 0xa3, 3, ~0ull, 1, 0);
	tm_srq_recv(&p, 0xb0);
	pid = xp_spawn(&fd, xp_sender, 30);
	me.qpn = p.r.qp->qp_num;
	me.lid = p.r.lid;
	assert_int_equal(xrecv(fd, &peer, sizeof(peer)), 0);
	assert_int_equal(xsend(fd, &me, sizeof(me)), 0);
	dp_connect(&p.r, peer.qpn, peer.lid, &k);
	/* Passive from here until the child is done. */
	assert_int_equal(xsend_byte(fd, 'g'), 0);
	fu_expect(xrecv_byte(fd) == 'd', "child did not finish");
	if (tm_expect_wc(&p, 0xa1, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
			 IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, "xproc eager",
			 &w))
		fu_expect(w.tag == 1 && w.priv == 0x100 && w.byte_len == 48,
			  "tag %#" PRIx64 " priv %#x len %u", w.tag, w.priv,
			  w.byte_len);
	fu_expect(p.r.buf[RBUF_OFF] == 'a', "eager payload");
	tm_expect(&p, 0xb0, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0,
		  "xproc unexpected");
	fu_expect(p.r.buf[16] == 'b', "unexpected payload");
	tm_expect(&p, 0xa3, IBV_WC_SUCCESS, IBV_WC_TM_RECV, IBV_WC_TM_MATCH,
		  "xproc rndv matched");
	tm_expect(&p, 0xa3, IBV_WC_SUCCESS, IBV_WC_TM_RECV,
		  IBV_WC_TM_DATA_VALID, "xproc rndv data");
	fu_expect(p.r.buf[RBUF_OFF + 256] == 'R' &&
			  p.r.buf[RBUF_OFF + 256 + 199] == 'R',
		  "rendezvous data from the other process");
	xsend_byte(fd, 'q');
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x",
		  st);
	close(fd);
	tm_close(&p);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_tm_caps),	 FU_TEST(test_tm_create_errors),
		FU_TEST(test_tm_ops_errors), FU_TEST(test_tm_eager),
		FU_TEST(test_tm_no_tag), FU_TEST(test_tm_phase),
		FU_TEST(test_tm_rndv),	 FU_TEST(test_tm_len_err),
		FU_TEST(test_tm_xproc),	 FU_TEST(test_tm_imm),
		FU_TEST(test_tm_qp_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
