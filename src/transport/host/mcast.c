// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mcast.c - the host's multicast group table: which UD QP of which
 * context is attached to which multicast group (ibv_attach_mcast).
 *
 * A switch and the HCAs' multicast tables, for one host: the file
 * "mcast" in the state directory (mode 0600, mapped by every context of
 * the user that attaches or sends to a group) holds up to
 * SRDMA_MCAST_GROUPS groups of up to SRDMA_MCAST_QP_ATTACH attachments,
 * SRDMA_MCAST_TOTAL in all. A sender of a UD packet addressed to a group
 * takes a snapshot of its members here and delivers one copy to each
 * through the host transport (engine/requester.c); a net receiver asks
 * for its own context's members (transport/net/endpoint.c).
 *
 * What it does not do: keep groups alive without members (a group is
 * its MGID while someone is attached; there is no SA and no join state
 * here, the CM synthesises what an SA would answer), or reach another
 * state directory's contexts.
 *
 * Concurrency: one robust process-shared mutex over the whole table;
 * attach, detach and a sender's snapshot hold it for a scan of at most
 * the groups in use. A holder that died inside is repaired by the next
 * locker (counts clamped and recomputed). Groups are kept compact
 * (g[0..ngroups-1]) and so are the members of a group, so a scan never
 * touches unused pages.
 *
 * Stale members: a QP attached cannot be destroyed (EBUSY, as the
 * kernel's uverbs), and a context cannot close with QPs, so a member
 * outlives its QP only when its process dies. Each member records its
 * owner's pid and start time and its QP entry's generation: a sender
 * skips a member whose context no longer belongs to that process, or
 * whose QP slot holds another QP by now (a detach and destroy racing the
 * sender's snapshot; engine/requester.c compares them),
 * and a full table drops the members of dead processes (and any empty
 * group a crash left behind) before it refuses an attach.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "core/dp.h"
#include "transport/host/mcast.h"
#include "util/log.h"

_Static_assert(sizeof(struct srdma_mcast_member) == 24, "mcast file is ABI");
_Static_assert(sizeof(struct srdma_mcast_group) ==
		       24 + SRDMA_MCAST_QP_ATTACH * 24,
	       "mcast file is ABI");
_Static_assert(offsetof(struct srdma_mcast_file, lock) == 64,
	       "mcast file is ABI");
_Static_assert(offsetof(struct srdma_mcast_file, g) % 64 == 0,
	       "mcast file is ABI");

bool srdma_gid_is_mcast(const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0,
					      0, 0, 0, 0, 0xff, 0xff };

	if (gid[0] == 0xff)
		return true;
	return !memcmp(gid, v4mapped, sizeof(v4mapped)) &&
	       (gid[12] & 0xf0) == 0xe0;
}

/* Initialise a new "mcast" file, or check an existing one's layout
 * (srdma_host_file_map(), under its flock). */
static bool table_check(void *map, void *arg)
{
	struct srdma_mcast_file *f = map;
	struct srdma_context *ctx = arg;

	if (f->magic != SRDMA_MCAST_MAGIC) {
		memset(f, 0, offsetof(struct srdma_mcast_file, g));
		f->version = SRDMA_MCAST_VERSION;
		f->ngroups_max = SRDMA_MCAST_GROUPS;
		f->nqp_max = SRDMA_MCAST_QP_ATTACH;
		if (srdma_shm_mutex_init(&f->lock))
			return false;
		/* Pairs with the acquire load of another opener. */
		__atomic_store_n(&f->magic, SRDMA_MCAST_MAGIC,
				 __ATOMIC_RELEASE);
	} else if (f->version != SRDMA_MCAST_VERSION ||
		   f->ngroups_max != SRDMA_MCAST_GROUPS ||
		   f->nqp_max != SRDMA_MCAST_QP_ATTACH) {
		srdma_warn("%s/mcast: another layout (version %u), not used",
			   ctx->host.dir, f->version);
		return false;
	}
	return true;
}

/* Map (creating and initialising under flock if needed) "mcast". */
static struct srdma_mcast_file *table_map(struct srdma_context *ctx,
					  bool create)
{
	return srdma_host_file_map(ctx->host.dirfd, "mcast",
				   sizeof(struct srdma_mcast_file), create,
				   table_check, ctx);
}

/* The table, mapped on first use; NULL if it cannot be (or, without
 * @create, does not exist yet: nobody ever attached). */
static struct srdma_mcast_file *table(struct srdma_context *ctx, bool create)
{
	struct srdma_mcast_file *f = __atomic_load_n(&ctx->mcast,
						     __ATOMIC_ACQUIRE);

	if (f)
		return f;
	pthread_mutex_lock(&ctx->lock);
	if (!ctx->mcast)
		/* Pairs with the acquire load above. */
		__atomic_store_n(&ctx->mcast, table_map(ctx, create),
				 __ATOMIC_RELEASE);
	f = ctx->mcast;
	pthread_mutex_unlock(&ctx->lock);
	return f;
}

void srdma_mcast_ctx_fini(struct srdma_context *ctx)
{
	if (ctx->mcast) {
		if (srdma_shm_guard_del(ctx->mcast))
			munmap(ctx->mcast, sizeof(*ctx->mcast));
		ctx->mcast = NULL;
	}
}

/*
 * Rebuild the table compactly: keep the members with a QPN (and with
 * @alive_only, of a live process) and the groups that keep a member;
 * recompute the counts. Return how many members and groups went.
 * Requires lock.
 */
static uint32_t table_rebuild(struct srdma_mcast_file *f, bool alive_only)
{
	uint32_t i, j, k = 0, total = 0, gone = 0, ng = f->ngroups;

	if (ng > SRDMA_MCAST_GROUPS)
		ng = SRDMA_MCAST_GROUPS;
	for (i = 0; i < ng; i++) {
		struct srdma_mcast_group *g = &f->g[i];
		uint32_t n = g->n > SRDMA_MCAST_QP_ATTACH ?
				     SRDMA_MCAST_QP_ATTACH : g->n, m = 0;

		for (j = 0; j < n; j++) {
			if (!g->m[j].qpn ||
			    (alive_only &&
			     !srdma_proc_alive(g->m[j].pid,
					       g->m[j].start_time))) {
				gone++;
				continue;
			}
			g->m[m++] = g->m[j];
		}
		g->n = m;
		if (!m) {
			gone++;
			continue;
		}
		if (k != i)
			f->g[k] = *g;
		k++;
		total += m;
	}
	f->ngroups = k;
	f->total = total;
	return gone;
}

/* A holder died inside (or a stranger wrote garbage): make the table
 * consistent again. Requires lock. */
static void table_repair(struct srdma_mcast_file *f)
{
	table_rebuild(f, false);
	srdma_warn("mcast table: counts inconsistent (a holder died inside, or garbage), repaired: %u groups, %u attachments",
		   f->ngroups, f->total);
}

static void table_lock(struct srdma_mcast_file *f)
{
	if (srdma_shm_lock(&f->lock))
		table_repair(f);
	/* Whatever a stranger wrote, indices stay in range. */
	if (f->ngroups > SRDMA_MCAST_GROUPS || f->total > SRDMA_MCAST_TOTAL)
		table_repair(f);
}

static int group_find(struct srdma_mcast_file *f, const uint8_t mgid[16])
{
	uint32_t i;

	for (i = 0; i < f->ngroups; i++)
		if (!memcmp(f->g[i].mgid, mgid, 16))
			return (int)i;
	return -1;
}

/* Remove member @j of group @gi (compact), and the group when empty. */
static void member_del(struct srdma_mcast_file *f, uint32_t gi, uint32_t j)
{
	struct srdma_mcast_group *g = &f->g[gi];

	g->m[j] = g->m[--g->n];
	memset(&g->m[g->n], 0, sizeof(g->m[0]));
	f->total--;
	if (!g->n) {
		if (gi != --f->ngroups)
			*g = f->g[f->ngroups];
		memset(f->g[f->ngroups].mgid, 0, 16);
		f->g[f->ngroups].n = 0;
	}
}

int srdma_mcast_attach(struct srdma_context *ctx, uint32_t qpn,
		       uint32_t qp_gen, const uint8_t mgid[16], uint16_t mlid)
{
	struct srdma_mcast_file *f = table(ctx, true);
	struct srdma_mcast_member *m;
	struct srdma_mcast_group *g;
	bool pruned = false;
	int gi, ret = 0;
	uint32_t j;

	if (!f)
		return -ENOMEM;
	table_lock(f);
again:
	gi = group_find(f, mgid);
	if (gi >= 0) {
		g = &f->g[gi];
		for (j = 0; j < g->n; j++)
			if (g->m[j].qpn == qpn && g->m[j].mlid == mlid) {
				ret = 1;	/* attached already: one copy */
				goto out;
			}
	}
	if (f->total >= SRDMA_MCAST_TOTAL ||
	    (gi < 0 && f->ngroups >= SRDMA_MCAST_GROUPS) ||
	    (gi >= 0 && f->g[gi].n >= SRDMA_MCAST_QP_ATTACH)) {
		/* Before refusing: drop what dead processes left. */
		if (!pruned && table_rebuild(f, true)) {
			pruned = true;
			goto again;
		}
		srdma_dbg("attach QP %#x: %s", qpn,
			  f->total >= SRDMA_MCAST_TOTAL ?
				  "max_total_mcast_qp_attach reached" :
			  gi < 0 ? "max_mcast_grp reached" :
				   "max_mcast_qp_attach reached");
		ret = -ENOMEM;
		goto out;
	}
	if (gi < 0) {
		gi = (int)f->ngroups++;
		g = &f->g[gi];
		memcpy(g->mgid, mgid, 16);
		g->n = 0;
	}
	g = &f->g[gi];
	m = &g->m[g->n];
	m->qpn = qpn;
	m->mlid = mlid;
	m->pid = ctx->host.pid;
	m->qp_gen = qp_gen;
	m->start_time = ctx->host.start_time;
	g->n++;
	f->total++;
out:
	srdma_shm_unlock(&f->lock);
	return ret;
}

int srdma_mcast_detach(struct srdma_context *ctx, uint32_t qpn,
		       const uint8_t mgid[16], uint16_t mlid)
{
	struct srdma_mcast_file *f = table(ctx, false);
	int gi, ret = -EINVAL;
	uint32_t j;

	if (!f)
		return -EINVAL;
	table_lock(f);
	gi = group_find(f, mgid);
	if (gi >= 0)
		for (j = 0; j < f->g[gi].n; j++)
			if (f->g[gi].m[j].qpn == qpn &&
			    f->g[gi].m[j].mlid == mlid) {
				member_del(f, (uint32_t)gi, j);
				ret = 0;
				break;
			}
	srdma_shm_unlock(&f->lock);
	return ret;
}

static bool seen(const struct srdma_mcast_dest *out, unsigned int n,
		 uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (out[i].qpn == qpn)
			return true;
	return false;
}

static unsigned int collect(const struct srdma_mcast_group *g, bool by_lid,
			    uint16_t mlid, uint32_t lid,
			    struct srdma_mcast_dest *out, unsigned int n,
			    unsigned int max)
{
	uint32_t j;

	for (j = 0; j < g->n && n < max; j++) {
		const struct srdma_mcast_member *m = &g->m[j];

		if (by_lid && m->mlid != mlid)
			continue;
		if (lid && m->qpn >> SRDMA_QPN_SHIFT != lid)
			continue;
		if (seen(out, n, m->qpn))
			continue;
		out[n].qpn = m->qpn;
		out[n].qp_gen = m->qp_gen;
		out[n].pid = m->pid;
		out[n].start_time = m->start_time;
		n++;
	}
	return n;
}

unsigned int srdma_mcast_members(struct srdma_context *ctx,
				 const uint8_t *mgid, uint16_t mlid,
				 uint32_t lid, struct srdma_mcast_dest *out,
				 unsigned int max)
{
	struct srdma_mcast_file *f = table(ctx, false);
	unsigned int n = 0;
	uint32_t i;

	if (!f)
		return 0;
	table_lock(f);
	if (mgid) {
		int gi = group_find(f, mgid);

		if (gi >= 0)
			n = collect(&f->g[gi], false, 0, lid, out, 0, max);
	} else {
		for (i = 0; i < f->ngroups && n < max; i++)
			n = collect(&f->g[i], true, mlid, lid, out, n, max);
	}
	srdma_shm_unlock(&f->lock);
	return n;
}
