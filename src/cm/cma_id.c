// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_id.c - rdma_cm ids: create/destroy, addresses, listen, options.
 *
 * Addressing. The side channel is TCP on the port the application binds
 * or connects to, so an id's address is a TCP socket's: rdma_bind_addr
 * binds one (reserving the port as real rdma_cm does), rdma_listen listens
 * on it, and the active side connects from it. Every local IP address
 * belongs to the one softrdma device, so binding a specific address or
 * resolving a destination attaches the id to that device (id->verbs, the
 * default PD, port 1); a wildcard bind leaves the id unattached until a
 * connection arrives, as on real rdma_cm.
 *
 * rdma_resolve_addr asks the kernel's routing table which source address
 * reaches the destination (a connected UDP socket; no packet is sent), so
 * an unroutable destination gives ADDR_ERROR at once. Reachability of the
 * port itself is only learnt at rdma_connect: a refused TCP connection is
 * what an InfiniBand CM reports as REJECTED with reason 8 (invalid service
 * id), and a silent host times out as UNREACHABLE.
 *
 * On a RoCE port that source address also picks the id's GID (its entry
 * in the port's GID table) and its interface the path MTU
 * (srdma_cm_id_set_source); a passive id takes the address the
 * connection arrived on. rdma_resolve_route has nothing to look up (the
 * peer's LID, GID and QPN come in the CM messages) and completes at once
 * with one path record built here, as the kernel builds a RoCE route:
 * GIDs, MTU, hop limit, traffic class, flow label.
 *
 * Lifetimes: ids live in cm.ids under cm.lock. rdma_destroy_id closes the
 * socket (the peer sees DISCONNECTED or a failed handshake), drops the
 * id's queued events, waits for retrieved events to be acked, then frees.
 * A listener takes its unreported children (hidden, or whose
 * CONNECT_REQUEST was never retrieved) with it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cma_int.h"
#include "util/log.h"

struct cm_global cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.epfd = -1,
	.wakefd = -1,
	.spare_fd = -1,
};

_Atomic uint32_t srdma_cm_fork_gen;

/* In a fork child: the parent's service thread may have held cm.lock. */
static void cm_atfork_child(void)
{
	atomic_fetch_add_explicit(&srdma_cm_fork_gen, 1, memory_order_relaxed);
	pthread_mutex_init(&cm.lock, NULL);
	pthread_cond_init(&cm.cond, NULL);
}

__attribute__((constructor)) static void cm_register_atfork(void)
{
	pthread_atfork(NULL, NULL, cm_atfork_child);
}

void srdma_cm_lock(void)
{
	pthread_mutex_lock(&cm.lock);
	if (unlikely(cm.pid != getpid())) {
		/*
		 * First use, or a fork()ed child: the parent's ids, sockets
		 * and service thread are not ours. Start over (the parent's
		 * memory is simply forgotten, as with its verbs objects).
		 */
		cm.ids = NULL;
		cm.n_held = 0;
		cm.dev_open = false;
		memset(&cm.dev, 0, sizeof(cm.dev));
		cm.epfd = -1;
		cm.wakefd = -1;
		cm.spare_fd = -1;
		cm.loop_started = false;
		cm.pid = getpid();
		/* librdmacm has its own copy of the log settings. */
		srdma_log_init();
	}
}

void srdma_cm_unlock(void)
{
	pthread_mutex_unlock(&cm.lock);
}

struct cm_id *srdma_cm_id_find(uint64_t serial)
{
	struct cm_id *id;

	for (id = cm.ids; id; id = id->next)
		if (id->serial == serial)
			return id;
	return NULL;
}

int srdma_cm_id_alloc(struct cm_channel *chan, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qp_type,
		      struct cm_id **out)
{
	struct cm_id *id = calloc(1, sizeof(*id));
	int ret;

