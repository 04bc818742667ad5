// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_peer_death.c - a peer process killed with SIGKILL, seen from the
 * survivor (issue 9, defect 1; verbs-semantics.md §5).
 *
 * A dead responder sends no RNR NAK and no ACK, so hardware ends the WR
 * with IBV_WC_RETRY_EXC_ERR once the transport retry budget (timeout x
 * (retry_cnt + 1)) is spent, even with rnr_retry = 7 (infinite RNR
 * retries). Covered, with perftest's settings (timeout 14, retry_cnt 7,
 * rnr_retry 7: a budget of about 0.5 s):
 *  - RNR in flight: a SEND and a WRITE_WITH_IMM wait for receive WQEs the
 *    target never posts; the target is SIGKILLed (left a zombie, then also
 *    reaped); both end with RETRY_EXC_ERR within about 1 s;
 *  - every other RC opcode (WRITE, READ, CMP_SWP, FETCH_ADD) to the dead
 *    target: RETRY_EXC_ERR; UC SEND/WRITE and UD SEND: complete
 *    successfully (a vanished peer's packets are dropped silently);
 *  - the dead target's pid reused by an unrelated process of the same
 *    user (made at once with clone3's set_tid, which needs root; pid
 *    wrap-around does it slowly everywhere) that maps memory at the dead
 *    MR's address: a WRITE or READ through the connected QP must end with
 *    RETRY_EXC_ERR and touch nothing of the newcomer. The newcomer is a
 *    raw clone of this process, so the dead MR's address must be one that
 *    nothing in this process uses (under TSan the runtime's own pages
 *    once sat there, and the newcomer's interceptors wrote into its
 *    'Z's): the target's buffer lies in a PROT_NONE reservation made
 *    before the target was forked, and the newcomer makes raw system
 *    calls only;
 *  - built against the fault-injection library (fault.peer_death), the
 *    same reuse inside the window a copy leaves between resolving its
 *    target and the system call: the PEER_COPY point runs our hook there,
 *    which kills the target, reaps it and gives its pid to the newcomer.
 *    A WRITE must not reach the newcomer, a READ must not complete
 *    successfully with its bytes;
 *  - the target execs (same pid and start time, a live pidfd, its
 *    registry entry LIVE): a WRITE ends with RETRY_EXC_ERR, not in the
 *    new image (the kernel marks the target's life marker at exec);
 *  - the survivor as passive target: an initiator streaming WRITEs and
 *    SENDs is killed at random moments (seeded, printed); dereg, destroy
 *    and close in the survivor finish promptly.
 * Each figure is printed ("peer death: ...").
 *
 * Children never use cmocka; every test arms alarm() as a watchdog.
 */
#include <sys/syscall.h>

#include "xproc_util.h"

enum {
	Q_SEND,
	Q_WIMM,
	Q_WRITE,
	Q_READ,
	Q_CSWAP,
	Q_FADD,
	Q_UC_SEND,
	Q_UC_WRITE,
	Q_UD,
	NQ
};

#define PD_BUF	65536
#define WAIT_MS 5000 /* far beyond the ~0.5 s budget: "never" */

struct pinfo {
	uint32_t qpn[NQ];
	uint16_t lid;
	uint64_t addr;
	uint32_t rkey;
};

struct pside {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[NQ];
	struct ibv_ah *ah;
	char *buf;
	struct ibv_mr *mr;
	uint16_t lid;
};

static enum ibv_qp_type qtype(int i)
{
	if (i == Q_UD)
		return IBV_QPT_UD;
	if (i == Q_UC_SEND || i == Q_UC_WRITE)
		return IBV_QPT_UC;
	return IBV_QPT_RC;
}

/* Where ps_open() puts the buffer (MAP_FIXED), or NULL: anywhere. */
static char *fixed_buf;

static int ps_open(struct pside *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	if (xp_open_pd_cq(&s->ctx, &s->pd, &s->cq, 1024))
		return -1;
	for (i = 0; i < NQ; i++) {
		s->qp[i] =
			xp_qp_create(s->pd, s->cq, NULL, qtype(i), 128, 1, 0);
		if (!s->qp[i])
			return -1;
	}
	s->buf = mmap(fixed_buf, PD_BUF, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | (fixed_buf ? MAP_FIXED : 0),
		      -1, 0);
	if (s->buf == MAP_FAILED)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->buf, PD_BUF,
			   IBV_ACCESS_LOCAL_WRITE | DP_REMOTE_ACCESS);
	if (!s->mr)
		return -1;
	return xp_port_lid(s->ctx, &s->lid);
}

static void ps_info(const struct pside *s, struct pinfo *in)
{
	int i;

	memset(in, 0, sizeof(*in));
	for (i = 0; i < NQ; i++)
		in->qpn[i] = s->qp[i]->qp_num;
	in->lid = s->lid;
	in->addr = (uintptr_t)s->buf;
	in->rkey = s->mr->rkey;
}

/* Every QP to RTS towards the peer, perftest's transport settings. */
static int ps_connect(struct pside *s, const struct pinfo *peer)
{
	static const struct dp_conn k = {.access = DP_REMOTE_ACCESS,
					 .min_rnr_timer = 12,
					 .rnr_retry = 7,
					 .timeout = 14,
					 .retry_cnt = 7};
	struct ibv_ah_attr ah = {.dlid = peer->lid, .port_num = 1};
	int i;

	fu_av_fix(s->pd->context, &ah);

	for (i = 0; i < NQ; i++)
		if (dp_qp_connect(s->qp[i], peer->qpn[i], peer->lid, &k))
			return -1;
	s->ah = ibv_create_ah(s->pd, &ah);
	return s->ah ? 0 : -1;
}

/*
 * Open @s, trade infos with the other side over @fd (the child speaks
 * first) and connect every QP; *@peer gets the other side's info. 0 or -1.
 */
static int ps_handshake(struct pside *s, int fd, struct pinfo *peer, bool child)
{
	struct pinfo me;

	if (ps_open(s))
		return -1;
	ps_info(s, &me);
	if (child && xio(fd, &me, sizeof(me), true))
		return -1;
	if (xio(fd, peer, sizeof(*peer), false))
		return -1;
	if (!child && xio(fd, &me, sizeof(me), true))
		return -1;
	return ps_connect(s, peer);
}

static void ps_close(struct pside *s)
{
	int i;

	if (s->ah)
		ibv_destroy_ah(s->ah);
	for (i = 0; i < NQ; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	xp_close_pd_cq(s->ctx, s->pd, s->cq);
	if (s->buf)
		munmap(s->buf, PD_BUF);
	memset(s, 0, sizeof(*s));
}

static int post_recv(struct pside *s, int q, uint64_t off)
{
	struct ibv_sge sg = {(uintptr_t)s->buf + off, 256, s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = off, .sg_list = &sg, .num_sge = 1};
	struct ibv_recv_wr *bad;

	return ibv_post_recv(s->qp[q], &wr, &bad);
}

static int post_op(struct pside *s, int q, enum ibv_wr_opcode op,
		   const struct pinfo *peer, bool signaled)
{
	struct ibv_sge sg = {(uintptr_t)s->buf + 4096, 8, s->mr->lkey};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)q;
	wr.opcode = op;
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = peer->addr + 8192;
		wr.wr.atomic.rkey = peer->rkey;
		wr.wr.atomic.compare_add = 1;
	} else if (qtype(q) == IBV_QPT_UD) {
		wr.wr.ud.ah = s->ah;
		wr.wr.ud.remote_qpn = peer->qpn[q];
		wr.wr.ud.remote_qkey = DP_QKEY;
	} else {
		wr.wr.rdma.remote_addr = peer->addr + 8192;
		wr.wr.rdma.rkey = peer->rkey;
	}
	return ibv_post_send(s->qp[q], &wr, &bad);
}

