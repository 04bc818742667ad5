// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_cm_fdlimit.c - a listener in a process that has run out of file
 * descriptors (issue 9, defect 6; the back-off is in src/cm/cma_loop.c).
 *
 * A forked server lowers RLIMIT_NOFILE, listens on 127.0.0.1 (ephemeral
 * port) and fills its fd table up to the limit. The test process then
 * connects, to an RC and to a UD listener. accept() in the server's CM thread
 * fails with EMFILE while the connection stays queued, so a level-triggered
 * listener would keep epoll_wait returning at once. The server measures its own
 * CPU time (getrusage, all threads) over one second of wall time while the
 * connection is pending; it must stay well under a CPU, and the client
 * must get a prompt, clean failure (REJECTED or UNREACHABLE, not the 20 s
 * connect timeout). Then the server frees its fds and a new client must
 * connect normally: shedding load is temporary.
 *
 * Printed: the server's CPU figure and how the first client ended.
 */
#include <sys/resource.h>

#include "cm_util.h"

#define FILL_LIMIT   256  /* RLIMIT_NOFILE of the server while full */
#define MEASURE_MS   1000 /* wall time over which CPU is measured */
#define MAX_CPU_PCT  20	  /* a spinning loop shows ~100 (or a core's share) */
#define CLIENT_EV_MS 5000 /* the refused client must hear within this */

/* Control bytes on the socketpair (server side fd[0], client fd[1]). */
enum {
	MSG_FULL = 'F',
	MSG_MEASURE = 'M',
	MSG_FREE = 'R',
	MSG_FREED = 'D',
	MSG_DONE = 'Q'
};

struct srv_report {
	int port;     /* RC (PS_TCP) listener */
	int uport;    /* UD (PS_UDP) listener */
	int filled;   /* fds opened to reach the limit */
	long cpu_us;  /* CPU time over the measurement */
	long wall_us; /* its wall time */
};

static long tv_us(const struct timeval *tv)
{
	return (long)tv->tv_sec * 1000000 + (long)tv->tv_usec;
}

static long cpu_now_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return tv_us(&ru.ru_utime) + tv_us(&ru.ru_stime);
}

