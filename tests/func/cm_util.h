// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cm_util.h - helpers for the rdma_cm functional tests (test_cm*.c).
 *
 * The tests drive librdmacm through its public API only, from one thread
 * (async ids on separate channels), from two threads, or from two
 * processes (fork). Checks therefore never use cmocka directly inside a
 * peer: CM_CHECK() reports a DEVIATION line and counts it atomically,
 * CM_REQUIRE() also makes the peer function return, and cm_done() fails
 * the cmocka test if anything was counted. A forked peer exits non-zero
 * when it counted a failure.
 *
 * Nothing here may hang: every wait for an event, a completion, a byte or
 * a socket has a deadline, and each test arms cm_watchdog() (alarm) in
 * case the library itself blocks (a sync call that never returns).
 *
 * Ports: each test binary takes its listening ports from its own slice
 * of 19500-19599 (nobody else uses that range) and skips ports something
 * else holds.
 */
#ifndef SRDMA_TESTS_FUNC_CM_UTIL_H
#define SRDMA_TESTS_FUNC_CM_UTIL_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "func_util.h"

#define CM_EV_MS    5000 /* an event that must come */
#define CM_QUIET_MS 300	 /* how long "no event" is watched */
#define CM_WC_MS    3000 /* a completion that must come */

static atomic_int cm_fails;

static inline void __attribute__((format(printf, 3, 4)))
cm_report(const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One write per line, so threads and processes do not interleave. */
	fprintf(stderr, "DEVIATION %s:%d [pid %d]: %s\n", file, line,
		(int)getpid(), msg);
	atomic_fetch_add(&cm_fails, 1);
}

/* "EINVAL" etc.; thread-safe (fu_errname() shares one buffer). */
static inline const char *cm_errname(int e)
{
	const char *n = e ? strerrorname_np(e) : "0";

	return n ? n : "unknown errno";
}

/* Soft check, usable in any thread or forked peer; yields the condition. */
#define CM_CHECK(cond, ...)                                                    \
	({                                                                     \
		bool ok_ = (cond);                                             \
		if (!ok_)                                                      \
			cm_report(__FILE__, __LINE__, __VA_ARGS__);            \
		ok_;                                                           \
	})

/* A check the rest of a peer function depends on: report and return -1. */
#define CM_REQUIRE(cond, ...)                                                  \
	do {                                                                   \
		if (!CM_CHECK(cond, __VA_ARGS__))                              \
			return -1;                                             \
	} while (0)

#define CM_CHECK_INT(got, want, what)                                          \
	({                                                                     \
		long long g_ = (long long)(got), w_ = (long long)(want);       \
		CM_CHECK(g_ == w_, "%s: got %lld, want %lld", what, g_, w_);   \
	})

/* Expect a call to fail with -1 and @err. */
#define CM_CHECK_ERR(call, err, what)                                          \
	({                                                                     \
		int r_, e_;                                                    \
		errno = 0;                                                     \
		r_ = (call);                                                   \
		e_ = errno;                                                    \
		CM_CHECK(r_ == -1 && e_ == (err),                              \
			 "%s: returned %d errno %s, "                          \
			 "want -1 errno %s",                                   \
			 what, r_, cm_errname(e_), cm_errname(err));           \
	})

/* Fail the cmocka test if anything was reported; reset the counter. */
static inline void cm_done(void)
{
	int n = atomic_exchange(&cm_fails, 0);

	alarm(0);
	if (n)
		fail_msg("%d expectation(s) failed, see DEVIATION lines", n);
}

/* ---- watchdog ----------------------------------------------------------- */

static const char *cm_current_test = "?";

static inline void cm_alarm(int sig)
{
	static const char m[] = "WATCHDOG: test hung (a library call or a "
				"wait never returned): ";
	ssize_t r;

	(void)sig;
	r = write(2, m, sizeof(m) - 1);
	r = write(2, cm_current_test, strlen(cm_current_test));
	r = write(2, "\n", 1);
	_exit(r < 0 ? 98 : 99);
}

/* Start a test: arm the watchdog, forget failures of an aborted test. */
static inline void cm_watchdog_at(const char *name, unsigned int seconds)
{
	atomic_store(&cm_fails, 0);
	cm_current_test = name;
	signal(SIGALRM, cm_alarm);
	alarm(seconds);
}
#define cm_watchdog(s) cm_watchdog_at(__func__, s)

/* ---- time, sockets, ports ----------------------------------------------- */

static inline uint64_t cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline struct sockaddr_in cm_sin(uint32_t host_addr, int port)
{
	struct sockaddr_in sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(host_addr);
	sin.sin_port = htons((uint16_t)port);
	return sin;
}

