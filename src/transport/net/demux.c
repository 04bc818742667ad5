// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * demux.c - one UDP port 4791, many contexts (demux.h).
 *
 * The kernel delivers a datagram for a reuseport group to the socket whose
 * index the group's BPF program returns (or, for an index past the end, to
 * one chosen by the flow hash). Indices are the order in which sockets
 * joined; when a socket leaves, the last one takes its index. Nothing
 * tells user space which index a socket has, so we keep the order
 * ourselves: the steering table "net4791.<netns inode>" in the state
 * directory lists the group's members by index, and every join and leave
 * of ours happens under its flock, in the same step as the table update,
 * so that the table mirrors the kernel. The group's program, rebuilt from
 * the table on every change, is an unprivileged classic BPF program:
 *
 *	A = 32-bit word at UDP payload offset 4	(BTH byte 4 | DQPN)
 *	A &= 0xffffff; A >>= SRDMA_QPN_SHIFT	(the LID)
 *	for each member i: if A == lid_i return i
 *	return ~0				(no member: the flow hash)
 *
 * What the table cannot see: a process that dies leaves the group in the
 * kernel (its socket is closed at exit) but not in the table. The next
 * join or leave prunes dead members, replaying the kernel's "last takes
 * the hole" rule; when several died the order of their exits is unknown
 * and the result may be wrong. Contexts of another state directory in
 * the same namespace join the group but not our table (and replace the
 * program with theirs). In all these cases datagrams land on the wrong
 * socket, and the endpoint forwards them to their owner: steering is a
 * speed device, the forwarding sockets keep it correct.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/host/host.h"
#include "transport/net/demux.h"
#include "transport/net/wire.h"
#include "util/log.h"
#include "util/sys.h"

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif
#ifndef SO_DETACH_REUSEPORT_BPF
#define SO_DETACH_REUSEPORT_BPF 68
#endif
#ifndef UDP_NO_CHECK6_RX
#define UDP_NO_CHECK6_RX 102
#endif

#define STEER_MAGIC 0x54445253u		/* "SRDT" */
#define STEER_VERSION 1
#define STEER_MAX 1024u

/* The steering table file. Advisory: a malformed one is reset. */
struct steer_ent {
	uint32_t lid;
	int32_t pid;
	uint64_t start_time;
};

struct steer_tab {
	uint32_t magic;
	uint32_t version;
	uint32_t n;			/* members, by index */
	uint32_t gen;			/* bumped on every change */
	struct steer_ent e[STEER_MAX];
};

