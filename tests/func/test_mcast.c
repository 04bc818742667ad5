// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_mcast.c - UD multicast through the public verbs API
 * (docs/design/multicast.md).
 *
 * ibv_attach_mcast / ibv_detach_mcast with the errnos of the kernel's
 * uverbs (EINVAL for a QP that is not UD, a GID or, on InfiniBand, a LID
 * that is not multicast, a detach of what is not attached; a duplicate
 * attach succeeds and still gives one copy; ibv_destroy_qp of an attached
 * QP is EBUSY); the limits the device advertises (ENOMEM past them);
 * delivery of a send to the group (DQPN 0xffffff) to every attached QP
 * of every context, exactly once each, not to QPs with another Q_Key or
 * not attached, to the sending QP itself unless it was created with
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB; after a detach, nothing; to a QP of
 * another process, and nothing stale once that process is gone; a table
 * scribbled with garbage counts is repaired by its next user.
 *
 * On a RoCE port (func.eth.test_mcast) attaching joins IP multicast
 * groups on the port's interfaces, so the whole test runs in a private
 * network namespace with only lo (root needed; else it skips): nothing
 * reaches the machine's real network.
 */
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "dp_util.h"
#include "transport/host/mcast.h"

#define MSG_LEN 100
#define NSEND	5
#define MC_QPN	0xffffffu

static bool roce;

static void mgid_of(union ibv_gid *g, uint8_t n)
{
	memset(g, 0, sizeof(*g));
	if (roce) {
		/* ::ffff:239.83.77.n */
		g->raw[10] = g->raw[11] = 0xff;
		g->raw[12] = 239;
		g->raw[13] = 83;
		g->raw[14] = 77;
		g->raw[15] = n;
	} else {
		g->raw[0] = 0xff;
		g->raw[1] = 0x12;
		g->raw[2] = 0x40;
		g->raw[3] = 0x01;
		g->raw[15] = n;
	}
}

static uint16_t mlid_of(uint8_t n)
{
	return (uint16_t)(0xc000 + n);
}

/* A UD QP (optionally with create flags) in RTS with Q_Key @qkey. */
static struct ibv_qp *ud_qp(struct dp_ep *e, uint32_t qkey, uint32_t flags)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = 32;
	ia.cap.max_recv_wr = 32;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = e->pd;
	if (flags) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		ia.create_flags = flags;
	}
	qp = ibv_create_qp_ex(e->ctx, &ia);
	assert_non_null(qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
			 0);
	return qp;
}

static void post_recvs(struct dp_ep *e, struct ibv_qp *qp, int n)
{
	struct ibv_sge s = { (uintptr_t)e->buf + fu_page(), MSG_LEN + 40,
			     e->mr->lkey };
	struct ibv_recv_wr wr, *bad;
	int i;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &s;
	wr.num_sge = 1;
	for (i = 0; i < n; i++) {
		wr.wr_id = qp->qp_num;
		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
	}
}

/* The address vector of group @n: its MLID and (RoCE: always) its MGID. */
static struct ibv_ah *group_ah(struct dp_ep *e, uint8_t n, bool grh)
{
	struct ibv_ah_attr ah;
	struct ibv_ah *a;

	memset(&ah, 0, sizeof(ah));
	ah.port_num = 1;
	if (roce) {
		fu_av_fix(e->ctx, &ah);
		grh = true;
	} else {
		ah.dlid = mlid_of(n);
	}
	if (grh) {
		ah.is_global = 1;
		mgid_of(&ah.grh.dgid, n);
		ah.grh.hop_limit = 1;
	}
	a = ibv_create_ah(e->pd, &ah);
	assert_non_null(a);
	return a;
}

/* @count sends of MSG_LEN bytes from @qp to group @ah. Unsignaled: the
 * host transport delivers inside ibv_post_send, and the receives of the
 * sender's own QP share its CQ. */
