// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_addrinfo.c - rdma_getaddrinfo() and rdma_freeaddrinfo().
 *
 * rdma_getaddrinfo() is getaddrinfo() in RDMA terms: it turns a node and a
 * service into the source or destination address of a connection plus the
 * QP type and port space to use. Clients (rdma_client/rdma_server, rstream,
 * riostream, perftest's rdma_cm mode, libfabric, UCX, rpma) call it before
 * rdma_create_ep() or rdma_resolve_addr(), so it must give the answers
 * rdma-core 44 gives:
 *
 *  - hints become getaddrinfo() hints: RAI_PASSIVE -> AI_PASSIVE,
 *    RAI_NUMERICHOST -> AI_NUMERICHOST, ai_family as given, the QP type
 *    picks the socket type (RC, UC, XRC -> stream; UD -> datagram) and the
 *    port space the protocol (TCP -> TCP; UDP, IPoIB -> UDP; IB -> the one
 *    that fits the socket type). Without hints, getaddrinfo() runs without
 *    hints too, so its first answer is stream/TCP: QP type RC, port space
 *    TCP. A port space alone implies the QP type and vice versa, because
 *    the unset one is read back from getaddrinfo()'s answer.
 *  - Only the first answer is used, so the list has one entry, as in
 *    rdma-core.
 *  - Passive: the address becomes ai_src_addr and ai_flags is RAI_PASSIVE;
 *    a NULL node gives the wildcard address. Active: it becomes ai_dst_addr
 *    and ai_flags is 0.
 *  - With neither node nor service, hints alone describe the result: their
 *    flags, family, QP type and port space, and a copy of their destination.
 *  - A source address in the hints is copied when the result has none.
 *  - Canonical names are copied when getaddrinfo() returns one (it never
 *    does for the hints rdma-core passes, which lack AI_CANONNAME).
 *
 * Where rdma-core asks ibacm for a route to fill the active side's source,
 * we ask the kernel: a UDP socket connected to the destination and
 * getsockname() give the local address it would use (port 0; no packet is
 * sent). RAI_NOROUTE skips this, and if it fails ai_src_addr stays NULL,
 * which the man page allows ("0 if an appropriate source address could not
 * be discovered"). ai_route and ai_connect are never filled.
 *
 * AF_IB is not supported. Whenever rdma-core would return an AF_IB address
 * (hints with RAI_FAMILY, RAI_NUMERICHOST and ai_family AF_IB; a hints-only
 * call with ai_family AF_IB; an AF_IB address in the hints) the call fails
 * with EAI_FAMILY. Otherwise ai_family AF_IB is ignored, as in rdma-core,
 * which then resolves with AF_UNSPEC.
 *
 * Return convention (the public one; internal helpers use 0 / -errno):
 *
 *   0              success; *res holds a list for rdma_freeaddrinfo()
 *   EAI_* (< 0)    getaddrinfo() failed, or AF_IB was asked for. This is
 *                  the code itself, as the rdma-core 44 binary returns it
 *                  (checked by disassembly; its man page lists the EAI_*
 *                  codes) and as its examples expect:
 *                  printf("%s", gai_strerror(ret)).
 *                  errno is set beside it, which rdma-core leaves stale, so
 *                  callers that print strerror(errno) (rpma, UCX) get a
 *                  meaning: NONAME -> ENOENT, AGAIN -> EAGAIN, FAIL -> EIO,
 *                  FAMILY -> EAFNOSUPPORT, SOCKTYPE and SERVICE ->
 *                  EPROTOTYPE, MEMORY -> ENOMEM, NODATA -> ENODATA,
 *                  ADDRFAMILY -> EADDRNOTAVAIL, BADFLAGS -> EINVAL,
 *                  SYSTEM -> getaddrinfo()'s own errno.
 *   -1             errno EINVAL: res is NULL (rdma-core would crash), or
 *                  node, service and hints are all NULL, or hints give an
 *                  address length without an address; errno ENOMEM: out of
 *                  memory. On glibc -1 is also EAI_BADFLAGS; its errno
 *                  EINVAL keeps the two readings consistent.
 *
 * *res is written only on success. Unlike rdma-core there is no device
 * check first (rdma-core fails with ENODEV without RDMA devices; srdma0
 * always exists).
 *
 * Concurrency: no shared state; every call owns what it builds until it
 * publishes *res. Allocations go through one fault point,
 * CM_ADDRINFO_ALLOC, so a fault sweep reaches each ENOMEM unwind.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "util/compiler.h"
#include "util/fault.h"
#include "util/log.h"
#include "util/sys.h"

#ifndef AF_IB
#define AF_IB 27
#endif

/* Stands in for NULL hints, so later steps need no NULL checks. */
static const struct rdma_addrinfo no_hints;

static void *ai_memdup(const void *src, size_t len)
{
	void *p;

	if (SRDMA_FAULT(CM_ADDRINFO_ALLOC))
		return NULL;
	p = malloc(len);
	if (p)
		memcpy(p, src, len);
	return p;
}

static int addr_dup(struct sockaddr **dst, socklen_t *dst_len, const void *src,
		    socklen_t len)
{
	*dst = ai_memdup(src, len);
	if (!*dst)
		return -ENOMEM;
	*dst_len = len;
	return 0;
}

static int name_dup(char **dst, const char *name)
{
	if (!name)
		return 0;
	*dst = ai_memdup(name, strlen(name) + 1);
	return *dst ? 0 : -ENOMEM;
}

/*
 * errno for a getaddrinfo() code; @sys_errno is errno right after the
 * failed call, which only EAI_SYSTEM defines.
 */
static int gai_to_errno(int gai, int sys_errno)
{
	switch (gai) {
	case EAI_BADFLAGS:
		return EINVAL;
	case EAI_NONAME:
		return ENOENT;
	case EAI_AGAIN:
		return EAGAIN;
	case EAI_FAIL:
		return EIO;
	case EAI_FAMILY:
		return EAFNOSUPPORT;
	case EAI_SOCKTYPE:
	case EAI_SERVICE:
		return EPROTOTYPE;
	case EAI_MEMORY:
		return ENOMEM;
#ifdef EAI_NODATA
	case EAI_NODATA:
		return ENODATA;
#endif
#ifdef EAI_ADDRFAMILY
	case EAI_ADDRFAMILY:
		return EADDRNOTAVAIL;
#endif
	case EAI_SYSTEM:
		return sys_errno ? sys_errno : EIO;
	default:
		return EIO;
	}
}

/*
 * A hints address with a length must have at least a family behind it;
 * an AF_IB one would make the result AF_IB.
 */
static int hint_addr_check(const struct sockaddr *addr, socklen_t len)
{
	if (!len)
		return 0;
	if (!addr || len < sizeof(sa_family_t))
		return -EINVAL;
	return addr->sa_family == AF_IB ? -EAFNOSUPPORT : 0;
}

/*
 * Everything that can be rejected before any work is done. -EAFNOSUPPORT
 * means "rdma-core would answer with AF_IB", reported as EAI_FAMILY.
 */
static int request_check(const char *node, const char *service,
			 const struct rdma_addrinfo *hints)
{
	bool lookup = node || service;
	int ret;

	ret = hint_addr_check(hints->ai_src_addr, hints->ai_src_len);
	if (!ret)
		ret = hint_addr_check(hints->ai_dst_addr, hints->ai_dst_len);
	if (ret)
		return ret;
	if (hints->ai_family != AF_IB)
		return 0;
	if (!lookup)
		return -EAFNOSUPPORT;
	if ((hints->ai_flags & RAI_FAMILY) &&
	    (hints->ai_flags & RAI_NUMERICHOST))
		return -EAFNOSUPPORT;
	return 0;
}

static void hints_to_gai(const struct rdma_addrinfo *hints, struct addrinfo *ai)
{
	memset(ai, 0, sizeof(*ai));
	if (hints->ai_flags & RAI_PASSIVE)
		ai->ai_flags |= AI_PASSIVE;
	if (hints->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (hints->ai_family != AF_IB)
		ai->ai_family = hints->ai_family;

	switch (hints->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}

	switch (hints->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

/* Fill @rai from getaddrinfo()'s first answer @ai. */
static int rai_from_gai(struct rdma_addrinfo *rai,
			const struct rdma_addrinfo *hints,
			const struct addrinfo *ai)
{
	bool passive = hints->ai_flags & RAI_PASSIVE;
	int ret;

	rai->ai_qp_type = hints->ai_qp_type;
	if (!rai->ai_qp_type) {
		if (ai->ai_socktype == SOCK_STREAM)
			rai->ai_qp_type = IBV_QPT_RC;
		else if (ai->ai_socktype == SOCK_DGRAM)
			rai->ai_qp_type = IBV_QPT_UD;
	}
	rai->ai_port_space = hints->ai_port_space;
	if (!rai->ai_port_space) {
		if (ai->ai_protocol == IPPROTO_TCP)
			rai->ai_port_space = RDMA_PS_TCP;
		else if (ai->ai_protocol == IPPROTO_UDP)
			rai->ai_port_space = RDMA_PS_UDP;
	}
	rai->ai_family = ai->ai_family;
	rai->ai_flags = passive ? RAI_PASSIVE : 0;

	if (passive) {
		ret = name_dup(&rai->ai_src_canonname, ai->ai_canonname);
		if (!ret)
			ret = addr_dup(&rai->ai_src_addr, &rai->ai_src_len,
				       ai->ai_addr, ai->ai_addrlen);
	} else {
		ret = name_dup(&rai->ai_dst_canonname, ai->ai_canonname);
		if (!ret)
			ret = addr_dup(&rai->ai_dst_addr, &rai->ai_dst_len,
				       ai->ai_addr, ai->ai_addrlen);
	}
	return ret;
}

static int rai_from_lookup(struct rdma_addrinfo *rai, const char *node,
			   const char *service,
			   const struct rdma_addrinfo *hints, int *gai)
{
	struct addrinfo gai_hints, *ai;
	int ret;

	/* No hints in, no hints out: glibc then applies its own defaults. */
	if (hints == &no_hints) {
		ret = getaddrinfo(node, service, NULL, &ai);
	} else {
		hints_to_gai(hints, &gai_hints);
		ret = getaddrinfo(node, service, &gai_hints, &ai);
	}
	if (ret) {
		int sys_errno = errno;

		srdma_dbg("getaddrinfo(%s, %s): %s", node ? node : "NULL",
			  service ? service : "NULL", gai_strerror(ret));
		*gai = ret;
		return -gai_to_errno(ret, sys_errno);
	}
	ret = rai_from_gai(rai, hints, ai);
	freeaddrinfo(ai);
	return ret;
}

static int rai_from_hints(struct rdma_addrinfo *rai,
			  const struct rdma_addrinfo *hints)
{
	rai->ai_flags = hints->ai_flags;
	rai->ai_family = hints->ai_family;
	rai->ai_qp_type = hints->ai_qp_type;
	rai->ai_port_space = hints->ai_port_space;
	if (!hints->ai_dst_len)
		return 0;
	return addr_dup(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
			hints->ai_dst_len);
}

/*
 * The source address the kernel would pick to reach rai's destination.
 * Best effort: on any failure ai_src_addr stays NULL. connect() on a UDP
 * socket only sets the default peer; nothing goes on the wire.
 */
static void route_src_fill(struct rdma_addrinfo *rai)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int family = rai->ai_dst_addr->sa_family;
	int fd;

	if (family != AF_INET && family != AF_INET6)
		return;
	/* Straight from the kernel: an LD_PRELOADed socket() (librspreload)
	 * must not make this probe an rsocket. */
	fd = srdma_socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, rai->ai_dst_addr, rai->ai_dst_len) ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) ||
	    ss.ss_family != family)
		goto out_close;

	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = 0;
		len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_port = 0;
		((struct sockaddr_in6 *)&ss)->sin6_flowinfo = 0;
		len = sizeof(struct sockaddr_in6);
	}
	if (addr_dup(&rai->ai_src_addr, &rai->ai_src_len, &ss, len))
		srdma_dbg("no memory for the route's source address");
out_close:
	close(fd);
}

