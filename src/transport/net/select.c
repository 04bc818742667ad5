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
 *     this namespace with another SRDMA_DIR, /dev/shm or user), or
 *   - it is, but the host transport cannot reach it: another PID
 *     namespace (the pid means nothing here), or cross-memory attach is
 *     not allowed one way or the other (Yama ptrace_scope >= 1 without
 *     CAP_SYS_PTRACE, seccomp, an LSM: host/locality.c).
 *
 * Never with an InfiniBand port (no GIDs but our own LID-derived ones),
 * without a GRH (a RoCE AV always has one; the AV checks refuse the rest)
 * or with SRDMA_TRANSPORT=host.
 *
 * All contexts of a host share its IP GIDs: a GID alone does not name a
 * context, the QPN does, exactly as on a RoCE NIC shared by processes.
 *
 * Both sides decide alone, at their own RTR, from the same published
 * facts (namespaces, the reach flags), so they agree; a probe refused one
 * way only also clears the prober's flag for a peer that decides later
 * (docs/design/containers.md has what that does not cover).
 *
 * Concurrency: the mode is parsed once (pthread_once); the registry entry
 * is read with an acquire load, as the host transport's peer lookup does;
 * the probe cache is relaxed atomics.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "core/core.h"
#include "transport/host/host.h"
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

/*
 * Probe results, per registry index: (pid << 32) | (start time's low 30
 * bits << 2) | PROBED | OK. One system call per peer process, not per UD
 * send. Process-wide (every context of a process has the same rights);
 * relaxed: a stale or torn-by-race miss only probes again.
 */
#define PROBED 2u
#define PROBE_OK 1u
static _Atomic uint64_t probe_cache[SRDMA_REG_ENTRIES];

static bool cma_allowed(unsigned int idx, pid_t pid, uint64_t start)
{
	uint64_t key = ((uint64_t)(uint32_t)pid << 32) |
		       ((start & 0x3fffffff) << 2) | PROBED;
	uint64_t v = atomic_load_explicit(&probe_cache[idx],
					  memory_order_relaxed);
	int ret;

	if ((v & ~(uint64_t)PROBE_OK) == key)
		return v & PROBE_OK;
	ret = srdma_cma_probe(pid);
	atomic_store_explicit(&probe_cache[idx], key | (ret ? 0 : PROBE_OK),
			      memory_order_relaxed);
	return !ret;
}

/*
 * Why the host transport cannot serve the context owning QPN @dqpn (so the
 * wire must), or NULL when it can: that context is live in our registry,
 * in our network and PID namespaces, and each side may attach the other's
 * memory (both entries' SRDMA_REACH_CMA, and the kernel lets us attach
 * it). A refused probe clears our own flag, so the peer, when it decides,
 * picks the wire too.
 */
static const char *host_unreachable(struct srdma_context *ctx, uint32_t dqpn)
{
	struct srdma_host_ctx *h = &ctx->host;
	uint32_t lid = (dqpn & 0xffffff) >> SRDMA_QPN_SHIFT;
	struct srdma_reg_entry *e, *own;
	pid_t pid;

	if (!lid || lid > SRDMA_REG_ENTRIES)
		return "QPN of no LID of this host";
	if (lid == h->lid)
		return NULL;
	e = &h->reg.ent[lid - 1];
	if (atomic_load_explicit(&e->state, memory_order_acquire) !=
	    SRDMA_REG_LIVE)
		return "QPN's context not in this state directory's registry "
		       "(another SRDMA_DIR, /dev/shm, user or container)";
	if (e->ns_net && h->ns_net && e->ns_net != h->ns_net)
		return "peer in another network namespace";
	if (e->ns_pid && h->ns_pid && e->ns_pid != h->ns_pid)
		return "peer in another PID namespace: its pid means nothing "
		       "here";
	/* An entry left LIVE by a SIGKILLed owner: gone, not on this host's
	 * transport any more (its QPs answer nothing either way). */
	pid = e->pid;
	if (!(pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)))
		return "peer process gone";
	own = &h->reg.ent[h->reg_index];
	if (!(atomic_load_explicit(&own->reach, memory_order_relaxed) &
	      SRDMA_REACH_CMA))
		return "this process may not attach other processes' memory";
	if (!(atomic_load_explicit(&e->reach, memory_order_relaxed) &
	      SRDMA_REACH_CMA))
		return "peer may not attach other processes' memory";
	if (!cma_allowed(lid - 1, pid, e->start_time)) {
		if (own->pid == h->pid)
			atomic_fetch_and_explicit(&own->reach,
						  ~(uint32_t)SRDMA_REACH_CMA,
						  memory_order_relaxed);
		return "cross-memory attach of the peer refused by the kernel";
	}
	return NULL;
}

bool srdma_net_dest_why(struct srdma_context *ctx,
			const struct ibv_ah_attr *ah, uint32_t dqpn,
			const char **why)
{
	enum srdma_transport_mode m = srdma_transport_mode();

	if (m == SRDMA_TRANSPORT_HOST) {
		*why = "SRDMA_TRANSPORT=host";
		return false;
	}
	if (!srdma_link_is_eth() || !ah || !ah->is_global) {
		*why = "no GRH or not an Ethernet port";
		return false;
	}
	if (m == SRDMA_TRANSPORT_NET) {
		*why = "SRDMA_TRANSPORT=net";
		return true;
	}
	if (!srdma_gid_is_local(&ah->grh.dgid)) {
		*why = "destination GID is not an address of this network "
		       "namespace";
		return true;
	}
	*why = host_unreachable(ctx, dqpn);
	if (*why)
		return true;
	*why = "peer in this host's registry, memory attachable";
	return false;
}

bool srdma_net_host_reaches(struct srdma_context *ctx, uint32_t qpn)
{
	return !host_unreachable(ctx, qpn);
}

bool srdma_net_dest(struct srdma_context *ctx, const struct ibv_ah_attr *ah,
		    uint32_t dqpn)
{
	const char *why;

	return srdma_net_dest_why(ctx, ah, dqpn, &why);
}
