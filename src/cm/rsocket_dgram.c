// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rsocket_dgram.c - datagram rsockets: a UD QP named by a UDP socket.
 *
 * rsocket(AF_INET, SOCK_DGRAM) makes an ordinary UDP socket (straight from
 * the kernel, so an LD_PRELOADed socket() cannot intercept it); its fd is
 * the rsocket's fd and its address is the rsocket's name, so rbind,
 * rgetsockname and `ss -lun` behave as for UDP. Datagrams themselves go
 * over a UD QP of srdma0, one per socket, on a verbs context the process
 * opens once.
 *
 * Peers are found through the UDP sockets: before the first datagram to
 * an address, the sender sends it a resolve request (magic "RSDG", its
 * QPN, Q_Key, LID and GID) and waits for the reply carrying the same about
 * the peer (3 tries, 200 ms apart). Each side keeps what it learnt in a
 * small table, keyed by UDP address, with the address handle; a request
 * also teaches the receiver about the requester, so a server answers its
 * clients without resolving them, and a datagram's source QPN finds its
 * UDP address for rrecvfrom. Requests are answered whenever the socket's
 * owner calls into it (rrecvfrom, rsendto, rpoll), which is what a UDP
 * server does all day.
 *
 * Datagrams are copied through registered rings (receive buffers of MTU
 * plus the 40-byte GRH; send slots of MTU). A datagram larger than the
 * port's MTU is EMSGSIZE; with no receive buffer free a datagram is lost,
 * as with UDP. The wire protocol is our own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cm/rsocket_int.h"
#include "util/log.h"
#include "util/sys.h"

#define DG_MAGIC	0x52534447	/* "RSDG" */
#define DG_REQ		1
#define DG_REP		2
#define DG_RQ		256
#define DG_SQ		64
#define DG_GRH		40
#define DG_MAX_PEERS	256
#define DG_RESOLVE_TRIES 3
#define DG_RESOLVE_MS	200
#define DG_QKEY		0x01234567
#define DG_WR_RECV	(1ULL << 32)

/* Resolve request / reply on the UDP socket (big-endian). */
struct dg_ctl {
	uint32_t magic;
	uint32_t type;
	uint32_t qpn;
	uint32_t qkey;
	uint16_t lid;
	uint16_t reserved;
	uint8_t gid[16];
};

struct dg_peer {
	struct sockaddr_storage addr;
	socklen_t alen;
	uint32_t qpn, qkey;
	struct ibv_ah *ah;
};

/*
 * struct rs_dgram - the datagram part of an rsock (rsock.lock).
 */
struct rs_dgram {
	int udp;			/* == rsock.fd */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *rmr, *smr;
	uint8_t *rbuf, *sbuf;
	uint32_t buf_size;		/* MTU (+ GRH for receive buffers) */
	uint32_t mtu;
	uint16_t lid;
	union ibv_gid gid;
	bool roce;
	uint32_t rx_idx[DG_RQ], rx_len[DG_RQ], rx_src[DG_RQ];
	uint32_t rx_head, rx_count;
	uint32_t free_slots[DG_SQ], n_free;
	struct dg_peer peers[DG_MAX_PEERS];
	unsigned int n_peers;
	struct sockaddr_storage conn;	/* rconnect()ed peer */
	socklen_t conn_len;
	unsigned int cq_events;
};

static pthread_mutex_t dg_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_context *dg_ctx;	/* dg_ctx_lock; kept for the process */

static pthread_once_t dg_once = PTHREAD_ONCE_INIT;

/* A forked child opens its own context: the parent's is dead there. */
static void dg_atfork_child(void)
{
	pthread_mutex_init(&dg_ctx_lock, NULL);
	dg_ctx = NULL;
}

static void dg_init(void)
{
	pthread_atfork(NULL, NULL, dg_atfork_child);
}

static struct ibv_context *get_ctx(void)
{
	struct ibv_device **list;

	pthread_once(&dg_once, dg_init);
	pthread_mutex_lock(&dg_ctx_lock);
	if (!dg_ctx) {
		list = ibv_get_device_list(NULL);
		if (list && list[0])
			dg_ctx = ibv_open_device(list[0]);
		if (list)
			ibv_free_device_list(list);
	}
	pthread_mutex_unlock(&dg_ctx_lock);
	return dg_ctx;
}

