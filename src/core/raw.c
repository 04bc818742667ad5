// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * raw.c - raw packet QPs, receive work queues, indirection tables, RSS
 * QPs and flow steering on an Ethernet port (mlx5's semantics).
 *
 * A raw packet QP sends whole Ethernet frames and receives the frames
 * that flows steer to it; with no flow it receives nothing (mlx5's
 * default drop). A receive work queue (ibv_wq) is a hidden receive-only
 * raw packet QP whose QPN is the WQ number; an RSS QP owns no queue of its
 * own but an indirection table of WQs, and a frame its flow steers to it
 * lands in the WQ the Toeplitz hash of the configured fields picks.
 *
 * Flows live in one host-wide table, SRDMA_DIR/flows, mapped shared by
 * every process of the user (as the registry is), so a frame sent by any
 * process of the host reaches the raw QPs of every other. Each slot holds
 * a flow in a canonical form: the header fields any spec can name, as
 * value and mask, plus the protocols the specs require; an RSS flow also
 * holds its hash key, fields and the WQ numbers of its table (tables are
 * immutable, so the copy cannot go stale). Writers (create, destroy, reap
 * of dead owners) take flock(LOCK_EX), readers (routing one frame)
 * LOCK_SH; the kernel drops a dead holder's lock. Threads of one process
 * share the file description, on which flock does not exclude, so an
 * in-process rwlock is taken first. Slots of dead processes (pid + start
 * time) are reclaimed by the next writer, and a route carries the owner's
 * identity so a reused LID is never delivered to.
 *
 * Not here: moving the bytes (engine/requester.c runs the responder's
 * receive-queue rules on each destination). Design:
 * docs/design/raw-packet.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/raw.h"
#include "transport/net/rawwire.h"
#include "util/log.h"

/* ---- canonical header fields ------------------------------------------- */

/* Network-order bytes at fixed offsets; bytes only, so no padding. */
struct flow_key {
	uint8_t dmac[6], smac[6], etype[2], vlan[2];
	uint8_t src4[4], dst4[4], proto, tos, ttl, flags4;
	uint8_t src6[16], dst6[16], flabel[4], next_hdr, tclass, hop, pad;
	uint8_t sport[2], dport[2];
};
static_assert(sizeof(struct flow_key) == 72, "flow key is ABI");

/* A parsed frame: its fields and which protocols it carries. */
struct frame_info {
	struct flow_key k;
	uint8_t l3;			/* 4, 6 or 0 */
	uint8_t l4;			/* IPPROTO_TCP, IPPROTO_UDP or 0 */
};

/* ---- the host flow table (SRDMA_DIR/flows) ------------------------------ */

#define FLOWS_MAGIC 0x73666c77u		/* "sflw" */
#define FLOWS_VERSION 1u
#define FLOW_SLOTS 256u

struct shm_flow {
	uint32_t live;			/* 1: in force */
	int32_t pid;			/* owner */
	uint64_t start;			/* owner's start time */
	uint32_t lid;			/* owner context */
	uint32_t qpn;			/* raw QP, or 0 for an RSS flow */
	uint16_t priority;
	uint8_t need_l3, need_l4;	/* as struct frame_info; 0: any */
	uint32_t rss_n;			/* RSS: table size (power of 2) */
	uint64_t rss_fields;		/* IBV_RX_HASH_* */
	uint8_t rss_key[SRDMA_RSS_KEY_LEN];
	struct flow_key val, mask;	/* val is pre-masked */
	uint32_t rss_qpn[1u << SRDMA_RSS_LOG_MAX];
};
static_assert(sizeof(struct shm_flow) == 1248, "flow slot is ABI");

struct shm_flows {
	uint32_t magic, version, nslots, pad;
	struct shm_flow slot[FLOW_SLOTS];
};

static struct {
	pthread_mutex_t open_lock;
	pthread_rwlock_t lock;		/* threads of this process */
	pthread_mutex_t rd_lock;	/* readers, below */
	unsigned int readers;		/* rd_lock: threads holding LOCK_SH */
	int fd;				/* open_lock to set; then immutable
					 * (a fork child re-points it) */
	_Atomic uint32_t gen;		/* srdma_fork_gen when fd was opened */
	struct shm_flows *_Atomic map;	/* set once (release), after fd */
} ft = {
	.open_lock = PTHREAD_MUTEX_INITIALIZER,
	.lock = PTHREAD_RWLOCK_INITIALIZER,
	.rd_lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
};

/* Map the table (creating it) once per process. 0 or -EIO. */
static int ft_open(struct srdma_context *ctx)
{
	struct shm_flows *m;
	struct stat st;
	int fd, ret = 0;

	/* Pairs with the release store below. */
	if (atomic_load_explicit(&ft.map, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&ft.open_lock);
	if (atomic_load_explicit(&ft.map, memory_order_relaxed))
		goto out;
	fd = openat(ctx->host.dirfd, "flows", O_RDWR | O_CREAT | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
	if (fd < 0 || fstat(fd, &st) || st.st_uid != geteuid() ||
	    !S_ISREG(st.st_mode)) {
		srdma_warn("flow table: cannot open flows in the state "
			   "directory: %s", strerror(errno));
		ret = -EIO;
		goto err_close;
	}
	srdma_host_fix_mode(fd, 0600);
	if (flock(fd, LOCK_EX)) {
		ret = -EIO;
		goto err_close;
	}
	if ((size_t)st.st_size != sizeof(*m) && ftruncate(fd, sizeof(*m))) {
		flock(fd, LOCK_UN);
		ret = -EIO;
		goto err_close;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		flock(fd, LOCK_UN);
		ret = -EIO;
		goto err_close;
	}
	/* A file of another layout (or a damaged one) starts over empty. */
	if (m->magic != FLOWS_MAGIC || m->version != FLOWS_VERSION ||
	    m->nslots != FLOW_SLOTS) {
		memset(m, 0, sizeof(*m));
		m->magic = FLOWS_MAGIC;
		m->version = FLOWS_VERSION;
		m->nslots = FLOW_SLOTS;
	}
	flock(fd, LOCK_UN);
	ft.fd = fd;
	atomic_store(&ft.gen, atomic_load(&srdma_fork_gen));
	/* Pairs with the acquire load above. */
	atomic_store_explicit(&ft.map, m, memory_order_release);
out:
	pthread_mutex_unlock(&ft.open_lock);
	return ret;
err_close:
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&ft.open_lock);
	return ret;
}

/* The mapped table; ft_open() succeeded before. */
static struct shm_flows *ft_map(void)
{
	return atomic_load_explicit(&ft.map, memory_order_acquire);
}

/*
 * A fork child shares its parent's open file description of the table,
 * and with it the parent's flock: its LOCK_UN would drop the parent's
 * lock. So the first lock in a child re-opens the file (a description of
 * its own) at the same descriptor number.
 */
static void ft_own_fd(void)
{
	uint32_t gen = atomic_load_explicit(&srdma_fork_gen,
					    memory_order_relaxed);
	char path[64];
	int fd;

	if (likely(atomic_load_explicit(&ft.gen, memory_order_relaxed) ==
		   gen))
		return;
	pthread_mutex_lock(&ft.open_lock);
	if (atomic_load(&ft.gen) != gen) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", ft.fd);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd >= 0 && dup3(fd, ft.fd, O_CLOEXEC) >= 0)
			atomic_store(&ft.gen, gen);
		else
			srdma_warn("flow table: cannot re-open it after "
				   "fork: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	pthread_mutex_unlock(&ft.open_lock);
}

/*
 * Threads of one process share the descriptor, on which flock does not
 * exclude: the rwlock orders them, and of the readers the first takes
 * LOCK_SH and the last drops it.
 */
static void ft_lock(bool exclusive)
{
	ft_own_fd();
	if (exclusive) {
		pthread_rwlock_wrlock(&ft.lock);
		while (flock(ft.fd, LOCK_EX) && errno == EINTR)
			;
		return;
	}
	pthread_rwlock_rdlock(&ft.lock);
	pthread_mutex_lock(&ft.rd_lock);
	if (!ft.readers++)
		while (flock(ft.fd, LOCK_SH) && errno == EINTR)
			;
	pthread_mutex_unlock(&ft.rd_lock);
}

static void ft_unlock(bool exclusive)
{
	if (exclusive) {
		flock(ft.fd, LOCK_UN);
	} else {
		pthread_mutex_lock(&ft.rd_lock);
		if (!--ft.readers)
			flock(ft.fd, LOCK_UN);
		pthread_mutex_unlock(&ft.rd_lock);
	}
	pthread_rwlock_unlock(&ft.lock);
}

/* ---- permission ------------------------------------------------------------ */

/* CAP_NET_RAW in our effective set (what mlx5's kernel driver asks). */
static bool have_net_raw(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = 0,
	};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_RAW / 32].effective & (1u << (CAP_NET_RAW % 32));
}

int srdma_raw_qp_allowed(struct srdma_context *ctx)
{
	(void)ctx;
	if (!srdma_link_is_eth()) {
		srdma_dbg("create QP: raw packet QPs need an Ethernet port "
			  "(SRDMA_LINK_LAYER=eth); this port is InfiniBand");
		return -EOPNOTSUPP;
	}
	if (!have_net_raw()) {
		srdma_dbg("create QP: raw packet QPs need CAP_NET_RAW (root), "
			  "as on mlx5");
		return -EPERM;
	}
	return 0;
}

/* ---- RSS QPs ----------------------------------------------------------------- */

/* mlx5's rules for a hash configuration. */
static int rss_check(const struct ibv_rx_hash_conf *h, uint32_t tbl_size)
{
	uint64_t f = h->rx_hash_fields_mask;
	bool v4 = f & (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4);
	bool v6 = f & (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6);
	bool tcp = f & (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP);
	bool udp = f & (IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP);

	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ) {
		srdma_dbg("create RSS QP: hash function %#x not offered "
			  "(Toeplitz only)", h->rx_hash_function);
		return -EOPNOTSUPP;
	}
	if (f & ~(uint64_t)SRDMA_RSS_FIELDS) {
		srdma_dbg("create RSS QP: hash fields %#llx not offered",
			  (unsigned long long)(f & ~(uint64_t)SRDMA_RSS_FIELDS));
		return -EOPNOTSUPP;
	}
	if (h->rx_hash_key_len != SRDMA_RSS_KEY_LEN || !h->rx_hash_key) {
		srdma_dbg("create RSS QP: hash key of %u bytes (%u needed)",
			  h->rx_hash_key_len, SRDMA_RSS_KEY_LEN);
		return -EINVAL;
	}
	if ((v4 && v6) || (tcp && udp)) {
		srdma_dbg("create RSS QP: hash fields %#llx mix IPv4 with IPv6 "
			  "or TCP with UDP", (unsigned long long)f);
		return -EINVAL;
	}
	/* No fields: a steering entry without hashing, one WQ only. */
	if (!f && tbl_size != 1) {
		srdma_dbg("create RSS QP: no hash fields for a table of %u",
			  tbl_size);
		return -EINVAL;
	}
	return 0;
}

