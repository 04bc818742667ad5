// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_xrc_life.c - lifetimes at the edges of XRC (docs/design/xrc.md):
 * a TGT QP that its creator is destroying, and basic SRQs created through
 * ibv_create_srq_ex with XRC-only attributes.
 *
 * - Destroying a TGT QP decides, under the context lock, whether it lives
 *   on (a handle from ibv_open_qp still holds it) or goes. From that
 *   decision on, ibv_open_qp of its number must fail with EINVAL: a handle
 *   opened between the decision and the unpublish would point at a QP
 *   that is freed under it. To hit that instant every time, this test
 *   interposes pthread_mutex_lock/unlock (the library's calls resolve to
 *   the executable's definitions first) and follows the locks the
 *   destroying thread holds: when it first releases a lock under which
 *   it took another (the context lock, under which destroy checked and
 *   removed the handle and decided), a second thread calls ibv_open_qp
 *   while the destroying thread waits, before the QP is unpublished.
 *   Whatever the open answers, the invariant is checked: a handle that
 *   was opened keeps the QP alive (its state, the domain busy) until it
 *   is closed. Under TSan (which intercepts the same functions) the
 *   interposer is left out and only the plain checks run.
 * - Within one process a handle opened before the destroy keeps the QP
 *   alive; the last handle's close ends it, and its number no longer
 *   opens.
 * - Domain files: a domain named by a file is held through a lock file
 *   in the state directory (xrcd.<dev>.<ino>); its last holder removes
 *   it on close, a failed open (EAGAIN) leaves none, and one left by a
 *   holder that was killed goes with the next open that finds the domain
 *   gone. Under a process that opens and closes the same domain as fast
 *   as it can, a domain we hold must stay joinable (our lock is on the
 *   file the name leads to, never on one its last holder just removed).
 * - ibv_create_srq_ex with srq_type BASIC (or no TYPE bit) and a CQ or
 *   an XRCD, which only XRC SRQs use, creates a basic SRQ, as mlx5 does:
 *   the extra attributes are ignored, the limits are returned, and the
 *   SRQ feeds an RC QP's receives.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdatomic.h>

#include "dp_util.h"

#if defined(__SANITIZE_THREAD__)
#define RACE_HOOK 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RACE_HOOK 0
#endif
#endif
#ifndef RACE_HOOK
#define RACE_HOOK 1
#endif

/* ---- the race hook -------------------------------------------------------- */

enum { HOOK_IDLE, HOOK_ASKED, HOOK_DONE, HOOK_QUIT };

#define HELD_MAX 16
static _Thread_local bool tl_watch;	/* this thread is in ibv_destroy_qp */
static _Thread_local bool tl_asked;	/* it asked for its one open */
static _Thread_local int tl_depth;	/* how many it holds, below */
static atomic_int hook_state;		/* HOOK_* */
/* What the opener thread opens, and what it got. Written before the
 * release store of hook_state that publishes them. */
static struct ibv_xrcd *hook_xrcd;
static uint32_t hook_qpn;
static struct ibv_qp *hook_opened;
static int hook_errno;

static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

#if RACE_HOOK
/* The mutexes the watched thread holds, innermost last, each with
 * whether another was taken under it. */
static _Thread_local pthread_mutex_t *tl_held[HELD_MAX];
static _Thread_local bool tl_nested[HELD_MAX];

typedef int (*mutex_fn)(pthread_mutex_t *);

static mutex_fn real_fn(_Atomic(mutex_fn) *cache, const char *name)
{
	mutex_fn f = atomic_load_explicit(cache, memory_order_relaxed);

	if (!f) {
		f = (mutex_fn)dlsym(RTLD_NEXT, name);
		atomic_store_explicit(cache, f, memory_order_relaxed);
	}
	return f;
}

__attribute__((visibility("default"))) int
pthread_mutex_lock(pthread_mutex_t *m)
{
	static _Atomic(mutex_fn) real;
	int r = real_fn(&real, "pthread_mutex_lock")(m);

	if (tl_watch && (r == 0 || r == EOWNERDEAD)) {
		if (tl_depth > 0 && tl_depth <= HELD_MAX)
			tl_nested[tl_depth - 1] = true;
		if (tl_depth < HELD_MAX) {
			tl_held[tl_depth] = m;
			tl_nested[tl_depth] = false;
		}
		tl_depth++;
	}
	return r;
}

/*
 * The first time the watched thread releases a lock under which it took
 * another (destroy's context lock, under which it checked and removed the
 * handle), the opener runs its ibv_open_qp and this thread waits for it:
 * the open lands between destroy's decision and qp_free's unpublish.
 */
__attribute__((visibility("default"))) int
pthread_mutex_unlock(pthread_mutex_t *m)
{
	static _Atomic(mutex_fn) real;
	bool outer = false;
	int r, i;

	if (tl_watch && tl_depth > 0) {
		for (i = (tl_depth < HELD_MAX ? tl_depth : HELD_MAX) - 1;
		     i >= 0 && tl_held[i] != m; i--)
			;
		if (i >= 0) {
			outer = tl_nested[i];
			for (; i + 1 < tl_depth && i + 1 < HELD_MAX; i++) {
				tl_held[i] = tl_held[i + 1];
				tl_nested[i] = tl_nested[i + 1];
			}
		}
		tl_depth--;
	}
	r = real_fn(&real, "pthread_mutex_unlock")(m);
	if (!tl_watch || !outer || tl_asked)
		return r;
	tl_asked = true;
	/* Pairs with the acquire load in opener(). */
	atomic_store_explicit(&hook_state, HOOK_ASKED, memory_order_release);
	for (i = 0; i < 20000 && atomic_load_explicit(&hook_state,
						      memory_order_acquire) ==
					 HOOK_ASKED;
	     i++)
		sleep_us(100);
	return r;
}
#endif

static struct ibv_qp *open_tgt(struct ibv_context *ctx, struct ibv_xrcd *x,
			       uint32_t qpn)
{
	struct ibv_qp_open_attr a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
		      IBV_QP_OPEN_ATTR_TYPE;
	a.qp_num = qpn;
	a.xrcd = x;
	a.qp_type = IBV_QPT_XRC_RECV;
	return ibv_open_qp(ctx, &a);
}

/* The second thread: one ibv_open_qp per request. */
static void *opener(void *arg)
{
	struct ibv_context *ctx = arg;
	int s;

	for (;;) {
		/* Pairs with the release store in pthread_mutex_unlock(). */
		s = atomic_load_explicit(&hook_state, memory_order_acquire);
		if (s == HOOK_QUIT)
			return NULL;
		if (s != HOOK_ASKED) {
			sleep_us(50);
			continue;
		}
		errno = 0;
		hook_opened = open_tgt(ctx, hook_xrcd, hook_qpn);
		hook_errno = hook_opened ? 0 : errno;
		/* Pairs with the acquire loads of the destroying thread. */
		atomic_store_explicit(&hook_state, HOOK_DONE,
				      memory_order_release);
	}
}

/* ---- helpers ------------------------------------------------------------ */

static struct ibv_xrcd *xrcd_private(struct ibv_context *ctx)
{
	struct ibv_xrcd_init_attr a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = -1;
	a.oflags = O_CREAT;
	return ibv_open_xrcd(ctx, &a);
}

/* A TGT QP of @x, moved to INIT (so that RESET tells a freed one). */
static struct ibv_qp *tgt_init(struct ibv_context *ctx, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp_attr m;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = x;
	qp = ibv_create_qp_ex(ctx, &a);
	assert_non_null(qp);
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_INIT;
	m.port_num = 1;
	m.qp_access_flags = DP_REMOTE_ACCESS;
	assert_int_equal(ibv_modify_qp(qp, &m, IBV_QP_STATE |
						       IBV_QP_PKEY_INDEX |
						       IBV_QP_PORT |
						       IBV_QP_ACCESS_FLAGS),
			 0);
	return qp;
}

/* The state @h (an opened handle) reports, or -1. */
static int handle_state(struct ibv_qp *h)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(h, &a, IBV_QP_STATE, &ia))
		return -1;
	return (int)a.qp_state;
}

