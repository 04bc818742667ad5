// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_raw.c - raw packet QPs, flow steering and RSS through the public
 * ABI (docs/design/raw-packet.md).
 *
 * On an InfiniBand port (func.test_raw) every raw verb refuses with
 * EOPNOTSUPP and the device advertises no RSS. On an Ethernet port
 * (func.eth.test_raw): creating a raw QP without CAP_NET_RAW is EPERM;
 * malformed flows, hash configurations and work queues get the errno
 * mlx5 gives (EINVAL for a malformed request, EOPNOTSUPP for what verbs
 * knows but softrdma does not offer, EBUSY for an object still in use);
 * and frames move: mlx5's default drop without a flow, the best priority
 * wins, no loopback to the sending context, RSS picks the WQ the Toeplitz
 * hash names (checked against a reference model here), and a frame sent
 * by another process of the host is steered like a local one.
 */
#include <arpa/inet.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "func_util.h"

#define FRAME 128u
#define BUF 16384u

/* The Toeplitz key of Microsoft's RSS verification suite. */
static const uint8_t ms_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static const uint8_t dmac[6] = { 0x02, 0x53, 0x52, 0x00, 0x00, 0x01 };

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	uint8_t *buf;
	struct ibv_mr *mr;
};

static bool raw_ok(struct ibv_context *ctx)
{
	return fu_is_roce(ctx) && geteuid() == 0;
}

static void side_open(struct side *s)
{
	s->ctx = fu_open_srdma();
	s->pd = ibv_alloc_pd(s->ctx);
	assert_non_null(s->pd);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	assert_non_null(s->cq);
	s->buf = calloc(1, BUF);
	assert_non_null(s->buf);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(s->mr);
}

static void side_close(struct side *s)
{
	assert_int_equal(ibv_dereg_mr(s->mr), 0);
	free(s->buf);
	assert_int_equal(ibv_destroy_cq(s->cq), 0);
	assert_int_equal(ibv_dealloc_pd(s->pd), 0);
	assert_int_equal(ibv_close_device(s->ctx), 0);
}

static struct ibv_qp *raw_qp(struct side *s, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 64,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET,
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	return qp;
}

/* An Ethernet/IPv4/UDP (or TCP) frame to dmac, from @src to 10.0.0.2. */
static void build_frame(uint8_t *f, uint32_t src, uint16_t sport, bool tcp)
{
	uint32_t dst = htonl(0x0a000002);
	uint16_t v;

	memset(f, 0, FRAME);
	memcpy(f, dmac, 6);
	f[6] = 0x02;
	f[11] = 0x07;
	f[12] = 0x08;			/* IPv4 */
	f[14] = 0x45;
	v = htons(FRAME - 14);
	memcpy(f + 16, &v, 2);
	f[22] = 64;
	f[23] = tcp ? IPPROTO_TCP : IPPROTO_UDP;
	src = htonl(src);
	memcpy(f + 26, &src, 4);
	memcpy(f + 30, &dst, 4);
	v = htons(sport);
	memcpy(f + 34, &v, 2);
	v = htons(4791);
	memcpy(f + 36, &v, 2);
	if (tcp)
		f[46] = 0x50;		/* data offset 5 */
}

static int post_frame(struct side *s, struct ibv_qp *qp, uint32_t len,
		      enum ibv_wr_opcode op)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf, .length = len, .lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static void post_rx(struct ibv_qp *qp, struct ibv_wq *wq, struct side *s,
		    uint64_t id, uint32_t off)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf + off, .length = 2048,
		.lkey = s->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	if (wq)
		assert_int_equal(ibv_post_wq_recv(wq, &wr, &bad), 0);
	else
		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
}

/* Poll up to @ms milliseconds for one completion. Return 1, or 0. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	struct timespec ts = { 0, 1000000 };
	int i;

	for (i = 0; i <= ms; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* Send @len bytes of s->buf and check the send completes with @status. */
static void send_ok(struct side *s, struct ibv_qp *qp, uint32_t len,
		    enum ibv_wc_status status)
{
	struct ibv_wc wc;

	fu_expect_int(post_frame(s, qp, len, IBV_WR_SEND), 0, "post frame");
	fu_expect_int(poll_one(s->cq, &wc, 1000), 1, "send completion");
	fu_expect_int(wc.status, status, "send status");
}

