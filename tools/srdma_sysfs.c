// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * srdma_sysfs.c - `srdma sysfs`: show the device's synthesised sysfs tree
 * and, as root, make /sys/class show it (docs/design/sysfs.md).
 *
 *   srdma sysfs [show]   bring the tree up to date and say where it is
 *   srdma sysfs mount    (root) lay the tree over /sys/class
 *   srdma sysfs umount   (root) take it away again
 *   srdma sysfs run [--] PROGRAM [ARGS...]
 *                        any user: PROGRAM (through `srdma run`) in a
 *                        private mount namespace showing the tree there
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
#include "srdma_ns.h"
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

/* Refresh the tree and find where it is (@tree, PATH_MAX bytes) and
 * what ibv_get_sysfs_path() reports (@root). Return: 0, or -1 with the
 * reason printed. */
static int tree_of(char *tree, const char **root)
{
	int ret;

	if (refresh(root))
		return -1;
	ret = srdma_sysfs_tree_dir(tree, PATH_MAX);
	if (ret) {
		fprintf(stderr, "srdma sysfs: no state directory: %s\n",
			strerror(-ret));
		return -1;
	}
	return 0;
}

static int show(void)
{
	char tree[PATH_MAX];
	const char *root;

	if (tree_of(tree, &root))
		return EXIT_FAILURE;
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

/* Steps 1 and 2 of the header, for the tree at @tree. 0 or -1 (said). */
static int mount_tree(const char *tree, const char *cmd)
{
	char opts[2 * PATH_MAX], probe[PATH_MAX + 128];
	unsigned int i;

	if (!overlay_mounted()) {
		/* overlay's option syntax gives ',' ':' '\' a meaning. */
		if (strpbrk(tree, ",:\\")) {
			fprintf(stderr,
				"%s: the tree's path %s contains ',', ':' or "
				"'\\', which overlayfs cannot take; set "
				"SRDMA_DIR\n",
				cmd, tree);
			return -1;
		}
		snprintf(opts, sizeof(opts), "lowerdir=%s/class:%s", tree,
			 CLASS_DIR);
		if (mount(OVERLAY_SOURCE, CLASS_DIR, "overlay",
			  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  opts)) {
			int e = errno;

			fprintf(stderr, "%s: mount -t overlay -o %s %s: %s%s\n",
				cmd, opts, CLASS_DIR, strerror(e),
				e == EPERM ? " (needs root: CAP_SYS_ADMIN; "
					     "without root: srdma sysfs run)"
					   : "");
			return -1;
		}
	}
	for (i = 0; i < ARRAY_SIZE(classes); i++)
		if (bind_class(tree, classes[i]))
			return -1;
	snprintf(probe, sizeof(probe), "%s/infiniband/%s/node_guid",
		 CLASS_DIR, dev_name());
	if (access(probe, R_OK)) {
		fprintf(stderr, "%s: mounted, but %s: %s\n", cmd, probe,
			strerror(errno));
		return -1;
	}
	return 0;
}

static int do_mount(void)
{
	char tree[PATH_MAX];
	const char *root;

	if (tree_of(tree, &root))
		return EXIT_FAILURE;
	if (overlay_mounted() && bind_mounted(classes[0]) &&
	    bind_mounted(classes[1])) {
		printf("srdma sysfs: %s already shows the tree\n", CLASS_DIR);
		return EXIT_SUCCESS;
	}
	if (mount_tree(tree, "srdma sysfs"))
		return EXIT_FAILURE;
	printf("srdma sysfs: %s now shows %s/class (%s/infiniband/%s)\n",
	       CLASS_DIR, tree, CLASS_DIR, dev_name());
	return EXIT_SUCCESS;
}

/*
 * `srdma sysfs run [--] PROGRAM [ARGS...]`: PROGRAM (through `srdma run`)
 * in a private mount namespace where /sys/class shows the tree; without
 * root, inside a user namespace of our own uid and gid. Nothing changes
 * outside; PROGRAM's children inherit the view.
 */
static int do_run(int argc, char **argv)
{
	char tree[PATH_MAX], err[256];
	const char *root;
	char **nargv;
	int ret, i;

	if (argc > 0 && !strcmp(argv[0], "--")) {
		argc--;
		argv++;
	}
	if (argc == 0) {
		fputs("srdma sysfs run: no program given\n", stderr);
		return 2;
	}
	/* Before the namespace: dlopen() and the library start no thread,
	 * and unshare(CLONE_NEWUSER) wants a single-threaded process. */
	if (refresh(&root))
		return 125;
	ret = srdma_sysfs_tree_dir(tree, sizeof(tree));
	if (ret) {
		fprintf(stderr, "srdma sysfs run: no state directory: %s\n",
			strerror(-ret));
		return 125;
	}
	ret = srdma_ns_enter(err, sizeof(err));
	if (ret) {
		fprintf(stderr, "srdma sysfs run: %s\n", err);
		return 125;
	}
	/* Our mounts stay here; the host's later ones still show up. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL)) {
		fprintf(stderr, "srdma sysfs run: make / a slave mount: %s\n",
			strerror(errno));
		return 125;
	}
	if (mount_tree(tree, "srdma sysfs run"))
		return 125;
	nargv = calloc((size_t)argc + 4, sizeof(*nargv));
	if (!nargv)
		return 125;
	nargv[0] = (char *)"srdma";
	nargv[1] = (char *)"run";
	nargv[2] = (char *)"--";
	for (i = 0; i < argc; i++)
		nargv[i + 3] = argv[i];
	execv("/proc/self/exe", nargv);
	fprintf(stderr, "srdma sysfs run: cannot execute srdma run: %s\n",
		strerror(errno));
	return 125;
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

	if (argc > 1 && strcmp(sub, "run")) {
		fprintf(stderr, "srdma sysfs: too many arguments\n");
		return 2;
	}
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		puts("usage: srdma sysfs [show|mount|umount|run PROGRAM...]\n"
		     "  show    refresh the device's sysfs tree and say where "
		     "it is\n"
		     "  mount   (root) lay it over /sys/class: "
		     "/sys/class/infiniband/<dev>\n"
		     "  umount  (root) restore /sys/class\n"
		     "  run     (any user) PROGRAM through srdma run, in a "
		     "private mount\n"
		     "          namespace whose /sys/class shows the tree");
		return EXIT_SUCCESS;
	}
	if (!strcmp(sub, "run"))
		return do_run(argc - 1, argv + 1);
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
