// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * write_demo.c - two processes, one RDMA WRITE: the smallest complete
 * RDMA program, written as any program for RDMA hardware would be (it
 * links librdmacm and libibverbs and nothing else). Run it through
 * `srdma run`, the server first:
 *
 *   build/bin/srdma run -- build/bin/srdma-write-demo             # server
 *   build/bin/srdma run -- build/bin/srdma-write-demo 127.0.0.1   # client
 *
 * The client registers a buffer for remote writing and sends its address
 * and key to the server in a SEND. The server writes a message straight
 * into that buffer with an RDMA WRITE (the client's CPU takes no part),
 * then SENDs "done". The client prints what it finds in its buffer and
 * checks it. Connection set-up is rdma_cm's (the same calls as on
 * InfiniBand or RoCE hardware): an address and a TCP-like port.
 *
 * Options: -p PORT (default 18516), -a ADDRESS (server: the address to
 * listen on, default 0.0.0.0). Exit 0 when the message arrived intact.
 * Between two hosts: SRDMA_LINK_LAYER=eth on both, the client given the
 * server's IP address.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define BUF_SIZE 4096

static const char message[] =
	"Hello! The server wrote this into the client's memory by RDMA WRITE.";

/* What the client tells the server: where it may write. */
struct target {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static int fail(const char *who, const char *what)
{
	perror(what);
	fprintf(stderr, "%s: failed\n", who);
	return 1;
}

/* One completion of @id's send (@send) or receive queue; 0 if it succeeded. */
static int complete(struct rdma_cm_id *id, int send, const char *what)
{
	struct ibv_wc wc;
	int n;

	n = send ? rdma_get_send_comp(id, &wc) : rdma_get_recv_comp(id, &wc);
	if (n <= 0) {
		perror(what);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s: completion status %s\n", what,
			ibv_wc_status_str(wc.status));
		return -1;
	}
	return 0;
}

static int server(const char *addr, const char *port)
{
	struct rdma_addrinfo hints = {0}, *res;
	struct ibv_qp_init_attr attr = {0};
	struct rdma_cm_id *listen_id, *id;
	struct ibv_mr *tmr, *mmr, *dmr;
	static char src[sizeof(message)];
	struct target t;
	uint32_t done = 1;

	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		return fail("server", "rdma_getaddrinfo");
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	if (rdma_create_ep(&listen_id, res, NULL, &attr))
		return fail("server", "rdma_create_ep");
	rdma_freeaddrinfo(res);
	if (rdma_listen(listen_id, 1))
		return fail("server", "rdma_listen");
	printf("server: listening on %s port %s\n", addr, port);
	fflush(stdout);
	if (rdma_get_request(listen_id, &id))
		return fail("server", "rdma_get_request");

	/* Before accepting: a receive for the client's first SEND. */
	memcpy(src, message, sizeof(message));
	tmr = rdma_reg_msgs(id, &t, sizeof(t));
	mmr = rdma_reg_msgs(id, src, sizeof(src));
	dmr = rdma_reg_msgs(id, &done, sizeof(done));
	if (!tmr || !mmr || !dmr)
		return fail("server", "rdma_reg_msgs");
	if (rdma_post_recv(id, NULL, &t, sizeof(t), tmr))
		return fail("server", "rdma_post_recv");
	if (rdma_accept(id, NULL))
		return fail("server", "rdma_accept");
	if (complete(id, 0, "receive the client's buffer"))
		return fail("server", "receive");
	printf("server: the client's buffer: addr 0x%" PRIx64
	       " rkey 0x%x, %u bytes\n", t.addr, t.rkey, t.len);
	if (t.len < sizeof(message)) {
		fprintf(stderr, "server: the client's buffer is too small\n");
		return 1;
	}

	/* The RDMA WRITE: our bytes into the client's memory. */
	if (rdma_post_write(id, NULL, src, sizeof(src), mmr, 0, t.addr,
			    t.rkey))
		return fail("server", "rdma_post_write");
	if (complete(id, 1, "RDMA WRITE"))
		return fail("server", "RDMA WRITE");
	printf("server: RDMA WRITE of %zu bytes: done\n", sizeof(src));
	if (rdma_post_send(id, NULL, &done, sizeof(done), dmr, 0))
		return fail("server", "rdma_post_send");
	if (complete(id, 1, "send done"))
		return fail("server", "send");

	rdma_disconnect(id);
	rdma_dereg_mr(dmr);
	rdma_dereg_mr(mmr);
	rdma_dereg_mr(tmr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen_id);
	printf("server: ok\n");
	return 0;
}

static int client(const char *addr, const char *port)
{
	struct rdma_addrinfo hints = {0}, *res;
	struct ibv_qp_init_attr attr = {0};
	struct ibv_mr *bmr, *tmr, *dmr;
	struct rdma_cm_id *id;
	struct target t;
	uint32_t done = 0;
	char *buf;

	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		return fail("client", "rdma_getaddrinfo");
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	if (rdma_create_ep(&id, res, NULL, &attr))
		return fail("client", "rdma_create_ep");
	rdma_freeaddrinfo(res);

	/* The buffer the server may write: remote write access. */
	buf = calloc(1, BUF_SIZE);
	if (!buf)
		return fail("client", "calloc");
	bmr = rdma_reg_write(id, buf, BUF_SIZE);
	tmr = rdma_reg_msgs(id, &t, sizeof(t));
	dmr = rdma_reg_msgs(id, &done, sizeof(done));
	if (!bmr || !tmr || !dmr)
		return fail("client", "rdma_reg_write/rdma_reg_msgs");
	if (rdma_post_recv(id, NULL, &done, sizeof(done), dmr))
		return fail("client", "rdma_post_recv");
	if (rdma_connect(id, NULL))
		return fail("client", "rdma_connect");
	t.addr = (uintptr_t)buf;
	t.rkey = bmr->rkey;
	t.len = BUF_SIZE;
	printf("client: connected to %s port %s; my buffer: addr %p rkey "
	       "0x%x\n", addr, port, (void *)buf, bmr->rkey);
	if (rdma_post_send(id, NULL, &t, sizeof(t), tmr, 0))
		return fail("client", "rdma_post_send");
	if (complete(id, 1, "send the buffer"))
		return fail("client", "send");
	if (complete(id, 0, "receive done"))
		return fail("client", "receive");

	printf("client: my buffer now holds: \"%s\"\n", buf);
	if (strcmp(buf, message)) {
		fprintf(stderr, "client: not the server's message\n");
		return 1;
	}
	rdma_disconnect(id);
	rdma_dereg_mr(dmr);
	rdma_dereg_mr(tmr);
	rdma_dereg_mr(bmr);
	rdma_destroy_ep(id);
	free(buf);
	printf("client: ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *port = "18516", *addr = "0.0.0.0";
	int c;

	while ((c = getopt(argc, argv, "p:a:h")) != -1) {
		switch (c) {
		case 'p':
			port = optarg;
			break;
		case 'a':
			addr = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-p PORT] [-a LISTEN_ADDRESS]"
				"            (server)\n"
				"       %s [-p PORT] SERVER_ADDRESS"
				"                (client)\n",
				argv[0], argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind < argc)
		return client(argv[optind], port);
	return server(addr, port);
}
