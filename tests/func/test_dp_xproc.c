// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_dp_xproc.c - the data path between two processes (docs
 * verbs-semantics.md 5.4, 6, and the [SW] rules on fault-tolerant copies).
 *
 * Each test forks a child that opens its own context; QPNs, LIDs,
 * addresses and rkeys travel over a socketpair. Covered: the target stays
 * passive (blocked in read(), no verbs calls) while WRITE, READ, 1000
 * FETCH_ADDs and 64 SENDs land; dereg racing a stream of remote writes
 * (after dereg returns the buffer is never touched again, the guard pages
 * around it never are); a SIGKILLed peer (RETRY_EXC_ERR within the retry
 * budget, nothing hangs); and registered memory unmapped under an MR on
 * either side (REM_ACCESS_ERR / LOC_PROT_ERR, no crash).
 *
 * The child never uses cmocka (a failed assert there would unwind into
 * the parent's test runner): it checks with XCHK and exits non-zero, and
 * the parent expects exit status 0. Every test arms alarm() as a watchdog.
 */
#include <sys/uio.h>

#include "xproc_util.h"

#define NQP 2
#define XP_ACCESS                                                              \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* What each side tells the other. */
struct xinfo {
	uint32_t qpn[NQP];
	uint16_t lid;
	uint64_t addr;
	uint32_t rkey;
	uint64_t len;
};

struct xp {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[NQP];
	char *buf;
	size_t len;
	struct ibv_mr *mr;
	uint16_t lid;
};

/* Open srdma0, a PD, a CQ, NQP RC QPs, and register @len bytes at @buf
 * (or a fresh mapping if NULL). Return 0 or -1; no cmocka. */
static int xp_open(struct xp *x, void *buf, size_t len, unsigned int access)
{
	int i;

	memset(x, 0, sizeof(*x));
	if (xp_open_pd_cq(&x->ctx, &x->pd, &x->cq, 1024))
		return -1;
	for (i = 0; i < NQP; i++) {
		x->qp[i] =
			xp_qp_create(x->pd, x->cq, NULL, IBV_QPT_RC, 128, 2, 0);
		if (!x->qp[i])
			return -1;
	}
	if (!buf) {
		buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			return -1;
		memset(buf, 0, len);
	}
	x->buf = buf;
	x->len = len;
	x->mr = ibv_reg_mr(x->pd, buf, len, (int)access);
	if (!x->mr)
		return -1;
	return xp_port_lid(x->ctx, &x->lid);
}

static void xp_info(const struct xp *x, struct xinfo *in)
{
	int i;

	memset(in, 0, sizeof(*in));
	for (i = 0; i < NQP; i++)
		in->qpn[i] = x->qp[i]->qp_num;
	in->lid = x->lid;
	in->addr = (uintptr_t)x->buf;
	in->rkey = x->mr->rkey;
	in->len = x->len;
}

/* RC QP to RTS towards (@lid, @rqpn). Return 0 or an errno value. */
static int xp_connect(struct ibv_qp *qp, uint32_t rqpn, uint16_t lid,
		      uint8_t timeout, uint8_t retry_cnt)
{
	struct dp_conn k = {.access = DP_REMOTE_ACCESS,
			    .rnr_retry = 7,
			    .timeout = timeout,
			    .retry_cnt = retry_cnt};

	return dp_qp_connect(qp, rqpn, lid, &k);
}

/* Exchange infos and connect every QP pair; child side (no cmocka). The
 * child sends 'R' itself once its receives are posted (from INIT on). */
static void child_handshake(int fd, struct xp *x, struct xinfo *peer)
{
	struct xinfo me;
	int i;

	xp_info(x, &me);
	XCHK(!xsend(fd, &me, sizeof(me)));
	XCHK(!xrecv(fd, peer, sizeof(*peer)));
	for (i = 0; i < NQP; i++)
		XCHK(!xp_connect(x->qp[i], peer->qpn[i], x->lid, 14, 7));
}

/* The parent's half; returns the child's info. */
static void parent_handshake(int fd, struct xp *x, struct xinfo *peer,
			     uint8_t timeout, uint8_t retry_cnt)
{
	struct xinfo me;
	int i;

	xp_info(x, &me);
	assert_int_equal(xrecv(fd, peer, sizeof(*peer)), 0);
	assert_int_equal(xsend(fd, &me, sizeof(me)), 0);
	for (i = 0; i < NQP; i++)
		assert_int_equal(xp_connect(x->qp[i], peer->qpn[i], x->lid,
					    timeout, retry_cnt),
				 0);
	assert_int_equal(xrecv_byte(fd), 'R');
}

static void expect_child_ok(pid_t pid, const char *what)
{
	int st = 0;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child %s %d",
		  what, WIFEXITED(st) ? "exited with" : "killed by signal",
		  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

static void xp_close(struct xp *x, bool unmap)
{
	int i;

	for (i = 0; i < NQP; i++)
		if (x->qp[i])
			ibv_destroy_qp(x->qp[i]);
	if (x->mr)
		ibv_dereg_mr(x->mr);
	if (unmap && x->buf)
		munmap(x->buf, x->len);
	xp_close_pd_cq(x->ctx, x->pd, x->cq);
	memset(x, 0, sizeof(*x));
}

/* One signaled WR on @qp; return the completion status (or -1: none). */
static int xp_do(struct xp *x, int q, enum ibv_wr_opcode op, void *laddr,
		 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		 uint64_t add, struct ibv_wc *out)
{
	struct ibv_sge s = {(uintptr_t)laddr, len, lkey};
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1000 + (uint64_t)op;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(x->qp[q], &wr, &bad))
		return -2;
	if (!dp_poll(x->cq, &wc, 2000))
		return -1;
	if (out)
		*out = wc;
	return wc.status;
}

/* ---- target passivity ---------------------------------------------------- */

#define P_BUF	    (64 * 1024)
#define P_WRITE_OFF 0
#define P_READ_OFF  2048
#define P_CTR_OFF   4096
#define P_RECV_OFF  8192
#define P_NRECV	    64
#define P_MSG	    32
#define P_NADD	    1000

static void passive_child(int fd)
{
	struct xinfo peer;
	struct xp x;
	struct ibv_wc wc;
	int i, got = 0;
	bool seen[P_NRECV] = {false};

	XCHK(!xp_open(&x, NULL, P_BUF, XP_ACCESS));
	for (i = 0; i < 2048; i++)
		x.buf[P_READ_OFF + i] = (char)(i * 13 + 5);
	child_handshake(fd, &x, &peer);
	for (i = 0; i < P_NRECV; i++) {
		struct ibv_sge s = {(uintptr_t)x.buf + P_RECV_OFF + 64 * i, 64,
				    x.mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i,
					 .sg_list = &s,
					 .num_sge = 1},
				   *bad;

		XCHK(!ibv_post_recv(x.qp[0], &wr, &bad));
	}
	XCHK(!xsend_byte(fd, 'R'));
	/* Passive: blocked in read(), no verbs call, until the peer is done. */
	XCHK(xrecv_byte(fd) == 'D');
	while (ibv_poll_cq(x.cq, 1, &wc) == 1) {
		XCHK(wc.status == IBV_WC_SUCCESS);
		XCHK(wc.opcode == IBV_WC_RECV);
		XCHK(wc.byte_len == P_MSG);
		XCHK(wc.wr_id < P_NRECV && !seen[wc.wr_id]);
		/* In order: the i-th SEND lands in the i-th WQE. */
		XCHK(wc.wr_id == (uint64_t)got);
		seen[wc.wr_id] = true;
		got++;
	}
	XCHK(got == P_NRECV);
	for (i = 0; i < P_NRECV; i++) {
		const unsigned char *m =
			(unsigned char *)x.buf + P_RECV_OFF + 64 * i;

		XCHK(m[0] == (unsigned char)(i + 1) &&
		     m[P_MSG - 1] == (unsigned char)(i + 1) && m[P_MSG] == 0);
	}
	for (i = 0; i < 2048; i++)
		XCHK(x.buf[P_WRITE_OFF + i] == (char)(i * 7 + 3));
	XCHK(*(uint64_t *)(x.buf + P_CTR_OFF) == 3ull * P_NADD);
	XCHK(!xsend_byte(fd, 'K'));
	xp_close(&x, true);
}

static void test_xproc_target_passive(void **state)
{
	struct xinfo peer;
	struct xp x;
	struct ibv_wc wc;
	int fd, i, st;
	uint64_t *res;
	pid_t pid;

	alarm(20);
	pid = xp_spawn(&fd, passive_child, 10);
	assert_int_equal(xp_open(&x, NULL, P_BUF, XP_ACCESS), 0);
	parent_handshake(fd, &x, &peer, 14, 7);

	for (i = 0; i < 2048; i++)
		x.buf[i] = (char)(i * 7 + 3);
	fu_expect_int(xp_do(&x, 0, IBV_WR_RDMA_WRITE, x.buf, 2048, x.mr->lkey,
			    peer.addr + P_WRITE_OFF, peer.rkey, 0, NULL),
		      IBV_WC_SUCCESS, "WRITE to a passive target");

	memset(x.buf + 4096, 0, 2048);
	fu_expect_int(xp_do(&x, 0, IBV_WR_RDMA_READ, x.buf + 4096, 2048,
			    x.mr->lkey, peer.addr + P_READ_OFF, peer.rkey, 0,
			    NULL),
		      IBV_WC_SUCCESS, "READ from a passive target");
	for (i = 0; i < 2048; i++)
		if (x.buf[4096 + i] != (char)(i * 13 + 5))
			break;
	fu_expect(i == 2048, "READ data differs at byte %d", i);

	res = (uint64_t *)(x.buf + 8192);
	for (i = 0; i < P_NADD; i++) {
		*res = ~0ull;
		st = xp_do(&x, 0, IBV_WR_ATOMIC_FETCH_AND_ADD, res, 8,
			   x.mr->lkey, peer.addr + P_CTR_OFF, peer.rkey, 3,
			   NULL);
		if (st != IBV_WC_SUCCESS || *res != 3ull * (uint64_t)i) {
			fu_report(__FILE__, __LINE__,
				  "FETCH_ADD #%d: status %d, returned %" PRIu64
				  ", want %" PRIu64,
				  i, st, *res, (uint64_t)3 * (uint64_t)i);
			break;
		}
	}
	*res = 0;
	fu_expect_int(xp_do(&x, 0, IBV_WR_RDMA_READ, res, 8, x.mr->lkey,
			    peer.addr + P_CTR_OFF, peer.rkey, 0, NULL),
		      IBV_WC_SUCCESS, "READ of the counter");
	fu_expect_int(*res, 3ull * P_NADD, "counter after 1000 FETCH_ADD");

	for (i = 0; i < P_NRECV; i++) {
		memset(x.buf + 12288, i + 1, P_MSG);
		st = xp_do(&x, 0, IBV_WR_SEND, x.buf + 12288, P_MSG, x.mr->lkey,
			   0, 0, 0, &wc);
		if (st != IBV_WC_SUCCESS) {
			fu_report(__FILE__, __LINE__, "SEND #%d: status %d", i,
				  st);
			break;
		}
	}
	assert_int_equal(xsend_byte(fd, 'D'), 0);
	fu_expect(xrecv_byte(fd) == 'K', "child's verification failed");
	expect_child_ok(pid, "passive target");
	close(fd);
	xp_close(&x, true);
	alarm(0);
	fu_done();
}

/* ---- dereg racing remote writes ------------------------------------------ */

static void dereg_child(int fd)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *map, *buf, *snap;
	struct xinfo peer;
	struct xp x;
	size_t i;
	char ok = 'K';

	map = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	XCHK(map != MAP_FAILED);
	memset(map, 0, 3 * pg);
	XCHK(!mprotect(map, pg, PROT_NONE));
	XCHK(!mprotect(map + 2 * pg, pg, PROT_NONE));
	buf = map + pg;
	XCHK(!xp_open(&x, buf, pg, XP_ACCESS));
	child_handshake(fd, &x, &peer);
	XCHK(!xsend_byte(fd, 'R'));
	XCHK(xrecv_byte(fd) == 'G'); /* writes are streaming */
	usleep(5000);
	XCHK(ibv_dereg_mr(x.mr) == 0);
	x.mr = NULL;
	snap = malloc(pg);
	XCHK(snap);
	memcpy(snap, buf, pg);
	usleep(50000);
	if (memcmp(snap, buf, pg)) {
		fprintf(stderr,
			"child: buffer modified after dereg returned\n");
		ok = 'M';
	}
	/* Guards still PROT_NONE (a cross-memory read of them faults)... */
	{
		char tmp[16];
		struct iovec l = {tmp, sizeof(tmp)};
		struct iovec r1 = {map, sizeof(tmp)};
		struct iovec r2 = {map + 2 * pg, sizeof(tmp)};

		XCHK(process_vm_readv(getpid(), &l, 1, &r1, 1, 0) < 0);
		XCHK(process_vm_readv(getpid(), &l, 1, &r2, 1, 0) < 0);
	}
	/* ...and untouched. */
	XCHK(!mprotect(map, pg, PROT_READ));
	XCHK(!mprotect(map + 2 * pg, pg, PROT_READ));
	for (i = 0; i < pg; i++) {
		if (map[i] || map[2 * pg + i]) {
			fprintf(stderr, "child: guard page byte %zu written\n",
				i);
			ok = 'G';
			break;
		}
	}
	XCHK(!xsend_byte(fd, ok));
	XCHK(xrecv_byte(fd) == 'D');
	free(snap);
	xp_close(&x, false);
	munmap(map, 3 * pg);
}

