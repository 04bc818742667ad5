// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * srdma_ns.c - the device node that UCX wants to see.
 *
 * UCX keeps an IB device only if /dev/infiniband/<ibv_device.dev_name> is a
 * character device that passes access(R_OK | W_OK); it never opens it (our
 * libibverbs needs no kernel object). softrdma's device is uverbs_srdma0,
 * a name no kernel device takes, so a node of ours can never be mistaken
 * for real hardware's uverbsN. Three ways to provide it:
 *
 *   - on the host, by root (srdma_devnode_create, `srdma devnode`,
 *     scripts/setup.sh): a node with /dev/null's numbers, mode 0666, so
 *     every user and every program sees it, however it is started. /dev
 *     is rebuilt at boot, so it lasts until the next reboot.
 *   - for a program `srdma run` starts while that node is missing (the
 *     default, SRDMA_DEVNODE=auto): libsrdma_devnode.so first on
 *     LD_PRELOAD answers stat() and access() for that path as for
 *     /dev/null (tools/devnode_preload.c). No privilege, no namespace, no
 *     change of ids: every process stays where it was.
 *   - SRDMA_DEVNODE=namespace (srdma_devnode_view): a private mount
 *     namespace whose /dev is a tmpfs holding every entry of the host's
 *     /dev, each bound from the original (so /dev/shm, where softrdma's
 *     host state lives, /dev/pts and the device nodes are the host's very
 *     objects), plus /dev/infiniband/<dev_name> bound from /dev/null - a
 *     real node, for programs that look at /dev without the C library.
 *     Without CAP_SYS_ADMIN this needs a user namespace (mapping only the
 *     caller's own uid and gid, so getuid() and SRDMA_DIR are unchanged),
 *     and the kernel then allows cross-memory attach from a process in a
 *     user namespace only to processes in that same namespace or below
 *     it: a program in one `srdma run` namespace cannot write into one
 *     outside it or in another `srdma run` namespace. It suits a process
 *     tree started by one `srdma run` (mpirun and its ranks); the preload
 *     suits everything else. docs/design/stacks.md has the analysis.
 *
 * Mount propagation is made slave first, so nothing mounted here reaches
 * the host, while the host's later mounts still show up inside.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"
#include "srdma_ns.h"

#define DEVNODE_DIR "/dev/infiniband"

int srdma_devnode_path(char *buf, size_t len)
{
	const struct srdma_device *dev = srdma_device_get();
	int n = snprintf(buf, len, DEVNODE_DIR "/%s", dev->ibdev.dev_name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

bool srdma_devnode_usable(const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISCHR(st.st_mode))
		return false;
	return access(path, R_OK | W_OK) == 0;
}

int srdma_devnode_create(const char *path)
{
	struct stat st, null_st;

	if (stat("/dev/null", &null_st))
		return -errno;
	if (mkdir(DEVNODE_DIR, 0755) && errno != EEXIST)
		return -errno;
	if (!lstat(path, &st)) {
		if (!S_ISCHR(st.st_mode))
			return -EEXIST;
		if ((st.st_mode & 0666) != 0666 && chmod(path, 0666))
			return -errno;
		return srdma_devnode_usable(path) ? 0 : -EACCES;
	}
	if (errno != ENOENT)
		return -errno;
	/* mknod applies the umask: set the mode afterwards. */
	if (mknod(path, S_IFCHR | 0600, null_st.st_rdev) && errno != EEXIST)
		return -errno;
	if (chmod(path, 0666))
		return -errno;
	return srdma_devnode_usable(path) ? 0 : -EACCES;
}

/* ---- the private view ---------------------------------------------------- */

static int seterr(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	n = strlen(err);
	if (n < errlen)
		snprintf(err + n, errlen - n, ": %s", strerror(-ret));
	return ret;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

/*
 * A new mount namespace: with CLONE_NEWNS alone when we hold CAP_SYS_ADMIN,
 * else inside a new user namespace mapping our uid and gid to themselves
 * (setgroups must be denied before an unprivileged gid_map is accepted).
 */
static int enter_namespace(char *err, size_t errlen)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64];
	int ret;

	if (!unshare(CLONE_NEWNS))
		return 0;
	if (errno != EPERM)
		return seterr(err, errlen, -errno, "unshare(CLONE_NEWNS)");
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return seterr(err, errlen, -errno,
			      "unshare(CLONE_NEWUSER | CLONE_NEWNS) (are "
			      "unprivileged user namespaces disabled?)");
	ret = write_file("/proc/self/setgroups", "deny");
	if (ret && ret != -ENOENT)
		return seterr(err, errlen, ret, "/proc/self/setgroups");
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned int)uid,
		 (unsigned int)uid);
	ret = write_file("/proc/self/uid_map", map);
	if (ret)
		return seterr(err, errlen, ret, "/proc/self/uid_map");
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned int)gid,
		 (unsigned int)gid);
	ret = write_file("/proc/self/gid_map", map);
	if (ret)
		return seterr(err, errlen, ret, "/proc/self/gid_map");
	return 0;
}

