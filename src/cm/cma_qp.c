// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_qp.c - verbs objects rdma_cm creates for ids, rdma_init_qp_attr,
 * and the endpoint helpers (rdma_create_ep, rdma_get_request).
 *
 * What real librdmacm does, and applications rely on (abi.md 1.6, 2.4 C;
 * verbs-semantics.md 8):
 *   - rdma_create_qp(_ex) uses id->pd when no PD is given, creates a CQ
 *     with its own completion channel for each queue the caller gave none
 *     (cq_context = the id, so rdma_get_send/recv_comp work), uses id->srq,
 *     and moves the QP to INIT (UD: on to RTS with the rdma_cm Q_Key);
 *   - rdma_destroy_qp and rdma_destroy_srq also destroy those CQs and
 *     channels;
 *   - rdma_init_qp_attr reports what the kernel's CM would: INIT with
 *     access flags 0 before a connection exists and REMOTE_WRITE (plus
 *     READ and ATOMIC when we answer reads) once it does; RTR with the
 *     peer's LID, QPN and PSN; RTS with our PSN, the retry counts of the
 *     handshake and the ACK timeout option.
 *
 * Everything here uses only the public verbs API of our libibverbs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "cm/cma_int.h"
#include "util/log.h"

/* ACK timeout used when the application set none: 4.096 us * 2^14. */
#define DEFAULT_ACK_TIMEOUT 14

int srdma_cm_qp_attr(struct cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	enum ibv_qp_state state = attr->qp_state;
	struct cm_conn *c = &id->conn;
	bool ud = id->id.qp_type == IBV_QPT_UD;
	bool rc = id->id.qp_type == IBV_QPT_RC;

	if (!id->dev)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = state;
	switch (state) {
	case IBV_QPS_INIT:
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		attr->port_num = id->id.port_num ? id->id.port_num : 1;
		if (ud) {
			attr->qkey = RDMA_UDP_QKEY;
			*mask |= IBV_QP_QKEY;
			return 0;
		}
		*mask |= IBV_QP_ACCESS_FLAGS;
		if (c->peer_known) {
			attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (c->resp_res)
				attr->qp_access_flags |=
					IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_REMOTE_ATOMIC;
		}
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (ud)
			return 0;
		if (!c->peer_known)
			return -EINVAL;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN;
		attr->ah_attr.dlid = c->peer_lid;
		attr->ah_attr.port_num = id->id.port_num ? id->id.port_num : 1;
		if (id->dev->roce) {
			/* RoCE: routed by GID, as the kernel's CM does. */
			attr->ah_attr.is_global = 1;
			attr->ah_attr.grh.dgid = c->peer_gid;
			attr->ah_attr.grh.sgid_index = id->sgid_index;
			attr->ah_attr.grh.hop_limit = id->hop_limit;
			attr->ah_attr.grh.traffic_class = id->tos;
			attr->ah_attr.grh.flow_label = id->flow_label;
		}
		attr->path_mtu = id->path_mtu;
		if (c->peer_mtu && c->peer_mtu < attr->path_mtu)
			attr->path_mtu = c->peer_mtu;
		attr->dest_qp_num = c->peer_qpn;
		attr->rq_psn = c->peer_psn;
		if (rc) {
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				 IBV_QP_MIN_RNR_TIMER;
			attr->max_dest_rd_atomic = c->resp_res;
			attr->min_rnr_timer = 0;
		}
		return 0;
	case IBV_QPS_RTS:
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		attr->sq_psn = c->psn;
		if (ud)
			return 0;
		if (!c->peer_known)
			return -EINVAL;
		if (rc) {
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
			attr->timeout = id->ack_timeout_set
						? id->ack_timeout
						: DEFAULT_ACK_TIMEOUT;
			attr->retry_cnt = c->retry_count;
			attr->rnr_retry = c->rnr_retry;
			attr->max_rd_atomic = c->init_depth;
		}
		return 0;
	default:
		return -EINVAL;
	}
}

static int modify_to(struct cm_id *id, struct ibv_qp *qp,
		     enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = {.qp_state = state};
	int mask, ret;

	ret = srdma_cm_qp_attr(id, &attr, &mask);
	if (ret)
		return ret;
	ret = ibv_modify_qp(qp, &attr, mask);
	if (ret)
		srdma_dbg("id %p: QP 0x%x to state %d: %d", (void *)&id->id,
			  qp->qp_num, state, ret);
	return -ret;
}

int srdma_cm_qp_connect(struct cm_id *id)
{
	int ret;

	/* INIT again first: the access flags depend on the handshake. */
	ret = modify_to(id, id->id.qp, IBV_QPS_INIT);
	if (!ret)
		ret = modify_to(id, id->id.qp, IBV_QPS_RTR);
	if (!ret)
		ret = modify_to(id, id->id.qp, IBV_QPS_RTS);
	return ret;
}

