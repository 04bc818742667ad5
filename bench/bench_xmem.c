// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_xmem.c - the raw cross-memory limits of this host, the floor under
 * softrdma's one-host data path (docs/design/data-path.md).
 *
 * Two processes (a fork) and nothing else: no verbs, no rings, no
 * completions. It measures
 *   xmem_writev    bandwidth of back-to-back process_vm_writev calls, each
 *                  writing one 1 MiB message into the other process
 *   xmem_readv     the same with process_vm_readv
 *   xmem_pingpong  one-way latency of an 8-byte ping-pong: each side writes
 *                  a sequence number into the peer's word with
 *                  process_vm_writev, then spins on its own word until the
 *                  peer's answer arrives; one sample is a round trip / 2
 * and prints one line each ("xmem_writev size=1048576 gb_per_s=... n=...",
 * "xmem_pingpong size=8 median_us=... p90_us=... n=..."), which
 * run_data_bench.sh compares with softrdma under perftest.
 *
 * The buffers are mapped before the fork, so they sit at the same address
 * in both processes and no address exchange is needed; each side touches
 * its copy after the fork so that no copy-on-write fault is timed. The
 * bandwidth peer just sleeps in read(); in the ping-pong both sides spin,
 * so each is pinned to a CPU of its own (this needs two; with one the
 * spinners yield and the figure is meaningless, which is printed).
 * Options: --quick divides the iteration counts by ten.
 */
#include "bench_util.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define BW_SIZE	 (1UL << 20)
#define BW_ITERS 3000
#define PP_ITERS 100000

/* Mapped before the fork: the same address in both processes. */
struct pp_word {
	_Atomic uint64_t rx; /* written by the peer, read by the owner */
	char pad[56];
};

struct xmem {
	int sock; /* socketpair end: phase commands */
	pid_t peer;
	bool spin_yield;    /* fewer than two CPUs: spinners must yield */
	void *bw_buf;	    /* BW_SIZE bytes */
	struct pp_word *pp; /* own word, and the peer's at the same address */
	unsigned int scale;
};

enum { CMD_PINGPONG = 'P', CMD_QUIT = 'Q' };

/* One process_vm_writev/readv of @len bytes at @addr in the peer. */
static int xfer(const struct xmem *x, bool write, void *addr, void *local,
		size_t len)
{
	struct iovec l = {.iov_base = local, .iov_len = len};
	struct iovec r = {.iov_base = addr, .iov_len = len};
	ssize_t n;

	n = write ? process_vm_writev(x->peer, &l, 1, &r, 1, 0)
		  : process_vm_readv(x->peer, &l, 1, &r, 1, 0);
	if (n != (ssize_t)len) {
		fprintf(stderr, "bench_xmem: process_vm_%s: %s\n",
			write ? "writev" : "readv",
			n < 0 ? strerror(errno) : "short transfer");
		return -1;
	}
	return 0;
}

static int run_bw(const struct xmem *x, bool write)
{
	unsigned int iters = BW_ITERS / x->scale, i;
	void *local, *remote = x->bw_buf;
	uint64_t t0;
	int ret = -1;

	/* The local side is a separate buffer, the remote one is the peer's. */
	local = bench_buf_alloc(BW_SIZE);
	if (!local)
		return -1;
	for (i = 0; i < iters / 10 + 1; i++)
		if (xfer(x, write, remote, local, BW_SIZE))
			goto out;
	t0 = bench_now_ns();
	for (i = 0; i < iters; i++)
		if (xfer(x, write, remote, local, BW_SIZE))
			goto out;
	bench_report_bw(write ? "xmem_writev" : "xmem_readv", BW_SIZE, iters,
			bench_now_ns() - t0);
	ret = 0;
out:
	bench_buf_free(local, BW_SIZE);
	return ret;
}

/*
 * Spin until our word holds @want. The word is stored by the kernel on the
 * peer's behalf; the acquire load pairs with nothing in this program (the
 * kernel's copy is a plain store), it only keeps the load in the loop.
 * Return: 0, or -1 after BENCH_SPIN_LIMIT_NS.
 */
static int spin_for(const struct xmem *x, uint64_t want)
{
	uint64_t start = 0;
	unsigned int n = 0;

	while (atomic_load_explicit(&x->pp->rx, memory_order_acquire) != want) {
		if (x->spin_yield)
			sched_yield();
		if (++n % 4096)
			continue;
		if (!start)
			start = bench_now_ns();
		else if (bench_now_ns() - start > BENCH_SPIN_LIMIT_NS) {
			fprintf(stderr,
				"bench_xmem: no answer from the peer\n");
			return -1;
		}
	}
	return 0;
}

