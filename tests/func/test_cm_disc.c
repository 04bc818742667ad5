// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_cm_disc.c - DISCONNECTED comes after the completions the peer left.
 *
 * When a peer leaves (DREQ, or its CM channel closes), the CM holds the
 * DISCONNECTED back while the QP's CQs still hold completions that were
 * there when the peer left, until the application has polled them or the
 * bound (SRDMA_CM_DISC_HOLD_MS) runs out. rdma_cm orders nothing between
 * a CQ and the event channel, so this is one of the orders hardware may
 * show; it is the one an application that reacts to DISCONNECTED by
 * closing its endpoint needs (libfabric 1.17's rxm lost the peer's last
 * message otherwise). docs/design/cm.md, "DISCONNECTED after the
 * completions".
 *
 * The bound is set to HOLD_MS here so that "held" and "not held" differ
 * by far more than a loaded machine's delays: every time check is a
 * lower bound the library guarantees, or an upper bound HOLD_MS away.
 * One process, async ids on two channels (cm_duo). Ports: 19600-19619.
 */
#include "cm_util.h"
#include "verbs/cm_private.h"

#define PORT_BASE 19600
#define PORT_SPAN 20
#define HOLD_MS	  2000
#define HOLD_STR  "2000"
/* Well under HOLD_MS: an event this early was not held to the bound. */
#define PROMPT_MS 1500

static int new_port(void)
{
	return cm_pick_port(PORT_BASE, PORT_SPAN);
}

/* A connected duo with a registered buffer on each side. */
struct disc {
	struct cm_duo d;
	char abuf[64], cbuf[64];
	struct ibv_mr *amr, *cmr;
};

static int post_recv(struct ibv_qp *qp, void *buf, uint32_t len,
		     uint32_t lkey)
{
	struct ibv_sge s = {(uintptr_t)buf, len, lkey};
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.sg_list = &s;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = {(uintptr_t)buf, len, lkey};
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	return ibv_post_send(qp, &wr, &bad);
}

/*
 * Connect, then send one message active -> child; the active side polls
 * its send completion, the child's receive completion stays in its CQ.
 */
static bool disc_setup(struct disc *x)
{
	memset(x, 0, sizeof(*x));
	cm_duo_listen(&x->d, new_port(), RDMA_PS_TCP);
	cm_duo_resolve(&x->d);
	if (!cm_duo_connect(&x->d))
		return false;
	x->amr = ibv_reg_mr(x->d.act->pd, x->abuf, sizeof(x->abuf),
			    IBV_ACCESS_LOCAL_WRITE);
	x->cmr = ibv_reg_mr(x->d.child->pd, x->cbuf, sizeof(x->cbuf),
			    IBV_ACCESS_LOCAL_WRITE);
	if (!CM_CHECK(x->amr && x->cmr, "ibv_reg_mr: %s", cm_errname(errno)))
		return false;
	if (!CM_CHECK(!post_recv(x->d.child->qp, x->cbuf, sizeof(x->cbuf),
				 x->cmr->lkey),
		      "post_recv"))
		return false;
	memcpy(x->abuf, "the last word", 14);
	if (!CM_CHECK(!post_send(x->d.act->qp, x->abuf, 14, x->amr->lkey),
		      "post_send"))
		return false;
	return cm_expect_wc(x->d.act->send_cq, IBV_WC_SUCCESS, IBV_WC_SEND,
			    NULL, "active SEND");
}

/* The child's receive, still in its CQ: poll it and check it. */
static void disc_poll_recv(struct disc *x)
{
	struct ibv_wc wc;

	if (cm_expect_wc(x->d.child->recv_cq, IBV_WC_SUCCESS, IBV_WC_RECV, &wc,
			 "the peer's last message"))
		CM_CHECK(wc.byte_len == 14 && !memcmp(x->cbuf, "the last word",
						      14),
			 "RECV data");
}

/* DISCONNECTED on the child's channel (CM_EV_MS at most); when it came. */
static uint64_t disc_expect_child(struct disc *x, const char *what)
{
	struct rdma_cm_event *ev =
		cm_expect_event(x->d.lch, RDMA_CM_EVENT_DISCONNECTED, 0);
	uint64_t t = cm_now_ms();

	if (ev) {
		CM_CHECK(ev->id == x->d.child, "%s: DISCONNECTED on %p, want "
			 "the child %p", what, (void *)ev->id,
			 (void *)x->d.child);
		rdma_ack_cm_event(ev);
	}
	return t;
}

