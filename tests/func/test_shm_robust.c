// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_shm_robust.c - hostile shared state: another process of the same
 * user truncates or scribbles over the registry and the control segments
 * (docs/design/host-segment.md, "Hostile shared state").
 *
 * Each case runs in a fresh SRDMA_DIR with two forked contexts: a victim V
 * (polls its CQ, reposts receives, watches its async fd) and a peer P
 * (RDMA WRITEs and SENDs to V in a loop). Once traffic flows, the test
 * process attacks the files with plain file operations, lets things run,
 * then stops both and checks: neither died of a signal; where the attack
 * hit state P was using, P got error completions; a device opened
 * afterwards and `srdma status` work or fail cleanly; canary files that
 * hostile registry names point at survive. A table of case -> outcome is
 * printed. Children never use cmocka asserts (XCHK, exit status instead).
 */
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

#include "transport/host/shm_layout.h"
#include "xproc_util.h"

struct info {
	uint32_t qpn;
	uint16_t lid;
	uint64_t addr;
	uint32_t rkey;
};

/* What a child reports at the end. */
struct report {
	uint64_t ok, err;
	int first_status; /* first error completion, or -1 */
	int post_errno;	  /* first failed post, or 0 */
	int fatal;	  /* got IBV_EVENT_DEVICE_FATAL */
};

struct ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char *buf;
	struct ibv_mr *mr;
	uint16_t lid;
};

static struct ibv_context *open_dev(void)
{
	struct ibv_device **l;
	struct ibv_context *ctx = NULL;
	int n = 0;

	l = ibv_get_device_list(&n);
	if (l && n)
		ctx = ibv_open_device(l[0]);
	if (l)
		ibv_free_device_list(l);
	return ctx;
}

static void ep_open(struct ep *e)
{
	memset(e, 0, sizeof(*e));
	XCHK(!xp_open_pd_cq(&e->ctx, &e->pd, &e->cq, 256));
	e->buf = calloc(1, 65536);
	XCHK(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, 65536,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	XCHK(e->mr);
	e->qp = xp_qp_create(e->pd, e->cq, NULL, IBV_QPT_RC, 64, 1, 0);
	XCHK(e->qp);
	XCHK(!xp_port_lid(e->ctx, &e->lid));
}

/* Teardown may fail on a dead device; it must not crash. */
static void ep_close(struct ep *e)
{
	ibv_destroy_qp(e->qp);
	ibv_dereg_mr(e->mr);
	xp_close_pd_cq(e->ctx, e->pd, e->cq);
}

static void ep_connect(struct ep *e, const struct info *r)
{
	static const struct dp_conn k = {
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		.min_rnr_timer = 20, /* 15 ms: the victim reposts meanwhile */
		.timeout = 10,
		.retry_cnt = 3,
		.rnr_retry = 6,
	};

	XCHK(!dp_qp_connect(e->qp, r->qpn, r->lid, &k));
}

static int post_recv(struct ep *e, uint64_t id)
{
	struct ibv_sge s = {(uintptr_t)e->buf + 32768, 1024, e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &s, .num_sge = 1};
	struct ibv_recv_wr *bad;

	return ibv_post_recv(e->qp, &wr, &bad);
}

static bool stop_requested(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};

	return poll(&p, 1, 0) > 0;
}

static void note_wc(struct report *rep, const struct ibv_wc *wc)
{
	if (wc->status == IBV_WC_SUCCESS) {
		rep->ok++;
		return;
	}
	if (!rep->err++)
		rep->first_status = wc->status;
}

