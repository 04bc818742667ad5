// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rawwire.c - raw packet QPs' frames on a real interface (rawwire.h).
 *
 * Only when SRDMA_RAW_WIRE names an interface of the port: a library that
 * put test frames on whatever interface a machine happens to have would
 * be a menace, so leaving the host is asked for, never assumed. Then each
 * context with raw packet QPs (work queues included) owns one AF_PACKET
 * socket bound to that interface and one thread that blocks in poll() on
 * it (no spinning): every frame that arrives, but those we sent ourselves
 * (PACKET_OUTGOING), goes through the host flow table restricted to the
 * flows of this context, and into their receive queues
 * (srdma_raw_input()). Each context receiving only for its own flows, a
 * frame reaches each QP once however many contexts listen. Sending is a
 * send(2) on the same socket, after the frame was delivered inside the
 * host.
 *
 * The socket needs CAP_NET_RAW, which creating a raw packet QP requires
 * anyway. Concurrency: the list of contexts is guarded by wire_lock; a
 * context's entry lives while it has raw QPs, so a QP sending through it
 * (which counts as one) never sees it closed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/core.h"
#include "core/raw.h"
#include "engine/engine.h"
#include "transport/net/rawwire.h"
#include "util/log.h"
#include "util/selfcopy.h"
#include "util/sys.h"

struct wire {
	struct wire *next;		/* wire_lock */
	struct srdma_context *ctx;	/* immutable */
	unsigned int users;		/* wire_lock: raw QPs of ctx */
	int sock;			/* immutable: AF_PACKET, bound */
	int efd;			/* immutable: stop signal */
	pthread_t thread;		/* immutable */
};

static pthread_mutex_t wire_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wire *wires;		/* wire_lock */

static const char *wire_name(void)
{
	const char *n = getenv("SRDMA_RAW_WIRE");

	return n && *n ? n : NULL;
}

/* Requires wire_lock. */
static struct wire *wire_find(struct srdma_context *ctx)
{
	struct wire *w;

	for (w = wires; w; w = w->next)
		if (w->ctx == ctx)
			return w;
	return NULL;
}

static void *wire_main(void *arg)
{
	struct wire *w = arg;
	uint8_t buf[SRDMA_RAW_MAX_FRAME];
	struct pollfd pf[2] = {
		{ .fd = w->sock, .events = POLLIN },
		{ .fd = w->efd, .events = POLLIN },
	};

	for (;;) {
		struct sockaddr_ll sll;
		socklen_t sl = sizeof(sll);
		ssize_t n;

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			srdma_warn("raw wire: poll: %s", strerror(errno));
			break;
		}
		if (pf[1].revents)
			break;
		n = recvfrom(w->sock, buf, sizeof(buf),
			     MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&sll,
			     &sl);
		if (n <= 0 || (size_t)n > sizeof(buf) ||
		    sll.sll_pkttype == PACKET_OUTGOING)
			continue;	/* nothing, too long, or our own */
		srdma_raw_input(w->ctx, buf, (uint32_t)n);
	}
	return NULL;
}

int srdma_rawwire_get(struct srdma_context *ctx)
{
	const char *name = wire_name();
	struct sockaddr_ll sll;
	struct wire *w;
	uint32_t i, ifindex = 0;
	int ret;

	if (!name)
		return 0;
	pthread_mutex_lock(&wire_lock);
	w = wire_find(ctx);
	if (w) {
		w->users++;
		pthread_mutex_unlock(&wire_lock);
		return 0;
	}
	for (i = 0; i < ctx->gids.n && !ifindex; i++)
		if (!strncmp(ctx->gids.e[i].ifname, name,
			     sizeof(ctx->gids.e[i].ifname)))
			ifindex = ctx->gids.e[i].ifindex;
	if (!ifindex) {
		srdma_dbg("raw QP: SRDMA_RAW_WIRE=%s is not an interface of "
			  "the port (none of its GIDs is on it)", name);
		ret = -ENODEV;
		goto err_unlock;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	w->ctx = ctx;
	w->sock = srdma_socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC,
			       htons(ETH_P_ALL));
	if (w->sock < 0) {
		ret = -errno;
		srdma_dbg("raw QP: AF_PACKET socket for %s: %s", name,
			  strerror(errno));
		goto err_free;
	}
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)ifindex;
	if (bind(w->sock, (struct sockaddr *)&sll, sizeof(sll))) {
		ret = -errno;
		srdma_dbg("raw QP: bind to %s: %s", name, strerror(errno));
		goto err_close;
	}
	w->efd = eventfd(0, EFD_CLOEXEC);
	if (w->efd < 0) {
		ret = -errno;
		goto err_close;
	}
	ret = -srdma_thread_create_nosig(&w->thread, wire_main, w);
	if (ret)
		goto err_efd;
	w->users = 1;
	w->next = wires;
	wires = w;
	pthread_mutex_unlock(&wire_lock);
	srdma_info("raw QPs of context lid %u: frames on %s (ifindex %u)",
		   ctx->host.lid, name, ifindex);
	return 0;

err_efd:
	close(w->efd);
err_close:
	close(w->sock);
err_free:
	free(w);
err_unlock:
	pthread_mutex_unlock(&wire_lock);
	return ret;
}

void srdma_rawwire_put(struct srdma_context *ctx)
{
	struct wire *w, **pp;
	uint64_t one = 1;

	if (!wire_name())
		return;
	pthread_mutex_lock(&wire_lock);
	for (pp = &wires; (w = *pp) && w->ctx != ctx; pp = &w->next)
		;
	if (!w || --w->users) {
		pthread_mutex_unlock(&wire_lock);
		return;
	}
	*pp = w->next;
	pthread_mutex_unlock(&wire_lock);
	if (write(w->efd, &one, sizeof(one)) != sizeof(one))
		srdma_warn("raw wire: cannot stop the receiver: %s",
			   strerror(errno));
	pthread_join(w->thread, NULL);
	close(w->efd);
	close(w->sock);
	free(w);
}

void srdma_rawwire_send(struct srdma_context *ctx, const uint8_t *frame,
			uint32_t len)
{
	struct wire *w;
	int sock = -1;

	if (!wire_name())
		return;
	pthread_mutex_lock(&wire_lock);
	w = wire_find(ctx);
	if (w)
		sock = w->sock;
	pthread_mutex_unlock(&wire_lock);
	if (sock >= 0 && send(sock, frame, len, MSG_DONTWAIT) < 0)
		srdma_dbg("raw wire: a frame of %u bytes not sent: %s", len,
			  strerror(errno));
}