/*
 * Bind @olddfd's entry @name onto @newdir/@name, which we create first:
 * symlinks are copied, directories and everything else are bound
 * (recursively, so the mounts below come along - a user namespace may
 * only take a locked subtree whole).
 */
static int copy_entry(int olddfd, int newdfd, const char *newdir,
		      const char *name, char *err, size_t errlen)
{
	char src[PATH_MAX], dst[PATH_MAX], target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (fstatat(olddfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return seterr(err, errlen, -errno, "stat /dev entry %s", name);
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(olddfd, name, target, sizeof(target) - 1);
		if (n < 0)
			return seterr(err, errlen, -errno, "readlink %s", name);
		target[n] = 0;
		if (symlinkat(target, newdfd, name))
			return seterr(err, errlen, -errno, "symlink %s/%s",
				      newdir, name);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdirat(newdfd, name, 0755))
			return seterr(err, errlen, -errno, "mkdir %s/%s",
				      newdir, name);
	} else {
		fd = openat(newdfd, name,
			    O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
		if (fd < 0)
			return seterr(err, errlen, -errno, "create %s/%s",
				      newdir, name);
		close(fd);
	}
	snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", olddfd, name);
	snprintf(dst, sizeof(dst), "%s/%s", newdir, name);
	if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL))
		return seterr(err, errlen, -errno, "bind %s", dst);
	return 0;
}

/* Every entry of @olddfd but @skip, copied into @newdir (copy_entry). */
static int copy_dir(int olddfd, const char *newdir, const char *skip, char *err,
		    size_t errlen)
{
	struct dirent *de;
	int newdfd, ret = 0;
	DIR *d;

	newdfd = open(newdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (newdfd < 0)
		return seterr(err, errlen, -errno, "open %s", newdir);
	d = fdopendir(dup(olddfd));
	if (!d) {
		ret = seterr(err, errlen, -errno, "read the host's %s", newdir);
		close(newdfd);
		return ret;
	}
	while (!ret && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (skip && !strcmp(de->d_name, skip)))
			continue;
		ret = copy_entry(olddfd, newdfd, newdir, de->d_name, err,
				 errlen);
	}
	if (!ret && errno)
		ret = seterr(err, errlen, -errno, "readdir %s", newdir);
	closedir(d);
	close(newdfd);
	return ret;
}

