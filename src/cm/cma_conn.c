// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_conn.c - the connection handshake and teardown.
 *
 * The message flow is the InfiniBand CM's, carried over the id's TCP
 * socket (cma_wire.h):
 *
 *   RC/UC  active                          passive
 *          rdma_connect      -- REQ -->    CONNECT_REQUEST (child id)
 *                                           rdma_accept: QP RTR/RTS
 *          QP RTR/RTS, ESTABLISHED <-- REP --
 *          (or CONNECT_RESPONSE, then rdma_establish, if no id QP)
 *                            -- RTU -->    ESTABLISHED
 *          rdma_disconnect   -- DREQ -->   DISCONNECTED
 *          DISCONNECTED      <-- DREP --
 *          rdma_reject / no listener: <-- REJ -- : REJECTED, status =
 *          reason (28 consumer defined; 8 invalid service id)
 *
 *   UD     rdma_connect  -- SIDR_REQ -->   CONNECT_REQUEST
 *          ESTABLISHED   <-- SIDR_REP --   rdma_accept (qpn, qkey)
 *          (param.ud: ah_attr, qp_num, qkey); status != 0 gives
 *          UNREACHABLE with that status.
 *
 * A refused TCP connection is a REJ with reason 8, as an IB CM answers a
 * REQ for a service id nobody listens on. A handshake cut short (the peer
 * closed its socket, or sent something malformed or out of turn) gives
 * UNREACHABLE with -ECONNRESET or -EPROTO at once, where hardware would
 * give UNREACHABLE with -ETIMEDOUT after its retries; an established
 * connection whose socket goes away gives DISCONNECTED. A peer host that
 * goes silent fails the socket after srdma_cm_dead_ms() (TCP keepalive
 * and TCP_USER_TIMEOUT, cma_loop.c), and a DREQ without DREP times out
 * after as long: both give DISCONNECTED with -ETIMEDOUT, the kernel CM's
 * DREQ_ERROR (UNREACHABLE -ETIMEDOUT during the handshake). A refused
 * connect is dialled again for a moment (SRDMA_CM_REDIAL_*) before it
 * counts as REJECTED. Hidden children (no valid REQ yet) are dropped
 * silently.
 *
 * Received messages are handled by the service thread under cm.lock;
 * the application's calls take cm.lock, check the state, send, and for a
 * sync id wait for the resulting event outside the lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cma_int.h"
#include "util/log.h"

static uint32_t random_psn(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)rand();
	return v & 0xffffff;
}

int srdma_cm_send(struct cm_id *id, struct srdma_cm_msg *msg)
{
	uint8_t buf[SRDMA_CM_MSG_MAX];
	ssize_t n;
	int len;

	if (id->fd < 0)
		return -ENOTCONN;
	msg->port_space = (uint16_t)id->id.ps;
	msg->qp_type = (uint8_t)id->id.qp_type;
	if (id->dev) {
		msg->lid = id->dev->lid;
		msg->mtu = (uint8_t)id->path_mtu;
		memcpy(msg->gid, id->sgid.raw, sizeof(msg->gid));
	}
	len = srdma_cm_encode(msg, buf);
	if (len < 0)
		return len;
	n = send(id->fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n == len)
		return 0;
	return n < 0 ? -errno : -EIO;
}

/* Close @id's socket after a handshake ended. Requires cm.lock. */
static void conn_finish(struct cm_id *id, enum cm_state state)
{
	srdma_cm_loop_close(id);
	id->state = state;
}

/*
 * @status: 0 (the peer disconnected, or its process ended and its kernel
 * closed the channel, as a kernel CM sends DREQ for a dying process), or
 * -ETIMEDOUT (the peer host went silent, or our DREQ went unanswered: the
 * kernel CM's DREQ_ERROR).
 */
static void post_disconnected(struct cm_id *id, int status)
{
	/* Callers are connected states: DISCONNECTED is reported once. */
	bool ours = id->state == CM_DISCONNECTING;

	id->deadline_ms = 0;
	/* The peer's leaving waits for the completions it left behind;
	 * the end of our own rdma_disconnect does not. */
	if (ours)
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_DISCONNECTED,
				    status, NULL);
	else
		srdma_cm_event_disconnected(id, status);
	conn_finish(id, CM_DISCONNECTED);
}

