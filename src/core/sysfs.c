// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sysfs.c - choosing the sysfs root the library reports (sysfs.h).
 *
 * Programs find a device's sysfs directory in two ways: through libibverbs
 * (ibv_get_sysfs_path(), ibv_device.ibdev_path and dev_path; Open MPI's
 * openib BTL and ibv_devinfo do this) or by reading /sys/class/infiniband
 * directly (libibumad, hence ibstat; ibstatus; NCCL; pyverbs' tests). The
 * first kind works with no privilege at all: we report the root of the
 * tree we write ourselves. The second kind needs that tree at /sys/class,
 * which only root can arrange (`srdma sysfs mount`); once it is there, we
 * report "/sys" like any RDMA host, so both kinds read the same files.
 *
 * The answer is fixed at the first call (the device's paths are built from
 * it once, and ibv_get_sysfs_path() returns a pointer callers keep).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sysfs.h"
#include "transport/host/host.h"
#include "util/log.h"

static char root[SRDMA_SYSFS_PATH_MAX];	/* immutable after root_once */
static const char *root_name;		/* set by dev_once, before root_once */
static pthread_once_t root_once_ctl = PTHREAD_ONCE_INIT;

int srdma_sysfs_tree_dir(char *buf, size_t len)
{
	char dir[256];
	int dfd, ret;

	ret = srdma_host_dir(dir, sizeof(dir), &dfd);
	if (ret)
		return ret;
	close(dfd);
	if ((size_t)snprintf(buf, len, "%s/%s", dir, SRDMA_SYSFS_SUBDIR) >=
	    len)
		return -ENAMETOOLONG;
	return 0;
}

/* True if "<@r>/class/infiniband_verbs/uverbs_<name>", the longest path
 * built from the root, fits in ibv_device's IBV_SYSFS_PATH_MAX bytes. */
static bool root_fits(const char *r)
{
	return strlen(r) + sizeof("/class/infiniband_verbs/uverbs_") +
		       strlen(root_name) <= SRDMA_SYSFS_PATH_MAX;
}

static void root_decide(void)
{
	const char *env = getuid() == geteuid() ? getenv("SYSFS_PATH") : NULL;
	const char *e = getenv("SRDMA_SYSFS");
	char probe[SRDMA_SYSFS_PATH_MAX + 64];
	size_t n;

	if (env && *env) {
		n = strlen(env);
		while (n > 1 && env[n - 1] == '/')
			n--;
		if (n < sizeof(root)) {
			memcpy(root, env, n);
			root[n] = 0;
			if (root_fits(root))
				return;
		}
		srdma_warn("SYSFS_PATH is too long for ibdev_path: ignored");
	}
	snprintf(probe, sizeof(probe), "/sys/class/infiniband/%s/node_guid",
		 root_name);
	if (!access(probe, R_OK) || (e && !strcmp(e, "0")) ||
	    srdma_sysfs_tree_dir(root, sizeof(root)))
		snprintf(root, sizeof(root), "/sys");
	else if (!root_fits(root)) {
		srdma_info("sysfs tree %s: path too long for ibdev_path; "
			   "reporting /sys", root);
		snprintf(root, sizeof(root), "/sys");
	}
}

const char *srdma_sysfs_root(const char *dev_name)
{
	/* Only the device's constructor passes a name, and it runs first. */
	if (dev_name && !root_name)
		root_name = dev_name;
	pthread_once(&root_once_ctl, root_decide);
	return root;
}
