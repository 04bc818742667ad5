// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_event.c - event channels: queueing, rdma_get_cm_event,
 * rdma_ack_cm_event, rdma_migrate_id.
 *
 * A channel is an eventfd plus a FIFO of events under cm.lock. The fd is
 * level-triggered by hand: it is made readable (counter 1) when the queue
 * becomes non-empty and drained when the last event is retrieved, so an
 * application can poll() or epoll the fd, set O_NONBLOCK on it, or just
 * call rdma_get_cm_event, which blocks when the queue is empty and the fd
 * is blocking, and returns EAGAIN when it is not.
 *
 * Blocking: librdmacm blocks in read(), which a signal interrupts (EINTR)
 * unless its handler has SA_RESTART, in which case the kernel restarts
 * the read. poll() would fail with EINTR either way, so a getter blocks
 * in FUTEX_WAIT on the channel's push counter instead: the kernel treats
 * that wait exactly like read() (restarted under SA_RESTART, EINTR
 * otherwise), and reading nothing it leaves the fd's level alone.
 *
 * Accounting per id (what rdma_destroy_id and rdma_migrate_id wait on):
 * events_queued counts events on a queue; events_out counts events the
 * application retrieved and has not acked. An event is counted on
 * ev.id, so a CONNECT_REQUEST (queued on the listener's channel) holds
 * the new child, not the listener.
 *
 * Sync ids (created with a NULL channel) get a private channel; the
 * library itself waits on it in srdma_cm_complete(), which mirrors what
 * the real librdmacm does: ack the previous id->event, block for the next
 * one, and turn its status into the call's errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cm/cma_int.h"
#include "util/log.h"
#include "verbs/cm_private.h"

int srdma_cm_channel_new(bool internal, struct cm_channel **out)
{
	struct cm_channel *chan = calloc(1, sizeof(*chan));

	if (!chan)
		return -ENOMEM;
	chan->ch.fd = eventfd(0, EFD_CLOEXEC);
	if (chan->ch.fd < 0) {
		int ret = -errno;

		free(chan);
		return ret;
	}
	chan->tail = &chan->head;
	chan->internal = internal;
	chan->gen = atomic_load_explicit(&srdma_cm_fork_gen,
					 memory_order_relaxed);
	*out = chan;
	return 0;
}

void srdma_cm_channel_free(struct cm_channel *chan)
{
	srdma_assert(!chan->head);
	close(chan->ch.fd);
	free(chan);
}

/* Requires cm.lock. Make the fd readable iff the queue is non-empty. */
static void channel_sync_fd(struct cm_channel *chan)
{
	uint64_t v = 1;

	if (chan->head && !chan->signaled) {
		if (write(chan->ch.fd, &v, sizeof(v)) == sizeof(v))
			chan->signaled = true;
	} else if (!chan->head && chan->signaled) {
		/* The counter is non-zero, so this read cannot block. */
		if (read(chan->ch.fd, &v, sizeof(v)) == sizeof(v))
			chan->signaled = false;
	}
}

static void channel_push(struct cm_channel *chan, struct cm_event *ev)
{
	ev->next = NULL;
	ev->chan = chan;
	*chan->tail = ev;
	chan->tail = &ev->next;
	channel_sync_fd(chan);
	/* Wake blocked getters. The bump pairs with their load under
	 * cm.lock (channel_get): one that loaded the old value either sees
	 * the new one in FUTEX_WAIT (EAGAIN) or is woken here. */
	atomic_fetch_add_explicit(&chan->pushed, 1, memory_order_relaxed);
	syscall(SYS_futex, &chan->pushed, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
		NULL, 0);
}

/* Unlink @ev from its channel's queue. Requires cm.lock. */
static void channel_unlink(struct cm_event *ev)
{
	struct cm_channel *chan = ev->chan;
	struct cm_event **pp;

	for (pp = &chan->head; *pp; pp = &(*pp)->next) {
		if (*pp == ev) {
			*pp = ev->next;
			break;
		}
	}
	chan->tail = &chan->head;
	while (*chan->tail)
		chan->tail = &(*chan->tail)->next;
	ev->chan = NULL;
	ev->next = NULL;
	channel_sync_fd(chan);
}

/* Unqueue and free @ev, which the application never saw. cm.lock. */
static void event_discard(struct cm_event *ev)
{
	channel_unlink(ev);
	ev->owner->events_queued--;
	free(ev);
}

/*
 * Move the events queued on @from for @id to @to, in order; with
 * @requests also the CONNECT_REQUESTs @id reported as a listener.
 * Requires cm.lock.
 */
static void channel_move(struct cm_channel *from, struct cm_channel *to,
			 struct cm_id *id, bool requests)
{
	struct cm_event *ev, *next;

	for (ev = from->head; ev; ev = next) {
		next = ev->next;
		if (ev->owner != id &&
		    !(requests && ev->ev.listen_id == &id->id))
			continue;
		channel_unlink(ev);
		channel_push(to, ev);
	}
}

static void fill_conn_param(struct cm_event *ev, const struct srdma_cm_msg *m,
			    unsigned int plen)
{
	struct rdma_conn_param *p = &ev->ev.param.conn;

	p->private_data = ev->pdata;
	p->private_data_len = (uint8_t)plen;
	/* Seen from the receiver: the peer's depth is what we answer. */
	p->responder_resources = m->init_depth;
	p->initiator_depth = m->resp_res;
	p->flow_control = !!(m->flags & SRDMA_CM_F_FLOW_CONTROL);
	p->retry_count = m->retry_count;
	p->rnr_retry_count = m->rnr_retry_count;
	p->srq = !!(m->flags & SRDMA_CM_F_SRQ);
	p->qp_num = m->qpn;
}

static void fill_ud_param(struct cm_event *ev, struct cm_id *id,
			  const struct srdma_cm_msg *m, unsigned int plen)
{
	struct rdma_ud_param *p = &ev->ev.param.ud;

	p->private_data = ev->pdata;
	p->private_data_len = (uint8_t)plen;
	if (m->type != SRDMA_CM_SIDR_REP)
		return;
	p->qp_num = m->qpn;
	p->qkey = m->qkey;
	p->ah_attr.dlid = m->lid;
	/* sl and rate stay 0; on InfiniBand the same subnet needs no GRH,
	 * on RoCE the AV is the peer's GID. */
	p->ah_attr.port_num = id->id.port_num ? id->id.port_num : 1;
	if (id->dev && id->dev->roce) {
		p->ah_attr.is_global = 1;
		memcpy(p->ah_attr.grh.dgid.raw, m->gid, sizeof(m->gid));
		p->ah_attr.grh.sgid_index = id->sgid_index;
		p->ah_attr.grh.hop_limit = id->hop_limit;
		p->ah_attr.grh.traffic_class = id->tos;
		p->ah_attr.grh.flow_label = id->flow_label;
	}
}

void srdma_cm_event_post(struct cm_id *id, struct cm_id *listen,
			 enum rdma_cm_event_type type, int status,
			 const struct srdma_cm_msg *msg)
{
	struct cm_event *ev = calloc(1, sizeof(*ev));
	unsigned int plen;

	if (!ev) {
		srdma_err("no memory for %s on id %p: dropped",
			  rdma_event_str(type), (void *)&id->id);
		return;
	}
	ev->owner = id;
	ev->ev.id = &id->id;
	ev->ev.listen_id = listen ? &listen->id : NULL;
	ev->ev.event = type;
	ev->ev.status = status;
	if (msg) {
		/* Reported at the IB CM's fixed size, zero padded. */
		plen = srdma_cm_pdata_max(msg->type);
		memcpy(ev->pdata, msg->pdata, msg->pdata_len);
		if (id->id.qp_type == IBV_QPT_UD)
			fill_ud_param(ev, id, msg, plen);
		else
			fill_conn_param(ev, msg, plen);
	}
	srdma_dbg("id %p: %s status %d", (void *)&id->id, rdma_event_str(type),
		  status);
	id->events_queued++;
	channel_push(id->chan, ev);
}

void srdma_cm_event_push(struct cm_id *id, struct cm_event *ev)
{
	ev->owner = id;
	ev->ev.id = &id->id;
	srdma_dbg("id %p: %s status %d", (void *)&id->id,
		  rdma_event_str(ev->ev.event), ev->ev.status);
	id->events_queued++;
	channel_push(id->chan, ev);
}

/* SRDMA_CM_DISC_HOLD_MS, else the default. */
static unsigned int disc_hold_ms(void)
{
	const char *env = getenv("SRDMA_CM_DISC_HOLD_MS");
	char *end;

	if (env && *env) {
		unsigned long v = strtoul(env, &end, 10);

		if (!*end && v <= 60000)
			return (unsigned int)v;
		srdma_warn("SRDMA_CM_DISC_HOLD_MS='%s' is not 0..60000 ms: "
			   "ignored", env);
	}
	return SRDMA_CM_DISC_HOLD_MS;
}

/* The QP whose completions a DISCONNECTED of @id waits for, or 0. */
static uint32_t held_qpn_of(const struct cm_id *id)
{
	if (!id->dev || (id->id.qp_type != IBV_QPT_RC &&
			 id->id.qp_type != IBV_QPT_UC))
		return 0;
	return id->id.qp ? id->id.qp->qp_num : id->conn.qpn;
}

void srdma_cm_event_disconnected(struct cm_id *id, int status)
{
	struct srdma_priv_cq_marks m;
	unsigned int hold = disc_hold_ms();
	uint32_t qpn = held_qpn_of(id);
	struct cm_event *ev;

	/*
	 * What the peer sent is in the receive CQ (with everything else
	 * when the QP has one CQ). Completions of our own sends already in
	 * a send CQ of their own tell nothing about the peer: programs that
	 * never poll that CQ are not made to wait for them.
	 */
	if (!hold || !qpn || id->held ||
	    srdma_priv_qp_cq_marks(id->dev->verbs, qpn, &m) ||
	    (m.cons[1] >= m.prod[1] && !m.sq_busy)) {
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_DISCONNECTED,
				    status, NULL);
		return;
	}
	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		srdma_cm_event_post(id, NULL, RDMA_CM_EVENT_DISCONNECTED,
				    status, NULL);
		return;
	}
	ev->ev.event = RDMA_CM_EVENT_DISCONNECTED;
	ev->ev.status = status;
	id->held = ev;
	id->held_qpn = qpn;
	id->held_mark[0] = m.cons[0];
	id->held_mark[1] = m.prod[1];
	id->held_sends = m.sq_busy != 0;
	id->held_until_ms = srdma_cm_now_ms() + hold;
	cm.n_held++;
	srdma_dbg("id %p: DISCONNECTED held until QP %#x's CQs are polled "
		  "(send %llu/%llu, recv %llu/%llu polled, %u sends without "
		  "completion), %u ms at most",
		  (void *)&id->id, qpn, (unsigned long long)m.cons[0],
		  (unsigned long long)m.prod[0], (unsigned long long)m.cons[1],
		  (unsigned long long)m.prod[1], m.sq_busy, hold);
	srdma_cm_loop_kick();
}

