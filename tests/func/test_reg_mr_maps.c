// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_reg_mr_maps.c - the mapped/writable check of registration (docs
 * verbs-semantics.md 2.3 step 8) in hostile and crowded address spaces.
 *
 * CTest runs this file once per way of asking the kernel about mappings:
 * SRDMA_MAPS_QUERY unset (the PROCMAP_QUERY ioctl of Linux 6.11+) and
 * SRDMA_MAPS_QUERY=fallback (what Debian 12's 6.1 kernel gets), and
 * SRDMA_MAPS_QUERY=parse (the fallback's /proc/self/maps reader alone).
 * The answers must not depend on the path:
 *
 *  - forged line: a mapped file whose ~440-character path contains the
 *    text of a /proc/self/maps line. A reader that cuts lines at 512 bytes
 *    takes the path's tail for a mapping, so an unmapped range next to the
 *    file registered. It must fail with EFAULT.
 *  - answers: unmapped, PROT_NONE, read-only, write-only, mixed and
 *    holed ranges, small and large, each with and without a write access.
 *  - crowd: the same answers with 5,000 more mappings below the buffers
 *    (so a maps reader must go through all of them), and the median cost
 *    of ibv_reg_mr + ibv_dereg_mr of 4 KiB then, printed (bound: 100 us,
 *    50x the target, so only a per-mapping cost can trip it; not for
 *    SRDMA_MAPS_QUERY=parse, which reads the maps file every time).
 *  - ODP never populates; the check never writes (no store of a thread
 *    writing the buffer is lost while it is registered over and over).
 */
#include "func_util.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>

#define LW  IBV_ACCESS_LOCAL_WRITE
#define RW  IBV_ACCESS_REMOTE_WRITE
#define RR  IBV_ACCESS_REMOTE_READ
#define ODP IBV_ACCESS_ON_DEMAND

#define CROWD 5000

static const char *mode(void)
{
	const char *m = getenv("SRDMA_MAPS_QUERY");

	return m && *m ? m : "auto";
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- forged line ------------------------------------------------------- */

/* The reader this test defeats: fgets() into 512 bytes. */
#define NAIVE_LINE 512
/* Spaces before the forged text; the cut must fall among them. */
#define FORGE_LEAD 40

/* Column at which @path starts in the maps line of the VMA at @start. */
static int maps_path_col(uintptr_t start, const char *path)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char pfx[32], *line = NULL, *p;
	size_t cap = 0;
	int col = -1;

	assert_non_null(f);
	snprintf(pfx, sizeof(pfx), "%lx-", (unsigned long)start);
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, pfx, strlen(pfx)))
			continue;
		p = strstr(line, path);
		if (p)
			col = (int)(p - line);
		break;
	}
	free(line);
	fclose(f);
	return col;
}

/* Would the 512-byte line reader see a mapping [s, e) "rw"? */
static bool naive_reader_sees(uintptr_t s, uintptr_t e)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[NAIVE_LINE];
	bool seen = false;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3 &&
		    a == s && b == e && !strncmp(perms, "rw", 2))
			seen = true;
	}
	fclose(f);
	return seen;
}

/* Map a one-page file of @dir/@name at @at, read-only and shared. */
static void map_file_at(void *at, const char *path, size_t pg)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)pg), 0);
	assert_true(mmap(at, pg, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE,
			 fd, 0) == at);
	close(fd);
}