static int fail(int e)
{
	errno = e;
	return -1;
}

static void destroy(struct rs_dgram *d)
{
	if (d->qp)
		ibv_destroy_qp(d->qp);
	for (unsigned int i = 0; i < d->n_peers; i++)
		if (d->peers[i].ah)
			ibv_destroy_ah(d->peers[i].ah);
	if (d->cq) {
		if (d->cq_events)
			ibv_ack_cq_events(d->cq, d->cq_events);
		ibv_destroy_cq(d->cq);
	}
	if (d->cc)
		ibv_destroy_comp_channel(d->cc);
	if (d->rmr)
		ibv_dereg_mr(d->rmr);
	if (d->smr)
		ibv_dereg_mr(d->smr);
	if (d->rbuf)
		munmap(d->rbuf, (size_t)DG_RQ * d->buf_size);
	if (d->sbuf)
		munmap(d->sbuf, (size_t)DG_SQ * d->buf_size);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	free(d);
}

static int post_recv(struct rs_dgram *d, uint32_t i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(d->rbuf + (size_t)i * d->buf_size),
		.length = d->buf_size,
		.lkey = d->rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = DG_WR_RECV | i, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(d->qp, &wr, &bad);
}

static int make_qp(struct rs_dgram *d, struct ibv_context *ctx)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp_attr a = { 0 };
	struct ibv_port_attr pa;
	uint32_t i;

	if (ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, 0, &d->gid))
		return -ENODEV;
	d->mtu = 128u << pa.active_mtu;
	d->lid = pa.lid;
	d->roce = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	d->buf_size = d->mtu + DG_GRH;
	d->pd = ibv_alloc_pd(ctx);
	d->cc = d->pd ? ibv_create_comp_channel(ctx) : NULL;
	if (!d->cc)
		return -ENOMEM;
	fcntl(d->cc->fd, F_SETFL, fcntl(d->cc->fd, F_GETFL) | O_NONBLOCK);
	d->cq = ibv_create_cq(ctx, DG_RQ + DG_SQ, d, d->cc, 0);
	d->rbuf = mmap(NULL, (size_t)DG_RQ * d->buf_size,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	d->sbuf = mmap(NULL, (size_t)DG_SQ * d->buf_size,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (d->rbuf == MAP_FAILED)
		d->rbuf = NULL;
	if (d->sbuf == MAP_FAILED)
		d->sbuf = NULL;
	if (!d->cq || !d->rbuf || !d->sbuf)
		return -ENOMEM;
	d->rmr = ibv_reg_mr(d->pd, d->rbuf, (size_t)DG_RQ * d->buf_size,
			    IBV_ACCESS_LOCAL_WRITE);
	d->smr = ibv_reg_mr(d->pd, d->sbuf, (size_t)DG_SQ * d->buf_size,
			    IBV_ACCESS_LOCAL_WRITE);
	if (!d->rmr || !d->smr)
		return -ENOMEM;
	qa.send_cq = qa.recv_cq = d->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = DG_SQ;
	qa.cap.max_recv_wr = DG_RQ;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	d->qp = ibv_create_qp(d->pd, &qa);
	if (!d->qp)
		return -errno;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = DG_QKEY;
	if (ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_QKEY))
		return -EIO;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(d->qp, &a, IBV_QP_STATE))
		return -EIO;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -EIO;
	for (i = 0; i < DG_RQ; i++)
		if (post_recv(d, i))
			return -EIO;
	for (i = 0; i < DG_SQ; i++)
		d->free_slots[i] = i;
	d->n_free = DG_SQ;
	ibv_req_notify_cq(d->cq, 0);
	return 0;
}

/**
 * srdma_rsd_create() - rsocket(domain, SOCK_DGRAM): UDP socket + UD QP.
 * @domain: AF_INET or AF_INET6
 * @type: SOCK_DGRAM with optional SOCK_NONBLOCK / SOCK_CLOEXEC
 *
 * Return: the fd, or -1 with errno.
 */
