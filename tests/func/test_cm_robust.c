// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_cm_robust.c - librdmacm against broken, hostile and vanishing
 * peers (the acceptance criteria of the rdma_cm issue; message flow and
 * failure events in src/cm/cma_conn.c, wire format in cma_wire.h).
 *
 * A raw TCP socket plays the other side, with messages built by the real
 * encoder (cma_wire.c is compiled into this test) and then corrupted:
 *
 *   - towards a listener: garbage, a truncated message, another version,
 *     a private-data length that disagrees with the length, an oversized
 *     length, a message out of turn, the wrong port space. The listener
 *     reports nothing, closes the raw socket within a second, and then
 *     still connects a real client. A message split into single bytes is
 *     reassembled.
 *   - towards an active id: a garbage, truncated, wrong-version or
 *     out-of-turn reply, or none (the server closes): UNREACHABLE with
 *     -EPROTO or -ECONNRESET, and the id is still destroyable. A proper
 *     raw REP gets the RTU and an ESTABLISHED whose QP uses the REP.
 *   - towards a passive id: the peer vanishes before rdma_accept or
 *     before the RTU (id destroyed, process SIGKILLed, raw socket
 *     closed), or sends garbage instead of the RTU: UNREACHABLE, and a
 *     later rdma_accept fails.
 *
 * Plus: no listener on the port (REJECTED status 8; sync rdma_connect
 * fails with ECONNREFUSED), requests of the other port space and UD
 * requests nobody listens for (the IB CM answers, as rdma_cm reports
 * them), an unroutable destination (ADDR_ERROR), a listener destroyed
 * under a hidden connection or a queued request, established peers that
 * die, sync listeners whose client vanishes, a listener migrated to
 * another channel, and ids destroyed after the process forked. Failing
 * peers in forked children (and a crash there) fail the test instead of
 * the run. Ports: 19550-19599.
 */
#include <net/if.h>

#include "cm/cma_wire.h"
#include "cm_util.h"

#define PORT_BASE 19550
#define PORT_SPAN 50

static int new_port(void)
{
	return cm_pick_port(PORT_BASE, PORT_SPAN);
}

/* ---- raw sockets and messages ------------------------------------------- */

static int raw_connect(int port)
{
	struct sockaddr_in sin = cm_lo(port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static int raw_listen(int port)
{
	struct sockaddr_in sin = cm_lo(port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static int raw_accept(int lfd)
{
	int fd, one = 1;

	assert_true(cm_wait_readable(lfd, CM_EV_MS));
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(fd >= 0);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Read one whole CM message within @ms and decode it; 0 or -1. */
static int raw_read_msg(int fd, struct srdma_cm_msg *m, int ms)
{
	uint8_t buf[SRDMA_CM_MSG_MAX];
	size_t len;

	if (cm_read_all(fd, buf, SRDMA_CM_HDR_LEN, ms) ||
	    srdma_cm_hdr_check(buf, &len) ||
	    cm_read_all(fd, buf + SRDMA_CM_HDR_LEN, len - SRDMA_CM_HDR_LEN,
			ms) ||
	    srdma_cm_decode(buf, len, m))
		return -1;
	return 0;
}

static size_t encode(const struct srdma_cm_msg *m, uint8_t *buf)
{
	int n = srdma_cm_encode(m, buf);

	assert_true(n >= SRDMA_CM_FIXED_LEN);
	return (size_t)n;
}

/*
 * The local port's LID, MTU and GID 0, so QPs the CM builds from them are
 * valid, and a QPN on this host: on a RoCE port (SRDMA_LINK_LAYER=eth) a
 * peer whose QPN names no context of this host is served by the net
 * transport, while these fake peers are this process. The QPN is in our
 * own context's range (its high bits), at a slot no QP of ours uses.
 */
static void port_info(uint16_t *lid, uint8_t *mtu, uint8_t gid[16],
		      uint32_t *qpn)
{
	struct ibv_context **list = rdma_get_devices(NULL);
	struct ibv_qp_init_attr qa;
	struct ibv_port_attr pa;
	union ibv_gid g;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_pd *pd;

	assert_non_null(list);
	assert_non_null(list[0]);
	memset(&pa, 0, sizeof(pa));
	assert_int_equal(ibv_query_port(list[0], 1, &pa), 0);
	*lid = pa.lid;
	*mtu = (uint8_t)pa.active_mtu;
	assert_int_equal(ibv_query_gid(list[0], 1, 0, &g), 0);
	memcpy(gid, g.raw, 16);
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
		pd = ibv_alloc_pd(list[0]);
		assert_non_null(pd);
		cq = ibv_create_cq(list[0], 1, NULL, NULL, 0);
		assert_non_null(cq);
		memset(&qa, 0, sizeof(qa));
		qa.send_cq = qa.recv_cq = cq;
		qa.qp_type = IBV_QPT_UD;
		qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
		qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
		qp = ibv_create_qp(pd, &qa);
		assert_non_null(qp);
		*qpn = (qp->qp_num & ~0x3fffu) | (*qpn & 0x3fffu);
		assert_int_equal(ibv_destroy_qp(qp), 0);
		assert_int_equal(ibv_destroy_cq(cq), 0);
		assert_int_equal(ibv_dealloc_pd(pd), 0);
	}
	rdma_free_devices(list);
}

/* A well-formed message of @type as a peer librdmacm would send it. */
static struct srdma_cm_msg make_msg(uint8_t type, uint8_t pdata_len)
{
	struct srdma_cm_msg m;
	unsigned int i;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.port_space = RDMA_PS_TCP;
	m.qp_type = IBV_QPT_RC;
	m.qpn = 0x00abcd;
	m.psn = 0x000123;
	m.resp_res = 1;
	m.init_depth = 1;
	m.retry_count = 7;
	m.rnr_retry_count = 7;
	port_info(&m.lid, &m.mtu, m.gid, &m.qpn);
	m.pdata_len = pdata_len;
	for (i = 0; i < pdata_len; i++)
		m.pdata[i] = (uint8_t)(0xc0 + i);
	return m;
}

/*
 * The library must close @fd (read gives EOF or ECONNRESET) within a
 * second, having sent nothing.
 */
#define expect_closed_silently(fd, what)                                       \
	expect_closed_at(__FILE__, __LINE__, fd, what)
static void expect_closed_at(const char *file, int line, int fd,
			     const char *what)
{
	uint8_t b[SRDMA_CM_MSG_MAX];
	ssize_t n;

	if (!cm_wait_readable(fd, 1000)) {
		cm_report(file, line,
			  "%s: the library did not close the connection "
			  "within 1 s",
			  what);
		return;
	}
	n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return;
	if (n > 0)
		cm_report(file, line,
			  "%s: the library sent %zd bytes "
			  "(type %u) instead of closing",
			  what, n, n > 5 ? b[5] : 0);
	else
		cm_report(file, line, "%s: recv: %s", what, cm_errname(errno));
}

/* ---- 1. malformed input to a listener ----------------------------------- */

/*
 * Send @len bytes to a fresh async listener from a raw client, then (if
 * @shut) end the stream. Expect: the listener's channel stays quiet, the
 * raw socket is closed by the library within a second, and afterwards a
 * real client still gets CONNECT_REQUEST, accept and ESTABLISHED.
 */
static void listener_survives(const uint8_t *bytes, size_t len, bool shut,
			      const char *what)
{
	struct cm_duo d;
	int fd;

	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	fd = raw_connect(d.port);
	assert_int_equal(cm_write_all(fd, bytes, len), 0);
	if (shut)
		assert_int_equal(shutdown(fd, SHUT_WR), 0);
	expect_closed_silently(fd, what);
	cm_expect_quiet(d.lch, CM_QUIET_MS, what);
	close(fd);

	cm_duo_resolve(&d);
	CM_CHECK(cm_duo_connect(&d),
		 "%s: a real connection to the same listener failed", what);
	cm_duo_close(&d);
}

static void test_cm_robust_listener_garbage(void **state)
{
	static const uint8_t junk[] = "GET / HTTP/1.1\r\nHost: softrdma\r\n\r\n"
				      "\x00\xff\x13\x37\xde\xad\xbe\xef";

	cm_watchdog(20);
	listener_survives(junk, sizeof(junk), false, "garbage to a listener");
	cm_done();
}

static void test_cm_robust_listener_truncated(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REQ, 44);
	uint8_t buf[SRDMA_CM_MSG_MAX];

	cm_watchdog(20);
	assert_int_equal(encode(&m, buf), 100);
	/* The header announces 100 bytes; 20 come, then the stream ends. */
	listener_survives(buf, 20, true,
			  "REQ announcing 100 bytes, 20 sent, then EOF");
	cm_done();
}

static void test_cm_robust_listener_bad_version(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REQ, 20);
	uint8_t buf[SRDMA_CM_MSG_MAX];
	size_t len = encode(&m, buf);

	cm_watchdog(20);
	buf[4] = SRDMA_CM_WIRE_VERSION + 1;
	listener_survives(buf, len, false, "REQ of wire version 2");
	cm_done();
}

static void test_cm_robust_listener_bad_pdata_len(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REQ, 20);
	uint8_t buf[SRDMA_CM_MSG_MAX];
	size_t len = encode(&m, buf);

	cm_watchdog(20);
	buf[33] = 21; /* the length field says 56 + 20 */
	listener_survives(buf, len, false,
			  "REQ whose pdata_len disagrees with its length");
	cm_done();
}

static void test_cm_robust_listener_oversized_length(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REQ, 0);
	uint8_t buf[SRDMA_CM_MSG_MAX];

	cm_watchdog(20);
	encode(&m, buf);
	buf[6] = 0x01; /* 300: more than any message; only the header sent */
	buf[7] = 0x2c;
	listener_survives(buf, SRDMA_CM_HDR_LEN, false,
			  "header announcing 300 bytes");
	cm_done();
}