/*
 * @h was opened on a TGT QP whose creator has destroyed it: the QP must
 * live on while @h does (INIT, domain busy), and its number must not open
 * once @h is closed.
 */
static void expect_kept_alive(struct ibv_context *ctx, struct ibv_xrcd *x,
			      struct ibv_qp *h, uint32_t qpn, const char *what)
{
	struct ibv_qp *again;
	int st = handle_state(h);

	if (st != IBV_QPS_INIT) {
		/* Freed under the handle: closing it would write freed
		 * memory, so it is left alone. */
		fu_report(__FILE__, __LINE__,
			  "%s: the QP a live handle holds reports state %d, "
			  "want INIT (freed under the handle)", what, st);
		return;
	}
	fu_expect_int(ibv_close_xrcd(x), EBUSY,
		      "close_xrcd while a handle holds its TGT QP");
	fu_expect_int(ibv_destroy_qp(h), 0, "closing the last handle");
	again = open_tgt(ctx, x, qpn);
	fu_expect(!again && errno == EINVAL,
		  "%s: QP %#x opened again after its last handle closed (%s)",
		  what, qpn, again ? "success" : fu_errname(errno));
	if (again)
		ibv_destroy_qp(again);
}

/* ---- TGT QP lifetime ------------------------------------------------------ */