	if (!id)
		return -ENOMEM;
	if (!chan) {
		ret = srdma_cm_channel_new(true, &chan);
		if (ret) {
			free(id);
			return ret;
		}
		id->sync = true;
	}
	id->chan = chan;
	id->id.channel = &chan->ch;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qp_type;
	id->id.route.path_rec = NULL;
	id->fd = -1;
	id->state = CM_IDLE;
	id->serial = ++cm.next_serial;
	id->gen = atomic_load_explicit(&srdma_cm_fork_gen, memory_order_relaxed);
	id->next = cm.ids;
	cm.ids = id;
	*out = id;
	return 0;
}

void srdma_cm_id_free(struct cm_id *id)
{
	struct cm_id **pp;

	srdma_cm_loop_close(id);
	srdma_cm_events_drop(id);
	for (pp = &cm.ids; *pp; pp = &(*pp)->next) {
		if (*pp == id) {
			*pp = id->next;
			break;
		}
	}
	if (id->dev)
		srdma_cm_device_put(id->dev);
	if (id->sync)
		srdma_cm_channel_free(id->chan);
	free(id->ep_qp_attr);
	free(id);
}

int srdma_cm_id_attach(struct cm_id *id)
{
	int ret;

	if (id->dev)
		return 0;
	ret = srdma_cm_device_get(&id->dev);
	if (ret)
		return ret;
	id->id.verbs = id->dev->verbs;
	id->id.pd = id->dev->pd;
	id->id.port_num = 1;
	id->id.route.addr.addr.ibaddr.sgid = id->dev->gid;
	id->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
	id->sgid_index = 0;
	id->sgid = id->dev->gid;
	id->path_mtu = id->dev->mtu;
	id->hop_limit = 64;
	return 0;
}

void srdma_cm_id_set_source(struct cm_id *id, const struct sockaddr *src,
			    int hop_limit)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)src;
	struct sockaddr_in v4;

	id->hop_limit = hop_limit > 0 && hop_limit < 256 ? (uint8_t)hop_limit
							 : 64;
	if (!id->dev->roce)
		return;
	/* A dual-stack socket names an IPv4 peer ::ffff:a.b.c.d. */
	if (src->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		memset(&v4, 0, sizeof(v4));
		v4.sin_family = AF_INET;
		memcpy(&v4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		src = (const struct sockaddr *)&v4;
	}
	if (srdma_cm_device_gid_of(id->dev, src, &id->sgid_index, &id->sgid,
				   &id->path_mtu)) {
		srdma_dbg("id %p: source address not in the GID table: GID "
			  "index 0", (void *)&id->id);
		return;
	}
	id->id.route.addr.addr.ibaddr.sgid = id->sgid;
	srdma_dbg("id %p: GID index %u, path MTU %d", (void *)&id->id,
		  id->sgid_index, 128 << id->path_mtu);
}

static int ps_qp_type(enum rdma_port_space ps, enum ibv_qp_type *qpt)
{
	switch (ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		*qpt = IBV_QPT_RC;
		return 0;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		*qpt = IBV_QPT_UD;
		return 0;
	default:
		return -EINVAL;
	}
}

SRDMA_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
				struct rdma_cm_id **id, void *context,
				enum rdma_port_space ps)
{
	enum ibv_qp_type qpt;
	struct cm_id *cid;
	int ret;

	if (!id) {
		errno = EINVAL;
		return -1;
	}
	ret = ps_qp_type(ps, &qpt);
	if (!ret && channel && srdma_cm_chan_inherited(to_cm_channel(channel)))
		ret = -EINVAL;
	if (!ret) {
		srdma_cm_lock();
		ret = srdma_cm_id_alloc(channel ? to_cm_channel(channel) : NULL,
					context, ps, qpt, &cid);
		srdma_cm_unlock();
	}
	if (ret) {
		errno = -ret;
		return -1;
	}
	*id = &cid->id;
	return 0;
}

