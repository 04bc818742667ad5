/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * icrc.h - the RoCEv2 invariant CRC (ICRC), the 4-byte trailer of every
 * RoCEv2 packet.
 *
 * The ICRC is IEEE CRC-32 (the reflected polynomial 0xEDB88320 that zlib's
 * crc32() uses) over: 8 bytes of 0xFF standing in for the InfiniBand LRH
 * that RoCEv2 does not carry; the IP header with the fields routers may
 * change masked to all ones (IPv4: TOS, TTL, header checksum; IPv6:
 * traffic class, flow label, hop limit); the UDP header with its checksum
 * masked; the BTH with byte 4 (FECN, BECN, reserved bits) masked; then
 * the extended headers, payload and pad. The result goes on the wire
 * least significant byte first. Everything else of the IP header (IPv4:
 * total length, identification, flags and fragment offset, protocol,
 * addresses) is covered, so a sender must know the identification and DF
 * the kernel will give the datagram before it sends: an unconnected UDP
 * socket with IP_PMTUDISC_DO gets DF set and identification 0.
 *
 * Pure functions, no state: callable from any thread. Not here: building
 * or parsing headers (they arrive as bytes already laid out on the wire).
 */
#ifndef SRDMA_TRANSPORT_NET_ICRC_H
#define SRDMA_TRANSPORT_NET_ICRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define SRDMA_IPV4_HDR_BYTES 20
#define SRDMA_IPV6_HDR_BYTES 40
#define SRDMA_UDP_HDR_BYTES  8
#define SRDMA_BTH_BYTES	     12
#define SRDMA_ICRC_BYTES     4

/**
 * srdma_crc32() - continue an IEEE CRC-32 (zlib convention) over @len bytes.
 * @crc: 0 to start, or a previous return value to continue
 * Return: the CRC of everything so far, as zlib's crc32() returns it.
 */
uint32_t srdma_crc32(uint32_t crc, const void *buf, size_t len);

/**
 * srdma_crc32_impl() - for tests: which implementation srdma_crc32() uses.
 * @impl: -1 to leave it as it is; else 0 (tables), 1 (128-bit carry-less
 *        multiplication) or 2 (512-bit), lowered to the best the CPU has
 *
 * Every implementation gives the same results; the default is the best
 * the CPU has. Context: a test's main thread, no CRC being computed.
 * Return: the best implementation the CPU has (0, 1 or 2).
 */
int srdma_crc32_impl(int impl);

/**
 * srdma_icrc() - the ICRC of one RoCEv2 packet.
 * @ip:      the IP header as on the wire: 20 bytes (IPv4, no options) or
 *           40 bytes (IPv6), told apart by its version nibble
 * @udp:     the 8-byte UDP header as on the wire
 * @ib:      BTH, extended headers, payload and pad, without the ICRC
 * @ib_len:  bytes at @ib; at least SRDMA_BTH_BYTES
 *
 * Nothing is modified: masking happens on copies. Callers validate
 * lengths and the IP version first; for @ib_len below SRDMA_BTH_BYTES or
 * an IP version other than 4 or 6 the result is 0 and means nothing.
 * Return: the ICRC; store it little-endian after the pad.
 */
uint32_t srdma_icrc(const uint8_t *ip, const uint8_t udp[SRDMA_UDP_HDR_BYTES],
		    const uint8_t *ib, size_t ib_len);

/**
 * srdma_icrc_iov() - srdma_icrc() of a packet whose BTH, extended headers,
 * payload and pad (no ICRC) are the @n iovecs of @iov, in order; the
 * pieces may split anywhere, even inside the BTH. Nothing is copied but
 * the BTH. Return: as srdma_icrc() (0 and meaningless for fewer than
 * SRDMA_BTH_BYTES in all or an IP version other than 4 or 6).
 */
uint32_t srdma_icrc_iov(const uint8_t *ip,
			const uint8_t udp[SRDMA_UDP_HDR_BYTES],
			const struct iovec *iov, int n);
/**
 * srdma_icrc_pre() - the first part of srdma_icrc_iov(): the running CRC
 * over what the ICRC covers before the BTH (the LRH stand-in and the
 * masked IP and UDP headers), which depends only on the addresses, ports
 * and lengths, so a sender or receiver may keep it for the next packet
 * of the same length on the same path.
 * @ip, @udp: as for srdma_icrc()
 * @crc: set to the running CRC, for srdma_icrc_iov_from()
 * Return: 0, or -1 for an IP version other than 4 or 6 (@crc unset).
 */
int srdma_icrc_pre(const uint8_t *ip, const uint8_t udp[SRDMA_UDP_HDR_BYTES],
		   uint32_t *crc);
/**
 * srdma_icrc_iov_from() - the rest of srdma_icrc_iov(): the ICRC of the
 * packet whose headers gave @crc (srdma_icrc_pre()) and whose BTH through
 * pad are the @n iovecs of @iov. Return: as srdma_icrc_iov().
 */
uint32_t srdma_icrc_iov_from(uint32_t crc, const struct iovec *iov, int n);

/**
 * srdma_icrc_ipv4_explain() - is an IPv4 packet's ICRC right for some IP
 * identification and DF flag other than identification 0 and DF set?
 * Peers that do not send as softrdma does (rxe picks a hashed
 * identification) make ICRCs a UDP socket cannot recompute, since it
 * never shows the identification; the CRC's linearity recovers the one
 * identification that explains the trailer, if any.
 * @got:  the ICRC on the wire
 * @want: the packet's ICRC computed with identification 0, DF set,
 *        fragment offset 0 (srdma_icrc() over the header we assume)
 * @tail: bytes the ICRC covers after IPv4 header byte 6 (flags): 13 for
 *        the rest of the IP header, 8 for UDP, plus BTH through pad
 * Everything else the ICRC covers is still checked: a corrupted packet
 * passes with probability 2^-15 (16 identification bits, one flag).
 * Return: true, with *@id and *@df (DF set) the values that explain @got;
 * false if none does (the packet is corrupt).
 */
bool srdma_icrc_ipv4_explain(uint32_t got, uint32_t want, size_t tail,
			     uint16_t *id, bool *df);

/**
 * srdma_icrc_ipv4_id_delta() - what changes in an IPv4 packet's ICRC when
 * its IP identification is @id instead of 0 (DF and the rest unchanged):
 * the ICRC with @id is the ICRC with 0 XOR the return value. The inverse
 * of srdma_icrc_ipv4_explain(), for a sender that knows the
 * identification the kernel will give (UDP GSO numbers segments 0, 1,
 * 2, ...).
 * @tail: as for srdma_icrc_ipv4_explain(), bytes after IPv4 byte 6
 * Return: the XOR mask (0 for @id 0). Context: any thread.
 */
uint32_t srdma_icrc_ipv4_id_delta(uint16_t id, size_t tail);

#endif
