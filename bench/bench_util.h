// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_util.h - timing, buffers and reporting shared by the registration
 * benchmarks (bench_reg_mr for softrdma, bench_ucp_mem for UCX).
 *
 * Both programs measure the same thing the same way, so that the ratio
 * printed by run_reg_bench.sh compares registration cost and nothing else:
 * the buffer is an anonymous private mapping whose pages are all touched
 * before timing, each sample is one register+deregister pair timed with
 * CLOCK_MONOTONIC, and the report is the median and p90 of the samples.
 * Single-threaded; not a library.
 *
 * The data-path benchmarks (bench_xmem, bench_fi_shm) are two processes
 * that fork and talk over a socketpair; the helpers at the end pin each to
 * its own CPU, move fixed-size records over that socket, and report a
 * bandwidth.
 */
#ifndef SRDMA_BENCH_UTIL_H
#define SRDMA_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One size to measure: @iters samples, fewer if BENCH_BUDGET_NS runs out. */
struct bench_size {
	size_t size;
	unsigned int iters;
};

/* 4 KiB, 1 MiB, 64 MiB, 1 GiB with the issue-2 iteration counts. */
extern const struct bench_size bench_sizes[];
extern const unsigned int bench_nr_sizes;

/* Time spent on one size, warm-up excluded, before sampling stops early. */
#define BENCH_BUDGET_NS (8ULL * 1000 * 1000 * 1000)
/* Fewer samples than this are never reported as a median. */
#define BENCH_MIN_SAMPLES 10

/**
 * bench_now_ns() - CLOCK_MONOTONIC in nanoseconds.
 */
uint64_t bench_now_ns(void);

/**
 * bench_buf_alloc() - map @size bytes anonymous and private, touch every page.
 * Return: the buffer, or NULL (message already printed).
 */
void *bench_buf_alloc(size_t size);
void bench_buf_free(void *buf, size_t size);

/**
 * bench_report() - print "<prefix> size=<n> median_us=<m> p90_us=<p> n=<k>".
 * @samples: @n durations in nanoseconds; sorted in place.
 */
void bench_report(const char *prefix, size_t size, uint64_t *samples,
		  unsigned int n);

/*
 * One sample: register [@buf, @buf + @size) and deregister it again.
 * Return: 0, or -1 after printing why.
 */
typedef int (*bench_pair_fn)(void *ctx, void *buf, size_t size);

/**
 * bench_run() - measure @pair at every size of bench_sizes and report each.
 * @prefix: first word of every output line ("srdma", "ucx")
 * @scale:  divisor for the iteration counts (1 normally)
 *
 * Each size gets a fresh pre-touched buffer and a short untimed warm-up.
 * Return: 0, or -1 if allocation or @pair failed (reported).
 */
int bench_run(const char *prefix, bench_pair_fn pair, void *ctx,
	      unsigned int scale);

/**
 * bench_parse_common() - handle the options both programs share.
 * @arg: one argv element
 * @scale: divisor applied to every iteration count (--quick sets 10)
 * Return: 1 if consumed, 0 if not ours.
 */
int bench_parse_common(const char *arg, unsigned int *scale);

/**
 * bench_pin_cpu() - pin the calling process to one CPU.
 * @nth: index into the CPUs of the caller's current affinity mask
 *
 * Two processes that both spin need a CPU each; pinning them to different
 * ones keeps the scheduler from ever putting them on the same one.
 * Return: the CPU number, or -1 if the mask has fewer than @nth + 1 CPUs
 * or the call failed (the caller decides whether that matters).
 */
int bench_pin_cpu(unsigned int nth);

/**
 * bench_send_all() / bench_recv_all() - move exactly @len bytes over @fd.
 * Return: 0, or -1 after printing why (EOF counts as failure).
 */
int bench_send_all(int fd, const void *buf, size_t len);
int bench_recv_all(int fd, void *buf, size_t len);

/**
 * bench_report_bw() - print "<prefix> size=<s> gb_per_s=<g> n=<n>".
 * @ns: time taken by @n transfers of @size bytes; GB is 10^9 bytes.
 */
void bench_report_bw(const char *prefix, size_t size, unsigned int n,
		     uint64_t ns);

/* Spin loops give up after this long: the peer has died or hangs. */
#define BENCH_SPIN_LIMIT_NS (10ULL * 1000 * 1000 * 1000)

#endif /* SRDMA_BENCH_UTIL_H */