/* A flow of one spec list, built into @buf. */
struct flow_buf {
	struct ibv_flow_attr attr;
	uint8_t specs[512];
};

static uint8_t *flow_init(struct flow_buf *fb, uint16_t prio)
{
	memset(fb, 0, sizeof(*fb));
	fb->attr.type = IBV_FLOW_ATTR_NORMAL;
	fb->attr.size = sizeof(fb->attr);
	fb->attr.priority = prio;
	fb->attr.port = 1;
	return fb->specs;
}

static uint8_t *add_eth(struct flow_buf *fb, uint8_t *p)
{
	struct ibv_flow_spec_eth e = {
		.type = IBV_FLOW_SPEC_ETH, .size = sizeof(e),
	};

	memcpy(e.val.dst_mac, dmac, 6);
	memset(e.mask.dst_mac, 0xff, 6);
	memcpy(p, &e, sizeof(e));
	fb->attr.num_of_specs++;
	return p + sizeof(e);
}

static uint8_t *add_l4(struct flow_buf *fb, uint8_t *p, bool tcp)
{
	struct ibv_flow_spec_tcp_udp s = {
		.type = tcp ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP,
		.size = sizeof(s),
	};

	s.val.dst_port = htons(4791);
	s.mask.dst_port = 0xffff;
	memcpy(p, &s, sizeof(s));
	fb->attr.num_of_specs++;
	return p + sizeof(s);
}

static uint8_t *add_hdr(struct flow_buf *fb, uint8_t *p, uint32_t type,
			uint16_t size)
{
	struct ibv_flow_spec_eth e;	/* the largest we use */

	memset(&e, 0, sizeof(e));
	e.type = type;
	e.size = size;
	memcpy(p, &e, size < sizeof(e) ? size : sizeof(e));
	fb->attr.num_of_specs++;
	return p + size;
}

static int flow_errno(struct ibv_qp *qp, struct flow_buf *fb)
{
	struct ibv_flow *f;

	errno = 0;
	f = ibv_create_flow(qp, &fb->attr);
	if (f) {
		ibv_destroy_flow(f);
		return 0;
	}
	return errno;
}

/* side_open() without cmocka, for a fork child. Return: 0 or a code. */
static int child_open(struct side *s)
{
	struct ibv_device **list;
	int i, n = 0;

	s->ctx = NULL;
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "srdma0"))
			s->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!s->ctx)
		return 2;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = s->pd ? ibv_create_cq(s->ctx, 16, NULL, NULL, 0) : NULL;
	s->buf = calloc(1, BUF);
	s->mr = s->cq && s->buf ? ibv_reg_mr(s->pd, s->buf, BUF, 0) : NULL;
	return s->mr ? 0 : 3;
}

/* ---- InfiniBand port / permission ------------------------------------------ */

static void drop_net_raw(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		_exit(3);
	d[CAP_NET_RAW / 32].effective &= ~(1u << (CAP_NET_RAW % 32));
	if (syscall(SYS_capset, &h, d))
		_exit(3);
}

static void test_raw_refusals(void **state)
{
	struct ibv_device_attr_ex ax;
	struct ibv_wq_init_attr wa;
	struct ibv_qp_init_attr ia;
	struct side s;
	pid_t pid;
	int st;

	(void)state;
	side_open(&s);
	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(s.ctx, NULL, &ax), 0);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = s.cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RAW_PACKET;
	if (!fu_is_roce(s.ctx)) {
		/* InfiniBand: nothing raw, and nothing advertised. */
		errno = 0;
		fu_expect(!ibv_create_qp(s.pd, &ia) && errno == EOPNOTSUPP,
			  "raw QP on IB: %s", fu_errname(errno));
		memset(&wa, 0, sizeof(wa));
		wa.wq_type = IBV_WQT_RQ;
		wa.max_wr = wa.max_sge = 1;
		wa.pd = s.pd;
		wa.cq = s.cq;
		errno = 0;
		fu_expect(!ibv_create_wq(s.ctx, &wa) && errno == EOPNOTSUPP,
			  "WQ on IB: %s", fu_errname(errno));
		fu_expect_int(ax.rss_caps.supported_qpts, 0, "IB rss qpts");
		goto out;
	}
	fu_expect_int(ax.rss_caps.supported_qpts, 1u << IBV_QPT_RAW_PACKET,
		      "rss qpts");
	fu_expect_int(ax.rss_caps.rx_hash_function, IBV_RX_HASH_FUNC_TOEPLITZ,
		      "rss function");
	if (geteuid() != 0) {
		errno = 0;
		fu_expect(!ibv_create_qp(s.pd, &ia) && errno == EPERM,
			  "raw QP without root: %s", fu_errname(errno));
		goto out;
	}
	/* Root without CAP_NET_RAW: EPERM, as on mlx5. */
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct side c;
		struct ibv_qp *qp;

		drop_net_raw();
		if (child_open(&c))
			_exit(3);
		ia.send_cq = ia.recv_cq = c.cq;
		errno = 0;
		qp = ibv_create_qp(c.pd, &ia);
		_exit(qp ? 1 : errno == EPERM ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "raw QP without CAP_NET_RAW: child status %#x (0: EPERM)",
		  st);