static void test_xproc_dereg_races_writes(void **state)
{
	size_t pg = fu_page();
	struct xinfo peer;
	struct xp x;
	uint64_t end;
	int fd, st = IBV_WC_SUCCESS, n_ok = 0;
	uint32_t v = 0;
	pid_t pid;
	char res;

	alarm(20);
	pid = xp_spawn(&fd, dereg_child, 10);
	assert_int_equal(xp_open(&x, NULL, pg, XP_ACCESS), 0);
	parent_handshake(fd, &x, &peer, 14, 7);
	end = dp_now_ms() + 1500;
	while (dp_now_ms() < end) {
		v++;
		memset(x.buf, (int)(v & 0xff) | 1, pg);
		st = xp_do(&x, v & 1, IBV_WR_RDMA_WRITE, x.buf, (uint32_t)pg,
			   x.mr->lkey, peer.addr, peer.rkey, 0, NULL);
		if (st != IBV_WC_SUCCESS)
			break;
		if (!n_ok++)
			assert_int_equal(xsend_byte(fd, 'G'), 0);
	}
	fu_expect(n_ok > 0, "no WRITE succeeded before the dereg");
	fu_expect_int(st, IBV_WC_REM_ACCESS_ERR,
		      "WRITE status after the target's dereg");
	res = xrecv_byte(fd);
	fu_expect(res == 'K',
		  "child reports '%c' (M: modified after dereg, "
		  "G: guard page written)",
		  res);
	assert_int_equal(xsend_byte(fd, 'D'), 0);
	expect_child_ok(pid, "dereg racing writes");
	close(fd);
	xp_close(&x, true);
	alarm(0);
	fu_done();
}

