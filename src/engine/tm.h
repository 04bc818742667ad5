/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * tm.h - the receiving device's half of tag matching: a message that
 * reaches a QP on a tag-matching SRQ is matched against the SRQ's tag
 * list (core/srq_tm.h) by the responder, whichever transport brought it,
 * and a matched rendezvous is read from the sender by the host transport.
 * Design: docs/design/tag-matching.md.
 */
#ifndef SRDMA_ENGINE_TM_H
#define SRDMA_ENGINE_TM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/dp.h"
#include "engine/responder.h"

/**
 * srdma_tm_match() - match the message starting with @msg (@n iovecs,
 * @len bytes, the caller's memory) against the tag list at @tm_off of
 * @seg, and fill @w->tm (and, on a match, @w's buffers from the tag).
 * @rndv_offload: a matched rendezvous is read by the caller
 *                (SRDMA_TM_RNDV) rather than left to the application
 *                (SRDMA_TM_RNDV_SW, the message lands in the tag's buffer)
 * @tmp:          the list, for srdma_tm_consume()
 *
 * Context: the SRQ's rq.rlock held (responder.c).
 * Return: 1 matched (@w is the tag's buffer), 0 not matched (@w->tm says
 * unexpected or NO_TAG: the caller takes the SRQ's head receive), -EIO
 * (the list in shared memory is not usable).
 */
int srdma_tm_match(struct srdma_seg_hdr *seg, uint64_t tm_off,
		   const struct iovec *msg, uint32_t n, uint64_t len,
		   bool rndv_offload, struct srdma_rwqe *w, void **tmp);

/**
 * srdma_tm_consume() - the message of @w is being delivered: its matched
 * tag leaves the list (a rendezvous being read stays, busy, until
 * srdma_tm_rndv_host() is done), an unexpected message is counted.
 * Context: rq.rlock held, @tm from srdma_tm_match().
 */
void srdma_tm_consume(void *tm, const struct srdma_rwqe *w);

/**
 * srdma_tm_cqe() - turn the receive CQE @c of @w into the CQE a TM SRQ
 * reports (opcode, TM flags, tag and app_ctx, byte_len without the
 * headers). Return: the CQ slot it goes to (the SRQ's).
 */
uint32_t srdma_tm_cqe(const struct srdma_rwqe *w, struct srdma_shm_cqe *c);

/**
 * srdma_tm_rndv_host() - finish a matched rendezvous on one host, as the
 * receiving device does after matching: read the sender's buffer named
 * by the RVH (the sender's QP @qpn of @ctx is the READ's responder: its
 * REMOTE_READ access and the one key check), write it into the tag's
 * buffer at target @t, complete the tag (IBV_WC_TM_DATA_VALID or an error
 * status) and send the sender a FIN message (its TMH: opcode FIN, the
 * app_ctx and tag) into @qpn's receive queue.
 * Context: the sender's thread, no lock held but qp->sq_lock; called
 * after the sender's own send completion was posted.
 */
void srdma_tm_rndv_host(struct srdma_context *ctx, uint32_t qpn,
			struct srdma_target *t, const struct srdma_rwqe *w);

#endif
