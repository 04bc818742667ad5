// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_device.c - ABI front end for device discovery, contexts and the
 * device/port/GID/P_Key queries (libibverbs' device.c and verbs.c
 * counterparts).
 *
 * The attributes are honest for a software device: limits we enforce,
 * capabilities we implement. Port 1 is always ACTIVE. By default it is an
 * InfiniBand port: its LID is the context's host-unique LID from the
 * registry and GID[0] is fe80::/64 with an interface id built from the
 * host's node GUID and that LID, so a GID decodes to its LID. With
 * SRDMA_LINK_LAYER=eth it is a RoCE port: LID 0, the GID table and the
 * MTU from the namespace's interfaces (transport/net/gid.c, built into
 * ctx->gids at open). Errors are converted here, once, to each function's
 * public convention.
 */
#include <errno.h>
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "engine/engine.h"
#include "transport/host/mcast.h"
#include "util/compiler.h"
#include "util/log.h"
#include "verbs/verbs_int.h"

/* From rdma-core's driver.h (not installed): the sysfs GID type. */
enum srdma_gid_type_sysfs {
	SRDMA_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	SRDMA_GID_TYPE_SYSFS_ROCE_V2 = 1,
};

struct srdma_context *srdma_ctx_lookup(struct ibv_context *ctx)
{
	if (!srdma_handle_check(ctx ? to_sctx(ctx) : NULL, SRDMA_OBJ_CTX))
		return NULL;
	return to_sctx(ctx);
}

static pthread_once_t fork_env_once = PTHREAD_ONCE_INIT;

SRDMA_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	srdma_log_init();
	/* As rdma-core's ibverbs_init(), on the first call. */
	pthread_once(&fork_env_once, srdma_verbs_fork_env);
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &srdma_device_get()->ibdev;
	srdma_sysfs_refresh(false);
	if (num_devices)
		*num_devices = 1;
	return list;
}

SRDMA_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

SRDMA_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	if (!device) {
		errno = EINVAL;
		return NULL;
	}
	return device->name;
}

SRDMA_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	if (device != &srdma_device_get()->ibdev)
		return 0;
	return srdma_device_get()->node_guid;
}

SRDMA_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return device == &srdma_device_get()->ibdev ? 0 : -1;
}

SRDMA_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct srdma_device *dev = srdma_device_get();
	struct srdma_context *ctx;
	int ret;

	if (device != &dev->ibdev) {
		errno = EINVAL;
		return NULL;
	}
	srdma_engine_init();
	ret = srdma_context_open(dev, &ctx);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	srdma_verbs_set_ops(ctx);
	srdma_sysfs_refresh(true);	/* a new live LID */
	return &ctx->vctx.context;
}

SRDMA_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	int ret;

	/* An alias from ibv_import_device: one reference less (ibv_dm.c). */
	if (ctx && srdma_verbs_import_release(context))
		return 0;
	if (!ctx) {
		/* A fork child closing its parent's context: ours only. */
		if (context && srdma_handle_forget_inherited(to_sctx(context),
							     SRDMA_OBJ_CTX)) {
			srdma_context_drop_inherited(to_sctx(context));
			return 0;
		}
		errno = EINVAL;
		return -1;
	}
	ret = srdma_context_close(ctx);
	if (ret) {
		errno = -ret;
		return -1;
	}
	srdma_sysfs_refresh(true);
	return 0;
}

