// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mcast.c - ibv_attach_mcast and ibv_detach_mcast: the checks of the
 * kernel's uverbs and ib_attach_mcast (a UD QP, a multicast GID, on an
 * InfiniBand port a multicast LID; detaching what is not attached is
 * EINVAL), then the host's group table (transport/host/mcast.c) and, on
 * an Ethernet port, the net endpoint's IP group membership, so packets
 * sent to the group by other hosts reach this context.
 *
 * Deliberately not here: the delivery (engine/requester.c for senders on
 * this host, transport/net/endpoint.c for packets from the wire) and the
 * join protocol (the CM synthesises what an SA would answer).
 * Concurrency: the table has its own shared lock; qp->n_mcast is atomic.
 * Design: docs/design/multicast.md.
 */
#include <endian.h>
#include <errno.h>

#include "core/core.h"
#include "core/dp.h"
#include "transport/host/mcast.h"
#include "transport/net/net.h"
#include "util/log.h"

static int mcast_check(struct srdma_qp *qp, const union ibv_gid *gid,
		       uint16_t lid, const char *what)
{
	if (!gid) {
		srdma_dbg("%s QP %#x: no GID", what, qp->ib.qp.qp_num);
		return -EINVAL;
	}
	if (qp->type != IBV_QPT_UD) {
		srdma_dbg("%s QP %#x: only UD QPs join multicast groups", what,
			  qp->ib.qp.qp_num);
		return -EINVAL;
	}
	if (!srdma_gid_is_mcast(gid->raw)) {
		srdma_dbg("%s QP %#x: GID %016llx%016llx is not a multicast GID",
			  what, qp->ib.qp.qp_num,
			  (unsigned long long)be64toh(gid->global.subnet_prefix),
			  (unsigned long long)be64toh(gid->global.interface_id));
		return -EINVAL;
	}
	/* RoCE annex: the LID is ignored on an Ethernet port. */
	if (!srdma_link_is_eth() &&
	    (lid < SRDMA_MCAST_LID_BASE || lid == 0xffff)) {
		srdma_dbg("%s QP %#x: LID %#x is not a multicast LID (0xc000..0xfffe)",
			  what, qp->ib.qp.qp_num, lid);
		return -EINVAL;
	}
	return 0;
}

int srdma_qp_attach_mcast(struct srdma_qp *qp, const union ibv_gid *gid,
			  uint16_t lid)
{
	int ret = mcast_check(qp, gid, lid, "attach");

	if (ret)
		return ret;
	ret = srdma_mcast_attach(qp->ctx, qp->ib.qp.qp_num, gid->raw, lid);
	if (ret < 0)
		return ret;
	if (ret == 1)
		return 0;	/* attached already */
	if (srdma_link_is_eth()) {
		ret = srdma_net_mcast_join(qp->ctx, gid->raw);
		if (ret) {
			srdma_mcast_detach(qp->ctx, qp->ib.qp.qp_num, gid->raw,
					   lid);
			return ret;
		}
	}
	atomic_fetch_add(&qp->n_mcast, 1);
	return 0;
}

int srdma_qp_detach_mcast(struct srdma_qp *qp, const union ibv_gid *gid,
			  uint16_t lid)
{
	int ret = mcast_check(qp, gid, lid, "detach");

	if (ret)
		return ret;
	ret = srdma_mcast_detach(qp->ctx, qp->ib.qp.qp_num, gid->raw, lid);
	if (ret) {
		srdma_dbg("detach QP %#x: not attached to that group and LID %#x",
			  qp->ib.qp.qp_num, lid);
		return ret;
	}
	if (srdma_link_is_eth())
		srdma_net_mcast_leave(qp->ctx, gid->raw);
	atomic_fetch_sub(&qp->n_mcast, 1);
	return 0;
}