static inline struct sockaddr_in cm_lo(int port)
{
	return cm_sin(INADDR_LOOPBACK, port);
}

/*
 * A port of [base, base + span) that nothing listens on or holds without
 * SO_REUSEADDR (probed by binding the wildcard). Each call moves on, so
 * the tests of one binary do not share ports.
 */
static inline int cm_pick_port(int base, int span)
{
	static int next = -1;
	int i;

	if (next < 0)
		next = (int)(getpid() % span);
	for (i = 0; i < span; i++) {
		struct sockaddr_in sin = cm_sin(INADDR_ANY, base + next % span);
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
		    one = 1;
		int port = base + next % span;
		bool ok;

		next++;
		assert_true(fd >= 0);
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				 sizeof(one));
		ok = !bind(fd, (struct sockaddr *)&sin, sizeof(sin));
		close(fd);
		if (ok)
			return port;
	}
	fail_msg("no free port in %d-%d", base, base + span - 1);
	return -1;
}

/* Wait until @fd is readable; 1 readable, 0 timeout. */
static inline int cm_wait_readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	uint64_t end = cm_now_ms() + (uint64_t)ms;
	int n;

	for (;;) {
		int left = (int)(end > cm_now_ms() ? end - cm_now_ms() : 0);

		n = poll(&p, 1, left);
		if (n >= 0 || errno != EINTR)
			return n > 0;
	}
}