int srdma_raw_qp_setup(struct srdma_qp *qp,
		       const struct ibv_qp_init_attr_ex *a)
{
	struct srdma_raw_qp *r;
	struct srdma_rwq_tbl *t = NULL;
	int ret;

	if (a->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) {
		t = (struct srdma_rwq_tbl *)a->rwq_ind_tbl;
		ret = rss_check(&a->rx_hash_conf, t->size);
		if (ret)
			return ret;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* SRDMA_RAW_WIRE: this context's frames on the interface too. */
	ret = srdma_rawwire_get(qp->ctx);
	if (ret) {
		free(r);
		return ret;
	}
	r->wire = true;
	if (t) {
		r->tbl = t;
		r->hash_fields = a->rx_hash_conf.rx_hash_fields_mask;
		memcpy(r->hash_key, a->rx_hash_conf.rx_hash_key,
		       SRDMA_RSS_KEY_LEN);
		pthread_mutex_lock(&qp->ctx->lock);
		t->n_qp++;
		pthread_mutex_unlock(&qp->ctx->lock);
	}
	qp->raw = r;
	return 0;
}

int srdma_raw_qp_release_locked(struct srdma_qp *qp)
{
	struct srdma_raw_qp *r = qp->raw;

	if (!r)
		return 0;
	if (r->n_flow) {
		srdma_dbg("destroy QP %#x: %u flows still steer to it",
			  qp->ib.qp.qp_num, r->n_flow);
		return -EBUSY;
	}
	if (r->tbl)
		r->tbl->n_qp--;
	free(r);
	qp->raw = NULL;
	return 0;
}

/* ---- work queues ------------------------------------------------------------ */

static int wq_post_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	struct srdma_wq *wq = container_of(ibwq, struct srdma_wq, ibwq);

	return srdma_qp_post_recv(wq->qp, wr, bad);
}

