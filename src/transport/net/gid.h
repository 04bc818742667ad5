/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * gid.h - the port's link layer and GID table.
 *
 * With link layer InfiniBand (the default, SRDMA_LINK_LAYER=ib) the table
 * has one entry, the link-local GID derived from the context's LID, as
 * before. With Ethernet (SRDMA_LINK_LAYER=eth, implied by
 * SRDMA_TRANSPORT=net) it is built from the addresses of the network
 * namespace's interfaces as a RoCE device shows them: per interface that
 * is up, its link-local fe80::/64 GID (EUI-64 from the MAC), then its
 * IPv4 addresses as ::ffff:a.b.c.d, then its other IPv6 addresses, every
 * entry of type RoCE v2 (docs/design/net.md says which interfaces and in
 * what order). The table is read once per context, at open.
 */
#ifndef SRDMA_TRANSPORT_NET_GID_H
#define SRDMA_TRANSPORT_NET_GID_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

#define SRDMA_GID_MAX 64		/* entries per port (gid_tbl_len) */

struct srdma_gid_ent {
	union ibv_gid gid;
	uint32_t type;			/* enum ibv_gid_type */
	uint32_t ifindex;		/* netdev, 0 for IB */
	uint32_t if_mtu;		/* netdev MTU in bytes, 0 for IB */
	char ifname[16];
};

struct srdma_gid_table {
	uint32_t n;
	struct srdma_gid_ent e[SRDMA_GID_MAX];
};

/* True if the port's link layer is Ethernet (parsed once; any thread). */
bool srdma_link_is_eth(void);

/**
 * srdma_gid_table_build() - fill @t for a context with LID @lid and node
 * GUID @guid (network order): IB, one entry; Ethernet, from the
 * interfaces. Return: 0, or -errno (Ethernet with no usable interface
 * gives -ENODEV).
 */
int srdma_gid_table_build(struct srdma_gid_table *t, uint32_t lid,
			  uint64_t guid);

/**
 * srdma_gid_table_build_eth() - fill @t as an Ethernet port's table would
 * be, whatever the link layer (the sysfs tree names a port's interfaces
 * from it in either mode). Return: 0, or -errno (-ENODEV: no interface).
 */
int srdma_gid_table_build_eth(struct srdma_gid_table *t);

/* Index of @gid in @t, or -1. */
int srdma_gid_find(const struct srdma_gid_table *t, const union ibv_gid *gid);

/* True if @gid is an address of this network namespace (any interface,
 * loopback included): a peer with such a GID is on this host. */
bool srdma_gid_is_local(const union ibv_gid *gid);

/* The port's active MTU, as rxe derives it from the interface MTU of
 * @t's first Ethernet entry (MTU - 80 rounded down to 256..4096);
 * IBV_MTU_4096 for IB. */
enum ibv_mtu srdma_gid_active_mtu(const struct srdma_gid_table *t);

#endif