void srdma_cm_conn_lost(struct cm_id *id, int err)
{
	srdma_dbg("id %p: CM connection lost in state %d (%d)", (void *)&id->id,
		  id->state, err);
	switch (id->state) {
	case CM_REQ_WAIT:
		srdma_cm_id_free(id);
		return;
	case CM_CONNECTING:
	case CM_REQ_SENT:
	case CM_REP_RCVD:
	case CM_REQ_RCVD:
	case CM_REP_SENT:
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_UNREACHABLE, err,
				    NULL);
		conn_finish(id, CM_FAILED);
		return;
	case CM_ESTABLISHED:
	case CM_DISCONNECTING:
		srdma_info("id %p: CM connection lost (%d): disconnected",
			   (void *)&id->id, err);
		post_disconnected(id, err == -ETIMEDOUT ? -ETIMEDOUT : 0);
		return;
	default:
		srdma_cm_loop_close(id);
		return;
	}
}

static void send_req(struct cm_id *id)
{
	struct srdma_cm_msg m = {0};
	int ret;

	m.type =
		id->id.qp_type == IBV_QPT_UD ? SRDMA_CM_SIDR_REQ : SRDMA_CM_REQ;
	m.qpn = id->conn.qpn;
	m.psn = id->conn.psn;
	m.resp_res = id->conn.resp_res;
	m.init_depth = id->conn.init_depth;
	m.retry_count = id->conn.retry_count;
	m.rnr_retry_count = id->conn.peer_rnr_retry;
	m.flags = (id->conn.srq ? SRDMA_CM_F_SRQ : 0) |
		  (id->conn.flow_control ? SRDMA_CM_F_FLOW_CONTROL : 0);
	m.pdata_len = id->conn.pdata_len;
	memcpy(m.pdata, id->conn.pdata, m.pdata_len);
	ret = srdma_cm_send(id, &m);
	if (ret) {
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_UNREACHABLE, ret,
				    NULL);
		conn_finish(id, CM_FAILED);
		return;
	}
	id->state = CM_REQ_SENT;
	if (srdma_cm_loop_watch(id, false))
		srdma_cm_conn_lost(id, -ENOMEM);
}

/* Connect @id's socket to the destination (again). Requires cm.lock. */
static int conn_dial(struct cm_id *cid)
{
	const struct sockaddr *dst = &cid->id.route.addr.dst_addr;
	int ret;

	srdma_cm_sock_watch_peer(cid);
	if (!connect(cid->fd, dst,
		     dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						: sizeof(struct sockaddr_in))) {
		send_req(cid);
	} else if (errno == EINPROGRESS) {
		cid->state = CM_CONNECTING;
		ret = srdma_cm_loop_watch(cid, true);
		if (ret)
			return ret;
	} else {
		srdma_cm_conn_connected(cid, -errno);
	}
	return 0;
}

void srdma_cm_conn_connected(struct cm_id *id, int err)
{
	if (!err) {
		send_req(id);
		return;
	}
	if (err == -ECONNREFUSED && id->redials_left) {
		/* Perhaps about to listen again: ask a little later. */
		id->redials_left--;
		if (!srdma_cm_id_rebind(id)) {
			id->state = CM_CONNECTING;
			id->redial = true;
			id->deadline_ms = srdma_cm_now_ms() + SRDMA_CM_REDIAL_MS;
			srdma_cm_loop_kick();
			return;
		}
	}
	srdma_dbg("id %p: TCP connect to the CM port failed (%d)%s",
		  (void *)&id->id, err,
		  err == -ECONNREFUSED ? ": nobody listens there" : "");
	if (err == -ECONNREFUSED && id->id.qp_type == IBV_QPT_UD)
		/* A SIDR_REQ nobody serves: SIDR_REP "unsupported". */
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_UNREACHABLE,
				    SRDMA_CM_SIDR_UNSUPPORTED, NULL);
	else if (err == -ECONNREFUSED)
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_REJECTED,
				    SRDMA_CM_REJ_INVALID_SERVICE_ID, NULL);
	else
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_UNREACHABLE, err,
				    NULL);
	conn_finish(id, CM_FAILED);
}