static void send_to(struct dp_ep *e, struct ibv_qp *qp, struct ibv_ah *ah,
		    uint32_t qkey, uint32_t dqpn, int count)
{
	struct ibv_sge s = { (uintptr_t)e->buf, MSG_LEN, e->mr->lkey };
	struct ibv_send_wr wr, *bad;
	int i;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = qkey;
	for (i = 0; i < count; i++) {
		wr.wr_id = 0x5e5d0000u + (uint32_t)i;
		memset(e->buf, 'a' + i, MSG_LEN);
		assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
	}
}

/* Receives on @cq per QP (wr_id = QPN), within @ms; checks each. */
static int count_recvs(struct ibv_cq *cq, uint32_t qpn, uint32_t src_qpn,
		       int ms)
{
	struct ibv_wc wc;
	int n = 0;

	while (dp_poll(cq, &wc, ms)) {
		fu_expect(wc.status == IBV_WC_SUCCESS &&
				  wc.opcode == IBV_WC_RECV,
			  "receive: %s opcode %d", ibv_wc_status_str(wc.status),
			  wc.opcode);
		fu_expect(wc.wr_id == qpn, "receive on QP %#x, want %#x",
			  (unsigned)wc.wr_id, qpn);
		fu_expect(wc.byte_len == MSG_LEN + 40, "byte_len %u",
			  wc.byte_len);
		fu_expect(wc.src_qp == src_qpn, "src_qp %#x, want %#x",
			  wc.src_qp, src_qpn);
		n++;
	}
	return n;
}

/* ---- errors --------------------------------------------------------- */

static void test_mcast_attach_errors(void **state)
{
	struct ibv_device_attr da;
	struct ibv_qp *ud, *rc;
	union ibv_gid g, uni;
	struct dp_ep e;

	(void)state;
	dp_ep_open(&e, false);
	assert_int_equal(ibv_query_device(e.ctx, &da), 0);
	fu_expect(da.max_mcast_grp > 0 && da.max_mcast_qp_attach > 0 &&
			  da.max_total_mcast_qp_attach >= da.max_mcast_qp_attach,
		  "multicast limits %d %d %d", da.max_mcast_grp,
		  da.max_mcast_qp_attach, da.max_total_mcast_qp_attach);
	ud = ud_qp(&e, DP_QKEY, 0);
	dp_qp_create(&e, IBV_QPT_RC, 0);
	rc = e.qp;
	mgid_of(&g, 1);
	memset(&uni, 0, sizeof(uni));
	uni.raw[0] = 0xfe;
	uni.raw[1] = 0x80;
	uni.raw[15] = 1;
	fu_expect(ibv_attach_mcast(rc, &g, mlid_of(1)) == EINVAL,
		  "attach of an RC QP");
	fu_expect(ibv_attach_mcast(ud, &uni, mlid_of(1)) == EINVAL,
		  "attach to a unicast GID");
	fu_expect(ibv_attach_mcast(ud, NULL, mlid_of(1)) == EINVAL,
		  "attach without a GID");
	if (!roce) {
		fu_expect(ibv_attach_mcast(ud, &g, 0x1234) == EINVAL,
			  "attach with a unicast LID");
		fu_expect(ibv_attach_mcast(ud, &g, 0xffff) == EINVAL,
			  "attach with the permissive LID");
	}
	fu_expect(ibv_detach_mcast(ud, &g, mlid_of(1)) == EINVAL,
		  "detach of a group not attached");
	fu_expect(ibv_attach_mcast(ud, &g, mlid_of(1)) == 0, "attach");
	fu_expect(ibv_attach_mcast(ud, &g, mlid_of(1)) == 0,
		  "attach again (one copy)");
	if (!roce)
		fu_expect(ibv_detach_mcast(ud, &g, mlid_of(2)) == EINVAL,
			  "detach with another LID");
	fu_expect(ibv_destroy_qp(ud) == EBUSY, "destroy of an attached QP");
	fu_expect(ibv_detach_mcast(ud, &g, mlid_of(1)) == 0, "detach");
	fu_expect(ibv_detach_mcast(ud, &g, mlid_of(1)) == EINVAL,
		  "second detach");
	fu_expect(ibv_detach_mcast(rc, &g, mlid_of(1)) == EINVAL,
		  "detach of an RC QP");
	fu_expect(ibv_destroy_qp(ud) == 0, "destroy after detach");
	dp_ep_close(&e);
	fu_done();
}

