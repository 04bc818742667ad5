// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mpi_openib.c - an MPI ping-pong and allreduce with every byte checked,
 * for test_openib.sh (Open MPI's openib BTL on srdma0).
 *
 * Rank 0 first exchanges one byte with every other rank, timed apart
 * (openib connects a pair on its first message). Then it sends each size
 * (1 B .. 2 MiB, x8 steps: eager, send/receive and the RDMA
 * pipeline protocols of the openib BTL) to every other rank, which checks
 * the pattern, transforms it and sends it back; rank 0 checks the reply.
 * Then an allreduce (sum of rank-dependent vectors) is checked element by
 * element on every rank. Prints one summary line per size on rank 0 with
 * the round-trip time; exit status 0 only if every check passed on every
 * rank.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_SIZE (2u << 20)
#define ITERS 20

static unsigned char pattern(size_t i, unsigned int seed)
{
	return (unsigned char)((i * 131u + seed * 7u) ^ (i >> 8));
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	int rank, size, peer, bad = 0, allbad = 0;
	unsigned int n, it;
	long long *vec, *sum;
	size_t i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	buf = malloc(MAX_SIZE);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	/*
	 * Wire-up: openib connects a pair of ranks on their first message
	 * (its udcm exchange over UD QPs, handled by the progress thread on
	 * completion events). One byte each way per peer, timed apart, so
	 * that the 1 B figure below is a round trip and not the connection
	 * setup averaged over ITERS.
	 */
	{
		double t0 = MPI_Wtime();

		for (peer = 1; peer < size; peer++) {
			buf[0] = (unsigned char)peer;
			if (rank == 0) {
				MPI_Send(buf, 1, MPI_BYTE, peer, 2,
					 MPI_COMM_WORLD);
				MPI_Recv(buf, 1, MPI_BYTE, peer, 3,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				if (buf[0] != (unsigned char)~peer)
					bad++;
			} else if (rank == peer) {
				MPI_Recv(buf, 1, MPI_BYTE, 0, 2,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				if (buf[0] != (unsigned char)peer)
					bad++;
				buf[0] = (unsigned char)~peer;
				MPI_Send(buf, 1, MPI_BYTE, 0, 3,
					 MPI_COMM_WORLD);
			}
		}
		if (rank == 0) {
			printf("wireup: %.1f us per peer (connection on the "
			       "first message)\n",
			       (MPI_Wtime() - t0) * 1e6 /
				       (size > 1 ? size - 1 : 1));
			fflush(stdout);
		}
	}
	for (n = 1; n <= MAX_SIZE; n *= 8) {
		double t0 = MPI_Wtime(), worst = 0;

		for (peer = 1; peer < size; peer++) {
			for (it = 0; it < ITERS; it++) {
				unsigned int seed = n + it + (unsigned)peer;
				double t1 = MPI_Wtime();

				if (rank == 0) {
					for (i = 0; i < n; i++)
						buf[i] = pattern(i, seed);
					MPI_Send(buf, (int)n, MPI_BYTE, peer,
						 0, MPI_COMM_WORLD);
					MPI_Recv(buf, (int)n, MPI_BYTE, peer,
						 1, MPI_COMM_WORLD,
						 MPI_STATUS_IGNORE);
					for (i = 0; i < n; i++)
						if (buf[i] !=
						    (unsigned char)~pattern(i,
									    seed)) {
							bad++;
							break;
						}
				} else if (rank == peer) {
					MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0,
						 MPI_COMM_WORLD,
						 MPI_STATUS_IGNORE);
					for (i = 0; i < n; i++) {
						if (buf[i] != pattern(i, seed))
							bad++;
						buf[i] = (unsigned char)~buf[i];
					}
					MPI_Send(buf, (int)n, MPI_BYTE, 0, 1,
						 MPI_COMM_WORLD);
				}
				if (MPI_Wtime() - t1 > worst)
					worst = MPI_Wtime() - t1;
			}
		}
		if (rank == 0)
			printf("pingpong %8u B x %d peers: %.1f us per round "
			       "trip (slowest %.1f us)\n",
			       n, size - 1,
			       (MPI_Wtime() - t0) * 1e6 /
				       (ITERS * (size > 1 ? size - 1 : 1)),
			       worst * 1e6);
		if (rank == 0)
			fflush(stdout);	/* a hung run shows where it hung */
	}
	/* Allreduce: element j of rank r is r * 1000003 + j. */
	n = 1u << 16;
	vec = malloc(n * sizeof(*vec));
	sum = malloc(n * sizeof(*sum));
	if (!vec || !sum)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < n; i++)
		vec[i] = (long long)rank * 1000003 + (long long)i;
	MPI_Allreduce(vec, sum, (int)n, MPI_LONG_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	for (i = 0; i < n; i++) {
		long long want = 1000003LL * size * (size - 1) / 2 +
				 (long long)i * size;

		if (sum[i] != want) {
			bad++;
			if (bad < 5)
				fprintf(stderr,
					"rank %d: allreduce[%zu] %lld, want "
					"%lld\n",
					rank, i, sum[i], want);
		}
	}
	MPI_Allreduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s: %d ranks, %d bad checks\n",
		       allbad ? "FAIL" : "PASS", size, allbad);
	free(vec);
	free(sum);
	free(buf);
	MPI_Finalize();
	return allbad ? 1 : 0;
}
