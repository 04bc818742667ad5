/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * netns_util.h - the net transport's unit tests run in a network namespace
 * of their own, with only loopback, up: port 4791 and the steering group
 * are then theirs alone. Shared by test_net_endpoint, test_net_inline and
 * test_net_rx_lead.
 */
#ifndef SRDMA_TEST_NETNS_UTIL_H
#define SRDMA_TEST_NETNS_UTIL_H

#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/**
 * test_private_netns() - move this process into a new network namespace
 * and bring its loopback up.
 * @test: the test's name, for the skip message.
 *
 * Return: true in the new namespace; false without one (not root), having
 * said on stderr that the tests needing it skip.
 */
static inline bool test_private_netns(const char *test)
{
	struct ifreq ifr;
	int fd;

	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "%s: no network namespace (%s): needs root; skipping\n",
			test, strerror(errno));
		return false;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (fd >= 0 && !ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	if (fd >= 0)
		close(fd);
	return true;
}

#endif