/* Past max_mcast_grp groups, past max_mcast_qp_attach QPs: ENOMEM. */
static void test_mcast_limits(void **state)
{
	struct ibv_qp **qps;
	struct ibv_device_attr da;
	union ibv_gid g;
	struct dp_ep e;
	int i, n;

	(void)state;
	dp_ep_open(&e, false);
	assert_int_equal(ibv_query_device(e.ctx, &da), 0);
	n = da.max_mcast_qp_attach + 1;
	qps = calloc((size_t)n, sizeof(*qps));
	assert_non_null(qps);
	for (i = 0; i < n; i++)
		qps[i] = ud_qp(&e, DP_QKEY, 0);
	/* Groups: one QP in max_mcast_grp of them, then one more. */
	for (i = 0; i < da.max_mcast_grp; i++) {
		mgid_of(&g, 0);
		g.raw[13] = (uint8_t)(i >> 8);
		g.raw[14] = (uint8_t)i;
		if (ibv_attach_mcast(qps[0], &g, mlid_of(0))) {
			fu_expect(false, "attach to group %d of %d", i,
				  da.max_mcast_grp);
			break;
		}
	}
	mgid_of(&g, 0);
	g.raw[13] = 0x7f;
	fu_expect(ibv_attach_mcast(qps[0], &g, mlid_of(0)) == ENOMEM,
		  "attach past max_mcast_grp");
	for (i = 0; i < da.max_mcast_grp; i++) {
		mgid_of(&g, 0);
		g.raw[13] = (uint8_t)(i >> 8);
		g.raw[14] = (uint8_t)i;
		fu_expect(ibv_detach_mcast(qps[0], &g, mlid_of(0)) == 0,
			  "detach from group %d", i);
	}
	/* QPs: max_mcast_qp_attach in one group, then one more. */
	mgid_of(&g, 9);
	for (i = 0; i < n - 1; i++)
		fu_expect(ibv_attach_mcast(qps[i], &g, mlid_of(9)) == 0,
			  "attach QP %d", i);
	fu_expect(ibv_attach_mcast(qps[n - 1], &g, mlid_of(9)) == ENOMEM,
		  "attach past max_mcast_qp_attach");
	for (i = 0; i < n - 1; i++)
		fu_expect(ibv_detach_mcast(qps[i], &g, mlid_of(9)) == 0,
			  "detach QP %d", i);
	for (i = 0; i < n; i++)
		fu_expect(ibv_destroy_qp(qps[i]) == 0, "destroy QP %d", i);
	free(qps);
	dp_ep_close(&e);
	fu_done();
}

/* ---- delivery ------------------------------------------------------- */

