/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * net.h - the net transport: RoCEv2 packets over UDP sockets, between
 * hosts (docs/design/net.md).
 *
 * Pieces, each in its own file:
 *   wire.c      bytes <-> struct srdma_pkt, ICRC           (wire.h)
 *   gid.c       the GID table from the namespace's interfaces (gid.h)
 *   endpoint.c  per context: the UDP sockets on port 4791 shared by every
 *               context of the host, the progress thread, timers, pcap,
 *               fault injection, drop counters, dispatch by QPN
 *   req.c       requester + completer of a net QP: segmentation, PSNs,
 *               the window, retransmission, ACK/NAK/RNR handling, READ
 *               responses and atomic ACKs, our CQEs
 *   resp.c      responder of a net QP: ePSN, duplicates and replay,
 *               ACK/NAK/RNR NAK, READ responses, atomic ACKs; the checks
 *               and the memory access are the engine's responder
 *               (engine/responder.h), shared with the host transport
 *
 * Threads: the application's (post_send, poll_cq, which may drive
 * progress inline) and one progress thread per context that has a net QP,
 * which blocks in the kernel when there is nothing to do.
 *
 * Locks: the requester side of a QP is under qp->sq_lock (as the rest of
 * the send queue); the responder side under nq->resp_lock. Lock order:
 * qp->sq_lock, then nq->resp_lock, then the engine's (dp.h); the
 * endpoint's own locks are leaves (never held while calling req.c or
 * resp.c).
 */
#ifndef SRDMA_TRANSPORT_NET_NET_H
#define SRDMA_TRANSPORT_NET_NET_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "util/fastclock.h"
#include "transport/net/wire.h"

struct srdma_context;
struct srdma_qp;
struct srdma_swqe;
struct srdma_net_ctx;			/* endpoint.c */
struct srdma_netreq;			/* req.c */
struct srdma_netresp;			/* resp.c */

/* ---- configuration --------------------------------------------------- */

enum srdma_transport_mode {
	SRDMA_TRANSPORT_AUTO = 0,	/* host if the peer is in the local
					 * registry, else net */
	SRDMA_TRANSPORT_HOST,
	SRDMA_TRANSPORT_NET,
};

/* SRDMA_TRANSPORT, parsed once. Context: any thread. */
enum srdma_transport_mode srdma_transport_mode(void);

/**
 * srdma_net_dest() - does the net transport serve a destination with
 * address vector @ah and QPN @dqpn? Only with an Ethernet port and a GRH:
 * false (host) when the destination GID is one of this namespace's and
 * the QPN's context is live in the local registry, in our network and
 * PID namespaces, and cross-memory attach works both ways, unless
 * SRDMA_TRANSPORT=net; true otherwise (SRDMA_TRANSPORT=host: never).
 * Context: any thread; no lock needed.
 */
bool srdma_net_dest(struct srdma_context *ctx, const struct ibv_ah_attr *ah,
		    uint32_t dqpn);

/**
 * srdma_net_dest_why() - srdma_net_dest(), and why: @why receives a
 * static string naming the reason for the choice (for the log).
 * Context: any thread; may probe the peer with one system call, once per
 * peer process.
 */
bool srdma_net_dest_why(struct srdma_context *ctx,
			const struct ibv_ah_attr *ah, uint32_t dqpn,
			const char **why);

/**
 * srdma_net_host_reaches() - can the host transport deliver to QPN @qpn
 * (its context live in our registry, our namespaces, memory attachable)?
 * A multicast sender delivers on this host to those and leaves the rest
 * to the wire (docs/design/multicast.md). Context: any thread.
 */
bool srdma_net_host_reaches(struct srdma_context *ctx, uint32_t qpn);

/**
 * srdma_net_mcast_join() - an Ethernet port's context attached its first
 * QP to multicast group @mgid: open the endpoint if needed and join the
 * group's IP address (IPv4-mapped or IPv6) on every interface of the GID
 * table, so the kernel hands the endpoint packets other hosts send to it.
 * Counted per MGID: later attaches only count.
 * Context: any thread. Return: 0 or -errno (no endpoint, no memory).
 */