static void test_cm_robust_listener_out_of_turn(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_DREQ, 0);
	uint8_t buf[SRDMA_CM_MSG_MAX];
	size_t len = encode(&m, buf);

	cm_watchdog(20);
	listener_survives(buf, len, false, "DREQ as the first message");
	m = make_msg(SRDMA_CM_RTU, 0);
	len = encode(&m, buf);
	listener_survives(buf, len, false, "RTU as the first message");
	cm_done();
}

static void test_cm_robust_listener_reserved_nonzero(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REQ, 8);
	uint8_t buf[SRDMA_CM_MSG_MAX];
	size_t len = encode(&m, buf);

	cm_watchdog(20);
	buf[52] = 1;
	listener_survives(buf, len, false, "REQ with reserved bytes set");
	cm_done();
}

/* A REQ of the UDP port space to a TCP listener: REJ "invalid service id". */
static void test_cm_robust_listener_wrong_port_space(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REQ, 0), rej;
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct cm_duo d;
	size_t len;
	int fd;

	cm_watchdog(20);
	m.port_space = RDMA_PS_UDP;
	len = encode(&m, buf);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	fd = raw_connect(d.port);
	assert_int_equal(cm_write_all(fd, buf, len), 0);
	if (CM_CHECK(!raw_read_msg(fd, &rej, 1000),
		     "no well-formed answer to a REQ of another port space"))
		CM_CHECK(rej.type == SRDMA_CM_REJ && rej.reason == 8,
			 "answer type %u reason %u, want REJ reason 8",
			 rej.type, rej.reason);
	expect_closed_silently(fd, "after the REJ");
	cm_expect_quiet(d.lch, CM_QUIET_MS, "REQ of another port space");
	close(fd);
	cm_duo_resolve(&d);
	CM_CHECK(cm_duo_connect(&d), "real connection afterwards");
	cm_duo_close(&d);
	cm_done();
}

/*
 * Framing: a valid REQ delivered one byte per segment is reassembled into
 * one CONNECT_REQUEST; the raw peer then gets the REJ of rdma_reject.
 */
static void test_cm_robust_listener_byte_by_byte(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REQ, 33), rej;
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct rdma_cm_event *ev;
	struct cm_duo d;
	size_t len = encode(&m, buf), i;
	int fd;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	fd = raw_connect(d.port);
	for (i = 0; i < len; i++) {
		assert_int_equal(cm_write_all(fd, buf + i, 1), 0);
		if (i % 8 == 0)
			usleep(1000);
		if (i == len / 2)
			cm_expect_quiet(d.lch, 20, "half a REQ");
	}
	ev = cm_duo_request(&d);
	if (ev) {
		CM_CHECK(cm_pdata_is(ev->param.conn.private_data,
				     ev->param.conn.private_data_len, m.pdata,
				     33, 56),
			 "reassembled REQ private data");
		CM_CHECK_INT(ev->param.conn.qp_num, m.qpn,
			     "reassembled REQ qp_num");
		rdma_ack_cm_event(ev);
		CM_CHECK(!rdma_reject(d.child, "nope", 4), "rdma_reject: %s",
			 cm_errname(errno));
		if (CM_CHECK(!raw_read_msg(fd, &rej, 1000), "no REJ arrived"))
			CM_CHECK(rej.type == SRDMA_CM_REJ && rej.reason == 28 &&
					 rej.pdata_len == 4 &&
					 !memcmp(rej.pdata, "nope", 4),
				 "REJ: type %u reason %u pdata_len %u",
				 rej.type, rej.reason, rej.pdata_len);
		expect_closed_silently(fd, "after the REJ");
	}
	close(fd);
	cm_duo_close(&d);
	cm_done();
}

/* A listener destroyed while a connection has not sent its REQ yet. */
static void test_cm_robust_listener_destroyed_with_hidden_child(void **state)
{
	struct cm_duo d;
	int fd, fd2;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	fd = raw_connect(d.port);
	fd2 = raw_connect(d.port);
	/* Half a header on the second one. */
	assert_int_equal(cm_write_all(fd2, "SRCM", 4), 0);
	cm_expect_quiet(d.lch, CM_QUIET_MS, "connections without a REQ");
	CM_CHECK(!rdma_destroy_id(d.listen), "destroy the listener: %s",
		 cm_errname(errno));
	d.listen = NULL;
	expect_closed_silently(fd, "hidden connection of a destroyed listener");
	expect_closed_silently(
		fd2, "half-framed connection of a destroyed listener");
	close(fd);
	close(fd2);
	cm_duo_close(&d);
	cm_done();
}

