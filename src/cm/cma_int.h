/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cma_int.h - internals of softrdma's user-space rdma_cm.
 *
 * The public objects (struct rdma_cm_id, rdma_event_channel, rdma_cm_event)
 * are the first member of private wrappers, so a public pointer converts
 * back with container_of. One process-wide mutex, cm.lock, protects every
 * field below that is not marked otherwise: the CM is a control path (a
 * handful of messages per connection), and one lock keeps the service
 * thread, the application's threads and id destruction simple to reason
 * about. Verbs calls (QP modify, CQ create) may be made under cm.lock; the
 * verbs library never calls back into the CM, so there is no lock cycle.
 *
 * Threads: the application's, plus one service thread (cma_loop.c) started
 * on first need. It owns the epoll set of every CM socket and turns
 * socket input, connection completions and deadlines into events.
 *
 * Files:
 *   cma_wire.[ch]   the side-channel message format (ABI between hosts)
 *   cma_event.c     event channels, queueing, get/ack, migrate
 *   cma_loop.c      the service thread: epoll, framing, deadlines
 *   cma_id.c        ids, addresses, listen, options, ports
 *   cma_conn.c      connect/accept/reject/establish/disconnect and the
 *                   handling of each received message
 *   cma_qp.c        QPs, SRQs and CQs created for ids, rdma_init_qp_attr,
 *                   endpoints (create_ep, get_request)
 *   cma_device.c    the verbs contexts and default PDs ids attach to
 *   cma_addrinfo.c  rdma_getaddrinfo / rdma_freeaddrinfo
 */
#ifndef SRDMA_CM_INT_H
#define SRDMA_CM_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "util/sys.h"

#include "cm/cma_wire.h"
#include "util/compiler.h"

/* Reject reasons of the InfiniBand CM that rdma_cm reports as status. */
#define SRDMA_CM_REJ_NO_RESOURCES	3
#define SRDMA_CM_REJ_INVALID_SERVICE_ID 8
#define SRDMA_CM_REJ_CONSUMER_DEFINED	28
/* SIDR_REP statuses. */
#define SRDMA_CM_SIDR_SUCCESS	  0
#define SRDMA_CM_SIDR_UNSUPPORTED 1
#define SRDMA_CM_SIDR_REJECT	  2

/* How long an active connection may take from rdma_connect to the reply. */
#define SRDMA_CM_CONNECT_TIMEOUT_MS 20000
/*
 * A side channel whose peer host is silent this long is dead (at least;
 * more when the id's ACK timeout makes its QPs' retry budget longer):
 * docs/design/cm.md, "When a host fails". SRDMA_CM_DEAD_MS overrides it.
 */
#define SRDMA_CM_DEAD_MIN_MS 2000
/*
 * A refused TCP connect is tried again this often, this many times, before
 * it is reported (REJECTED 8): a server that listens again for a second
 * connection (perftest -R) may not be back when a remote client asks.
 */
#define SRDMA_CM_REDIAL_MS    25
#define SRDMA_CM_REDIAL_TRIES 10

enum cm_state {
	CM_IDLE,	   /* created, not bound */
	CM_BOUND,	   /* rdma_bind_addr done */
	CM_ADDR_RESOLVED,  /* active: source address, device known */
	CM_ROUTE_RESOLVED, /* active: ready to connect */
	CM_LISTEN,	   /* passive listener */
	CM_CONNECTING,	   /* active: TCP connect in progress */
	CM_REQ_SENT,	   /* active: REQ/SIDR_REQ sent, awaiting reply */
	CM_REP_RCVD,	   /* active: CONNECT_RESPONSE, awaiting establish */
	CM_REQ_WAIT,	   /* passive child, hidden: awaiting REQ */
	CM_REQ_RCVD,	   /* passive child: CONNECT_REQUEST reported */
	CM_REP_SENT,	   /* passive: accepted, awaiting RTU */
	CM_ESTABLISHED,	   /* connected (RC) or resolved (UD) */
	CM_DISCONNECTING,  /* DREQ sent, awaiting DREP */
	CM_DISCONNECTED,   /* DISCONNECTED reported; socket closed */
	CM_FAILED,	   /* handshake failed or rejected; socket closed */
};

