/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * progress.h - inside the engine: send WQEs deferred behind an RNR (the
 * requester's, requester.c) and what retries them (progress.c): the
 * application's own calls and a per-context timer thread that exists
 * only while such WQEs wait.
 */
#ifndef SRDMA_ENGINE_PROGRESS_H
#define SRDMA_ENGINE_PROGRESS_H

#include "core/core.h"
#include "core/dp.h"

/* Retry the deferred WRs of @qp (takes sq_lock); from poll and the timer. */
void srdma_qp_progress(struct srdma_qp *qp);
/* Complete every send of @qp not yet completed (deferred by RNR, or in
 * its net requester) with IBV_WC_WR_FLUSH_ERR. sq_lock. */
void srdma_sq_flush_locked(struct srdma_qp *qp);
/* Drop the deferred sends of @qp without completions. sq_lock. */
void srdma_sq_drop_locked(struct srdma_qp *qp);

/* A QP got / lost its first / last deferred WR (takes ctx->lock). */
void srdma_progress_need(struct srdma_qp *qp);
void srdma_progress_done(struct srdma_qp *qp);
/**
 * srdma_progress_forget_locked() - take @qp off the list of QPs that
 * sweeps pin (no-op if it is not on it): after this, only a sweep that
 * pinned it before can still touch it (qp->busy). Requires ctx->lock.
 */
void srdma_progress_forget_locked(struct srdma_qp *qp);
/* Stop the deferred-send progress thread; at context close. */
void srdma_progress_stop(struct srdma_context *ctx);

#endif