/* ---- 2. malformed replies to an active id ------------------------------- */

/*
 * A raw server on a fresh port; an active id with a QP connects to it
 * with 4 bytes of private data. Returns the raw connection after checking
 * that the REQ is what the id should send.
 */
static int active_to_raw(struct cm_duo *d, int *lfd)
{
	struct rdma_conn_param cp;
	struct srdma_cm_msg req;
	int fd;

	memset(d, 0, sizeof(*d));
	d->port = new_port();
	d->ps = RDMA_PS_TCP;
	*lfd = raw_listen(d->port);
	cm_duo_resolve(d);
	cm_create_qp(d->act);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = "raw?";
	cp.private_data_len = 4;
	assert_int_equal(rdma_connect(d->act, &cp), 0);
	fd = raw_accept(*lfd);
	if (CM_CHECK(!raw_read_msg(fd, &req, 1000), "no well-formed REQ"))
		CM_CHECK(req.type == SRDMA_CM_REQ &&
				 req.qpn == d->act->qp->qp_num &&
				 req.port_space == RDMA_PS_TCP &&
				 req.qp_type == IBV_QPT_RC &&
				 req.pdata_len == 4 &&
				 !memcmp(req.pdata, "raw?", 4),
			 "REQ: type %u qpn %#x ps %#x qp_type %u pdata_len %u",
			 req.type, req.qpn, req.port_space, req.qp_type,
			 req.pdata_len);
	return fd;
}

/*
 * The active id must report @status in UNREACHABLE, then nothing; if
 * @closes, the library must have closed the raw connection. The id is
 * destroyed (that must work).
 */
static void active_unreachable(struct cm_duo *d, int fd, int lfd, int status,
			       bool closes, const char *what)
{
	struct rdma_cm_event *ev;

	ev = cm_expect_event(d->ach, RDMA_CM_EVENT_UNREACHABLE, status);
	if (ev) {
		CM_CHECK(ev->id == d->act, "%s: UNREACHABLE on another id",
			 what);
		rdma_ack_cm_event(ev);
	}
	if (closes)
		expect_closed_silently(fd, what);
	cm_expect_quiet(d->ach, CM_QUIET_MS, what);
	errno = 0;
	CM_CHECK(rdma_connect(d->act, NULL) == -1,
		 "%s: rdma_connect on a failed id succeeded", what);
	if (fd >= 0)
		close(fd);
	close(lfd);
	cm_duo_close(d);
}

static void test_cm_robust_active_garbage_reply(void **state)
{
	uint8_t junk[64];
	struct cm_duo d;
	int lfd, fd;

	cm_watchdog(20);
	memset(junk, 0xab, sizeof(junk));
	fd = active_to_raw(&d, &lfd);
	assert_int_equal(cm_write_all(fd, junk, sizeof(junk)), 0);
	active_unreachable(&d, fd, lfd, -EPROTO, true, "garbage reply");
	cm_done();
}

static void test_cm_robust_active_truncated_reply(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REP, 40);
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct cm_duo d;
	int lfd, fd;

	cm_watchdog(20);
	encode(&m, buf);
	fd = active_to_raw(&d, &lfd);
	assert_int_equal(cm_write_all(fd, buf, 30), 0);
	close(fd);
	active_unreachable(&d, -1, lfd, -ECONNRESET, false,
			   "30 bytes of a REP, then close");
	cm_done();
}

static void test_cm_robust_active_bad_version_reply(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REP, 0);
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct cm_duo d;
	size_t len = encode(&m, buf);
	int lfd, fd;

	cm_watchdog(20);
	buf[4] = 0x7f;
	fd = active_to_raw(&d, &lfd);
	assert_int_equal(cm_write_all(fd, buf, len), 0);
	active_unreachable(&d, fd, lfd, -EPROTO, true,
			   "REP of another wire version");
	cm_done();
}

static void test_cm_robust_active_out_of_turn_reply(void **state)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_DREP, 0);
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct cm_duo d;
	size_t len = encode(&m, buf);
	int lfd, fd;

	cm_watchdog(20);
	fd = active_to_raw(&d, &lfd);
	assert_int_equal(cm_write_all(fd, buf, len), 0);
	active_unreachable(&d, fd, lfd, -EPROTO, true,
			   "DREP in answer to a REQ");
	cm_done();
}

/* 3a: the server accepts, reads the REQ and closes without a word. */
static void test_cm_robust_active_server_closes(void **state)
{
	struct cm_duo d;
	int lfd, fd;

	cm_watchdog(20);
	fd = active_to_raw(&d, &lfd);
	close(fd);
	active_unreachable(&d, -1, lfd, -ECONNRESET, false,
			   "server closed without replying");
	cm_done();
}

/*
 * A well-formed raw REP: the id applies it to its QP, answers with an
 * RTU, reports ESTABLISHED; the server then closes: DISCONNECTED.
 */
static void test_cm_robust_active_raw_rep(void **state)
{
	struct srdma_cm_msg rep = make_msg(SRDMA_CM_REP, 12), rtu;
	struct ibv_qp_init_attr ia;
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct rdma_cm_event *ev;
	struct ibv_qp_attr a;
	struct cm_duo d;
	int lfd, fd;

	cm_watchdog(20);
	fd = active_to_raw(&d, &lfd);
	/* Another slot of make_msg()'s context (on RoCE, ours). */
	rep.qpn = (rep.qpn & ~0x3fffu) | (0x00beef & 0x3fffu);
	rep.psn = 0x00f00d;
	assert_int_equal(cm_write_all(fd, buf, encode(&rep, buf)), 0);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev) {
		CM_CHECK(cm_pdata_is(ev->param.conn.private_data,
				     ev->param.conn.private_data_len, rep.pdata,
				     12, 196),
			 "ESTABLISHED private data from a raw REP");
		CM_CHECK_INT(ev->param.conn.qp_num, rep.qpn,
			     "ESTABLISHED qp_num");
		rdma_ack_cm_event(ev);
	}
	if (CM_CHECK(!raw_read_msg(fd, &rtu, 1000), "no RTU"))
		CM_CHECK_INT(rtu.type, SRDMA_CM_RTU, "message after the REP");
	memset(&a, 0, sizeof(a));
	assert_int_equal(
		ibv_query_qp(d.act->qp, &a,
			     IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
			     &ia),
		0);
	CM_CHECK(a.qp_state == IBV_QPS_RTS && a.dest_qp_num == rep.qpn &&
			 a.rq_psn == 0xf00d,
		 "QP after a raw REP: state %d dest_qp %#x rq_psn %#x",
		 a.qp_state, a.dest_qp_num, a.rq_psn);
	close(fd);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_DISCONNECTED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	close(lfd);
	cm_duo_close(&d);
	cm_done();
}

