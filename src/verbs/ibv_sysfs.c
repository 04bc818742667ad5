// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ibv_sysfs.c - the device's sysfs tree, synthesised, and libibverbs'
 * sysfs entry points (ibv_get_sysfs_path, ibv_read_sysfs_file).
 *
 * A real RDMA device is described in sysfs; many programs read it there
 * rather than through verbs: libibumad (ibstat), ibstatus, Open MPI's
 * openib BTL (which first checks <sysfs>/class/infiniband), NCCL and other
 * GID pickers (ports/<p>/gid_attrs/types/<i>), ibv_devinfo (board_id),
 * pyverbs' tests (device/net/ for the net interface). There is no kernel
 * device here, so we write the same files ourselves, under
 * <state dir>/sysfs, laid out as /sys is:
 *
 *   class/infiniband/<dev>/   node_type node_guid sys_image_guid fw_ver
 *                             hw_rev hca_type board_id node_desc
 *     ports/1/                state phys_state link_layer rate lid sm_lid
 *                             sm_sl lid_mask_count cap_mask
 *       gids/<i>  pkeys/<i>  gid_attrs/types/<i>  gid_attrs/ndevs/<i>
 *     device/net/<if>         -> /sys/class/net/<if>
 *   class/infiniband_verbs/   abi_version
 *     <dev_name>/             ibdev abi_version [dev]
 *
 * Every value comes from where verbs gets it: the port attributes from
 * srdma_port_attr_build() (ibv_query_port), the GID table from
 * transport/net/gid.c as a context opened now would build it, the LID from
 * the host registry (the oldest live context's; 0 when none is open), the
 * GUID and versions from the device. The exact formats are the kernel's
 * (docs/design/sysfs.md lists them).
 *
 * The tree is rebuilt in memory on every refresh (ibv_open_device and
 * ibv_close_device, whose LID may change it; ibv_get_device_list and
 * ibv_get_sysfs_path, at most once a second per process) and written only
 * when its hash differs from the stamp of the last write: each changed
 * file is replaced by rename, so a reader never sees half a file, and
 * directories are never replaced, so a mount of the tree stays valid.
 * Files no longer described (GIDs of an interface that went away) are
 * removed. One writer at a time: refresh_lock in the process, flock on
 * the tree's directory between processes.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "core/sysfs.h"
#include "transport/host/host.h"
#include "util/compiler.h"
#include "util/log.h"
#include "verbs/verbs_int.h"

#define STAMP ".stamp"
#define PATH_LEN 160		/* longest relative path in the tree */

/* One file (or symlink) of the tree, relative to its root. */
struct tfile {
	char path[PATH_LEN];
	char *text;		/* content, or the symlink's target */
	bool link;
};

struct tree {
	struct tfile *v;
	size_t n, cap;
	int err;		/* first error while building: -ENOMEM... */
};

#define REFRESH_NS 1000000000ull	/* unforced refreshes: at most 1/s */

static pthread_mutex_t refresh_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_refresh_ns;	/* refresh_lock: CLOCK_MONOTONIC */
static int refresh_root = -1;		/* refresh_lock: the tree's directory
					 * (flocked) while a refresh runs */

/*
 * fork() while another thread refreshes: the child's copy of refresh_lock
 * is held by a thread it does not have, so its first device listing would
 * wait forever; and its copy of the tree's fd shares the parent's flock,
 * which would then outlive a parent that dies before unlocking and stop
 * every refresh of the user's processes. The child's only thread starts
 * afresh: its copy of the fd closed (the parent's lock stays the
 * parent's), the lock unheld.
 */
static void refresh_child(void)
{
	if (refresh_root >= 0)
		close(refresh_root);
	refresh_root = -1;
	pthread_mutex_init(&refresh_lock, NULL);
}

__attribute__((constructor)) static void refresh_register_atfork(void)
{
	pthread_atfork(NULL, NULL, refresh_child);
}

/* ---- building the tree in memory ---------------------------------------- */

/* Add file @dir/@name (@dir may be "") with the content @fmt, ... */
static void tree_add(struct tree *t, bool link, const char *dir,
		     const char *name, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void tree_add(struct tree *t, bool link, const char *dir,
		     const char *name, const char *fmt, ...)
{
	struct tfile *f;
	va_list ap;
	int n;

	if (t->err)
		return;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 128;
		struct tfile *nv = realloc(t->v, cap * sizeof(*nv));

		if (!nv) {
			t->err = -ENOMEM;
			return;
		}
		t->v = nv;
		t->cap = cap;
	}
	f = &t->v[t->n];
	n = snprintf(f->path, sizeof(f->path), "%s%s%s", dir, *dir ? "/" : "",
		     name);
	if (n < 0 || (size_t)n >= sizeof(f->path)) {
		t->err = -ENAMETOOLONG;
		return;
	}
	va_start(ap, fmt);
	n = vasprintf(&f->text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->err = -ENOMEM;
		return;
	}
	f->link = link;
	t->n++;
}

static void tree_free(struct tree *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->v[i].text);
	free(t->v);
}