int srdma_net_mcast_join(struct srdma_context *ctx, const uint8_t mgid[16]);
/* srdma_net_mcast_leave() - undo one srdma_net_mcast_join(); the last
 * leaves the IP group. Context: any thread. */
void srdma_net_mcast_leave(struct srdma_context *ctx, const uint8_t mgid[16]);

/* The endpoint's side of multicast (mcast_net.c, endpoint.c). */
/* Socket options of a new endpoint's UDP socket: no multicast loopback,
 * only the groups it joined. */
void srdma_net_mcast_sockopts(int fd);
/* False when SRDMA_NET_MCAST=0: multicast stays on this host (no IP
 * group membership, nothing sent to a group's address). Any thread. */
bool srdma_net_mcast_wire(void);
/* The endpoint's UDP socket (opening the endpoint if needed), or -errno. */
int srdma_net_udp_fd(struct srdma_context *ctx);
/* Our QPs attached to @mgid, up to @max into @qpn; returns how many. */
unsigned int srdma_net_mcast_targets(struct srdma_context *ctx,
				     const uint8_t mgid[16], uint32_t *qpn,
				     unsigned int max);

/* ---- per-QP state ------------------------------------------------------ */

/* Counters of one net QP, for `srdma status` and the tests (relaxed).
 * They live in the context's shared segment (ring arena), so `srdma
 * status` in another process can read them: the layout is ABI. */
struct srdma_net_qp_stats {
	_Atomic uint64_t tx_pkts, rx_pkts;
	_Atomic uint64_t tx_bytes, rx_bytes;
	_Atomic uint64_t retransmits;	/* packets sent again */
	_Atomic uint64_t timeouts;	/* retransmit timer expiries */
	_Atomic uint64_t naks_sent, naks_rcvd;
	_Atomic uint64_t rnr_sent, rnr_rcvd;
	_Atomic uint64_t dups_rcvd;
	_Atomic uint64_t drops[SRDMA_DROP_MAX];
	/* PSNs for `srdma status`: the requester's next PSN to send and the
	 * responder's expected PSN. qp_net.c sets them at RTS / RTR; req.c
	 * and resp.c keep them current. */
	_Atomic uint32_t sq_psn, rq_psn;
	_Atomic uint32_t flags;		/* SRDMA_NET_ST_* (qp_net.c) */
	/* Delayed ACKs (resp.c): ACKs held back, and of those, the ones
	 * that left right after one of our requests (the rest: timer,
	 * another answer, error or destroy). */
	_Atomic uint64_t acks_delayed, acks_piggybacked;
	/* Requests of ours that left without a held ACK, which waited for
	 * a later one (coalescing, resp.c). */
	_Atomic uint64_t acks_coalesced;
};

/* srdma_net_qp_stats.flags */
enum {
	SRDMA_NET_ST_CONNECTED = 1u << 0, /* RC/UC peer served by net */
	SRDMA_NET_ST_REGISTERED = 1u << 1, /* reachable from the wire */
};

/*
 * The net half of a QP. Created with the QP when the port's link layer is
 * Ethernet (srdma_net_qp_create), used once the QP reaches RTR with a
 * destination that the net transport serves (RC/UC: @connected), or for
 * every UD QP. Reachable from the endpoint's dispatch only while
 * registered (srdma_net_qp_register..unregister).
 */