/* The victim: passive target that keeps its receive queue full. */
static void victim(int sock)
{
	struct report rep = {.first_status = -1};
	struct info me, peer;
	struct ep e;
	uint64_t id = 0, end;
	int i;

	ep_open(&e);
	me.qpn = e.qp->qp_num;
	me.lid = e.lid;
	me.addr = (uintptr_t)e.buf;
	me.rkey = e.mr->rkey;
	XCHK(!xio(sock, &me, sizeof(me), true));
	XCHK(!xio(sock, &peer, sizeof(peer), false));
	ep_connect(&e, &peer);
	for (i = 0; i < 32; i++)
		XCHK(!post_recv(&e, id++));
	XCHK(!fcntl(e.ctx->async_fd, F_SETFL,
		    fcntl(e.ctx->async_fd, F_GETFL) | O_NONBLOCK));
	XCHK(!xio(sock, &me, 1, true)); /* ready */
	end = dp_now_ms() + 30000;
	while (!stop_requested(sock) && dp_now_ms() < end) {
		struct ibv_async_event ev;
		struct ibv_wc wc;
		int got = 0;

		while (got < 16 && ibv_poll_cq(e.cq, 1, &wc) == 1) {
			got++;
			note_wc(&rep, &wc);
			if (post_recv(&e, id++) && !rep.post_errno)
				rep.post_errno = errno ? errno : EIO;
		}
		if (!ibv_get_async_event(e.ctx, &ev)) {
			if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
				rep.fatal = 1;
			ibv_ack_async_event(&ev);
		}
		if (!got)
			usleep(100);
	}
	XCHK(!xio(sock, &rep, sizeof(rep), true));
	ep_close(&e);
	_exit(0);
}

/* The peer: RDMA WRITEs and SENDs into the victim until told to stop. */
static void peer(int sock)
{
	struct report rep = {.first_status = -1};
	struct info me, v;
	struct ep e;
	uint64_t n = 0, end;
	bool said = false;

	ep_open(&e);
	me.qpn = e.qp->qp_num;
	me.lid = e.lid;
	XCHK(!xio(sock, &me, sizeof(me), true));
	XCHK(!xio(sock, &v, sizeof(v), false));
	ep_connect(&e, &v);
	end = dp_now_ms() + 30000;
	while (!stop_requested(sock) && dp_now_ms() < end) {
		struct ibv_sge s = {(uintptr_t)e.buf, 64, e.mr->lkey};
		struct ibv_send_wr wr, *bad;
		struct ibv_wc wc;
		uint64_t t;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = n;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.opcode = n % 4 == 3 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = v.addr + (n % 64) * 64;
		wr.wr.rdma.rkey = v.rkey;
		n++;
		if (ibv_post_send(e.qp, &wr, &bad)) {
			if (!rep.post_errno)
				rep.post_errno = errno ? errno : EIO;
			usleep(1000);
			continue;
		}
		for (t = dp_now_ms() + 5000; dp_now_ms() < t;)
			if (ibv_poll_cq(e.cq, 1, &wc) == 1) {
				note_wc(&rep, &wc);
				break;
			}
		if (!said && rep.ok >= 200) {
			XCHK(!xio(sock, &me, 1, true)); /* traffic flows */
			said = true;
		}
		if (rep.err)
			usleep(2000); /* QP in ERR: flushes from now on */
	}
	if (!said)
		XCHK(!xio(sock, &me, 1, true));
	XCHK(!xio(sock, &rep, sizeof(rep), true));
	ep_close(&e);
	_exit(0);
}

/* ---- the attacks --------------------------------------------------------- */

struct env {
	char dir[512];
	char seg[600]; /* V's segment file */
	char reg[600];
	pid_t vpid;
	uint32_t vlid, vqpn;
	char canary_rel[600]; /* SRDMA_DIR/../canary.<case> */
	char canary_abs[64];  /* /tmp/srdma-canary.<pid> */
};

