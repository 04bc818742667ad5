// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cm_fail_peer.c - an rdma_cm pair that reports what a host failure does
 * to it (issue 12 item 6; run by tests/net/net_cm_fail.sh).
 *
 *   cm_fail_peer server PORT
 *	Serves connections one after the other, for ever: each gets a QP
 *	and a 64 KiB buffer whose address and rkey go back in the accept's
 *	private data. Prints "server: established" and, when a connection
 *	ends, "server: <EVENT> status <S> at <T>", then serves the next.
 *
 *   cm_fail_peer client ADDR PORT ROUNDS
 *	ROUNDS times: connects (again and again for up to 30 s, since the
 *	server may be on its way back), then keeps 16 RDMA WRITEs of 4 KiB
 *	in flight. The first round prints "client: writing" after 200
 *	completions and goes on until a completion fails: it prints
 *	"client: wc status <S> (<name>) at <T>", then the CM event that
 *	follows, "client: cm <EVENT> status <S> at <T>" (30 s at most),
 *	then "client: holding" and waits for a line on stdin, so that the
 *	test can look at `srdma status` while the QP is still there. It
 *	then disconnects and destroys the connection. The last round
 *	writes 500 messages and prints "client: round ok"; it is the
 *	reconnection after the failure.
 *
 *   cm_fail_peer client-dreq ADDR PORT
 *	Connects, prints "client: connected", waits for a line on stdin
 *	(the test stops the server with SIGSTOP meanwhile: its kernel
 *	still answers TCP, its CM never answers the DREQ), calls
 *	rdma_disconnect and prints "client: cm <EVENT> status <S> after
 *	<D> ms" for the event that ends the connection (30 s at most).
 *
 * <T> is CLOCK_REALTIME in milliseconds, comparable with `date +%s%3N`
 * of the test script. Exit 0 when every round did what it says, 1 with a
 * "client: FAIL ..." line otherwise. Connection parameters are
 * librdmacm's defaults as rping uses them (ACK timeout 14, retry count
 * 7), so the failure takes the retry budget the CM sets.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define BUF_SIZE (64 * 1024)
#define MSG_SIZE 4096
#define DEPTH	 16

struct peer_info {
	uint64_t addr; /* big-endian */
	uint32_t rkey; /* big-endian */
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The next CM event on @ch within @ms, or NULL (timeout, error). */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1)
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

static int serve(const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rdma_cm_id *lid, *cid = NULL;
	struct ibv_mr *mr = NULL;
	struct rdma_cm_event *ev;
	void *buf = calloc(1, BUF_SIZE);

	sin.sin_port = htons((uint16_t)atoi(port));
	if (!ch || !buf || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&sin) ||
	    rdma_listen(lid, 8)) {
		perror("server: listen");
		return 1;
	}
	printf("server: listening\n");
	fflush(stdout);
	for (;;) {
		if (rdma_get_cm_event(ch, &ev)) {
			perror("server: rdma_get_cm_event");
			return 1;
		}
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST: {
			struct ibv_qp_init_attr qa = {
				.qp_type = IBV_QPT_RC,
				.cap = {.max_send_wr = 4, .max_recv_wr = 4,
					.max_send_sge = 1, .max_recv_sge = 1},
			};
			struct rdma_conn_param cp = {
				.responder_resources = 1,
				.initiator_depth = 1,
				.retry_count = 7,
				.rnr_retry_count = 7,
			};
			struct peer_info pi;
			struct rdma_cm_id *id = ev->id;

			if (cid) {
				/* One at a time. */
				rdma_reject(id, NULL, 0);
				break;
			}
			if (rdma_create_qp(id, NULL, &qa)) {
				perror("server: rdma_create_qp");
				rdma_reject(id, NULL, 0);
				break;
			}
			mr = ibv_reg_mr(id->pd, buf, BUF_SIZE,
					IBV_ACCESS_LOCAL_WRITE |
						IBV_ACCESS_REMOTE_WRITE);
			if (!mr) {
				perror("server: ibv_reg_mr");
				rdma_destroy_qp(id);
				rdma_reject(id, NULL, 0);
				break;
			}
			pi.addr = htobe64((uintptr_t)buf);
			pi.rkey = htobe32(mr->rkey);
			cp.private_data = &pi;
			cp.private_data_len = sizeof(pi);
			if (rdma_accept(id, &cp)) {
				perror("server: rdma_accept");
				ibv_dereg_mr(mr);
				rdma_destroy_qp(id);
				break;
			}
			cid = id;
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			printf("server: established\n");
			fflush(stdout);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_REJECTED:
			printf("server: %s status %d at %lld\n",
			       rdma_event_str(ev->event), ev->status, now_ms());
			fflush(stdout);
			if (ev->id == cid) {
				struct rdma_cm_id *id = cid;

				cid = NULL;
				rdma_ack_cm_event(ev);
				rdma_disconnect(id);
				rdma_destroy_qp(id);
				ibv_dereg_mr(mr);
				mr = NULL;
				rdma_destroy_id(id);
				continue;
			}
			break;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
	}
}

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct peer_info peer;
	char *buf;
};

