// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * gid.c - the port's link layer and its GID table (gid.h).
 *
 * InfiniBand (the default) keeps the one GID softrdma always had: fe80::/64
 * with the node GUID as interface id and the context's LID in its low 16
 * bits, so a GID decodes to its LID.
 *
 * Ethernet (SRDMA_LINK_LAYER=eth, or implied by SRDMA_TRANSPORT=net) makes
 * the port look like a RoCE port of rxe or a ConnectX NIC: the GID table is
 * built from the addresses of the network namespace's interfaces, read
 * once per context at open with getifaddrs(3) (netlink underneath). The
 * order, which applications see as GID indices (perftest -x, pingpong -g):
 *
 *   for each interface that is UP and not loopback, in ifindex order
 *     (loopback only when there is no other such interface):
 *       its default GID, fe80::/64 with the modified EUI-64 of its MAC
 *         (an interface without a MAC gets a stable, locally administered
 *         interface id hashed from its name instead);
 *       its IPv4 addresses as IPv4-mapped GIDs, ::ffff:a.b.c.d;
 *       its other IPv6 addresses (not link-local).
 *
 * Every entry is RoCE v2, the only type rxe and softrdma speak. A GID that
 * already has an index is not repeated. docs/design/net-gid.md has the
 * reasons.
 *
 * srdma_gid_is_local() answers "is this GID an address of this host?" for
 * the transport choice (select.c), from a process-wide snapshot of the
 * interfaces refreshed at most once a second (the answer is asked per UD
 * send, and getifaddrs() costs tens of microseconds).
 *
 * Concurrency: the link layer is parsed once (pthread_once); the snapshot
 * is under snap_lock; a context's table is immutable after open.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "transport/net/gid.h"
#include "util/log.h"
#include "util/sys.h"

/* ---- link layer ------------------------------------------------------- */

static bool link_eth;			/* immutable after link_once */
static pthread_once_t link_once = PTHREAD_ONCE_INIT;

static void link_parse(void)
{
	const char *v = getenv("SRDMA_LINK_LAYER");
	const char *t = getenv("SRDMA_TRANSPORT");

	srdma_log_init();
	if (v && *v) {
		if (!strcasecmp(v, "eth") || !strcasecmp(v, "ethernet") ||
		    !strcasecmp(v, "roce")) {
			link_eth = true;
			return;
		}
		if (strcasecmp(v, "ib") && strcasecmp(v, "infiniband"))
			srdma_warn("SRDMA_LINK_LAYER=%s unknown (ib or eth): "
				   "InfiniBand", v);
		else if (t && !strcasecmp(t, "net"))
			srdma_warn("SRDMA_TRANSPORT=net needs Ethernet, but "
				   "SRDMA_LINK_LAYER=%s: InfiniBand, no net "
				   "transport", v);
		link_eth = false;
		return;
	}
	link_eth = t && !strcasecmp(t, "net");
}

bool srdma_link_is_eth(void)
{
	pthread_once(&link_once, link_parse);
	return link_eth;
}

/* ---- reading the interfaces -------------------------------------------- */

struct ifinfo {
	char name[IF_NAMESIZE];
	uint32_t index;
	uint32_t flags;
	uint32_t mtu;
	bool has_mac;
	uint8_t mac[6];
};

/* One interface per name, in the order getifaddrs() lists their AF_PACKET
 * entries (ifindex order); interfaces with addresses but no AF_PACKET entry
 * are appended as their addresses show up. */
struct iflist {
	struct ifinfo *v;
	unsigned int n, cap;
};

static struct ifinfo *if_get(struct iflist *l, const struct ifaddrs *a)
{
	struct ifinfo *i;
	unsigned int k;

	for (k = 0; k < l->n; k++)
		if (!strncmp(l->v[k].name, a->ifa_name, IF_NAMESIZE))
			return &l->v[k];
	if (l->n == l->cap) {
		unsigned int cap = l->cap ? l->cap * 2 : 8;
		struct ifinfo *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		l->v = nv;
		l->cap = cap;
	}
	i = &l->v[l->n++];
	memset(i, 0, sizeof(*i));
	snprintf(i->name, sizeof(i->name), "%s", a->ifa_name);
	i->index = if_nametoindex(a->ifa_name);
	i->flags = a->ifa_flags;
	return i;
}

static uint32_t if_mtu(int fd, const char *name)
{
	struct ifreq r;

	if (fd < 0)
		return 1500;
	memset(&r, 0, sizeof(r));
	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", name);
	if (ioctl(fd, SIOCGIFMTU, &r) || r.ifr_mtu <= 0)
		return 1500;
	return (uint32_t)r.ifr_mtu;
}

