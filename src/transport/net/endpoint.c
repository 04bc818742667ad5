// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * endpoint.c - the net transport's per-context endpoint (net.h).
 *
 * A context that uses the net transport gets, on first use, an endpoint:
 *
 *   udp     one dual-stack UDP socket bound to [::]:4791 with SO_REUSEPORT,
 *           a member of the namespace's reuseport group (demux.c steers
 *           each datagram to the socket of the context its DQPN names).
 *           It also sends: every packet leaves from port 4791 (so the
 *           UDP source port, which the ICRC covers, is SRDMA_NET_SPORT),
 *           unconnected, with IP_PMTUDISC_DO (IPv4: DF, identification
 *           0), the source address pinned per packet with IPV6_PKTINFO.
 *   fwd     the context's forwarding socket (demux.h): datagrams that the
 *           kernel gave another context's socket arrive here, in batches.
 *   evfd    an eventfd that wakes the progress thread (kick, stop).
 *   thread  the progress thread: epoll_wait on the three with a timeout at
 *           the earliest requester timer of the registered QPs; receives,
 *           dispatches, runs timers; never spins.
 *
 * Receiving one datagram: the LID in its DQPN decides first (not ours:
 * forward it, unless it was already forwarded); then srdma_wire_parse,
 * srdma_wire_icrc_check, the P_Key, the QP by DQPN (pinned with nq->refs
 * while the protocol runs), and the protocol: srdma_netreq_input for
 * responses (READ_RESP_*, ACK, ATOMIC_ACK), srdma_netresp_input for the
 * rest. Every refusal is counted by cause (srdma_net_drop).
 *
 * Draining is done by one thread at a time (drain_lock): the progress
 * thread waits for it, srdma_net_progress() (a polling application's
 * ibv_poll_cq) only tries.
 *
 * fork(): a child must not share the parent's sockets (it would keep the
 * parent's reuseport member alive after the parent closed it) nor use its
 * thread (absent in the child). An atfork child handler closes the
 * inherited endpoints' descriptors; the inherited endpoint structs are
 * then inert (every entry point checks the fork generation).
 *
 * Locks: ep->lock (QP table, QP list) and drain_lock and timer_lock are
 * leaves with respect to the protocol: none is held while calling req.c
 * or resp.c, except drain_lock, which only the endpoint's own drainers
 * take (req.c/resp.c never call srdma_net_progress).
 */
#include <errno.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/restrack.h"
#include "transport/host/mcast.h"
#include "transport/net/demux.h"
#include "transport/net/gid.h"
#include "transport/net/idle.h"
#include "transport/net/net.h"
#include "transport/net/netfault.h"
#include "transport/net/pcap.h"
#include "util/lattrace.h"
#include "util/log.h"
#include "util/selfcopy.h"

#define RX_BATCH 32
#define RX_BUF 9216		/* above any RoCEv2 packet; longer: truncated */
/* With UDP GRO a datagram holds up to 64 KiB of packets: fewer, larger
 * receive slots (1 MiB in all, touched as used). */
#define RX_GRO_BATCH 16
#define RX_GRO_BUF 65536
#ifndef UDP_GRO
#define UDP_GRO 104		/* linux/udp.h */
#endif
#define TIMER_BATCH 64
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103		/* linux/udp.h */
#endif
/* Sending: datagrams (GSO sends) per sendmmsg, and what they may hold. */
#define TX_UNITS 32
#define TX_SEGS 256		/* packets per sendmmsg */
#define TX_IOV 1024		/* iovecs per sendmmsg, all units */
/* The UDP payload of one GSO send: an IPv4 datagram's largest. */
#define GSO_BYTES SRDMA_WIRE_GSO_BYTES
#define QP_SLOTS (1u << SRDMA_QPN_SHIFT)
#define SRDMA_NET_POLL_US_DEFAULT 200	/* poll mode after an inline poll */
#define SRDMA_NET_YIELD_US_DEFAULT 50	/* empty polls before a yield */
/* Poll mode ends for the thread after this many windows in which the
 * polling application received nothing (poll_idle). */
#define POLL_IDLE_WINDOWS 4
/* The thread's look at a poll-mode window found extended: every window
 * for the first POLL_CHECK_STEADY of them, then at twice the interval
 * each time, up to POLL_CHECK_MAX_SHIFT doublings (poll_check). */
#define POLL_CHECK_STEADY 8u
#define POLL_CHECK_MAX_SHIFT 3u
#define APP_WAITS_NS 100000000ull	/* events used this lately: no held ACKs */
/* ... unless it has polled this many times since (a polling application
 * that armed a CQ once, e.g. while it connected). */
#define ARM_POLLS 256u
/* An empty poll leaves the receive to the poller that made the last one
 * when that was this recent (srdma_net_progress_from). */
#define RX_LEAD_NS 5000ull
/* The thread tries again this soon to take the socket back from an
 * application inside the inline receive (poll_mode()). */
#define RETAKE_NS 200000ull
/* The connected receive socket (crx_state): none yet, a flow to open it
 * for at the end of this drain, open, given up (one attempt per
 * endpoint). While the main socket is quiet, one inline poll in
 * CRX_MAIN_EVERY reads it instead of the connected one. */
enum { CRX_NONE, CRX_WANT, CRX_ON, CRX_OFF };
#define CRX_MAIN_EVERY 8
/* Each empty read of the quiet main socket doubles that period, up to
 * this many polls (~30 us of polling): every read of it is one of the
 * connected socket missed, ~0.5 us, which a ping-pong's datagram waits
 * out when it arrives meanwhile. A datagram there resets it. */
#define CRX_MAIN_EVERY_MAX 64
/* Why the connected socket is to close (crx_close): its flow is shared
 * on this host (for good), or the traffic moved to the main socket
 * (another peer: a new flow may get one). */
enum { CRX_KEEP, CRX_SHARED, CRX_IDLE };
/* Empty polls of the connected socket, while the main one brings
 * datagrams, after which it is closed as idle. */
#define CRX_IDLE_POLLS 4096

/* At close: at most this many receive rounds forward what is queued. */
#define CLOSE_DRAIN_ROUNDS 16

/*
 * The endpoint whose socket this thread is draining inline, if any
 * (srdma_net_progress): while it answers what it received (a large READ
 * is hundreds of microseconds of responses), it is still polling, and
 * send_raw() keeps poll mode open (poll_stamp) so that the thread does
 * not take the socket back and queue up behind the drain lock.
 */
static _Thread_local struct srdma_net_ctx *inline_ep;

struct srdma_net_ctx {
	struct srdma_context *ctx;	/* immutable */
	struct srdma_demux_id id;	/* immutable */
	uint32_t fork_gen;		/* immutable: srdma_fork_gen at open */
	int udp, fwd, evfd, epfd;	/* immutable until close */
	pthread_t thread;		/* immutable after open */
	_Atomic bool stop;
	/* The deadline the progress thread sleeps until (UINT64_MAX: none);
	 * a kick for an earlier one writes evfd. */
	_Atomic uint64_t sleep_until;
	pthread_mutex_t lock;		/* leaf: qp_tab, qp_list */
	struct srdma_net_qp *_Atomic *qp_tab; /* by QPN slot; lock */
	struct srdma_net_qp *qp_list;	/* lock: for the timer scan */
	pthread_mutex_t drain_lock;	/* one drainer at a time */
	/* The inline receive slot (slot rx_slots of the arrays below) while
	 * the thread is off the socket: application threads only, trylock
	 * only, taken before drain_lock (srdma_net_progress). */
	pthread_mutex_t inline_lock;
	pthread_mutex_t timer_lock;	/* one timer scan at a time */
	/* receive state: drain_lock; slot rx_slots: inline_lock to
	 * receive into, inline_lock and drain_lock to handle */
	struct mmsghdr msgs[RX_BATCH + 1];
	struct iovec iov[RX_BATCH + 1];
	struct sockaddr_in6 from[RX_BATCH + 1];
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) +
			 CMSG_SPACE(sizeof(struct in_pktinfo)) + 64];
		struct cmsghdr align;
	} cbuf[RX_BATCH + 1];
	uint8_t *rxbuf;			/* (rx_slots + 1) * rx_buf */
	int rx_slots;			/* immutable: RX_BATCH, RX_GRO_BATCH */
	size_t rx_buf;			/* immutable: RX_BUF, RX_GRO_BUF */
	bool gro;			/* immutable: UDP_GRO is on */
	uint8_t *fin;			/* one forwarded batch */
	/* the forwarding batch being built: drain_lock */
	uint8_t *fout;
	size_t fout_len;
	uint32_t fout_count, fout_lid;
	uint64_t resteer_ns;		/* drain_lock: last srdma_demux_resteer */
	uint32_t rx_requests;		/* drain_lock: requests in the last recvmmsg */
	/* drain_lock, inline path only: requests in the whole drain, and
	 * whether a lone ACK came (srdma_net_lone_ack) */
	uint32_t rx_req_drain;
	bool rx_lone_ack;
	bool poll_inline;		/* immutable: SRDMA_NET_INLINE != 0 */
	/* The connected receive socket of the hot flow (net-endpoint.md,
	 * "A connected receive socket"): -1 for none. Opened by an inline
	 * drain (inline_lock and drain_lock held) and published here;
	 * closed only by the progress thread, holding both locks, when
	 * crx_close asks (or at close/fork). Used under inline_lock
	 * (inline_recv) or drain_lock (drains); rx_pending's lock-free
	 * poll() may see a stale number, which costs a spurious look. */
	_Atomic int crx;
	bool crx_on;			/* immutable: SRDMA_NET_CONNRX != 0 */
	int crx_state;			/* drain_lock: CRX_* */
	struct srdma_wire_path crx_flow; /* drain_lock: CRX_WANT's flow */
	bool rx_crx;			/* drain_lock: handling crx's datagrams */
	_Atomic int crx_close;		/* CRX_SHARED, CRX_IDLE: close it */
	bool crx_in_set;		/* thread only: crx is in its epoll set */
	/* inline_lock: inline polls since the last one of the main socket,
	 * and whether that one received */
	unsigned int crx_polls, crx_idle;
	bool main_busy;
	/* inline_lock: polls per read of the quiet main socket (0:
	 * CRX_MAIN_EVERY), doubled by each empty one */
	unsigned int main_every;
	/* inline_lock (set at open with drain_lock too): the main socket
	 * may still hold the flow's datagrams of before the connect, older
	 * than any on the new socket: read it until it is empty first */
	bool crx_main_first;
	/* UDP GSO on sends (SRDMA_NET_GSO != 0), until the kernel refuses
	 * it once (relaxed) */
	_Atomic bool gso;
	/* Poll mode (net-endpoint.md, "Progress"): while an application
	 * polls inline, the thread takes the UDP socket out of its epoll
	 * set and leaves receiving to the application. poll_until: the end
	 * of poll mode (the last inline poll + poll_ns), 0 when off; any
	 * thread stores it. udp_off: the socket is out of the set (set by
	 * the thread, read by srdma_net_poll_end to decide on a kick; made
	 * false only under inline_lock, see poll_mode()). */
	uint64_t poll_ns;		/* immutable: SRDMA_NET_POLL_US */
	uint64_t yield_ns;		/* immutable: SRDMA_NET_YIELD_US */
	_Atomic uint64_t poll_until;
	_Atomic bool udp_off;
	/* Idle poll mode (poll_idle): st.inline_rx as last seen and since
	 * when (thread only); idle_standby: the thread stands down (the
	 * socket back in its set although the application still polls)
	 * until a datagram wakes it or the application receives again
	 * (set by the thread, cleared by either). */
	uint64_t idle_rx, idle_since;
	_Atomic bool idle_standby;
	/* Thread only: its looks in a row that found poll mode extended
	 * (poll_check) */
	unsigned int pm_looks;
	/* The last ibv_req_notify_cq / ibv_get_cq_event (srdma_net_poll_end),
	 * 0 for none: the application waits for events (no held ACKs). */
	_Atomic uint64_t event_ns;
	/* Inline polls since the last of those, up to ARM_POLLS (relaxed;
	 * any application thread): at ARM_POLLS the application polls, and
	 * event_ns no longer counts. */
	_Atomic uint32_t arm_polls;
	/* The earliest held-ACK deadline armed since the last timer scan
	 * (0: none): the inline path scans when it is due. */
	_Atomic uint64_t ack_due;
	/* The poller (a CQ) that receives for the others: the last one
	 * whose empty poll looked at the socket, and when (ns). Any
	 * application thread, relaxed: a stale value costs one system call
	 * or one skipped look, never a lost datagram. */
	_Atomic(const void *) rx_lead;
	_Atomic uint64_t rx_lead_ns;
	struct srdma_pcap *pcap;	/* immutable: SRDMA_PCAP, or NULL */
	struct srdma_netfault *fault;	/* immutable: SRDMA_NET_FAULT, or
					 * NULL (its own lock) */
	struct srdma_net_ep_stats st;	/* relaxed */
	struct srdma_net_ctx *all_next;	/* eps_lock */
};