struct srdma_net_qp {
	struct srdma_qp *qp;		/* immutable */
	struct srdma_context *ctx;	/* immutable */
	uint32_t qpn;			/* immutable */
	/* Path of an RC/UC QP, set at RTR (sq_lock and resp_lock both held
	 * to write; either to read). */
	bool connected;			/* RC/UC QP uses the net transport */
	struct srdma_wire_path path;	/* our GID -> peer GID, ports */
	uint32_t dqpn;
	uint32_t mtu;			/* path MTU, bytes (256..4096) */
	uint8_t tclass, hop_limit;
	struct srdma_netreq *req;	/* sq_lock */
	pthread_mutex_t resp_lock;
	struct srdma_netresp *resp;	/* resp_lock */
	/* Earliest requester timer (retransmit or RNR), 0 for none; set by
	 * req.c, read by the endpoint's timer scan. CLOCK_MONOTONIC ns
	 * (srdma_net_now_ns); lowering it: call srdma_net_kick(). */
	_Atomic uint64_t deadline_ns;
	/*
	 * Delayed ACK (net-responder.md, "ACK timing"). ack_pending: the
	 * ACK the responder holds back, 0 for none, else
	 * SRDMA_NET_ACK_HELD | MSN << 24 | PSN; stored under resp_lock,
	 * taken with an atomic exchange by whoever sends it
	 * (srdma_netresp_ack_take). ack_due_ns: when it must leave at the
	 * latest (endpoint timer scan), 0 for none. req_tx_ns: when the
	 * requester last sent a request (req.c), which is what makes an
	 * ACK worth holding: a reply is likely to follow.
	 */
	_Atomic uint64_t ack_pending;
	_Atomic uint64_t ack_due_ns;
	_Atomic uint64_t req_tx_ns;
	/* When the responder last executed the end of a SEND or WRITE on
	 * this RC QP (resp.c), 0 for never: requests come to us too, so an
	 * ACK that arrives alone was held by a ping-pong peer and its reply
	 * is on the way (req.c, srdma_net_lone_ack). Relaxed. */
	_Atomic uint64_t req_rx_ns;
	/*
	 * ACK coalescing (net-responder.md, "Coalescing"), relaxed atomics:
	 * ack_skip: SRDMA_NET_ACK_SKIPPED | the MSN of the held ACK when a
	 * request of ours last left without it, 0 when it has not
	 * (srdma_netresp_ack_ride sets, ack_take clears); ack_held_ns:
	 * when the held ACK was first held; ack_last_msn: the MSN of the
	 * last held ACK taken; ack_off_ns: no coalescing before this time
	 * (a coalesced ACK had to leave alone at its deadline and the peer
	 * had sent nothing since: it may have waited for it);
	 * ack_backoff_ns: the length of the next such pause, 0 once the
	 * peer sent on while we held one (it did not wait); ack_fails:
	 * such lone ACKs in a row, the pause starting at the third.
	 */
	_Atomic uint32_t ack_skip;
	_Atomic uint32_t ack_fails;
	_Atomic uint32_t ack_last_msn;
	_Atomic uint64_t ack_held_ns;
	_Atomic uint64_t ack_off_ns;
	_Atomic uint64_t ack_backoff_ns;
	struct srdma_net_qp_stats *st;	/* immutable pointer, never NULL
					 * after srdma_net_qp_create() */
	bool registered;		/* sq_lock: srdma_net_qp_register()
					 * succeeded (qp_net.c) */
	uint64_t st_off;		/* immutable: arena offset of *st */
	/* endpoint.c bookkeeping */
	_Atomic uint32_t refs;		/* dispatch pins */
	struct srdma_net_qp *ep_next;	/* endpoint lock */
};

/**
 * srdma_net_qp_create() - the net half of a new QP (not yet reachable).
 * Return: 0 with qp->net set, or -ENOMEM. Context: QP create.
 */
int srdma_net_qp_create(struct srdma_qp *qp);
/**
 * srdma_net_qp_destroy() - unregister (waits out dispatch pins), flush
 * the requester, free. Context: QP destroy, nothing held.
 */
void srdma_net_qp_destroy(struct srdma_qp *qp);
/**
 * srdma_net_qp_modify() - apply a modify_qp to the net half: RTR sets
 * the path from the address vector (transport chosen here: RC/UC QPs
 * whose destination is not served by `host` become @connected), RTS the
 * send PSN and timers, RESET clears both sides, ERR flushes.
 * Return: 0 or -errno (-EINVAL: the AV names no usable GID).
 * Context: srdma_qp_modify(), sq_lock held.
 */
int srdma_net_qp_modify(struct srdma_qp *qp, const struct ibv_qp_attr *attr,
			int mask);

/* ---- endpoint (endpoint.c) -------------------------------------------- */

/*
 * The UDP source port of every packet the endpoint sends: it sends from
 * its socket bound to 4791 (docs/design/net-endpoint.md). The ICRC covers
 * the source port, so a builder must use this value: srdma_net_qp_modify
 * writes it into nq->path.sport at RTR, and UD senders put it in the path
 * of every packet.
 * srdma_net_send refuses a path with another sport.
 */
