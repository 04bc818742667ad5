// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_reg_mr.c - median cost of ibv_reg_mr + ibv_dereg_mr (issue 2).
 *
 * Opens the first device, allocates a PD, and for each size of
 * bench_sizes times register+deregister of a pre-touched anonymous
 * buffer, exactly as bench_ucp_mem times UCX, so the two medians can be
 * divided. Linked against softrdma's libibverbs.so.1 (build/lib, through
 * the RPATH), but it is a plain verbs client and runs on any provider.
 *
 * Options: --quick divides the iteration counts by ten; --access=LIST
 * replaces the default LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ with a comma
 * list of names (local_write, remote_write, remote_read, remote_atomic,
 * mw_bind, zero_based, on_demand, relaxed_ordering) or a number;
 * --maps=N grows the address space to N mappings (VMAs) first, all of
 * them below the buffers measured, so that a reader of /proc/self/maps
 * goes through every one before it reaches a buffer (the worst case for
 * the fallback of kernels without PROCMAP_QUERY; run with
 * SRDMA_MAPS_QUERY=fallback to take it here); --prefix=WORD replaces
 * "srdma" as the first word of the result lines.
 */
#include "bench_util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define DEFAULT_ACCESS                                                         \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ)

struct reg_ctx {
	struct ibv_pd *pd;
	int access;
};

static const struct {
	const char *name;
	int bit;
} access_names[] = {
	{"local_write", IBV_ACCESS_LOCAL_WRITE},
	{"remote_write", IBV_ACCESS_REMOTE_WRITE},
	{"remote_read", IBV_ACCESS_REMOTE_READ},
	{"remote_atomic", IBV_ACCESS_REMOTE_ATOMIC},
	{"mw_bind", IBV_ACCESS_MW_BIND},
	{"zero_based", IBV_ACCESS_ZERO_BASED},
	{"on_demand", IBV_ACCESS_ON_DEMAND},
	{"relaxed_ordering", IBV_ACCESS_RELAXED_ORDERING},
};

#define NR_ACCESS_NAMES (sizeof(access_names) / sizeof(access_names[0]))

/* Parse "name,name,..." or a number. Return: 0, or -1 on an unknown name. */
static int parse_access(const char *list, int *access)
{
	char *copy, *tok, *save, *end;
	unsigned int i;
	int ret = 0;

	*access = (int)strtol(list, &end, 0);
	if (*list && !*end)
		return 0;

	copy = strdup(list);
	if (!copy)
		return -1;
	*access = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < NR_ACCESS_NAMES; i++)
			if (!strcmp(tok, access_names[i].name))
				break;
		if (i == NR_ACCESS_NAMES) {
			fprintf(stderr, "unknown access flag '%s'\n", tok);
			ret = -1;
			break;
		}
		*access |= access_names[i].bit;
	}
	free(copy);
	return ret;
}

/* Lines of /proc/self/maps, or -1. */
static long count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	long n = 0;
	int c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/*
 * Add mappings until there are @want: single pages alternately read-only
 * and read-write (so none merge), at the bottom of an address range that
 * was free below everything mapped so far. Later mappings are placed
 * top-down, so above them. Return: the count now, or -1.
 */
static long pad_maps(long want)
{
	long have = count_maps(), add, i;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), span;
	char *base;

	if (have < 0 || have >= want)
		return have;
	add = want - have;
	span = (size_t)add * pg + (64UL << 30); /* room for the buffers */
	base = mmap(NULL, span, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		perror("mmap (reserve)");
		return -1;
	}
	munmap(base, span);
	if (mmap(base, (size_t)add * pg, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		 0) != base) {
		perror("mmap (padding)");
		return -1;
	}
	for (i = 0; i < add; i += 2)
		if (mprotect(base + (size_t)i * pg, pg,
			     PROT_READ | PROT_WRITE)) {
			perror("mprotect (padding)");
			return -1;
		}
	return count_maps();
}

static int reg_pair(void *ctx, void *buf, size_t size)
{
	struct reg_ctx *rc = ctx;
	struct ibv_mr *mr;
	int ret;

	mr = ibv_reg_mr(rc->pd, buf, size, rc->access);
	if (!mr) {
		fprintf(stderr, "ibv_reg_mr(%zu, access %#x): %s\n", size,
			rc->access, strerror(errno));
		return -1;
	}
	ret = ibv_dereg_mr(mr);
	if (ret) {
		fprintf(stderr, "ibv_dereg_mr(%zu): %s\n", size, strerror(ret));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct reg_ctx rc = {.access = DEFAULT_ACCESS};
	const char *prefix = "srdma", *query;
	struct ibv_device **list;
	struct ibv_context *ctx;
	unsigned int scale = 1;
	long maps = 0;
	int i, n, ret = 1;

	for (i = 1; i < argc; i++) {
		if (bench_parse_common(argv[i], &scale))
			continue;
		if (!strncmp(argv[i], "--access=", 9) &&
		    !parse_access(argv[i] + 9, &rc.access))
			continue;
		if (!strncmp(argv[i], "--maps=", 7)) {
			maps = strtol(argv[i] + 7, NULL, 0);
			continue;
		}
		if (!strncmp(argv[i], "--prefix=", 9) && argv[i][9]) {
			prefix = argv[i] + 9;
			continue;
		}
		fprintf(stderr,
			"usage: %s [--quick] [--access=LIST] [--maps=N] "
			"[--prefix=WORD]\n",
			argv[0]);
		return 2;
	}

	list = ibv_get_device_list(&n);
	if (!list) {
		perror("ibv_get_device_list");
		return 1;
	}
	if (n < 1) {
		fprintf(stderr, "no RDMA device\n");
		goto out_free_list;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx) {
		fprintf(stderr, "ibv_open_device(%s): %s\n",
			ibv_get_device_name(list[0]), strerror(errno));
		goto out_free_list;
	}
	rc.pd = ibv_alloc_pd(ctx);
	if (!rc.pd) {
		fprintf(stderr, "ibv_alloc_pd: %s\n", strerror(errno));
		goto out_close;
	}
	maps = pad_maps(maps);
	if (maps < 0)
		goto out_dealloc;
	query = getenv("SRDMA_MAPS_QUERY");
	printf("# device=%s access=%#x maps=%ld maps_query=%s\n",
	       ibv_get_device_name(list[0]), rc.access, maps,
	       query && *query ? query : "auto");

	if (!bench_run(prefix, reg_pair, &rc, scale))
		ret = 0;

out_dealloc:

	ibv_dealloc_pd(rc.pd);
out_close:
	ibv_close_device(ctx);
out_free_list:
	ibv_free_device_list(list);
	return ret;
}