static void conn_close(struct conn *c)
{
	if (c->id) {
		rdma_disconnect(c->id);
		if (c->id->qp)
			rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
	}
	if (c->mr)
		ibv_dereg_mr(c->mr);
	c->id = NULL;
	c->mr = NULL;
}

/* One connection attempt. Return 0 connected, -1 failed (try again). */
static int conn_open(struct conn *c, struct addrinfo *ai)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = {.max_send_wr = DEPTH, .max_recv_wr = 1,
			.max_send_sge = 1, .max_recv_sge = 1},
	};
	struct rdma_conn_param cp = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type want[] = {RDMA_CM_EVENT_ADDR_RESOLVED,
					  RDMA_CM_EVENT_ROUTE_RESOLVED};
	int i;

	if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(c->id, NULL, ai->ai_addr, 2000))
		goto fail;
	for (i = 0; i < 2; i++) {
		ev = next_event(c->ch, 5000);
		if (!ev)
			goto fail;
		if (ev->event != want[i]) {
			rdma_ack_cm_event(ev);
			goto fail;
		}
		rdma_ack_cm_event(ev);
		if (i == 0 && rdma_resolve_route(c->id, 2000))
			goto fail;
	}
	if (rdma_create_qp(c->id, NULL, &qa))
		goto fail;
	c->mr = ibv_reg_mr(c->id->pd, c->buf, MSG_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr || rdma_connect(c->id, &cp))
		goto fail;
	ev = next_event(c->ch, 30000);
	if (!ev)
		goto fail;
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED ||
	    ev->param.conn.private_data_len < sizeof(c->peer)) {
		printf("client: connect: %s status %d\n",
		       rdma_event_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
		goto fail;
	}
	memcpy(&c->peer, ev->param.conn.private_data, sizeof(c->peer));
	rdma_ack_cm_event(ev);
	return 0;
fail:
	conn_close(c);
	return -1;
}

static int post_write(struct conn *c, unsigned int n)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->buf,
		.length = MSG_SIZE,
		.lkey = c->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = n,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = {
			.remote_addr = be64toh(c->peer.addr) +
				       (n % (BUF_SIZE / MSG_SIZE)) * MSG_SIZE,
			.rkey = be32toh(c->peer.rkey),
		},
	}, *bad;

	return ibv_post_send(c->id->qp, &wr, &bad);
}

/*
 * Keep DEPTH writes in flight until @count completed (0: until one
 * fails). Return 0 when @count completed, else the failed status + 1000
 * (after printing it), or -1 on a local error.
 */
