/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsocket_int.h - internals shared by the rsocket files.
 *
 * An rsocket is a struct rsock found through a table indexed by the file
 * descriptor the application was given (rsocket.c owns the table). Stream
 * sockets (rsocket.c) are an RC QP set up with our own rdma_cm; datagram
 * sockets (rsocket_dgram.c) are a UD QP plus an ordinary UDP socket that
 * names them and resolves peers. See docs/design/rsocket.md.
 *
 * Locking: rs_tab_lock (rsocket.c) protects the table and every
 * rsock.refs; rsock.lock protects every other field of one socket. No
 * thread holds two socket locks at once; rs_tab_lock is never taken while
 * a socket lock is held, except briefly to drop a reference (rs_put).
 */
#ifndef SRDMA_RSOCKET_INT_H
#define SRDMA_RSOCKET_INT_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Socket kinds. */
enum rs_type {
	RS_STREAM,
	RS_DGRAM,
};

struct rs_dgram;

/*
 * struct rs_idle - a run of non-blocking calls that found nothing to do
 * (see srdma_rs_idle_spinning): the time of the last one (CLOCK_MONOTONIC
 * ns), how many (up to a threshold).
 */
struct rs_idle {
	int64_t last;
	unsigned int calls;
};

/*
 * struct rsock - one rsocket. Fields: rsock.lock unless marked.
 */
struct rsock {
	pthread_mutex_t lock;
	int fd;			/* the application's fd; constant */
	enum rs_type type;	/* constant */
	int domain;		/* constant */
	unsigned int refs;	/* rs_tab_lock */
	bool closed;		/* rclose ran: every call fails EBADF */
	unsigned int fork_gen;	/* rs_fork_gen at creation; constant */
	bool nonblock;		/* O_NONBLOCK through rfcntl / SOCK_NONBLOCK */
	int so_error;		/* pending error for SO_ERROR (positive) */
	struct rs_idle idle;	/* non-blocking calls finding nothing */

	/* Options: stored, reported, and used where they mean something. */
	int opt_reuseaddr, opt_keepalive, opt_keepidle, opt_nodelay;
	int opt_rcvbuf, opt_sndbuf, opt_maxseg;
	struct linger opt_linger;
	uint32_t opt_sqsize, opt_rqsize, opt_inline, opt_iomapsize;

	void *stream;		/* struct rs_stream * (rsocket.c) */
	struct rs_dgram *dgram;	/* rsocket_dgram.c */
};

/* Lookup: a referenced rsock (rs_put when done), or NULL with errno set. */
struct rsock *srdma_rs_get(int fd);
void srdma_rs_put(struct rsock *rs);
/* Publish a new rsock under its fd; -errno. */
int srdma_rs_insert(struct rsock *rs);
/* Allocate an rsock with defaults (not published); NULL on ENOMEM. */
struct rsock *srdma_rs_alloc(int fd, enum rs_type type, int domain);
/* A non-blocking call found nothing: true once the calls are a spin. */
bool srdma_rs_idle_spinning(struct rs_idle *idle);
/* A call made progress: the run of empty calls is over. */
void srdma_rs_idle_end(struct rs_idle *idle);
/* Longest nap of one non-blocking call of a spin, in ms. */
#define RS_IDLE_NAP_MS 1

/* Datagram sockets (rsocket_dgram.c). Each returns the public convention
 * already converted (-1 + errno), except as noted. */
int srdma_rsd_create(int domain, int type);
int srdma_rsd_bind(struct rsock *rs, const struct sockaddr *addr,
		   socklen_t len);
ssize_t srdma_rsd_sendto(struct rsock *rs, const void *buf, size_t len,
			 int flags, const struct sockaddr *to, socklen_t tolen);
ssize_t srdma_rsd_recvfrom(struct rsock *rs, void *buf, size_t len, int flags,
			   struct sockaddr *from, socklen_t *fromlen);
int srdma_rsd_connect(struct rsock *rs, const struct sockaddr *addr,
		      socklen_t len);
int srdma_rsd_getsockname(struct rsock *rs, struct sockaddr *addr,
			  socklen_t *len);
int srdma_rsd_getpeername(struct rsock *rs, struct sockaddr *addr,
			  socklen_t *len);
void srdma_rsd_close(struct rsock *rs);
/*
 * rpoll support: events ready now (lock held, progress made), and the
 * fds to sleep on (at most 2, returned count; -1: ready, do not sleep)
 * after arming.
 */
short srdma_rsd_revents(struct rsock *rs, short events);
int srdma_rsd_waitfds(struct rsock *rs, struct pollfd *pfd);
void srdma_rsd_after_wait(struct rsock *rs);

#endif /* SRDMA_RSOCKET_INT_H */