static long wall_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The server process: returns its exit status. */
static int server(int ctl)
{
	struct sockaddr_in sin = cm_lo(0);
	struct rdma_event_channel *ch;
	struct rdma_cm_id *l, *lu, *c = NULL;
	struct rdma_cm_event *ev;
	struct srv_report rep = {0};
	struct rlimit rl;
	struct ibv_qp_init_attr qa;
	int fds[FILL_LIMIT], nfd = 0, i, fd;
	long cpu0, wall0;

	ch = rdma_create_event_channel();
	CM_REQUIRE(ch, "create channel: %s", cm_errname(errno));
	CM_REQUIRE(!rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), "create id");
	CM_REQUIRE(!rdma_bind_addr(l, (struct sockaddr *)&sin), "bind: %s",
		   cm_errname(errno));
	CM_REQUIRE(!rdma_listen(l, 16), "listen: %s", cm_errname(errno));
	rep.port = ntohs(rdma_get_src_port(l));
	CM_REQUIRE(!rdma_create_id(ch, &lu, NULL, RDMA_PS_UDP), "create id");
	CM_REQUIRE(!rdma_bind_addr(lu, (struct sockaddr *)&sin), "bind: %s",
		   cm_errname(errno));
	CM_REQUIRE(!rdma_listen(lu, 16), "listen: %s", cm_errname(errno));
	rep.uport = ntohs(rdma_get_src_port(lu));

	/* Run out of fds: lower the limit, then take every one left. */
	CM_REQUIRE(!getrlimit(RLIMIT_NOFILE, &rl), "getrlimit");
	rl.rlim_cur = FILL_LIMIT;
	CM_REQUIRE(!setrlimit(RLIMIT_NOFILE, &rl), "setrlimit: %s",
		   cm_errname(errno));
	while (nfd < FILL_LIMIT &&
	       (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		fds[nfd++] = fd;
	CM_REQUIRE(errno == EMFILE, "filling fds stopped with %s",
		   cm_errname(errno));
	rep.filled = nfd;

	CM_REQUIRE(!cm_send_byte(ctl, MSG_FULL) &&
			   !cm_write_all(ctl, &rep, sizeof(rep)),
		   "ctl");
	CM_REQUIRE(cm_recv_byte(ctl, 10000) == MSG_MEASURE, "ctl measure");
	/* Let the connection reach the backlog and the CM thread react. */
	usleep(100000);
	cpu0 = cpu_now_us();
	wall0 = wall_now_us();
	usleep(MEASURE_MS * 1000);
	rep.cpu_us = cpu_now_us() - cpu0;
	rep.wall_us = wall_now_us() - wall0;

	/* Free the fds before talking (the report needs none, but be fair). */
	for (i = 0; i < nfd; i++)
		close(fds[i]);
	CM_REQUIRE(!cm_write_all(ctl, &rep, sizeof(rep)), "ctl report");

	/* A well-behaved client must now be served. */
	CM_REQUIRE(cm_recv_byte(ctl, 20000) == MSG_FREE, "ctl free");
	CM_REQUIRE(!cm_send_byte(ctl, MSG_FREED), "ctl");
	for (;;) {
		ev = cm_wait_event(ch, CM_EV_MS);
		CM_REQUIRE(ev, "no CONNECT_REQUEST after fds were freed");
		/* The new client says so in its private data. */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
		    ev->listen_id == l && !c &&
		    ev->param.conn.private_data_len &&
		    ((const char *)ev->param.conn.private_data)[0] == '2') {
			c = ev->id;
			rdma_ack_cm_event(ev);
			cm_qp_init_attr(&qa, IBV_QPT_RC);
			CM_REQUIRE(!rdma_create_qp(c, NULL, &qa),
				   "create qp: %s", cm_errname(errno));
			CM_REQUIRE(!rdma_accept(c, NULL), "accept: %s",
				   cm_errname(errno));
			continue;
		}
		if (ev->event == RDMA_CM_EVENT_ESTABLISHED && ev->id == c) {
			rdma_ack_cm_event(ev);
			break;
		}
		/* Anything else (a request from the refused client, if a
		 * broken server kept it) is refused and ignored. */
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			(void)rdma_reject(ev->id, NULL, 0);
		rdma_ack_cm_event(ev);
	}
	CM_REQUIRE(cm_recv_byte(ctl, 20000) == MSG_DONE, "ctl done");
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(lu);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* A resolved active id with a QP towards @port, on @d (client side). */
static void client_prepare(struct cm_duo *d, int port, enum rdma_port_space ps)
{
	memset(d, 0, sizeof(*d));
	d->port = port;
	d->ps = ps;
	cm_duo_resolve(d);
	cm_create_qp(d->act);
}

static void client_close(struct cm_duo *d)
{
	rdma_destroy_qp(d->act);
	assert_int_equal(rdma_destroy_id(d->act), 0);
	rdma_destroy_event_channel(d->ach);
}

static void test_cm_fdlimit_listener_backs_off(void **state)
{
	struct srv_report rep;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct cm_duo d, du;
	int ctl[2], st = 0, event = -1, status = 0, pct;
	int uevent = -1, ustatus = 0;
	uint64_t t0, ev_ms = 0, uev_ms = 0;
	pid_t pid;

	(void)state;
	cm_watchdog(60);
	assert_int_equal(
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(ctl[1]);
		alarm(50);
		_exit(server(ctl[0]) || atomic_load(&cm_fails) ? 1 : 0);
	}
	close(ctl[0]);

	assert_int_equal(cm_recv_byte(ctl[1], 20000), MSG_FULL);
	assert_int_equal(cm_read_all(ctl[1], &rep, sizeof(rep), 5000), 0);

	client_prepare(&d, rep.port, RDMA_PS_TCP);
	client_prepare(&du, rep.uport, RDMA_PS_UDP);
	t0 = cm_now_ms();
	assert_int_equal(rdma_connect(d.act, NULL), 0);
	assert_int_equal(rdma_connect(du.act, NULL), 0);
	assert_int_equal(cm_send_byte(ctl[1], MSG_MEASURE), 0);
	ev = cm_wait_event(d.ach, CLIENT_EV_MS);
	if (ev) {
		ev_ms = cm_now_ms() - t0;
		event = ev->event;
		status = ev->status;
		rdma_ack_cm_event(ev);
	}
	ev = cm_wait_event(du.ach, CLIENT_EV_MS);
	if (ev) {
		uev_ms = cm_now_ms() - t0;
		uevent = ev->event;
		ustatus = ev->status;
		rdma_ack_cm_event(ev);
	}
	assert_int_equal(cm_read_all(ctl[1], &rep, sizeof(rep), 20000), 0);
	pct = (int)(rep.cpu_us * 100 / (rep.wall_us ? rep.wall_us : 1));
	printf("cm fd exhaustion: server with %d fds filled used %ld ms CPU "
	       "over %ld ms (%d%%); refused client got %s status %d after "
	       "%llu ms\n",
	       rep.filled, rep.cpu_us / 1000, rep.wall_us / 1000, pct,
	       event < 0 ? "no event" : rdma_event_str(event), status,
	       (unsigned long long)ev_ms);
	printf("cm fd exhaustion: refused UD client got %s status %d after "
	       "%llu ms\n",
	       uevent < 0 ? "no event" : rdma_event_str(uevent), ustatus,
	       (unsigned long long)uev_ms);
	fflush(stdout);
	CM_CHECK(pct < MAX_CPU_PCT,
		 "server CPU %d%% of wall time while out of fds, want < %d%%",
		 pct, MAX_CPU_PCT);
	CM_CHECK((event == RDMA_CM_EVENT_REJECTED ||
		  event == RDMA_CM_EVENT_UNREACHABLE) &&
			 status != -ETIMEDOUT,
		 "refused client: %s status %d within %d ms, want REJECTED or "
		 "UNREACHABLE at once",
		 event < 0 ? "no event" : rdma_event_str(event), status,
		 CLIENT_EV_MS);
	CM_CHECK(uevent == RDMA_CM_EVENT_UNREACHABLE && ustatus != -ETIMEDOUT,
		 "refused UD client: %s status %d within %d ms, want "
		 "UNREACHABLE at once",
		 uevent < 0 ? "no event" : rdma_event_str(uevent), ustatus,
		 CLIENT_EV_MS);
	client_close(&d);
	client_close(&du);

	/* Fds are back: a new client connects normally. */
	assert_int_equal(cm_send_byte(ctl[1], MSG_FREE), 0);
	assert_int_equal(cm_recv_byte(ctl[1], 20000), MSG_FREED);
	client_prepare(&d, rep.port, RDMA_PS_TCP);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = "2";
	cp.private_data_len = 1;
	assert_int_equal(rdma_connect(d.act, &cp), 0);
	ev = cm_expect_event(d.ach, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev)
		rdma_ack_cm_event(ev);
	printf("cm fd exhaustion: after fds were freed a new client %s\n",
	       ev ? "connected" : "did NOT connect");
	assert_int_equal(cm_send_byte(ctl[1], MSG_DONE), 0);
	client_close(&d);

	assert_int_equal(waitpid(pid, &st, 0), pid);
	CM_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server %s %d",
		 WIFEXITED(st) ? "exited with" : "killed by signal",
		 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	close(ctl[1]);
	cm_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cm_fdlimit_listener_backs_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