/* Write all of @len bytes; 0 or -1. */
static inline int cm_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read exactly @len bytes within @ms; 0, or -1 on EOF, error or timeout. */
static inline int cm_read_all(int fd, void *buf, size_t len, int ms)
{
	uint64_t end = cm_now_ms() + (uint64_t)ms;
	char *p = buf;

	while (len) {
		ssize_t n;

		if (!cm_wait_readable(
			    fd,
			    (int)(end > cm_now_ms() ? end - cm_now_ms() : 0)))
			return -1;
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static inline int cm_send_byte(int fd, char c)
{
	return cm_write_all(fd, &c, 1);
}

/* The next byte from @fd within @ms, or -1. */
static inline int cm_recv_byte(int fd, int ms)
{
	unsigned char c;

	return cm_read_all(fd, &c, 1, ms) ? -1 : c;
}

/* ---- events ------------------------------------------------------------- */

/* The next event of @ch within @ms, or NULL. */
static inline struct rdma_cm_event *cm_wait_event(struct rdma_event_channel *ch,
						  int ms)
{
	struct rdma_cm_event *ev = NULL;

	if (!cm_wait_readable(ch->fd, ms))
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/*
 * Expect @type with @status as the next event of @ch; return it (the
 * caller acks) or NULL after reporting what came instead.
 */
#define cm_expect_event(ch, type, status)                                      \
	cm_expect_event_at(__FILE__, __LINE__, ch, type, status)
static inline struct rdma_cm_event *
cm_expect_event_at(const char *file, int line, struct rdma_event_channel *ch,
		   enum rdma_cm_event_type type, int status)
{
	struct rdma_cm_event *ev = cm_wait_event(ch, CM_EV_MS);

	if (!ev) {
		cm_report(file, line,
			  "no event within %d ms, want %s status %d", CM_EV_MS,
			  rdma_event_str(type), status);
		return NULL;
	}
	if (ev->event != type || ev->status != status) {
		cm_report(file, line, "event %s status %d, want %s status %d",
			  rdma_event_str(ev->event), ev->status,
			  rdma_event_str(type), status);
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

/* Expect @ch to stay without events for @ms. */
#define cm_expect_quiet(ch, ms, what)                                          \
	cm_expect_quiet_at(__FILE__, __LINE__, ch, ms, what)
static inline bool cm_expect_quiet_at(const char *file, int line,
				      struct rdma_event_channel *ch, int ms,
				      const char *what)
{
	struct rdma_cm_event *ev;

	if (!cm_wait_readable(ch->fd, ms))
		return true;
	ev = cm_wait_event(ch, 0);
	cm_report(file, line, "%s: unexpected event %s status %d", what,
		  ev ? rdma_event_str(ev->event) : "(fd readable, none)",
		  ev ? ev->status : 0);
	if (ev)
		rdma_ack_cm_event(ev);
	return false;
}

/* True if the event's private data is @data followed by zeros to @len. */
static inline bool cm_pdata_is(const void *pd, unsigned int pd_len,
			       const void *data, size_t data_len,
			       unsigned int want_len)
{
	const uint8_t *p = pd;
	unsigned int i;

	if (pd_len != want_len || !p || memcmp(p, data, data_len))
		return false;
	for (i = (unsigned int)data_len; i < pd_len; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- QPs and completions ------------------------------------------------ */

static inline void cm_qp_init_attr(struct ibv_qp_init_attr *a,
				   enum ibv_qp_type type)
{
	memset(a, 0, sizeof(*a));
	a->qp_type = type;
	a->cap.max_send_wr = 16;
	a->cap.max_recv_wr = 16;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
	a->cap.max_inline_data = 16;
}

/* The QP's state, or -1 if ibv_query_qp fails. */
static inline int cm_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

/* One completion of @cq within @ms; 1 if one came. */
static inline int cm_poll(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t end = cm_now_ms() + (uint64_t)ms;

	memset(wc, 0, sizeof(*wc));
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n > 0;
		if (cm_now_ms() >= end)
			return 0;
		sched_yield();
	}
}

/*
 * Expect the next completion of @cq to have @status and, if @opcode >= 0,
 * that opcode; copy it to @out (may be NULL).
 */
#define cm_expect_wc(cq, status, opcode, out, what)                            \
	cm_expect_wc_at(__FILE__, __LINE__, cq, status, opcode, out, what)
static inline bool cm_expect_wc_at(const char *file, int line,
				   struct ibv_cq *cq, enum ibv_wc_status status,
				   int opcode, struct ibv_wc *out,
				   const char *what)
{
	struct ibv_wc wc;

	if (!cm_poll(cq, &wc, CM_WC_MS)) {
		cm_report(file, line, "%s: no completion, want %s", what,
			  ibv_wc_status_str(status));
		return false;
	}
	if (out)
		*out = wc;
	if (wc.status != status || (opcode >= 0 && (int)wc.opcode != opcode)) {
		cm_report(file, line,
			  "%s: completion %s opcode %d, want %s opcode %d",
			  what, ibv_wc_status_str(wc.status), wc.opcode,
			  ibv_wc_status_str(status), opcode);
		return false;
	}
	return true;
}

/* ---- two peers: threads or processes ------------------------------------ */

enum cm_mode { CM_THREADS, CM_FORK };

/*
 * A passive and an active peer. The passive runs in the calling thread;
 * the active in a second thread or a forked child. They share @port and
 * a socketpair (fd[0] passive, fd[1] active) for "listening" and "done"
 * signals; everything else goes through the CM.
 */
struct cm_pair {
	int port;
	int fd[2];
	int (*passive)(struct cm_pair *p);
	int (*active)(struct cm_pair *p);
	int active_ret;
	bool passive_first; /* the passive disconnects first */
};

static inline void *cm_active_thread(void *arg)
{
	struct cm_pair *p = arg;

	p->active_ret = p->active(p);
	return NULL;
}

/* Run the pair; report a peer that failed, crashed or had to be killed. */
static inline void cm_run_pair(struct cm_pair *p, enum cm_mode mode)
{
	pthread_t thr;
	uint64_t end;
	pid_t pid;
	int ret, st = 0;

	assert_int_equal(
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p->fd), 0);
	if (mode == CM_THREADS) {
		assert_int_equal(
			pthread_create(&thr, NULL, cm_active_thread, p), 0);
		ret = p->passive(p);
		assert_int_equal(pthread_join(thr, NULL), 0);
		CM_CHECK(!ret, "passive peer (thread mode) gave up");
		CM_CHECK(!p->active_ret, "active peer (thread) gave up");
		close(p->fd[0]);
		close(p->fd[1]);
		return;
	}

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int before = atomic_load(&cm_fails);

		close(p->fd[0]);
		alarm(20);
		ret = p->active(p);
		_exit(ret || atomic_load(&cm_fails) != before ? 1 : 0);
	}
	close(p->fd[1]);
	ret = p->passive(p);
	CM_CHECK(!ret, "passive peer (fork mode) gave up");
	end = cm_now_ms() + 15000;
	while ((ret = waitpid(pid, &st, WNOHANG)) == 0 && cm_now_ms() < end)
		usleep(10000);
	if (!ret) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		cm_report(__FILE__, __LINE__, "active process hung; killed");
	} else {
		CM_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			 "active process %s %d",
			 WIFEXITED(st) ? "exited with" : "killed by signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	close(p->fd[0]);
}

/* ---- one process, async ids: a listener and an active id ---------------- */

struct cm_duo {
	int port;
	enum rdma_port_space ps;
	struct rdma_event_channel *lch; /* listener and its children */
	struct rdma_event_channel *ach; /* active id */
	struct rdma_cm_id *listen;
	struct rdma_cm_id *act;
	struct rdma_cm_id *child; /* after CONNECT_REQUEST */
};

/* Listener on 127.0.0.1:@port in @ps. Hard asserts (set-up). */
static inline void cm_duo_listen(struct cm_duo *d, int port,
				 enum rdma_port_space ps)
{
	struct sockaddr_in sin = cm_lo(port);

	memset(d, 0, sizeof(*d));
	d->port = port;
	d->ps = ps;
	d->lch = rdma_create_event_channel();
	assert_non_null(d->lch);
	assert_int_equal(rdma_create_id(d->lch, &d->listen, NULL, ps), 0);
	assert_int_equal(rdma_bind_addr(d->listen, (struct sockaddr *)&sin), 0);
	assert_int_equal(rdma_listen(d->listen, 16), 0);
}

/* An active id resolved towards the listener (ADDR and ROUTE resolved). */
static inline void cm_duo_resolve(struct cm_duo *d)
{
	struct sockaddr_in sin = cm_lo(d->port);
	struct rdma_cm_event *ev;

	d->ach = rdma_create_event_channel();
	assert_non_null(d->ach);
	assert_int_equal(rdma_create_id(d->ach, &d->act, NULL, d->ps), 0);
	assert_int_equal(
		rdma_resolve_addr(d->act, NULL, (struct sockaddr *)&sin, 2000),
		0);
	ev = cm_expect_event(d->ach, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_resolve_route(d->act, 2000), 0);
	ev = cm_expect_event(d->ach, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	assert_non_null(ev);
	rdma_ack_cm_event(ev);
}

/* Give @id a QP of the id's type through rdma_create_qp. */
static inline void cm_create_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a;

	cm_qp_init_attr(&a, id->qp_type);
	assert_int_equal(rdma_create_qp(id, NULL, &a), 0);
	assert_non_null(id->qp);
}

/*
 * Wait for the CONNECT_REQUEST on the listener; return it (caller acks)
 * and remember its id as d->child. NULL after a report.
 */
static inline struct rdma_cm_event *cm_duo_request(struct cm_duo *d)
{
	struct rdma_cm_event *ev =
		cm_expect_event(d->lch, RDMA_CM_EVENT_CONNECT_REQUEST, 0);

	if (ev) {
		d->child = ev->id;
		CM_CHECK(ev->listen_id == d->listen,
			 "CONNECT_REQUEST: listen_id %p, want the listener %p",
			 (void *)ev->listen_id, (void *)d->listen);
	}
	return ev;
}

/*
 * A whole RC connection between d->act and a new child, both with QPs
 * from rdma_create_qp: connect, CONNECT_REQUEST, accept, ESTABLISHED on
 * both sides. Return true if every step worked.
 */
static inline bool cm_duo_connect(struct cm_duo *d)
{
	struct rdma_cm_event *ev;

	if (!d->act->qp)
		cm_create_qp(d->act);
	if (!CM_CHECK(!rdma_connect(d->act, NULL), "rdma_connect: %s",
		      cm_errname(errno)))
		return false;
	ev = cm_duo_request(d);
	if (!ev)
		return false;
	rdma_ack_cm_event(ev);
	cm_create_qp(d->child);
	if (!CM_CHECK(!rdma_accept(d->child, NULL), "rdma_accept: %s",
		      cm_errname(errno)))
		return false;
	ev = cm_expect_event(d->ach, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (!ev)
		return false;
	rdma_ack_cm_event(ev);
	ev = cm_expect_event(d->lch, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (!ev)
		return false;
	CM_CHECK(ev->id == d->child, "ESTABLISHED on %p, want the child %p",
		 (void *)ev->id, (void *)d->child);
	rdma_ack_cm_event(ev);
	return true;
}

/* Destroy whatever the duo holds (QPs too). Events must be acked. */
static inline void cm_duo_close(struct cm_duo *d)
{
	if (d->child) {
		if (d->child->qp)
			rdma_destroy_qp(d->child);
		CM_CHECK(!rdma_destroy_id(d->child), "destroy child: %s",
			 cm_errname(errno));
	}
	if (d->act) {
		if (d->act->qp)
			rdma_destroy_qp(d->act);
		CM_CHECK(!rdma_destroy_id(d->act), "destroy active id: %s",
			 cm_errname(errno));
	}
	if (d->listen)
		CM_CHECK(!rdma_destroy_id(d->listen), "destroy listener: %s",
			 cm_errname(errno));
	if (d->ach)
		rdma_destroy_event_channel(d->ach);
	if (d->lch)
		rdma_destroy_event_channel(d->lch);
	memset(d, 0, sizeof(*d));
}

#endif /* SRDMA_TESTS_FUNC_CM_UTIL_H */