/* The active side's own DISCONNECTED (after its rdma_disconnect). */
static void disc_expect_active(struct disc *x)
{
	struct rdma_cm_event *ev =
		cm_expect_event(x->d.ach, RDMA_CM_EVENT_DISCONNECTED, 0);

	if (ev)
		rdma_ack_cm_event(ev);
}

static void disc_close(struct disc *x)
{
	cm_duo_close(&x->d);
	if (x->amr)
		ibv_dereg_mr(x->amr);
	if (x->cmr)
		ibv_dereg_mr(x->cmr);
}

/*
 * The peer disconnects while our receive completion is unpolled: no
 * DISCONNECTED until we poll it, then at once (well before the bound).
 */
static void test_disc_after_recv_polled(void **state)
{
	struct disc x;
	uint64_t t0, t;

	(void)state;
	cm_watchdog(30);
	if (disc_setup(&x)) {
		CM_CHECK(!rdma_disconnect(x.d.act), "rdma_disconnect: %s",
			 cm_errname(errno));
		disc_expect_active(&x);
		/* The DREQ reached the child before the DREP came back. */
		cm_expect_quiet(x.d.lch, 300,
				"DISCONNECTED before the receive was polled");
		t0 = cm_now_ms();
		disc_poll_recv(&x);
		t = disc_expect_child(&x, "after the poll");
		CM_CHECK(t - t0 < PROMPT_MS,
			 "DISCONNECTED %llu ms after the poll, want it at once "
			 "(the bound is %d ms)",
			 (unsigned long long)(t - t0), HOLD_MS);
	}
	disc_close(&x);
	cm_done();
}

/* Not polled: DISCONNECTED comes anyway, once the bound has passed. */
static void test_disc_unpolled_bounded(void **state)
{
	struct disc x;
	uint64_t t0, t;

	(void)state;
	cm_watchdog(30);
	if (disc_setup(&x)) {
		t0 = cm_now_ms();
		CM_CHECK(!rdma_disconnect(x.d.act), "rdma_disconnect: %s",
			 cm_errname(errno));
		t = disc_expect_child(&x, "never polled");
		CM_CHECK(t - t0 >= HOLD_MS - 10,
			 "DISCONNECTED after %llu ms, want the bound (%d ms)",
			 (unsigned long long)(t - t0), HOLD_MS);
		disc_expect_active(&x);
		/* The message is still there, after the event. */
		disc_poll_recv(&x);
	}
	disc_close(&x);
	cm_done();
}

/* Nothing left in the CQs: DISCONNECTED is not held at all. */
static void test_disc_empty_cq_not_held(void **state)
{
	struct disc x;
	uint64_t t0, t;

	(void)state;
	cm_watchdog(30);
	if (disc_setup(&x)) {
		disc_poll_recv(&x);
		t0 = cm_now_ms();
		CM_CHECK(!rdma_disconnect(x.d.act), "rdma_disconnect: %s",
			 cm_errname(errno));
		t = disc_expect_child(&x, "empty CQ");
		CM_CHECK(t - t0 < PROMPT_MS,
			 "DISCONNECTED after %llu ms with empty CQs, want it "
			 "at once", (unsigned long long)(t - t0));
		disc_expect_active(&x);
	}
	disc_close(&x);
	cm_done();
}

/* The peer's process vanishes (its id destroyed, no DREQ): held too. */
static void test_disc_peer_gone_held(void **state)
{
	struct disc x;
	uint64_t t0, t;

	(void)state;
	cm_watchdog(30);
	if (disc_setup(&x)) {
		rdma_destroy_qp(x.d.act);
		CM_CHECK(!rdma_destroy_id(x.d.act), "rdma_destroy_id: %s",
			 cm_errname(errno));
		x.d.act = NULL;
		cm_expect_quiet(x.d.lch, 300,
				"DISCONNECTED before the receive was polled");
		t0 = cm_now_ms();
		disc_poll_recv(&x);
		t = disc_expect_child(&x, "peer gone, after the poll");
		CM_CHECK(t - t0 < PROMPT_MS,
			 "DISCONNECTED %llu ms after the poll",
			 (unsigned long long)(t - t0));
	}
	disc_close(&x);
	cm_done();
}