static void test_reg_mr_maps_forged_line(void **state)
{
	char tmpl[PATH_MAX], dir[PATH_MAX], path[2 * PATH_MAX];
	char pads[8][PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	int col, need, npads = 0, i;
	char *r, *u;
	size_t len;

	(void)state;
	assert_non_null(realpath(tmp && *tmp ? tmp : "/tmp", tmpl));
	strcat(tmpl, "/srdma-forge-XXXXXX");
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, dir));

	/* R: the file's page; U = R + pg: the unmapped page to register. */
	r = fu_unmapped(2 * fu.pg);
	u = r + fu.pg;

	/* Where does a path start in a maps line? (Padded to a column.) */
	snprintf(path, sizeof(path), "%s/probe", dir);
	map_file_at(r, path, fu.pg);
	col = maps_path_col((uintptr_t)r, dir);
	assert_true(col > 0);
	assert_int_equal(munmap(r, fu.pg), 0);
	assert_int_equal(unlink(path), 0);

	/* Directories that push the forged name to just before the cut. */
	len = strlen(dir);
	need = NAIVE_LINE - 1 - FORGE_LEAD / 2 - col - (int)len - 1;
	assert_true(need > 2);
	strcpy(path, dir);
	while (need > 1) {
		int c = need - 1 > 200 ? 200 : need - 1;

		len = strlen(path);
		path[len] = '/';
		memset(path + len + 1, 'd', (size_t)c);
		path[len + 1 + c] = 0;
		assert_int_equal(mkdir(path, 0700), 0);
		assert_true(npads < 8);
		strcpy(pads[npads++], path);
		need -= c + 1;
	}
	len = strlen(path);
	snprintf(path + len, sizeof(path) - len,
		 "/%*s%lx-%lx rw-p 00000000 00:00 0", FORGE_LEAD, "",
		 (unsigned long)(uintptr_t)u,
		 (unsigned long)(uintptr_t)(u + fu.pg));
	map_file_at(r, path, fu.pg);
	/* The bait works: a 512-byte line reader sees U mapped rw. */
	assert_true(naive_reader_sees((uintptr_t)u, (uintptr_t)(u + fu.pg)));
	printf("forged line [%s]: %zu-char path names [%p, %p) rw-p\n", mode(),
	       strlen(path), (void *)u, (void *)(u + fu.pg));

	fu_expect_reg_err(fu.pd, u, fu.pg, (uintptr_t)u, LW, EFAULT);
	fu_expect_reg_err(fu.pd, u, fu.pg, (uintptr_t)u, RR, EFAULT);
	fu_expect_reg_err(fu.pd, u + 8, 16, (uintptr_t)u + 8, 0, EFAULT);
	fu_expect_reg_err(fu.pd, r, 2 * fu.pg, (uintptr_t)r, RR, EFAULT);
	/* The file page itself: readable, not writable. */
	fu_expect_reg_ok(fu.pd, r, fu.pg, (uintptr_t)r, RR);
	fu_expect_reg_err(fu.pd, r, fu.pg, (uintptr_t)r, LW, EFAULT);
	printf("forged line [%s]: unmapped page with LOCAL_WRITE -> %s\n",
	       mode(), fu_failures ? "REGISTERED (fooled)" : "EFAULT");

	assert_int_equal(munmap(r, fu.pg), 0);
	assert_int_equal(unlink(path), 0);
	for (i = npads - 1; i >= 0; i--)
		assert_int_equal(rmdir(pads[i]), 0);
	assert_int_equal(rmdir(dir), 0);
	fu_done();
}

/* ---- answers ----------------------------------------------------------- */

/* @n pages at a fresh address, @prot. */
static char *map_pages(size_t n, int prot)
{
	return fu_map(n * fu.pg, prot);
}