static void test_mcast_delivery(void **state)
{
	struct ibv_qp *s, *b1, *b2, *c1, *c2, *blk;
	struct dp_ep a, b, c;
	struct ibv_ah *ah;
	union ibv_gid g;
	int nb1 = 0, nb2 = 0, n;
	struct ibv_wc wc;

	(void)state;
	dp_ep_open(&a, false);
	dp_ep_open(&b, false);
	dp_ep_open(&c, false);
	s = ud_qp(&a, DP_QKEY, 0);
	blk = ud_qp(&a, DP_QKEY, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	b1 = ud_qp(&b, DP_QKEY, 0);
	b2 = ud_qp(&b, DP_QKEY, 0);
	c1 = ud_qp(&c, DP_QKEY + 1, 0);	/* another Q_Key */
	c2 = ud_qp(&c, DP_QKEY, 0);	/* not attached */
	mgid_of(&g, 3);
	assert_int_equal(ibv_attach_mcast(s, &g, mlid_of(3)), 0);
	assert_int_equal(ibv_attach_mcast(blk, &g, mlid_of(3)), 0);
	assert_int_equal(ibv_attach_mcast(b1, &g, mlid_of(3)), 0);
	assert_int_equal(ibv_attach_mcast(b1, &g, mlid_of(3)), 0);
	assert_int_equal(ibv_attach_mcast(b2, &g, mlid_of(3)), 0);
	assert_int_equal(ibv_attach_mcast(c1, &g, mlid_of(3)), 0);
	post_recvs(&a, s, 2 * NSEND);
	post_recvs(&a, blk, 2 * NSEND);
	post_recvs(&b, b1, 2 * NSEND);
	post_recvs(&b, b2, 2 * NSEND);
	post_recvs(&c, c1, NSEND);
	post_recvs(&c, c2, NSEND);
	ah = group_ah(&a, 3, true);

	/* From s: b1 and b2 once each (b1 attached twice), s itself (its
	 * loopback), blk too; not c1 (Q_Key) nor c2 (not attached). */
	send_to(&a, s, ah, DP_QKEY, MC_QPN, NSEND);
	n = 0;
	while (dp_poll(b.cq, &wc, 300)) {
		fu_expect(wc.status == IBV_WC_SUCCESS &&
				  wc.byte_len == MSG_LEN + 40 &&
				  wc.src_qp == s->qp_num &&
				  (wc.wc_flags & IBV_WC_GRH),
			  "b receive: %s len %u src %#x flags %#x",
			  ibv_wc_status_str(wc.status), wc.byte_len, wc.src_qp,
			  wc.wc_flags);
		nb1 += wc.wr_id == b1->qp_num;
		nb2 += wc.wr_id == b2->qp_num;
		n++;
	}
	fu_expect(nb1 == NSEND && nb2 == NSEND && n == 2 * NSEND,
		  "b1 got %d, b2 %d, want %d each", nb1, nb2, NSEND);
	fu_expect(!memcmp(b.buf + fu_page() + 40,
			  (char[MSG_LEN]){ [0 ... MSG_LEN - 1] = 'a' + NSEND - 1 },
			  MSG_LEN),
		  "payload of the last message");
	n = 0;
	nb1 = nb2 = 0;
	while (dp_poll(a.cq, &wc, 300)) {
		nb1 += wc.wr_id == s->qp_num;
		nb2 += wc.wr_id == blk->qp_num;
		n++;
	}
	fu_expect(nb1 == NSEND && nb2 == NSEND && n == 2 * NSEND,
		  "sender's own copies %d, blocking QP's %d, want %d each",
		  nb1, nb2, NSEND);
	dp_expect_no_wc(c.cq, "Q_Key mismatch or not attached");

	/* From blk (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB): no copy for itself,
	 * one for s. */
	send_to(&a, blk, ah, DP_QKEY, MC_QPN, 1);
	fu_expect(count_recvs(a.cq, s->qp_num, blk->qp_num, 300) == 1,
		  "s got blk's message once, blk none");
	n = 0;
	while (dp_poll(b.cq, &wc, 300))
		n++;
	fu_expect(n == 2, "b1 and b2 got blk's message: %d", n);
	/* b2 detached: only b1 receives. */
	assert_int_equal(ibv_detach_mcast(b2, &g, mlid_of(3)), 0);
	assert_int_equal(ibv_detach_mcast(blk, &g, mlid_of(3)), 0);
	assert_int_equal(ibv_detach_mcast(s, &g, mlid_of(3)), 0);
	send_to(&a, s, ah, DP_QKEY, MC_QPN, 1);
	fu_expect(count_recvs(b.cq, b1->qp_num, s->qp_num, 300) == 1,
		  "after b2's detach, b1 alone");
	dp_expect_no_wc(a.cq, "s and blk detached");
	/* A QPN other than 0xffffff to the group, and 0xffffff to a unicast
	 * destination: nobody (IBA multicast rules), the send succeeds. */
	send_to(&a, s, ah, DP_QKEY, b1->qp_num, 1);
	dp_expect_no_wc(b.cq, "group address, unicast QPN");

	ibv_destroy_ah(ah);
	assert_int_equal(ibv_detach_mcast(b1, &g, mlid_of(3)), 0);
	assert_int_equal(ibv_detach_mcast(c1, &g, mlid_of(3)), 0);
	ibv_destroy_qp(s);
	ibv_destroy_qp(blk);
	ibv_destroy_qp(b1);
	ibv_destroy_qp(b2);
	ibv_destroy_qp(c1);
	ibv_destroy_qp(c2);
	dp_ep_close(&a);
	dp_ep_close(&b);
	dp_ep_close(&c);
	fu_done();
}

/* IB: a packet without GRH is matched by its MLID. */
static void test_mcast_mlid(void **state)
{
	struct ibv_qp *s, *r;
	struct dp_ep a, b;
	struct ibv_ah *ah;
	union ibv_gid g;

	(void)state;
	if (roce)
		skip();	/* RoCE has no LIDs: the GRH is mandatory */
	dp_ep_open(&a, false);
	dp_ep_open(&b, false);
	s = ud_qp(&a, DP_QKEY, 0);
	r = ud_qp(&b, DP_QKEY, 0);
	mgid_of(&g, 4);
	assert_int_equal(ibv_attach_mcast(r, &g, mlid_of(4)), 0);
	post_recvs(&b, r, 2);
	ah = group_ah(&a, 4, false);
	send_to(&a, s, ah, DP_QKEY, MC_QPN, 1);
	fu_expect(count_recvs(b.cq, r->qp_num, s->qp_num, 300) == 1,
		  "receive by MLID");
	ibv_destroy_ah(ah);
	ah = group_ah(&a, 5, false);	/* another MLID */
	send_to(&a, s, ah, DP_QKEY, MC_QPN, 1);
	dp_expect_no_wc(b.cq, "another MLID");
	ibv_destroy_ah(ah);
	assert_int_equal(ibv_detach_mcast(r, &g, mlid_of(4)), 0);
	ibv_destroy_qp(s);
	ibv_destroy_qp(r);
	dp_ep_close(&a);
	dp_ep_close(&b);
	fu_done();
}

/* A member in another process; once it is killed, a new one in its
 * place gets exactly its own copies. */
static int child_member(int rfd, int wfd, int expect)
{
	struct dp_ep e;
	struct ibv_qp *q;
	union ibv_gid g;
	struct ibv_wc wc;
	char c = 'r';
	int n = 0;

	dp_ep_open(&e, false);
	q = ud_qp(&e, DP_QKEY, 0);
	mgid_of(&g, 6);
	if (ibv_attach_mcast(q, &g, mlid_of(6)))
		return 2;
	post_recvs(&e, q, 8);
	if (write(wfd, &c, 1) != 1)
		return 3;
	if (expect < 0)
		pause();	/* killed */
	if (read(rfd, &c, 1) != 1)
		return 4;
	while (dp_poll(e.cq, &wc, 300))
		n += wc.status == IBV_WC_SUCCESS;
	return n == expect ? 0 : 10 + n;
}

static pid_t spawn(int expect, int *to_child, int *from_child)
{
	int p1[2], p2[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(p1), 0);
	assert_int_equal(pipe(p2), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(p1[1]);
		close(p2[0]);
		_exit(child_member(p1[0], p2[1], expect));
	}
	close(p1[0]);
	close(p2[1]);
	assert_int_equal(read(p2[0], &c, 1), 1);	/* attached */
	*to_child = p1[1];
	*from_child = p2[0];
	return pid;
}

static void test_mcast_xproc(void **state)
{
	int to1, from1, to2, from2, st;
	struct ibv_qp *s;
	struct ibv_ah *ah;
	struct dp_ep a;
	pid_t p1, p2;
	char c = 'g';

	(void)state;
	dp_ep_open(&a, false);
	s = ud_qp(&a, DP_QKEY, 0);
	ah = group_ah(&a, 6, true);
	/* p1 attaches and dies without detaching (SIGKILL). */
	p1 = spawn(-1, &to1, &from1);
	assert_int_equal(kill(p1, SIGKILL), 0);
	assert_int_equal(waitpid(p1, &st, 0), p1);
	close(to1);
	close(from1);
	/* p2 attaches; two sends: p2 gets two, the dead member nothing and
	 * no error. */
	p2 = spawn(2, &to2, &from2);
	send_to(&a, s, ah, DP_QKEY, MC_QPN, 2);
	assert_int_equal(write(to2, &c, 1), 1);
	assert_int_equal(waitpid(p2, &st, 0), p2);
	fu_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "member in another process: status %#x", st);
	close(to2);
	close(from2);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(s);
	dp_ep_close(&a);
	fu_done();
}

