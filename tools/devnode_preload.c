// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * devnode_preload.c - libsrdma_devnode.so: the device node UCX looks for,
 * for a program that cannot have a real one (no root to make it).
 *
 * UCX keeps an IB device only if stat() says /dev/infiniband/<dev_name> is
 * a character device and access(R_OK | W_OK) accepts it; it never opens
 * it. `srdma run` preloads this library when that node is missing: the
 * stat and access families then answer for that one path as for /dev/null
 * (a character device every user may read and write); every other path,
 * goes straight to the C library. Nothing else changes: no namespace, no
 * new ids, so cross-memory attach between any two processes of the user
 * works exactly as without it (docs/design/stacks.md tells why a user
 * namespace would break it).
 *
 * The node's name follows the library's rule (src/core/device.c):
 * "uverbs_" + SRDMA_DEVICE, srdma0 when that is unset, empty, too long or
 * holds a '/'. It is computed on every call (a few string operations) so
 * a program that changes SRDMA_DEVICE before opening the device still
 * matches.
 *
 * Limits: only calls that go through the dynamic linker are seen - a
 * statically linked program, or one issuing the system calls itself,
 * does not see the node (UCX, Open MPI and libfabric all call the C
 * library). Directory listings of /dev/infiniband do not show it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define EXPORT	 __attribute__((visibility("default")))
#define NODE_DIR "/dev/infiniband/"

/*
 * Is @path the node of the device this process would open? Answering for
 * it whether or not a real one exists is what `srdma run` wants: it only
 * preloads us when the real one is missing or not usable.
 */
static int is_node(const char *path)
{
	const char *name = getenv("SRDMA_DEVICE");
	char dev_name[IBV_SYSFS_NAME_MAX];

	if (!path || strncmp(path, NODE_DIR, strlen(NODE_DIR)))
		return 0;
	if (!name || !*name || strlen(name) >= IBV_SYSFS_NAME_MAX ||
	    strchr(name, '/'))
		name = "srdma0";
	snprintf(dev_name, sizeof(dev_name), "uverbs_%s", name);
	return !strcmp(path + strlen(NODE_DIR), dev_name);
}

#define REAL(fn)                                                               \
	static __typeof__(fn) *real_##fn;                                      \
	if (!real_##fn)                                                        \
		real_##fn = (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn);           \
	if (!real_##fn) {                                                      \
		errno = ENOSYS;                                                \
		return -1;                                                     \
	}                                                                      \
	if (is_node(path))                                                     \
		path = "/dev/null"

/**
 * stat() - the C library's stat(), except that the device node answers as
 * /dev/null.
 * @path: file to examine
 * @st: receives its attributes
 *
 * Return: 0, or -1 with errno, as stat(2).
 */
EXPORT int stat(const char *path, struct stat *st)
{
	REAL(stat);
	return real_stat(path, st);
}

/**
 * stat64() - as stat() above, for the large-file name.
 * @path: file to examine
 * @st: receives its attributes
 *
 * Return: 0, or -1 with errno.
 */
EXPORT int stat64(const char *path, struct stat64 *st)
{
	REAL(stat64);
	return real_stat64(path, st);
}

/**
 * lstat() - as stat() above, without following a final symlink.
 * @path: file to examine
 * @st: receives its attributes
 *
 * Return: 0, or -1 with errno.
 */
EXPORT int lstat(const char *path, struct stat *st)
{
	REAL(lstat);
	return real_lstat(path, st);
}

/**
 * fstatat() - as stat() above, for an absolute @path (a relative one
 * cannot name the node and goes to the C library unchanged).
 * @dfd: directory for a relative @path
 * @path: file to examine
 * @st: receives its attributes
 * @flags: AT_* flags
 *
 * Return: 0, or -1 with errno.
 */
EXPORT int fstatat(int dfd, const char *path, struct stat *st, int flags)
{
	REAL(fstatat);
	return real_fstatat(dfd, path, st, flags);
}

/**
 * statx() - as stat() above, for statx(2).
 * @dfd: directory for a relative @path
 * @path: file to examine
 * @flags: AT_* flags
 * @mask: fields wanted
 * @stx: receives them
 *
 * Return: 0, or -1 with errno.
 */
EXPORT int statx(int dfd, const char *path, int flags, unsigned int mask,
		 struct statx *stx)
{
	REAL(statx);
	return real_statx(dfd, path, flags, mask, stx);
}

/**
 * access() - the C library's access(), except that the device node answers as
 * /dev/null.
 * @path: file to check
 * @mode: F_OK or R_OK/W_OK/X_OK
 *
 * Return: 0, or -1 with errno.
 */
EXPORT int access(const char *path, int mode)
{
	REAL(access);
	return real_access(path, mode);
}

/**
 * faccessat() - as access() above, for faccessat(2).
 * @dfd: directory for a relative @path
 * @path: file to check
 * @mode: F_OK or R_OK/W_OK/X_OK
 * @flags: AT_EACCESS, AT_SYMLINK_NOFOLLOW
 *
 * Return: 0, or -1 with errno.
 */
EXPORT int faccessat(int dfd, const char *path, int mode, int flags)
{
	REAL(faccessat);
	return real_faccessat(dfd, path, mode, flags);
}

/**
 * euidaccess() - as access() above, with the effective ids.
 * @path: file to check
 * @mode: F_OK or R_OK/W_OK/X_OK
 *
 * Return: 0, or -1 with errno.
 */
EXPORT int euidaccess(const char *path, int mode)
{
	REAL(euidaccess);
	return real_euidaccess(path, mode);
}

/**
 * eaccess() - another name of euidaccess(), interposed likewise.
 * @path: file to check
 * @mode: F_OK or R_OK/W_OK/X_OK
 *
 * Return: 0, or -1 with errno.
 */
EXPORT int eaccess(const char *path, int mode)
{
	REAL(eaccess);
	return real_eaccess(path, mode);
}
