// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mcast_net.c - UD multicast on the wire, as RoCEv2 (and rxe) does it.
 *
 * A multicast GID of a RoCE port is an IP multicast address: IPv4-mapped
 * (::ffff:224.0.0.0/4; what the CM makes of an IPv4 group address) or
 * IPv6 (ff00::/8). Sending needs nothing special: the net requester sends
 * the UD packet (DQPN 0xffffff) to that address on UDP 4791, and the
 * source address pinned from the address vector's GID makes the kernel
 * pick that address's interface. The endpoint's socket does not loop its
 * multicast back (IP_MULTICAST_LOOP 0): the members on this host got
 * their copy from the sender through the host transport already
 * (engine/requester.c).
 *
 * Receiving: the first attach of one of the context's QPs to a group
 * joins the group's address on the endpoint's socket (IP_ADD_MEMBERSHIP,
 * or IPV6_ADD_MEMBERSHIP) on every interface of the GID table with an
 * address of the group's family, as rxe's CM joins IGMP on its device;
 * the last detach leaves it. The socket receives only the groups it
 * joined (IP_MULTICAST_ALL 0). Multicast delivery ignores reuseport
 * steering: every joined socket of the namespace gets its copy, and each
 * context hands it to its own attached QPs (srdma_net_mcast_input).
 *
 * SRDMA_NET_MCAST=0 keeps multicast on this host: no IP membership, no
 * multicast datagram on the wire (test runs in a machine's own network
 * namespace use it: a group's reports and packets would leave the
 * machine).
 *
 * Concurrency: the joined groups of all contexts of the process are one
 * list under mc_lock (attach/detach only, never the data path).
 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/core.h"
#include "core/dp.h"
#include "transport/host/mcast.h"
#include "transport/net/gid.h"
#include "transport/net/net.h"
#include "transport/net/wire.h"
#include "util/log.h"

struct joined {
	struct srdma_context *ctx;
	uint8_t mgid[16];
	uint32_t refs;			/* QPs of ctx attached */
	struct joined *next;
};

static pthread_mutex_t mc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct joined *mc_list;		/* mc_lock */

static pthread_once_t wire_once = PTHREAD_ONCE_INIT;
static bool wire_on;			/* immutable after wire_once */

static void wire_init(void)
{
	const char *v = getenv("SRDMA_NET_MCAST");

	wire_on = !v || strcmp(v, "0");
}

bool srdma_net_mcast_wire(void)
{
	pthread_once(&wire_once, wire_init);
	return wire_on;
}

void srdma_net_mcast_sockopts(int fd)
{
	int zero = 0;

	/* Members on this host are served by the host transport. */
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &zero,
		       sizeof(zero)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &zero,
		       sizeof(zero)))
		srdma_dbg("multicast loop off: %s", strerror(errno));
	/* Only the groups this socket joined. */
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero)))
		srdma_dbg("IP_MULTICAST_ALL: %s", strerror(errno));
#ifdef IPV6_MULTICAST_ALL
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &zero,
		       sizeof(zero)))
		srdma_dbg("IPV6_MULTICAST_ALL: %s", strerror(errno));
#endif
}

/* Join (@add) or leave @mgid on every interface of the GID table with an
 * address of its family. Return the interfaces that accepted. */
static int membership(struct srdma_context *ctx, int fd,
		      const uint8_t mgid[16], bool add)
{
	bool v4 = srdma_gid_is_v4(mgid);
	uint32_t done[SRDMA_GID_MAX];
	uint32_t i, k, ndone = 0;
	int ok = 0;

	for (i = 0; i < ctx->gids.n; i++) {
		const struct srdma_gid_ent *e = &ctx->gids.e[i];
		int r;

		if (!e->ifindex || srdma_gid_is_v4(e->gid.raw) != v4)
			continue;
		for (k = 0; k < ndone && done[k] != e->ifindex; k++)
			;
		if (k < ndone)
			continue;
		done[ndone++] = e->ifindex;
		if (v4) {
			struct ip_mreqn mr = { .imr_ifindex = (int)e->ifindex };

			memcpy(&mr.imr_multiaddr, mgid + 12, 4);
			r = setsockopt(fd, IPPROTO_IP,
				       add ? IP_ADD_MEMBERSHIP :
					     IP_DROP_MEMBERSHIP,
				       &mr, sizeof(mr));
		} else {
			struct ipv6_mreq mr = { .ipv6mr_interface = e->ifindex };

			memcpy(&mr.ipv6mr_multiaddr, mgid, 16);
			r = setsockopt(fd, IPPROTO_IPV6,
				       add ? IPV6_ADD_MEMBERSHIP :
					     IPV6_DROP_MEMBERSHIP,
				       &mr, sizeof(mr));
		}
		if (r)
			srdma_dbg("lid %u: %s multicast group on %s: %s",
				  ctx->host.lid, add ? "join" : "leave",
				  e->ifname, strerror(errno));
		else
			ok++;
	}
	return ok;
}

int srdma_net_mcast_join(struct srdma_context *ctx, const uint8_t mgid[16])
{
	struct joined *j;
	int fd, ret = 0;

	pthread_mutex_lock(&mc_lock);
	for (j = mc_list; j; j = j->next)
		if (j->ctx == ctx && !memcmp(j->mgid, mgid, 16)) {
			j->refs++;
			goto out;
		}
	j = calloc(1, sizeof(*j));
	if (!j) {
		ret = -ENOMEM;
		goto out;
	}
	j->ctx = ctx;
	memcpy(j->mgid, mgid, 16);
	j->refs = 1;
	j->next = mc_list;
	mc_list = j;
	if (!srdma_net_mcast_wire())
		goto out;	/* SRDMA_NET_MCAST=0: this host only */
	/* Without an endpoint (none can be opened here: another program
	 * owns 4791) the host's members still get their copies; say why
	 * the wire's do not. */
	fd = srdma_net_udp_fd(ctx);
	if (fd < 0)
		srdma_info("lid %u: no net endpoint (%s): multicast from other hosts will not arrive",
			   ctx->host.lid, strerror(-fd));
	else if (!membership(ctx, fd, mgid, true))
		srdma_info("lid %u: no interface joined the multicast group",
			   ctx->host.lid);
out:
	pthread_mutex_unlock(&mc_lock);
	return ret;
}

void srdma_net_mcast_leave(struct srdma_context *ctx, const uint8_t mgid[16])
{
	struct joined **pp, *j;
	int fd;

	pthread_mutex_lock(&mc_lock);
	for (pp = &mc_list; (j = *pp); pp = &j->next)
		if (j->ctx == ctx && !memcmp(j->mgid, mgid, 16))
			break;
	if (j && !--j->refs) {
		*pp = j->next;
		fd = srdma_net_mcast_wire() ? srdma_net_udp_fd(ctx) : -1;
		if (fd >= 0)
			membership(ctx, fd, mgid, false);
		free(j);
	}
	pthread_mutex_unlock(&mc_lock);
}

unsigned int srdma_net_mcast_targets(struct srdma_context *ctx,
				     const uint8_t mgid[16], uint32_t *qpn,
				     unsigned int max)
{
	struct srdma_mcast_dest d[SRDMA_MCAST_QP_ATTACH];
	unsigned int n, i;

	if (max > SRDMA_MCAST_QP_ATTACH)
		max = SRDMA_MCAST_QP_ATTACH;
	n = srdma_mcast_members(ctx, mgid, 0, ctx->host.lid, d, max);
	for (i = 0; i < n; i++)
		qpn[i] = d[i].qpn;
	return n;
}
