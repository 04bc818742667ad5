// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * srdma.c - the srdma command: run programs on softrdma, and show what the
 * softrdma contexts of this user hold (architecture principle 8).
 *
 *   srdma run [--] PROGRAM ARGS...   exec PROGRAM with softrdma's libraries
 *                                    first on LD_LIBRARY_PATH
 *   srdma status [--all] [--no-reap] [--json]
 *                                    live contexts and their resources
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
 * Layout of everything read here: src/transport/host/shm_layout.h (key,
 * CQ, QP and SRQ tables, and the resource table: PDs and the mirrored net
 * endpoint counters, core/restrack.h), and for net QPs (RoCE ports) their
 * counters, struct srdma_net_qp_stats of src/transport/net/net.h. Every
 * object becomes a record (named fields, text and JSON forms), printed as
 * tables or, with --json, as one JSON document; an entry whose fields make
 * no sense is shown as GARBAGE (docs/design/host-segment.md, "The resource
 * table and srdma status").
 */
#include <arpa/inet.h>
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
#include "core/restrack.h"
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
	"        libsrdma_sigwatch.so goes last on LD_PRELOAD (not with\n"
	"        SRDMA_SIGWATCH=0): a libibverbs that PROGRAM loads after the\n"
	"        C library (UCX, Open MPI) then learns of SIGSEGV/SIGBUS\n"
	"        handler changes without a system call per copy.\n"
	"  status [--all] [--no-reap] [--json]\n"
	"        list live contexts (pid, device, LID, QPN range) and what\n"
	"        they hold, like `rdma resource show`: PDs with their users,\n"
	"        MRs and MWs, CQs (size, entries waiting), SRQs (depth,\n"
	"        posted), QPs (type, state, peer, PSNs, sends, receives,\n"
	"        errors), read from the shared segments under SRDMA_DIR.\n"
	"        Contexts whose process died are shown as dead and reclaimed\n"
	"        unless --no-reap. With a RoCE port (SRDMA_LINK_LAYER=eth)\n"
	"        also the net transport's counters per QP (packets,\n"
	"        retransmissions, NAKs, RNR NAKs, delayed ACKs, drops by\n"
	"        cause) and per port (datagrams, GSO/GRO segments, poll\n"
	"        hand-offs, drops by cause). --all adds key slots, owner\n"
	"        addresses, segment files and in-flight access records.\n"
	"        --json prints the same as one JSON document (messages about\n"
	"        reaping go to stderr).\n"
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

/* Where status messages (reaping, segment errors) go: stderr with --json,
 * so that stdout is exactly one JSON document. */
static FILE *msgf;

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

#define TABLE_MAX_COLS 32

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

/*
 * The signal watch for a libibverbs that comes after the C library (UCX,
 * Open MPI, libfabric, pyverbs; src/util/sigwatch.c): libsrdma_sigwatch.so
 * last on LD_PRELOAD, so that a sanitizer runtime put there stays first.
 * Not with SRDMA_SIGWATCH=0, and not from a sanitizer build of ours (the
 * memcpy guard is off there, and a sanitized program must load its
 * runtime first). Without it the program still runs: its copies then ask
 * the kernel about the handlers, as before; said only under SRDMA_LOG.
 */
static void run_sigwatch(const char *libdir)
{
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	const char *e = getenv("SRDMA_SIGWATCH");
	char lib[PATH_MAX + 32];
	int ret;

	if (e && !strcmp(e, "0"))
		return;
	snprintf(lib, sizeof(lib), "%s/libsrdma_sigwatch.so", libdir);
	ret = access(lib, R_OK) ? -errno : srdma_run_preload(lib, true);
	if (ret && getenv("SRDMA_LOG"))
		fprintf(stderr, "srdma run: cannot preload %s: %s\n", lib,
			ret == -EINVAL ? "a space or colon in the path"
				       : strerror(-ret));
#else
	(void)libdir;
#endif
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
	run_sigwatch(libdir);

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
	/* Another build's library owns it: the segment version it wrote
	 * (map_err -EPROTO, 0 if not even the magic is ours), or the stats
	 * layout it stamped when that is not ours (stats_other). */
	uint16_t seg_version;
	bool stats_other;
	uint32_t stats_layout;
};

struct status_opts {
	bool all;
	bool reap;
	bool json;	/* --json: one JSON document on stdout */
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
 * The segment of @c was refused as malformed: if its header is ours but
 * for the version, note the version (another softrdma build wrote it).
 */
static void seg_version_probe(int dfd, struct ctx_view *c)
{
	struct srdma_seg_hdr h;
	int fd = openat(dfd, c->seg_name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	c->seg_version = 0;
	if (fd < 0)
		return;
	if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	    h.magic == SRDMA_SEG_MAGIC && h.version != SRDMA_SEG_VERSION)
		c->seg_version = h.version;
	close(fd);
}

/* Why @c's segment could not be read: the one line status prints. */
static void print_seg_err(const struct ctx_view *c, const char *sep)
{
	if (c->map_err == -EPROTO && c->seg_version)
		fprintf(msgf,
			"%slid %u pid %d: segment %s: layout version %u, this "
			"srdma reads version %u: the process uses a library "
			"from another softrdma build; run that build's srdma\n",
			sep, c->lid, c->pid, c->seg_name,
			(unsigned int)c->seg_version,
			(unsigned int)SRDMA_SEG_VERSION);
	else
		fprintf(msgf, "%slid %u pid %d: segment %s: %s\n", sep, c->lid,
			c->pid, c->seg_name, seg_err_str(c->map_err));
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
			if (c->map_err == -EPROTO)
				seg_version_probe(state_dfd, c);
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
			fputc('\n', msgf);
		if (!remove) {
			fprintf(msgf, "orphaned segment %s (pid %d dead, not in the "
			       "registry) not removed (--no-reap)\n",
			       d->d_name, (int)pid);
			n++;
			continue;
		}
		if (unlinkat(state_dfd, d->d_name, 0) && errno != ENOENT) {
			fprintf(msgf, "orphaned segment %s (pid %d dead): cannot "
			       "remove: %s\n",
			       d->d_name, (int)pid, strerror(errno));
			continue;
		}
		fprintf(msgf, "removed orphaned segment %s (pid %d dead, not in the "
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
			fprintf(msgf, "\n%zu dead context(s) not reaped (--no-reap)\n",
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
			fputc('\n', msgf);
		if (atomic_load_explicit(&e->state, memory_order_acquire) ==
			    SRDMA_REG_LIVE &&
		    e->pid == v[i].pid && e->start_time == v[i].start_time) {
			fprintf(msgf, "lid %u pid %d: dead but not reaped\n", v[i].lid,
			       v[i].pid);
			continue;
		}
		fprintf(msgf, "reaped lid %u pid %d (dead): registry entry freed, "
		       "segment %s removed\n",
		       v[i].lid, v[i].pid, v[i].seg_name);
		reaped--;
	}
	if (reaped > 0)
		fprintf(msgf, "%sreaped %d more dead context(s)\n", said++ ? "" : "\n",
		       reaped);
	orphan_segments(r, dir, true, &said);
	srdma_registry_unlock(r);
}

/*
 * ---- records: what status shows, once for text and JSON ---------------
 *
 * Every object status reports is a record: named fields, each with its
 * text cell (NULL: JSON only) and its JSON value (already encoded; NULL:
 * text only). A section is a list of records of one kind (contexts, PDs,
 * keys, CQs, SRQs, QPs, net QPs, endpoints, access records). Text output
 * prints a section as a table whose columns pick fields by name; --json
 * prints every section as an array of objects, in one document.
 */
struct field {
	const char *name; /* a string literal */
	char *text;
	char *json;
};

struct rec {
	struct field *f;
	unsigned int n, cap;
};

struct section {
	const char *name; /* JSON member */
	struct rec *r;
	size_t n, cap;
};

static struct rec *sec_add(struct section *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct rec *r = realloc(s->r, cap * sizeof(*r));

		if (!r)
			die_nomem();
		s->r = r;
		s->cap = cap;
	}
	memset(&s->r[s->n], 0, sizeof(s->r[0]));
	return &s->r[s->n++];
}

static void rec_free(struct rec *r)
{
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		free(r->f[i].text);
		free(r->f[i].json);
	}
	free(r->f);
	memset(r, 0, sizeof(*r));
}

/* Forget the record added last. */
static void sec_drop_last(struct section *s)
{
	rec_free(&s->r[--s->n]);
}

static void sec_fini(struct section *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		rec_free(&s->r[i]);
	free(s->r);
	s->r = NULL;
	s->n = s->cap = 0;
}

static char *xstrdup(const char *s)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		die_nomem();
	return d;
}