/* The test hooks are atomic: tests set them while progress threads run. */
uint64_t (*_Atomic srdma_net_timer_hook)(struct srdma_net_qp *nq,
					 uint64_t now);
_Atomic int srdma_net_gso_refuse;
void (*_Atomic srdma_net_input_hook)(struct srdma_net_qp *nq,
				     const struct srdma_pkt *pkt,
				     const struct srdma_wire_path *from);

/* Every live endpoint of the process, for the atfork child handler. */
static pthread_mutex_t eps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srdma_net_ctx *eps;	/* eps_lock */
static pthread_once_t eps_once = PTHREAD_ONCE_INIT;
/* Opening endpoints, one at a time (ctx->net is set once). */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
/* Fault injection's per-endpoint salt: the endpoints of a process in
 * opening order, so a rerun repeats every context's faults. */
static uint64_t fault_salt;		/* open_lock */

static void eps_prepare(void)
{
	pthread_mutex_lock(&eps_lock);
}

static void eps_parent(void)
{
	pthread_mutex_unlock(&eps_lock);
}

/* In the child: the parent's sockets are not ours to keep open. */
static void eps_child(void)
{
	struct srdma_net_ctx *ep;

	for (ep = eps; ep; ep = ep->all_next) {
		close(ep->udp);
		close(ep->fwd);
		close(ep->evfd);
		close(ep->epfd);
		if (atomic_load(&ep->crx) >= 0)
			close(atomic_load(&ep->crx));
		atomic_store(&ep->crx, -1);
		ep->udp = ep->fwd = ep->evfd = ep->epfd = -1;
	}
	eps = NULL;
	pthread_mutex_unlock(&eps_lock);
}

static void eps_init(void)
{
	pthread_atfork(eps_prepare, eps_parent, eps_child);
}

static inline bool ep_inherited(const struct srdma_net_ctx *ep)
{
	return ep->fork_gen != atomic_load_explicit(&srdma_fork_gen,
						    memory_order_relaxed);
}

static inline void cnt(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static struct srdma_net_ctx *ep_of(struct srdma_context *ctx)
{
	struct srdma_net_ctx *ep = atomic_load_explicit(&ctx->net,
							memory_order_acquire);

	if (!ep || ep_inherited(ep))
		return NULL;
	return ep;
}

/* ---- drops ------------------------------------------------------------ */

static void ep_drop(struct srdma_net_ctx *ep, struct srdma_net_qp *nq,
		    enum srdma_drop d, const char *why,
		    const struct srdma_wire_path *from)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if ((unsigned int)d >= SRDMA_DROP_MAX)
		d = SRDMA_DROP_OTHER;
	cnt(&ep->st.drops[d], 1);
	if (nq && nq->st)
		cnt(&nq->st->drops[d], 1);
	if (srdma_log_level < SRDMA_LOG_DEBUG)
		return;
	if (from)
		inet_ntop(AF_INET6, from->sip, a, sizeof(a));
	srdma_dbg("lid %u qpn %#x: dropped a packet%s%s (%s): %s",
		  ep->id.lid, nq ? nq->qpn : 0, from ? " from " : "",
		  from ? a : "", srdma_drop_str(d), why);
}

void srdma_net_drop(struct srdma_context *ctx, struct srdma_net_qp *nq,
		    enum srdma_drop d, const char *why)
{
	struct srdma_net_ctx *ep = atomic_load_explicit(&ctx->net,
							memory_order_acquire);

	if (!ep) {
		if (nq && nq->st && (unsigned int)d < SRDMA_DROP_MAX)
			cnt(&nq->st->drops[d], 1);
		srdma_dbg("lid %u: dropped a packet (%s): %s", ctx->host.lid,
			  srdma_drop_str(d), why);
		return;
	}
	ep_drop(ep, nq, d, why, NULL);
}

/* ---- QP table ----------------------------------------------------------- */

static struct srdma_net_qp *qp_pin(struct srdma_net_ctx *ep, uint32_t qpn)
{
	struct srdma_net_qp *nq;

	pthread_mutex_lock(&ep->lock);
	nq = atomic_load_explicit(&ep->qp_tab[qpn & (QP_SLOTS - 1)],
				  memory_order_relaxed);
	if (nq && nq->qpn == qpn)
		atomic_fetch_add_explicit(&nq->refs, 1, memory_order_acquire);
	else
		nq = NULL;
	pthread_mutex_unlock(&ep->lock);
	return nq;
}

static void qp_unpin(struct srdma_net_qp *nq)
{
	atomic_fetch_sub_explicit(&nq->refs, 1, memory_order_release);
}

int srdma_net_qp_register(struct srdma_net_qp *nq)
{
	struct srdma_net_ctx *ep = srdma_net_ctx_get(nq->ctx);
	struct srdma_net_qp *_Atomic *slot;
	struct srdma_net_qp *cur;

	if (!ep)
		return -errno;
	if (srdma_demux_lid(nq->qpn) != ep->id.lid)
		return -EINVAL;
	slot = &ep->qp_tab[nq->qpn & (QP_SLOTS - 1)];
	pthread_mutex_lock(&ep->lock);
	cur = atomic_load_explicit(slot, memory_order_relaxed);
	if (cur == nq) {
		pthread_mutex_unlock(&ep->lock);
		return 0;
	}
	if (cur) {
		pthread_mutex_unlock(&ep->lock);
		return -EEXIST;
	}
	nq->ep_next = ep->qp_list;
	ep->qp_list = nq;
	atomic_store_explicit(slot, nq, memory_order_release);
	pthread_mutex_unlock(&ep->lock);
	/* Its timers may be armed already. */
	srdma_net_kick(nq->ctx, atomic_load(&nq->deadline_ns));
	return 0;
}

void srdma_net_qp_unregister(struct srdma_net_qp *nq)
{
	struct srdma_net_ctx *ep = atomic_load_explicit(&nq->ctx->net,
							memory_order_acquire);
	struct srdma_net_qp **pp;
	struct timespec ts = { 0, 20000 };

	if (!ep || ep_inherited(ep))
		return;
	pthread_mutex_lock(&ep->lock);
	if (atomic_load_explicit(&ep->qp_tab[nq->qpn & (QP_SLOTS - 1)],
				 memory_order_relaxed) == nq) {
		atomic_store_explicit(&ep->qp_tab[nq->qpn & (QP_SLOTS - 1)],
				      NULL, memory_order_relaxed);
		for (pp = &ep->qp_list; *pp; pp = &(*pp)->ep_next)
			if (*pp == nq) {
				*pp = nq->ep_next;
				break;
			}
		nq->ep_next = NULL;
	}
	pthread_mutex_unlock(&ep->lock);
	/* No new pins: wait out the ones held (a packet being handled). */
	while (atomic_load_explicit(&nq->refs, memory_order_acquire))
		nanosleep(&ts, NULL);
}

/* ---- receiving ---------------------------------------------------------- */

static bool is_response(uint8_t opcode)
{
	uint8_t op = opcode & 0x1f;

	return op >= SRDMA_OP_READ_RESP_FIRST && op <= SRDMA_OP_ATOMIC_ACK;
}

/* A multicast datagram (DQPN 0xffffff, destination the group's address):
 * one copy to each of our QPs attached to the group (mcast_net.c). */
static void deliver_mcast(struct srdma_net_ctx *ep, const struct srdma_pkt *pkt,
			  size_t len, const struct srdma_wire_path *from)
{
	uint32_t q[SRDMA_MCAST_QP_ATTACH];
	struct srdma_net_qp *nq;
	unsigned int n, i;

	/* Sent from this host (a loopback interface hands its own multicast
	 * back whatever IP_MULTICAST_LOOP says): its sender served our QPs
	 * through the host transport already. */
	if (srdma_gid_find(&ep->ctx->gids, (const union ibv_gid *)from->sip) >=
	    0) {
		ep_drop(ep, NULL, SRDMA_DROP_SOURCE,
			"multicast from this host (served by the host transport)",
			from);
		return;
	}
	n = srdma_gid_is_mcast(from->dip) ?
		    srdma_net_mcast_targets(ep->ctx, from->dip, q,
					    SRDMA_MCAST_QP_ATTACH) : 0;
	if (!n) {
		ep_drop(ep, NULL, SRDMA_DROP_QPN,
			"multicast: no QP of ours attached to the group", from);
		return;
	}
	for (i = 0; i < n; i++) {
		nq = qp_pin(ep, q[i]);
		if (!nq)
			continue;	/* not registered yet (before RTR) */
		if (nq->st) {
			cnt(&nq->st->rx_pkts, 1);
			cnt(&nq->st->rx_bytes, len);
		}
		srdma_netresp_input(nq, pkt, from);
		qp_unpin(nq);
	}
}

/* A datagram for one of our QPs (its LID is ours). */
static void deliver(struct srdma_net_ctx *ep, const uint8_t *buf, size_t len,
		    const struct srdma_wire_path *from)
{
	void (*in)(struct srdma_net_qp *, const struct srdma_pkt *,
		   const struct srdma_wire_path *);
	struct srdma_net_qp *nq;
	struct srdma_pkt pkt;
	enum srdma_drop d;

	cnt(&ep->st.rx_local, 1);
	d = srdma_wire_parse(buf, len, &pkt);
	if (d != SRDMA_DROP_NONE) {
		ep_drop(ep, NULL, d, "malformed", from);
		return;
	}
	/* SRDMA_NET_ICRC (net-wire.md): IPv4 from peers with their own IP
	 * identification (rxe, NICs) is accepted in lenient mode, counted. */
	switch (srdma_wire_icrc_verify(from, buf, len,
				       srdma_wire_icrc_mode())) {
	case SRDMA_ICRC_BAD:
		ep_drop(ep, NULL, SRDMA_DROP_ICRC, "bad ICRC", from);
		return;
	case SRDMA_ICRC_OK_ID:
		cnt(&ep->st.icrc_other_id, 1);
		break;
	default:
		break;
	}
	SRDMA_LT(SRDMA_LT_ICRC);
	if ((pkt.pkey & 0x7fff) != 0x7fff) {
		ep_drop(ep, NULL, SRDMA_DROP_PKEY, "P_Key not the default",
			from);
		return;
	}
	if (pkt.dqpn == SRDMA_MCAST_QPN) {
		deliver_mcast(ep, &pkt, len, from);
		return;
	}
	nq = qp_pin(ep, pkt.dqpn);
	if (!nq) {
		ep_drop(ep, NULL, SRDMA_DROP_QPN, "no such QP", from);
		return;
	}
	if (nq->st) {
		cnt(&nq->st->rx_pkts, 1);
		cnt(&nq->st->rx_bytes, len);
	}
	SRDMA_LT(SRDMA_LT_QPIN);
	in = srdma_net_input_hook;
	if (in)
		in(nq, &pkt, from);
	else if (is_response(pkt.opcode))
		srdma_netreq_input(nq, &pkt, from);
	else
		srdma_netresp_input(nq, &pkt, from);
	qp_unpin(nq);
}

/* Send the forwarding batch to its owner. */
static void fwd_flush(struct srdma_net_ctx *ep)
{
	struct sockaddr_un sun;
	socklen_t sl;
	uint32_t i;

	if (!ep->fout_count)
		return;
	((struct srdma_fwd_hdr *)ep->fout)->count = ep->fout_count;
	sl = srdma_demux_fwd_addr(ep->fout_lid, &sun);
	if (sendto(ep->fwd, ep->fout, ep->fout_len, MSG_DONTWAIT,
		   (struct sockaddr *)&sun, sl) < 0) {
		bool gone = errno == ECONNREFUSED || errno == ENOENT;

		for (i = 0; i < ep->fout_count; i++)
			ep_drop(ep, NULL, gone ? SRDMA_DROP_QPN : SRDMA_DROP_OTHER,
				gone ? "no context with the DQPN's LID in this namespace" :
				"the owner's forwarding queue is full", NULL);
		srdma_dbg("lid %u: forwarding %u datagram(s) to lid %u: %s",
			  ep->id.lid, ep->fout_count, ep->fout_lid,
			  strerror(errno));
	} else {
		cnt(&ep->st.fwd_out, ep->fout_count);
	}
	/* The kernel gave us another's datagram: the steering table may be
	 * stale (a member died). Repair it, at most once a second. */
	if (srdma_net_now_ns() - ep->resteer_ns > 1000000000u) {
		ep->resteer_ns = srdma_net_now_ns();
		srdma_demux_resteer(&ep->id, ep->udp);
	}
	ep->fout_count = 0;
	ep->fout_len = sizeof(struct srdma_fwd_hdr);
}

