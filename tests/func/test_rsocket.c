// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rsocket.c - the rsocket API's error paths and socket semantics.
 *
 * Each test makes a listener on 127.0.0.1 (port 0, then rgetsockname) and
 * connects to it from a second thread of the same process, through our
 * librdmacm exactly as an application would. Checked: ECONNREFUSED with
 * nobody listening, EBADF on fds that are not rsockets, EOF (0) after the
 * peer closes and EPIPE/ECONNRESET when writing to it, non-blocking
 * connect (EINPROGRESS, POLLOUT, SO_ERROR), rpoll's timeout without
 * burning the CPU and its pass-through of plain fds, shutdown of either
 * direction, MSG_PEEK / MSG_DONTWAIT, options, and credit flow control
 * with a 4-buffer receive ring and a slow reader (data intact), a spin
 * on non-blocking calls that naps instead of burning the CPU, fork()
 * (inherited rsockets EBADF, new ones work), and datagram sockets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rdma/rsocket.h>

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A listener on 127.0.0.1, port chosen by the system. */
static int make_listener(struct sockaddr_in *sin)
{
	socklen_t len = sizeof(*sin);
	int lfd, one = 1;

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one,
				     sizeof(one)), 0);
	assert_int_equal(rbind(lfd, (struct sockaddr *)sin, sizeof(*sin)), 0);
	assert_int_equal(rlisten(lfd, 4), 0);
	assert_int_equal(rgetsockname(lfd, (struct sockaddr *)sin, &len), 0);
	assert_int_equal(sin->sin_family, AF_INET);
	assert_true(sin->sin_port != 0);
	return lfd;
}

struct conn_arg {
	struct sockaddr_in sin;
	int rqsize;	/* RDMA_RQSIZE for the client, 0 = default */
	int fd;
};

static void *connect_thread(void *p)
{
	struct conn_arg *a = p;

	a->fd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (a->fd < 0)
		return NULL;
	if (a->rqsize)
		rsetsockopt(a->fd, SOL_RDMA, RDMA_RQSIZE, &a->rqsize,
			    sizeof(a->rqsize));
	if (rconnect(a->fd, (struct sockaddr *)&a->sin, sizeof(a->sin))) {
		rclose(a->fd);
		a->fd = -1;
	}
	return NULL;
}