/* Field @name of @r: its text @text and JSON value @json (either NULL);
 * a non-NULL one replaces the same form of an earlier value. */
static void rec_put(struct rec *r, const char *name, const char *text,
		    const char *json)
{
	struct field *f;
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		f = &r->f[i];
		if (strcmp(f->name, name))
			continue;
		if (text) {
			free(f->text);
			f->text = xstrdup(text);
		}
		if (json) {
			free(f->json);
			f->json = xstrdup(json);
		}
		return;
	}
	if (r->n == r->cap) {
		unsigned int cap = r->cap ? r->cap * 2 : 16;

		f = realloc(r->f, cap * sizeof(*f));
		if (!f)
			die_nomem();
		r->f = f;
		r->cap = cap;
	}
	f = &r->f[r->n++];
	f->name = name;
	f->text = xstrdup(text);
	f->json = xstrdup(json);
}

/* @s as a JSON string literal, in a buffer to free. */
static char *json_quote(const char *s)
{
	size_t len = strlen(s), i, o = 0;
	char *q = malloc(len * 6 + 3);

	if (!q)
		die_nomem();
	q[o++] = '"';
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			q[o++] = '\\';
			q[o++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			/* Names in shared memory are anybody's bytes: keep
			 * the document ASCII and valid whatever they are. */
			o += (size_t)sprintf(q + o, "\\u%04x", c);
		} else {
			q[o++] = (char)c;
		}
	}
	q[o++] = '"';
	q[o] = 0;
	return q;
}

/* A string field: the same text in both forms. */
__attribute__((format(printf, 3, 4))) static void
rec_str(struct rec *r, const char *name, const char *fmt, ...)
{
	va_list ap;
	char *s, *q;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		die_nomem();
	va_end(ap);
	q = json_quote(s);
	rec_put(r, name, s, q);
	free(s);
	free(q);
}

/* A number, shown in decimal. */
static void rec_num(struct rec *r, const char *name, uint64_t v)
{
	char b[32];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	rec_put(r, name, b, b);
}

/* A signed number. */
static void rec_int(struct rec *r, const char *name, int64_t v)
{
	char b[32];

	snprintf(b, sizeof(b), "%" PRId64, v);
	rec_put(r, name, b, b);
}

/* A number shown in hex as text (QPNs, keys, PSNs), @digits wide (0: as
 * short as it gets, with 0x), a JSON number. */
static void rec_hex(struct rec *r, const char *name, int digits, uint32_t v)
{
	char t[32], j[16];

	if (digits)
		snprintf(t, sizeof(t), "0x%0*x", digits, v);
	else
		snprintf(t, sizeof(t), "%#x", v);
	snprintf(j, sizeof(j), "%u", v);
	rec_put(r, name, t, j);
}

static void rec_bool(struct rec *r, const char *name, bool v)
{
	rec_put(r, name, v ? "yes" : "no", v ? "true" : "false");
}

/* A text-only cell (its facts are in other, JSON-only fields). */
__attribute__((format(printf, 3, 4))) static void
rec_text(struct rec *r, const char *name, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		die_nomem();
	va_end(ap);
	rec_put(r, name, s, NULL);
	free(s);
}

/* A JSON-only field, its value already encoded. */
static void rec_json(struct rec *r, const char *name, const char *json)
{
	rec_put(r, name, NULL, json);
}

static const struct field *rec_get(const struct rec *r, const char *name)
{
	unsigned int i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->f[i].name, name))
			return &r->f[i];
	return NULL;
}

/* A text column: its heading ('>' first: right-aligned) and field. */
struct col {
	const char *head;
	const char *field;
	bool all_only; /* only with --all */
};

/* Whether status has printed anything yet: sections are separated by
 * blank lines, and the first needs none. */
static bool text_started;

/* Print section @s as a table of columns @cols, or @none if empty. */
static void sec_print(const struct section *s, const struct col *cols,
		      unsigned int ncols, bool all, const char *none)
{
	const char *heads[TABLE_MAX_COLS];
	unsigned int map[TABLE_MAX_COLS], nc = 0, i;
	struct table t;
	size_t j;

	if (!s->n) {
		if (none)
			printf("%s%s\n", text_started ? "\n" : "", none);
		text_started |= none != NULL;
		return;
	}
	for (i = 0; i < ncols && nc < TABLE_MAX_COLS; i++) {
		if (cols[i].all_only && !all)
			continue;
		map[nc] = i;
		heads[nc++] = cols[i].head;
	}
	table_init(&t, heads, nc);
	for (j = 0; j < s->n; j++) {
		table_row(&t);
		for (i = 0; i < nc; i++) {
			const struct field *f =
				rec_get(&s->r[j], cols[map[i]].field);

			if (f && f->text)
				table_set(&t, i, "%s", f->text);
		}
	}
	if (text_started)
		putchar('\n');
	text_started = true;
	table_print(&t);
	table_fini(&t);
}

/* Print @s as a JSON array member "name": [...]. */
static void sec_json(const struct section *s, bool last)
{
	size_t j;
	unsigned int i;

	printf("  \"%s\": [", s->name);
	for (j = 0; j < s->n; j++) {
		bool first = true;

		printf("%s\n    {", j ? "," : "");
		for (i = 0; i < s->r[j].n; i++) {
			const struct field *f = &s->r[j].f[i];

			if (!f->json)
				continue;
			printf("%s\"%s\": %s", first ? "" : ", ", f->name,
			       f->json);
			first = false;
		}
		putchar('}');
	}
	printf("%s]%s\n", s->n ? "\n  " : "", last ? "" : ",");
}
/* ---- reading a context's tables ----------------------------------------- */

/* Every section of the output, filled context by context. */
struct status {
	struct status_opts o;
	struct srdma_registry *reg;
	struct section ctxs, pds, keys, cqs, srqs, qps, netqps, eps, accs;
};

