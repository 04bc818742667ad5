// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * srdma.c - the srdma command: run programs on softrdma, and show what the
 * softrdma contexts of this user hold (architecture principle 8).
 *
 *   srdma run [--] PROGRAM ARGS...   exec PROGRAM with softrdma's libraries
 *                                    first on LD_LIBRARY_PATH
 *   srdma status [--all] [--no-reap] live contexts and their MRs and MWs
 *   srdma devices                    the software device(s)
 *   srdma sysfs [show|mount|umount|run PROGRAM]
 *                                    the device's sysfs tree (srdma_sysfs.c)
 *
 * status is a reader of other processes' state, like `rdma resource show`:
 * it maps each registered context's control segment and copies key entries
 * with srdma_key_snapshot(); it never opens a device and never writes to a
 * live context. Its one write is reclaiming what dead processes left, under
 * the registry flock: their registry entries, through srdma_registry_reap()
 * (which also drops the in-flight marks they held on others and deletes
 * their segments), and segment files no entry names (owner died inside
 * srdma_host_attach()). A key entry whose writer died mid-update (seqlock
 * odd for good) is shown as TORN: srdma_key_snapshot() gives up on it. An
 * exited but unwaited-for owner (zombie) counts as dead, as for the library.
 *
 * Segments are sparse tmpfs files. Reading a hole through a shared mapping
 * would allocate it, so only the data extents of the file (SEEK_DATA /
 * SEEK_HOLE) are scanned; slots in holes were never written and are FREE.
 * Layout of everything read here: src/transport/host/shm_layout.h, and
 * for net QPs (RoCE ports) their counters, struct srdma_net_qp_stats of
 * src/transport/net/net.h. Not here: other QPs, CQs and counters beyond
 * the segment header.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "core/key_table.h"
#include "transport/host/host.h"
#include "transport/net/gid.h"
#include "transport/net/net.h"
#include "transport/net/wire.h"
#include "util/compiler.h"
#include "srdma_ns.h"

#include "srdma_tool.h"

#define EXIT_USAGE	2
#define EXIT_RUN_FAILED 125 /* as env(1): srdma itself failed */
#define EXIT_NOEXEC	127 /* PROGRAM could not be executed */
#define DEFAULT_DEVICE	"srdma0"

/* clang-format off */
static const char usage_text[] =
	"usage: srdma COMMAND [ARGS]\n"
	"\n"
	"  run [--] PROGRAM [ARGS...]\n"
	"        run PROGRAM on softrdma: its libibverbs.so.1 and librdmacm.so.1\n"
	"        come first on LD_LIBRARY_PATH (library directory: SRDMA_LIBDIR,\n"
	"        else ../lib/softrdma or ../lib next to this srdma). Exit status\n"
	"        is PROGRAM's; 127 if it cannot be executed, 125 if the\n"
	"        libraries are not found.\n"
	"        When /dev/infiniband/uverbs_srdma0 (UCX looks for it) is\n"
	"        missing, PROGRAM sees one through a preloaded library\n"
	"        (SRDMA_DEVNODE=auto, the default; preload: always; namespace:\n"
	"        a private /dev instead; off: never).\n"
	"  status [--all] [--no-reap]\n"
	"        list live contexts (pid, device, LID, QPN range) and the MRs\n"
	"        and MWs they registered, read from the shared segments under\n"
	"        SRDMA_DIR. Contexts whose process died are shown as dead and\n"
	"        reclaimed unless --no-reap. With a RoCE port\n"
	"        (SRDMA_LINK_LAYER=eth) also the QPs with their PSNs and net\n"
	"        transport counters (packets, retransmissions, NAKs, RNR NAKs\n"
	"        sent/received, drops by cause). --all adds key slots, owner\n"
	"        addresses, segment files and in-flight access records.\n"
	"  devices\n"
	"        list the software device(s) (SRDMA_DEVICE, default srdma0).\n"
	"  sysfs [show|mount|umount|run [--] PROGRAM [ARGS...]]\n"
	"        the device's sysfs tree, as the library writes it: where it\n"
	"        is (show); as root, lay it over /sys/class so that tools\n"
	"        reading /sys/class/infiniband (ibstat, ibstatus) see the\n"
	"        device (mount), or take it away (umount); any user: run\n"
	"        PROGRAM in a private mount namespace that shows it (run).\n"
	"  devnode [--check]\n"
	"        make /dev/infiniband/uverbs_srdma0 for every user (root), or\n"
	"        with --check say whether this process sees a usable one.\n"
	"  help\n"
	"        this text.\n"
	"\n"
	"ACCESS: LW local write, RW remote write, RR remote read, RA remote\n"
	"atomic, MW MW bind, ZB zero based, ODP on demand, HUGETLB, RO relaxed\n"
	"ordering; '-' is local read only.\n";
/* clang-format on */

/* The state directory, opened and checked by open_registry(). */
static int state_dfd = -1;

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

static void die_nomem(void)
{
	fputs("srdma: out of memory\n", stderr);
	exit(EXIT_FAILURE);
}

/* ---- aligned text tables ------------------------------------------------ */

#define TABLE_MAX_COLS 16

/*
 * Rows are collected first and printed once, so every column is exactly as
 * wide as its widest cell. A heading that starts with '>' is a right-aligned
 * (numeric) column; the '>' is not printed.
 */
struct table {
	unsigned int ncols;
	const char *head[TABLE_MAX_COLS];
	bool right[TABLE_MAX_COLS];
	char **cell; /* nrows * ncols; NULL prints "-" */
	size_t nrows, cap;
};

static void table_init(struct table *t, const char *const *heads,
		       unsigned int ncols)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	for (i = 0; i < ncols; i++) {
		t->right[i] = heads[i][0] == '>';
		t->head[i] = heads[i] + t->right[i];
	}
}

