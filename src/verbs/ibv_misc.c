// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_misc.c - the device-independent helpers of libibverbs.
 *
 * Enum-to-string tables, IB static-rate conversions, the fork-support
 * entry points and the historic kernel-struct copy helpers. None of these
 * touch a device or take a lock; all are safe from any thread.
 *
 * The strings are ABI in practice: tools print them and scripts grep for
 * them, so the wording matches what rdma-core 44 prints, value for value.
 *
 * Fork support answers exactly as rdma-core 44 does (memory.c, init.c,
 * ibdev_nl.c): ibv_is_fork_initialized() is IBV_FORK_UNNEEDED when the
 * kernel's RDMA netlink reports copy-on-fork for pinned pages, else
 * IBV_FORK_ENABLED once ibv_fork_init() succeeded, else DISABLED; on a
 * kernel without RDMA netlink (no ib_core, as for a device with no kernel
 * part) the query fails and the answer is DISABLED. ibv_fork_init() fails
 * with EINVAL once a range was registered without it (too late), ENOSYS
 * if madvise(MADV_DONTFORK) does not work. RDMAV_FORK_SAFE/IBV_FORK_SAFE
 * (set and not "0") call it from the first ibv_get_device_list(). What
 * softrdma does not copy is the effect: it never pins memory (a
 * registration is a record in our own tables), so it never madvises
 * application memory, and the range calls only track "too late".
 * Objects inherited by a child are refused at the entry points instead
 * (docs/design/lifetimes.md, "fork").
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <infiniband/verbs.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/ib_user_sa.h>

#include "util/compiler.h"
#include "util/log.h"
#include "util/sys.h"
#include "verbs/verbs_int.h"

/* Looks up @v in a designated-initialiser table; holes and out-of-range
 * values read as "unknown". */
static const char *enum_str(const char *const *tbl, size_t n, int v)
{
	if (v < 0 || (size_t)v >= n || !tbl[v])
		return "unknown";
	return tbl[v];
}

