// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rsocket.c - the rsocket API (rsocket(7)) over our own rdma_cm and verbs:
 * stream sockets, the fd table, options, rpoll/rselect and riomap.
 *
 * A stream rsocket is one rdma_cm id on its own event channel; the
 * channel's fd is the socket's fd, so it is unique, pollable and closed
 * with the socket. Connecting resolves the address and route and connects
 * an RC QP; both sides exchange, in the CM private data, how many receive
 * buffers they posted and how large each is. Data then moves as
 * SEND_WITH_IMM messages copied through registered rings: every message
 * fills one of the peer's receive buffers, whatever its length, and the
 * 32-bit immediate carries an opcode (top 8 bits) and the number of the
 * sender's own receive buffers freed since it last said so (low 24 bits).
 *
 * Flow control is these credits, never RNR: a message is sent only while
 * the sender holds a credit for it, and data (or FIN, or an iomap message)
 * only while it holds two, so the last credit is always left for a bare
 * credit update. A receiver announces freed buffers with its next message,
 * or alone once half its ring is free. This cannot deadlock: a sender
 * down to one credit means at least rq-1 of the receiver's buffers hold
 * unread data or unannounced credits; once the application reads, half
 * of them are announced.
 *
 * Orderly close: shutdown(SHUT_WR) and close send FIN, after which the
 * peer's reads return 0 once the data before it is read. close() then
 * waits (SO_LINGER, default 10 s) for every send to complete before it
 * disconnects, so no data is lost to a QP flushed too early. A peer that
 * disconnected (or died: our CM sees its side channel end) makes writes
 * fail with EPIPE, without SIGPIPE, as rdma-core's rsockets do.
 *
 * riomap registers a buffer for remote writes and sends its address and
 * rkey to the peer in an iomap message; riowrite copies through the send
 * ring and posts an RDMA WRITE into the peer's mapping. Both travel on the
 * same QP as data, so the peer learns a mapping before any data sent
 * after the riomap.
 *
 * Waiting never spins: a blocked call arms its CQ and sleeps in poll() on
 * the completion channel and the CM channel (a 100 ms cap covers a
 * wake-up taken by another thread). rpoll does the same for a whole set,
 * passing ordinary fds through to poll(). An application that spins on
 * non-blocking calls finding nothing is made to nap on those channels
 * (rs_idle_nap): the peer it waits for is a process of this host, and it
 * needs the CPU the spinner would take.
 *
 * The wire protocol is our own (both ends are softrdma); it does not
 * interoperate with rdma-core's rsockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "cm/rsocket_int.h"
#include "util/compiler.h"
#include "util/log.h"

/* ---- Constants ------------------------------------------------------- */

#define RS_BUF_SIZE	 (64 * 1024)	/* one receive buffer / send slot */
#define RS_DEF_BUFS	 16		/* default ring depth (1 MiB) */
#define RS_MIN_BUFS	 4
#define RS_MAX_BUFS	 1024
#define RS_DEF_INLINE	 64
#define RS_CTRL_WRS	 8		/* send WRs beyond the slots */
#define RS_CONN_MAGIC	 0x52534b31	/* "RSK1" */
#define RS_WAIT_CAP_MS	 100
#define RS_DEF_LINGER_S	 10
#define RS_EST_TIMEOUT_MS 20000
#define RS_IDLE_CALLS	 16		/* empty non-blocking calls: a spin */
#define RS_IDLE_GAP_NS	 10000000	/* a longer pause ends the spin */
#define RS_IDLE_NAP_NS	 ((int64_t)RS_IDLE_NAP_MS * 1000000)

/* Opcodes in the immediate's top byte. */
enum {
	RS_OP_DATA = 1,
	RS_OP_CREDIT = 2,
	RS_OP_FIN = 3,
	RS_OP_IOMAP = 4,
	RS_OP_IOUNMAP = 5,
};
#define RS_IMM(op, cred) (((uint32_t)(op) << 24) | ((cred) & 0xffffff))

/* wr_id: kind in the top bits, index below. */
#define RS_WR_RECV	(1ULL << 62)
#define RS_WR_SLOT	(1ULL << 61)
#define RS_WR_BARE	(1ULL << 60)
#define RS_WR_IDX(w)	((uint32_t)(w))

/* Connection private data (REQ and REP), big-endian. */
struct rs_conn_data {
	uint32_t magic;
	uint32_t rq_bufs;
	uint32_t buf_size;
	uint32_t reserved;
};

/* Payload of RS_OP_IOMAP / RS_OP_IOUNMAP, big-endian. */
struct rs_iomap_msg {
	uint64_t offset;
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t reserved;
};

enum rs_state {
	RSS_INIT,
	RSS_BOUND,
	RSS_LISTENING,
	RSS_ADDR,	/* resolving the address */
	RSS_ROUTE,	/* resolving the route */
	RSS_CONNECTING, /* REQ sent */
	RSS_CONNECTED,
	RSS_FAILED,	/* connect failed; so_error says why */
};

struct rs_iomap {
	struct rs_iomap *next;
	uint64_t offset, len;
	uint64_t addr;		/* remote: peer's address; local: ours */
	uint32_t rkey;
	struct ibv_mr *mr;	/* local maps only */
};

/*
 * struct rs_stream - the stream part of an rsock (rsock.lock).
 */
struct rs_stream {
	enum rs_state state;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	bool qp_made;
	uint32_t max_inline;

	/* receive ring */
	uint32_t rq;
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	uint32_t *rx_fifo;	/* buffer indices holding unread data */
	uint32_t *rx_len;	/* per buffer: bytes received */
	uint32_t rx_head, rx_count, rx_off;
	uint32_t ctl_ret;	/* buffers reposted, not yet announced */

	/* send ring */
	uint32_t sq, sq_depth, sq_busy;
	uint8_t *sbuf;
	struct ibv_mr *smr;
	uint32_t *free_slots, n_free;

	/* peer */
	uint32_t credits;	/* peer buffers we may fill */
	uint32_t peer_buf;	/* peer's buffer size */

	bool rd_shut, wr_shut, peer_fin, disconnected, qp_err;
	unsigned int cq_events;	/* unacked CQ events */

	struct rs_iomap *lmaps, *rmaps;
};

/* ---- The fd table ---------------------------------------------------- */

static pthread_mutex_t rs_tab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsock **rs_tab;	/* rs_tab_lock */
static size_t rs_tab_len;	/* rs_tab_lock */
static unsigned int rs_fork_gen; /* bumped in a forked child */
static pthread_once_t rs_once = PTHREAD_ONCE_INIT;

static void rs_atfork_child(void)
{
	pthread_mutex_init(&rs_tab_lock, NULL);
	__atomic_add_fetch(&rs_fork_gen, 1, __ATOMIC_RELAXED);
}

static void rs_init_once(void)
{
	pthread_atfork(NULL, NULL, rs_atfork_child);
}

/**
 * srdma_rs_alloc() - a new rsock with default options, not yet published.
 * @fd: the fd the application will see
 * @type: stream or datagram
 * @domain: AF_INET or AF_INET6
 *
 * Return: the rsock (one reference), or NULL when out of memory.
 */
struct rsock *srdma_rs_alloc(int fd, enum rs_type type, int domain)
{
	struct rsock *rs = calloc(1, sizeof(*rs));

	pthread_once(&rs_once, rs_init_once);
	if (!rs)
		return NULL;
	pthread_mutex_init(&rs->lock, NULL);
	rs->fd = fd;
	rs->type = type;
	rs->domain = domain;
	rs->refs = 1;
	rs->fork_gen = __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED);
	rs->opt_rcvbuf = rs->opt_sndbuf = RS_DEF_BUFS * RS_BUF_SIZE;
	rs->opt_maxseg = RS_BUF_SIZE;
	rs->opt_inline = RS_DEF_INLINE;
	rs->opt_keepidle = 7200;
	return rs;
}

/**
 * srdma_rs_insert() - publish @rs under rs->fd.
 * @rs: a new rsock
 *
 * Return: 0, or -ENOMEM / -EBUSY (the slot is taken, which cannot happen
 * for an fd the kernel just gave us unless the application closed an
 * rsocket's fd with close()).
 */
int srdma_rs_insert(struct rsock *rs)
{
	int ret = 0;

	pthread_mutex_lock(&rs_tab_lock);
	if ((size_t)rs->fd >= rs_tab_len) {
		size_t n = rs_tab_len ? rs_tab_len : 64;
		struct rsock **t;

		while (n <= (size_t)rs->fd)
			n *= 2;
		t = realloc(rs_tab, n * sizeof(*t));
		if (!t) {
			ret = -ENOMEM;
			goto out;
		}
		memset(t + rs_tab_len, 0, (n - rs_tab_len) * sizeof(*t));
		rs_tab = t;
		rs_tab_len = n;
	}
	if (rs_tab[rs->fd]) {
		/* The application closed the fd behind our back: the old
		 * socket is unreachable now, so it is replaced. */
		srdma_warn("rsocket: fd %d reused while an rsocket held it",
			   rs->fd);
		rs_tab[rs->fd]->closed = true;
	}
	rs->refs++;
	rs_tab[rs->fd] = rs;
out:
	pthread_mutex_unlock(&rs_tab_lock);
	return ret;
}

/**
 * srdma_rs_get() - look up the rsock of @fd and take a reference.
 * @fd: an fd the application passed
 *
 * Return: the rsock, or NULL with errno EBADF (not an rsocket, closed, or
 * inherited through fork()).
 */
struct rsock *srdma_rs_get(int fd)
{
	struct rsock *rs = NULL;

	pthread_mutex_lock(&rs_tab_lock);
	if (fd >= 0 && (size_t)fd < rs_tab_len)
		rs = rs_tab[fd];
	if (rs)
		rs->refs++;
	pthread_mutex_unlock(&rs_tab_lock);
	if (!rs)
		errno = EBADF;
	return rs;
}

static void rs_free(struct rsock *rs)
{
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

/**
 * srdma_rs_put() - drop a reference taken by srdma_rs_get/alloc.
 * @rs: the rsock
 */
void srdma_rs_put(struct rsock *rs)
{
	bool last;

	pthread_mutex_lock(&rs_tab_lock);
	last = --rs->refs == 0;
	pthread_mutex_unlock(&rs_tab_lock);
	if (last)
		rs_free(rs);
}

static void rs_unpublish(struct rsock *rs)
{
	pthread_mutex_lock(&rs_tab_lock);
	if ((size_t)rs->fd < rs_tab_len && rs_tab[rs->fd] == rs) {
		rs_tab[rs->fd] = NULL;
		rs->refs--;
	}
	pthread_mutex_unlock(&rs_tab_lock);
}

static bool rs_inherited(const struct rsock *rs)
{
	return rs->fork_gen != __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED);
}

/* -1 with errno = @e: the public convention of every r* call. */
static int rs_fail(int e)
{
	errno = e;
	return -1;
}