out:
	side_close(&s);
	fu_done();
}

/* ---- bad flows ---------------------------------------------------------------- */

static void test_flow_refusals(void **state)
{
	struct ibv_qp_init_attr ia;
	struct flow_buf fb;
	struct ibv_flow *f;
	struct ibv_qp *qp, *rc;
	struct side s;
	uint8_t *p;

	(void)state;
	side_open(&s);
	if (!raw_ok(s.ctx)) {
		side_close(&s);
		skip();
	}
	qp = raw_qp(&s, s.cq);

	p = flow_init(&fb, 0);
	add_hdr(&fb, p, IBV_FLOW_SPEC_ETH, 12);
	fu_expect_int(flow_errno(qp, &fb), EINVAL, "eth spec of bad size");
	p = flow_init(&fb, 0);
	add_hdr(&fb, p, 0x77, 16);
	fu_expect_int(flow_errno(qp, &fb), EINVAL, "unknown spec type");
	p = flow_init(&fb, 0);
	add_hdr(&fb, p, IBV_FLOW_SPEC_VXLAN_TUNNEL,
		sizeof(struct ibv_flow_spec_tunnel));
	fu_expect_int(flow_errno(qp, &fb), EOPNOTSUPP, "vxlan spec");
	p = flow_init(&fb, 0);
	add_hdr(&fb, p, IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_INNER,
		sizeof(struct ibv_flow_spec_eth));
	fu_expect_int(flow_errno(qp, &fb), EOPNOTSUPP, "inner eth spec");
	p = flow_init(&fb, 0);
	p = add_hdr(&fb, p, IBV_FLOW_SPEC_IPV4,
		    sizeof(struct ibv_flow_spec_ipv4));
	add_hdr(&fb, p, IBV_FLOW_SPEC_IPV6, sizeof(struct ibv_flow_spec_ipv6));
	fu_expect_int(flow_errno(qp, &fb), EINVAL, "ipv4 and ipv6 specs");
	p = flow_init(&fb, 0);
	p = add_l4(&fb, p, true);
	add_l4(&fb, p, false);
	fu_expect_int(flow_errno(qp, &fb), EINVAL, "tcp and udp specs");
	p = flow_init(&fb, 0);
	add_eth(&fb, p);
	fb.attr.port = 2;
	fu_expect_int(flow_errno(qp, &fb), EINVAL, "port 2");
	fb.attr.port = 1;
	fb.attr.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	fu_expect_int(flow_errno(qp, &fb), EOPNOTSUPP, "DONT_TRAP");
	fb.attr.flags = 0;
	fb.attr.type = IBV_FLOW_ATTR_SNIFFER;
	fu_expect_int(flow_errno(qp, &fb), EOPNOTSUPP, "sniffer flow");
	fb.attr.type = IBV_FLOW_ATTR_NORMAL;
	fb.attr.comp_mask = 1;
	fu_expect_int(flow_errno(qp, &fb), EINVAL, "comp_mask");
	fb.attr.comp_mask = 0;

	/* Only raw QPs take flows. */
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = s.cq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.qp_type = IBV_QPT_RC;
	rc = ibv_create_qp(s.pd, &ia);
	assert_non_null(rc);
	fu_expect_int(flow_errno(rc, &fb), EOPNOTSUPP, "flow on an RC QP");
	assert_int_equal(ibv_destroy_qp(rc), 0);

	/* A QP with a flow is busy; a raw QP sends SEND only. */
	f = ibv_create_flow(qp, &fb.attr);
	fu_expect(f != NULL, "good flow: %s", fu_errname(errno));
	fu_expect_int(ibv_destroy_qp(qp), EBUSY, "destroy QP with a flow");
	fu_expect_int(post_frame(&s, qp, 64, IBV_WR_SEND_WITH_IMM), EINVAL,
		      "SEND_WITH_IMM on a raw QP");
	fu_expect_int(post_frame(&s, qp, 64, IBV_WR_RDMA_WRITE), EINVAL,
		      "RDMA_WRITE on a raw QP");
	if (f)
		fu_expect_int(ibv_destroy_flow(f), 0, "destroy flow");
	assert_int_equal(ibv_destroy_qp(qp), 0);
	side_close(&s);
	fu_done();
}