int srdma_wq_create(struct srdma_context *ctx, struct ibv_wq_init_attr *a,
		    struct srdma_wq **out)
{
	struct ibv_qp_init_attr_ex qa;
	struct srdma_wq *wq;
	int ret;

	if (a->wq_type != IBV_WQT_RQ) {
		srdma_dbg("create WQ: type %d (receive queues only)",
			  a->wq_type);
		return -EINVAL;
	}
	if (a->comp_mask & ~(uint32_t)IBV_WQ_INIT_ATTR_FLAGS) {
		srdma_dbg("create WQ: comp_mask %#x not known", a->comp_mask);
		return -EINVAL;
	}
	if ((a->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && a->create_flags) {
		srdma_dbg("create WQ: create_flags %#x not offered",
			  a->create_flags);
		return -EOPNOTSUPP;
	}
	if (!srdma_link_is_eth()) {
		srdma_dbg("create WQ: work queues need an Ethernet port");
		return -EOPNOTSUPP;
	}
	if (!a->max_wr || !a->max_sge) {
		srdma_dbg("create WQ: max_wr %u, max_sge %u: both must be "
			  "at least 1", a->max_wr, a->max_sge);
		return -EINVAL;
	}
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return -ENOMEM;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RAW_PACKET;
	qa.send_cq = a->cq;
	qa.recv_cq = a->cq;
	qa.cap.max_recv_wr = a->max_wr;
	qa.cap.max_recv_sge = a->max_sge;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = a->pd;
	qa.qp_context = a->wq_context;
	ret = srdma_qp_create_wq(ctx, &qa, &wq->qp);
	if (ret)
		goto err_free;
	wq->ctx = ctx;
	wq->ibwq.context = &ctx->vctx.context;
	wq->ibwq.wq_context = a->wq_context;
	wq->ibwq.pd = a->pd;
	wq->ibwq.cq = a->cq;
	wq->ibwq.wq_num = wq->qp->ib.qp.qp_num;
	wq->ibwq.handle = wq->qp->slot;
	wq->ibwq.state = IBV_WQS_RESET;
	wq->ibwq.wq_type = IBV_WQT_RQ;
	wq->ibwq.post_recv = wq_post_recv;
	pthread_mutex_init(&wq->ibwq.mutex, NULL);
	pthread_cond_init(&wq->ibwq.cond, NULL);
	ret = srdma_handle_add(wq, SRDMA_OBJ_WQ);
	if (ret)
		goto err_qp;
	a->max_wr = wq->qp->cap.max_recv_wr;
	a->max_sge = wq->qp->cap.max_recv_sge;
	*out = wq;
	return 0;

err_qp:
	srdma_qp_destroy(wq->qp);
err_free:
	free(wq);
	return ret;
}

/* Move the hidden QP along RESET -> INIT -> RTR -> RTS (ready). */
static int wq_qp_ready(struct srdma_qp *qp)
{
	static const enum ibv_qp_state steps[] = {
		IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
	};
	struct ibv_qp_attr qa;
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		if (atomic_load(&qp->sh->state) >= (uint32_t)steps[i])
			continue;
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = steps[i];
		qa.port_num = 1;
		ret = srdma_qp_modify(qp, &qa, IBV_QP_STATE |
				      (steps[i] == IBV_QPS_INIT ? IBV_QP_PORT
								: 0));
		if (ret)
			return ret;
	}
	return 0;
}

