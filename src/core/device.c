// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * device.c - the one software device, srdma0 (or SRDMA_DEVICE).
 *
 * There is no hardware to discover: the device exists in every process
 * that loads softrdma, built once on first use. Its node GUID is derived
 * from the host (machine-id, else hostname) so two hosts differ and one
 * host is stable across runs. Per-context identity (LID, GID, QPN range)
 * comes from the host registry at open time, not from here.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <unistd.h>

#include "core/core.h"
#include "core/sysfs.h"

static struct srdma_device the_dev;	/* immutable after dev_once */
static pthread_once_t dev_once_ctl = PTHREAD_ONCE_INIT;

static uint64_t fnv1a(const char *s, size_t n, uint64_t h)
{
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t host_hash(void)
{
	char buf[128] = "";
	uint64_t h = 0xcbf29ce484222325ull;
	int fd = open("/etc/machine-id", O_RDONLY | O_CLOEXEC);
	ssize_t n = 0;

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0) {
		gethostname(buf, sizeof(buf) - 1);
		n = (ssize_t)strlen(buf);
	}
	return fnv1a(buf, (size_t)n, h);
}

static void dev_once(void)
{
	const char *name = getenv("SRDMA_DEVICE");
	struct ibv_device *d = &the_dev.ibdev;
	const char *root;
	uint64_t guid;

	if (!name || !*name || strlen(name) >= IBV_SYSFS_NAME_MAX ||
	    strchr(name, '/'))
		name = "srdma0";
	d->node_type = IBV_NODE_CA;
	d->transport_type = IBV_TRANSPORT_IB;
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->dev_name, sizeof(d->dev_name), "uverbs_%s", name);
	/* Under the sysfs root we report (core/sysfs.c): the synthesised
	 * tree, or /sys once it is mounted there. */
	root = srdma_sysfs_root(d->name);
	snprintf(d->dev_path, sizeof(d->dev_path),
		 "%s/class/infiniband_verbs/%s", root, d->dev_name);
	snprintf(d->ibdev_path, sizeof(d->ibdev_path),
		 "%s/class/infiniband/%s", root, d->name);
	/* Locally administered EUI-64: the host hash with the device name
	 * mixed in; never zero. */
	guid = fnv1a(name, strlen(name), host_hash());
	guid = (guid & ~0xff00000000000000ull) | 0x0200000000000000ull;
	the_dev.node_guid = htobe64(guid);
	the_dev.verbs_ops = NULL;
}

struct srdma_device *srdma_device_get(void)
{
	pthread_once(&dev_once_ctl, dev_once);
	return &the_dev;
}
