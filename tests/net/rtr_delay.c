// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * rtr_delay.c - an LD_PRELOAD module for the net tests: a process that is
 * slow to bring its QPs to RTR, as a loaded machine makes one, on demand.
 *
 * Two-sided programs that exchange their QP numbers and then connect
 * (ibv_xsrq_pingpong's server posts its first SEND as soon as its own QPs
 * are connected) race with their peer's modify to RTR: a QP before RTR
 * drops what arrives, and the sender's retries (about 0.5 s with timeout
 * 14 and retry_cnt 7) must outlast the peer's connect. On an idle machine
 * they always do; under load a peer may take longer. This module makes
 * that peer slow every time, so the tests can show how such a run ends
 * and what the harness does with it (net_pair.sh, "start race").
 *
 * Environment:
 *   SRDMA_TEST_RTR_DELAY_MS  sleep that long before each ibv_modify_qp to
 *                            IBV_QPS_RTR (unset or 0: no delay)
 *   SRDMA_TEST_RTR_DELAY_ONCE=1  only in the first process of a test
 *                            host: the first to create the file
 *                            $SRDMA_DIR/rtr_delay.once (O_EXCL) delays,
 *                            later processes (a run again) do not
 *
 * The real ibv_modify_qp is the next one in lookup order (RTLD_NEXT):
 * softrdma's libibverbs.so.1 as `srdma run` loads it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int (*modify_fn)(struct ibv_qp *, struct ibv_qp_attr *, int);

/* Is this process the one to be slow? Decided at its first RTR (the
 * programs here connect from one thread). */
static int delay_ms(void)
{
	static int ms = -1;
	const char *e, *once, *dir;
	char path[4096];
	int fd;

	if (ms >= 0)
		return ms;
	e = getenv("SRDMA_TEST_RTR_DELAY_MS");
	ms = e ? atoi(e) : 0;
	if (ms < 0)
		ms = 0;
	once = getenv("SRDMA_TEST_RTR_DELAY_ONCE");
	dir = getenv("SRDMA_DIR");
	if (ms && once && *once == '1' && dir) {
		snprintf(path, sizeof(path), "%s/rtr_delay.once", dir);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		if (fd < 0)
			ms = 0;		/* an earlier process was the slow one */
		else
			close(fd);
	}
	if (ms)
		fprintf(stderr, "rtr_delay: each modify to RTR waits %d ms\n",
			ms);
	return ms;
}

/**
 * ibv_modify_qp() - the real ibv_modify_qp, after a sleep before RTR
 * @qp: as ibv_modify_qp(3)
 * @attr: as ibv_modify_qp(3)
 * @mask: as ibv_modify_qp(3)
 *
 * Context: any thread; not async-signal-safe.
 * Return: what the real ibv_modify_qp returns; ENOSYS without one.
 */
__attribute__((visibility("default")))
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	modify_fn real = (modify_fn)dlsym(RTLD_NEXT, "ibv_modify_qp");
	int ms;

	if (!real)
		return ENOSYS;
	if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR &&
	    (ms = delay_ms()) > 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts))
			;
	}
	return real(qp, attr, mask);
}