static void fwd_add(struct srdma_net_ctx *ep, uint32_t lid, const uint8_t *buf,
		    size_t len, const struct srdma_wire_path *from)
{
	size_t need = sizeof(struct srdma_fwd_rec) + ((len + 7) & ~(size_t)7);
	struct srdma_fwd_rec rec = { .path = *from, .len = (uint32_t)len };

	if (ep->fout_count &&
	    (ep->fout_lid != lid || ep->fout_len + need > SRDMA_FWD_MAX))
		fwd_flush(ep);
	ep->fout_lid = lid;
	memcpy(ep->fout + ep->fout_len, &rec, sizeof(rec));
	memcpy(ep->fout + ep->fout_len + sizeof(rec), buf, len);
	ep->fout_len += need;
	ep->fout_count++;
}

/* A datagram for our LID, past the receive faults: capture, dispatch. */
static void local(struct srdma_net_ctx *ep, const uint8_t *buf, size_t len,
		  const struct srdma_wire_path *from)
{
	if (ep->pcap) {
		struct iovec v = { (void *)buf, len };
		uint16_t id = 0;

		/* A UDP socket hides the IPv4 identification; a GSO
		 * segment's ICRC names it (0 when nothing does). */
		if (!srdma_wire_icrc_ipv4_id(from, buf, len, &id))
			id = 0;
		srdma_pcap_write_id(ep->pcap, from, id, &v, 1);
	}
	deliver(ep, buf, len, from);
}

static void fault_deliver(void *arg, const struct srdma_wire_path *p,
			  const uint8_t *buf, size_t len)
{
	local(arg, buf, len, p);
}

/* One datagram, from the UDP socket (@forwarded false) or forwarded. */
static void rx_one(struct srdma_net_ctx *ep, const uint8_t *buf, size_t len,
		   const struct srdma_wire_path *from, bool forwarded)
{
	uint32_t dqpn, lid;

	if (len < 12) {
		ep_drop(ep, NULL, SRDMA_DROP_SHORT, "shorter than a BTH", from);
		return;
	}
	dqpn = (uint32_t)buf[5] << 16 | (uint32_t)buf[6] << 8 | buf[7];
	lid = srdma_demux_lid(dqpn);
	/* Multicast reaches every joined socket: never forwarded. */
	if (lid == ep->id.lid || dqpn == SRDMA_MCAST_QPN) {
		if (ep->fault)
			srdma_netfault_rx(ep->fault, from, buf, len,
					  srdma_net_now_ns(), fault_deliver, ep);
		else
			local(ep, buf, len, from);
		return;
	}
	/* Another context's datagram on our connected socket: the flow is
	 * shared on this host, and the connected socket would take all of
	 * it. Give it up (the thread closes it); this one is forwarded. */
	if (ep->rx_crx && !forwarded &&
	    atomic_exchange(&ep->crx_close, CRX_SHARED) == CRX_KEEP &&
	    write(ep->evfd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		srdma_dbg("eventfd: %s", strerror(errno));
	if (forwarded || !lid || lid > SRDMA_REG_ENTRIES || len > RX_BUF) {
		ep_drop(ep, NULL, SRDMA_DROP_QPN,
			forwarded ? "forwarded here but not ours" :
			"DQPN of no context", from);
		return;
	}
	fwd_add(ep, lid, buf, len, from);
}

static void v4mapped(uint8_t gid[16], struct in_addr a)
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &a, 4);
}

static bool rx_check(struct srdma_net_ctx *ep, struct msghdr *mh, int i,
		     bool have_dst, const struct srdma_wire_path *path);

/* Datagram @i of a recvmmsg batch; return the packets it held (a GRO
 * datagram holds several). */
static int rx_udp(struct srdma_net_ctx *ep, int i)
{
	struct msghdr *mh = &ep->msgs[i].msg_hdr;
	const uint8_t *buf = ep->rxbuf + (size_t)i * ep->rx_buf;
	size_t len = ep->msgs[i].msg_len, seg = 0, off, l;
	struct srdma_wire_path path;
	struct cmsghdr *c;
	bool have_dst = false;
	int n = 0;

	memset(&path, 0, sizeof(path));
	if (ep->rx_crx) {
		/* The connected socket's flow: asked for neither. */
		memcpy(path.sip, ep->crx_flow.sip, 16);
		memcpy(path.dip, ep->crx_flow.dip, 16);
		path.sport = ep->crx_flow.sport;
		have_dst = true;
	} else {
		memcpy(path.sip, &ep->from[i].sin6_addr, 16);
		path.sport = ntohs(ep->from[i].sin6_port);
	}
	path.dport = SRDMA_ROCE_PORT;
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == IPPROTO_IPV6 &&
		    c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(path.dip, &pi.ipi6_addr, 16);
			have_dst = true;
		} else if (c->cmsg_level == IPPROTO_IP &&
			   c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			v4mapped(path.dip, pi.ipi_addr);
			have_dst = true;
		} else if (c->cmsg_level == SOL_UDP &&
			   c->cmsg_type == UDP_GRO &&
			   c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int gs;

			memcpy(&gs, CMSG_DATA(c), sizeof(gs));
			seg = gs > 0 ? (size_t)gs : 0;
		}
	}
	/* GRO: segments of @seg bytes, the last maybe shorter; each one a
	 * datagram as it travelled, judged on its own. */
	if (!seg || seg >= len)
		seg = len;
	for (off = 0; off < len || !n; off += l, n++) {
		l = len - off < seg ? len - off : seg;
		cnt(&ep->st.rx_dgrams, 1);
		if (n)
			cnt(&ep->st.rx_gro_segs, 1);
		if (!rx_check(ep, mh, i, have_dst, &path))
			continue;
		/* For drain_udp's inline path: a request came (by its BTH
		 * opcode, judged or not). */
		if (l >= 12 && !is_response(buf[off])) {
			ep->rx_requests++;
			ep->rx_req_drain++;
		}
		rx_one(ep, buf + off, l, &path, false);
		SRDMA_LT(SRDMA_LT_PKT);
	}
	return n;
}

/* Whether datagram @i of a batch can be handled at all; drops it if not. */
static bool rx_check(struct srdma_net_ctx *ep, struct msghdr *mh, int i,
		     bool have_dst, const struct srdma_wire_path *path)
{
	if ((!ep->rx_crx && (mh->msg_namelen < sizeof(struct sockaddr_in6) ||
			     ep->from[i].sin6_family != AF_INET6)) ||
	    !have_dst) {
		ep_drop(ep, NULL, SRDMA_DROP_ADDR, "no source or destination",
			NULL);
		return false;
	}
	if (mh->msg_flags & MSG_TRUNC) {
		ep_drop(ep, NULL, SRDMA_DROP_LENGTH, "longer than any packet",
			path);
		return false;
	}
	return true;
}

/*
 * recvmmsg of @want slots, MSG_DONTWAIT. One slot (the inline path's
 * usual case): recvmsg, which does the same for less (no mmsghdr array
 * to copy and loop over, no second look at the socket: ~30 ns per call
 * here, empty or not). Return: as recvmmsg.
 */
static int recv_dgrams(int fd, struct mmsghdr *m, unsigned int want)
{
	ssize_t b;

	if (want != 1)
		return recvmmsg(fd, m, want, MSG_DONTWAIT, NULL);
	b = recvmsg(fd, &m->msg_hdr, MSG_DONTWAIT);
	if (b < 0)
		return -1;
	m->msg_len = (unsigned int)b;
	return 1;
}

/*
 * Receive and handle up to @budget packets from the UDP socket. @one (the
 * inline path): first one datagram, in a recvmmsg of one slot (a GRO
 * datagram is still handled whole); if it held a request, back to the
 * polling application; if it held only responses (ACKs, READ responses),
 * on as the thread does.
 *
 * Why one slot: recvmmsg with more slots tries the socket again after
 * the first datagram, and that empty second try was the most expensive
 * part of an inline receive in a ping-pong (net-endpoint.md, "Where the
 * time goes"), whose steady state is one datagram per trip: the peer's
 * request with its ACK for us behind it (GSO, GRO). Why on after
 * responses only: an ACK that came alone (its hold expired) completes
 * our send, and an application such as ib_write_lat then stops polling
 * its CQ; the peer's request, if already queued behind it, must not be
 * left to the progress thread (the poll-mode window plus a wake-up).
 */
static int drain_fd(struct srdma_net_ctx *ep, int fd, bool via_crx,
		    int budget, bool one)
{
	int done = 0, n, i, want;

	while (done < budget) {
		want = budget - done < ep->rx_slots ? budget - done :
						      ep->rx_slots;
		if (one)
			want = 1;
		ep->rx_requests = 0;
		for (i = 0; i < want; i++) {
			struct msghdr *mh = &ep->msgs[i].msg_hdr;

			/* The connected socket's source is its peer: no
			 * name (the kernel then copies none). */
			mh->msg_name = via_crx ? NULL : &ep->from[i];
			mh->msg_namelen = via_crx ? 0 : sizeof(ep->from[i]);
			mh->msg_controllen = sizeof(ep->cbuf[i].buf);
			mh->msg_flags = 0;
		}
		SRDMA_LT(SRDMA_LT_RX0);
		n = recv_dgrams(fd, ep->msgs, (unsigned int)want);
		if (n <= 0)
			break;
		SRDMA_LT(SRDMA_LT_RX1);
		ep->rx_crx = via_crx;
		for (i = 0; i < n; i++)
			done += rx_udp(ep, i);
		ep->rx_crx = false;
		if ((one && ep->rx_requests) || n < want)
			break;
		one = false;
	}
	fwd_flush(ep);
	return done;
}

/* drain_fd() of the main socket, then of the connected receive socket, if
 * any; @one: the first datagram alone if it held a request (from either
 * socket), as drain_fd. drain_lock held. */
static int drain_udp(struct srdma_net_ctx *ep, int budget, bool one)
{
	int crx = atomic_load_explicit(&ep->crx, memory_order_acquire);
	int done;

	/* The main socket first: what it holds of the connected socket's
	 * flow came before the connect, so before all on that socket. */
	done = drain_fd(ep, ep->udp, false, budget, one);
	if (crx < 0 || (done && one && ep->rx_requests) || done >= budget)
		return done;
	return done + drain_fd(ep, crx, true, budget - done, one && !done);
}

/* One forwarded batch; returns the datagrams it held (0: none waiting). */
static int drain_fwd_one(struct srdma_net_ctx *ep)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} cb;
	struct iovec iov = { ep->fin, SRDMA_FWD_MAX };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cb.buf, .msg_controllen = sizeof(cb.buf),
	};
	struct srdma_fwd_hdr h;
	struct cmsghdr *c;
	bool cred_ok = false;
	size_t off;
	ssize_t r;
	uint32_t i;

	r = recvmsg(ep->fwd, &mh, MSG_DONTWAIT);
	if (r < 0)
		return 0;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred uc;

			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			cred_ok = uc.uid == geteuid();
		}
	if (!cred_ok || (mh.msg_flags & MSG_TRUNC) ||
	    (size_t)r < sizeof(h)) {
		ep_drop(ep, NULL, SRDMA_DROP_OTHER,
			"forwarded batch from a stranger, or malformed", NULL);
		return 1;
	}
	memcpy(&h, ep->fin, sizeof(h));
	if (h.magic != SRDMA_FWD_MAGIC) {
		ep_drop(ep, NULL, SRDMA_DROP_OTHER, "forwarded batch: bad magic",
			NULL);
		return 1;
	}
	off = sizeof(h);
	for (i = 0; i < h.count; i++) {
		struct srdma_fwd_rec rec;
		size_t padded;

		if ((size_t)r - off < sizeof(rec))
			break;
		memcpy(&rec, ep->fin + off, sizeof(rec));
		off += sizeof(rec);
		padded = ((size_t)rec.len + 7) & ~(size_t)7;
		if (rec.len > RX_BUF || (size_t)r - off < padded)
			break;
		cnt(&ep->st.fwd_in, 1);
		rx_one(ep, ep->fin + off, rec.len, &rec.path, true);
		off += padded;
	}
	if (i < h.count)
		ep_drop(ep, NULL, SRDMA_DROP_OTHER, "forwarded batch truncated",
			NULL);
	return i ? (int)i : 1;
}

/* Receive up to @budget datagrams: from the UDP socket, and from the
 * forwarding socket when @fwd (the thread, told by epoll: the inline path
 * leaves that rare path to it, to spare a system call per poll); @one:
 * the inline path (drain_udp). */
static int drain(struct srdma_net_ctx *ep, int budget, bool fwd, bool one)
{
	int done, n;

	/* The packets' copies into our memory: one handler check for all
	 * (util/selfcopy.h). */
	srdma_self_copy_batch(true);
	done = drain_udp(ep, budget, one);
	while (fwd && done < budget && (n = drain_fwd_one(ep)) > 0)
		done += n;
	srdma_self_copy_batch(false);
	SRDMA_LT(SRDMA_LT_DRAIN);
	return done;
}