/* A REP and a DREQ in one segment: both are handled, in order. */
static void test_cm_robust_active_rep_and_dreq_coalesced(void **state)
{
	struct srdma_cm_msg rep = make_msg(SRDMA_CM_REP, 0), dreq, got;
	uint8_t buf[2 * SRDMA_CM_MSG_MAX];
	struct rdma_cm_event *ev;
	struct cm_duo d;
	size_t len;
	int lfd, fd;

	cm_watchdog(20);
	dreq = make_msg(SRDMA_CM_DREQ, 0);
	fd = active_to_raw(&d, &lfd);
	len = encode(&rep, buf);
	len += encode(&dreq, buf + len);
	assert_int_equal(cm_write_all(fd, buf, len), 0);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_DISCONNECTED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	if (CM_CHECK(!raw_read_msg(fd, &got, 1000), "no RTU"))
		CM_CHECK_INT(got.type, SRDMA_CM_RTU, "first answer");
	if (CM_CHECK(!raw_read_msg(fd, &got, 1000), "no DREP"))
		CM_CHECK_INT(got.type, SRDMA_CM_DREP, "second answer");
	expect_closed_silently(fd, "after the DREP");
	cm_expect_quiet(d.ach, CM_QUIET_MS, "after DISCONNECTED");
	close(fd);
	close(lfd);
	cm_duo_close(&d);
	cm_done();
}

/* ---- 3. the peer vanishes mid-handshake (passive side) ------------------ */

/* Expect UNREACHABLE with @status on d->child; a later accept fails. */
static void child_unreachable(struct cm_duo *d, int status, const char *what)
{
	struct rdma_cm_event *ev;

	ev = cm_expect_event(d->lch, RDMA_CM_EVENT_UNREACHABLE, status);
	if (ev) {
		CM_CHECK(ev->id == d->child,
			 "%s: UNREACHABLE on %p, want the new id %p", what,
			 (void *)ev->id, (void *)d->child);
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(d->lch, CM_QUIET_MS, what);
	errno = 0;
	CM_CHECK(rdma_accept(d->child, NULL) == -1 && errno,
		 "%s: rdma_accept afterwards did not fail (errno %s)", what,
		 cm_errname(errno));
}

/* 3b: the active id is destroyed before rdma_accept. */
static void test_cm_robust_active_destroyed_before_accept(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	cm_create_qp(d.child);
	rdma_destroy_qp(d.act);
	CM_CHECK(!rdma_destroy_id(d.act), "destroy the connecting id");
	d.act = NULL;
	child_unreachable(&d, -ECONNRESET, "active destroyed before accept");
	cm_duo_close(&d);
	cm_done();
}

/* 3b, racing: destroyed before the listener even fetched the request. */
static void test_cm_robust_active_destroyed_before_request_fetched(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	CM_CHECK(cm_wait_readable(d.lch->fd, CM_EV_MS), "no request queued");
	rdma_destroy_qp(d.act);
	CM_CHECK(!rdma_destroy_id(d.act), "destroy the connecting id");
	d.act = NULL;
	usleep(100 * 1000); /* let the service thread see the close */
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	child_unreachable(&d, -ECONNRESET,
			  "active destroyed before the request was fetched");
	cm_duo_close(&d);
	cm_done();
}

/*
 * An active id that stops at CONNECT_RESPONSE (it has no QP of its own,
 * so it waits for rdma_establish); the passive accepted.
 */
static struct ibv_qp *connect_external(struct cm_duo *d, struct ibv_cq **cq)
{
	struct ibv_qp_init_attr qia;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct ibv_qp *qp;

	*cq = ibv_create_cq(d->act->verbs, 4, NULL, NULL, 0);
	assert_non_null(*cq);
	cm_qp_init_attr(&qia, IBV_QPT_RC);
	qia.send_cq = qia.recv_cq = *cq;
	qp = ibv_create_qp(d->act->pd, &qia);
	assert_non_null(qp);
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = qp->qp_num;
	assert_int_equal(rdma_connect(d->act, &cp), 0);
	ev = cm_duo_request(d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	cm_create_qp(d->child);
	assert_int_equal(rdma_accept(d->child, NULL), 0);
	return qp;
}

/* 3c: the passive accepted; the active id is destroyed before the RTU. */
static void test_cm_robust_active_destroyed_before_rtu(void **state)
{
	struct rdma_cm_event *ev;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	qp = connect_external(&d, &cq);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	cm_expect_quiet(d.lch, CM_QUIET_MS, "passive before the RTU");
	CM_CHECK(!rdma_destroy_id(d.act), "destroy the id before the RTU");
	d.act = NULL;
	child_unreachable(&d, -ECONNRESET, "active destroyed before the RTU");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	cm_duo_close(&d);
	cm_done();
}

/*
 * A forked active (no cmocka here) that waits to be killed: with
 * @external it connects an external QP and stops at CONNECT_RESPONSE,
 * otherwise it uses rdma_create_qp and stops at ESTABLISHED; then it
 * writes 'R'. Returns an exit status only if something failed.
 */
static int vanishing_active(int fd, int port, bool external)
{
	struct sockaddr_in sin = cm_lo(port);
	struct rdma_event_channel *ch;
	struct ibv_qp_init_attr qia;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct ibv_cq *cq;

	if (cm_recv_byte(fd, CM_EV_MS) != 'L')
		return 2;
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000))
		return 3;
	ev = cm_wait_event(ch, CM_EV_MS);
	if (!ev || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED)
		return 4;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		return 5;
	ev = cm_wait_event(ch, CM_EV_MS);
	if (!ev || ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED)
		return 6;
	rdma_ack_cm_event(ev);
	cm_qp_init_attr(&qia, IBV_QPT_RC);
	memset(&cp, 0, sizeof(cp));
	if (external) {
		cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
		if (!cq)
			return 7;
		qia.send_cq = qia.recv_cq = cq;
		qp = ibv_create_qp(id->pd, &qia);
		if (!qp)
			return 8;
		cp.qp_num = qp->qp_num;
	} else if (rdma_create_qp(id, NULL, &qia)) {
		return 8;
	}
	if (rdma_connect(id, &cp))
		return 9;
	ev = cm_wait_event(ch, CM_EV_MS);
	if (!ev || ev->event != (external ? RDMA_CM_EVENT_CONNECT_RESPONSE
					  : RDMA_CM_EVENT_ESTABLISHED))
		return 10;
	rdma_ack_cm_event(ev);
	(void)cm_send_byte(fd, 'R');
	for (;;)
		pause();
}

/*
 * Fork vanishing_active() towards @port, accept it on a new listener in
 * @d, wait for its 'R', SIGKILL it. Return true if it got that far.
 */
