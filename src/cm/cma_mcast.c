// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_mcast.c - rdma_join_multicast(_ex) and rdma_leave_multicast.
 *
 * There is no subnet administrator to join: a join is answered at once,
 * with what the kernel's CM would report. The group's MGID comes from
 * the IP address as the kernel makes it:
 *   - InfiniBand: the IPoIB mapping (ip_ib_mc_map / ipv6_ib_mc_map) with
 *     link-local scope and the default P_Key, and the RDMA CM signature
 *     for RDMA_PS_UDP (ff12:4001:ffff::0a.bb.cc.dd for an IPv4 group,
 *     28 bits of it); an IPv6 address that is an SA-assigned MGID
 *     (ff1x:a01b::/32) is the MGID itself. The MLID, which an SA would
 *     assign, is derived from the MGID (0xc000..0xfffe), so every process
 *     of the host gets the same one.
 *   - RoCE: the address itself, IPv4-mapped for IPv4 (cma_iboe_set_mgid);
 *     it must be an IP multicast address.
 * The MULTICAST_JOIN event carries param.ud as librdmacm reports it: the
 * address vector towards the group (MLID, GRH with the MGID, our GID
 * index), qp_num 0xffffff, the Q_Key of the port space (RDMA_UDP_QKEY)
 * and, in private_data, the caller's context. As librdmacm does when the
 * event arrives, the id's QP (if it has one, and unless the join is
 * send-only) is attached with ibv_attach_mcast; if that fails the event
 * is MULTICAST_ERROR with the attach's -errno as status.
 *
 * rdma_leave_multicast detaches the QP, drops the join's events not yet
 * retrieved (as the kernel's ucma) and forgets the join; an address not
 * joined is EADDRNOTAVAIL. rdma_destroy_qp detaches the QP from every
 * group first (ibv_destroy_qp refuses an attached QP, as the kernel does),
 * and rdma_destroy_id forgets the joins.
 *
 * Locking: everything under cm.lock (cma_int.h). docs/design/multicast.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cma_int.h"
#include "util/log.h"

/* One join of an id. */
struct cm_mcast {
	struct sockaddr_storage addr;	/* as given */
	void *context;
	union ibv_gid mgid;
	uint16_t mlid;
	uint8_t join_flags;
	bool attached;			/* id's QP attached by us */
	struct ibv_qp *qp;		/* the QP attached */
	struct cm_mcast *next;
};

static socklen_t mc_sa_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

static bool mc_same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

static bool mc_addr_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return !((const struct sockaddr_in *)sa)->sin_addr.s_addr;
	return IN6_IS_ADDR_UNSPECIFIED(
		&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static bool mc_addr_is_mcast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(
			ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	return IN6_IS_ADDR_MULTICAST(
		&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/* The MGID of @sa for @id (see the file comment). */
static void mgid_of(const struct cm_id *id, const struct sockaddr *sa,
		    union ibv_gid *mgid)
{
	memset(mgid, 0, sizeof(*mgid));
	if (id->dev->roce) {
		if (sa->sa_family == AF_INET6) {
			memcpy(mgid->raw,
			       &((const struct sockaddr_in6 *)sa)->sin6_addr,
			       16);
		} else {
			mgid->raw[10] = mgid->raw[11] = 0xff;
			memcpy(mgid->raw + 12,
			       &((const struct sockaddr_in *)sa)->sin_addr, 4);
		}
		return;
	}
	if (sa->sa_family == AF_INET6) {
		const uint8_t *a =
			((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		/* An SA-assigned MGID is used as it is. */
		if (a[0] == 0xff && (a[1] & 0xf0) == 0x10 && a[2] == 0xa0 &&
		    a[3] == 0x1b) {
			memcpy(mgid->raw, a, 16);
			return;
		}
		mgid->raw[2] = 0x60;	/* IPv6 signature */
		memcpy(mgid->raw + 6, a + 6, 10);
	} else {
		uint32_t v4 = ntohl(
			((const struct sockaddr_in *)sa)->sin_addr.s_addr);

		mgid->raw[2] = 0x40;	/* IPv4 signature */
		mgid->raw[12] = (uint8_t)(v4 >> 24 & 0x0f);
		mgid->raw[13] = (uint8_t)(v4 >> 16);
		mgid->raw[14] = (uint8_t)(v4 >> 8);
		mgid->raw[15] = (uint8_t)v4;
	}
	mgid->raw[0] = 0xff;
	mgid->raw[1] = 0x12;	/* link-local scope, as IPoIB's broadcast */
	mgid->raw[3] = id->id.ps == RDMA_PS_UDP ? 0x01 : 0x1b;
	mgid->raw[4] = mgid->raw[5] = 0xff;	/* the default P_Key */
}

/* The MLID an SA would assign, made from the MGID (FNV-1a): the same in
 * every process, 0xc000..0xfffe. */
static uint16_t mlid_of(const union ibv_gid *mgid)
{
	uint32_t h = 2166136261u;
	unsigned int i;

	for (i = 0; i < 16; i++)
		h = (h ^ mgid->raw[i]) * 16777619u;
	return (uint16_t)(0xc000u + h % 0x3fffu);
}

static void fill_ud(struct cm_event *ev, const struct cm_id *id,
		    const struct cm_mcast *mc)
{
	struct rdma_ud_param *p = &ev->ev.param.ud;

	p->private_data = mc->context;	/* librdmacm: the join's context */
	p->private_data_len = 0;
	p->qp_num = 0xffffff;
	p->qkey = RDMA_UDP_QKEY;
	p->ah_attr.port_num = id->id.port_num ? id->id.port_num : 1;
	p->ah_attr.dlid = id->dev->roce ? 0 : mc->mlid;
	p->ah_attr.is_global = 1;
	p->ah_attr.grh.dgid = mc->mgid;
	p->ah_attr.grh.sgid_index = id->sgid_index;
	p->ah_attr.grh.traffic_class = id->tos;
	/* RoCE v2 over IPv4: the kernel's default hop limit (64). */
	p->ah_attr.grh.hop_limit = id->dev->roce ? 64 : 0;
}

static int join(struct rdma_cm_id *id, const struct sockaddr *addr,
		uint32_t join_flags, void *context)
{
	struct cm_id *cid = to_cm_id(id);
	struct cm_event *ev;
	struct cm_mcast *mc;
	int ret = 0;

	if (!addr || !mc_sa_len(addr))
		return addr ? -EAFNOSUPPORT : -EINVAL;
	if (srdma_cm_id_inherited(cid))
		return -EINVAL;
	srdma_cm_lock();
	/* The kernel's rdma_join_multicast: a UD id whose address is bound
	 * to the device, or resolved. */
	if (!cid->dev || (cid->state != CM_BOUND &&
			  cid->state != CM_ADDR_RESOLVED &&
			  cid->state != CM_ROUTE_RESOLVED)) {
		srdma_dbg("join multicast on id %p: not bound to the device",
			  (void *)id);
		ret = -EINVAL;
		goto out;
	}
	if (id->qp_type != IBV_QPT_UD) {
		srdma_dbg("join multicast on id %p: not a UD port space",
			  (void *)id);
		ret = -EINVAL;
		goto out;
	}
	if (mc_addr_any(addr) ||
	    (cid->dev->roce && !mc_addr_is_mcast(addr))) {
		srdma_dbg("join multicast on id %p: %s address",
			  (void *)id, mc_addr_any(addr) ? "a wildcard" :
			  "not a multicast");
		ret = -EINVAL;
		goto out;
	}
	mc = calloc(1, sizeof(*mc));
	ev = calloc(1, sizeof(*ev));
	if (!mc || !ev) {
		free(mc);
		free(ev);
		ret = -ENOMEM;
		goto out;
	}
	memcpy(&mc->addr, addr, mc_sa_len(addr));
	mc->context = context;
	mc->join_flags = (uint8_t)join_flags;
	mgid_of(cid, addr, &mc->mgid);
	mc->mlid = cid->dev->roce ? 0 : mlid_of(&mc->mgid);
	mc->next = cid->mc_list;
	cid->mc_list = mc;

	ev->mc = mc;
	ev->ev.event = RDMA_CM_EVENT_MULTICAST_JOIN;
	fill_ud(ev, cid, mc);
	if (id->qp && join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
		int r = ibv_attach_mcast(id->qp, &mc->mgid, mc->mlid);

		if (r) {
			ev->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
			ev->ev.status = -r;
		} else {
			mc->attached = true;
			mc->qp = id->qp;
		}
	}
	srdma_cm_event_push(cid, ev);
out:
	srdma_cm_unlock();
	if (!ret)
		ret = srdma_cm_complete(cid);
	return ret;
}

SRDMA_EXPORT int rdma_join_multicast(struct rdma_cm_id *id,
				     struct sockaddr *addr, void *context)
{
	if (!id)
		return srdma_cm_ret(-EINVAL);
	return srdma_cm_ret(join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER,
				 context));
}

SRDMA_EXPORT int
rdma_join_multicast_ex(struct rdma_cm_id *id,
		       struct rdma_cm_join_mc_attr_ex *mc_join_attr,
		       void *context)
{
	if (!id || !mc_join_attr)
		return srdma_cm_ret(-EINVAL);
	/* librdmacm's checks, in its order. */
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return srdma_cm_ret(-ENOTSUP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return srdma_cm_ret(-EINVAL);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return srdma_cm_ret(-EINVAL);
	return srdma_cm_ret(join(id, mc_join_attr->addr,
				 mc_join_attr->join_flags, context));
}

/* Detach @mc's QP if we attached it. Requires cm.lock. */
static void mc_detach(struct cm_mcast *mc)
{
	int r;

	if (!mc->attached)
		return;
	r = ibv_detach_mcast(mc->qp, &mc->mgid, mc->mlid);
	if (r)
		srdma_dbg("detach QP %#x from multicast group: %s",
			  mc->qp->qp_num, strerror(r));
	mc->attached = false;
}

SRDMA_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id,
				      struct sockaddr *addr)
{
	struct cm_mcast **pp, *mc;
	struct cm_id *cid;

	if (!id || !addr)
		return srdma_cm_ret(-EINVAL);
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	for (pp = &cid->mc_list; (mc = *pp); pp = &mc->next)
		if (mc_same_addr((struct sockaddr *)&mc->addr, addr))
			break;
	if (!mc) {
		srdma_cm_unlock();
		srdma_dbg("leave multicast on id %p: address not joined",
			  (void *)id);
		return srdma_cm_ret(-EADDRNOTAVAIL);
	}
	*pp = mc->next;
	mc_detach(mc);
	srdma_cm_events_drop_mc(cid, mc);
	free(mc);
	srdma_cm_unlock();
	return 0;
}

void srdma_cm_mcast_release(struct cm_id *id, bool free_all)
{
	struct cm_mcast *mc;

	for (mc = id->mc_list; mc; mc = mc->next)
		mc_detach(mc);
	if (!free_all)
		return;
	while ((mc = id->mc_list)) {
		id->mc_list = mc->next;
		srdma_cm_events_drop_mc(id, mc);
		free(mc);
	}
}