static void put_at(const char *path, uint64_t off, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, p, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void fill_garbage(const char *path, uint64_t off, size_t n,
			 unsigned int seed)
{
	unsigned char b[4096];
	size_t i;

	assert_true(n <= sizeof(b));
	srand(seed);
	for (i = 0; i < n; i++)
		b[i] = (unsigned char)rand();
	put_at(path, off, b, n);
}

static void a_seg_trunc0(struct env *e)
{
	assert_int_equal(truncate(e->seg, 0), 0);
}

static void a_seg_trunc_half(struct env *e)
{
	assert_int_equal(truncate(e->seg, (off_t)(SRDMA_SEG_SIZE / 2)), 0);
}

static void a_seg_trunc_hdr(struct env *e)
{
	assert_int_equal(truncate(e->seg, 16384), 0);
}

/* Offsets, sizes and counts of V's header: random, then hostile. */
static void a_seg_hdr_garbage(struct env *e)
{
	uint64_t big = 0xfffffffffffff000ull;

	fill_garbage(e->seg, offsetof(struct srdma_seg_hdr, key_off),
		     sizeof(struct srdma_seg_hdr) -
			     offsetof(struct srdma_seg_hdr, key_off),
		     1);
	put_at(e->seg, offsetof(struct srdma_seg_hdr, qp_off), &big,
	       sizeof(big));
	put_at(e->seg, offsetof(struct srdma_seg_hdr, cq_off), &big,
	       sizeof(big));
	put_at(e->seg, offsetof(struct srdma_seg_hdr, key_off), &big,
	       sizeof(big));
	put_at(e->seg, offsetof(struct srdma_seg_hdr, aq_off), &big,
	       sizeof(big));
}

/* V's QP receive queue and CQ entries: ring offsets that wrap. */
static void a_seg_entries_garbage(struct env *e)
{
	uint64_t qoff = SRDMA_SEG_QP_OFF +
			(uint64_t)(e->vqpn & ((1u << SRDMA_QPN_SHIFT) - 1)) *
				sizeof(struct srdma_shm_qp);
	uint64_t off = 0xfffffffffffff000ull;
	uint32_t size = 1, wsz = 4096, max_sge = 255, csize = 1u << 31;
	unsigned int i;

	put_at(e->seg, qoff + offsetof(struct srdma_shm_rq, ring_off), &off,
	       sizeof(off));
	put_at(e->seg, qoff + offsetof(struct srdma_shm_rq, size), &size,
	       sizeof(size));
	put_at(e->seg, qoff + offsetof(struct srdma_shm_rq, wqe_size), &wsz,
	       sizeof(wsz));
	put_at(e->seg, qoff + offsetof(struct srdma_shm_rq, max_sge), &max_sge,
	       sizeof(max_sge));
	for (i = 0; i < 8; i++) {
		uint64_t c = SRDMA_SEG_CQ_OFF + i * sizeof(struct srdma_shm_cq);

		put_at(e->seg, c + offsetof(struct srdma_shm_cq, ring_off),
		       &off, sizeof(off));
		put_at(e->seg, c + offsetof(struct srdma_shm_cq, size), &csize,
		       sizeof(csize));
	}
}

/* Every receive WQE slot of V's RQ: a huge SGE count (max_sge clamps). */
static void a_seg_rwqe_nsge_garbage(struct env *e)
{
	uint64_t qoff = SRDMA_SEG_QP_OFF +
			(uint64_t)(e->vqpn & ((1u << SRDMA_QPN_SHIFT) - 1)) *
				sizeof(struct srdma_shm_qp);
	uint32_t nsge = 0xffffffffu;
	struct srdma_shm_rq rq;
	unsigned int i, j;
	int fd;

	fd = open(e->seg, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &rq, sizeof(rq), (off_t)qoff),
			 (ssize_t)sizeof(rq));
	close(fd);
	assert_true(rq.size && rq.size <= 4096 && rq.wqe_size);
	/* V reposts over consumed slots: hit the pending ones a few times. */
	for (j = 0; j < 20; j++) {
		for (i = 0; i < rq.size; i++)
			put_at(e->seg,
			       rq.ring_off + (uint64_t)i * rq.wqe_size +
				       offsetof(struct srdma_shm_rwqe, num_sge),
			       &nsge, sizeof(nsge));
		usleep(10 * 1000);
	}
}

/* V's RQ lock word: "held" by a thread that does not exist (no robust
 * list will ever release it). */
static void a_seg_rlock_garbage(struct env *e)
{
	uint64_t qoff = SRDMA_SEG_QP_OFF +
			(uint64_t)(e->vqpn & ((1u << SRDMA_QPN_SHIFT) - 1)) *
				sizeof(struct srdma_shm_qp);
	int32_t tid = 0x3ffffff0; /* above pid_max's ceiling: nobody */

	put_at(e->seg, qoff + offsetof(struct srdma_shm_rq, rlock), &tid,
	       sizeof(tid));
}

