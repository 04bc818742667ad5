// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_mr_log.c - every registration refusal says why under SRDMA_LOG
 * (architecture.md principle 9; src/core/mr.c, src/core/mw.c).
 *
 * The library reads SRDMA_LOG and SRDMA_LOG_FILE once, at the first
 * device-list or open call of the process, and appends one line per
 * message to that file (line-buffered). main() therefore points both at a
 * file in this test's SRDMA_DIR before anything else runs. Each check
 * notes the file's size, makes one call that must be refused with a
 * given errno (or completion status), and then looks for the reason in
 * exactly the lines that call appended: a refusal that is silent, or that
 * gives another reason, is a deviation. A call that succeeds must add no
 * line mentioning a refusal of its own.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "dp_util.h"

#define LW  IBV_ACCESS_LOCAL_WRITE
#define RW  IBV_ACCESS_REMOTE_WRITE
#define RR  IBV_ACCESS_REMOTE_READ
#define RA  IBV_ACCESS_REMOTE_ATOMIC
#define ODP IBV_ACCESS_ON_DEMAND

static char log_path[4096];

/* Where the log file ends now (0 if it does not exist yet). */
static off_t log_mark(void)
{
	struct stat st;

	return stat(log_path, &st) ? 0 : st.st_size;
}

/* The text appended to the log since @mark, NUL-terminated (free it). */
static char *log_since(off_t mark)
{
	FILE *f = fopen(log_path, "re");
	size_t cap = 4096, n = 0;
	char *s = malloc(cap);

	assert_non_null(s);
	if (f && !fseeko(f, mark, SEEK_SET)) {
		size_t got;

		while ((got = fread(s + n, 1, cap - 1 - n, f)) > 0) {
			n += got;
			if (n == cap - 1) {
				cap *= 2;
				s = realloc(s, cap);
				assert_non_null(s);
			}
		}
	}
	if (f)
		fclose(f);
	s[n] = '\0';
	return s;
}

/* Soft check: the lines since @mark contain @why. */
#define expect_logged(mark, why, what)                                         \
	expect_logged_at(__FILE__, __LINE__, mark, why, what)
static void expect_logged_at(const char *file, int line, off_t mark,
			     const char *why, const char *what)
{
	char *s = log_since(mark);

	if (!strstr(s, why))
		fu_report(file, line,
			  "%s: refused, but no \"%s\" in the log; it got:\n%s",
			  what, why, *s ? s : "(nothing)\n");
	free(s);
}

/* ibv_reg_mr_iova2 must fail with @want and log @why. */
#define expect_reg_refused(pd, addr, len, iova, acc, want, why)                \
	expect_reg_refused_at(__FILE__, __LINE__, pd, addr, len, iova, acc,    \
			      want, why)
static void expect_reg_refused_at(const char *file, int line,
				  struct ibv_pd *pd, void *addr, size_t len,
				  uint64_t iova, unsigned int acc, int want,
				  const char *why)
{
	off_t mark = log_mark();
	struct ibv_mr *mr;
	char what[160];
	int got;

	errno = 0;
	mr = ibv_reg_mr_iova2(pd, addr, len, iova, acc);
	got = errno;
	snprintf(what, sizeof(what), "reg_mr(%p, %#zx, iova %#" PRIx64
		 ", access %#x)", addr, len, iova, acc);
	if (mr) {
		fu_report(file, line, "%s succeeded, want %s", what,
			  fu_errname(want));
		ibv_dereg_mr(mr);
		return;
	}
	if (got != want)
		fu_report(file, line, "%s: %s, want %s", what, fu_errname(got),
			  fu_errname(want));
	expect_logged_at(file, line, mark, why, what);
}

/* The logging itself: the file exists and names process and function. */
static void test_mr_log_lines_name_pid_and_function(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	char want[64];
	off_t mark = log_mark();
	char *s;

	assert_null(ibv_reg_mr(fu.pd, buf, 0, LW));
	s = log_since(mark);
	snprintf(want, sizeof(want), "softrdma[%d] debug ", (int)getpid());
	fu_expect(strstr(s, want) != NULL, "no \"%s\" prefix in:\n%s", want,
		  s);
	fu_expect(strchr(s, '\n') != NULL, "log line not terminated: %s", s);
	free(s);
	munmap(buf, fu.pg);
	fu_done();
}

/* Access flags (verbs-semantics.md 2.3 rules 3 and 4). */
static void test_mr_log_access_refusals(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	uint64_t a = (uintptr_t)buf;

	expect_reg_refused(fu.pd, buf, fu.pg, a, LW | (1u << 15), EINVAL,
			   "bits 0x8000 are not access flags");
	expect_reg_refused(fu.pd, buf, fu.pg, a, 1u << 31, EINVAL,
			   "are not access flags");
	expect_reg_refused(fu.pd, buf, fu.pg, a, RW, EINVAL,
			   "REMOTE_WRITE or REMOTE_ATOMIC needs LOCAL_WRITE");
	expect_reg_refused(fu.pd, buf, fu.pg, a, RA | RR, EINVAL,
			   "REMOTE_WRITE or REMOTE_ATOMIC needs LOCAL_WRITE");
	expect_reg_refused(fu.pd, buf, fu.pg, a, LW | IBV_ACCESS_FLUSH_GLOBAL,
			   EOPNOTSUPP,
			   "FLUSH_GLOBAL/FLUSH_PERSISTENT are not offered");
	/* implicit ODP of the wrong shape (ODP on by default) */
	expect_reg_refused(fu.pd, buf, SIZE_MAX, 0, ODP | LW, EINVAL,
			   "implicit ODP takes addr 0, iova 0");
	munmap(buf, fu.pg);
	fu_done();
}