/* The kernel's %pI6 form: eight groups of four hex digits. */
static void gid_str(const union ibv_gid *g, char *s, size_t len)
{
	const uint8_t *r = g->raw;

	snprintf(s, len,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
		 "%02x%02x:%02x%02x",
		 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9],
		 r[10], r[11], r[12], r[13], r[14], r[15]);
}

static void guid_str(uint64_t be_guid, char *s, size_t len)
{
	uint64_t g = be64toh(be_guid);

	snprintf(s, len, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48),
		 (unsigned int)(g >> 32) & 0xffff,
		 (unsigned int)(g >> 16) & 0xffff, (unsigned int)g & 0xffff);
}

/* The kernel's rate file: "<Gb/s> Gb/sec (<width>X <speed name>)". */
static void rate_str(const struct ibv_port_attr *a, char *s, size_t len)
{
	static const struct {
		uint8_t speed;
		unsigned int tenths;	/* per lane, in 0.1 Gb/s */
		const char *name;
	} speeds[] = {
		{ 1, 25, " SDR" },  { 2, 50, " DDR" },	 { 4, 100, " QDR" },
		{ 8, 100, " FDR10" }, { 16, 140, " FDR" }, { 32, 250, " EDR" },
		{ 64, 500, " HDR" }, { 128, 1000, " NDR" },
	};
	unsigned int width, tenths = 25, i;
	const char *name = " SDR";

	switch (a->active_width) {
	case 2: width = 4; break;
	case 4: width = 8; break;
	case 8: width = 12; break;
	case 16: width = 2; break;
	default: width = 1; break;
	}
	for (i = 0; i < ARRAY_SIZE(speeds); i++)
		if (speeds[i].speed == a->active_speed) {
			tenths = speeds[i].tenths;
			name = speeds[i].name;
		}
	tenths *= width;
	if (tenths % 10)
		snprintf(s, len, "%u.%u Gb/sec (%uX%s)", tenths / 10,
			 tenths % 10, width, name);
	else
		snprintf(s, len, "%u Gb/sec (%uX%s)", tenths / 10, width,
			 name);
}

/* The LID of the oldest live context of device @name in the registry
 * under @dfd (the lower LID on a tie), or 0 when none is open. */
static uint32_t oldest_live_lid(int dfd, const char *name)
{
	struct srdma_registry r;
	uint64_t best_time = UINT64_MAX;
	uint32_t i, lid = 0;

	if (srdma_registry_open(dfd, &r))
		return 0;
	for (i = 0; i < SRDMA_REG_ENTRIES; i++) {
		struct srdma_reg_entry *e = &r.ent[i];

		/* Pairs with the release store that published the entry. */
		if (atomic_load_explicit(&e->state, memory_order_acquire) !=
			    SRDMA_REG_LIVE ||
		    e->open_time >= best_time ||
		    strncmp(e->dev_name, name, sizeof(e->dev_name)) ||
		    !srdma_proc_alive(e->pid, e->start_time))
			continue;
		best_time = e->open_time;
		lid = i + 1;
	}
	srdma_registry_close(&r);
	return lid;
}