int srdma_wq_modify(struct srdma_wq *wq, struct ibv_wq_attr *a)
{
	uint32_t known = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE |
			 IBV_WQ_ATTR_FLAGS;
	enum ibv_wq_state cur = wq->ibwq.state, next;
	struct ibv_qp_attr qa;
	int ret;

	if (a->attr_mask & ~known) {
		srdma_dbg("modify WQ %#x: attr_mask %#x not known",
			  wq->ibwq.wq_num, a->attr_mask);
		return -EINVAL;
	}
	if ((a->attr_mask & IBV_WQ_ATTR_FLAGS) && a->flags_mask) {
		srdma_dbg("modify WQ %#x: flags %#x not offered",
			  wq->ibwq.wq_num, a->flags_mask);
		return -EOPNOTSUPP;
	}
	if ((a->attr_mask & IBV_WQ_ATTR_CURR_STATE) &&
	    a->curr_wq_state != cur) {
		srdma_dbg("modify WQ %#x: curr_wq_state %d, but it is %d",
			  wq->ibwq.wq_num, a->curr_wq_state, cur);
		return -EINVAL;
	}
	if (!(a->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	next = a->wq_state;
	switch (next) {
	case IBV_WQS_RDY:
		if (cur == IBV_WQS_ERR) {
			srdma_dbg("modify WQ %#x: ERR -> RDY (reset it first)",
				  wq->ibwq.wq_num);
			return -EINVAL;
		}
		ret = wq_qp_ready(wq->qp);
		break;
	case IBV_WQS_RESET:
	case IBV_WQS_ERR:
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = next == IBV_WQS_ERR ? IBV_QPS_ERR : IBV_QPS_RESET;
		ret = srdma_qp_modify(wq->qp, &qa, IBV_QP_STATE);
		break;
	default:
		srdma_dbg("modify WQ %#x: no such state %d", wq->ibwq.wq_num,
			  next);
		return -EINVAL;
	}
	if (!ret)
		wq->ibwq.state = next;
	return ret;
}

int srdma_wq_destroy(struct srdma_wq *wq)
{
	struct srdma_context *ctx = wq->ctx;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	if (wq->n_tbl) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("destroy WQ %#x: %u indirection tables name it",
			  wq->ibwq.wq_num, wq->n_tbl);
		return -EBUSY;
	}
	if (!srdma_handle_del(wq, SRDMA_OBJ_WQ)) {
		pthread_mutex_unlock(&ctx->lock);
		return -EINVAL;
	}
	pthread_mutex_unlock(&ctx->lock);
	ret = srdma_qp_destroy(wq->qp);
	if (ret) {
		srdma_handle_add(wq, SRDMA_OBJ_WQ);
		return ret;
	}
	pthread_mutex_destroy(&wq->ibwq.mutex);
	pthread_cond_destroy(&wq->ibwq.cond);
	free(wq);
	return 0;
}

int srdma_rwq_tbl_create(struct srdma_context *ctx,
			 struct ibv_rwq_ind_table_init_attr *a,
			 struct srdma_rwq_tbl **out)
{
	struct srdma_rwq_tbl *t;
	uint32_t i, n;
	int ret;

	if (a->comp_mask) {
		srdma_dbg("create indirection table: comp_mask %#x not known",
			  a->comp_mask);
		return -EINVAL;
	}
	if (a->log_ind_tbl_size > SRDMA_RSS_LOG_MAX || !a->ind_tbl) {
		srdma_dbg("create indirection table: log size %u (at most "
			  "%u) or no WQs", a->log_ind_tbl_size,
			  SRDMA_RSS_LOG_MAX);
		return -EINVAL;
	}
	n = 1u << a->log_ind_tbl_size;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->wq = calloc(n, sizeof(*t->wq));
	if (!t->wq) {
		ret = -ENOMEM;
		goto err_free;
	}
	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < n; i++) {
		struct ibv_wq *w = a->ind_tbl[i];

		if (!w || !srdma_handle_check(w, SRDMA_OBJ_WQ) ||
		    container_of(w, struct srdma_wq, ibwq)->ctx != ctx) {
			srdma_dbg("create indirection table: entry %u is not "
				  "a WQ of this context", i);
			ret = -EINVAL;
			goto err_unlock;
		}
		t->wq[i] = container_of(w, struct srdma_wq, ibwq);
	}
	for (i = 0; i < n; i++)
		t->wq[i]->n_tbl++;
	pthread_mutex_unlock(&ctx->lock);
	t->ctx = ctx;
	t->size = n;
	t->ib.context = &ctx->vctx.context;
	t->ib.ind_tbl_num = (int)t->wq[0]->ibwq.wq_num;
	t->ib.ind_tbl_handle = t->ib.ind_tbl_num;
	ret = srdma_handle_add(t, SRDMA_OBJ_RWQ_TBL);
	if (ret) {
		srdma_rwq_tbl_destroy(t);
		return ret;
	}
	*out = t;
	return 0;

err_unlock:
	pthread_mutex_unlock(&ctx->lock);
	free(t->wq);
err_free:
	free(t);
	return ret;
}