static void table_row(struct table *t)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **cell = realloc(t->cell, cap * t->ncols * sizeof(*cell));

		if (!cell)
			die_nomem();
		t->cell = cell;
		t->cap = cap;
	}
	memset(&t->cell[t->nrows * t->ncols], 0, t->ncols * sizeof(char *));
	t->nrows++;
}

__attribute__((format(printf, 3, 4))) static void
table_set(struct table *t, unsigned int col, const char *fmt, ...)
{
	char **c = &t->cell[(t->nrows - 1) * t->ncols + col];
	va_list ap;
	int n;

	free(*c);
	va_start(ap, fmt);
	n = vasprintf(c, fmt, ap);
	va_end(ap);
	if (n < 0)
		die_nomem();
}

/* Forget the row added last. */
static void table_drop_row(struct table *t)
{
	unsigned int i;

	t->nrows--;
	for (i = 0; i < t->ncols; i++) {
		free(t->cell[t->nrows * t->ncols + i]);
		t->cell[t->nrows * t->ncols + i] = NULL;
	}
}

static void table_print_row(const struct table *t, const char *const *cells,
			    const int *width)
{
	unsigned int i;

	for (i = 0; i < t->ncols; i++) {
		const char *s = cells[i] ? cells[i] : "-";
		bool last = i + 1 == t->ncols;

		if (t->right[i])
			printf("%*s", width[i], s);
		else if (last)
			fputs(s, stdout); /* no trailing blanks */
		else
			printf("%-*s", width[i], s);
		fputs(last ? "\n" : "  ", stdout);
	}
}

static void table_print(const struct table *t)
{
	int width[TABLE_MAX_COLS];
	unsigned int i;
	size_t r;

	for (i = 0; i < t->ncols; i++)
		width[i] = (int)strlen(t->head[i]);
	for (r = 0; r < t->nrows; r++)
		for (i = 0; i < t->ncols; i++) {
			const char *s = t->cell[r * t->ncols + i];
			int w = s ? (int)strlen(s) : 1;

			if (w > width[i])
				width[i] = w;
		}
	table_print_row(t, t->head, width);
	for (r = 0; r < t->nrows; r++)
		table_print_row(t, (const char *const *)&t->cell[r * t->ncols],
				width);
}

static void table_fini(struct table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cell[i]);
	free(t->cell);
	t->cell = NULL;
	t->nrows = t->cap = 0;
}

/* ---- srdma run ---------------------------------------------------------- */

/*
 * The directory holding our libibverbs.so.1: $SRDMA_LIBDIR, else the first
 * of ../lib/softrdma, ../lib and ../lib64 (relative to the directory of
 * this executable) that has one. An installed srdma (PREFIX/bin/srdma, the
 * .deb's /usr/bin/srdma) finds PREFIX/lib/softrdma, where `cmake --install`
 * puts the libraries so that they never shadow the distribution's
 * libibverbs; build/bin/srdma finds build/lib. The private directory is
 * tried first: PREFIX/lib may hold another libibverbs.so.1.
 * @buf must hold PATH_MAX bytes. Return: 0 or -errno.
 */