static void a_reg_trunc0(struct env *e)
{
	assert_int_equal(truncate(e->reg, 0), 0);
}

static void a_reg_trunc_half(struct env *e)
{
	assert_int_equal(truncate(e->reg, (off_t)(SRDMA_REG_SIZE / 2)), 0);
}

/* Sizes, counts and offsets; magic and version stay. */
static void a_reg_hdr_garbage(struct env *e)
{
	fill_garbage(e->reg, 6, sizeof(struct srdma_reg_hdr) - 6, 2);
}

/* A version we do not know: maybe another softrdma; refused cleanly. */
static void a_reg_version_garbage(struct env *e)
{
	uint16_t v = 0x7e57;

	put_at(e->reg, offsetof(struct srdma_reg_hdr, version), &v, sizeof(v));
}

/* Every entry but V's and P's: random bytes (states, pids, names). */
static void a_reg_entries_garbage(struct env *e)
{
	unsigned int i;

	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry ent;
		int fd = open(e->reg, O_RDONLY);
		off_t at =
			(off_t)(sizeof(struct srdma_reg_hdr) + i * sizeof(ent));

		assert_true(fd >= 0);
		assert_int_equal(pread(fd, &ent, sizeof(ent), at),
				 (ssize_t)sizeof(ent));
		close(fd);
		if (ent.state != SRDMA_REG_FREE)
			continue;
		if (i % 3 == 0)
			fill_garbage(e->reg, (uint64_t)at, sizeof(ent), i + 3);
	}
}

/* A dead entry whose segment name points outside SRDMA_DIR. */
static void plant_entry(struct env *e, unsigned int idx, const char *name)
{
	struct srdma_reg_entry ent;
	pid_t dead = fork();

	assert_true(dead >= 0);
	if (!dead)
		_exit(0);
	waitpid(dead, NULL, 0); /* a pid nobody has now */
	memset(&ent, 0, sizeof(ent));
	ent.pid = dead;
	ent.start_time = 1;
	ent.lid = idx + 1;
	snprintf(ent.seg_name, sizeof(ent.seg_name), "%s", name);
	snprintf(ent.dev_name, sizeof(ent.dev_name), "srdma0");
	ent.state = SRDMA_REG_LIVE;
	put_at(e->reg, sizeof(struct srdma_reg_hdr) + idx * sizeof(ent), &ent,
	       sizeof(ent));
}

static unsigned int free_index(struct env *e, unsigned int from)
{
	unsigned int i;

	for (i = from; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry ent;
		int fd = open(e->reg, O_RDONLY);

		assert_true(fd >= 0);
		assert_int_equal(pread(fd, &ent, sizeof(ent),
				       (off_t)(sizeof(struct srdma_reg_hdr) +
					       i * sizeof(ent))),
				 (ssize_t)sizeof(ent));
		close(fd);
		if (ent.state == SRDMA_REG_FREE)
			return i;
	}
	fail();
	return 0;
}

static void a_reg_name_dotdot(struct env *e)
{
	const char *base = strrchr(e->canary_rel, '/') + 1;
	char name[64];

	snprintf(name, sizeof(name), "../%s", base);
	plant_entry(e, free_index(e, 10), name);
}

static void a_reg_name_abs(struct env *e)
{
	plant_entry(e, free_index(e, 20), e->canary_abs);
}

struct scase {
	const char *name;
	void (*attack)(struct env *e);
	bool hits_traffic; /* P must see error completions */
	bool refuse;	   /* later opens fail cleanly (not repaired) */
	bool fatal;	   /* V's own segment: DEVICE_FATAL */
};