static void test_xrc_tgt_not_openable_while_destroyed(void **state)
{
	struct ibv_context *ctx = fu_open_srdma();
	struct ibv_xrcd *x = xrcd_private(ctx);
	pthread_t th;
	int round, fired = 0, refused = 0;

	(void)state;
	assert_non_null(x);
	atomic_store(&hook_state, HOOK_IDLE);
	assert_int_equal(pthread_create(&th, NULL, opener, ctx), 0);
	for (round = 0; round < 20; round++) {
		struct ibv_qp *tgt = tgt_init(ctx, x);
		char what[64];
		int ret;

		hook_xrcd = x;
		hook_qpn = tgt->qp_num;
		hook_opened = NULL;
		hook_errno = 0;
		atomic_store(&hook_state, HOOK_IDLE);
		tl_asked = false;
		tl_depth = 0;
		tl_watch = true;
		ret = ibv_destroy_qp(tgt);
		tl_watch = false;
		fu_expect_int(ret, 0, "destroy of the TGT QP");
		if (!tl_asked)
			continue;	/* no hook (TSan) */
		/* The open may still be blocked: let it finish. */
		while (atomic_load_explicit(&hook_state,
					    memory_order_acquire) == HOOK_ASKED)
			sleep_us(100);
		fired++;
		snprintf(what, sizeof(what), "round %d", round);
		if (hook_opened) {
			/* Opened before the decision: it must hold the QP. */
			expect_kept_alive(ctx, x, hook_opened, hook_qpn, what);
		} else {
			fu_expect(hook_errno == EINVAL,
				  "%s: open during destroy failed with %s, "
				  "want EINVAL", what, fu_errname(hook_errno));
			refused++;
		}
	}
	atomic_store(&hook_state, HOOK_QUIT);
	pthread_join(th, NULL);
	if (RACE_HOOK)
		fu_expect(fired == 20, "the hook fired in %d of 20 destroys",
			  fired);
	print_message("# %d destroys raced by an open, %d opens refused\n",
		      fired, refused);
	fu_expect_int(ibv_close_xrcd(x), 0, "close_xrcd at the end");
	ibv_close_device(ctx);
	fu_done();
}

