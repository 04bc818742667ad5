// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mpi_check.c - an MPI program that checks every byte it moves, for the
 * stacks tests (tests/stacks/stacks.cmake): Open MPI over UCX over
 * softrdma (UCX_TLS=rc_v or ud_v), and the same program over shared
 * memory for comparison.
 *
 * 1. Ping-pong between rank 0 and each other rank in turn, at sizes from
 *    1 byte to 1 MiB (UCX's eager and rendezvous protocols, so both sends
 *    and RDMA reads/writes of the transport are used). Every message
 *    carries a pattern that depends on sender, size and iteration; the
 *    receiver checks every byte and the received count, then answers with
 *    its own pattern, which rank 0 checks likewise.
 * 2. MPI_Allreduce on int64 (sum, max) and double (sum of values that add
 *    up exactly) vectors of 1, 1000 and 100000 elements, also in place;
 *    every element of every result is compared with the value computed
 *    here in closed form.
 *
 * Each rank counts its mismatches (printing the first few); the counts are
 * summed, and rank 0 prints one line: "mpi_check: OK ..." with the
 * 8-byte half round-trip time and the 1 MiB ping-pong bandwidth to rank 1,
 * or "mpi_check: FAILED ...". Both times include filling and checking
 * every byte on both sides, so they compare transports with each other,
 * not with a benchmark's figures. Exit status 0 only if no rank saw an
 * error.
 *
 * "mpi_check --bench [ITERS]" is the timing mode (bench/stacks_bench.sh):
 * plain ping-pongs between ranks 0 and 1, nothing filled or checked inside
 * the timed loops - ITERS (default 2000) of 8 bytes, ITERS / 20 (at least
 * 10) of 1 MiB, each after a warm-up - and the last message of each size
 * checked byte for byte afterwards. Rank 0 prints "mpi_check: BENCH
 * ranks=N pingpong_8B_us=<mean half round trip>
 * pingpong_8B_median_us=<median half round trip> pingpong_1MiB_MBps=<2 MiB
 * per mean round trip, 10^6 bytes/s> pingpong_1MiB_rt_us=<minimum,
 * median and 90th percentile of the 1 MiB round trips>" or "mpi_check:
 * FAILED ...". The median is what a busy machine disturbs least.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#define MAX_SIZE   (1 << 20)
#define MAX_REPORT 5

static int rank, nranks;
static long errors;

static void report(const char *what, long idx, long long got, long long want)
{
	if (errors++ < MAX_REPORT)
		fprintf(stderr,
			"mpi_check: rank %d: %s: element %ld is %lld, "
			"expected %lld\n",
			rank, what, idx, got, want);
}

static unsigned char pattern(int src, int size, int iter, int i)
{
	return (unsigned char)(i * 7 + iter * 13 + src * 31 + size);
}

static void fill(unsigned char *buf, int src, int size, int iter)
{
	int i;

	for (i = 0; i < size; i++)
		buf[i] = pattern(src, size, iter, i);
}

static void check(const unsigned char *buf, const MPI_Status *st, int src,
		  int size, int iter)
{
	int count, i;

	MPI_Get_count(st, MPI_BYTE, &count);
	if (count != size)
		report("ping-pong length", -1, count, size);
	for (i = 0; i < size; i++)
		if (buf[i] != pattern(src, size, iter, i))
			report("ping-pong byte", i, buf[i],
			       pattern(src, size, iter, i));
}