/* ---- bad RSS ---------------------------------------------------------------- */

static struct ibv_wq *make_wq(struct side *s)
{
	struct ibv_wq_init_attr wa = {
		.wq_type = IBV_WQT_RQ, .max_wr = 64, .max_sge = 1,
		.pd = s->pd, .cq = s->cq,
	};
	struct ibv_wq_attr m = { .attr_mask = IBV_WQ_ATTR_STATE,
				 .wq_state = IBV_WQS_RDY };
	struct ibv_wq *wq = ibv_create_wq(s->ctx, &wa);

	assert_non_null(wq);
	assert_int_equal(ibv_modify_wq(wq, &m), 0);
	return wq;
}

static struct ibv_qp *rss_qp(struct side *s, struct ibv_rwq_ind_table *t,
			     uint8_t fn, const uint8_t *key, uint8_t key_len,
			     uint64_t fields)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = s->pd,
		.rwq_ind_tbl = t,
		.rx_hash_conf = {
			.rx_hash_function = fn,
			.rx_hash_key_len = key_len,
			.rx_hash_key = (uint8_t *)key,
			.rx_hash_fields_mask = fields,
		},
	};

	errno = 0;
	return ibv_create_qp_ex(s->ctx, &ia);
}

static int rss_errno(struct side *s, struct ibv_rwq_ind_table *t, uint8_t fn,
		     uint8_t key_len, uint64_t fields)
{
	struct ibv_qp *qp = rss_qp(s, t, fn, ms_key, key_len, fields);

	if (qp) {
		ibv_destroy_qp(qp);
		return 0;
	}
	return errno;
}