/* ---- timers ---------------------------------------------------------------- */

/* The earlier of two deadlines, 0 standing for none. */
static inline uint64_t earlier(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* Run the due requester timers and held-ACK deadlines; return the
 * earliest one left (0: none), and in *@reqs (if given) the earliest
 * requester deadline alone. */
static uint64_t run_timers(struct srdma_net_ctx *ep, uint64_t now,
			   uint64_t *reqs)
{
	struct srdma_net_qp *due[TIMER_BATCH], *nq;
	uint64_t reqn = 0, ackn = 0, d, a;
	unsigned int n = 0, i;

	/* Scanned from here on: a hold armed meanwhile lowers it again. */
	atomic_store(&ep->ack_due, 0);
	pthread_mutex_lock(&ep->lock);
	for (nq = ep->qp_list; nq; nq = nq->ep_next) {
		d = atomic_load_explicit(&nq->deadline_ns,
					 memory_order_acquire);
		a = atomic_load_explicit(&nq->ack_due_ns,
					 memory_order_acquire);
		if (!d && !a)
			continue;
		if (earlier(d, a) <= now && n < TIMER_BATCH) {
			atomic_fetch_add(&nq->refs, 1);
			due[n++] = nq;
			continue;
		}
		/* The rest of what is due: next round. */
		if (d && d <= now)
			d = now + 1;
		if (a && a <= now)
			a = now + 1;
		reqn = earlier(reqn, d);
		ackn = earlier(ackn, a);
	}
	pthread_mutex_unlock(&ep->lock);
	for (i = 0; i < n; i++) {
		nq = due[i];
		d = atomic_load_explicit(&nq->deadline_ns,
					 memory_order_acquire);
		if (d && d <= now) {
			uint64_t (*th)(struct srdma_net_qp *, uint64_t) =
				srdma_net_timer_hook;

			d = th ? th(nq, now) : srdma_netreq_timer(nq, now);
		}
		reqn = earlier(reqn, d);
		ackn = earlier(ackn, srdma_netresp_ack_timer(nq, now));
		qp_unpin(nq);
	}
	if (reqs)
		*reqs = reqn;
	/* Held ACKs still waiting: the inline path's to watch too. */
	if (ackn) {
		a = atomic_load_explicit(&ep->ack_due, memory_order_relaxed);
		while ((!a || ackn < a) &&
		       !atomic_compare_exchange_weak(&ep->ack_due, &a, ackn))
			;
	}
	return earlier(reqn, ackn);
}

/* ---- the progress thread ---------------------------------------------------- */

static int fault_emit(void *arg, const struct srdma_wire_path *p,
		      const struct iovec *iov, int n);

/*
 * Is poll mode idle? An application that polls an empty CQ for good (a
 * peer that died; perftest's own loop waiting for a message that cannot
 * come) keeps moving poll_until, and the thread, waking at the end of
 * each window to see whether it may take the socket back, would wake
 * every poll_ns for as long (thousands of times a second). So once the
 * application's polls have received nothing for POLL_IDLE_WINDOWS
 * windows, the thread takes the socket back and sleeps on it (standby).
 * Poll mode starts again when a datagram wakes the thread, or when the
 * application receives one first (it drains the socket before the
 * thread runs, and the thread's epoll then goes back to sleep in the
 * kernel: srdma_net_progress kicks it out of standby). Thread only.
 */
static bool poll_idle(struct srdma_net_ctx *ep, uint64_t now)
{
	uint64_t n = atomic_load_explicit(&ep->st.inline_rx,
					  memory_order_relaxed);

	if (atomic_load(&ep->idle_standby))
		return true;
	if (!atomic_load_explicit(&ep->udp_off, memory_order_relaxed) ||
	    n != ep->idle_rx) {
		ep->idle_rx = n;
		ep->idle_since = now;
		return false;
	}
	if (now - ep->idle_since < POLL_IDLE_WINDOWS * ep->poll_ns)
		return false;
	srdma_dbg("lid %u: poll mode idle for %llu us: the thread takes the socket back",
		  ep->id.lid,
		  (unsigned long long)(now - ep->idle_since) / 1000u);
	atomic_store(&ep->idle_standby, true);
	return true;
}

/* Put the connected receive socket in (@in) or out of the thread's
 * epoll set, as the main socket. Thread only (the only closer of crx). */
static void crx_set(struct srdma_net_ctx *ep, bool in)
{
	int fd = atomic_load_explicit(&ep->crx, memory_order_acquire);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (fd < 0 || in == ep->crx_in_set)
		return;
	if (epoll_ctl(ep->epfd, in ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev))
		srdma_dbg("epoll_ctl (connected socket): %s", strerror(errno));
	else
		ep->crx_in_set = in;
}

/*
 * The thread's part of the connected receive socket, at each wake-up: a
 * new one joins its epoll set unless poll mode has the sockets out; one
 * that got another context's datagram (crx_close) is drained and closed,
 * holding inline_lock and drain_lock, so that no poller is in a receive
 * on it (they read crx under one of them). Its flow then comes back to
 * the main socket.
 */
static void crx_sync(struct srdma_net_ctx *ep)
{
	int fd = atomic_load_explicit(&ep->crx, memory_order_acquire), r, why;

	if (fd < 0)
		return;
	why = atomic_load(&ep->crx_close);
	if (why == CRX_KEEP) {
		if (!atomic_load(&ep->udp_off))
			crx_set(ep, true);
		return;
	}
	crx_set(ep, false);
	pthread_mutex_lock(&ep->inline_lock);
	pthread_mutex_lock(&ep->drain_lock);
	for (r = 0; r < CLOSE_DRAIN_ROUNDS &&
		    drain_fd(ep, fd, true, ep->rx_slots, false) > 0; r++)
		;
	atomic_store_explicit(&ep->crx, -1, memory_order_release);
	atomic_store(&ep->crx_close, CRX_KEEP);
	/* An idle one leaves room for the flow that moved to the main
	 * socket; a shared flow's is not tried again. */
	ep->crx_state = why == CRX_IDLE ? CRX_NONE : CRX_OFF;
	ep->crx_polls = ep->crx_idle = ep->main_every = 0;
	ep->crx_main_first = false;
	pthread_mutex_unlock(&ep->drain_lock);
	pthread_mutex_unlock(&ep->inline_lock);
	close(fd);
	if (why == CRX_IDLE)
		srdma_dbg("lid %u: the connected receive socket is idle while the main one brings datagrams: closed",
			  ep->id.lid);
	else
		srdma_dbg("lid %u: the connected receive socket got another context's datagram: closed, its flow is shared on this host",
			  ep->id.lid);
}

/*
 * When the thread looks again at a poll-mode window it found extended
 * (ending at @until): at its end for the first POLL_CHECK_STEADY looks
 * in a row, then 2, 4, 8 times poll_ns from @now. Each look is a
 * wake-up on a CPU where, on a machine with no spare one, a polling
 * application spins: it takes the CPU for a context switch each way
 * (several us here), in the middle of a trip one time in ~40 at 200 us
 * (perftest's rounds: the slow ones, 5.7-5.9 us against 5.1, went away
 * with a 2 ms window). The cost: an application that stops polling
 * without arming a CQ (srdma_net_poll_end kicks the thread) after a long
 * polling phase leaves its datagrams to the thread up to 8 windows (1.6
 * ms) later instead of one. Thread only.
 */
static uint64_t poll_check(struct srdma_net_ctx *ep, uint64_t now,
			   uint64_t until)
{
	unsigned int k = ep->pm_looks;
	uint64_t t;

	if (k < UINT_MAX)
		ep->pm_looks = k + 1;
	if (k < POLL_CHECK_STEADY)
		return until;
	k -= POLL_CHECK_STEADY;
	t = now + (ep->poll_ns << (k < POLL_CHECK_MAX_SHIFT ? k + 1 :
							    POLL_CHECK_MAX_SHIFT));
	return t > until ? t : until;
}

/*
 * Poll mode: should the UDP socket be out of the thread's epoll set now?
 * Moves it in or out (level-triggered: datagrams queued while it was out
 * wake the thread at once when it comes back). Out is EPOLL_CTL_DEL, not
 * a MOD to no events, which would leave our entry on the socket's wait
 * queue for every datagram and send to walk (net-endpoint.md). Not while poll mode is
 * idle (poll_idle; @rx: the thread woke for the socket). Thread only.
 * Return: the end of poll mode (0: off).
 */
static uint64_t poll_mode(struct srdma_net_ctx *ep, uint64_t now, bool rx)
{
	struct epoll_event ev = { .events = 0, .data.fd = ep->udp };
	uint64_t until = atomic_load(&ep->poll_until);

	if (rx || until <= now)
		atomic_store(&ep->idle_standby, false);
	if (until > now && poll_idle(ep, now))
		until = 0;
	if (until > now && !atomic_load_explicit(&ep->udp_off,
						 memory_order_relaxed)) {
		/* Out first, then look again: an application that ends poll
		 * mode meanwhile (srdma_net_poll_end) either sees udp_off and
		 * kicks, or we see its 0 here (both seq_cst). */
		atomic_store(&ep->udp_off, true);
		until = atomic_load(&ep->poll_until);
		if (until > now) {
			if (epoll_ctl(ep->epfd, EPOLL_CTL_DEL, ep->udp, &ev))
				srdma_dbg("epoll_ctl: %s", strerror(errno));
			crx_set(ep, false);
			cnt(&ep->st.poll_handoffs, 1);
			SRDMA_LT(SRDMA_LT_PMOFF);
			ep->pm_looks = 0;
			return until;
		}
		/* Back in, as below: not while an application that saw
		 * udp_off may hold a datagram; then out for now. */
		if (pthread_mutex_trylock(&ep->inline_lock)) {
			if (epoll_ctl(ep->epfd, EPOLL_CTL_DEL, ep->udp, &ev))
				srdma_dbg("epoll_ctl: %s", strerror(errno));
			crx_set(ep, false);
			return now + RETAKE_NS;
		}
		atomic_store(&ep->udp_off, false);
		pthread_mutex_unlock(&ep->inline_lock);
		return 0;
	}
	if (until <= now && atomic_load_explicit(&ep->udp_off,
						 memory_order_relaxed)) {
		/*
		 * Not while an application is inside inline_recv(): it may
		 * hold a datagram it has not handled yet (preempted between
		 * its receive and drain_lock), and what we (or a poller on
		 * the drain() path) received after it would be handled
		 * first: reordering that RC pays with a retransmission and
		 * UC with the message. udp_off goes false under inline_lock:
		 * an application that takes it after us sees that and leaves
		 * the socket to drain().
		 */
		if (pthread_mutex_trylock(&ep->inline_lock))
			return now + RETAKE_NS;
		atomic_store(&ep->udp_off, false);
		pthread_mutex_unlock(&ep->inline_lock);
		ev.events = EPOLLIN;
		if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, ep->udp, &ev) &&
		    errno != EEXIST) {
			/* Still out (ENOMEM): the inline path goes on
			 * receiving, and we try again in a millisecond. */
			srdma_dbg("epoll_ctl: %s", strerror(errno));
			atomic_store(&ep->udp_off, true);
			return now + 1000000u;
		}
		crx_set(ep, true);
		SRDMA_LT(SRDMA_LT_PMON);
		return 0;
	}
	return until > now ? poll_check(ep, now, until) : 0;
}