/* Users of one PD, counted while the tables are scanned. */
struct pd_use {
	uint32_t handle;
	uint32_t mrs, mws, qps, srqs;
};

/* One context being scanned. */
struct scan {
	struct status *st;
	const struct ctx_view *c;
	struct srdma_seg_hdr *s;
	struct pd_use *pd; /* sorted by handle */
	size_t npd;
	uint32_t n_cq, n_qp, n_srq, n_net;
	bool net_ok; /* the owner's net counter layout is ours */
	uint64_t acks_delayed, acks_piggybacked; /* sum over its net QPs */
};

static int pd_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct pd_use *)a)->handle;
	uint32_t y = ((const struct pd_use *)b)->handle;

	return x < y ? -1 : x > y;
}

static struct pd_use *pd_find(struct scan *sc, uint32_t handle)
{
	struct pd_use key = {.handle = handle};

	if (!sc->npd)
		return NULL;
	return bsearch(&key, sc->pd, sc->npd, sizeof(key), pd_cmp);
}

/* LID and pid first: every row says whose it is. */
static struct rec *ctx_rec(struct section *sec, const struct scan *sc)
{
	struct rec *r = sec_add(sec);

	rec_num(r, "lid", sc->c->lid);
	rec_int(r, "pid", sc->c->pid);
	return r;
}

/*
 * Call @fn for every slot of the table at @base (@nslots entries of @esz
 * bytes) that lies in a data extent of the segment file @fd (SEEK_DATA):
 * slots in holes were never written, and reading them through the mapping
 * would allocate them. Without SEEK_DATA, every slot.
 */
static void for_written(int fd, uint64_t base, uint64_t esz, uint32_t nslots,
			struct scan *sc,
			void (*fn)(struct scan *sc, uint32_t slot))
{
	const off_t end = (off_t)(base + (uint64_t)nslots * esz);
	off_t pos = (off_t)base, d, h;
	uint32_t slot, from, to;

	while (pos < end) {
		d = lseek(fd, pos, SEEK_DATA);
		if (d < 0 && errno == ENXIO)
			break;
		if (d < 0) {
			d = pos;
			h = end;
		} else {
			if (d >= end)
				break;
			h = lseek(fd, d, SEEK_HOLE);
			if (h < 0 || h > end)
				h = end;
		}
		if (d < (off_t)base)
			d = (off_t)base;
		from = (uint32_t)(((uint64_t)d - base) / esz);
		to = (uint32_t)(((uint64_t)h - base + esz - 1) / esz);
		if (to > nslots)
			to = nslots;
		for (slot = from; slot < to; slot++)
			fn(sc, slot);
		pos = (off_t)(base + (uint64_t)to * esz);
	}
}

/* ---- keys (MRs and MWs) ---- */

static const struct col key_cols[] = {
	{">LID", "lid", false},		  {">PID", "pid", false},
	{"KIND", "kind", false},	  {"KEY", "key", false},
	{"STATE", "state", false},	  {"RANGE", "range", false},
	{">LENGTH", "length", false},	  {"ACCESS", "access", false},
	{"FLAGS", "flags", false},	  {">PD", "pd", false},
	{">INFLIGHT", "inflight", false}, {"BIND", "bind", false},
	{">SLOT", "slot", true},	  {"HOSTADDR", "host_addr", true},
};

static void key_row(struct scan *sc, uint32_t slot)
{
	struct srdma_shm_key *keys = srdma_seg_keys(sc->s);
	struct srdma_shm_key *k = &keys[slot];
	struct srdma_key_snap sn;
	struct pd_use *pu;
	struct rec *r;
	char buf[128];

	/* key is 0 exactly when the slot is FREE: skip without waiting. */
	if (!atomic_load_explicit(&k->key, memory_order_relaxed))
		return;
	r = ctx_rec(&sc->st->keys, sc);
	rec_num(r, "slot", slot);
	if (!srdma_key_snapshot(k, &sn)) {
		rec_hex(r, "key", 8,
			atomic_load_explicit(&k->key, memory_order_relaxed));
		rec_str(r, "state", "TORN"); /* writer died mid-update */
		return;
	}
	if (sn.state == SRDMA_KEY_FREE) {
		sec_drop_last(&sc->st->keys); /* freed meanwhile */
		return;
	}
	rec_str(r, "kind", "%s", kind_str(sn.kind));
	rec_hex(r, "key", 8, sn.key);
	rec_str(r, "state", "%s", state_str(sn.state));
	if (sn.length && sn.length - 1 > UINT64_MAX - sn.iova)
		rec_text(r, "range", "[0x%" PRIx64 ", +0x%" PRIx64 ")", sn.iova,
			 sn.length);
	else
		rec_text(r, "range", "[0x%" PRIx64 ", 0x%" PRIx64 ")", sn.iova,
			 sn.iova + sn.length);
	rec_num(r, "iova", sn.iova);
	rec_num(r, "length", sn.length);
	bits_str(buf, sizeof(buf), sn.access, access_names,
		 ARRAY_SIZE(access_names));
	rec_str(r, "access", "%s", buf);
	rec_num(r, "access_bits", sn.access);
	bits_str(buf, sizeof(buf), sn.flags, keyf_names,
		 ARRAY_SIZE(keyf_names));
	rec_str(r, "flags", "%s", buf);
	rec_num(r, "pd", sn.pd_handle);
	rec_num(r, "inflight",
		atomic_load_explicit(&k->inflight, memory_order_relaxed));
	if (sn.kind != SRDMA_KIND_MR && sn.state == SRDMA_KEY_VALID &&
	    sn.mr_slot < SRDMA_SEG_KEY_SLOTS) {
		uint32_t mr_key = atomic_load_explicit(&keys[sn.mr_slot].key,
						       memory_order_relaxed);

		if (sn.kind == SRDMA_KIND_MW2)
			rec_text(r, "bind", "mr 0x%08x qp %#x", mr_key,
				 sn.bind_qpn);
		else
			rec_text(r, "bind", "mr 0x%08x", mr_key);
		rec_hex(r, "bound_mr", 8, mr_key);
		if (sn.kind == SRDMA_KIND_MW2)
			rec_hex(r, "bound_qpn", 0, sn.bind_qpn);
	}
	if (sc->st->o.all) {
		snprintf(buf, sizeof(buf), "%" PRIu64, sn.host_addr);
		rec_json(r, "host_addr", buf);
		rec_text(r, "host_addr", "0x%" PRIx64, sn.host_addr);
	}
	pu = pd_find(sc, sn.pd_handle);
	if (pu && sn.state != SRDMA_KEY_FREE) {
		if (sn.kind == SRDMA_KIND_MR)
			pu->mrs++;
		else
			pu->mws++;
	}
}

/* ---- CQs ---- */