static void test_rss_refusals(void **state)
{
	const uint64_t v4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
	struct ibv_rwq_ind_table_init_attr ta;
	struct ibv_rwq_ind_table *t, *t1;
	struct ibv_wq_init_attr wa;
	struct ibv_wq_attr m;
	struct ibv_wq *wq[2];
	struct ibv_qp *qp;
	struct side s;

	(void)state;
	side_open(&s);
	if (!raw_ok(s.ctx)) {
		side_close(&s);
		skip();
	}
	memset(&wa, 0, sizeof(wa));
	wa.wq_type = (enum ibv_wq_type)5;
	wa.max_wr = wa.max_sge = 1;
	wa.pd = s.pd;
	wa.cq = s.cq;
	errno = 0;
	fu_expect(!ibv_create_wq(s.ctx, &wa) && errno == EINVAL,
		  "WQ of type 5: %s", fu_errname(errno));
	wq[0] = make_wq(&s);
	wq[1] = make_wq(&s);
	memset(&m, 0, sizeof(m));
	m.attr_mask = IBV_WQ_ATTR_STATE;
	m.wq_state = IBV_WQS_ERR;
	fu_expect_int(ibv_modify_wq(wq[1], &m), 0, "WQ to ERR");
	m.wq_state = IBV_WQS_RDY;
	fu_expect_int(ibv_modify_wq(wq[1], &m), EINVAL, "WQ ERR -> RDY");
	m.wq_state = IBV_WQS_RESET;
	fu_expect_int(ibv_modify_wq(wq[1], &m), 0, "WQ to RESET");
	m.wq_state = IBV_WQS_RDY;
	fu_expect_int(ibv_modify_wq(wq[1], &m), 0, "WQ RESET -> RDY");

	memset(&ta, 0, sizeof(ta));
	ta.log_ind_tbl_size = 9;
	ta.ind_tbl = wq;
	errno = 0;
	fu_expect(!ibv_create_rwq_ind_table(s.ctx, &ta) && errno == EINVAL,
		  "table of 512: %s", fu_errname(errno));
	ta.log_ind_tbl_size = 1;
	t = ibv_create_rwq_ind_table(s.ctx, &ta);
	assert_non_null(t);
	ta.log_ind_tbl_size = 0;
	t1 = ibv_create_rwq_ind_table(s.ctx, &ta);
	assert_non_null(t1);

	fu_expect_int(rss_errno(&s, t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
				v4 | IBV_RX_HASH_IPSEC_SPI), EOPNOTSUPP,
		      "hash over the IPsec SPI");
	fu_expect_int(rss_errno(&s, t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
				1ull << 20), EOPNOTSUPP, "unknown hash field");
	fu_expect_int(rss_errno(&s, t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
				v4 | IBV_RX_HASH_SRC_IPV6), EINVAL,
		      "IPv4 and IPv6 fields");
	fu_expect_int(rss_errno(&s, t, IBV_RX_HASH_FUNC_TOEPLITZ, 40,
				IBV_RX_HASH_SRC_PORT_TCP |
				IBV_RX_HASH_DST_PORT_UDP), EINVAL,
		      "TCP and UDP fields");
	fu_expect_int(rss_errno(&s, t, IBV_RX_HASH_FUNC_TOEPLITZ, 20, v4),
		      EINVAL, "20-byte key");
	fu_expect_int(rss_errno(&s, t, 2, 40, v4), EOPNOTSUPP,
		      "hash function 2");
	fu_expect_int(rss_errno(&s, t, IBV_RX_HASH_FUNC_TOEPLITZ, 40, 0),
		      EINVAL, "no fields, table of 2");
	fu_expect_int(rss_errno(&s, t1, IBV_RX_HASH_FUNC_TOEPLITZ, 40, 0), 0,
		      "no fields, table of 1");

	qp = rss_qp(&s, t, IBV_RX_HASH_FUNC_TOEPLITZ, ms_key, 40, v4);
	assert_non_null(qp);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1 };

		fu_expect_int(ibv_modify_qp(qp, &a,
					    IBV_QP_STATE | IBV_QP_PORT),
			      EOPNOTSUPP, "modify an RSS QP");
	}
	fu_expect_int(ibv_destroy_rwq_ind_table(t), EBUSY,
		      "destroy a table an RSS QP uses");
	fu_expect_int(ibv_destroy_wq(wq[0]), EBUSY,
		      "destroy a WQ a table names");
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_rwq_ind_table(t), 0);
	assert_int_equal(ibv_destroy_rwq_ind_table(t1), 0);
	assert_int_equal(ibv_destroy_wq(wq[0]), 0);
	assert_int_equal(ibv_destroy_wq(wq[1]), 0);
	side_close(&s);
	fu_done();
}

/* ---- traffic ---------------------------------------------------------------- */