static void *progress_thread(void *arg)
{
	struct srdma_net_ctx *ep = arg;
	struct epoll_event ev[4];
	uint64_t now, next, until, reqs, fault_next = 0;
	struct timespec ts;
	bool timed, rx = false, fwd, settle;
	int n, i;

	while (!atomic_load_explicit(&ep->stop, memory_order_acquire)) {
		/* srdma status: counters as of this wake-up's work, mirrored
		 * before sleeping again (off the receive path). */
		settle = srdma_rt_ep_mirror(ep->ctx);
		/* Kicks from here on write the eventfd, until we know the
		 * deadline we sleep on. */
		atomic_store(&ep->sleep_until, UINT64_MAX);
		now = srdma_net_now_ns();
		pthread_mutex_lock(&ep->timer_lock);
		next = run_timers(ep, now, &reqs);
		pthread_mutex_unlock(&ep->timer_lock);
		if (ep->fault) {
			fault_next = srdma_netfault_tick(ep->fault, now,
							 fault_emit,
							 fault_deliver, ep);
			next = earlier(next, fault_next);
		}
		/* The application polls: sleep until it may have stopped,
		 * then take the socket back (and drain what it left). */
		until = ep->poll_ns ? poll_mode(ep, now, rx) : 0;
		if (until) {
			/* Held ACKs are the polling application's to send
			 * (srdma_net_progress watches ep->ack_due); we come
			 * back for them at the end of poll mode, not before:
			 * the requester's timers and the faults' only. */
			next = reqs;
			if (ep->fault)
				next = earlier(next, fault_next);
			next = earlier(next, until);
		}
		/* After a change, wake once more when quiet: the mirror then
		 * also has what the application received inline since. */
		if (settle)
			next = earlier(next, now + SRDMA_RT_SETTLE_NS);
		atomic_store(&ep->sleep_until, next ? next : UINT64_MAX);
		timed = next != 0;
		if (timed) {
			now = srdma_net_now_ns();
			next = next > now ? next - now : 0;
			ts.tv_sec = (time_t)(next / 1000000000u);
			ts.tv_nsec = (long)(next % 1000000000u);
		}
		n = epoll_pwait2(ep->epfd, ev, 4, timed ? &ts : NULL, NULL);
		if (n < 0 && errno == ENOSYS) {
			int ms = timed ? (int)((next + 999999) / 1000000) : -1;

			n = epoll_wait(ep->epfd, ev, 4, ms);
		}
		cnt(&ep->st.wakeups, 1);
		rx = fwd = false;
		for (i = 0; i < n; i++) {
			if (ev[i].data.fd == ep->evfd) {
				uint64_t v;

				if (read(ep->evfd, &v, sizeof(v)) < 0)
					(void)0;
			} else if (ev[i].data.fd == ep->fwd) {
				fwd = true;
			} else {
				rx = true;
			}
		}
		crx_sync(ep);
		if (!rx && !fwd)
			continue;
		SRDMA_LT(SRDMA_LT_THREAD);
		/* In poll mode, an application draining now has just polled:
		 * leave it the socket rather than wait for the lock (which
		 * would cost it a futex wake-up when it unlocks); the next
		 * round finds poll mode on and steps aside. Only then: a
		 * holder that is not polling (preempted, say) is waited for,
		 * never spun on. */
		if (ep->poll_ns && !fwd &&
		    pthread_mutex_trylock(&ep->drain_lock)) {
			if (atomic_load(&ep->poll_until) >
			    srdma_net_now_ns())
				continue;
			pthread_mutex_lock(&ep->drain_lock);
		} else if (!ep->poll_ns || fwd) {
			pthread_mutex_lock(&ep->drain_lock);
		}
		drain(ep, 256, fwd, false);
		pthread_mutex_unlock(&ep->drain_lock);
	}
	return NULL;
}

/* ---- public entry points ---------------------------------------------------- */

static void ep_free(struct srdma_net_ctx *ep)
{
	if (ep->epfd >= 0)
		close(ep->epfd);
	if (ep->evfd >= 0)
		close(ep->evfd);
	if (ep->fwd >= 0)
		close(ep->fwd);
	srdma_pcap_close(ep->pcap);
	srdma_netfault_free(ep->fault);
	pthread_mutex_destroy(&ep->lock);
	pthread_mutex_destroy(&ep->drain_lock);
	pthread_mutex_destroy(&ep->inline_lock);
	pthread_mutex_destroy(&ep->timer_lock);
	free(ep->qp_tab);
	free(ep->rxbuf);
	free(ep->fin);
	free(ep->fout);
	free(ep);
}

/* A number of microseconds from the environment: @def if unset or not a
 * number, at most @max. */
static uint64_t env_us(const char *name, uint64_t def, uint64_t max)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end) {
		srdma_warn("%s=%s: not a number of microseconds, using %llu",
			   name, v, (unsigned long long)def);
		return def;
	}
	return x > max ? max : x;
}

static int ep_open(struct srdma_context *ctx, struct srdma_net_ctx **out)
{
	struct srdma_net_ctx *ep = calloc(1, sizeof(*ep));
	struct epoll_event ev = { .events = EPOLLIN };
	int i, ret;

	if (!ep)
		return -ENOMEM;
	ep->ctx = ctx;
	ep->id.dirfd = ctx->host.dirfd;
	ep->id.lid = ctx->host.lid;
	ep->id.pid = ctx->host.pid;
	ep->id.start_time = ctx->host.start_time;
	ep->fork_gen = ctx->fork_gen;
	ep->udp = ep->fwd = ep->evfd = ep->epfd = -1;
	atomic_init(&ep->crx, -1);
	atomic_init(&ep->crx_close, CRX_KEEP);
	ep->crx_on = !getenv("SRDMA_NET_CONNRX") ||
		     strcmp(getenv("SRDMA_NET_CONNRX"), "0");
	ep->poll_inline = !getenv("SRDMA_NET_INLINE") ||
			  strcmp(getenv("SRDMA_NET_INLINE"), "0");
	atomic_init(&ep->gso, !getenv("SRDMA_NET_GSO") ||
				      strcmp(getenv("SRDMA_NET_GSO"), "0"));
	ep->poll_ns = ep->poll_inline ? env_us("SRDMA_NET_POLL_US",
					       SRDMA_NET_POLL_US_DEFAULT,
					       1000000) * 1000 : 0;
	ep->yield_ns = env_us("SRDMA_NET_YIELD_US", SRDMA_NET_YIELD_US_DEFAULT,
			      1000000) * 1000;
	atomic_init(&ep->sleep_until, UINT64_MAX);
	pthread_mutex_init(&ep->lock, NULL);
	pthread_mutex_init(&ep->drain_lock, NULL);
	pthread_mutex_init(&ep->inline_lock, NULL);
	pthread_mutex_init(&ep->timer_lock, NULL);
	ep->qp_tab = calloc(QP_SLOTS, sizeof(*ep->qp_tab));
	/* SRDMA_NET_GRO=0: one datagram per packet on receive too. */
	ep->gro = !getenv("SRDMA_NET_GRO") || strcmp(getenv("SRDMA_NET_GRO"),
						     "0");
	ep->rx_slots = ep->gro ? RX_GRO_BATCH : RX_BATCH;
	ep->rx_buf = ep->gro ? RX_GRO_BUF : RX_BUF;
	ep->rxbuf = malloc((size_t)(ep->rx_slots + 1) * ep->rx_buf);
	ep->fin = malloc(SRDMA_FWD_MAX);
	ep->fout = malloc(SRDMA_FWD_MAX);
	if (!ep->qp_tab || !ep->rxbuf || !ep->fin || !ep->fout) {
		ret = -ENOMEM;
		goto err;
	}
	((struct srdma_fwd_hdr *)ep->fout)->magic = SRDMA_FWD_MAGIC;
	ep->fout_len = sizeof(struct srdma_fwd_hdr);
	for (i = 0; i <= ep->rx_slots; i++) {	/* with the inline slot */
		struct msghdr *mh = &ep->msgs[i].msg_hdr;

		ep->iov[i].iov_base = ep->rxbuf + (size_t)i * ep->rx_buf;
		ep->iov[i].iov_len = ep->rx_buf;
		mh->msg_name = &ep->from[i];
		mh->msg_iov = &ep->iov[i];
		mh->msg_iovlen = 1;
		mh->msg_control = ep->cbuf[i].buf;
	}
	/* The forwarding socket first: it refuses a LID that another state
	 * directory's context already uses in this namespace. */
	ret = srdma_demux_fwd_open(ep->id.lid);
	if (ret < 0)
		goto err;
	ep->fwd = ret;
	ep->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ep->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ep->evfd < 0 || ep->epfd < 0) {
		ret = -errno;
		goto err;
	}
	if (getenv("SRDMA_PCAP") && *getenv("SRDMA_PCAP")) {
		/* No capture is no reason to refuse the transport (the
		 * failure is logged). */
		ep->pcap = srdma_pcap_open(getenv("SRDMA_PCAP"));
	}
	ep->fault = srdma_netfault_from_env(fault_salt++);
	if (!ep->fault && errno) {
		ret = -errno;	/* a bad SRDMA_NET_FAULT: logged */
		goto err;
	}
	ret = srdma_demux_join(&ep->id, SRDMA_ROCE_PORT);
	if (ret < 0)
		goto err;
	ep->udp = ret;
	srdma_net_mcast_sockopts(ep->udp);
	if (ep->gro) {
		int one = 1;

		/* Runs of equal-size datagrams of a flow arrive as one
		 * (a GSO send from a veth peer arrives whole). Without it
		 * (old kernel): one per packet, in the larger slots. */
		if (setsockopt(ep->udp, SOL_UDP, UDP_GRO, &one, sizeof(one))) {
			srdma_dbg("lid %u: UDP_GRO: %s", ep->id.lid,
				  strerror(errno));
			ep->gro = false;
		}
	}
	for (i = 0; i < 3; i++) {
		int fd = i == 0 ? ep->udp : i == 1 ? ep->fwd : ep->evfd;

		ev.data.fd = fd;
		if (epoll_ctl(ep->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			ret = -errno;
			goto err_leave;
		}
	}
	/* The thread takes no signal of the application's, but its own
	 * faults (util/selfcopy.h). */
	ret = -srdma_thread_create_nosig(&ep->thread, progress_thread, ep);
	if (ret)
		goto err_leave;
	pthread_once(&eps_once, eps_init);
	pthread_mutex_lock(&eps_lock);
	ep->all_next = eps;
	eps = ep;
	pthread_mutex_unlock(&eps_lock);
	*out = ep;
	return 0;
err_leave:
	srdma_demux_leave(&ep->id, ep->udp);
err:
	ep_free(ep);
	return ret;
}

int srdma_net_udp_fd(struct srdma_context *ctx)
{
	struct srdma_net_ctx *ep = srdma_net_ctx_get(ctx);

	return ep ? ep->udp : -errno;
}

struct srdma_net_ctx *srdma_net_ctx_get(struct srdma_context *ctx)
{
	struct srdma_net_ctx *ep = atomic_load_explicit(&ctx->net,
							memory_order_acquire);
	int ret = 0;

	if (ep) {
		if (ep_inherited(ep)) {
			errno = EIO;
			return NULL;
		}
		return ep;
	}
	pthread_mutex_lock(&open_lock);
	ep = atomic_load_explicit(&ctx->net, memory_order_acquire);
	if (!ep) {
		ret = ep_open(ctx, &ep);
		if (!ret) {
			atomic_store_explicit(&ctx->net, ep,
					      memory_order_release);
			srdma_info("lid %u: net endpoint open on UDP %u",
				   ctx->host.lid, SRDMA_ROCE_PORT);
		}
	}
	pthread_mutex_unlock(&open_lock);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return ep;
}

void srdma_net_ctx_close(struct srdma_context *ctx)
{
	struct srdma_net_ctx *ep, **pp;
	uint64_t one = 1;

	ep = atomic_exchange_explicit(&ctx->net, NULL, memory_order_acq_rel);
	if (!ep || ep_inherited(ep))
		return;		/* a child's copy: its fds are closed */
	srdma_dbg("lid %u: net endpoint closes: %llu thread wake-ups, %llu poll-mode hand-offs (%llu ended by a lone ACK), %llu of %llu datagrams received inline, %llu idle yields",
		  ep->id.lid,
		  (unsigned long long)atomic_load(&ep->st.wakeups),
		  (unsigned long long)atomic_load(&ep->st.poll_handoffs),
		  (unsigned long long)atomic_load(&ep->st.lone_acks),
		  (unsigned long long)atomic_load(&ep->st.inline_rx),
		  (unsigned long long)atomic_load(&ep->st.rx_dgrams),
		  (unsigned long long)atomic_load(&ep->st.idle_yields));
	atomic_store(&ep->stop, true);
	if (write(ep->evfd, &one, sizeof(one)) < 0)
		srdma_dbg("eventfd: %s", strerror(errno));
	pthread_join(ep->thread, NULL);
	/* The kernel drops what is queued on a socket that leaves the
	 * reuseport group. Among it may be datagrams for other contexts of
	 * this namespace that steering put here (another state directory's
	 * members are not in our program): e.g. the ACK our last QP flushed
	 * to a peer in this namespace as it was destroyed, which our thread
	 * had no time to forward on a loaded machine - the peer then
	 * retried into the void and ended in RETRY_EXC_ERR. Forward them
	 * now (ours find no QP and are dropped); a bounded number of
	 * rounds, so that a flood cannot hold the close. */
	pthread_mutex_lock(&ep->drain_lock);
	for (int r = 0; r < CLOSE_DRAIN_ROUNDS &&
			drain(ep, ep->rx_slots, false, false) > 0; r++)
		;
	pthread_mutex_unlock(&ep->drain_lock);
	if (atomic_load(&ep->crx) >= 0)
		close(atomic_load(&ep->crx));
	atomic_store(&ep->crx, -1);
	pthread_mutex_lock(&eps_lock);
	for (pp = &eps; *pp; pp = &(*pp)->all_next)
		if (*pp == ep) {
			*pp = ep->all_next;
			break;
		}
	pthread_mutex_unlock(&eps_lock);
	srdma_demux_leave(&ep->id, ep->udp);
	ep_free(ep);
}

