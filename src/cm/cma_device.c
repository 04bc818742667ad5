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
#include <stdlib.h>
#include <string.h>

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
