// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_icrc.c - the RoCEv2 ICRC (transport/net/icrc.c) against known
 * values: CRC-32's check value, the LRH stand-in's register state rxe
 * seeds with (0xdebb20e3), and a whole RC SEND_ONLY packet over IPv4
 * whose ICRC was computed independently (rxe's algorithm and scapy's
 * RoCE layer agree on ec d7 32 1d). Then which header fields the ICRC
 * covers and which it masks, for IPv4 and IPv6; and CRC-32 over long
 * buffers against the bitwise definition (the PCLMUL folding paths), and
 * the ICRC of packets short and long, whole and cut into pieces, against
 * the definition.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <cmocka.h>

#include "transport/net/icrc.h"

/* 198.18.0.1 -> 198.18.0.2, ID 0, DF, TTL 64, UDP 0xc001 -> 4791, RC
 * SEND_ONLY to QPN 0x11, AckReq, PSN 1, payload "ABCD". */
static const uint8_t ip4[20] = {0x45, 0x00, 0x00, 0x30, 0x00, 0x00, 0x40,
				0x00, 0x40, 0x11, 0x00, 0x00, 0xc6, 0x12,
				0x00, 0x01, 0xc6, 0x12, 0x00, 0x02};
static const uint8_t udp[8] = {0xc0, 0x01, 0x12, 0xb7, 0x00, 0x1c, 0x00, 0x00};
static const uint8_t ib[16] = {0x04, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
			       0x80, 0x00, 0x00, 0x01, 'A',  'B',  'C',	 'D'};

static void test_crc32_check_value_and_lrh_seed(void **state)
{
	static const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff,
				      0xff, 0xff, 0xff, 0xff};

	(void)state;
	assert_int_equal(srdma_crc32(0, "123456789", 9), 0xcbf43926u);
	/* Continuing in pieces gives the same answer. */
	assert_int_equal(srdma_crc32(srdma_crc32(0, "1234", 4), "56789", 5),
			 0xcbf43926u);
	/* rxe seeds its register with the state after 8 x 0xff. */
	assert_int_equal(~srdma_crc32(0, ff, 8), 0xdebb20e3u);
}

static void test_icrc_roce_wire_vector(void **state)
{
	uint32_t icrc = srdma_icrc(ip4, udp, ib, sizeof(ib));
	uint8_t wire[4] = {(uint8_t)icrc, (uint8_t)(icrc >> 8),
			   (uint8_t)(icrc >> 16), (uint8_t)(icrc >> 24)};
	static const uint8_t want[4] = {0xec, 0xd7, 0x32, 0x1d};

	(void)state;
	assert_int_equal(icrc, 0x1d32d7ecu);
	assert_memory_equal(wire, want, 4);
}

/* Flip @byte of a copy of one part of the packet; return the new ICRC. */
static uint32_t flipped(int part, size_t byte, uint8_t mask)
{
	uint8_t i4[20], u[8], b[16];

	memcpy(i4, ip4, sizeof(i4));
	memcpy(u, udp, sizeof(u));
	memcpy(b, ib, sizeof(b));
	if (part == 0)
		i4[byte] ^= mask;
	else if (part == 1)
		u[byte] ^= mask;
	else
		b[byte] ^= mask;
	return srdma_icrc(i4, u, b, sizeof(b));
}

static void test_icrc_ipv4_masked_and_covered_fields(void **state)
{
	const uint32_t base = 0x1d32d7ecu;

	(void)state;
	/* Masked: TOS, TTL, IP checksum, UDP checksum, BTH byte 4. */
	assert_int_equal(flipped(0, 1, 0xb8), base);
	assert_int_equal(flipped(0, 8, 0x3f), base);
	assert_int_equal(flipped(0, 10, 0x12), base);
	assert_int_equal(flipped(0, 11, 0x34), base);
	assert_int_equal(flipped(1, 6, 0x56), base);
	assert_int_equal(flipped(1, 7, 0x78), base);
	assert_int_equal(flipped(2, 4, 0xc0), base);
	/* Covered: identification, DF, protocol, addresses, ports, the rest
	 * of the BTH, payload. */
	assert_int_not_equal(flipped(0, 5, 0x01), base);
	assert_int_not_equal(flipped(0, 6, 0x40), base);
	assert_int_not_equal(flipped(0, 9, 0x01), base);
	assert_int_not_equal(flipped(0, 15, 0x01), base);
	assert_int_not_equal(flipped(0, 19, 0x01), base);
	assert_int_not_equal(flipped(1, 0, 0x01), base);
	assert_int_not_equal(flipped(2, 1, 0x80), base);
	assert_int_not_equal(flipped(2, 7, 0x01), base);
	assert_int_not_equal(flipped(2, 15, 0x01), base);
}

