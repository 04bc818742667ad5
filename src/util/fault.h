/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fault.h - compiled-in fault points (SQLite's *fault.test idea).
 *
 * With -DSRDMA_FAULT_INJECTION=ON, SRDMA_FAULT(site) returns true on the
 * n-th evaluation of that site named in SRDMA_FAULT=<site>:<n>. Without the
 * option every SRDMA_FAULT() is the constant false and costs nothing.
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
#else
#define SRDMA_FAULT(site) false
#endif

#endif