int srdma_rsd_create(int domain, int type)
{
	struct ibv_context *ctx = get_ctx();
	struct rs_dgram *d;
	struct rsock *rs;
	int fd, ret;

	if (!ctx)
		return fail(ENODEV);
	fd = srdma_socket(domain,
			  SOCK_DGRAM | SOCK_NONBLOCK | (type & SOCK_CLOEXEC),
			  0);
	if (fd < 0)
		return -1;
	d = calloc(1, sizeof(*d));
	if (!d) {
		close(fd);
		return fail(ENOMEM);
	}
	d->udp = fd;
	ret = make_qp(d, ctx);
	if (ret) {
		destroy(d);
		close(fd);
		return fail(-ret);
	}
	rs = srdma_rs_alloc(fd, RS_DGRAM, domain);
	if (!rs) {
		destroy(d);
		close(fd);
		return fail(ENOMEM);
	}
	rs->dgram = d;
	rs->nonblock = (type & SOCK_NONBLOCK) != 0;
	ret = srdma_rs_insert(rs);
	if (ret) {
		destroy(d);
		close(fd);
		srdma_rs_put(rs);
		return fail(-ret);
	}
	srdma_rs_put(rs);
	return fd;
}

static bool same_addr(const struct sockaddr_storage *a, socklen_t alen,
		      const struct sockaddr *b, socklen_t blen)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a;
		const struct sockaddr_in *y = (const void *)b;

		return blen >= sizeof(*y) && x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (b->sa_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)a;
		const struct sockaddr_in6 *y = (const void *)b;

		return blen >= sizeof(*y) && x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr,
			       sizeof(y->sin6_addr));
	}
	(void)alen;
	return false;
}

static struct dg_peer *find_peer(struct rs_dgram *d, const struct sockaddr *sa,
				 socklen_t len)
{
	for (unsigned int i = 0; i < d->n_peers; i++)
		if (same_addr(&d->peers[i].addr, d->peers[i].alen, sa, len))
			return &d->peers[i];
	return NULL;
}

/* Learn (or refresh) a peer from a resolve message. */
static void learn(struct rs_dgram *d, const struct sockaddr *sa,
		  socklen_t len, const struct dg_ctl *c)
{
	struct dg_peer *p = find_peer(d, sa, len);
	struct ibv_ah_attr ah = { 0 };
	struct ibv_ah *nah;

	ah.dlid = ntohs(c->lid);
	ah.port_num = 1;
	if (d->roce) {
		ah.is_global = 1;
		memcpy(ah.grh.dgid.raw, c->gid, 16);
		ah.grh.hop_limit = 64;
	}
	nah = ibv_create_ah(d->pd, &ah);
	if (!nah)
		return;
	if (!p) {
		if (d->n_peers == DG_MAX_PEERS) {
			/* Full: forget the oldest. */
			ibv_destroy_ah(d->peers[0].ah);
			memmove(&d->peers[0], &d->peers[1],
				(DG_MAX_PEERS - 1) * sizeof(d->peers[0]));
			d->n_peers--;
		}
		p = &d->peers[d->n_peers++];
		memset(p, 0, sizeof(*p));
		memcpy(&p->addr, sa, len < sizeof(p->addr) ? len :
							      sizeof(p->addr));
		p->alen = len;
	} else if (p->ah) {
		ibv_destroy_ah(p->ah);
	}
	p->ah = nah;
	p->qpn = ntohl(c->qpn);
	p->qkey = ntohl(c->qkey);
}

static void fill_ctl(struct rs_dgram *d, struct dg_ctl *c, uint32_t type)
{
	memset(c, 0, sizeof(*c));
	c->magic = htonl(DG_MAGIC);
	c->type = htonl(type);
	c->qpn = htonl(d->qp->qp_num);
	c->qkey = htonl(DG_QKEY);
	c->lid = htons(d->lid);
	memcpy(c->gid, d->gid.raw, 16);
}

/* Answer resolve requests and take replies waiting on the UDP socket. */
static void serve_udp(struct rs_dgram *d)
{
	for (;;) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		struct dg_ctl c, r;
		ssize_t n = recvfrom(d->udp, &c, sizeof(c), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &flen);

		if (n < 0)
			return;
		if (n != sizeof(c) || ntohl(c.magic) != DG_MAGIC)
			continue;
		learn(d, (struct sockaddr *)&from, flen, &c);
		if (ntohl(c.type) == DG_REQ) {
			fill_ctl(d, &r, DG_REP);
			sendto(d->udp, &r, sizeof(r), MSG_DONTWAIT,
			       (struct sockaddr *)&from, flen);
		}
	}
}

