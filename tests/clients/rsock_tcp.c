// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rsock_tcp.c - an ordinary TCP echo pair, for running under Debian's
 * librspreload.so (tests/clients/rsockets.sh, mode preload).
 *
 *   rsock_tcp server PORT       accept one connection, echo until EOF
 *   rsock_tcp client PORT ADDR  send 512 KiB, half-close, read the echo
 *                               back and compare
 *
 * Nothing here knows about RDMA: socket, connect, accept, poll, read,
 * write, shutdown and close are what librspreload redirects. Each side
 * prints "via rsockets: yes" when its connected socket answers a SOL_RDMA
 * option (only an rsocket does; a kernel socket fails with ENOPROTOOPT),
 * so the test can tell the preload really took over.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TOTAL (512 * 1024)
#define SOL_RDMA_LEVEL 0x10000	/* rsocket.h's SOL_RDMA */

static void report(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	printf("via rsockets: %s\n",
	       getsockopt(fd, SOL_RDMA_LEVEL, 0, &v, &len) ? "no" : "yes");
	fflush(stdout);
}

static int wait_fd(int fd, short ev)
{
	struct pollfd p = { .fd = fd, .events = ev };

	return poll(&p, 1, 30000) == 1 ? 0 : -1;
}

static int serve(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int lfd, fd, one = 1;
	static char buf[65536];
	long total = 0;

	sin.sin_port = htons((uint16_t)port);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one,
				  sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(lfd, 4)) {
		perror("server socket");
		return 1;
	}
	if (wait_fd(lfd, POLLIN)) {
		fprintf(stderr, "no connection\n");
		return 1;
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		perror("accept");
		return 1;
	}
	report(fd);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf)), off = 0;

		if (n < 0) {
			perror("read");
			return 1;
		}
		if (!n)
			break;
		while (off < n) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w <= 0) {
				perror("write");
				return 1;
			}
			off += w;
		}
		total += n;
	}
	printf("server echoed %ld bytes\n", total);
	close(fd);
	close(lfd);
	return 0;
}

static int client(int port, const char *addr)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	unsigned char *out = malloc(TOTAL), *in = malloc(TOTAL);
	long got = 0, i;
	int fd;

	if (!out || !in)
		return 1;
	for (i = 0; i < TOTAL; i++)
		out[i] = (unsigned char)(i * 7 + i / 251);
	sin.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		return 1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		perror("connect");
		return 1;
	}
	report(fd);
	for (i = 0; i < TOTAL;) {
		ssize_t w = write(fd, out + i, (size_t)(TOTAL - i));

		if (w <= 0) {
			perror("write");
			return 1;
		}
		i += w;
	}
	if (shutdown(fd, SHUT_WR)) {
		perror("shutdown");
		return 1;
	}
	while (got < TOTAL) {
		ssize_t n;

		if (wait_fd(fd, POLLIN)) {
			fprintf(stderr, "timeout after %ld bytes\n", got);
			return 1;
		}
		n = read(fd, in + got, (size_t)(TOTAL - got));
		if (n <= 0) {
			fprintf(stderr, "read %zd (%s) after %ld bytes\n", n,
				strerror(errno), got);
			return 1;
		}
		got += n;
	}
	if (memcmp(in, out, TOTAL)) {
		fprintf(stderr, "echo differs\n");
		return 1;
	}
	printf("client: %ld bytes echoed intact\n", got);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return serve(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(atoi(argv[2]), argv[3]);
	fprintf(stderr, "usage: rsock_tcp server PORT | client PORT ADDR\n");
	return 2;
}
