// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * lattrace.c - the latency trace of lattrace.h: a fixed array of
 * (TSC, event) records filled lock-free, written out once at exit.
 * Only in builds with SRDMA_LAT_TRACE; an empty unit otherwise.
 */
#include "util/lattrace.h"

#ifdef SRDMA_LAT_TRACE
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <x86intrin.h>

#define LT_MAX (1u << 20)

struct lt_rec {
	uint64_t tsc;
	uint32_t ev;
	uint32_t tid;
};

static struct lt_rec lt_buf[LT_MAX];
static _Atomic uint32_t lt_n;		/* records taken (may pass LT_MAX) */
static _Thread_local uint32_t lt_tid;
static _Atomic uint32_t lt_tids;

void srdma_lt_mark(int ev)
{
	uint32_t i = atomic_fetch_add_explicit(&lt_n, 1, memory_order_relaxed);

	if (i >= LT_MAX)
		return;
	if (!lt_tid)
		lt_tid = atomic_fetch_add(&lt_tids, 1) + 1;
	lt_buf[i].tsc = __rdtsc();
	lt_buf[i].ev = (uint32_t)ev;
	lt_buf[i].tid = lt_tid;
}

__attribute__((destructor)) static void lt_dump(void)
{
	const char *dir = getenv("SRDMA_LAT_TRACE_DIR");
	uint32_t n = atomic_load(&lt_n);
	char path[4096];
	FILE *f;

	if (!dir || !n)
		return;
	if (n > LT_MAX)
		n = LT_MAX;
	snprintf(path, sizeof(path), "%s/%d.lt", dir, (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return;
	fwrite(lt_buf, sizeof(lt_buf[0]), n, f);
	fclose(f);
}
#endif
