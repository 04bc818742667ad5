// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_qp_state.c - the QP modify rules against a reference model.
 *
 * The model below is a second, independent spelling of the InfiniBand
 * transition table (as the Linux kernel's ib_modify_qp_is_ok() has it) for
 * RC, UC and UD: one row per legal (type, cur, next) with its required and
 * optional mask, plus "any state -> RESET or ERR with IBV_QP_STATE alone".
 * Every row is driven through srdma_qp_modify_check() with its exact
 * required mask, with each required bit taken away, and with every single
 * bit it does not allow added; every pair not in the model must fail. Then
 * the value checks one rule at a time at its boundary, the two IB timer
 * encodings and the state names.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/qp_state.h"

#define NSTATES (IBV_QPS_ERR + 1)

/* Masks of the model, spelled out so that a typo in one copy shows. */
#define PKEY IBV_QP_PKEY_INDEX
#define ACC IBV_QP_ACCESS_FLAGS
#define CUR IBV_QP_CUR_STATE
#define ALT IBV_QP_ALT_PATH
#define MIG IBV_QP_PATH_MIG_STATE
#define RNRT IBV_QP_MIN_RNR_TIMER
#define RATE IBV_QP_RATE_LIMIT

struct legal {
	enum ibv_qp_type type;
	enum ibv_qp_state cur, next;
	int req, opt;
};

static const struct legal model[] = {
	{ IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
	  PKEY | IBV_QP_PORT | ACC, 0 },
	{ IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT,
	  0, PKEY | IBV_QP_PORT | ACC },
	{ IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR,
	  IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	  IBV_QP_MAX_DEST_RD_ATOMIC | RNRT,
	  ALT | ACC | PKEY | RATE },
	{ IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS,
	  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
	  CUR | ALT | ACC | RNRT | MIG | RATE },
	{ IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS,
	  0, CUR | ACC | ALT | MIG | RNRT | RATE },
	{ IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_SQD,
	  0, IBV_QP_EN_SQD_ASYNC_NOTIFY },
	{ IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_RTS,
	  0, CUR | ALT | ACC | RNRT | MIG },
	{ IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD,
	  0, IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
	     IBV_QP_MAX_DEST_RD_ATOMIC | ALT | ACC | PKEY | RNRT | MIG },
	/* The kernel's legality is per state pair, masks per type. */
	{ IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_RTS, 0, 0 },

	{ IBV_QPT_UC, IBV_QPS_RESET, IBV_QPS_INIT,
	  PKEY | IBV_QP_PORT | ACC, 0 },
	{ IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_INIT,
	  0, PKEY | IBV_QP_PORT | ACC },
	{ IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR,
	  IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
	  ALT | ACC | PKEY },
	{ IBV_QPT_UC, IBV_QPS_RTR, IBV_QPS_RTS,
	  IBV_QP_SQ_PSN, CUR | ALT | ACC | MIG },
	{ IBV_QPT_UC, IBV_QPS_RTS, IBV_QPS_RTS,
	  0, CUR | ACC | ALT | MIG },
	{ IBV_QPT_UC, IBV_QPS_RTS, IBV_QPS_SQD,
	  0, IBV_QP_EN_SQD_ASYNC_NOTIFY },
	{ IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_RTS,
	  0, CUR | ALT | ACC | MIG },
	{ IBV_QPT_UC, IBV_QPS_SQD, IBV_QPS_SQD,
	  0, IBV_QP_AV | ALT | ACC | PKEY | MIG },
	{ IBV_QPT_UC, IBV_QPS_SQE, IBV_QPS_RTS,
	  0, CUR | ACC },

	{ IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT,
	  PKEY | IBV_QP_PORT | IBV_QP_QKEY, 0 },
	{ IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_INIT,
	  0, PKEY | IBV_QP_PORT | IBV_QP_QKEY },
	{ IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR,
	  0, PKEY | IBV_QP_QKEY },
	{ IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS,
	  IBV_QP_SQ_PSN, CUR | IBV_QP_QKEY },
	{ IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_RTS,
	  0, CUR | IBV_QP_QKEY },
	{ IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_SQD,
	  0, IBV_QP_EN_SQD_ASYNC_NOTIFY },
	{ IBV_QPT_UD, IBV_QPS_SQD, IBV_QPS_RTS,
	  0, CUR | IBV_QP_QKEY },
	{ IBV_QPT_UD, IBV_QPS_SQD, IBV_QPS_SQD,
	  0, PKEY | IBV_QP_QKEY },
	{ IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS,
	  0, CUR | IBV_QP_QKEY },
};

static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC,
					  IBV_QPT_UD };