/* ---- peer death ------------------------------------------------------------
 */

static void death_child(int fd)
{
	struct xinfo peer;
	struct xp x;
	int i;

	XCHK(!xp_open(&x, NULL, 4096, XP_ACCESS));
	child_handshake(fd, &x, &peer);
	for (i = 0; i < 4; i++) {
		struct ibv_sge s = {(uintptr_t)x.buf + 64 * i, 64, x.mr->lkey};
		struct ibv_recv_wr wr = {.wr_id = (uint64_t)i,
					 .sg_list = &s,
					 .num_sge = 1},
				   *bad;

		XCHK(!ibv_post_recv(x.qp[0], &wr, &bad));
		XCHK(!ibv_post_recv(x.qp[1], &wr, &bad));
	}
	XCHK(!xsend_byte(fd, 'R'));
	for (;;)
		pause();
}

static void test_xproc_peer_death(void **state)
{
	struct xinfo peer;
	struct xp x;
	uint64_t t0;
	int fd, st;
	pid_t pid;

	alarm(10);
	pid = xp_spawn(&fd, death_child, 10);
	assert_int_equal(xp_open(&x, NULL, 4096, XP_ACCESS), 0);
	/* timeout 14 (~67 ms) x (retry_cnt 1 + 1): a short retry budget,
	 * ~134 ms a QP. Not shorter: over the wire the live peer's
	 * responder is a thread of a process the scheduler of a loaded
	 * machine may leave off-CPU for several ms (timeout 10, ~8 ms in
	 * all, timed a live peer out now and then). */
	parent_handshake(fd, &x, &peer, 14, 1);
	fu_expect_int(
		xp_do(&x, 0, IBV_WR_SEND, x.buf, 16, x.mr->lkey, 0, 0, 0, NULL),
		IBV_WC_SUCCESS, "SEND to the live peer");
	fu_expect_int(xp_do(&x, 1, IBV_WR_RDMA_WRITE, x.buf, 16, x.mr->lkey,
			    peer.addr + 1024, peer.rkey, 0, NULL),
		      IBV_WC_SUCCESS, "WRITE to the live peer");
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);

	t0 = dp_now_ms();
	st = xp_do(&x, 0, IBV_WR_SEND, x.buf, 16, x.mr->lkey, 0, 0, 0, NULL);
	fu_expect_int(st, IBV_WC_RETRY_EXC_ERR, "SEND to a killed peer");
	st = xp_do(&x, 1, IBV_WR_RDMA_WRITE, x.buf, 16, x.mr->lkey,
		   peer.addr + 1024, peer.rkey, 0, NULL);
	fu_expect_int(st, IBV_WC_RETRY_EXC_ERR, "WRITE to a killed peer");
	fu_expect(dp_now_ms() - t0 < 1000, "failing took %" PRIu64 " ms",
		  dp_now_ms() - t0);
	/* The QPs are in ERR and flush what follows. */
	st = xp_do(&x, 0, IBV_WR_SEND, x.buf, 16, x.mr->lkey, 0, 0, 0, NULL);
	fu_expect_int(st, IBV_WC_WR_FLUSH_ERR, "SEND after RETRY_EXC_ERR");
	close(fd);
	xp_close(&x, true);
	alarm(0);
	fu_done();
}