static struct rs_stream *to_st(struct rsock *rs)
{
	return rs->stream;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* ---- Resources -------------------------------------------------------- */

static uint32_t bufs_of(int bytes)
{
	uint32_t n = (uint32_t)(bytes > 0 ? bytes : 0) / RS_BUF_SIZE;

	if (n < RS_MIN_BUFS)
		n = RS_MIN_BUFS;
	if (n > RS_MAX_BUFS)
		n = RS_MAX_BUFS;
	return n;
}

static int post_recv_buf(struct rs_stream *st, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(st->rbuf + (size_t)i * RS_BUF_SIZE),
		.length = RS_BUF_SIZE,
		.lkey = st->rmr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = RS_WR_RECV | i,
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return -ibv_post_recv(st->id->qp, &wr, &bad);
}

static void free_maps(struct rs_iomap **list)
{
	while (*list) {
		struct rs_iomap *m = *list;

		*list = m->next;
		if (m->mr)
			ibv_dereg_mr(m->mr);
		free(m);
	}
}

/* Tear down the verbs resources of @st (any stage of creation). */
static void destroy_resources(struct rs_stream *st)
{
	free_maps(&st->lmaps);
	free_maps(&st->rmaps);
	if (st->qp_made) {
		rdma_destroy_qp(st->id);
		st->qp_made = false;
	}
	if (st->cq) {
		if (st->cq_events)
			ibv_ack_cq_events(st->cq, st->cq_events);
		st->cq_events = 0;
		ibv_destroy_cq(st->cq);
		st->cq = NULL;
	}
	if (st->cc) {
		ibv_destroy_comp_channel(st->cc);
		st->cc = NULL;
	}
	if (st->rmr)
		ibv_dereg_mr(st->rmr);
	if (st->smr)
		ibv_dereg_mr(st->smr);
	st->rmr = st->smr = NULL;
	if (st->rbuf)
		munmap(st->rbuf, (size_t)st->rq * RS_BUF_SIZE);
	if (st->sbuf)
		munmap(st->sbuf, (size_t)st->sq * RS_BUF_SIZE);
	st->rbuf = st->sbuf = NULL;
	free(st->rx_fifo);
	free(st->rx_len);
	free(st->free_slots);
	st->rx_fifo = st->rx_len = st->free_slots = NULL;
	if (st->pd) {
		ibv_dealloc_pd(st->pd);
		st->pd = NULL;
	}
}

static void *map_ring(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Create the PD, CQ, QP and rings of a connecting or accepted socket and
 * post every receive buffer. -errno; on failure nothing is left.
 */
static int create_resources(struct rsock *rs)
{
	struct rs_stream *st = to_st(rs);
	struct ibv_qp_init_attr qa;
	uint32_t i;
	int ret;

	st->rq = rs->opt_rqsize ? rs->opt_rqsize : bufs_of(rs->opt_rcvbuf);
	st->sq = rs->opt_sqsize ? rs->opt_sqsize : bufs_of(rs->opt_sndbuf);
	if (st->rq < RS_MIN_BUFS)
		st->rq = RS_MIN_BUFS;
	if (st->sq < RS_MIN_BUFS)
		st->sq = RS_MIN_BUFS;
	st->sq_depth = st->sq + RS_CTRL_WRS;
	ret = -ENOMEM;
	st->pd = ibv_alloc_pd(st->id->verbs);
	if (!st->pd)
		goto fail;
	st->cc = ibv_create_comp_channel(st->id->verbs);
	if (!st->cc)
		goto fail;
	ret = set_nonblock(st->cc->fd);
	if (ret)
		goto fail;
	ret = -ENOMEM;
	st->cq = ibv_create_cq(st->id->verbs, (int)(st->sq_depth + st->rq),
			       rs, st->cc, 0);
	if (!st->cq)
		goto fail;
	st->rbuf = map_ring((size_t)st->rq * RS_BUF_SIZE);
	st->sbuf = map_ring((size_t)st->sq * RS_BUF_SIZE);
	st->rx_fifo = calloc(st->rq, sizeof(uint32_t));
	st->rx_len = calloc(st->rq, sizeof(uint32_t));
	st->free_slots = calloc(st->sq, sizeof(uint32_t));
	if (!st->rbuf || !st->sbuf || !st->rx_fifo || !st->rx_len ||
	    !st->free_slots)
		goto fail;
	st->rmr = ibv_reg_mr(st->pd, st->rbuf, (size_t)st->rq * RS_BUF_SIZE,
			     IBV_ACCESS_LOCAL_WRITE);
	st->smr = ibv_reg_mr(st->pd, st->sbuf, (size_t)st->sq * RS_BUF_SIZE,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!st->rmr || !st->smr)
		goto fail;
	for (i = 0; i < st->sq; i++)
		st->free_slots[i] = st->sq - 1 - i;
	st->n_free = st->sq;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = st->cq;
	qa.recv_cq = st->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = st->sq_depth;
	qa.cap.max_recv_wr = st->rq;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->opt_inline;
	if (rdma_create_qp(st->id, st->pd, &qa)) {
		/* RDMA_INLINE beyond what the device offers: no inline. */
		qa.cap.max_inline_data = 0;
		if (!rs->opt_inline || rdma_create_qp(st->id, st->pd, &qa)) {
			ret = -errno;
			goto fail;
		}
	}
	st->qp_made = true;
	st->max_inline = qa.cap.max_inline_data;
	if (st->max_inline > rs->opt_inline)
		st->max_inline = rs->opt_inline;
	for (i = 0; i < st->rq; i++) {
		ret = post_recv_buf(st, i);
		if (ret)
			goto fail;
	}
	if (ibv_req_notify_cq(st->cq, 0)) {
		ret = -EIO;
		goto fail;
	}
	return 0;
fail:
	srdma_dbg("rsocket %d: resources not created: %s", rs->fd,
		  strerror(-ret));
	destroy_resources(st);
	return ret;
}

static void fill_conn_data(struct rs_stream *st, struct rs_conn_data *cd)
{
	cd->magic = htonl(RS_CONN_MAGIC);
	cd->rq_bufs = htonl(st->rq);
	cd->buf_size = htonl(RS_BUF_SIZE);
	cd->reserved = 0;
}

static int take_conn_data(struct rs_stream *st, const void *pd, uint8_t len)
{
	struct rs_conn_data cd;

	if (!pd || len < sizeof(cd))
		return -EPROTO;
	memcpy(&cd, pd, sizeof(cd));
	if (ntohl(cd.magic) != RS_CONN_MAGIC || !ntohl(cd.rq_bufs) ||
	    ntohl(cd.buf_size) < 1024)
		return -EPROTO;
	st->credits = ntohl(cd.rq_bufs);
	st->peer_buf = ntohl(cd.buf_size);
	return 0;
}

/* ---- Data path -------------------------------------------------------- */

static bool can_send_ctrl(struct rs_stream *st)
{
	return st->credits >= 1 && st->sq_busy < st->sq_depth;
}

static bool can_send_data(struct rs_stream *st)
{
	return st->credits >= 2 && st->sq_busy < st->sq_depth && st->n_free;
}

/*
 * Post one SEND_WITH_IMM of @len bytes from @src (copied into a slot, or
 * inline), announcing our freed buffers. Caller checked the credits.
 */
static int post_msg(struct rs_stream *st, int op, const void *src,
		    uint32_t len)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	uint32_t slot = 0;
	int ret;

	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htonl(RS_IMM(op, st->ctl_ret));
	if (len && len <= st->max_inline) {
		sge.addr = (uintptr_t)src;
		sge.length = len;
		sge.lkey = 0;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_INLINE;
		wr.wr_id = RS_WR_BARE;
	} else if (len) {
		slot = st->free_slots[--st->n_free];
		memcpy(st->sbuf + (size_t)slot * RS_BUF_SIZE, src, len);
		sge.addr = (uintptr_t)(st->sbuf + (size_t)slot * RS_BUF_SIZE);
		sge.length = len;
		sge.lkey = st->smr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.wr_id = RS_WR_SLOT | slot;
	} else {
		wr.wr_id = RS_WR_BARE;
	}
	ret = ibv_post_send(st->id->qp, &wr, &bad);
	if (ret) {
		if (wr.wr_id & RS_WR_SLOT)
			st->free_slots[st->n_free++] = slot;
		st->qp_err = true;
		return -ret;
	}
	st->ctl_ret = 0;
	st->credits--;
	st->sq_busy++;
	return 0;
}

static void maybe_credit(struct rs_stream *st)
{
	uint32_t thresh = st->rq / 2 ? st->rq / 2 : 1;

	if (st->ctl_ret >= thresh && can_send_ctrl(st) && !st->disconnected &&
	    !st->qp_err)
		post_msg(st, RS_OP_CREDIT, NULL, 0);
}

static void repost(struct rs_stream *st, uint32_t i)
{
	if (st->disconnected || st->qp_err)
		return;
	if (post_recv_buf(st, i)) {
		st->qp_err = true;
		return;
	}
	st->ctl_ret++;
}

static void take_iomap(struct rs_stream *st, uint32_t i, uint32_t len,
		       int op)
{
	struct rs_iomap_msg msg;
	struct rs_iomap *m, **pp;

	if (len < sizeof(msg))
		return;
	memcpy(&msg, st->rbuf + (size_t)i * RS_BUF_SIZE, sizeof(msg));
	if (op == RS_OP_IOUNMAP) {
		for (pp = &st->rmaps; *pp; pp = &(*pp)->next) {
			if ((*pp)->offset == be64toh(msg.offset)) {
				m = *pp;
				*pp = m->next;
				free(m);
				return;
			}
		}
		return;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return;
	m->offset = be64toh(msg.offset);
	m->addr = be64toh(msg.addr);
	m->len = be64toh(msg.len);
	m->rkey = ntohl(msg.rkey);
	m->next = st->rmaps;
	st->rmaps = m;
}

static void handle_wc(struct rs_stream *st, const struct ibv_wc *wc)
{
	uint32_t idx = RS_WR_IDX(wc->wr_id);

	if (!(wc->wr_id & RS_WR_RECV)) {
		if (wc->wr_id & RS_WR_SLOT)
			st->free_slots[st->n_free++] = idx;
		st->sq_busy--;
		if (wc->status != IBV_WC_SUCCESS) {
			if (wc->status != IBV_WC_WR_FLUSH_ERR)
				srdma_dbg("rsocket: send failed: %s",
					  ibv_wc_status_str(wc->status));
			st->qp_err = true;
		}
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		st->qp_err = true;
		return;
	}
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		uint32_t imm = ntohl(wc->imm_data);

		st->credits += imm & 0xffffff;
		switch (imm >> 24) {
		case RS_OP_DATA:
			if (wc->byte_len) {
				st->rx_len[idx] = wc->byte_len;
				st->rx_fifo[(st->rx_head + st->rx_count) %
					    st->rq] = idx;
				st->rx_count++;
				return;
			}
			break;
		case RS_OP_FIN:
			st->peer_fin = true;
			break;
		case RS_OP_IOMAP:
		case RS_OP_IOUNMAP:
			take_iomap(st, idx, wc->byte_len, (int)(imm >> 24));
			break;
		default:
			break;
		}
	}
	repost(st, idx);
}

/* Handle CM events that arrive on a connected socket (disconnect). */
static void progress_cm(struct rsock *rs)
{
	struct rs_stream *st = to_st(rs);
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(st->ch, &ev)) {
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			st->disconnected = true;
		rdma_ack_cm_event(ev);
	}
}

