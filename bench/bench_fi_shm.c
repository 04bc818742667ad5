// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_fi_shm.c - libfabric's shm provider on this host: the reference
 * softrdma's one-host data path is compared with (run_data_bench.sh).
 *
 * Two processes (a fork), each with its own fabric, domain, RDM endpoint,
 * CQ and AV opened after the fork, and one registered region: a 1 MiB
 * data buffer followed by a page of control words. They swap endpoint
 * names (fi_getname), region addresses and MR keys over a socketpair and
 * measure
 *   fi_write           bandwidth of 1 MiB fi_write calls into the peer's
 *                      buffer, up to WINDOW in flight
 *   fi_write_pingpong  one-way latency of an 8-byte fi_write ping-pong:
 *                      each side writes a sequence number into the peer's
 *                      word and spins on its own until the answer arrives;
 *                      one sample is a round trip / 2
 * printing lines in bench_xmem's format.
 *
 * shm progress is manual: RMA aimed at a process completes only while that
 * process reads its CQ. So the target of the bandwidth run spins on its CQ
 * until the initiator sets its stop word, every spin loop reads the CQ, and
 * each side keeps reading it while it waits for the peer on the socket.
 * Both sides spin, so each is pinned to its own CPU. The MR mode the
 * provider asks for (local descriptors, virtual or offset addressing,
 * provider keys, endpoint binding) is honoured. Options: --quick divides
 * the iteration counts by ten.
 */
#include "bench_util.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define BW_SIZE	 (1UL << 20)
#define BW_ITERS 3000
#define PP_ITERS 50000
#define WINDOW	 16u

/* The page after the data buffer; words the peer writes are atomic. */
struct ctl {
	_Atomic uint64_t rx; /* ping-pong: written by the peer */
	char pad0[56];
	_Atomic uint64_t stop; /* bandwidth: written by the peer at the end */
	char pad1[56];
	uint64_t tx; /* source of our 8-byte writes */
};

#define REGION_SIZE (BW_SIZE + 4096)

/* What each side tells the other after setting up. */
struct hello {
	uint64_t base; /* remote address of the region's first byte */
	uint64_t key;
	int cpu;
	uint32_t namelen;
	char name[256];
};

struct fi {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr;
	void *desc;   /* local descriptor (FI_MR_LOCAL), else NULL */
	char *region; /* REGION_SIZE bytes, registered */
	struct ctl *ctl;
	fi_addr_t peer;
	uint64_t peer_base;
	uint64_t peer_key;
	unsigned int posted; /* writes not yet completed */
	int sock;
	bool spin_yield;
	unsigned int scale;
};

enum { CMD_BW = 'B', CMD_PINGPONG = 'P', CMD_QUIT = 'Q', CMD_DONE = 'D' };

static int fail(const char *what, ssize_t ret)
{
	fprintf(stderr, "bench_fi_shm[%d]: %s: %s\n", (int)getpid(), what,
		fi_strerror((int)-ret));
	return -1;
}

/* Read completions, which is also what makes shm progress. */
static int progress(struct fi *f)
{
	struct fi_cq_entry e[WINDOW];
	struct fi_cq_err_entry err = {0};
	ssize_t n;

	n = fi_cq_read(f->cq, e, WINDOW);
	if (n > 0) {
		f->posted -= (unsigned int)n;
		return 0;
	}
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL && fi_cq_readerr(f->cq, &err, 0) > 0) {
		fprintf(stderr, "bench_fi_shm: completion error: %s\n",
			fi_cq_strerror(f->cq, err.prov_errno, err.err_data,
				       NULL, 0));
		return -1;
	}
	return fail("fi_cq_read", n);
}