/*
 * Build the one-entry list for rdma_getaddrinfo(). Returns 0 or -errno;
 * when getaddrinfo() itself failed, *gai holds its code as well.
 */
static int addrinfo_build(const char *node, const char *service,
			  const struct rdma_addrinfo *hints,
			  struct rdma_addrinfo **res, int *gai)
{
	struct rdma_addrinfo *rai;
	int ret;

	if (!node && !service && !hints)
		return -EINVAL;
	if (!hints)
		hints = &no_hints;
	ret = request_check(node, service, hints);
	if (ret == -EAFNOSUPPORT)
		*gai = EAI_FAMILY;
	if (ret)
		return ret;

	if (SRDMA_FAULT(CM_ADDRINFO_ALLOC))
		return -ENOMEM;
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return -ENOMEM;

	if (node || service)
		ret = rai_from_lookup(rai, node, service, hints, gai);
	else
		ret = rai_from_hints(rai, hints);
	if (ret)
		goto err_free_rai;

	if (!rai->ai_src_len && hints->ai_src_len) {
		ret = addr_dup(&rai->ai_src_addr, &rai->ai_src_len,
			       hints->ai_src_addr, hints->ai_src_len);
		if (ret)
			goto err_free_rai;
	}

	if (!(rai->ai_flags & RAI_PASSIVE) && !rai->ai_src_len &&
	    rai->ai_dst_len && !(hints->ai_flags & RAI_NOROUTE))
		route_src_fill(rai);

