// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * pcap.c - the SRDMA_PCAP capture file (pcap.h says what a record holds
 * and how several writers share one file).
 *
 * A record is one writev(): the 16-byte record header, then 14 bytes of
 * Ethernet, the IP and UDP headers (62 bytes at most, built on the
 * stack), then the caller's iovecs untouched. The UDP checksum is the
 * only pass over the payload; a capture is a debugging aid, so that cost
 * is accepted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "transport/net/pcap.h"
#include "util/log.h"

#define PCAP_MAGIC	  0xa1b2c3d4u /* microsecond timestamps, our byte order */
#define PCAP_SNAPLEN	  65535u
#define LINKTYPE_ETHERNET 1u
#define ETH_HDR_BYTES	  14
#define MAX_IOV		  16 /* caller's iovecs taken as they are */

struct pcap_global {
	uint32_t magic;
	uint16_t major, minor;
	int32_t thiszone;
	uint32_t sigfigs, snaplen, linktype;
};

struct pcap_rec {
	uint32_t ts_sec, ts_usec, incl_len, orig_len;
};

/* Write the global header if the file is empty; check it otherwise. */
static int pcap_header(int fd)
{
	const struct pcap_global want = {
		.magic = PCAP_MAGIC,
		.major = 2,
		.minor = 4,
		.snaplen = PCAP_SNAPLEN,
		.linktype = LINKTYPE_ETHERNET,
	};
	struct pcap_global have;
	struct stat st;
	ssize_t r;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size == 0) {
		r = write(fd, &want, sizeof(want));
		if (r < 0)
			return -errno;
		return r == sizeof(want) ? 0 : -EIO;
	}
	r = pread(fd, &have, sizeof(have), 0);
	if (r < 0)
		return -errno;
	if (r != sizeof(have) || have.magic != want.magic ||
	    have.linktype != want.linktype)
		return -EINVAL;
	return 0;
}

struct srdma_pcap *srdma_pcap_open(const char *path)
{
	struct srdma_pcap *pc;
	int fd, ret;

	/* Read access too, to check an existing file's header. */
	fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY,
		  0600);
	if (fd < 0) {
		ret = -errno;
		goto fail;
	}
	/* Whoever finds the file empty writes the header, under the lock,
	 * so no record (written only after an open) can come before it. */
	if (flock(fd, LOCK_EX)) {
		ret = -errno;
		goto close_fd;
	}
	ret = pcap_header(fd);
	flock(fd, LOCK_UN);
	if (ret)
		goto close_fd;

	pc = calloc(1, sizeof(*pc));
	if (!pc) {
		ret = -ENOMEM;
		goto close_fd;
	}
	pc->fd = fd;
	srdma_info("capturing to %s", path);
	return pc;

close_fd:
	close(fd);
fail:
	srdma_err("SRDMA_PCAP %s: %s", path,
		  ret == -EINVAL ? "not a pcap file we can append to"
				 : strerror(-ret));
	errno = -ret;
	return NULL;
}

/* One's complement sum of @len bytes at @p, continuing @sum; @odd says
 * whether an odd number of bytes came before (the next is a low byte). */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len,
			 size_t *odd)
{
	size_t i;

	for (i = 0; i < len; i++, (*odd)++) {
		if (*odd & 1)
			sum += p[i];
		else
			sum += (uint32_t)p[i] << 8;
		if (sum >> 30)
			sum = (sum & 0xffff) + (sum >> 16);
	}
	return sum;
}

/* The UDP checksum of @udp (checksum field 0) + the iovecs, over the
 * pseudo-header of @ip (version from its first nibble). */
static uint16_t udp_csum(const uint8_t *ip, const uint8_t *udp,
			 const struct iovec *iov, int n)
{
	uint8_t pseudo[40];
	size_t odd = 0, plen;
	uint32_t sum = 0;
	int i;

	memset(pseudo, 0, sizeof(pseudo));
	if (ip[0] >> 4 == 4) {
		memcpy(pseudo, ip + 12, 8); /* addresses */
		pseudo[9] = 17;
		memcpy(pseudo + 10, udp + 4, 2); /* UDP length */
		plen = 12;
	} else {
		memcpy(pseudo, ip + 8, 32);
		memcpy(pseudo + 34, udp + 4, 2);
		pseudo[39] = 17;
		plen = 40;
	}
	sum = csum_add(sum, pseudo, plen, &odd);
	sum = csum_add(sum, udp, SRDMA_UDP_HDR_BYTES, &odd);
	for (i = 0; i < n; i++)
		sum = csum_add(sum, iov[i].iov_base, iov[i].iov_len, &odd);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	return (uint16_t)(sum ? sum : 0xffff); /* 0 means "none" */
}