static void test_icrc_ipv6_masked_and_covered_fields(void **state)
{
	uint8_t ip6[40] = {0x60, 0x00, 0x00, 0x00, 0x00, 0x1c, 0x11, 0x40};
	uint8_t c[40];
	uint32_t base;

	(void)state;
	ip6[8] = 0x20; /* 2001:db8::1 -> 2001:db8::2 */
	ip6[9] = 0x01;
	ip6[10] = 0x0d;
	ip6[11] = 0xb8;
	ip6[23] = 0x01;
	memcpy(ip6 + 24, ip6 + 8, 16);
	ip6[39] = 0x02;
	base = srdma_icrc(ip6, udp, ib, sizeof(ib));
	/* Traffic class, flow label and hop limit are masked. */
	memcpy(c, ip6, sizeof(c));
	c[0] |= 0x0b;
	c[1] = 0x5a;
	c[3] = 0x77;
	c[7] = 1;
	assert_int_equal(srdma_icrc(c, udp, ib, sizeof(ib)), base);
	/* Payload length, next header and addresses are covered. */
	memcpy(c, ip6, sizeof(c));
	c[5] ^= 1;
	assert_int_not_equal(srdma_icrc(c, udp, ib, sizeof(ib)), base);
	memcpy(c, ip6, sizeof(c));
	c[6] ^= 1;
	assert_int_not_equal(srdma_icrc(c, udp, ib, sizeof(ib)), base);
	memcpy(c, ip6, sizeof(c));
	c[39] ^= 1;
	assert_int_not_equal(srdma_icrc(c, udp, ib, sizeof(ib)), base);
	/* The same packet over IPv4 has another ICRC. */
	assert_int_not_equal(base, 0x1d32d7ecu);
}

/* CRC-32 one bit at a time: the definition, for the long buffers. */
static uint32_t crc32_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
	}
	return ~crc;
}

/* Every length and alignment the folding paths take (one lane, four
 * lanes, four lanes with 16-48 bytes left; 512-bit: four registers, one,
 * 0-48 bytes left), up to a 9 KiB packet, with every implementation the
 * CPU has (tables, 128-bit and 512-bit carry-less multiplication). */
static void test_crc32_long_buffers_match_bitwise(void **state)
{
	static uint8_t buf[9216 + 16];
	uint32_t x = 12345;
	size_t i, len, off;
	int impl, best = srdma_crc32_impl(-1);

	(void)state;
	for (i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (impl = 0; impl <= best; impl++) {
		srdma_crc32_impl(impl);
		for (off = 0; off < 3; off++) {
			for (len = 0; len <= 1100; len++)
				assert_int_equal(
					srdma_crc32(7, buf + off, len),
					crc32_bitwise(7, buf + off, len));
			for (len = 4096 - 50; len <= 4096 + 70; len++)
				assert_int_equal(
					srdma_crc32(0, buf + off, len),
					crc32_bitwise(0, buf + off, len));
			assert_int_equal(srdma_crc32(0, buf + off, 9216),
					 crc32_bitwise(0, buf + off, 9216));
		}
	}
	srdma_crc32_impl(best);
	print_message("CRC implementations checked: 0..%d\n", best);
}

/* The ICRC by the definition: CRC-32 (bitwise) over the LRH stand-in
 * (8 x 0xff), the IPv4 header with TOS, TTL and checksum masked, the UDP
 * header with its checksum masked, the BTH with byte 4 masked, and the
 * rest of the packet. */
static uint32_t icrc_bitwise(const uint8_t *pkt, size_t len)
{
	uint8_t b[8 + 20 + 8 + 1100];

	memset(b, 0xff, 8);
	memcpy(b + 8, ip4, 20);
	b[8 + 1] = b[8 + 8] = b[8 + 10] = b[8 + 11] = 0xff;
	memcpy(b + 28, udp, 8);
	b[28 + 6] = b[28 + 7] = 0xff;
	memcpy(b + 36, pkt, len);
	b[36 + 4] = 0xff;
	return crc32_bitwise(0, b, 36 + len);
}

/* Packets of 12 to 160 bytes (the short path below 64: one copy and one
 * fold for the whole packet; the piecewise path above), as one buffer and
 * cut into three iovecs at many places (the BTH split too), with every
 * implementation: always the ICRC of the definition. */
static void test_icrc_split_and_short_packets(void **state)
{
	static uint8_t pkt[160];
	uint32_t x = 777;
	size_t i, len, a, b;
	int impl, best = srdma_crc32_impl(-1);

	(void)state;
	for (i = 0; i < sizeof(pkt); i++) {
		x = x * 1103515245u + 12345u;
		pkt[i] = (uint8_t)(x >> 16);
	}
	for (impl = 0; impl <= best; impl++) {
		srdma_crc32_impl(impl);
		for (len = 12; len <= sizeof(pkt); len++) {
			uint32_t want = icrc_bitwise(pkt, len);

			assert_int_equal(srdma_icrc(ip4, udp, pkt, len), want);
			for (a = 0; a <= 16 && a <= len; a++)
				for (b = a; b <= len; b += 1 + (b - a) / 2) {
					struct iovec v[3] = {
						{ pkt, a },
						{ pkt + a, b - a },
						{ pkt + b, len - b },
					};

					assert_int_equal(
						srdma_icrc_iov(ip4, udp, v, 3),
						want);
				}
		}
	}
	srdma_crc32_impl(best);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32_check_value_and_lrh_seed),
		cmocka_unit_test(test_icrc_roce_wire_vector),
		cmocka_unit_test(test_icrc_ipv4_masked_and_covered_fields),
		cmocka_unit_test(test_icrc_ipv6_masked_and_covered_fields),
		cmocka_unit_test(test_crc32_long_buffers_match_bitwise),
		cmocka_unit_test(test_icrc_split_and_short_packets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
