// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fastclock.c - the calibration behind srdma_fastclock_ns() (fastclock.h).
 *
 * First call: is the kernel's clocksource "tsc" (then the kernel found
 * the TSC invariant and synchronised; /proc/cpuinfo's constant_tsc and
 * nonstop_tsc are checked as well) and SRDMA_FASTCLOCK not 0? If not, the
 * clock stays clock_gettime for good. If so, the first reading pairs a
 * TSC value with CLOCK_MONOTONIC; the first call 50 ms or more later
 * takes a second pair (the TSC read on both sides of clock_gettime, the
 * middle taken, the pair retried if it took long), computes the rate,
 * and switches: ns0/tsc0 are that second pair, so the TSC-based values go
 * on from the last clock_gettime reading. One thread makes the switch
 * (a compare-and-swap); the others read clock_gettime until they see it.
 * The calibration costs nothing but a few extra reads during those 50 ms.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fastclock.h"

#define FC_UNKNOWN 0
#define FC_CALIB 1
#define FC_SWITCHING 3
#define FC_OFF 4
#define FC_CALIB_NS 50000000ull

__thread uint64_t srdma_fc_last __attribute__((tls_model("initial-exec")));

#if defined(__x86_64__)
struct srdma_fastclock srdma_fc;
static uint64_t calib_tsc, calib_ns;	/* set before state = FC_CALIB */
#endif

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
/* Does the kernel read its own clock from the TSC, and is it invariant? */
static bool tsc_trusted(void)
{
	const char *e = getenv("SRDMA_FASTCLOCK");
	char buf[64] = "";
	bool cst = false, nonstop = false;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (e && !strcmp(e, "0"))
		return false;
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		  "re");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (strcmp(buf, "tsc\n") && strcmp(buf, "tsc"))
		return false;
	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "flags", 5))
			continue;
		cst = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	free(line);
	fclose(f);
	return cst && nonstop;
}

/* A (TSC, CLOCK_MONOTONIC) pair read close together. */
static void pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t a, b;
	int i;

	for (i = 0; i < 8; i++) {
		a = __rdtsc();
		*ns = mono_ns();
		b = __rdtsc();
		*tsc = a + (b - a) / 2;
		if (b - a < 2000)
			break;
	}
}

uint64_t srdma_fastclock_slow(void)
{
	int st = atomic_load_explicit(&srdma_fc.state, memory_order_acquire);
	uint64_t tsc, ns;

	switch (st) {
	case FC_UNKNOWN:
		if (!tsc_trusted()) {
			atomic_store(&srdma_fc.state, FC_OFF);
			return mono_ns();
		}
		if (!atomic_compare_exchange_strong(&srdma_fc.state, &st,
						    FC_SWITCHING))
			return mono_ns();
		pair(&calib_tsc, &calib_ns);
		atomic_store_explicit(&srdma_fc.state, FC_CALIB,
				      memory_order_release);
		return calib_ns;
	case FC_CALIB:
		ns = mono_ns();
		if (ns - calib_ns < FC_CALIB_NS ||
		    !atomic_compare_exchange_strong(&srdma_fc.state, &st,
						    FC_SWITCHING))
			return ns;
		pair(&tsc, &ns);
		if (tsc <= calib_tsc) {	/* cannot be, if trusted */
			atomic_store(&srdma_fc.state, FC_OFF);
			return ns;
		}
		srdma_fc.mult = (uint64_t)((((unsigned __int128)(ns - calib_ns))
					    << 32) / (tsc - calib_tsc));
		srdma_fc.tsc0 = tsc;
		srdma_fc.ns0 = ns;
		atomic_store_explicit(&srdma_fc.state, SRDMA_FC_TSC,
				      memory_order_release);
		return ns;
	case SRDMA_FC_TSC:
		return srdma_fastclock_ns();
	default:	/* FC_OFF, FC_SWITCHING */
		return mono_ns();
	}
}
#else
uint64_t srdma_fastclock_slow(void)
{
	return mono_ns();
}
#endif