static int if_collect(struct ifaddrs *all, struct iflist *l)
{
	struct ifaddrs *a;
	int fd = srdma_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unsigned int k;

	for (a = all; a; a = a->ifa_next) {
		struct ifinfo *i;

		if (!a->ifa_name)
			continue;
		i = if_get(l, a);
		if (!i) {
			if (fd >= 0)
				close(fd);
			return -ENOMEM;
		}
		i->flags = a->ifa_flags;
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_PACKET) {
			const struct sockaddr_ll *ll =
				(const struct sockaddr_ll *)a->ifa_addr;
			static const uint8_t zero[6];

			if (ll->sll_ifindex > 0)
				i->index = (uint32_t)ll->sll_ifindex;
			if (ll->sll_halen == 6 && memcmp(ll->sll_addr, zero, 6)) {
				memcpy(i->mac, ll->sll_addr, 6);
				i->has_mac = true;
			}
		}
	}
	for (k = 0; k < l->n; k++)
		l->v[k].mtu = if_mtu(fd, l->v[k].name);
	if (fd >= 0)
		close(fd);
	return 0;
}

/* ---- building GIDs ----------------------------------------------------- */

/* The default GID of an interface: fe80::/64 + modified EUI-64 of its MAC,
 * or, without one, a stable locally administered id hashed from its name
 * (FNV-1a), never the same as an EUI-64 (the U/L bit is clear). */
static void gid_link_local(const struct ifinfo *i, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[0] = 0xfe;
	g->raw[1] = 0x80;
	if (i->has_mac) {
		g->raw[8] = i->mac[0] ^ 0x02;
		g->raw[9] = i->mac[1];
		g->raw[10] = i->mac[2];
		g->raw[11] = 0xff;
		g->raw[12] = 0xfe;
		g->raw[13] = i->mac[3];
		g->raw[14] = i->mac[4];
		g->raw[15] = i->mac[5];
	} else {
		uint64_t h = 0xcbf29ce484222325ull;
		const char *c;

		for (c = i->name; *c; c++) {
			h ^= (uint8_t)*c;
			h *= 0x100000001b3ull;
		}
		h = htobe64(h);
		memcpy(&g->raw[8], &h, 8);
		g->raw[8] &= (uint8_t)~0x03;	/* local, individual */
	}
}

static void gid_from_v4(const struct in_addr *a, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	memcpy(&g->raw[12], &a->s_addr, 4);
}