#define NMODEL (sizeof(model) / sizeof(model[0]))
#define NTYPES (sizeof(types) / sizeof(types[0]))

/* The model's answer: is the pair legal, and with which masks. */
static bool model_lookup(enum ibv_qp_type type, enum ibv_qp_state cur,
			 enum ibv_qp_state next, int *req, int *opt)
{
	size_t i;

	*req = *opt = 0;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return true;
	for (i = 0; i < NMODEL; i++) {
		if (model[i].type == type && model[i].cur == cur &&
		    model[i].next == next) {
			*req = model[i].req;
			*opt = model[i].opt;
			return true;
		}
	}
	return false;
}

static int check(enum ibv_qp_type type, enum ibv_qp_state cur,
		 enum ibv_qp_state next, int mask)
{
	return srdma_qp_modify_check(type, cur, next, mask);
}

static void test_qp_modify_legal_with_required_mask(void **state)
{
	size_t i;

	for (i = 0; i < NMODEL; i++) {
		const struct legal *l = &model[i];

		/* Exactly the required bits... */
		assert_int_equal(check(l->type, l->cur, l->next,
				       IBV_QP_STATE | l->req), 0);
		/* ...and with every optional bit too. */
		assert_int_equal(check(l->type, l->cur, l->next,
				       IBV_QP_STATE | l->req | l->opt), 0);
	}
	/* The everyday sequences, spelled out. */
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR,
			       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
			 0);
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_INIT, IBV_QPS_RTR,
			       IBV_QP_STATE), 0);
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_SQD,
			       IBV_QP_STATE), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_SQD,
			       IBV_QP_STATE | IBV_QP_TIMEOUT), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_RTS,
			       IBV_QP_STATE), 0);
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS,
			       IBV_QP_STATE), 0);
}

static void test_qp_modify_missing_required_bit_fails(void **state)
{
	size_t i;
	int b, n = 0;

	for (i = 0; i < NMODEL; i++) {
		const struct legal *l = &model[i];
		int all = IBV_QP_STATE | l->req | l->opt;

		for (b = 0; b < 31; b++) {
			int bit = 1 << b;

			if (!(l->req & bit))
				continue;
			assert_int_equal(check(l->type, l->cur, l->next,
					       all & ~bit),
					 -EINVAL);
			n++;
		}
	}
	assert_int_equal(n, 26);	/* RC 3+6+5, UC 3+4+1, UD 3+1 */
}

static void test_qp_modify_disallowed_extra_bit_fails(void **state)
{
	enum ibv_qp_state cur, next;
	size_t t;
	int b, req, opt;

	/* Every legal pair of every type, every bit it does not take. */
	for (t = 0; t < NTYPES; t++)
		for (cur = 0; cur < NSTATES; cur++)
			for (next = 0; next < NSTATES; next++) {
				if (!model_lookup(types[t], cur, next, &req,
						  &opt))
					continue;
				for (b = 0; b < 31; b++) {
					int bit = 1 << b;

					if ((req | opt | IBV_QP_STATE) & bit)
						continue;
					assert_int_equal(
						check(types[t], cur, next,
						      IBV_QP_STATE | req | bit),
						-EINVAL);
				}
				assert_int_equal(check(types[t], cur, next,
						       IBV_QP_STATE | req |
							       INT_MIN),
						 -EINVAL);
			}
	/* A few by name. */
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY),
			 -EINVAL);
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS),
			 -EINVAL);
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT),
			 -EINVAL);
	assert_int_equal(check(IBV_QPT_UC, IBV_QPS_INIT, IBV_QPS_RTR,
			       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MIN_RNR_TIMER),
			 -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_AV), -EINVAL);
}