static int write_loop(struct conn *c, unsigned long count, bool announce)
{
	unsigned long posted = 0, done = 0;
	struct ibv_wc wc;
	int n;

	while (!count || done < count) {
		while (posted - done < DEPTH && (!count || posted < count)) {
			if (post_write(c, (unsigned int)posted)) {
				printf("client: FAIL ibv_post_send\n");
				return -1;
			}
			posted++;
		}
		n = ibv_poll_cq(c->id->send_cq, 1, &wc);
		if (n < 0) {
			printf("client: FAIL ibv_poll_cq\n");
			return -1;
		}
		if (!n)
			continue;
		if (wc.status != IBV_WC_SUCCESS) {
			printf("client: wc status %d (%s) at %lld after %lu "
			       "writes\n",
			       wc.status, ibv_wc_status_str(wc.status),
			       now_ms(), done);
			fflush(stdout);
			return 1000 + wc.status;
		}
		if (++done == 200 && announce) {
			printf("client: writing\n");
			fflush(stdout);
		}
	}
	return 0;
}

static int client(const char *addr, const char *port, int rounds)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	struct conn c = {0};
	struct rdma_cm_event *ev;
	char line[64];
	long long until;
	int r, ret;

	if (getaddrinfo(addr, port, &hints, &ai)) {
		printf("client: FAIL cannot resolve %s\n", addr);
		return 1;
	}
	c.ch = rdma_create_event_channel();
	c.buf = calloc(1, MSG_SIZE);
	if (!c.ch || !c.buf)
		return 1;
	for (r = 1; r <= rounds; r++) {
		until = now_ms() + 30000;
		while (conn_open(&c, ai)) {
			if (now_ms() > until) {
				printf("client: FAIL round %d: no connection "
				       "in 30 s\n", r);
				return 1;
			}
			usleep(200000);
		}
		printf("client: round %d connected\n", r);
		fflush(stdout);
		if (r == rounds) {
			ret = write_loop(&c, 500, false);
			if (ret) {
				printf("client: FAIL last round: %d\n", ret);
				return 1;
			}
			printf("client: round ok\n");
			conn_close(&c);
			break;
		}
		ret = write_loop(&c, 0, true);
		if (ret < 1000)
			return 1;
		ev = next_event(c.ch, 30000);
		if (!ev) {
			printf("client: FAIL no CM event within 30 s of the "
			       "failed completion\n");
			return 1;
		}
		printf("client: cm %s status %d at %lld\n",
		       rdma_event_str(ev->event), ev->status, now_ms());
		rdma_ack_cm_event(ev);
		printf("client: holding\n");
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin)) {
			printf("client: FAIL stdin closed\n");
			return 1;
		}
		conn_close(&c);
	}
	freeaddrinfo(ai);
	return 0;
}

/*
 * client-dreq: connect, wait for a line on stdin (the test stops the
 * server meanwhile), rdma_disconnect, and report the event that ends it.
 */
static int client_dreq(const char *addr, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	struct conn c = {0};
	struct rdma_cm_event *ev;
	char line[64];
	long long t0;

	if (getaddrinfo(addr, port, &hints, &ai))
		return 1;
	c.ch = rdma_create_event_channel();
	c.buf = calloc(1, MSG_SIZE);
	if (!c.ch || !c.buf || conn_open(&c, ai)) {
		printf("client: FAIL connect\n");
		return 1;
	}
	printf("client: connected\n");
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	t0 = now_ms();
	if (rdma_disconnect(c.id)) {
		printf("client: FAIL rdma_disconnect\n");
		return 1;
	}
	ev = next_event(c.ch, 30000);
	if (!ev) {
		printf("client: FAIL no CM event within 30 s of "
		       "rdma_disconnect\n");
		return 1;
	}
	printf("client: cm %s status %d after %lld ms\n",
	       rdma_event_str(ev->event), ev->status, now_ms() - t0);
	rdma_ack_cm_event(ev);
	conn_close(&c);
	freeaddrinfo(ai);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "server"))
		return serve(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], atoi(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "client-dreq"))
		return client_dreq(argv[2], argv[3]);
	fprintf(stderr,
		"usage: %s server PORT | client ADDR PORT ROUNDS | "
		"client-dreq ADDR PORT\n",
		argv[0]);
	return 2;
}