void srdma_cm_conn_timeout(struct cm_id *id)
{
	if (id->state == CM_REQ_WAIT) {
		srdma_dbg("id %p: no REQ within %d ms: dropped",
			  (void *)&id->id, SRDMA_CM_CONNECT_TIMEOUT_MS);
		srdma_cm_id_free(id);
		return;
	}
	if (id->state == CM_CONNECTING && id->redial) {
		id->redial = false;
		id->deadline_ms =
			srdma_cm_now_ms() + SRDMA_CM_CONNECT_TIMEOUT_MS;
		if (conn_dial(id))
			srdma_cm_conn_lost(id, -ENOMEM);
		return;
	}
	if (id->state == CM_CONNECTING || id->state == CM_REQ_SENT) {
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_UNREACHABLE,
				    -ETIMEDOUT, NULL);
		conn_finish(id, CM_FAILED);
	}
	if (id->state == CM_DISCONNECTING) {
		srdma_info("id %p: no DREP within %u ms: disconnected",
			   (void *)&id->id, srdma_cm_dead_ms(id));
		post_disconnected(id, -ETIMEDOUT);
	}
}

static void peer_from_msg(struct cm_id *id, const struct srdma_cm_msg *m)
{
	struct cm_conn *c = &id->conn;

	c->peer_known = true;
	c->peer_qpn = m->qpn;
	c->peer_psn = m->psn;
	c->peer_lid = m->lid;
	c->peer_mtu = m->mtu;
	memcpy(c->peer_gid.raw, m->gid, sizeof(m->gid));
	id->id.route.addr.addr.ibaddr.dgid = c->peer_gid;
}

static uint8_t min_u8(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

void srdma_cm_conn_abandon(struct cm_id *id)
{
	struct srdma_cm_msg m = {0};
	bool ud = id->id.qp_type == IBV_QPT_UD;

	if (id->state != CM_REQ_RCVD || id->fd < 0)
		return;
	m.type = ud ? SRDMA_CM_SIDR_REP : SRDMA_CM_REJ;
	m.reason = ud ? SRDMA_CM_SIDR_REJECT : SRDMA_CM_REJ_CONSUMER_DEFINED;
	(void)srdma_cm_send(id, &m);
}

/* A REQ or SIDR_REQ reached hidden child @c. */
static void input_req(struct cm_id *c, const struct srdma_cm_msg *m)
{
	struct cm_id *l = c->listener;
	struct srdma_cm_msg rej = {0};
	bool ud = c->id.qp_type == IBV_QPT_UD;
	bool sidr = m->type == SRDMA_CM_SIDR_REQ;
	socklen_t len;

	if (!l || l->state != CM_LISTEN || m->port_space != l->id.ps ||
	    sidr != ud || srdma_cm_id_attach(c)) {
		/*
		 * No listener in that port space: what an IB CM answers, in
		 * the form the request asked in.
		 */
		rej.type = sidr ? SRDMA_CM_SIDR_REP : SRDMA_CM_REJ;
		rej.reason = sidr ? SRDMA_CM_SIDR_UNSUPPORTED
				  : SRDMA_CM_REJ_INVALID_SERVICE_ID;
		(void)srdma_cm_send(c, &rej);
		srdma_cm_id_free(c);
		return;
	}
	len = sizeof(c->id.route.addr.src_storage);
	(void)getsockname(c->fd, &c->id.route.addr.src_addr, &len);
	len = sizeof(c->id.route.addr.dst_storage);
	(void)getpeername(c->fd, &c->id.route.addr.dst_addr, &len);
	srdma_cm_id_set_source(c, &c->id.route.addr.src_addr, 0);
	peer_from_msg(c, m);
	srdma_cm_id_fill_path(c);
	/* Seen from here: the peer's initiator depth is what we answer. */
	c->conn.resp_res = min_u8(m->init_depth, c->dev->max_resp_res);
	c->conn.init_depth = min_u8(m->resp_res, c->dev->max_init_depth);
	c->conn.retry_count = m->retry_count;
	c->conn.rnr_retry = m->rnr_retry_count;
	c->conn.srq = !!(m->flags & SRDMA_CM_F_SRQ);
	c->conn.flow_control = !!(m->flags & SRDMA_CM_F_FLOW_CONTROL);
	c->state = CM_REQ_RCVD;
	/* Reported on the listener's channel, wherever it is now. */
	c->chan = l->chan;
	c->id.channel = l->id.channel;
	srdma_cm_event_post(c, l, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m);
}

/* The passive side's REP reached active @id. */
static void input_rep(struct cm_id *id, const struct srdma_cm_msg *m)
{
	struct srdma_cm_msg rtu = {.type = SRDMA_CM_RTU};
	struct srdma_cm_msg rej = {.type = SRDMA_CM_REJ};
	int ret;

	peer_from_msg(id, m);
	id->conn.init_depth = min_u8(m->resp_res, id->dev->max_init_depth);
	id->conn.resp_res = min_u8(m->init_depth, id->dev->max_resp_res);
	id->conn.rnr_retry = m->rnr_retry_count;
	id->deadline_ms = 0;
	if (!id->id.qp) {
		id->state = CM_REP_RCVD;
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_CONNECT_RESPONSE, 0,
				    m);
		return;
	}
	ret = srdma_cm_qp_connect(id);
	if (!ret)
		ret = srdma_cm_send(id, &rtu);
	if (ret) {
		rej.reason = SRDMA_CM_REJ_CONSUMER_DEFINED;
		(void)srdma_cm_send(id, &rej);
		srdma_cm_qp_error(id);
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_CONNECT_ERROR, ret,
				    NULL);
		conn_finish(id, CM_FAILED);
		return;
	}
	id->state = CM_ESTABLISHED;
	srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, m);
}

