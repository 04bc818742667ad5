// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_cm.c - librdmacm on one host: what an application sees from
 * connection set-up to teardown (src/cm/cma_conn.c has the message flow).
 *
 * RC between two threads and between two processes (fork): async ids
 * with rdma_create_qp, private data both ways (the passive sees 56 bytes,
 * the active 196, zero padded), the negotiated RDMA read depths, retry
 * counts and ACK timeout in the QPs, a SEND, an RDMA WRITE and an RDMA
 * READ, then rdma_disconnect: DISCONNECTED on both sides, QPs in ERR.
 * The synchronous API as rdma_server/rdma_client use it (rdma_create_ep,
 * rdma_get_request, rdma_accept, rdma_connect, rdma_disconnect, in both
 * disconnect orders, id->event after each call as ucma_complete() leaves
 * it). rdma_reject with private data; private data limits; an external
 * QP driven through rdma_init_qp_attr and rdma_establish; UD (SIDR) with
 * a SEND through the AH the event hands out, and a UD reject; crossing
 * disconnects; RC over ::1; rdma_migrate_id of an id and of a listener
 * with a queued request; the channel fd (O_NONBLOCK, poll, epoll,
 * blocking get); ports, and a bound port being reserved;
 * RDMA_OPTION_ID_ACK_TIMEOUT; rdma_get_devices; rdma_create_srq;
 * rdma_reg_msgs/read/write access (verbs-semantics.md 8.1, 8.2);
 * multicast joins and their errors.
 *
 * Where real librdmacm behaviour is the reference (not the issue text),
 * the comment at the test names the rdma-core/kernel code it follows.
 * The robustness cases (malformed messages, peers vanishing mid-way, no
 * listener, no route) are in test_cm_robust.c. Ports: 19500-19549.
 */
#include <net/if.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "cm_util.h"

#define PORT_BASE 19500
#define PORT_SPAN 50

static int new_port(void)
{
	return cm_pick_port(PORT_BASE, PORT_SPAN);
}

/* One signaled SEND of @len bytes at @buf. */
static int post_send(struct ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = {(uintptr_t)buf, len, lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	return ibv_post_send(qp, &wr, &bad);
}

/* ---- RC between two peers (threads or processes) ------------------------ */

#define REQ_MAGIC 0x52455121u
#define REP_MAGIC 0x52455021u
#define BUF_LEN	  4096
#define OFF_RECV  0
#define OFF_WRITE 1024
#define OFF_READ  2048
#define OFF_SEND  3072
#define XFER	  64

/* What the active puts in its REQ (20 bytes of the 56). */
struct req_pdata {
	uint32_t magic;
	uint32_t qpn;
	uint32_t sport;
	uint8_t fill[8];
};

/* What the passive puts in its REP (40 bytes of the 196). */
struct rep_pdata {
	uint32_t magic;
	uint32_t qpn;
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
	uint8_t fill[16];
};

_Static_assert(sizeof(struct req_pdata) == 20, "REQ private data");
_Static_assert(sizeof(struct rep_pdata) == 40, "REP private data");

static bool all_bytes(const void *p, int c, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != (uint8_t)c)
			return false;
	return true;
}

static bool is_lo(const struct sockaddr *sa)
{
	const struct sockaddr_in *sin = (const void *)sa;

	return sa->sa_family == AF_INET &&
	       sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
}

/* Query the QP attributes the CM negotiates. */
static int query_conn(struct ibv_qp *qp, struct ibv_qp_attr *a)
{
	struct ibv_qp_init_attr ia;

	memset(a, 0, sizeof(*a));
	return ibv_query_qp(qp, a,
			    IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_TIMEOUT |
				    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_MAX_QP_RD_ATOMIC |
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_SQ_PSN |
				    IBV_QP_RQ_PSN | IBV_QP_ACCESS_FLAGS,
			    &ia);
}

/* Is srdma0's port Ethernet (RoCE) with no GID for 127.0.0.1 (a host
 * with another interface)? Binding 127.0.0.1 then attaches no device. */
static bool lo_is_no_gid(void)
{
	static const uint8_t lo[16] = { [10] = 0xff, [11] = 0xff, [12] = 127,
					[15] = 1 };
	struct ibv_context **l = rdma_get_devices(NULL);
	struct ibv_port_attr pa;
	union ibv_gid g;
	bool ret = false;
	int i;

	if (l && l[0] && !ibv_query_port(l[0], 1, &pa) &&
	    pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
		ret = true;
		for (i = 0; i < pa.gid_tbl_len; i++)
			if (!ibv_query_gid(l[0], 1, i, &g) &&
			    !memcmp(g.raw, lo, sizeof(lo)))
				ret = false;
	}
	if (l)
		rdma_free_devices(l);
	return ret;
}

static int rc_passive(struct cm_pair *p)
{
	struct sockaddr_in sin = cm_lo(p->port);
	const struct rdma_conn_param *c;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen, *id;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param cp;
	struct ibv_qp_attr qattr;
	struct req_pdata req;
	struct rep_pdata rep;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char *buf;

	ch = rdma_create_event_channel();
	CM_REQUIRE(ch, "rdma_create_event_channel: %s", cm_errname(errno));
	CM_REQUIRE(!rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP),
		   "rdma_create_id: %s", cm_errname(errno));
	CM_REQUIRE(!rdma_bind_addr(listen, (struct sockaddr *)&sin),
		   "rdma_bind_addr(127.0.0.1:%d): %s", p->port,
		   cm_errname(errno));
	/* Not a GID of a RoCE port: bound as the wildcard is. */
	if (lo_is_no_gid())
		CM_CHECK(!listen->verbs, "binding 127.0.0.1, no GID of the "
					 "RoCE port, attaches the device");
	else
		CM_CHECK(listen->verbs, "binding 127.0.0.1 attaches the device");
	CM_REQUIRE(!rdma_listen(listen, 4), "rdma_listen: %s",
		   cm_errname(errno));
	CM_CHECK_INT(ntohs(rdma_get_src_port(listen)), p->port,
		     "listener's source port");
	CM_REQUIRE(!cm_send_byte(p->fd[0], 'L'), "signal 'listening'");

	ev = cm_expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	CM_REQUIRE(ev, "no CONNECT_REQUEST");
	id = ev->id;
	c = &ev->param.conn;
	CM_CHECK(ev->listen_id == listen && id && id != listen,
		 "CONNECT_REQUEST: id %p listen_id %p, listener %p", (void *)id,
		 (void *)ev->listen_id, (void *)listen);
	CM_CHECK(id->channel == ch, "the new id reports on the listener's "
				    "channel");
	CM_CHECK(id->verbs && id->pd, "the new id has verbs %p and pd %p",
		 (void *)id->verbs, (void *)id->pd);
	CM_CHECK(id->ps == RDMA_PS_TCP && id->qp_type == IBV_QPT_RC,
		 "new id: ps %d qp_type %d", id->ps, id->qp_type);
	memset(&req, 0, sizeof(req));
	if (c->private_data)
		memcpy(&req, c->private_data, sizeof(req));
	CM_CHECK_INT(c->private_data_len, 56, "REQ private data length");
	CM_CHECK(c->private_data && req.magic == REQ_MAGIC &&
			 all_bytes(req.fill, 0xa5, sizeof(req.fill)) &&
			 all_bytes((const uint8_t *)c->private_data +
					   sizeof(req),
				   0, 56 - sizeof(req)),
		 "REQ private data is not the 20 bytes sent plus zeros");
	CM_CHECK_INT(c->qp_num, req.qpn, "CONNECT_REQUEST qp_num");
	/* Seen from here: the active's initiator depth is what we answer. */
	CM_CHECK_INT(c->responder_resources, 1,
		     "CONNECT_REQUEST responder_resources");
	CM_CHECK_INT(c->initiator_depth, 2, "CONNECT_REQUEST initiator_depth");
	CM_CHECK_INT(c->retry_count, 6, "CONNECT_REQUEST retry_count");
	CM_CHECK_INT(c->rnr_retry_count, 5, "CONNECT_REQUEST rnr_retry_count");
	CM_CHECK_INT(ntohs(rdma_get_src_port(id)), p->port,
		     "new id's source port");
	CM_CHECK_INT(ntohs(rdma_get_dst_port(id)), req.sport,
		     "new id's destination port (the active's source port)");
	CM_CHECK(is_lo(rdma_get_local_addr(id)) &&
			 is_lo(rdma_get_peer_addr(id)),
		 "new id's addresses are not 127.0.0.1");

	cm_qp_init_attr(&qa, IBV_QPT_RC);
	CM_REQUIRE(!rdma_create_qp(id, NULL, &qa), "rdma_create_qp: %s",
		   cm_errname(errno));
	CM_CHECK(id->qp && id->send_cq && id->recv_cq && id->qp->pd == id->pd,
		 "rdma_create_qp: qp %p send_cq %p recv_cq %p", (void *)id->qp,
		 (void *)id->send_cq, (void *)id->recv_cq);
	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_INIT,
		     "passive QP after rdma_create_qp");
	buf = calloc(1, BUF_LEN);
	CM_REQUIRE(buf, "calloc");
	memset(buf + OFF_READ, 'R', XFER);
	mr = ibv_reg_mr(id->pd, buf, BUF_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ);
	CM_REQUIRE(mr, "ibv_reg_mr: %s", cm_errname(errno));
	CM_REQUIRE(!rdma_post_recv(id, (void *)1, buf + OFF_RECV, XFER, mr),
		   "rdma_post_recv");
	rdma_ack_cm_event(ev);

	memset(&rep, 0, sizeof(rep));
	rep.magic = REP_MAGIC;
	rep.qpn = id->qp->qp_num;
	rep.addr = (uintptr_t)buf;
	rep.rkey = mr->rkey;
	rep.len = BUF_LEN;
	memset(rep.fill, 0x5a, sizeof(rep.fill));
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &rep;
	cp.private_data_len = sizeof(rep);
	cp.responder_resources = 1;
	cp.initiator_depth = 2;
	cp.rnr_retry_count = 7;
	CM_REQUIRE(!rdma_accept(id, &cp), "rdma_accept: %s", cm_errname(errno));
	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_RTS,
		     "passive QP after rdma_accept");
	if (CM_CHECK(!query_conn(id->qp, &qattr), "ibv_query_qp")) {
		CM_CHECK_INT(qattr.dest_qp_num, req.qpn, "passive dest_qp_num");
		CM_CHECK_INT(qattr.max_dest_rd_atomic, 1,
			     "passive max_dest_rd_atomic");
		CM_CHECK_INT(qattr.max_rd_atomic, 2, "passive max_rd_atomic");
		CM_CHECK_INT(qattr.retry_cnt, 6, "passive retry_cnt");
		CM_CHECK_INT(qattr.rnr_retry, 5, "passive rnr_retry");
		CM_CHECK(qattr.qp_access_flags & IBV_ACCESS_REMOTE_READ,
			 "passive QP access %#x lacks REMOTE_READ",
			 qattr.qp_access_flags);
	}
	ev = cm_expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	CM_REQUIRE(ev, "passive: no ESTABLISHED");
	CM_CHECK(ev->id == id, "ESTABLISHED on %p, want %p", (void *)ev->id,
		 (void *)id);
	rdma_ack_cm_event(ev);

	if (cm_expect_wc(id->recv_cq, IBV_WC_SUCCESS, IBV_WC_RECV, &wc,
			 "passive: RECV of the active's SEND")) {
		CM_CHECK_INT(wc.byte_len, 16, "RECV byte_len");
		CM_CHECK(!memcmp(buf + OFF_RECV, "ping from active", 16),
			 "RECV data");
	}
	CM_REQUIRE(cm_recv_byte(p->fd[0], CM_EV_MS) == 'W',
		   "the active did not finish its WRITE and READ");
	CM_CHECK(all_bytes(buf + OFF_WRITE, 'W', XFER),
		 "the RDMA WRITE did not land");

	ev = cm_expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	if (ev) {
		CM_CHECK(ev->id == id, "DISCONNECTED on %p, want %p",
			 (void *)ev->id, (void *)id);
		rdma_ack_cm_event(ev);
	}
	CM_CHECK(!rdma_disconnect(id), "rdma_disconnect after the peer's: %s",
		 cm_errname(errno));
	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_ERR,
		     "passive QP after rdma_disconnect");

	CM_CHECK(!rdma_dereg_mr(mr), "rdma_dereg_mr");
	free(buf);
	rdma_destroy_qp(id);
	CM_CHECK(!rdma_destroy_id(id), "destroy the connected id");
	CM_CHECK(!rdma_destroy_id(listen), "destroy the listener");
	rdma_destroy_event_channel(ch);
	return 0;
}

