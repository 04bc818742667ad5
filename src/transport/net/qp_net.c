// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * qp_net.c - the net half of a QP (net.h): its life from create to
 * destroy, and what each modify_qp means for it.
 *
 * With an Ethernet port every RC, UC and UD QP gets a net half at create
 * (srdma_net_qp_create): the requester and responder state of req.c and
 * resp.c, and the QP's counters, which live in the context's shared
 * segment (ring arena) so that `srdma status` in another process can read
 * them; the QP's shared entry records where (net_st_off,
 * docs/design/host-segment.md). Whether the net half is *used* is decided
 * at RTR:
 *
 *   RC/UC: connected = srdma_net_dest(AV, dest QPN) (select.c). The path
 *          (our GID at sgid_index -> the AV's dgid, UDP ports, path MTU,
 *          traffic class, hop limit) is recorded and the QP registered
 *          with the context's endpoint, so arriving packets reach it.
 *          A destination served by the host transport leaves the net half
 *          idle: the engine's host path runs as before.
 *   UD:    the AV comes with each WR, so any UD QP may hear from another
 *          host: it is registered whenever the endpoint can be opened
 *          (best effort, unless SRDMA_TRANSPORT=net asks for the wire).
 *
 * RTR also sets the responder's expected PSN (rq_psn), RTS the requester's
 * first PSN (sq_psn). RESET forgets both sides; ERR flushes the requester
 * (srdma_qp_set_error() flushes it again for errors found elsewhere; the
 * second flush finds nothing). A QP stays registered until destroy: the
 * endpoint's unregister waits for dispatch pins, and dispatch takes
 * qp->sq_lock, which modify_qp holds, so it must never wait here. Packets
 * for a QP in RESET or INIT are dropped by the protocol's state check.
 *
 * Locks: modify runs under qp->sq_lock (srdma_qp_modify); the path is
 * written with nq->resp_lock held too (net.h). ctx->lock only around the
 * arena allocation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/dp.h"
#include "transport/net/gid.h"
#include "transport/net/net.h"
#include "util/log.h"

/* The stats block, page-rounded by the arena. */
#define NET_ST_BYTES sizeof(struct srdma_net_qp_stats)

int srdma_net_qp_create(struct srdma_qp *qp)
{
	struct srdma_context *ctx = qp->ctx;
	struct srdma_net_qp *nq;
	uint64_t off;
	int ret;

	nq = calloc(1, sizeof(*nq));
	if (!nq)
		return -ENOMEM;
	nq->qp = qp;
	nq->ctx = ctx;
	nq->qpn = qp->ib.qp.qp_num;
	nq->mtu = 1024;
	nq->hop_limit = 64;
	pthread_mutex_init(&nq->resp_lock, NULL);
	pthread_mutex_lock(&ctx->lock);
	ret = srdma_arena_alloc(ctx, NET_ST_BYTES, &off);
	pthread_mutex_unlock(&ctx->lock);
	if (ret)
		goto err_free;
	nq->st_off = off;
	nq->st = srdma_seg_ptr(ctx->host.seg, off);	/* zeroed */
	nq->req = srdma_netreq_new(nq);
	nq->resp = srdma_netresp_new(nq);
	if (!nq->req || !nq->resp) {
		ret = -ENOMEM;
		goto err_parts;
	}
	atomic_store_explicit(&qp->sh->net_st_off, off, memory_order_release);
	qp->net = nq;
	return 0;

err_parts:
	if (nq->req)
		srdma_netreq_free(nq->req);
	if (nq->resp)
		srdma_netresp_free(nq->resp);
	pthread_mutex_lock(&ctx->lock);
	srdma_arena_free(ctx, off, NET_ST_BYTES);
	pthread_mutex_unlock(&ctx->lock);
err_free:
	pthread_mutex_destroy(&nq->resp_lock);
	free(nq);
	return ret;
}

void srdma_net_qp_destroy(struct srdma_qp *qp)
{
	struct srdma_net_qp *nq = qp->net;
	struct srdma_context *ctx = qp->ctx;

	if (!nq)
		return;
	/* Unreachable first: no dispatch can pin it after this. */
	if (nq->registered)
		srdma_net_qp_unregister(nq);
	nq->registered = false;
	pthread_mutex_lock(&qp->sq_lock);
	/* An ACK held back for the peer still leaves (net-responder.md). */
	if (nq->connected)
		srdma_netresp_ack_flush(nq);
	srdma_netreq_flush_locked(qp);
	pthread_mutex_unlock(&qp->sq_lock);
	srdma_netreq_free(nq->req);
	srdma_netresp_free(nq->resp);
	atomic_store(&qp->sh->net_st_off, 0);
	pthread_mutex_lock(&ctx->lock);
	srdma_arena_free(ctx, nq->st_off, NET_ST_BYTES);
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_destroy(&nq->resp_lock);
	qp->net = NULL;
	free(nq);
}

static uint32_t mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 1024u;
}

/* The path MTU is part of the path: written with both locks held. */
static void set_mtu(struct srdma_net_qp *nq, enum ibv_mtu m)
{
	pthread_mutex_lock(&nq->resp_lock);
	nq->mtu = mtu_bytes(m);
	pthread_mutex_unlock(&nq->resp_lock);
}

/* Fill @p from the address vector @ah: our GID at its sgid_index to its
 * dgid. Return: 0, or -EINVAL when the AV names no GID of ours. */