/* Poll the CQ dry and answer with credits. Lock held. */
static void progress(struct rsock *rs)
{
	struct rs_stream *st = to_st(rs);
	struct ibv_wc wc[16];
	int n, i;

	if (st->state != RSS_CONNECTED || !st->cq)
		return;
	do {
		n = ibv_poll_cq(st->cq, 16, wc);
		for (i = 0; i < n; i++)
			handle_wc(st, &wc[i]);
	} while (n > 0);
	maybe_credit(st);
}

/* Drain the completion channel (non-blocking) and ack what it gave. */
static void drain_cc(struct rs_stream *st)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!st->cc)
		return;
	while (!ibv_get_cq_event(st->cc, &cq, &ctx))
		st->cq_events++;
	if (st->cq_events) {
		ibv_ack_cq_events(st->cq, st->cq_events);
		st->cq_events = 0;
	}
}

/* Arm the CQ; true if completions came in meanwhile (do not sleep). */
static bool arm(struct rsock *rs)
{
	struct rs_stream *st = to_st(rs);
	struct ibv_wc wc;
	int n;

	if (st->state != RSS_CONNECTED || !st->cq)
		return false;
	ibv_req_notify_cq(st->cq, 0);
	n = ibv_poll_cq(st->cq, 1, &wc);
	if (n > 0) {
		handle_wc(st, &wc);
		progress(rs);
		return true;
	}
	return false;
}

static int stream_waitfds(struct rsock *rs, struct pollfd *pfd)
{
	struct rs_stream *st = to_st(rs);
	int n = 0;

	pfd[n].fd = st->ch->fd;
	pfd[n].events = POLLIN;
	pfd[n++].revents = 0;
	if (st->state == RSS_CONNECTED && st->cc) {
		pfd[n].fd = st->cc->fd;
		pfd[n].events = POLLIN;
		pfd[n++].revents = 0;
	}
	return n;
}

static void stream_after_wait(struct rsock *rs)
{
	struct rs_stream *st = to_st(rs);

	drain_cc(st);
	if (st->state == RSS_CONNECTED)
		progress_cm(rs);
}

/*
 * Block until something may have changed: arm the CQ and sleep on the
 * channels (lock dropped). No spin first: on a software device the peer
 * we wait for is a process of this host that needs a CPU, and on a loaded
 * machine a spinner keeps it off the CPU (paired runs of rstream -T b on
 * the 2-CPU machine: 50 us of spin 37-50 us per transfer, none 7-8 us).
 * @deadline_ns: 0 = none. Returns -ETIMEDOUT past the deadline, -EINTR on
 * a signal, else 0.
 */
static int rs_wait(struct rsock *rs, int64_t deadline_ns)
{
	struct rs_stream *st = to_st(rs);
	struct pollfd pfd[2];
	int64_t left;
	int n, tmo;

	if (st->state == RSS_CONNECTED && st->cq && arm(rs))
		return 0;
	n = stream_waitfds(rs, pfd);
	tmo = RS_WAIT_CAP_MS;
	if (deadline_ns) {
		left = deadline_ns - now_ns();
		if (left <= 0)
			return -ETIMEDOUT;
		if (left / 1000000 < tmo)
			tmo = (int)(left / 1000000) + 1;
	}
	pthread_mutex_unlock(&rs->lock);
	n = poll(pfd, (nfds_t)n, tmo);
	pthread_mutex_lock(&rs->lock);
	if (n < 0 && errno == EINTR)
		return -EINTR;
	if (rs->closed)
		return -EBADF;
	stream_after_wait(rs);
	progress(rs);
	return 0;
}

/**
 * srdma_rs_idle_spinning() - count a non-blocking call that found nothing.
 * @idle: the run of such calls (the socket's, under its lock, or rpoll's
 *	  per thread)
 *
 * Return: true once the run looks like an application spinning on them:
 * at least RS_IDLE_CALLS calls, none further apart than RS_IDLE_GAP_NS (an
 * event loop that calls now and then never naps). See rs_idle_nap.
 */
bool srdma_rs_idle_spinning(struct rs_idle *idle)
{
	int64_t now = now_ns();

	if (now - idle->last > RS_IDLE_GAP_NS)
		idle->calls = 0;
	idle->last = now;
	if (idle->calls < RS_IDLE_CALLS)
		idle->calls++;
	return idle->calls >= RS_IDLE_CALLS;
}

/**
 * srdma_rs_idle_end() - a call made progress: the run of empty calls ends.
 * @idle: as for srdma_rs_idle_spinning()
 */
void srdma_rs_idle_end(struct rs_idle *idle)
{
	idle->calls = 0;
}

/*
 * rs_idle_nap() - a non-blocking call on @rs found nothing to do (lock
 * held). rstream, riostream and others spin on such calls. Our device is
 * software: the peer they wait for is a process of this host, which needs
 * a CPU to post what they spin for, and on a loaded machine a spinner
 * (yielding or not) keeps the peer off the CPU for most of a time slice
 * per message - a 64-byte ping-pong then takes ~600 us instead of ~10.
 * So once the calls look like a spin (rs_idle_spinning), each further one
 * naps on the socket's channels, lock dropped, until a completion or CM
 * event arrives, RS_IDLE_NAP_NS at most: the peer's next message wakes us
 * at once, and the scheduler runs a woken sleeper promptly.
 *
 * @napped: the call's own flag: one nap per call at most
 *
 * Return: 0 after a nap and a round of progress (the caller looks once
 * more), -EAGAIN when the call has napped already, is not part of a
 * spin, or a signal cut the nap short, -EBADF when the socket was closed
 * meanwhile.
 */
static int rs_idle_nap(struct rsock *rs, bool *napped)
{
	int ret;

	if (*napped || !srdma_rs_idle_spinning(&rs->idle))
		return -EAGAIN;
	ret = rs_wait(rs, now_ns() + RS_IDLE_NAP_NS);
	if (ret == -ETIMEDOUT || ret == -EINTR)	/* a non-blocking call */
		return -EAGAIN;
	if (ret)
		return ret;
	*napped = true;
	progress(rs);
	return 0;
}

/* ---- Connection management ------------------------------------------ */

static int event_errno(const struct rdma_cm_event *ev)
{
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return ECONNREFUSED;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return ev->status < 0 ? -ev->status : EHOSTUNREACH;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return ev->status < 0 ? -ev->status : ETIMEDOUT;
	default:
		return ECONNABORTED;
	}
}

static void connect_failed(struct rsock *rs, int err)
{
	struct rs_stream *st = to_st(rs);

	destroy_resources(st);
	st->state = RSS_FAILED;
	rs->so_error = err;
}

/*
 * Drive an active connect one event at a time. Returns 0 when connected,
 * -EINPROGRESS when it would block and @block is false, or -errno (the
 * failure, also left in so_error until the caller consumes it).
 */
static int connect_progress(struct rsock *rs, bool block)
{
	struct rs_stream *st = to_st(rs);
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct rs_conn_data cd;
	int ret, err;

	while (st->state >= RSS_ADDR && st->state <= RSS_CONNECTING) {
		if (rdma_get_cm_event(st->ch, &ev)) {
			if (errno != EAGAIN)
				return -errno;
			if (!block)
				return -EINPROGRESS;
			ret = rs_wait(rs, 0);
			if (ret && ret != -EINTR)
				return ret;
			if (ret == -EINTR)
				return -EINTR;
			continue;
		}
		err = 0;
		switch (ev->event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (st->state != RSS_ADDR)
				break;
			if (rdma_resolve_route(st->id, 2000))
				err = errno;
			else
				st->state = RSS_ROUTE;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			if (st->state != RSS_ROUTE)
				break;
			ret = create_resources(rs);
			if (ret) {
				err = -ret;
				break;
			}
			fill_conn_data(st, &cd);
			memset(&cp, 0, sizeof(cp));
			cp.private_data = &cd;
			cp.private_data_len = sizeof(cd);
			cp.responder_resources = 1;
			cp.initiator_depth = 1;
			cp.retry_count = 7;
			cp.rnr_retry_count = 7;
			if (rdma_connect(st->id, &cp))
				err = errno;
			else
				st->state = RSS_CONNECTING;
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (st->state != RSS_CONNECTING)
				break;
			ret = take_conn_data(st, ev->param.conn.private_data,
					     ev->param.conn.private_data_len);
			if (ret) {
				err = -ret;
				break;
			}
			st->state = RSS_CONNECTED;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			err = ECONNRESET;
			break;
		default:
			err = event_errno(ev);
			break;
		}
		rdma_ack_cm_event(ev);
		if (err) {
			if (st->state == RSS_CONNECTING)
				rdma_disconnect(st->id);
			connect_failed(rs, err);
			return -err;
		}
	}
	if (st->state == RSS_CONNECTED)
		return 0;
	if (st->state == RSS_FAILED)
		return -(rs->so_error ? rs->so_error : ECONNREFUSED);
	return -ENOTCONN;
}

static int stream_create(struct rsock **out, int domain, bool nonblock)
{
	struct rdma_event_channel *ch;
	struct rs_stream *st;
	struct rsock *rs;
	int ret = -ENOMEM;

	ch = rdma_create_event_channel();
	if (!ch)
		return -errno;
	st = calloc(1, sizeof(*st));
	if (!st)
		goto destroy_ch;
	ret = set_nonblock(ch->fd);
	if (ret)
		goto free_st;
	ret = -ENOMEM;
	rs = srdma_rs_alloc(ch->fd, RS_STREAM, domain);
	if (!rs)
		goto free_st;
	st->ch = ch;
	rs->stream = st;
	rs->nonblock = nonblock;
	*out = rs;
	return 0;
free_st:
	free(st);
destroy_ch:
	rdma_destroy_event_channel(ch);
	return ret;
}

static void stream_destroy(struct rsock *rs)
{
	struct rs_stream *st = to_st(rs);

	if (!st)
		return;
	destroy_resources(st);
	if (st->id)
		rdma_destroy_id(st->id);
	if (st->ch)
		rdma_destroy_event_channel(st->ch);
	free(st);
	rs->stream = NULL;
}

/* ---- Public API: sockets ---------------------------------------------- */

/**
 * rsocket() - create an rsocket.
 * @domain: AF_INET or AF_INET6
 * @type: SOCK_STREAM or SOCK_DGRAM, optionally | SOCK_NONBLOCK/CLOEXEC
 * @protocol: 0 (or IPPROTO_TCP / IPPROTO_UDP)
 *
 * Return: the socket's fd, or -1 with errno.
 */
