// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * udp_pingpong.c - the kernel's own floor under softrdma's net latency: an
 * 8-byte UDP ping-pong between two test hosts in which both sides
 * busy-poll, as a verbs application polls its CQ (issue 10, "Speed").
 *
 * A blocking receive (qperf's udp_lat) sleeps in the kernel and is woken
 * by the softirq that delivered the datagram, often on the other core: on
 * these VMs that wake-up costs tens of microseconds and dominates the
 * figure. Here each side spins on a non-blocking recv() (MSG_DONTWAIT)
 * instead, so the figure is the cost of the UDP/IP stack and the veth,
 * which is what our transport pays when poll_cq drives progress inline.
 *
 *   udp_pingpong -s [-p PORT] [-6]                  server: echo datagrams
 *   udp_pingpong -c ADDR [-p PORT] [-n ITERS] [-m SIZE] [-w WARMUP]
 *                                                   client: measure
 *
 * The client sends SIZE (default 8) bytes, spins until the echo comes
 * back, WARMUP times (default 1000, not timed), then ITERS times (default
 * 100000), each round trip timed with CLOCK_MONOTONIC; it then sends one
 * empty datagram, which ends the server. Prints, one way = round trip / 2
 * (as perftest's ib_write_lat and ib_send_lat report t_min and t_typical:
 * the time between two posts of one side, halved),
 *   udp_pingpong avg_us=<mean> min_us=<min> lost=<resent pings>
 *   udp_pingpong size=8 median_us=<median> p90_us=<p90> n=<ITERS>
 * A datagram lost on the way would hang a ping-pong: a round trip not
 * back after 1 s is sent again (counted and printed as lost=<n>; on a
 * veth there are none). Both sides give up after BENCH_SPIN_LIMIT_NS
 * without traffic (the server waits 60 s for its first datagram).
 *
 * Is this the floor? Checked on the build machine (2 vCPUs, kernel 6.18,
 * two test hosts, 2026-11-24, load average 7-9): a minimal program with
 * the same calls gives the same figure (4.20-4.34 us one way); pinning
 * client and server to different CPUs changes nothing (4.28 / 4.32
 * unpinned); a server that connect()s to its client (a cached route)
 * gives 3.83-3.91; a blocking recv() gives 22-24 (the cross-CPU wake-up),
 * 5.6-6.0 when both share one CPU. The send() of 8 bytes alone takes
 * 3.6 us of it (the veth runs the receiver's softirq in the sender's
 * system call), 2.25 us at least even to a socket on loopback: the
 * kernel's path is that slow on these VMs (every return through the
 * SRSO "safe RET" thunk, retpolines), not the program.
 *
 * Exit: 0, 1 on error (message printed), 2 usage.
 */
#include "bench_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_PORT  18790
#define MAX_SIZE      1472
#define RESEND_NS     (1000ULL * 1000 * 1000)
#define FIRST_WAIT_NS (60ULL * 1000 * 1000 * 1000)	/* for the client */

struct opts {
	bool server;
	const char *addr;
	const char *port;
	bool v6;
	unsigned int iters, warmup;
	size_t size;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: udp_pingpong -s [-p PORT] [-6]\n"
		"       udp_pingpong -c ADDR [-p PORT] [-n ITERS] [-m SIZE] "
		"[-w WARMUP]\n");
	exit(2);
}

static unsigned long num(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max)
		usage();
	return v;
}