/* Take @id's held event off it. Requires cm.lock. */
static struct cm_event *held_take(struct cm_id *id)
{
	struct cm_event *ev = id->held;

	if (ev) {
		id->held = NULL;
		cm.n_held--;
	}
	return ev;
}

void srdma_cm_held_release(struct cm_id *id)
{
	struct cm_event *ev = held_take(id);

	if (ev)
		srdma_cm_event_push(id, ev);
}

/*
 * Has the application polled what @id's QP had at the disconnect? Sends
 * still without a completion then (between hosts: the peer's ACK on its
 * way) are waited for, and their completions must be polled too.
 */
static bool held_polled(struct cm_id *id)
{
	struct srdma_priv_cq_marks m;
	int i;

	/* The QP is gone (or another's): nothing left to poll. */
	if (srdma_priv_qp_cq_marks(id->dev->verbs, id->held_qpn, &m))
		return true;
	if (m.sq_busy) {
		id->held_sends = true;
		return false;
	}
	if (id->held_sends) {
		/* Their completions are in the send CQ now. */
		id->held_sends = false;
		if (id->held_mark[0] < m.prod[0])
			id->held_mark[0] = m.prod[0];
	}
	for (i = 0; i < 2; i++) {
		/* A QP destroyed meanwhile had its CQEs cleaned out, which
		 * lowers prod: then an empty CQ will do. */
		uint64_t mark = id->held_mark[i] < m.prod[i] ? id->held_mark[i]
							      : m.prod[i];

		if (m.cons[i] < mark)
			return false;
	}
	return true;
}