static void test_qp_modify_illegal_transitions_fail(void **state)
{
	static const struct {
		enum ibv_qp_state cur, next;
	} bad[] = {
		{ IBV_QPS_RESET, IBV_QPS_RTR }, { IBV_QPS_RESET, IBV_QPS_RTS },
		{ IBV_QPS_RESET, IBV_QPS_SQD }, { IBV_QPS_INIT, IBV_QPS_RTS },
		{ IBV_QPS_INIT, IBV_QPS_SQD },	{ IBV_QPS_RTR, IBV_QPS_INIT },
		{ IBV_QPS_RTR, IBV_QPS_RTR },	{ IBV_QPS_RTR, IBV_QPS_SQD },
		{ IBV_QPS_RTS, IBV_QPS_INIT },	{ IBV_QPS_RTS, IBV_QPS_RTR },
		{ IBV_QPS_SQD, IBV_QPS_INIT },	{ IBV_QPS_SQD, IBV_QPS_RTR },
		{ IBV_QPS_SQE, IBV_QPS_SQE },	{ IBV_QPS_SQE, IBV_QPS_INIT },
		{ IBV_QPS_ERR, IBV_QPS_INIT },	{ IBV_QPS_ERR, IBV_QPS_RTS },
		{ IBV_QPS_RTS, IBV_QPS_SQE },	{ IBV_QPS_INIT, IBV_QPS_SQE },
	};
	enum ibv_qp_state cur, next;
	size_t t, i;
	int req, opt;

	for (t = 0; t < NTYPES; t++)
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			assert_false(model_lookup(types[t], bad[i].cur,
						  bad[i].next, &req, &opt));
			assert_int_equal(check(types[t], bad[i].cur,
					       bad[i].next, IBV_QP_STATE),
					 -EINVAL);
		}
	/* And every pair the model does not list, whatever the mask. */
	for (t = 0; t < NTYPES; t++)
		for (cur = 0; cur < NSTATES; cur++)
			for (next = 0; next < NSTATES; next++) {
				if (model_lookup(types[t], cur, next, &req,
						 &opt))
					continue;
				assert_int_equal(check(types[t], cur, next,
						       IBV_QP_STATE),
						 -EINVAL);
				assert_int_equal(check(types[t], cur, next,
						       0x3ffffff),
						 -EINVAL);
			}
	/* Only the device enters SQE; and not a state at all. */
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_SQE,
			       IBV_QP_STATE), -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_UNKNOWN,
			       IBV_QP_STATE), -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_UNKNOWN, IBV_QPS_ERR,
			       IBV_QP_STATE), -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, (enum ibv_qp_state)-1, IBV_QPS_ERR,
			       IBV_QP_STATE), -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_INIT, (enum ibv_qp_state)42,
			       IBV_QP_STATE), -EINVAL);
}

static void test_qp_modify_any_state_to_reset_and_err(void **state)
{
	enum ibv_qp_state cur;
	size_t t;

	for (t = 0; t < NTYPES; t++)
		for (cur = 0; cur < NSTATES; cur++) {
			assert_int_equal(check(types[t], cur, IBV_QPS_RESET,
					       IBV_QP_STATE), 0);
			assert_int_equal(check(types[t], cur, IBV_QPS_ERR,
					       IBV_QP_STATE), 0);
			/* Nothing else rides along, not even CUR_STATE. */
			assert_int_equal(check(types[t], cur, IBV_QPS_RESET,
					       IBV_QP_STATE | IBV_QP_CUR_STATE),
					 -EINVAL);
			assert_int_equal(check(types[t], cur, IBV_QPS_ERR,
					       IBV_QP_STATE | IBV_QP_CUR_STATE),
					 -EINVAL);
			assert_int_equal(check(types[t], cur, IBV_QPS_ERR,
					       IBV_QP_STATE |
						       IBV_QP_ACCESS_FLAGS),
					 -EINVAL);
		}
}

static void test_qp_modify_no_state_bit_is_cur_to_cur(void **state)
{
	/* @next is ignored: the request is checked as cur -> cur. */
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RESET,
			       IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS,
			       IBV_QP_TIMEOUT), -EINVAL);
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_RTS, IBV_QPS_ERR,
			       IBV_QP_QKEY), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_RTR,
			       IBV_QP_PKEY_INDEX), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_RTS,
			       IBV_QP_AV | IBV_QP_TIMEOUT), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT, 0), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_ERR, IBV_QPS_ERR, 0), 0);
	/* RTR -> RTR and SQE -> SQE do not exist. */
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_ACCESS_FLAGS), -EINVAL);
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_SQE, IBV_QPS_RTS, 0),
			 -EINVAL);
	/* RESET -> RESET takes nothing. */
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_PORT), -EINVAL);
}