#define SRDMA_NET_SPORT SRDMA_ROCE_PORT

/* The clock of nq->deadline_ns and srdma_net_kick(): CLOCK_MONOTONIC, ns,
 * read from the TSC where the kernel trusts it (util/fastclock.h): this
 * process's own deadlines and intervals only. */
static inline uint64_t srdma_net_now_ns(void)
{
	return srdma_fastclock_ns();
}

/* Counters of one endpoint (relaxed), for tests and `srdma status`. */
struct srdma_net_ep_stats {
	_Atomic uint64_t rx_dgrams;	/* received on the UDP socket (the
					 * packets of a GRO datagram each) */
	_Atomic uint64_t rx_local;	/* for our LID, handled here (direct
					 * or forwarded to us) */
	_Atomic uint64_t fwd_out;	/* forwarded to another context */
	_Atomic uint64_t fwd_in;	/* forwarded to us by another */
	_Atomic uint64_t tx_dgrams, tx_bytes, tx_errors;
	_Atomic uint64_t wakeups;	/* progress thread wake-ups */
	_Atomic uint64_t inline_rx;	/* received by srdma_net_progress */
	_Atomic uint64_t drops[SRDMA_DROP_MAX]; /* every drop, by cause */
	/* IPv4 ICRCs right only for another IP identification or DF
	 * (SRDMA_NET_ICRC=lenient; wire.h srdma_wire_icrc_verify) */
	_Atomic uint64_t icrc_other_id;
	/* UDP GSO (docs/design/net-endpoint.md, "Speed"): datagrams sent as
	 * segments of a GSO send (tx_dgrams counts them too) */
	_Atomic uint64_t tx_gso_segs;
	/* UDP GRO: packets that arrived as segments of a GRO datagram
	 * after its first (rx_dgrams counts every packet) */
	_Atomic uint64_t rx_gro_segs;
	/* the progress thread left the UDP socket to a polling application
	 * (poll mode, srdma_net_progress) */
	_Atomic uint64_t poll_handoffs;
	/* poll mode ended early by a lone ACK (srdma_net_lone_ack) */
	_Atomic uint64_t lone_acks;
	/* an application polling nothing for a while yielded its CPU
	 * (srdma_net_progress, net-endpoint.md "Sharing a CPU") */
	_Atomic uint64_t idle_yields;
};

/* Copy @ctx's endpoint counters. Return: 0, -ENOENT (no endpoint). */
int srdma_net_ep_stats(struct srdma_context *ctx,
		       struct srdma_net_ep_stats *out);

/* One datagram of srdma_net_send_batch(). */
struct srdma_net_msg {
	const struct srdma_wire_path *path;
	const struct iovec *iov;
	int n;
};

/**
 * srdma_net_send_batch() - srdma_net_send() for @n datagrams in as few
 * system calls as possible (sendmmsg), consecutive datagrams of one path
 * and one length (the last may be shorter) as one UDP GSO send
 * (SRDMA_NET_GSO=0: never). Each keeps its own ICRC trailer, except an
 * IPv4 one that goes as segment i > 0 of a GSO send: the kernel gives it
 * identification i, and the endpoint sends a trailer patched for it
 * (srdma_wire_icrc_id_delta; the caller's buffers are not written).
 * Return: how many were sent (the first ones), or -errno if none was.
 * Context: any thread.
 */
int srdma_net_send_batch(struct srdma_context *ctx,
			 const struct srdma_net_msg *m, int n);

/*
 * Tests only: when set, the endpoint's dispatch hands every packet that
 * passed its checks here instead of to req.c / resp.c.
 */
extern void (*_Atomic srdma_net_input_hook)(struct srdma_net_qp *nq,
					    const struct srdma_pkt *pkt,
					    const struct srdma_wire_path *from);
/* Tests only: when set, the timer scan calls this instead of
 * srdma_netreq_timer(). */
extern uint64_t (*_Atomic srdma_net_timer_hook)(struct srdma_net_qp *nq,
						uint64_t now);
/* Tests only: when non-zero, every UDP GSO send fails with this errno
 * before reaching the kernel, as on a kernel or path that refuses
 * UDP_SEGMENT (the endpoint then sends one datagram per packet). */
