// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * restrack.c - the resource table of a context's control segment: what
 * `srdma status` needs and the data path does not already publish.
 *
 * PDs: a slot per live PD (first free slot, found by a scan under the
 * context lock: PD alloc is rare and the table small), the handle stored
 * with release after the PD is built and cleared before it is freed. A
 * context with more PDs than slots lists the first SRDMA_RT_PD_SLOTS and
 * counts the rest (pd_unlisted); n_pd is always exact.
 *
 * Endpoint counters: the net endpoint keeps its counters in process memory
 * (endpoint.c, struct srdma_net_ep_stats), bumped on the data path; they
 * are mirrored here lazily, never per packet: at every wake-up of the
 * endpoint's progress thread, after its work, and at QP destroy. A
 * polling application may receive inline between that copy and the
 * thread's sleep, so after any change the thread wakes once more within
 * SRDMA_RT_SETTLE_NS (100 ms) and copies again. So status shows the
 * counters as of the last copy (its time is shown with them), and exact
 * ones at most 100 ms after traffic stops.
 *
 * The mirror is a seqlock. Owner threads may race (the progress thread
 * and the application), so a writer first takes the sequence from even to
 * odd with a CAS and simply skips the mirror if that fails: the other
 * writer's copy is as fresh. Readers (any process) retry a bounded number
 * of times and report a torn entry instead of waiting for a dead writer.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "core/restrack.h"
#include "transport/net/net.h"
#include "transport/net/wire.h"

static_assert(SRDMA_DROP_MAX <= SRDMA_RT_EP_DROPS,
	      "every drop cause has a mirror slot");

static struct srdma_shm_rt *rt_of(struct srdma_context *ctx)
{
	return srdma_seg_rt(ctx->host.seg);
}

_Atomic uint32_t *srdma_rt_pd_add(struct srdma_context *ctx, uint32_t handle)
{
	struct srdma_shm_rt *rt = rt_of(ctx);
	uint32_t i;

	atomic_fetch_add_explicit(&rt->n_pd, 1, memory_order_relaxed);
	for (i = 0; i < SRDMA_RT_PD_SLOTS; i++)
		if (!atomic_load_explicit(&rt->pd[i].handle,
					  memory_order_relaxed)) {
			atomic_store_explicit(&rt->pd[i].use, 0,
					      memory_order_relaxed);
			atomic_store_explicit(&rt->pd[i].handle, handle,
					      memory_order_release);
			return &rt->pd[i].use;
		}
	atomic_fetch_add_explicit(&rt->pd_unlisted, 1, memory_order_relaxed);
	return NULL;
}

void srdma_rt_pd_del(struct srdma_context *ctx, uint32_t handle)
{
	struct srdma_shm_rt *rt = rt_of(ctx);
	uint32_t i;

	atomic_fetch_sub_explicit(&rt->n_pd, 1, memory_order_relaxed);
	for (i = 0; i < SRDMA_RT_PD_SLOTS; i++)
		if (atomic_load_explicit(&rt->pd[i].handle,
					 memory_order_relaxed) == handle) {
			atomic_store_explicit(&rt->pd[i].handle, 0,
					      memory_order_release);
			return;
		}
	if (atomic_load_explicit(&rt->pd_unlisted, memory_order_relaxed))
		atomic_fetch_sub_explicit(&rt->pd_unlisted, 1,
					  memory_order_relaxed);
}

/* FNV-1a step over the 32-bit value @v. */
static uint32_t fnv32(uint32_t h, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 16777619u;
	}
	return h;
}

#define ST_FIELD(h, f)                                                         \
	fnv32(fnv32(h, (uint32_t)offsetof(struct srdma_net_qp_stats, f)),      \
	      (uint32_t)sizeof(((struct srdma_net_qp_stats *)0)->f))

uint32_t srdma_rt_stats_layout(void)
{
	uint32_t h = 2166136261u;

	h = fnv32(h, (uint32_t)sizeof(struct srdma_net_qp_stats));
	h = fnv32(h, SRDMA_DROP_MAX);
	h = ST_FIELD(h, tx_pkts);
	h = ST_FIELD(h, rx_pkts);
	h = ST_FIELD(h, tx_bytes);
	h = ST_FIELD(h, rx_bytes);
	h = ST_FIELD(h, retransmits);
	h = ST_FIELD(h, timeouts);
	h = ST_FIELD(h, naks_sent);
	h = ST_FIELD(h, naks_rcvd);
	h = ST_FIELD(h, rnr_sent);
	h = ST_FIELD(h, rnr_rcvd);
	h = ST_FIELD(h, dups_rcvd);
	h = ST_FIELD(h, drops);
	h = ST_FIELD(h, sq_psn);
	h = ST_FIELD(h, rq_psn);
	h = ST_FIELD(h, flags);
	h = ST_FIELD(h, acks_delayed);
	h = ST_FIELD(h, acks_piggybacked);
	h = ST_FIELD(h, acks_coalesced);
	return h ? h : 1;	/* 0 means "not stamped" */
}

