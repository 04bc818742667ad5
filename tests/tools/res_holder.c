// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * res_holder.c - a process that holds one of every kind of verbs resource,
 * for `srdma status` tests (test_srdma.sh, test_status_net.sh).
 *
 * Local mode (no arguments): two PDs (the second unused), a send CQ (cqe
 * 64) and a receive CQ (cqe 16, on a completion channel), an SRQ (max_wr
 * 32) with SRQ_POSTED receives posted, an RC pair connected to each other
 * (A's receives come from the SRQ), a UC pair, a UD QP. A then sends
 * NSEND signaled SENDs to B and nothing is polled, so the send CQ holds
 * NSEND entries, the receive CQ NSEND, and the SRQ SRQ_POSTED - NSEND
 * receives.
 *
 * Net mode, between two hosts (tests/net/hosts.sh):
 *   res_holder server PORT [GID_INDEX]
 *   res_holder client ADDR PORT [GID_INDEX]
 * Each side makes one RC QP; they trade QPN, PSN and GID over TCP, connect
 * (RoCE, GID index default 0), and the client SENDs NSEND messages of
 * MSG_LEN bytes, which the server receives; both poll every completion.
 *
 * Then either prints its objects, one per line, and "ready", and holds
 * them until stdin reaches EOF (or SIGTERM/SIGINT), then frees everything:
 *   pid <pid>
 *   pd <handle> [unused]
 *   cq <send|recv> cqe <cqe> fill <n>
 *   srq depth <max_wr> posted <n>
 *   qp <rc|uc|ud> qpn 0x<qpn> dest 0x<dest qpn> sq_psn 0x<psn> rq_psn 0x<psn>
 *   ready
 * (net mode also says "listening", "tcp connected" and "rts" as it gets
 * there; stdout is line-buffered, so a test sees how far it came).
 * Uses only the public verbs API, exactly as an application does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define NSEND	   3
#define SRQ_POSTED 5
#define MSG_LEN	   1000
#define NET_MSGS   20

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "res_holder: %s: %s\n", what, strerror(errno));
	exit(1);
}

static struct ibv_context *ctx;
static struct ibv_pd *pd, *pd2;
static struct ibv_cq *scq, *rcq;
static struct ibv_comp_channel *chan;
static struct ibv_srq *srq;
static struct ibv_mr *mr;
static char *buf;
static union ibv_gid my_gid;
static int gid_index = -1; /* -1: no GRH (InfiniBand, local mode) */

static struct ibv_qp *make_qp(enum ibv_qp_type type, bool use_srq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = scq,
		.recv_cq = rcq,
		.srq = use_srq ? srq : NULL,
		.qp_type = type,
		.cap = {.max_send_wr = 32,
			.max_recv_wr = 32,
			.max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp");
	return qp;
}

static void to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags =
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		.qkey = 0x11111111,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	if (qp->qp_type == IBV_QPT_UC)
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, mask))
		die("modify to INIT");
}

/* RESET -> RTS toward @dqpn at @dlid / @dgid, with PSNs @sq_psn/@rq_psn. */
static void connect_qp(struct ibv_qp *qp, uint32_t dqpn, uint16_t dlid,
		       const union ibv_gid *dgid, uint32_t sq_psn,
		       uint32_t rq_psn)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR};
	int mask = IBV_QP_STATE;

	to_init(qp);
	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = rq_psn;
		a.ah_attr.dlid = dlid;
		a.ah_attr.port_num = 1;
		if (gid_index >= 0) {
			a.ah_attr.is_global = 1;
			a.ah_attr.grh.dgid = *dgid;
			a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
			a.ah_attr.grh.hop_limit = 64;
		}
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 1;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
	}
	if (ibv_modify_qp(qp, &a, mask))
		die("modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp, &a, mask))
		die("modify to RTS");
}