static void progress(struct rs_dgram *d)
{
	struct ibv_wc wc[16];
	int n, i;

	serve_udp(d);
	do {
		n = ibv_poll_cq(d->cq, 16, wc);
		for (i = 0; i < n; i++) {
			uint32_t idx = (uint32_t)wc[i].wr_id;

			if (!(wc[i].wr_id & DG_WR_RECV)) {
				d->free_slots[d->n_free++] = idx;
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].byte_len < DG_GRH) {
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					post_recv(d, idx);
				continue;
			}
			{
				uint32_t k = (d->rx_head + d->rx_count) % DG_RQ;

				d->rx_idx[k] = idx;
				d->rx_len[k] = wc[i].byte_len - DG_GRH;
				d->rx_src[k] = wc[i].src_qp;
				d->rx_count++;
			}
		}
	} while (n > 0);
}

static void drain_cc(struct rs_dgram *d)
{
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(d->cc, &cq, &ctx))
		d->cq_events++;
	if (d->cq_events) {
		ibv_ack_cq_events(d->cq, d->cq_events);
		d->cq_events = 0;
	}
}

/* Sleep until the UDP socket or the CQ has news (lock dropped). */
static int wait_dg(struct rsock *rs, int tmo_ms)
{
	struct rs_dgram *d = rs->dgram;
	uint32_t rx = d->rx_count, nf = d->n_free;
	unsigned int np = d->n_peers;
	struct pollfd p[2];

	ibv_req_notify_cq(d->cq, 0);
	progress(d);	/* what came before the arming */
	if (d->rx_count != rx || d->n_free != nf || d->n_peers != np)
		return 0;
	p[0].fd = d->udp;
	p[0].events = POLLIN;
	p[1].fd = d->cc->fd;
	p[1].events = POLLIN;
	pthread_mutex_unlock(&rs->lock);
	if (poll(p, 2, tmo_ms) < 0 && errno == EINTR) {
		pthread_mutex_lock(&rs->lock);
		return -EINTR;
	}
	pthread_mutex_lock(&rs->lock);
	if (rs->closed)
		return -EBADF;
	drain_cc(d);
	progress(d);
	return 0;
}

/*
 * A non-blocking call found nothing (lock held): EAGAIN, unless the calls
 * are a spin (srdma_rs_idle_spinning), in which case the first time in
 * this call it naps on the channels, RS_IDLE_NAP_MS at most, and returns
 * 0 to look once more (rsocket.c's rs_idle_nap says why). Positive errno.
 */
static int nap(struct rsock *rs, bool *napped)
{
	int err;

	if (*napped || !srdma_rs_idle_spinning(&rs->idle))
		return EAGAIN;
	*napped = true;
	err = -wait_dg(rs, RS_IDLE_NAP_MS);
	return err == EINTR ? EAGAIN : err;
}

static struct dg_peer *resolve(struct rsock *rs, const struct sockaddr *to,
			       socklen_t tolen, int *err)
{
	struct rs_dgram *d = rs->dgram;
	struct dg_peer *p;
	struct dg_ctl c;
	int t;

	progress(d);
	p = find_peer(d, to, tolen);
	for (t = 0; !p && t < DG_RESOLVE_TRIES; t++) {
		struct timespec ts0, ts;
		long el = 0;

		fill_ctl(d, &c, DG_REQ);
		if (sendto(d->udp, &c, sizeof(c), 0, to, tolen) < 0) {
			*err = errno;
			return NULL;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts0);
		while (!p && el < DG_RESOLVE_MS) {
			*err = -wait_dg(rs, (int)(DG_RESOLVE_MS - el));
			if (*err)
				return NULL;
			p = find_peer(d, to, tolen);
			clock_gettime(CLOCK_MONOTONIC, &ts);
			el = (ts.tv_sec - ts0.tv_sec) * 1000 +
			     (ts.tv_nsec - ts0.tv_nsec) / 1000000;
		}
	}
	if (!p)
		*err = EHOSTUNREACH;
	return p;
}

/**
 * srdma_rsd_sendto() - send one datagram.
 * @rs: the datagram rsocket (unlocked, referenced)
 * @buf: data
 * @len: its length (at most the port MTU)
 * @flags: MSG_DONTWAIT
 * @to: destination, or NULL for the rconnect()ed peer
 * @tolen: its length
 *
 * Return: @len, or -1 with errno (EMSGSIZE, EDESTADDRREQ, EHOSTUNREACH
 * when the destination does not answer as an rsocket, EAGAIN).
 */