/* Children of @listener that the application never saw go with it. */
static void drop_unreported_children(struct cm_id *listener)
{
	struct cm_id *c, *next;

	for (c = cm.ids; c; c = next) {
		next = c->next;
		if (c->listener != listener)
			continue;
		if (c->state == CM_REQ_WAIT ||
		    (c->events_queued && !c->events_out &&
		     c->state == CM_REQ_RCVD)) {
			srdma_cm_conn_abandon(c);
			srdma_cm_id_free(c);
			continue;
		}
		c->listener = NULL;
	}
}

SRDMA_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *cid;

	if (!id) {
		errno = EINVAL;
		return -1;
	}
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid)) {
		/* The parent's id: close our copies, no shutdown(). */
		if (cid->fd >= 0)
			close(cid->fd);
		cid->fd = -1;
		if (cid->sync && cid->chan->ch.fd >= 0)
			close(cid->chan->ch.fd);
		if (cid->sync)
			cid->chan->ch.fd = -1;
		return 0;
	}
	srdma_cm_lock();
	srdma_cm_sync_event_done(cid);
	/* The peer learns from a REJ or from the closed socket. */
	srdma_cm_conn_abandon(cid);
	srdma_cm_loop_close(cid);
	srdma_cm_events_drop(cid);
	srdma_cm_mcast_release(cid, true);
	if (cid->state == CM_LISTEN || cid->state == CM_BOUND)
		drop_unreported_children(cid);
	srdma_cm_wait_events_acked(cid);
	srdma_cm_id_free(cid);
	srdma_cm_unlock();
	return 0;
}

static socklen_t sa_len(const struct sockaddr *sa)
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

static bool sa_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(
		&((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static bool sa_is_mcast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(
			ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_MULTICAST(
		       &((const struct sockaddr_in6 *)sa)->sin6_addr);
}

static bool sa_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >>
			24) == IN_LOOPBACKNET;
	return sa->sa_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(
		       &((const struct sockaddr_in6 *)sa)->sin6_addr);
}

/*
 * Does binding @addr attach the device? Any address but the wildcard on
 * an InfiniBand port (IPoIB-like: every address of the host is srdma0's).
 * On a RoCE port a loopback address is none of the port's GIDs (unless
 * the host has no other interface): where the kernel's CM would refuse
 * such a bind, softrdma binds it as the wildcard, without a device
 * (verbs NULL; a connection's id gets one), so one-host programs on
 * 127.0.0.1 keep working. libfabric's verbs provider needs that: it
 * probes its endpoints' source address by binding "localhost", and takes
 * that address for the device's own when verbs is set - a listener no
 * other host reaches. A loopback destination still resolves to srdma0.
 * Requires cm.lock.
 */
static bool bind_attaches(const struct sockaddr *addr)
{
	struct ibv_port_attr pa;
	union ibv_gid want, g;
	int i;

	if (sa_is_any(addr))
		return false;
	/* No device: the attach reports it. */
	if (!sa_is_loopback(addr) || srdma_cm_device_open() || !cm.dev.roce ||
	    ibv_query_port(cm.dev.verbs, 1, &pa))
		return true;
	/* A host (network namespace) with no other interface has its
	 * loopback addresses in the GID table: those are the port's. */
	memset(&want, 0, sizeof(want));
	if (addr->sa_family == AF_INET) {
		want.raw[10] = 0xff;
		want.raw[11] = 0xff;
		memcpy(&want.raw[12],
		       &((const struct sockaddr_in *)addr)->sin_addr, 4);
	} else {
		memcpy(want.raw,
		       &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
	}
	for (i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(cm.dev.verbs, 1, i, &g) &&
		    !memcmp(&g, &want, sizeof(g)))
			return true;
	srdma_dbg("bind to a loopback address, none of the RoCE port's "
		  "GIDs: no device until a connection");
	return false;
}

static in_port_t sa_port(const struct sockaddr *sa)
{
	return ((const struct sockaddr_in *)sa)->sin_port; /* = sin6_port */
}

static bool sa_same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
				  &((const struct sockaddr_in6 *)b)->sin6_addr);
}