void srdma_fill_device_attr(struct srdma_context *ctx,
			    struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", SRDMA_FW_VER);
	a->node_guid = ctx->dev->node_guid;
	a->sys_image_guid = ctx->dev->node_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = (uint64_t)(~(srdma_page_size - 1) & 0xffffffffu);
	a->vendor_id = SRDMA_VENDOR_ID;
	a->vendor_part_id = SRDMA_VENDOR_PART_ID;
	a->hw_ver = SRDMA_HW_VER;
	a->max_qp = (1 << SRDMA_QPN_SHIFT) - 1;
	a->max_qp_wr = SRDMA_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			      IBV_DEVICE_MEM_MGT_EXTENSIONS |
			      IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_N_NOTIFY_CQ;
	/* XRC (docs/design/xrc.md): domains, SRQs, INI and TGT QPs. */
	a->device_cap_flags |= IBV_DEVICE_XRC;
	a->max_sge = SRDMA_MAX_SGE;
	a->max_sge_rd = SRDMA_MAX_SGE;
	a->max_cq = SRDMA_SEG_CQ_SLOTS;
	a->max_cqe = SRDMA_MAX_CQE;
	a->max_mr = SRDMA_MAX_MR;
	a->max_pd = SRDMA_MAX_PD;
	a->max_qp_rd_atom = SRDMA_MAX_RD_ATOM;
	a->max_res_rd_atom = SRDMA_MAX_RD_ATOM * a->max_qp;
	a->max_qp_init_rd_atom = SRDMA_MAX_RD_ATOM;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mw = SRDMA_MAX_MW;
	a->max_ah = INT32_MAX;	/* AHs are private memory, as mlx5 */
	a->max_fmr = SRDMA_MAX_FMR;
	a->max_map_per_fmr = SRDMA_MAX_MAP_PER_FMR;
	a->max_srq = SRDMA_SEG_SRQ_SLOTS;
	a->max_srq_wr = SRDMA_MAX_SRQ_WR;
	a->max_srq_sge = SRDMA_MAX_SGE;
	a->max_pkeys = 1;
	/* Host-wide, as the device (transport/host/mcast.h). */
	a->max_mcast_grp = SRDMA_MCAST_GROUPS;
	a->max_mcast_qp_attach = SRDMA_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = SRDMA_MCAST_TOTAL;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

SRDMA_EXPORT int ibv_query_device(struct ibv_context *context,
				  struct ibv_device_attr *device_attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);

	if (!ctx || !device_attr)
		return EINVAL;
	srdma_fill_device_attr(ctx, device_attr);
	return 0;
}

void srdma_fill_port_attr(struct srdma_context *ctx, struct ibv_port_attr *a)
{
	srdma_port_attr_build(ctx->host.lid, &ctx->gids, a);
}

void srdma_port_attr_build(uint32_t lid, const struct srdma_gid_table *gids,
			   struct ibv_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_4096;
	a->gid_tbl_len = SRDMA_GID_TBL_LEN;
	a->port_cap_flags = IBV_PORT_CM_SUP;
	a->max_msg_sz = SRDMA_MAX_MSG;
	a->pkey_tbl_len = 1;
	a->lid = (uint16_t)lid;
	a->sm_lid = 0;
	a->lmc = 0;
	a->max_vl_num = 1;
	a->active_width = 2;	/* 4X */
	a->active_speed = 32;	/* 25 Gb/s lanes (EDR) */
	a->phys_state = 5;	/* LinkUp */
	a->link_layer = IBV_LINK_LAYER_INFINIBAND;
	if (srdma_link_is_eth()) {
		/* A RoCE port, as rxe shows one: no LID, no SM, the MTU of
		 * the interface, GIDs from its addresses. */
		a->link_layer = IBV_LINK_LAYER_ETHERNET;
		a->lid = 0;
		a->active_mtu = srdma_gid_active_mtu(gids);
		a->max_mtu = a->active_mtu;
		a->gid_tbl_len = SRDMA_GID_MAX;
		a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	}
}

/* The exported symbol takes the compat struct: everything up to
 * port_cap_flags2. */
#undef ibv_query_port
SRDMA_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
				struct _compat_ibv_port_attr *port_attr)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct ibv_port_attr a;

	if (!ctx || !port_attr || port_num != 1)
		return EINVAL;
	srdma_fill_port_attr(ctx, &a);
	memcpy(port_attr, &a, offsetof(struct ibv_port_attr, port_cap_flags2));
	return 0;
}