/* Keep reading the CQ until @done(@arg) or BENCH_SPIN_LIMIT_NS. */
static int progress_until(struct fi *f, bool (*done)(struct fi *, void *),
			  void *arg)
{
	uint64_t start = bench_now_ns();
	unsigned int n = 0;

	while (!done(f, arg)) {
		if (progress(f))
			return -1;
		if (f->spin_yield)
			sched_yield();
		if (++n % 1024 == 0 &&
		    bench_now_ns() - start > BENCH_SPIN_LIMIT_NS) {
			fprintf(stderr, "bench_fi_shm: peer does not answer\n");
			return -1;
		}
	}
	return 0;
}

static bool posted_below(struct fi *f, void *arg)
{
	return f->posted < *(unsigned int *)arg;
}

/* Return: 0 once every posted write has completed. */
static int drain(struct fi *f)
{
	unsigned int one = 1;

	return progress_until(f, posted_below, &one);
}

/* fi_write @len bytes at @local into the peer's region at @off. */
static int post_write(struct fi *f, void *local, size_t len, uint64_t off)
{
	uint64_t start = 0;
	ssize_t ret;

	for (;;) {
		ret = fi_write(f->ep, local, len, f->desc, f->peer,
			       f->peer_base + off, f->peer_key, NULL);
		if (!ret) {
			f->posted++;
			return 0;
		}
		if (ret != -FI_EAGAIN)
			return fail("fi_write", ret);
		if (progress(f))
			return -1;
		if (!start)
			start = bench_now_ns();
		else if (bench_now_ns() - start > BENCH_SPIN_LIMIT_NS)
			return fail("fi_write stays busy", ret);
	}
}

static bool word_is(struct fi *f, void *arg)
{
	const uint64_t *want = arg;

	(void)f;
	/*
	 * @want's word is stored by the provider on the peer's behalf; the
	 * acquire keeps the load inside the loop and orders nothing else.
	 */
	return atomic_load_explicit((_Atomic uint64_t *)want[1],
				    memory_order_acquire) == want[0];
}

/* Spin (reading the CQ) until our word @w holds @v. */
static int wait_word(struct fi *f, _Atomic uint64_t *w, uint64_t v)
{
	uint64_t arg[2] = {v, (uint64_t)(uintptr_t)w};

	return progress_until(f, word_is, arg);
}

static bool sock_readable(struct fi *f, void *arg)
{
	struct pollfd p = {.fd = f->sock, .events = POLLIN};

	(void)arg;
	return poll(&p, 1, 0) != 0;
}

/* Receive one command byte, reading the CQ while it is on its way. */
static int recv_cmd(struct fi *f, char *cmd)
{
	if (progress_until(f, sock_readable, NULL))
		return -1;
	return bench_recv_all(f->sock, cmd, 1);
}

static int send_cmd(struct fi *f, char cmd)
{
	return bench_send_all(f->sock, &cmd, 1);
}

static int run_bw(struct fi *f)
{
	unsigned int iters = BW_ITERS / f->scale, i, window;
	uint64_t t0 = 0;

	window = WINDOW;
	if (f->info->tx_attr->size && f->info->tx_attr->size < window)
		window = (unsigned int)f->info->tx_attr->size;
	for (i = 0; i < iters / 10 + 1 + iters; i++) {
		if (i == iters / 10 + 1) {
			if (drain(f))
				return -1;
			t0 = bench_now_ns();
		}
		if (progress_until(f, posted_below, &window) ||
		    post_write(f, f->region, BW_SIZE, 0))
			return -1;
	}
	if (drain(f))
		return -1;
	bench_report_bw("fi_write", BW_SIZE, iters, bench_now_ns() - t0);

	f->ctl->tx = 1;
	if (post_write(f, &f->ctl->tx, sizeof(f->ctl->tx),
		       offsetof(struct ctl, stop) + BW_SIZE))
		return -1;
	return drain(f);
}