static void test_xrc_tgt_kept_by_open_handle(void **state)
{
	struct ibv_context *ctx = fu_open_srdma();
	struct ibv_xrcd *x = xrcd_private(ctx);
	struct ibv_qp *tgt, *h1, *h2, *again;
	uint32_t qpn;

	(void)state;
	assert_non_null(x);
	tgt = tgt_init(ctx, x);
	qpn = tgt->qp_num;
	h1 = open_tgt(ctx, x, qpn);
	h2 = open_tgt(ctx, x, qpn);
	assert_non_null(h1);
	assert_non_null(h2);
	fu_expect_int(ibv_destroy_qp(tgt), 0, "creator destroys");
	/* Destroyed by its creator: no new handle, the old ones hold it. */
	again = open_tgt(ctx, x, qpn);
	fu_expect(!again && errno == EINVAL,
		  "a destroyed TGT QP opened again (%s)",
		  again ? "success" : fu_errname(errno));
	if (again)
		ibv_destroy_qp(again);
	fu_expect(handle_state(h1) == IBV_QPS_INIT,
		  "handle 1 of a kept QP: state %d", handle_state(h1));
	fu_expect_int(ibv_destroy_qp(h1), 0, "closing handle 1");
	expect_kept_alive(ctx, x, h2, qpn, "handle 2");
	fu_expect_int(ibv_close_xrcd(x), 0, "close_xrcd after the last handle");
	ibv_close_device(ctx);
	fu_done();
}

/* ---- domain files --------------------------------------------------------- */

static struct ibv_xrcd *xrcd_file(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	a.fd = fd;
	a.oflags = oflags;
	return ibv_open_xrcd(ctx, &a);
}

/* How many xrcd.* files the state directory holds. */
static int domain_files(void)
{
	const char *dir = getenv("SRDMA_DIR");
	struct dirent *d;
	DIR *dp;
	int n = 0;

	assert_non_null(dir);
	dp = opendir(dir);
	assert_non_null(dp);
	while ((d = readdir(dp)))
		n += !strncmp(d->d_name, "xrcd.", 5);
	closedir(dp);
	return n;
}

/* A file naming a domain, unique to this test; removed at exit. */
static char dom_path[] = "/tmp/srdma-xrc-life-XXXXXX";

static int dom_file(void)
{
	static int fd = -1;

	if (fd < 0) {
		fd = mkstemp(dom_path);
		assert_true(fd >= 0);
	}
	return fd;
}