/* Build the new /dev over the old one, whose directory is @olddev. */
static int build_dev(int olddev, const char *node, char *err, size_t errlen)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct stat st;
	int oldib, fd, ret;

	if (fstatat(olddev, "null", &st, 0) || !S_ISCHR(st.st_mode))
		return seterr(err, errlen, -ENODEV,
			      "/dev/null is not a character device");
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755"))
		return seterr(err, errlen, -errno, "mount tmpfs on /dev");
	ret = copy_dir(olddev, "/dev", "infiniband", err, errlen);
	if (ret)
		return ret;
	if (mkdir(DEVNODE_DIR, 0755))
		return seterr(err, errlen, -errno, "mkdir " DEVNODE_DIR);
	/* Real hardware's nodes stay visible next to ours. */
	oldib = openat(olddev, "infiniband",
		       O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (oldib >= 0) {
		ret = copy_dir(oldib, DEVNODE_DIR, node, err, errlen);
		close(oldib);
		if (ret)
			return ret;
	}
	snprintf(dst, sizeof(dst), DEVNODE_DIR "/%s", node);
	fd = open(dst, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return seterr(err, errlen, -errno, "create %s", dst);
	close(fd);
	snprintf(src, sizeof(src), "/proc/self/fd/%d/null", olddev);
	if (mount(src, dst, NULL, MS_BIND, NULL))
		return seterr(err, errlen, -errno, "bind /dev/null on %s", dst);
	return 0;
}

int srdma_devnode_view(const char *path, bool *changed, char *err,
		       size_t errlen)
{
	const char *node;
	int olddev, ret;

	*changed = false;
	if (strncmp(path, DEVNODE_DIR "/", strlen(DEVNODE_DIR "/")))
		return seterr(err, errlen, -EINVAL, "%s", path);
	node = path + strlen(DEVNODE_DIR "/");
	if (!*node || strchr(node, '/'))
		return seterr(err, errlen, -EINVAL, "%s", path);
	ret = enter_namespace(err, errlen);
	if (ret)
		return ret;
	*changed = true;
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return seterr(err, errlen, -errno, "make / a slave mount");
	/* Opened inside the namespace: binds must come from our own mounts. */
	olddev = open("/dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (olddev < 0)
		return seterr(err, errlen, -errno, "open /dev");
	ret = build_dev(olddev, node, err, errlen);
	close(olddev);
	if (ret)
		return ret;
	if (!srdma_devnode_usable(path))
		return seterr(err, errlen, -EACCES, "%s", path);
	return 0;
}

/* ---- the srdma command's side ----------------------------------------- */

int srdma_run_preload(const char *lib, bool last)
{
	const char *old = getenv("LD_PRELOAD");
	const char *p;
	size_t n = strlen(lib);
	char *val;
	int ret;

	if (strpbrk(lib, " :"))
		return -EINVAL;	/* LD_PRELOAD splits at spaces and colons */
	/* Already there (a nested `srdma run`): once is enough. */
	for (p = old; p && (p = strstr(p, lib)); p += n)
		if ((p == old || p[-1] == ':' || p[-1] == ' ') &&
		    (!p[n] || p[n] == ':' || p[n] == ' '))
			return 0;
	if (old && *old)
		ret = last ? asprintf(&val, "%s:%s", old, lib)
			   : asprintf(&val, "%s:%s", lib, old);
	else
		ret = asprintf(&val, "%s", lib);
	if (ret < 0)
		return -ENOMEM;
	ret = setenv("LD_PRELOAD", val, 1) ? -errno : 0;
	free(val);
	return ret;
}

int srdma_run_devnode(const char *libdir)
{
	const char *mode = getenv("SRDMA_DEVNODE");
	char path[PATH_MAX], lib[PATH_MAX + 32], err[512];
	bool changed;
	int ret;

	if (!mode || !*mode)
		mode = "auto";
	if (!strcmp(mode, "off"))
		return 0;
	if (strcmp(mode, "auto") && strcmp(mode, "preload") &&
	    strcmp(mode, "namespace")) {
		fprintf(stderr,
			"srdma run: SRDMA_DEVNODE=%s: expected auto, preload, "
			"namespace or off\n",
			mode);
		return 2;
	}
	if (srdma_devnode_path(path, sizeof(path)))
		return 0;
	if (!strcmp(mode, "auto") && srdma_devnode_usable(path))
		return 0;
	if (!strcmp(mode, "namespace")) {
		ret = srdma_devnode_view(path, &changed, err, sizeof(err));
		if (!ret)
			return 0;
		fprintf(stderr, "srdma run: cannot give the program %s: %s\n",
			path, err);
		return 125;
	}
	snprintf(lib, sizeof(lib), "%s/libsrdma_devnode.so", libdir);
	if (access(lib, R_OK))
		ret = -errno;
	else
		ret = srdma_run_preload(lib, false);
	if (!ret)
		return 0;
	/* Asked for: fail. By default: run the program anyway - only UCX
	 * and what is built on it miss the device - and say so only when
	 * SRDMA_LOG asks, as the library does. */
	if (!strcmp(mode, "preload") || getenv("SRDMA_LOG"))
		fprintf(stderr,
			"srdma run: cannot preload %s: %s; UCX will not see "
			"%s (make it as root: srdma devnode)\n",
			lib,
			ret == -EINVAL ? "a space or colon in the path"
				       : strerror(-ret),
			path);
	return !strcmp(mode, "preload") ? 125 : 0;
}

int srdma_cmd_devnode(int argc, char **argv)
{
	char path[PATH_MAX];
	bool check = false;
	int ret;

	if (argc == 1 && !strcmp(argv[0], "--check"))
		check = true;
	else if (argc) {
		fputs("usage: srdma devnode [--check]\n", stderr);
		return 2;
	}
	if (srdma_devnode_path(path, sizeof(path))) {
		fputs("srdma devnode: device name too long\n", stderr);
		return 1;
	}
	if (check) {
		if (srdma_devnode_usable(path)) {
			printf("%s: usable\n", path);
			return 0;
		}
		printf("%s: missing or not usable by this user\n", path);
		return 1;
	}
	ret = srdma_devnode_create(path);
	if (ret) {
		fprintf(stderr, "srdma devnode: %s: %s%s\n", path,
			ret == -EEXIST ? "something other than a character "
					 "device is in the way"
				       : strerror(-ret),
			ret == -EPERM ? " (run it as root; without root, "
					"`srdma run` gives each program a "
					"private one)"
				      : "");
		return 1;
	}
	printf("%s: usable by every user (a character device with "
	       "/dev/null's numbers)\n",
	       path);
	return 0;
}

/* For `srdma sysfs run` (srdma_sysfs.c): the same namespace step. */
int srdma_ns_enter(char *err, size_t errlen)
{
	return enter_namespace(err, errlen);
}