/* Port 1: what ibv_query_port, ibv_query_gid and ibv_query_pkey say. */
static void build_port(struct tree *t, const char *dir, uint32_t lid,
		       const struct srdma_gid_table *gids, uint32_t tbl_len)
{
	/* The kernel's names (ib_core's sysfs.c). */
	static const char *const state_names[] = {
		"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
	};
	static const char *const phys_names[] = {
		"<unknown>", "Sleep", "Polling", "Disabled",
		"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery",
		"Phy Test",
	};
	struct ibv_port_attr a;
	char p[64], s[64];
	uint32_t i;

	srdma_port_attr_build(lid, gids, &a);
#define PORT_FILE(name, ...) tree_add(t, false, dir, name, __VA_ARGS__)
	PORT_FILE("state", "%u: %s\n", a.state,
		  a.state < ARRAY_SIZE(state_names) ? state_names[a.state]
						    : "UNKNOWN");
	PORT_FILE("phys_state", "%u: %s\n", a.phys_state,
		  a.phys_state < ARRAY_SIZE(phys_names)
			  ? phys_names[a.phys_state]
			  : "<unknown>");
	PORT_FILE("link_layer", "%s\n",
		  a.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet"
							  : "InfiniBand");
	rate_str(&a, s, sizeof(s));
	PORT_FILE("rate", "%s\n", s);
	PORT_FILE("lid", "0x%x\n", a.lid);
	PORT_FILE("sm_lid", "0x%x\n", a.sm_lid);
	PORT_FILE("sm_sl", "%u\n", a.sm_sl);
	PORT_FILE("lid_mask_count", "%u\n", a.lmc);
	PORT_FILE("cap_mask", "0x%08x\n", a.port_cap_flags);
	for (i = 0; i < a.pkey_tbl_len; i++) {
		snprintf(p, sizeof(p), "pkeys/%u", i);
		tree_add(t, false, dir, p, "0x%04x\n",
			 i ? 0 : SRDMA_PKEY_DEFAULT);
	}
#undef PORT_FILE
	/* Every slot has a GID (the zero GID when empty, as in the kernel);
	 * only filled slots have a type and an interface (the kernel's read
	 * of an empty slot's attributes fails). */
	for (i = 0; i < tbl_len; i++) {
		union ibv_gid zero = { 0 };
		const struct srdma_gid_ent *e =
			i < gids->n ? &gids->e[i] : NULL;

		gid_str(e ? &e->gid : &zero, s, sizeof(s));
		snprintf(p, sizeof(p), "gids/%u", i);
		tree_add(t, false, dir, p, "%s\n", s);
		if (!e)
			continue;
		snprintf(p, sizeof(p), "gid_attrs/types/%u", i);
		tree_add(t, false, dir, p, "%s\n",
			 e->type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2"
							 : "IB/RoCE v1");
		if (!e->ifname[0])
			continue;
		snprintf(p, sizeof(p), "gid_attrs/ndevs/%u", i);
		tree_add(t, false, dir, p, "%s\n", e->ifname);
	}
}

/*
 * The whole tree for the device's current state. @dfd is the state
 * directory (for the registry).
 */
