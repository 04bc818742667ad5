// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * qp_state.c - the QP state machine's rules: which transitions exist,
 * which attributes each one takes, and which values are acceptable.
 *
 * The transition table is the InfiniBand one (QP state diagram plus the
 * Modify QP verb's required/optional attribute lists) as the Linux kernel's
 * ib_modify_qp_is_ok() encodes it, restricted to RC, UC, UD, the two XRC
 * types (INI, TGT) and raw packet QPs (which take only IBV_QP_PORT, to
 * INIT, as in the kernel), so that an
 * application sees the same EINVALs here as on rxe, siw or a real HCA.
 * Two properties of that encoding are kept on purpose:
 *
 *  - Legality is per (cur, next) pair, not per type; only the attribute
 *    masks differ by type. So SQE -> RTS is legal for RC with IBV_QP_STATE
 *    alone, although an RC QP never reaches SQE (a send error takes it to
 *    ERR) unless the caller claims so with IBV_QP_CUR_STATE, which that
 *    row does not allow for RC.
 *  - IBV_QP_RATE_LIMIT is optional exactly where the kernel accepts it for
 *    these types: RC, on INIT -> RTR, RTR -> RTS and RTS -> RTS. UC and UD
 *    never take it.
 *
 * IBV_QP_CUR_STATE appears only in rows leaving RTR, RTS, SQD or SQE, the
 * states from which the spec lets a consumer assert the current state.
 *
 * The table is sized by state and indexed by a small type index; a row
 * that is absent (valid == false) is an illegal transition.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/qp_state.h"
#include "util/compiler.h"

enum { T_RC, T_UC, T_UD, T_XI, T_XT, T_RAW, NR_TYPES };

struct qp_transition {
	bool valid;
	int req[NR_TYPES];	/* bits that must be present */
	int opt[NR_TYPES];	/* bits that may be present */
};

#define NR_STATES (IBV_QPS_ERR + 1)

/* clang-format off */
/* Attribute groups that recur in the rows below. */
#define PATH_RC (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | \
		 IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER)
#define PATH_UC (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | \
		 IBV_QP_PATH_MIG_STATE)

static const struct qp_transition qp_table[NR_STATES][NR_STATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS,
				[T_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_QKEY,
				[T_XI] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS,
				[T_XT] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS,
				[T_RAW] = IBV_QP_PORT,
			},
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS,
				[T_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_QKEY,
				[T_XI] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS,
				[T_XT] = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS,
				[T_RAW] = IBV_QP_PORT,
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_MIN_RNR_TIMER,
				[T_UC] = IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
				[T_XI] = IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
				[T_XT] = IBV_QP_AV | IBV_QP_PATH_MTU |
					 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_MIN_RNR_TIMER,
			},
			.opt = {
				[T_RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX | IBV_QP_RATE_LIMIT,
				[T_UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_XI] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX,
				[T_XT] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX,
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					 IBV_QP_MAX_QP_RD_ATOMIC,
				[T_UC] = IBV_QP_SQ_PSN,
				[T_UD] = IBV_QP_SQ_PSN,
				[T_XI] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					 IBV_QP_MAX_QP_RD_ATOMIC,
				[T_XT] = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
			},
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | PATH_RC |
					 IBV_QP_RATE_LIMIT,
				[T_UC] = IBV_QP_CUR_STATE | PATH_UC,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_XI] = IBV_QP_CUR_STATE | PATH_UC,
				[T_XT] = IBV_QP_CUR_STATE | PATH_RC,
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | PATH_RC |
					 IBV_QP_RATE_LIMIT,
				[T_UC] = IBV_QP_CUR_STATE | PATH_UC,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_XI] = IBV_QP_CUR_STATE | PATH_UC,
				[T_XT] = IBV_QP_CUR_STATE | PATH_RC,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_XI] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_XT] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
			},
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | PATH_RC,
				[T_UC] = IBV_QP_CUR_STATE | PATH_UC,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_XI] = IBV_QP_CUR_STATE | PATH_UC,
				[T_XT] = IBV_QP_CUR_STATE | PATH_RC,
			},
		},
		/* While drained, the path and the depths may be changed. */
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = PATH_RC | IBV_QP_PORT | IBV_QP_AV |
					 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC |
					 IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_PKEY_INDEX,
				[T_UC] = PATH_UC | IBV_QP_AV |
					 IBV_QP_PKEY_INDEX,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_XI] = PATH_UC | IBV_QP_PORT | IBV_QP_AV |
					 IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC |
					 IBV_QP_PKEY_INDEX,
				[T_XT] = PATH_RC | IBV_QP_PORT | IBV_QP_AV |
					 IBV_QP_TIMEOUT |
					 IBV_QP_MAX_DEST_RD_ATOMIC |
					 IBV_QP_PKEY_INDEX,
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};
/* clang-format on */

static int type_index(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return T_RC;
	case IBV_QPT_UC:
		return T_UC;
	case IBV_QPT_UD:
		return T_UD;
	case IBV_QPT_XRC_SEND:
		return T_XI;
	case IBV_QPT_XRC_RECV:
		return T_XT;
	case IBV_QPT_RAW_PACKET:
		return T_RAW;
	default:
		return -1;
	}
}

static bool state_ok(enum ibv_qp_state s)
{
	return (unsigned int)s < NR_STATES;
}

int srdma_qp_modify_why(enum ibv_qp_type type, enum ibv_qp_state cur,
			enum ibv_qp_state next, int attr_mask, const char **why)
{
	const struct qp_transition *t;
	int ti = type_index(type);
	int req, opt;