/* Length, wrapping, page offset and mapping (rules 2, 6 and 8). */
static void test_mr_log_range_refusals(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	char *ro = fu_map(fu.pg, PROT_READ);
	void *gone = fu_unmapped(2 * fu.pg);
	uint64_t a = (uintptr_t)buf;

	expect_reg_refused(fu.pd, buf, 0, a, LW, EINVAL, "length 0");
	expect_reg_refused(fu.pd, (void *)(UINTPTR_MAX - 100), fu.pg,
			   UINTPTR_MAX - 100, 0, EINVAL,
			   "wraps the address space");
	/* the memory is fine, the iova window wraps */
	expect_reg_refused(fu.pd, buf, fu.pg, UINT64_MAX - fu.pg + 1, LW,
			   EINVAL, "wraps the address space");
	expect_reg_refused(fu.pd, buf + 8, 64, a + 16, LW, EINVAL,
			   "differ in their page offset");
	expect_reg_refused(fu.pd, gone, fu.pg, (uintptr_t)gone, 0, EFAULT,
			   "is not mapped");
	expect_reg_refused(fu.pd, ro, fu.pg, (uintptr_t)ro, LW, EFAULT,
			   "is not mapped writable");
	munmap(ro, fu.pg);
	munmap(buf, 2 * fu.pg);
	fu_done();
}

/* ODP switched off (SRDMA_ODP=0, read when a device is opened). */
static void test_mr_log_odp_off(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_context *ctx;
	struct ibv_pd *pd;

	setenv("SRDMA_ODP", "0", 1);
	ctx = fu_open_srdma();
	unsetenv("SRDMA_ODP");
	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	expect_reg_refused(pd, buf, fu.pg, (uintptr_t)buf, ODP | LW,
			   EOPNOTSUPP, "ON_DEMAND, but ODP is off");
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	munmap(buf, fu.pg);
	fu_done();
}

/* dma-buf: an fd that is not open, and one that is not a dma-buf. */
static void test_mr_log_dmabuf_refusals(void **state)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	struct ibv_mr *mr;
	off_t mark;

	assert_true(fd >= 0);
	mark = log_mark();
	mr = ibv_reg_dmabuf_mr(fu.pd, 0, fu.pg, 0, 1000000, LW);
	fu_expect(!mr && errno == EBADF, "dmabuf fd 1000000: %s, want EBADF",
		  mr ? "success" : fu_errname(errno));
	expect_logged(mark, "dma-buf fd 1000000 is not an open descriptor",
		      "reg_dmabuf_mr(closed fd)");
	mark = log_mark();
	mr = ibv_reg_dmabuf_mr(fu.pd, 0, fu.pg, 0, fd, LW);
	fu_expect(!mr && errno == EINVAL, "dmabuf /dev/null: %s, want EINVAL",
		  mr ? "success" : fu_errname(errno));
	expect_logged(mark, "is not a dma-buf", "reg_dmabuf_mr(/dev/null)");
	mark = log_mark();
	mr = ibv_reg_dmabuf_mr(fu.pd, 0, fu.pg, 0, fd, LW | IBV_ACCESS_MW_BIND);
	fu_expect(!mr && errno == EINVAL,
		  "dmabuf with MW_BIND: %s, want EINVAL",
		  mr ? "success" : fu_errname(errno));
	expect_logged(mark, "are not allowed on a dma-buf MR",
		      "reg_dmabuf_mr(MW_BIND)");
	close(fd);
	fu_done();
}

/* rereg_mr and advise_mr argument refusals. */
static void test_mr_log_rereg_and_advise(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr = ibv_reg_mr(fu.pd, buf, fu.pg, LW);
	struct ibv_sge sge;
	off_t mark;

	assert_non_null(mr);
	mark = log_mark();
	fu_expect(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0) ==
			  IBV_REREG_MR_ERR_INPUT,
		  "rereg with no flags accepted");
	expect_logged(mark, "rereg_mr: flags 0", "rereg_mr(flags 0)");
	mark = log_mark();
	fu_expect(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, fu.pd, NULL, 0,
			       LW) == IBV_REREG_MR_ERR_INPUT,
		  "rereg with access but no CHANGE_ACCESS accepted");
	expect_logged(mark, "given without CHANGE_ACCESS",
		      "rereg_mr(access without CHANGE_ACCESS)");

	mark = log_mark();
	fu_expect(ibv_advise_mr(fu.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				IBV_ADVISE_MR_FLAG_FLUSH, NULL, 0) == EINVAL,
		  "advise_mr without SGE accepted");
	expect_logged(mark, "advise_mr: no SGE", "advise_mr(no SGE)");
	sge.addr = (uintptr_t)buf;
	sge.length = 64;
	sge.lkey = mr->lkey;
	mark = log_mark();
	fu_expect(ibv_advise_mr(fu.pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
				IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == ENOENT,
		  "advise_mr on a pinned MR: not ENOENT");
	expect_logged(mark, "is not an ODP MR", "advise_mr(not ODP)");
	assert_int_equal(ibv_dereg_mr(mr), 0);
	munmap(buf, fu.pg);
	fu_done();
}