static void post_recv(struct ibv_qp *qp, uint64_t id)
{
	struct ibv_sge sge = {(uintptr_t)buf + 4096, MSG_LEN, mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;

	if (qp ? ibv_post_recv(qp, &wr, &bad)
	       : ibv_post_srq_recv(srq, &wr, &bad))
		die("post receive");
}

static void post_send(struct ibv_qp *qp, uint64_t id, uint32_t len)
{
	struct ibv_sge sge = {(uintptr_t)buf, len, mr->lkey};
	struct ibv_send_wr wr = {
		.wr_id = id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	if (ibv_post_send(qp, &wr, &bad))
		die("post send");
}

/* Poll @cq until @n successful completions arrived (30 s at most). */
static void poll_n(struct ibv_cq *cq, int n)
{
	struct ibv_wc wc;
	int got = 0, tries = 0;

	while (got < n) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r < 0)
			die("ibv_poll_cq");
		if (r == 0) {
			if (++tries > 300000) {
				fprintf(stderr, "res_holder: timeout\n");
				exit(1);
			}
			usleep(100);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "res_holder: completion %s\n",
				ibv_wc_status_str(wc.status));
			exit(1);
		}
		got++;
	}
}

static void print_qp(const char *kind, struct ibv_qp *qp, uint32_t dqpn,
		     uint32_t sq_psn, uint32_t rq_psn)
{
	printf("qp %s qpn %#x dest %#x sq_psn 0x%06x rq_psn 0x%06x\n", kind,
	       qp->qp_num, dqpn, sq_psn, rq_psn);
}

/* Trade (QPN, PSN, GID) with the peer over the TCP socket @fd. */
struct wire_info {
	uint32_t qpn, psn;
	uint8_t gid[16];
};

static void trade(int fd, struct wire_info *mine, struct wire_info *theirs)
{
	if (write(fd, mine, sizeof(*mine)) != (ssize_t)sizeof(*mine) ||
	    recv(fd, theirs, sizeof(*theirs), MSG_WAITALL) !=
		    (ssize_t)sizeof(*theirs))
		die("exchange");
}

static int tcp_connect(const char *host, const char *port, bool server)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = server ? AI_PASSIVE : 0};
	struct addrinfo *ai;
	int fd, one = 1, tries;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo");
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	if (server) {
		int c;

		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1))
			die("bind");
		printf("listening\n");
		fflush(stdout);
		c = accept(fd, NULL, NULL);
		if (c < 0)
			die("accept");
		close(fd);
		fd = c;
	} else {
		for (tries = 0; connect(fd, ai->ai_addr, ai->ai_addrlen);
		     tries++) {
			if (tries > 100)
				die("connect");
			usleep(100000);
		}
	}
	freeaddrinfo(ai);
	return fd;
}

