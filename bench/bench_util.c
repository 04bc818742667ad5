// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_util.c - see bench_util.h. The iteration counts keep a full run of
 * either benchmark well under a minute when registration is in the
 * microsecond range; BENCH_BUDGET_NS bounds it when it is not.
 */
#include "bench_util.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

const struct bench_size bench_sizes[] = {
	{4096, 2000},
	{1UL << 20, 2000},
	{64UL << 20, 300},
	{1UL << 30, 100},
};
const unsigned int bench_nr_sizes =
	sizeof(bench_sizes) / sizeof(bench_sizes[0]);

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void *bench_buf_alloc(size_t size)
{
	void *buf;

	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	memset(buf, 0xa5, size);
	return buf;
}

void bench_buf_free(void *buf, size_t size)
{
	munmap(buf, size);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted @s. */
static double pct_us(const uint64_t *s, unsigned int n, unsigned int pct)
{
	unsigned int rank = (n * pct + 99) / 100;

	if (rank == 0)
		rank = 1;
	return s[rank - 1] / 1000.0;
}

void bench_report(const char *prefix, size_t size, uint64_t *samples,
		  unsigned int n)
{
	double median;

	qsort(samples, n, sizeof(*samples), cmp_u64);
	/* Midpoint of the two middle samples when n is even. */
	median = (samples[(n - 1) / 2] + samples[n / 2]) / 2000.0;
	printf("%s size=%zu median_us=%.2f p90_us=%.2f n=%u\n", prefix, size,
	       median, pct_us(samples, n, 90), n);
	fflush(stdout);
}

static int run_size(const char *prefix, const struct bench_size *bs,
		    bench_pair_fn pair, void *ctx, unsigned int scale)
{
	unsigned int iters, warmup, n, i;
	uint64_t *samples, t0, t1, start;
	void *buf;
	int ret = -1;

	iters = bs->iters / scale;
	if (iters < BENCH_MIN_SAMPLES)
		iters = BENCH_MIN_SAMPLES;
	warmup = iters / 20 + 1;

	samples = calloc(iters, sizeof(*samples));
	if (!samples) {
		perror("calloc");
		return -1;
	}
	buf = bench_buf_alloc(bs->size);
	if (!buf)
		goto out_free_samples;

	for (i = 0; i < warmup; i++)
		if (pair(ctx, buf, bs->size))
			goto out_free_buf;

	start = bench_now_ns();
	for (n = 0; n < iters; n++) {
		t0 = bench_now_ns();
		if (pair(ctx, buf, bs->size))
			goto out_free_buf;
		t1 = bench_now_ns();
		samples[n] = t1 - t0;
		if (n + 1 >= BENCH_MIN_SAMPLES &&
		    t1 - start > BENCH_BUDGET_NS) {
			n++;
			break;
		}
	}
	bench_report(prefix, bs->size, samples, n);
	ret = 0;

out_free_buf:
	bench_buf_free(buf, bs->size);
out_free_samples:
	free(samples);
	return ret;
}

int bench_run(const char *prefix, bench_pair_fn pair, void *ctx,
	      unsigned int scale)
{
	unsigned int i;

	for (i = 0; i < bench_nr_sizes; i++)
		if (run_size(prefix, &bench_sizes[i], pair, ctx, scale))
			return -1;
	return 0;
}

int bench_parse_common(const char *arg, unsigned int *scale)
{
	if (!strcmp(arg, "--quick")) {
		*scale = 10;
		return 1;
	}
	return 0;
}

int bench_pin_cpu(unsigned int nth)
{
	cpu_set_t set, one;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set) || nth--)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		return sched_setaffinity(0, sizeof(one), &one) ? -1 : cpu;
	}
	return -1;
}

int bench_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror("bench: write to peer");
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int bench_recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				fprintf(stderr,
					"bench: peer closed the socket\n");
			else
				perror("bench: read from peer");
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void bench_report_bw(const char *prefix, size_t size, unsigned int n,
		     uint64_t ns)
{
	printf("%s size=%zu gb_per_s=%.2f n=%u\n", prefix, size,
	       ns ? (double)size * n / (double)ns : 0.0, n);
	fflush(stdout);
}