/* The table of this network namespace, locked; -errno on failure. */
static int steer_open(int dirfd)
{
	char name[64];
	struct stat st;
	int fd;

	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	snprintf(name, sizeof(name), "net4791.%llu",
		 (unsigned long long)st.st_ino);
	fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return -errno;
	srdma_host_fix_mode(fd, 0600);
	if (flock(fd, LOCK_EX)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

static void steer_read(int fd, struct steer_tab *t)
{
	ssize_t r = pread(fd, t, sizeof(*t), 0);
	uint32_t i;

	if (r != (ssize_t)sizeof(*t) || t->magic != STEER_MAGIC ||
	    t->version != STEER_VERSION || t->n > STEER_MAX)
		goto reset;
	for (i = 0; i < t->n; i++)
		if (!t->e[i].lid || t->e[i].lid > SRDMA_REG_ENTRIES)
			goto reset;
	return;
reset:
	memset(t, 0, sizeof(*t));
	t->magic = STEER_MAGIC;
	t->version = STEER_VERSION;
}

static void steer_write(int fd, struct steer_tab *t)
{
	t->gen++;
	if (pwrite(fd, t, sizeof(*t), 0) != (ssize_t)sizeof(*t))
		srdma_dbg("steering table write: %s", strerror(errno));
}

/* The kernel's rule when the socket at @i leaves: the last takes its place. */
static void steer_remove(struct steer_tab *t, uint32_t i)
{
	t->e[i] = t->e[t->n - 1];
	t->n--;
}

/* Is member @i's LID listed again after it (a later owner of the LID:
 * LIDs are unique among a namespace's live contexts, so @i is gone)? */
static bool steer_dup(const struct steer_tab *t, uint32_t i)
{
	uint32_t j;

	for (j = i + 1; j < t->n; j++)
		if (t->e[j].lid == t->e[i].lid)
			return true;
	return false;
}

/* Forget members whose process is gone (their sockets closed at exit),
 * and any that claims @self_lid (we are joining with it: whoever had it
 * is gone). Highest index first: right when one died, a guess when
 * several did. */
static void steer_prune(struct steer_tab *t, uint32_t self_lid)
{
	uint32_t i;

	for (i = t->n; i-- > 0;)
		/* A pid of another PID namespace (a state directory shared
		 * by containers) names nobody here, or someone else: the
		 * LID's claim in the network namespace (host/locality.c)
		 * says whether the member still lives. */
		if ((self_lid && t->e[i].lid == self_lid) || steer_dup(t, i) ||
		    (!srdma_proc_alive(t->e[i].pid, t->e[i].start_time) &&
		     !srdma_lid_held(t->e[i].lid))) {
			srdma_dbg("steering: member %u (lid %u pid %d) is gone",
				  i, t->e[i].lid, t->e[i].pid);
			steer_remove(t, i);
		}
}

/*
 * Attach the program for @t to the group through @fd. A group of one
 * member gets none (it is detached): the kernel then hands the only
 * socket every datagram without running a program, which on the build
 * VM saved 0.05-0.13 us per datagram in the sender's system call over a
 * veth (net-endpoint.md, "Port 4791"). A second member attaches the
 * program for both when it joins; datagrams that reach the wrong member
 * until then are forwarded, as in any change of the group.
 */
static int steer_attach(int fd, const struct steer_tab *tab)
{
	static struct sock_filter prog[3 + 2 * STEER_MAX + 1]; /* steer_lock */
	struct sock_fprog fp;
	uint32_t i, k = 0;
	int ret = 0, zero = 0;

	if (tab->n <= 1) {
		if (setsockopt(fd, SOL_SOCKET, SO_DETACH_REUSEPORT_BPF, &zero,
			       sizeof(zero)) && errno != ENOENT)
			srdma_dbg("SO_DETACH_REUSEPORT_BPF: %s",
				  strerror(errno));
		return 0;
	}
	prog[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4);
	prog[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K,
						 0xffffff);
	prog[k++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_RSH | BPF_K,
						 SRDMA_QPN_SHIFT);
	for (i = 0; i < tab->n; i++) {
		prog[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ |
							 BPF_K, tab->e[i].lid,
							 0, 1);
		prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, i);
	}
	prog[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0xffffffffu);
	fp.len = (unsigned short)k;
	fp.filter = prog;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp,
		       sizeof(fp))) {
		ret = -errno;
		srdma_info("SO_ATTACH_REUSEPORT_CBPF: %s (datagrams are forwarded instead of steered)",
			   strerror(errno));
	}
	return ret;
}

static void setopt(int fd, int level, int name, int val, const char *what)
{
	if (setsockopt(fd, level, name, &val, sizeof(val)))
		srdma_dbg("setsockopt(%s): %s", what, strerror(errno));
}

/* A dual-stack UDP socket set up for RoCEv2, not yet bound. */
static int udp_socket(void)
{
	int fd = srdma_socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int zero = 0, one = 1;

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	/* DF and IPv4 identification 0, which the ICRC assumes (roce-wire.md
	 * §1.5.2); IPv4 options apply to the v4-mapped traffic of a
	 * dual-stack socket. */
	setopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO,
	       "IP_MTU_DISCOVER");
	setopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO,
	       "IPV6_MTU_DISCOVER");
	/* rxe sends UDP checksum 0, also over IPv6. */
	setopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1, "UDP_NO_CHECK6_RX");
	setopt(fd, SOL_SOCKET, SO_RCVBUF, 4 << 20, "SO_RCVBUF");
	setopt(fd, SOL_SOCKET, SO_SNDBUF, 4 << 20, "SO_SNDBUF");
	return fd;
}

