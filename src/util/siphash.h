/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * siphash.h - SipHash-2-4 (Aumasson and Bernstein, 2012) of a message of
 * at most 7 bytes, which is all softrdma needs: the keyed map from a key
 * index to a key table slot (core/key_table.c), computed on every RDMA
 * operation. SipHash-2-4 is a pseudorandom function for a secret 128-bit
 * key: without the key, its outputs are unpredictable even to someone who
 * has seen the outputs for any number of chosen inputs.
 *
 * A message of fewer than 8 bytes is only the final block: two
 * compression rounds and four finalisation rounds, ~6 ns on a current x86
 * core. Checked against the reference test vectors in
 * tests/unit/test_key_table.c.
 */
#ifndef SRDMA_UTIL_SIPHASH_H
#define SRDMA_UTIL_SIPHASH_H

#include <stdint.h>

static inline uint64_t srdma_rotl64(uint64_t x, unsigned int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SRDMA_SIPROUND(v0, v1, v2, v3)                                         \
	do {                                                                   \
		v0 += v1;                                                      \
		v1 = srdma_rotl64(v1, 13);                                     \
		v1 ^= v0;                                                      \
		v0 = srdma_rotl64(v0, 32);                                     \
		v2 += v3;                                                      \
		v3 = srdma_rotl64(v3, 16);                                     \
		v3 ^= v2;                                                      \
		v0 += v3;                                                      \
		v3 = srdma_rotl64(v3, 21);                                     \
		v3 ^= v0;                                                      \
		v2 += v1;                                                      \
		v1 = srdma_rotl64(v1, 17);                                     \
		v1 ^= v2;                                                      \
		v2 = srdma_rotl64(v2, 32);                                     \
	} while (0)

/**
 * srdma_siphash24_short() - SipHash-2-4 of a message shorter than 8 bytes.
 * @k:   the key, as two little-endian 64-bit words (k[0] = key bytes 0..7)
 * @m:   the message bytes, little-endian (byte 0 in bits 0..7); bits at
 *       and above @len * 8 must be zero
 * @len: message length in bytes, 0..7
 * Return: the 64-bit SipHash-2-4 value, as the reference returns it.
 */
static inline uint64_t srdma_siphash24_short(const uint64_t k[2], uint64_t m,
					     unsigned int len)
{
	uint64_t v0 = k[0] ^ 0x736f6d6570736575ull;
	uint64_t v1 = k[1] ^ 0x646f72616e646f6dull;
	uint64_t v2 = k[0] ^ 0x6c7967656e657261ull;
	uint64_t v3 = k[1] ^ 0x7465646279746573ull;
	uint64_t b = (uint64_t)len << 56 | m;

	v3 ^= b;
	SRDMA_SIPROUND(v0, v1, v2, v3);
	SRDMA_SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	SRDMA_SIPROUND(v0, v1, v2, v3);
	SRDMA_SIPROUND(v0, v1, v2, v3);
	SRDMA_SIPROUND(v0, v1, v2, v3);
	SRDMA_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

#endif