/* A connected pair: *cfd (client side), *sfd (accepted). */
static void make_pair(int *cfd, int *sfd, int client_rq, int server_rq)
{
	struct conn_arg a = { .rqsize = client_rq };
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	pthread_t t;
	int lfd;

	lfd = make_listener(&a.sin);
	if (server_rq)
		assert_int_equal(rsetsockopt(lfd, SOL_RDMA, RDMA_RQSIZE,
					     &server_rq, sizeof(server_rq)),
				 0);
	assert_int_equal(pthread_create(&t, NULL, connect_thread, &a), 0);
	*sfd = raccept(lfd, (struct sockaddr *)&peer, &plen);
	pthread_join(t, NULL);
	assert_true(*sfd >= 0);
	assert_true(a.fd >= 0);
	assert_int_equal(plen, sizeof(struct sockaddr_in));
	assert_int_equal(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	*cfd = a.fd;
	assert_int_equal(rclose(lfd), 0);
}

static void test_refused(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int tfd, fd;

	(void)state;
	/* A port nobody listens on: take one from the kernel, let it go. */
	tfd = socket(AF_INET, SOCK_STREAM, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(tfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(tfd, (struct sockaddr *)&sin, &len), 0);
	close(tfd);

	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	errno = 0;
	assert_int_equal(rconnect(fd, (struct sockaddr *)&sin, sizeof(sin)),
			 -1);
	assert_int_equal(errno, ECONNREFUSED);
	assert_int_equal(rclose(fd), 0);
}

static void test_badfd(void **state)
{
	int p[2], one = 1;
	char c = 0;

	(void)state;
	assert_int_equal(pipe(p), 0);
	errno = 0;
	assert_int_equal(rsend(-1, &c, 1, 0), -1);
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_int_equal(rrecv(p[0], &c, 1, 0), -1);
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_int_equal(rclose(p[1]), -1);
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_int_equal(rsetsockopt(100000, SOL_SOCKET, SO_KEEPALIVE, &one,
				     sizeof(one)), -1);
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_int_equal(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
	errno = 0;
	assert_int_equal(rsocket(AF_INET, SOCK_RAW, 0), -1);
	assert_true(errno == ESOCKTNOSUPPORT || errno == EPROTONOSUPPORT);
	close(p[0]);
	close(p[1]);

	/* Closed twice: the second is EBADF, not a crash. */
	{
		int fd = rsocket(AF_INET, SOCK_STREAM, 0);

		assert_true(fd >= 0);
		assert_int_equal(rclose(fd), 0);
		errno = 0;
		assert_int_equal(rclose(fd), -1);
		assert_int_equal(errno, EBADF);
	}
}

static void test_unconnected(void **state)
{
	int fd = rsocket(AF_INET, SOCK_STREAM, 0);
	char c = 0;

	(void)state;
	assert_true(fd >= 0);
	errno = 0;
	assert_int_equal(rsend(fd, &c, 1, 0), -1);
	assert_int_equal(errno, ENOTCONN);
	errno = 0;
	assert_int_equal(rrecv(fd, &c, 1, 0), -1);
	assert_int_equal(errno, ENOTCONN);
	errno = 0;
	assert_int_equal(rshutdown(fd, SHUT_WR), -1);
	assert_int_equal(errno, ENOTCONN);
	errno = 0;
	assert_int_equal(raccept(fd, NULL, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rclose(fd), 0);
}

static void test_eof_and_epipe(void **state)
{
	char buf[64] = "hello";
	int cfd, sfd, i;
	ssize_t r = 0;

	(void)state;
	make_pair(&cfd, &sfd, 0, 0);
	assert_int_equal(rsend(sfd, buf, 5, 0), 5);
	assert_int_equal(rclose(sfd), 0);
	/* The data before the close, then EOF, again and again. */
	assert_int_equal(rrecv(cfd, buf, sizeof(buf), MSG_WAITALL), 5);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(rrecv(cfd, buf, sizeof(buf), 0), 0);
	assert_int_equal(rrecv(cfd, buf, sizeof(buf), 0), 0);
	/* Writing to a closed peer fails (no SIGPIPE: we are still here). */
	for (i = 0; i < 100; i++) {
		r = rsend(cfd, buf, sizeof(buf), 0);
		if (r < 0)
			break;
		usleep(10000);
	}
	assert_int_equal(r, -1);
	assert_true(errno == EPIPE || errno == ECONNRESET);
	assert_int_equal(rclose(cfd), 0);
}

static void test_nonblocking_connect(void **state)
{
	struct sockaddr_in sin;
	struct pollfd pfd;
	socklen_t len = sizeof(int);
	int lfd, fd, sfd, err = -1, ret, fl;
	char buf[8];

	(void)state;
	lfd = make_listener(&sin);
	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	fl = rfcntl(fd, F_GETFL);
	assert_int_equal(fl & O_NONBLOCK, 0);
	assert_int_equal(rfcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
	assert_int_equal(rfcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	ret = rconnect(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (ret)
		assert_int_equal(errno, EINPROGRESS);
	/* A non-blocking listener has nothing yet, or the request. */
	sfd = raccept(lfd, NULL, NULL);
	assert_true(sfd >= 0);
	pfd.fd = fd;
	pfd.events = POLLOUT;
	assert_int_equal(rpoll(&pfd, 1, 10000), 1);
	assert_true(pfd.revents & POLLOUT);
	assert_int_equal(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	assert_int_equal(err, 0);
	errno = 0;
	assert_int_equal(rrecv(fd, buf, sizeof(buf), 0), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rsend(sfd, "x", 1, 0), 1);
	pfd.events = POLLIN;
	assert_int_equal(rpoll(&pfd, 1, 10000), 1);
	assert_int_equal(rrecv(fd, buf, sizeof(buf), 0), 1);
	assert_int_equal(buf[0], 'x');
	rclose(fd);
	rclose(sfd);
	rclose(lfd);
}

static void test_nonblocking_refused(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	struct pollfd pfd;
	int tfd, fd, err = 0, ret;

	(void)state;
	tfd = socket(AF_INET, SOCK_STREAM, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(tfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(tfd, (struct sockaddr *)&sin, &len), 0);
	close(tfd);
	fd = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(fd >= 0);
	ret = rconnect(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (ret && errno == EINPROGRESS) {
		pfd.fd = fd;
		pfd.events = POLLOUT;
		assert_int_equal(rpoll(&pfd, 1, 10000), 1);
		len = sizeof(err);
		assert_int_equal(rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
					     &len), 0);
	} else {
		assert_int_equal(ret, -1);
		err = errno;
	}
	assert_int_equal(err, ECONNREFUSED);
	rclose(fd);
}

static void test_rpoll_timeout(void **state)
{
	struct pollfd pfd[2];
	struct rusage ru0, ru1;
	int cfd, sfd, p[2];
	int64_t t0, el, cpu;

	(void)state;
	make_pair(&cfd, &sfd, 0, 0);
	assert_int_equal(pipe(p), 0);
	pfd[0].fd = cfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = p[0];
	pfd[1].events = POLLIN;
	getrusage(RUSAGE_THREAD, &ru0);
	t0 = now_ms();
	assert_int_equal(rpoll(pfd, 2, 500), 0);
	el = now_ms() - t0;
	getrusage(RUSAGE_THREAD, &ru1);
	assert_true(el >= 490);
	assert_true(el < 3000);
	cpu = (ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1000 +
	      (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1000 +
	      (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000 +
	      (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1000;
	print_message("rpoll 500 ms: %lld ms CPU\n", (long long)cpu);
	assert_true(cpu < 100);	/* slept, did not spin */
	/* A plain fd passes through. */
	assert_int_equal(write(p[1], "a", 1), 1);
	assert_int_equal(rpoll(pfd, 2, 5000), 1);
	assert_int_equal(pfd[0].revents, 0);
	assert_true(pfd[1].revents & POLLIN);
	/* rselect too. */
	{
		fd_set rd;
		struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };

		FD_ZERO(&rd);
		FD_SET(cfd, &rd);
		assert_int_equal(rselect(cfd + 1, &rd, NULL, NULL, &tv), 0);
		assert_int_equal(rsend(sfd, "z", 1, 0), 1);
		FD_SET(cfd, &rd);
		tv.tv_sec = 5;
		assert_int_equal(rselect(cfd + 1, &rd, NULL, NULL, &tv), 1);
		assert_true(FD_ISSET(cfd, &rd));
	}
	close(p[0]);
	close(p[1]);
	rclose(cfd);
	rclose(sfd);
}

static void test_shutdown(void **state)
{
	char buf[16];
	int cfd, sfd;

	(void)state;
	make_pair(&cfd, &sfd, 0, 0);
	errno = 0;
	assert_int_equal(rshutdown(cfd, 42), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rsend(cfd, "abc", 3, 0), 3);
	assert_int_equal(rshutdown(cfd, SHUT_WR), 0);
	errno = 0;
	assert_int_equal(rsend(cfd, "d", 1, 0), -1);
	assert_int_equal(errno, EPIPE);
	assert_int_equal(rrecv(sfd, buf, sizeof(buf), MSG_WAITALL), 3);
	assert_int_equal(rrecv(sfd, buf, sizeof(buf), 0), 0);
	/* The other direction still works. */
	assert_int_equal(rsend(sfd, "back", 4, 0), 4);
	assert_int_equal(rrecv(cfd, buf, 4, MSG_WAITALL), 4);
	assert_memory_equal(buf, "back", 4);
	/* SHUT_RD: our reads end. */
	assert_int_equal(rshutdown(sfd, SHUT_RD), 0);
	assert_int_equal(rrecv(sfd, buf, sizeof(buf), 0), 0);
	rclose(cfd);
	rclose(sfd);
}

static void test_peek_dontwait_opts(void **state)
{
	char buf[16];
	int cfd, sfd, v;
	socklen_t len;
	struct linger lg = { .l_onoff = 1, .l_linger = 5 };
	struct sockaddr_in sin;

	(void)state;
	make_pair(&cfd, &sfd, 0, 0);
	errno = 0;
	assert_int_equal(rrecv(sfd, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rsend(cfd, "peek", 4, 0), 4);
	assert_int_equal(rrecv(sfd, buf, 4, MSG_PEEK | MSG_WAITALL), 4);
	assert_int_equal(rrecv(sfd, buf, 4, MSG_PEEK), 4);
	assert_int_equal(rrecv(sfd, buf, sizeof(buf), 0), 4);
	assert_memory_equal(buf, "peek", 4);

	v = 1;
	assert_int_equal(rsetsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &v,
				     sizeof(v)), 0);
	len = sizeof(v);
	assert_int_equal(rgetsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &v, &len),
			 0);
	assert_int_equal(v, 1);
	v = 1 << 20;
	assert_int_equal(rsetsockopt(cfd, SOL_SOCKET, SO_RCVBUF, &v,
				     sizeof(v)), 0);
	assert_int_equal(rgetsockopt(cfd, SOL_SOCKET, SO_RCVBUF, &v, &len),
			 0);
	assert_true(v >= 1 << 20);
	assert_int_equal(rsetsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg,
				     sizeof(lg)), 0);
	v = 64;
	assert_int_equal(rsetsockopt(cfd, SOL_RDMA, RDMA_SQSIZE, &v,
				     sizeof(v)), 0);
	assert_int_equal(rgetsockopt(cfd, SOL_RDMA, RDMA_SQSIZE, &v, &len), 0);
	assert_int_equal(v, 64);
	errno = 0;
	assert_int_equal(rsetsockopt(cfd, SOL_SOCKET, SO_BROADCAST, &v,
				     sizeof(v)), -1);
	assert_int_equal(errno, ENOPROTOOPT);
	errno = 0;
	assert_int_equal(rsetsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &v, 1),
			 -1);
	assert_int_equal(errno, EINVAL);
	len = sizeof(sin);
	assert_int_equal(rgetpeername(cfd, (struct sockaddr *)&sin, &len), 0);
	assert_int_equal(sin.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	rclose(cfd);
	rclose(sfd);
}

/* Milliseconds of CPU this thread has used. */
static int64_t thread_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (int64_t)ru.ru_utime.tv_sec * 1000 +
	       ru.ru_utime.tv_usec / 1000 +
	       (int64_t)ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000;
}

struct late_arg {
	int fd;
	int delay_ms;
};

/* Send one byte on ->fd after ->delay_ms: a peer that takes its time. */
static void *late_sender(void *p)
{
	struct late_arg *a = p;

	usleep((useconds_t)a->delay_ms * 1000);
	if (rsend(a->fd, "x", 1, 0) != 1)
		return (void *)1;
	return NULL;
}

/*
 * An application spinning on non-blocking rrecv (rstream's default) or on
 * rpoll(0) (rstream -T a) while its peer takes 300 ms: it must not burn
 * the CPU the peer needs (the peer is a process of this host on our
 * software device), yet see the data as soon as it comes.
 */
static void test_nonblock_spin(void **state)
{
	struct late_arg a = { .delay_ms = 300 };
	int64_t t0, el, cpu, calls;
	struct pollfd pfd;
	pthread_t th;
	void *ret;
	int cfd, sfd, round, r;
	char c;

	(void)state;
	make_pair(&cfd, &sfd, 0, 0);
	a.fd = sfd;
	for (round = 0; round < 2; round++) {
		assert_int_equal(pthread_create(&th, NULL, late_sender, &a), 0);
		t0 = now_ms();
		cpu = thread_cpu_ms();
		calls = 0;
		for (;;) {
			calls++;
			if (round == 0) {
				r = (int)rrecv(cfd, &c, 1, MSG_DONTWAIT);
				if (r == 1)
					break;
				assert_int_equal(r, -1);
				assert_int_equal(errno, EAGAIN);
			} else {
				pfd.fd = cfd;
				pfd.events = POLLIN;
				r = rpoll(&pfd, 1, 0);
				if (r == 1) {
					assert_int_equal(rrecv(cfd, &c, 1, 0),
							 1);
					break;
				}
				assert_int_equal(r, 0);
			}
			assert_true(now_ms() - t0 < 10000);
		}
		el = now_ms() - t0;
		cpu = thread_cpu_ms() - cpu;
		assert_int_equal(c, 'x');
		assert_int_equal(pthread_join(th, &ret), 0);
		assert_null(ret);
		print_message("%s spin: %lld calls, %lld ms, %lld ms CPU\n",
			      round ? "rpoll(0)" : "rrecv(DONTWAIT)",
			      (long long)calls, (long long)el,
			      (long long)cpu);
		assert_true(el >= 290);
		assert_true(calls > 16);
		assert_true(cpu * 10 < el);	/* napped, did not spin */
	}
	rclose(cfd);
	rclose(sfd);
}

struct flow_arg {
	int fd;
	size_t total;
};

static void *slow_reader(void *p)
{
	struct flow_arg *a = p;
	unsigned char *buf = malloc(a->total);
	size_t got = 0;
	int k = 0;

	while (got < a->total) {
		ssize_t n = rrecv(a->fd, buf + got,
				  a->total - got < 3000 ? a->total - got : 3000,
				  0);

		if (n <= 0)
			break;
		got += (size_t)n;
		if (++k % 64 == 0)
			usleep(1000);
	}
	for (size_t i = 0; i < got; i++)
		if (buf[i] != (unsigned char)(i * 13 + (i >> 16))) {
			got = (size_t)-1;
			break;
		}
	free(buf);
	a->total = got;
	return NULL;
}

static void test_flow_control(void **state)
{
	const size_t total = 8u << 20;
	unsigned char *buf = malloc(total);
	struct flow_arg a = { .total = total };
	struct iovec iov[3];
	pthread_t t;
	int cfd, sfd;

	(void)state;
	for (size_t i = 0; i < total; i++)
		buf[i] = (unsigned char)(i * 13 + (i >> 16));
	/* Server (reader) posts only 4 receive buffers. */
	make_pair(&cfd, &sfd, 0, 4);
	a.fd = sfd;
	assert_int_equal(pthread_create(&t, NULL, slow_reader, &a), 0);
	iov[0].iov_base = buf;
	iov[0].iov_len = 100;
	iov[1].iov_base = buf + 100;
	iov[1].iov_len = 0;
	iov[2].iov_base = buf + 100;
	iov[2].iov_len = 1000000 - 100;
	assert_int_equal(rwritev(cfd, iov, 3), 1000000);
	assert_int_equal(rsend(cfd, buf + 1000000, total - 1000000, 0),
			 (ssize_t)(total - 1000000));
	pthread_join(t, NULL);
	assert_int_equal(a.total, total);
	free(buf);
	rclose(cfd);
	rclose(sfd);
}

/*
 * fork(): a child's inherited rsockets are dead (EBADF, never a crash;
 * rclose just forgets them), it can make rsockets of its own, and the
 * parent's connection is unaffected.
 */
static void test_fork(void **state)
{
	char buf[8];
	int cfd, sfd, st;
	pid_t pid;

	(void)state;
	make_pair(&cfd, &sfd, 0, 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int ok = 1, c2, s2;

		errno = 0;
		ok &= rsend(cfd, "x", 1, 0) == -1 && errno == EBADF;
		errno = 0;
		ok &= rrecv(sfd, buf, 1, MSG_DONTWAIT) == -1 && errno == EBADF;
		ok &= rclose(cfd) == 0 && rclose(sfd) == 0;
#ifndef __SANITIZE_THREAD__
		/* TSan's runtime cannot follow a forked child of a threaded
		 * process that starts threads of its own (the CM's service
		 * thread): "dup thread with used id". */
		make_pair(&c2, &s2, 0, 0);
		ok &= rsend(c2, "child", 5, 0) == 5;
		ok &= rrecv(s2, buf, 5, MSG_WAITALL) == 5 &&
		      !memcmp(buf, "child", 5);
		rclose(c2);
		rclose(s2);
#else
		(void)c2;
		(void)s2;
#endif
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(rsend(cfd, "parent", 6, 0), 6);
	assert_int_equal(rrecv(sfd, buf, 6, MSG_WAITALL), 6);
	assert_memory_equal(buf, "parent", 6);
	rclose(cfd);
	rclose(sfd);
}

/* Datagram rsockets: sendto/recvfrom both ways, the sender's address,
 * EMSGSIZE, and EHOSTUNREACH where no rsocket answers. */
static void test_dgram(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, b, from, none;
	socklen_t len = sizeof(b), flen;
	static char big[70000];
	char buf[64];
	int fa, fb, t;

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	b = a;
	fa = rsocket(AF_INET, SOCK_DGRAM, 0);
	fb = rsocket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fa >= 0 && fb >= 0);
	assert_int_equal(rbind(fa, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(rbind(fb, (struct sockaddr *)&b, sizeof(b)), 0);
	len = sizeof(a);
	assert_int_equal(rgetsockname(fa, (struct sockaddr *)&a, &len), 0);
	len = sizeof(b);
	assert_int_equal(rgetsockname(fb, (struct sockaddr *)&b, &len), 0);
	/* b answers a's resolve request from inside its own calls: use a
	 * non-blocking b polled from this thread while a sends. */
	assert_int_equal(rfcntl(fb, F_SETFL, O_NONBLOCK), 0);
	{
		pid_t pid = fork();
		int st;

		assert_true(pid >= 0);
		if (!pid) {
			/* The child is b's peer process: a fresh a'. */
			int fc = rsocket(AF_INET, SOCK_DGRAM, 0);
			ssize_t r;

			if (fc < 0)
				_exit(2);
			r = rsendto(fc, "dgram", 5, 0, (struct sockaddr *)&b,
				    sizeof(b));
			_exit(r == 5 ? 0 : 1);
		}
		flen = sizeof(from);
		for (t = 0; t < 500; t++) {
			ssize_t r = rrecvfrom(fb, buf, sizeof(buf), 0,
					      (struct sockaddr *)&from, &flen);

			if (r >= 0) {
				assert_int_equal(r, 5);
				assert_memory_equal(buf, "dgram", 5);
				assert_int_equal(from.sin_family, AF_INET);
				break;
			}
			assert_int_equal(errno, EAGAIN);
			usleep(10000);
		}
		assert_true(t < 500);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	errno = 0;
	assert_int_equal(rsendto(fa, big, sizeof(big), 0,
				 (struct sockaddr *)&b, sizeof(b)), -1);
	assert_int_equal(errno, EMSGSIZE);
	/* A UDP port with no rsocket behind it. */
	{
		int u = socket(AF_INET, SOCK_DGRAM, 0);

		none = a;
		none.sin_port = 0;
		assert_int_equal(bind(u, (struct sockaddr *)&none,
				      sizeof(none)), 0);
		len = sizeof(none);
		assert_int_equal(getsockname(u, (struct sockaddr *)&none,
					     &len), 0);
		errno = 0;
		assert_int_equal(rsendto(fa, "x", 1, 0,
					 (struct sockaddr *)&none,
					 sizeof(none)), -1);
		assert_int_equal(errno, EHOSTUNREACH);
		close(u);
	}
	assert_int_equal(rclose(fa), 0);
	assert_int_equal(rclose(fb), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_badfd),
		cmocka_unit_test(test_unconnected),
		cmocka_unit_test(test_eof_and_epipe),
		cmocka_unit_test(test_nonblocking_connect),
		cmocka_unit_test(test_nonblocking_refused),
		cmocka_unit_test(test_rpoll_timeout),
		cmocka_unit_test(test_shutdown),
		cmocka_unit_test(test_peek_dontwait_opts),
		cmocka_unit_test(test_nonblock_spin),
		cmocka_unit_test(test_flow_control),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_dgram),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