struct cm_event;
struct cm_mcast;

/* An event channel: struct rdma_event_channel is { int fd }. */
struct cm_channel {
	struct rdma_event_channel ch; /* public; fd is an eventfd */
	uint32_t gen;		      /* immutable: srdma_cm_fork_gen */
	struct cm_event *head;	      /* queued, not yet retrieved */
	struct cm_event **tail;
	bool signaled; /* eventfd counter is non-zero */
	bool internal; /* private channel of a sync id */
	_Atomic uint32_t pushed; /* atomic (written under cm.lock): bumped
				  * on every push; blocked getters FUTEX_WAIT
				  * on it (cma_event.c channel_get) */
};

/* Parameters of the connection, ours and the peer's. */
struct cm_conn {
	uint32_t qpn;		/* our QPN (id->qp or conn_param) */
	uint32_t psn;		/* our starting PSN */
	uint8_t resp_res;	/* reads we answer (max_dest_rd_atomic) */
	uint8_t init_depth;	/* reads we issue (max_rd_atomic) */
	uint8_t retry_count;	/* RC retry count both sides use */
	uint8_t rnr_retry;	/* RNR retry count our QP uses */
	uint8_t peer_rnr_retry; /* what we announced to the peer */
	uint8_t srq;
	uint8_t flow_control;
	bool peer_known; /* fields below are valid */
	uint32_t peer_qpn;
	uint32_t peer_psn;
	uint16_t peer_lid;
	uint8_t peer_mtu;
	union ibv_gid peer_gid;
	/* Active: private data of the REQ, sent once TCP is connected. */
	uint8_t pdata_len;
	uint8_t pdata[SRDMA_CM_PDATA_MAX];
};

struct cm_device {
	struct ibv_context *verbs; /* immutable once opened; never closed */
	struct ibv_pd *pd;	   /* default PD while refs > 0 */
	int refs;		   /* ids attached */
	uint16_t lid;		   /* immutable */
	union ibv_gid gid;	   /* immutable */
	enum ibv_mtu mtu;	   /* immutable */
	bool roce;		   /* immutable: link layer Ethernet, so an
				    * AV needs a GRH (our GID 0 -> theirs) */
	uint8_t max_resp_res;	   /* max_qp_rd_atom */
	uint8_t max_init_depth;	   /* max_qp_init_rd_atom */
	struct ibv_xrcd *xrcd;	   /* cm lock: the private XRC domain of
				    * XRC ids (cma_qp.c), or NULL */
};