void srdma_cm_qp_error(struct cm_id *id)
{
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};

	if (id->id.qp)
		(void)ibv_modify_qp(id->id.qp, &attr, IBV_QP_STATE);
}

SRDMA_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id,
				   struct ibv_qp_attr *qp_attr,
				   int *qp_attr_mask)
{
	int ret;

	if (!id || !qp_attr || !qp_attr_mask ||
	    srdma_cm_id_inherited(to_cm_id(id)))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	ret = srdma_cm_qp_attr(to_cm_id(id), qp_attr, qp_attr_mask);
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}

/* The CQs and channels rdma_cm made for @id go. Requires cm.lock. */
static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq == id->recv_cq)
			id->send_cq = NULL;
		id->recv_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel == id->recv_cq_channel)
			id->send_cq_channel = NULL;
		id->recv_cq_channel = NULL;
	}
	if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

static int create_cq(struct rdma_cm_id *id, int size,
		     struct ibv_comp_channel **chan, struct ibv_cq **cq)
{
	*chan = ibv_create_comp_channel(id->verbs);
	if (!*chan)
		return -errno;
	*cq = ibv_create_cq(id->verbs, size, id, *chan, 0);
	if (!*cq) {
		int ret = -errno;

		ibv_destroy_comp_channel(*chan);
		*chan = NULL;
		return ret;
	}
	return 0;
}

/* Requires cm.lock. Sizes of 0 create nothing. */
static int create_cqs(struct rdma_cm_id *id, uint32_t send_size,
		      uint32_t recv_size)
{
	int ret;

	if (recv_size) {
		ret = create_cq(id, (int)recv_size, &id->recv_cq_channel,
				&id->recv_cq);
		if (ret)
			return ret;
	}
	if (send_size) {
		ret = create_cq(id, (int)send_size, &id->send_cq_channel,
				&id->send_cq);
		if (ret) {
			destroy_cqs(id);
			return ret;
		}
	}
	return 0;
}

static int init_ud_qp(struct cm_id *id, struct ibv_qp *qp)
{
	int ret = modify_to(id, qp, IBV_QPS_INIT);

	if (!ret)
		ret = modify_to(id, qp, IBV_QPS_RTR);
	if (!ret)
		ret = modify_to(id, qp, IBV_QPS_RTS);
	return ret;
}

SRDMA_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				   struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *cid;
	struct ibv_qp *qp;
	int ret;

	if (!id || !attr || srdma_cm_id_inherited(to_cm_id(id)))
		return srdma_cm_ret(-EINVAL);
	cid = to_cm_id(id);
	srdma_cm_lock();
	if (id->qp || !id->verbs) {
		ret = -EINVAL;
		goto out;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
	} else if (attr->pd->context != id->verbs) {
		ret = -EINVAL;
		goto out;
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq)) {
		ret = -EINVAL;
		goto out;
	}
	ret = create_cqs(
		id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
		attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr);
	if (ret)
		goto out;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = errno ? -errno : -ENOMEM;
		goto err_destroy_cqs;
	}
	if (id->qp_type == IBV_QPT_UD)
		ret = init_ud_qp(cid, qp);
	else
		ret = modify_to(cid, qp, IBV_QPS_INIT);
	if (ret)
		goto err_destroy_qp;
	id->pd = qp->pd;
	id->qp = qp;
	srdma_cm_unlock();
	return 0;

err_destroy_qp:
	ibv_destroy_qp(qp);
err_destroy_cqs:
	destroy_cqs(id);
out:
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
				struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr_ex;
	int ret;

	if (!qp_init_attr)
		return srdma_cm_ret(-EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, qp_init_attr, sizeof(*qp_init_attr));
	attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr_ex.pd = pd ? pd : (id ? id->pd : NULL);
	ret = rdma_create_qp_ex(id, &attr_ex);
	if (!ret)
		memcpy(qp_init_attr, &attr_ex, sizeof(*qp_init_attr));
	return ret;
}

SRDMA_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id || srdma_cm_id_inherited(to_cm_id(id)))
		return;	/* the parent's QP stays the parent's */
	srdma_cm_lock();
	/* ibv_destroy_qp refuses a QP still attached to a group. */
	srdma_cm_mcast_release(to_cm_id(id), false);
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
	srdma_cm_unlock();
}

