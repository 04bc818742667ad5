// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ranks.c - one "rank" of an all-to-all exchange over RC QPs, as an MPI
 * job's processes do (issue 12, item 3; tests/net/net_ranks.sh).
 *
 * Usage: net_ranks DIR RANK NRANKS [ITERS [SIZE [GID_INDEX]]]
 *
 * Every rank opens one context, one QP to every other rank, and a receive
 * buffer with two slots (double buffering) per peer. The ranks meet
 * through files in DIR, a directory all of them see (the test hosts share
 * the file system): rank r writes DIR/qp.r (its GID, one QPN per peer, its
 * buffer's address and rkey), reads everyone else's, connects, posts its
 * receives, says so (DIR/ready.r) and waits until every rank has: a QP
 * before RTR drops what arrives, so a rank that wrote to a peer still
 * connecting (a loaded machine can take longer than the writer's ~0.5 s
 * of retries) failed with RETRY_EXC_ERR. Then
 * for each iteration i RDMA-WRITEs-with-immediate SIZE bytes to every peer
 * p, into p's slot (r, i % 2), with the immediate i. The bytes are a
 * function of (r, p, i), checked whole by the receiver when the immediate
 * arrives. A rank starts iteration i + 1 only when it has received
 * iteration i from everyone, which keeps a writer from overwriting a slot
 * before its reader checked it (the reader sends i + 1, which the writer
 * waits for, only after checking i). Peers on the same test host go over
 * the host transport, peers on the other over the wire: both at once.
 * At the end DIR/done.r, and every rank waits for all done files before
 * it tears down (a peer's last writes may still wait for our ACKs).
 *
 * Prints "rank R: N peers, I iterations, B bytes checked, T s" and exits
 * 0; on any error or mismatch says what and exits 1. Every wait has a
 * deadline (60 s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXR 64
#define DEADLINE_S 60

static int rank, nranks;

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rank %d: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

struct info {
	union ibv_gid gid;
	uint32_t qpn[MAXR];		/* my QP to rank k */
	uint64_t addr;
	uint32_t rkey;
};

static void put_info(const char *dir, const struct info *in)
{
	char tmp[512], fin[512];
	FILE *f;
	int k;

	snprintf(tmp, sizeof(tmp), "%s/.qp.%d", dir, rank);
	snprintf(fin, sizeof(fin), "%s/qp.%d", dir, rank);
	f = fopen(tmp, "w");
	if (!f)
		die("%s: %s", tmp, strerror(errno));
	for (k = 0; k < 16; k++)
		fprintf(f, "%02x", in->gid.raw[k]);
	fprintf(f, " %" PRIx64 " %x", in->addr, in->rkey);
	for (k = 0; k < nranks; k++)
		fprintf(f, " %x", in->qpn[k]);
	fprintf(f, "\n");
	if (fclose(f) || rename(tmp, fin))
		die("%s: %s", fin, strerror(errno));
}

static void get_info(const char *dir, int r, struct info *in)
{
	char path[512];
	double end = now() + DEADLINE_S;
	FILE *f;
	int k;

	snprintf(path, sizeof(path), "%s/qp.%d", dir, r);
	while (!(f = fopen(path, "r"))) {
		if (now() > end)
			die("no %s after %d s", path, DEADLINE_S);
		usleep(20000);
	}
	for (k = 0; k < 16; k++) {
		unsigned int b;

		if (fscanf(f, "%2x", &b) != 1)
			die("%s: bad GID", path);
		in->gid.raw[k] = (uint8_t)b;
	}
	if (fscanf(f, " %" SCNx64 " %x", &in->addr, &in->rkey) != 2)
		die("%s: bad address", path);
	for (k = 0; k < nranks; k++)
		if (fscanf(f, " %x", &in->qpn[k]) != 1)
			die("%s: bad QPN list", path);
	fclose(f);
}

/* Create DIR/@what.RANK, then wait for every rank's. */
static void barrier(const char *dir, const char *what)
{
	char path[512];
	double end = now() + DEADLINE_S;
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/%s.%d", dir, what, rank);
	f = fopen(path, "w");
	if (!f || fclose(f))
		die("%s: %s", path, strerror(errno));
	for (r = 0; r < nranks; r++) {
		snprintf(path, sizeof(path), "%s/%s.%d", dir, what, r);
		while (access(path, F_OK)) {
			if (now() > end)
				die("rank %d not at '%s' after %d s", r, what,
				    DEADLINE_S);
			usleep(20000);
		}
	}
}

/* The byte at offset @o of the block rank @src writes to @dst at @it. */
static inline uint8_t pat(int src, int dst, uint32_t it, size_t o)
{
	uint32_t x = (uint32_t)o * 2654435761u ^ (uint32_t)src << 24 ^
		     (uint32_t)dst << 16 ^ it * 40503u;

	return (uint8_t)(x ^ x >> 13);
}

int main(int argc, char **argv)
{
	struct ibv_device **devs;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *rmr, *smr;
	struct ibv_qp *qp[MAXR] = { 0 };
	struct info me, peer[MAXR];
	const char *dir;
	uint8_t *rbuf, *sbuf;
	uint32_t iters = 50, got_from[MAXR] = { 0 }, it;
	size_t size = 65536, slot;
	int gidx = 1, k, npeers, outstanding = 0;
	uint64_t checked = 0;
	double t0;

	if (argc < 4) {
		fprintf(stderr, "usage: net_ranks DIR RANK NRANKS [ITERS "
				"[SIZE [GID_INDEX]]]\n");
		return 2;
	}
	dir = argv[1];
	rank = atoi(argv[2]);
	nranks = atoi(argv[3]);
	if (argc > 4)
		iters = (uint32_t)atoi(argv[4]);
	if (argc > 5)
		size = (size_t)atol(argv[5]);
	if (argc > 6)
		gidx = atoi(argv[6]);
	if (nranks < 2 || nranks > MAXR || rank < 0 || rank >= nranks ||
	    !size || !iters)
		die("bad arguments");
	npeers = nranks - 1;
	slot = size;

	devs = ibv_get_device_list(NULL);
	if (!devs || !devs[0])
		die("no RDMA device");
	ctx = ibv_open_device(devs[0]);
	if (!ctx)
		die("ibv_open_device: %s", strerror(errno));
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, npeers * 16, NULL, NULL, 0);
	/* slots: [src rank][parity] */
	rbuf = calloc((size_t)nranks * 2, slot);
	sbuf = malloc((size_t)nranks * size);
	if (!pd || !cq || !rbuf || !sbuf)
		die("setup: %s", strerror(errno));
	rmr = ibv_reg_mr(pd, rbuf, (size_t)nranks * 2 * slot,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	smr = ibv_reg_mr(pd, sbuf, (size_t)nranks * size,
			 IBV_ACCESS_LOCAL_WRITE);
	if (!rmr || !smr)
		die("ibv_reg_mr: %s", strerror(errno));
	if (ibv_query_gid(ctx, 1, gidx, &me.gid))
		die("ibv_query_gid %d: %s", gidx, strerror(errno));
	memset(me.qpn, 0, sizeof(me.qpn));
	for (k = 0; k < nranks; k++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT, .port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
		};

		if (k == rank)
			continue;
		qp[k] = ibv_create_qp(pd, &ia);
		if (!qp[k] || ibv_modify_qp(qp[k], &a, IBV_QP_STATE |
					    IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					    IBV_QP_ACCESS_FLAGS))
			die("QP to %d: %s", k, strerror(errno));
		me.qpn[k] = qp[k]->qp_num;
	}
	me.addr = (uintptr_t)rbuf;
	me.rkey = rmr->rkey;
	put_info(dir, &me);
	for (k = 0; k < nranks; k++) {
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
			.rq_psn = 0, .max_dest_rd_atomic = 1,
			.min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = 1,
				     .grh = { .sgid_index = (uint8_t)gidx,
					      .hop_limit = 64 } },
		};
		int j;

		if (k == rank)
			continue;
		get_info(dir, k, &peer[k]);
		a.ah_attr.grh.dgid = peer[k].gid;
		a.dest_qp_num = peer[k].qpn[rank];
		if (ibv_modify_qp(qp[k], &a, IBV_QP_STATE | IBV_QP_AV |
				  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER))
			die("RTR to %d: %s", k, strerror(errno));
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.sq_psn = 0;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(qp[k], &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
			die("RTS to %d: %s", k, strerror(errno));
		for (j = 0; j < 4; j++) {
			struct ibv_recv_wr wr = { .wr_id = (uint64_t)k },
					   *bad;

			if (ibv_post_recv(qp[k], &wr, &bad))
				die("post_recv: %s", strerror(errno));
		}
	}

	barrier(dir, "ready");
	t0 = now();
	for (it = 0; it < iters; it++) {
		double end = now() + DEADLINE_S;

		for (k = 0; k < nranks; k++) {
			uint8_t *b = sbuf + (size_t)k * size;
			struct ibv_sge sge = { (uintptr_t)b, (uint32_t)size,
					       smr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = (uint64_t)k, .sg_list = &sge,
				.num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				.send_flags = IBV_SEND_SIGNALED,
				.imm_data = htonl(it),
			}, *bad;
			size_t o;

			if (k == rank)
				continue;
			for (o = 0; o < size; o++)
				b[o] = pat(rank, k, it, o);
			wr.wr.rdma.remote_addr = peer[k].addr +
				((size_t)rank * 2 + it % 2) * slot;
			wr.wr.rdma.rkey = peer[k].rkey;
			if (ibv_post_send(qp[k], &wr, &bad))
				die("post_send to %d: %s", k, strerror(errno));
			outstanding++;
		}
		/* Iteration it from everyone, and our writes of it done
		 * (the send buffer is rewritten next round). */
		for (;;) {
			struct ibv_wc wc[16];
			int n, i, all = 1;

			for (k = 0; k < nranks; k++)
				if (k != rank && got_from[k] <= it)
					all = 0;
			if (all && !outstanding)
				break;
			if (now() > end)
				die("iteration %u: stuck after %d s "
				    "(outstanding %d)", it, DEADLINE_S,
				    outstanding);
			n = ibv_poll_cq(cq, 16, wc);
			if (n < 0)
				die("poll_cq");
			for (i = 0; i < n; i++) {
				int src = (int)wc[i].wr_id;
				uint32_t rit;
				const uint8_t *s;
				struct ibv_recv_wr rwr = { .wr_id = wc[i].wr_id },
						   *bad;
				size_t o;

				if (wc[i].status != IBV_WC_SUCCESS)
					die("completion from/to %d: %s", src,
					    ibv_wc_status_str(wc[i].status));
				if (wc[i].opcode == IBV_WC_RDMA_WRITE) {
					outstanding--;
					continue;
				}
				if (wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM)
					die("unexpected opcode %d",
					    wc[i].opcode);
				rit = ntohl(wc[i].imm_data);
				if (rit != got_from[src])
					die("from %d: iteration %u, expected "
					    "%u", src, rit, got_from[src]);
				s = rbuf + ((size_t)src * 2 + rit % 2) * slot;
				for (o = 0; o < size; o++)
					if (s[o] != pat(src, rank, rit, o))
						die("from %d iteration %u: byte "
						    "%zu is %#x, not %#x", src,
						    rit, o, s[o],
						    pat(src, rank, rit, o));
				checked += size;
				got_from[src]++;
				if (ibv_post_recv(qp[src], &rwr, &bad))
					die("post_recv: %s", strerror(errno));
			}
		}
	}
	printf("rank %d: %d peers, %u iterations, %" PRIu64
	       " bytes checked, %.2f s\n", rank, npeers, iters, checked,
	       now() - t0);
	fflush(stdout);
	barrier(dir, "done");
	for (k = 0; k < nranks; k++)
		if (qp[k])
			ibv_destroy_qp(qp[k]);
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(smr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
	return 0;
}