static bool accept_then_kill(struct cm_duo *d, int port, bool external)
{
	struct rdma_cm_event *ev;
	int sv[2], st = 0;
	bool ok = false;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(sv[0]);
		alarm(20);
		_exit(vanishing_active(sv[1], port, external));
	}
	close(sv[1]);
	cm_duo_listen(d, port, RDMA_PS_TCP);
	assert_int_equal(cm_send_byte(sv[0], 'L'), 0);
	ev = cm_duo_request(d);
	if (ev) {
		rdma_ack_cm_event(ev);
		cm_create_qp(d->child);
		CM_CHECK(!rdma_accept(d->child, NULL), "rdma_accept: %s",
			 cm_errname(errno));
		if (!external) {
			ev = cm_expect_event(d->lch, RDMA_CM_EVENT_ESTABLISHED,
					     0);
			if (ev)
				rdma_ack_cm_event(ev);
		}
		ok = CM_CHECK(cm_recv_byte(sv[0], CM_EV_MS) == 'R',
			      "the active process did not get %s",
			      external ? "CONNECT_RESPONSE" : "ESTABLISHED");
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CM_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
		 "active process ended with status %#x before the kill", st);
	close(sv[0]);
	return ok;
}

/* 3c: the active process is SIGKILLed between CONNECT_RESPONSE and RTU. */
static void test_cm_robust_active_process_killed_before_rtu(void **state)
{
	struct cm_duo d;

	cm_watchdog(30);
	if (accept_then_kill(&d, new_port(), true))
		child_unreachable(&d, -ECONNRESET,
				  "active process killed before the RTU");
	cm_duo_close(&d);
	cm_done();
}

/* An established peer process is SIGKILLed: DISCONNECTED, promptly. */
static void test_cm_robust_established_peer_killed(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;
	uint64_t t0;

	cm_watchdog(30);
	if (accept_then_kill(&d, new_port(), false)) {
		t0 = cm_now_ms();
		ev = cm_expect_event(d.lch, RDMA_CM_EVENT_DISCONNECTED, 0);
		if (ev) {
			CM_CHECK(ev->id == d.child,
				 "DISCONNECTED on another id");
			rdma_ack_cm_event(ev);
			CM_CHECK(cm_now_ms() - t0 < 1000,
				 "DISCONNECTED took %llu ms",
				 (unsigned long long)(cm_now_ms() - t0));
		}
		CM_CHECK(!rdma_disconnect(d.child),
			 "rdma_disconnect after the peer died: %s",
			 cm_errname(errno));
		CM_CHECK_INT(cm_qp_state(d.child->qp), IBV_QPS_ERR,
			     "QP after rdma_disconnect");
		cm_expect_quiet(d.lch, CM_QUIET_MS, "after DISCONNECTED");
	}
	cm_duo_close(&d);
	cm_done();
}

/* The passive id of an established connection is destroyed. */
static void test_cm_robust_established_passive_destroyed(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	if (cm_duo_connect(&d)) {
		rdma_destroy_qp(d.child);
		CM_CHECK(!rdma_destroy_id(d.child), "destroy the passive id");
		d.child = NULL;
		ev = cm_expect_event(d.ach, RDMA_CM_EVENT_DISCONNECTED, 0);
		if (ev)
			rdma_ack_cm_event(ev);
		CM_CHECK(!rdma_disconnect(d.act), "rdma_disconnect: %s",
			 cm_errname(errno));
		CM_CHECK_INT(cm_qp_state(d.act->qp), IBV_QPS_ERR,
			     "active QP after rdma_disconnect");
		cm_expect_quiet(d.ach, CM_QUIET_MS, "after DISCONNECTED");
	}
	cm_duo_close(&d);
	cm_done();
}

/*
 * A new id the application fetched and then destroyed without answering,
 * and a listener destroyed with a request nobody fetched: the active
 * learns at once (real rdma_cm sends a REJ, "consumer defined"; a closed
 * side channel gives UNREACHABLE) and does not wait for its timeout.
 */
static void expect_prompt_failure(struct cm_duo *d, const char *what)
{
	struct rdma_cm_event *ev = cm_wait_event(d->ach, 2000);

	CM_CHECK(ev && (ev->event == RDMA_CM_EVENT_REJECTED ||
			ev->event == RDMA_CM_EVENT_UNREACHABLE),
		 "%s: active got %s status %d, want REJECTED or UNREACHABLE "
		 "within 2 s",
		 what, ev ? rdma_event_str(ev->event) : "nothing",
		 ev ? ev->status : 0);
	if (ev)
		rdma_ack_cm_event(ev);
	cm_expect_quiet(d->ach, CM_QUIET_MS, what);
}

static void test_cm_robust_request_dropped_by_passive(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	CM_CHECK(!rdma_destroy_id(d.child), "destroy the unanswered id");
	d.child = NULL;
	expect_prompt_failure(&d, "new id destroyed unanswered");

	/* Now the listener goes with a request still queued. */
	rdma_destroy_qp(d.act);
	rdma_destroy_id(d.act);
	d.act = NULL;
	rdma_destroy_event_channel(d.ach);
	d.ach = NULL;
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	CM_CHECK(cm_wait_readable(d.lch->fd, CM_EV_MS), "no request queued");
	CM_CHECK(!rdma_destroy_id(d.listen), "destroy the listener");
	d.listen = NULL;
	expect_prompt_failure(&d, "listener destroyed with a queued request");
	cm_duo_close(&d);
	cm_done();
}

/*
 * A raw client sends a REQ, is accepted, and then (@garbage) sends junk
 * instead of the RTU, or closes. The new id gets UNREACHABLE.
 */