extern _Atomic int srdma_net_gso_refuse;

/**
 * srdma_net_ctx_get() - the context's endpoint, opened on first use:
 * sockets bound to UDP 4791 (shared with the host's other contexts),
 * progress thread started. Return: the endpoint or NULL (errno set).
 */
struct srdma_net_ctx *srdma_net_ctx_get(struct srdma_context *ctx);
/* Stop the thread, close the sockets; at context close (no QP left). */
void srdma_net_ctx_close(struct srdma_context *ctx);

/* Make @nq (RTR or later) reachable by dispatch / unreachable (waits for
 * pins to drop). */
int srdma_net_qp_register(struct srdma_net_qp *nq);
void srdma_net_qp_unregister(struct srdma_net_qp *nq);

/**
 * srdma_net_send() - send one datagram: the @n iovecs of @iov are the BTH,
 * extended headers, payload, pad and ICRC, ready for the wire, from
 * path->sip:sport to path->dip:dport. Applies fault injection, writes the
 * pcap record, counts. Never blocks for long: a full socket buffer is
 * waited out briefly, then the packet is dropped (reliability recovers).
 * Return: 0, or -errno (the packet is lost). Context: any thread.
 */
int srdma_net_send(struct srdma_context *ctx, const struct srdma_wire_path *p,
		   const struct iovec *iov, int n);

/**
 * srdma_net_progress() - receive and dispatch what is queued on the
 * context's sockets, up to @budget datagrams, and run expired timers,
 * without blocking: a polling application's ibv_poll_cq calls this so a
 * packet need not wait for the progress thread to wake. Only one thread
 * drains at a time; the others return at once. With nothing queued on
 * the UDP socket it takes no lock (one poll(2)): an idle polling thread
 * preempted here does not hold up the progress thread. SRDMA_NET_INLINE=0
 * makes it return 0 at once (all receiving is the progress thread's).
 * Return: datagrams handled.
 */
int srdma_net_progress(struct srdma_context *ctx, int budget);

/**
 * srdma_net_progress_from() - srdma_net_progress() for an application
 * that polls several CQs of the context in turn (@poller: the CQ whose
 * poll found it empty; NULL: as srdma_net_progress). Only the poller
 * whose empty poll looked at the socket last looks again while it keeps
 * polling; the others return 0 at once (one clock read) unless its last
 * look is more than a few microseconds old, and then take over. So a
 * round of polls over several CQs makes one receive system call, not
 * one per CQ: what it receives lands in whichever CQ it completes to,
 * which the round then finds.
 * Return: datagrams handled.
 */
int srdma_net_progress_from(struct srdma_context *ctx, const void *poller,
			    int budget);

/**
 * srdma_net_poll_end() - the application is about to block (arms a CQ
 * for events, waits for one): end poll mode at once, so the progress
 * thread receives again, and wake it if it had left the socket to the
 * application. Cheap when poll mode is off.
 * Context: any application thread, no lock held.
 */
void srdma_net_poll_end(struct srdma_context *ctx);

/**
 * srdma_net_app_waits() - has the application of @ctx waited for
 * completion events lately (ibv_req_notify_cq or ibv_get_cq_event within
 * the last 100 ms)? The responder then holds no ACK back: an application
 * that waits for events gets its peer's ACK before the peer's reply, as
 * from a NIC (perftest -e relies on it). A test without an endpoint
 * answers through srdma_net_app_waits_hook (NULL: false).
 */
bool srdma_net_app_waits(struct srdma_context *ctx);
extern bool (*_Atomic srdma_net_app_waits_hook)(struct srdma_context *ctx);

/**
 * srdma_net_ack_armed() - the responder of a QP of @ctx holds an ACK
 * back until @due_ns (nq->ack_due_ns): the inline path runs the timer
 * scan from then on; the progress thread is kicked only if it neither
 * runs the responder itself nor has left the socket to a polling
 * application (then it wakes at the end of poll mode anyway).
 */
void srdma_net_ack_armed(struct srdma_context *ctx, uint64_t due_ns);