/* ---- sending ---------------------------------------------------------------- */

/* The interface of our link-local source address @sip (fe80::/10), from
 * the GID table; 0 for any other address. A link-local destination is
 * only reachable through a named interface. */
static uint32_t link_local_ifindex(const struct srdma_net_ctx *ep,
				   const uint8_t sip[16])
{
	union ibv_gid g;
	int i;

	if (sip[0] != 0xfe || (sip[1] & 0xc0) != 0x80)
		return 0;
	memcpy(g.raw, sip, 16);
	i = srdma_gid_find(&ep->ctx->gids, &g);
	return i < 0 ? 0 : ep->ctx->gids.e[i].ifindex;
}

/*
 * The source address of a datagram is pinned with IPV6_PKTINFO, because
 * the ICRC covers it and must match the GID we computed it with. That
 * control message costs the kernel a little per datagram (net-endpoint.md,
 * "Sending": 0.1-0.5 us of a one-way trip), and it is needed only where
 * the kernel would pick another source by itself. So each thread keeps,
 * per path, whether the kernel's own choice is the GID's address: asked
 * by connecting a throw-away UDP socket to the destination and reading
 * its address (the route lookup an unconnected send makes), again after
 * SRC_PROBE_NS, so that an address or route that changes is seen within
 * that time (meanwhile datagrams with the wrong source fail their ICRC at
 * the peer, and the protocol recovers them like lost ones). A link-local
 * source always keeps the control message: it also names the interface.
 * SRDMA_NET_PKTINFO=1 always pins. Per thread (heap entries under a
 * pthread key, as wire.c's header CRCs): no lock on the send path.
 */
#define SRC_PROBE_NS 100000000ull
#define SRC_CACHE 4

struct src_cache {
	struct {
		uint8_t sip[16], dip[16];
		uint64_t until;		/* probe again after (0: unused) */
		bool kernel;		/* the kernel picks sip itself */
	} e[SRC_CACHE];
	unsigned int next;		/* entry to replace */
};

static pthread_once_t src_once = PTHREAD_ONCE_INIT;
static pthread_key_t src_key;		/* immutable after src_once */
static bool src_key_ok, src_pin;	/* immutable after src_once */

static void src_init(void)
{
	const char *v = getenv("SRDMA_NET_PKTINFO");

	src_pin = v && !strcmp(v, "1");
	src_key_ok = !pthread_key_create(&src_key, free);
}

/* Would the kernel send from @sip to @dip by itself? */
static bool src_probe(const uint8_t sip[16], const uint8_t dip[16])
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_port = htons(SRDMA_NET_SPORT) };
	socklen_t alen = sizeof(a);
	bool same = false;
	int fd;

	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	memcpy(&a.sin6_addr, dip, 16);
	if (!connect(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &alen))
		same = !memcmp(&a.sin6_addr, sip, 16);
	close(fd);
	return same;
}

/* May a datagram on @p leave without IPV6_PKTINFO (see above)? */
static bool src_kernel_picks(const struct srdma_wire_path *p)
{
	struct src_cache *c;
	uint64_t now;
	unsigned int i;

	pthread_once(&src_once, src_init);
	if (src_pin || !src_key_ok)
		return false;
	c = pthread_getspecific(src_key);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c || pthread_setspecific(src_key, c)) {
			free(c);
			return false;
		}
	}
	now = srdma_net_now_ns();
	for (i = 0; i < SRC_CACHE; i++)
		if (c->e[i].until && !memcmp(c->e[i].dip, p->dip, 16) &&
		    !memcmp(c->e[i].sip, p->sip, 16))
			break;
	if (i == SRC_CACHE) {
		i = c->next++ % SRC_CACHE;
		memcpy(c->e[i].sip, p->sip, 16);
		memcpy(c->e[i].dip, p->dip, 16);
		c->e[i].until = 0;
	}
	if (now >= c->e[i].until) {
		c->e[i].kernel = src_probe(p->sip, p->dip);
		c->e[i].until = now + SRC_PROBE_NS;
	}
	return c->e[i].kernel;
}

/*
 * Fill @mh for one datagram (or a GSO run) on @p from @iov[0..n): the
 * destination in @to, IPV6_PKTINFO in @cbuf unless the kernel picks the
 * source itself; with @gso, room for one more control message after it.
 * Return: where that one goes (@gso), else NULL.
 */
static struct cmsghdr *fill_msg(const struct srdma_net_ctx *ep,
				struct msghdr *mh, struct sockaddr_in6 *to,
				void *cbuf, const struct srdma_wire_path *p,
				const struct iovec *iov, int n, bool gso)
{
	uint32_t ifindex = link_local_ifindex(ep, p->sip);
	struct in6_pktinfo pi;
	struct cmsghdr *c;

	memset(to, 0, sizeof(*to));
	to->sin6_family = AF_INET6;
	to->sin6_port = htons(p->dport);
	to->sin6_scope_id = ifindex;
	memcpy(&to->sin6_addr, p->dip, 16);
	memset(mh, 0, sizeof(*mh));
	mh->msg_name = to;
	mh->msg_namelen = sizeof(*to);
	mh->msg_iov = (struct iovec *)iov;
	mh->msg_iovlen = (size_t)n;
	mh->msg_control = cbuf;
	if (!ifindex && src_kernel_picks(p)) {
		/* No pktinfo: the GSO size, if any, comes first. */
		mh->msg_controllen = gso ? CMSG_SPACE(sizeof(uint16_t)) : 0;
		if (!gso)
			mh->msg_control = NULL;
		return gso ? CMSG_FIRSTHDR(mh) : NULL;
	}
	mh->msg_controllen = CMSG_SPACE(sizeof(pi)) +
			     (gso ? CMSG_SPACE(sizeof(uint16_t)) : 0);
	c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = IPPROTO_IPV6;
	c->cmsg_type = IPV6_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(pi));
	memset(&pi, 0, sizeof(pi));
	memcpy(&pi.ipi6_addr, p->sip, 16);
	pi.ipi6_ifindex = ifindex;
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	return gso ? CMSG_NXTHDR(mh, c) : NULL;
}

/* A full socket buffer: wait briefly for room. */
static bool wait_room(struct srdma_net_ctx *ep)
{
	struct pollfd pfd = { .fd = ep->udp, .events = POLLOUT };

	return poll(&pfd, 1, 1) > 0;
}

/* Bytes of datagram @x. */
static size_t msg_len(const struct srdma_net_msg *x)
{
	size_t len = 0;
	int i;

	for (i = 0; i < x->n; i++)
		len += x->iov[i].iov_len;
	return len;
}

static bool same_path(const struct srdma_wire_path *a,
		      const struct srdma_wire_path *b)
{
	return a == b || !memcmp(a, b, sizeof(*a));
}

/*
 * How many datagrams from @m[j] on (of @n, lengths @len) one GSO send can
 * carry: the same path, all of the first one's length but the last,
 * which may be shorter, at most SRDMA_WIRE_GSO_SEGS of them and
 * GSO_BYTES in all. A shorter datagram that starts a run of its own
 * (another message's middle packets) is left to that run.
 */
static int gso_run(const struct srdma_net_msg *m, const size_t *len, int j,
		   int n)
{
	size_t size = len[j], total = size;
	int c = 1;

	while (j + c < n && c < SRDMA_WIRE_GSO_SEGS) {
		const struct srdma_net_msg *x = &m[j + c];
		size_t l = len[j + c];

		if (l > size || total + l > GSO_BYTES ||
		    x->path->sport != SRDMA_NET_SPORT ||
		    !same_path(x->path, m[j].path))
			break;
		if (l < size) {
			if (j + c + 1 < n && len[j + c + 1] == l &&
			    same_path(m[j + c + 1].path, x->path))
				break;
			c++;
			break;
		}
		total += l;
		c++;
	}
	return c;
}

/*
 * Append datagram @x (@len bytes) to @iov as segment @id of a GSO send:
 * the same bytes, but for IPv4 segments after the first, whose ICRC
 * trailer is replaced by @trailer, patched for the identification @id
 * the kernel will give the segment (wire.h). Return: iovecs used.
 */
static int seg_iov(const struct srdma_net_msg *x, size_t len, uint16_t id,
		   bool v4, struct iovec *iov, uint8_t trailer[4])
{
	size_t keep = len - SRDMA_ICRC_BYTES, off = 0, take;
	uint32_t icrc = 0;
	int i, k = 0, b;

	if (!id || !v4) {
		memcpy(iov, x->iov, (size_t)x->n * sizeof(*iov));
		return x->n;
	}
	for (i = 0; i < x->n; i++) {
		const uint8_t *p = x->iov[i].iov_base;
		size_t l = x->iov[i].iov_len;

		take = off < keep ? keep - off : 0;
		if (take > l)
			take = l;
		if (take) {
			iov[k].iov_base = (void *)p;
			iov[k++].iov_len = take;
		}
		/* The trailer's bytes, wherever they lie. */
		for (b = (int)take; b < (int)l; b++)
			icrc |= (uint32_t)p[b] << (8 * (off + (size_t)b - keep));
		off += l;
	}
	srdma_wire_put_icrc(trailer, icrc ^ srdma_wire_icrc_id_delta(len, id));
	iov[k].iov_base = trailer;
	iov[k++].iov_len = SRDMA_ICRC_BYTES;
	return k;
}

/* A GSO send of @mh refused for a reason of its own (not the packets'):
 * no UDP_SEGMENT, no checksum offload on the path, ... */
static bool gso_refusal(int err)
{
	return err == EIO || err == EINVAL || err == ENOPROTOOPT ||
	       err == EOPNOTSUPP;
}


/* Poll mode until @now + poll_ns: the application polls inline (not for
 * one that waits for events: it keeps the thread as before). */
static void poll_stamp(struct srdma_net_ctx *ep, uint64_t now)
{
	if (ep->poll_ns &&
	    (now - atomic_load_explicit(&ep->event_ns, memory_order_relaxed) >=
	     APP_WAITS_NS ||
	     atomic_load_explicit(&ep->arm_polls, memory_order_relaxed) >=
	     ARM_POLLS))
		atomic_store_explicit(&ep->poll_until, now + ep->poll_ns,
				      memory_order_relaxed);
}

/*
 * sendmmsg of @k datagrams (GSO sends count as one), MSG_DONTWAIT. One
 * (a ping-pong's usual case): sendmsg, which does the same for less (no
 * mmsghdr array to copy and loop over: ~0.1 us per send with the
 * receive here). Return: as sendmmsg.
 */
static int send_dgrams(int fd, struct mmsghdr *mm, unsigned int k)
{
	ssize_t b;

	if (k != 1)
		return sendmmsg(fd, mm, k, MSG_DONTWAIT);
	b = sendmsg(fd, &mm->msg_hdr, MSG_DONTWAIT);
	if (b < 0)
		return -1;
	mm->msg_len = (unsigned int)b;
	return 1;
}

/*
 * Send @m[0..n) for real: consecutive datagrams that can go as one UDP
 * GSO send do (gso_run), the others one by one, all of a round in one
 * sendmmsg. Return: how many went, or -errno if none.
 */