int srdma_demux_conn_socket(const uint8_t local[16], const uint8_t peer[16],
			    uint16_t peer_port)
{
	struct sockaddr_in6 la = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(SRDMA_ROCE_PORT),
	};
	struct sockaddr_in6 pa = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(peer_port),
	};
	int fd = udp_socket(), ret;

	if (fd < 0)
		return fd;
	memcpy(&la.sin6_addr, local, 16);
	memcpy(&pa.sin6_addr, peer, 16);
	if (bind(fd, (struct sockaddr *)&la, sizeof(la)) ||
	    connect(fd, (struct sockaddr *)&pa, sizeof(pa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

/* One table buffer (16 KiB) per process, and one change at a time. */
static struct steer_tab steer_buf;	/* steer_lock */
static pthread_mutex_t steer_lock = PTHREAD_MUTEX_INITIALIZER;

int srdma_demux_join(const struct srdma_demux_id *id, uint16_t port)
{
	struct sockaddr_in6 sa = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(port),
		.sin6_addr = IN6ADDR_ANY_INIT,
	};
	int fd, tfd, ret;

	fd = udp_socket();
	if (fd < 0)
		return fd;
	pthread_mutex_lock(&steer_lock);
	tfd = steer_open(id->dirfd);
	if (tfd < 0)
		srdma_info("steering table: %s (datagrams are forwarded instead of steered)",
			   strerror(-tfd));
	else
		steer_read(tfd, &steer_buf);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		srdma_warn("lid %u: cannot bind UDP port %u: %s%s", id->lid,
			   port, strerror(errno),
			   errno == EADDRINUSE ?
			   " (owned by a socket we cannot share: rxe, another user's contexts, or a program without SO_REUSEPORT)" :
			   "");
		goto out;
	}
	ret = fd;
	if (tfd < 0)
		goto out;
	steer_prune(&steer_buf, id->lid);
	if (steer_buf.n < STEER_MAX) {
		steer_buf.e[steer_buf.n].lid = id->lid;
		steer_buf.e[steer_buf.n].pid = id->pid;
		steer_buf.e[steer_buf.n].start_time = id->start_time;
		steer_buf.n++;
	}
	steer_attach(fd, &steer_buf);
	steer_write(tfd, &steer_buf);
	srdma_dbg("lid %u joined UDP %u as member %u", id->lid, port,
		  steer_buf.n - 1);
out:
	if (tfd >= 0)
		close(tfd);		/* drops the flock */
	pthread_mutex_unlock(&steer_lock);
	if (ret < 0)
		close(fd);
	return ret;
}

void srdma_demux_leave(const struct srdma_demux_id *id, int fd)
{
	uint32_t i;
	int tfd;

	pthread_mutex_lock(&steer_lock);
	tfd = steer_open(id->dirfd);
	if (tfd >= 0) {
		steer_read(tfd, &steer_buf);
		steer_prune(&steer_buf, 0);
		for (i = 0; i < steer_buf.n; i++)
			if (steer_buf.e[i].lid == id->lid &&
			    steer_buf.e[i].pid == id->pid)
				break;
		if (i < steer_buf.n) {
			steer_remove(&steer_buf, i);
			/* Re-steer before leaving: between the two, datagrams
			 * of the member that takes our index still come
			 * here and are forwarded. */
			steer_attach(fd, &steer_buf);
		}
		steer_write(tfd, &steer_buf);
	}
	close(fd);
	if (tfd >= 0)
		close(tfd);
	pthread_mutex_unlock(&steer_lock);
}

void srdma_demux_resteer(const struct srdma_demux_id *id, int fd)
{
	int tfd;

	pthread_mutex_lock(&steer_lock);
	tfd = steer_open(id->dirfd);
	if (tfd >= 0) {
		steer_read(tfd, &steer_buf);
		steer_prune(&steer_buf, 0);
		steer_attach(fd, &steer_buf);
		steer_write(tfd, &steer_buf);
		close(tfd);
	}
	pthread_mutex_unlock(&steer_lock);
}

socklen_t srdma_demux_fwd_addr(uint32_t lid, void *p)
{
	struct sockaddr_un *sun = p;
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	/* Abstract: scoped to the network namespace, as port 4791 is. */
	n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1,
		     "srdma-net4791.%u.%u", (unsigned int)geteuid(), lid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int srdma_demux_fwd_open(uint32_t lid)
{
	struct sockaddr_un sun;
	socklen_t len = srdma_demux_fwd_addr(lid, &sun);
	int fd = srdma_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setopt(fd, SOL_SOCKET, SO_PASSCRED, 1, "SO_PASSCRED");
	setopt(fd, SOL_SOCKET, SO_RCVBUF, 4 << 20, "SO_RCVBUF");
	if (bind(fd, (struct sockaddr *)&sun, len)) {
		int ret = -errno;

		if (errno == EADDRINUSE)
			srdma_warn("lid %u: another context with this LID has a net endpoint in this network namespace (a different SRDMA_DIR?): QPNs would be ambiguous",
				   lid);
		close(fd);
		return ret;
	}
	return fd;
}
