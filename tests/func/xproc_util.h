// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * xproc_util.h - the harness of the cross-process functional tests
 * (test_dp_xproc.c, test_dp_async_many.c, test_key_guess.c,
 * test_peer_death.c, test_shm_robust.c, test_peer_churn.c).
 *
 * Such a test forks a child that opens its own context, so traffic between
 * the two takes the cross-process path. The two sides talk over a
 * socketpair: QPNs, LIDs, addresses and rkeys, then one-byte go/done
 * signals. The child must never call cmocka (a failed assert there would
 * unwind into the parent's test runner, which the child inherited), so
 * every helper here reports failure by its return value and the child
 * checks with XCHK, which exits with status 2; the parent judges the
 * child's exit status. The parent may use the same helpers under cmocka
 * asserts. Connecting a QP is dp_qp_connect() (dp_util.h), which makes no
 * cmocka call either.
 */
#ifndef SRDMA_TESTS_FUNC_XPROC_UTIL_H
#define SRDMA_TESTS_FUNC_XPROC_UTIL_H

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "dp_util.h"

/* Child-side check: on failure print where (with the pid: a test may run
 * several children) and _exit(2). */
#define XCHK(c)                                                                \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "child %d %s:%d: check failed: %s\n",  \
				(int)getpid(), __FILE__, __LINE__, #c);        \
			_exit(2);                                              \
		}                                                              \
	} while (0)

/*
 * Write (@wr) or read exactly @n bytes at @p over @fd, retrying on EINTR
 * and short transfers. Returns 0, or -1 on an error or end of file.
 */
static inline int xio(int fd, void *p, size_t n, bool wr)
{
	char *c = p;

	while (n) {
		ssize_t r = wr ? write(fd, c, n) : read(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

/* xio() writing @n bytes from @p; 0 or -1. */
static inline int xsend(int fd, const void *p, size_t n)
{
	return xio(fd, (void *)(uintptr_t)p, n, true);
}

/* xio() reading @n bytes into @p; 0 or -1. */
static inline int xrecv(int fd, void *p, size_t n)
{
	return xio(fd, p, n, false);
}

/* One signal byte; 0 or -1. */
static inline int xsend_byte(int fd, char b)
{
	return xsend(fd, &b, 1);
}

/* The next signal byte, or 0 if none could be read. */
static inline char xrecv_byte(int fd)
{
	char b = 0;

	if (xrecv(fd, &b, 1))
		return 0;
	return b;
}

/*
 * Open srdma0, a PD and a CQ of @cqe entries (no completion channel) into
 * *@ctx, *@pd and *@cq; what was not reached is left NULL for the caller's
 * teardown. Returns 0 or -1.
 */
static inline int xp_open_pd_cq(struct ibv_context **ctx, struct ibv_pd **pd,
				struct ibv_cq **cq, int cqe)
{
	struct ibv_device **list;
	int i, n = 0;

	*ctx = NULL;
	*pd = NULL;
	*cq = NULL;
	list = ibv_get_device_list(&n);
	if (!list)
		return -1;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "srdma0"))
			*ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!*ctx)
		return -1;
	*pd = ibv_alloc_pd(*ctx);
	*cq = *pd ? ibv_create_cq(*ctx, cqe, NULL, NULL, 0) : NULL;
	return *cq ? 0 : -1;
}

/* Undo xp_open_pd_cq(): destroy @cq, free @pd, close @ctx (NULL ones are
 * skipped). Whatever uses them must be gone already. */
static inline void xp_close_pd_cq(struct ibv_context *ctx, struct ibv_pd *pd,
				  struct ibv_cq *cq)
{
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	if (ctx)
		ibv_close_device(ctx);
}

/*
 * A QP of @type on @pd with @cq for both directions (and @srq, or NULL),
 * @wr work requests and @sge SGEs per queue, @sig_all as sq_sig_all.
 * Returns the QP or NULL.
 */
static inline struct ibv_qp *xp_qp_create(struct ibv_pd *pd, struct ibv_cq *cq,
					  struct ibv_srq *srq,
					  enum ibv_qp_type type, uint32_t wr,
					  uint32_t sge, int sig_all)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.srq = srq;
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = type;
	ia.sq_sig_all = sig_all;
	ia.cap.max_send_wr = wr;
	ia.cap.max_recv_wr = wr;
	ia.cap.max_send_sge = sge;
	ia.cap.max_recv_sge = sge;
	return ibv_create_qp(pd, &ia);
}

/* Port 1's LID into *@lid; 0 or -1. */
static inline int xp_port_lid(struct ibv_context *ctx, uint16_t *lid)
{
	struct ibv_port_attr pa;

	memset(&pa, 0, sizeof(pa));
	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	*lid = pa.lid;
	return 0;
}

/*
 * Fork a child that runs @child with its end of a fresh socketpair, then
 * _exit(0)s if @child returns; *@fd gets the parent's end. In the child,
 * SIGSEGV and SIGBUS are back to their default action (cmocka's handlers
 * would turn a crash into a jump into the inherited test runner: a crash
 * must show as the signal) and, if @alarm_s is not 0, alarm(@alarm_s) is a
 * watchdog. Cmocka-asserts the socketpair and the fork (parent side).
 */
static inline pid_t xp_spawn(int *fd, void (*child)(int fd),
			     unsigned int alarm_s)
{
	int sv[2];
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		close(sv[0]);
		if (alarm_s)
			alarm(alarm_s);
		child(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

#endif /* SRDMA_TESTS_FUNC_XPROC_UTIL_H */