static int rc_active(struct cm_pair *p)
{
	struct sockaddr_in sin = cm_lo(p->port);
	const struct rdma_conn_param *c;
	struct rdma_event_channel *ch;
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param cp;
	struct ibv_qp_attr qattr;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct req_pdata req;
	struct rep_pdata rep;
	struct ibv_mr *mr;
	uint8_t timeout = 18;
	char *buf;
	int mask;

	CM_REQUIRE(cm_recv_byte(p->fd[1], CM_EV_MS) == 'L',
		   "the passive never listened");
	ch = rdma_create_event_channel();
	CM_REQUIRE(ch, "rdma_create_event_channel: %s", cm_errname(errno));
	CM_REQUIRE(!rdma_create_id(ch, &id, NULL, RDMA_PS_TCP),
		   "rdma_create_id: %s", cm_errname(errno));
	CM_CHECK(!rdma_get_src_port(id) && !rdma_get_dst_port(id),
		 "ports of a fresh id are not 0");
	CM_REQUIRE(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000),
		   "rdma_resolve_addr: %s", cm_errname(errno));
	ev = cm_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	CM_REQUIRE(ev, "no ADDR_RESOLVED");
	CM_CHECK(ev->id == id, "ADDR_RESOLVED on another id");
	rdma_ack_cm_event(ev);
	CM_CHECK(id->verbs && id->pd, "resolved id: verbs %p pd %p",
		 (void *)id->verbs, (void *)id->pd);
	CM_CHECK_INT(ntohs(rdma_get_dst_port(id)), p->port,
		     "active's destination port");
	CM_CHECK(rdma_get_src_port(id) != 0, "active's source port is 0");
	CM_CHECK(is_lo(rdma_get_local_addr(id)),
		 "source address towards 127.0.0.1 is not 127.0.0.1");
	CM_REQUIRE(!rdma_resolve_route(id, 2000), "rdma_resolve_route: %s",
		   cm_errname(errno));
	ev = cm_expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	CM_REQUIRE(ev, "no ROUTE_RESOLVED");
	rdma_ack_cm_event(ev);
	CM_CHECK(id->route.num_paths == 1 && id->route.path_rec,
		 "route: %d paths", id->route.num_paths);
	CM_REQUIRE(!ibv_query_device(id->verbs, &da), "ibv_query_device");
	CM_REQUIRE(da.max_qp_rd_atom >= 2 && da.max_qp_init_rd_atom >= 2,
		   "device read depths %d/%d too small for this test",
		   da.max_qp_rd_atom, da.max_qp_init_rd_atom);

	cm_qp_init_attr(&qa, IBV_QPT_RC);
	CM_REQUIRE(!rdma_create_qp(id, NULL, &qa), "rdma_create_qp: %s",
		   cm_errname(errno));
	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_INIT,
		     "active QP after rdma_create_qp");
	CM_CHECK(!rdma_set_option(id, RDMA_OPTION_ID,
				  RDMA_OPTION_ID_ACK_TIMEOUT, &timeout,
				  sizeof(timeout)),
		 "set ACK_TIMEOUT: %s", cm_errname(errno));
	buf = calloc(1, BUF_LEN);
	CM_REQUIRE(buf, "calloc");
	mr = rdma_reg_msgs(id, buf, BUF_LEN);
	CM_REQUIRE(mr, "rdma_reg_msgs: %s", cm_errname(errno));

	memset(&req, 0, sizeof(req));
	req.magic = REQ_MAGIC;
	req.qpn = id->qp->qp_num;
	req.sport = ntohs(rdma_get_src_port(id));
	memset(req.fill, 0xa5, sizeof(req.fill));
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &req;
	cp.private_data_len = sizeof(req);
	cp.responder_resources = 2;
	cp.initiator_depth = 1;
	cp.retry_count = 6;
	cp.rnr_retry_count = 5;
	CM_REQUIRE(!rdma_connect(id, &cp), "rdma_connect: %s",
		   cm_errname(errno));
	ev = cm_expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, 0);
	CM_REQUIRE(ev, "active: no ESTABLISHED");
	c = &ev->param.conn;
	memset(&rep, 0, sizeof(rep));
	if (c->private_data)
		memcpy(&rep, c->private_data, sizeof(rep));
	CM_CHECK_INT(c->private_data_len, 196, "REP private data length");
	CM_CHECK(c->private_data && rep.magic == REP_MAGIC &&
			 all_bytes(rep.fill, 0x5a, sizeof(rep.fill)) &&
			 all_bytes((const uint8_t *)c->private_data +
					   sizeof(rep),
				   0, 196 - sizeof(rep)),
		 "REP private data is not the 40 bytes sent plus zeros");
	CM_CHECK_INT(c->qp_num, rep.qpn, "ESTABLISHED qp_num");
	CM_CHECK_INT(c->responder_resources, 2,
		     "ESTABLISHED responder_resources");
	CM_CHECK_INT(c->initiator_depth, 1, "ESTABLISHED initiator_depth");
	rdma_ack_cm_event(ev);

	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_RTS, "active QP");
	if (CM_CHECK(!query_conn(id->qp, &qattr), "ibv_query_qp")) {
		CM_CHECK_INT(qattr.dest_qp_num, rep.qpn, "active dest_qp_num");
		CM_CHECK_INT(qattr.timeout, 18, "active QP timeout (option)");
		CM_CHECK_INT(qattr.max_rd_atomic, 1, "active max_rd_atomic");
		CM_CHECK_INT(qattr.max_dest_rd_atomic, 2,
			     "active max_dest_rd_atomic");
		CM_CHECK_INT(qattr.retry_cnt, 6, "active retry_cnt");
		CM_CHECK_INT(qattr.rnr_retry, 7,
			     "active rnr_retry (the passive's choice)");
	}
	memset(&qattr, 0, sizeof(qattr));
	qattr.qp_state = IBV_QPS_RTS;
	if (CM_CHECK(!rdma_init_qp_attr(id, &qattr, &mask),
		     "rdma_init_qp_attr(RTS): %s", cm_errname(errno)))
		CM_CHECK(qattr.timeout == 18 && (mask & IBV_QP_TIMEOUT),
			 "rdma_init_qp_attr(RTS): timeout %u mask %#x",
			 qattr.timeout, mask);

	memcpy(buf + OFF_SEND, "ping from active", 16);
	CM_CHECK(!rdma_post_send(id, (void *)2, buf + OFF_SEND, 16, mr,
				 IBV_SEND_SIGNALED),
		 "rdma_post_send");
	cm_expect_wc(id->send_cq, IBV_WC_SUCCESS, IBV_WC_SEND, NULL,
		     "active SEND");
	memset(buf, 'W', XFER);
	CM_CHECK(!rdma_post_write(id, (void *)3, buf, XFER, mr,
				  IBV_SEND_SIGNALED, rep.addr + OFF_WRITE,
				  rep.rkey),
		 "rdma_post_write");
	cm_expect_wc(id->send_cq, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL,
		     "active RDMA WRITE");
	CM_CHECK(!rdma_post_read(id, (void *)4, buf + 512, XFER, mr,
				 IBV_SEND_SIGNALED, rep.addr + OFF_READ,
				 rep.rkey),
		 "rdma_post_read");
	if (cm_expect_wc(id->send_cq, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, NULL,
			 "active RDMA READ"))
		CM_CHECK(all_bytes(buf + 512, 'R', XFER),
			 "RDMA READ brought the wrong bytes");
	CM_REQUIRE(!cm_send_byte(p->fd[1], 'W'), "signal 'written'");

	CM_CHECK(!rdma_disconnect(id), "rdma_disconnect: %s",
		 cm_errname(errno));
	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_ERR,
		     "active QP after rdma_disconnect");
	ev = cm_expect_event(ch, RDMA_CM_EVENT_DISCONNECTED, 0);
	if (ev) {
		CM_CHECK(ev->id == id, "DISCONNECTED on another id");
		rdma_ack_cm_event(ev);
	}
	CM_CHECK(!rdma_dereg_mr(mr), "rdma_dereg_mr");
	free(buf);
	rdma_destroy_qp(id);
	CM_CHECK(!rdma_destroy_id(id), "destroy the active id");
	rdma_destroy_event_channel(ch);
	return 0;
}