static const struct scase cases[] = {
	{"segment truncated to 0", a_seg_trunc0, true, false, true},
	{"segment truncated to half", a_seg_trunc_half, false, false, true},
	{"segment truncated to 16 KiB", a_seg_trunc_hdr, true, false, true},
	{"segment header offsets garbage", a_seg_hdr_garbage, false, false,
	 true},
	{"segment RQ/CQ ring offsets wrap", a_seg_entries_garbage, true, false,
	 false},
	{"segment receive WQE num_sge garbage", a_seg_rwqe_nsge_garbage, false,
	 false, false},
	{"segment RQ lock held by nobody", a_seg_rlock_garbage, false, false,
	 false},
	{"registry truncated to 0", a_reg_trunc0, true, false, false},
	{"registry truncated to half", a_reg_trunc_half, false, false, false},
	{"registry header garbage", a_reg_hdr_garbage, false, false, false},
	{"registry version garbage", a_reg_version_garbage, false, true, false},
	{"registry free entries garbage", a_reg_entries_garbage, false, false,
	 false},
	{"registry seg_name \"../canary\"", a_reg_name_dotdot, false, false,
	 false},
	{"registry seg_name \"/tmp/canary\"", a_reg_name_abs, false, false,
	 false},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* ---- running a case ------------------------------------------------------ */

static const char *how_died(int st, char *buf, size_t len)
{
	if (WIFSIGNALED(st))
		snprintf(buf, len, "KILLED by %s", strsignal(WTERMSIG(st)));
	else if (WEXITSTATUS(st))
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	else
		snprintf(buf, len, "ok");
	return buf;
}

static bool read_for(int fd, void *p, size_t n, int ms)
{
	struct pollfd pf = {fd, POLLIN, 0};

	if (poll(&pf, 1, ms) <= 0)
		return false;
	return !xio(fd, p, n, false);
}

/* A fresh context opened after the attack: 0, or the errno of the open. */
static int later_open(int *st)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		struct ibv_context *ctx;
		struct ibv_pd *pd;

		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		alarm(30);
		ctx = open_dev();
		if (!ctx)
			_exit(10);
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			_exit(11);
		ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, st, 0), pid);
	return 0;
}

static void run_status(int *st)
{
	const char *bd = getenv("SRDMA_BUILD_DIR");
	char path[512];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/bin/srdma", bd ? bd : ".");
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int fd = open("/dev/null", O_WRONLY);

		alarm(30);
		dup2(fd, 1);
		execl(path, "srdma", "status", "--all", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, st, 0), pid);
}

static void make_canary(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "canary", 6), 6);
	close(fd);
}