static void build_tree(struct tree *t, int dfd)
{
	struct srdma_device *dev = srdma_device_get();
	const char *name = dev->ibdev.name;
	struct srdma_gid_table *gids, *eth;
	char d[PATH_LEN], p[PATH_LEN], s[64], host[64] = "";
	bool is_eth = srdma_link_is_eth();
	uint32_t i, lid = 0;
	struct stat st;

	gids = calloc(2, sizeof(*gids));
	if (!gids) {
		t->err = -ENOMEM;
		return;
	}
	eth = &gids[1];
	/* The interfaces: a RoCE port's GID table names them; an IB port
	 * is attached to the same ones (the CM's addresses live there). */
	if (srdma_gid_table_build_eth(eth))
		srdma_dbg("sysfs: no network interface is up");
	if (is_eth) {
		*gids = *eth;
	} else {
		lid = oldest_live_lid(dfd, name);
		srdma_gid_table_build(gids, lid, dev->node_guid);
	}

	snprintf(d, sizeof(d), "class/infiniband/%s", name);
#define DEV_FILE(file, ...) tree_add(t, false, d, file, __VA_ARGS__)
	DEV_FILE("node_type", "%d: %s\n", IBV_NODE_CA, "CA");
	guid_str(dev->node_guid, s, sizeof(s));
	DEV_FILE("node_guid", "%s\n", s);
	/* IBV_DEVICE_SYS_IMAGE_GUID: the node GUID (srdma_fill_device_attr) */
	DEV_FILE("sys_image_guid", "%s\n", s);
	DEV_FILE("fw_ver", "%s\n", SRDMA_FW_VER);
	DEV_FILE("hw_rev", "0x%x\n", SRDMA_HW_VER);
	DEV_FILE("hca_type", "%s\n", "softrdma");
	DEV_FILE("board_id", "SOFTRDMA_%04X\n", SRDMA_VENDOR_PART_ID);
	gethostname(host, sizeof(host) - 1);
	DEV_FILE("node_desc", "%s %s\n", host, name);
#undef DEV_FILE
	if (snprintf(p, sizeof(p), "%s/ports/1", d) >= (int)sizeof(p))
		t->err = -ENAMETOOLONG;
	build_port(t, p, lid, gids,
		   is_eth ? SRDMA_GID_MAX : SRDMA_GID_TBL_LEN);
	for (i = 0; i < eth->n; i++) {
		if (i && !strcmp(eth->e[i].ifname, eth->e[i - 1].ifname))
			continue;
		snprintf(s, sizeof(s), "device/net/%s", eth->e[i].ifname);
		tree_add(t, true, d, s, "/sys/class/net/%s", eth->e[i].ifname);
	}

	/* The uverbs side: rdma-core reads these to pair uverbs with ibdev. */
	tree_add(t, false, "class/infiniband_verbs", "abi_version", "6\n");
	snprintf(d, sizeof(d), "class/infiniband_verbs/%s", dev->ibdev.dev_name);
	tree_add(t, false, d, "ibdev", "%s\n", name);
	tree_add(t, false, d, "abi_version", "1\n");
	/* Its character device, if one was made (`srdma` set-up). */
	snprintf(p, sizeof(p), "/dev/infiniband/%s", dev->ibdev.dev_name);
	if (!stat(p, &st) && S_ISCHR(st.st_mode)) {
		tree_add(t, false, d, "dev", "%u:%u\n", major(st.st_rdev),
			 minor(st.st_rdev));
	}
	free(gids);
}