bool srdma_cm_held_check(void)
{
	uint64_t now;
	struct cm_id *id;

	if (!cm.n_held)
		return false;
	now = srdma_cm_now_ms();
	for (id = cm.ids; id; id = id->next) {
		if (!id->held)
			continue;
		if (held_polled(id)) {
			srdma_dbg("id %p: QP %#x's completions polled: "
				  "DISCONNECTED delivered", (void *)&id->id,
				  id->held_qpn);
		} else if (now >= id->held_until_ms) {
			srdma_info("id %p: QP %#x's completions not polled "
				   "in time: DISCONNECTED delivered anyway",
				   (void *)&id->id, id->held_qpn);
		} else {
			continue;
		}
		srdma_cm_held_release(id);
	}
	return cm.n_held != 0;
}

void srdma_cm_events_drop_mc(struct cm_id *id, const struct cm_mcast *mc)
{
	struct cm_event *ev, *next;

	for (ev = id->chan->head; ev; ev = next) {
		next = ev->next;
		if (ev->owner == id && ev->mc == mc)
			event_discard(ev);
	}
}

void srdma_cm_events_drop(struct cm_id *id)
{
	struct cm_channel *chans[2] = {
		id->chan, id->listener ? id->listener->chan : NULL};
	unsigned int i;

	free(held_take(id));
	for (i = 0; i < ARRAY_SIZE(chans); i++) {
		struct cm_event *ev, *next;

		if (!chans[i])
			continue;
		for (ev = chans[i]->head; ev; ev = next) {
			next = ev->next;
			if (ev->owner == id)
				event_discard(ev);
		}
	}
}

