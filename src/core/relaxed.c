// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * relaxed.c - deferred invalidation of relaxed MRs (the Solaris OFUV
 * extension, verbs-semantics §7).
 *
 * ibv_dereg_mr_relaxed() only marks an MR PENDING: its key keeps granting
 * access ("a finite time gap") and it keeps its PD use. Pending MRs are
 * invalidated, with the full dereg ordering of §6, when
 *   - ibv_flush_relaxed_mr(pd) asks for it,
 *   - ibv_dealloc_pd(pd) needs the PD free,
 *   - more than SRDMA_MAX_FMR/4 are pending (watermark), or the pool is
 *     exhausted on registration (implicit flush),
 *   - one has been pending for RELAXED_DELAY_NS: a per-context timer
 *     thread, started on the first pending MR, sleeps on a condition
 *     variable until the oldest deadline (it never spins); while another
 *     flush drains it waits on that variable too, for the flush's signal.
 * All list state is under ctx->lock; a flush takes its victims off the
 * list before dropping the lock to drain them, and sets relaxed_flushing
 * so a concurrent registration that finds the pool empty answers EAGAIN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "util/log.h"

#define RELAXED_DELAY_NS (100ull * 1000 * 1000)

void srdma_relaxed_unlink_locked(struct srdma_context *ctx,
				 struct srdma_mr *mr)
{
	struct srdma_mr **pp;

	if (mr->rstate != SRDMA_RELAXED_PENDING)
		return;
	for (pp = &ctx->rpending; *pp; pp = &(*pp)->next_pending) {
		if (*pp != mr)
			continue;
		*pp = mr->next_pending;
		if (ctx->rpending_tail == &mr->next_pending)
			ctx->rpending_tail = pp;
		ctx->n_rpending--;
		mr->pd->n_pending--;
		mr->rstate = SRDMA_RELAXED_LIVE;
		mr->next_pending = NULL;
		return;
	}
}

void srdma_relaxed_flush_locked(struct srdma_context *ctx,
				struct srdma_pd *pd, bool only_expired)
{
	uint64_t now = srdma_now_ns();
	struct srdma_mr *stack[64], **victims = stack;
	struct srdma_mr **pp;
	unsigned int n = 0, cap = 64;

	ctx->relaxed_flushing++;
	for (pp = &ctx->rpending; *pp;) {
		struct srdma_mr *mr = *pp;

		if ((pd && mr->pd != pd) ||
		    (only_expired &&
		     now - mr->pending_since_ns < RELAXED_DELAY_NS)) {
			pp = &mr->next_pending;
			continue;
		}
		if (n == cap) {
			struct srdma_mr **bigger;

			bigger = malloc(sizeof(*bigger) * cap * 2);
			if (!bigger)
				break;	/* the rest waits for the next flush */
			memcpy(bigger, victims, sizeof(*bigger) * n);
			if (victims != stack)
				free(victims);
			victims = bigger;
			cap *= 2;
		}
		*pp = mr->next_pending;
		ctx->n_rpending--;
		mr->pd->n_pending--;
		mr->next_pending = NULL;
		srdma_handle_del(mr, SRDMA_OBJ_MR);
		victims[n++] = mr;
	}
	ctx->rpending_tail = pp;
	while (*ctx->rpending_tail)
		ctx->rpending_tail = &(*ctx->rpending_tail)->next_pending;
	if (n)
		srdma_mr_invalidate_locked(ctx, victims, n);
	if (victims != stack)
		free(victims);
	/* The timer waits for the last flush to end (relaxed_timer). */
	if (!--ctx->relaxed_flushing)
		pthread_cond_signal(&ctx->relaxed_cond);
}

