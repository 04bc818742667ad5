// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_key_guess.c - another process that knows many rkeys of a context
 * cannot forge one more (issue 9, defect 8; ReDMArk, USENIX Security 2021).
 *
 * A forked child (the target) opens its own context and registers 1000
 * MRs whose rkeys it discloses, then 8 more that it keeps secret. The
 * parent (the attacker, its own context) connects 32 RC QPs to 32 of the
 * target's and tries 100,000 guessed rkeys, every one as a real RDMA READ:
 *
 *   - the attack that broke the old scheme: solve the 11 first disclosed
 *     indices for index_i = (a + i * m) ^ x (mod 2^24) and read with the
 *     predicted indices of the secret MRs, all 256 tags each (2048 reads);
 *   - neighbours of every disclosed key: other tag, index +- 1;
 *   - uniformly random keys for the rest (never a disclosed one).
 *
 * A forged key would complete with SUCCESS; every guess must end in
 * REM_ACCESS_ERR. A failed READ moves both QPs to ERR, so after each
 * batch the target resets and reconnects its QPs (and drains the
 * QP_ACCESS_ERR async events), then the attacker does. With 1008 live
 * keys a blind guess hits with probability 8 / 2^32 (the disclosed ones
 * are never tried), so 0 hits is expected with certainty but for ~2e-4.
 *
 * The child never uses cmocka: it exits non-zero on a failure.
 */
#include <fcntl.h>

#include "xproc_util.h"

#define NQP 32
#define NDISC 1000
#define NSECRET 8
#define NGUESS 100000
#define MASK24 0xffffffu

struct tinfo {
	uint16_t lid;
	uint32_t qpn[NQP];
	uint64_t addr;
	uint32_t rkey[NDISC];
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[NQP];
	char *buf;
	struct ibv_mr *mr[NDISC + NSECRET];
	unsigned int nmr;
	uint16_t lid;
};

/* Context, PD, CQ, QPs, a page and @nmr MRs on it. 0 or -1, no cmocka. */
static int side_open(struct side *s, unsigned int nmr)
{
	unsigned int i;

	memset(s, 0, sizeof(*s));
	if (xp_open_pd_cq(&s->ctx, &s->pd, &s->cq, 4 * NQP))
		return -1;
	for (i = 0; i < NQP; i++) {
		s->qp[i] =
			xp_qp_create(s->pd, s->cq, NULL, IBV_QPT_RC, 4, 1, 0);
		if (!s->qp[i])
			return -1;
	}
	s->buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED)
		return -1;
	memset(s->buf, 0x5a, 4096);
	for (i = 0; i < nmr; i++) {
		s->mr[i] = ibv_reg_mr(s->pd, s->buf, 4096,
				      IBV_ACCESS_LOCAL_WRITE |
					      IBV_ACCESS_REMOTE_READ);
		if (!s->mr[i])
			return -1;
		s->nmr++;
	}
	return xp_port_lid(s->ctx, &s->lid);
}

static void side_close(struct side *s)
{
	unsigned int i;

	for (i = 0; i < NQP; i++)
		if (s->qp[i])
			ibv_destroy_qp(s->qp[i]);
	for (i = 0; i < s->nmr; i++)
		ibv_dereg_mr(s->mr[i]);
	xp_close_pd_cq(s->ctx, s->pd, s->cq);
	munmap(s->buf, 4096);
}

/* RESET, then RC to RTS towards (@lid, @rqpn). 0 or an errno value. */
static int qp_reconnect(struct ibv_qp *qp, uint32_t rqpn, uint16_t lid)
{
	static const struct dp_conn k = {.access = IBV_ACCESS_REMOTE_READ};
	struct ibv_qp_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (r)
		return r;
	return dp_qp_connect(qp, rqpn, lid, &k);
}