void srdma_cm_wait_events_acked(struct cm_id *id)
{
	while (id->events_out)
		pthread_cond_wait(&cm.cond, &cm.lock);
}

static bool fd_nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

/* Pop the head event of @chan. Requires cm.lock. */
static struct cm_event *channel_pop(struct cm_channel *chan)
{
	struct cm_event *ev = chan->head;

	if (!ev)
		return NULL;
	channel_unlink(ev);
	ev->owner->events_queued--;
	ev->owner->events_out++;
	return ev;
}

/*
 * A CONNECT_REQUEST gives its child id a channel when it is retrieved: the
 * channel it came from (as the kernel gives the new id the file that read
 * the request), or, for a sync listener, a private channel of its own, as
 * the real library migrates it there.
 */
static int child_take_channel(struct cm_event *ev, struct cm_channel *from)
{
	struct cm_id *child = ev->owner;
	struct cm_channel *priv = NULL;
	int ret;

	if (ev->ev.event != RDMA_CM_EVENT_CONNECT_REQUEST || child->sync)
		return 0;
	if (!child->listener || !child->listener->sync) {
		child->chan = from;
		child->id.channel = &from->ch;
		return 0;
	}
	ret = srdma_cm_channel_new(true, &priv);
	if (ret)
		return ret;
	/* Events the child got meanwhile (a vanished peer) follow it. */
	channel_move(from, priv, child, false);
	child->chan = priv;
	child->sync = true;
	child->id.channel = &priv->ch;
	return 0;
}

/* Retrieve one event, blocking per the fd's O_NONBLOCK. Return 0/-errno. */
static int channel_get(struct cm_channel *chan, struct cm_event **out)
{
	struct cm_event *ev;
	uint32_t seen;
	int ret;

	for (;;) {
		srdma_cm_lock();
		/* Held DISCONNECTEDs whose completions were just polled
		 * come now, not at the service thread's next look. */
		(void)srdma_cm_held_check();
		seen = atomic_load_explicit(&chan->pushed,
					    memory_order_relaxed);
		ev = channel_pop(chan);
		if (ev) {
			ret = child_take_channel(ev, chan);
			srdma_cm_unlock();
			if (ret)
				srdma_err("CONNECT_REQUEST for sync listener: "
					  "no private channel (%d)",
					  ret);
			*out = ev;
			return 0;
		}
		srdma_cm_unlock();
		if (fd_nonblocking(chan->ch.fd))
			return -EAGAIN;
		/* Sleeps only while nothing was pushed since @seen. A signal
		 * ends the wait with -EINTR unless its handler has SA_RESTART,
		 * as librdmacm's read() of its event fd. */
		if (syscall(SYS_futex, &chan->pushed, FUTEX_WAIT_PRIVATE, seen,
			    NULL, NULL, 0) < 0 && errno != EAGAIN)
			return -errno;
	}
}