void srdma_rt_stamp(struct srdma_context *ctx)
{
	rt_of(ctx)->stats_layout = srdma_rt_stats_layout();
}

bool srdma_rt_ep_mirror(struct srdma_context *ctx)
{
	struct srdma_shm_rt *rt = rt_of(ctx);
	struct srdma_net_ep_stats st;
	uint64_t w[SRDMA_RT_EP_NCOUNTERS];
	struct timespec ts;
	bool changed = false;
	uint32_t seq;
	size_t i;

	if (srdma_net_ep_stats(ctx, &st))
		return false;
	w[SRDMA_RT_EP_RX_DGRAMS] = st.rx_dgrams;
	w[SRDMA_RT_EP_RX_LOCAL] = st.rx_local;
	w[SRDMA_RT_EP_FWD_OUT] = st.fwd_out;
	w[SRDMA_RT_EP_FWD_IN] = st.fwd_in;
	w[SRDMA_RT_EP_TX_DGRAMS] = st.tx_dgrams;
	w[SRDMA_RT_EP_TX_BYTES] = st.tx_bytes;
	w[SRDMA_RT_EP_TX_ERRORS] = st.tx_errors;
	w[SRDMA_RT_EP_WAKEUPS] = st.wakeups;
	w[SRDMA_RT_EP_INLINE_RX] = st.inline_rx;
	w[SRDMA_RT_EP_ICRC_OTHER_ID] = st.icrc_other_id;
	w[SRDMA_RT_EP_TX_GSO_SEGS] = st.tx_gso_segs;
	w[SRDMA_RT_EP_RX_GRO_SEGS] = st.rx_gro_segs;
	w[SRDMA_RT_EP_POLL_HANDOFFS] = st.poll_handoffs;
	w[SRDMA_RT_EP_LONE_ACKS] = st.lone_acks;
	clock_gettime(CLOCK_REALTIME, &ts);

	seq = atomic_load_explicit(&rt->ep_seq, memory_order_relaxed);
	if ((seq & 1) || !atomic_compare_exchange_strong_explicit(
				 &rt->ep_seq, &seq, seq + 1,
				 memory_order_relaxed, memory_order_relaxed))
		return true; /* another owner thread is mirroring right now */
	atomic_thread_fence(memory_order_release);
	/* Only this process writes these: reading them back is exact. */
	for (i = 0; i < SRDMA_RT_EP_NCOUNTERS; i++) {
		changed |= i != SRDMA_RT_EP_WAKEUPS &&
			   atomic_load_explicit(&rt->ep[i],
						memory_order_relaxed) != w[i];
		atomic_store_explicit(&rt->ep[i], w[i], memory_order_relaxed);
	}
	for (i = 0; i < SRDMA_DROP_MAX; i++) {
		changed |= atomic_load_explicit(&rt->ep_drops[i],
						memory_order_relaxed) !=
			   st.drops[i];
		atomic_store_explicit(&rt->ep_drops[i], st.drops[i],
				      memory_order_relaxed);
	}
	atomic_store_explicit(&rt->ep_time_ns,
			      (uint64_t)ts.tv_sec * 1000000000u +
				      (uint64_t)ts.tv_nsec,
			      memory_order_relaxed);
	atomic_store_explicit(&rt->ep_seq, seq + 2, memory_order_release);
	return changed;
}

enum srdma_rt_snap srdma_rt_ep_snapshot(struct srdma_shm_rt *rt,
					struct srdma_rt_ep_snap *out)
{
	uint32_t s1, s2;
	int tries;
	size_t i;

	for (tries = 0; tries < 1000; tries++) {
		s1 = atomic_load_explicit(&rt->ep_seq, memory_order_acquire);
		if (!s1)
			return SRDMA_RT_SNAP_NONE;
		if (s1 & 1) {
			struct timespec ts = {0, 10000}; /* 10 us */

			nanosleep(&ts, NULL);
			continue;
		}
		for (i = 0; i < SRDMA_RT_EP_WORDS; i++)
			out->ep[i] = atomic_load_explicit(&rt->ep[i],
							  memory_order_relaxed);
		for (i = 0; i < SRDMA_RT_EP_DROPS; i++)
			out->drops[i] = atomic_load_explicit(
				&rt->ep_drops[i], memory_order_relaxed);
		out->time_ns = atomic_load_explicit(&rt->ep_time_ns,
						    memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&rt->ep_seq, memory_order_relaxed);
		if (s1 == s2)
			return SRDMA_RT_SNAP_OK;
	}
	return SRDMA_RT_SNAP_TORN;
}