/* The target: register, disclose, then reset QPs whenever asked. */
static void target(int fd)
{
	struct tinfo ti, ai;
	unsigned long events = 0;
	struct side s;
	unsigned int i;
	char cmd;

	XCHK(!side_open(&s, NDISC + NSECRET));
	memset(&ti, 0, sizeof(ti));
	ti.lid = s.lid;
	ti.addr = (uintptr_t)s.buf;
	for (i = 0; i < NQP; i++)
		ti.qpn[i] = s.qp[i]->qp_num;
	for (i = 0; i < NDISC; i++)
		ti.rkey[i] = s.mr[i]->rkey;
	XCHK(!xio(fd, &ti, sizeof(ti), true));
	XCHK(!xio(fd, &ai, sizeof(ai), false));
	XCHK(fcntl(s.ctx->async_fd, F_SETFL,
		   fcntl(s.ctx->async_fd, F_GETFL) | O_NONBLOCK) == 0);
	for (;;) {
		struct ibv_async_event ev;

		XCHK(!xio(fd, &cmd, 1, false));
		if (cmd == 'Q')
			break;
		XCHK(cmd == 'R');
		while (!ibv_get_async_event(s.ctx, &ev)) {
			ibv_ack_async_event(&ev);
			events++;
		}
		for (i = 0; i < NQP; i++)
			XCHK(!qp_reconnect(s.qp[i], ai.qpn[i], ai.lid));
		XCHK(!xio(fd, &cmd, 1, true));
	}
	XCHK(!xio(fd, &events, sizeof(events), true));
	side_close(&s);
	_exit(0);
}

/* The attack of the issue on the old affine scramble; see
 * tests/unit/test_key_secrecy.c. */