SRDMA_EXPORT int rsocket(int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct rs_stream *st;
	struct rsock *rs;
	int ret;

	if (domain != AF_INET && domain != AF_INET6)
		return rs_fail(EAFNOSUPPORT);
	if (base == SOCK_DGRAM) {
		if (protocol && protocol != IPPROTO_UDP)
			return rs_fail(EPROTONOSUPPORT);
		return srdma_rsd_create(domain, type);
	}
	if (base != SOCK_STREAM)
		return rs_fail(ESOCKTNOSUPPORT);
	if (protocol && protocol != IPPROTO_TCP)
		return rs_fail(EPROTONOSUPPORT);
	ret = stream_create(&rs, domain, type & SOCK_NONBLOCK);
	if (ret)
		return rs_fail(-ret);
	st = to_st(rs);
	if (rdma_create_id(st->ch, &st->id, rs, RDMA_PS_TCP)) {
		ret = -errno;
		goto destroy;
	}
	if (type & SOCK_CLOEXEC)
		fcntl(rs->fd, F_SETFD, FD_CLOEXEC);
	ret = srdma_rs_insert(rs);
	if (ret)
		goto destroy;
	srdma_rs_put(rs);
	return rs->fd;
destroy:
	stream_destroy(rs);
	srdma_rs_put(rs);
	return rs_fail(-ret);
}

/* Look up @fd and lock it; NULL with errno set. */
static struct rsock *rs_lock_fd(int fd)
{
	struct rsock *rs = srdma_rs_get(fd);

	if (!rs)
		return NULL;
	pthread_mutex_lock(&rs->lock);
	if (rs->closed || rs_inherited(rs)) {
		pthread_mutex_unlock(&rs->lock);
		srdma_rs_put(rs);
		errno = EBADF;
		return NULL;
	}
	return rs;
}

static void rs_unlock(struct rsock *rs)
{
	pthread_mutex_unlock(&rs->lock);
	srdma_rs_put(rs);
}

/*
 * Return @ret (>= 0) or -1 with errno = -ret, and unlock. (Applications
 * spinning on EAGAIN: see rs_idle_nap.)
 */
static ssize_t rs_done(struct rsock *rs, ssize_t ret)
{
	rs_unlock(rs);
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

static socklen_t addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

static int check_addr(struct rsock *rs, const struct sockaddr *addr,
		      socklen_t len)
{
	if (!addr)
		return -EFAULT;
	if (len < sizeof(sa_family_t))
		return -EINVAL;
	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (len < addr_len(addr))
		return -EINVAL;
	(void)rs;
	return 0;
}

/**
 * rbind() - bind an rsocket to a local address.
 * @socket: the rsocket
 * @addr: AF_INET or AF_INET6 address (port 0: any)
 * @addrlen: its length
 *
 * Return: 0, or -1 with errno (EBADF, EINVAL, EADDRINUSE ...).
 */
SRDMA_EXPORT int rbind(int socket, const struct sockaddr *addr,
		       socklen_t addrlen)
{
	struct rsock *rs = rs_lock_fd(socket);
	struct sockaddr_storage ss;
	int ret;

	if (!rs)
		return -1;
	if (rs->type == RS_DGRAM) {
		pthread_mutex_unlock(&rs->lock);
		ret = srdma_rsd_bind(rs, addr, addrlen);
		srdma_rs_put(rs);
		return ret;
	}
	ret = check_addr(rs, addr, addrlen);
	if (ret)
		return (int)rs_done(rs, ret);
	if (to_st(rs)->state != RSS_INIT)
		return (int)rs_done(rs, -EINVAL);
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, addr, addr_len(addr));
	if (rdma_bind_addr(to_st(rs)->id, (struct sockaddr *)&ss))
		ret = -errno;
	else
		to_st(rs)->state = RSS_BOUND;
	return (int)rs_done(rs, ret);
}

/**
 * rlisten() - listen for connections on a bound stream rsocket.
 * @socket: the rsocket
 * @backlog: as listen()
 *
 * Return: 0, or -1 with errno.
 */
SRDMA_EXPORT int rlisten(int socket, int backlog)
{
	struct rsock *rs = rs_lock_fd(socket);
	struct rs_stream *st;
	int ret = 0;

	if (!rs)
		return -1;
	if (rs->type != RS_STREAM)
		return (int)rs_done(rs, -EOPNOTSUPP);
	st = to_st(rs);
	if (st->state == RSS_LISTENING)
		return (int)rs_done(rs, 0);
	if (st->state != RSS_BOUND && st->state != RSS_INIT)
		return (int)rs_done(rs, -EINVAL);
	if (rdma_listen(st->id, backlog > 0 ? backlog : 128))
		ret = -errno;
	else
		st->state = RSS_LISTENING;
	return (int)rs_done(rs, ret);
}

static void copy_addr(const struct sockaddr *sa, struct sockaddr *addr,
		      socklen_t *addrlen)
{
	socklen_t len;

	if (!addr || !addrlen)
		return;
	len = addr_len(sa);
	memcpy(addr, sa, *addrlen < len ? *addrlen : len);
	*addrlen = len;
}

/*
 * Make an accepted socket out of a CONNECT_REQUEST's child @id: its own
 * channel, resources, accept, then wait for ESTABLISHED. -errno (the
 * request is rejected or the id destroyed).
 */
static int accept_one(struct rsock *lrs, struct rdma_cm_id *id,
		      const void *pdata, uint8_t plen, struct rsock **out)
{
	struct rdma_conn_param cp;
	struct rs_conn_data cd;
	struct rdma_cm_event *ev;
	struct rs_stream *st;
	struct rsock *rs;
	int64_t deadline;
	int ret;

	ret = stream_create(&rs, lrs->domain, false);
	if (ret) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return ret;
	}
	st = to_st(rs);
	/* Options set on the listener carry over, as with TCP. */
	rs->opt_rcvbuf = lrs->opt_rcvbuf;
	rs->opt_sndbuf = lrs->opt_sndbuf;
	rs->opt_nodelay = lrs->opt_nodelay;
	rs->opt_keepalive = lrs->opt_keepalive;
	rs->opt_keepidle = lrs->opt_keepidle;
	rs->opt_linger = lrs->opt_linger;
	rs->opt_sqsize = lrs->opt_sqsize;
	rs->opt_rqsize = lrs->opt_rqsize;
	rs->opt_inline = lrs->opt_inline;
	rs->opt_iomapsize = lrs->opt_iomapsize;
	st->id = id;
	id->context = rs;
	ret = take_conn_data(st, pdata, plen);
	if (ret) {
		rdma_reject(id, NULL, 0);
		goto destroy;
	}
	if (rdma_migrate_id(id, st->ch)) {
		ret = -errno;
		rdma_reject(id, NULL, 0);
		goto destroy;
	}
	ret = create_resources(rs);
	if (ret) {
		rdma_reject(id, NULL, 0);
		goto destroy;
	}
	fill_conn_data(st, &cd);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &cd;
	cp.private_data_len = sizeof(cd);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	if (rdma_accept(id, &cp)) {
		ret = -errno;
		goto destroy;
	}
	deadline = now_ns() + (int64_t)RS_EST_TIMEOUT_MS * 1000000;
	for (;;) {
		struct pollfd pfd = { .fd = st->ch->fd, .events = POLLIN };
		int tmo = (int)((deadline - now_ns()) / 1000000);

		if (!rdma_get_cm_event(st->ch, &ev)) {
			enum rdma_cm_event_type t = ev->event;

			rdma_ack_cm_event(ev);
			if (t == RDMA_CM_EVENT_ESTABLISHED)
				break;
			ret = -ECONNABORTED;
			goto destroy;
		}
		if (errno != EAGAIN || tmo <= 0) {
			ret = -ECONNABORTED;
			goto destroy;
		}
		poll(&pfd, 1, tmo);
	}
	st->state = RSS_CONNECTED;
	ret = srdma_rs_insert(rs);
	if (ret)
		goto destroy;
	srdma_rs_put(rs);
	*out = rs;
	return 0;
destroy:
	stream_destroy(rs);
	srdma_rs_put(rs);
	return ret;
}

static int do_accept(int socket, struct sockaddr *addr, socklen_t *addrlen,
		     int flags)
{
	struct rsock *rs = rs_lock_fd(socket), *nrs = NULL;
	struct rs_stream *st;
	struct rdma_cm_event *ev;
	uint8_t pdata[64];
	uint8_t plen;
	int ret;

	if (!rs)
		return -1;
	if (rs->type != RS_STREAM)
		return (int)rs_done(rs, -EOPNOTSUPP);
	st = to_st(rs);
	if (st->state != RSS_LISTENING)
		return (int)rs_done(rs, -EINVAL);
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return (int)rs_done(rs, -EINVAL);
	for (;;) {
		struct rdma_cm_id *id;

		if (rdma_get_cm_event(st->ch, &ev)) {
			if (errno != EAGAIN)
				return (int)rs_done(rs, -errno);
			if (rs->nonblock)
				return (int)rs_done(rs, -EAGAIN);
			ret = rs_wait(rs, 0);
			if (ret)
				return (int)rs_done(rs, ret);
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		id = ev->id;
		plen = ev->param.conn.private_data_len;
		if (plen > sizeof(pdata))
			plen = sizeof(pdata);
		if (ev->param.conn.private_data)
			memcpy(pdata, ev->param.conn.private_data, plen);
		else
			plen = 0;
		rdma_ack_cm_event(ev);
		/* The listener stays usable while the handshake finishes. */
		pthread_mutex_unlock(&rs->lock);
		ret = accept_one(rs, id, pdata, plen, &nrs);
		pthread_mutex_lock(&rs->lock);
		if (ret) {
			srdma_dbg("rsocket %d: accept failed: %s", socket,
				  strerror(-ret));
			if (rs->closed)
				return (int)rs_done(rs, -EBADF);
			continue;
		}
		break;
	}
	rs_unlock(rs);
	pthread_mutex_lock(&nrs->lock);
	if (flags & SOCK_NONBLOCK)
		nrs->nonblock = true;
	if (flags & SOCK_CLOEXEC)
		fcntl(nrs->fd, F_SETFD, FD_CLOEXEC);
	copy_addr(rdma_get_peer_addr(to_st(nrs)->id), addr, addrlen);
	ret = nrs->fd;
	pthread_mutex_unlock(&nrs->lock);
	return ret;
}

/**
 * raccept() - accept a connection on a listening rsocket.
 * @socket: the listener
 * @addr: filled with the peer's address (may be NULL)
 * @addrlen: in: size of @addr; out: the address's length
 *
 * Blocks unless the listener is non-blocking (then EAGAIN).
 *
 * Return: the new rsocket's fd, or -1 with errno.
 */
SRDMA_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	return do_accept(socket, addr, addrlen, 0);
}

/**
 * rconnect() - connect a stream rsocket (or set a datagram's peer).
 * @socket: the rsocket
 * @addr: the server's address
 * @addrlen: its length
 *
 * Non-blocking sockets return -1/EINPROGRESS; completion is POLLOUT in
 * rpoll and the result is SO_ERROR.
 *
 * Return: 0, or -1 with errno (ECONNREFUSED when nobody listens).
 */