static void input_sidr_rep(struct cm_id *id, const struct srdma_cm_msg *m)
{
	if (m->reason != SRDMA_CM_SIDR_SUCCESS) {
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_UNREACHABLE,
				    m->reason, m);
		conn_finish(id, CM_FAILED);
		return;
	}
	peer_from_msg(id, m);
	srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_ESTABLISHED, 0, m);
	/* Service id resolution is one exchange: nothing more to say. */
	conn_finish(id, CM_ESTABLISHED);
}

void srdma_cm_conn_input(struct cm_id *id, const struct srdma_cm_msg *m)
{
	struct srdma_cm_msg drep = {.type = SRDMA_CM_DREP};

	switch (id->state) {
	case CM_REQ_WAIT:
		if (m->type == SRDMA_CM_REQ || m->type == SRDMA_CM_SIDR_REQ) {
			input_req(id, m);
			return;
		}
		break;
	case CM_REQ_SENT:
		if (m->type == SRDMA_CM_REP && id->id.qp_type != IBV_QPT_UD) {
			input_rep(id, m);
			return;
		}
		if (m->type == SRDMA_CM_SIDR_REP &&
		    id->id.qp_type == IBV_QPT_UD) {
			input_sidr_rep(id, m);
			return;
		}
		if (m->type == SRDMA_CM_REJ) {
			srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_REJECTED,
					    m->reason, m);
			conn_finish(id, CM_FAILED);
			return;
		}
		break;
	case CM_REP_SENT:
		if (m->type == SRDMA_CM_RTU) {
			id->state = CM_ESTABLISHED;
			srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_ESTABLISHED,
					    0, NULL);
			return;
		}
		if (m->type == SRDMA_CM_REJ) {
			srdma_cm_qp_error(id);
			srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_REJECTED,
					    m->reason, m);
			conn_finish(id, CM_FAILED);
			return;
		}
		break;
	case CM_ESTABLISHED:
	case CM_DISCONNECTING:
		if (m->type == SRDMA_CM_DREQ) {
			(void)srdma_cm_send(id, &drep);
			post_disconnected(id, 0);
			return;
		}
		if (m->type == SRDMA_CM_DREP && id->state == CM_DISCONNECTING) {
			post_disconnected(id, 0);
			return;
		}
		break;
	default:
		break;
	}
	srdma_dbg("id %p: message type %u out of turn in state %d",
		  (void *)&id->id, m->type, id->state);
	srdma_cm_conn_lost(id, -EPROTO);
}

/* The limits real librdmacm checks before a connect or accept. */
static int check_param(struct cm_id *id, const struct rdma_conn_param *p,
		       unsigned int type)
{
	if (!p)
		return 0;
	if (p->private_data_len && !p->private_data)
		return -EINVAL;
	if (p->private_data_len > srdma_cm_pdata_max(type))
		return -EINVAL;
	if (id->id.qp_type == IBV_QPT_UD)
		return 0;
	if (p->responder_resources != RDMA_MAX_RESP_RES &&
	    p->responder_resources > id->dev->max_resp_res)
		return -EINVAL;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    p->initiator_depth > id->dev->max_init_depth)
		return -EINVAL;
	return 0;
}

/*
 * What connect and accept both take from a conn_param: the depths (0xff
 * keeps the negotiated or device maximum), the RNR retry count we announce
 * to the peer, flow control.
 */
