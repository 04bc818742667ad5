// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_loop.c - the CM service thread: sockets, framing, deadlines.
 *
 * One thread per process, started when the first CM socket needs
 * watching, blocks in epoll_wait (principle 2: it never spins). Each
 * registered socket carries its id's serial, not a pointer, so an id
 * destroyed between epoll_wait and cm.lock is simply not found. With
 * cm.lock held the thread:
 *
 *   - accepts on listeners, creating a hidden child id per connection
 *     (the application sees it only once a valid REQ arrived);
 *   - completes non-blocking connects (EPOLLOUT) and sends the REQ;
 *   - reads what is available, reassembles messages in id->rx, checks
 *     each header as soon as its 8 bytes are in (a bad header is an error
 *     at once, not a wait for bytes that will never come), decodes and
 *     hands whole messages to cma_conn.c;
 *   - fires the deadlines of connecting ids.
 *
 * Running out of file descriptors (accept fails with EMFILE or ENFILE)
 * must not turn the level-triggered listener into a busy loop, nor leave
 * clients waiting for a handshake nobody will serve. The thread keeps one
 * spare fd (/dev/null): it gives it up to accept the pending connection,
 * answers it "no resources" (REJ reason 3, or SIDR_REP "rejected" for a
 * UD listener) and closes it, then takes the spare back, so each refused
 * client fails at once and the queue drains. Should the spare be lost (a
 * thread of the application took the freed slot), the listener is paused:
 * left out of the epoll set for LISTEN_PAUSE_MS, then watched again. Once
 * fds are free, accept() simply works again.
 *
 * Every connection's socket watches its peer (srdma_cm_sock_watch_peer):
 * TCP keepalive and TCP_USER_TIMEOUT at srdma_cm_dead_ms(), so a peer
 * host that goes silent (link down, host gone) ends in ETIMEDOUT within
 * a bound instead of TCP's hours, and cma_conn.c reports it.
 *
 * Sockets are non-blocking; the thread never blocks while holding
 * cm.lock. Messages are at most 280 bytes, so a send either fits the
 * socket buffer or the connection is broken.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cm/cma_int.h"
#include "util/log.h"

#define WAKE_KEY 0
/* How long a listener that cannot even refuse is left unwatched. */
#define LISTEN_PAUSE_MS 200

uint64_t srdma_cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void srdma_cm_loop_kick(void)
{
	uint64_t v = 1;

	if (cm.wakefd >= 0 && write(cm.wakefd, &v, sizeof(v)) < 0)
		srdma_dbg("wake: %d", errno);
}

unsigned int srdma_cm_dead_ms(const struct cm_id *id)
{
	uint8_t t = id->ack_timeout_set ? id->ack_timeout : 14;
	const char *env = getenv("SRDMA_CM_DEAD_MS");
	uint64_t budget;
	char *end;

	if (env && *env) {
		unsigned long v = strtoul(env, &end, 10);

		if (!*end && v <= 3600000)
			return (unsigned int)v;
		srdma_warn("SRDMA_CM_DEAD_MS='%s' is not 0..3600000 ms: "
			   "ignored", env);
	}
	/* 8 transmissions of 4.096 us x 2^t, twice over, in ms. */
	budget = t >= 31 ? UINT64_MAX / 2 : (2 * 8 * 4096ULL << t) / 1000000;
	if (budget > 3600000)
		budget = 3600000;
	return budget > SRDMA_CM_DEAD_MIN_MS ? (unsigned int)budget
					     : SRDMA_CM_DEAD_MIN_MS;
}

