/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * pcap.h - SRDMA_PCAP=file: every RoCEv2 datagram a context sends or
 * receives, written to a classic pcap file (LINKTYPE_ETHERNET, µs
 * timestamps) that Wireshark and tshark open and decode as RRoCE.
 *
 * We never see the Ethernet, IP or UDP headers of our datagrams (a UDP
 * socket hides them), so each record gets synthesized ones: made-up
 * locally administered MACs derived from the IP addresses, the IP header
 * the kernel sends for us (srdma_wire_ip_udp(): IPv4 ID 0, or a GSO
 * segment's own (srdma_pcap_write_id), DF, TTL 64,
 * a valid header checksum; IPv6 hop limit 64), and a UDP header with a
 * valid checksum for both IP versions (what the kernel sends by default;
 * a received datagram's real checksum is unknown, so it is recomputed).
 * The ICRC covers none of the synthesized fields it would disagree on, so
 * an independent ICRC check of the capture is a check of our bytes.
 *
 * Many contexts, in one process or in several, may share one file: the
 * global header is written once, by whoever finds the file empty under
 * an exclusive flock() at open, and every record goes out in a single
 * writev() on an O_APPEND descriptor, so records never interleave. An
 * existing pcap file is appended to (remove it for a fresh capture); an
 * existing file that is not a microsecond Ethernet pcap is refused.
 *
 * Concurrency: srdma_pcap_write() from any number of threads at once.
 */
#ifndef SRDMA_TRANSPORT_NET_PCAP_H
#define SRDMA_TRANSPORT_NET_PCAP_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/uio.h>

#include "transport/net/wire.h"

struct srdma_pcap {
	int fd;			  /* immutable; O_APPEND */
	_Atomic uint64_t records; /* written (relaxed) */
	_Atomic uint64_t errors;  /* failed or short writes (relaxed) */
};

/**
 * srdma_pcap_open() - open (creating if need be) the capture file @path.
 * Return: the handle, or NULL with errno set (an error is also logged
 * under SRDMA_LOG; EINVAL: the file exists and is not a pcap file of our
 * kind). Context: any thread; blocks briefly on the file's flock.
 */
struct srdma_pcap *srdma_pcap_open(const char *path);

/**
 * srdma_pcap_write() - append one record: the datagram whose UDP payload
 * (BTH through ICRC) is the @n iovecs of @iov, travelling on @p
 * (p->sip:sport -> p->dip:dport; for a received datagram, the sender's
 * address is p->sip). Failures are counted, never reported: a capture
 * must not change what the transport does. Context: any thread.
 */
void srdma_pcap_write(struct srdma_pcap *pc, const struct srdma_wire_path *p,
		      const struct iovec *iov, int n);

/**
 * srdma_pcap_write_id() - srdma_pcap_write() of an IPv4 datagram that
 * left (or arrived) with IP identification @ip_id rather than 0: a
 * segment of a UDP GSO send (docs/design/net-endpoint.md). Ignored for
 * IPv6. Context: any thread.
 */
void srdma_pcap_write_id(struct srdma_pcap *pc, const struct srdma_wire_path *p,
			 uint16_t ip_id, const struct iovec *iov, int n);

/* Close and free @pc (NULL is a no-op). No write may be running. */
void srdma_pcap_close(struct srdma_pcap *pc);

#endif