static void check_answers(const char *label)
{
	size_t pg = fu.pg, big = 4096; /* pages: 16 MiB with 4 KiB pages */
	char *rw = map_pages(4, PROT_READ | PROT_WRITE);
	char *ro = map_pages(4, PROT_READ);
	char *none = map_pages(2, PROT_NONE);
	char *wo = map_pages(2, PROT_WRITE);
	char *mix = map_pages(4, PROT_READ | PROT_WRITE);
	char *hole = fu_map_with_hole();
	char *large = map_pages(big, PROT_READ | PROT_WRITE);
	char *tail = fu_unmapped((big + 1) * pg);
	int fails = fu_failures;

	/* mix: pages 0-1 rw, 2-3 ro (two VMAs) */
	assert_int_equal(mprotect(mix + 2 * pg, 2 * pg, PROT_READ), 0);
	/* tail: a large rw range followed by an unmapped page */
	assert_true(mmap(tail, big * pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0) == tail);

	fu_expect_reg_ok(fu.pd, rw, 4 * pg, (uintptr_t)rw, LW | RW | RR);
	fu_expect_reg_ok(fu.pd, rw + 5, pg, (uintptr_t)rw + 5, LW);
	fu_expect_reg_ok(fu.pd, rw, 4 * pg, (uintptr_t)rw, 0);
	fu_expect_reg_ok(fu.pd, ro, 4 * pg, (uintptr_t)ro, RR);
	fu_expect_reg_err(fu.pd, ro, pg, (uintptr_t)ro, LW, EFAULT);
	fu_expect_reg_err(fu.pd, ro + 1, 1, (uintptr_t)ro + 1, LW | RW, EFAULT);
	fu_expect_reg_err(fu.pd, none, pg, (uintptr_t)none, 0, EFAULT);
	fu_expect_reg_err(fu.pd, none, 2 * pg, (uintptr_t)none, LW, EFAULT);
	/* write-only: not readable, so not registrable (as PROCMAP_QUERY
	 * answers); whatever the access */
	fu_expect_reg_err(fu.pd, wo, pg, (uintptr_t)wo, LW, EFAULT);
	fu_expect_reg_err(fu.pd, wo, pg, (uintptr_t)wo, RR, EFAULT);
	fu_expect_reg_ok(fu.pd, mix, 4 * pg, (uintptr_t)mix, RR);
	fu_expect_reg_ok(fu.pd, mix, 2 * pg, (uintptr_t)mix, LW);
	fu_expect_reg_err(fu.pd, mix, 4 * pg, (uintptr_t)mix, LW, EFAULT);
	fu_expect_reg_err(fu.pd, mix + pg, pg + 1, (uintptr_t)mix + pg, LW,
			  EFAULT);
	fu_expect_reg_err(fu.pd, hole, 3 * pg, (uintptr_t)hole, 0, EFAULT);
	fu_expect_reg_err(fu.pd, hole + pg - 1, 2, (uintptr_t)hole + pg - 1, 0,
			  EFAULT);
	fu_expect_reg_ok(fu.pd, hole, pg, (uintptr_t)hole, LW);
	fu_expect_reg_ok(fu.pd, hole + 2 * pg, pg, (uintptr_t)hole + 2 * pg,
			 LW);
	fu_expect_reg_err(fu.pd, NULL, pg, 0x10000, 0, EFAULT);
	fu_expect_reg_ok(fu.pd, large, big * pg, (uintptr_t)large,
			 LW | RW | RR);
	fu_expect_reg_ok(fu.pd, tail, big * pg, (uintptr_t)tail, LW);
	fu_expect_reg_err(fu.pd, tail, big * pg + 1, (uintptr_t)tail, 0,
			  EFAULT);
	assert_int_equal(mprotect(large + (big - 1) * pg, pg, PROT_READ), 0);
	fu_expect_reg_err(fu.pd, large, big * pg, (uintptr_t)large, LW, EFAULT);
	fu_expect_reg_ok(fu.pd, large, big * pg, (uintptr_t)large, RR);
	assert_int_equal(munmap(large + big / 2 * pg, pg), 0);
	fu_expect_reg_err(fu.pd, large, big * pg, (uintptr_t)large, RR, EFAULT);

	printf("answers [%s, %s]: %s\n", mode(), label,
	       fu_failures == fails ? "all as expected" : "DEVIATIONS");
	munmap(rw, 4 * pg);
	munmap(ro, 4 * pg);
	munmap(none, 2 * pg);
	munmap(wo, 2 * pg);
	munmap(mix, 4 * pg);
	munmap(hole, 3 * pg);
	munmap(large, big * pg);
	munmap(tail, big * pg);
}

