// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * progress.c - retrying send WRs that met an empty receive queue (RNR).
 *
 * Such WRs wait in their QP's private send queue. They are retried by the
 * application's own calls (post_send on the QP, poll_cq on its send CQ,
 * which the verbs front end makes call srdma_engine_cq_progress())
 * and, so that an application blocked in ibv_get_cq_event also sees its
 * WR complete, by one timer thread per context. The thread exists only
 * from the first RNR on, sleeps on a condition variable while no WR waits
 * and otherwise wakes every SRDMA_PROGRESS_NS (architecture principle 2:
 * no spinning; an RNR wait is a timer on real hardware too).
 *
 * A QP being progressed outside ctx->lock is pinned with qp->busy, which
 * srdma_qp_destroy() waits out after unpublishing it.
 */
#include <errno.h>
#include <time.h>

#include "core/core.h"
#include "core/dp.h"
#include "engine/engine.h"
#include "engine/progress.h"
#include "transport/net/net.h"
#include "util/log.h"

#define SRDMA_PROGRESS_NS 200000ull	/* 0.2 ms, below the usual RNR timer */

#define SWEEP_MAX 64u

/*
 * Move the prefix of ctx->prog_list that ends with @last to the list's
 * end, so the next sweep starts with the QPs this one left out: with more
 * than SWEEP_MAX waiting, each is still retried every few sweeps (the
 * batch used to be the SWEEP_MAX most recent waiters every time, and an
 * older one was never retried: it waited forever, for a receive posted
 * meanwhile or for a responder that had died). Requires ctx->lock.
 */
static void rotate_after(struct srdma_context *ctx, struct srdma_qp *last)
{
	struct srdma_qp *rest = last->prog_next, *tail;

	if (!rest)
		return;
	for (tail = rest; tail->prog_next; tail = tail->prog_next)
		;
	tail->prog_next = ctx->prog_list;
	ctx->prog_list = rest;
	last->prog_next = NULL;
}

/* Progress the QPs of @ctx with deferred WRs (only those sending to @cq
 * when given). Pins a batch under ctx->lock, runs it without. */
static void sweep(struct srdma_context *ctx, struct srdma_cq *cq)
{
	struct srdma_qp *batch[SWEEP_MAX];
	struct srdma_qp *qp, *last = NULL;
	unsigned int n = 0, i;

	pthread_mutex_lock(&ctx->lock);
	for (qp = ctx->prog_list; qp && n < SWEEP_MAX; qp = qp->prog_next) {
		last = qp;
		if (cq && qp->send_cq != cq)
			continue;
		atomic_fetch_add(&qp->busy, 1);
		batch[n++] = qp;
	}
	if (n == SWEEP_MAX)
		rotate_after(ctx, last);
	pthread_mutex_unlock(&ctx->lock);
	for (i = 0; i < n; i++) {
		srdma_qp_progress(batch[i]);
		atomic_fetch_sub(&batch[i]->busy, 1);
	}
}

void srdma_engine_cq_progress(struct srdma_cq *cq)
{
	if (atomic_load_explicit(&cq->n_pending_qp, memory_order_relaxed))
		sweep(cq->ctx, cq);
}

int srdma_engine_cq_idle(struct srdma_cq *cq)
{
	return srdma_net_progress_from(cq->ctx, cq, 16);
}

void srdma_engine_ctx_blocks(struct srdma_context *ctx)
{
	srdma_net_poll_end(ctx);
}

static void *progress_thread(void *arg)
{
	struct srdma_context *ctx = arg;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->prog_stop) {
		struct timespec ts;

		if (!ctx->n_prog_qp) {
			pthread_cond_wait(&ctx->prog_cond, &ctx->lock);
			continue;
		}
		pthread_mutex_unlock(&ctx->lock);
		sweep(ctx, NULL);
		pthread_mutex_lock(&ctx->lock);
		if (ctx->prog_stop || !ctx->n_prog_qp)
			continue;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += SRDMA_PROGRESS_NS;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&ctx->prog_cond, &ctx->lock, &ts);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

void srdma_progress_need(struct srdma_qp *qp)
{
	struct srdma_context *ctx = qp->ctx;

	pthread_mutex_lock(&ctx->lock);
	qp->prog_next = ctx->prog_list;
	ctx->prog_list = qp;
	if (!ctx->n_prog_qp++) {
		if (!ctx->prog_up && !ctx->prog_stop) {
			if (pthread_create(&ctx->prog_thread, NULL,
					   progress_thread, ctx))
				srdma_warn("no RNR progress thread: WRs wait for the application's next call");
			else
				ctx->prog_up = true;
		}
		pthread_cond_signal(&ctx->prog_cond);
	}
	pthread_mutex_unlock(&ctx->lock);
}

void srdma_progress_forget_locked(struct srdma_qp *qp)
{
	struct srdma_context *ctx = qp->ctx;
	struct srdma_qp **pp;

	for (pp = &ctx->prog_list; *pp; pp = &(*pp)->prog_next) {
		if (*pp == qp) {
			*pp = qp->prog_next;
			ctx->n_prog_qp--;
			break;
		}
	}
}

void srdma_progress_done(struct srdma_qp *qp)
{
	pthread_mutex_lock(&qp->ctx->lock);
	srdma_progress_forget_locked(qp);
	pthread_mutex_unlock(&qp->ctx->lock);
}

void srdma_progress_stop(struct srdma_context *ctx)
{
	bool up;

	pthread_mutex_lock(&ctx->lock);
	ctx->prog_stop = true;
	up = ctx->prog_up;
	ctx->prog_up = false;
	pthread_cond_signal(&ctx->prog_cond);
	pthread_mutex_unlock(&ctx->lock);
	if (up)
		pthread_join(ctx->prog_thread, NULL);
}