/* Both sides run @total exchanges; the first @warmup are not sampled. */
static int run_pingpong(struct fi *f, bool initiator, unsigned int total,
			unsigned int warmup, uint64_t *samples)
{
	const uint64_t rx_off = BW_SIZE + offsetof(struct ctl, rx);
	uint64_t t0 = 0;
	unsigned int i;

	for (i = 1; i <= total; i++) {
		if (!initiator && wait_word(f, &f->ctl->rx, i))
			return -1;
		if (initiator)
			t0 = bench_now_ns();
		/* The peer has seen our last value: tx is free again. */
		f->ctl->tx = i;
		if (post_write(f, &f->ctl->tx, sizeof(f->ctl->tx), rx_off))
			return -1;
		if (initiator) {
			if (wait_word(f, &f->ctl->rx, i))
				return -1;
			if (i > warmup)
				samples[i - warmup - 1] =
					(bench_now_ns() - t0) / 2;
		}
	}
	return drain(f);
}

static unsigned int pp_total(const struct fi *f, unsigned int *warmup)
{
	unsigned int iters = PP_ITERS / f->scale;

	*warmup = iters / 20;
	return iters + *warmup;
}

static int fi_setup(struct fi *f)
{
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT,
				     .wait_obj = FI_WAIT_NONE};
	struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC};
	struct fi_info *hints;
	uint64_t mr_mode;
	int ret;

	hints = fi_allocinfo();
	if (!hints)
		return fail("fi_allocinfo", -FI_ENOMEM);
	hints->caps = FI_RMA;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("shm");
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				      FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_ENDPOINT;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL,
			 NULL, 0, hints, &f->info);
	fi_freeinfo(hints);
	if (ret)
		return fail("fi_getinfo(shm, RDM, RMA)", ret);

	ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
	if (ret)
		return fail("fi_fabric", ret);
	ret = fi_domain(f->fabric, f->info, &f->domain, NULL);
	if (ret)
		return fail("fi_domain", ret);
	ret = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL);
	if (ret)
		return fail("fi_cq_open", ret);
	ret = fi_av_open(f->domain, &av_attr, &f->av, NULL);
	if (ret)
		return fail("fi_av_open", ret);
	ret = fi_endpoint(f->domain, f->info, &f->ep, NULL);
	if (ret)
		return fail("fi_endpoint", ret);
	ret = fi_ep_bind(f->ep, &f->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		return fail("fi_ep_bind", ret);
	ret = fi_enable(f->ep);
	if (ret)
		return fail("fi_enable", ret);

	mr_mode = f->info->domain_attr->mr_mode;
	ret = fi_mr_reg(f->domain, f->region, REGION_SIZE,
			FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
			0, 1, 0, &f->mr, NULL);
	if (ret)
		return fail("fi_mr_reg", ret);
	if (mr_mode & FI_MR_ENDPOINT) {
		ret = fi_mr_bind(f->mr, &f->ep->fid, 0);
		if (!ret)
			ret = fi_mr_enable(f->mr);
		if (ret)
			return fail("fi_mr_bind/enable", ret);
	}
	if (mr_mode & FI_MR_LOCAL)
		f->desc = fi_mr_desc(f->mr);
	return 0;
}

static void fi_teardown(struct fi *f)
{
	if (f->ep)
		fi_close(&f->ep->fid);
	if (f->mr)
		fi_close(&f->mr->fid);
	if (f->av)
		fi_close(&f->av->fid);
	if (f->cq)
		fi_close(&f->cq->fid);
	if (f->domain)
		fi_close(&f->domain->fid);
	if (f->fabric)
		fi_close(&f->fabric->fid);
	if (f->info)
		fi_freeinfo(f->info);
}