int srdma_rwq_tbl_destroy(struct srdma_rwq_tbl *t)
{
	struct srdma_context *ctx = t->ctx;
	uint32_t i;

	pthread_mutex_lock(&ctx->lock);
	if (t->n_qp) {
		pthread_mutex_unlock(&ctx->lock);
		srdma_dbg("destroy indirection table: %u RSS QPs use it",
			  t->n_qp);
		return -EBUSY;
	}
	srdma_handle_del(t, SRDMA_OBJ_RWQ_TBL);
	for (i = 0; i < t->size; i++)
		t->wq[i]->n_tbl--;
	pthread_mutex_unlock(&ctx->lock);
	free(t->wq);
	free(t);
	return 0;
}

/* ---- flow specs --------------------------------------------------------------- */

/* Set the bytes of @val/@mask at @dst/@dmask (value pre-masked). */
static void put(uint8_t *dst, uint8_t *dmask, const void *val,
		const void *mask, size_t n)
{
	const uint8_t *v = val, *m = mask;
	size_t i;

	for (i = 0; i < n; i++) {
		dmask[i] |= m[i];
		dst[i] |= v[i] & m[i];
	}
}

#define PUT(f, field, vsrc, msrc)                                         \
	put((uint8_t *)&(f)->val.field, (uint8_t *)&(f)->mask.field,       \
	    &(vsrc), &(msrc),                                            \
	    sizeof((f)->val.field))

/* Needs of one flow, with the consistency rules between specs. */
static int need(uint8_t *have, uint8_t want, const char *what)
{
	if (*have && *have != want) {
		srdma_dbg("create flow: %s spec contradicts an earlier one",
			  what);
		return -EINVAL;
	}
	*have = want;
	return 0;
}

