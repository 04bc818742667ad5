// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * poll_idle.c - an application that polls an empty CQ for good must not
 * keep softrdma's threads busy (tests/net/net_poll_idle.sh).
 *
 * Usage: net_poll_idle [GID_INDEX [MAX_WAKEUPS]]
 *
 * The case of a perftest client whose server died (ib_send_lat -c UD,
 * peer_death.sh): it sent its ping, a few datagrams came back or went
 * astray, and it polls its receive CQ for a pong that never comes. Here:
 * one context, a UD QP in RTS, and a loop of ibv_poll_cq on its empty
 * CQ for 1.7 s. In the first 0.4 s the QP sends a few UD messages to a
 * QPN of no context on our own GID (a peer that is gone), and after each
 * the loop pauses for 3 ms (as a loaded machine deschedules a polling
 * application), within the poll-mode window (20 ms here: we set
 * SRDMA_NET_POLL_US unless the environment has it, so that the test
 * does not depend on how often a loaded machine deschedules us for more
 * than the default 0.2 ms). Each datagram lands on our own UDP socket,
 * wakes our net progress thread while we are in poll mode, and is
 * dropped ("DQPN of no context"). Then nothing more arrives. The
 * voluntary context switches of the process's threads other than the
 * main one are counted over the last second of the loop (each sleep of
 * the net progress thread is one); more than MAX_WAKEUPS (default 10)
 * fails: the thread kept waking to look after an application that only
 * polls (one wake-up per poll-mode window, 50 in 1 s here, over 3000 in
 * 1 s with the default window in a CI run of peer_death.sh). Then 0.3 s
 * of back-to-back sends whose datagrams our polls receive: poll mode
 * must start again (traffic(), at most 2 wake-ups per window).
 *
 * GID_INDEX: the GID to send from and to (default: the first IPv4-mapped
 * entry of port 1). Run it with SRDMA_TRANSPORT=net on an Ethernet port
 * (a test host), so the sends go over UDP.
 *
 * Prints "poll_idle: N sends, W wake-ups of other threads in 1 s, P
 * polls" and exits 0, or 1 when W > MAX_WAKEUPS or on any error.
 *
 * With POLL_IDLE_STEADY_MS=T in the environment, only the traffic part,
 * for T ms, with the default poll-mode window (SRDMA_NET_POLL_US as the
 * environment has it): a long polling phase whose datagrams our polls
 * receive. The thread looks at the window at its end for the first few
 * windows, then less and less often (endpoint.c poll_check): at most
 * MAX_WAKEUPS (default 1500 here; one look per 200 us window would be
 * 5000 a second) over the T ms.
 */
#include <dirent.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define QKEY 0x11111111u
#define DEAD_QPN 0xfffff1u	/* a QPN of no context (its LID is unused) */
#define NSENDS 8
#define LOOP_MS 1900
#define MEASURE_MS 1000
#define POLL_US "40000"	/* SRDMA_NET_POLL_US, unless set */
#define AWAY_US 10000	/* not polling after a send, < POLL_US */
#define BURST_MS 300	/* traffic again, after the idle second */

static void die(const char *what)
{
	fprintf(stderr, "poll_idle: FAIL: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Voluntary context switches of our threads but the main one. */
static long side_switches(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long n = 0;
	pid_t self = getpid();

	if (!d)
		die("/proc/self/task");
	while ((e = readdir(d))) {
		char path[300], line[256];
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;	/* a thread that just ended */
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				n += strtol(line + 24, NULL, 10);
		fclose(f);
	}
	closedir(d);
	return n;
}

/*
 * Traffic again after the idle second: UD sends, back to back for
 * BURST_MS, whose datagrams our own polls receive (most of them before
 * the progress thread could). Poll mode must start again: with the
 * socket left in the thread's epoll set, each datagram would wake the
 * thread in the kernel only for it to find the socket drained and sleep
 * again, and the thread would never learn that we receive again. In
 * poll mode the thread wakes about once per window. Return: 0, or 1
 * (said why).
 */
static int traffic(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_ah *ah,
		   char *msg, uint32_t len, long burst_ms, long max)
{
	struct ibv_sge sge = { (uintptr_t)msg, len, 0 };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc[NSENDS];
	long w0 = side_switches(), w;
	uint64_t t0 = now_ms(), sent = 0, done = 0;
	int n, i;

	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = DEAD_QPN;
	wr.wr.ud.remote_qkey = QKEY;
	while (now_ms() - t0 < (uint64_t)burst_ms) {
		/* One WR in NSENDS signaled: the polls mostly find the CQ
		 * empty, so they receive (the inline path runs on empty
		 * polls only). */
		if (sent - done * NSENDS < NSENDS) {
			wr.wr_id = sent;
			wr.send_flags = IBV_SEND_INLINE;
			if (sent % NSENDS == NSENDS - 1)
				wr.send_flags |= IBV_SEND_SIGNALED;
			if (ibv_post_send(qp, &wr, &bad))
				die("ibv_post_send");
			sent++;
		}
		n = ibv_poll_cq(cq, NSENDS, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "poll_idle: FAIL: burst send: %s\n",
					ibv_wc_status_str(wc[i].status));
				return 1;
			}
			done++;
		}
	}
	w = side_switches() - w0;
	printf("poll_idle: then %llu sends in %ld ms, %ld wake-ups of other threads\n",
	       (unsigned long long)sent, burst_ms, w);
	if (w > max) {
		fprintf(stderr, "poll_idle: FAIL: softrdma's threads woke %ld times in %ld ms of traffic received by our polls (at most %ld)\n",
			w, burst_ms, max);
		return 1;
	}
	return 0;
}