static void test_qp_modify_cur_state_and_rate_limit(void **state)
{
	/* CUR_STATE: leaving RTR, RTS, SQD or SQE towards RTS only. */
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_CUR_STATE |
				       IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
	assert_int_equal(check(IBV_QPT_UC, IBV_QPS_SQE, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_SQE, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_CUR_STATE), -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_SQD,
			       IBV_QP_STATE | IBV_QP_CUR_STATE), -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_STATE | IBV_QP_CUR_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_INIT, IBV_QPS_INIT,
			       IBV_QP_STATE | IBV_QP_CUR_STATE), -EINVAL);

	/* RATE_LIMIT: RC on INIT -> RTR, RTR -> RTS, RTS -> RTS only. */
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_RATE_LIMIT), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RTS, IBV_QPS_RTS,
			       IBV_QP_RATE_LIMIT), 0);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_SQD, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_RATE_LIMIT), -EINVAL);
	assert_int_equal(check(IBV_QPT_RC, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS | IBV_QP_RATE_LIMIT),
			 -EINVAL);
	assert_int_equal(check(IBV_QPT_UC, IBV_QPS_RTS, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_RATE_LIMIT), -EINVAL);
	assert_int_equal(check(IBV_QPT_UD, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_SQ_PSN |
				       IBV_QP_RATE_LIMIT), -EINVAL);
}

static void test_qp_modify_other_types_unsupported(void **state)
{
	static const enum ibv_qp_type other[] = {
		IBV_QPT_DRIVER, (enum ibv_qp_type)0, (enum ibv_qp_type)99,
	};
	size_t i;

	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_int_equal(check(other[i], IBV_QPS_RESET, IBV_QPS_INIT,
				       IBV_QP_STATE | IBV_QP_PORT),
				 -EOPNOTSUPP);
}