static int send_raw(struct srdma_net_ctx *ep, const struct srdma_net_msg *m,
		    int n)
{
	struct mmsghdr mm[TX_UNITS];
	struct sockaddr_in6 to[TX_UNITS];
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) +
			 CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cb[TX_UNITS];
	struct iovec iov[TX_IOV];
	uint8_t trailer[TX_SEGS][SRDMA_ICRC_BYTES];
	struct {
		const struct iovec *iov;
		int n;
		uint16_t id;
	} seg[TX_SEGS];
	size_t len[TX_SEGS];
	int units[TX_UNITS];		/* segments of each */
	int done = 0, k, i, j, r, tries = 0, refused = 0, nseg, niov;
	const struct srdma_net_msg *mr;
	bool gso;

	SRDMA_LT(SRDMA_LT_SRAW);
	/* Answering inline what the application received: still polling. */
	if (inline_ep == ep)
		poll_stamp(ep, srdma_net_now_ns());
	while (done < n) {
		gso = !refused && atomic_load_explicit(&ep->gso,
						       memory_order_relaxed);
		/* This round: up to TX_SEGS datagrams. */
		nseg = n - done < TX_SEGS ? n - done : TX_SEGS;
		for (i = 0; i < nseg; i++) {
			if (m[done + i].path->sport != SRDMA_NET_SPORT) {
				srdma_dbg("lid %u: source port %u is not ours (%u): the ICRC would be wrong",
					  ep->id.lid, m[done + i].path->sport,
					  SRDMA_NET_SPORT);
				nseg = i;
				break;
			}
			len[i] = msg_len(&m[done + i]);
		}
		if (!nseg)
			return done ? done : -EINVAL;
		mr = m + done;
		for (k = 0, j = 0, niov = 0; k < TX_UNITS && j < nseg; k++) {
			int c = gso ? gso_run(mr, len, j, nseg) : 1, need = 0;
			bool v4 = srdma_gid_is_v4(mr[j].path->sip);
			struct cmsghdr *cm;

			for (i = 0; i < c; i++)
				need += mr[j + i].n + 1;
			if (c > 1 && niov + need > TX_IOV) {
				if (k)
					break;
				c = 1;
			}
			if (c == 1) {
				/* One datagram, sent from its own iovecs. */
				fill_msg(ep, &mm[k].msg_hdr, &to[k], cb[k].buf,
					 mr[j].path, mr[j].iov, mr[j].n,
					 false);
				seg[j].iov = mr[j].iov;
				seg[j].n = mr[j].n;
				seg[j].id = 0;
				units[k] = 1;
				j++;
				continue;
			}
			for (i = 0; i < c; i++) {
				seg[j + i].iov = iov + niov;
				seg[j + i].id = v4 ? (uint16_t)i : 0;
				seg[j + i].n = seg_iov(&mr[j + i], len[j + i],
						       (uint16_t)i, v4,
						       iov + niov,
						       trailer[j + i]);
				niov += seg[j + i].n;
			}
			cm = fill_msg(ep, &mm[k].msg_hdr, &to[k], cb[k].buf,
				      mr[j].path, seg[j].iov,
				      (int)(iov + niov - seg[j].iov), true);
			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			{
				uint16_t gs = (uint16_t)len[j];

				memcpy(CMSG_DATA(cm), &gs, sizeof(gs));
			}
			units[k] = c;
			j += c;
		}
		if (units[0] > 1 && atomic_load_explicit(&srdma_net_gso_refuse,
							 memory_order_relaxed)) {
			/* Tests: the kernel refusing UDP_SEGMENT. */
			r = -1;
			errno = atomic_load_explicit(&srdma_net_gso_refuse,
						     memory_order_relaxed);
		} else {
			SRDMA_LT(SRDMA_LT_TX0);
			r = send_dgrams(ep->udp, mm, (unsigned int)k);
			SRDMA_LT(SRDMA_LT_TX1);
		}
		if (r > 0) {
			uint64_t bytes = 0, gsegs = 0;
			int s = 0;

			for (i = 0; i < r; i++) {
				bytes += mm[i].msg_len;
				if (units[i] > 1)
					gsegs += (uint64_t)units[i];
				for (j = 0; j < units[i]; j++, s++)
					if (ep->pcap)
						srdma_pcap_write_id(
							ep->pcap, mr[s].path,
							seg[s].id, seg[s].iov,
							seg[s].n);
			}
			cnt(&ep->st.tx_dgrams, (uint64_t)s);
			cnt(&ep->st.tx_bytes, bytes);
			cnt(&ep->st.tx_gso_segs, gsegs);
			if (refused && atomic_exchange(&ep->gso, false))
				/* Sent one by one what GSO could not: the
				 * refusal was GSO's. */
				srdma_info("lid %u: the kernel refuses UDP GSO (%s): sending one datagram per packet",
					   ep->id.lid, strerror(refused));
			refused = 0;
			done += s;
			continue;
		}
		if (r < 0 && units[0] > 1 && gso_refusal(errno)) {
			/* Again one by one; GSO is off if that goes. */
			refused = errno;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == ENOBUFS) &&
		    !tries++ && wait_room(ep))
			continue;
		r = -errno;
		cnt(&ep->st.tx_errors, 1);
		srdma_dbg("lid %u: send: %s", ep->id.lid, strerror(-r));
		return done ? done : r;
	}
	return done;
}

static int fault_emit(void *arg, const struct srdma_wire_path *p,
		      const struct iovec *iov, int n)
{
	struct srdma_net_msg m = { .path = p, .iov = iov, .n = n };
	int r = send_raw(arg, &m, 1);

	return r == 1 ? 0 : r < 0 ? r : -EAGAIN;
}

/* Release the held datagrams that are due; the thread sleeps until the
 * next one. Fault injection only. */
static void fault_tick(struct srdma_net_ctx *ep)
{
	uint64_t next = srdma_netfault_tick(ep->fault, srdma_net_now_ns(),
					    fault_emit, fault_deliver, ep);

	if (next)
		srdma_net_kick(ep->ctx, next);
}

int srdma_net_send_batch(struct srdma_context *ctx,
			 const struct srdma_net_msg *m, int n)
{
	struct srdma_net_ctx *ep = ep_of(ctx);
	uint64_t next;
	int i, r = 0;

	if (!ep)
		return -ENOTCONN;
	if (!ep->fault)
		return send_raw(ep, m, n);
	for (i = 0; i < n; i++) {
		if (m[i].path->sport != SRDMA_NET_SPORT) {
			r = -EINVAL;
			break;
		}
		r = srdma_netfault_tx(ep->fault, m[i].path, m[i].iov, m[i].n,
				      srdma_net_now_ns(), fault_emit, ep);
		if (r < 0)
			break;
	}
	/* Held sent datagrams only. Our callers hold the QP's sq_lock or
	 * resp_lock, which delivering a held received one for that QP
	 * takes again: under reorder or delay faults a requester hung for
	 * good in its own send. The thread delivers those, kicked for the
	 * time they are due. */
	next = srdma_netfault_tick(ep->fault, srdma_net_now_ns(), fault_emit,
				   NULL, ep);
	if (next)
		srdma_net_kick(ep->ctx, next);
	return i ? i : n ? r : 0;
}

int srdma_net_send(struct srdma_context *ctx, const struct srdma_wire_path *p,
		   const struct iovec *iov, int n)
{
	struct srdma_net_msg m = { .path = p, .iov = iov, .n = n };
	int r = srdma_net_send_batch(ctx, &m, 1);

	return r == 1 ? 0 : r < 0 ? r : -EAGAIN;
}

/* ---- progress from the application, kicks, stats ---------------------------- */

/* Does the UDP socket hold a datagram? One system call, no lock. */
static bool rx_pending(struct srdma_net_ctx *ep)
{
	struct pollfd pfd[2] = {
		{ .fd = ep->udp, .events = POLLIN },
		{ .fd = atomic_load_explicit(&ep->crx, memory_order_relaxed),
		  .events = POLLIN },
	};

	return poll(pfd, pfd[1].fd >= 0 ? 2 : 1, 0) > 0;
}

/*
 * Receive the flow of crx_flow on a socket of its own, bound to our
 * address of it and connected to the peer's (net-endpoint.md, "A
 * connected receive socket"): the kernel then finds it for that flow's
 * datagrams from the connection alone (no route look-up on receipt, no
 * reuseport selection), and the polling application reads it first. One
 * attempt per endpoint. inline_lock and drain_lock held.
 */
static void crx_open(struct srdma_net_ctx *ep)
{
	const struct srdma_wire_path *f = &ep->crx_flow;
	char a[INET6_ADDRSTRLEN] = "?";
	int fd;

	ep->crx_state = CRX_OFF;
	fd = srdma_demux_conn_socket(f->dip, f->sip, f->sport);
	if (fd < 0) {
		srdma_dbg("lid %u: no connected receive socket: %s", ep->id.lid,
			  strerror(-fd));
		return;
	}
	srdma_net_mcast_sockopts(fd);
	/* Our address of the flow is the one it is bound to: no
	 * IPV6_PKTINFO per datagram (rx_udp takes crx_flow). */
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &(int){ 0 },
		       sizeof(int)))
		srdma_dbg("IPV6_RECVPKTINFO off: %s", strerror(errno));
	if (ep->gro) {
		int one = 1;

		if (setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one))) {
			srdma_dbg("lid %u: UDP_GRO (connected socket): %s",
				  ep->id.lid, strerror(errno));
			close(fd);
			return;
		}
	}
	ep->crx_main_first = true;
	atomic_store_explicit(&ep->crx, fd, memory_order_release);
	ep->crx_state = CRX_ON;
	/* The thread adds it to its epoll set when it owns the sockets. */
	if (write(ep->evfd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
		srdma_dbg("eventfd: %s", strerror(errno));
	inet_ntop(AF_INET6, f->sip, a, sizeof(a));
	srdma_dbg("lid %u: datagrams from %s port %u now come on a connected socket",
		  ep->id.lid, a, f->sport);
}

void srdma_net_crx_hint(struct srdma_context *ctx,
			const struct srdma_wire_path *from)
{
	struct srdma_net_ctx *ep = inline_ep;

	if (!ep || ep->ctx != ctx || !ep->crx_on ||
	    ep->crx_state != CRX_NONE || ep->rx_crx)
		return;
	/* Not for a link-local address (its scope would have to come
	 * along). */
	if (from->dip[0] == 0xfe && (from->dip[1] & 0xc0) == 0x80)
		return;
	ep->crx_flow = *from;
	ep->crx_state = CRX_WANT;
}

/*
 * The inline receive while the thread is off the socket (poll mode,
 * ep->udp_off): one recvmmsg of one slot straight away, into the inline
 * slot, without drain_lock and without the poll() that the other path
 * makes first. A ping-pong's steady state is one datagram per trip, so
 * this is one system call per trip instead of two (net-endpoint.md,
 * "Progress"). drain_lock is taken only with a datagram in hand (waited
 * for: the thread holds it only while it drains, and a datagram received
 * must be handled); an empty poll holds inline_lock alone, which the
 * thread never takes, so a poller preempted around an empty receive
 * delays nobody but other pollers of this context (they try and go).
 * What came in: as drain_udp's inline path, back to the application
 * after a request, on in full batches after responses only.
 *
 * The thread puts the socket back at the end of the window, but never
 * while an application is in here (poll_mode() tries inline_lock, and we
 * look at udp_off again under it): a datagram received here is handled
 * before any the thread receives after it, as they arrived.
 * Return: the packets handled.
 */
static int inline_recv(struct srdma_net_ctx *ep, int budget, bool *lone)
{
	int k = ep->rx_slots, n = 0, r, crx, fd = ep->udp;
	struct msghdr *mh = &ep->msgs[k].msg_hdr;
	bool via_crx = false;

	if (pthread_mutex_trylock(&ep->inline_lock))
		return 0;
	/* The thread is taking the socket back (poll_mode()): its now. */
	if (!atomic_load(&ep->udp_off)) {
		pthread_mutex_unlock(&ep->inline_lock);
		return 0;
	}
	/* The connected socket most of the time, the main one every
	 * CRX_MAIN_EVERY polls while it is quiet (up to CRX_MAIN_EVERY_MAX
	 * while it stays so), every other one while it brings datagrams
	 * too. */
	crx = atomic_load_explicit(&ep->crx, memory_order_acquire);
	if (crx >= 0 && !ep->crx_main_first) {
		unsigned int every = ep->main_busy ? 2u :
				     ep->main_every ? ep->main_every :
						      CRX_MAIN_EVERY;

		if (++ep->crx_polls < every) {
			fd = crx;
			via_crx = true;
		} else {
			ep->crx_polls = 0;
		}
	}
	mh->msg_name = via_crx ? NULL : &ep->from[k];
	mh->msg_namelen = via_crx ? 0 : sizeof(ep->from[k]);
	mh->msg_controllen = sizeof(ep->cbuf[k].buf);
	mh->msg_flags = 0;
	SRDMA_LT(SRDMA_LT_RX0);
	r = recv_dgrams(fd, &ep->msgs[k], 1);
	if (crx >= 0 && !via_crx) {
		ep->main_busy = r == 1;
		if (r == 1) {
			ep->main_every = CRX_MAIN_EVERY;
		} else {
			if (!ep->crx_main_first &&
			    ep->main_every < CRX_MAIN_EVERY_MAX)
				ep->main_every = 2 * (ep->main_every ?
						      ep->main_every :
						      CRX_MAIN_EVERY);
			ep->crx_main_first = false;
		}
	}
	/* Traffic moved to the main socket (another peer): let the thread
	 * close the idle connected one, for the new flow to get one. */
	if (via_crx && (r == 1 || !ep->main_busy))
		ep->crx_idle = 0;
	else if (via_crx && ++ep->crx_idle >= CRX_IDLE_POLLS &&
		 atomic_load(&ep->crx_close) == CRX_KEEP) {
		int keep = CRX_KEEP;

		if (atomic_compare_exchange_strong(&ep->crx_close, &keep,
						   CRX_IDLE) &&
		    write(ep->evfd, &(uint64_t){ 1 }, sizeof(uint64_t)) < 0)
			srdma_dbg("eventfd: %s", strerror(errno));
	}
	if (r == 1) {
		SRDMA_LT(SRDMA_LT_RX1);
		pthread_mutex_lock(&ep->drain_lock);
		inline_ep = ep;
		srdma_self_copy_batch(true);
		ep->rx_requests = ep->rx_req_drain = 0;
		ep->rx_lone_ack = false;
		ep->rx_crx = via_crx;
		n = rx_udp(ep, k);
		ep->rx_crx = false;
		if (!ep->rx_requests && n < budget)
			n += drain_udp(ep, budget - n, false);
		else
			fwd_flush(ep);
		srdma_self_copy_batch(false);
		SRDMA_LT(SRDMA_LT_DRAIN);
		*lone = ep->rx_lone_ack && !ep->rx_req_drain;
		if (ep->crx_state == CRX_WANT)
			crx_open(ep);
		inline_ep = NULL;
		pthread_mutex_unlock(&ep->drain_lock);
	}
	pthread_mutex_unlock(&ep->inline_lock);
	return n;
}

void srdma_net_lone_ack(struct srdma_context *ctx)
{
	struct srdma_net_ctx *ep = inline_ep;

	if (ep && ep->ctx == ctx)
		ep->rx_lone_ack = true;
}

/*
 * End poll mode now: a lone ACK completed the application's last request
 * and brought no request with it (srdma_net_lone_ack). An application
 * that goes on polling opens the window again with its next poll (one
 * thread wake-up more); one that stops (ib_write_lat spins on memory
 * until the peer's reply) has that reply received by the thread after a
 * wake-up, not after the window plus a wake-up.
 */
static void poll_close(struct srdma_net_ctx *ep)
{
	uint64_t one = 1;

	atomic_store(&ep->poll_until, 0);
	cnt(&ep->st.lone_acks, 1);
	SRDMA_LT(SRDMA_LT_LONE);
	/* See poll_mode(): the thread sees the 0, or we see udp_off. */
	if (atomic_load(&ep->udp_off) &&
	    write(ep->evfd, &one, sizeof(one)) < 0)
		srdma_dbg("eventfd: %s", strerror(errno));
}

/* Per polling thread: the idle yield's state (transport/net/idle.h). */
static _Thread_local struct srdma_idle idle_st = SRDMA_IDLE_INIT;

/* The calling thread's involuntary context switches, -1 on failure. */
static long thread_nivcsw(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nivcsw;
}

/* May the calling thread run on one CPU only? */
static bool thread_one_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return false;
	return CPU_COUNT(&set) == 1;
}

