// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * srdma_sysfs.c - `srdma sysfs`: show the device's synthesised sysfs tree
 * and, as root, make /sys/class show it (docs/design/sysfs.md).
 *
 *   srdma sysfs [show]   bring the tree up to date and say where it is
 *   srdma sysfs mount    (root) lay the tree over /sys/class
 *   srdma sysfs umount   (root) take it away again
 *
 * The library writes the tree (src/verbs/ibv_sysfs.c) whenever a program
 * lists or opens the device. This command refreshes it by loading our
 * libibverbs.so.1 (found as `srdma run` finds it) and calling
 * ibv_get_sysfs_path(), so there is one writer, whatever the link layer or
 * device name in the environment.
 *
 * /sys/class is sysfs: nothing can be created in it, and /sys/class/
 * infiniband does not exist without the kernel's RDMA core. `mount` makes
 * the two directories exist and then shows the tree in them:
 *   1. a read-only overlay on /sys/class of two layers, the tree's class/
 *      directory over the real /sys/class: every real class stays visible
 *      (and live: overlay passes lookups through to sysfs), and
 *      class/infiniband and class/infiniband_verbs now exist;
 *   2. a read-only bind mount of the tree's class/infiniband and
 *      class/infiniband_verbs on those two. Overlay caches what it looked
 *      up in its layers, and the library replaces a changed file by
 *      rename, so through the overlay alone a reader would keep seeing the
 *      old file; the bind mounts show the tree's directories themselves.
 *      The library never replaces a directory, so they stay valid.
 * The mounts belong to the mount namespace they were made in (the host's,
 * when run from a login shell; a private one under `unshare -m`), last
 * until `umount` or reboot, and show the tree of the user who ran `mount`.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "core/sysfs.h"
#include "util/compiler.h"
#include "srdma_tool.h"

#define CLASS_DIR "/sys/class"
#define OVERLAY_SOURCE "srdma-sysfs"

static const char *dev_name(void)
{
	const char *n = getenv("SRDMA_DEVICE");

	/* As the library's device.c: an unusable name means srdma0. */
	if (!n || !*n || strlen(n) >= 64 || strchr(n, '/'))
		return "srdma0";
	return n;
}

/* Refresh the tree through our library; *@root gets what it reports. */
static int refresh(const char **root)
{
	const char *(*get_path)(void);
	char libdir[PATH_MAX], lib[PATH_MAX + 32];
	void *h;
	int ret;

	ret = srdma_tool_libdir(libdir);
	if (ret) {
		fprintf(stderr,
			"srdma sysfs: cannot find softrdma's libibverbs.so.1: "
			"%s; set SRDMA_LIBDIR\n",
			strerror(-ret));
		return -1;
	}
	snprintf(lib, sizeof(lib), "%s/libibverbs.so.1", libdir);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "srdma sysfs: %s\n", dlerror());
		return -1;
	}
	/* Only softrdma's libibverbs has the relaxed-MR extension. */
	get_path = (const char *(*)(void))dlsym(h, "ibv_get_sysfs_path");
	if (!get_path || !dlsym(h, "ibv_reg_mr_relaxed")) {
		fprintf(stderr, "srdma sysfs: %s is not softrdma's library\n",
			lib);
		return -1;
	}
	*root = get_path();
	/* The library stays loaded: *root points into it. */
	return 0;
}

/* The classes the tree provides, bind-mounted over the overlay. */
static const char *const classes[] = { "infiniband", "infiniband_verbs" };

/* What is mounted on @point, topmost: its fs type and source. */
static bool mounted_on(const char *point, char *fstype, char *source)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];
	bool found = false;

	if (!f)
		return false;
	/* "id parent maj:min root mountpoint opts [tags] - fstype source" */
	while (fgets(line, sizeof(line), f)) {
		char mnt[256], t[64], src[256];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(dash + 3, "%63s %255s", t, src) != 2 ||
		    strcmp(mnt, point))
			continue;
		/* The last mount on the point is the one visible. */
		found = true;
		strcpy(fstype, t);
		strcpy(source, src);
	}
	fclose(f);
	return found;
}

/* True if our overlay is the top mount on /sys/class. */
static bool overlay_mounted(void)
{
	char t[64], src[256];

	return mounted_on(CLASS_DIR, t, src) && !strcmp(t, "overlay") &&
	       !strcmp(src, OVERLAY_SOURCE);
}

/* True if /sys/class/@cls is a mount (our bind mount, under the overlay). */
static bool bind_mounted(const char *cls)
{
	char point[128], t[64], src[256];

	snprintf(point, sizeof(point), "%s/%s", CLASS_DIR, cls);
	return mounted_on(point, t, src);
}

static int show(void)
{
	char tree[PATH_MAX];
	const char *root;
	int ret;

	if (refresh(&root))
		return EXIT_FAILURE;
	ret = srdma_sysfs_tree_dir(tree, sizeof(tree));
	if (ret) {
		fprintf(stderr, "srdma sysfs: no state directory: %s\n",
			strerror(-ret));
		return EXIT_FAILURE;
	}
	printf("tree:               %s\n", tree);
	printf("ibv_get_sysfs_path: %s\n", root);
	printf("device:             %s/class/infiniband/%s\n", root,
	       dev_name());
	printf("/sys/class:         %s\n",
	       overlay_mounted() ? "shows the tree (srdma sysfs mount)"
				 : "does not show the tree (srdma sysfs "
				   "mount, as root)");
	return EXIT_SUCCESS;
}