/* XRC INI and TGT: the kernel's masks (TGT takes the responder's). */
static void test_qp_modify_xrc_masks(void **state)
{
	const int init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS;
	const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	(void)state;
	assert_int_equal(check(IBV_QPT_XRC_SEND, IBV_QPS_RESET, IBV_QPS_INIT,
			       init), 0);
	assert_int_equal(check(IBV_QPT_XRC_RECV, IBV_QPS_RESET, IBV_QPS_INIT,
			       init), 0);
	assert_int_equal(check(IBV_QPT_XRC_SEND, IBV_QPS_INIT, IBV_QPS_RTR,
			       rtr), 0);
	/* TGT needs the responder's attributes too. */
	assert_int_equal(check(IBV_QPT_XRC_RECV, IBV_QPS_INIT, IBV_QPS_RTR,
			       rtr), -EINVAL);
	assert_int_equal(check(IBV_QPT_XRC_RECV, IBV_QPS_INIT, IBV_QPS_RTR,
			       rtr | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	/* INI sends, so it needs the requester's; TGT only timeout/PSN. */
	assert_int_equal(check(IBV_QPT_XRC_SEND, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN),
			 -EINVAL);
	assert_int_equal(check(IBV_QPT_XRC_RECV, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN),
			 0);
	assert_int_equal(check(IBV_QPT_XRC_SEND, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER),
			 -EINVAL);
}

/* Raw packet QPs (kernel rules): INIT takes IBV_QP_PORT only; RTR and
 * RTS take nothing but the state. */
static void test_qp_modify_raw_packet(void **state)
{
	(void)state;
	assert_int_equal(check(IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_STATE | IBV_QP_PORT), 0);
	assert_int_equal(check(IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_STATE), -EINVAL);
	assert_int_equal(check(IBV_QPT_RAW_PACKET, IBV_QPS_RESET, IBV_QPS_INIT,
			       IBV_QP_STATE | IBV_QP_PORT | IBV_QP_QKEY),
			 -EINVAL);
	assert_int_equal(check(IBV_QPT_RAW_PACKET, IBV_QPS_INIT, IBV_QPS_RTR,
			       IBV_QP_STATE), 0);
	assert_int_equal(check(IBV_QPT_RAW_PACKET, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE), 0);
	assert_int_equal(check(IBV_QPT_RAW_PACKET, IBV_QPS_RTR, IBV_QPS_RTS,
			       IBV_QP_STATE | IBV_QP_SQ_PSN), -EINVAL);
}

static const struct srdma_qp_limits lim = {
	.max_qp_rd_atom = 16,
	.max_qp_dest_rd_atom = 8,
	.gid_tbl_len = 4,
};

/* Every value at its legal limit. */
static void good_attr(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->cur_qp_state = IBV_QPS_RTR;
	a->port_num = 1;
	a->pkey_index = 0;
	a->path_mtu = IBV_MTU_4096;
	a->timeout = 31;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->min_rnr_timer = 31;
	a->max_rd_atomic = 16;
	a->max_dest_rd_atomic = 8;
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	a->ah_attr.port_num = 1;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.sgid_index = 3;
	a->alt_port_num = 1;
	a->alt_timeout = 31;
	a->alt_ah_attr.port_num = 1;
}

#define ALL_MASK 0x3ffffff

static int attr_check(const struct ibv_qp_attr *a, int mask)
{
	return srdma_qp_attr_check(IBV_QPT_RC, a, mask, &lim);
}

static void test_qp_attr_values_at_the_limits(void **state)
{
	static const enum ibv_mtu mtus[] = { IBV_MTU_256, IBV_MTU_512,
					     IBV_MTU_1024, IBV_MTU_2048,
					     IBV_MTU_4096 };
	struct ibv_qp_attr a;
	size_t i;

	good_attr(&a);
	assert_int_equal(attr_check(&a, ALL_MASK), 0);
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_UD, &a, ALL_MASK, &lim),
			 0);
	for (i = 0; i < sizeof(mtus) / sizeof(mtus[0]); i++) {
		a.path_mtu = mtus[i];
		assert_int_equal(attr_check(&a, IBV_QP_PATH_MTU), 0);
	}
	a.ah_attr.is_global = 0;
	a.ah_attr.grh.sgid_index = 200;	/* not looked at without GRH */
	assert_int_equal(attr_check(&a, IBV_QP_AV), 0);
	a.qp_access_flags = 0;
	assert_int_equal(attr_check(&a, IBV_QP_ACCESS_FLAGS), 0);
	a.qp_state = IBV_QPS_RESET;
	a.cur_qp_state = IBV_QPS_ERR;
	assert_int_equal(attr_check(&a, IBV_QP_STATE | IBV_QP_CUR_STATE), 0);
}

/* One bad field at a time: rejected with its bit, ignored without it. */
#define BAD(field, value, bit)                                                 \
	do {                                                                   \
		good_attr(&a);                                                 \
		a.field = (value);                                             \
		assert_int_equal(attr_check(&a, ALL_MASK), -EINVAL);           \
		assert_int_equal(attr_check(&a, (bit)), -EINVAL);              \
		assert_int_equal(attr_check(&a, ALL_MASK & ~(bit)), 0);        \
	} while (0)

static void test_qp_attr_each_bad_value_fails(void **state)
{
	struct ibv_qp_attr a;

	BAD(qp_state, IBV_QPS_UNKNOWN, IBV_QP_STATE);
	BAD(qp_state, (enum ibv_qp_state)-1, IBV_QP_STATE);
	BAD(cur_qp_state, IBV_QPS_UNKNOWN, IBV_QP_CUR_STATE);
	BAD(port_num, 0, IBV_QP_PORT);
	BAD(port_num, 2, IBV_QP_PORT);
	BAD(pkey_index, 1, IBV_QP_PKEY_INDEX);
	BAD(path_mtu, (enum ibv_mtu)0, IBV_QP_PATH_MTU);
	BAD(path_mtu, (enum ibv_mtu)(IBV_MTU_4096 + 1), IBV_QP_PATH_MTU);
	BAD(timeout, 32, IBV_QP_TIMEOUT);
	BAD(retry_cnt, 8, IBV_QP_RETRY_CNT);
	BAD(rnr_retry, 8, IBV_QP_RNR_RETRY);
	BAD(min_rnr_timer, 32, IBV_QP_MIN_RNR_TIMER);
	BAD(max_rd_atomic, 17, IBV_QP_MAX_QP_RD_ATOMIC);
	BAD(max_dest_rd_atomic, 9, IBV_QP_MAX_DEST_RD_ATOMIC);
	BAD(ah_attr.port_num, 2, IBV_QP_AV);
	BAD(ah_attr.port_num, 0, IBV_QP_AV);
	BAD(ah_attr.grh.sgid_index, 4, IBV_QP_AV);
	BAD(alt_port_num, 2, IBV_QP_ALT_PATH);
	BAD(alt_pkey_index, 1, IBV_QP_ALT_PATH);
	BAD(alt_timeout, 32, IBV_QP_ALT_PATH);
	BAD(alt_ah_attr.port_num, 0, IBV_QP_ALT_PATH);
}