static void event_ack(struct cm_event *ev)
{
	srdma_cm_lock();
	srdma_assert(ev->owner->events_out);
	ev->owner->events_out--;
	pthread_cond_broadcast(&cm.cond);
	srdma_cm_unlock();
	free(ev);
}

void srdma_cm_sync_event_done(struct cm_id *id)
{
	if (!id->sync || !id->id.event)
		return;
	srdma_assert(id->events_out);
	id->events_out--;
	free(to_cm_event(id->id.event));
	id->id.event = NULL;
	pthread_cond_broadcast(&cm.cond);
}

int srdma_cm_complete(struct cm_id *id)
{
	struct cm_event *ev;
	int ret;

	if (!id->sync)
		return 0;
	if (id->id.event) {
		event_ack(to_cm_event(id->id.event));
		id->id.event = NULL;
	}
	ret = channel_get(id->chan, &ev);
	if (ret)
		return ret;
	id->id.event = &ev->ev;
	if (!ev->ev.status)
		return 0;
	if (ev->ev.event == RDMA_CM_EVENT_REJECTED)
		return -ECONNREFUSED;
	return ev->ev.status < 0 ? ev->ev.status : -ev->ev.status;
}

SRDMA_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_channel *chan = NULL;
	int ret = srdma_cm_channel_new(false, &chan);

	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &chan->ch;
}

SRDMA_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_channel *chan;

	if (!channel)
		return;
	chan = to_cm_channel(channel);
	if (srdma_cm_chan_inherited(chan)) {
		/* The parent's channel: close our copy of its eventfd. */
		if (chan->ch.fd >= 0)
			close(chan->ch.fd);
		chan->ch.fd = -1;
		return;
	}
	/* Events still queued belong to ids the application must destroy
	 * first; the real library frees the channel regardless. */
	srdma_cm_lock();
	while (chan->head)
		event_discard(chan->head);
	srdma_cm_unlock();
	srdma_cm_channel_free(chan);
}

SRDMA_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				   struct rdma_cm_event **event)
{
	struct cm_event *ev;
	int ret;

	if (!channel || !event ||
	    srdma_cm_chan_inherited(to_cm_channel(channel))) {
		errno = EINVAL;
		return -1;
	}
	ret = channel_get(to_cm_channel(channel), &ev);
	if (ret) {
		errno = -ret;
		return -1;
	}
	*event = &ev->ev;
	return 0;
}

SRDMA_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event) {
		errno = EINVAL;
		return -1;
	}
	/* An event the parent retrieved before fork(): the parent acks it. */
	if (srdma_cm_id_inherited(to_cm_event(event)->owner))
		return 0;
	event_ack(to_cm_event(event));
	return 0;
}

SRDMA_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
				 struct rdma_event_channel *channel)
{
	struct cm_channel *to = NULL, *from;
	struct cm_id *cid;
	bool sync = false;
	int ret;

	if (!id) {
		errno = EINVAL;
		return -1;
	}
	cid = to_cm_id(id);
	if (srdma_cm_id_inherited(cid) ||
	    (channel && srdma_cm_chan_inherited(to_cm_channel(channel)))) {
		errno = EINVAL;
		return -1;
	}
	if (cid->sync && !channel) {
		errno = EINVAL;
		return -1;
	}
	if (channel) {
		to = to_cm_channel(channel);
	} else {
		ret = srdma_cm_channel_new(true, &to);
		if (ret) {
			errno = -ret;
			return -1;
		}
		sync = true;
	}

	srdma_cm_lock();
	from = cid->chan;
	srdma_cm_sync_event_done(cid);
	/*
	 * Queued events of this id follow it, in order, and so do the
	 * connection requests of a listener (reported on its channel).
	 */
	channel_move(from, to, cid, true);
	cid->chan = to;
	id->channel = &to->ch;
	/* Events already retrieved must be acked on the old channel first. */
	srdma_cm_wait_events_acked(cid);
	if (cid->sync)
		srdma_cm_channel_free(from);
	cid->sync = sync;
	srdma_cm_unlock();
	return 0;
}