void srdma_cm_sock_watch_peer(struct cm_id *id)
{
	unsigned int dead = srdma_cm_dead_ms(id);
	int one = 1, idle = 1, cnt = 127;

	if (id->fd < 0 || !dead)
		return;
	if (setsockopt(id->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
	    setsockopt(id->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle,
		       sizeof(idle)) ||
	    setsockopt(id->fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle,
		       sizeof(idle)) ||
	    setsockopt(id->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) ||
	    setsockopt(id->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &dead,
		       sizeof(dead)))
		srdma_dbg("id %p: peer watch not armed: %d", (void *)&id->id,
			  errno);
}

/* True if accept() failed for want of fds or memory, not of connections. */
static bool accept_starved(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS ||
	       err == ENOMEM;
}

static void spare_take(void)
{
	if (cm.spare_fd < 0)
		cm.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Answer connection @fd of listener @l "no resources" and close it. */
static void refuse_conn(struct cm_id *l, int fd)
{
	bool ud = l->id.qp_type == IBV_QPT_UD;
	struct srdma_cm_msg rej = {
		.type = ud ? SRDMA_CM_SIDR_REP : SRDMA_CM_REJ,
		.reason = ud ? SRDMA_CM_SIDR_REJECT : SRDMA_CM_REJ_NO_RESOURCES,
		.port_space = (uint16_t)l->id.ps,
		.qp_type = (uint8_t)l->id.qp_type,
	};
	uint8_t buf[SRDMA_CM_MSG_MAX];
	int len = srdma_cm_encode(&rej, buf), i;

	if (len > 0 &&
	    send(fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) != len)
		srdma_dbg("refusing a connection: send: %d", errno);
	/* Unread input would turn close() into a reset that may overtake
	 * the REJ; read what already came (a REQ is 280 bytes at most). */
	for (i = 0; i < 4 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0;
	     i++)
		;
	close(fd);
}

/*
 * Listener @l has connections queued but the process has no fd for them:
 * refuse one with the spare fd. Requires cm.lock.
 * Return: 1 one was refused (more may wait), 0 none was pending, -1 no
 * spare fd either (the caller pauses the listener).
 */
static int refuse_one(struct cm_id *l)
{
	int fd, err;

	if (cm.spare_fd < 0)
		return -1;
	close(cm.spare_fd);
	cm.spare_fd = -1;
	fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	err = errno;
	if (fd >= 0)
		refuse_conn(l, fd);
	spare_take();
	if (fd >= 0)
		return 1;
	if (err == EAGAIN || err == EINTR || err == ECONNABORTED)
		return 0;
	return -1;
}

/* Stop watching listener @l for a while (loop_deadlines resumes it). */
static void listener_pause(struct cm_id *l)
{
	struct epoll_event ev = {.events = 0, .data.u64 = l->serial};

	if (epoll_ctl(cm.epfd, EPOLL_CTL_MOD, l->fd, &ev))
		srdma_dbg("pausing listener %p: %d", (void *)&l->id, errno);
	l->deadline_ms = srdma_cm_now_ms() + LISTEN_PAUSE_MS;
}

/* A paused listener's time is up: watch it again. Requires cm.lock. */
static void listener_resume(struct cm_id *l)
{
	spare_take();
	if (l->fd >= 0 && srdma_cm_loop_watch(l, false))
		/* Cannot even re-arm: try again later. */
		l->deadline_ms = srdma_cm_now_ms() + LISTEN_PAUSE_MS;
}

/* Accept every pending connection on listener @l. Requires cm.lock. */
static void loop_accept(struct cm_id *l)
{
	struct cm_id *child;
	int fd, ret;

	for (;;) {
		fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && accept_starved(errno)) {
			if (!l->starved)
				srdma_warn("listener %p: out of file "
					   "descriptors (%d); refusing "
					   "connections",
					   (void *)&l->id, errno);
			l->starved = true;
			ret = refuse_one(l);
			if (ret > 0)
				continue;
			if (ret < 0)
				listener_pause(l);
			return;
		}
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				srdma_dbg("accept on listener %p: %d",
					  (void *)&l->id, errno);
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if (l->starved) {
			srdma_info("listener %p: accepting again",
				   (void *)&l->id);
			l->starved = false;
		}
		if (srdma_cm_id_alloc(l->chan, l->id.context, l->id.ps,
				      l->id.qp_type, &child)) {
			close(fd);
			continue;
		}
		/* The child shares the listener's channel until reported. */
		if (child->sync)
			srdma_cm_channel_free(child->chan);
		child->sync = false;
		child->chan = l->chan;
		child->id.channel = l->id.channel;
		child->fd = fd;
		child->listener = l;
		child->child = true;
		child->state = CM_REQ_WAIT;
		/* A connection that never sends its REQ is dropped. */
		child->deadline_ms =
			srdma_cm_now_ms() + SRDMA_CM_CONNECT_TIMEOUT_MS;
		child->ack_timeout = l->ack_timeout;
		child->ack_timeout_set = l->ack_timeout_set;
		child->tos = l->tos;
		srdma_cm_sock_watch_peer(child);
		if (srdma_cm_loop_watch(child, false))
			srdma_cm_id_free(child);
	}
}

/* Read what is available on @id and dispatch whole messages. cm.lock. */
static void loop_read(struct cm_id *id)
{
	uint64_t serial = id->serial;
	struct srdma_cm_msg msg;
	size_t want;
	ssize_t n;
	int ret;

	for (;;) {
		want = SRDMA_CM_HDR_LEN;
		if (id->rx_len >= SRDMA_CM_HDR_LEN) {
			ret = srdma_cm_hdr_check(id->rx, &want);
			if (ret) {
				srdma_dbg("id %p: bad message header (%d)",
					  (void *)&id->id, ret);
				srdma_cm_conn_lost(id, -EPROTO);
				return;
			}
		}
		if (id->rx_len == want && want > SRDMA_CM_HDR_LEN) {
			ret = srdma_cm_decode(id->rx, want, &msg);
			id->rx_len = 0;
			if (ret) {
				srdma_dbg("id %p: malformed message (%d)",
					  (void *)&id->id, ret);
				srdma_cm_conn_lost(id, -EPROTO);
				return;
			}
			srdma_cm_conn_input(id, &msg);
			/* Input may have closed or freed the id. */
			if (srdma_cm_id_find(serial) != id || id->fd < 0)
				return;
			continue;
		}
		n = recv(id->fd, id->rx + id->rx_len, want - id->rx_len,
			 MSG_DONTWAIT);
		if (n > 0) {
			id->rx_len += (size_t)n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		/* EOF, possibly in the middle of a message, or an error. */
		srdma_cm_conn_lost(id, n ? -errno : -ECONNRESET);
		return;
	}
}

static void loop_io(struct cm_id *id, uint32_t events)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (id->state == CM_LISTEN) {
		loop_accept(id);
		return;
	}
	if (id->state == CM_CONNECTING) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(id->fd, SOL_SOCKET, SO_ERROR, &err, &len))
			err = errno;
		srdma_cm_conn_connected(id, -err);
		return;
	}
	loop_read(id);
}