/* ---- registered memory unmapped under the MR ---------------------------- */

static void unmap_child(int fd)
{
	struct xinfo peer;
	struct xp x;

	/* Not cmocka's handler (inherited from the test that forked us):
	 * the library's copies into our memory then run under its own
	 * fault guard, in its progress thread on the net transport. */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	XCHK(!xp_open(&x, NULL, 4096, XP_ACCESS));
	child_handshake(fd, &x, &peer);
	XCHK(!xsend_byte(fd, 'R'));
	XCHK(xrecv_byte(fd) == 'U');
	XCHK(!munmap(x.buf, x.len)); /* still registered */
	XCHK(!xsend_byte(fd, 'u'));
	XCHK(xrecv_byte(fd) == 'D');
	/* Deregistering memory the application unmapped must not crash. */
	(void)ibv_dereg_mr(x.mr);
	x.mr = NULL;
	xp_close(&x, false);
}

static void test_xproc_unmapped_registered_memory(void **state)
{
	size_t pg = fu_page();
	struct xinfo peer;
	struct ibv_mr *mr2;
	struct xp x;
	char *src;
	int fd;
	pid_t pid;

	alarm(10);
	pid = xp_spawn(&fd, unmap_child, 10);
	assert_int_equal(xp_open(&x, NULL, 4096, XP_ACCESS), 0);
	parent_handshake(fd, &x, &peer, 14, 7);
	fu_expect_int(xp_do(&x, 0, IBV_WR_RDMA_WRITE, x.buf, 64, x.mr->lkey,
			    peer.addr, peer.rkey, 0, NULL),
		      IBV_WC_SUCCESS, "WRITE before the target unmaps");

	/* Our own source buffer, registered then unmapped. */
	src = fu_map(pg, PROT_READ | PROT_WRITE);
	mr2 = ibv_reg_mr(x.pd, src, pg, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr2);
	assert_int_equal(munmap(src, pg), 0);
	fu_expect_int(xp_do(&x, 1, IBV_WR_RDMA_WRITE, src, 64, mr2->lkey,
			    peer.addr, peer.rkey, 0, NULL),
		      IBV_WC_LOC_PROT_ERR,
		      "WRITE from our registered, unmapped buffer");
	fu_expect_int(ibv_dereg_mr(mr2), 0, "dereg of an unmapped MR");

	/* The target's buffer, registered then unmapped. */
	assert_int_equal(xsend_byte(fd, 'U'), 0);
	assert_int_equal(xrecv_byte(fd), 'u');
	fu_expect_int(xp_do(&x, 0, IBV_WR_RDMA_WRITE, x.buf, 64, x.mr->lkey,
			    peer.addr, peer.rkey, 0, NULL),
		      IBV_WC_REM_ACCESS_ERR,
		      "WRITE into the target's registered, unmapped buffer");
	assert_int_equal(xsend_byte(fd, 'D'), 0);
	expect_child_ok(pid, "unmapped registered memory");
	close(fd);
	xp_close(&x, true);
	alarm(0);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xproc_target_passive),
		cmocka_unit_test(test_xproc_dereg_races_writes),
		cmocka_unit_test(test_xproc_peer_death),
		cmocka_unit_test(test_xproc_unmapped_registered_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
