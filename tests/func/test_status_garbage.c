// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_status_garbage.c - `srdma status` on a segment whose tables hold
 * garbage: every damaged entry is shown as such (GARBAGE, TORN), the rest
 * as usual, the JSON document stays valid, and the reader never crashes
 * or hangs.
 *
 * The test opens a context with a CQ, an SRQ, an RC QP and an MR, maps
 * its own segment file as `srdma status` does, and overwrites, one case
 * at a time: the CQ entry's ring size (not a power of two), the QP
 * entry's type, the SRQ's head (more posted than it holds), the MR's key
 * entry seqlock (odd: a writer that died mid-update), the resource
 * table's endpoint seqlock (odd), its PD list (a handle no PD has), the
 * QP's net counters offset (outside the arena), the resource table's
 * magic, and finally every byte of the QP, CQ and SRQ entries (random).
 * After each case it runs `srdma status --no-reap` and `srdma status
 * --no-reap --json | python3 -m json.tool`, checks both exit 0 and what
 * the text says, and puts the original bytes back, so the library tears
 * the objects down normally (nothing in this process reads the entries
 * meanwhile: no traffic, no net endpoint).
 *
 * test_status_many_pds: more PDs than the resource table lists.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "dp_util.h"
#include "transport/host/shm_layout.h"

static struct dp_ep A;

/* Run @args through a shell, capture stdout; *rc gets the exit status. */
static char *run(const char *args, int *rc)
{
	const char *bd = getenv("SRDMA_BUILD_DIR");
	char cmd[1024], *buf = NULL;
	size_t len = 0, cap = 0, n;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/bin/srdma status --no-reap %s",
		 bd ? bd : ".", args);
	f = popen(cmd, "r");
	assert_non_null(f);
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 16384;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n);
	buf[len] = 0;
	st = pclose(f);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return buf;
}

/* Status, text and JSON, must both succeed; the text is checked for
 * every string of @want (NULL-terminated). */
static void check_status(const char *what, const char *const *want)
{
	char *out;
	int rc;

	out = run("", &rc);
	fu_expect(rc == 0, "%s: srdma status exit %d:\n%s", what, rc, out);
	for (; *want; want++)
		fu_expect(strstr(out, *want), "%s: no '%s' in:\n%s", what,
			  *want, out);
	free(out);
	out = run("--json | python3 -m json.tool >/dev/null && echo JSON-OK",
		  &rc);
	fu_expect(rc == 0 && strstr(out, "JSON-OK"),
		  "%s: --json is not valid JSON (exit %d)", what, rc);
	free(out);
}

static void scribble(void *p, size_t len, unsigned int seed)
{
	unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (unsigned char)(seed >> 16);
	}
}