/* ---- the target dies ------------------------------------------------------
 */

/* Target: receive WQEs on UC and UD only (RC SENDs meet RNR), then wait. */
static void target_child(int fd)
{
	struct pinfo peer;
	struct pside s;
	char b = 'R';
	int i;

	XCHK(!ps_handshake(&s, fd, &peer, true));
	for (i = 0; i < 8; i++) {
		XCHK(!post_recv(&s, Q_UC_SEND, 256 * (uint64_t)i));
		XCHK(!post_recv(&s, Q_UD, 4096 + 256 * (uint64_t)i));
	}
	XCHK(!xio(fd, &b, 1, true));
	for (;;)
		pause();
}

/* Completions polled while waiting for another QP's: by wr_id (QP). */
static struct {
	bool got;
	int status;
	uint64_t ms;
} early[NQ];

/* Wait for the completion of QP @q; its status, or -1 after WAIT_MS. */
static int wait_wc(struct ibv_cq *cq, int q, uint64_t *ms)
{
	uint64_t t0 = dp_now_ms();
	struct ibv_wc wc;

	if (early[q].got) {
		early[q].got = false;
		*ms = early[q].ms;
		return early[q].status;
	}
	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		assert_true(n >= 0);
		if (n && wc.wr_id == (uint64_t)q) {
			*ms = dp_now_ms() - t0;
			return wc.status;
		}
		if (n && wc.wr_id < NQ) {
			early[wc.wr_id].got = true;
			early[wc.wr_id].status = wc.status;
			early[wc.wr_id].ms = dp_now_ms() - t0;
		}
		if (dp_now_ms() - t0 > WAIT_MS) {
			*ms = dp_now_ms() - t0;
			return -1;
		}
		usleep(100);
	}
}