static void test_qp_attr_limits_come_from_the_device(void **state)
{
	struct srdma_qp_limits l0 = { .gid_tbl_len = 1 };
	struct ibv_qp_attr a;

	good_attr(&a);
	a.max_rd_atomic = 0;
	a.max_dest_rd_atomic = 0;
	a.ah_attr.grh.sgid_index = 0;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a,
					     IBV_QP_MAX_QP_RD_ATOMIC |
						     IBV_QP_MAX_DEST_RD_ATOMIC |
						     IBV_QP_AV,
					     &l0), 0);
	a.max_rd_atomic = 1;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a,
					     IBV_QP_MAX_QP_RD_ATOMIC, &l0),
			 -EINVAL);
	a.max_dest_rd_atomic = 1;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a,
					     IBV_QP_MAX_DEST_RD_ATOMIC, &l0),
			 -EINVAL);
	a.ah_attr.grh.sgid_index = 1;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a, IBV_QP_AV, &l0),
			 -EINVAL);
	/* No bits, nothing read. */
	memset(&a, 0xa5, sizeof(a));
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a, 0, &l0), 0);
}

/* A RoCE port (link layer Ethernet): an AV without a GRH has no address,
 * and a path MTU above the port's active MTU is refused. */
static void test_qp_attr_roce_rules(void **state)
{
	struct srdma_qp_limits roce = lim;
	struct ibv_qp_attr a;

	roce.grh_required = true;
	roce.max_path_mtu = IBV_MTU_1024;
	good_attr(&a);
	a.path_mtu = IBV_MTU_1024;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a,
					     IBV_QP_AV | IBV_QP_PATH_MTU,
					     &roce), 0);
	a.path_mtu = IBV_MTU_2048;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a, IBV_QP_PATH_MTU,
					     &roce), -EINVAL);
	a.path_mtu = IBV_MTU_256;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_UC, &a, IBV_QP_PATH_MTU,
					     &roce), 0);
	a.ah_attr.is_global = 0;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a, IBV_QP_AV,
					     &roce), -EINVAL);
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_UC, &a, IBV_QP_AV,
					     &roce), -EINVAL);
	/* The same AV is fine on InfiniBand (the LID routes). */
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a, IBV_QP_AV,
					     &lim), 0);
	/* The alternate path obeys the same rule. */
	good_attr(&a);
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a, IBV_QP_ALT_PATH,
					     &roce), -EINVAL);
	a.alt_ah_attr.is_global = 1;
	assert_int_equal(srdma_qp_attr_check(IBV_QPT_RC, &a, IBV_QP_ALT_PATH,
					     &roce), 0);
}