static int run_case(const char *base, unsigned int k)
{
	const struct scase *c = &cases[k];
	struct report vr = {.first_status = -1}, pr = {.first_status = -1};
	struct info vi, pi;
	struct env e;
	int vs, ps, vst, pst, ost, sst, bad = 0;
	char b1[64], b2[64], b3[64], b4[64];
	bool canary_ok, vrep, prep;
	pid_t pp;
	char x;

	memset(&e, 0, sizeof(e));
	snprintf(e.dir, sizeof(e.dir), "%s/case%u", base, k);
	assert_int_equal(mkdir(e.dir, 0700), 0);
	snprintf(e.reg, sizeof(e.reg), "%s/registry", e.dir);
	snprintf(e.canary_rel, sizeof(e.canary_rel), "%s/canary.%u", base, k);
	snprintf(e.canary_abs, sizeof(e.canary_abs), "/tmp/srdma-canary.%d",
		 (int)getpid());
	make_canary(e.canary_rel);
	make_canary(e.canary_abs);
	assert_int_equal(setenv("SRDMA_DIR", e.dir, 1), 0);

	e.vpid = xp_spawn(&vs, victim, 60);
	pp = xp_spawn(&ps, peer, 60);
	assert_true(read_for(vs, &vi, sizeof(vi), 20000));
	assert_true(read_for(ps, &pi, sizeof(pi), 20000));
	/* P learns V's address only once V is connected with its receives
	 * posted: P's first WRs would otherwise go to a QP not yet in RTR
	 * and, on a loaded machine, outlast P's retry budget. */
	assert_int_equal(xio(vs, &pi, sizeof(pi), true), 0);
	assert_true(read_for(vs, &x, 1, 20000)); /* V ready */
	assert_int_equal(xio(ps, &vi, sizeof(vi), true), 0);
	assert_true(read_for(ps, &x, 1, 20000)); /* traffic flows */
	/* RoCE ports have no LID: the QPN names the context. */
	e.vlid = vi.lid ? vi.lid : vi.qpn >> SRDMA_QPN_SHIFT;
	e.vqpn = vi.qpn;
	snprintf(e.seg, sizeof(e.seg), "%s/ctx.%u.%d", e.dir, e.vlid,
		 (int)e.vpid);

	c->attack(&e);
	usleep(1000 * 1000); /* let both run into it */
	run_status(&sst);    /* while the victim lives, damaged */
	usleep(500 * 1000);

	/* Stop P first. Either may be dead already (before the fix). */
	prep = !xio(ps, &x, 1, true) && read_for(ps, &pr, sizeof(pr), 20000);
	vrep = !xio(vs, &x, 1, true) && read_for(vs, &vr, sizeof(vr), 20000);
	assert_int_equal(waitpid(pp, &pst, 0), pp);
	assert_int_equal(waitpid(e.vpid, &vst, 0), e.vpid);
	close(vs);
	close(ps);
	later_open(&ost);
	if (WIFEXITED(sst) && !WEXITSTATUS(sst))
		run_status(&sst); /* and once more, after */
	canary_ok = !access(e.canary_rel, F_OK) && !access(e.canary_abs, F_OK);

	printf("%-34s | V %-8s fatal=%d | P %-8s ok=%-6" PRIu64
	       " err=%-4" PRIu64
	       " %-18s | open %-8s | status %-8s | canary %s\n",
	       c->name, how_died(vst, b1, sizeof(b1)), vr.fatal,
	       how_died(pst, b2, sizeof(b2)), pr.ok, pr.err,
	       pr.first_status >= 0
		       ? ibv_wc_status_str((enum ibv_wc_status)pr.first_status)
		       : "-",
	       how_died(ost, b3, sizeof(b3)), how_died(sst, b4, sizeof(b4)),
	       canary_ok ? "intact" : "DELETED");
	fflush(stdout);

	if (WIFSIGNALED(vst) || WIFSIGNALED(pst) || WIFSIGNALED(ost) ||
	    WIFSIGNALED(sst) || !vrep || !prep)
		bad++;
	if (c->hits_traffic && !pr.err && !pr.post_errno)
		bad++;
	if (c->fatal && !vr.fatal)
		bad++;
	/* A later open works (the registry repairs itself), or for an
	 * unknown version fails cleanly: ibv_open_device() returns NULL,
	 * srdma status exits 1 with a message. */
	if (!WIFEXITED(ost) || WEXITSTATUS(ost) != (c->refuse ? 10 : 0))
		bad++;
	if (!WIFEXITED(sst) || WEXITSTATUS(sst) != (c->refuse ? 1 : 0))
		bad++;
	if (!canary_ok)
		bad++;
	unlink(e.canary_rel);
	unlink(e.canary_abs);
	return bad;
}

static void test_shm_hostile_state_never_crashes(void **state)
{
	const char *base = getenv("SRDMA_DIR");
	unsigned int k;
	int bad = 0;

	(void)state;
	assert_non_null(base);
	mkdir(base, 0700);
	{
		char cmd[600];

		/* Leftovers of an earlier run (our own test directory). */
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'/case* '%s'/canary.*",
			 base, base);
		assert_int_equal(system(cmd), 0);
	}
	printf("%-34s | %-21s | %-49s | %-13s | %-15s | %s\n", "case", "victim",
	       "peer (during + after the attack)", "later open", "srdma status",
	       "canary");
	for (k = 0; k < NCASES; k++) {
		int b = run_case(base, k);

		if (b)
			fprintf(stderr, "case \"%s\": %d failed check(s)\n",
				cases[k].name, b);
		bad += b;
	}
	assert_non_null(setenv("SRDMA_DIR", base, 1) ? NULL : base);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_hostile_state_never_crashes),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