static int find_libdir(char *buf)
{
	static const char *const rel[] = {"../lib/softrdma", "../lib",
					  "../lib64"};
	const char *env = getenv("SRDMA_LIBDIR");
	char exe[PATH_MAX], cand[PATH_MAX + 32];
	unsigned int i;
	char *slash;
	ssize_t n;

	if (env && *env) {
		if (strlen(env) >= PATH_MAX)
			return -ENAMETOOLONG;
		strcpy(buf, env);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -errno;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = 0;
	for (i = 0; i < ARRAY_SIZE(rel); i++) {
		snprintf(cand, sizeof(cand), "%s/%s/libibverbs.so.1", exe,
			 rel[i]);
		if (access(cand, F_OK))
			continue;
		snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
		if (!realpath(cand, buf))
			return -errno;
		return 0;
	}
	return -ENOENT;
}

static int cmd_run(int argc, char **argv)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char libdir[PATH_MAX];
	char *path;
	int ret;

	if (argc > 0 && !strcmp(argv[0], "--")) {
		argc--;
		argv++;
	} else if (argc > 0 &&
		   (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	if (argc == 0) {
		fputs("srdma run: no program given\n", stderr);
		usage(stderr);
		return EXIT_USAGE;
	}

	ret = find_libdir(libdir);
	if (ret) {
		fprintf(stderr,
			"srdma run: cannot find softrdma's libibverbs.so.1 "
			"(looked in ../lib/softrdma, ../lib and ../lib64 next to "
			"srdma): %s; "
			"set SRDMA_LIBDIR\n",
			strerror(-ret));
		return EXIT_RUN_FAILED;
	}
	if (old && *old)
		ret = asprintf(&path, "%s:%s", libdir, old);
	else
		ret = asprintf(&path, "%s", libdir);
	if (ret < 0)
		die_nomem();
	if (setenv("LD_LIBRARY_PATH", path, 1)) {
		fprintf(stderr, "srdma run: setenv: %s\n", strerror(errno));
		return EXIT_RUN_FAILED;
	}
	free(path);
	ret = srdma_run_devnode(libdir);
	if (ret)
		return ret;

	execvp(argv[0], argv);
	fprintf(stderr, "srdma run: cannot execute '%s': %s\n", argv[0],
		strerror(errno));
	return EXIT_NOEXEC;
}

/* ---- srdma status ------------------------------------------------------- */

/* One LIVE registry entry, copied out of the shared registry. */
struct ctx_view {
	unsigned int index; /* registry entry; LID = index + 1 */
	int32_t pid;
	uint64_t start_time;
	uint32_t lid;
	uint64_t open_time;
	char dev_name[33];
	char seg_name[49];
	bool alive;  /* srdma_proc_alive() */
	int map_err; /* 0, or why ps is not mapped */
	struct srdma_peer_seg ps;
};

struct status_opts {
	bool all;
	bool reap;
};

static const char *kind_str(unsigned int kind)
{
	switch (kind) {
	case SRDMA_KIND_MR:
		return "MR";
	case SRDMA_KIND_MW1:
		return "MW1";
	case SRDMA_KIND_MW2:
		return "MW2";
	}
	return "?";
}

static const char *state_str(unsigned int state)
{
	switch (state) {
	case SRDMA_KEY_VALID:
		return "VALID";
	case SRDMA_KEY_INVALID:
		return "INVALID";
	case SRDMA_KEY_PENDING:
		return "PENDING";
	}
	return "?";
}

struct bit_name {
	uint32_t bit;
	const char *name;
};

/* clang-format off */
static const struct bit_name access_names[] = {
	{ IBV_ACCESS_LOCAL_WRITE, "LW" },
	{ IBV_ACCESS_REMOTE_WRITE, "RW" },
	{ IBV_ACCESS_REMOTE_READ, "RR" },
	{ IBV_ACCESS_REMOTE_ATOMIC, "RA" },
	{ IBV_ACCESS_MW_BIND, "MW" },
	{ IBV_ACCESS_ZERO_BASED, "ZB" },
	{ IBV_ACCESS_ON_DEMAND, "ODP" },
	{ IBV_ACCESS_HUGETLB, "HUGETLB" },
	{ IBV_ACCESS_RELAXED_ORDERING, "RO" },
};

static const struct bit_name keyf_names[] = {
	{ SRDMA_KEYF_ODP, "odp" },
	{ SRDMA_KEYF_IMPLICIT, "implicit" },
	{ SRDMA_KEYF_ZERO_BASED, "zero-based" },
	{ SRDMA_KEYF_DMABUF, "dmabuf" },
	{ SRDMA_KEYF_RELAXED, "relaxed" },
	{ SRDMA_KEYF_HUGETLB, "hugetlb" },
};
/* clang-format on */

/* "LW,RR" style list of @v's bits in @names, unknown bits in hex. */
static void bits_str(char *buf, size_t len, uint32_t v,
		     const struct bit_name *names, size_t n)
{
	size_t used = 0, i;

	buf[0] = 0;
	for (i = 0; i < n; i++) {
		if (!(v & names[i].bit))
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 used ? "," : "", names[i].name);
		v &= ~names[i].bit;
		if (used >= len)
			return;
	}
	if (v)
		used += (size_t)snprintf(buf + used, len - used, "%s%#x",
					 used ? "," : "", v);
	if (!used)
		snprintf(buf, len, "-");
}

/*
 * Next run [*from, *to) of key slots, at or after *from, that lies in a
 * data extent of the segment file @fd. Return: false when none is left.
 */
static bool next_written_slots(int fd, const struct srdma_seg_hdr *s,
			       uint32_t *from, uint32_t *to)
{
	const off_t esz = sizeof(struct srdma_shm_key);
	off_t base = (off_t)SRDMA_SEG_KEY_OFF;
	off_t end = base + (off_t)SRDMA_SEG_KEY_SLOTS * esz;
	off_t pos = base + (off_t)*from * esz;
	off_t d, h;

	if (pos >= end)
		return false;
	d = lseek(fd, pos, SEEK_DATA);
	if (d < 0) {
		if (errno == ENXIO)
			return false; /* only holes from here on */
		*to = SRDMA_SEG_KEY_SLOTS;   /* no SEEK_DATA: scan all */
		return true;
	}
	if (d >= end)
		return false;
	h = lseek(fd, d, SEEK_HOLE);
	if (h < 0 || h > end)
		h = end;
	*from = (uint32_t)((d - base) / esz);
	*to = (uint32_t)((h - base + esz - 1) / esz);
	return true;
}

enum {
	KC_LID,
	KC_PID,
	KC_KIND,
	KC_KEY,
	KC_STATE,
	KC_RANGE,
	KC_LENGTH,
	KC_ACCESS,
	KC_FLAGS,
	KC_PD,
	KC_INFLIGHT,
	KC_BIND,
	KC_SLOT,
	KC_HOSTADDR, /* --all only */
	KC_NCOLS
};

static const char *const key_heads[KC_NCOLS] = {
	">LID",	  ">PID",  "KIND", "KEY",	"STATE", "RANGE", ">LENGTH",
	"ACCESS", "FLAGS", ">PD",  ">INFLIGHT", "BIND",	 ">SLOT", "HOSTADDR",
};

static void key_row(struct table *t, const struct ctx_view *c,
		    struct srdma_seg_hdr *s, uint32_t slot,
		    const struct status_opts *o)
{
	struct srdma_shm_key *keys = srdma_seg_keys(s);
	struct srdma_shm_key *k = &keys[slot];
	struct srdma_key_snap sn;
	char buf[128];

	/* key is 0 exactly when the slot is FREE: skip without waiting. */
	if (!atomic_load_explicit(&k->key, memory_order_relaxed))
		return;
	table_row(t);
	table_set(t, KC_LID, "%u", c->lid);
	table_set(t, KC_PID, "%d", c->pid);
	if (o->all)
		table_set(t, KC_SLOT, "%u", slot);
	if (!srdma_key_snapshot(k, &sn)) {
		table_set(t, KC_KEY, "0x%08x",
			  atomic_load_explicit(&k->key, memory_order_relaxed));
		table_set(t, KC_STATE, "TORN"); /* writer died mid-update */
		return;
	}
	if (sn.state == SRDMA_KEY_FREE) {
		table_drop_row(t); /* freed meanwhile */
		return;
	}
	table_set(t, KC_KIND, "%s", kind_str(sn.kind));
	table_set(t, KC_KEY, "0x%08x", sn.key);
	table_set(t, KC_STATE, "%s", state_str(sn.state));
	if (sn.length && sn.length - 1 > UINT64_MAX - sn.iova)
		table_set(t, KC_RANGE, "[0x%" PRIx64 ", +0x%" PRIx64 ")",
			  sn.iova, sn.length);
	else
		table_set(t, KC_RANGE, "[0x%" PRIx64 ", 0x%" PRIx64 ")",
			  sn.iova, sn.iova + sn.length);
	table_set(t, KC_LENGTH, "%" PRIu64, sn.length);
	bits_str(buf, sizeof(buf), sn.access, access_names,
		 ARRAY_SIZE(access_names));
	table_set(t, KC_ACCESS, "%s", buf);
	bits_str(buf, sizeof(buf), sn.flags, keyf_names,
		 ARRAY_SIZE(keyf_names));
	table_set(t, KC_FLAGS, "%s", buf);
	table_set(t, KC_PD, "%u", sn.pd_handle);
	table_set(t, KC_INFLIGHT, "%u",
		  atomic_load_explicit(&k->inflight, memory_order_relaxed));
	if (sn.kind != SRDMA_KIND_MR && sn.state == SRDMA_KEY_VALID &&
	    sn.mr_slot < SRDMA_SEG_KEY_SLOTS) {
		uint32_t mr_key = atomic_load_explicit(&keys[sn.mr_slot].key,
						       memory_order_relaxed);

		if (sn.kind == SRDMA_KIND_MW2)
			table_set(t, KC_BIND, "mr 0x%08x qp %#x", mr_key,
				  sn.bind_qpn);
		else
			table_set(t, KC_BIND, "mr 0x%08x", mr_key);
	}
	if (o->all)
		table_set(t, KC_HOSTADDR, "0x%" PRIx64, sn.host_addr);
}

/* Every key entry of @c that is not FREE, one row each. */
static void key_rows(struct table *t, const char *dir, const struct ctx_view *c,
		     const struct status_opts *o)
{
	struct srdma_seg_hdr *s = c->ps.seg;
	uint32_t from = 0, to, slot;
	int fd;

	(void)dir;
	/* The file may be gone (owner closed meanwhile): then so are its
	 * keys, and scanning the orphaned mapping blind would fill holes. */
	fd = openat(state_dfd, c->seg_name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	while (next_written_slots(fd, s, &from, &to)) {
		for (slot = from; slot < to; slot++)
			key_row(t, c, s, slot, o);
		from = to;
	}
	close(fd);
}

enum {
	CC_LID,
	CC_PID,
	CC_STATE,
	CC_DEVICE,
	CC_QPNS,
	CC_OPENED,
	CC_MRS,
	CC_MWS,
	CC_REG,
	CC_DEREG,
	CC_SLOTS,
	CC_SEGMENT, /* --all only */
	CC_NCOLS
};

static const char *const ctx_heads[CC_NCOLS] = {
	">LID", ">PID", "STATE", "DEVICE", "QPN RANGE", "OPENED",
	">MRS", ">MWS", ">REG",	 ">DEREG", ">SLOTS",	"SEGMENT",
};

static void ctx_row(struct table *t, const struct ctx_view *c,
		    const struct status_opts *o)
{
	time_t when = (time_t)c->open_time;
	char buf[64];
	struct tm tm;

	table_row(t);
	table_set(t, CC_LID, "%u", c->lid);
	table_set(t, CC_PID, "%d", c->pid);
	table_set(t, CC_STATE, "%s",
		  c->alive ? "alive" : "dead");
	table_set(t, CC_DEVICE, "%s", c->dev_name);
	table_set(t, CC_QPNS, "%#x-%#x", c->lid << SRDMA_QPN_SHIFT,
		  ((c->lid + 1) << SRDMA_QPN_SHIFT) - 1);
	if (localtime_r(&when, &tm) &&
	    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm))
		table_set(t, CC_OPENED, "%s", buf);
	if (!c->map_err) {
		struct srdma_seg_hdr *s = c->ps.seg;

		table_set(t, CC_MRS, "%" PRIu64,
			  (uint64_t)atomic_load_explicit(&s->n_live_mr,
							 memory_order_relaxed));
		table_set(t, CC_MWS, "%" PRIu64,
			  (uint64_t)atomic_load_explicit(&s->n_live_mw,
							 memory_order_relaxed));
		table_set(t, CC_REG, "%" PRIu64,
			  (uint64_t)atomic_load_explicit(&s->n_reg,
							 memory_order_relaxed));
		table_set(t, CC_DEREG, "%" PRIu64,
			  (uint64_t)atomic_load_explicit(&s->n_dereg,
							 memory_order_relaxed));
		if (o->all)
			table_set(t, CC_SLOTS, "%u", SRDMA_SEG_KEY_SLOTS);
	}
	if (o->all)
		table_set(t, CC_SEGMENT, "%s", c->seg_name);
}

/* --all: the in-flight marks each context holds, as an initiator. */
static void print_access_records(const struct ctx_view *v, size_t n)
{
	static const char *const heads[] = {
		">LID", ">PID", ">REC", ">TARGET LID", ">TARGET PID", ">SLOT"};
	struct table t;
	unsigned int i;
	size_t j;

	table_init(&t, heads, ARRAY_SIZE(heads));
	for (j = 0; j < n; j++) {
		const struct ctx_view *c = &v[j];

		if (c->map_err)
			continue;
		for (i = 0; i < SRDMA_SEG_ACCESS_RECORDS; i++) {
			struct srdma_shm_access *a =
				srdma_seg_access(c->ps.seg, i);
			/* Pairs with the release store of tag by the
			 * initiator, which wrote the target fields first. */
			uint64_t tag = atomic_load_explicit(
				&a->tag, memory_order_acquire);

			if (!(tag & SRDMA_ACC_VALID))
				continue;
			table_row(&t);
			table_set(&t, 0, "%u", c->lid);
			table_set(&t, 1, "%d", c->pid);
			table_set(&t, 2, "%u", i);
			table_set(&t, 3, "%u",
				  (unsigned int)((tag >> 32) & 0x3ff) + 1);
			table_set(&t, 4, "%d", a->target_pid);
			table_set(&t, 5, "%u", (uint32_t)tag);
		}
	}
	putchar('\n');
	if (t.nrows)
		table_print(&t);
	else
		puts("no accesses in flight");
	table_fini(&t);
}

static const char *seg_err_str(int err)
{
	switch (err) {
	case -EPROTO:
		return "malformed, or from another softrdma version";
	case -ESTALE:
		return "belongs to another owner";
	case -EBADMSG:
		return "registry entry names no valid segment";
	}
	return strerror(-err);
}

/*
 * Resolve SRDMA_DIR and open its registry without creating one (a status
 * query must not leave state behind). Return: 0, 1 if there is no
 * registry, or -errno (already reported).
 */
static int open_registry(const char *cmd, char *dir, size_t len,
			 struct srdma_registry *r)
{
	const char *env = getenv("SRDMA_DIR");
	char path[320];
	struct stat st;
	int ret;

	ret = srdma_host_dir(dir, len, &state_dfd);
	if (ret) {
		const char *why = strerror(-ret);
		int fd;

		/* Say why, as the library checks it. */
		fd = env && *env ? open(env, O_RDONLY | O_DIRECTORY |
						     O_NOFOLLOW | O_CLOEXEC)
				 : -1;
		if (fd >= 0) {
			if (srdma_host_dir_check(fd))
				why = srdma_host_dir_check(fd);
			close(fd);
		} else if (env && *env && (errno == ELOOP ||
					   errno == ENOTDIR)) {
			why = "a symlink or not a directory";
		}
		if (env && *env)
			fprintf(stderr, "srdma %s: SRDMA_DIR %s refused: %s "
				"(it must be a directory of yours, mode "
				"0700, not a symlink)\n", cmd, env, why);
		else
			fprintf(stderr, "srdma %s: no usable state directory "
				"(/dev/shm/srdma-%u, $XDG_RUNTIME_DIR/srdma, "
				"/run/user/%u/srdma): %s; set SRDMA_DIR to a "
				"private directory (mode 0700)\n", cmd,
				(unsigned int)geteuid(),
				(unsigned int)geteuid(), why);
		return ret;
	}
	snprintf(path, sizeof(path), "%s/registry", dir);
	if (fstatat(state_dfd, "registry", &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 1 : -errno;
	ret = srdma_registry_open(state_dfd, r);
	if (ret)
		fprintf(stderr, "srdma %s: %s: %s\n", cmd, path,
			ret == -EPROTO ? "foreign or corrupt registry"
				       : strerror(-ret));
	return ret;
}

/* Copy out every LIVE registry entry and map its segment. */
static size_t collect_contexts(struct srdma_registry *r, const char *dir,
			       struct ctx_view *v)
{
	unsigned int i;
	size_t n = 0;

	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r->ent[i];
		struct ctx_view *c = &v[n];
		char want[sizeof(e->seg_name)];

		/* Pairs with the release store that published the entry. */
		if (atomic_load_explicit(&e->state, memory_order_acquire) !=
		    SRDMA_REG_LIVE)
			continue;
		c->index = i;
		c->pid = e->pid;
		c->start_time = e->start_time;
		c->lid = e->lid;
		c->open_time = e->open_time;
		memcpy(c->dev_name, e->dev_name, sizeof(e->dev_name));
		c->dev_name[sizeof(e->dev_name)] = 0;
		memcpy(c->seg_name, e->seg_name, sizeof(e->seg_name));
		c->seg_name[sizeof(e->seg_name)] = 0;
		c->alive = srdma_proc_alive(c->pid, c->start_time);
		/* Only a name of the one legal form is opened (the entry is
		 * writable by anyone of the user, and shown as text). */
		snprintf(want, sizeof(want), "ctx.%u.%d", i + 1, (int)c->pid);
		if (strcmp(c->seg_name, want)) {
			c->map_err = -EBADMSG;
			snprintf(c->seg_name, sizeof(c->seg_name), "(bad name)");
		} else {
			c->map_err = srdma_peer_seg_map(state_dfd, c->seg_name,
							&c->ps);
		}
		if (!c->map_err && (c->ps.seg->owner_pid != c->pid ||
				    c->ps.seg->lid != c->lid ||
				    c->ps.seg->owner_start != c->start_time)) {
			srdma_peer_seg_unmap(&c->ps);
			c->map_err = -ESTALE;
		}
		n++;
	}
	return n;
}

/* The pid in a segment file name "ctx.<lid>.<pid>"; false if not one. */
static bool seg_name_pid(const char *name, pid_t *pid)
{
	unsigned int lid;
	int p, end = 0;

	if (sscanf(name, "ctx.%u.%d%n", &lid, &p, &end) != 2 || name[end] ||
	    p <= 0)
		return false;
	*pid = p;
	return true;
}

/* True if a LIVE registry entry names the segment file @name. */
static bool seg_registered(struct srdma_registry *r, const char *name)
{
	unsigned int i;

	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r->ent[i];

		if (atomic_load_explicit(&e->state, memory_order_acquire) ==
			    SRDMA_REG_LIVE &&
		    !strncmp(e->seg_name, name, sizeof(e->seg_name)))
			return true;
	}
	return false;
}

/*
 * True if the owner of segment file @name is gone. A published segment
 * names its owner exactly (pid + start time); one that was never
 * published (its owner died inside srdma_host_attach()) only has the pid
 * in its name, and is kept while any process has that pid.
 */
static bool seg_owner_dead(const char *dir, const char *name, pid_t pid)
{
	struct srdma_peer_seg ps;

	(void)dir;
	if (!srdma_peer_seg_map(state_dfd, name, &ps)) {
		bool dead = !srdma_proc_alive(ps.seg->owner_pid,
					      ps.seg->owner_start);
		srdma_peer_seg_unmap(&ps);
		return dead;
	}
	return kill(pid, 0) && errno == ESRCH;
}

/*
 * Segment files that no registry entry names and whose owner is dead:
 * left when removing a dead context's file failed, or by versions that
 * did not mark claimed entries; srdma_registry_reap() only sees files that
 * an entry names. Removed when
 * @remove (the caller holds the registry flock exclusively, so no entry
 * is published meanwhile), else only listed. Return: how many.
 */
static int orphan_segments(struct srdma_registry *r, const char *dir,
			   bool remove, int *said)
{
	struct dirent *d;
	DIR *dp;
	int n = 0, fd;

	fd = openat(state_dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dp) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((d = readdir(dp))) {
		pid_t pid;

		if (!seg_name_pid(d->d_name, &pid) ||
		    seg_registered(r, d->d_name) ||
		    !seg_owner_dead(dir, d->d_name, pid))
			continue;
		if (!(*said)++)
			putchar('\n');
		if (!remove) {
			printf("orphaned segment %s (pid %d dead, not in the "
			       "registry) not removed (--no-reap)\n",
			       d->d_name, (int)pid);
			n++;
			continue;
		}
		if (unlinkat(state_dfd, d->d_name, 0) && errno != ENOENT) {
			printf("orphaned segment %s (pid %d dead): cannot "
			       "remove: %s\n",
			       d->d_name, (int)pid, strerror(errno));
			continue;
		}
		printf("removed orphaned segment %s (pid %d dead, not in the "
		       "registry)\n",
		       d->d_name, (int)pid);
		n++;
	}
	closedir(dp);
	return n;
}

/*
 * Reclaim what dead processes left: their registry entries (and with them
 * their segments and in-flight marks) and orphaned segment files. With
 * @o->reap false, only say what would be reclaimed.
 */
static void reclaim_dead(struct srdma_registry *r, const char *dir,
			 struct ctx_view *v, size_t n,
			 const struct status_opts *o)
{
	int ret, reaped, said = 0;
	size_t i, ndead = 0;

	for (i = 0; i < n; i++)
		if (!v[i].alive) {
			srdma_peer_seg_unmap(&v[i].ps);
			ndead++;
		}
	if (!o->reap) {
		if (ndead)
			printf("\n%zu dead context(s) not reaped (--no-reap)\n",
			       ndead);
		said = (int)ndead;
		orphan_segments(r, dir, false, &said);
		return;
	}

	ret = srdma_registry_lock(r, true);
	if (ret) {
		fprintf(stderr, "srdma status: cannot lock the registry: %s\n",
			strerror(-ret));
		return;
	}
	reaped = srdma_registry_reap(r, state_dfd);
	for (i = 0; i < n; i++) {
		struct srdma_reg_entry *e = &r->ent[v[i].index];

		if (v[i].alive)
			continue;
		if (!said++)
			putchar('\n');
		if (atomic_load_explicit(&e->state, memory_order_acquire) ==
			    SRDMA_REG_LIVE &&
		    e->pid == v[i].pid && e->start_time == v[i].start_time) {
			printf("lid %u pid %d: dead but not reaped\n", v[i].lid,
			       v[i].pid);
			continue;
		}
		printf("reaped lid %u pid %d (dead): registry entry freed, "
		       "segment %s removed\n",
		       v[i].lid, v[i].pid, v[i].seg_name);
		reaped--;
	}
	if (reaped > 0)
		printf("%sreaped %d more dead context(s)\n", said++ ? "" : "\n",
		       reaped);
	orphan_segments(r, dir, true, &said);
	srdma_registry_unlock(r);
}

/* ---- net QPs ------------------------------------------------------------ */

/*
 * The QPs of a context with a net half (a RoCE port, SRDMA_LINK_LAYER=eth):
 * their PSNs and the net transport's counters, which live in the ring
 * arena at the offset the QP entry's net_st_off gives
 * (docs/design/host-segment.md). As for keys, only the written extents of
 * the QP table are read, and every offset is bounds-checked before use
 * (the segment is writable by any process of the user).
 */
enum {
	QC_LID,
	QC_PID,
	QC_QPN,
	QC_TYPE,
	QC_STATE,
	QC_VIA,
	QC_DEST,
	QC_SQPSN,
	QC_RQPSN,
	QC_TX,
	QC_RX,
	QC_RETX,
	QC_NAK,
	QC_RNR,
	QC_DROPS,
	QC_NCOLS
};

static const char *const qp_heads[QC_NCOLS] = {
	">LID",	 ">PID",    "QPN",	  "TYPE", "STATE",
	"VIA",	 "DEST QPN", "SQ PSN", "RQ PSN", ">SENT",
	">RECEIVED", ">RETRANSMITTED", "NAK S/R", "RNR S/R", "DROPS",
};

static const char *qp_type_str(uint8_t t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	}
	return "?";
}