SRDMA_EXPORT int rconnect(int socket, const struct sockaddr *addr,
			  socklen_t addrlen)
{
	struct rsock *rs = rs_lock_fd(socket);
	struct sockaddr_storage ss;
	struct rs_stream *st;
	int ret;

	if (!rs)
		return -1;
	if (rs->type == RS_DGRAM) {
		pthread_mutex_unlock(&rs->lock);
		ret = srdma_rsd_connect(rs, addr, addrlen);
		srdma_rs_put(rs);
		return ret;
	}
	st = to_st(rs);
	switch (st->state) {
	case RSS_CONNECTED:
		return (int)rs_done(rs, -EISCONN);
	case RSS_LISTENING:
		return (int)rs_done(rs, -EINVAL);
	case RSS_FAILED:
		ret = rs->so_error ? -rs->so_error : -ECONNREFUSED;
		rs->so_error = 0;
		return (int)rs_done(rs, ret);
	case RSS_ADDR:
	case RSS_ROUTE:
	case RSS_CONNECTING:
		if (rs->nonblock) {
			ret = connect_progress(rs, false);
			return (int)rs_done(rs,
					    ret == -EINPROGRESS ? -EALREADY :
								  ret);
		}
		return (int)rs_done(rs, connect_progress(rs, true));
	default:
		break;
	}
	ret = check_addr(rs, addr, addrlen);
	if (ret)
		return (int)rs_done(rs, ret);
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, addr, addr_len(addr));
	if (rdma_resolve_addr(st->id, NULL, (struct sockaddr *)&ss, 2000))
		return (int)rs_done(rs, -errno);
	st->state = RSS_ADDR;
	ret = connect_progress(rs, !rs->nonblock);
	if (ret && ret != -EINPROGRESS)
		rs->so_error = 0;	/* reported now, not again */
	return (int)rs_done(rs, ret);
}

/* Send FIN if we can; true once sent (or pointless). */
static bool send_fin(struct rs_stream *st)
{
	if (st->wr_shut)
		return true;
	if (st->disconnected || st->qp_err) {
		st->wr_shut = true;
		return true;
	}
	if (!can_send_data(st))
		return false;
	post_msg(st, RS_OP_FIN, NULL, 0);
	st->wr_shut = true;
	return true;
}

/**
 * rshutdown() - shut down part of a full-duplex connection.
 * @socket: the rsocket
 * @how: SHUT_RD, SHUT_WR or SHUT_RDWR
 *
 * SHUT_WR sends FIN after the data already written: the peer reads EOF.
 * SHUT_RD makes our reads return 0.
 *
 * Return: 0, or -1 with errno (ENOTCONN unconnected, EINVAL bad @how).
 */
SRDMA_EXPORT int rshutdown(int socket, int how)
{
	struct rsock *rs = rs_lock_fd(socket);
	struct rs_stream *st;
	int64_t deadline;
	int ret = 0;

	if (!rs)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return (int)rs_done(rs, -EINVAL);
	if (rs->type != RS_STREAM)
		return (int)rs_done(rs, 0);
	st = to_st(rs);
	if (st->state != RSS_CONNECTED)
		return (int)rs_done(rs, -ENOTCONN);
	if (how == SHUT_RD || how == SHUT_RDWR)
		st->rd_shut = true;
	if (how == SHUT_WR || how == SHUT_RDWR) {
		deadline = now_ns() + (int64_t)RS_DEF_LINGER_S * 1000000000;
		progress(rs);
		while (!send_fin(st)) {
			ret = rs_wait(rs, deadline);
			if (ret == -ETIMEDOUT) {
				st->wr_shut = true;
				ret = 0;
				break;
			}
			if (ret)
				break;
		}
	}
	return (int)rs_done(rs, ret);
}

/* Orderly end of a connected socket: FIN, wait for sends, disconnect. */
static void stream_linger(struct rsock *rs)
{
	struct rs_stream *st = to_st(rs);
	int64_t deadline;
	int secs = RS_DEF_LINGER_S;

	if (st->state != RSS_CONNECTED)
		return;
	if (rs->opt_linger.l_onoff)
		secs = rs->opt_linger.l_linger;
	deadline = now_ns() + (int64_t)secs * 1000000000;
	progress(rs);
	while (secs > 0 && !send_fin(st))
		if (rs_wait(rs, deadline))
			break;
	while (secs > 0 && st->sq_busy && !st->qp_err && !st->disconnected)
		if (rs_wait(rs, deadline) == -ETIMEDOUT)
			break;
	if (!st->disconnected)
		rdma_disconnect(st->id);
}

/**
 * rclose() - close an rsocket.
 * @socket: the rsocket
 *
 * A connected socket sends FIN and waits (SO_LINGER, else up to 10 s) for
 * the data written to be delivered, then disconnects.
 *
 * Return: 0, or -1 with errno EBADF.
 */
SRDMA_EXPORT int rclose(int socket)
{
	struct rsock *rs = srdma_rs_get(socket);

	if (!rs)
		return -1;
	pthread_mutex_lock(&rs->lock);
	if (rs->closed) {
		pthread_mutex_unlock(&rs->lock);
		srdma_rs_put(rs);
		return rs_fail(EBADF);
	}
	if (rs->type == RS_STREAM && !rs_inherited(rs))
		stream_linger(rs);
	rs->closed = true;
	rs_unpublish(rs);
	if (rs->type == RS_STREAM)
		stream_destroy(rs);
	else
		srdma_rsd_close(rs);
	pthread_mutex_unlock(&rs->lock);
	srdma_rs_put(rs);
	return 0;
}

/* ---- Public API: data ------------------------------------------------- */

static bool is_nonblock(struct rsock *rs, int flags)
{
	return rs->nonblock || (flags & MSG_DONTWAIT);
}

/*
 * Send up to @len bytes; lock held. Blocking sockets send it all; others
 * what fits now. -errno when nothing was sent.
 */
static ssize_t stream_send(struct rsock *rs, const void *buf, size_t len,
			   int flags)
{
	struct rs_stream *st = to_st(rs);
	bool napped = false;
	size_t sent = 0;
	int ret;

	if (st->state != RSS_CONNECTED) {
		if (st->state >= RSS_ADDR && st->state <= RSS_CONNECTING)
			return -EAGAIN;
		return -ENOTCONN;
	}
	if (!len)
		return 0;
	if (!buf)
		return -EFAULT;
	progress(rs);
	if (st->peer_fin)	/* closed, or only half-closed? */
		progress_cm(rs);
	while (sent < len) {
		if (st->wr_shut || st->disconnected)
			return sent ? (ssize_t)sent : -EPIPE;
		if (st->qp_err)
			return sent ? (ssize_t)sent : -ECONNRESET;
		if (can_send_data(st)) {
			size_t chunk = len - sent;

			if (chunk > st->peer_buf)
				chunk = st->peer_buf;
			if (chunk > RS_BUF_SIZE)
				chunk = RS_BUF_SIZE;
			ret = post_msg(st, RS_OP_DATA,
				       (const uint8_t *)buf + sent,
				       (uint32_t)chunk);
			if (ret)
				return sent ? (ssize_t)sent : ret;
			sent += chunk;
			srdma_rs_idle_end(&rs->idle);
			continue;
		}
		progress(rs);
		if (can_send_data(st))
			continue;
		/* Blocked: has the peer gone (no FIN if it died)? */
		progress_cm(rs);
		if (st->disconnected)
			continue;
		if (is_nonblock(rs, flags)) {
			if (sent)
				return (ssize_t)sent;
			ret = rs_idle_nap(rs, &napped);
			if (ret)
				return ret;
			continue;
		}
		ret = rs_wait(rs, 0);
		if (ret)
			return sent ? (ssize_t)sent : ret;
	}
	return (ssize_t)sent;
}

static bool eof(struct rs_stream *st)
{
	return st->rd_shut || st->peer_fin || st->disconnected || st->qp_err;
}

/* Consume @n bytes from the head of the receive queue. */
static void consume(struct rs_stream *st, size_t n)
{
	while (n) {
		uint32_t i = st->rx_fifo[st->rx_head];
		size_t avail = st->rx_len[i] - st->rx_off;

		if (n < avail) {
			st->rx_off += (uint32_t)n;
			return;
		}
		n -= avail;
		st->rx_off = 0;
		st->rx_head = (st->rx_head + 1) % st->rq;
		st->rx_count--;
		repost(st, i);
	}
}

/* Copy what is queued (up to @len) without consuming. */
static size_t peek(struct rs_stream *st, uint8_t *buf, size_t len)
{
	size_t done = 0;
	uint32_t k, off = st->rx_off;

	for (k = 0; k < st->rx_count && done < len; k++) {
		uint32_t i = st->rx_fifo[(st->rx_head + k) % st->rq];
		size_t n = st->rx_len[i] - off;

		if (n > len - done)
			n = len - done;
		memcpy(buf + done, st->rbuf + (size_t)i * RS_BUF_SIZE + off,
		       n);
		done += n;
		off = 0;
	}
	return done;
}

/*
 * Receive into @buf; lock held. Returns bytes (0 at EOF) or -errno.
 * MSG_WAITALL waits for @len (or EOF); MSG_PEEK leaves the data queued.
 */
static ssize_t stream_recv(struct rsock *rs, void *buf, size_t len, int flags)
{
	struct rs_stream *st = to_st(rs);
	bool napped = false;
	size_t got = 0;
	int ret;

	if (st->state != RSS_CONNECTED) {
		if (st->state >= RSS_ADDR && st->state <= RSS_CONNECTING)
			return -EAGAIN;
		return -ENOTCONN;
	}
	if (!len)
		return 0;
	if (!buf)
		return -EFAULT;
	if (st->rd_shut)
		return 0;
	progress(rs);
	for (;;) {
		if (st->rx_count) {
			size_t n = peek(st, (uint8_t *)buf + got, len - got);

			srdma_rs_idle_end(&rs->idle);
			if (!(flags & MSG_PEEK)) {
				consume(st, n);
				maybe_credit(st);
				got += n;
			} else {
				return (ssize_t)n;
			}
			if (got == len || !(flags & MSG_WAITALL))
				return (ssize_t)got;
			continue;
		}
		if (eof(st))
			return (ssize_t)got;
		progress_cm(rs);
		if (eof(st))
			continue;
		if (is_nonblock(rs, flags) && !(flags & MSG_WAITALL && got)) {
			if (got)
				return (ssize_t)got;
			ret = rs_idle_nap(rs, &napped);
			if (ret)
				return ret;
			continue;
		}
		ret = rs_wait(rs, 0);
		if (ret)
			return got ? (ssize_t)got : ret;
		progress(rs);
	}
}

/**
 * rsend() - send on a connected rsocket.
 * @socket: the rsocket
 * @buf: data
 * @len: its length
 * @flags: MSG_DONTWAIT; MSG_NOSIGNAL and MSG_MORE are accepted (no signal
 *	   is ever raised)
 *
 * Return: bytes sent, or -1 with errno (EAGAIN, EPIPE, ENOTCONN ...).
 */
SRDMA_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct rsock *rs = rs_lock_fd(socket);

	if (!rs)
		return -1;
	if (rs->type == RS_DGRAM) {
		pthread_mutex_unlock(&rs->lock);
		ssize_t r = srdma_rsd_sendto(rs, buf, len, flags, NULL, 0);

		srdma_rs_put(rs);
		return r;
	}
	return rs_done(rs, stream_send(rs, buf, len, flags));
}

/**
 * rrecv() - receive from a connected rsocket.
 * @socket: the rsocket
 * @buf: buffer
 * @len: its size
 * @flags: MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL
 *
 * Return: bytes received, 0 at end of stream, or -1 with errno.
 */