static void expect_status(struct ibv_cq *cq, int q, int want, const char *what,
			  const char *when)
{
	uint64_t ms = 0;
	int st = wait_wc(cq, q, &ms);

	if (st < 0)
		fu_report(__FILE__, __LINE__,
			  "%s (%s): no completion within %d ms", what, when,
			  WAIT_MS);
	else
		fu_expect(st == want, "%s (%s): status %s, want %s", what, when,
			  ibv_wc_status_str(st), ibv_wc_status_str(want));
	printf("peer death: %s to a killed target (%s): %s after %" PRIu64
	       " ms\n",
	       what, when, st < 0 ? "nothing" : ibv_wc_status_str(st), ms);
}

static void target_killed(bool reap_first)
{
	const char *when = reap_first ? "reaped" : "zombie";
	struct pinfo peer;
	struct pside s;
	struct ibv_wc wc;
	int fd, st;
	pid_t pid;
	char b = 0;

	alarm(60);
	memset(early, 0, sizeof(early));
	pid = xp_spawn(&fd, target_child, 30);
	assert_int_equal(ps_handshake(&s, fd, &peer, false), 0);
	assert_int_equal(xio(fd, &b, 1, false), 0);
	assert_int_equal(b, 'R');

	/* RNR: nothing completes while the target lives (rnr_retry 7). */
	assert_int_equal(post_op(&s, Q_SEND, IBV_WR_SEND, &peer, true), 0);
	assert_int_equal(
		post_op(&s, Q_WIMM, IBV_WR_RDMA_WRITE_WITH_IMM, &peer, true),
		0);
	usleep(200000);
	fu_expect(ibv_poll_cq(s.cq, 1, &wc) == 0,
		  "RNR WR completed while its target lives");

	assert_int_equal(kill(pid, SIGKILL), 0);
	if (reap_first)
		assert_int_equal(waitpid(pid, &st, 0), pid);
	expect_status(s.cq, Q_SEND, IBV_WC_RETRY_EXC_ERR, "RC SEND in RNR",
		      when);
	expect_status(s.cq, Q_WIMM, IBV_WC_RETRY_EXC_ERR,
		      "RC WRITE_WITH_IMM in RNR", when);

	assert_int_equal(post_op(&s, Q_WRITE, IBV_WR_RDMA_WRITE, &peer, true),
			 0);
	expect_status(s.cq, Q_WRITE, IBV_WC_RETRY_EXC_ERR, "RC WRITE", when);
	assert_int_equal(post_op(&s, Q_READ, IBV_WR_RDMA_READ, &peer, true), 0);
	expect_status(s.cq, Q_READ, IBV_WC_RETRY_EXC_ERR, "RC READ", when);
	assert_int_equal(
		post_op(&s, Q_CSWAP, IBV_WR_ATOMIC_CMP_AND_SWP, &peer, true),
		0);
	expect_status(s.cq, Q_CSWAP, IBV_WC_RETRY_EXC_ERR, "RC CMP_SWP", when);
	assert_int_equal(
		post_op(&s, Q_FADD, IBV_WR_ATOMIC_FETCH_AND_ADD, &peer, true),
		0);
	expect_status(s.cq, Q_FADD, IBV_WC_RETRY_EXC_ERR, "RC FETCH_ADD", when);
	/* Unreliable transports: the packets are lost, the sends "done". */
	assert_int_equal(post_op(&s, Q_UC_SEND, IBV_WR_SEND, &peer, true), 0);
	expect_status(s.cq, Q_UC_SEND, IBV_WC_SUCCESS, "UC SEND", when);
	assert_int_equal(
		post_op(&s, Q_UC_WRITE, IBV_WR_RDMA_WRITE, &peer, true), 0);
	expect_status(s.cq, Q_UC_WRITE, IBV_WC_SUCCESS, "UC WRITE", when);
	assert_int_equal(post_op(&s, Q_UD, IBV_WR_SEND, &peer, true), 0);
	expect_status(s.cq, Q_UD, IBV_WC_SUCCESS, "UD SEND", when);

	if (!reap_first)
		assert_int_equal(waitpid(pid, &st, 0), pid);
	close(fd);
	ps_close(&s);
	alarm(0);
	fu_done();
}

