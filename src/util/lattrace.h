/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * lattrace.h - timestamps along the net transport's latency path, for
 * measuring where a one-way trip's time goes (docs/design/net-endpoint.md,
 * "Speed: where the time goes").
 *
 * Compiled out unless the build sets SRDMA_LAT_TRACE (cmake
 * -DSRDMA_LAT_TRACE=ON): then SRDMA_LT(ev) appends (TSC, event) to a
 * process-wide array, and at exit the array goes to
 * $SRDMA_LAT_TRACE_DIR/<pid>.lt when that variable is set (nothing is
 * written otherwise). Two processes on one machine share the TSC, so
 * their traces merge into one timeline (bench/lattrace.py).
 * In default builds SRDMA_LT() is nothing at all.
 */
#ifndef SRDMA_UTIL_LATTRACE_H
#define SRDMA_UTIL_LATTRACE_H

/* The events; the numbers are the file format (bench/lattrace.py). */
enum srdma_lt_ev {
	SRDMA_LT_POST = 1,	/* ibv_post_send entered */
	SRDMA_LT_TX0 = 2,	/* about to sendmmsg */
	SRDMA_LT_TX1 = 3,	/* sendmmsg returned */
	SRDMA_LT_PEND = 4,	/* inline path: a datagram is queued */
	SRDMA_LT_RX1 = 5,	/* recvmmsg returned datagrams */
	SRDMA_LT_DRAIN = 6,	/* the drain's datagrams are handled */
	SRDMA_LT_CQHIT = 7,	/* ibv_poll_cq returns completions */
	SRDMA_LT_THREAD = 8,	/* the progress thread woke for the socket */
	SRDMA_LT_RX0 = 9,	/* about to recvmmsg */
	SRDMA_LT_PKT = 10,	/* one received packet handled */
	SRDMA_LT_ICRC = 11,	/* a packet parsed, its ICRC checked */
	SRDMA_LT_QPIN = 12,	/* its QP found: to the requester/responder */
	SRDMA_LT_NRPOST = 13,	/* the net requester has the WQE */
	SRDMA_LT_FLUSH = 14,	/* the requester's batch goes to the endpoint */
	SRDMA_LT_SRAW = 15,	/* the endpoint's send entered */
	SRDMA_LT_YIELD = 16,	/* an idle poll calls sched_yield */
	SRDMA_LT_YRET = 17,	/* sched_yield returned */
	SRDMA_LT_PMOFF = 18,	/* the thread takes the socket out (poll mode) */
	SRDMA_LT_PMON = 19,	/* the thread takes the socket back */
	SRDMA_LT_LONE = 20,	/* a lone ACK ends poll mode */
	SRDMA_LT_NAP = 21,	/* an idle poll naps on the socket */
	SRDMA_LT_ARM = 22,	/* the application arms a CQ or waits for an event */
};

#ifdef SRDMA_LAT_TRACE
/**
 * srdma_lt_mark() - record event @ev now (thread-safe, lock-free).
 * @ev: an srdma_lt_ev.
 */
void srdma_lt_mark(int ev);
#define SRDMA_LT(ev) srdma_lt_mark(ev)
#else
#define SRDMA_LT(ev) ((void)0)
#endif

#endif