static void test_status_garbage(void **state)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
	struct srdma_shm_cq *cq = NULL, cq_save;
	struct srdma_shm_qp *qp, qp_save;
	struct srdma_shm_srq *srq = NULL, srq_save;
	struct srdma_shm_key *key = NULL, key_save;
	struct srdma_shm_rt *rt, rt_save;
	struct ibv_srq *s;
	char path[600];
	uint32_t i, slot;
	void *seg;
	int fd;

	(void)state;
	dp_ep_open(&A, false);
	dp_qp_create(&A, IBV_QPT_RC, 0);
	s = ibv_create_srq(A.pd, &sa);
	assert_non_null(s);

	snprintf(path, sizeof(path), "%s/ctx.%u.%d", getenv("SRDMA_DIR"),
		 A.qp->qp_num >> SRDMA_QPN_SHIFT, (int)getpid());
	fd = open(path, O_RDWR);
	fu_expect(fd >= 0, "open %s: %s", path, strerror(errno));
	if (fd < 0)
		goto out;
	seg = mmap(NULL, SRDMA_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   0);
	assert_true(seg != MAP_FAILED);
	close(fd);
	qp = (struct srdma_shm_qp *)((char *)seg + SRDMA_SEG_QP_OFF) +
	     (A.qp->qp_num & (SRDMA_SEG_QP_SLOTS - 1));
	for (i = 0; i < 16 && !cq; i++) {
		struct srdma_shm_cq *c =
			(struct srdma_shm_cq *)((char *)seg +
						SRDMA_SEG_CQ_OFF) +
			i;
		if (atomic_load(&c->state) == SRDMA_OBJ_LIVE)
			cq = c;
	}
	for (i = 0; i < 16 && !srq; i++) {
		struct srdma_shm_srq *q =
			(struct srdma_shm_srq *)((char *)seg +
						 SRDMA_SEG_SRQ_OFF) +
			i;
		if (atomic_load(&q->live) == SRDMA_OBJ_LIVE)
			srq = q;
	}
	/* The MR's key entry: level 0 keys live in the first 1024 slots. */
	for (slot = 0; slot < 1024 && !key; slot++) {
		struct srdma_shm_key *k =
			(struct srdma_shm_key *)((char *)seg +
						 SRDMA_SEG_KEY_OFF) +
			slot;
		if (atomic_load(&k->key) == A.mr->lkey)
			key = k;
	}
	rt = (struct srdma_shm_rt *)((char *)seg + SRDMA_SEG_RT_OFF);
	fu_expect(cq && srq && key, "found cq %p srq %p key %p", (void *)cq,
		  (void *)srq, (void *)key);
	if (!cq || !srq || !key)
		goto out_unmap;
	fu_expect(rt->magic == SRDMA_RT_MAGIC && atomic_load(&rt->n_pd) == 1,
		  "resource table magic %#x, %u PDs", rt->magic,
		  atomic_load(&rt->n_pd));
	memcpy(&cq_save, cq, sizeof(cq_save));
	memcpy(&qp_save, qp, sizeof(qp_save));
	memcpy(&srq_save, srq, sizeof(srq_save));
	memcpy(&key_save, key, sizeof(key_save));
	memcpy(&rt_save, rt, sizeof(rt_save));

	{
		static const char *const want[] = {"LIVE", "RESET", NULL};

		check_status("intact", want);
	}

	cq->size = 3;
	{
		static const char *const want[] = {"GARBAGE", NULL};

		check_status("CQ ring size 3", want);
	}
	memcpy(cq, &cq_save, sizeof(cq_save));

	qp->type = 77;
	{
		static const char *const want[] = {"GARBAGE", NULL};

		check_status("QP type 77", want);
	}
	memcpy(qp, &qp_save, sizeof(qp_save));

	atomic_store(&srq->rq.head, atomic_load(&srq->rq.tail) + 1000000);
	{
		static const char *const want[] = {"GARBAGE", NULL};

		check_status("SRQ head far ahead", want);
	}
	memcpy(srq, &srq_save, sizeof(srq_save));

	atomic_store(&key->seq, atomic_load(&key->seq) | 1);
	{
		static const char *const want[] = {"TORN", NULL};

		check_status("key entry seqlock odd", want);
	}
	memcpy(key, &key_save, sizeof(key_save));

	atomic_store(&rt->ep_seq, 7);
	atomic_store(&rt->pd[SRDMA_RT_PD_SLOTS - 1].handle, 0xdeadbeefu);
	{
		static const char *const want[] = {"TORN", "3735928559", NULL};

		check_status("endpoint seqlock odd, unknown PD", want);
	}
	memcpy(rt, &rt_save, sizeof(rt_save));

	atomic_store(&qp->net_st_off, 12345);
	{
		static const char *const want[] = {"RTS", NULL};
		char *out;
		int rc;

		/* Not RTS: the QP is in RESET. Only the JSON says "net". */
		(void)want;
		out = run("--json", &rc);
		fu_expect(rc == 0 && strstr(out, "\"net\": \"GARBAGE\""),
			  "net_st_off outside the arena: %s", out);
		free(out);
	}
	memcpy(qp, &qp_save, sizeof(qp_save));

	rt->magic = 0x12345678;
	{
		char *out;
		int rc;

		out = run("--json", &rc);
		fu_expect(rc == 0 && strstr(out, "\"resource_table\": "
						 "\"GARBAGE\""),
			  "resource table magic: %s", out);
		free(out);
	}
	memcpy(rt, &rt_save, sizeof(rt_save));

	for (i = 0; i < 5; i++) {
		static const char *const want[] = {NULL};

		scribble(qp, sizeof(*qp), i);
		scribble(cq, sizeof(*cq), i + 100);
		scribble(srq, sizeof(*srq), i + 200);
		scribble(key, sizeof(*key), i + 300);
		scribble(rt, 1024, i + 400);
		check_status("random entries", want);
		memcpy(qp, &qp_save, sizeof(qp_save));
		memcpy(cq, &cq_save, sizeof(cq_save));
		memcpy(srq, &srq_save, sizeof(srq_save));
		memcpy(key, &key_save, sizeof(key_save));
		memcpy(rt, &rt_save, sizeof(rt_save));
	}
	{
		static const char *const want[] = {"LIVE", NULL};

		check_status("restored", want);
	}