static void take_param(struct cm_conn *c, const struct rdma_conn_param *p)
{
	if (p->responder_resources != RDMA_MAX_RESP_RES)
		c->resp_res = p->responder_resources;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH)
		c->init_depth = p->initiator_depth;
	c->peer_rnr_retry = p->rnr_retry_count & 7;
	c->flow_control = p->flow_control;
}

SRDMA_EXPORT int rdma_connect(struct rdma_cm_id *id,
			      struct rdma_conn_param *param)
{
	struct cm_id *cid;
	struct cm_conn *c;
	bool ud;
	int ret;

	if (!id)
		return srdma_cm_ret(-EINVAL);
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	ud = id->qp_type == IBV_QPT_UD;
	srdma_cm_lock();
	if (cid->state != CM_ROUTE_RESOLVED) {
		ret = -EINVAL;
		goto out;
	}
	ret = check_param(cid, param, ud ? SRDMA_CM_SIDR_REQ : SRDMA_CM_REQ);
	if (ret)
		goto out;
	c = &cid->conn;
	c->qpn = id->qp ? id->qp->qp_num : (param ? param->qp_num : 0);
	c->psn = random_psn();
	c->resp_res = cid->dev->max_resp_res;
	c->init_depth = cid->dev->max_init_depth;
	c->retry_count = 7;
	c->peer_rnr_retry = 7;
	c->srq = !!id->srq;
	if (param) {
		take_param(c, param);
		c->retry_count = param->retry_count & 7;
		c->srq |= !!param->srq;
		c->pdata_len = param->private_data_len;
		if (c->pdata_len)
			memcpy(c->pdata, param->private_data, c->pdata_len);
	}

	cid->redials_left = SRDMA_CM_REDIAL_TRIES;
	ret = conn_dial(cid);
	if (ret)
		goto out;
	if ((cid->state == CM_CONNECTING && !cid->redial) ||
	    cid->state == CM_REQ_SENT) {
		cid->deadline_ms =
			srdma_cm_now_ms() + SRDMA_CM_CONNECT_TIMEOUT_MS;
		srdma_cm_loop_kick();
	}
out:
	srdma_cm_unlock();
	if (!ret)
		ret = srdma_cm_complete(cid);
	return srdma_cm_ret(ret);
}

static int accept_ud(struct cm_id *id, struct rdma_conn_param *param)
{
	struct srdma_cm_msg m = {.type = SRDMA_CM_SIDR_REP};
	int ret;

	m.reason = SRDMA_CM_SIDR_SUCCESS;
	m.qpn = id->id.qp ? id->id.qp->qp_num : (param ? param->qp_num : 0);
	m.qkey = RDMA_UDP_QKEY;
	if (param && param->private_data_len) {
		m.pdata_len = param->private_data_len;
		memcpy(m.pdata, param->private_data, m.pdata_len);
	}
	ret = srdma_cm_send(id, &m);
	conn_finish(id, ret ? CM_FAILED : CM_ESTABLISHED);
	return ret;
}

SRDMA_EXPORT int rdma_accept(struct rdma_cm_id *id,
			     struct rdma_conn_param *param)
{
	struct srdma_cm_msg m = {.type = SRDMA_CM_REP};
	struct cm_id *cid;
	struct cm_conn *c;
	bool ud;
	int ret;

	if (!id)
		return srdma_cm_ret(-EINVAL);
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	ud = id->qp_type == IBV_QPT_UD;
	srdma_cm_lock();
	ret = cid->state == CM_REQ_RCVD ? 0 : -EINVAL;
	if (!ret)
		ret = check_param(cid, param,
				  ud ? SRDMA_CM_SIDR_REP : SRDMA_CM_REP);
	if (ret)
		goto out;
	if (ud) {
		ret = accept_ud(cid, param);
		/* No event follows a UD accept: ack the request. */
		srdma_cm_sync_event_done(cid);
		srdma_cm_unlock();
		return srdma_cm_ret(ret);
	}

