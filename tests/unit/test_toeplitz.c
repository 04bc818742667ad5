// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_toeplitz.c - the RSS hash (core/raw.c srdma_toeplitz()) against
 * Microsoft's RSS verification suite: its 40-byte key, two IPv4 flows
 * and one IPv6 flow, each hashed over the addresses alone and over the
 * addresses and ports (the input orders an RSS QP uses). The values were
 * checked independently of this code (a bit-by-bit model in Python).
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/raw.h"

static const uint8_t key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* src, dst (and ports, if @sport) in network order into @in. */
static uint32_t input(int af, const char *src, const char *dst,
		      uint16_t sport, uint16_t dport, uint8_t *in)
{
	uint32_t alen = af == AF_INET ? 4 : 16, n = 2 * alen;

	assert_int_equal(inet_pton(af, src, in), 1);
	assert_int_equal(inet_pton(af, dst, in + alen), 1);
	if (sport) {
		in[n++] = (uint8_t)(sport >> 8);
		in[n++] = (uint8_t)sport;
		in[n++] = (uint8_t)(dport >> 8);
		in[n++] = (uint8_t)dport;
	}
	return n;
}

static void check(int af, const char *src, const char *dst, uint16_t sport,
		  uint16_t dport, uint32_t addr_hash, uint32_t port_hash)
{
	uint8_t in[36];
	uint32_t n;

	n = input(af, src, dst, 0, 0, in);
	assert_int_equal(srdma_toeplitz(key, in, n), addr_hash);
	n = input(af, src, dst, sport, dport, in);
	assert_int_equal(srdma_toeplitz(key, in, n), port_hash);
}

static void test_ipv4(void **state)
{
	(void)state;
	check(AF_INET, "66.9.149.187", "161.142.100.80", 2794, 1766,
	      0x323e8fc2, 0x51ccc178);
	check(AF_INET, "199.92.111.2", "65.69.140.83", 14230, 4739,
	      0xd718262a, 0xc626b0ea);
}

static void test_ipv6(void **state)
{
	(void)state;
	check(AF_INET6, "3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794,
	      1766, 0x2cc18cd5, 0x40207d3d);
}

static void test_empty(void **state)
{
	(void)state;
	assert_int_equal(srdma_toeplitz(key, NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
