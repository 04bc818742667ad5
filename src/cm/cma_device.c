// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_device.c - the verbs device rdma_cm ids attach to, and
 * rdma_get_devices / rdma_free_devices.
 *
 * softrdma has one device (SRDMA_DEVICE, default srdma0) and every local
 * IP address maps to it. Like real librdmacm, the CM opens the device's
 * verbs context once and keeps it for the life of the process, so
 * id->verbs pointers stay valid and comparable; the default PD (id->pd
 * before a QP or SRQ names another) is allocated for the first attached
 * id and released with the last one.
 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cm/cma_int.h"
#include "util/log.h"

int srdma_cm_device_open(void)
{
	struct cm_device *d = &cm.dev;
	struct ibv_device **list;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	int n, ret = 0;

	if (cm.dev_open)
		return 0;
	list = ibv_get_device_list(&n);
	if (!list)
		return errno ? -errno : -ENODEV;
	if (n < 1) {
		ret = -ENODEV;
		goto out_free;
	}
	d->verbs = ibv_open_device(list[0]);
	if (!d->verbs) {
		ret = errno ? -errno : -ENODEV;
		goto out_free;
	}
	if (ibv_query_device(d->verbs, &dattr) ||
	    ibv_query_port(d->verbs, 1, &pattr) ||
	    ibv_query_gid(d->verbs, 1, 0, &d->gid)) {
		ret = -ENODEV;
		ibv_close_device(d->verbs);
		d->verbs = NULL;
		goto out_free;
	}
	d->lid = pattr.lid;
	d->roce = pattr.link_layer == IBV_LINK_LAYER_ETHERNET;
	d->mtu = pattr.active_mtu;
	d->max_resp_res =
		(uint8_t)(dattr.max_qp_rd_atom > 0xfe ? 0xfe
						      : dattr.max_qp_rd_atom);
	d->max_init_depth = (uint8_t)(dattr.max_qp_init_rd_atom > 0xfe
					      ? 0xfe
					      : dattr.max_qp_init_rd_atom);
	cm.dev_open = true;
out_free:
	ibv_free_device_list(list);
	return ret;
}

/* The path MTU an interface of MTU @ifmtu carries (rxe's rule). */
static enum ibv_mtu path_mtu_of(int ifmtu)
{
	int room = ifmtu - 80; /* Ethernet, IP, UDP, BTH, ICRC and more */

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* The MTU of interface @ifindex now, or 0. */
static int ifindex_mtu(uint32_t ifindex)
{
	char name[IF_NAMESIZE];
	struct ifreq r;
	int fd, mtu = 0;

	if (!ifindex || !if_indextoname(ifindex, name))
		return 0;
	fd = srdma_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	memset(&r, 0, sizeof(r));
	memcpy(r.ifr_name, name, sizeof(r.ifr_name) < sizeof(name)
					 ? sizeof(r.ifr_name)
					 : sizeof(name));
	if (!ioctl(fd, SIOCGIFMTU, &r))
		mtu = r.ifr_mtu;
	close(fd);
	return mtu;
}

int srdma_cm_device_gid_of(struct cm_device *d, const struct sockaddr *sa,
			   uint8_t *index, union ibv_gid *gid,
			   enum ibv_mtu *mtu)
{
	struct ibv_port_attr pattr;
	struct ibv_gid_entry e;
	union ibv_gid want;
	uint32_t i;
	int ifmtu;

	memset(&want, 0, sizeof(want));
	if (sa->sa_family == AF_INET) {
		want.raw[10] = 0xff;
		want.raw[11] = 0xff;
		memcpy(&want.raw[12],
		       &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(want.raw, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
	} else {
		return -ENOENT;
	}
	if (ibv_query_port(d->verbs, 1, &pattr))
		return -ENOENT;
	for (i = 0; i < (uint32_t)pattr.gid_tbl_len && i <= 0xff; i++) {
		if (ibv_query_gid_ex(d->verbs, 1, i, &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2 ||
		    memcmp(e.gid.raw, want.raw, sizeof(want.raw)))
			continue;
		*index = (uint8_t)i;
		*gid = e.gid;
		ifmtu = ifindex_mtu(e.ndev_ifindex);
		*mtu = ifmtu ? path_mtu_of(ifmtu) : d->mtu;
		if (*mtu > pattr.max_mtu)
			*mtu = pattr.max_mtu;
		return 0;
	}
	return -ENOENT;
}

int srdma_cm_device_get(struct cm_device **out)
{
	struct cm_device *d = &cm.dev;
	int ret;

	ret = srdma_cm_device_open();
	if (ret)
		return ret;
	if (!d->pd) {
		d->pd = ibv_alloc_pd(d->verbs);
		if (!d->pd)
			return errno ? -errno : -ENOMEM;
	}
	d->refs++;
	*out = d;
	return 0;
}

void srdma_cm_device_put(struct cm_device *d)
{
	srdma_assert(d->refs > 0);
	if (--d->refs)
		return;
	/* Still in use (the application kept MRs on it): keep it. */
	if (d->xrcd && !ibv_close_xrcd(d->xrcd))
		d->xrcd = NULL;	/* (as the PD: kept while SRQs use it) */
	if (!ibv_dealloc_pd(d->pd))
		d->pd = NULL;
}

SRDMA_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int ret;

	srdma_cm_lock();
	ret = srdma_cm_device_open();
	srdma_cm_unlock();
	if (ret) {
		if (num_devices)
			*num_devices = 0;
		errno = -ret;
		return NULL;
	}
	list = calloc(2, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = cm.dev.verbs;
	if (num_devices)
		*num_devices = 1;
	return list;
}

SRDMA_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
