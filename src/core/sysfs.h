/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * sysfs.h - where the device's synthesised sysfs tree lives, and which
 * sysfs root the library reports (docs/design/sysfs.md).
 *
 * The kernel has no RDMA support here, so /sys/class/infiniband does not
 * exist and sysfs cannot be written. softrdma writes the files a real
 * device has under a tree of its own, <state dir>/sysfs, laid out as /sys
 * is (class/infiniband/<dev>/..., class/infiniband_verbs/<uverbs>/...);
 * the library keeps it current (src/verbs/ibv_sysfs.c) and `srdma sysfs
 * mount` (root) lays it over /sys/class for tools that read /sys directly.
 */
#ifndef SRDMA_CORE_SYSFS_H
#define SRDMA_CORE_SYSFS_H

#include <stddef.h>

#define SRDMA_SYSFS_SUBDIR "sysfs"	/* under the state directory */
#define SRDMA_SYSFS_PATH_MAX 256	/* rdma-core's IBV_SYSFS_PATH_MAX */

/**
 * srdma_sysfs_tree_dir() - the synthesised tree's root directory,
 * <state dir>/sysfs (it may not exist yet).
 * @buf: receives the path; @len: its size
 * Return: 0, or -errno when there is no usable state directory
 * (srdma_host_dir()) or the path does not fit.
 */
int srdma_sysfs_tree_dir(char *buf, size_t len);

/**
 * srdma_sysfs_root() - the sysfs root this process reports through
 * ibv_get_sysfs_path() and builds ibdev_path/dev_path from, decided once:
 *   1. $SYSFS_PATH, trailing slashes removed, when the real and effective
 *      uids agree (rdma-core's rule);
 *   2. "/sys" when /sys/class/infiniband/@dev_name/node_guid exists (the
 *      tree was mounted there, or a real device of that name exists);
 *   3. the synthesised tree (srdma_sysfs_tree_dir());
 *   4. "/sys" when SRDMA_SYSFS=0, when there is no state directory, or
 *      when the tree's paths would not fit in ibdev_path (256 bytes).
 * @dev_name: the device's name: the device's constructor passes it and
 *	calls first; everyone else passes NULL after srdma_device_get()
 * Return: a NUL-terminated path, valid for the life of the process.
 * Context: any thread.
 */
const char *srdma_sysfs_root(const char *dev_name);

#endif