/* Ping-pong rank 0 <-> @peer; returns the mean round trip in seconds. */
static double pingpong(unsigned char *sbuf, unsigned char *rbuf, int peer,
		       int size, int iters)
{
	MPI_Status st;
	double t0 = 0;
	int it;

	for (it = -1; it < iters; it++) { /* iteration -1: warm-up */
		if (it == 0)
			t0 = MPI_Wtime();
		if (rank == 0) {
			fill(sbuf, 0, size, it + 1);
			MPI_Send(sbuf, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
			memset(rbuf, 0xee, (size_t)size);
			MPI_Recv(rbuf, MAX_SIZE, MPI_BYTE, peer, 2,
				 MPI_COMM_WORLD, &st);
			check(rbuf, &st, peer, size, it + 1);
		} else if (rank == peer) {
			memset(rbuf, 0xee, (size_t)size);
			MPI_Recv(rbuf, MAX_SIZE, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
				 &st);
			check(rbuf, &st, 0, size, it + 1);
			fill(sbuf, peer, size, it + 1);
			MPI_Send(sbuf, size, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / iters;
}

static void allreduce(int n)
{
	int64_t *a = malloc((size_t)n * sizeof(*a));
	int64_t *r = malloc((size_t)n * sizeof(*r));
	double *d = malloc((size_t)n * sizeof(*d));
	int64_t rsum = (int64_t)nranks * (nranks - 1) / 2;
	int i;

	if (!a || !r || !d) {
		fprintf(stderr, "mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	/* int64 sum: element i of rank k is k * 1000003 + i. */
	for (i = 0; i < n; i++)
		a[i] = (int64_t)rank * 1000003 + i;
	MPI_Allreduce(a, r, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < n; i++)
		if (r[i] != rsum * 1000003 + (int64_t)nranks * i)
			report("allreduce int64 sum", i, r[i],
			       rsum * 1000003 + (int64_t)nranks * i);
	/* int64 max: the highest rank's value, i * (k + 1) - k. */
	for (i = 0; i < n; i++)
		a[i] = (int64_t)i * (rank + 1) - rank;
	MPI_Allreduce(a, r, n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
	for (i = 0; i < n; i++) {
		int64_t want = (int64_t)i * nranks - (nranks - 1);

		if (i == 0)
			want = 0; /* rank 0's 0 beats every -k */
		if (r[i] != want)
			report("allreduce int64 max", i, r[i], want);
	}
	/* double sum, in place: halves add up exactly in any order. */
	for (i = 0; i < n; i++)
		d[i] = rank + 0.5 * i;
	MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (i = 0; i < n; i++) {
		double want = (double)rsum + 0.5 * i * nranks;

		if (d[i] != want)
			report("allreduce double sum", i, (long long)(d[i] * 2),
			       (long long)(want * 2));
	}
	free(a);
	free(r);
	free(d);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Round trips of one timed ping-pong (s): minimum, median, 90th
 * percentile (rank 0's). */
struct rt_stats {
	double min, median, p90;
};

/* Timed ping-pong of @size bytes, rank 0 <-> 1, @iters round trips after
 * @iters / 10 + 1 warm-up ones; both sides send the pattern of the last
 * iteration, checked once at the end. Returns the mean round trip (s);
 * rank 0 also stores the distribution of the round trips in *@rs, and
 * with MPI_CHECK_RT=FILE in the environment appends every round trip to
 * FILE (after a line "# SIZE", one a line: microseconds, and when it began
 * in CLOCK_MONOTONIC seconds, as `perf record -k mono` stamps events):
 * what tells a run whose every trip is slow from one with a few long
 * stalls, and finds a stall in a scheduler trace. */
static double timed(unsigned char *sbuf, unsigned char *rbuf, int size,
		    int iters, struct rt_stats *rs)
{
	double *rt = malloc((size_t)iters * sizeof(*rt));
	double *at = malloc((size_t)iters * sizeof(*at));
	struct timespec ts;
	MPI_Status st;
	double t0 = 0, t;
	int it, warm = iters / 10 + 1;

	if (!rt || !at) {
		fprintf(stderr, "mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	fill(sbuf, rank, size, iters);
	for (it = -warm; it < iters; it++) {
		if (it == 0)
			t0 = MPI_Wtime();
		t = MPI_Wtime();
		if (it >= 0) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			at[it] = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
		}
		if (rank == 0) {
			MPI_Send(sbuf, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(rbuf, size, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
				 &st);
		} else if (rank == 1) {
			MPI_Recv(rbuf, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
				 &st);
			MPI_Send(sbuf, size, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
		if (it >= 0)
			rt[it] = MPI_Wtime() - t;
	}
	t0 = MPI_Wtime() - t0;
	if (rank <= 1)
		check(rbuf, &st, !rank, size, iters);
	if (rank == 0 && getenv("MPI_CHECK_RT")) {
		FILE *f = fopen(getenv("MPI_CHECK_RT"), "a");

		if (f) {
			fprintf(f, "# %d\n", size);
			for (it = 0; it < iters; it++)
				fprintf(f, "%.1f %.6f\n", rt[it] * 1e6,
					at[it]);
			fclose(f);
		}
	}
	qsort(rt, (size_t)iters, sizeof(*rt), cmp_double);
	rs->min = rt[0];
	rs->median = iters % 2 ? rt[iters / 2]
			       : (rt[iters / 2 - 1] + rt[iters / 2]) / 2;
	rs->p90 = rt[iters * 9 / 10];
	free(rt);
	free(at);
	return t0 / iters;
}

static int bench(int iters)
{
	unsigned char *sbuf = malloc(MAX_SIZE), *rbuf = malloc(MAX_SIZE);
	struct rt_stats small, large;
	double lat, bw;
	long total = 0;
	int big = iters / 20 < 10 ? 10 : iters / 20;

	if (!sbuf || !rbuf) {
		fprintf(stderr, "mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	lat = timed(sbuf, rbuf, 8, iters, &small) / 2 * 1e6;
	bw = 2.0 * MAX_SIZE / timed(sbuf, rbuf, MAX_SIZE, big, &large) / 1e6;
	MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		if (total)
			printf("mpi_check: FAILED: %ld mismatches\n", total);
		else
			printf("mpi_check: BENCH ranks=%d pingpong_8B_us=%.2f "
			       "pingpong_8B_median_us=%.2f "
			       "pingpong_1MiB_MBps=%.1f "
			       "pingpong_1MiB_rt_us=%.0f/%.0f/%.0f\n",
			       nranks, lat, small.median / 2 * 1e6, bw,
			       large.min * 1e6, large.median * 1e6,
			       large.p90 * 1e6);
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return total ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const int sizes[] = {1, 8, 1000, 8192, 65536, MAX_SIZE};
	unsigned char *sbuf, *rbuf;
	double lat = 0, bw = 0, t;
	long total = 0;
	unsigned int s;
	int peer;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	sbuf = malloc(MAX_SIZE);
	rbuf = malloc(MAX_SIZE);
	if (!sbuf || !rbuf) {
		fprintf(stderr, "mpi_check: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (nranks < 2) {
		fprintf(stderr, "mpi_check: needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (argc > 1 && !strcmp(argv[1], "--bench")) {
		int iters = argc > 2 ? atoi(argv[2]) : 2000;

		free(sbuf);
		free(rbuf);
		return bench(iters > 0 ? iters : 2000);
	}
	for (peer = 1; peer < nranks; peer++)
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			int iters = sizes[s] >= 65536 ? 20 : 200;

			t = pingpong(sbuf, rbuf, peer, sizes[s], iters);
			if (peer == 1 && sizes[s] == 8)
				lat = t / 2 * 1e6;
			if (peer == 1 && sizes[s] == MAX_SIZE)
				bw = 2.0 * MAX_SIZE / t / 1e6;
		}
	allreduce(1);
	allreduce(1000);
	allreduce(100000);
	MPI_Allreduce(&errors, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		if (total)
			printf("mpi_check: FAILED: %ld mismatches over %d "
			       "ranks\n",
			       total, nranks);
		else
			printf("mpi_check: OK ranks=%d pingpong_8B_us=%.2f "
			       "pingpong_1MiB_MBps=%.1f allreduce=ok\n",
			       nranks, lat, bw);
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return total ? 1 : 0;
}