/* Both sides run @total exchanges; the first @warmup are not sampled. */
static int run_pingpong(const struct xmem *x, bool initiator,
			unsigned int total, unsigned int warmup,
			uint64_t *samples)
{
	uint64_t v, t0;
	unsigned int i;

	for (i = 1; i <= total; i++) {
		v = i;
		if (initiator) {
			t0 = bench_now_ns();
			if (xfer(x, true, &x->pp->rx, &v, sizeof(v)) ||
			    spin_for(x, i))
				return -1;
			if (i > warmup)
				samples[i - warmup - 1] =
					(bench_now_ns() - t0) / 2;
		} else {
			if (spin_for(x, i) ||
			    xfer(x, true, &x->pp->rx, &v, sizeof(v)))
				return -1;
		}
	}
	return 0;
}

static unsigned int pp_total(const struct xmem *x, unsigned int *warmup)
{
	unsigned int iters = PP_ITERS / x->scale;

	*warmup = iters / 20;
	return iters + *warmup;
}

/* The child: report its CPU (ready), then obey phase commands until QUIT. */
static int child_main(struct xmem *x, int cpu)
{
	unsigned int warmup, total = pp_total(x, &warmup);
	char cmd;

	if (bench_send_all(x->sock, &cpu, sizeof(cpu)))
		return 1;
	for (;;) {
		if (bench_recv_all(x->sock, &cmd, 1))
			return 1;
		if (cmd == CMD_QUIT)
			return 0;
		cmd = run_pingpong(x, false, total, warmup, NULL) ? 'F' : 'D';
		if (bench_send_all(x->sock, &cmd, 1))
			return 1;
	}
}

static int parent_main(struct xmem *x)
{
	unsigned int warmup, total = pp_total(x, &warmup);
	uint64_t *samples;
	char cmd;
	int ret = 1;

	samples = calloc(total - warmup, sizeof(*samples));
	if (!samples) {
		perror("calloc");
		return 1;
	}
	if (run_bw(x, true) || run_bw(x, false))
		goto out;

	/* Both words are still 0 from the start: there is one ping-pong. */
	cmd = CMD_PINGPONG;
	if (bench_send_all(x->sock, &cmd, 1))
		goto out;
	/* The child may not be spinning yet; its first spin sees our 1. */
	if (run_pingpong(x, true, total, warmup, samples))
		goto out;
	if (bench_recv_all(x->sock, &cmd, 1) || cmd != 'D')
		goto out;
	bench_report("xmem_pingpong", sizeof(uint64_t), samples,
		     total - warmup);
	ret = 0;
out:
	cmd = CMD_QUIT;
	bench_send_all(x->sock, &cmd, 1);
	free(samples);
	return ret;
}

int main(int argc, char **argv)
{
	struct xmem x = {.scale = 1};
	int sv[2], cpu0, cpu1, status, ret, i;
	pid_t parent = getpid(), child;

	for (i = 1; i < argc; i++) {
		if (!bench_parse_common(argv[i], &x.scale)) {
			fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
			return 2;
		}
	}
	x.bw_buf = bench_buf_alloc(BW_SIZE);
	x.pp = bench_buf_alloc(sizeof(*x.pp));
	if (!x.bw_buf || !x.pp)
		return 1;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("socketpair");
		return 1;
	}
	/* Only matters under Yama ptrace_scope 1: let the child reach us. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() != parent)
			_exit(1);
		close(sv[0]);
		x.sock = sv[1];
		x.peer = parent;
		cpu1 = bench_pin_cpu(1);
		x.spin_yield = cpu1 < 0;
		memset(x.bw_buf, 0x5a, BW_SIZE);
		memset(x.pp, 0, sizeof(*x.pp));
		_exit(child_main(&x, cpu1));
	}
	close(sv[1]);
	x.sock = sv[0];
	x.peer = child;
	cpu0 = bench_pin_cpu(0);
	memset(x.bw_buf, 0xa5, BW_SIZE);
	memset(x.pp, 0, sizeof(*x.pp));
	/* The child is ready once it has told us where it runs. */
	if (bench_recv_all(x.sock, &cpu1, sizeof(cpu1)))
		return 1;
	x.spin_yield = cpu0 < 0 || cpu1 < 0;
	printf("xmem_cpus parent=%d child=%d%s\n", cpu0, cpu1,
	       x.spin_yield ? " (one CPU: ping-pong figures are meaningless)"
			    : "");

	ret = parent_main(&x);
	close(x.sock);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "bench_xmem: child failed\n");
		ret = 1;
	}
	return ret;
}