int main(int argc, char **argv)
{
	struct ibv_qp *a = NULL, *b = NULL, *uc1 = NULL, *uc2 = NULL,
		      *ud = NULL;
	struct ibv_device **list;
	struct ibv_port_attr port;
	struct sigaction sa;
	bool net = argc > 1;
	bool server = net && !strcmp(argv[1], "server");
	int i, ret = 0, fd = -1;
	char c;

	setvbuf(stdout, NULL, _IOLBF, 0); /* a test reads it as it comes */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (net &&
	    !(server ? argc >= 3 : argc >= 4 && !strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: res_holder [server PORT [GID_INDEX] | "
				"client ADDR PORT [GID_INDEX]]\n");
		return 2;
	}

	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no device");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	if (ibv_query_port(ctx, 1, &port))
		die("ibv_query_port");
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	chan = ibv_create_comp_channel(ctx);
	scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	/* Net mode: room for every message, as on hardware an application
	 * that may fall behind needs (a descheduled server let the thread
	 * complete all 20 into 16 entries: overflow, and it waited for the
	 * lost ones forever). */
	rcq = ibv_create_cq(ctx, net ? 2 * NET_MSGS : 16, NULL, chan, 0);
	if (!pd || !pd2 || !chan || !scq || !rcq)
		die("PD, channel or CQ");
	if (posix_memalign((void **)&buf, 4096, 8192))
		die("posix_memalign");
	memset(buf, 0x5a, 8192);
	mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	printf("pid %d\n", (int)getpid());
	printf("pd %u\n", pd->handle);
	printf("pd %u unused\n", pd2->handle);

	if (!net) {
		struct ibv_srq_init_attr sa_ = {
			.attr = {.max_wr = 32, .max_sge = 1}};

		srq = ibv_create_srq(pd, &sa_);
		if (!srq)
			die("ibv_create_srq");
		for (i = 0; i < SRQ_POSTED; i++)
			post_recv(NULL, 100 + i);
		a = make_qp(IBV_QPT_RC, false);
		b = make_qp(IBV_QPT_RC, true);
		uc1 = make_qp(IBV_QPT_UC, false);
		uc2 = make_qp(IBV_QPT_UC, false);
		ud = make_qp(IBV_QPT_UD, false);
		connect_qp(a, b->qp_num, port.lid, NULL, 0x111111, 0x222222);
		connect_qp(b, a->qp_num, port.lid, NULL, 0x222222, 0x111111);
		connect_qp(uc1, uc2->qp_num, port.lid, NULL, 0x333, 0x444);
		connect_qp(uc2, uc1->qp_num, port.lid, NULL, 0x444, 0x333);
		connect_qp(ud, 0, 0, NULL, 0x555, 0);
		post_recv(a, 1);
		for (i = 0; i < NSEND; i++)
			post_send(a, 10 + i, 64);
		/* Nothing is polled: the CQs keep what arrived. */
		printf("cq send cqe 64 fill %d\n", NSEND);
		printf("cq recv cqe 16 fill %d\n", NSEND);
		printf("srq depth 32 posted %d\n", SRQ_POSTED - NSEND);
		print_qp("rc", a, b->qp_num, 0x111111, 0x222222);
		print_qp("rc", b, a->qp_num, 0x222222, 0x111111);
		print_qp("uc", uc1, uc2->qp_num, 0x333, 0x444);
		print_qp("uc", uc2, uc1->qp_num, 0x444, 0x333);
		print_qp("ud", ud, 0, 0x555, 0);
	} else {
		struct wire_info mine = {0}, theirs;
		const char *gi = argv[server ? 3 : 4];

		gid_index = gi ? atoi(gi) : 0;
		if (ibv_query_gid(ctx, 1, gid_index, &my_gid))
			die("ibv_query_gid");
		a = make_qp(IBV_QPT_RC, false);
		mine.qpn = a->qp_num;
		mine.psn = server ? 0x100000 : 0x200000;
		memcpy(mine.gid, my_gid.raw, 16);
		fd = server ? tcp_connect(NULL, argv[2], true)
			    : tcp_connect(argv[2], argv[3], false);
		printf("tcp connected\n");
		trade(fd, &mine, &theirs);
		{
			union ibv_gid g;

			memcpy(g.raw, theirs.gid, 16);
			connect_qp(a, theirs.qpn, 0, &g, mine.psn, theirs.psn);
		}
		if (server)
			for (i = 0; i < NET_MSGS; i++)
				post_recv(a, i);
		/* Both are at RTS, the server's receives are posted. */
		trade(fd, &mine, &theirs);
		printf("rts\n");
		if (server) {
			poll_n(rcq, NET_MSGS);
		} else {
			for (i = 0; i < NET_MSGS; i++) {
				post_send(a, i, MSG_LEN);
				poll_n(scq, 1);
			}
		}
		trade(fd, &mine, &theirs); /* both done */
		print_qp("rc", a, theirs.qpn, mine.psn, theirs.psn);
		printf("sent %d x %d B\n", server ? 0 : NET_MSGS, MSG_LEN);
	}
	printf("ready\n");
	fflush(stdout);

	while (!stop) {
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	if (fd >= 0)
		close(fd);
	if (a && ibv_destroy_qp(a))
		ret = 1;
	if (b && ibv_destroy_qp(b))
		ret = 1;
	if (uc1 && (ibv_destroy_qp(uc1) || ibv_destroy_qp(uc2)))
		ret = 1;
	if (ud && ibv_destroy_qp(ud))
		ret = 1;
	if (srq && ibv_destroy_srq(srq))
		ret = 1;
	if (ibv_destroy_cq(scq) || ibv_destroy_cq(rcq) ||
	    ibv_destroy_comp_channel(chan) || ibv_dereg_mr(mr) ||
	    ibv_dealloc_pd(pd2) || ibv_dealloc_pd(pd))
		ret = 1;
	if (ibv_close_device(ctx))
		ret = 1;
	ibv_free_device_list(list);
	free(buf);
	return ret;
}