SRDMA_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				    struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;
	int ret = 0;

	if (!id || !attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ||
	    srdma_cm_id_inherited(to_cm_id(id)))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	if (!id->verbs || id->srq) {
		ret = -EINVAL;
		goto out;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
		attr->pd = id->pd;
	}
	if (!attr->pd || attr->pd->context != id->verbs) {
		ret = -EINVAL;
		goto out;
	}
	if (attr->srq_type != IBV_SRQT_BASIC) {
		/* XRC is not offered: ibv_open_xrcd would fail. */
		srdma_dbg("rdma_create_srq_ex: srq_type %d not supported "
			  "(basic SRQs only, no XRC)", (int)attr->srq_type);
		ret = -EOPNOTSUPP;
		goto out;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq) {
		ret = errno ? -errno : -ENOMEM;
		goto out;
	}
	id->srq = srq;
	if (!id->pd)
		id->pd = attr->pd;
out:
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex attr_ex;
	int ret;

	if (!id || !attr)
		return srdma_cm_ret(-EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	attr_ex.srq_context = attr->srq_context;
	attr_ex.attr = attr->attr;
	attr_ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	attr_ex.srq_type =
		id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	attr_ex.pd = pd;
	ret = rdma_create_srq_ex(id, &attr_ex);
	if (!ret)
		attr->attr = attr_ex.attr;
	return ret;
}

SRDMA_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || srdma_cm_id_inherited(to_cm_id(id)))
		return;	/* the parent's SRQ stays the parent's */
	srdma_cm_lock();
	if (id->srq)
		(void)ibv_destroy_srq(id->srq);
	id->srq = NULL;
	destroy_cqs(id);
	srdma_cm_unlock();
}

static int passive_ep(struct rdma_cm_id *id, struct rdma_addrinfo *res,
		      struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct cm_id *cid = to_cm_id(id);

	if (rdma_bind_addr(id, res->ai_src_addr))
		return -errno;
	srdma_cm_lock();
	if (pd)
		id->pd = pd;
	if (qp_init_attr) {
		cid->ep_qp_attr = malloc(sizeof(*qp_init_attr));
		if (!cid->ep_qp_attr) {
			srdma_cm_unlock();
			return -ENOMEM;
		}
		*cid->ep_qp_attr = *qp_init_attr;
		cid->ep_qp_attr->qp_type = res->ai_qp_type;
	}
	srdma_cm_unlock();
	return 0;
}

SRDMA_EXPORT int rdma_create_ep(struct rdma_cm_id **id,
				struct rdma_addrinfo *res, struct ibv_pd *pd,
				struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	int ret;

	if (!id || !res)
		return srdma_cm_ret(-EINVAL);
	if (rdma_create_id(NULL, &cm_id, NULL,
			   (enum rdma_port_space)res->ai_port_space))
		return -1;
	cm_id->qp_type = (enum ibv_qp_type)res->ai_qp_type;

	if (res->ai_flags & RAI_PASSIVE) {
		ret = passive_ep(cm_id, res, pd, qp_init_attr);
		if (ret)
			goto err_destroy;
		*id = cm_id;
		return 0;
	}
	if (rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr,
			      2000) ||
	    rdma_resolve_route(cm_id, 2000)) {
		ret = -errno;
		goto err_destroy;
	}
	if (qp_init_attr) {
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr)) {
			ret = -errno;
			goto err_destroy;
		}
	}
	*id = cm_id;
	return 0;

err_destroy:
	rdma_destroy_ep(cm_id);
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

SRDMA_EXPORT int rdma_get_request(struct rdma_cm_id *listen,
				  struct rdma_cm_id **id)
{
	struct rdma_cm_event *event;
	struct ibv_qp_init_attr attr;
	struct cm_id *l;
	bool sync, has_attr;
	int ret;

	if (!listen || !id || srdma_cm_id_inherited(to_cm_id(listen)))
		return srdma_cm_ret(-EINVAL);
	l = to_cm_id(listen);
	srdma_cm_lock();
	sync = l->sync;
	has_attr = l->ep_qp_attr != NULL;
	if (has_attr)
		attr = *l->ep_qp_attr;
	srdma_cm_unlock();
	if (!sync)
		return srdma_cm_ret(-EINVAL);

	if (rdma_get_cm_event(listen->channel, &event))
		return -1;
	if (event->status) {
		ret = event->status < 0 ? event->status : -ECONNREFUSED;
		goto err_ack;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = -EINVAL;
		goto err_ack;
	}
	if (has_attr && rdma_create_qp(event->id, listen->pd, &attr)) {
		ret = -errno;
		goto err_ack;
	}
	*id = event->id;
	(*id)->event = event;
	return 0;

err_ack:
	rdma_ack_cm_event(event);
	return srdma_cm_ret(ret);
}