static void test_qp_rnr_timer_table(void **state)
{
	uint8_t c;

	assert_true(srdma_rnr_timer_ns(0) == 655360000ull);	/* 655.36 ms */
	assert_true(srdma_rnr_timer_ns(1) == 10000ull);	/* 0.01 ms */
	assert_true(srdma_rnr_timer_ns(2) == 20000ull);
	assert_true(srdma_rnr_timer_ns(3) == 30000ull);
	assert_true(srdma_rnr_timer_ns(4) == 40000ull);
	assert_true(srdma_rnr_timer_ns(5) == 60000ull);
	assert_true(srdma_rnr_timer_ns(12) == 640000ull);	/* 0.64 ms */
	assert_true(srdma_rnr_timer_ns(14) == 1280000ull);	/* 1.28 ms */
	assert_true(srdma_rnr_timer_ns(18) == 5120000ull);	/* 5.12 ms */
	assert_true(srdma_rnr_timer_ns(24) == 40960000ull);	/* 40.96 ms */
	assert_true(srdma_rnr_timer_ns(31) == 491520000ull);	/* 491.52 ms */
	/* 2 * 2^k, 3 * 2^k, ... from code 2 on; strictly increasing. */
	for (c = 2; c <= 31; c++) {
		uint64_t want = (uint64_t)(2 + (c & 1)) << ((c - 2) / 2);

		assert_true(srdma_rnr_timer_ns(c) == want * 10000);
		assert_true(srdma_rnr_timer_ns(c) > srdma_rnr_timer_ns(c - 1));
	}
	assert_true(srdma_rnr_timer_ns(0) > srdma_rnr_timer_ns(31));
	assert_true(srdma_rnr_timer_ns(32) == srdma_rnr_timer_ns(31));
	assert_true(srdma_rnr_timer_ns(255) == srdma_rnr_timer_ns(31));
}

static void test_qp_ack_timeout_table(void **state)
{
	uint8_t c;

	assert_true(srdma_ack_timeout_ns(0) == UINT64_MAX);
	assert_true(srdma_ack_timeout_ns(1) == 8192ull);	/* 8.192 us */
	assert_true(srdma_ack_timeout_ns(14) == 67108864ull);	/* ~67 ms */
	assert_true(srdma_ack_timeout_ns(18) == 1073741824ull);	/* ~1.07 s */
	assert_true(srdma_ack_timeout_ns(31) == 4096ull << 31);	/* ~2.4 h */
	for (c = 1; c <= 31; c++)
		assert_true(srdma_ack_timeout_ns(c) == 4096ull << c);
	assert_true(srdma_ack_timeout_ns(32) == srdma_ack_timeout_ns(31));
	assert_true(srdma_ack_timeout_ns(255) == srdma_ack_timeout_ns(31));
}

static void test_qp_state_names(void **state)
{
	assert_string_equal(srdma_qp_state_str(IBV_QPS_RESET), "RESET");
	assert_string_equal(srdma_qp_state_str(IBV_QPS_INIT), "INIT");
	assert_string_equal(srdma_qp_state_str(IBV_QPS_RTR), "RTR");
	assert_string_equal(srdma_qp_state_str(IBV_QPS_RTS), "RTS");
	assert_string_equal(srdma_qp_state_str(IBV_QPS_SQD), "SQD");
	assert_string_equal(srdma_qp_state_str(IBV_QPS_SQE), "SQE");
	assert_string_equal(srdma_qp_state_str(IBV_QPS_ERR), "ERR");
	assert_string_equal(srdma_qp_state_str(IBV_QPS_UNKNOWN), "UNKNOWN");
	assert_string_equal(srdma_qp_state_str((enum ibv_qp_state)8), "?");
	assert_string_equal(srdma_qp_state_str((enum ibv_qp_state)-1), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qp_modify_legal_with_required_mask),
		cmocka_unit_test(test_qp_modify_missing_required_bit_fails),
		cmocka_unit_test(test_qp_modify_disallowed_extra_bit_fails),
		cmocka_unit_test(test_qp_modify_illegal_transitions_fail),
		cmocka_unit_test(test_qp_modify_any_state_to_reset_and_err),
		cmocka_unit_test(test_qp_modify_no_state_bit_is_cur_to_cur),
		cmocka_unit_test(test_qp_modify_cur_state_and_rate_limit),
		cmocka_unit_test(test_qp_modify_other_types_unsupported),
		cmocka_unit_test(test_qp_modify_xrc_masks),
		cmocka_unit_test(test_qp_modify_raw_packet),
		cmocka_unit_test(test_qp_attr_values_at_the_limits),
		cmocka_unit_test(test_qp_attr_each_bad_value_fails),
		cmocka_unit_test(test_qp_attr_limits_come_from_the_device),
		cmocka_unit_test(test_qp_attr_roce_rules),
		cmocka_unit_test(test_qp_rnr_timer_table),
		cmocka_unit_test(test_qp_ack_timeout_table),
		cmocka_unit_test(test_qp_state_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