SRDMA_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	return rrecvfrom(socket, buf, len, flags, NULL, NULL);
}

/**
 * rrecvfrom() - rrecv() that also reports the sender.
 * @socket: the rsocket
 * @buf: buffer
 * @len: its size
 * @flags: as rrecv()
 * @src_addr: filled with the peer's (stream) or sender's (dgram) address
 * @addrlen: in/out, as recvfrom()
 *
 * Return: as rrecv().
 */
SRDMA_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			       struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct rsock *rs = rs_lock_fd(socket);
	ssize_t ret;

	if (!rs)
		return -1;
	if (rs->type == RS_DGRAM) {
		pthread_mutex_unlock(&rs->lock);
		ret = srdma_rsd_recvfrom(rs, buf, len, flags, src_addr,
					 addrlen);
		srdma_rs_put(rs);
		return ret;
	}
	ret = stream_recv(rs, buf, len, flags);
	if (ret >= 0 && src_addr && addrlen)
		copy_addr(rdma_get_peer_addr(to_st(rs)->id), src_addr,
			  addrlen);
	return rs_done(rs, ret);
}

/**
 * rsendto() - rsend(); a stream socket ignores the address (as TCP).
 * @socket: the rsocket
 * @buf: data
 * @len: its length
 * @flags: as rsend()
 * @dest_addr: datagram destination
 * @addrlen: its length
 *
 * Return: as rsend().
 */
SRDMA_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			     const struct sockaddr *dest_addr,
			     socklen_t addrlen)
{
	struct rsock *rs = rs_lock_fd(socket);
	ssize_t ret;

	if (!rs)
		return -1;
	if (rs->type == RS_DGRAM) {
		pthread_mutex_unlock(&rs->lock);
		ret = srdma_rsd_sendto(rs, buf, len, flags, dest_addr,
				       addrlen);
		srdma_rs_put(rs);
		return ret;
	}
	return rs_done(rs, stream_send(rs, buf, len, flags));
}

/**
 * rread() - rrecv() without flags.
 * @socket: the rsocket
 * @buf: buffer
 * @count: its size
 *
 * Return: as rrecv().
 */
SRDMA_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

/**
 * rwrite() - rsend() without flags.
 * @socket: the rsocket
 * @buf: data
 * @count: its length
 *
 * Return: as rsend().
 */
SRDMA_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

static ssize_t iov_total(const struct iovec *iov, int iovcnt)
{
	size_t total = 0;
	int i;

	if (iovcnt < 0 || iovcnt > IOV_MAX || (iovcnt && !iov))
		return -EINVAL;
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
			return -EINVAL;
		total += iov[i].iov_len;
	}
	return (ssize_t)total;
}

/* Gather-send / scatter-receive on a stream socket, lock held. */
static ssize_t stream_iov(struct rsock *rs, const struct iovec *iov,
			  int iovcnt, int flags, bool send)
{
	ssize_t total = iov_total(iov, iovcnt), done = 0, r;
	int i;

	if (total < 0)
		return total;
	for (i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_len)
			continue;
		r = send ? stream_send(rs, iov[i].iov_base, iov[i].iov_len,
				       flags) :
			   stream_recv(rs, iov[i].iov_base, iov[i].iov_len,
				       flags);
		if (r < 0)
			return done ? done : r;
		done += r;
		if ((size_t)r < iov[i].iov_len || (!send && r == 0))
			break;
		/* Later segments take only what is there already. */
		if (!send)
			flags |= MSG_DONTWAIT;
	}
	return done;
}

/**
 * rreadv() - scatter read.
 * @socket: the rsocket
 * @iov: buffers
 * @iovcnt: their count
 *
 * Return: as rrecv().
 */
SRDMA_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	struct msghdr msg = { .msg_iov = (struct iovec *)iov,
			      .msg_iovlen = (size_t)iovcnt };

	if (iovcnt < 0)
		return rs_fail(EINVAL);
	return rrecvmsg(socket, &msg, 0);
}

/**
 * rwritev() - gather write.
 * @socket: the rsocket
 * @iov: buffers
 * @iovcnt: their count
 *
 * Return: as rsend().
 */
SRDMA_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	struct msghdr msg = { .msg_iov = (struct iovec *)iov,
			      .msg_iovlen = (size_t)iovcnt };

	if (iovcnt < 0)
		return rs_fail(EINVAL);
	return rsendmsg(socket, &msg, 0);
}

/**
 * rsendmsg() - gather send; no control messages.
 * @socket: the rsocket
 * @msg: the message (msg_name is used by datagram sockets)
 * @flags: as rsend()
 *
 * Return: as rsend().
 */
SRDMA_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	struct rsock *rs;
	ssize_t ret;

	if (!msg)
		return rs_fail(EFAULT);
	rs = rs_lock_fd(socket);
	if (!rs)
		return -1;
	if (rs->type == RS_DGRAM) {
		/* One datagram: gather into a bounce buffer. */
		ssize_t total = iov_total(msg->msg_iov, (int)msg->msg_iovlen);
		uint8_t *b;
		size_t off = 0, i;

		pthread_mutex_unlock(&rs->lock);
		if (total < 0) {
			srdma_rs_put(rs);
			return rs_fail(EINVAL);
		}
		b = malloc(total ? (size_t)total : 1);
		if (!b) {
			srdma_rs_put(rs);
			return rs_fail(ENOMEM);
		}
		for (i = 0; i < msg->msg_iovlen; i++) {
			memcpy(b + off, msg->msg_iov[i].iov_base,
			       msg->msg_iov[i].iov_len);
			off += msg->msg_iov[i].iov_len;
		}
		ret = srdma_rsd_sendto(rs, b, off, flags, msg->msg_name,
				       msg->msg_namelen);
		free(b);
		srdma_rs_put(rs);
		return ret;
	}
	return rs_done(rs, stream_iov(rs, msg->msg_iov, (int)msg->msg_iovlen,
				      flags, true));
}

/**
 * rrecvmsg() - scatter receive; no control messages.
 * @socket: the rsocket
 * @msg: the message (msg_name gets the peer's address)
 * @flags: as rrecv()
 *
 * Return: as rrecv().
 */
SRDMA_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	struct rsock *rs;
	ssize_t ret;

	if (!msg)
		return rs_fail(EFAULT);
	rs = rs_lock_fd(socket);
	if (!rs)
		return -1;
	msg->msg_controllen = 0;
	msg->msg_flags = 0;
	if (rs->type == RS_DGRAM) {
		ssize_t total = iov_total(msg->msg_iov, (int)msg->msg_iovlen);
		uint8_t *b;
		size_t off = 0, i;

		pthread_mutex_unlock(&rs->lock);
		if (total < 0) {
			srdma_rs_put(rs);
			return rs_fail(EINVAL);
		}
		b = malloc(total ? (size_t)total : 1);
		if (!b) {
			srdma_rs_put(rs);
			return rs_fail(ENOMEM);
		}
		ret = srdma_rsd_recvfrom(rs, b, (size_t)total, flags,
					 msg->msg_name, &msg->msg_namelen);
		for (i = 0; ret > 0 && i < msg->msg_iovlen &&
			    off < (size_t)ret; i++) {
			size_t n = msg->msg_iov[i].iov_len;

			if (n > (size_t)ret - off)
				n = (size_t)ret - off;
			memcpy(msg->msg_iov[i].iov_base, b + off, n);
			off += n;
		}
		free(b);
		srdma_rs_put(rs);
		return ret;
	}
	ret = stream_iov(rs, msg->msg_iov, (int)msg->msg_iovlen, flags, false);
	if (ret >= 0 && msg->msg_name)
		copy_addr(rdma_get_peer_addr(to_st(rs)->id), msg->msg_name,
			  &msg->msg_namelen);
	return rs_done(rs, ret);
}

/* ---- Addresses, options, fcntl --------------------------------------- */

/**
 * rgetpeername() - the connected peer's address.
 * @socket: the rsocket
 * @addr: buffer
 * @addrlen: in/out
 *
 * Return: 0, or -1 with errno (ENOTCONN).
 */
SRDMA_EXPORT int rgetpeername(int socket, struct sockaddr *addr,
			      socklen_t *addrlen)
{
	struct rsock *rs = rs_lock_fd(socket);
	int ret;

	if (!rs)
		return -1;
	if (!addr || !addrlen)
		return (int)rs_done(rs, -EFAULT);
	if (rs->type == RS_DGRAM) {
		pthread_mutex_unlock(&rs->lock);
		ret = srdma_rsd_getpeername(rs, addr, addrlen);
		srdma_rs_put(rs);
		return ret;
	}
	if (to_st(rs)->state != RSS_CONNECTED)
		return (int)rs_done(rs, -ENOTCONN);
	copy_addr(rdma_get_peer_addr(to_st(rs)->id), addr, addrlen);
	return (int)rs_done(rs, 0);
}

/**
 * rgetsockname() - the local address.
 * @socket: the rsocket
 * @addr: buffer
 * @addrlen: in/out
 *
 * Return: 0, or -1 with errno.
 */
SRDMA_EXPORT int rgetsockname(int socket, struct sockaddr *addr,
			      socklen_t *addrlen)
{
	struct rsock *rs = rs_lock_fd(socket);
	struct sockaddr_storage any;
	struct sockaddr *sa;
	int ret;

	if (!rs)
		return -1;
	if (!addr || !addrlen)
		return (int)rs_done(rs, -EFAULT);
	if (rs->type == RS_DGRAM) {
		pthread_mutex_unlock(&rs->lock);
		ret = srdma_rsd_getsockname(rs, addr, addrlen);
		srdma_rs_put(rs);
		return ret;
	}
	sa = rdma_get_local_addr(to_st(rs)->id);
	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) {
		memset(&any, 0, sizeof(any));
		any.ss_family = (sa_family_t)rs->domain;
		sa = (struct sockaddr *)&any;
	}
	copy_addr(sa, addr, addrlen);
	return (int)rs_done(rs, 0);
}

static int opt_int(const void *val, socklen_t len, int *out)
{
	if (!val)
		return -EFAULT;
	if (len < sizeof(int))
		return -EINVAL;
	memcpy(out, val, sizeof(int));
	return 0;
}

/**
 * rsetsockopt() - set an option.
 * @socket: the rsocket
 * @level: SOL_SOCKET, IPPROTO_TCP or SOL_RDMA
 * @optname: SO_REUSEADDR, SO_KEEPALIVE, SO_RCVBUF, SO_SNDBUF, SO_LINGER;
 *	     TCP_NODELAY, TCP_MAXSEG, TCP_KEEPIDLE; RDMA_SQSIZE,
 *	     RDMA_RQSIZE, RDMA_INLINE, RDMA_IOMAPSIZE, RDMA_ROUTE
 * @optval: value
 * @optlen: its length
 *
 * Buffer sizes and queue depths apply to connections made afterwards.
 *
 * Return: 0, or -1 with errno (ENOPROTOOPT for unknown options).
 */