static void test_target_killed_zombie(void **state)
{
	(void)state;
	target_killed(false);
}

static void test_target_killed_reaped(void **state)
{
	(void)state;
	target_killed(true);
}

/* ---- the target's pid is reused ---------------------------------------------
 */

/* clone3()'s arguments up to set_tid_size (CLONE_ARGS_SIZE_VER1). */
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal;
	uint64_t stack, stack_size, tls, set_tid, set_tid_size;
};

/*
 * A process with pid @pid (free: its owner was reaped) whose memory at
 * [@addr, @addr + PD_BUF) is the memfd @mfd, filled with 'Z' by the
 * parent; it tells @fd when ready and then waits to be killed. Return
 * its pid, or -errno if the kernel refused the pid. The child is a raw
 * clone of this process: it makes raw system calls only, since neither
 * libc's nor a sanitizer runtime's state is consistent in it.
 */
static pid_t impostor(pid_t pid, uint64_t addr, int mfd, int fd)
{
	struct clone3_args a;
	pid_t want = pid;
	long r;

	memset(&a, 0, sizeof(a));
	a.exit_signal = SIGCHLD;
	a.set_tid = (uintptr_t)&want;
	a.set_tid_size = 1;
	fflush(NULL);
	r = syscall(SYS_clone3, &a, sizeof(a));
	if (r < 0)
		return -errno;
	if (r == 0) {
		char b = 'I';

		if (syscall(SYS_mmap, addr, PD_BUF, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_FIXED, mfd, 0) != (long)addr)
			syscall(SYS_exit_group, 3);
		if (syscall(SYS_write, fd, &b, 1) != 1)
			syscall(SYS_exit_group, 4);
		for (;;)
			syscall(SYS_ppoll, NULL, 0, NULL, NULL, 0);
	}
	return (pid_t)r;
}

/* One pid-reuse scenario: the target, then the newcomer with its pid. */
static struct reuse {
	char *resv;		/* PROT_NONE: where the target's buffer is */
	pid_t target;
	int fd;			/* to the target */
	int mfd;		/* the newcomer's memory at resv */
	char *seen;		/* the same memory, as we see it */
	pid_t imp;		/* the newcomer; 0: not yet; < 0: -errno */
	bool armed;		/* the fault hook makes the newcomer */
	struct pinfo peer;
	struct pside s;
} R;