struct cm_id {
	struct rdma_cm_id id;	 /* public; first */
	uint64_t serial;	 /* immutable; the epoll key */
	uint32_t gen;		 /* immutable: srdma_cm_fork_gen */
	struct cm_channel *chan; /* = id.channel's wrapper */
	bool sync;		 /* chan is this id's private channel */
	enum cm_state state;
	int fd;			/* TCP socket or -1 */
	bool in_epoll;		/* fd registered with the loop */
	struct cm_id *listener; /* passive children: their listener */
	bool child;		/* immutable: made by a listener */
	struct cm_device *dev;	/* attached device or NULL */
	struct cm_conn conn;
	uint64_t deadline_ms; /* CLOCK_MONOTONIC ms, 0 = none; a listener:
			       * when to watch it again (paused) */
	bool starved;	      /* listener: refusing, out of fds */
	uint8_t redials_left; /* active: refused connects still retried */
	bool redial;	      /* CM_CONNECTING: the deadline dials again */
	uint8_t ack_timeout;  /* RDMA_OPTION_ID_ACK_TIMEOUT */
	bool ack_timeout_set;
	uint8_t tos;
	/*
	 * The local end of the route, set when the id is attached and again
	 * once its source address is known (srdma_cm_id_set_source): on
	 * RoCE the GID of that address, the path MTU of its interface.
	 */
	uint8_t sgid_index;
	union ibv_gid sgid;
	enum ibv_mtu path_mtu;
	uint8_t hop_limit;
	uint32_t flow_label; /* host order, 20 bits */
	int reuseaddr;
	int afonly;
	uint32_t events_out;	     /* retrieved and not yet acked */
	uint32_t events_queued;	     /* queued on chan, not retrieved */
	struct ibv_sa_path_rec path; /* route.path_rec points here */
	/* rdma_create_ep passive side: what rdma_get_request creates. */
	struct ibv_qp_init_attr *ep_qp_attr;
	/* Stream reassembly of received messages. */
	uint8_t rx[SRDMA_CM_MSG_MAX];
	size_t rx_len;
	struct cm_id *next; /* cm.ids list */
	struct cm_mcast *mc_list; /* groups joined (cma_mcast.c) */
	/*
	 * A DISCONNECTED held back until the application has polled the
	 * completions its QP had when the peer left (cma_event.c), or
	 * NULL; counted in cm.n_held. held_qpn: that QP; held_mark: its
	 * send and receive CQs' prod then; held_sends: sends of the QP
	 * had no completion yet at the last look; held_until_ms: delivered
	 * by then whatever the CQs say.
	 */
	struct cm_event *held;
	uint32_t held_qpn;
	uint64_t held_mark[2];
	bool held_sends;
	uint64_t held_until_ms;
};

struct cm_event {
	struct rdma_cm_event ev; /* public; first */
	struct cm_id *owner;	 /* the id it is counted on (ev.id) */
	struct cm_channel *chan; /* where it is queued */
	struct cm_event *next;
	uint8_t pdata[SRDMA_CM_PDATA_MAX];
	struct cm_mcast *mc; /* MULTICAST_JOIN/_ERROR: the join, else NULL */
};

/* Process-wide CM state. */
struct cm_global {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* events acked; signalled broadcast */
	struct cm_id *ids;   /* every live id */
	uint64_t next_serial;
	struct cm_device dev; /* the one softrdma device */
	bool dev_open;
	int epfd;   /* loop's epoll set, -1 until started */
	int wakefd; /* eventfd that interrupts epoll_wait */
	int spare_fd; /* reserve for refusing connections without fds */
	bool loop_started;
	pid_t pid; /* process that owns this state */
	uint32_t n_held; /* ids with a DISCONNECTED held back */
};

extern struct cm_global cm;

static inline struct cm_id *to_cm_id(struct rdma_cm_id *id)
{
	return container_of(id, struct cm_id, id);
}

static inline struct cm_channel *to_cm_channel(struct rdma_event_channel *ch)
{
	return container_of(ch, struct cm_channel, ch);
}

static inline struct cm_event *to_cm_event(struct rdma_cm_event *ev)
{
	return container_of(ev, struct cm_event, ev);
}