static int find_gid(struct ibv_context *ctx)
{
	static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr pa;
	union ibv_gid g;
	int i;

	if (ibv_query_port(ctx, 1, &pa))
		die("ibv_query_port");
	for (i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(ctx, 1, i, &g) && !memcmp(g.raw, v4, 12))
			return i;
	errno = ENOENT;
	die("no IPv4-mapped GID on port 1");
	return -1;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_qp_init_attr qia = { 0 };
	struct ibv_qp_attr qa = { 0 };
	struct ibv_ah_attr aha = { 0 };
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	char msg[8] = "gone?";
	const char *steady = getenv("POLL_IDLE_STEADY_MS");
	long max_wakeups = argc > 2 ? atol(argv[2]) : steady ? 1500 : 10;
	long w0 = 0, w;
	uint64_t t0, t, polls = 0;
	int gidx, sent = 0, done = 0;
	bool measuring = false;
	const struct timespec away = { 0, AWAY_US * 1000 };

	/* A poll-mode window longer than our pause after a send: set
	 * before the endpoint opens (it reads it then). */
	if (!steady)
		setenv("SRDMA_NET_POLL_US", POLL_US, 0);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0]) {
		errno = ENODEV;
		die("no device");
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	gidx = argc > 1 ? atoi(argv[1]) : find_gid(ctx);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	if (!cq)
		die("PD or CQ");
	qia.send_cq = qia.recv_cq = cq;
	qia.qp_type = IBV_QPT_UD;
	qia.cap.max_send_wr = NSENDS;
	qia.cap.max_recv_wr = 1;
	qia.cap.max_send_sge = qia.cap.max_recv_sge = 1;
	qia.cap.max_inline_data = sizeof(msg);
	qp = ibv_create_qp(pd, &qia);
	if (!qp)
		die("ibv_create_qp");
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qkey = QKEY;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		die("modify to INIT");
	qa.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE))
		die("modify to RTR");
	qa.qp_state = IBV_QPS_RTS;
	qa.sq_psn = 1;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("modify to RTS");
	aha.is_global = 1;
	aha.port_num = 1;
	aha.grh.sgid_index = (uint8_t)gidx;
	aha.grh.hop_limit = 64;
	if (ibv_query_gid(ctx, 1, gidx, &aha.grh.dgid))
		die("ibv_query_gid");
	ah = ibv_create_ah(pd, &aha);
	if (!ah)
		die("ibv_create_ah");

	if (steady)
		return traffic(qp, cq, ah, msg, sizeof(msg), atol(steady),
			       max_wakeups);
	t0 = now_ms();
	while ((t = now_ms() - t0) < LOOP_MS) {
		if (sent < NSENDS && t >= 50 + 50 * (uint64_t)sent) {
			struct ibv_sge sge = { (uintptr_t)msg, sizeof(msg), 0 };
			struct ibv_send_wr wr = { 0 }, *bad;

			wr.wr_id = (uint64_t)sent;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = DEAD_QPN;
			wr.wr.ud.remote_qkey = QKEY;
			if (ibv_post_send(qp, &wr, &bad))
				die("ibv_post_send");
			sent++;
			/* Away for a moment, still in poll mode: the thread
			 * gets the datagram, not our next poll. */
			nanosleep(&away, NULL);
		}
		if (!measuring && t >= LOOP_MS - MEASURE_MS) {
			w0 = side_switches();
			measuring = true;
		}
		if (ibv_poll_cq(cq, 1, &wc) > 0) {
			if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "poll_idle: FAIL: send %llu: %s\n",
					(unsigned long long)wc.wr_id,
					ibv_wc_status_str(wc.status));
				return 1;
			}
			done++;
		}
		polls++;
	}
	w = side_switches() - w0;
	printf("poll_idle: %d sends (%d completed), %ld wake-ups of other threads in 1 s, %llu polls\n",
	       sent, done, w, (unsigned long long)polls);
	if (done != sent) {
		fprintf(stderr, "poll_idle: FAIL: %d of %d sends completed\n",
			done, sent);
		return 1;
	}
	if (w > max_wakeups) {
		fprintf(stderr, "poll_idle: FAIL: softrdma's threads woke %ld times in 1 s while the application only polled an empty CQ (at most %ld)\n",
			w, max_wakeups);
		return 1;
	}
	/* Poll mode must start again: about one wake-up per window. */
	if (traffic(qp, cq, ah, msg, sizeof(msg), BURST_MS,
		    2 * BURST_MS * 1000 / atol(POLL_US) + 10))
		return 1;
	ibv_destroy_ah(ah);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