static void raw_client_after_rep(bool garbage)
{
	struct srdma_cm_msg req = make_msg(SRDMA_CM_REQ, 0), rep;
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct rdma_cm_event *ev;
	struct cm_duo d;
	int fd;

	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	fd = raw_connect(d.port);
	assert_int_equal(cm_write_all(fd, buf, encode(&req, buf)), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	cm_create_qp(d.child);
	CM_CHECK(!rdma_accept(d.child, NULL), "rdma_accept: %s",
		 cm_errname(errno));
	if (CM_CHECK(!raw_read_msg(fd, &rep, 1000), "no REP"))
		CM_CHECK(rep.type == SRDMA_CM_REP &&
				 rep.qpn == d.child->qp->qp_num,
			 "REP: type %u qpn %#x, want REP qpn %#x", rep.type,
			 rep.qpn, d.child->qp->qp_num);
	if (garbage) {
		memset(buf, 0x5c, 64);
		assert_int_equal(cm_write_all(fd, buf, 64), 0);
		child_unreachable(&d, -EPROTO, "garbage instead of the RTU");
		expect_closed_silently(fd, "garbage instead of the RTU");
	} else {
		close(fd);
		fd = -1;
		child_unreachable(&d, -ECONNRESET,
				  "raw client closed after REP");
	}
	if (fd >= 0)
		close(fd);
	cm_duo_close(&d);
}

static void test_cm_robust_passive_garbage_instead_of_rtu(void **state)
{
	cm_watchdog(20);
	raw_client_after_rep(true);
	cm_done();
}

static void test_cm_robust_passive_raw_client_closes_before_rtu(void **state)
{
	cm_watchdog(20);
	raw_client_after_rep(false);
	cm_done();
}

/* A second REQ on a connection whose request is being considered. */
static void test_cm_robust_passive_second_req(void **state)
{
	struct srdma_cm_msg req = make_msg(SRDMA_CM_REQ, 0);
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct rdma_cm_event *ev;
	struct cm_duo d;
	size_t len = encode(&req, buf);
	int fd;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	fd = raw_connect(d.port);
	assert_int_equal(cm_write_all(fd, buf, len), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	assert_int_equal(cm_write_all(fd, buf, len), 0);
	child_unreachable(&d, -EPROTO, "a second REQ");
	expect_closed_silently(fd, "a second REQ");
	close(fd);
	cm_duo_close(&d);
	cm_done();
}

/* ---- 4. nobody listens -------------------------------------------------- */

/*
 * A socket bound to 127.0.0.1:@port and not listening: connections are
 * refused (SO_REUSEADDR only so TIME_WAIT of an earlier run is no bar).
 */
static int hold_port(int port)
{
	struct sockaddr_in sin = cm_lo(port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	assert_true(fd >= 0);
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void test_cm_robust_no_listener_async(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;
	int hold;

	cm_watchdog(20);
	memset(&d, 0, sizeof(d));
	d.port = new_port();
	d.ps = RDMA_PS_TCP;
	hold = hold_port(d.port);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	CM_CHECK(!rdma_connect(d.act, NULL), "async rdma_connect: %s",
		 cm_errname(errno));
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_REJECTED, 8);
	if (ev) {
		CM_CHECK(ev->id == d.act, "REJECTED on another id");
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(d.ach, CM_QUIET_MS, "after REJECTED");
	close(hold);
	cm_duo_close(&d);
	cm_done();
}

static void test_cm_robust_no_listener_sync(void **state)
{
	struct sockaddr_in sin;
	struct rdma_cm_id *id;
	int hold, port;

	cm_watchdog(20);
	port = new_port();
	sin = cm_lo(port);
	hold = hold_port(port);
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	CM_CHECK(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000),
		 "sync rdma_resolve_addr: %s", cm_errname(errno));
	CM_CHECK(!rdma_resolve_route(id, 2000), "sync rdma_resolve_route: %s",
		 cm_errname(errno));
	CM_CHECK_ERR(rdma_connect(id, NULL), ECONNREFUSED,
		     "sync rdma_connect to a port nobody listens on");
	CM_CHECK(id->event && id->event->event == RDMA_CM_EVENT_REJECTED &&
			 id->event->status == 8,
		 "id->event after the refused sync connect: %s status %d",
		 id->event ? rdma_event_str(id->event->event) : "NULL",
		 id->event ? id->event->status : 0);
	CM_CHECK(!rdma_destroy_id(id), "destroy: %s", cm_errname(errno));
	close(hold);
	cm_done();
}

/*
 * The port space is part of the service id: a request of the other space
 * finds no listener. An IB CM answers an RC REQ with REJ "invalid service
 * id" (REJECTED, status 8) and a SIDR_REQ with SIDR_REP "unsupported"
 * (UNREACHABLE, status 1: cma_sidr_rep_handler reports the SIDR status).
 */
static void port_space_mismatch(enum rdma_port_space lps,
				enum rdma_port_space aps,
				enum rdma_cm_event_type want, int status,
				const char *what)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;

	cm_duo_listen(&d, new_port(), lps);
	d.ps = aps;
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_wait_event(d.ach, CM_EV_MS);
	CM_CHECK(ev && ev->event == want && ev->status == status,
		 "%s: %s status %d, want %s status %d", what,
		 ev ? rdma_event_str(ev->event) : "no event",
		 ev ? ev->status : 0, rdma_event_str(want), status);
	if (ev)
		rdma_ack_cm_event(ev);
	cm_expect_quiet(d.lch, CM_QUIET_MS, what);
	cm_duo_close(&d);
}

static void test_cm_robust_rc_to_ud_listener(void **state)
{
	cm_watchdog(20);
	port_space_mismatch(RDMA_PS_UDP, RDMA_PS_TCP, RDMA_CM_EVENT_REJECTED, 8,
			    "RC connect to a UDP-port-space listener");
	cm_done();
}

static void test_cm_robust_ud_to_rc_listener(void **state)
{
	cm_watchdog(20);
	port_space_mismatch(RDMA_PS_TCP, RDMA_PS_UDP, RDMA_CM_EVENT_UNREACHABLE,
			    1, "UD connect to a TCP-port-space listener");
	cm_done();
}

static void test_cm_robust_ud_no_listener(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;
	int hold;

	cm_watchdog(20);
	memset(&d, 0, sizeof(d));
	d.port = new_port();
	d.ps = RDMA_PS_UDP;
	hold = hold_port(d.port);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_wait_event(d.ach, CM_EV_MS);
	CM_CHECK(ev && ev->event == RDMA_CM_EVENT_UNREACHABLE &&
			 ev->status == 1,
		 "UD connect, nobody listening: %s status %d, want "
		 "UNREACHABLE status 1 (SIDR_REP unsupported)",
		 ev ? rdma_event_str(ev->event) : "no event",
		 ev ? ev->status : 0);
	if (ev)
		rdma_ack_cm_event(ev);
	close(hold);
	cm_duo_close(&d);
	cm_done();
}

/* ---- sync listeners (rdma_create_ep / rdma_get_request) ----------------- */

static struct rdma_cm_id *sync_listener(int port, bool with_qp)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *listen;
	char service[8];

	snprintf(service, sizeof(service), "%d", port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", service, &hints, &res),
			 0);
	cm_qp_init_attr(&attr, IBV_QPT_RC);
	assert_int_equal(
		rdma_create_ep(&listen, res, NULL, with_qp ? &attr : NULL), 0);
	rdma_freeaddrinfo(res);
	assert_int_equal(rdma_listen(listen, 4), 0);
	return listen;
}

/*
 * The client of a sync listener vanishes before rdma_get_request fetched
 * its request. The request is still delivered (the new id then fails),
 * but the new id's failure must follow it to its own channel - real
 * librdmacm migrates the id with its pending events - and not come out
 * of the next rdma_get_request.
 */
static void test_cm_robust_sync_listener_child_events_follow(void **state)
{
	struct rdma_cm_id *listen, *id;
	struct cm_duo d;

	cm_watchdog(20);
	memset(&d, 0, sizeof(d));
	d.port = new_port();
	d.ps = RDMA_PS_TCP;
	listen = sync_listener(d.port, false);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	CM_CHECK(cm_wait_readable(listen->channel->fd, CM_EV_MS),
		 "no request on the sync listener");
	rdma_destroy_qp(d.act);
	rdma_destroy_id(d.act);
	d.act = NULL;
	usleep(200 * 1000); /* the service thread sees the close */
	if (CM_CHECK(!rdma_get_request(listen, &id), "rdma_get_request: %s",
		     cm_errname(errno))) {
		cm_expect_quiet(listen->channel, CM_QUIET_MS,
				"sync listener after the request (the new id's "
				"events must follow it)");
		errno = 0;
		CM_CHECK(rdma_accept(id, NULL) == -1,
			 "rdma_accept of a request whose client is gone "
			 "succeeded");
		rdma_destroy_ep(id);
	}
	rdma_destroy_ep(listen);
	cm_duo_close(&d);
	cm_done();
}

struct vanish_arg {
	int port;
	int ok;
};

/* Connect with an external QP, wait for CONNECT_RESPONSE, vanish. */
static void *vanish_before_rtu(void *arg)
{
	struct vanish_arg *va = arg;
	struct sockaddr_in sin = cm_lo(va->port);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_qp_init_attr qia;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_qp *qp = NULL;
	struct ibv_cq *cq = NULL;

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return NULL;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000))
		goto out;
	ev = cm_wait_event(ch, CM_EV_MS);
	if (!ev)
		goto out;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, 2000))
		goto out;
	ev = cm_wait_event(ch, CM_EV_MS);
	if (!ev)
		goto out;
	rdma_ack_cm_event(ev);
	cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
	cm_qp_init_attr(&qia, IBV_QPT_RC);
	qia.send_cq = qia.recv_cq = cq;
	qp = cq ? ibv_create_qp(id->pd, &qia) : NULL;
	if (!qp)
		goto out;
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = qp->qp_num;
	if (rdma_connect(id, &cp))
		goto out;
	ev = cm_wait_event(ch, CM_EV_MS);
	if (ev) {
		va->ok = ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE;
		rdma_ack_cm_event(ev);
	}