static uint64_t tree_hash(const struct tree *t)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < t->n; i++) {
		const char *parts[2] = { t->v[i].path, t->v[i].text };
		unsigned int k;

		for (k = 0; k < 2; k++) {
			const char *c = parts[k];

			do {
				h ^= (uint8_t)*c;
				h *= 0x100000001b3ull;
			} while (*c++);
		}
		h ^= t->v[i].link;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* ---- writing it ---------------------------------------------------------- */

/* Open (creating, mode 0755) directory @rel under @root. -errno on error. */
static int dir_open(int root, const char *rel)
{
	char buf[PATH_LEN], *c, *next;
	int fd = dup(root);

	if (fd < 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%s", rel);
	for (c = buf; c && *c; c = next) {
		int nfd;

		next = strchr(c, '/');
		if (next)
			*next++ = 0;
		if (mkdirat(fd, c, 0755) == 0) {
			nfd = openat(fd, c, O_RDONLY | O_DIRECTORY |
					    O_NOFOLLOW | O_CLOEXEC);
			if (nfd >= 0)
				srdma_host_fix_mode(nfd, 0755);
		} else if (errno == EEXIST) {
			nfd = openat(fd, c, O_RDONLY | O_DIRECTORY |
					    O_NOFOLLOW | O_CLOEXEC);
		} else {
			nfd = -1;
		}
		if (nfd < 0) {
			int e = -errno;

			close(fd);
			return e;
		}
		close(fd);
		fd = nfd;
	}
	return fd;
}

/* Write @f under @root unless it already reads the same. 0 or -errno. */
static int file_put(int root, const struct tfile *f)
{
	char dir[PATH_LEN], tmp[64], old[512];
	const char *base = strrchr(f->path, '/');
	size_t len = strlen(f->text);
	ssize_t n;
	int dfd, fd, ret = 0;

	snprintf(dir, sizeof(dir), "%.*s", (int)(base - f->path), f->path);
	base++;
	dfd = dir_open(root, dir);
	if (dfd < 0)
		return dfd;
	if (f->link) {
		n = readlinkat(dfd, base, old, sizeof(old));
		if (n == (ssize_t)len && !memcmp(old, f->text, len))
			goto out;
	} else {
		fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			n = read(fd, old, sizeof(old));
			close(fd);
			if (n == (ssize_t)len && !memcmp(old, f->text, len))
				goto out;
		}
	}
	snprintf(tmp, sizeof(tmp), ".tmp.%d", (int)getpid());
	unlinkat(dfd, tmp, 0);
	if (f->link) {
		if (symlinkat(f->text, dfd, tmp)) {
			ret = -errno;
			goto out;
		}
	} else {
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				      O_CLOEXEC, 0444);
		if (fd < 0) {
			ret = -errno;
			goto out;
		}
		srdma_host_fix_mode(fd, 0444);
		n = write(fd, f->text, len);
		if (n != (ssize_t)len)
			ret = n < 0 ? -errno : -EIO;
		close(fd);
		if (ret) {
			unlinkat(dfd, tmp, 0);
			goto out;
		}
	}
	if (renameat(dfd, tmp, dfd, base)) {
		ret = -errno;
		unlinkat(dfd, tmp, 0);
	}
out:
	close(dfd);
	return ret;
}

/* True if @rel is a file of @t, or (@dir) a directory above one. */
static bool tree_has(const struct tree *t, const char *rel, bool dir)
{
	size_t i, n = strlen(rel);

	for (i = 0; i < t->n; i++) {
		const char *p = t->v[i].path;

		if (dir ? !strncmp(p, rel, n) && p[n] == '/' : !strcmp(p, rel))
			return true;
	}
	return false;
}

/* Remove what @t no longer describes from directory @fd (@rel, "" at the
 * root), depth first. Best effort. */
static void prune(const struct tree *t, int fd, const char *rel, int depth)
{
	DIR *d;
	struct dirent *de;
	int dup_fd = dup(fd);

	if (dup_fd < 0)
		return;
	d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return;
	}
	while ((de = readdir(d))) {
		char p[PATH_LEN];
		int sub;

		if (de->d_name[0] == '.')	/* ., .., .stamp, .tmp.* */
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s%s%s", rel,
				     *rel ? "/" : "", de->d_name) >= sizeof(p))
			continue;
		if (de->d_type == DT_DIR && depth < 8) {
			sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY |
						     O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				prune(t, sub, p, depth + 1);
				close(sub);
			}
			if (!tree_has(t, p, true))
				unlinkat(fd, de->d_name, AT_REMOVEDIR);
		} else if (!tree_has(t, p, false)) {
			unlinkat(fd, de->d_name, 0);
		}
	}
	closedir(d);
}