/* A scribbled table (another process of the user wrote garbage counts):
 * the next locker repairs the counts, nothing crashes, attach, delivery
 * and detach still work. */
static void test_mcast_table_garbage(void **state)
{
	struct srdma_mcast_file *f;
	struct ibv_qp *s, *r;
	struct ibv_ah *ah;
	struct dp_ep a;
	union ibv_gid g;
	char path[512];
	int fd;

	(void)state;
	dp_ep_open(&a, false);
	s = ud_qp(&a, DP_QKEY, 0);
	r = ud_qp(&a, DP_QKEY, 0);
	mgid_of(&g, 8);
	assert_int_equal(ibv_attach_mcast(r, &g, mlid_of(8)), 0);
	snprintf(path, sizeof(path), "%s/mcast", getenv("SRDMA_DIR"));
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(f != MAP_FAILED);
	f->ngroups = 0xffffffffu;
	f->total = 0x7fffffffu;
	f->g[0].n = 100000;
	f->g[1].n = 0xffffffffu;
	munmap(f, sizeof(*f));
	close(fd);
	post_recvs(&a, r, 2);
	ah = group_ah(&a, 8, true);
	send_to(&a, s, ah, DP_QKEY, MC_QPN, 1);
	fu_expect(count_recvs(a.cq, r->qp_num, s->qp_num, 300) <= 1,
		  "delivery after the scribble");
	/* Whatever the scribble left, r can be detached and destroyed. */
	(void)ibv_detach_mcast(r, &g, mlid_of(8));
	fu_expect(ibv_attach_mcast(r, &g, mlid_of(8)) == 0,
		  "attach after the scribble");
	send_to(&a, s, ah, DP_QKEY, MC_QPN, 1);
	fu_expect(count_recvs(a.cq, r->qp_num, s->qp_num, 300) == 1,
		  "delivery after the repair");
	fu_expect(ibv_detach_mcast(r, &g, mlid_of(8)) == 0, "detach");
	ibv_destroy_ah(ah);
	fu_expect(ibv_destroy_qp(r) == 0, "destroy");
	ibv_destroy_qp(s);
	dp_ep_close(&a);
	fu_done();
}

/* RoCE: a private network namespace with lo up, so that joining IP
 * multicast groups touches no real interface. */
static int private_netns(void)
{
	struct ifreq ifr;
	int fd;

	if (unshare(CLONE_NEWNET))
		return -1;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		(void)ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcast_attach_errors),
		cmocka_unit_test(test_mcast_limits),
		cmocka_unit_test(test_mcast_delivery),
		cmocka_unit_test(test_mcast_mlid),
		cmocka_unit_test(test_mcast_xproc),
		cmocka_unit_test(test_mcast_table_garbage),
	};
	const char *ll = getenv("SRDMA_LINK_LAYER");

	roce = ll && !strcmp(ll, "eth");
	if (roce && private_netns()) {
		printf("# skipped: a RoCE port's multicast test needs a private network namespace (root)\n");
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