static int next_timeout(void)
{
	uint64_t now = srdma_cm_now_ms(), first = 0;
	struct cm_id *id;

	for (id = cm.ids; id; id = id->next)
		if (id->deadline_ms && (!first || id->deadline_ms < first))
			first = id->deadline_ms;
	/* A held DISCONNECTED: look at its QP's CQs again soon. */
	if (cm.n_held &&
	    (!first || first > now + SRDMA_CM_DISC_HOLD_TICK_MS))
		first = now + SRDMA_CM_DISC_HOLD_TICK_MS;
	if (!first)
		return -1;
	return first <= now ? 0 : (int)(first - now);
}

static void loop_deadlines(void)
{
	uint64_t now = srdma_cm_now_ms();
	struct cm_id *id;
	bool again = true;

	/* A timeout may free ids; restart the walk after each one. */
	while (again) {
		again = false;
		for (id = cm.ids; id; id = id->next) {
			if (id->deadline_ms && id->deadline_ms <= now) {
				id->deadline_ms = 0;
				if (id->state == CM_LISTEN)
					listener_resume(id);
				else
					srdma_cm_conn_timeout(id);
				again = true;
				break;
			}
		}
	}
}

static void *loop_main(void *arg)
{
	struct epoll_event evs[16];
	int epfd = (int)(intptr_t)arg, n, i, timeout;
	uint64_t v;

	for (;;) {
		srdma_cm_lock();
		timeout = next_timeout();
		srdma_cm_unlock();
		n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), timeout);
		if (n < 0 && errno != EINTR) {
			srdma_err("epoll_wait: %d; CM service thread stops",
				  errno);
			return NULL;
		}
		srdma_cm_lock();
		if (cm.epfd != epfd) {
			/* A fork()ed child reset the state; not ours. */
			srdma_cm_unlock();
			return NULL;
		}
		for (i = 0; i < n; i++) {
			struct cm_id *id;

			if (evs[i].data.u64 == WAKE_KEY) {
				if (read(cm.wakefd, &v, sizeof(v)) < 0)
					srdma_dbg("wake read: %d", errno);
				continue;
			}
			id = srdma_cm_id_find(evs[i].data.u64);
			if (id && id->fd >= 0 && id->in_epoll)
				loop_io(id, evs[i].events);
		}
		loop_deadlines();
		(void)srdma_cm_held_check();
		srdma_cm_unlock();
	}
}

static int loop_start(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = WAKE_KEY};
	pthread_attr_t attr;
	pthread_t thr;
	int ret;

	cm.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (cm.epfd < 0)
		return -errno;
	cm.wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cm.wakefd < 0) {
		ret = -errno;
		goto err_close_ep;
	}
	if (epoll_ctl(cm.epfd, EPOLL_CTL_ADD, cm.wakefd, &ev)) {
		ret = -errno;
		goto err_close_wake;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = -pthread_create(&thr, &attr, loop_main,
			      (void *)(intptr_t)cm.epfd);
	pthread_attr_destroy(&attr);
	if (ret)
		goto err_close_wake;
	cm.loop_started = true;
	/* The reserve that lets a process out of fds refuse connections. */
	spare_take();
	return 0;

err_close_wake:
	close(cm.wakefd);
	cm.wakefd = -1;
err_close_ep:
	close(cm.epfd);
	cm.epfd = -1;
	return ret;
}

int srdma_cm_loop_watch(struct cm_id *id, bool out)
{
	struct epoll_event ev = {
		.events = EPOLLIN | (out ? EPOLLOUT : 0),
		.data.u64 = id->serial,
	};
	int ret;

	if (!cm.loop_started) {
		ret = loop_start();
		if (ret)
			return ret;
	}
	if (epoll_ctl(cm.epfd, id->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
		      id->fd, &ev))
		return -errno;
	id->in_epoll = true;
	return 0;
}

void srdma_cm_loop_close(struct cm_id *id)
{
	if (id->fd < 0)
		return;
	if (id->in_epoll)
		(void)epoll_ctl(cm.epfd, EPOLL_CTL_DEL, id->fd, NULL);
	id->in_epoll = false;
	/*
	 * shutdown() first: a fork()ed child may hold a copy of the fd, and
	 * the peer must still see the end (a listener stops listening).
	 */
	(void)shutdown(id->fd, SHUT_RDWR);
	close(id->fd);
	id->fd = -1;
	id->rx_len = 0;
	id->deadline_ms = 0;
}