ssize_t srdma_rsd_sendto(struct rsock *rs, const void *buf, size_t len,
			 int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct rs_dgram *d;
	struct dg_peer *p;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { 0 }, *bad;
	bool napped = false;
	uint32_t slot;
	int err = 0;

	pthread_mutex_lock(&rs->lock);
	d = rs->dgram;
	if (rs->closed || !d) {
		err = EBADF;
		goto out;
	}
	if (!to) {
		if (!d->conn_len) {
			err = EDESTADDRREQ;
			goto out;
		}
		to = (const struct sockaddr *)&d->conn;
		tolen = d->conn_len;
	}
	if (len > d->mtu) {
		err = EMSGSIZE;
		goto out;
	}
	if (len && !buf) {
		err = EFAULT;
		goto out;
	}
	p = resolve(rs, to, tolen, &err);
	if (!p)
		goto out;
	while (!d->n_free) {
		progress(d);
		if (d->n_free)
			break;
		if (rs->nonblock || (flags & MSG_DONTWAIT)) {
			err = nap(rs, &napped);
			if (err)
				goto out;
			continue;
		}
		err = -wait_dg(rs, 100);
		if (err)
			goto out;
	}
	srdma_rs_idle_end(&rs->idle);
	slot = d->free_slots[--d->n_free];
	memcpy(d->sbuf + (size_t)slot * d->buf_size, buf, len);
	sge.addr = (uintptr_t)(d->sbuf + (size_t)slot * d->buf_size);
	sge.length = (uint32_t)len;
	sge.lkey = d->smr->lkey;
	wr.wr_id = slot;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.ud.ah = p->ah;
	wr.wr.ud.remote_qpn = p->qpn;
	wr.wr.ud.remote_qkey = p->qkey;
	err = ibv_post_send(d->qp, &wr, &bad);
	if (err)
		d->free_slots[d->n_free++] = slot;
out:
	pthread_mutex_unlock(&rs->lock);
	if (err)
		return fail(err);
	return (ssize_t)len;
}

/**
 * srdma_rsd_recvfrom() - receive one datagram.
 * @rs: the datagram rsocket (unlocked, referenced)
 * @buf: buffer (a longer datagram is truncated)
 * @len: its size
 * @flags: MSG_DONTWAIT, MSG_PEEK
 * @from: filled with the sender's address (may be NULL)
 * @fromlen: in/out
 *
 * Return: the bytes copied, or -1 with errno.
 */
ssize_t srdma_rsd_recvfrom(struct rsock *rs, void *buf, size_t len, int flags,
			   struct sockaddr *from, socklen_t *fromlen)
{
	struct rs_dgram *d;
	bool napped = false;
	ssize_t ret;
	int err = 0;