/**
 * srdma_net_lone_ack() - the requester of a QP of @ctx has just had its
 * last request completed by a plain ACK from a peer that also sends it
 * requests (a ping-pong peer's held ACK that left alone on its deadline):
 * the application may stop polling now (ib_write_lat spins on memory)
 * while the peer's reply is still to come. On the inline path, and when
 * that datagram brought no request, poll mode ends at the end of the
 * poll and the thread takes the socket back at once instead of at the
 * end of the window (net-endpoint.md, "Poll mode"). Elsewhere (the
 * thread) nothing to do.
 * Context: a drain of @ctx's endpoint (drain_lock held), from req.c.
 */
void srdma_net_lone_ack(struct srdma_context *ctx);

/**
 * srdma_net_crx_hint() - a request or response of a connected QP of @ctx
 * has just been accepted as coming from its peer, @from (its source and
 * our destination, as received). In an inline drain of @ctx's endpoint,
 * the first such flow gets a connected receive socket at the end of the
 * drain (endpoint.c, crx_open); otherwise nothing. Caller: the responder
 * or requester input, under its QP lock, inside the drain.
 */
void srdma_net_crx_hint(struct srdma_context *ctx,
			const struct srdma_wire_path *from);

/* Wake the progress thread: a timer earlier than the one it sleeps on was
 * armed (deadline_ns lowered). Cheap when nothing changes. */
void srdma_net_kick(struct srdma_context *ctx, uint64_t deadline_ns);

/* Count a drop of cause @d (on @nq when known, else the endpoint's) and
 * explain it under SRDMA_LOG=debug. */
void srdma_net_drop(struct srdma_context *ctx, struct srdma_net_qp *nq,
		    enum srdma_drop d, const char *why);

/* ---- protocol entry points, called by the endpoint's dispatch ---------- */

/*
 * A received packet for @nq, parsed, ICRC checked, P_Key checked, its
 * source (@from: the datagram's addresses) not yet checked against the
 * QP. Responses (ACK, ATOMIC_ACK, READ_RESP_*) go to the requester, the
 * rest to the responder. The pin on @nq is held across the call.
 */
void srdma_netreq_input(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
			const struct srdma_wire_path *from);
void srdma_netresp_input(struct srdma_net_qp *nq, const struct srdma_pkt *pkt,
			 const struct srdma_wire_path *from);

/**
 * srdma_netreq_timer() - run @nq's requester timers that are due at @now
 * (retransmit, RNR retry). Return: the next deadline, or 0 for none
 * (also stored in nq->deadline_ns). Context: progress, nothing held.
 */
uint64_t srdma_netreq_timer(struct srdma_net_qp *nq, uint64_t now);

/* ---- requester hooks, called by the engine's requester ---------------- */

/**
 * srdma_netreq_post() - take over send WQE @w (validated by the engine)
 * of a net QP: copy what must outlive the caller (SGE list, inline
 * bytes), queue it, send what the window allows. Its completion comes
 * later, from the completer (engine.h srdma_comp_req()).
 * Return: 0, -ENOMEM (send queue full: post_send fails with ENOMEM).
 * Context: qp->sq_lock held.
 */
int srdma_netreq_post(struct srdma_qp *qp, const struct srdma_swqe *w);
/* Complete every queued or unacknowledged WQE with IBV_WC_WR_FLUSH_ERR.
 * Context: qp->sq_lock held (QP in ERR, or being destroyed). */
void srdma_netreq_flush_locked(struct srdma_qp *qp);
/* WRs posted on @qp's net requester whose completion is not in the CQ
 * yet (queued, in flight or unacknowledged). Context: qp->sq_lock held. */
uint32_t srdma_netreq_outstanding_locked(struct srdma_qp *qp);
/*
 * Test hooks of req.c (tests/unit/test_net_req.c), NULL in the library:
 * when srdma_netreq_tx_hook is set, packets go to it instead of
 * srdma_net_send(), srdma_net_kick() is not called and drops are counted
 * by req.c itself, so the requester runs without an endpoint; when
 * srdma_netreq_comp_hook is set, completions go to it instead of
 * srdma_comp_req() (the QP is not moved to ERR by the engine). Set them
 * before any net QP is used.
 */
extern int (*srdma_netreq_tx_hook)(struct srdma_net_qp *nq,
				   const struct srdma_wire_path *p,
				   const struct iovec *iov, int n);