/*
 * While one is held, the application acts on the connection itself: its
 * rdma_disconnect, or destroying the QP, delivers the event at once;
 * destroying the id drops it (nothing leaks, nothing comes later).
 */
static void test_disc_held_then_app_acts(void **state)
{
	struct disc x;
	uint64_t t0, t;
	int round;

	(void)state;
	cm_watchdog(40);
	for (round = 0; round < 3; round++) {
		if (!disc_setup(&x)) {
			disc_close(&x);
			break;
		}
		CM_CHECK(!rdma_disconnect(x.d.act), "rdma_disconnect: %s",
			 cm_errname(errno));
		disc_expect_active(&x);
		cm_expect_quiet(x.d.lch, 200, "held DISCONNECTED");
		t0 = cm_now_ms();
		if (round == 0) {
			CM_CHECK(!rdma_disconnect(x.d.child),
				 "rdma_disconnect of the held id: %s",
				 cm_errname(errno));
		} else if (round == 1) {
			rdma_destroy_qp(x.d.child);
		} else {
			CM_CHECK(!rdma_destroy_id(x.d.child),
				 "rdma_destroy_id of the held id: %s",
				 cm_errname(errno));
			x.d.child = NULL;
			cm_expect_quiet(x.d.lch, HOLD_MS + 200,
					"event of a destroyed id");
			disc_close(&x);
			continue;
		}
		t = disc_expect_child(&x, round ? "QP destroyed"
						: "own rdma_disconnect");
		CM_CHECK(t - t0 < PROMPT_MS, "round %d: DISCONNECTED after "
			 "%llu ms", round, (unsigned long long)(t - t0));
		disc_close(&x);
	}
	cm_done();
}

/*
 * Our own last send still waits in RNR when the peer leaves (the peer
 * never posted a receive for it). On one host that wait is for the
 * peer's application, which is gone: DISCONNECTED is not held for it.
 * (Between hosts, sends waiting for the peer's ACK do hold it; the marks
 * count only those.)
 */
static void test_disc_rnr_send_not_held(void **state)
{
	struct srdma_priv_cq_marks m;
	struct disc x;
	uint64_t t0, t;

	(void)state;
	cm_watchdog(30);
	if (disc_setup(&x)) {
		disc_poll_recv(&x);
		/* The active side has no receive posted: RNR, deferred. */
		memcpy(x.cbuf, "no one listens", 15);
		CM_CHECK(!post_send(x.d.child->qp, x.cbuf, 15, x.cmr->lkey),
			 "post_send");
		CM_CHECK(!srdma_priv_qp_cq_marks(x.d.child->verbs,
						 x.d.child->qp->qp_num, &m),
			 "srdma_priv_qp_cq_marks");
		CM_CHECK_INT(m.sq_busy, 0, "net sends without a completion");
		CM_CHECK(m.cons[0] == m.prod[0] && m.cons[1] == m.prod[1],
			 "CQs not empty: send %llu/%llu recv %llu/%llu",
			 (unsigned long long)m.cons[0],
			 (unsigned long long)m.prod[0],
			 (unsigned long long)m.cons[1],
			 (unsigned long long)m.prod[1]);
		t0 = cm_now_ms();
		CM_CHECK(!rdma_disconnect(x.d.act), "rdma_disconnect: %s",
			 cm_errname(errno));
		t = disc_expect_child(&x, "RNR send");
		CM_CHECK(t - t0 < PROMPT_MS,
			 "DISCONNECTED after %llu ms with only an RNR send "
			 "pending, want it at once",
			 (unsigned long long)(t - t0));
		disc_expect_active(&x);
	}
	disc_close(&x);
	cm_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disc_after_recv_polled),
		cmocka_unit_test(test_disc_unpolled_bounded),
		cmocka_unit_test(test_disc_empty_cq_not_held),
		cmocka_unit_test(test_disc_peer_gone_held),
		cmocka_unit_test(test_disc_held_then_app_acts),
		cmocka_unit_test(test_disc_rnr_send_not_held),
	};

	setenv("SRDMA_CM_DISC_HOLD_MS", HOLD_STR, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