static void test_steering(void **state)
{
	struct side tx, rx;
	struct ibv_qp *sq, *q_all, *q_udp;
	struct ibv_flow *f_all, *f_udp, *f_self;
	struct flow_buf fb;
	struct ibv_wc wc;
	uint8_t *p;

	(void)state;
	side_open(&tx);
	if (!raw_ok(tx.ctx)) {
		side_close(&tx);
		skip();
	}
	side_open(&rx);
	sq = raw_qp(&tx, tx.cq);
	q_all = raw_qp(&rx, rx.cq);
	q_udp = raw_qp(&rx, rx.cq);
	post_rx(q_all, NULL, &rx, 1, 0);
	post_rx(q_udp, NULL, &rx, 2, 4096);

	/* No flow: mlx5's default drop. The send completes all the same. */
	build_frame(tx.buf, 0x01010101, 1000, false);
	send_ok(&tx, sq, FRAME, IBV_WC_SUCCESS);
	fu_expect_int(poll_one(rx.cq, &wc, 20), 0, "frame without a flow");

	/* Priority 1 takes all frames to dmac, priority 0 the UDP ones. */
	p = flow_init(&fb, 1);
	add_eth(&fb, p);
	f_all = ibv_create_flow(q_all, &fb.attr);
	assert_non_null(f_all);
	p = flow_init(&fb, 0);
	p = add_eth(&fb, p);
	add_l4(&fb, p, false);
	f_udp = ibv_create_flow(q_udp, &fb.attr);
	assert_non_null(f_udp);
	/* The sender's own match-all flow: no loopback to its context. */
	p = flow_init(&fb, 0);
	f_self = ibv_create_flow(sq, &fb.attr);
	assert_non_null(f_self);
	post_rx(sq, NULL, &tx, 9, 8192);

	send_ok(&tx, sq, FRAME, IBV_WC_SUCCESS);
	fu_expect_int(poll_one(rx.cq, &wc, 1000), 1, "UDP frame received");
	fu_expect_int(wc.status, IBV_WC_SUCCESS, "UDP frame status");
	fu_expect_int(wc.wr_id, 2, "UDP frame went to the priority 0 QP");
	fu_expect_int(wc.qp_num, q_udp->qp_num, "UDP frame qp_num");
	fu_expect_int(wc.byte_len, FRAME, "UDP frame length");
	fu_expect(!memcmp(rx.buf + 4096, tx.buf, FRAME), "UDP frame bytes");
	fu_expect_int(poll_one(rx.cq, &wc, 20), 0, "one copy only");

	build_frame(tx.buf, 0x01010101, 1000, true);
	send_ok(&tx, sq, FRAME, IBV_WC_SUCCESS);
	fu_expect_int(poll_one(rx.cq, &wc, 1000), 1, "TCP frame received");
	fu_expect_int(wc.wr_id, 1, "TCP frame went to the priority 1 QP");
	fu_expect(!memcmp(rx.buf, tx.buf, FRAME), "TCP frame bytes");

	/* Nothing came back to the sender's own QP. */
	fu_expect_int(poll_one(tx.cq, &wc, 20), 0, "no self loopback");

	/* No receive WQE left: dropped. Too long: LOC_LEN_ERR. */
	send_ok(&tx, sq, FRAME, IBV_WC_SUCCESS);
	fu_expect_int(poll_one(rx.cq, &wc, 20), 0, "no WQE: dropped");
	send_ok(&tx, sq, 9217, IBV_WC_LOC_LEN_ERR);

	assert_int_equal(ibv_destroy_flow(f_self), 0);
	assert_int_equal(ibv_destroy_flow(f_all), 0);
	assert_int_equal(ibv_destroy_flow(f_udp), 0);
	assert_int_equal(ibv_destroy_qp(sq), 0);
	assert_int_equal(ibv_destroy_qp(q_all), 0);
	assert_int_equal(ibv_destroy_qp(q_udp), 0);
	side_close(&rx);
	side_close(&tx);
	fu_done();
}

/* Reference Toeplitz hash, written from the definition. */
static uint32_t toeplitz_ref(const uint8_t *key, const uint8_t *in, int n)
{
	uint32_t h = 0;
	int bit;

	for (bit = 0; bit < n * 8; bit++) {
		uint32_t w = 0;
		int j;

		if (!(in[bit / 8] & (0x80 >> (bit % 8))))
			continue;
		for (j = 0; j < 32; j++) {
			int kb = bit + j;

			w = w << 1 | ((key[kb / 8] >> (7 - kb % 8)) & 1);
		}
		h ^= w;
	}
	return h;
}