static int tree_write(const struct tree *t, int root, uint64_t hash)
{
	char stamp[32], old[32] = "";
	size_t i;
	ssize_t n;
	int fd, ret;

	snprintf(stamp, sizeof(stamp), "%016llx\n", (unsigned long long)hash);
	fd = openat(root, STAMP, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, old, sizeof(old) - 1);
		close(fd);
		if (n > 0 && !strncmp(old, stamp, sizeof(stamp)))
			return 0;
	}
	for (i = 0; i < t->n; i++) {
		ret = file_put(root, &t->v[i]);
		if (ret) {
			srdma_dbg("sysfs: cannot write %s: %s", t->v[i].path,
				  strerror(-ret));
			return ret;
		}
	}
	prune(t, root, "", 0);
	{
		struct tfile f = { .path = "./" STAMP, .text = stamp };

		return file_put(root, &f);
	}
}

void srdma_sysfs_refresh(bool force)
{
	struct tree t = { 0 };
	struct timespec ts;
	char dir[256];
	int dfd, root, ret;
	uint64_t now;
	const char *e = getenv("SRDMA_SYSFS");

	if (e && !strcmp(e, "0"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	pthread_mutex_lock(&refresh_lock);
	/* Interfaces and other processes' contexts change rarely: a list or
	 * path query looks again at most once a second (a program may list
	 * the devices in a loop; a refresh costs a few dozen syscalls). */
	if (!force && last_refresh_ns && now - last_refresh_ns < REFRESH_NS)
		goto out_unlock;
	last_refresh_ns = now;
	ret = srdma_host_dir(dir, sizeof(dir), &dfd);
	if (ret)
		goto out_unlock;
	if (mkdirat(dfd, SRDMA_SYSFS_SUBDIR, 0755) && errno != EEXIST) {
		srdma_dbg("sysfs: cannot create %s/%s: %s", dir,
			  SRDMA_SYSFS_SUBDIR, strerror(errno));
		goto out_dir;
	}
	root = openat(dfd, SRDMA_SYSFS_SUBDIR,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (root < 0) {
		srdma_dbg("sysfs: cannot open %s/%s: %s", dir,
			  SRDMA_SYSFS_SUBDIR, strerror(errno));
		goto out_dir;
	}
	srdma_host_fix_mode(root, 0755);
	build_tree(&t, dfd);
	if (t.err) {
		srdma_dbg("sysfs: cannot describe the device: %s",
			  strerror(-t.err));
	} else {
		refresh_root = root;
		if (flock(root, LOCK_EX) == 0) {
			ret = tree_write(&t, root, tree_hash(&t));
			if (ret)
				srdma_dbg("sysfs: %s/%s not updated: %s", dir,
					  SRDMA_SYSFS_SUBDIR, strerror(-ret));
			flock(root, LOCK_UN);
		}
		refresh_root = -1;
	}
	tree_free(&t);
	close(root);
out_dir:
	close(dfd);
out_unlock:
	pthread_mutex_unlock(&refresh_lock);
}

/* ---- the public entry points ------------------------------------------- */

/* No public header declares these any more. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

SRDMA_EXPORT const char *ibv_get_sysfs_path(void)
{
	srdma_log_init();
	srdma_device_get();	/* decides the root (core/sysfs.c) */
	srdma_sysfs_refresh(false);
	return srdma_sysfs_root(NULL);
}

/* rdma-core's contract: the length read with a trailing newline removed
 * and the text NUL-terminated, or -1 (errno) if it cannot be read whole. */
SRDMA_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file,
				     char *buf, size_t size)
{
	char *path;
	ssize_t len;
	int fd, e;

	if (!dir || !file || !buf || !size) {
		errno = EINVAL;
		return -1;
	}
	if (asprintf(&path, "%s/%s", dir, file) < 0) {
		errno = ENOMEM;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	e = errno;
	close(fd);
	if (len < 0) {
		errno = e;
		return -1;
	}
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = 0;
	else if ((size_t)len < size)
		buf[len] = 0;
	else {
		errno = EOVERFLOW;
		return -1;
	}
	return (int)len;
}