static const struct col cq_cols[] = {
	{">LID", "lid", false},	   {">PID", "pid", false},
	{">CQ", "cq", false},	   {"STATE", "state", false},
	{">CQE", "cqe", false},	   {">SLOTS", "slots", false},
	{">FILL", "fill", false},  {"CHANNEL", "channel", false},
	{"ARMED", "armed", false}, {"OVERFLOW", "overflow", false},
};

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static void cq_row(struct scan *sc, uint32_t slot)
{
	struct srdma_shm_cq *cq = srdma_seg_cq(sc->s, slot);
	uint32_t state = atomic_load_explicit(&cq->state, memory_order_acquire);
	uint32_t size, limit, chan, armed;
	uint64_t prod, cons, fill;
	struct rec *r;

	if (state == SRDMA_OBJ_FREE)
		return;
	sc->n_cq++;
	/* Fields the owner changes under locks we do not take: each read
	 * once, then judged (anyone of the user may have written them). */
	size = __atomic_load_n(&cq->size, __ATOMIC_RELAXED);
	limit = __atomic_load_n(&cq->limit, __ATOMIC_RELAXED);
	chan = __atomic_load_n(&cq->chan, __ATOMIC_RELAXED);
	prod = __atomic_load_n(&cq->prod, __ATOMIC_RELAXED);
	cons = atomic_load_explicit(&cq->cons, memory_order_relaxed);
	armed = atomic_load_explicit(&cq->armed, memory_order_relaxed);
	fill = prod - cons;
	r = ctx_rec(&sc->st->cqs, sc);
	rec_num(r, "cq", slot);
	/* Not limit > size: a resize writes size, then limit. */
	if (state != SRDMA_OBJ_LIVE || !pow2(size) || fill > size) {
		rec_str(r, "state", "GARBAGE");
		rec_num(r, "raw_state", state);
		rec_num(r, "slots", size);
		return;
	}
	rec_str(r, "state", "LIVE");
	rec_num(r, "cqe", limit);
	rec_num(r, "slots", size);
	rec_num(r, "fill", fill);
	if (chan)
		rec_num(r, "channel", chan - 1);
	else
		rec_json(r, "channel", "null");
	rec_str(r, "armed", "%s",
		armed == SRDMA_CQ_ARMED_ANY	    ? "any"
		: armed == SRDMA_CQ_ARMED_SOLICITED ? "solicited"
		: armed == SRDMA_CQ_DISARMED	    ? "no"
						    : "?");
	rec_bool(r, "overflow",
		 atomic_load_explicit(&cq->overflow, memory_order_relaxed));
}

/* ---- SRQs ---- */

static const struct col srq_cols[] = {
	{">LID", "lid", false},	      {">PID", "pid", false},
	{">SRQ", "srq", false},	      {"STATE", "state", false},
	{">PD", "pd", false},	      {">DEPTH", "depth", false},
	{">POSTED", "posted", false}, {">MAX SGE", "max_sge", false},
	{">LIMIT", "limit", false},
};

/* Posted receive WQEs of @rq, or -1 if its counters make no sense. */
static int64_t rq_posted(struct srdma_shm_rq *rq, uint32_t size)
{
	uint64_t head = atomic_load_explicit(&rq->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&rq->tail, memory_order_relaxed);

	return head - tail <= size ? (int64_t)(head - tail) : -1;
}

static void srq_row(struct scan *sc, uint32_t slot)
{
	struct srdma_shm_srq *q = srdma_seg_srq(sc->s, slot);
	uint32_t live = atomic_load_explicit(&q->live, memory_order_acquire);
	uint32_t size, pd;
	struct pd_use *pu;
	struct rec *r;
	int64_t posted;

	if (live == SRDMA_OBJ_FREE)
		return;
	sc->n_srq++;
	size = __atomic_load_n(&q->rq.size, __ATOMIC_RELAXED);
	pd = __atomic_load_n(&q->pd_handle, __ATOMIC_RELAXED);
	posted = rq_posted(&q->rq, size);
	r = ctx_rec(&sc->st->srqs, sc);
	rec_num(r, "srq", slot);
	if (live != SRDMA_OBJ_LIVE || !pow2(size) || posted < 0) {
		rec_str(r, "state", "GARBAGE");
		rec_num(r, "raw_state", live);
		return;
	}
	rec_str(r, "state", "%s",
		atomic_load_explicit(&q->error, memory_order_relaxed) ? "ERR"
								      : "LIVE");
	rec_num(r, "pd", pd);
	rec_num(r, "depth", size);
	rec_num(r, "posted", (uint64_t)posted);
	rec_num(r, "max_sge",
		__atomic_load_n(&q->rq.max_sge, __ATOMIC_RELAXED));
	rec_num(r, "limit",
		atomic_load_explicit(&q->limit, memory_order_relaxed));
	pu = pd_find(sc, pd);
	if (pu)
		pu->srqs++;
}

/* ---- QPs ---- */

static const struct col qp_cols[] = {
	{">LID", "lid", false},	      {">PID", "pid", false},
	{"QPN", "qpn", false},	      {"TYPE", "type", false},
	{"STATE", "state", false},    {">PD", "pd", false},
	{"VIA", "via", false},	      {"PEER", "peer", false},
	{"SQ PSN", "sq_psn", false},  {"RQ PSN", "rq_psn", false},
	{">SENDS", "sends", false},   {">RECVS", "recvs", false},
	{">ERRORS", "errors", false}, {"RQ", "rq", false},
	{">SCQ", "send_cq", false},   {">RCQ", "recv_cq", false},
};

static const struct col netqp_cols[] = {
	{">LID", "lid", false},
	{">PID", "pid", false},
	{"QPN", "qpn", false},
	{"TYPE", "type", false},
	{"STATE", "state", false},
	{"VIA", "via", false},
	{"DEST QPN", "dest_qpn", false},
	{"SQ PSN", "sq_psn", false},
	{"RQ PSN", "rq_psn", false},
	{">SENT", "sent", false},
	{">RECEIVED", "received", false},
	{">RETRANSMITTED", "retransmits", false},
	{">TIMEOUTS", "timeouts", false},
	{"NAK S/R", "naks", false},
	{"RNR S/R", "rnrs", false},
	{">DUPS", "dups_rcvd", false},
	{"ACKS DLY/PIGGY/COAL", "acks", false},
	{"DROPS", "drops", false},
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
	case IBV_QPT_XRC_SEND:
		return "XRC_INI";	/* docs/design/xrc.md */
	case IBV_QPT_XRC_RECV:
		return "XRC_TGT";
	case IBV_QPT_RAW_PACKET:	/* raw packet QPs and WQs */
		return "RAW_PACKET";
	}
	return NULL;
}

static const char *qp_state_name(uint32_t st)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS",
					    "SQD",   "SQE",  "ERR"};

	return st < ARRAY_SIZE(names) ? names[st] : NULL;
}

