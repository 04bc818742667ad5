/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * netfault.h - seeded fault injection for the net transport: datagrams
 * lost, duplicated, reordered or delayed on purpose, in either direction,
 * so the reliability tests are deterministic (issue 10, "faults on
 * purpose").
 *
 * The endpoint owns one instance per context (SRDMA_NET_FAULT, see
 * srdma_netfault_from_env()) and routes every datagram it sends through
 * srdma_netfault_tx() and every datagram it receives through
 * srdma_netfault_rx(); these call back at once (0, 1 or 2 times), or keep
 * a copy to release later from srdma_netfault_tick().
 *
 * Spec: comma-separated items KEY=VALUE, KEY one of
 *   loss     probability that a datagram is dropped
 *   dup      probability that it is delivered twice
 *   reorder  probability that it is held back until the next datagram of
 *            the same direction has gone (or 1 ms has passed)
 *   delay    every datagram is held this long (order kept); a time with
 *            unit ns, us, ms or s (no unit: µs)
 * A probability is "N%" (0..100) or a plain fraction 0..1. A KEY applies
 * to both directions; "tx.KEY" or "rx.KEY" to one. Example:
 *   SRDMA_NET_FAULT=loss=1%,dup=0.5%,reorder=1%,delay=200us
 *   SRDMA_NET_FAULT=tx.loss=10%,rx.dup=1%
 *
 * Determinism: each direction draws from its own stream, derived from the
 * seed (SRDMA_NET_FAULT_SEED, default 1) and a caller-given salt (so two
 * contexts of one run differ, and a rerun repeats them), and every
 * datagram draws the same three numbers whatever the rates: the n-th
 * datagram of a direction meets the same fate in every run, and changing
 * one rate does not move the others' choices.
 *
 * Concurrency: every function may be called from any thread; an internal
 * mutex (a leaf) guards the streams and the held datagrams, and is never
 * held while a callback runs, so a callback may send (re-enter
 * srdma_netfault_tx()).
 */
#ifndef SRDMA_TRANSPORT_NET_NETFAULT_H
#define SRDMA_TRANSPORT_NET_NETFAULT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "transport/net/wire.h"

struct srdma_netfault;

/* Send one datagram for real. Return: 0 or -errno (passed back). */
typedef int (*srdma_netfault_emit_fn)(void *arg,
				      const struct srdma_wire_path *p,
				      const struct iovec *iov, int n);
/* Hand one received datagram (@len bytes at @buf, valid during the call)
 * to the transport. */
typedef void (*srdma_netfault_deliver_fn)(void *arg,
					  const struct srdma_wire_path *p,
					  const uint8_t *buf, size_t len);

enum srdma_netfault_dir {
	SRDMA_NETFAULT_TX = 0,
	SRDMA_NETFAULT_RX = 1,
};

/* What the injector did, per direction. */
struct srdma_netfault_stats {
	uint64_t seen[2];      /* datagrams offered */
	uint64_t lost[2];      /* dropped on purpose */
	uint64_t duped[2];     /* delivered twice */
	uint64_t reordered[2]; /* held back behind the next one */
	uint64_t delayed[2];   /* held for the delay */
	uint64_t held[2];      /* held right now */
};

/**
 * srdma_netfault_new() - an injector for @spec (syntax above).
 * @seed: stream seed (SRDMA_NET_FAULT_SEED)
 * @salt: per-instance value mixed into the seed (e.g. the context's id)
 * Return: the injector; NULL with errno 0 when @spec is NULL or empty (no
 * faults: pass NULL to the other functions); NULL with errno EINVAL for a
 * bad spec (logged) or ENOMEM.
 */
struct srdma_netfault *srdma_netfault_new(const char *spec, uint64_t seed,
					  uint64_t salt);

/**
 * srdma_netfault_from_env() - srdma_netfault_new() from SRDMA_NET_FAULT
 * and SRDMA_NET_FAULT_SEED (decimal or 0x hex; default 1).
 * Return: as srdma_netfault_new() (a bad seed is EINVAL too).
 */
struct srdma_netfault *srdma_netfault_from_env(uint64_t salt);

/**
 * srdma_netfault_tx() - send the datagram @iov/@n on @p through the
 * injector: emit() is called now 0, 1 or 2 times, or a copy is held for
 * srdma_netfault_tick() (which may also release earlier held datagrams
 * here, after this one). @f NULL: emit() once, nothing else.
 * @now: CLOCK_MONOTONIC, ns
 * Return: 0, or the first error emit() returned for this datagram.
 */
int srdma_netfault_tx(struct srdma_netfault *f, const struct srdma_wire_path *p,
		      const struct iovec *iov, int n, uint64_t now,
		      srdma_netfault_emit_fn emit, void *arg);

/**
 * srdma_netfault_rx() - the same for a received datagram (@len bytes at
 * @buf, which the caller may reuse on return: held datagrams are copies):
 * deliver() is called 0, 1 or 2 times now, or later from the tick.
 */
void srdma_netfault_rx(struct srdma_netfault *f,
		       const struct srdma_wire_path *p, const uint8_t *buf,
		       size_t len, uint64_t now,
		       srdma_netfault_deliver_fn deliver, void *arg);

/**
 * srdma_netfault_tick() - release the held datagrams whose time has come
 * at @now (sent ones through @emit_tx, received ones through @deliver_rx,
 * oldest first). A NULL callback leaves its direction held: a caller that
 * holds locks a delivery takes (the send path) releases sent ones only.
 * Return: the next time something held is due (ns), 0 for nothing held.
 */
uint64_t srdma_netfault_tick(struct srdma_netfault *f, uint64_t now,
			     srdma_netfault_emit_fn emit_tx,
			     srdma_netfault_deliver_fn deliver_rx, void *arg);

/* Copy the counters out (zeros for NULL). */
void srdma_netfault_stats(struct srdma_netfault *f,
			  struct srdma_netfault_stats *st);

/* Free @f and drop whatever it still holds (NULL: no-op). */
void srdma_netfault_free(struct srdma_netfault *f);

#endif