/* A UDP socket bound (server) or connected (client) per @o. */
static int open_socket(const struct opts *o)
{
	struct addrinfo hints, *ai, *p;
	int fd = -1, r, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_DGRAM;
	if (o->server) {
		hints.ai_flags = AI_PASSIVE;
		hints.ai_family = o->v6 ? AF_INET6 : AF_INET;
	}
	r = getaddrinfo(o->server ? NULL : o->addr, o->port, &hints, &ai);
	if (r) {
		fprintf(stderr, "udp_pingpong: %s: %s\n",
			o->server ? "bind address" : o->addr, gai_strerror(r));
		return -1;
	}
	for (p = ai; p; p = p->ai_next) {
		fd = socket(p->ai_family, p->ai_socktype, p->ai_protocol);
		if (fd < 0)
			continue;
		if (o->server) {
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
				   sizeof(one));
			if (!bind(fd, p->ai_addr, p->ai_addrlen))
				break;
		} else if (!connect(fd, p->ai_addr, p->ai_addrlen)) {
			break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		perror("udp_pingpong: socket");
	return fd;
}

/*
 * Spin on a non-blocking receive until a datagram arrives or @limit_ns
 * passes. Return: its length, -2 on timeout, -1 on error (printed).
 */
static ssize_t spin_recv(int fd, void *buf, size_t len,
			 struct sockaddr_storage *from, socklen_t *flen,
			 uint64_t limit_ns)
{
	uint64_t start = bench_now_ns();
	unsigned int n = 0;
	ssize_t r;

	for (;;) {
		if (from)
			*flen = sizeof(*from);
		r = recvfrom(fd, buf, len, MSG_DONTWAIT,
			     (struct sockaddr *)from, from ? flen : NULL);
		if (r >= 0)
			return r;
		if (errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR && errno != ECONNREFUSED) {
			perror("udp_pingpong: recv");
			return -1;
		}
		/* The clock only now and then: it costs more than recv. */
		if (++n % 4096 == 0 && bench_now_ns() - start > limit_ns)
			return -2;
	}
}

static int serve(const struct opts *o)
{
	char buf[MAX_SIZE];
	struct sockaddr_storage from;
	socklen_t flen;
	unsigned long n = 0;
	ssize_t r;
	int fd;

	fd = open_socket(o);
	if (fd < 0)
		return 1;
	printf("udp_pingpong: server on port %s\n", o->port);
	fflush(stdout);
	for (;;) {
		r = spin_recv(fd, buf, sizeof(buf), &from, &flen,
			      n ? BENCH_SPIN_LIMIT_NS : FIRST_WAIT_NS);
		if (r == -2) {
			fprintf(stderr, "udp_pingpong: server: no datagram, "
				"giving up\n");
			close(fd);
			return 1;
		}
		if (r < 0) {
			close(fd);
			return 1;
		}
		if (r == 0)
			break;		/* the client's end marker */
		if (sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&from,
			   flen) != r) {
			perror("udp_pingpong: server: send");
			close(fd);
			return 1;
		}
		n++;
	}
	printf("udp_pingpong: server echoed %lu datagrams\n", n);
	close(fd);
	return 0;
}

/* One round trip; sends again after RESEND_NS without an answer.
 * Return: 0, or -1 (printed). */
static int round_trip(int fd, char *buf, size_t size, unsigned long *lost)
{
	char rbuf[MAX_SIZE];
	uint64_t deadline = bench_now_ns() + BENCH_SPIN_LIMIT_NS;
	ssize_t r;

	for (;;) {
		if (send(fd, buf, size, 0) != (ssize_t)size) {
			perror("udp_pingpong: send");
			return -1;
		}
		r = spin_recv(fd, rbuf, sizeof(rbuf), NULL, NULL, RESEND_NS);
		if (r == (ssize_t)size)
			return 0;
		if (r == -1)
			return -1;
		if (r == -2) {
			(*lost)++;
			if (bench_now_ns() > deadline) {
				fprintf(stderr, "udp_pingpong: no answer "
					"from the server\n");
				return -1;
			}
		}
		/* else: a late answer of a resent ping; wait again */
	}
}

static int client(const struct opts *o)
{
	char buf[MAX_SIZE];
	uint64_t *s, t, sum = 0, min = UINT64_MAX;
	unsigned long lost = 0;
	unsigned int i;
	int fd, ret = 1;

	s = calloc(o->iters, sizeof(*s));
	if (!s) {
		perror("udp_pingpong: calloc");
		return 1;
	}
	fd = open_socket(o);
	if (fd < 0)
		goto out_free;
	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < o->warmup; i++)
		if (round_trip(fd, buf, o->size, &lost))
			goto out_close;
	for (i = 0; i < o->iters; i++) {
		t = bench_now_ns();
		if (round_trip(fd, buf, o->size, &lost))
			goto out_close;
		s[i] = (bench_now_ns() - t) / 2;
		sum += s[i];
		if (s[i] < min)
			min = s[i];
	}
	/* Tell the server to end (a lost marker: it times out). */
	for (i = 0; i < 3; i++)
		send(fd, buf, 0, 0);
	printf("udp_pingpong avg_us=%.2f min_us=%.2f lost=%lu\n",
	       (double)sum / o->iters / 1000.0, (double)min / 1000.0, lost);
	bench_report("udp_pingpong", o->size, s, o->iters);
	ret = 0;
out_close:
	close(fd);
out_free:
	free(s);
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.iters = 100000, .warmup = 1000, .size = 8,
	};
	char port[8];
	int c;

	snprintf(port, sizeof(port), "%u", DEFAULT_PORT);
	o.port = port;
	while ((c = getopt(argc, argv, "sc:p:n:m:w:6")) != -1) {
		switch (c) {
		case 's':
			o.server = true;
			break;
		case 'c':
			o.addr = optarg;
			break;
		case 'p':
			num(optarg, 65535);
			o.port = optarg;
			break;
		case 'n':
			o.iters = (unsigned int)num(optarg, 100000000);
			break;
		case 'm':
			o.size = num(optarg, MAX_SIZE);
			break;
		case 'w':
			o.warmup = (unsigned int)num(optarg, 100000000);
			break;
		case '6':
			o.v6 = true;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || o.server == !!o.addr || !o.iters || !o.size)
		usage();
	return o.server ? serve(&o) : client(&o);
}