static void test_xrcd_files_removed(void **state)
{
	struct ibv_context *ctx = fu_open_srdma();
	int fd = dom_file(), base = domain_files();
	struct ibv_xrcd *x1, *x2, *x;
	pid_t pid;
	int st, p[2];
	char c;

	(void)state;
	x = xrcd_file(ctx, fd, 0);
	fu_expect(!x && errno == EAGAIN, "no domain, no O_CREAT: %s",
		  x ? "success" : fu_errname(errno));
	fu_expect_int(domain_files(), base, "files after a failed open");
	x1 = xrcd_file(ctx, fd, O_CREAT);
	x2 = xrcd_file(ctx, fd, 0);
	assert_non_null(x1);
	assert_non_null(x2);
	fu_expect_int(domain_files(), base + 1, "files with two holders");
	fu_expect_int(ibv_close_xrcd(x1), 0, "close the first holder");
	fu_expect_int(domain_files(), base + 1, "files with one holder left");
	x = xrcd_file(ctx, fd, 0);
	fu_expect(x != NULL, "the domain held by its other handle: %s",
		  fu_errname(errno));
	if (x)
		ibv_close_xrcd(x);
	fu_expect_int(ibv_close_xrcd(x2), 0, "close the last holder");
	fu_expect_int(domain_files(), base, "files after the last close");
	x = xrcd_file(ctx, fd, 0);
	fu_expect(!x && errno == EAGAIN, "the domain outlived its holders");

	/* A holder in another process, then killed while holding. */
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ibv_device **l = ibv_get_device_list(NULL);
		struct ibv_context *c2 = l ? ibv_open_device(l[0]) : NULL;

		close(p[0]);
		if (!c2 || !xrcd_file(c2, fd, O_CREAT))
			_exit(2);
		if (write(p[1], "h", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	x = xrcd_file(ctx, fd, 0);
	fu_expect(x != NULL, "joining another process's domain: %s",
		  fu_errname(errno));
	if (x)
		fu_expect_int(ibv_close_xrcd(x), 0, "close our handle");
	fu_expect_int(domain_files(), base + 1, "files while the child holds");
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	fu_expect_int(domain_files(), base + 1,
		      "a killed holder's file (left behind)");
	x = xrcd_file(ctx, fd, 0);
	fu_expect(!x && errno == EAGAIN, "the domain outlived its killed "
		  "holder");
	fu_expect_int(domain_files(), base,
		      "files after an open found the domain gone");
	ibv_close_device(ctx);
	fu_done();
}

/* Another process opens and closes the domain as fast as it can; each
 * domain we hold must stay joinable by name. */
static void test_xrcd_files_churn(void **state)
{
	struct ibv_context *ctx = fu_open_srdma();
	int fd = dom_file(), base = domain_files(), i, st, bad = 0;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ibv_device **l = ibv_get_device_list(NULL);
		struct ibv_context *c2 = l ? ibv_open_device(l[0]) : NULL;
		struct ibv_xrcd *x;

		if (!c2)
			_exit(2);
		for (;;) {
			x = xrcd_file(c2, fd, O_CREAT);
			if (!x || ibv_close_xrcd(x))
				_exit(3);
		}
	}
	for (i = 0; i < 2000; i++) {
		struct ibv_xrcd *x1 = xrcd_file(ctx, fd, O_CREAT), *x2;

		if (!x1) {
			fu_report(__FILE__, __LINE__, "round %d: open: %s", i,
				  fu_errname(errno));
			break;
		}
		x2 = xrcd_file(ctx, fd, 0);
		if (!x2 && bad++ < 5)
			fu_report(__FILE__, __LINE__,
				  "round %d: a domain we hold cannot be "
				  "joined (%s): we locked a removed file", i,
				  fu_errname(errno));
		if (x2)
			ibv_close_xrcd(x2);
		ibv_close_xrcd(x1);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	fu_expect(WIFSIGNALED(st), "the churning child exited with %d",
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	/* The child was killed, perhaps holding: an open finds out. */
	if (!xrcd_file(ctx, fd, 0))
		fu_expect_int(domain_files(), base, "files after the churn");
	ibv_close_device(ctx);
	fu_done();
}

/* ---- basic SRQs through ibv_create_srq_ex ------------------------------- */

/* A basic SRQ from ibv_create_srq_ex with @mask (besides PD), its CQ and
 * XRCD set; NULL with errno on failure. */
static struct ibv_srq *basic_srq_ex(struct dp_ep *e, struct ibv_xrcd *x,
				    uint32_t mask, bool type)
{
	struct ibv_srq_init_attr_ex a;
	struct ibv_srq *srq;

	memset(&a, 0, sizeof(a));
	a.comp_mask = IBV_SRQ_INIT_ATTR_PD | mask;
	if (type) {
		a.comp_mask |= IBV_SRQ_INIT_ATTR_TYPE;
		a.srq_type = IBV_SRQT_BASIC;
	}
	a.pd = e->pd;
	a.cq = e->cq;
	a.xrcd = x;
	a.srq_context = e;
	a.attr.max_wr = 16;
	a.attr.max_sge = 1;
	srq = ibv_create_srq_ex(e->ctx, &a);
	if (srq) {
		fu_expect(a.attr.max_wr >= 16 && a.attr.max_sge >= 1,
			  "basic SRQ limits returned %u WRs, %u SGEs",
			  a.attr.max_wr, a.attr.max_sge);
		fu_expect(srq->srq_context == e && srq->pd == e->pd &&
				  srq->context == e->ctx,
			  "basic SRQ fields: context %p pd %p",
			  srq->srq_context, (void *)srq->pd);
	}
	return srq;
}

/* RC from A to B, B's QP receiving through @srq: one SEND lands there. */
static void send_through_srq(struct dp_ep *A, struct dp_ep *B,
			     struct ibv_srq *srq, const char *what)
{
	struct ibv_qp_init_attr ia;
	struct ibv_sge sge = { (uintptr_t)B->buf, 64, B->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 0x5a, .sg_list = &sge,
				   .num_sge = 1 };
	struct ibv_recv_wr *rbad;
	struct dp_conn k = { .access = DP_REMOTE_ACCESS };
	struct ibv_wc wc;

	dp_qp_create(A, IBV_QPT_RC, 1);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = B->cq;
	ia.recv_cq = B->cq;
	ia.srq = srq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 4;
	ia.cap.max_send_sge = 1;
	B->qp = ibv_create_qp(B->pd, &ia);
	assert_non_null(B->qp);
	dp_connect(A, B->qp->qp_num, B->lid, &k);
	dp_connect(B, A->qp->qp_num, A->lid, &k);
	memset(B->buf, 0, 64);
	assert_int_equal(ibv_post_srq_recv(srq, &rwr, &rbad), 0);
	memcpy(A->buf, "through a basic SRQ", 20);
	assert_int_equal(dp_post(A->qp, 0x77, IBV_WR_SEND, (uintptr_t)A->buf,
				 20, A->mr->lkey, 0, 0),
			 0);
	dp_expect_wc(A->cq, IBV_WC_SUCCESS, &wc, what);
	if (dp_expect_wc(B->cq, IBV_WC_SUCCESS, &wc, what)) {
		fu_expect(wc.wr_id == 0x5a && wc.opcode == IBV_WC_RECV &&
				  wc.byte_len == 20 &&
				  wc.qp_num == B->qp->qp_num,
			  "%s: receive wr_id %#" PRIx64 " opcode %d len %u "
			  "qp %#x", what, wc.wr_id, wc.opcode, wc.byte_len,
			  wc.qp_num);
		fu_expect(!memcmp(B->buf, "through a basic SRQ", 20),
			  "%s: data", what);
	}
	ibv_destroy_qp(A->qp);
	ibv_destroy_qp(B->qp);
	A->qp = B->qp = NULL;
}

static void test_xrc_basic_srq_ex_with_cq_or_xrcd(void **state)
{
	static const struct {
		uint32_t mask;
		bool type;
		const char *what;
	} cases[] = {
		{ IBV_SRQ_INIT_ATTR_CQ, true, "BASIC with a CQ" },
		{ IBV_SRQ_INIT_ATTR_XRCD, true, "BASIC with an XRCD" },
		{ IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_XRCD, true,
		  "BASIC with a CQ and an XRCD" },
		{ IBV_SRQ_INIT_ATTR_CQ, false, "no TYPE, a CQ" },
	};
	struct dp_ep A, B;
	struct ibv_xrcd *x;
	struct ibv_srq *srq;
	size_t i;

	(void)state;
	dp_ep_open(&A, false);
	dp_ep_open(&B, false);
	x = xrcd_private(B.ctx);
	assert_non_null(x);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		errno = 0;
		srq = basic_srq_ex(&B, x, cases[i].mask, cases[i].type);
		fu_expect(srq != NULL, "create_srq_ex %s: %s", cases[i].what,
			  fu_errname(errno));
		if (!srq)
			continue;
		send_through_srq(&A, &B, srq, cases[i].what);
		/* A basic SRQ holds no domain: it closes while the SRQ lives
		 * (then reopen one for the next case). */
		if (cases[i].mask & IBV_SRQ_INIT_ATTR_XRCD) {
			fu_expect_int(ibv_close_xrcd(x), 0,
				      "close_xrcd under a basic SRQ");
			x = xrcd_private(B.ctx);
			assert_non_null(x);
		}
		fu_expect_int(ibv_destroy_srq(srq), 0, "destroy basic SRQ");
	}
	fu_expect_int(ibv_close_xrcd(x), 0, "close_xrcd");
	dp_ep_close(&A);
	dp_ep_close(&B);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xrc_tgt_not_openable_while_destroyed),
		cmocka_unit_test(test_xrc_tgt_kept_by_open_handle),
		cmocka_unit_test(test_xrcd_files_removed),
		cmocka_unit_test(test_xrcd_files_churn),
		cmocka_unit_test(test_xrc_basic_srq_ex_with_cq_or_xrcd),
	};
	int ret;

	ret = cmocka_run_group_tests(tests, NULL, NULL);
	if (strcmp(dom_path + strlen(dom_path) - 6, "XXXXXX"))
		unlink(dom_path);
	return ret;
}
