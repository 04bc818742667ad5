/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fault.h - compiled-in fault points (SQLite's *fault.test idea).
 *
 * With -DSRDMA_FAULT_INJECTION=ON, SRDMA_FAULT(site) returns true on the
 * n-th evaluation of that site named in SRDMA_FAULT=<site>:<n>. Without the
 * option every SRDMA_FAULT() is the constant false and costs nothing.
 * SRDMA_FAULT_HOOK(site) calls the test program's hook at every evaluation
 * (the hook picks its moment) and fails nothing.
 */
#ifndef SRDMA_UTIL_FAULT_H
#define SRDMA_UTIL_FAULT_H

#include <stdbool.h>

#ifdef SRDMA_FAULT_INJECTION
/**
 * srdma_fault_hit() - true when this evaluation of @site must fail.
 * Context: any thread.
 */
bool srdma_fault_hit(const char *site);
#define SRDMA_FAULT(site) srdma_fault_hit(#site)
/**
 * srdma_fault_call_hook() - run the test program's
 * `void srdma_test_fault_hook(const char *site)` (found by dlsym; nothing
 * happens if the program has none) with @site. A test uses it to act at a
 * chosen point, e.g. to hold a window open so another thread runs there.
 * Context: any thread; whatever locks the caller of the point holds.
 */
void srdma_fault_call_hook(const char *site);
#define SRDMA_FAULT_HOOK(site) srdma_fault_call_hook(#site)
#else
#define SRDMA_FAULT(site) false
#define SRDMA_FAULT_HOOK(site) ((void)0)
#endif

#endif