static void *relaxed_timer(void *arg)
{
	struct srdma_context *ctx = arg;

	pthread_mutex_lock(&ctx->lock);
	while (!ctx->relaxed_stop) {
		struct timespec ts;
		uint64_t deadline;

		if (!ctx->rpending) {
			pthread_cond_wait(&ctx->relaxed_cond, &ctx->lock);
			continue;
		}
		deadline = ctx->rpending->pending_since_ns + RELAXED_DELAY_NS;
		if (srdma_now_ns() < deadline) {
			ts.tv_sec = (time_t)(deadline / 1000000000ull);
			ts.tv_nsec = (long)(deadline % 1000000000ull);
			pthread_cond_timedwait(&ctx->relaxed_cond, &ctx->lock,
					       &ts);
			continue;
		}
		/*
		 * A flush is draining with the lock dropped and must retake
		 * it to finish: wait for its signal, never loop holding the
		 * lock (that starves the flusher forever).
		 */
		if (ctx->relaxed_flushing) {
			pthread_cond_wait(&ctx->relaxed_cond, &ctx->lock);
			continue;
		}
		srdma_relaxed_flush_locked(ctx, NULL, true);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

void srdma_relaxed_defer_locked(struct srdma_context *ctx,
				struct srdma_mr *mr)
{
	mr->rstate = SRDMA_RELAXED_PENDING;
	mr->pending_since_ns = srdma_now_ns();
	mr->next_pending = NULL;
	*ctx->rpending_tail = mr;
	ctx->rpending_tail = &mr->next_pending;
	ctx->n_rpending++;
	mr->pd->n_pending++;
	/* Still grants access until invalidated. */
	srdma_key_set_state(&ctx->kt.ent[mr->slot], SRDMA_KEY_PENDING);

	if (ctx->n_rpending > SRDMA_MAX_FMR / 4 && !ctx->relaxed_flushing) {
		srdma_relaxed_flush_locked(ctx, NULL, false);
		return;
	}
	if (!ctx->relaxed_thread_up) {
		pthread_condattr_t ca;

		/* The condvar must time out on CLOCK_MONOTONIC. */
		pthread_cond_destroy(&ctx->relaxed_cond);
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&ctx->relaxed_cond, &ca);
		pthread_condattr_destroy(&ca);
		if (!pthread_create(&ctx->relaxed_thread, NULL, relaxed_timer,
				    ctx))
			ctx->relaxed_thread_up = true;
		else
			srdma_warn("no timer thread: relaxed MRs wait for a flush");
	} else {
		pthread_cond_signal(&ctx->relaxed_cond);
	}
}

void srdma_relaxed_stop(struct srdma_context *ctx)
{
	bool up;

	pthread_mutex_lock(&ctx->lock);
	ctx->relaxed_stop = true;
	up = ctx->relaxed_thread_up;
	pthread_cond_signal(&ctx->relaxed_cond);
	pthread_mutex_unlock(&ctx->lock);
	if (up)
		pthread_join(ctx->relaxed_thread, NULL);
	pthread_mutex_lock(&ctx->lock);
	ctx->relaxed_thread_up = false;
	pthread_mutex_unlock(&ctx->lock);
}

int srdma_mr_dereg_relaxed(struct ibv_mr *ibmr)
{
	struct srdma_context *ctx;
	struct srdma_mr *mr;
	int ret = 0;

	if (!srdma_handle_check(ibmr, SRDMA_OBJ_MR))
		return -EINVAL;
	mr = container_of(ibmr, struct srdma_mr, ibmr);
	ctx = to_sctx(ibmr->context);	/* immutable; mr->pd is not */
	pthread_mutex_lock(&ctx->lock);
	if (!srdma_handle_check(ibmr, SRDMA_OBJ_MR) ||
	    !(mr->flags & SRDMA_MRF_RELAXED) ||
	    mr->rstate == SRDMA_RELAXED_PENDING) {
		ret = -EINVAL;
		goto out;
	}
	if (srdma_mr_sync_bound_locked(ctx, mr)) {
		ret = -EBUSY;
		goto out;
	}
	if (ctx->relaxed_immediate) {
		srdma_handle_del(mr, SRDMA_OBJ_MR);
		srdma_mr_invalidate_locked(ctx, &mr, 1);
		goto out;
	}
	srdma_relaxed_defer_locked(ctx, mr);
out:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int srdma_mr_flush_relaxed(struct ibv_pd *ibpd)
{
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);
	struct srdma_context *ctx;

	if (!pd)
		return -EINVAL;
	ctx = pd->ctx;
	pthread_mutex_lock(&ctx->lock);
	/* A flush already draining took its victims off the list; ours
	 * are those still listed, so flushing again is safe. */
	if (pd->n_pending)
		srdma_relaxed_flush_locked(ctx, pd, false);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}