/*
 * Every socket has SO_REUSEADDR (a restarted server must not wait out
 * TIME_WAIT), which would let two bound, not yet listening sockets share
 * a port. rdma_cm reserves a port at bind, so ids of this process check
 * each other here, honouring RDMA_OPTION_ID_REUSEADDR on both.
 */
static bool port_taken(const struct cm_id *self, const struct sockaddr *addr)
{
	const struct cm_id *o;

	if (!sa_port(addr))
		return false;
	for (o = cm.ids; o; o = o->next) {
		const struct sockaddr *oa = &o->id.route.addr.src_addr;

		if (o == self || o->child || o->fd < 0 ||
		    sa_port(oa) != sa_port(addr))
			continue;
		if ((self->reuseaddr && o->reuseaddr) ||
		    (oa->sa_family == addr->sa_family && !sa_is_any(oa) &&
		     !sa_is_any(addr) && !sa_same_addr(oa, addr)))
			continue;
		return true;
	}
	return false;
}

/* Create and bind @id's TCP socket to @addr. Requires cm.lock. */
static int id_bind_socket(struct cm_id *id, const struct sockaddr *addr)
{
	struct sockaddr_storage got;
	socklen_t len = sa_len(addr), glen = sizeof(got);
	int one = 1, fd, ret;

	if (!len)
		return -EAFNOSUPPORT;
	if (port_taken(id, addr))
		return -EADDRINUSE;
	fd = srdma_socket(addr->sa_family,
			     SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* TIME_WAIT of an earlier run must not block a restart. */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->sa_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &id->afonly,
				 sizeof(id->afonly));
	if (bind(fd, addr, len) || getsockname(fd, (void *)&got, &glen)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	id->fd = fd;
	memcpy(&id->id.route.addr.src_storage, &got, glen);
	return 0;
}

int srdma_cm_id_rebind(struct cm_id *id)
{
	struct sockaddr_storage addr;

	memcpy(&addr, &id->id.route.addr.src_storage, sizeof(addr));
	srdma_cm_loop_close(id);
	return id_bind_socket(id, (struct sockaddr *)&addr);
}

SRDMA_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *cid;
	int ret;

	if (!id || !addr) {
		errno = EINVAL;
		return -1;
	}
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	if (cid->state != CM_IDLE) {
		ret = -EINVAL;
		goto out;
	}
	ret = id_bind_socket(cid, addr);
	if (ret)
		goto out;
	if (bind_attaches(addr)) {
		ret = srdma_cm_id_attach(cid);
		if (ret) {
			close(cid->fd);
			cid->fd = -1;
			goto out;
		}
		srdma_cm_id_set_source(cid, addr, 0);
	}
	cid->state = CM_BOUND;
out:
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct sockaddr_in any = {.sin_family = AF_INET};
	struct cm_id *cid;
	int ret = 0;

	if (!id) {
		errno = EINVAL;
		return -1;
	}
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	if (cid->state == CM_IDLE) {
		ret = id_bind_socket(cid, (struct sockaddr *)&any);
		if (!ret)
			cid->state = CM_BOUND;
	}
	if (!ret && cid->state != CM_BOUND)
		ret = -EINVAL;
	if (!ret && listen(cid->fd, backlog > 0 ? backlog : 128))
		ret = -errno;
	if (!ret)
		ret = srdma_cm_loop_watch(cid, false);
	if (!ret)
		cid->state = CM_LISTEN;
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}

/*
 * Which local address the kernel would use to reach @dst (port 0), and
 * the hop limit (TTL) of that route.
 */
static int route_source(const struct sockaddr *dst,
			struct sockaddr_storage *src, int *hops)
{
	socklen_t len = sizeof(*src), hlen = sizeof(*hops);
	int fd, ret = 0;

