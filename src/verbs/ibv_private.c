// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_private.c - the IBVERBS_PRIVATE_34 provider ABI, as load-time stubs.
 *
 * rdma-core's hardware providers (libmlx5, libefa, libmlx4) import about
 * sixty names from this node, and perftest and pyverbs link those providers
 * directly, BIND_NOW. Without the node, or with a name missing, the loader
 * refuses to start the program (docs/abi.md section 0.1). So every name
 * exists, but softrdma never drives a provider:
 *
 *  - verbs_register_driver_34() runs from each provider's constructor at
 *    load time. It must succeed quietly, and it records nothing, so no
 *    provider ever matches a device and none of the ibv_cmd_* calls below
 *    is reached in practice.
 *  - The command and context calls fail with the provider ABI's error
 *    conventions: positive EOPNOTSUPP for int returns, NULL with errno for
 *    pointer returns.
 *  - ibv_query_gid_type(), the one private name that real clients call
 *    directly, is implemented with the GID table elsewhere.
 *
 * No installed header declares these functions (upstream keeps them in
 * driver.h), so the prototypes are declared here. Where the upstream
 * argument list is long and the body ignores it, the stub is declared as
 * taking (void): on every ABI we build for, the caller owns the
 * argument registers and stack, so a callee that ignores its arguments is
 * indifferent to how many it was passed. Variadic functions keep their
 * "..." because variadic calls may use a different register protocol.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <infiniband/verbs.h>

#include "util/compiler.h"

/* Stubs ignore their arguments by design, whatever the build flags. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* Upstream flag that lets destroy calls succeed on a disassociated device.
 * Providers read it; it has no effect here. */
SRDMA_EXPORT bool verbs_allow_disassociate_destroy;

void verbs_register_driver_34(const void *ops);
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size, void *context_offset,
				    uint32_t driver_id);
struct ibv_context *verbs_open_device(struct ibv_device *device,
				      void *private_data);
void verbs_set_ops(struct verbs_context *vctx, const void *ops);
void verbs_uninit_context(struct verbs_context *context);
void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
		   struct ibv_comp_channel *channel, void *cq_context);
int execute_ioctl(struct ibv_context *context, void *cmd);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, const char *fnfmt, ...);

/* Providers are never loaded by us, so there is nothing to record. */
SRDMA_EXPORT void verbs_register_driver_34(const void *ops)
{
}

/* softrdma's own logging is SRDMA_LOG; provider messages are dropped. */
SRDMA_EXPORT void __verbs_log(struct verbs_context *ctx, uint32_t level,
			      const char *fmt, ...)
{
}

SRDMA_EXPORT void *_verbs_init_and_alloc_context(struct ibv_device *device,
						 int cmd_fd, size_t alloc_size,
						 void *context_offset,
						 uint32_t driver_id)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SRDMA_EXPORT struct ibv_context *verbs_open_device(struct ibv_device *device,
						   void *private_data)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SRDMA_EXPORT void verbs_set_ops(struct verbs_context *vctx, const void *ops)
{
}

SRDMA_EXPORT void verbs_uninit_context(struct verbs_context *context)
{
}

/* Cheap to do properly: it only initialises the public ibv_cq fields. */
SRDMA_EXPORT void verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
				struct ibv_comp_channel *channel,
				void *cq_context)
{
	cq->context = context;
	cq->channel = channel;
	cq->cq_context = cq_context;
	cq->comp_events_completed = 0;
	cq->async_events_completed = 0;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
}

SRDMA_EXPORT int execute_ioctl(struct ibv_context *context, void *cmd)
{
	return EOPNOTSUPP;
}

/* Upstream trims the attribute count of a command buffer chain; with no
 * command buffers the count passes through unchanged. */
SRDMA_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
						  void *link)
{
	return num_attrs;
}

/* Our device has no sysfs directory. */
SRDMA_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
					   const char *fnfmt, ...)
{
	errno = ENOENT;
	return -1;
}