/*
 * Memory windows: a bind over an MR registered without MW_BIND completes
 * with IBV_WC_MW_BIND_ERR and says so; an MR with a bound window refuses
 * dereg (EBUSY) and says how many windows hold it.
 */
static void test_mr_log_window_refusals(void **state)
{
	struct dp_ep A, B;
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct ibv_mr *nobind, *mr;
	struct ibv_mw *mw;
	struct ibv_mw_bind b;
	struct ibv_wc wc;
	off_t mark;

	dp_ep_open(&A, false);
	dp_ep_open(&B, false);
	dp_qp_create(&A, IBV_QPT_RC, 0);
	dp_qp_create(&B, IBV_QPT_RC, 0);
	dp_connect(&A, B.qp->qp_num, B.lid, &k);
	dp_connect(&B, A.qp->qp_num, A.lid, &k);
	nobind = ibv_reg_mr(B.pd, B.buf, B.len, LW | RW | RR);
	assert_non_null(nobind);
	mw = ibv_alloc_mw(B.pd, IBV_MW_TYPE_1);
	assert_non_null(mw);

	memset(&b, 0, sizeof(b));
	b.wr_id = 1;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = nobind;
	b.bind_info.addr = (uintptr_t)B.buf;
	b.bind_info.length = 64;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	mark = log_mark();
	assert_int_equal(ibv_bind_mw(B.qp, mw, &b), 0);
	dp_expect_wc(B.cq, IBV_WC_MW_BIND_ERR, &wc, "bind over an MR "
		     "without MW_BIND");
	expect_logged(mark, "MR lacks MW_BIND", "bind_mw(MR without MW_BIND)");

	/* The bind error moved B's QP to ERR: a fresh pair for the rest. */
	ibv_destroy_qp(A.qp);
	ibv_destroy_qp(B.qp);
	dp_qp_create(&A, IBV_QPT_RC, 0);
	dp_qp_create(&B, IBV_QPT_RC, 0);
	dp_connect(&A, B.qp->qp_num, B.lid, &k);
	dp_connect(&B, A.qp->qp_num, A.lid, &k);
	mr = B.mr;
	b.bind_info.mr = mr;
	assert_int_equal(ibv_bind_mw(B.qp, mw, &b), 0);
	dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "bind over an MW_BIND MR");
	mark = log_mark();
	fu_expect_int(ibv_dereg_mr(mr), EBUSY, "dereg with a window bound");
	expect_logged(mark, "1 window(s) still bound",
		      "dereg_mr(window bound)");

	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(nobind), 0);
	dp_ep_close(&A);
	dp_ep_close(&B);
	fu_done();
}

/* A registration that succeeds logs no refusal. */
static void test_mr_log_success_is_quiet(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	off_t mark = log_mark();
	struct ibv_mr *mr = ibv_reg_mr(fu.pd, buf, fu.pg, LW | RW | RR);
	char *s;

	assert_non_null(mr);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	s = log_since(mark);
	fu_expect(!strstr(s, "access ") && !strstr(s, "length") &&
			  !strstr(s, "mapped"),
		  "a good registration logged a refusal:\n%s", s);
	free(s);
	munmap(buf, fu.pg);
	fu_done();
}

int main(void)
{
	const char *dir = getenv("SRDMA_DIR");
	const struct CMUnitTest tests[] = {
		FU_TEST(test_mr_log_lines_name_pid_and_function),
		FU_TEST(test_mr_log_access_refusals),
		FU_TEST(test_mr_log_range_refusals),
		FU_TEST(test_mr_log_odp_off),
		FU_TEST(test_mr_log_dmabuf_refusals),
		FU_TEST(test_mr_log_rereg_and_advise),
		FU_TEST(test_mr_log_window_refusals),
		FU_TEST(test_mr_log_success_is_quiet),
	};

	/* Before the first library call: the log settings are read once. */
	if (!dir || !*dir)
		dir = "/tmp";
	mkdir(dir, 0700);
	snprintf(log_path, sizeof(log_path), "%s/test_mr_log.%d.log", dir,
		 (int)getpid());
	unlink(log_path);
	setenv("SRDMA_LOG", "debug", 1);
	setenv("SRDMA_LOG_FILE", log_path, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