/* Parse @a's specs into @f. 0, -EINVAL or -EOPNOTSUPP. */
static int parse_specs(const struct ibv_flow_attr *a, struct shm_flow *f)
{
	const uint8_t *p = (const uint8_t *)(a + 1);
	unsigned int i;
	int ret = 0;

	for (i = 0; i < a->num_of_specs && !ret; i++) {
		const struct ibv_flow_spec *s = (const void *)p;
		uint32_t type = s->hdr.type;
		uint16_t size = s->hdr.size;
		size_t want;

		switch (type) {
		case IBV_FLOW_SPEC_ETH:
			want = sizeof(struct ibv_flow_spec_eth);
			break;
		case IBV_FLOW_SPEC_IPV4:
			want = sizeof(struct ibv_flow_spec_ipv4);
			break;
		case IBV_FLOW_SPEC_IPV4_EXT:
			want = sizeof(struct ibv_flow_spec_ipv4_ext);
			break;
		case IBV_FLOW_SPEC_IPV6:
			want = sizeof(struct ibv_flow_spec_ipv6);
			break;
		case IBV_FLOW_SPEC_TCP:
		case IBV_FLOW_SPEC_UDP:
			want = sizeof(struct ibv_flow_spec_tcp_udp);
			break;
		case IBV_FLOW_SPEC_ESP:
		case IBV_FLOW_SPEC_VXLAN_TUNNEL:
		case IBV_FLOW_SPEC_GRE:
		case IBV_FLOW_SPEC_MPLS:
		case IBV_FLOW_SPEC_ACTION_TAG:
		case IBV_FLOW_SPEC_ACTION_DROP:
		case IBV_FLOW_SPEC_ACTION_HANDLE:
		case IBV_FLOW_SPEC_ACTION_COUNT:
			srdma_dbg("create flow: spec %u type %#x not offered "
				  "(eth, ipv4, ipv4_ext, ipv6, tcp, udp are)",
				  i, type);
			return -EOPNOTSUPP;
		default:
			if (type & IBV_FLOW_SPEC_INNER) {
				srdma_dbg("create flow: spec %u: inner "
					  "(tunnel) headers not offered", i);
				return -EOPNOTSUPP;
			}
			srdma_dbg("create flow: spec %u: no such type %#x",
				  i, type);
			return -EINVAL;
		}
		if (size != want) {
			srdma_dbg("create flow: spec %u type %#x has size %u, "
				  "not %zu", i, type, size, want);
			return -EINVAL;
		}
		switch (type) {
		case IBV_FLOW_SPEC_ETH: {
			const struct ibv_flow_spec_eth *e = (const void *)p;

			PUT(f, dmac, e->val.dst_mac, e->mask.dst_mac);
			PUT(f, smac, e->val.src_mac, e->mask.src_mac);
			PUT(f, etype, e->val.ether_type, e->mask.ether_type);
			PUT(f, vlan, e->val.vlan_tag, e->mask.vlan_tag);
			break;
		}
		case IBV_FLOW_SPEC_IPV4: {
			const struct ibv_flow_spec_ipv4 *e = (const void *)p;

			ret = need(&f->need_l3, 4, "ipv4");
			PUT(f, src4, e->val.src_ip, e->mask.src_ip);
			PUT(f, dst4, e->val.dst_ip, e->mask.dst_ip);
			break;
		}
		case IBV_FLOW_SPEC_IPV4_EXT: {
			const struct ibv_flow_spec_ipv4_ext *e =
				(const void *)p;

			ret = need(&f->need_l3, 4, "ipv4");
			PUT(f, src4, e->val.src_ip, e->mask.src_ip);
			PUT(f, dst4, e->val.dst_ip, e->mask.dst_ip);
			PUT(f, proto, e->val.proto, e->mask.proto);
			PUT(f, tos, e->val.tos, e->mask.tos);
			PUT(f, ttl, e->val.ttl, e->mask.ttl);
			PUT(f, flags4, e->val.flags, e->mask.flags);
			break;
		}
		case IBV_FLOW_SPEC_IPV6: {
			const struct ibv_flow_spec_ipv6 *e = (const void *)p;

			ret = need(&f->need_l3, 6, "ipv6");
			PUT(f, src6, e->val.src_ip, e->mask.src_ip);
			PUT(f, dst6, e->val.dst_ip, e->mask.dst_ip);
			PUT(f, flabel, e->val.flow_label, e->mask.flow_label);
			PUT(f, next_hdr, e->val.next_hdr, e->mask.next_hdr);
			PUT(f, tclass, e->val.traffic_class,
			    e->mask.traffic_class);
			PUT(f, hop, e->val.hop_limit, e->mask.hop_limit);
			break;
		}
		default: {	/* TCP, UDP */
			const struct ibv_flow_spec_tcp_udp *e =
				(const void *)p;

			ret = need(&f->need_l4, type == IBV_FLOW_SPEC_TCP ?
				   IPPROTO_TCP : IPPROTO_UDP, "tcp/udp");
			PUT(f, sport, e->val.src_port, e->mask.src_port);
			PUT(f, dport, e->val.dst_port, e->mask.dst_port);
			break;
		}
		}
		p += size;
	}
	return ret;
}

/* ---- frames ------------------------------------------------------------------ */

