// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fault.c - SRDMA_FAULT=<site>:<n> parsing and counting. Compiled to nothing
 * unless SRDMA_FAULT_INJECTION is defined.
 */
#include "util/fault.h"

#ifdef SRDMA_FAULT_INJECTION
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static _Atomic unsigned long fault_count;	/* atomic: evaluations so far */

bool srdma_fault_hit(const char *site)
{
	const char *spec = getenv("SRDMA_FAULT");
	const char *colon;
	size_t len = strlen(site);

	if (!spec)
		return false;
	colon = strchr(spec, ':');
	if (!colon || (size_t)(colon - spec) != len || strncmp(spec, site, len))
		return false;
	return atomic_fetch_add_explicit(&fault_count, 1,
					 memory_order_relaxed) + 1 ==
	       strtoul(colon + 1, NULL, 0);
}

void srdma_fault_call_hook(const char *site)
{
	void (*hook)(const char *) =
		(void (*)(const char *))dlsym(RTLD_DEFAULT,
					      "srdma_test_fault_hook");

	if (hook)
		hook(site);
}
#endif