/* Step 2 of the header: bind the tree's @cls over /sys/class/@cls. */
static int bind_class(const char *tree, const char *cls)
{
	char src[PATH_MAX + 64], dst[128];

	snprintf(src, sizeof(src), "%s/class/%s", tree, cls);
	snprintf(dst, sizeof(dst), "%s/%s", CLASS_DIR, cls);
	if (bind_mounted(cls))
		return 0;
	if (mount(src, dst, NULL, MS_BIND, NULL) ||
	    mount(NULL, dst, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV |
			  MS_NOEXEC,
		  NULL)) {
		fprintf(stderr, "srdma sysfs: mount --bind %s %s: %s\n", src,
			dst, strerror(errno));
		return -1;
	}
	return 0;
}

static int do_mount(void)
{
	char tree[PATH_MAX], opts[2 * PATH_MAX], probe[PATH_MAX + 128];
	const char *root;
	unsigned int i;
	int ret;

	if (refresh(&root))
		return EXIT_FAILURE;
	ret = srdma_sysfs_tree_dir(tree, sizeof(tree));
	if (ret) {
		fprintf(stderr, "srdma sysfs: no state directory: %s\n",
			strerror(-ret));
		return EXIT_FAILURE;
	}
	if (overlay_mounted() && bind_mounted(classes[0]) &&
	    bind_mounted(classes[1])) {
		printf("srdma sysfs: %s already shows the tree\n", CLASS_DIR);
		return EXIT_SUCCESS;
	}
	if (!overlay_mounted()) {
		/* overlay's option syntax gives ',' ':' '\' a meaning. */
		if (strpbrk(tree, ",:\\")) {
			fprintf(stderr,
				"srdma sysfs: the tree's path %s contains ',', "
				"':' or '\\', which overlayfs cannot take; set "
				"SRDMA_DIR\n",
				tree);
			return EXIT_FAILURE;
		}
		snprintf(opts, sizeof(opts), "lowerdir=%s/class:%s", tree,
			 CLASS_DIR);
		if (mount(OVERLAY_SOURCE, CLASS_DIR, "overlay",
			  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  opts)) {
			int e = errno;

			fprintf(stderr,
				"srdma sysfs: mount -t overlay -o %s %s: %s%s\n",
				opts, CLASS_DIR, strerror(e),
				e == EPERM ? " (needs root: CAP_SYS_ADMIN)"
					   : "");
			return EXIT_FAILURE;
		}
	}
	for (i = 0; i < ARRAY_SIZE(classes); i++)
		if (bind_class(tree, classes[i]))
			return EXIT_FAILURE;
	snprintf(probe, sizeof(probe), "%s/infiniband/%s/node_guid",
		 CLASS_DIR, dev_name());
	if (access(probe, R_OK)) {
		fprintf(stderr, "srdma sysfs: mounted, but %s: %s\n", probe,
			strerror(errno));
		return EXIT_FAILURE;
	}
	printf("srdma sysfs: %s now shows %s/class (%s/infiniband/%s)\n",
	       CLASS_DIR, tree, CLASS_DIR, dev_name());
	return EXIT_SUCCESS;
}

static int do_umount(void)
{
	char point[128];
	unsigned int i;

	if (!overlay_mounted()) {
		printf("srdma sysfs: %s does not show the tree\n", CLASS_DIR);
		return EXIT_SUCCESS;
	}
	for (i = 0; i < ARRAY_SIZE(classes); i++) {
		snprintf(point, sizeof(point), "%s/%s", CLASS_DIR, classes[i]);
		if (bind_mounted(classes[i]) && umount2(point, 0)) {
			fprintf(stderr, "srdma sysfs: umount %s: %s\n", point,
				strerror(errno));
			return EXIT_FAILURE;
		}
	}
	if (umount2(CLASS_DIR, 0)) {
		fprintf(stderr, "srdma sysfs: umount %s: %s\n", CLASS_DIR,
			strerror(errno));
		return EXIT_FAILURE;
	}
	printf("srdma sysfs: %s restored\n", CLASS_DIR);
	return EXIT_SUCCESS;
}

int srdma_cmd_sysfs(int argc, char **argv)
{
	const char *sub = argc > 0 ? argv[0] : "show";

	if (argc > 1) {
		fprintf(stderr, "srdma sysfs: too many arguments\n");
		return 2;
	}
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		puts("usage: srdma sysfs [show|mount|umount]\n"
		     "  show    refresh the device's sysfs tree and say where "
		     "it is\n"
		     "  mount   (root) lay it over /sys/class: "
		     "/sys/class/infiniband/<dev>\n"
		     "  umount  (root) restore /sys/class");
		return EXIT_SUCCESS;
	}
	if (!strcmp(sub, "show"))
		return show();
	if (!strcmp(sub, "mount"))
		return do_mount();
	if (!strcmp(sub, "umount") || !strcmp(sub, "unmount"))
		return do_umount();
	fprintf(stderr, "srdma sysfs: unknown subcommand '%s' (show, mount, "
			"umount)\n",
		sub);
	return 2;
}
