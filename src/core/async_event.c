// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * async_event.c - the context's asynchronous event queue.
 *
 * Events (QP fatal, CQ overflow, SRQ limit, port active...) are queued in a
 * small ring under the context lock; the context's async_fd is an eventfd
 * in semaphore mode holding one count per queued event, so it polls
 * readable exactly while events wait, and ibv_get_async_event() blocks in
 * read() unless the application made the fd non-blocking.
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "core/core.h"
#include "util/log.h"

void srdma_async_post(struct srdma_context *ctx,
		      const struct ibv_async_event *ev)
{
	uint64_t one = 1;
	bool queued = false;

	pthread_mutex_lock(&ctx->lock);
	if (ctx->aq_len < ARRAY_SIZE(ctx->aq)) {
		ctx->aq[(ctx->aq_head + ctx->aq_len) % ARRAY_SIZE(ctx->aq)] =
			*ev;
		ctx->aq_len++;
		queued = true;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (!queued) {
		srdma_warn("async event %d dropped: queue full",
			   (int)ev->event_type);
		return;
	}
	if (write(ctx->async_efd, &one, sizeof(one)) != sizeof(one))
		srdma_warn("async eventfd write failed");
}

int srdma_async_get(struct srdma_context *ctx, struct ibv_async_event *ev)
{
	uint64_t cnt;

	for (;;) {
		ssize_t n = read(ctx->async_efd, &cnt, sizeof(cnt));

		if (n == sizeof(cnt))
			break;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -EIO;
	}
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->aq_len) {
		pthread_mutex_unlock(&ctx->lock);
		return -EAGAIN;
	}
	*ev = ctx->aq[ctx->aq_head];
	ctx->aq_head = (ctx->aq_head + 1) % ARRAY_SIZE(ctx->aq);
	ctx->aq_len--;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}