static void test_reg_mr_maps_answers(void **state)
{
	(void)state;
	check_answers("own mappings");
	fu_done();
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Median ns of ibv_reg_mr + ibv_dereg_mr of a pre-touched 4 KiB buffer. */
static double reg_median_us(unsigned int iters)
{
	uint64_t *s = calloc(iters, sizeof(*s));
	char *buf = map_pages(1, PROT_READ | PROT_WRITE);
	unsigned int i;
	double med;

	assert_non_null(s);
	memset(buf, 1, fu.pg);
	for (i = 0; i < iters; i++) {
		uint64_t t0 = now_ns();
		struct ibv_mr *mr = ibv_reg_mr(fu.pd, buf, fu.pg, LW | RW | RR);

		assert_non_null(mr);
		assert_int_equal(ibv_dereg_mr(mr), 0);
		s[i] = now_ns() - t0;
	}
	qsort(s, iters, sizeof(*s), cmp_u64);
	med = (double)s[iters / 2] / 1000.0;
	free(s);
	munmap(buf, fu.pg);
	return med;
}

/* Number of lines of /proc/self/maps. */
static unsigned int count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned int n = 0;
	int c;

	assert_non_null(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void test_reg_mr_maps_crowd(void **state)
{
	char *crowd = fu_unmapped(CROWD * fu.pg);
	unsigned int i, before = count_maps();
	double us_before, us;

	(void)state;
	us_before = reg_median_us(1000);
	/* Below the buffers mapped next (top-down), so a maps reader passes
	 * all of them before it reaches a buffer. */
	assert_true(mmap(crowd, CROWD * fu.pg, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
			 0) == crowd);
	for (i = 0; i < CROWD; i += 2)
		assert_int_equal(mprotect(crowd + i * fu.pg, fu.pg,
					  PROT_READ | PROT_WRITE),
				 0);
	check_answers("5000 more mappings");
	us = reg_median_us(1000);
	printf("crowd [%s]: reg+dereg 4 KiB median %.2f us with %u mappings, "
	       "%.2f us with %u\n",
	       mode(), us_before, before, us, count_maps());
	/* "parse" reads the maps file for every check, on purpose */
	fu_expect(us < 100.0 || !strcmp(mode(), "parse"),
		  "reg+dereg 4 KiB costs %.1f us with %u mappings", us,
		  count_maps());
	munmap(crowd, CROWD * fu.pg);
	fu_done();
}

/* ---- no side effects that hardware would not have ------------------------ */

static void test_reg_mr_maps_odp_never_populates(void **state)
{
	size_t n = 64, resident = 0, i;
	char *buf = map_pages(n, PROT_READ | PROT_WRITE);
	unsigned char vec[64];
	struct ibv_mr *mr;

	(void)state;
	mr = ibv_reg_mr(fu.pd, buf, n * fu.pg, ODP | LW | RW | RR);
	assert_non_null(mr);
	assert_int_equal(mincore(buf, n * fu.pg, vec), 0);
	for (i = 0; i < n; i++)
		resident += vec[i] & 1;
	printf("odp [%s]: %zu of %zu pages resident after registration\n",
	       mode(), resident, n);
	fu_expect(resident == 0, "ODP registration populated %zu pages",
		  resident);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	munmap(buf, n * fu.pg);
	fu_done();
}

struct writer {
	volatile uint64_t *word;
	uint64_t n;
	_Atomic int done;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint64_t i;

	for (i = 0; i < w->n; i++)
		*w->word = *w->word + 1; /* plain stores: one writer */
	atomic_store(&w->done, 1);
	return NULL;
}

static void test_reg_mr_maps_never_writes(void **state)
{
	char *buf = map_pages(1, PROT_READ | PROT_WRITE);
	struct writer w = {.word = (volatile uint64_t *)buf, .n = 20000000};
	unsigned int regs = 0;
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	while (!atomic_load(&w.done) || regs < 100) {
		struct ibv_mr *mr = ibv_reg_mr(fu.pd, buf, fu.pg, LW | RW);

		assert_non_null(mr);
		assert_int_equal(ibv_dereg_mr(mr), 0);
		regs++;
	}
	pthread_join(t, NULL);
	printf("never writes [%s]: %u registrations during %" PRIu64
	       " stores, final value %" PRIu64 "\n",
	       mode(), regs, w.n, *w.word);
	fu_expect(*w.word == w.n, "lost %" PRIu64 " stores", w.n - *w.word);
	munmap(buf, fu.pg);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_reg_mr_maps_forged_line),
		FU_TEST(test_reg_mr_maps_answers),
		FU_TEST(test_reg_mr_maps_crowd),
		FU_TEST(test_reg_mr_maps_odp_never_populates),
		FU_TEST(test_reg_mr_maps_never_writes),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