	*res = rai;
	return 0;

err_free_rai:
	rdma_freeaddrinfo(rai);
	return ret;
}

/**
 * rdma_getaddrinfo() - resolve a node and service for an RDMA connection.
 * @node:    host name or numeric IPv4/IPv6 address; NULL with RAI_PASSIVE
 *           for the wildcard address
 * @service: port number or service name; may be NULL
 * @hints:   RAI_* flags, family, QP type, port space and optional source
 *           and destination addresses; may be NULL
 * @res:     receives a one-entry list on success
 *
 * At least one of @node, @service and @hints must be given.
 *
 * Context: any thread; may block in name resolution.
 * Return: 0 with *res owned by the caller (free it with
 * rdma_freeaddrinfo()); an EAI_* code with errno set when resolution fails
 * or AF_IB addresses are asked for; -1 with errno EINVAL or ENOMEM
 * otherwise. *res is written only on success. The file header lists the
 * errno of each EAI_* code.
 */
SRDMA_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				  const struct rdma_addrinfo *hints,
				  struct rdma_addrinfo **res)
{
	int gai = 0;
	int ret;

	if (!res) {
		errno = EINVAL;
		return -1;
	}
	ret = addrinfo_build(node, service, hints, res, &gai);
	if (!ret)
		return 0;
	errno = -ret;
	return gai ? gai : -1;
}

/**
 * rdma_freeaddrinfo() - free a list returned by rdma_getaddrinfo().
 * @res: head of the list; NULL is a no-op
 *
 * Frees every entry reachable through ai_next together with its addresses,
 * canonical names, route and connect data.
 *
 * Context: any thread; the caller must not use @res afterwards.
 */
SRDMA_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
		res = next;
	}
}