	*hops = 0;
	fd = srdma_socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, dst, sa_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		ret = -errno;
	if (!ret && getsockopt(fd, dst->sa_family == AF_INET6 ? IPPROTO_IPV6
							    : IPPROTO_IP,
			       dst->sa_family == AF_INET6 ? IPV6_UNICAST_HOPS
							  : IP_TTL,
			       hops, &hlen))
		*hops = 0;
	close(fd);
	if (!ret && src->ss_family == AF_INET)
		((struct sockaddr_in *)src)->sin_port = 0;
	else if (!ret)
		((struct sockaddr_in6 *)src)->sin6_port = 0;
	return ret;
}

/*
 * The flow label of a RoCE v2 path, as the kernel's CM chooses it: the
 * one an IPv6 source address carries in sin6_flowinfo, else a hash of
 * the two ports (the active side's source port x 31 + its destination
 * port, so both ends of a connection pick the same label).
 */
static uint32_t flow_label_of(const struct cm_id *id)
{
	const struct sockaddr *src = &id->id.route.addr.src_addr;
	const struct sockaddr *dst = &id->id.route.addr.dst_addr;
	uint32_t fl = 0, sport, dport;

	if (src->sa_family == AF_INET6)
		fl = ntohl(((const struct sockaddr_in6 *)src)->sin6_flowinfo) &
		     0xfffff;
	if (fl)
		return fl;
	sport = ntohs(sa_port(src));
	dport = ntohs(sa_port(dst));
	if (id->child) {
		uint32_t t = sport;

		sport = dport;
		dport = t;
	}
	return (sport * 31 + dport) & 0xfffff;
}

void srdma_cm_id_fill_path(struct cm_id *id)
{
	struct ibv_sa_path_rec *p = &id->path;

	id->flow_label = id->dev->roce ? flow_label_of(id) : 0;

	memset(p, 0, sizeof(*p));
	p->sgid = id->sgid;
	p->dgid = id->id.route.addr.addr.ibaddr.dgid;
	p->slid = htons(id->dev->lid);
	p->pkey = htons(0xffff);
	if (id->dev->roce) {
		/* RoCE v2: a routed path, built here as the kernel does. */
		p->hop_limit = id->hop_limit;
		p->traffic_class = id->tos;
		p->flow_label = htonl(id->flow_label);
	}
	p->mtu = id->path_mtu;
	p->mtu_selector = 2;
	p->rate = 3;
	p->rate_selector = 2;
	p->packet_life_time = 14;
	p->packet_life_time_selector = 2;
	p->reversible = 1;
	p->numb_path = 1;
	id->id.route.path_rec = p;
	id->id.route.num_paths = 1;
}

SRDMA_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id,
				   struct sockaddr *src_addr,
				   struct sockaddr *dst_addr, int timeout_ms)
{
	struct sockaddr_storage src, any;
	struct cm_id *cid;
	int ret = 0, err, hops;

	(void)timeout_ms;
	if (!id || !dst_addr || !sa_len(dst_addr)) {
		errno = dst_addr && !sa_len(dst_addr) ? EAFNOSUPPORT : EINVAL;
		return -1;
	}
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	if (cid->state != CM_IDLE && cid->state != CM_BOUND) {
		ret = -EINVAL;
		goto out;
	}
	if (cid->state == CM_IDLE) {
		memset(&any, 0, sizeof(any));
		if (src_addr && sa_len(src_addr))
			memcpy(&any, src_addr, sa_len(src_addr));
		else
			any.ss_family = dst_addr->sa_family;
		ret = id_bind_socket(cid, (struct sockaddr *)&any);
		if (ret)
			goto out;
		cid->state = CM_BOUND;
	}
	ret = srdma_cm_id_attach(cid);
	if (ret)
		goto out;
	memcpy(&id->route.addr.dst_storage, dst_addr, sa_len(dst_addr));
	id->route.addr.addr.ibaddr.dgid = cid->dev->gid;