/* Every ibv_cmd_* returns an int: 0 or a positive errno. */
#define CMD_STUB(name)                                                         \
	int name(void);                                                        \
	SRDMA_EXPORT int name(void)                                            \
	{                                                                      \
		return EOPNOTSUPP;                                             \
	}

CMD_STUB(ibv_cmd_advise_mr)
CMD_STUB(ibv_cmd_alloc_dm)
CMD_STUB(ibv_cmd_alloc_mw)
CMD_STUB(ibv_cmd_alloc_pd)
CMD_STUB(ibv_cmd_attach_mcast)
CMD_STUB(ibv_cmd_close_xrcd)
CMD_STUB(ibv_cmd_create_ah)
CMD_STUB(ibv_cmd_create_counters)
CMD_STUB(ibv_cmd_create_cq)
CMD_STUB(ibv_cmd_create_cq_ex)
CMD_STUB(ibv_cmd_create_flow)
CMD_STUB(ibv_cmd_create_flow_action_esp)
CMD_STUB(ibv_cmd_create_qp)
CMD_STUB(ibv_cmd_create_qp_ex)
CMD_STUB(ibv_cmd_create_qp_ex2)
CMD_STUB(ibv_cmd_create_rwq_ind_table)
CMD_STUB(ibv_cmd_create_srq)
CMD_STUB(ibv_cmd_create_srq_ex)
CMD_STUB(ibv_cmd_create_wq)
CMD_STUB(ibv_cmd_dealloc_mw)
CMD_STUB(ibv_cmd_dealloc_pd)
CMD_STUB(ibv_cmd_dereg_mr)
CMD_STUB(ibv_cmd_destroy_ah)
CMD_STUB(ibv_cmd_destroy_counters)
CMD_STUB(ibv_cmd_destroy_cq)
CMD_STUB(ibv_cmd_destroy_flow)
CMD_STUB(ibv_cmd_destroy_flow_action)
CMD_STUB(ibv_cmd_destroy_qp)
CMD_STUB(ibv_cmd_destroy_rwq_ind_table)
CMD_STUB(ibv_cmd_destroy_srq)
CMD_STUB(ibv_cmd_destroy_wq)
CMD_STUB(ibv_cmd_detach_mcast)
CMD_STUB(ibv_cmd_free_dm)
CMD_STUB(ibv_cmd_get_context)
CMD_STUB(ibv_cmd_modify_cq)
CMD_STUB(ibv_cmd_modify_flow_action_esp)
CMD_STUB(ibv_cmd_modify_qp)
CMD_STUB(ibv_cmd_modify_qp_ex)
CMD_STUB(ibv_cmd_modify_srq)
CMD_STUB(ibv_cmd_modify_wq)
CMD_STUB(ibv_cmd_open_qp)
CMD_STUB(ibv_cmd_open_xrcd)
CMD_STUB(ibv_cmd_poll_cq)
CMD_STUB(ibv_cmd_post_recv)
CMD_STUB(ibv_cmd_post_send)
CMD_STUB(ibv_cmd_post_srq_recv)
CMD_STUB(ibv_cmd_query_context)
CMD_STUB(ibv_cmd_query_device_any)
CMD_STUB(ibv_cmd_query_mr)
CMD_STUB(ibv_cmd_query_port)
CMD_STUB(ibv_cmd_query_qp)
CMD_STUB(ibv_cmd_query_srq)
CMD_STUB(ibv_cmd_read_counters)
CMD_STUB(ibv_cmd_reg_dm_mr)
CMD_STUB(ibv_cmd_reg_dmabuf_mr)
CMD_STUB(ibv_cmd_reg_mr)
CMD_STUB(ibv_cmd_req_notify_cq)
CMD_STUB(ibv_cmd_rereg_mr)
CMD_STUB(ibv_cmd_resize_cq)