/* The target up and connected, a WRITE to it landed. */
static void reuse_setup(struct reuse *r)
{
	struct pinfo me;
	char b = 0;

	memset(r, 0, sizeof(*r));
	memset(early, 0, sizeof(early));
	/* Reserved here before the fork: nothing of ours ever lands on it,
	 * so the newcomer (our clone) uses nothing there but the memfd. */
	r->resv = mmap(NULL, PD_BUF, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(r->resv != MAP_FAILED);
	fixed_buf = r->resv;
	r->target = xp_spawn(&r->fd, target_child, 30);
	fixed_buf = NULL;
	assert_int_equal(ps_open(&r->s), 0);
	ps_info(&r->s, &me);
	assert_int_equal(xio(r->fd, &r->peer, sizeof(r->peer), false), 0);
	assert_int_equal(xio(r->fd, &me, sizeof(me), true), 0);
	assert_int_equal(ps_connect(&r->s, &r->peer), 0);
	assert_int_equal(xio(r->fd, &b, 1, false), 0);
	assert_int_equal(b, 'R');
	assert_true(r->peer.addr == (uintptr_t)r->resv);

	r->mfd = memfd_create("impostor", MFD_CLOEXEC);
	assert_true(r->mfd >= 0);
	assert_int_equal(ftruncate(r->mfd, PD_BUF), 0);
	r->seen = mmap(NULL, PD_BUF, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->mfd, 0);
	assert_true(r->seen != MAP_FAILED);
	memset(r->seen, 'Z', PD_BUF);

	/* The target is alive and cached as our peer: a WRITE lands. */
	assert_int_equal(post_op(&r->s, Q_WRITE, IBV_WR_RDMA_WRITE, &r->peer,
				 true),
			 0);
	expect_status(r->s.cq, Q_WRITE, IBV_WC_SUCCESS, "RC WRITE", "alive");
	/* Our source buffer says 0, the newcomer's memory says 'Z'. */
	memset(r->s.buf + 4096, 0, 8);
}

/* Kill and reap the target, give its pid to the newcomer (r->imp). */
static void reuse_now(struct reuse *r)
{
	int st, sv[2];
	char b = 0;

	assert_int_equal(kill(r->target, SIGKILL), 0);
	assert_int_equal(waitpid(r->target, &st, 0), r->target);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	/* Start times count clock ticks: the newcomer starts a few later
	 * (a pid coming round by itself takes far longer). */
	usleep(100000);
	r->imp = impostor(r->target, r->peer.addr, r->mfd, sv[1]);
	close(sv[1]);
	if (r->imp < 0)
		printf("peer death: pid reuse not tested: clone3 set_tid %d: "
		       "%s (needs root)\n", (int)r->target, strerror(-r->imp));
	else if (xio(sv[0], &b, 1, false) || b != 'I')
		fu_report(__FILE__, __LINE__, "the newcomer did not start");
	close(sv[0]);
}

/* Nothing of the newcomer's memory changed, none of it came back to us;
 * then everything is taken down. */
static void reuse_check_teardown(struct reuse *r, const char *when)
{
	int st, i, bad = 0;

	if (r->imp > 0) {
		for (i = 0; i < PD_BUF; i++)
			bad += r->seen[i] != 'Z';
		fu_expect(!bad,
			  "%d bytes of the process that reused the dead "
			  "target's pid were overwritten (%s)",
			  bad, when);
		printf("peer death: target's pid %d reused (%s): %d of its "
		       "bytes written, our READ buffer %s its memory\n",
		       (int)r->target, when, bad,
		       memchr(r->s.buf + 4096, 'Z', 8) ? "holds" :
							  "does not hold");
		kill(r->imp, SIGKILL);
		assert_int_equal(waitpid(r->imp, &st, 0), r->imp);
	}
	close(r->fd);
	munmap(r->seen, PD_BUF);
	close(r->mfd);
	ps_close(&r->s);
	munmap(r->resv, PD_BUF);
}

static void test_target_pid_reused(void **state)
{
	(void)state;
	alarm(60);
	reuse_setup(&R);
	reuse_now(&R);
	if (R.imp > 0) {
		usleep(20000);
		assert_int_equal(post_op(&R.s, Q_READ, IBV_WR_RDMA_READ,
					 &R.peer, true),
				 0);
		expect_status(R.s.cq, Q_READ, IBV_WC_RETRY_EXC_ERR, "RC READ",
			      "pid reused");
		fu_expect(memchr(R.s.buf + 4096, 'Z', 8) == NULL,
			  "a READ returned the memory of the process that "
			  "reused the dead target's pid");
		assert_int_equal(post_op(&R.s, Q_WRITE, IBV_WR_RDMA_WRITE,
					 &R.peer, true),
				 0);
		expect_status(R.s.cq, Q_WRITE, IBV_WC_RETRY_EXC_ERR,
			      "RC WRITE", "pid reused");
	}
	reuse_check_teardown(&R, "before the WRs");
	alarm(0);
	fu_done();
}

/* Target that replaces its image: same pid, same start time, no context. */
static void exec_child(int fd)
{
	struct pinfo peer;
	struct pside s;
	char b = 'R';

	XCHK(!ps_handshake(&s, fd, &peer, true));
	XCHK(!xio(fd, &b, 1, true));
	XCHK(!xio(fd, &b, 1, false));
	execl("/bin/sleep", "sleep", "30", (char *)NULL);
	_exit(5);
}

/*
 * The target execs: its pid, start time, pidfd and registry entry all
 * still say "alive", but the process is no longer the one that registered
 * the memory. Its life marker says otherwise (the kernel marks it at
 * exec): a WRITE ends as to a dead target, not in the new image.
 */
static void test_target_execs(void **state)
{
	struct pinfo peer;
	struct pside s;
	char b = 0;
	int fd, st;
	pid_t pid;

	(void)state;
	alarm(60);
	memset(early, 0, sizeof(early));
	pid = xp_spawn(&fd, exec_child, 30);
	assert_int_equal(ps_handshake(&s, fd, &peer, false), 0);
	assert_int_equal(xio(fd, &b, 1, false), 0);
	assert_int_equal(b, 'R');
	assert_int_equal(post_op(&s, Q_WRITE, IBV_WR_RDMA_WRITE, &peer, true),
			 0);
	expect_status(s.cq, Q_WRITE, IBV_WC_SUCCESS, "RC WRITE", "alive");
	assert_int_equal(xio(fd, &b, 1, true), 0);
	/* The exec is done once /proc shows the new image. */
	for (int i = 0; i < 500; i++) {
		char path[64], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		f = fopen(path, "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = 0;
			fclose(f);
		}
		if (!strncmp(comm, "sleep", 5))
			break;
		usleep(10000);
	}
	assert_int_equal(post_op(&s, Q_WRITE, IBV_WR_RDMA_WRITE, &peer, true),
			 0);
	expect_status(s.cq, Q_WRITE, IBV_WC_RETRY_EXC_ERR, "RC WRITE",
		      "exec'd");
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	close(fd);
	ps_close(&s);
	alarm(0);
	fu_done();
}

#ifdef PEER_DEATH_FAULT
/*
 * Called by the fault-injection library at its PEER_COPY point: inside a
 * copy, after the WR resolved its target and before the kernel is asked
 * whether the target's owner exists. SRDMA_FAULT=PEER_COPY:<n> picks the
 * n-th copy of this process; the copies so far are counted here.
 */
void srdma_test_fault_hook(const char *site);
__attribute__((visibility("default"))) void
srdma_test_fault_hook(const char *site)
{
	if (strcmp(site, "PEER_COPY") || !R.armed)
		return;
	R.armed = false;
	reuse_now(&R);
}

/* Copies made by earlier tests of this process (the fault counter's). */
static unsigned int copies_so_far;

/* The pid reused while a @op (WRITE or READ) is between its resolve and
 * its copy: it must fail as to a dead target and move no byte. */
static void reuse_during(enum ibv_wr_opcode op, int q, const char *what)
{
	char spec[32];

	alarm(60);
	/* This test's copies: the WRITE of reuse_setup(), then @op's. */
	snprintf(spec, sizeof(spec), "PEER_COPY:%u", copies_so_far + 2);
	copies_so_far += 2;
	assert_int_equal(setenv("SRDMA_FAULT", spec, 1), 0);
	reuse_setup(&R);
	R.armed = true;
	assert_int_equal(post_op(&R.s, q, op, &R.peer, true), 0);
	fu_expect(!R.armed, "the PEER_COPY fault point was never reached");
	if (R.imp > 0) {
		expect_status(R.s.cq, q, IBV_WC_RETRY_EXC_ERR, what,
			      "pid reused during the copy");
	} else {
		uint64_t ms;

		(void)wait_wc(R.s.cq, q, &ms);
	}
	reuse_check_teardown(&R, "during the copy");
	unsetenv("SRDMA_FAULT");
	alarm(0);
	fu_done();
}

static void test_pid_reused_during_write(void **state)
{
	(void)state;
	reuse_during(IBV_WR_RDMA_WRITE, Q_WRITE, "RC WRITE");
}

static void test_pid_reused_during_read(void **state)
{
	(void)state;
	reuse_during(IBV_WR_RDMA_READ, Q_READ, "RC READ");
}
#endif

/* ---- the initiator dies ----------------------------------------------------
 */

/* Initiator: stream WRITEs, SENDs and FETCH_ADDs at the parent until
 * killed. */
static void initiator_child(int fd)
{
	struct pinfo peer;
	struct pside s;
	struct ibv_wc wc[16];
	unsigned int i;
	char b;

	XCHK(!ps_handshake(&s, fd, &peer, true));
	XCHK(!xio(fd, &b, 1, false));
	b = 'G';
	XCHK(!xio(fd, &b, 1, true));
	for (i = 0;; i++) {
		(void)post_op(&s, Q_WRITE, IBV_WR_RDMA_WRITE, &peer,
			      i % 8 == 0);
		(void)post_op(&s, Q_FADD, IBV_WR_ATOMIC_FETCH_AND_ADD, &peer,
			      i % 8 == 0);
		/* Once its receives run out, SENDs wait (RNR): a full send
		 * queue refuses more, which is fine. */
		(void)post_op(&s, Q_SEND, IBV_WR_SEND, &peer, i % 8 == 0);
		while (ibv_poll_cq(s.cq, 16, wc) > 0)
			;
	}
}

static void test_initiator_killed(void **state)
{
	unsigned int seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	int round;

	(void)state;
	if (getenv("SRDMA_TEST_SEED"))
		seed = (unsigned int)strtoul(getenv("SRDMA_TEST_SEED"), NULL,
					     0);
	printf("peer death: initiator-killed seed %u\n", seed);
	srand(seed);
	alarm(60);
	for (round = 0; round < 4; round++) {
		unsigned int delay_ms = (unsigned int)rand() % 200;
		struct pinfo peer;
		struct pside s;
		uint64_t t0, ms;
		int fd, st, i;
		pid_t pid;
		char b = 'R';

		pid = xp_spawn(&fd, initiator_child, 30);
		assert_int_equal(ps_handshake(&s, fd, &peer, false), 0);
		for (i = 0; i < 100; i++)
			assert_int_equal(
				post_recv(&s, Q_SEND, 256 * (uint64_t)(i % 64)),
				0);
		assert_int_equal(xio(fd, &b, 1, true), 0);
		assert_int_equal(xio(fd, &b, 1, false), 0);
		usleep(delay_ms * 1000);
		assert_int_equal(kill(pid, SIGKILL), 0);
		if (round & 1)
			assert_int_equal(waitpid(pid, &st, 0), pid);
		t0 = dp_now_ms();
		ps_close(&s); /* dereg, destroy, close: must not hang */
		ms = dp_now_ms() - t0;
		if (!(round & 1))
			assert_int_equal(waitpid(pid, &st, 0), pid);
		close(fd);
		fu_expect(ms < WAIT_MS, "survivor teardown took %" PRIu64 " ms",
			  ms);
		printf("peer death: initiator killed after %u ms (%s); "
		       "target's dereg/destroy/close took %" PRIu64 " ms\n",
		       delay_ms, round & 1 ? "reaped" : "zombie", ms);
	}
	alarm(0);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#ifdef PEER_DEATH_FAULT
		/* Linked against the fault-injection library: only these. */
		cmocka_unit_test(test_pid_reused_during_write),
		cmocka_unit_test(test_pid_reused_during_read),
#else
		cmocka_unit_test(test_target_killed_zombie),
		cmocka_unit_test(test_target_killed_reaped),
		cmocka_unit_test(test_target_pid_reused),
		cmocka_unit_test(test_target_execs),
		cmocka_unit_test(test_initiator_killed),
#endif
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