static void test_cm_rc_threads(void **state)
{
	struct cm_pair p = {.passive = rc_passive, .active = rc_active};

	cm_watchdog(30);
	p.port = new_port();
	cm_run_pair(&p, CM_THREADS);
	cm_done();
}

static void test_cm_rc_fork(void **state)
{
	struct cm_pair p = {.passive = rc_passive, .active = rc_active};

	cm_watchdog(30);
	p.port = new_port();
	cm_run_pair(&p, CM_FORK);
	cm_done();
}

/* ---- synchronous API, as rdma_server and rdma_client use it ------------- */

static int sync_disconnect(struct cm_pair *p, struct rdma_cm_id *id, int fd,
			   bool first)
{
	if (!first)
		CM_REQUIRE(cm_recv_byte(fd, CM_EV_MS) == 'D',
			   "the peer did not disconnect");
	CM_CHECK(!rdma_disconnect(id), "sync rdma_disconnect (%s): %s",
		 first ? "first" : "second", cm_errname(errno));
	/* librdmacm's ucma_complete(): the call consumes DISCONNECTED. */
	CM_CHECK(id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED,
		 "id->event after the %s sync rdma_disconnect: %s",
		 first ? "first" : "second",
		 id->event ? rdma_event_str(id->event->event) : "NULL");
	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_ERR,
		     "QP after sync rdma_disconnect");
	if (first)
		CM_REQUIRE(!cm_send_byte(fd, 'D'), "signal 'disconnected'");
	return 0;
}

static int sync_server(struct cm_pair *p)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct rdma_cm_id *listen, *id;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param cp;
	char smsg[16] = "pong from server";
	uint8_t rmsg[16];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char port[8];
	int ret;

	snprintf(port, sizeof(port), "%d", p->port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	CM_REQUIRE(!rdma_getaddrinfo(NULL, port, &hints, &res),
		   "rdma_getaddrinfo(passive): %s", cm_errname(errno));
	cm_qp_init_attr(&attr, IBV_QPT_RC);
	attr.sq_sig_all = 1;
	CM_REQUIRE(!rdma_create_ep(&listen, res, NULL, &attr),
		   "rdma_create_ep(passive): %s", cm_errname(errno));
	rdma_freeaddrinfo(res);
	CM_REQUIRE(!rdma_listen(listen, 0), "rdma_listen: %s",
		   cm_errname(errno));
	CM_REQUIRE(!cm_send_byte(p->fd[0], 'L'), "signal 'listening'");
	CM_REQUIRE(cm_wait_readable(listen->channel->fd, CM_EV_MS),
		   "no connection request within %d ms", CM_EV_MS);
	CM_REQUIRE(!rdma_get_request(listen, &id), "rdma_get_request: %s",
		   cm_errname(errno));
	CM_CHECK(id->qp && id->send_cq && id->recv_cq,
		 "rdma_get_request made no QP/CQs from the endpoint's attr");
	if (CM_CHECK(id->event &&
			     id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST,
		     "id->event after rdma_get_request"))
		CM_CHECK(cm_pdata_is(id->event->param.conn.private_data,
				     id->event->param.conn.private_data_len,
				     "sync-req", 8, 56),
			 "sync CONNECT_REQUEST private data");
	mr = rdma_reg_msgs(id, rmsg, sizeof(rmsg));
	CM_REQUIRE(mr, "rdma_reg_msgs: %s", cm_errname(errno));
	CM_REQUIRE(!rdma_post_recv(id, NULL, rmsg, sizeof(rmsg), mr),
		   "rdma_post_recv");
	memset(&cp, 0, sizeof(cp));
	cp.private_data = "sync-rep";
	cp.private_data_len = 8;
	CM_REQUIRE(!rdma_accept(id, &cp), "sync rdma_accept: %s",
		   cm_errname(errno));
	CM_CHECK(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED,
		 "id->event after a sync rdma_accept: %s",
		 id->event ? rdma_event_str(id->event->event) : "NULL");
	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_RTS, "server QP");

	ret = rdma_get_recv_comp(id, &wc);
	CM_CHECK(ret == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 16,
		 "rdma_get_recv_comp: %d status %d len %u", ret, wc.status,
		 wc.byte_len);
	CM_CHECK(!memcmp(rmsg, "ping from client", 16), "server RECV data");
	CM_REQUIRE(!rdma_post_send(id, NULL, smsg, sizeof(smsg), NULL,
				   IBV_SEND_INLINE),
		   "rdma_post_send");
	ret = rdma_get_send_comp(id, &wc);
	CM_CHECK(ret == 1 && wc.status == IBV_WC_SUCCESS,
		 "rdma_get_send_comp: %d status %d", ret, wc.status);

	if (sync_disconnect(p, id, p->fd[0], p->passive_first))
		return -1;
	CM_CHECK(!rdma_dereg_mr(mr), "rdma_dereg_mr");
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen);
	return 0;
}

static int sync_client(struct cm_pair *p)
{
	struct rdma_addrinfo hints, *res = NULL;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param cp;
	struct rdma_cm_id *id;
	char smsg[16] = "ping from client";
	uint8_t rmsg[16];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char port[8];
	int ret;

	CM_REQUIRE(cm_recv_byte(p->fd[1], CM_EV_MS) == 'L',
		   "the server never listened");
	snprintf(port, sizeof(port), "%d", p->port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	CM_REQUIRE(!rdma_getaddrinfo("127.0.0.1", port, &hints, &res),
		   "rdma_getaddrinfo(active): %s", cm_errname(errno));
	cm_qp_init_attr(&attr, IBV_QPT_RC);
	attr.sq_sig_all = 1;
	CM_REQUIRE(!rdma_create_ep(&id, res, NULL, &attr),
		   "rdma_create_ep(active): %s", cm_errname(errno));
	rdma_freeaddrinfo(res);
	CM_CHECK(id->qp && id->verbs && id->send_cq && id->recv_cq,
		 "rdma_create_ep made no QP/CQs");
	mr = rdma_reg_msgs(id, rmsg, sizeof(rmsg));
	CM_REQUIRE(mr, "rdma_reg_msgs: %s", cm_errname(errno));
	CM_REQUIRE(!rdma_post_recv(id, NULL, rmsg, sizeof(rmsg), mr),
		   "rdma_post_recv");
	memset(&cp, 0, sizeof(cp));
	cp.private_data = "sync-req";
	cp.private_data_len = 8;
	CM_REQUIRE(!rdma_connect(id, &cp), "sync rdma_connect: %s",
		   cm_errname(errno));
	if (CM_CHECK(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED,
		     "id->event after a sync rdma_connect"))
		CM_CHECK(cm_pdata_is(id->event->param.conn.private_data,
				     id->event->param.conn.private_data_len,
				     "sync-rep", 8, 196),
			 "sync ESTABLISHED private data");
	CM_CHECK_INT(cm_qp_state(id->qp), IBV_QPS_RTS, "client QP");
	CM_REQUIRE(!rdma_post_send(id, NULL, smsg, sizeof(smsg), NULL,
				   IBV_SEND_INLINE),
		   "rdma_post_send");
	ret = rdma_get_send_comp(id, &wc);
	CM_CHECK(ret == 1 && wc.status == IBV_WC_SUCCESS,
		 "rdma_get_send_comp: %d status %d", ret, wc.status);
	ret = rdma_get_recv_comp(id, &wc);
	CM_CHECK(ret == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 16,
		 "rdma_get_recv_comp: %d status %d len %u", ret, wc.status,
		 wc.byte_len);
	CM_CHECK(!memcmp(rmsg, "pong from server", 16), "client RECV data");

	if (sync_disconnect(p, id, p->fd[1], !p->passive_first))
		return -1;
	CM_CHECK(!rdma_dereg_mr(mr), "rdma_dereg_mr");
	rdma_destroy_ep(id);
	return 0;
}

static void test_cm_sync_threads(void **state)
{
	struct cm_pair p = {.passive = sync_server, .active = sync_client};

	cm_watchdog(30);
	p.port = new_port();
	cm_run_pair(&p, CM_THREADS);
	cm_done();
}

static void test_cm_sync_fork_server_disconnects_first(void **state)
{
	struct cm_pair p = {.passive = sync_server,
			    .active = sync_client,
			    .passive_first = true};

	cm_watchdog(30);
	p.port = new_port();
	cm_run_pair(&p, CM_FORK);
	cm_done();
}

/* ---- reject and private-data limits (one process, async ids) ------------ */

static void test_cm_reject_private_data(void **state)
{
	struct rdma_cm_event *ev;
	uint8_t why[30], big[160];
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);

	memset(big, 0x77, sizeof(big));
	CM_CHECK_ERR(rdma_reject(d.child, big, 149), EINVAL,
		     "rdma_reject with 149 bytes of private data");
	memset(why, 0x3c, sizeof(why));
	CM_CHECK(!rdma_reject(d.child, why, sizeof(why)), "rdma_reject: %s",
		 cm_errname(errno));
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_REJECTED, 28);
	if (ev) {
		CM_CHECK(ev->id == d.act, "REJECTED on another id");
		CM_CHECK(cm_pdata_is(ev->param.conn.private_data,
				     ev->param.conn.private_data_len, why,
				     sizeof(why), 148),
			 "REJECTED private data: len %u, want the 30 bytes "
			 "sent padded to 148",
			 ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(d.lch, CM_QUIET_MS, "listener after rdma_reject");
	cm_expect_quiet(d.ach, CM_QUIET_MS, "active after REJECTED");
	errno = 0;
	CM_CHECK(rdma_accept(d.child, NULL) == -1 && errno,
		 "rdma_accept after rdma_reject did not fail");
	cm_duo_close(&d);
	cm_done();
}

static void test_cm_private_data_limits(void **state)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	uint8_t big[200];
	struct cm_duo d;
	unsigned int i;

	cm_watchdog(20);
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i + 1);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = big;
	cp.private_data_len = 57;
	CM_CHECK_ERR(rdma_connect(d.act, &cp), EINVAL,
		     "rdma_connect with 57 bytes of private data");
	cp.private_data = NULL;
	cp.private_data_len = 8;
	CM_CHECK_ERR(rdma_connect(d.act, &cp), EINVAL,
		     "rdma_connect with a length and no private data");
	cp.private_data = big;
	cp.private_data_len = 56;
	CM_CHECK(!rdma_connect(d.act, &cp), "rdma_connect with 56 bytes: %s",
		 cm_errname(errno));
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	CM_CHECK(cm_pdata_is(ev->param.conn.private_data,
			     ev->param.conn.private_data_len, big, 56, 56),
		 "56 bytes of REQ private data arrive whole");
	rdma_ack_cm_event(ev);
	cm_create_qp(d.child);
	cp.private_data_len = 197;
	CM_CHECK_ERR(rdma_accept(d.child, &cp), EINVAL,
		     "rdma_accept with 197 bytes of private data");
	cp.private_data_len = 196;
	CM_CHECK(!rdma_accept(d.child, &cp), "rdma_accept with 196 bytes: %s",
		 cm_errname(errno));
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev) {
		CM_CHECK(cm_pdata_is(ev->param.conn.private_data,
				     ev->param.conn.private_data_len, big, 196,
				     196),
			 "196 bytes of REP private data arrive whole");
		rdma_ack_cm_event(ev);
	}
	ev = cm_expect_event(d.lch, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	cm_duo_close(&d);
	cm_done();
}