	*why = NULL;
	if (ti < 0) {
		*why = "QP type not supported";
		return -EOPNOTSUPP;
	}
	if (!(attr_mask & IBV_QP_STATE))
		next = cur;
	if (!state_ok(cur) || !state_ok(next))
		*why = "no such state";
	else if (!(t = &qp_table[cur][next])->valid)
		*why = "transition not allowed";
	else if (req = t->req[ti], opt = t->opt[ti],
		 (attr_mask & req) != req)
		*why = "mask lacks attributes the transition requires";
	else if (attr_mask & ~(req | opt | IBV_QP_STATE))
		*why = "mask has attributes the transition does not take";
	return *why ? -EINVAL : 0;
}

int srdma_qp_modify_check(enum ibv_qp_type type, enum ibv_qp_state cur,
			  enum ibv_qp_state next, int attr_mask)
{
	const char *why;

	return srdma_qp_modify_why(type, cur, next, attr_mask, &why);
}

/* The rules an address vector must obey: our one port, a real SGID, and
 * on a RoCE port a GRH (there is no LID to route by), as rdma-core's
 * providers and the kernel's RoCE path check. */
static const char *ah_why(const struct ibv_ah_attr *ah,
			  const struct srdma_qp_limits *lim)
{
	if (ah->port_num != 1)
		return "port_num is not 1";
	if (lim->grh_required && !ah->is_global)
		return "no GRH (required on a RoCE port)";
	if (ah->is_global && ah->grh.sgid_index >= lim->gid_tbl_len)
		return "sgid_index outside the GID table";
	return NULL;
}

const char *srdma_qp_attr_why(enum ibv_qp_type type,
			      const struct ibv_qp_attr *attr, int attr_mask,
			      const struct srdma_qp_limits *lim)
{
	const char *why;

	(void)type;
	if ((attr_mask & IBV_QP_STATE) && !state_ok(attr->qp_state))
		return "qp_state: no such state";
	if ((attr_mask & IBV_QP_CUR_STATE) && !state_ok(attr->cur_qp_state))
		return "cur_qp_state: no such state";
	if ((attr_mask & IBV_QP_PORT) && attr->port_num != 1)
		return "port_num is not 1";
	if ((attr_mask & IBV_QP_PKEY_INDEX) && attr->pkey_index >= 1)
		return "pkey_index is not 0 (one P_Key)";
	if ((attr_mask & IBV_QP_PATH_MTU) &&
	    (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096))
		return "path_mtu: no such MTU";
	/* Above the port's MTU: rejected, as rxe does (roce-wire.md 1.10). */
	if ((attr_mask & IBV_QP_PATH_MTU) && lim->max_path_mtu &&
	    (uint32_t)attr->path_mtu > lim->max_path_mtu)
		return "path_mtu above the port's active MTU";
	if ((attr_mask & IBV_QP_TIMEOUT) && attr->timeout > 31)
		return "timeout above 31";
	if ((attr_mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return "retry_cnt above 7";
	if ((attr_mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return "rnr_retry above 7";
	if ((attr_mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return "min_rnr_timer above 31";
	if ((attr_mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > lim->max_qp_rd_atom)
		return "max_rd_atomic above max_qp_init_rd_atom";
	if ((attr_mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > lim->max_qp_dest_rd_atom)
		return "max_dest_rd_atomic above max_qp_rd_atom";
	/* qp_access_flags: other bits (ON_DEMAND, MW_BIND...) are ignored,
	 * as by the kernel and every provider; pyverbs passes its MR flags. */
	if ((attr_mask & IBV_QP_AV) && (why = ah_why(&attr->ah_attr, lim)))
		return why;
	if ((attr_mask & IBV_QP_ALT_PATH) &&
	    (attr->alt_port_num != 1 || attr->alt_pkey_index >= 1 ||
	     attr->alt_timeout > 31 || ah_why(&attr->alt_ah_attr, lim)))
		return "alternate path: port, pkey index, timeout or AV";
	return NULL;
}

int srdma_qp_attr_check(enum ibv_qp_type type, const struct ibv_qp_attr *attr,
			int attr_mask, const struct srdma_qp_limits *lim)
{
	return srdma_qp_attr_why(type, attr, attr_mask, lim) ? -EINVAL : 0;
}

/*
 * The AETH RNR NAK timer encoding, in units of 10 us. Code 0 is the longest
 * delay; from code 2 on the values alternate 2 * 2^k and 3 * 2^k.
 */
/* clang-format off */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1,     2,     3,     4,     6,     8,     12,
	16,    24,    32,    48,    64,    96,    128,   192,
	256,   384,   512,   768,   1024,  1536,  2048,  3072,
	4096,  6144,  8192,  12288, 16384, 24576, 32768, 49152,
};
/* clang-format on */

uint64_t srdma_rnr_timer_ns(uint8_t code)
{
	if (code > 31)
		code = 31;
	return (uint64_t)rnr_timer_10us[code] * 10000;
}

uint64_t srdma_ack_timeout_ns(uint8_t code)
{
	if (!code)
		return UINT64_MAX;
	if (code > 31)
		code = 31;
	return 4096ull << code;
}

const char *srdma_qp_state_str(enum ibv_qp_state s)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET",
		[IBV_QPS_INIT] = "INIT",
		[IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS",
		[IBV_QPS_SQD] = "SQD",
		[IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
		[IBV_QPS_UNKNOWN] = "UNKNOWN",
	};

	return (unsigned int)s < ARRAY_SIZE(names) ? names[s] : "?";
}