	/* A multicast group from a bound source needs no route (the
	 * kernel routes it out of the source address's device). */
	if (sa_is_mcast(dst_addr) && !sa_is_any(&id->route.addr.src_addr) &&
	    id->route.addr.src_addr.sa_family == dst_addr->sa_family) {
		memcpy(&src, &id->route.addr.src_storage,
		       sa_len(&id->route.addr.src_addr));
		hops = 0;
		err = 0;
	} else {
		err = route_source(dst_addr, &src, &hops);
	}
	if (err) {
		srdma_cm_event_post(cid, NULL, RDMA_CM_EVENT_ADDR_ERROR, err,
				    NULL);
	} else {
		/* The source is the routed address unless bound to one. */
		if (sa_is_any(&id->route.addr.src_addr)) {
			in_port_t port = id->route.addr.src_sin.sin_port;

			if (src.ss_family ==
			    id->route.addr.src_addr.sa_family) {
				memcpy(&id->route.addr.src_storage, &src,
				       sa_len((struct sockaddr *)&src));
				id->route.addr.src_sin.sin_port = port;
			}
		}
		srdma_cm_id_set_source(cid, &id->route.addr.src_addr, hops);
		cid->state = CM_ADDR_RESOLVED;
		srdma_cm_event_post(cid, NULL, RDMA_CM_EVENT_ADDR_RESOLVED, 0,
				    NULL);
	}
out:
	srdma_cm_unlock();
	if (!ret)
		ret = srdma_cm_complete(cid);
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *cid;
	int ret = 0;

	(void)timeout_ms;
	if (!id) {
		errno = EINVAL;
		return -1;
	}
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	if (cid->state != CM_ADDR_RESOLVED) {
		ret = -EINVAL;
	} else {
		srdma_cm_id_fill_path(cid);
		cid->state = CM_ROUTE_RESOLVED;
		srdma_cm_event_post(cid, NULL, RDMA_CM_EVENT_ROUTE_RESOLVED, 0,
				    NULL);
	}
	srdma_cm_unlock();
	if (!ret)
		ret = srdma_cm_complete(cid);
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
				 void *optval, size_t optlen)
{
	struct cm_id *cid;
	int ret = 0;

	if (!id || !optval) {
		errno = EINVAL;
		return -1;
	}
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid))
		return srdma_cm_ret(-EINVAL);
	srdma_cm_lock();
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t))
				ret = -EINVAL;
			else
				cid->tos = *(uint8_t *)optval;
			break;
		case RDMA_OPTION_ID_REUSEADDR:
			if (optlen != sizeof(int))
				ret = -EINVAL;
			else if (cid->state != CM_IDLE)
				ret = -EINVAL;
			else
				cid->reuseaddr = *(int *)optval;
			break;
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int))
				ret = -EINVAL;
			else if (cid->state != CM_IDLE)
				ret = -EINVAL;
			else
				cid->afonly = !!*(int *)optval;
			break;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t) ||
			    *(uint8_t *)optval > 31) {
				ret = -EINVAL;
			} else {
				cid->ack_timeout = *(uint8_t *)optval;
				cid->ack_timeout_set = true;
			}
			break;
		default:
			ret = -ENOSYS;
		}
	} else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		/* Paths are not used: the peer's LID comes in the REQ/REP. */
		if (!optlen || optlen % sizeof(struct ibv_path_data))
			ret = -EINVAL;
	} else {
		ret = -ENOSYS;
	}
	srdma_cm_unlock();
	return srdma_cm_ret(ret);
}

SRDMA_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.src_addr;

	if (sa->sa_family == AF_INET)
		return id->route.addr.src_sin.sin_port;
	if (sa->sa_family == AF_INET6)
		return id->route.addr.src_sin6.sin6_port;
	return 0;
}

SRDMA_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	const struct sockaddr *sa = &id->route.addr.dst_addr;

	if (sa->sa_family == AF_INET)
		return id->route.addr.dst_sin.sin_port;
	if (sa->sa_family == AF_INET6)
		return id->route.addr.dst_sin6.sin6_port;
	return 0;
}