static int path_from_av(struct srdma_context *ctx, const struct ibv_ah_attr *ah,
			struct srdma_wire_path *p)
{
	if (!ah->is_global || ah->grh.sgid_index >= ctx->gids.n)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	memcpy(p->sip, ctx->gids.e[ah->grh.sgid_index].gid.raw, 16);
	memcpy(p->dip, ah->grh.dgid.raw, 16);
	p->dport = SRDMA_ROCE_PORT;
	/* The endpoint may pick another source port when it registers. */
	p->sport = SRDMA_ROCE_PORT;
	return 0;
}

/* Make @nq reachable by the endpoint's dispatch (once). sq_lock held. */
static int net_register(struct srdma_net_qp *nq)
{
	int ret;

	if (nq->registered)
		return 0;
	if (!srdma_net_ctx_get(nq->ctx))
		return errno ? -errno : -ENODEV;
	ret = srdma_net_qp_register(nq);
	if (ret)
		return ret;
	nq->registered = true;
	atomic_fetch_or_explicit(&nq->st->flags, SRDMA_NET_ST_REGISTERED,
				 memory_order_relaxed);
	return 0;
}

/* INIT -> RTR (and an AV change later): choose the transport, set the
 * path, the responder's ePSN, and register. sq_lock held. */
static int modify_rtr(struct srdma_qp *qp, struct srdma_net_qp *nq,
		      const struct ibv_qp_attr *attr, int mask)
{
	struct srdma_wire_path path;
	bool connected = false;
	const char *why;
	int ret;

	if (qp->type != IBV_QPT_UD && (mask & IBV_QP_AV)) {
		uint32_t dqpn = (mask & IBV_QP_DEST_QPN)
					? attr->dest_qp_num & 0xffffff
					: qp->attr.dest_qp_num;

		connected = srdma_net_dest_why(qp->ctx, &attr->ah_attr, dqpn,
					       &why);
		if (connected) {
			ret = path_from_av(qp->ctx, &attr->ah_attr, &path);
			if (ret)
				return ret;
			ret = net_register(nq);
			if (ret) {
				srdma_dbg("qp %#x: no net endpoint: %d",
					  nq->qpn, ret);
				return ret;
			}
		}
		if (connected)
			atomic_fetch_or_explicit(&nq->st->flags,
						 SRDMA_NET_ST_CONNECTED,
						 memory_order_relaxed);
		else
			atomic_fetch_and_explicit(&nq->st->flags,
						  ~(uint32_t)SRDMA_NET_ST_CONNECTED,
						  memory_order_relaxed);
		pthread_mutex_lock(&nq->resp_lock);
		nq->connected = connected;
		if (connected) {
			nq->path = path;
			nq->dqpn = dqpn;
			nq->tclass = attr->ah_attr.grh.traffic_class;
			nq->hop_limit = attr->ah_attr.grh.hop_limit;
		}
		pthread_mutex_unlock(&nq->resp_lock);
		srdma_info("qp %#x -> qpn %#x: transport %s (%s)", nq->qpn,
			   dqpn, connected ? "net" : "host", why);
	} else if (qp->type == IBV_QPT_UD &&
		   srdma_transport_mode() != SRDMA_TRANSPORT_HOST) {
		ret = net_register(nq);
		if (ret && srdma_transport_mode() == SRDMA_TRANSPORT_NET)
			return ret;
		if (ret)
			srdma_dbg("qp %#x: UD without net endpoint (%d): "
				  "this host only", nq->qpn, ret);
	}
	if (mask & IBV_QP_PATH_MTU)
		set_mtu(nq, attr->path_mtu);
	if (mask & IBV_QP_RQ_PSN) {
		pthread_mutex_lock(&nq->resp_lock);
		srdma_netresp_reset(nq, attr->rq_psn & 0xffffff);
		pthread_mutex_unlock(&nq->resp_lock);
		atomic_store_explicit(&nq->st->rq_psn, attr->rq_psn & 0xffffff,
				      memory_order_relaxed);
	}
	return 0;
}

int srdma_net_qp_modify(struct srdma_qp *qp, const struct ibv_qp_attr *attr,
			int mask)
{
	struct srdma_net_qp *nq = qp->net;
	enum ibv_qp_state cur =
		(enum ibv_qp_state)atomic_load(&qp->sh->state);
	enum ibv_qp_state next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	int ret;

	if (!nq)
		return 0;
	if (next == IBV_QPS_RESET && (mask & IBV_QP_STATE)) {
		srdma_netreq_reset(nq, 0);
		pthread_mutex_lock(&nq->resp_lock);
		srdma_netresp_reset(nq, 0);
		nq->connected = false;
		pthread_mutex_unlock(&nq->resp_lock);
		atomic_fetch_and_explicit(&nq->st->flags,
					  ~(uint32_t)SRDMA_NET_ST_CONNECTED,
					  memory_order_relaxed);
		atomic_store(&nq->deadline_ns, 0);
		return 0;
	}
	if (next == IBV_QPS_ERR && (mask & IBV_QP_STATE)) {
		/* What we executed is acknowledged before we fall silent. */
		if (nq->connected)
			srdma_netresp_ack_flush(nq);
		srdma_netreq_flush_locked(qp);
		return 0;
	}
	if ((next == IBV_QPS_RTR && cur == IBV_QPS_INIT) ||
	    ((mask & IBV_QP_AV) && cur != IBV_QPS_INIT)) {
		ret = modify_rtr(qp, nq, attr, mask);
		if (ret)
			return ret;
	} else if (mask & IBV_QP_PATH_MTU) {
		set_mtu(nq, attr->path_mtu);
	}
	if (mask & IBV_QP_SQ_PSN) {
		srdma_netreq_reset(nq, attr->sq_psn & 0xffffff);
		atomic_store_explicit(&nq->st->sq_psn, attr->sq_psn & 0xffffff,
				      memory_order_relaxed);
	}
	return 0;
}