SRDMA_EXPORT int rsetsockopt(int socket, int level, int optname,
			     const void *optval, socklen_t optlen)
{
	struct rsock *rs = rs_lock_fd(socket);
	int v = 0, ret = 0;

	if (!rs)
		return -1;
	if (level == SOL_SOCKET && optname == SO_LINGER) {
		if (!optval)
			return (int)rs_done(rs, -EFAULT);
		if (optlen < sizeof(struct linger))
			return (int)rs_done(rs, -EINVAL);
		memcpy(&rs->opt_linger, optval, sizeof(struct linger));
		return (int)rs_done(rs, 0);
	}
	if (level == SOL_RDMA && optname == RDMA_ROUTE) {
		if (!optval || !optlen)
			return (int)rs_done(rs, -EINVAL);
		return (int)rs_done(rs, 0);	/* no path records here */
	}
	ret = opt_int(optval, optlen, &v);
	if (ret)
		return (int)rs_done(rs, ret);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
			rs->opt_reuseaddr = !!v;
			break;
		case SO_KEEPALIVE:
			rs->opt_keepalive = !!v;
			break;
		case SO_RCVBUF:
			rs->opt_rcvbuf = v > 0 ? v : 1;
			break;
		case SO_SNDBUF:
			rs->opt_sndbuf = v > 0 ? v : 1;
			break;
		default:
			ret = -ENOPROTOOPT;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			rs->opt_nodelay = !!v;
			break;
		case TCP_MAXSEG:
			if (v <= 0)
				ret = -EINVAL;
			else
				rs->opt_maxseg = v;
			break;
		case TCP_KEEPIDLE:
			if (v <= 0)
				ret = -EINVAL;
			else
				rs->opt_keepidle = v;
			break;
		default:
			ret = -ENOPROTOOPT;
		}
		break;
	case SOL_RDMA:
		if (v < 0) {
			ret = -EINVAL;
			break;
		}
		switch (optname) {
		case RDMA_SQSIZE:
			rs->opt_sqsize = v > RS_MAX_BUFS ? RS_MAX_BUFS :
							   (uint32_t)v;
			break;
		case RDMA_RQSIZE:
			rs->opt_rqsize = v > RS_MAX_BUFS ? RS_MAX_BUFS :
							   (uint32_t)v;
			break;
		case RDMA_INLINE:
			rs->opt_inline = (uint32_t)v;
			break;
		case RDMA_IOMAPSIZE:
			rs->opt_iomapsize = (uint32_t)v;
			break;
		default:
			ret = -ENOPROTOOPT;
		}
		break;
	default:
		ret = -ENOPROTOOPT;
	}
	return (int)rs_done(rs, ret);
}

/**
 * rgetsockopt() - read an option.
 * @socket: the rsocket
 * @level: as rsetsockopt(); also SO_ERROR and SO_TYPE
 * @optname: option
 * @optval: buffer
 * @optlen: in/out
 *
 * SO_ERROR returns and clears the pending error (a failed non-blocking
 * connect).
 *
 * Return: 0, or -1 with errno.
 */
SRDMA_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			     socklen_t *optlen)
{
	struct rsock *rs = rs_lock_fd(socket);
	int v = 0, ret = 0;

	if (!rs)
		return -1;
	if (!optval || !optlen)
		return (int)rs_done(rs, -EFAULT);
	if (level == SOL_SOCKET && optname == SO_LINGER) {
		socklen_t n = *optlen < sizeof(struct linger) ?
				      *optlen :
				      sizeof(struct linger);

		memcpy(optval, &rs->opt_linger, n);
		*optlen = n;
		return (int)rs_done(rs, 0);
	}
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
			v = rs->opt_reuseaddr;
			break;
		case SO_KEEPALIVE:
			v = rs->opt_keepalive;
			break;
		case SO_RCVBUF:
			v = rs->opt_rcvbuf;
			break;
		case SO_SNDBUF:
			v = rs->opt_sndbuf;
			break;
		case SO_TYPE:
			v = rs->type == RS_STREAM ? SOCK_STREAM : SOCK_DGRAM;
			break;
		case SO_ERROR:
			if (rs->type == RS_STREAM &&
			    to_st(rs)->state >= RSS_ADDR &&
			    to_st(rs)->state <= RSS_CONNECTING)
				connect_progress(rs, false);
			v = rs->so_error;
			rs->so_error = 0;
			break;
		default:
			ret = -ENOPROTOOPT;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			v = rs->opt_nodelay;
			break;
		case TCP_MAXSEG:
			v = rs->opt_maxseg;
			break;
		case TCP_KEEPIDLE:
			v = rs->opt_keepidle;
			break;
		default:
			ret = -ENOPROTOOPT;
		}
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			v = (int)(rs->opt_sqsize ? rs->opt_sqsize :
						   bufs_of(rs->opt_sndbuf));
			break;
		case RDMA_RQSIZE:
			v = (int)(rs->opt_rqsize ? rs->opt_rqsize :
						   bufs_of(rs->opt_rcvbuf));
			break;
		case RDMA_INLINE:
			v = (int)rs->opt_inline;
			break;
		case RDMA_IOMAPSIZE:
			v = (int)rs->opt_iomapsize;
			break;
		default:
			ret = -ENOPROTOOPT;
		}
		break;
	default:
		ret = -ENOPROTOOPT;
	}
	if (!ret) {
		socklen_t n = *optlen < sizeof(int) ? *optlen : sizeof(int);

		memcpy(optval, &v, n);
		*optlen = n;
	}
	return (int)rs_done(rs, ret);
}

/**
 * rfcntl() - F_GETFL / F_SETFL (O_NONBLOCK); F_GETFD / F_SETFD pass
 * through to the fd.
 * @socket: the rsocket
 * @cmd: the command
 *
 * Return: as fcntl(), or -1 with errno (EINVAL for other commands).
 */
SRDMA_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct rsock *rs = rs_lock_fd(socket);
	va_list ap;
	int arg = 0, ret = 0;

	if (!rs)
		return -1;
	va_start(ap, cmd);
	if (cmd == F_SETFL || cmd == F_SETFD)
		arg = va_arg(ap, int);
	va_end(ap);
	switch (cmd) {
	case F_GETFL:
		ret = O_RDWR | (rs->nonblock ? O_NONBLOCK : 0);
		break;
	case F_SETFL:
		rs->nonblock = (arg & O_NONBLOCK) != 0;
		break;
	case F_GETFD:
	case F_SETFD:
		ret = cmd == F_GETFD ? fcntl(rs->fd, F_GETFD) :
				       fcntl(rs->fd, F_SETFD, arg);
		if (ret < 0)
			ret = -errno;
		break;
	default:
		ret = -EINVAL;
	}
	return (int)rs_done(rs, ret);
}

/* ---- riomap / riowrite ------------------------------------------------ */

/**
 * riomap() - let the peer write into @buf with riowrite().
 * @socket: a connected stream rsocket
 * @buf: the buffer
 * @len: its length
 * @prot: PROT_WRITE (the only direction rsockets offer)
 * @flags: 0
 * @offset: where the peer addresses it, or -1 to pick one
 *
 * Return: the offset, or -1 with errno.
 */
SRDMA_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot,
			  int flags, off_t offset)
{
	struct rsock *rs = rs_lock_fd(socket);
	struct rs_iomap_msg msg;
	struct rs_stream *st;
	struct rs_iomap *m;
	int ret;

	if (!rs)
		return -1;
	if (rs->type != RS_STREAM)
		return (off_t)rs_done(rs, -EOPNOTSUPP);
	st = to_st(rs);
	if (!buf || !len || prot != PROT_WRITE || flags || offset < -1)
		return (off_t)rs_done(rs, -EINVAL);
	if (st->state != RSS_CONNECTED)
		return (off_t)rs_done(rs, -ENOTCONN);
	if (offset == -1) {
		offset = 0;
		for (m = st->lmaps; m; m = m->next)
			if ((off_t)(m->offset + m->len) > offset)
				offset = (off_t)(m->offset + m->len);
	}
	for (m = st->lmaps; m; m = m->next)
		if ((uint64_t)offset < m->offset + m->len &&
		    m->offset < (uint64_t)offset + len)
			return (off_t)rs_done(rs, -EADDRINUSE);
	m = calloc(1, sizeof(*m));
	if (!m)
		return (off_t)rs_done(rs, -ENOMEM);
	m->mr = ibv_reg_mr(st->pd, buf, len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!m->mr) {
		ret = -errno;
		free(m);
		return (off_t)rs_done(rs, ret);
	}
	m->offset = (uint64_t)offset;
	m->len = len;
	m->addr = (uintptr_t)buf;
	msg.offset = htobe64(m->offset);
	msg.addr = htobe64(m->addr);
	msg.len = htobe64(m->len);
	msg.rkey = htonl(m->mr->rkey);
	msg.reserved = 0;
	progress(rs);
	while (!can_send_data(st) && !st->disconnected && !st->qp_err) {
		ret = rs_wait(rs, 0);
		if (ret)
			goto fail;
	}
	if (st->disconnected || st->qp_err) {
		ret = -ECONNRESET;
		goto fail;
	}
	ret = post_msg(st, RS_OP_IOMAP, &msg, sizeof(msg));
	if (ret)
		goto fail;
	m->next = st->lmaps;
	st->lmaps = m;
	return (off_t)rs_done(rs, (ssize_t)offset);
fail:
	ibv_dereg_mr(m->mr);
	free(m);
	return (off_t)rs_done(rs, ret);
}

/**
 * riounmap() - end a mapping made by riomap().
 * @socket: the rsocket
 * @buf: the buffer given to riomap
 * @len: its length
 *
 * Return: 0, or -1 with errno (EINVAL if no such mapping).
 */
SRDMA_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsock *rs = rs_lock_fd(socket);
	struct rs_iomap_msg msg = { 0 };
	struct rs_iomap *m, **pp;
	struct rs_stream *st;

	if (!rs)
		return -1;
	if (rs->type != RS_STREAM)
		return (int)rs_done(rs, -EOPNOTSUPP);
	st = to_st(rs);
	for (pp = &st->lmaps; *pp; pp = &(*pp)->next)
		if ((*pp)->addr == (uintptr_t)buf && (*pp)->len == len)
			break;
	if (!*pp)
		return (int)rs_done(rs, -EINVAL);
	m = *pp;
	*pp = m->next;
	msg.offset = htobe64(m->offset);
	progress(rs);
	if (st->state == RSS_CONNECTED && can_send_data(st))
		post_msg(st, RS_OP_IOUNMAP, &msg, sizeof(msg));
	ibv_dereg_mr(m->mr);
	free(m);
	return (int)rs_done(rs, 0);
}

/* Post one RDMA WRITE of @len bytes (copied into a slot) to @raddr. */
static int post_write(struct rs_stream *st, const void *src, uint32_t len,
		      uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	uint32_t slot = st->free_slots[--st->n_free];
	int ret;

	memcpy(st->sbuf + (size_t)slot * RS_BUF_SIZE, src, len);
	sge.addr = (uintptr_t)(st->sbuf + (size_t)slot * RS_BUF_SIZE);
	sge.length = len;
	sge.lkey = st->smr->lkey;
	wr.wr_id = RS_WR_SLOT | slot;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	ret = ibv_post_send(st->id->qp, &wr, &bad);
	if (ret) {
		st->free_slots[st->n_free++] = slot;
		st->qp_err = true;
		return -ret;
	}
	st->sq_busy++;
	return 0;
}