/* Slots of the port's GID table: IB SRDMA_GID_TBL_LEN, Ethernet
 * SRDMA_GID_MAX, of which the first ctx->gids.n are filled (the rest read
 * as empty). */
static uint32_t gid_tbl_len(void)
{
	return srdma_link_is_eth() ? SRDMA_GID_MAX : SRDMA_GID_TBL_LEN;
}

SRDMA_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			       int index, union ibv_gid *gid)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);

	if (!ctx || !gid || port_num != 1 || index < 0 ||
	    (uint32_t)index >= gid_tbl_len()) {
		errno = EINVAL;
		return -1;
	}
	/* An empty slot reads as the zero GID, as in rdma-core. */
	if ((uint32_t)index < ctx->gids.n)
		*gid = ctx->gids.e[index].gid;
	else
		memset(gid, 0, sizeof(*gid));
	return 0;
}

static void fill_gid_entry(struct srdma_context *ctx, struct ibv_gid_entry *e,
			   uint32_t index)
{
	const struct srdma_gid_ent *g = &ctx->gids.e[index];

	memset(e, 0, sizeof(*e));
	e->gid = g->gid;
	e->gid_index = index;
	e->port_num = 1;
	e->gid_type = g->type;
	e->ndev_ifindex = g->ifindex;
}

SRDMA_EXPORT int _ibv_query_gid_ex(struct ibv_context *context,
				   uint32_t port_num, uint32_t gid_index,
				   struct ibv_gid_entry *entry, uint32_t flags,
				   size_t entry_size)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	struct ibv_gid_entry e;

	if (!ctx || !entry || flags || port_num != 1 ||
	    entry_size < sizeof(e))
		return EINVAL;
	if (gid_index >= ctx->gids.n)
		return ENODATA;
	fill_gid_entry(ctx, &e, gid_index);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

SRDMA_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
					  struct ibv_gid_entry *entries,
					  size_t max_entries, uint32_t flags,
					  size_t entry_size)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	size_t i, n;

	if (!ctx || !entries || !max_entries || flags ||
	    entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	/* Only the valid entries, and all of them, as the kernel does. */
	n = ctx->gids.n;
	if (max_entries < n)
		return -EINVAL;
	for (i = 0; i < n; i++)
		fill_gid_entry(ctx,
			       (struct ibv_gid_entry *)((char *)entries +
							i * entry_size),
			       (uint32_t)i);
	return (ssize_t)n;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum srdma_gid_type_sysfs *type);
SRDMA_EXPORT int ibv_query_gid_type(struct ibv_context *context,
				    uint8_t port_num, unsigned int index,
				    enum srdma_gid_type_sysfs *type)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);

	/* An empty slot has no type: its sysfs file reads EINVAL. */
	if (!ctx || !type || port_num != 1 || index >= gid_tbl_len() ||
	    index >= ctx->gids.n) {
		errno = EINVAL;
		return -1;
	}
	*type = ctx->gids.e[index].type == IBV_GID_TYPE_ROCE_V2
			? SRDMA_GID_TYPE_SYSFS_ROCE_V2
			: SRDMA_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

SRDMA_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
				int index, __be16 *pkey)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);

	if (!ctx || !pkey || port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(SRDMA_PKEY_DEFAULT);
	return 0;
}

SRDMA_EXPORT int ibv_get_pkey_index(struct ibv_context *context,
				    uint8_t port_num, __be16 pkey)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);

	if (!ctx || port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	if (be16toh(pkey) != SRDMA_PKEY_DEFAULT) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

SRDMA_EXPORT int ibv_get_async_event(struct ibv_context *context,
				     struct ibv_async_event *event)
{
	struct srdma_context *ctx = srdma_ctx_lookup(context);
	int ret;

	if (!ctx || !event) {
		errno = EINVAL;
		return -1;
	}
	ret = srdma_async_get(ctx, event);
	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

SRDMA_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	/* Events hold no references yet; destroy does not wait on acks. */
}