static void test_rss_spread(void **state)
{
	const uint64_t v4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
	static const uint8_t vec_in[8] = { 66, 9, 149, 187, 161, 142, 100, 80 };
	struct ibv_rwq_ind_table_init_attr ta;
	struct ibv_rwq_ind_table *t;
	struct ibv_wq *wq[4];
	struct side tx, rx;
	struct ibv_qp *sq, *qp;
	struct ibv_flow *f;
	struct flow_buf fb;
	struct ibv_wc wc;
	int i, j, used = 0;

	(void)state;
	/* Microsoft's verification vector: 66.9.149.187 -> 161.142.100.80. */
	assert_int_equal(toeplitz_ref(ms_key, vec_in, 8), 0x323e8fc2);
	side_open(&tx);
	if (!raw_ok(tx.ctx)) {
		side_close(&tx);
		skip();
	}
	side_open(&rx);
	sq = raw_qp(&tx, tx.cq);
	for (i = 0; i < 4; i++) {
		wq[i] = make_wq(&rx);
		for (j = 0; j < 4; j++)
			post_rx(NULL, wq[i], &rx, (uint64_t)i, 0);
	}
	memset(&ta, 0, sizeof(ta));
	ta.log_ind_tbl_size = 2;
	ta.ind_tbl = wq;
	t = ibv_create_rwq_ind_table(rx.ctx, &ta);
	assert_non_null(t);
	qp = rss_qp(&rx, t, IBV_RX_HASH_FUNC_TOEPLITZ, ms_key, 40, v4);
	assert_non_null(qp);
	flow_init(&fb, 0);
	add_eth(&fb, fb.specs);
	f = ibv_create_flow(qp, &fb.attr);
	assert_non_null(f);

	for (i = 0; i < 16; i++) {
		uint32_t src = 0x0a000100 + (uint32_t)i * 7, h, want;
		uint8_t in[8];

		build_frame(tx.buf, src, 1000, false);
		memcpy(in, tx.buf + 26, 8);
		h = toeplitz_ref(ms_key, in, 8);
		want = h & 3;
		send_ok(&tx, sq, FRAME, IBV_WC_SUCCESS);
		fu_expect_int(poll_one(rx.cq, &wc, 1000), 1, "RSS frame");
		fu_expect_int(wc.status, IBV_WC_SUCCESS, "RSS frame status");
		fu_expect_int(wc.qp_num, wq[want]->wq_num,
			      "RSS frame landed in the WQ the hash names");
		fu_expect_int(wc.wr_id, want, "RSS frame WQE");
		used |= 1 << want;
		post_rx(NULL, wq[want], &rx, want, 0);
	}
	fu_expect(used != 1 && used != 2 && used != 4 && used != 8,
		  "16 sources all hashed to one WQ (%#x)", used);

	assert_int_equal(ibv_destroy_flow(f), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_rwq_ind_table(t), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(ibv_destroy_wq(wq[i]), 0);
	assert_int_equal(ibv_destroy_qp(sq), 0);
	side_close(&rx);
	side_close(&tx);
	fu_done();
}

/* A frame from another process of the host is steered like a local one. */
static int child_send(void)
{
	struct side s;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int ret;

	ret = child_open(&s);
	if (ret)
		return ret;
	{
		struct ibv_qp_init_attr ia = {
			.send_cq = s.cq, .recv_cq = s.cq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RAW_PACKET,
		};
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
					 .port_num = 1 };

		qp = ibv_create_qp(s.pd, &ia);
		if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT))
			return 4;
		a.qp_state = IBV_QPS_RTR;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			return 4;
		a.qp_state = IBV_QPS_RTS;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
			return 4;
	}
	build_frame(s.buf, 0x0b0b0b0b, 2000, false);
	if (post_frame(&s, qp, FRAME, IBV_WR_SEND) ||
	    poll_one(s.cq, &wc, 2000) != 1 || wc.status != IBV_WC_SUCCESS)
		return 5;
	ibv_destroy_qp(qp);
	ibv_dereg_mr(s.mr);
	ibv_destroy_cq(s.cq);
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	free(s.buf);
	return 0;
}

static void test_cross_process(void **state)
{
	struct ibv_flow *f;
	struct flow_buf fb;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	struct side rx;
	pid_t pid;
	int st;

	(void)state;
	side_open(&rx);
	if (!raw_ok(rx.ctx)) {
		side_close(&rx);
		skip();
	}
	qp = raw_qp(&rx, rx.cq);
	post_rx(qp, NULL, &rx, 5, 0);
	flow_init(&fb, 0);
	add_eth(&fb, fb.specs);
	f = ibv_create_flow(qp, &fb.attr);
	assert_non_null(f);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(child_send());
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && !WEXITSTATUS(st), "sender child: %#x", st);
	fu_expect_int(poll_one(rx.cq, &wc, 2000), 1, "frame of another process");
	fu_expect_int(wc.status, IBV_WC_SUCCESS, "its status");
	fu_expect_int(wc.byte_len, FRAME, "its length");
	fu_expect_int(rx.buf[29], 0x0b, "its source address");
	assert_int_equal(ibv_destroy_flow(f), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	side_close(&rx);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw_refusals),
		cmocka_unit_test(test_flow_refusals),
		cmocka_unit_test(test_rss_refusals),
		cmocka_unit_test(test_steering),
		cmocka_unit_test(test_rss_spread),
		cmocka_unit_test(test_cross_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