/* The public convention of librdmacm: 0, or -1 with errno = -@ret. */
static inline int srdma_cm_ret(int ret)
{
	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

/* Take / release cm.lock (and reset the state in a forked child). */
void srdma_cm_lock(void);
void srdma_cm_unlock(void);

/*
 * fork(): bumped by an atfork child handler (which also restarts cm.lock,
 * possibly held by the parent's service thread at fork time). Ids and
 * channels record it at creation; in a child the parent's ones are dead:
 * calls on them fail with EINVAL before taking cm.lock, and destroying
 * them only closes this process's copies of their descriptors (never a
 * shutdown() of the parent's socket). docs/design/cm.md, "fork".
 */
extern _Atomic uint32_t srdma_cm_fork_gen;

static inline bool srdma_cm_id_inherited(const struct cm_id *id)
{
	return id->gen != atomic_load_explicit(&srdma_cm_fork_gen,
					       memory_order_relaxed);
}

static inline bool srdma_cm_chan_inherited(const struct cm_channel *ch)
{
	return ch->gen != atomic_load_explicit(&srdma_cm_fork_gen,
					       memory_order_relaxed);
}

/* ---- cma_event.c ---- */

/**
 * srdma_cm_channel_new() - allocate a channel with its eventfd.
 * @internal: true for the private channel of a sync id
 * @out: the channel
 * Return: 0 or -errno. Context: any; no lock needed.
 */
int srdma_cm_channel_new(bool internal, struct cm_channel **out);

/* Free a channel whose queue is empty. No lock needed. */
void srdma_cm_channel_free(struct cm_channel *chan);

/**
 * srdma_cm_event_post() - queue an event for @id on its channel.
 * @id:      the id the event reports on (ev.id)
 * @listen:  the listener for CONNECT_REQUEST, else NULL
 * @type:    the event
 * @status:  0, a negative errno or a positive reject reason
 * @msg:     the message whose parameters and private data the event
 *           reports, or NULL
 * Requires cm.lock. Cannot fail: on allocation failure the event is
 * logged and dropped (the id then times out or is torn down).
 */
void srdma_cm_event_post(struct cm_id *id, struct cm_id *listen,
			 enum rdma_cm_event_type type, int status,
			 const struct srdma_cm_msg *msg);

/**
 * srdma_cm_event_push() - queue @ev, built by the caller (zeroed, type,
 * status and parameters set), for @id on its channel. Requires cm.lock.
 */
void srdma_cm_event_push(struct cm_id *id, struct cm_event *ev);

/*
 * How long a DISCONNECTED may wait for the application to poll the
 * completions its QP had when the peer left (SRDMA_CM_DISC_HOLD_MS
 * overrides it; 0 never holds), and how often the service thread looks
 * at the CQs meanwhile. docs/design/cm.md, "DISCONNECTED after the
 * completions".
 */
#define SRDMA_CM_DISC_HOLD_MS	   200
#define SRDMA_CM_DISC_HOLD_TICK_MS 1

/**
 * srdma_cm_event_disconnected() - report DISCONNECTED (@status) on @id,
 * whose peer left. When @id's QP has completions the application has
 * not polled yet, or sends without a completion yet, the event is held
 * back until those completions are in and polled (or for
 * SRDMA_CM_DISC_HOLD_MS at most), so that the application never learns
 * of the disconnect before it can see what the peer sent before leaving
 * and what became of its own last sends.
 * Requires cm.lock. Cannot fail (as srdma_cm_event_post()).
 */
void srdma_cm_event_disconnected(struct cm_id *id, int status);

/**
 * srdma_cm_held_release() - queue @id's held DISCONNECTED now, if any
 * (the application acted on the connection itself). Requires cm.lock.
 */
void srdma_cm_held_release(struct cm_id *id);

/**
 * srdma_cm_held_check() - queue every held DISCONNECTED whose QP's
 * completions have been polled, or whose time is up.
 * Return: true while some are still held (look again within
 * SRDMA_CM_DISC_HOLD_TICK_MS). Requires cm.lock.
 */
bool srdma_cm_held_check(void);

/* Unqueue @id's not-yet-retrieved events of join @mc (rdma_leave_multicast,
 * as the kernel's ucma). Requires cm.lock. */
void srdma_cm_events_drop_mc(struct cm_id *id, const struct cm_mcast *mc);

/**
 * srdma_cm_events_drop() - unqueue every not-yet-retrieved event of @id.
 * Requires cm.lock. Used when @id is destroyed.
 */
void srdma_cm_events_drop(struct cm_id *id);

/**
 * srdma_cm_wait_events_acked() - block until every event of @id the
 * application retrieved has been acked. Requires cm.lock (released while
 * waiting).
 */
void srdma_cm_wait_events_acked(struct cm_id *id);

/**
 * srdma_cm_sync_event_done() - a sync id's stored id->event needs no
 * further wait: ack and free it. Requires cm.lock.
 */
void srdma_cm_sync_event_done(struct cm_id *id);

/**
 * srdma_cm_complete() - for a sync id: ack id->event, then wait for the
 * next event on its private channel and store it in id->event.
 * Return: 0, or -errno derived from the event's status (REJECTED gives
 * -ECONNREFUSED). No-op returning 0 for an async id. Called without
 * cm.lock.
 */
int srdma_cm_complete(struct cm_id *id);

/* ---- cma_loop.c ---- */

/**
 * srdma_cm_loop_watch() - (re)register @id->fd with the service thread.
 * @out: also wait for writability (a TCP connect in progress)
 * Requires cm.lock. Starts the thread on first use. Return 0 or -errno.
 */
int srdma_cm_loop_watch(struct cm_id *id, bool out);

/* Unregister and close @id->fd (if any). Requires cm.lock. */
void srdma_cm_loop_close(struct cm_id *id);

/* Wake the service thread (a deadline changed). Requires cm.lock. */
void srdma_cm_loop_kick(void);

/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t srdma_cm_now_ms(void);

/**
 * srdma_cm_dead_ms() - how long @id's peer may stay silent before the
 * connection counts as lost: SRDMA_CM_DEAD_MS if set (0: never, TCP's
 * own defaults), else the larger of SRDMA_CM_DEAD_MIN_MS and twice the
 * retry budget of the id's QPs (8 transmissions of 4.096 us x 2^timeout).
 * Requires cm.lock (reads @id's options).
 */
unsigned int srdma_cm_dead_ms(const struct cm_id *id);

/**
 * srdma_cm_sock_watch_peer() - arm TCP keepalive (probes every second
 * once the channel is idle for one) and TCP_USER_TIMEOUT on @id's socket,
 * both at srdma_cm_dead_ms(): a peer host that goes silent (link down,
 * powered off) then fails the socket with ETIMEDOUT, which cma_conn.c
 * turns into UNREACHABLE or DISCONNECTED. Best effort (a failing
 * setsockopt is logged). Requires cm.lock.
 */
void srdma_cm_sock_watch_peer(struct cm_id *id);

/* ---- cma_id.c ---- */

/* Find a live id by serial. Requires cm.lock. */
struct cm_id *srdma_cm_id_find(uint64_t serial);

/**
 * srdma_cm_id_alloc() - allocate an id on @chan (NULL: a private sync
 * channel), link it into cm.ids. Requires cm.lock.
 * Return: 0 or -errno.
 */
int srdma_cm_id_alloc(struct cm_channel *chan, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qp_type,
		      struct cm_id **out);

/**
 * srdma_cm_id_free() - unlink and free an id no application holds (a
 * hidden child, or one being destroyed after its events drained). Closes
 * its socket and releases its device. Requires cm.lock.
 */
void srdma_cm_id_free(struct cm_id *id);

/* Attach @id to the device (sets verbs, pd, port_num). Requires cm.lock. */
int srdma_cm_id_attach(struct cm_id *id);

/**
 * srdma_cm_id_rebind() - replace @id's socket (a refused connect) by a
 * new one bound to the same address and port, not yet watched.
 * Requires cm.lock. Return: 0 or -errno (@id then has no socket).
 */
int srdma_cm_id_rebind(struct cm_id *id);

/**
 * srdma_cm_id_set_source() - @id's source address is @src (the routed
 * source, a bound address, or where a passive connection arrived): on a
 * RoCE port take the GID of that address (IPv4: ::ffff:a.b.c.d) and the
 * path MTU of its interface (rxe's rule: the largest IB MTU that fits
 * the interface's MTU less 80 bytes of headers). @hop_limit: the route's,
 * 0 for the default (64). An address the GID table lacks (127.0.0.1 with
 * other interfaces up) keeps GID index 0 and the port's MTU. Also
 * sets route.addr.addr.ibaddr.sgid. Requires cm.lock; @id attached.
 */
void srdma_cm_id_set_source(struct cm_id *id, const struct sockaddr *src,
			    int hop_limit);

/* Point id->route.path_rec at a path to the known peer. Requires cm.lock. */
void srdma_cm_id_fill_path(struct cm_id *id);

/* ---- cma_conn.c ---- */

/**
 * srdma_cm_conn_input() - handle one decoded message received on @id.
 * Requires cm.lock. May post events, send replies, modify @id's QP and
 * close @id's socket.
 */
void srdma_cm_conn_input(struct cm_id *id, const struct srdma_cm_msg *msg);

/**
 * srdma_cm_conn_lost() - @id's socket failed, closed or carried a
 * malformed message (@err: -ECONNRESET, -EPROTO, ...). Posts the event
 * the state calls for and closes the socket. Requires cm.lock.
 */
void srdma_cm_conn_lost(struct cm_id *id, int err);

/**
 * srdma_cm_conn_connected() - the active side's TCP connect finished
 * (@err 0) or failed. Sends the REQ or posts the failure. Requires cm.lock.
 */
void srdma_cm_conn_connected(struct cm_id *id, int err);

/**
 * srdma_cm_conn_abandon() - @id is destroyed with a connection request
 * it never answered: reject it, as an IB CM does (REJ reason 28, or
 * SIDR_REP "reject" for UD). Requires cm.lock.
 */
void srdma_cm_conn_abandon(struct cm_id *id);

/* @id's deadline passed. Requires cm.lock. */
void srdma_cm_conn_timeout(struct cm_id *id);

/**
 * srdma_cm_send() - encode and send @msg on @id's socket.
 * Return: 0 or -errno (a short write counts as -EIO). Requires cm.lock.
 */
int srdma_cm_send(struct cm_id *id, struct srdma_cm_msg *msg);

/* ---- cma_qp.c ---- */

/**
 * srdma_cm_qp_attr() - the attributes rdma_init_qp_attr reports for
 * moving a QP of @id to attr->qp_state. Requires cm.lock.
 * Return: 0, or -EINVAL when the state needs peer parameters not known
 * yet or is not one rdma_cm sets.
 */
int srdma_cm_qp_attr(struct cm_id *id, struct ibv_qp_attr *attr, int *mask);

/**
 * srdma_cm_qp_connect() - move @id's own QP INIT->INIT (access from the
 * negotiated resources) -> RTR -> RTS with the peer's parameters.
 * Requires cm.lock. Return 0 or -errno (the QP is then left where the
 * failing modify found it).
 */
int srdma_cm_qp_connect(struct cm_id *id);

/* Move @id's own QP (if any) to ERR. Requires cm.lock. */
void srdma_cm_qp_error(struct cm_id *id);

/* ---- cma_mcast.c ---- */

/**
 * srdma_cm_mcast_release() - detach @id's QP from every group the CM
 * attached it to (rdma_destroy_qp, before the QP goes), and with @free
 * also forget the joins (rdma_destroy_id). Requires cm.lock.
 */
void srdma_cm_mcast_release(struct cm_id *id, bool free_all);

/* ---- cma_device.c ---- */

/**
 * srdma_cm_device_get() - open the device if needed, take a reference,
 * allocate the default PD on the first one. Requires cm.lock.
 * Return: 0 or -errno.
 */
int srdma_cm_device_get(struct cm_device **out);

/**
 * srdma_cm_device_gid_of() - the GID table entry of IP address @sa on
 * port 1 (RoCE v2 entries only) and the path MTU of its interface.
 * Requires cm.lock. Return: 0, or -ENOENT if no entry has that address.
 */
int srdma_cm_device_gid_of(struct cm_device *d, const struct sockaddr *sa,
			   uint8_t *index, union ibv_gid *gid,
			   enum ibv_mtu *mtu);

/* Drop a reference; the default PD goes with the last one. cm.lock. */
void srdma_cm_device_put(struct cm_device *dev);

/**
 * srdma_cm_device_open() - open the device's verbs context if needed,
 * without taking a reference (rdma_get_devices). Requires cm.lock.
 */
int srdma_cm_device_open(void);

#endif