static bool v6_link_local(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

static void table_add(struct srdma_gid_table *t, const union ibv_gid *g,
		      const struct ifinfo *i)
{
	struct srdma_gid_ent *e;

	if (t->n >= SRDMA_GID_MAX || srdma_gid_find(t, g) >= 0)
		return;
	e = &t->e[t->n++];
	memset(e, 0, sizeof(*e));
	e->gid = *g;
	e->type = IBV_GID_TYPE_ROCE_V2;
	e->ifindex = i->index;
	e->if_mtu = i->mtu;
	snprintf(e->ifname, sizeof(e->ifname), "%s", i->name);
}

/* Every GID of interface @i, in table order. */
static void table_add_if(struct srdma_gid_table *t, struct ifaddrs *all,
			 const struct ifinfo *i)
{
	struct ifaddrs *a;
	union ibv_gid g;

	gid_link_local(i, &g);
	table_add(t, &g, i);
	for (a = all; a; a = a->ifa_next) {
		if (!a->ifa_addr || !a->ifa_name ||
		    strncmp(a->ifa_name, i->name, IF_NAMESIZE) ||
		    a->ifa_addr->sa_family != AF_INET)
			continue;
		gid_from_v4(&((struct sockaddr_in *)a->ifa_addr)->sin_addr, &g);
		table_add(t, &g, i);
	}
	for (a = all; a; a = a->ifa_next) {
		const uint8_t *b;

		if (!a->ifa_addr || !a->ifa_name ||
		    strncmp(a->ifa_name, i->name, IF_NAMESIZE) ||
		    a->ifa_addr->sa_family != AF_INET6)
			continue;
		b = ((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr.s6_addr;
		if (v6_link_local(b))
			continue;
		memcpy(g.raw, b, 16);
		table_add(t, &g, i);
	}
}

static bool usable(const struct ifinfo *i, bool loopback)
{
	return (i->flags & IFF_UP) && !!(i->flags & IFF_LOOPBACK) == loopback;
}

static int table_build_eth(struct srdma_gid_table *t)
{
	struct iflist l = { 0 };
	struct ifaddrs *all;
	unsigned int k, used = 0;
	int ret;

	if (getifaddrs(&all))
		return -errno;
	ret = if_collect(all, &l);
	if (ret)
		goto out;
	for (k = 0; k < l.n; k++)
		if (usable(&l.v[k], false)) {
			table_add_if(t, all, &l.v[k]);
			used++;
		}
	if (!used)
		for (k = 0; k < l.n; k++)
			if (usable(&l.v[k], true)) {
				table_add_if(t, all, &l.v[k]);
				used++;
			}
	if (!used) {
		srdma_info("link layer Ethernet: no interface is up");
		ret = -ENODEV;
	}
out:
	free(l.v);
	freeifaddrs(all);
	return ret;
}

int srdma_gid_table_build(struct srdma_gid_table *t, uint32_t lid,
			  uint64_t guid)
{
	uint32_t k;
	int ret;

	memset(t, 0, sizeof(*t));
	if (!srdma_link_is_eth()) {
		uint64_t ifid = (be64toh(guid) & ~0xffffull) | (lid & 0xffff);

		t->e[0].gid.global.subnet_prefix =
			htobe64(0xfe80000000000000ull);
		t->e[0].gid.global.interface_id = htobe64(ifid);
		t->e[0].type = IBV_GID_TYPE_IB;
		t->n = 1;
		return 0;
	}
	ret = table_build_eth(t);
	if (ret) {
		memset(t, 0, sizeof(*t));
		return ret;
	}
	for (k = 0; k < t->n; k++) {
		char s[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, t->e[k].gid.raw, s, sizeof(s));
		srdma_dbg("GID[%u] %s (%s, ifindex %u, MTU %u)", k, s,
			  t->e[k].ifname, t->e[k].ifindex, t->e[k].if_mtu);
	}
	return 0;
}

int srdma_gid_table_build_eth(struct srdma_gid_table *t)
{
	int ret;

	memset(t, 0, sizeof(*t));
	ret = table_build_eth(t);
	if (ret)
		memset(t, 0, sizeof(*t));
	return ret;
}

int srdma_gid_find(const struct srdma_gid_table *t, const union ibv_gid *gid)
{
	uint32_t k;

	for (k = 0; k < t->n && k < SRDMA_GID_MAX; k++)
		if (!memcmp(t->e[k].gid.raw, gid->raw, 16))
			return (int)k;
	return -1;
}

enum ibv_mtu srdma_gid_active_mtu(const struct srdma_gid_table *t)
{
	uint32_t k, mtu = 0;

	for (k = 0; k < t->n && k < SRDMA_GID_MAX; k++)
		if (t->e[k].if_mtu) {
			mtu = t->e[k].if_mtu;
			break;
		}
	if (!mtu)
		return IBV_MTU_4096;
	/* rxe: the netdev MTU less the RoCEv2 headers, as an IB MTU. */
	mtu = mtu > 80 ? mtu - 80 : 0;
	if (mtu >= 4096)
		return IBV_MTU_4096;
	if (mtu >= 2048)
		return IBV_MTU_2048;
	if (mtu >= 1024)
		return IBV_MTU_1024;
	if (mtu >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* ---- is a GID one of this host's? --------------------------------------- */

#define SNAP_MAX 256
#define SNAP_TTL_NS 1000000000ull

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static union ibv_gid snap[SNAP_MAX];	/* snap_lock */
static unsigned int snap_n;		/* snap_lock */
static uint64_t snap_ns;		/* snap_lock: 0 = never read */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void snap_add(const union ibv_gid *g)
{
	unsigned int k;

	for (k = 0; k < snap_n; k++)
		if (!memcmp(snap[k].raw, g->raw, 16))
			return;
	if (snap_n < SNAP_MAX)
		snap[snap_n++] = *g;
}

/* Every address of every interface, up or not, and every default GID we
 * would derive. snap_lock held. */
static void snap_refresh(void)
{
	struct iflist l = { 0 };
	struct ifaddrs *all, *a;
	union ibv_gid g;
	unsigned int k;

	snap_n = 0;
	if (getifaddrs(&all))
		return;
	if (!if_collect(all, &l))
		for (k = 0; k < l.n; k++) {
			gid_link_local(&l.v[k], &g);
			snap_add(&g);
		}
	for (a = all; a; a = a->ifa_next) {
		if (!a->ifa_addr)
			continue;
		if (a->ifa_addr->sa_family == AF_INET) {
			gid_from_v4(&((struct sockaddr_in *)a->ifa_addr)
					      ->sin_addr, &g);
			snap_add(&g);
		} else if (a->ifa_addr->sa_family == AF_INET6) {
			memcpy(g.raw, ((struct sockaddr_in6 *)a->ifa_addr)
					      ->sin6_addr.s6_addr, 16);
			snap_add(&g);
		}
	}
	free(l.v);
	freeifaddrs(all);
}

bool srdma_gid_is_local(const union ibv_gid *gid)
{
	static const uint8_t v6_lo[16] = { [15] = 1 };
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };
	uint64_t now = mono_ns();
	bool found = false;
	unsigned int k;

	/* Loopback addresses are always ours, configured or not. */
	if (!memcmp(gid->raw, v6_lo, 16) ||
	    (!memcmp(gid->raw, v4map, 12) && gid->raw[12] == 127))
		return true;
	pthread_mutex_lock(&snap_lock);
	if (!snap_ns || now - snap_ns > SNAP_TTL_NS) {
		snap_refresh();
		snap_ns = now ? now : 1;
	}
	for (k = 0; k < snap_n && !found; k++)
		found = !memcmp(snap[k].raw, gid->raw, 16);
	pthread_mutex_unlock(&snap_lock);
	return found;
}