out_unmap:
	munmap(seg, SRDMA_SEG_SIZE);
out:
	assert_int_equal(ibv_destroy_srq(s), 0);
	dp_ep_close(&A);
	fu_done();
}

/* Count the PDs of the context in `srdma status --json`: "pds" and
 * "pds_unlisted" (0 when absent) of the context row. */
static void pd_counts(unsigned int *listed_total, unsigned int *unlisted)
{
	char *out, *p;
	int rc;

	out = run("--json", &rc);
	assert_int_equal(rc, 0);
	p = strstr(out, "\"pds\": ");
	*listed_total = p ? (unsigned int)strtoul(p + 7, NULL, 10) : ~0u;
	p = strstr(out, "\"pds_unlisted\": ");
	*unlisted = p ? (unsigned int)strtoul(p + 16, NULL, 10) : 0;
	free(out);
}

/*
 * More PDs than the resource table lists: status counts them all, lists
 * the first SRDMA_RT_PD_SLOTS and says how many more there are; a freed
 * listed PD leaves its slot, a freed unlisted one leaves the count.
 */
static void test_status_many_pds(void **state)
{
	const unsigned int n = SRDMA_RT_PD_SLOTS + 4;
	struct ibv_context *ctx = fu_open_srdma();
	struct ibv_pd **pd = calloc(n, sizeof(*pd));
	unsigned int i, total, unlisted;

	(void)state;
	assert_non_null(pd);
	for (i = 0; i < n; i++) {
		pd[i] = ibv_alloc_pd(ctx);
		assert_non_null(pd[i]);
	}
	pd_counts(&total, &unlisted);
	fu_expect(total == n && unlisted == 4,
		  "%u PDs: status says %u, %u "
		  "unlisted",
		  n, total, unlisted);
	for (i = 0; i < 10; i++) /* listed ones */
		assert_int_equal(ibv_dealloc_pd(pd[i]), 0);
	for (i = n - 2; i < n; i++) /* unlisted ones */
		assert_int_equal(ibv_dealloc_pd(pd[i]), 0);
	pd_counts(&total, &unlisted);
	fu_expect(total == n - 12 && unlisted == 2,
		  "after 12 deallocs: %u, %u unlisted", total, unlisted);
	for (i = 10; i < n - 2; i++)
		assert_int_equal(ibv_dealloc_pd(pd[i]), 0);
	pd_counts(&total, &unlisted);
	fu_expect(total == 0 && unlisted == 0, "after all: %u, %u unlisted",
		  total, unlisted);
	free(pd);
	assert_int_equal(ibv_close_device(ctx), 0);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_garbage),
		cmocka_unit_test(test_status_many_pds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
