// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * endpoint.c - the net transport's per-context endpoint (net.h).
 * Placeholder until it lands.
 */
#include "transport/net/net.h"