extern void (*srdma_netreq_comp_hook)(struct srdma_qp *qp, uint64_t wr_id,
				      uint32_t wr_opcode, bool signaled,
				      int status, uint32_t byte_len);

/* Requester state of a QP: create at srdma_net_qp_create, free at destroy. */
struct srdma_netreq *srdma_netreq_new(struct srdma_net_qp *nq);
void srdma_netreq_free(struct srdma_netreq *r);
/* RTS: initial send PSN; RESET: forget everything. sq_lock held. */
void srdma_netreq_reset(struct srdma_net_qp *nq, uint32_t sq_psn);

#define SRDMA_NET_ACK_HELD (1ull << 63)
#define SRDMA_NET_ACK_SKIPPED (1u << 31)	/* srdma_net_qp.ack_skip */
/* An ACK packet: BTH, AETH, ICRC. */
#define SRDMA_NET_ACK_LEN 20u

/**
 * srdma_netresp_ack_take() - take @nq's held ACK, if any, and build it
 * into @buf (SRDMA_NET_ACK_LEN bytes, ICRC included) for the caller to
 * send: the requester puts it right after its requests, in the same
 * batch. Counted in @nq's tx_pkts/tx_bytes here.
 * Return: the packet's length, 0 if no ACK was held.
 * Context: sq_lock or resp_lock held (the path is stable), or neither
 * when the QP is connected for good (timer, error, destroy).
 */
uint32_t srdma_netresp_ack_take(struct srdma_net_qp *nq, uint8_t *buf);
/**
 * srdma_netresp_ack_ride() - the held ACK to send behind the requests
 * the requester is about to send on @nq, built into @buf as
 * srdma_netresp_ack_take() does, or 0 when none is held or when it may
 * wait for a later request of ours (coalescing: ours go out at a brisk
 * pace, @now - @prev_tx since the previous batch, and the ACK's
 * deadline moves to after the next one, within a bound; at most a few
 * messages per ACK; not for a while after a coalesced ACK had to leave
 * alone at its deadline with the peer silent since).
 * @nq: an RC QP; @buf: SRDMA_NET_ACK_LEN bytes.
 * @now: srdma_net_now_ns(); @prev_tx: the requester's previous batch
 * on @nq (nq->req_tx_ns before this one), 0 for none.
 * Return: the ACK's length, 0 for none to send now.
 * Context: sq_lock held (req.c's batch flush).
 */
uint32_t srdma_netresp_ack_ride(struct srdma_net_qp *nq, uint8_t *buf,
				uint64_t now, uint64_t prev_tx);
/**
 * srdma_netresp_ack_flush() - send @nq's held ACK now, if any (its timer
 * ran out; the QP goes to ERR or away). Return: true if one was sent.
 * Context: any; takes no lock.
 */
bool srdma_netresp_ack_flush(struct srdma_net_qp *nq);
/**
 * srdma_netresp_ack_timer() - send @nq's held ACK if its deadline
 * (nq->ack_due_ns) is at or before @now.
 * Return: the deadline still to wait for, 0 for none.
 * Context: the endpoint's timer scan (or a test), no lock held.
 */
uint64_t srdma_netresp_ack_timer(struct srdma_net_qp *nq, uint64_t now);

/* Responder state of a QP, likewise; RTR sets the expected PSN. */
struct srdma_netresp *srdma_netresp_new(struct srdma_net_qp *nq);
void srdma_netresp_free(struct srdma_netresp *r);
/**
 * srdma_netresp_reset() - forget the responder's state; expect @rq_psn
 * next (RTR), or 0 (RESET). A WQE taken from an SRQ for an unfinished
 * message completes with IBV_WC_WR_FLUSH_ERR.
 * Context: sq_lock and resp_lock held.
 */
void srdma_netresp_reset(struct srdma_net_qp *nq, uint32_t rq_psn);

/*
 * Test hook: when set, the responder hands what it would send to this
 * function instead of srdma_net_send() (unit tests). NULL in production.
 */
extern int (*srdma_netresp_tx_hook)(struct srdma_net_qp *nq,
				    const struct iovec *iov, int n);

#endif
