/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * qp_state.h - the rules of ibv_modify_qp(), as pure functions.
 *
 * The check step of a QP modify (R4) is split in two. First the shape of
 * the request: is cur -> next a legal transition for this QP type, and does
 * attr_mask carry exactly the attributes that transition requires, plus
 * only ones it allows? Then the values of the attributes that are present.
 * Neither reads or writes a QP: the caller passes in what it knows, under
 * whatever lock it holds, and applies nothing unless both return 0.
 *
 * Also here: the two IB timer encodings the transport needs (RNR NAK
 * timer, local ACK timeout) and state names for logs. No I/O, no globals
 * beyond constant tables.
 */
#ifndef SRDMA_CORE_QP_STATE_H
#define SRDMA_CORE_QP_STATE_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

/* Device limits the attribute values are checked against. */
struct srdma_qp_limits {
	uint32_t max_qp_rd_atom;	/* bound on max_rd_atomic: reads and
					 * atomics we initiate at once */
	uint32_t max_qp_dest_rd_atom;	/* bound on max_dest_rd_atomic: ones
					 * we serve as responder at once */
	uint32_t gid_tbl_len;		/* SGID table size of port 1 */
	bool grh_required;		/* RoCE port: an AV must be global */
	uint32_t max_path_mtu;		/* enum ibv_mtu: the port's active
					 * MTU; 0 for no bound beyond 4096 */
};

/**
 * srdma_qp_modify_check() - is this modify legal in shape?
 * @type:      IBV_QPT_RC, IBV_QPT_UC or IBV_QPT_UD
 * @cur:       the QP's current state; when the caller sets IBV_QP_CUR_STATE
 *             it passes attr->cur_qp_state here, as the kernel does
 * @next:      the requested state; ignored when @attr_mask lacks
 *             IBV_QP_STATE, which asks for an attribute change without a
 *             transition and is checked as cur -> cur
 * @attr_mask: IBV_QP_* bits of the request
 *
 * The transition table is the InfiniBand one as the Linux kernel encodes
 * it in ib_modify_qp_is_ok(): every bit the transition requires for @type
 * must be present, and no bit outside required | optional | IBV_QP_STATE.
 * Any state may go to RESET or ERR with IBV_QP_STATE alone.
 * Return: 0, -EOPNOTSUPP for another QP type, or -EINVAL.
 */
int srdma_qp_modify_check(enum ibv_qp_type type, enum ibv_qp_state cur,
			  enum ibv_qp_state next, int attr_mask);

/**
 * srdma_qp_attr_check() - are the values of the present attributes legal?
 * @type:      QP type; every rule below currently applies to all three
 *             (srdma_qp_modify_check() has already refused attributes a
 *             type does not take)
 * @attr:      the request
 * @attr_mask: which fields of @attr to look at; others are never read
 * @lim:       device limits
 *
 * Rules: states are RESET..ERR; port 1 and P_Key index 0 only (one port,
 * one P_Key); path MTU 256..4096; timeout and min RNR timer fit 5 bits,
 * retry and RNR retry counts 3 bits; outstanding RDMA read/atomic depths
 * within @lim; access flags only LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ,
 * REMOTE_ATOMIC; an address vector names port 1 and, if global, an SGID
 * index inside the GID table. The alternate path, when given, obeys the
 * same port, P_Key, timeout and address-vector rules.
 * Return: 0 or -EINVAL.
 */
int srdma_qp_attr_check(enum ibv_qp_type type, const struct ibv_qp_attr *attr,
			int attr_mask, const struct srdma_qp_limits *lim);

/**
 * srdma_qp_modify_why() / srdma_qp_attr_why() - the same checks as
 * srdma_qp_modify_check() / srdma_qp_attr_check(), naming the rule that
 * refused (for SRDMA_LOG=debug).
 * Return: modify_why: as srdma_qp_modify_check(), with *@why the reason
 * (a static string) or NULL on 0; attr_why: the reason, or NULL if legal.
 */
int srdma_qp_modify_why(enum ibv_qp_type type, enum ibv_qp_state cur,
			enum ibv_qp_state next, int attr_mask, const char **why);
const char *srdma_qp_attr_why(enum ibv_qp_type type,
			      const struct ibv_qp_attr *attr, int attr_mask,
			      const struct srdma_qp_limits *lim);

/**
 * srdma_rnr_timer_ns() - the RNR NAK timer a 5-bit code stands for.
 * @code: min_rnr_timer / AETH timer field; 0 is the longest (655.36 ms),
 *        1..31 run from 0.01 ms to 491.52 ms; codes above 31 are clamped
 *        to 31
 * Return: nanoseconds.
 */
uint64_t srdma_rnr_timer_ns(uint8_t code);

/**
 * srdma_ack_timeout_ns() - the local ACK timeout a 5-bit code stands for:
 * 4.096 us * 2^code.
 * @code: ibv_qp_attr.timeout; 0 means wait forever; codes above 31 are
 *        clamped to 31
 * Return: nanoseconds, or UINT64_MAX for "infinite".
 */
uint64_t srdma_ack_timeout_ns(uint8_t code);

/* "RESET", "INIT", ..., "UNKNOWN" for logs; "?" for any other value. */
const char *srdma_qp_state_str(enum ibv_qp_state s);

#endif