/* ---- an external QP: CONNECT_RESPONSE, rdma_init_qp_attr, establish ----- */

static void test_cm_external_qp(void **state)
{
	struct ibv_qp_attr a, child_attr;
	struct ibv_qp_init_attr qia;
	struct rdma_conn_param cp;
	struct ibv_mr *mr, *cmr;
	struct rdma_cm_event *ev;
	char buf[64], cbuf[64];
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	struct cm_duo d;
	int mask;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);

	/* Before a connection: INIT without remote access, no RTR. */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	if (CM_CHECK(!rdma_init_qp_attr(d.act, &a, &mask),
		     "rdma_init_qp_attr(INIT) before connecting: %s",
		     cm_errname(errno)))
		CM_CHECK((mask & (IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) ==
					 (IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) &&
				 a.qp_access_flags == 0 && a.port_num == 1,
			 "INIT before connecting: mask %#x access %#x port %u",
			 mask, a.qp_access_flags, a.port_num);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CM_CHECK_ERR(rdma_init_qp_attr(d.act, &a, &mask), EINVAL,
		     "rdma_init_qp_attr(RTR) before the peer is known");
	CM_CHECK_ERR(rdma_establish(d.act), EINVAL,
		     "rdma_establish before connecting");

	cq = ibv_create_cq(d.act->verbs, 16, NULL, NULL, 0);
	assert_non_null(cq);
	memset(&qia, 0, sizeof(qia));
	qia.send_cq = cq;
	qia.recv_cq = cq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = 4;
	qia.cap.max_recv_wr = 4;
	qia.cap.max_send_sge = 1;
	qia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(d.act->pd, &qia);
	assert_non_null(qp);
	mr = ibv_reg_mr(d.act->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);

	memset(&cp, 0, sizeof(cp));
	cp.qp_num = qp->qp_num;
	cp.private_data = "external";
	cp.private_data_len = 8;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	assert_int_equal(rdma_connect(d.act, &cp), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	CM_CHECK_INT(ev->param.conn.qp_num, qp->qp_num,
		     "CONNECT_REQUEST qp_num = conn_param.qp_num");
	rdma_ack_cm_event(ev);
	cm_create_qp(d.child);
	cmr = ibv_reg_mr(d.child->pd, cbuf, sizeof(cbuf),
			 IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(cmr);
	assert_int_equal(rdma_post_recv(d.child, NULL, cbuf, sizeof(cbuf), cmr),
			 0);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = "ext-rep";
	cp.private_data_len = 7;
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	assert_int_equal(rdma_accept(d.child, &cp), 0);

	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	if (ev) {
		CM_CHECK(cm_pdata_is(ev->param.conn.private_data,
				     ev->param.conn.private_data_len, "ext-rep",
				     7, 196),
			 "CONNECT_RESPONSE private data");
		CM_CHECK_INT(ev->param.conn.qp_num, d.child->qp->qp_num,
			     "CONNECT_RESPONSE qp_num");
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(d.lch, CM_QUIET_MS, "passive before rdma_establish");
	CM_CHECK_INT(cm_qp_state(qp), IBV_QPS_RESET,
		     "the library touched a QP it does not own");
	assert_int_equal(query_conn(d.child->qp, &child_attr), 0);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	CM_CHECK(!rdma_init_qp_attr(d.act, &a, &mask), "init_qp_attr(INIT)");
	CM_CHECK((a.qp_access_flags &
		  (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)) ==
			 (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
		 "INIT once connected: access %#x", a.qp_access_flags);
	CM_CHECK(!ibv_modify_qp(qp, &a, mask), "modify to INIT, mask %#x",
		 mask);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CM_CHECK(!rdma_init_qp_attr(d.act, &a, &mask), "init_qp_attr(RTR)");
	CM_CHECK_INT(a.dest_qp_num, d.child->qp->qp_num, "RTR dest_qp_num");
	CM_CHECK_INT(a.rq_psn, child_attr.sq_psn,
		     "RTR rq_psn = the passive's sq_psn");
	CM_CHECK(!ibv_modify_qp(qp, &a, mask), "modify to RTR, mask %#x", mask);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CM_CHECK(!rdma_init_qp_attr(d.act, &a, &mask), "init_qp_attr(RTS)");
	CM_CHECK_INT(a.sq_psn, child_attr.rq_psn,
		     "RTS sq_psn = the passive's rq_psn");
	CM_CHECK(!ibv_modify_qp(qp, &a, mask), "modify to RTS, mask %#x", mask);
	CM_CHECK_INT(cm_qp_state(qp), IBV_QPS_RTS, "external QP");

	CM_CHECK(!rdma_establish(d.act), "rdma_establish: %s",
		 cm_errname(errno));
	ev = cm_expect_event(d.lch, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev) {
		CM_CHECK(ev->id == d.child, "ESTABLISHED on another id");
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(d.ach, CM_QUIET_MS,
			"active after rdma_establish (no second event)");
	CM_CHECK_ERR(rdma_establish(d.act), EINVAL, "second rdma_establish");

	memcpy(buf, "over an external", 16);
	CM_CHECK(!post_send(qp, buf, 16, mr->lkey), "post SEND");
	cm_expect_wc(cq, IBV_WC_SUCCESS, IBV_WC_SEND, NULL, "external SEND");
	if (cm_expect_wc(d.child->recv_cq, IBV_WC_SUCCESS, IBV_WC_RECV, &wc,
			 "RECV of the external QP's SEND"))
		CM_CHECK(wc.byte_len == 16 && !memcmp(cbuf, buf, 16),
			 "RECV data");

	CM_CHECK(!rdma_disconnect(d.act), "rdma_disconnect: %s",
		 cm_errname(errno));
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_DISCONNECTED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	ev = cm_expect_event(d.lch, RDMA_CM_EVENT_DISCONNECTED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(cmr);
	cm_duo_close(&d);
	cm_done();
}

/* ---- UD: SIDR, then a SEND through the AH from the event ---------------- */

static uint32_t qp_qkey(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_QKEY, &ia))
		return 0;
	return a.qkey;
}

static void test_cm_ud(void **state)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct rdma_conn_param cp;
	struct ibv_mr *mr, *cmr;
	struct rdma_cm_event *ev;
	uint32_t rqpn = 0, rqkey = 0;
	struct ibv_ah *ah = NULL;
	char buf[64], cbuf[40 + 64];
	struct ibv_wc wc;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_UDP);
	CM_CHECK_INT(d.listen->qp_type, IBV_QPT_UD, "RDMA_PS_UDP id qp_type");
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	CM_CHECK_INT(cm_qp_state(d.act->qp), IBV_QPS_RTS,
		     "UD QP after rdma_create_qp");
	CM_CHECK_INT(qp_qkey(d.act->qp), RDMA_UDP_QKEY, "UD QP qkey");

	memset(&cp, 0, sizeof(cp));
	cp.private_data = "ud-req";
	cp.private_data_len = 6;
	assert_int_equal(rdma_connect(d.act, &cp), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	CM_CHECK(d.child->qp_type == IBV_QPT_UD && d.child->ps == RDMA_PS_UDP,
		 "UD request: child qp_type %d ps %d", d.child->qp_type,
		 d.child->ps);
	CM_CHECK(cm_pdata_is(ev->param.ud.private_data,
			     ev->param.ud.private_data_len, "ud-req", 6, 180),
		 "SIDR request private data: len %u, want 6 bytes padded to "
		 "180",
		 ev->param.ud.private_data_len);
	rdma_ack_cm_event(ev);
	cm_create_qp(d.child);
	CM_CHECK_INT(qp_qkey(d.child->qp), RDMA_UDP_QKEY, "passive UD qkey");
	cmr = ibv_reg_mr(d.child->pd, cbuf, sizeof(cbuf),
			 IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(cmr);
	assert_int_equal(rdma_post_recv(d.child, NULL, cbuf, sizeof(cbuf), cmr),
			 0);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = "ud-rep";
	cp.private_data_len = 6;
	assert_int_equal(rdma_accept(d.child, &cp), 0);

	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev) {
		rqpn = ev->param.ud.qp_num;
		rqkey = ev->param.ud.qkey;
		CM_CHECK_INT(rqpn, d.child->qp->qp_num,
			     "ESTABLISHED ud.qp_num");
		CM_CHECK_INT(rqkey, RDMA_UDP_QKEY, "ESTABLISHED ud.qkey");
		CM_CHECK(cm_pdata_is(ev->param.ud.private_data,
				     ev->param.ud.private_data_len, "ud-rep", 6,
				     136),
			 "SIDR reply private data: len %u, want 6 bytes "
			 "padded to 136",
			 ev->param.ud.private_data_len);
		ah = ibv_create_ah(d.act->pd, &ev->param.ud.ah_attr);
		CM_CHECK(ah, "ibv_create_ah(ud.ah_attr): %s",
			 cm_errname(errno));
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(d.lch, CM_QUIET_MS,
			"UD passive after accept (SIDR has no ESTABLISHED)");

	mr = ibv_reg_mr(d.act->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	if (ah) {
		memcpy(buf, "UD datagram over the cm's AH 32b", 32);
		sge.addr = (uintptr_t)buf;
		sge.length = 32;
		sge.lkey = mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = rqpn;
		wr.wr.ud.remote_qkey = rqkey;
		CM_CHECK(!ibv_post_send(d.act->qp, &wr, &bad), "UD post_send");
		cm_expect_wc(d.act->send_cq, IBV_WC_SUCCESS, IBV_WC_SEND, NULL,
			     "UD SEND");
		if (cm_expect_wc(d.child->recv_cq, IBV_WC_SUCCESS, IBV_WC_RECV,
				 &wc, "UD RECV")) {
			CM_CHECK_INT(wc.byte_len, 40 + 32,
				     "UD RECV byte_len (GRH + payload)");
			CM_CHECK_INT(wc.src_qp, d.act->qp->qp_num,
				     "UD RECV src_qp");
			CM_CHECK(!memcmp(cbuf + 40, buf, 32), "UD RECV data");
		}
		ibv_destroy_ah(ah);
	}
	ibv_dereg_mr(mr);
	ibv_dereg_mr(cmr);
	cm_duo_close(&d);
	cm_done();
}

/* UD reject: UNREACHABLE with the SIDR status "rejected" (2) and the data. */
static void test_cm_ud_reject(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_UDP);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	CM_CHECK_ERR(rdma_reject(d.child, "x", 137), EINVAL,
		     "UD rdma_reject with 137 bytes of private data");
	CM_CHECK(!rdma_reject(d.child, "go away", 7), "UD rdma_reject: %s",
		 cm_errname(errno));
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_UNREACHABLE, 2);
	if (ev) {
		CM_CHECK(cm_pdata_is(ev->param.ud.private_data,
				     ev->param.ud.private_data_len, "go away",
				     7, 136),
			 "UD reject private data: len %u",
			 ev->param.ud.private_data_len);
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(d.lch, CM_QUIET_MS, "UD listener after rdma_reject");
	cm_duo_close(&d);
	cm_done();
}

/* Both sides call rdma_disconnect at once: one DISCONNECTED each. */
static void test_cm_disconnect_crossing(void **state)
{
	struct rdma_cm_event *ev;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	if (cm_duo_connect(&d)) {
		CM_CHECK(!rdma_disconnect(d.act), "active rdma_disconnect: %s",
			 cm_errname(errno));
		CM_CHECK(!rdma_disconnect(d.child),
			 "passive rdma_disconnect: %s", cm_errname(errno));
		ev = cm_expect_event(d.ach, RDMA_CM_EVENT_DISCONNECTED, 0);
		if (ev)
			rdma_ack_cm_event(ev);
		ev = cm_expect_event(d.lch, RDMA_CM_EVENT_DISCONNECTED, 0);
		if (ev)
			rdma_ack_cm_event(ev);
		cm_expect_quiet(d.ach, CM_QUIET_MS, "active, crossing DREQs");
		cm_expect_quiet(d.lch, 50, "passive, crossing DREQs");
		CM_CHECK_INT(cm_qp_state(d.act->qp), IBV_QPS_ERR, "active QP");
		CM_CHECK_INT(cm_qp_state(d.child->qp), IBV_QPS_ERR,
			     "passive QP");
	}
	cm_duo_close(&d);
	cm_done();
}

/* RC over ::1. */
static void test_cm_ipv6_loopback(void **state)
{
	struct sockaddr_in6 sin6;
	struct rdma_cm_event *ev;
	struct cm_duo d;
	int fd;

	cm_watchdog(20);
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_addr = in6addr_loopback;
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin6, sizeof(sin6))) {
		if (fd >= 0)
			close(fd);
		printf("[ SKIP     ] no ::1 on this machine\n");
		skip();
	}
	close(fd);
	memset(&d, 0, sizeof(d));
	d.port = new_port();
	d.ps = RDMA_PS_TCP;
	sin6.sin6_port = htons((uint16_t)d.port);
	d.lch = rdma_create_event_channel();
	d.ach = rdma_create_event_channel();
	assert_true(d.lch && d.ach);
	assert_int_equal(rdma_create_id(d.lch, &d.listen, NULL, RDMA_PS_TCP),
			 0);
	assert_int_equal(rdma_bind_addr(d.listen, (struct sockaddr *)&sin6), 0);
	assert_int_equal(rdma_listen(d.listen, 4), 0);
	assert_int_equal(rdma_create_id(d.ach, &d.act, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
		rdma_resolve_addr(d.act, NULL, (struct sockaddr *)&sin6, 2000),
		0);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	CM_CHECK(rdma_get_local_addr(d.act)->sa_family == AF_INET6 &&
			 IN6_IS_ADDR_LOOPBACK(
				 &d.act->route.addr.src_sin6.sin6_addr),
		 "IPv6 source address is not ::1");
	CM_CHECK_INT(ntohs(rdma_get_dst_port(d.act)), d.port,
		     "IPv6 destination port");
	CM_CHECK(rdma_get_src_port(d.act) != 0, "IPv6 source port is 0");
	assert_int_equal(rdma_resolve_route(d.act, 2000), 0);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	if (CM_CHECK(cm_duo_connect(&d), "RC connection over ::1")) {
		CM_CHECK(rdma_get_peer_addr(d.child)->sa_family == AF_INET6,
			 "the new id's peer address is not IPv6");
		CM_CHECK_INT(rdma_get_dst_port(d.child),
			     rdma_get_src_port(d.act),
			     "IPv6 new id's destination port");
	}
	cm_duo_close(&d);
	cm_done();
}

/* ---- rdma_migrate_id ---------------------------------------------------- */

static void test_cm_migrate_id(void **state)
{
	struct rdma_event_channel *a, *b;
	struct sockaddr_in sin = cm_lo(new_port());
	struct rdma_cm_id *x, *y;
	struct rdma_cm_event *ev;

	cm_watchdog(20);
	a = rdma_create_event_channel();
	b = rdma_create_event_channel();
	assert_true(a && b);
	assert_int_equal(rdma_create_id(a, &x, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_create_id(a, &y, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
		rdma_resolve_addr(x, NULL, (struct sockaddr *)&sin, 2000), 0);
	assert_int_equal(
		rdma_resolve_addr(y, NULL, (struct sockaddr *)&sin, 2000), 0);
	CM_CHECK(cm_wait_readable(a->fd, CM_EV_MS), "no events on A");

	/* x's queued ADDR_RESOLVED follows it; y's stays. */
	CM_CHECK(!rdma_migrate_id(x, b), "rdma_migrate_id(x, B): %s",
		 cm_errname(errno));
	CM_CHECK(x->channel == b, "x->channel is not B after migrating");
	ev = cm_expect_event(b, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (ev) {
		CM_CHECK(ev->id == x, "B delivered an event of another id");
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(b, 50, "B after x's one event");
	ev = cm_expect_event(a, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (ev) {
		CM_CHECK(ev->id == y, "A delivered an event of another id");
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(a, 50, "A after y's event");

	/* New events of x arrive on B. */
	assert_int_equal(rdma_resolve_route(x, 2000), 0);
	ev = cm_expect_event(b, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (ev) {
		CM_CHECK(ev->id == x, "ROUTE_RESOLVED of another id on B");
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(a, 50, "A after x's route was resolved");

	/* Migrating to NULL makes y synchronous. */
	CM_CHECK(!rdma_migrate_id(y, NULL), "rdma_migrate_id(y, NULL): %s",
		 cm_errname(errno));
	CM_CHECK(!rdma_resolve_route(y, 2000),
		 "sync rdma_resolve_route after migrating to NULL: %s",
		 cm_errname(errno));
	CM_CHECK(y->event && y->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED,
		 "y->event after a sync rdma_resolve_route");
	cm_expect_quiet(a, 50, "A after y went synchronous");

	CM_CHECK(!rdma_destroy_id(x), "destroy x");
	CM_CHECK(!rdma_destroy_id(y), "destroy y");
	rdma_destroy_event_channel(a);
	rdma_destroy_event_channel(b);
	cm_done();
}

/*
 * Migrating a listener takes its pending connection requests along: real
 * librdmacm reports CONNECT_REQUEST on the listener's channel (the kernel
 * moves every queued event of the listener, requests included).
 */
static void test_cm_migrate_listener(void **state)
{
	struct rdma_event_channel *b;
	struct rdma_cm_event *ev;
	struct cm_duo d;

	cm_watchdog(20);
	b = rdma_create_event_channel();
	assert_non_null(b);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	CM_CHECK(cm_wait_readable(d.lch->fd, CM_EV_MS), "no request queued");
	CM_CHECK(!rdma_migrate_id(d.listen, b), "migrate the listener: %s",
		 cm_errname(errno));
	ev = cm_wait_event(b, 2000);
	if (ev) {
		CM_CHECK(ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
				 ev->listen_id == d.listen,
			 "migrated listener: %s on the new channel",
			 rdma_event_str(ev->event));
	} else {
		ev = cm_wait_event(d.lch, 0);
		CM_CHECK(false, "migrated listener: the queued request %s",
			 ev ? "stayed on the old channel" : "vanished");
	}
	if (ev) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			d.child = ev->id;
		rdma_ack_cm_event(ev);
	}
	cm_expect_quiet(d.lch, 50, "the listener's old channel");
	if (d.child) {
		CM_CHECK(!rdma_reject(d.child, NULL, 0), "rdma_reject");
		ev = cm_expect_event(d.ach, RDMA_CM_EVENT_REJECTED, 28);
		if (ev)
			rdma_ack_cm_event(ev);
	}
	cm_duo_close(&d);
	rdma_destroy_event_channel(b);
	cm_done();
}

/* ---- the channel fd: O_NONBLOCK, poll, epoll, blocking get -------------- */

static void *resolve_route_later(void *arg)
{
	usleep(100 * 1000);
	if (rdma_resolve_route(arg, 2000))
		cm_report(__FILE__, __LINE__, "rdma_resolve_route: %s",
			  cm_errname(errno));
	return NULL;
}

static void test_cm_channel_fd(void **state)
{
	struct sockaddr_in sin = cm_lo(new_port());
	struct rdma_cm_event *ev, *ev2;
	struct rdma_event_channel *ch;
	struct epoll_event ee = {.events = EPOLLIN};
	struct rdma_cm_id *x, *y;
	pthread_t thr;
	int fl, ep;

	cm_watchdog(20);
	ch = rdma_create_event_channel();
	assert_non_null(ch);
	fl = fcntl(ch->fd, F_GETFL);
	assert_true(fl >= 0);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	CM_CHECK_ERR(rdma_get_cm_event(ch, &ev), EAGAIN,
		     "rdma_get_cm_event on an empty O_NONBLOCK channel");
	CM_CHECK(!cm_wait_readable(ch->fd, 0), "empty channel is readable");

	assert_int_equal(rdma_create_id(ch, &x, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_create_id(ch, &y, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
		rdma_resolve_addr(x, NULL, (struct sockaddr *)&sin, 2000), 0);
	assert_int_equal(
		rdma_resolve_addr(y, NULL, (struct sockaddr *)&sin, 2000), 0);
	CM_CHECK(cm_wait_readable(ch->fd, CM_EV_MS),
		 "channel with events is not readable");
	ev = ev2 = NULL;
	CM_CHECK(!rdma_get_cm_event(ch, &ev), "first event: %s",
		 cm_errname(errno));
	CM_CHECK(cm_wait_readable(ch->fd, 0),
		 "channel with one more event is not readable");
	CM_CHECK(!rdma_get_cm_event(ch, &ev2), "second event: %s",
		 cm_errname(errno));
	CM_CHECK(ev && ev2 && ev->id == x && ev2->id == y,
		 "events out of order");
	if (ev)
		rdma_ack_cm_event(ev);
	if (ev2)
		rdma_ack_cm_event(ev2);
	CM_CHECK(!cm_wait_readable(ch->fd, 0), "drained channel is readable");
	CM_CHECK_ERR(rdma_get_cm_event(ch, &ev), EAGAIN,
		     "rdma_get_cm_event on a drained O_NONBLOCK channel");

	/* epoll, level-triggered. */
	ep = epoll_create1(EPOLL_CLOEXEC);
	assert_true(ep >= 0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ee), 0);
	CM_CHECK_INT(epoll_wait(ep, &ee, 1, 0), 0, "epoll on an empty channel");
	assert_int_equal(rdma_resolve_route(x, 2000), 0);
	CM_CHECK_INT(epoll_wait(ep, &ee, 1, CM_EV_MS), 1,
		     "epoll on a channel with an event");
	CM_CHECK_INT(epoll_wait(ep, &ee, 1, 0), 1,
		     "epoll again before the event was taken");
	ev = NULL;
	CM_CHECK(!rdma_get_cm_event(ch, &ev), "ROUTE_RESOLVED: %s",
		 cm_errname(errno));
	if (ev)
		rdma_ack_cm_event(ev);
	CM_CHECK_INT(epoll_wait(ep, &ee, 1, 0), 0,
		     "epoll after the event was taken");
	close(ep);

	/* Blocking again: rdma_get_cm_event waits for the event. */
	assert_int_equal(fcntl(ch->fd, F_SETFL, fl & ~O_NONBLOCK), 0);
	assert_int_equal(pthread_create(&thr, NULL, resolve_route_later, y), 0);
	ev = NULL;
	CM_CHECK(!rdma_get_cm_event(ch, &ev), "blocking rdma_get_cm_event: %s",
		 cm_errname(errno));
	CM_CHECK(ev && ev->id == y && ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED,
		 "blocking get returned the wrong event");
	if (ev)
		rdma_ack_cm_event(ev);
	pthread_join(thr, NULL);

	CM_CHECK(!rdma_destroy_id(x), "destroy x");
	CM_CHECK(!rdma_destroy_id(y), "destroy y");
	rdma_destroy_event_channel(ch);
	cm_done();
}

/* ---- ports and addresses ------------------------------------------------ */

static void test_cm_ports(void **state)
{
	struct sockaddr_in any = cm_lo(0), src, dst;
	struct rdma_cm_id *tmp, *act2, *child2;
	struct rdma_cm_event *ev;
	struct cm_duo d;
	int port = new_port(), src_port;

	cm_watchdog(20);
	assert_int_equal(rdma_create_id(NULL, &tmp, NULL, RDMA_PS_TCP), 0);
	CM_CHECK(!rdma_get_src_port(tmp) && !rdma_get_dst_port(tmp),
		 "ports of a fresh id are not 0");
	assert_int_equal(rdma_bind_addr(tmp, (struct sockaddr *)&any), 0);
	CM_CHECK(rdma_get_src_port(tmp) != 0,
		 "binding port 0 did not assign a port");
	CM_CHECK(!rdma_get_dst_port(tmp), "bound id has a destination port");
	rdma_destroy_id(tmp);

	cm_duo_listen(&d, port, RDMA_PS_TCP);
	CM_CHECK_INT(ntohs(rdma_get_src_port(d.listen)), port,
		     "listener source port");
	CM_CHECK_INT(rdma_get_dst_port(d.listen), 0,
		     "listener destination port");
	cm_duo_resolve(&d);
	CM_CHECK_INT(ntohs(rdma_get_dst_port(d.act)), port,
		     "active destination port");
	CM_CHECK(rdma_get_src_port(d.act) != 0, "active source port is 0");
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	CM_CHECK_INT(ntohs(rdma_get_src_port(d.child)), port,
		     "new id's source port");
	CM_CHECK_INT(rdma_get_dst_port(d.child), rdma_get_src_port(d.act),
		     "new id's destination port = active's source port");
	CM_CHECK(is_lo(rdma_get_local_addr(d.child)) &&
			 is_lo(rdma_get_peer_addr(d.child)),
		 "new id's addresses");
	CM_CHECK(d.child->pd == d.act->pd && d.child->verbs == d.act->verbs,
		 "ids of one process share the device's verbs and PD");
	rdma_ack_cm_event(ev);
	CM_CHECK(!rdma_reject(d.child, NULL, 0), "rdma_reject");
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_REJECTED, 28);
	if (ev)
		rdma_ack_cm_event(ev);

	/* A source address with a port: the connection comes from it. */
	src_port = new_port();
	src = cm_lo(src_port);
	dst = cm_lo(port);
	assert_int_equal(rdma_create_id(d.ach, &act2, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(act2, (struct sockaddr *)&src,
					   (struct sockaddr *)&dst, 2000),
			 0);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	CM_CHECK_INT(ntohs(rdma_get_src_port(act2)), src_port,
		     "source port given to rdma_resolve_addr");
	assert_int_equal(rdma_resolve_route(act2, 2000), 0);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	assert_int_equal(rdma_connect(act2, NULL), 0);
	ev = cm_expect_event(d.lch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (ev) {
		CM_CHECK_INT(
			ntohs(rdma_get_dst_port(ev->id)), src_port,
			"new id's destination port = the given source port");
		child2 = ev->id;
		rdma_ack_cm_event(ev);
		CM_CHECK(!rdma_reject(child2, NULL, 0), "rdma_reject");
		ev = cm_expect_event(d.ach, RDMA_CM_EVENT_REJECTED, 28);
		if (ev)
			rdma_ack_cm_event(ev);
		rdma_destroy_id(child2);
	}
	rdma_destroy_id(act2);
	cm_duo_close(&d);
	cm_done();
}

/*
 * A port an id has bound is reserved (rdma_bind_addr.3: EADDRINUSE), as
 * rdma_cm reserves it whether or not the id listens.
 */
static void test_cm_bind_port_in_use(void **state)
{
	struct sockaddr_in sin = cm_lo(new_port());
	struct rdma_cm_id *a, *b, *c;

	cm_watchdog(20);
	assert_int_equal(rdma_create_id(NULL, &a, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_create_id(NULL, &b, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_create_id(NULL, &c, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(a, (struct sockaddr *)&sin), 0);
	CM_CHECK_ERR(rdma_bind_addr(b, (struct sockaddr *)&sin), EADDRINUSE,
		     "binding the port of a bound (not listening) id");
	CM_CHECK(!rdma_listen(a, 1), "rdma_listen: %s", cm_errname(errno));
	CM_CHECK_ERR(rdma_bind_addr(c, (struct sockaddr *)&sin), EADDRINUSE,
		     "binding the port of a listening id");
	rdma_destroy_id(c);
	rdma_destroy_id(b);
	rdma_destroy_id(a);
	cm_done();
}

/* ---- RDMA_OPTION_ID_ACK_TIMEOUT ----------------------------------------- */

static uint8_t rts_timeout(struct rdma_cm_id *id)
{
	struct ibv_qp_attr a;
	int mask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(id, &a, &mask) || !(mask & IBV_QP_TIMEOUT))
		return 0xff;
	return a.timeout;
}

static void test_cm_ack_timeout_option(void **state)
{
	struct rdma_cm_event *ev;
	struct ibv_qp_attr a;
	uint8_t t8 = 18, t_child = 16, t_late = 19;
	uint32_t t32 = 18;
	struct cm_duo d;

	cm_watchdog(20);
	cm_duo_listen(&d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&d);
	CM_CHECK_ERR(rdma_set_option(d.act, RDMA_OPTION_ID,
				     RDMA_OPTION_ID_ACK_TIMEOUT, &t32,
				     sizeof(t32)),
		     EINVAL, "ACK_TIMEOUT with optlen 4");
	CM_CHECK_ERR(rdma_set_option(d.act, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
				     &t32, sizeof(t32)),
		     EINVAL, "TOS with optlen 4");
	CM_CHECK_ERR(
		rdma_set_option(d.act, RDMA_OPTION_ID, 9999, &t8, sizeof(t8)),
		ENOSYS, "unknown option");
	CM_CHECK(!rdma_set_option(d.act, RDMA_OPTION_ID,
				  RDMA_OPTION_ID_ACK_TIMEOUT, &t8, sizeof(t8)),
		 "ACK_TIMEOUT 18: %s", cm_errname(errno));
	cm_create_qp(d.act);
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	ev = cm_duo_request(&d);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	CM_CHECK(!rdma_set_option(d.child, RDMA_OPTION_ID,
				  RDMA_OPTION_ID_ACK_TIMEOUT, &t_child,
				  sizeof(t_child)),
		 "ACK_TIMEOUT on the new id: %s", cm_errname(errno));
	cm_create_qp(d.child);
	assert_int_equal(rdma_accept(d.child, NULL), 0);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	ev = cm_expect_event(d.lch, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev)
		rdma_ack_cm_event(ev);

	CM_CHECK_INT(rts_timeout(d.act), 18,
		     "active init_qp_attr(RTS).timeout");
	CM_CHECK_INT(rts_timeout(d.child), 16,
		     "passive init_qp_attr(RTS).timeout");
	assert_int_equal(query_conn(d.act->qp, &a), 0);
	CM_CHECK_INT(a.timeout, 18, "active QP timeout");
	assert_int_equal(query_conn(d.child->qp, &a), 0);
	CM_CHECK_INT(a.timeout, 16, "passive QP timeout");
	CM_CHECK(!rdma_set_option(d.act, RDMA_OPTION_ID,
				  RDMA_OPTION_ID_ACK_TIMEOUT, &t_late,
				  sizeof(t_late)),
		 "ACK_TIMEOUT once connected: %s", cm_errname(errno));
	CM_CHECK_INT(rts_timeout(d.act), 19,
		     "init_qp_attr(RTS).timeout after a later option");
	cm_duo_close(&d);
	cm_done();
}

/* ---- rdma_get_devices --------------------------------------------------- */

static void test_cm_get_devices(void **state)
{
	struct sockaddr_in sin = cm_lo(new_port());
	struct ibv_context **list, **again;
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int n = -1;

	cm_watchdog(20);
	list = rdma_get_devices(&n);
	assert_non_null(list);
	CM_CHECK_INT(n, 1, "rdma_get_devices count");
	CM_CHECK(list[0] && !list[1], "list is not one context + NULL");
	if (list[0])
		CM_CHECK(
			!strcmp(ibv_get_device_name(list[0]->device), "srdma0"),
			"device is %s", ibv_get_device_name(list[0]->device));
	again = rdma_get_devices(NULL);
	CM_CHECK(again && again[0] == list[0],
		 "a second rdma_get_devices gives another context");

	ch = rdma_create_event_channel();
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	CM_CHECK(!id->verbs, "an unbound id has verbs");
	assert_int_equal(
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000), 0);
	ev = cm_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	CM_CHECK(id->verbs == list[0],
		 "id->verbs %p is not rdma_get_devices()[0] %p",
		 (void *)id->verbs, (void *)list[0]);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	rdma_free_devices(again);
	rdma_free_devices(list);
	cm_done();
}

/* ---- rdma_create_srq / rdma_destroy_srq (verbs-semantics.md 8.2) -------- */

static struct rdma_cm_id *resolved_id(struct rdma_event_channel *ch)
{
	struct sockaddr_in sin = cm_lo(PORT_BASE);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
		rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000), 0);
	ev = cm_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	return id;
}

static void test_cm_srq(void **state)
{
	struct rdma_cm_id *id, *id2, *unbound;
	struct ibv_srq_init_attr_ex ex;
	struct rdma_event_channel *ch;
	struct ibv_srq_init_attr sa;
	struct ibv_qp_init_attr qa;
	struct ibv_pd *pd2;

	cm_watchdog(20);
	ch = rdma_create_event_channel();
	assert_non_null(ch);
	assert_int_equal(rdma_create_id(ch, &unbound, NULL, RDMA_PS_TCP), 0);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	CM_CHECK_ERR(rdma_create_srq(unbound, NULL, &sa), EINVAL,
		     "rdma_create_srq on an unbound id");
	CM_CHECK(!unbound->srq, "unbound id got an SRQ");

	id = resolved_id(ch);
	CM_CHECK(!rdma_create_srq(id, NULL, &sa), "rdma_create_srq: %s",
		 cm_errname(errno));
	CM_CHECK(id->srq && id->srq->pd == id->pd && sa.attr.max_wr >= 16,
		 "SRQ %p on pd %p (id pd %p), max_wr %u", (void *)id->srq,
		 id->srq ? (void *)id->srq->pd : NULL, (void *)id->pd,
		 sa.attr.max_wr);
	errno = 0;
	CM_CHECK(rdma_create_srq(id, NULL, &sa) == -1,
		 "a second SRQ on one id was accepted");
	cm_qp_init_attr(&qa, IBV_QPT_RC);
	CM_CHECK(!rdma_create_qp(id, NULL, &qa), "rdma_create_qp: %s",
		 cm_errname(errno));
	if (id->qp)
		CM_CHECK(id->qp->srq == id->srq && id->srq,
			 "rdma_create_qp did not use id->srq");
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	CM_CHECK(!id->srq, "id->srq after rdma_destroy_srq");

	/* rdma_create_srq_ex: the TYPE bit is required; XRC is not offered. */
	id2 = resolved_id(ch);
	memset(&ex, 0, sizeof(ex));
	ex.attr.max_wr = 16;
	ex.attr.max_sge = 1;
	CM_CHECK_ERR(rdma_create_srq_ex(id2, &ex), EINVAL,
		     "rdma_create_srq_ex without IBV_SRQ_INIT_ATTR_TYPE");
	ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
	ex.srq_type = IBV_SRQT_XRC;
	CM_CHECK_ERR(rdma_create_srq_ex(id2, &ex), EOPNOTSUPP,
		     "rdma_create_srq_ex with IBV_SRQT_XRC");
	CM_CHECK(!id2->srq, "failed rdma_create_srq_ex left an SRQ");

	/* A PD of our own is used; id->pd stays the default one. */
	pd2 = ibv_alloc_pd(id2->verbs);
	assert_non_null(pd2);
	CM_CHECK(!rdma_create_srq(id2, pd2, &sa), "rdma_create_srq(pd): %s",
		 cm_errname(errno));
	CM_CHECK(id2->srq && id2->srq->pd == pd2 && id2->pd != pd2,
		 "SRQ with an explicit PD");
	rdma_destroy_srq(id2);
	CM_CHECK(!id2->srq, "id2->srq after rdma_destroy_srq");
	CM_CHECK(!ibv_dealloc_pd(pd2), "PD still busy after rdma_destroy_srq");

	rdma_destroy_id(id2);
	rdma_destroy_id(id);
	rdma_destroy_id(unbound);
	rdma_destroy_event_channel(ch);
	cm_done();
}

/* ---- rdma_reg_msgs / rdma_reg_read / rdma_reg_write (8.1) --------------- */

/* An RC QP of @pd to RTS towards @rqpn. */
static int lb_connect(struct ibv_qp *qp, uint32_t rqpn, uint16_t lid)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = rqpn;
	a.ah_attr.dlid = lid;
	a.ah_attr.port_num = 1;
	fu_av_fix(qp->context, &a.ah_attr);
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				     IBV_QP_MAX_QP_RD_ATOMIC)
		       ? -1
		       : 0;
}

/*
 * One RDMA @op between two fresh loopback QPs on @id's PD: the local
 * buffer (@laddr, @lkey) and the remote one (@raddr, @rkey). Return the
 * requester's completion status, or -1.
 */
static int lb_probe(struct rdma_cm_id *id, enum ibv_wr_opcode op, void *laddr,
		    uint32_t lkey, void *raddr, uint32_t rkey)
{
	struct ibv_sge s = {(uintptr_t)laddr, XFER, lkey};
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_qp_init_attr ia;
	struct ibv_port_attr pa;
	struct ibv_qp *qa, *qb;
	struct ibv_cq *cq;
	uint64_t end = cm_now_ms() + CM_WC_MS;
	int ret = -1;

	memset(&pa, 0, sizeof(pa));
	if (ibv_query_port(id->verbs, 1, &pa))
		return -1;
	cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	if (!cq)
		return -1;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qa = ibv_create_qp(id->pd, &ia);
	qb = ibv_create_qp(id->pd, &ia);
	if (!qa || !qb || lb_connect(qa, qb->qp_num, pa.lid) ||
	    lb_connect(qb, qa->qp_num, pa.lid))
		goto out;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qa, &wr, &bad))
		goto out;
	while (cm_now_ms() < end) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			break;
		if (n && wc.qp_num == qa->qp_num) {
			ret = wc.status;
			break;
		}
		if (!n)
			sched_yield();
	}
out:
	if (qa)
		ibv_destroy_qp(qa);
	if (qb)
		ibv_destroy_qp(qb);
	ibv_destroy_cq(cq);
	return ret;
}

static void test_cm_reg_helpers(void **state)
{
	struct rdma_cm_id *id, *unbound;
	struct rdma_event_channel *ch;
	struct ibv_mr *m, *r, *w, *bad;
	size_t pg = fu_page();
	char *b;

	cm_watchdog(20);
	ch = rdma_create_event_channel();
	assert_non_null(ch);
	id = resolved_id(ch);
	b = fu_map(3 * pg, PROT_READ | PROT_WRITE);
	m = rdma_reg_msgs(id, b, pg);
	r = rdma_reg_read(id, b + pg, pg);
	w = rdma_reg_write(id, b + 2 * pg, pg);
	assert_true(m && r && w);
	CM_CHECK(m->pd == id->pd && r->pd == id->pd && w->pd == id->pd,
		 "helpers register on id->pd");
	CM_CHECK(m->addr == b && m->length == pg && r->addr == b + pg &&
			 w->addr == b + 2 * pg,
		 "helper MR ranges");

	/* LOCAL_WRITE | REMOTE_READ */
	CM_CHECK_INT(
		lb_probe(id, IBV_WR_RDMA_READ, b, m->lkey, b + pg, r->rkey),
		IBV_WC_SUCCESS, "READ from rdma_reg_read into rdma_reg_msgs");
	CM_CHECK_INT(
		lb_probe(id, IBV_WR_RDMA_READ, b + pg + 512, r->lkey, b + pg,
			 r->rkey),
		IBV_WC_SUCCESS,
		"READ from rdma_reg_read into rdma_reg_read (local write)");
	CM_CHECK_INT(
		lb_probe(id, IBV_WR_RDMA_WRITE, b, m->lkey, b + pg, r->rkey),
		IBV_WC_REM_ACCESS_ERR, "WRITE into rdma_reg_read");
	/* LOCAL_WRITE | REMOTE_WRITE */
	CM_CHECK_INT(lb_probe(id, IBV_WR_RDMA_WRITE, b, m->lkey, b + 2 * pg,
			      w->rkey),
		     IBV_WC_SUCCESS, "WRITE into rdma_reg_write");
	CM_CHECK_INT(lb_probe(id, IBV_WR_RDMA_READ, b + 2 * pg + 512, w->lkey,
			      b + pg, r->rkey),
		     IBV_WC_SUCCESS, "READ into rdma_reg_write (local write)");
	CM_CHECK_INT(
		lb_probe(id, IBV_WR_RDMA_READ, b, m->lkey, b + 2 * pg, w->rkey),
		IBV_WC_REM_ACCESS_ERR, "READ from rdma_reg_write");
	/* LOCAL_WRITE only */
	CM_CHECK_INT(
		lb_probe(id, IBV_WR_RDMA_WRITE, b + pg, r->lkey, b, m->rkey),
		IBV_WC_REM_ACCESS_ERR, "WRITE into rdma_reg_msgs");
	CM_CHECK_INT(
		lb_probe(id, IBV_WR_RDMA_READ, b + 2 * pg, w->lkey, b, m->rkey),
		IBV_WC_REM_ACCESS_ERR, "READ from rdma_reg_msgs");

	CM_CHECK(!rdma_dereg_mr(m) && !rdma_dereg_mr(r) && !rdma_dereg_mr(w),
		 "rdma_dereg_mr");

	/* No PD yet: ibv_reg_mr's NULL-pd check. */
	assert_int_equal(rdma_create_id(ch, &unbound, NULL, RDMA_PS_TCP), 0);
	errno = 0;
	bad = rdma_reg_msgs(unbound, b, pg);
	CM_CHECK(!bad && errno == EINVAL,
		 "rdma_reg_msgs on an id without PD: %p errno %s", (void *)bad,
		 cm_errname(errno));
	if (bad)
		rdma_dereg_mr(bad);
	rdma_destroy_id(unbound);
	munmap(b, 3 * pg);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	cm_done();
}

/* ---- multicast: joins answered at once, errors as librdmacm's ---------- */

static void cm_multicast_body(void)
{
	struct sockaddr_in mc = cm_sin(0xef010101u, 0); /* 239.1.1.1 */
	struct sockaddr_in uni = cm_sin(0x0a000001u, 0); /* 10.0.0.1 */
	struct sockaddr_in lo = cm_lo(PORT_BASE + 7);
	struct rdma_cm_join_mc_attr_ex ex;
	struct rdma_event_channel *ch;
	struct ibv_qp_init_attr qa;
	struct ibv_device_attr da;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *tcp, *ud, *unbound;
	int ctxv = 7;

	ch = rdma_create_event_channel();
	assert_non_null(ch);
	/* A TCP id does not join (the kernel's rdma_join_multicast). */
	tcp = resolved_id(ch);
	CM_CHECK_ERR(rdma_join_multicast(tcp, (struct sockaddr *)&mc, NULL),
		     EINVAL, "join on a TCP id");
	assert_int_equal(ibv_query_device(tcp->verbs, &da), 0);
	CM_CHECK(da.max_mcast_grp > 0 && da.max_mcast_qp_attach > 0 &&
			 da.max_total_mcast_qp_attach >= da.max_mcast_qp_attach,
		 "device multicast limits %d/%d/%d", da.max_mcast_grp,
		 da.max_mcast_qp_attach, da.max_total_mcast_qp_attach);
	/* A UD id without a device: EINVAL. */
	assert_int_equal(rdma_create_id(ch, &unbound, NULL, RDMA_PS_UDP), 0);
	CM_CHECK_ERR(rdma_join_multicast(unbound, (struct sockaddr *)&mc,
					 NULL),
		     EINVAL, "join on an unbound id");
	/* A UD id resolved towards the group, with a QP. */
	assert_int_equal(rdma_create_id(ch, &ud, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_resolve_addr(ud, (struct sockaddr *)&lo,
					   (struct sockaddr *)&mc, 2000), 0);
	ev = cm_expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	assert_int_equal(rdma_create_qp(ud, NULL, &qa), 0);
	CM_CHECK_ERR(rdma_join_multicast(ud, NULL, NULL), EINVAL,
		     "join without an address");
	memset(&ex, 0, sizeof(ex));
	ex.addr = (struct sockaddr *)&mc;
	ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED;
	CM_CHECK_ERR(rdma_join_multicast_ex(ud, &ex, NULL), ENOTSUP,
		     "join_ex with an unknown comp_mask bit");
	ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	CM_CHECK_ERR(rdma_join_multicast_ex(ud, &ex, NULL), EINVAL,
		     "join_ex without the address bit");
	ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
		       RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ex.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	CM_CHECK_ERR(rdma_join_multicast_ex(ud, &ex, NULL), EINVAL,
		     "join_ex with reserved join flags");
	CM_CHECK_ERR(rdma_leave_multicast(ud, (struct sockaddr *)&mc),
		     EADDRNOTAVAIL, "leave of a group not joined");
	/* The join: the event carries the group's address vector. */
	assert_int_equal(rdma_join_multicast(ud, (struct sockaddr *)&mc,
					     &ctxv), 0);
	ev = cm_expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	assert_non_null(ev);
	CM_CHECK_INT(ev->param.ud.qp_num, 0xffffff, "join qp_num");
	CM_CHECK_INT(ev->param.ud.qkey, RDMA_UDP_QKEY, "join qkey");
	CM_CHECK(ev->param.ud.private_data == &ctxv, "join context");
	CM_CHECK(ev->param.ud.ah_attr.is_global &&
			 (ev->param.ud.ah_attr.grh.dgid.raw[0] == 0xff ||
			  ev->param.ud.ah_attr.grh.dgid.raw[12] == 239),
		 "join AV names the group");
	rdma_ack_cm_event(ev);
	/* Attached: the QP cannot go until it detaches (kernel uverbs). */
	CM_CHECK_INT(ibv_destroy_qp(ud->qp), EBUSY,
		     "ibv_destroy_qp of an attached QP");
	assert_int_equal(rdma_leave_multicast(ud, (struct sockaddr *)&mc), 0);
	CM_CHECK_ERR(rdma_leave_multicast(ud, (struct sockaddr *)&mc),
		     EADDRNOTAVAIL, "second leave");
	/* Joined again, then the QP destroyed: rdma_destroy_qp detaches. */
	assert_int_equal(rdma_join_multicast(ud, (struct sockaddr *)&mc,
					     NULL), 0);
	ev = cm_expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(ud);
	CM_CHECK(ud->qp == NULL, "rdma_destroy_qp of a joined id");
	/* On RoCE a group is an IP multicast address; on IB the kernel
	 * maps any address to an MGID (and the attach then succeeds). */
	if (ibv_query_device(ud->verbs, &da) == 0) {
		struct ibv_port_attr pa;

		assert_int_equal(ibv_query_port(ud->verbs, 1, &pa), 0);
		if (pa.link_layer == IBV_LINK_LAYER_ETHERNET)
			CM_CHECK_ERR(rdma_join_multicast(
					     ud, (struct sockaddr *)&uni, NULL),
				     EINVAL, "RoCE join of a unicast address");
	}
	rdma_destroy_id(ud);
	rdma_destroy_id(unbound);
	rdma_destroy_id(tcp);
	rdma_destroy_event_channel(ch);
}

/*
 * On a RoCE port an attach joins the group's IP address on the port's
 * interfaces: there the body runs in a forked child inside a private
 * network namespace with only lo, so no membership report leaves for the
 * machine's real network (without root: not run).
 */
static void test_cm_multicast(void **state)
{
	const char *ll = getenv("SRDMA_LINK_LAYER");
	int st;
	pid_t pid;

	(void)state;
	cm_watchdog(30);
	if (!ll || strcmp(ll, "eth")) {
		cm_multicast_body();
		cm_done();
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct ifreq ifr;
		int fd;

		if (unshare(CLONE_NEWNET))
			_exit(0);	/* not root: nothing to test safely */
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, "lo");
		if (fd >= 0 && !ioctl(fd, SIOCGIFFLAGS, &ifr)) {
			ifr.ifr_flags |= IFF_UP;
			(void)ioctl(fd, SIOCSIFFLAGS, &ifr);
		}
		cm_multicast_body();
		_exit(atomic_load(&cm_fails) ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	CM_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "multicast in a private network namespace: status %#x", st);
	cm_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cm_rc_threads),
		cmocka_unit_test(test_cm_rc_fork),
		cmocka_unit_test(test_cm_sync_threads),
		cmocka_unit_test(test_cm_sync_fork_server_disconnects_first),
		cmocka_unit_test(test_cm_reject_private_data),
		cmocka_unit_test(test_cm_private_data_limits),
		cmocka_unit_test(test_cm_external_qp),
		cmocka_unit_test(test_cm_ud),
		cmocka_unit_test(test_cm_ud_reject),
		cmocka_unit_test(test_cm_disconnect_crossing),
		cmocka_unit_test(test_cm_ipv6_loopback),
		cmocka_unit_test(test_cm_migrate_id),
		cmocka_unit_test(test_cm_migrate_listener),
		cmocka_unit_test(test_cm_channel_fd),
		cmocka_unit_test(test_cm_ports),
		cmocka_unit_test(test_cm_bind_port_in_use),
		cmocka_unit_test(test_cm_ack_timeout_option),
		cmocka_unit_test(test_cm_get_devices),
		cmocka_unit_test(test_cm_srq),
		cmocka_unit_test(test_cm_reg_helpers),
		cmocka_unit_test(test_cm_multicast),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