static bool affine_dfs(const uint32_t *I, unsigned int n, unsigned int b,
		       uint32_t x, uint32_t a, uint32_t m, long *budget,
		       uint32_t sol[3])
{
	uint32_t low = b == 23 ? MASK24 : (2u << b) - 1;
	unsigned int c, i;

	if (--*budget < 0)
		return false;
	for (c = 0; c < 8; c++) {
		uint32_t nx = x | (c & 1u) << b;
		uint32_t na = a | (c >> 1 & 1u) << b;
		uint32_t nm = m | (c >> 2 & 1u) << b;

		for (i = 0; i < n; i++)
			if (((I[i] ^ nx) - (na + i * nm)) & low)
				break;
		if (i < n)
			continue;
		if (b == 23) {
			sol[0] = nx;
			sol[1] = na;
			sol[2] = nm;
			return true;
		}
		if (affine_dfs(I, n, b + 1, nx, na, nm, budget, sol))
			return true;
	}
	return false;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t rnd32(void)
{
	return (uint32_t)random() << 16 ^ (uint32_t)random();
}

/* 100,000 guesses, the informed ones first. Returns the count of those
 * that came from the affine attack. */
static unsigned int make_guesses(const struct tinfo *ti, uint32_t *g,
				 bool *solved)
{
	uint32_t known[NDISC], idx[11], sol[3];
	unsigned int n = 0, i, t, n_affine;
	long budget = 1l << 20;

	memcpy(known, ti->rkey, sizeof(known));
	qsort(known, NDISC, sizeof(known[0]), cmp_u32);
	for (i = 0; i < 11; i++)
		idx[i] = ti->rkey[i] >> 8;
	*solved = affine_dfs(idx, 11, 0, 0, 0, 0, &budget, sol);
	if (*solved)
		for (i = NDISC; i < NDISC + NSECRET; i++)
			for (t = 0; t < 256; t++)
				g[n++] = ((((sol[1] + i * sol[2]) & MASK24) ^
					   sol[0])
					  << 8) | t;
	n_affine = n;
	for (i = 0; i < NDISC; i++) {
		uint32_t k = ti->rkey[i], ix = k >> 8;

		g[n++] = k ^ (1 + rnd32() % 255);		/* other tag */
		g[n++] = ((ix + 1) & MASK24) << 8 | (rnd32() & 0xff);
		g[n++] = ((ix - 1) & MASK24) << 8 | (rnd32() & 0xff);
	}
	while (n < NGUESS)
		g[n++] = rnd32();
	/* Never try what is known to be valid. */
	for (i = 0; i < NGUESS; i++)
		while (bsearch(&g[i], known, NDISC, sizeof(known[0]), cmp_u32))
			g[i] = rnd32();
	return n_affine;
}

/* Signalled RDMA READ of 8 bytes at @addr under @rkey on QP @q. */
static void post_read(struct side *s, unsigned int q, uint64_t addr,
		      uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf,
		.length = 8,
		.lkey = s->mr[0]->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(ibv_post_send(s->qp[q], &wr, &bad), 0);
}

static void test_key_guess_from_other_process_gets_no_hit(void **state)
{
	static uint32_t g[NGUESS];
	struct tinfo ti, ai;
	unsigned long events = 0;
	unsigned int i, q, hits = 0, misses = 0, other = 0, n_affine;
	unsigned int hits_affine = 0;
	uint64_t t0, t1;
	struct side s;
	bool solved, reset = true;
	int fd, st;
	pid_t pid;
	char cmd;

	(void)state;
	alarm(240);
	pid = xp_spawn(&fd, target, 0);
	assert_int_equal(side_open(&s, 1), 0);
	assert_int_equal(xio(fd, &ti, sizeof(ti), false), 0);
	memset(&ai, 0, sizeof(ai));
	ai.lid = s.lid;
	for (i = 0; i < NQP; i++)
		ai.qpn[i] = s.qp[i]->qp_num;
	assert_int_equal(xio(fd, &ai, sizeof(ai), true), 0);
	srandom((unsigned int)getpid());
	n_affine = make_guesses(&ti, g, &solved);

	/* Control: a disclosed key does read, on every QP. */
	cmd = 'R';
	assert_int_equal(xio(fd, &cmd, 1, true), 0);
	assert_int_equal(xio(fd, &cmd, 1, false), 0);
	for (q = 0; q < NQP; q++) {
		struct ibv_wc wc;

		assert_int_equal(qp_reconnect(s.qp[q], ti.qpn[q], ti.lid), 0);
		memset(s.buf, 0, 8);
		post_read(&s, q, ti.addr, ti.rkey[q * 31], 0);
		assert_int_equal(dp_poll(s.cq, &wc, 10000), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_true(s.buf[0] == 0x5a);
	}

	t0 = dp_now_ms();
	for (i = 0; i < NGUESS; i += NQP) {
		unsigned int nb = NGUESS - i < NQP ? NGUESS - i : NQP;

		if (reset) {	/* target QPs (still) in ERR or RESET */
			cmd = 'R';
			assert_int_equal(xio(fd, &cmd, 1, true), 0);
			assert_int_equal(xio(fd, &cmd, 1, false), 0);
			reset = false;
		}
		for (q = 0; q < NQP; q++)
			assert_int_equal(qp_reconnect(s.qp[q], ti.qpn[q],
						      ti.lid),
					 0);
		for (q = 0; q < nb; q++)
			post_read(&s, q, ti.addr, g[i + q], i + q);
		for (q = 0; q < nb; q++) {
			struct ibv_wc wc;

			assert_int_equal(dp_poll(s.cq, &wc, 10000), 1);
			if (wc.status == IBV_WC_SUCCESS) {
				hits++;
				hits_affine += wc.wr_id < n_affine;
				printf("key guessing: HIT rkey 0x%08x\n",
				       g[wc.wr_id]);
			} else if (wc.status == IBV_WC_REM_ACCESS_ERR) {
				misses++;
				reset = true;
			} else {
				other++;
				reset = true;
			}
		}
	}
	t1 = dp_now_ms();
	cmd = 'Q';
	assert_int_equal(xio(fd, &cmd, 1, true), 0);
	assert_int_equal(xio(fd, &events, sizeof(events), false), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	side_close(&s);
	alarm(0);

	printf("key guessing: target has %u live rkeys, %u known to the "
	       "attacker; affine attack %s (%u guesses from it)\n",
	       NDISC + NSECRET, NDISC, solved ? "solved" : "found nothing",
	       n_affine);
	printf("key guessing: %u guessed rkeys by RDMA READ from another "
	       "process in %.1f s: %u hits (%u from the affine attack), %u "
	       "REM_ACCESS_ERR, %u other; target saw %lu QP_ACCESS_ERR "
	       "events\n",
	       NGUESS, (double)(t1 - t0) / 1000, hits, hits_affine, misses,
	       other, events);
	assert_int_equal(other, 0);
	assert_int_equal(hits, 0);
	assert_int_equal(misses, NGUESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_guess_from_other_process_gets_no_hit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
