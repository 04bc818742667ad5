/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * srdma_ns.h - the device node /dev/infiniband/<dev_name> for the srdma
 * command: made on the host by root (`srdma devnode`), or shown to one
 * program only through a private mount namespace (`srdma run`).
 * docs/design/stacks.md explains why UCX needs it and what works without
 * root.
 */
#ifndef SRDMA_TOOLS_NS_H
#define SRDMA_TOOLS_NS_H

#include <stdbool.h>
#include <stddef.h>

/**
 * srdma_devnode_path() - the node UCX checks for the software device:
 * "/dev/infiniband/" followed by ibv_device.dev_name (uverbs_srdma0, or
 * uverbs_<SRDMA_DEVICE>).
 * @buf: receives the path
 * @len: size of @buf
 *
 * Return: 0, or -ENAMETOOLONG if @buf is too small.
 */
int srdma_devnode_path(char *buf, size_t len);

/**
 * srdma_devnode_usable() - does @path pass UCX's test: a character device
 * this process may open for reading and writing (access(R_OK | W_OK))?
 * @path: from srdma_devnode_path()
 *
 * Return: true if so.
 */
bool srdma_devnode_usable(const char *path);

/**
 * srdma_devnode_create() - make @path on the host: /dev/infiniband (mode
 * 0755) if missing, then a character node with /dev/null's numbers, mode
 * 0666, so that every user passes srdma_devnode_usable(). An existing
 * character node is left in place (its mode raised to 0666); anything
 * else there is refused.
 * @path: from srdma_devnode_path()
 *
 * Context: needs CAP_MKNOD (root). Lasts until /dev is remade (reboot).
 * Return: 0 if @path is usable afterwards, else -errno (-EEXIST: something
 * other than a character device is in the way).
 */
int srdma_devnode_create(const char *path);

/**
 * srdma_devnode_view() - move this process into a private mount namespace
 * (inside a new user namespace mapping only its own uid and gid when it
 * may not make one otherwise) whose /dev is a copy of the host's - every
 * entry bound from the original, so /dev/shm and /dev/pts are the host's
 * own - plus /dev/infiniband holding @path as a bind of /dev/null. Nothing
 * changes outside the namespace; children (exec, fork) inherit it.
 * @path: from srdma_devnode_path(), below /dev/infiniband
 * @changed: set to whether this process's mounts changed
 * @err: receives a one-line reason on failure
 * @errlen: size of @err
 *
 * Context: single-threaded caller (unshare(CLONE_NEWUSER) requires it),
 * before exec.
 * Return: 0; -errno with nothing changed if no namespace could be made
 * (*@changed false); -errno after a partial change (*@changed true), when
 * the caller must not go on.
 */
int srdma_devnode_view(const char *path, bool *changed, char *err,
		       size_t errlen);

/**
 * srdma_run_preload() - add a library to LD_PRELOAD for the program that
 * `srdma run` executes.
 * @lib: the library's path (no space or colon: LD_PRELOAD splits there)
 * @last: after what LD_PRELOAD already holds (a sanitizer runtime must
 *        stay first), else before it
 *
 * Context: single-threaded, before exec.
 * Return: 0 (also when @lib is already on it); -EINVAL for a space or
 * colon in @lib, -ENOMEM, or setenv's -errno.
 */
int srdma_run_preload(const char *lib, bool last);

/**
 * srdma_run_devnode() - `srdma run`'s step before exec, by SRDMA_DEVNODE:
 * auto (default): nothing if the node of srdma_devnode_path() is usable,
 * else as preload; preload: put @libdir/libsrdma_devnode.so first on
 * LD_PRELOAD (the stat and access calls of the C library then show the
 * node as /dev/null; tools/devnode_preload.c); namespace: a private view
 * (srdma_devnode_view); off: nothing.
 * @libdir: directory of softrdma's libraries
 *
 * Context: single-threaded, before exec.
 * Return: 0 to go on (also when auto cannot preload: the program then
 * runs without the node, reported under SRDMA_LOG), else the exit status
 * to end with: 2 for a bad SRDMA_DEVNODE, 125 when preload or namespace,
 * asked for explicitly, cannot be done.
 */
int srdma_run_devnode(const char *libdir);

/**
 * srdma_cmd_devnode() - `srdma devnode [--check]`: make the node on the
 * host (srdma_devnode_create), or only report whether it is usable.
 * @argc: argument count after "devnode"
 * @argv: the arguments
 *
 * Return: exit status: 0 usable, 1 not (or creation failed), 2 usage.
 */
int srdma_cmd_devnode(int argc, char **argv);

/**
 * srdma_ns_enter() - move this process into a new mount namespace: with
 * CLONE_NEWNS alone when it holds CAP_SYS_ADMIN, else inside a new user
 * namespace mapping only its own uid and gid (so getuid() and SRDMA_DIR
 * stay the same). Mount propagation is left as it was.
 * @err: receives a one-line reason on failure
 * @errlen: size of @err
 *
 * Context: single-threaded caller, before exec.
 * Return: 0 or -errno.
 */
int srdma_ns_enter(char *err, size_t errlen);

#endif /* SRDMA_TOOLS_NS_H */