static uint16_t be16_at(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* Parse the headers of a frame; what is absent or cut short stays 0. */
static void parse_frame(const uint8_t *b, uint32_t len, struct frame_info *fi)
{
	struct flow_key *k = &fi->k;
	uint32_t off = 14, l4off = 0;
	uint16_t et;
	uint8_t proto = 0;

	memset(fi, 0, sizeof(*fi));
	if (len < 14)
		return;
	memcpy(k->dmac, b, 6);
	memcpy(k->smac, b + 6, 6);
	et = be16_at(b + 12);
	if ((et == 0x8100 || et == 0x88a8) && len >= 18) {
		memcpy(k->vlan, b + 14, 2);
		et = be16_at(b + 16);
		off = 18;
	}
	k->etype[0] = (uint8_t)(et >> 8);
	k->etype[1] = (uint8_t)et;
	if (et == 0x0800 && len >= off + 20 && (b[off] >> 4) == 4 &&
	    (b[off] & 0xf) >= 5 && len >= off + (b[off] & 0xfu) * 4) {
		fi->l3 = 4;
		k->tos = b[off + 1];
		k->flags4 = b[off + 6] >> 5;
		k->ttl = b[off + 8];
		k->proto = proto = b[off + 9];
		memcpy(k->src4, b + off + 12, 4);
		memcpy(k->dst4, b + off + 16, 4);
		/* Only a first fragment carries the ports. */
		if (!(be16_at(b + off + 6) & 0x1fff))
			l4off = off + (b[off] & 0xfu) * 4;
	} else if (et == 0x86dd && len >= off + 40 && (b[off] >> 4) == 6) {
		uint32_t w0 = (uint32_t)b[off] << 24 | (uint32_t)b[off + 1] << 16 |
			      (uint32_t)b[off + 2] << 8 | b[off + 3];
		uint32_t fl = htonl(w0 & 0xfffff);

		fi->l3 = 6;
		k->tclass = (uint8_t)(w0 >> 20);
		memcpy(k->flabel, &fl, 4);
		k->next_hdr = proto = b[off + 6];
		k->hop = b[off + 7];
		memcpy(k->src6, b + off + 8, 16);
		memcpy(k->dst6, b + off + 24, 16);
		l4off = off + 40;
	}
	if (l4off && (proto == IPPROTO_TCP || proto == IPPROTO_UDP) &&
	    len >= l4off + (proto == IPPROTO_TCP ? 20u : 8u)) {
		fi->l4 = proto;
		memcpy(k->sport, b + l4off, 2);
		memcpy(k->dport, b + l4off + 2, 2);
	}
}

static bool flow_matches(const struct shm_flow *f, const struct frame_info *fi)
{
	const uint8_t *v = (const uint8_t *)&f->val;
	const uint8_t *m = (const uint8_t *)&f->mask;
	const uint8_t *k = (const uint8_t *)&fi->k;
	size_t i;

	if (f->need_l3 && f->need_l3 != fi->l3)
		return false;
	if (f->need_l4 && (f->need_l4 != fi->l4 || !fi->l3))
		return false;
	for (i = 0; i < sizeof(struct flow_key); i++)
		if ((k[i] & m[i]) != v[i])
			return false;
	return true;
}

uint32_t srdma_toeplitz(const uint8_t *key, const uint8_t *in, uint32_t n)
{
	uint32_t h = 0, win;
	uint32_t i, b, kb = 4;

	win = (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 |
	      (uint32_t)key[2] << 8 | key[3];
	for (i = 0; i < n; i++) {
		uint8_t next = kb < SRDMA_RSS_KEY_LEN ? key[kb] : 0;

		for (b = 0; b < 8; b++) {
			if (in[i] & (0x80u >> b))
				h ^= win;
			win = win << 1 | ((next >> (7 - b)) & 1u);
		}
		kb++;
	}
	return h;
}

/* The hash input of a frame for @fields, in Microsoft RSS order. */
static uint32_t rss_hash(const struct shm_flow *f, const struct frame_info *fi)
{
	uint8_t in[36];
	uint32_t n = 0;
	uint64_t x = f->rss_fields;

	if (fi->l3 == 4) {
		if (x & IBV_RX_HASH_SRC_IPV4) {
			memcpy(in + n, fi->k.src4, 4);
			n += 4;
		}
		if (x & IBV_RX_HASH_DST_IPV4) {
			memcpy(in + n, fi->k.dst4, 4);
			n += 4;
		}
	} else if (fi->l3 == 6) {
		if (x & IBV_RX_HASH_SRC_IPV6) {
			memcpy(in + n, fi->k.src6, 16);
			n += 16;
		}
		if (x & IBV_RX_HASH_DST_IPV6) {
			memcpy(in + n, fi->k.dst6, 16);
			n += 16;
		}
	}
	if ((fi->l4 == IPPROTO_TCP && (x & IBV_RX_HASH_SRC_PORT_TCP)) ||
	    (fi->l4 == IPPROTO_UDP && (x & IBV_RX_HASH_SRC_PORT_UDP))) {
		memcpy(in + n, fi->k.sport, 2);
		n += 2;
	}
	if ((fi->l4 == IPPROTO_TCP && (x & IBV_RX_HASH_DST_PORT_TCP)) ||
	    (fi->l4 == IPPROTO_UDP && (x & IBV_RX_HASH_DST_PORT_UDP))) {
		memcpy(in + n, fi->k.dport, 2);
		n += 2;
	}
	return srdma_toeplitz(f->rss_key, in, n);
}

int srdma_flow_route(struct srdma_context *ctx, const uint8_t *frame,
		     uint32_t len, bool from_wire, struct srdma_raw_dest *dst,
		     int max)
{
	struct frame_info fi;
	uint32_t best = UINT32_MAX, i;
	int n = 0, j, ret;

	ret = ft_open(ctx);
	if (ret)
		return ret;
	parse_frame(frame, len, &fi);
	ft_lock(false);
	for (i = 0; i < FLOW_SLOTS; i++) {
		const struct shm_flow *f = &ft_map()->slot[i];
		struct srdma_raw_dest d;

		if (f->live != 1 || (f->lid == ctx->host.lid) != from_wire ||
		    f->priority > best || !flow_matches(f, &fi))
			continue;
		if (f->priority < best) {
			best = f->priority;
			n = 0;
		}
		d.pid = f->pid;
		d.start = f->start;
		if (f->rss_n) {
			uint32_t n_tbl = f->rss_n;

			if (n_tbl > ARRAY_SIZE(f->rss_qpn) ||
			    (n_tbl & (n_tbl - 1)))
				continue;	/* damaged slot */
			d.qpn = f->rss_qpn[rss_hash(f, &fi) & (n_tbl - 1)];
		} else {
			d.qpn = f->qpn;
		}
		for (j = 0; j < n; j++)
			if (dst[j].qpn == d.qpn)
				break;
		if (j == n && n < max)
			dst[n++] = d;
	}
	ft_unlock(false);
	return n;
}

/* ---- flows ----------------------------------------------------------------- */

int srdma_flow_create(struct srdma_qp *qp, struct ibv_flow_attr *a,
		      struct srdma_flow **out)
{
	struct srdma_context *ctx = qp->ctx;
	struct srdma_raw_qp *r = qp->raw;
	struct shm_flow nf, *f;
	struct srdma_flow *fl;
	uint32_t i, slot = FLOW_SLOTS;
	int ret;

	if (!r) {
		srdma_dbg("create flow: QP %#x is not a raw packet QP",
			  qp->ib.qp.qp_num);
		return -EOPNOTSUPP;
	}
	if (a->comp_mask || a->port != 1 || a->num_of_specs > 16) {
		srdma_dbg("create flow: comp_mask %#x, port %u or %u specs "
			  "refused", a->comp_mask, a->port, a->num_of_specs);
		return -EINVAL;
	}
	if (a->type != IBV_FLOW_ATTR_NORMAL || a->flags) {
		srdma_dbg("create flow: type %d / flags %#x not offered "
			  "(normal flows without flags)", a->type, a->flags);
		return -EOPNOTSUPP;
	}
	memset(&nf, 0, sizeof(nf));
	ret = parse_specs(a, &nf);
	if (ret)
		return ret;
	nf.live = 1;
	nf.pid = getpid();
	nf.start = ctx->host.start_time;
	nf.lid = ctx->host.lid;
	nf.priority = a->priority;
	if (r->tbl) {
		nf.rss_n = r->tbl->size;
		nf.rss_fields = r->hash_fields;
		memcpy(nf.rss_key, r->hash_key, SRDMA_RSS_KEY_LEN);
		for (i = 0; i < r->tbl->size; i++)
			nf.rss_qpn[i] = r->tbl->wq[i]->ibwq.wq_num;
	} else {
		nf.qpn = qp->ib.qp.qp_num;
	}
	fl = calloc(1, sizeof(*fl));
	if (!fl)
		return -ENOMEM;
	ret = ft_open(ctx);
	if (ret)
		goto err_free;
	ft_lock(true);
	for (i = 0; i < FLOW_SLOTS; i++) {
		f = &ft_map()->slot[i];
		if (f->live == 1 && !srdma_proc_alive(f->pid, f->start))
			f->live = 0;	/* its owner died: reclaim */
		if (f->live != 1 && slot == FLOW_SLOTS)
			slot = i;
	}
	if (slot < FLOW_SLOTS)
		ft_map()->slot[slot] = nf;
	ft_unlock(true);
	if (slot == FLOW_SLOTS) {
		srdma_dbg("create flow: all %u slots of the host flow table "
			  "in use", FLOW_SLOTS);
		ret = -ENOSPC;
		goto err_free;
	}
	fl->qp = qp;
	fl->slot = slot;
	fl->ib.context = &ctx->vctx.context;
	fl->ib.handle = slot;
	ret = srdma_handle_add(fl, SRDMA_OBJ_FLOW);
	if (ret) {
		ft_lock(true);
		ft_map()->slot[slot].live = 0;
		ft_unlock(true);
		goto err_free;
	}
	pthread_mutex_lock(&ctx->lock);
	r->n_flow++;
	pthread_mutex_unlock(&ctx->lock);
	*out = fl;
	return 0;

err_free:
	free(fl);
	return ret;
}

int srdma_flow_destroy(struct srdma_flow *fl)
{
	struct srdma_context *ctx = fl->qp->ctx;

	if (!srdma_handle_del(fl, SRDMA_OBJ_FLOW))
		return -EINVAL;
	ft_lock(true);
	ft_map()->slot[fl->slot].live = 0;
	ft_unlock(true);
	pthread_mutex_lock(&ctx->lock);
	fl->qp->raw->n_flow--;
	pthread_mutex_unlock(&ctx->lock);
	free(fl);
	return 0;
}
