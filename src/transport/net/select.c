// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * select.c - which transport serves a destination (net.h).
 *
 * A peer reached through the host transport must be a context in our own
 * host registry: its QPN names it (QPN >> SRDMA_QPN_SHIFT is its LID), and
 * the initiator then works in its shared segment. Everything else goes
 * over the wire. So, with an Ethernet port and an address vector that has
 * a GRH, the net transport serves the destination when
 *
 *   - SRDMA_TRANSPORT=net forces it (the wire between two processes of
 *     one host, for tests), or
 *   - the destination GID is not an address of this network namespace
 *     (another host, or another container with its own addresses), or
 *   - the QPN's context is not live in the local registry (a process of
 *     this namespace with another SRDMA_DIR or another user).
 *
 * Never with an InfiniBand port (no GIDs but our own LID-derived ones),
 * without a GRH (a RoCE AV always has one; the AV checks refuse the rest)
 * or with SRDMA_TRANSPORT=host.
 *
 * All contexts of a host share its IP GIDs: a GID alone does not name a
 * context, the QPN does, exactly as on a RoCE NIC shared by processes.
 *
 * Concurrency: the mode is parsed once (pthread_once); the registry entry
 * is read with an acquire load, as the host transport's peer lookup does.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "core/core.h"
#include "transport/net/gid.h"
#include "transport/net/net.h"
#include "util/log.h"

static enum srdma_transport_mode mode;	/* immutable after mode_once */
static pthread_once_t mode_once = PTHREAD_ONCE_INIT;

static void mode_parse(void)
{
	const char *v = getenv("SRDMA_TRANSPORT");

	srdma_log_init();
	mode = SRDMA_TRANSPORT_AUTO;
	if (!v || !*v || !strcasecmp(v, "auto"))
		return;
	if (!strcasecmp(v, "host"))
		mode = SRDMA_TRANSPORT_HOST;
	else if (!strcasecmp(v, "net"))
		mode = SRDMA_TRANSPORT_NET;
	else
		srdma_warn("SRDMA_TRANSPORT=%s unknown (host, net or auto): "
			   "auto", v);
}

enum srdma_transport_mode srdma_transport_mode(void)
{
	pthread_once(&mode_once, mode_parse);
	return mode;
}

/* Is the context owning QPN @dqpn live in our host registry? */
static bool qpn_in_registry(struct srdma_context *ctx, uint32_t dqpn)
{
	uint32_t lid = (dqpn & 0xffffff) >> SRDMA_QPN_SHIFT;
	struct srdma_reg_entry *e;
	pid_t pid;

	if (!lid || lid > SRDMA_REG_ENTRIES)
		return false;
	if (lid == ctx->host.lid)
		return true;
	e = &ctx->host.reg.ent[lid - 1];
	if (atomic_load_explicit(&e->state, memory_order_acquire) !=
	    SRDMA_REG_LIVE)
		return false;
	/* An entry left LIVE by a SIGKILLed owner: gone, not on this host's
	 * transport any more (its QPs answer nothing either way). */
	pid = e->pid;
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

bool srdma_net_dest(struct srdma_context *ctx, const struct ibv_ah_attr *ah,
		    uint32_t dqpn)
{
	enum srdma_transport_mode m = srdma_transport_mode();

	if (m == SRDMA_TRANSPORT_HOST || !srdma_link_is_eth() || !ah ||
	    !ah->is_global)
		return false;
	if (m == SRDMA_TRANSPORT_NET)
		return true;
	if (!srdma_gid_is_local(&ah->grh.dgid))
		return true;
	return !qpn_in_registry(ctx, dqpn);
}