out:
	rdma_destroy_id(id);
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	rdma_destroy_event_channel(ch);
	return NULL;
}

/* A sync rdma_accept whose client vanishes before the RTU fails. */
static void test_cm_robust_sync_accept_client_vanishes(void **state)
{
	struct vanish_arg va = {.port = new_port()};
	struct rdma_cm_id *listen, *id;
	pthread_t thr;
	int ret, err;

	cm_watchdog(20);
	listen = sync_listener(va.port, true);
	assert_int_equal(pthread_create(&thr, NULL, vanish_before_rtu, &va), 0);
	CM_CHECK(cm_wait_readable(listen->channel->fd, CM_EV_MS),
		 "no request on the sync listener");
	if (CM_CHECK(!rdma_get_request(listen, &id), "rdma_get_request: %s",
		     cm_errname(errno))) {
		errno = 0;
		ret = rdma_accept(id, NULL);
		err = errno;
		CM_CHECK(ret == -1 && err == ECONNRESET,
			 "sync rdma_accept, client gone before the RTU: %d "
			 "errno %s, want -1 ECONNRESET",
			 ret, cm_errname(err));
		CM_CHECK(id->event &&
				 id->event->event == RDMA_CM_EVENT_UNREACHABLE,
			 "id->event after the failed sync accept: %s",
			 id->event ? rdma_event_str(id->event->event) : "NULL");
		rdma_destroy_ep(id);
	}
	pthread_join(thr, NULL);
	CM_CHECK(va.ok, "the client did not get CONNECT_RESPONSE");
	rdma_destroy_ep(listen);
	cm_done();
}

/* ---- a migrated listener ------------------------------------------------ */

/*
 * A connection accepted by a listener that then moves to channel B; its
 * REQ arrives afterwards. The CONNECT_REQUEST belongs on B; with
 * @destroy_old the old channel is destroyed before the REQ arrives (legal:
 * nothing uses it any more). Runs without cmocka so it can be forked;
 * returns 0, or an exit status naming the failure.
 */
static int migrated_listener(int port, bool destroy_old)
{
	struct srdma_cm_msg m = make_msg(SRDMA_CM_REQ, 0);
	struct sockaddr_in sin = cm_lo(port);
	struct rdma_event_channel *a, *b;
	uint8_t buf[SRDMA_CM_MSG_MAX];
	struct rdma_cm_event *ev;
	struct rdma_cm_id *listen;
	int fd, ret = 0;
	size_t len = encode(&m, buf);

	a = rdma_create_event_channel();
	b = rdma_create_event_channel();
	if (!a || !b || rdma_create_id(a, &listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen, (struct sockaddr *)&sin) ||
	    rdma_listen(listen, 4))
		return 2;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		return 3;
	usleep(100 * 1000); /* the service thread accepts: a hidden id */
	if (rdma_migrate_id(listen, b))
		return 4;
	if (destroy_old) {
		rdma_destroy_event_channel(a);
		a = NULL;
	}
	if (cm_write_all(fd, buf, len))
		return 5;
	ev = cm_wait_event(b, 2000);
	if (!ev) {
		ret = 7;
		ev = a ? cm_wait_event(a, 0) : NULL;
		if (ev)
			ret = 8; /* it went to the old channel */
	} else if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = 6;
	}
	if (ev) {
		struct rdma_cm_id *child = ev->id;
		bool req = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST;

		rdma_ack_cm_event(ev);
		if (req)
			rdma_destroy_id(child);
	}
	close(fd);
	rdma_destroy_id(listen);
	if (a)
		rdma_destroy_event_channel(a);
	rdma_destroy_event_channel(b);
	return ret;
}

static void test_cm_robust_migrate_listener_hidden_child(void **state)
{
	int ret, st = 0, port;
	pid_t pid;

	cm_watchdog(20);
	ret = migrated_listener(new_port(), false);
	CM_CHECK(!ret,
		 "REQ to a listener migrated to B after accepting the "
		 "connection: %s",
		 ret == 8   ? "CONNECT_REQUEST came on the old channel"
		 : ret == 7 ? "no CONNECT_REQUEST"
			    : "set-up failed");

	/* Same, old channel destroyed: in a child, as it may crash. */
	port = new_port();
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		alarm(10);
		_exit(migrated_listener(port, true));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	CM_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "migrated listener, old channel destroyed: child %s %d",
		 WIFEXITED(st) ? "exited with" : "killed by signal",
		 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	cm_done();
}

/* ---- fork() while ids are live ------------------------------------------ */

/*
 * The process forks (a worker that never touches the CM) while it holds a
 * connection and a listener. Destroying them in the parent must still
 * take effect at once, as with real rdma_cm, whose ids live in the kernel
 * and go when the owning process destroys them: the peer sees
 * DISCONNECTED, and a new connect to the old port is refused. Copies of
 * the CM's sockets in the child must not keep them alive.
 */