/**
 * riowrite() - write into the peer's riomap()ed memory.
 * @socket: a connected stream rsocket
 * @buf: data
 * @count: its length
 * @offset: where in the peer's mapping space
 * @flags: MSG_DONTWAIT
 *
 * The data is copied before the call returns; it lands in order with
 * everything else sent on the socket.
 *
 * Return: bytes written, or (size_t)-1 with errno (EINVAL: the range is
 * not inside one of the peer's mappings).
 */
SRDMA_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
			     off_t offset, int flags)
{
	struct rsock *rs = rs_lock_fd(socket);
	struct rs_stream *st;
	struct rs_iomap *m;
	bool napped = false;
	size_t done = 0;
	ssize_t ret;

	if (!rs)
		return (size_t)-1;
	if (rs->type != RS_STREAM)
		return (size_t)rs_done(rs, -EOPNOTSUPP);
	st = to_st(rs);
	if (st->state != RSS_CONNECTED)
		return (size_t)rs_done(rs, -ENOTCONN);
	if (!buf || offset < 0)
		return (size_t)rs_done(rs, -EINVAL);
	progress(rs);
	for (m = st->rmaps; m; m = m->next)
		if ((uint64_t)offset >= m->offset &&
		    (uint64_t)offset + count <= m->offset + m->len)
			break;
	if (!m)
		return (size_t)rs_done(rs, -EINVAL);
	while (done < count) {
		if (st->wr_shut || st->disconnected)
			return (size_t)rs_done(rs, done ? (ssize_t)done : -EPIPE);
		if (st->qp_err)
			return (size_t)rs_done(rs,
					       done ? (ssize_t)done : -ECONNRESET);
		if (st->n_free && st->sq_busy < st->sq_depth) {
			size_t chunk = count - done;

			if (chunk > RS_BUF_SIZE)
				chunk = RS_BUF_SIZE;
			ret = post_write(st, (const uint8_t *)buf + done,
					 (uint32_t)chunk,
					 m->addr + (uint64_t)offset + done -
						 m->offset,
					 m->rkey);
			if (ret)
				return (size_t)rs_done(rs, done ? (ssize_t)done :
								  ret);
			done += chunk;
			srdma_rs_idle_end(&rs->idle);
			continue;
		}
		progress(rs);
		if (st->n_free && st->sq_busy < st->sq_depth)
			continue;
		if (is_nonblock(rs, flags)) {
			if (done)
				return (size_t)rs_done(rs, (ssize_t)done);
			ret = rs_idle_nap(rs, &napped);
			if (ret)
				return (size_t)rs_done(rs, ret);
			continue;
		}
		ret = rs_wait(rs, 0);
		if (ret)
			return (size_t)rs_done(rs, done ? (ssize_t)done : ret);
	}
	return (size_t)rs_done(rs, (ssize_t)done);
}

/* ---- rpoll / rselect -------------------------------------------------- */

/* This thread's run of rpoll(timeout 0) calls that found nothing. */
static __thread struct rs_idle rpoll_idle;

/* Events of a stream socket now; lock held, progress made. */
static short stream_revents(struct rsock *rs, short events)
{
	struct rs_stream *st = to_st(rs);
	short rev = 0;

	switch (st->state) {
	case RSS_LISTENING: {
		struct pollfd p = { .fd = st->ch->fd, .events = POLLIN };

		if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
			rev |= POLLIN;
		break;
	}
	case RSS_ADDR:
	case RSS_ROUTE:
	case RSS_CONNECTING:
		if (connect_progress(rs, false) != -EINPROGRESS)
			return stream_revents(rs, events);
		break;
	case RSS_CONNECTED:
		progress_cm(rs);
		progress(rs);
		if (st->rx_count || eof(st))
			rev |= POLLIN;
		if (can_send_data(st) || st->wr_shut || st->disconnected ||
		    st->qp_err)
			rev |= POLLOUT;
		if (st->peer_fin)
			rev |= POLLRDHUP;
		/* As TCP: POLLHUP once nothing more can come or go. */
		if ((st->disconnected || st->qp_err) && !st->rx_count)
			rev |= POLLHUP;
		break;
	case RSS_FAILED:
		rev |= POLLOUT | POLLERR | POLLHUP;
		break;
	default:
		rev |= POLLOUT | POLLHUP;
		break;
	}
	return rev & (events | POLLERR | POLLHUP | POLLNVAL);
}

/* Events now for one entry of rpoll (rsocket or not: -1 = not ours). */
static int entry_revents(struct pollfd *p, struct rsock **rsp)
{
	struct rsock *rs = srdma_rs_get(p->fd);

	*rsp = rs;
	if (!rs)
		return -1;
	pthread_mutex_lock(&rs->lock);
	if (rs->closed || rs_inherited(rs))
		p->revents = POLLNVAL;
	else if (rs->type == RS_STREAM)
		p->revents = stream_revents(rs, p->events);
	else
		p->revents = srdma_rsd_revents(rs, p->events);
	pthread_mutex_unlock(&rs->lock);
	return p->revents != 0;
}

/**
 * rpoll() - poll() over rsockets and ordinary fds alike.
 * @fds: the set
 * @nfds: its size
 * @timeout: milliseconds, -1 forever
 *
 * Each round looks at every rsocket (making progress) and at the plain
 * fds without waiting; if nothing is ready it arms the sockets' CQs and
 * sleeps in poll() on their channels and the plain fds (no busy wait).
 *
 * Return: as poll().
 */
SRDMA_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *pfd;
	struct rsock **rss;
	int64_t deadline = timeout > 0 ? now_ns() + (int64_t)timeout * 1000000 :
					 0;
	bool napped = false;
	int ret;
	nfds_t i;

	if (nfds && !fds)
		return rs_fail(EFAULT);
	pfd = calloc(nfds * 2 + 1, sizeof(*pfd));
	rss = calloc(nfds + 1, sizeof(*rss));
	if (!pfd || !rss) {
		free(pfd);
		free(rss);
		return rs_fail(ENOMEM);
	}
	for (;;) {
		int ready = 0, n = 0, tmo, r;
		bool again = false, any_rs = false;

		for (i = 0; i < nfds; i++) {
			fds[i].revents = 0;
			rss[i] = NULL;
			if (fds[i].fd < 0)
				continue;
			r = entry_revents(&fds[i], &rss[i]);
			if (r > 0)
				ready++;
			if (r < 0) {	/* plain fd: look now */
				pfd[0] = fds[i];
				pfd[0].revents = 0;
				if (poll(pfd, 1, 0) > 0) {
					fds[i].revents = pfd[0].revents;
					ready++;
				}
			} else {
				any_rs = true;
			}
		}
		if (timeout > 0 && !ready && now_ns() >= deadline)
			timeout = 0;
		if (ready)
			srdma_rs_idle_end(&rpoll_idle);
		/*
		 * A caller spinning on rpoll(0) over rsockets naps once on
		 * their channels, as non-blocking calls do (rs_idle_nap).
		 */
		if (!ready && !timeout && any_rs && !napped &&
		    srdma_rs_idle_spinning(&rpoll_idle)) {
			napped = true;
		} else if (ready || !timeout || napped) {
			ret = ready;
			break;
		}
		/* Sleep set: plain fds as given, rsockets' channels. */
		for (i = 0; i < nfds && !again; i++) {
			struct rsock *rs = rss[i];

			if (fds[i].fd < 0)
				continue;
			if (!rs) {
				pfd[n] = fds[i];
				pfd[n++].revents = 0;
				continue;
			}
			pthread_mutex_lock(&rs->lock);
			if (rs->closed) {
				again = true;
			} else if (rs->type == RS_STREAM) {
				if (arm(rs))
					again = true;
				else
					n += stream_waitfds(rs, &pfd[n]);
			} else {
				int c = srdma_rsd_waitfds(rs, &pfd[n]);

				if (c < 0)
					again = true;
				else
					n += c;
			}
			pthread_mutex_unlock(&rs->lock);
		}
		if (!again) {
			tmo = any_rs ? RS_WAIT_CAP_MS : -1;
			if (napped)
				tmo = RS_IDLE_NAP_MS;
			if (timeout > 0) {
				int64_t left = (deadline - now_ns()) / 1000000;

				if (tmo < 0 || left + 1 < tmo)
					tmo = (int)left + 1;
			}
			r = poll(pfd, (nfds_t)n, tmo);
			if (r < 0) {
				ret = -1;
				break;
			}
			for (i = 0; r > 0 && i < nfds; i++) {
				struct rsock *rs = rss[i];

				if (!rs)
					continue;
				pthread_mutex_lock(&rs->lock);
				if (!rs->closed) {
					if (rs->type == RS_STREAM)
						stream_after_wait(rs);
					else
						srdma_rsd_after_wait(rs);
				}
				pthread_mutex_unlock(&rs->lock);
			}
		}
		for (i = 0; i < nfds; i++)
			if (rss[i])
				srdma_rs_put(rss[i]);
	}
	for (i = 0; i < nfds; i++)
		if (rss[i])
			srdma_rs_put(rss[i]);
	free(pfd);
	free(rss);
	return ret;
}

/**
 * rselect() - select() over rsockets and ordinary fds, through rpoll().
 * @nfds: highest fd + 1
 * @readfds: read set (in/out)
 * @writefds: write set (in/out)
 * @exceptfds: exception set (in/out)
 * @timeout: NULL for forever
 *
 * Return: as select().
 */
SRDMA_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
			 fd_set *exceptfds, struct timeval *timeout)
{
	struct pollfd *pfd;
	int i, n = 0, ret, tmo;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return rs_fail(EINVAL);
	pfd = calloc((size_t)nfds + 1, sizeof(*pfd));
	if (!pfd)
		return rs_fail(ENOMEM);
	for (i = 0; i < nfds; i++) {
		short ev = 0;

		if (readfds && FD_ISSET(i, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(i, writefds))
			ev |= POLLOUT;
		if (exceptfds && FD_ISSET(i, exceptfds))
			ev |= POLLPRI;
		if (!ev)
			continue;
		pfd[n].fd = i;
		pfd[n++].events = ev;
	}
	tmo = timeout ? (int)(timeout->tv_sec * 1000 +
			      (timeout->tv_usec + 999) / 1000) :
			-1;
	ret = rpoll(pfd, (nfds_t)n, tmo);
	if (ret < 0) {
		free(pfd);
		return -1;
	}
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	ret = 0;
	for (i = 0; i < n; i++) {
		short rev = pfd[i].revents;

		if (readfds && (rev & (POLLIN | POLLHUP | POLLERR)) &&
		    (pfd[i].events & POLLIN)) {
			FD_SET(pfd[i].fd, readfds);
			ret++;
		}
		if (writefds && (rev & (POLLOUT | POLLERR)) &&
		    (pfd[i].events & POLLOUT)) {
			FD_SET(pfd[i].fd, writefds);
			ret++;
		}
		if (exceptfds && (rev & POLLPRI) && (pfd[i].events & POLLPRI)) {
			FD_SET(pfd[i].fd, exceptfds);
			ret++;
		}
	}
	free(pfd);
	return ret;
}
