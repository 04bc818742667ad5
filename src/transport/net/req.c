// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * req.c - requester and completer of a net QP (net.h). Placeholder.
 */
#include "transport/net/net.h"