static void test_cm_robust_fork_keeps_no_connection(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;
	int sv[2], st = 0;
	pid_t pid;

	cm_watchdog(30);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	if (!cm_duo_connect(&d)) {
		cm_duo_close(&d);
		cm_done();
		return;
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* A worker: waits for its parent, never calls the CM. */
		close(sv[0]);
		alarm(20);
		(void)cm_recv_byte(sv[1], 15000);
		_exit(0);
	}
	close(sv[1]);

	rdma_destroy_qp(d.child);
	CM_CHECK(!rdma_destroy_id(d.child), "destroy the passive id");
	d.child = NULL;
	ev = cm_wait_event(d.ach, 2000);
	CM_CHECK(ev && ev->event == RDMA_CM_EVENT_DISCONNECTED,
		 "peer of an id destroyed after fork(): %s within 2 s, want "
		 "DISCONNECTED",
		 ev ? rdma_event_str(ev->event) : "no event");
	if (ev)
		rdma_ack_cm_event(ev);

	CM_CHECK(!rdma_destroy_id(d.listen), "destroy the listener");
	d.listen = NULL;
	rdma_destroy_qp(d.act);
	rdma_destroy_id(d.act);
	d.act = NULL;
	rdma_destroy_event_channel(d.ach);
	d.ach = NULL;
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_wait_event(d.ach, 2000);
	CM_CHECK(ev && ev->event == RDMA_CM_EVENT_REJECTED && ev->status == 8,
		 "connect to a listener destroyed after fork(): %s status %d "
		 "within 2 s, want REJECTED status 8",
		 ev ? rdma_event_str(ev->event) : "no event",
		 ev ? ev->status : 0);
	if (ev)
		rdma_ack_cm_event(ev);

	(void)cm_send_byte(sv[0], 'Q');
	waitpid(pid, &st, 0);
	close(sv[0]);
	cm_duo_close(&d);
	cm_done();
}

/* ---- 5. no route -------------------------------------------------------- */

/* errno of a UDP connect to @sa (how the kernel routes it), or 0. */
static int route_errno(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), e = 0;

	if (fd < 0)
		return -1;
	if (connect(fd, sa, len))
		e = errno;
	close(fd);
	return e;
}

/*
 * Expect ADDR_ERROR with -@err for @sa (async), and -1 with errno @err
 * from a sync rdma_resolve_addr.
 */
static void expect_addr_error(struct sockaddr *sa, int err, const char *what)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint64_t t0;

	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	t0 = cm_now_ms();
	CM_CHECK(!rdma_resolve_addr(id, NULL, sa, 2000),
		 "%s: async rdma_resolve_addr: %s", what, cm_errname(errno));
	ev = cm_expect_event(ch, RDMA_CM_EVENT_ADDR_ERROR, -err);
	if (ev) {
		CM_CHECK(ev->id == id, "%s: ADDR_ERROR on another id", what);
		rdma_ack_cm_event(ev);
	}
	CM_CHECK(cm_now_ms() - t0 < 1000, "%s: ADDR_ERROR took %llu ms", what,
		 (unsigned long long)(cm_now_ms() - t0));
	CM_CHECK_ERR(rdma_resolve_route(id, 2000), EINVAL,
		     "rdma_resolve_route after ADDR_ERROR");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);

	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	CM_CHECK_ERR(rdma_resolve_addr(id, NULL, sa, 2000), err,
		     "sync rdma_resolve_addr without a route");
	rdma_destroy_id(id);
}

static void test_cm_robust_unroutable(void **state)
{
	struct sockaddr_in sin = cm_sin(0xcb007101u, 7471); /* 203.0.113.1 */
	struct sockaddr_in6 sin6;
	char name[IF_NAMESIZE];
	unsigned int idx;
	int err, tested = 0;

	cm_watchdog(20);
	/* TEST-NET-3 (RFC 5737): unroutable unless a default route exists. */
	err = route_errno((struct sockaddr *)&sin, sizeof(sin));
	if (err > 0) {
		expect_addr_error((struct sockaddr *)&sin, err, "203.0.113.1");
		tested++;
	} else {
		printf("[ SKIP     ] 203.0.113.1 is routable here (default "
		       "route), so it cannot give ADDR_ERROR\n");
	}
	/*
	 * A link-local address on an interface that does not exist: no route
	 * whatever the routing table says.
	 */
	for (idx = 9999; if_indextoname(idx, name); idx++)
		;
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(7471);
	sin6.sin6_scope_id = idx;
	assert_int_equal(inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr), 1);
	err = route_errno((struct sockaddr *)&sin6, sizeof(sin6));
	if (err > 0) {
		expect_addr_error((struct sockaddr *)&sin6, err,
				  "fe80::1 on a missing interface");
		tested++;
	} else {
		printf("[ SKIP     ] fe80::1%%%u: %s\n", idx,
		       err < 0 ? "no IPv6 sockets" : "routable (?)");
	}
	if (!tested) {
		cm_done();
		skip();
	}
	cm_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cm_robust_listener_garbage),
		cmocka_unit_test(test_cm_robust_listener_truncated),
		cmocka_unit_test(test_cm_robust_listener_bad_version),
		cmocka_unit_test(test_cm_robust_listener_bad_pdata_len),
		cmocka_unit_test(test_cm_robust_listener_oversized_length),
		cmocka_unit_test(test_cm_robust_listener_out_of_turn),
		cmocka_unit_test(test_cm_robust_listener_reserved_nonzero),
		cmocka_unit_test(test_cm_robust_listener_wrong_port_space),
		cmocka_unit_test(test_cm_robust_listener_byte_by_byte),
		cmocka_unit_test(
			test_cm_robust_listener_destroyed_with_hidden_child),
		cmocka_unit_test(test_cm_robust_active_garbage_reply),
		cmocka_unit_test(test_cm_robust_active_truncated_reply),
		cmocka_unit_test(test_cm_robust_active_bad_version_reply),
		cmocka_unit_test(test_cm_robust_active_out_of_turn_reply),
		cmocka_unit_test(test_cm_robust_active_server_closes),
		cmocka_unit_test(test_cm_robust_active_raw_rep),
		cmocka_unit_test(test_cm_robust_active_rep_and_dreq_coalesced),
		cmocka_unit_test(test_cm_robust_active_destroyed_before_accept),
		cmocka_unit_test(
			test_cm_robust_active_destroyed_before_request_fetched),
		cmocka_unit_test(test_cm_robust_active_destroyed_before_rtu),
		cmocka_unit_test(
			test_cm_robust_active_process_killed_before_rtu),
		cmocka_unit_test(test_cm_robust_established_peer_killed),
		cmocka_unit_test(test_cm_robust_established_passive_destroyed),
		cmocka_unit_test(test_cm_robust_request_dropped_by_passive),
		cmocka_unit_test(test_cm_robust_passive_garbage_instead_of_rtu),
		cmocka_unit_test(
			test_cm_robust_passive_raw_client_closes_before_rtu),
		cmocka_unit_test(test_cm_robust_passive_second_req),
		cmocka_unit_test(test_cm_robust_no_listener_async),
		cmocka_unit_test(test_cm_robust_no_listener_sync),
		cmocka_unit_test(test_cm_robust_rc_to_ud_listener),
		cmocka_unit_test(test_cm_robust_ud_to_rc_listener),
		cmocka_unit_test(test_cm_robust_ud_no_listener),
		cmocka_unit_test(
			test_cm_robust_sync_listener_child_events_follow),
		cmocka_unit_test(test_cm_robust_sync_accept_client_vanishes),
		cmocka_unit_test(test_cm_robust_migrate_listener_hidden_child),
		cmocka_unit_test(test_cm_robust_fork_keeps_no_connection),
		cmocka_unit_test(test_cm_robust_unroutable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