static const char *qp_state_name(uint32_t st)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS",
					    "SQD",   "SQE",  "ERR"};

	return st < ARRAY_SIZE(names) ? names[st] : "?";
}

static uint64_t rd64(_Atomic uint64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static void net_qp_row(struct table *t, const struct ctx_view *c,
		       struct srdma_seg_hdr *s, uint32_t slot)
{
	struct srdma_shm_qp *sh = srdma_seg_qp(s, slot);
	uint64_t off = atomic_load_explicit(&sh->net_st_off,
					    memory_order_acquire);
	struct srdma_net_qp_stats *st;
	char drops[512];
	size_t used = 0;
	uint32_t f;
	int d;

	if (!off || atomic_load_explicit(&sh->live, memory_order_acquire) !=
			    SRDMA_OBJ_LIVE)
		return;
	st = srdma_seg_ring(s, off, sizeof(*st));
	if (!st)
		return;
	f = atomic_load_explicit(&st->flags, memory_order_relaxed);
	table_row(t);
	table_set(t, QC_LID, "%u", c->lid);
	table_set(t, QC_PID, "%d", c->pid);
	table_set(t, QC_QPN, "%#x", (c->lid << SRDMA_QPN_SHIFT) | slot);
	table_set(t, QC_TYPE, "%s", qp_type_str(sh->type));
	table_set(t, QC_STATE, "%s",
		  qp_state_name(atomic_load_explicit(&sh->state,
						     memory_order_relaxed)));
	table_set(t, QC_VIA, "%s",
		  f & SRDMA_NET_ST_CONNECTED ? "net"
		  : sh->type == IBV_QPT_UD && (f & SRDMA_NET_ST_REGISTERED)
			  ? "host+net"
			  : "host");
	if (sh->type != IBV_QPT_UD)
		table_set(t, QC_DEST, "%#x",
			  atomic_load_explicit(&sh->dest_qpn,
					       memory_order_relaxed));
	table_set(t, QC_SQPSN, "0x%06x",
		  atomic_load_explicit(&st->sq_psn, memory_order_relaxed));
	table_set(t, QC_RQPSN, "0x%06x",
		  atomic_load_explicit(&st->rq_psn, memory_order_relaxed));
	table_set(t, QC_TX, "%" PRIu64 " (%" PRIu64 " B)", rd64(&st->tx_pkts),
		  rd64(&st->tx_bytes));
	table_set(t, QC_RX, "%" PRIu64 " (%" PRIu64 " B)", rd64(&st->rx_pkts),
		  rd64(&st->rx_bytes));
	table_set(t, QC_RETX, "%" PRIu64, rd64(&st->retransmits));
	table_set(t, QC_NAK, "%" PRIu64 "/%" PRIu64, rd64(&st->naks_sent),
		  rd64(&st->naks_rcvd));
	table_set(t, QC_RNR, "%" PRIu64 "/%" PRIu64, rd64(&st->rnr_sent),
		  rd64(&st->rnr_rcvd));
	drops[0] = 0;
	for (d = 1; d < SRDMA_DROP_MAX; d++) {
		uint64_t n = rd64(&st->drops[d]);
		int w;

		if (!n || used >= sizeof(drops))
			continue;
		w = snprintf(drops + used, sizeof(drops) - used, "%s%s:%" PRIu64,
			     used ? " " : "", srdma_drop_str((enum srdma_drop)d),
			     n);
		if (w > 0)
			used += (size_t)w;
	}
	if (used)
		table_set(t, QC_DROPS, "%s", drops);
}

/* The written extents of @c's QP table, one row per net QP. */
static void net_qp_rows(struct table *t, const struct ctx_view *c)
{
	const off_t esz = sizeof(struct srdma_shm_qp);
	const off_t base = (off_t)SRDMA_SEG_QP_OFF;
	const off_t end = base + (off_t)SRDMA_SEG_QP_SLOTS * esz;
	struct srdma_seg_hdr *s = c->ps.seg;
	off_t pos = base + esz, d, h;
	uint32_t slot, from, to;
	int fd;

	fd = openat(state_dfd, c->seg_name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	while (pos < end) {
		d = lseek(fd, pos, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			break;
		if (d < 0) {
			d = pos;	/* no SEEK_DATA: scan the rest */
			h = end;
		} else {
			if (d >= end)
				break;
			h = lseek(fd, d, SEEK_HOLE);
			if (h < 0 || h > end)
				h = end;
		}
		from = (uint32_t)((d - base) / esz);
		to = (uint32_t)((h - base + esz - 1) / esz);
		for (slot = from ? from : 1; slot < to; slot++)
			net_qp_row(t, c, s, slot);
		pos = base + (off_t)to * esz;
	}
	close(fd);
}

/* The contexts table, the keys table and what is wrong with them. */
static void print_contexts(const char *dir, struct ctx_view *v, size_t n,
			   const struct status_opts *o)
{
	struct table ctxs, keys;
	size_t i, nerr;

	table_init(&ctxs, ctx_heads, o->all ? CC_NCOLS : CC_SLOTS);
	table_init(&keys, key_heads, o->all ? KC_NCOLS : KC_SLOT);
	for (i = 0; i < n; i++) {
		ctx_row(&ctxs, &v[i], o);
		if (!v[i].map_err)
			key_rows(&keys, dir, &v[i], o);
	}
	if (o->all)
		printf("SRDMA_DIR %s\n\n", dir);
	table_print(&ctxs);
	putchar('\n');
	if (keys.nrows)
		table_print(&keys);
	else
		puts("no memory regions or windows");
	table_fini(&keys);
	table_fini(&ctxs);
	/* Net QPs (RoCE ports only): nothing is printed without any. */
	table_init(&keys, qp_heads, QC_NCOLS);
	for (i = 0; i < n; i++)
		if (!v[i].map_err)
			net_qp_rows(&keys, &v[i]);
	if (keys.nrows) {
		putchar('\n');
		table_print(&keys);
	}
	table_fini(&keys);
	if (o->all)
		print_access_records(v, n);

	for (i = 0, nerr = 0; i < n; i++)
		if (v[i].map_err && (v[i].alive || v[i].map_err != -ENOENT))
			printf("%slid %u pid %d: segment %s: %s\n",
			       nerr++ ? "" : "\n", v[i].lid, v[i].pid,
			       v[i].seg_name, seg_err_str(v[i].map_err));
}

static int cmd_status(int argc, char **argv)
{
	struct status_opts o = {.all = false, .reap = true};
	struct srdma_registry r = {.fd = -1};
	struct ctx_view *v;
	size_t n, i;
	char dir[256];
	int ret;

	for (; argc > 0; argc--, argv++) {
		if (!strcmp(argv[0], "--all") || !strcmp(argv[0], "-a")) {
			o.all = true;
		} else if (!strcmp(argv[0], "--no-reap")) {
			o.reap = false;
		} else if (!strcmp(argv[0], "-h") ||
			   !strcmp(argv[0], "--help")) {
			usage(stdout);
			return EXIT_SUCCESS;
		} else {
			fprintf(stderr, "srdma status: unknown option '%s'\n",
				argv[0]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}

	ret = open_registry("status", dir, sizeof(dir), &r);
	if (ret < 0)
		return EXIT_FAILURE;
	if (ret == 1) {
		printf("no softrdma contexts (SRDMA_DIR %s)\n", dir);
		return EXIT_SUCCESS;
	}
	v = calloc(SRDMA_REG_ENTRIES, sizeof(*v));
	if (!v)
		die_nomem();
	n = collect_contexts(&r, dir, v);
	if (n)
		print_contexts(dir, v, n, &o);
	else
		printf("no softrdma contexts (SRDMA_DIR %s)\n", dir);
	reclaim_dead(&r, dir, v, n, &o);

	for (i = 0; i < n; i++)
		srdma_peer_seg_unmap(&v[i].ps);
	free(v);
	srdma_registry_close(&r);
	return EXIT_SUCCESS;
}

/* ---- srdma devices ------------------------------------------------------ */

static int cmd_devices(int argc, char **argv)
{
	static const char *const heads[] = {"DEVICE", "LINK LAYER",
					    ">CONTEXTS"};
	const char *dev = getenv("SRDMA_DEVICE");
	struct srdma_registry r = {.fd = -1};
	/* Names: ours first, then any other name a live context opened. */
	char names[SRDMA_REG_ENTRIES + 1][33];
	unsigned int counts[SRDMA_REG_ENTRIES + 1];
	unsigned int nnames = 1, i, j;
	struct table t;
	char dir[256];
	int ret;

	if (argc > 0) {
		fprintf(stderr, "srdma devices: takes no arguments\n");
		return EXIT_USAGE;
	}
	if (!dev || !*dev)
		dev = DEFAULT_DEVICE;
	snprintf(names[0], sizeof(names[0]), "%s", dev);
	counts[0] = 0;

	ret = open_registry("devices", dir, sizeof(dir), &r);
	if (ret < 0)
		return EXIT_FAILURE;
	for (i = 0; !ret && i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r.ent[i];
		char name[33];

		if (atomic_load_explicit(&e->state, memory_order_acquire) !=
			    SRDMA_REG_LIVE ||
		    !srdma_proc_alive(e->pid, e->start_time))
			continue;
		memcpy(name, e->dev_name, sizeof(e->dev_name));
		name[sizeof(e->dev_name)] = 0;
		for (j = 0; j < nnames && strcmp(names[j], name); j++)
			;
		if (j == nnames) {
			memcpy(names[nnames], name, sizeof(name));
			counts[nnames++] = 0;
		}
		counts[j]++;
	}
	if (!ret)
		srdma_registry_close(&r);

	table_init(&t, heads, ARRAY_SIZE(heads));
	for (i = 0; i < nnames; i++) {
		table_row(&t);
		table_set(&t, 0, "%s", names[i]);
		/* Other processes may use another link layer; ours is the
		 * one this environment gives (SRDMA_LINK_LAYER, or Ethernet
		 * implied by SRDMA_TRANSPORT=net: transport/net/gid.c). */
		table_set(&t, 1, "%s",
			  i		       ? "?"
			  : srdma_link_is_eth() ? "Ethernet"
						: "InfiniBand");
		table_set(&t, 2, "%u", counts[i]);
	}
	table_print(&t);
	table_fini(&t);
	return EXIT_SUCCESS;
}

int srdma_tool_libdir(char *buf)
{
	return find_libdir(buf);
}

/**
 * main() - the srdma command: dispatch to run, status, devices or help.
 * @argc, @argv: the command line; argv[1] names the subcommand
 *
 * Context: a short-lived process; `run` replaces itself with PROGRAM.
 * Return: the subcommand's exit status: 0 on success, 1 on an error, 2 on a
 * usage error; for `run`, PROGRAM's status, 127 if it cannot be executed,
 * 125 if softrdma's libraries are not found.
 */
int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "help";

	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 2, argv + 2);
	if (!strcmp(cmd, "status"))
		return cmd_status(argc - 2, argv + 2);
	if (!strcmp(cmd, "devices"))
		return cmd_devices(argc - 2, argv + 2);
	if (!strcmp(cmd, "sysfs"))
		return srdma_cmd_sysfs(argc - 2, argv + 2);
	if (!strcmp(cmd, "devnode"))
		return srdma_cmd_devnode(argc - 2, argv + 2);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") ||
	    !strcmp(cmd, "--help")) {
		usage(stdout);
		return EXIT_SUCCESS;
	}
	fprintf(stderr, "srdma: unknown command '%s'\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