/* A locally administered unicast MAC from the last 4 bytes of @gid. */
static void fake_mac(uint8_t mac[6], const uint8_t gid[16])
{
	mac[0] = 0x02;
	mac[1] = 0x00;
	memcpy(mac + 2, gid + 12, 4);
}

void srdma_pcap_write(struct srdma_pcap *pc, const struct srdma_wire_path *p,
		      const struct iovec *iov, int n)
{
	srdma_pcap_write_id(pc, p, 0, iov, n);
}

void srdma_pcap_write_id(struct srdma_pcap *pc, const struct srdma_wire_path *p,
			 uint16_t ip_id, const struct iovec *iov, int n)
{
	uint8_t hdr[sizeof(struct pcap_rec) + ETH_HDR_BYTES +
		    SRDMA_IPV6_HDR_BYTES + SRDMA_UDP_HDR_BYTES];
	uint8_t *eth = hdr + sizeof(struct pcap_rec), *ip = eth + ETH_HDR_BYTES;
	struct iovec v[MAX_IOV + 1];
	struct pcap_rec rec;
	struct timespec ts;
	uint8_t *flat = NULL, *udp;
	size_t len = 0, iplen, total;
	uint16_t sum;
	ssize_t r;
	int i;

	if (!pc)
		return;
	for (i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (n > MAX_IOV) {
		/* Rare: gather into one buffer rather than split the record. */
		flat = malloc(len ? len : 1);
		if (!flat)
			goto fail;
		for (len = 0, i = 0; i < n; i++) {
			memcpy(flat + len, iov[i].iov_base, iov[i].iov_len);
			len += iov[i].iov_len;
		}
		v[1].iov_base = flat;
		v[1].iov_len = len;
		n = 1;
		iov = &v[1];
	} else {
		for (i = 0; i < n; i++)
			v[i + 1] = iov[i];
	}

	iplen = srdma_wire_ip_udp(p, len, ip, ip + SRDMA_IPV6_HDR_BYTES);
	udp = ip + iplen;
	if (iplen != SRDMA_IPV6_HDR_BYTES) { /* close the gap after IPv4 */
		memmove(udp, ip + SRDMA_IPV6_HDR_BYTES, SRDMA_UDP_HDR_BYTES);
		if (ip_id)
			srdma_wire_ipv4_set_id(ip, ip_id);
	}
	sum = udp_csum(ip, udp, iov, n);
	udp[6] = (uint8_t)(sum >> 8);
	udp[7] = (uint8_t)sum;

	fake_mac(eth, p->dip);
	fake_mac(eth + 6, p->sip);
	eth[12] = iplen == SRDMA_IPV4_HDR_BYTES ? 0x08 : 0x86;
	eth[13] = iplen == SRDMA_IPV4_HDR_BYTES ? 0x00 : 0xdd;

	total = ETH_HDR_BYTES + iplen + SRDMA_UDP_HDR_BYTES + len;
	clock_gettime(CLOCK_REALTIME, &ts);
	rec.ts_sec = (uint32_t)ts.tv_sec;
	rec.ts_usec = (uint32_t)(ts.tv_nsec / 1000);
	rec.orig_len = (uint32_t)total;
	rec.incl_len = (uint32_t)(total < PCAP_SNAPLEN ? total : PCAP_SNAPLEN);
	if (total > PCAP_SNAPLEN) {
		/* Cannot happen for a UDP datagram; keep the file sane. */
		goto fail;
	}
	memcpy(hdr, &rec, sizeof(rec));
	v[0].iov_base = hdr;
	v[0].iov_len = sizeof(rec) + total - len;

	r = writev(pc->fd, v, n + 1);
	if (r < 0 || (size_t)r != v[0].iov_len + len)
		goto fail;
	atomic_fetch_add_explicit(&pc->records, 1, memory_order_relaxed);
	free(flat);
	return;
fail:
	if (atomic_fetch_add_explicit(&pc->errors, 1, memory_order_relaxed) ==
	    0)
		srdma_warn("SRDMA_PCAP: a record was not written (%s)",
			   strerror(errno));
	free(flat);
}

void srdma_pcap_close(struct srdma_pcap *pc)
{
	if (!pc)
		return;
	close(pc->fd);
	free(pc);
}