/* A poll that finds nothing for yield_ns yields the CPU, while the
 * thread shows signs of sharing it (idle.h). See net-endpoint.md,
 * "Sharing a CPU". */
static void idle_yield(struct srdma_net_ctx *ep, int n, uint64_t start,
		       uint64_t now)
{
	struct pollfd pfd[2] = { { .fd = ep->udp, .events = POLLIN },
				 { .fd = -1, .events = POLLIN } };
	struct timespec ts = { 0, SRDMA_IDLE_NAP_NS };

	switch (srdma_idle_step(&idle_st, start, now, n, ep->yield_ns,
				thread_nivcsw, thread_one_cpu)) {
	case SRDMA_IDLE_SPIN:
		return;
	case SRDMA_IDLE_YIELD:
		cnt(&ep->st.idle_yields, 1);
		SRDMA_LT(SRDMA_LT_YIELD);
		sched_yield();
		break;
	case SRDMA_IDLE_NAP:
		/* Wait for the peer's datagram asleep: the wake-up may
		 * place us on another CPU (idle.c). */
		cnt(&ep->st.idle_yields, 1);
		SRDMA_LT(SRDMA_LT_NAP);
		/* The connected receive socket too, when there is one (a
		 * stale number, closed meanwhile, ends the nap early or not
		 * at all: it is only waited on, never read). */
		pfd[1].fd = atomic_load_explicit(&ep->crx,
						 memory_order_relaxed);
		if (ppoll(pfd, pfd[1].fd >= 0 ? 2 : 1, &ts, NULL) < 0)
			srdma_dbg("ppoll: %s", strerror(errno));
		break;
	}
	SRDMA_LT(SRDMA_LT_YRET);
}

int srdma_net_progress(struct srdma_context *ctx, int budget)
{
	return srdma_net_progress_from(ctx, NULL, budget);
}

int srdma_net_progress_from(struct srdma_context *ctx, const void *poller,
			    int budget)
{
	struct srdma_net_ctx *ep = ep_of(ctx);
	uint64_t now, start, ack;
	bool lone = false;
	uint32_t arm;
	int n;

	if (!ep || budget <= 0 || !ep->poll_inline)
		return 0;
	now = start = srdma_net_now_ns();
	/* One look per round of the application's polls: UCX polls two
	 * CQs per round (its RC interface's receive and send CQs; four
	 * while it connects, with UD's), and each empty one used to look
	 * at the socket itself (poll, or an empty receive in poll mode),
	 * so a datagram waited on average half a round of system calls
	 * to be seen, and as much again before the poll of the CQ it
	 * completes to came round. A poller other than the one whose
	 * empty poll looked last leaves it to that one while it keeps
	 * looking (within RX_LEAD_NS); it takes over when that one stops.
	 * What it skips (the poll-mode stamp, the timers) the leader
	 * does. */
	if (poller) {
		const void *lead = atomic_load_explicit(&ep->rx_lead,
							memory_order_relaxed);

		if (lead != poller) {
			if (now - atomic_load_explicit(&ep->rx_lead_ns,
						       memory_order_relaxed) <
			    RX_LEAD_NS)
				return 0;
			atomic_store_explicit(&ep->rx_lead, poller,
					      memory_order_relaxed);
		}
		atomic_store_explicit(&ep->rx_lead_ns, now,
				      memory_order_relaxed);
	}
	/* A polling application, even if it armed a CQ lately (UCX does
	 * while it connects): see srdma_net_app_waits. A load and, until
	 * ARM_POLLS, a store. */
	arm = atomic_load_explicit(&ep->arm_polls, memory_order_relaxed);
	if (arm < ARM_POLLS)
		atomic_store_explicit(&ep->arm_polls, arm + 1,
				      memory_order_relaxed);
	/* Poll mode: the thread keeps off the socket until poll_ns after
	 * the last of these calls (one store; the thread reads it when it
	 * wakes). Not for an application that waits for events (an empty
	 * poll after an event is no sign it will keep polling): it keeps
	 * the thread as before. */
	poll_stamp(ep, now);
	/* Look before taking drain_lock: a polling application that held
	 * it around every empty recvmmsg was often preempted holding it,
	 * and its progress thread, woken for a datagram, then waited for
	 * the application to be scheduled again (hundreds of ms on a
	 * loaded machine, past a peer's retry budget). */
	n = 0;
	if (atomic_load_explicit(&ep->udp_off, memory_order_relaxed)) {
		n = inline_recv(ep, budget, &lone);
	} else if (rx_pending(ep)) {
		SRDMA_LT(SRDMA_LT_PEND);
		if (pthread_mutex_trylock(&ep->drain_lock))
			return 0;
		inline_ep = ep;
		ep->rx_req_drain = 0;
		ep->rx_lone_ack = false;
		n = drain(ep, budget, false, true);
		lone = ep->rx_lone_ack && !ep->rx_req_drain;
		inline_ep = NULL;
		pthread_mutex_unlock(&ep->drain_lock);
	}
	if (n) {
		/* (An empty poll writes no shared counter.) */
		cnt(&ep->st.inline_rx, (uint64_t)n);
		/* Receiving again: poll mode again (see poll_idle). And a
		 * thread asleep without a deadline would not wake for what
		 * we took off its sockets (epoll finds them empty and sleeps
		 * on), so srdma status's mirror would keep the counters of
		 * before: kick it once; it then settles on a deadline. */
		if ((atomic_load_explicit(&ep->idle_standby,
					  memory_order_relaxed) &&
		     atomic_exchange(&ep->idle_standby, false)) ||
		    atomic_load_explicit(&ep->sleep_until,
					 memory_order_relaxed) == UINT64_MAX) {
			if (write(ep->evfd, &(uint64_t){ 1 },
				  sizeof(uint64_t)) < 0)
				srdma_dbg("eventfd: %s", strerror(errno));
		}
		if (ep->fault)
			fault_tick(ep);
		now = srdma_net_now_ns();
		/* Still polling: the window runs from the end of the work. */
		poll_stamp(ep, now);
		if (lone && ep->poll_ns)
			poll_close(ep);
	}
	/* Timers are the thread's, unless it is late. */
	ack = atomic_load_explicit(&ep->ack_due, memory_order_relaxed);
	if ((atomic_load_explicit(&ep->sleep_until, memory_order_relaxed) <
	     now || (ack && ack <= now)) &&
	    !pthread_mutex_trylock(&ep->timer_lock)) {
		run_timers(ep, now, NULL);
		pthread_mutex_unlock(&ep->timer_lock);
	}
	idle_yield(ep, n, start, now);
	return n;
}

void srdma_net_poll_end(struct srdma_context *ctx)
{
	struct srdma_net_ctx *ep = ep_of(ctx);
	uint64_t one = 1, now;

	if (!ep)
		return;
	SRDMA_LT(SRDMA_LT_ARM);
	/* The application uses events: no held ACKs for a while. */
	now = srdma_net_now_ns();
	if (atomic_load_explicit(&ep->arm_polls, memory_order_relaxed))
		atomic_store_explicit(&ep->arm_polls, 0, memory_order_relaxed);
	if (atomic_load_explicit(&ep->event_ns, memory_order_relaxed) + 1000000u <
	    now)
		atomic_store_explicit(&ep->event_ns, now,
				      memory_order_relaxed);
	if (!ep->poll_ns ||
	    !atomic_load_explicit(&ep->poll_until, memory_order_relaxed))
		return;
	atomic_store(&ep->poll_until, 0);
	/* See poll_mode(): the thread sees the 0, or we see udp_off. */
	if (atomic_load(&ep->udp_off) &&
	    write(ep->evfd, &one, sizeof(one)) < 0)
		srdma_dbg("eventfd: %s", strerror(errno));
}

bool (*_Atomic srdma_net_app_waits_hook)(struct srdma_context *ctx);

bool srdma_net_app_waits(struct srdma_context *ctx)
{
	struct srdma_net_ctx *ep = ep_of(ctx);
	uint64_t t;

	bool (*waits)(struct srdma_context *) = srdma_net_app_waits_hook;

	if (waits)
		return waits(ctx);
	if (!ep)
		return false;
	/* Events lately, and few polls since: an application that polls
	 * on after arming a CQ (UCX arms its CQs while it connects, then
	 * polls) is a polling one again after ARM_POLLS polls, not 100 ms
	 * later: its 8-byte ping-pong ran without poll mode and held ACKs
	 * for the first 100 ms (net-endpoint.md, "Two pollers"). */
	t = atomic_load_explicit(&ep->event_ns, memory_order_relaxed);
	return t && srdma_net_now_ns() - t < APP_WAITS_NS &&
	       atomic_load_explicit(&ep->arm_polls, memory_order_relaxed) <
	       ARM_POLLS;
}

void srdma_net_ack_armed(struct srdma_context *ctx, uint64_t due_ns)
{
	struct srdma_net_ctx *ep = ep_of(ctx);
	uint64_t cur;

	if (!ep)
		return;
	cur = atomic_load_explicit(&ep->ack_due, memory_order_relaxed);
	while ((!cur || due_ns < cur) &&
	       !atomic_compare_exchange_weak(&ep->ack_due, &cur, due_ns))
		;
	/* The thread's own responder: its next scan sees the deadline. An
	 * application in poll mode: its next polls run the scan, and the
	 * thread wakes at the end of poll mode. Else wake the thread. */
	if (pthread_equal(pthread_self(), ep->thread) ||
	    atomic_load_explicit(&ep->udp_off, memory_order_relaxed))
		return;
	srdma_net_kick(ctx, due_ns);
}

void srdma_net_kick(struct srdma_context *ctx, uint64_t deadline_ns)
{
	struct srdma_net_ctx *ep = ep_of(ctx);
	uint64_t one = 1;

	if (!ep || !deadline_ns ||
	    deadline_ns >= atomic_load_explicit(&ep->sleep_until,
						memory_order_acquire))
		return;
	/* Not again until the thread has seen it. */
	atomic_store_explicit(&ep->sleep_until, deadline_ns,
			      memory_order_relaxed);
	if (write(ep->evfd, &one, sizeof(one)) < 0)
		srdma_dbg("eventfd: %s", strerror(errno));
}

int srdma_net_ep_stats(struct srdma_context *ctx, struct srdma_net_ep_stats *out)
{
	struct srdma_net_ctx *ep = ep_of(ctx);
	const _Atomic uint64_t *s;
	uint64_t *d = (uint64_t *)out;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!ep)
		return -ENOENT;
	s = (const _Atomic uint64_t *)&ep->st;
	for (i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		d[i] = atomic_load_explicit(&s[i], memory_order_relaxed);
	return 0;
}