static const char *const wc_status_strs[] = {
	[IBV_WC_SUCCESS] = "success",
	[IBV_WC_LOC_LEN_ERR] = "local length error",
	[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
	[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	[IBV_WC_LOC_PROT_ERR] = "local protection error",
	[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	[IBV_WC_MW_BIND_ERR] = "memory management operation error",
	[IBV_WC_BAD_RESP_ERR] = "bad response error",
	[IBV_WC_LOC_ACCESS_ERR] = "local access error",
	[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[IBV_WC_REM_ACCESS_ERR] = "remote access error",
	[IBV_WC_REM_OP_ERR] = "remote operation error",
	[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	[IBV_WC_REM_ABORT_ERR] = "aborted error",
	[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
	[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	[IBV_WC_FATAL_ERR] = "fatal error",
	[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	[IBV_WC_GENERAL_ERR] = "general error",
	[IBV_WC_TM_ERR] = "TM error",
	[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
};

SRDMA_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	return enum_str(wc_status_strs, ARRAY_SIZE(wc_status_strs), status);
}

static const char *const event_type_strs[] = {
	[IBV_EVENT_CQ_ERR] = "CQ error",
	[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
	[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
	[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
	[IBV_EVENT_COMM_EST] = "communication established",
	[IBV_EVENT_SQ_DRAINED] = "send queue drained",
	[IBV_EVENT_PATH_MIG] = "path migrated",
	[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
	[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
	[IBV_EVENT_PORT_ACTIVE] = "port active",
	[IBV_EVENT_PORT_ERR] = "port error",
	[IBV_EVENT_LID_CHANGE] = "LID change",
	[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
	[IBV_EVENT_SM_CHANGE] = "SM change",
	[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
	[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
	[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
	[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
	[IBV_EVENT_GID_CHANGE] = "GID table change",
	[IBV_EVENT_WQ_FATAL] = "WQ fatal",
};

SRDMA_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	return enum_str(event_type_strs, ARRAY_SIZE(event_type_strs), event);
}

static const char *const node_type_strs[] = {
	[IBV_NODE_CA] = "InfiniBand channel adapter",
	[IBV_NODE_SWITCH] = "InfiniBand switch",
	[IBV_NODE_ROUTER] = "InfiniBand router",
	[IBV_NODE_RNIC] = "iWARP NIC",
	[IBV_NODE_USNIC] = "usNIC",
	[IBV_NODE_USNIC_UDP] = "usNIC UDP",
	[IBV_NODE_UNSPECIFIED] = "unspecified",
};

SRDMA_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	return enum_str(node_type_strs, ARRAY_SIZE(node_type_strs), node_type);
}

static const char *const port_state_strs[] = {
	[IBV_PORT_NOP] = "no state change (NOP)",
	[IBV_PORT_DOWN] = "down",
	[IBV_PORT_INIT] = "init",
	[IBV_PORT_ARMED] = "armed",
	[IBV_PORT_ACTIVE] = "active",
	[IBV_PORT_ACTIVE_DEFER] = "active defer",
};

SRDMA_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	return enum_str(port_state_strs, ARRAY_SIZE(port_state_strs),
			port_state);
}

/*
 * One row per defined static rate. mult is the rate as a multiple of the
 * 2.5 Gb/s base lane, or -1 where it is not a whole multiple (the FDR and
 * EDR lane rates); mbps is the exact rate in Mb/s, rounded down.
 */
struct rate_row {
	enum ibv_rate rate;
	int mult;
	int mbps;
};

/* clang-format off */
static const struct rate_row rate_rows[] = {
	{ IBV_RATE_2_5_GBPS,     1,     2500 },
	{ IBV_RATE_5_GBPS,       2,     5000 },
	{ IBV_RATE_10_GBPS,      4,    10000 },
	{ IBV_RATE_20_GBPS,      8,    20000 },
	{ IBV_RATE_30_GBPS,     12,    30000 },
	{ IBV_RATE_40_GBPS,     16,    40000 },
	{ IBV_RATE_60_GBPS,     24,    60000 },
	{ IBV_RATE_80_GBPS,     32,    80000 },
	{ IBV_RATE_120_GBPS,    48,   120000 },
	{ IBV_RATE_14_GBPS,     -1,    14062 },
	{ IBV_RATE_56_GBPS,     -1,    56250 },
	{ IBV_RATE_112_GBPS,    -1,   112500 },
	{ IBV_RATE_168_GBPS,    -1,   168750 },
	{ IBV_RATE_25_GBPS,     -1,    25781 },
	{ IBV_RATE_100_GBPS,    -1,   103125 },
	{ IBV_RATE_200_GBPS,    -1,   206250 },
	{ IBV_RATE_300_GBPS,    -1,   309375 },
	{ IBV_RATE_28_GBPS,     11,    28125 },
	{ IBV_RATE_50_GBPS,     20,    53125 },
	{ IBV_RATE_400_GBPS,   160,   425000 },
	{ IBV_RATE_600_GBPS,   240,   637500 },
	{ IBV_RATE_800_GBPS,   320,   850000 },
	{ IBV_RATE_1200_GBPS,  480,  1275000 },
};
/* clang-format on */

static const struct rate_row *rate_row_find(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rate_rows); i++)
		if (rate_rows[i].rate == rate)
			return &rate_rows[i];
	return NULL;
}

SRDMA_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	const struct rate_row *row = rate_row_find(rate);

	return row ? row->mult : -1;
}

SRDMA_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	size_t i;

	if (mult <= 0)
		return IBV_RATE_MAX;
	for (i = 0; i < ARRAY_SIZE(rate_rows); i++)
		if (rate_rows[i].mult == mult)
			return rate_rows[i].rate;
	return IBV_RATE_MAX;
}

SRDMA_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	const struct rate_row *row = rate_row_find(rate);

	return row ? row->mbps : -1;
}

SRDMA_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(rate_rows); i++)
		if (rate_rows[i].mbps == mbps)
			return rate_rows[i].rate;
	return IBV_RATE_MAX;
}

/* rdma-core's memory.c state: fork support on; a range went unprotected. */
static atomic_bool fork_enabled;	/* atomic: set once */
static atomic_bool fork_too_late;	/* atomic: set once */
static atomic_bool fork_hugepages_safe;	/* atomic: RDMAV_HUGEPAGES_SAFE seen */

/* Walk the attributes of one RDMA_NLDEV_CMD_SYS_GET reply. */
static bool cof_attr(const struct nlmsghdr *h)
{
	const struct nlattr *a = NLMSG_DATA(h);
	int left = (int)h->nlmsg_len - NLMSG_HDRLEN;

	while (left >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN &&
	       a->nla_len <= left) {
		if ((a->nla_type & NLA_TYPE_MASK) ==
			    RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK &&
		    a->nla_len >= NLA_HDRLEN + 1)
			return *((const uint8_t *)a + NLA_HDRLEN) != 0;
		left -= NLA_ALIGN(a->nla_len);
		a = (const struct nlattr *)((const char *)a +
					    NLA_ALIGN(a->nla_len));
	}
	return false;	/* older kernels do not report it: no COF */
}

/*
 * Does the kernel copy pinned pages on fork? rdma-core 44 asks the RDMA
 * netlink (RDMA_NLDEV_CMD_SYS_GET, attribute COPY_ON_FORK) on every call;
 * any failure, including no NETLINK_RDMA at all, means no.
 */
static bool kernel_copy_on_fork(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 1 };
	struct nlmsghdr req = {
		.nlmsg_len = NLMSG_LENGTH(0),
		.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
					       RDMA_NLDEV_CMD_SYS_GET),
		.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
		.nlmsg_seq = 1,
	};
	union {
		struct nlmsghdr h;
		char b[8192];
	} buf;
	bool cof = false, done = false;
	int fd;

	fd = srdma_socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return false;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(fd, &req, req.nlmsg_len, 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0)
		goto out;
	while (!done) {
		ssize_t n = recv(fd, buf.b, sizeof(buf.b), 0);
		struct nlmsghdr *h = &buf.h;
		int left = (int)n;

		if (n <= 0)
			break;
		for (; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == NLMSG_ERROR ||
			    h->nlmsg_type == NLMSG_DONE) {
				done = true;	/* an error or the ack */
				break;
			}
			if (h->nlmsg_type == req.nlmsg_type)
				cof = cof_attr(h);
		}
	}
out:
	close(fd);
	return cof;
}

/* A non-ODP registration: rdma-core's ibv_dontfork_range(). */
void srdma_verbs_fork_note_range(void)
{
	if (!atomic_load_explicit(&fork_enabled, memory_order_relaxed))
		atomic_store_explicit(&fork_too_late, true,
				      memory_order_relaxed);
}

SRDMA_EXPORT int ibv_fork_init(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	void *tmp;
	int ret;

	if (getenv("RDMAV_HUGEPAGES_SAFE"))
		atomic_store_explicit(&fork_hugepages_safe, true,
				      memory_order_relaxed);
	if (atomic_load_explicit(&fork_enabled, memory_order_relaxed))
		return 0;
	if (atomic_load_explicit(&fork_too_late, memory_order_relaxed))
		return EINVAL;
	if (ps < 0)
		return errno;
	if (posix_memalign(&tmp, (size_t)ps, (size_t)ps))
		return ENOMEM;
	/* As upstream: fork support needs a working MADV_DONTFORK. */
	ret = madvise(tmp, (size_t)ps, MADV_DONTFORK) ||
	      madvise(tmp, (size_t)ps, MADV_DOFORK);
	free(tmp);
	if (ret)
		return ENOSYS;
	atomic_store_explicit(&fork_enabled, true, memory_order_relaxed);
	return 0;
}

SRDMA_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	if (kernel_copy_on_fork())
		return IBV_FORK_UNNEEDED;
	return atomic_load_explicit(&fork_enabled, memory_order_relaxed) ?
		       IBV_FORK_ENABLED :
		       IBV_FORK_DISABLED;
}

void srdma_verbs_fork_env(void)
{
	const char *a = getenv("RDMAV_FORK_SAFE"), *b = getenv("IBV_FORK_SAFE");

	if (((a && strcmp(a, "0")) || (b && strcmp(b, "0"))) &&
	    ibv_fork_init())
		srdma_warn("fork()-safety requested but init failed");
}

/* No public header declares the range calls; upstream keeps them in the
 * provider header. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* Nothing is pinned, so nothing is madvised; only "too late" is kept. */
SRDMA_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	srdma_verbs_fork_note_range();
	return 0;
}

SRDMA_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	srdma_verbs_fork_note_range();
	return 0;
}

/*
 * Historic helpers from the days when applications parsed kernel replies
 * themselves: copy the uverbs/ucm wire structs into the verbs ones and
 * back. Nothing current calls them, but they are in the ABI and trivially
 * implementable, so they are real rather than stubs.
 */
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
				struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
				struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
				 struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
			       struct ibv_sa_path_rec *src);

SRDMA_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
					     struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

SRDMA_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
					     struct ib_uverbs_qp_attr *src)
{
	dst->qp_state = src->qp_state;
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;

	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;

	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);

	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

SRDMA_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
					      struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

SRDMA_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
					    struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}