static uint64_t rd64(_Atomic uint64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

/* "icrc:3 qpn:1" and {"icrc": 3, "qpn": 1}: the non-zero drop counters
 * @d[0..n) by cause. */
static void rec_drops(struct rec *r, const char *name, const uint64_t *d,
		      unsigned int n)
{
	char text[1024], json[1536];
	size_t tu = 0, ju = 0;
	unsigned int i;

	text[0] = 0;
	ju += (size_t)snprintf(json, sizeof(json), "{");
	for (i = 1; i < n; i++) {
		const char *cause = i < SRDMA_DROP_MAX
					    ? srdma_drop_str((enum srdma_drop)i)
					    : "unknown";

		if (!d[i] || tu >= sizeof(text) - 64 || ju >= sizeof(json) - 64)
			continue;
		tu += (size_t)snprintf(text + tu, sizeof(text) - tu,
				       "%s%s:%" PRIu64, tu ? " " : "", cause,
				       d[i]);
		ju += (size_t)snprintf(json + ju, sizeof(json) - ju,
				       "%s\"%s\": %" PRIu64, ju > 1 ? ", " : "",
				       cause, d[i]);
	}
	snprintf(json + ju, sizeof(json) - ju, "}");
	rec_put(r, name, tu ? text : NULL, json);
}

/* The net half of QP @slot: its row in the net table. */
static void net_qp_row(struct scan *sc, uint32_t slot, struct srdma_shm_qp *sh,
		       const char *type, const char *state, struct rec *qr)
{
	uint64_t off =
		atomic_load_explicit(&sh->net_st_off, memory_order_acquire);
	struct srdma_net_qp_stats *st;
	uint64_t drops[SRDMA_DROP_MAX];
	const char *via;
	struct rec *r;
	uint32_t f;
	int d;

	if (!off)
		return;
	if (!sc->net_ok) {
		rec_str(qr, "via", "?");	/* another build's counters */
		return;
	}
	st = srdma_seg_ring(sc->s, off, sizeof(*st));
	if (!st) {
		rec_str(qr, "net", "GARBAGE"); /* offset outside the arena */
		return;
	}
	sc->n_net++;
	f = atomic_load_explicit(&st->flags, memory_order_relaxed);
	via = f & SRDMA_NET_ST_CONNECTED ? "net"
	      : sh->type == IBV_QPT_UD && (f & SRDMA_NET_ST_REGISTERED)
		      ? "host+net"
		      : "host";
	rec_str(qr, "via", "%s", via);
	/* The live PSNs of the net half, rather than those set at modify. */
	rec_hex(qr, "sq_psn", 6,
		atomic_load_explicit(&st->sq_psn, memory_order_relaxed));
	rec_hex(qr, "rq_psn", 6,
		atomic_load_explicit(&st->rq_psn, memory_order_relaxed));
	r = ctx_rec(&sc->st->netqps, sc);
	rec_hex(r, "qpn", 0, (sc->c->lid << SRDMA_QPN_SHIFT) | slot);
	rec_str(r, "type", "%s", type);
	rec_str(r, "state", "%s", state);
	rec_str(r, "via", "%s", via);
	if (sh->type != IBV_QPT_UD)
		rec_hex(r, "dest_qpn", 0,
			atomic_load_explicit(&sh->dest_qpn,
					     memory_order_relaxed));
	rec_hex(r, "sq_psn", 6,
		atomic_load_explicit(&st->sq_psn, memory_order_relaxed));
	rec_hex(r, "rq_psn", 6,
		atomic_load_explicit(&st->rq_psn, memory_order_relaxed));
	rec_text(r, "sent", "%" PRIu64 " (%" PRIu64 " B)", rd64(&st->tx_pkts),
		 rd64(&st->tx_bytes));
	rec_text(r, "received", "%" PRIu64 " (%" PRIu64 " B)",
		 rd64(&st->rx_pkts), rd64(&st->rx_bytes));
	rec_num(r, "tx_pkts", rd64(&st->tx_pkts));
	rec_num(r, "tx_bytes", rd64(&st->tx_bytes));
	rec_num(r, "rx_pkts", rd64(&st->rx_pkts));
	rec_num(r, "rx_bytes", rd64(&st->rx_bytes));
	rec_num(r, "retransmits", rd64(&st->retransmits));
	rec_num(r, "timeouts", rd64(&st->timeouts));
	rec_text(r, "naks", "%" PRIu64 "/%" PRIu64, rd64(&st->naks_sent),
		 rd64(&st->naks_rcvd));
	rec_num(r, "naks_sent", rd64(&st->naks_sent));
	rec_num(r, "naks_rcvd", rd64(&st->naks_rcvd));
	rec_text(r, "rnrs", "%" PRIu64 "/%" PRIu64, rd64(&st->rnr_sent),
		 rd64(&st->rnr_rcvd));
	rec_num(r, "rnr_sent", rd64(&st->rnr_sent));
	rec_num(r, "rnr_rcvd", rd64(&st->rnr_rcvd));
	rec_num(r, "dups_rcvd", rd64(&st->dups_rcvd));
	rec_text(r, "acks", "%" PRIu64 "/%" PRIu64 "/%" PRIu64,
		 rd64(&st->acks_delayed), rd64(&st->acks_piggybacked),
		 rd64(&st->acks_coalesced));
	rec_num(r, "acks_delayed", rd64(&st->acks_delayed));
	rec_num(r, "acks_piggybacked", rd64(&st->acks_piggybacked));
	rec_num(r, "acks_coalesced", rd64(&st->acks_coalesced));
	sc->acks_delayed += rd64(&st->acks_delayed);
	sc->acks_piggybacked += rd64(&st->acks_piggybacked);
	for (d = 0; d < SRDMA_DROP_MAX; d++)
		drops[d] = rd64(&st->drops[d]);
	rec_drops(r, "drops", drops, SRDMA_DROP_MAX);
}

/* "gid fd53::2" of a QP entry's peer GID, or false if it has none. */
static bool peer_gid(struct srdma_shm_qp *sh, char *buf, size_t len)
{
	uint64_t w[2] = {
		atomic_load_explicit(&sh->dgid[0], memory_order_relaxed),
		atomic_load_explicit(&sh->dgid[1], memory_order_relaxed),
	};
	union ibv_gid g;

	if (!w[0] && !w[1])
		return false;
	memcpy(g.raw, w, sizeof(w));
	/* ::ffff:198.18.0.2 for a RoCEv2 IPv4 GID */
	if (!inet_ntop(AF_INET6, g.raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return true;
}

static void qp_row(struct scan *sc, uint32_t slot)
{
	struct srdma_shm_qp *sh = srdma_seg_qp(sc->s, slot);
	uint32_t live = atomic_load_explicit(&sh->live, memory_order_acquire);
	uint32_t qpn = (sc->c->lid << SRDMA_QPN_SHIFT) | slot;
	uint32_t state, dqpn, dlid, pd, srq, size;
	const char *type, *sname;
	char gid[64], peer[160];
	struct pd_use *pu;
	struct rec *r;
	int64_t posted;
	bool xrc;

	if (slot == 0 || live == SRDMA_OBJ_FREE)
		return;
	sc->n_qp++;
	r = ctx_rec(&sc->st->qps, sc);
	rec_hex(r, "qpn", 0, qpn);
	type = qp_type_str(sh->type);
	state = atomic_load_explicit(&sh->state, memory_order_relaxed);
	sname = qp_state_name(state);
	srq = __atomic_load_n(&sh->srq, __ATOMIC_RELAXED);
	size = __atomic_load_n(&sh->rq.size, __ATOMIC_RELAXED);
	/* XRC QPs have no receive queue of their own (size 0). */
	xrc = sh->type == IBV_QPT_XRC_SEND || sh->type == IBV_QPT_XRC_RECV;
	posted = srq || xrc ? 0 : rq_posted(&sh->rq, size);
	if (live != SRDMA_OBJ_LIVE || !type || !sname ||
	    srq > SRDMA_SEG_SRQ_SLOTS || (xrc && (size || srq)) ||
	    (!srq && !xrc && (!pow2(size) || posted < 0))) {
		rec_str(r, "state", "GARBAGE");
		rec_num(r, "raw_state", live);
		rec_num(r, "raw_type", sh->type);
		return;
	}
	rec_str(r, "type", "%s", type);
	rec_str(r, "state", "%s", sname);
	pd = __atomic_load_n(&sh->pd_handle, __ATOMIC_RELAXED);
	rec_num(r, "pd", pd);
	dqpn = atomic_load_explicit(&sh->dest_qpn, memory_order_relaxed);
	dlid = atomic_load_explicit(&sh->dlid, memory_order_relaxed);
	if (sh->type != IBV_QPT_UD && sh->type != IBV_QPT_RAW_PACKET &&
	    state >= IBV_QPS_RTR) {
		uint32_t plid = dqpn >> SRDMA_QPN_SHIFT;
		bool has_gid = peer_gid(sh, gid, sizeof(gid));
		int32_t ppid = -1;

		rec_hex(r, "dest_qpn", 0, dqpn);
		rec_num(r, "dest_lid", dlid);
		if (has_gid)
			rec_str(r, "dest_gid", "%s", gid);
		/* A peer on this host: the context owning its QPN range. */
		if (plid >= 1 && plid <= SRDMA_REG_ENTRIES && sc->st->reg) {
			struct srdma_reg_entry *e = &sc->st->reg->ent[plid - 1];

			if (atomic_load_explicit(&e->state,
						 memory_order_acquire) ==
			    SRDMA_REG_LIVE)
				ppid = e->pid;
		}
		if (ppid > 0)
			rec_int(r, "dest_pid", ppid);
		snprintf(peer, sizeof(peer), "%#x%s%s", dqpn,
			 has_gid ? " gid " : "", has_gid ? gid : "");
		if (ppid > 0)
			snprintf(peer + strlen(peer),
				 sizeof(peer) - strlen(peer), " pid %d",
				 (int)ppid);
		rec_text(r, "peer", "%s", peer);
	}
	if (sh->type == IBV_QPT_UD && state >= IBV_QPS_INIT) {
		uint32_t qkey = atomic_load_explicit(&sh->qkey,
						     memory_order_relaxed);

		/* A UD QP has no one peer: what senders must match. */
		rec_text(r, "peer", "qkey 0x%08x", qkey);
		rec_num(r, "qkey", qkey);
	}
	rec_str(r, "via", "host");
	rec_hex(r, "sq_psn", 6, __atomic_load_n(&sh->sq_psn, __ATOMIC_RELAXED));
	rec_hex(r, "rq_psn", 6, __atomic_load_n(&sh->rq_psn, __ATOMIC_RELAXED));
	rec_num(r, "sends", rd64(&sh->n_sent));
	rec_num(r, "recvs", rd64(&sh->n_recv));
	rec_num(r, "errors", rd64(&sh->n_err));
	if (xrc) {
		rec_text(r, "rq", "-");
	} else if (srq) {
		rec_text(r, "rq", "srq %u", srq - 1);
		rec_num(r, "srq", srq - 1);
	} else {
		rec_text(r, "rq", "%" PRId64 "/%u", posted, size);
		rec_num(r, "rq_posted", (uint64_t)posted);
		rec_num(r, "rq_depth", size);
	}
	rec_num(r, "send_cq", __atomic_load_n(&sh->send_cq, __ATOMIC_RELAXED));
	rec_num(r, "recv_cq", __atomic_load_n(&sh->recv_cq, __ATOMIC_RELAXED));
	net_qp_row(sc, slot, sh, type, sname, r);
	pu = pd_find(sc, pd);
	if (pu)
		pu->qps++;
}

/* ---- PDs and the endpoint, from the resource table ---- */

static const struct col pd_cols[] = {
	{">LID", "lid", false}, {">PID", "pid", false},
	{">PD", "pd", false},	{">USERS", "users", false},
	{">MRS", "mrs", false}, {">MWS", "mws", false},
	{">QPS", "qps", false}, {">SRQS", "srqs", false},
};

static const struct col ep_cols[] = {
	{">LID", "lid", false},
	{">PID", "pid", false},
	{"AS OF", "as_of", false},
	{">RX DGRAMS", "rx_dgrams", false},
	{">RX LOCAL", "rx_local", false},
	{">FWD OUT/IN", "fwd", false},
	{">INLINE RX", "inline_rx", false},
	{">TX DGRAMS", "tx_dgrams", false},
	{">TX BYTES", "tx_bytes", false},
	{">TX ERR", "tx_errors", false},
	{">WAKEUPS", "wakeups", false},
	{">GSO SEGS", "tx_gso_segs", false},
	{">GRO SEGS", "rx_gro_segs", false},
	{">POLL HANDOFFS", "poll_handoffs", false},
	{">LONE ACKS", "lone_acks", false},
	{">ICRC OTHER ID", "icrc_other_id", false},
	{"ACKS DLY/PIGGY", "acks", false},
	{"DROPS", "drops", false},
};

/* The PDs listed in @c's resource table, sorted, into sc->pd. */
static void pd_collect(struct scan *sc, struct srdma_shm_rt *rt)
{
	uint32_t i, h;

	sc->pd = calloc(SRDMA_RT_PD_SLOTS, sizeof(*sc->pd));
	if (!sc->pd)
		die_nomem();
	for (i = 0; i < SRDMA_RT_PD_SLOTS; i++) {
		h = atomic_load_explicit(&rt->pd[i].handle,
					 memory_order_acquire);
		if (h && !pd_find(sc, h)) {
			sc->pd[sc->npd++].handle = h;
			qsort(sc->pd, sc->npd, sizeof(*sc->pd), pd_cmp);
		}
	}
}

static void pd_rows(struct scan *sc)
{
	size_t i;

	for (i = 0; i < sc->npd; i++) {
		const struct pd_use *p = &sc->pd[i];
		struct rec *r = ctx_rec(&sc->st->pds, sc);

		rec_num(r, "pd", p->handle);
		rec_num(r, "users",
			(uint64_t)p->mrs + p->mws + p->qps + p->srqs);
		rec_num(r, "mrs", p->mrs);
		rec_num(r, "mws", p->mws);
		rec_num(r, "qps", p->qps);
		rec_num(r, "srqs", p->srqs);
	}
}

static void ep_row(struct scan *sc, struct srdma_shm_rt *rt)
{
	struct srdma_rt_ep_snap sn;
	enum srdma_rt_snap got = srdma_rt_ep_snapshot(rt, &sn);
	time_t when;
	struct tm tm;
	char buf[64];
	struct rec *r;

	if (got == SRDMA_RT_SNAP_NONE)
		return;
	r = ctx_rec(&sc->st->eps, sc);
	if (got == SRDMA_RT_SNAP_TORN) {
		rec_str(r, "as_of", "TORN"); /* writer died mid-update */
		return;
	}
	when = (time_t)(sn.time_ns / 1000000000u);
	if (localtime_r(&when, &tm) &&
	    strftime(buf, sizeof(buf), "%H:%M:%S", &tm))
		rec_text(r, "as_of", "%s.%03u", buf,
			 (unsigned int)(sn.time_ns / 1000000u % 1000u));
	snprintf(buf, sizeof(buf), "%" PRIu64, sn.time_ns);
	rec_json(r, "as_of_ns", buf);
	rec_num(r, "rx_dgrams", sn.ep[SRDMA_RT_EP_RX_DGRAMS]);
	rec_num(r, "rx_local", sn.ep[SRDMA_RT_EP_RX_LOCAL]);
	rec_text(r, "fwd", "%" PRIu64 "/%" PRIu64, sn.ep[SRDMA_RT_EP_FWD_OUT],
		 sn.ep[SRDMA_RT_EP_FWD_IN]);
	rec_num(r, "fwd_out", sn.ep[SRDMA_RT_EP_FWD_OUT]);
	rec_num(r, "fwd_in", sn.ep[SRDMA_RT_EP_FWD_IN]);
	rec_num(r, "inline_rx", sn.ep[SRDMA_RT_EP_INLINE_RX]);
	rec_num(r, "tx_dgrams", sn.ep[SRDMA_RT_EP_TX_DGRAMS]);
	rec_num(r, "tx_bytes", sn.ep[SRDMA_RT_EP_TX_BYTES]);
	rec_num(r, "tx_errors", sn.ep[SRDMA_RT_EP_TX_ERRORS]);
	rec_num(r, "wakeups", sn.ep[SRDMA_RT_EP_WAKEUPS]);
	rec_num(r, "icrc_other_id", sn.ep[SRDMA_RT_EP_ICRC_OTHER_ID]);
	rec_num(r, "tx_gso_segs", sn.ep[SRDMA_RT_EP_TX_GSO_SEGS]);
	rec_num(r, "rx_gro_segs", sn.ep[SRDMA_RT_EP_RX_GRO_SEGS]);
	rec_num(r, "poll_handoffs", sn.ep[SRDMA_RT_EP_POLL_HANDOFFS]);
	rec_num(r, "lone_acks", sn.ep[SRDMA_RT_EP_LONE_ACKS]);
	/* Per QP in the segment already; summed here for the port (unless
	 * another build laid them out). */
	if (sc->net_ok) {
		rec_text(r, "acks", "%" PRIu64 "/%" PRIu64, sc->acks_delayed,
			 sc->acks_piggybacked);
		rec_num(r, "acks_delayed", sc->acks_delayed);
		rec_num(r, "acks_piggybacked", sc->acks_piggybacked);
	}
	rec_drops(r, "drops", sn.drops, SRDMA_RT_EP_DROPS);
}

/* ---- contexts ---- */

static const struct col ctx_cols[] = {
	{">LID", "lid", false},
	{">PID", "pid", false},
	{"STATE", "state", false},
	{"DEVICE", "device", false},
	{"QPN RANGE", "qpn_range", false},
	{"OPENED", "opened", false},
	{">PDS", "pds", false},
	{">MRS", "mrs", false},
	{">MWS", "mws", false},
	{">CQS", "cqs", false},
	{">QPS", "qps", false},
	{">SRQS", "srqs", false},
	{">REG", "reg", false},
	{">DEREG", "dereg", false},
	{">SLOTS", "slots", true},
	{"SEGMENT", "segment", true},
};

/* Scan every table of @c into the sections, then its context row. */
static void scan_context(struct status *st, struct ctx_view *c)
{
	struct scan sc = {.st = st, .c = c, .s = c->ps.seg};
	time_t when = (time_t)c->open_time;
	struct srdma_shm_rt *rt = NULL;
	char buf[64];
	struct rec *r;
	struct tm tm;
	int fd = -1;

	r = ctx_rec(&st->ctxs, &sc);
	rec_str(r, "state", "%s", c->alive ? "alive" : "dead");
	rec_str(r, "device", "%s", c->dev_name);
	rec_text(r, "qpn_range", "%#x-%#x", c->lid << SRDMA_QPN_SHIFT,
		 ((c->lid + 1) << SRDMA_QPN_SHIFT) - 1);
	snprintf(buf, sizeof(buf), "[%u, %u]", c->lid << SRDMA_QPN_SHIFT,
		 ((c->lid + 1) << SRDMA_QPN_SHIFT) - 1);
	rec_json(r, "qpn_range", buf);
	if (localtime_r(&when, &tm) &&
	    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm))
		rec_text(r, "opened", "%s", buf);
	rec_num(r, "opened_time", c->open_time);
	rec_str(r, "segment", "%s", c->seg_name);
	if (c->map_err) {
		rec_str(r, "error", "%s", seg_err_str(c->map_err));
		if (c->map_err == -EPROTO && c->seg_version)
			rec_num(r, "segment_version", c->seg_version);
		return;
	}
	/* The file may be gone (owner closed meanwhile): then so are its
	 * objects, and scanning the orphaned mapping blind would fill
	 * holes. */
	fd = openat(state_dfd, c->seg_name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	rt = srdma_seg_rt(sc.s);
	if (fd >= 0 &&
	    (__atomic_load_n(&rt->magic, __ATOMIC_RELAXED) != SRDMA_RT_MAGIC ||
	     __atomic_load_n(&rt->size, __ATOMIC_RELAXED) != sizeof(*rt))) {
		rec_str(r, "resource_table", "GARBAGE");
		rt = NULL;
	}
	/* Net counters are laid out by the owner's build (no version pins
	 * them): read them only when that layout is ours. */
	c->stats_layout = rt ? __atomic_load_n(&rt->stats_layout,
					       __ATOMIC_RELAXED) : 0;
	c->stats_other = rt && c->stats_layout != srdma_rt_stats_layout();
	sc.net_ok = rt && !c->stats_other;
	if (c->stats_other)
		rec_str(r, "net_counters", "other build");
	if (fd >= 0 && rt)
		pd_collect(&sc, rt);
	if (fd >= 0) {
		for_written(fd, SRDMA_SEG_KEY_OFF, sizeof(struct srdma_shm_key),
			    SRDMA_SEG_KEY_SLOTS, &sc, key_row);
		for_written(fd, SRDMA_SEG_CQ_OFF, sizeof(struct srdma_shm_cq),
			    SRDMA_SEG_CQ_SLOTS, &sc, cq_row);
		for_written(fd, SRDMA_SEG_SRQ_OFF, sizeof(struct srdma_shm_srq),
			    SRDMA_SEG_SRQ_SLOTS, &sc, srq_row);
		for_written(fd, SRDMA_SEG_QP_OFF, sizeof(struct srdma_shm_qp),
			    SRDMA_SEG_QP_SLOTS, &sc, qp_row);
		close(fd);
	}
	if (rt) {
		pd_rows(&sc);
		ep_row(&sc, rt);
		rec_num(r, "pds",
			atomic_load_explicit(&rt->n_pd, memory_order_relaxed));
		if (atomic_load_explicit(&rt->pd_unlisted,
					 memory_order_relaxed))
			rec_num(r, "pds_unlisted",
				atomic_load_explicit(&rt->pd_unlisted,
						     memory_order_relaxed));
	}
	free(sc.pd);
	rec_num(r, "mrs",
		atomic_load_explicit(&sc.s->n_live_mr, memory_order_relaxed));
	rec_num(r, "mws",
		atomic_load_explicit(&sc.s->n_live_mw, memory_order_relaxed));
	rec_num(r, "cqs", sc.n_cq);
	rec_num(r, "qps", sc.n_qp);
	rec_num(r, "srqs", sc.n_srq);
	rec_num(r, "reg",
		atomic_load_explicit(&sc.s->n_reg, memory_order_relaxed));
	rec_num(r, "dereg",
		atomic_load_explicit(&sc.s->n_dereg, memory_order_relaxed));
	rec_num(r, "slots", SRDMA_SEG_KEY_SLOTS);
}

/* --all: the in-flight marks each context holds, as an initiator. */
static const struct col acc_cols[] = {
	{">LID", "lid", false},
	{">PID", "pid", false},
	{">REC", "record", false},
	{">TARGET LID", "target_lid", false},
	{">TARGET PID", "target_pid", false},
	{">SLOT", "slot", false},
};

static void access_rows(struct status *st, const struct ctx_view *c)
{
	struct scan sc = {.st = st, .c = c};
	unsigned int i;

	for (i = 0; i < SRDMA_SEG_ACCESS_RECORDS; i++) {
		struct srdma_shm_access *a = srdma_seg_access(c->ps.seg, i);
		/* Pairs with the release store of tag by the initiator,
		 * which wrote the target fields first. */
		uint64_t tag =
			atomic_load_explicit(&a->tag, memory_order_acquire);
		struct rec *r;

		if (!(tag & SRDMA_ACC_VALID))
			continue;
		r = ctx_rec(&st->accs, &sc);
		rec_num(r, "record", i);
		rec_num(r, "target_lid",
			(unsigned int)((tag >> 32) & 0x3ff) + 1);
		rec_int(r, "target_pid", a->target_pid);
		rec_num(r, "slot", (uint32_t)tag);
	}
}

/* ---- printing ----------------------------------------------------------- */

/* A table wider than TABLE_MAX_COLS would lose its last columns. */
#define COLS_FIT(c) static_assert(ARRAY_SIZE(c) <= TABLE_MAX_COLS, #c)
COLS_FIT(ctx_cols);
COLS_FIT(pd_cols);
COLS_FIT(key_cols);
COLS_FIT(cq_cols);
COLS_FIT(srq_cols);
COLS_FIT(qp_cols);
COLS_FIT(netqp_cols);
COLS_FIT(ep_cols);
COLS_FIT(acc_cols);

static void print_text(struct status *st, const char *dir)
{
	bool all = st->o.all;

	if (all) {
		printf("SRDMA_DIR %s\n", dir);
		text_started = true;
	}
	/* The contexts table comes first, with no blank line before it. */
	sec_print(&st->ctxs, ctx_cols, ARRAY_SIZE(ctx_cols), all, NULL);
	sec_print(&st->pds, pd_cols, ARRAY_SIZE(pd_cols), all,
		  "no protection domains");
	sec_print(&st->keys, key_cols, ARRAY_SIZE(key_cols), all,
		  "no memory regions or windows");
	sec_print(&st->cqs, cq_cols, ARRAY_SIZE(cq_cols), all,
		  "no completion queues");
	sec_print(&st->srqs, srq_cols, ARRAY_SIZE(srq_cols), all, NULL);
	sec_print(&st->qps, qp_cols, ARRAY_SIZE(qp_cols), all,
		  "no queue pairs");
	/* RoCE ports only: nothing is printed without any. */
	sec_print(&st->netqps, netqp_cols, ARRAY_SIZE(netqp_cols), all, NULL);
	sec_print(&st->eps, ep_cols, ARRAY_SIZE(ep_cols), all, NULL);
	if (all)
		sec_print(&st->accs, acc_cols, ARRAY_SIZE(acc_cols), all,
			  "no accesses in flight");
}

static void print_json(struct status *st, const char *dir)
{
	char *q = json_quote(dir);
	struct section *secs[] = {&st->ctxs,   &st->pds,  &st->keys,
				  &st->cqs,    &st->srqs, &st->qps,
				  &st->netqps, &st->eps,  &st->accs};
	size_t i;

	printf("{\n  \"srdma_dir\": %s,\n", q);
	free(q);
	for (i = 0; i < ARRAY_SIZE(secs); i++)
		sec_json(secs[i], i + 1 == ARRAY_SIZE(secs));
	printf("}\n");
}

static int cmd_status(int argc, char **argv)
{
	struct srdma_registry r = {.fd = -1};
	struct status st = {
		.o = {.all = false, .reap = true, .json = false},
		.ctxs = {.name = "contexts"},
		.pds = {.name = "pds"},
		.keys = {.name = "keys"},
		.cqs = {.name = "cqs"},
		.srqs = {.name = "srqs"},
		.qps = {.name = "qps"},
		.netqps = {.name = "net_qps"},
		.eps = {.name = "endpoints"},
		.accs = {.name = "access_records"},
	};
	struct ctx_view *v;
	size_t n = 0, i, nerr;
	char dir[256];
	int ret;

	msgf = stdout;
	for (; argc > 0; argc--, argv++) {
		if (!strcmp(argv[0], "--all") || !strcmp(argv[0], "-a")) {
			st.o.all = true;
		} else if (!strcmp(argv[0], "--no-reap")) {
			st.o.reap = false;
		} else if (!strcmp(argv[0], "--json") ||
			   !strcmp(argv[0], "-j")) {
			st.o.json = true;
			msgf = stderr;
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
	v = calloc(SRDMA_REG_ENTRIES, sizeof(*v));
	if (!v)
		die_nomem();
	if (ret == 0) {
		st.reg = &r;
		n = collect_contexts(&r, dir, v);
	}
	for (i = 0; i < n; i++) {
		scan_context(&st, &v[i]);
		if (st.o.all && !v[i].map_err)
			access_rows(&st, &v[i]);
	}
	if (st.o.json)
		print_json(&st, dir);
	else if (n)
		print_text(&st, dir);
	else
		printf("no softrdma contexts (SRDMA_DIR %s)\n", dir);
	for (i = 0, nerr = 0; i < n; i++) {
		if (v[i].map_err && (v[i].alive || v[i].map_err != -ENOENT))
			print_seg_err(&v[i], nerr++ || st.o.json ? "" : "\n");
		else if (!v[i].map_err && v[i].stats_other)
			fprintf(msgf,
				"%slid %u pid %d: net counters not shown: the "
				"process uses a library from another softrdma "
				"build (counter layout %#x, this srdma reads "
				"%#x); run that build's srdma\n",
				nerr++ || st.o.json ? "" : "\n", v[i].lid,
				v[i].pid, v[i].stats_layout,
				srdma_rt_stats_layout());
	}
	if (ret == 0)
		reclaim_dead(&r, dir, v, n, &st.o);

	for (i = 0; i < n; i++)
		srdma_peer_seg_unmap(&v[i].ps);
	free(v);
	if (ret == 0)
		srdma_registry_close(&r);
	sec_fini(&st.ctxs);
	sec_fini(&st.pds);
	sec_fini(&st.keys);
	sec_fini(&st.cqs);
	sec_fini(&st.srqs);
	sec_fini(&st.qps);
	sec_fini(&st.netqps);
	sec_fini(&st.eps);
	sec_fini(&st.accs);
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
	const char *cmd = argv[1];

	if (argc < 2) {
		usage(stderr);	/* a command is needed: usage error */
		return EXIT_USAGE;
	}
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