	pthread_mutex_lock(&rs->lock);
	d = rs->dgram;
	if (rs->closed || !d) {
		err = EBADF;
		goto out;
	}
	for (;;) {
		progress(d);
		if (d->rx_count)
			break;
		if (rs->nonblock || (flags & MSG_DONTWAIT)) {
			err = nap(rs, &napped);
			if (err)
				goto out;
			continue;
		}
		err = -wait_dg(rs, 100);
		if (err)
			goto out;
	}
	srdma_rs_idle_end(&rs->idle);
	{
		uint32_t k = d->rx_head, i = d->rx_idx[k];
		size_t n = d->rx_len[k] < len ? d->rx_len[k] : len;

		if (n && buf)
			memcpy(buf, d->rbuf + (size_t)i * d->buf_size + DG_GRH,
			       n);
		ret = (ssize_t)n;
		if (from && fromlen) {
			struct dg_peer *p = NULL;

			for (unsigned int j = 0; j < d->n_peers; j++)
				if (d->peers[j].qpn == d->rx_src[k])
					p = &d->peers[j];
			if (p) {
				socklen_t l = *fromlen < p->alen ? *fromlen :
								   p->alen;

				memcpy(from, &p->addr, l);
				*fromlen = p->alen;
			} else {
				*fromlen = 0;
			}
		}
		if (!(flags & MSG_PEEK)) {
			d->rx_head = (d->rx_head + 1) % DG_RQ;
			d->rx_count--;
			post_recv(d, i);
		}
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
out:
	pthread_mutex_unlock(&rs->lock);
	return fail(err);
}

/**
 * srdma_rsd_bind() - bind the datagram rsocket's UDP socket.
 * @rs: the rsocket (unlocked, referenced)
 * @addr: address
 * @len: its length
 *
 * Return: 0, or -1 with errno.
 */
int srdma_rsd_bind(struct rsock *rs, const struct sockaddr *addr,
		   socklen_t len)
{
	return bind(rs->fd, addr, len);
}

/**
 * srdma_rsd_connect() - set the default peer and resolve it.
 * @rs: the rsocket (unlocked, referenced)
 * @addr: the peer's address
 * @len: its length
 *
 * Return: 0, or -1 with errno (EHOSTUNREACH if no rsocket answers there).
 */
int srdma_rsd_connect(struct rsock *rs, const struct sockaddr *addr,
		      socklen_t len)
{
	struct rs_dgram *d;
	int err = 0;

	if (!addr || len < sizeof(sa_family_t) ||
	    len > sizeof(struct sockaddr_storage))
		return fail(EINVAL);
	pthread_mutex_lock(&rs->lock);
	d = rs->dgram;
	memcpy(&d->conn, addr, len);
	d->conn_len = len;
	if (!resolve(rs, addr, len, &err)) {
		d->conn_len = 0;
		pthread_mutex_unlock(&rs->lock);
		return fail(err);
	}
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

/**
 * srdma_rsd_getsockname() - the UDP socket's name.
 * @rs: the rsocket
 * @addr: buffer
 * @len: in/out
 *
 * Return: 0, or -1 with errno.
 */
int srdma_rsd_getsockname(struct rsock *rs, struct sockaddr *addr,
			  socklen_t *len)
{
	return getsockname(rs->fd, addr, len);
}

/**
 * srdma_rsd_getpeername() - the rconnect()ed peer.
 * @rs: the rsocket
 * @addr: buffer
 * @len: in/out
 *
 * Return: 0, or -1 with errno ENOTCONN.
 */
int srdma_rsd_getpeername(struct rsock *rs, struct sockaddr *addr,
			  socklen_t *len)
{
	struct rs_dgram *d;
	int ret = 0;

	pthread_mutex_lock(&rs->lock);
	d = rs->dgram;
	if (!d || !d->conn_len) {
		ret = fail(ENOTCONN);
	} else {
		memcpy(addr, &d->conn, *len < d->conn_len ? *len : d->conn_len);
		*len = d->conn_len;
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/**
 * srdma_rsd_close() - free a datagram rsocket's resources (lock held).
 * @rs: the rsocket
 */
void srdma_rsd_close(struct rsock *rs)
{
	struct rs_dgram *d = rs->dgram;

	if (!d)
		return;
	rs->dgram = NULL;
	destroy(d);
	close(rs->fd);
}

/**
 * srdma_rsd_revents() - poll events ready now (lock held).
 * @rs: the rsocket
 * @events: requested events
 *
 * Return: the ready events among @events (plus POLLERR/POLLHUP).
 */
short srdma_rsd_revents(struct rsock *rs, short events)
{
	struct rs_dgram *d = rs->dgram;
	short rev = 0;

	if (!d)
		return POLLNVAL;
	progress(d);
	if (d->rx_count)
		rev |= POLLIN;
	if (d->n_free)
		rev |= POLLOUT;
	return rev & events;
}

/**
 * srdma_rsd_waitfds() - arm the CQ and give the fds to sleep on.
 * @rs: the rsocket (lock held)
 * @pfd: room for 2 entries
 *
 * Return: the number of entries filled, or -1 when data arrived meanwhile
 * (do not sleep).
 */
int srdma_rsd_waitfds(struct rsock *rs, struct pollfd *pfd)
{
	struct rs_dgram *d = rs->dgram;

	if (!d)
		return 0;
	ibv_req_notify_cq(d->cq, 0);
	progress(d);	/* what came before the arming */
	if (d->rx_count)
		return -1;
	pfd[0].fd = d->udp;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	pfd[1].fd = d->cc->fd;
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	return 2;
}

/**
 * srdma_rsd_after_wait() - take the wake-ups rpoll slept on (lock held).
 * @rs: the rsocket
 */
void srdma_rsd_after_wait(struct rsock *rs)
{
	if (rs->dgram) {
		drain_cc(rs->dgram);
		progress(rs->dgram);
	}
}