/* Tell the peer who we are, learn who it is. Return: the peer's CPU. */
static int exchange(struct fi *f, int cpu, int *peer_cpu)
{
	struct hello me = {.cpu = cpu}, peer;
	size_t len = sizeof(me.name);
	int ret;

	ret = fi_getname(&f->ep->fid, me.name, &len);
	if (ret)
		return fail("fi_getname", ret);
	me.namelen = (uint32_t)len;
	me.key = fi_mr_key(f->mr);
	if (f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		me.base = (uint64_t)(uintptr_t)f->region;
	if (bench_send_all(f->sock, &me, sizeof(me)) ||
	    bench_recv_all(f->sock, &peer, sizeof(peer)))
		return -1;
	if (peer.namelen > sizeof(peer.name))
		return fail("peer name", -FI_EINVAL);
	if (fi_av_insert(f->av, peer.name, 1, &f->peer, 0, NULL) != 1)
		return fail("fi_av_insert", -FI_EINVAL);
	f->peer_base = peer.base;
	f->peer_key = peer.key;
	*peer_cpu = peer.cpu;
	return 0;
}

static int child_main(struct fi *f)
{
	unsigned int warmup, total = pp_total(f, &warmup);
	char cmd;

	for (;;) {
		if (recv_cmd(f, &cmd))
			return 1;
		switch (cmd) {
		case CMD_QUIT:
			return 0;
		case CMD_BW:
			if (wait_word(f, &f->ctl->stop, 1))
				return 1;
			break;
		case CMD_PINGPONG:
			if (run_pingpong(f, false, total, warmup, NULL))
				return 1;
			break;
		default:
			return 1;
		}
		if (send_cmd(f, CMD_DONE))
			return 1;
	}
}

static int parent_main(struct fi *f)
{
	unsigned int warmup, total = pp_total(f, &warmup);
	uint64_t *samples;
	char cmd;
	int ret = 1;

	samples = calloc(total - warmup, sizeof(*samples));
	if (!samples) {
		perror("calloc");
		return 1;
	}
	if (send_cmd(f, CMD_BW) || run_bw(f) || recv_cmd(f, &cmd) ||
	    cmd != CMD_DONE)
		goto out;
	if (send_cmd(f, CMD_PINGPONG) ||
	    run_pingpong(f, true, total, warmup, samples) ||
	    recv_cmd(f, &cmd) || cmd != CMD_DONE)
		goto out;
	bench_report("fi_write_pingpong", sizeof(uint64_t), samples,
		     total - warmup);
	ret = 0;
out:
	send_cmd(f, CMD_QUIT);
	free(samples);
	return ret;
}

/* One side, after the fork: pin, set up, exchange, run, tear down. */
static int side_main(struct fi *f, bool parent)
{
	int cpu, peer_cpu = -1, ret = 1;

	cpu = bench_pin_cpu(parent ? 0 : 1);
	f->region = bench_buf_alloc(REGION_SIZE);
	if (!f->region)
		return 1;
	f->ctl = (struct ctl *)(f->region + BW_SIZE);
	memset(f->ctl, 0, sizeof(*f->ctl));
	if (fi_setup(f) || exchange(f, cpu, &peer_cpu))
		goto out;
	f->spin_yield = cpu < 0 || peer_cpu < 0;
	if (parent) {
		printf("fi_shm provider=%s mr_mode=%#x cpus parent=%d "
		       "child=%d%s\n",
		       f->info->fabric_attr->prov_name,
		       (unsigned int)f->info->domain_attr->mr_mode, cpu,
		       peer_cpu,
		       f->spin_yield ? " (one CPU: latency is meaningless)"
				     : "");
		fflush(stdout);
	}
	ret = parent ? parent_main(f) : child_main(f);
out:
	fi_teardown(f);
	bench_buf_free(f->region, REGION_SIZE);
	return ret;
}

int main(int argc, char **argv)
{
	struct fi f = {.scale = 1};
	int sv[2], status, ret, i;
	pid_t parent = getpid(), child;

	for (i = 1; i < argc; i++) {
		if (!bench_parse_common(argv[i], &f.scale)) {
			fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
			return 2;
		}
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("socketpair");
		return 1;
	}
	/* Only matters under Yama ptrace_scope 1: shm's CMA needs it. */
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
		f.sock = sv[1];
		_exit(side_main(&f, false));
	}
	close(sv[1]);
	f.sock = sv[0];
	ret = side_main(&f, true);
	close(f.sock);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		fprintf(stderr, "bench_fi_shm: child failed\n");
		ret = 1;
	}
	return ret;
}