	c = &cid->conn;
	c->qpn = id->qp ? id->qp->qp_num : (param ? param->qp_num : 0);
	c->psn = random_psn();
	c->peer_rnr_retry = 0;
	if (param) {
		take_param(c, param);
		m.pdata_len = param->private_data_len;
		if (m.pdata_len)
			memcpy(m.pdata, param->private_data, m.pdata_len);
	}
	if (id->qp) {
		ret = srdma_cm_qp_connect(cid);
		if (ret) {
			srdma_cm_qp_error(cid);
			goto out;
		}
	}
	m.qpn = c->qpn;
	m.psn = c->psn;
	m.resp_res = c->resp_res;
	m.init_depth = c->init_depth;
	m.retry_count = c->retry_count;
	m.rnr_retry_count = c->peer_rnr_retry;
	m.flags = (id->srq || (param && param->srq) ? SRDMA_CM_F_SRQ : 0) |
		  (c->flow_control ? SRDMA_CM_F_FLOW_CONTROL : 0);
	ret = srdma_cm_send(cid, &m);
	if (ret) {
		srdma_cm_qp_error(cid);
		conn_finish(cid, CM_FAILED);
		goto out;
	}
	cid->state = CM_REP_SENT;
out:
	srdma_cm_unlock();
	if (!ret)
		ret = srdma_cm_complete(cid);
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			     uint8_t private_data_len)
{
	struct srdma_cm_msg m = {0};
	struct cm_id *cid;
	bool ud;
	int ret = 0;

	if (!id || (private_data_len && !private_data))
		return srdma_cm_ret(-EINVAL);
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	ud = id->qp_type == IBV_QPT_UD;
	m.type = ud ? SRDMA_CM_SIDR_REP : SRDMA_CM_REJ;
	m.reason = ud ? SRDMA_CM_SIDR_REJECT : SRDMA_CM_REJ_CONSUMER_DEFINED;
	if (private_data_len > srdma_cm_pdata_max(m.type))
		return srdma_cm_ret(-EINVAL);
	m.pdata_len = private_data_len;
	if (private_data_len)
		memcpy(m.pdata, private_data, private_data_len);
	srdma_cm_lock();
	if (cid->state != CM_REQ_RCVD) {
		ret = -EINVAL;
	} else {
		ret = srdma_cm_send(cid, &m);
		conn_finish(cid, CM_FAILED);
	}
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct srdma_cm_msg m = {.type = SRDMA_CM_RTU};
	struct cm_id *cid;
	int ret;

	if (!id)
		return srdma_cm_ret(-EINVAL);
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	if (cid->state != CM_REP_RCVD) {
		ret = -EINVAL;
	} else {
		ret = srdma_cm_send(cid, &m);
		if (ret)
			srdma_cm_conn_lost(cid, ret);
		else
			cid->state = CM_ESTABLISHED;
	}
	srdma_cm_sync_event_done(cid);
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct srdma_cm_msg m = {.type = SRDMA_CM_DREQ};
	struct cm_id *cid;
	bool wait = false;
	int ret = 0;

	if (!id)
		return srdma_cm_ret(-EINVAL);
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	switch (cid->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
	case CM_REP_RCVD:
		srdma_cm_qp_error(cid);
		if (id->qp_type == IBV_QPT_UD)
			break; /* SIDR left no connection to close */
		ret = srdma_cm_send(cid, &m);
		if (ret) {
			srdma_dbg("id %p: DREQ not sent (%d): disconnected",
				  (void *)id, ret);
			ret = 0;
			post_disconnected(cid, 0);
		} else {
			/* An unanswered DREQ times out (DREQ_ERROR). */
			unsigned int dead = srdma_cm_dead_ms(cid);

			cid->state = CM_DISCONNECTING;
			if (dead) {
				cid->deadline_ms = srdma_cm_now_ms() + dead;
				srdma_cm_loop_kick();
			}
		}
		wait = true;
		break;
	case CM_DISCONNECTED:
		/*
		 * The peer went first: our QP follows, and a sync id still
		 * collects the DISCONNECTED it has not consumed yet, now
		 * if it was held back for the QP's completions.
		 */
		srdma_cm_held_release(cid);
		srdma_cm_qp_error(cid);
		wait = cid->sync && cid->events_queued;
		break;
	default:
		ret = -EINVAL;
	}
	srdma_cm_unlock();
	if (wait)
		ret = srdma_cm_complete(cid);
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cm_id *cid;
	int ret;

	(void)event;
	if (!id)
		return srdma_cm_ret(-EINVAL);
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	ret = cid->state == CM_REP_SENT || cid->state == CM_ESTABLISHED
		      ? 0
		      : -EINVAL;
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}
