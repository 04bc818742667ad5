// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * icrc.c - IEEE CRC-32 and the RoCEv2 ICRC over it (icrc.h says what is
 * covered and what is masked, and why).
 *
 * The CRC folds 16 bytes per step with carry-less multiplication where
 * the CPU has it (x86-64 PCLMULQDQ, checked once at run time: over
 * 10 GB/s), 64 bytes per instruction where it also has VPCLMULQDQ on
 * 512-bit registers (AVX-512: about three times as fast again over a 4 KiB
 * payload, which a large transfer computes twice per packet, once on each
 * side), and is table-driven elsewhere: slicing-by-8, eight 256-entry
 * tables built once, 8 bytes per step (about 2 GB/s), with a
 * byte-at-a-time loop for the unaligned head and the tail. A short piece
 * (4 to 63 bytes: a BTH, an ACK, a small WRITE's headers and payload) is
 * folded too, from a copy padded in front with zeros to a multiple of 16
 * bytes, with the register added into its first four bytes: from a zero
 * register, leading zero bytes leave the CRC as it is, so the result is
 * the register's update over the piece (30-50 cycles against 60-95 by
 * the tables here). And a short packet's ICRC is one such fold over the
 * whole packet, not one per piece (srdma_icrc_iov_from). The unit test
 * checks every path against a bitwise CRC computed in the test itself.
 *
 * srdma_icrc_iov() is the form the net transport uses: the packet as an
 * iovec (headers in one buffer, payload straight from registered memory)
 * so nothing is copied to compute its ICRC. Concurrency: the tables are
 * built under pthread_once; the CRC of the headers before the BTH is
 * cached per thread and path by the caller (wire.c srdma_wire_icrc(), on
 * the heap: the library's TLS must stay small).
 */
#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "transport/net/icrc.h"

static uint32_t crc_table[8][256]; /* immutable after crc_once */
/* The entry of crc_table[0] whose top byte is the index (the top bytes of
 * the 256 entries are all different): undoes one register step. */
static uint8_t crc_untop[256]; /* immutable after crc_once */
/* unzero[k]: undoing 2^k steps over zero bytes, as a GF(2) matrix (column
 * i is the image of bit i): srdma_icrc_ipv4_explain walks back in
 * log2(tail) matrix products instead of tail table lookups. */
#define UNZERO_LEVELS 17
static uint32_t unzero[UNZERO_LEVELS][32]; /* immutable after crc_once */
/* zero[k]: 2^k steps forward over zero bytes, the inverse of unzero[k]
 * (srdma_icrc_ipv4_id_delta). */
static uint32_t zero[UNZERO_LEVELS][32]; /* immutable after crc_once */
/* Which folding the CPU allows (CRC_TABLE, CRC_CLMUL, CRC_VCLMUL): set
 * once under crc_once; crc_impl, what is used, only lowered by the test
 * hook srdma_crc32_impl(). */
enum { CRC_TABLE, CRC_CLMUL, CRC_VCLMUL };
static int crc_best;
static _Atomic int crc_impl;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* One step of the register over a zero byte, undone: the top byte of the
 * result names the table entry that was added. Linear. */
static uint32_t unstep_zero(uint32_t reg)
{
	uint8_t idx = crc_untop[reg >> 24];

	return (reg ^ crc_table[0][idx]) << 8 | idx;
}

/* The GF(2) matrix @m (columns) times the vector @v. */
static uint32_t gf2_apply(const uint32_t m[32], uint32_t v)
{
	uint32_t r = 0;
	int i;

	for (i = 0; v; i++, v >>= 1)
		if (v & 1)
			r ^= m[i];
	return r;
}

static void crc_table_init(void)
{
	uint32_t i, k, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		crc_untop[crc_table[0][i] >> 24] = (uint8_t)i;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("pclmul") &&
	    __builtin_cpu_supports("sse4.1"))
		crc_best = CRC_CLMUL;
	/* libgcc checks that the kernel saves the 512-bit state too. */
	if (crc_best == CRC_CLMUL && __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("vpclmulqdq"))
		crc_best = CRC_VCLMUL;
#endif
	atomic_store_explicit(&crc_impl, crc_best, memory_order_relaxed);
	/* Table k: the register effect of a byte followed by k zero bytes. */
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++)
			crc_table[k][i] =
				crc_table[0][crc_table[k - 1][i] & 0xff] ^
				(crc_table[k - 1][i] >> 8);
	/* One zero step undone is linear (see unstep_zero); square it. */
	for (i = 0; i < 32; i++)
		unzero[0][i] = unstep_zero(1u << i);
	for (k = 1; k < UNZERO_LEVELS; k++)
		for (i = 0; i < 32; i++)
			unzero[k][i] =
				gf2_apply(unzero[k - 1], unzero[k - 1][i]);
	/* One zero step forward is linear too. */
	for (i = 0; i < 32; i++)
		zero[0][i] = crc_table[0][(1u << i) & 0xff] ^ ((1u << i) >> 8);
	for (k = 1; k < UNZERO_LEVELS; k++)
		for (i = 0; i < 32; i++)
			zero[k][i] = gf2_apply(zero[k - 1], zero[k - 1][i]);
}

#if defined(__x86_64__)
/*
 * Carry-less multiplication folding (Intel's "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ"), bit-reflected: a 128-bit
 * remainder that is D bytes ahead of the next block is multiplied, half by
 * half, by x^(8D+32) and x^(8D-32) mod P and added to that block; at the
 * end 128 bits are reduced to 64, to 32, and by Barrett reduction to the
 * register. The constants are those powers of x (D = 16, 64 and 256) and
 * mu = x^64 / P, all reflected and shifted left by one, as the paper
 * gives them; they are facts about the polynomial, and the unit test
 * holds every path to a bitwise CRC.
 */
#define K16_LO	0x01751997d0	/* x^160 */
#define K16_HI	0x00ccaa009e	/* x^96 */
#define K64_LO	0x0154442bd4	/* x^544 */
#define K64_HI	0x01c6e41596	/* x^480 */
#define K256_LO 0x011542778a	/* x^2080 */
#define K256_HI 0x01322d1430	/* x^2016 */

/* @x folded over the @len bytes at @p (a multiple of 16, maybe 0), 16 at
 * a time, then reduced to the register. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
fold_finish(__m128i x, const uint8_t *p, size_t len)
{
	const __m128i k16 = _mm_set_epi64x(K16_HI, K16_LO);
	const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
	const __m128i pmu = _mm_set_epi64x(0x01f7011641, 0x01db710641);
	const __m128i lo32 = _mm_set_epi32(0, -1, 0, -1);
	__m128i t;

	for (; len; p += 16, len -= 16) {
		t = _mm_clmulepi64_si128(x, k16, 0x00);
		x = _mm_clmulepi64_si128(x, k16, 0x11);
		x = _mm_xor_si128(x, t);
		x = _mm_xor_si128(x, _mm_loadu_si128((const __m128i *)p));
	}
	/* 128 bits to 64 */
	t = _mm_clmulepi64_si128(x, k16, 0x10);
	x = _mm_xor_si128(_mm_srli_si128(x, 8), t);
	/* 64 bits to 32 */
	t = _mm_srli_si128(x, 4);
	x = _mm_clmulepi64_si128(_mm_and_si128(x, lo32), k5, 0x00);
	x = _mm_xor_si128(x, t);
	/* Barrett reduction */
	t = _mm_clmulepi64_si128(_mm_and_si128(x, lo32), pmu, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, lo32), pmu, 0x00);
	x = _mm_xor_si128(x, t);
	return (uint32_t)_mm_extract_epi32(x, 1);
}

/* The register after @len bytes at @p (a multiple of 16, at least 16),
 * with 128-bit registers. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc_fold(uint32_t reg, const uint8_t *p, size_t len)
{
	const __m128i k16 = _mm_set_epi64x(K16_HI, K16_LO);
	__m128i x, t;

	x = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
			  _mm_cvtsi32_si128((int)reg));
	if (len >= 128) {
		/* Four independent lanes of 16 bytes, each folded over 64
		 * bytes at a time, so that the multiplier's latency
		 * overlaps; then the lanes are folded into one, 16 bytes at
		 * a time. */
		const __m128i k64 = _mm_set_epi64x(K64_HI, K64_LO);
		__m128i y[4];
		int i;

		y[0] = x;
		for (i = 1; i < 4; i++)
			y[i] = _mm_loadu_si128((const __m128i *)(p + 16 * i));
		for (p += 64, len -= 64; len >= 64; p += 64, len -= 64)
			for (i = 0; i < 4; i++) {
				t = _mm_clmulepi64_si128(y[i], k64, 0x00);
				y[i] = _mm_clmulepi64_si128(y[i], k64, 0x11);
				y[i] = _mm_xor_si128(y[i], t);
				y[i] = _mm_xor_si128(y[i], _mm_loadu_si128(
					(const __m128i *)(p + 16 * i)));
			}
		x = y[0];
		for (i = 1; i < 4; i++) {
			t = _mm_clmulepi64_si128(x, k16, 0x00);
			x = _mm_clmulepi64_si128(x, k16, 0x11);
			x = _mm_xor_si128(x, t);
			x = _mm_xor_si128(x, y[i]);
		}
		/* 0 to 48 bytes left */
		return fold_finish(x, p, len);
	}
	return fold_finish(x, p + 16, len - 16);
}

/* One 512-bit register of four 128-bit remainders, each folded @k's
 * distance ahead and added to @next. */
__attribute__((target("avx512f,avx512vl,vpclmulqdq"))) static inline __m512i
fold512(__m512i y, __m512i k, __m512i next)
{
	__m512i t = _mm512_clmulepi64_epi128(y, k, 0x00);

	y = _mm512_clmulepi64_epi128(y, k, 0x11);
	return _mm512_ternarylogic_epi64(y, t, next, 0x96); /* y ^ t ^ next */
}

/* crc_fold() with 512-bit registers: four of them, 256 bytes per round,
 * then into one (64 bytes apart), then its four 128-bit parts into one
 * (16 bytes apart). @len: a multiple of 16, at least 256. */
__attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))
static uint32_t crc_fold512(uint32_t reg, const uint8_t *p, size_t len)
{
	const __m512i k256 = _mm512_set_epi64(K256_HI, K256_LO, K256_HI,
					      K256_LO, K256_HI, K256_LO,
					      K256_HI, K256_LO);
	const __m512i k64 = _mm512_set_epi64(K64_HI, K64_LO, K64_HI, K64_LO,
					     K64_HI, K64_LO, K64_HI, K64_LO);
	const __m128i k16 = _mm_set_epi64x(K16_HI, K16_LO);
	__m512i y[4];
	__m128i x, t;
	int i;

	for (i = 0; i < 4; i++)
		y[i] = _mm512_loadu_si512(p + 64 * i);
	y[0] = _mm512_xor_si512(y[0], _mm512_zextsi128_si512(
				_mm_cvtsi32_si128((int)reg)));
	for (p += 256, len -= 256; len >= 256; p += 256, len -= 256)
		for (i = 0; i < 4; i++)
			y[i] = fold512(y[i], k256,
				       _mm512_loadu_si512(p + 64 * i));
	for (i = 1; i < 4; i++)
		y[0] = fold512(y[0], k64, y[i]);
	for (; len >= 64; p += 64, len -= 64)
		y[0] = fold512(y[0], k64, _mm512_loadu_si512(p));
	/* The four 128-bit remainders, lowest address first. */
	x = _mm512_castsi512_si128(y[0]);
#define FOLD16_LANE(n)							\
	do {								\
		t = _mm_clmulepi64_si128(x, k16, 0x00);			\
		x = _mm_clmulepi64_si128(x, k16, 0x11);			\
		x = _mm_xor_si128(_mm_xor_si128(x, t),			\
				  _mm512_extracti32x4_epi32(y[0], n));	\
	} while (0)
	FOLD16_LANE(1);
	FOLD16_LANE(2);
	FOLD16_LANE(3);
#undef FOLD16_LANE
	/* 0 to 48 bytes left */
	return fold_finish(x, p, len);
}
#endif

static uint32_t crc_table_update(uint32_t reg, const uint8_t *p,
				 size_t len);

#if defined(__x86_64__)
/* The register after the @len bytes at @p, 4 <= @len < 64 (used from 8:
 * below, the tables are faster), folded from a
 * copy padded in front with zeros to a multiple of 16 bytes, @reg added
 * into the piece's first four bytes (the register starts at 0: leading
 * zeros leave it there). */
static uint32_t crc_fold_short(uint32_t reg, const uint8_t *p, size_t len)
{
	uint8_t b[64];
	size_t n = (len + 15) & ~(size_t)15;
	uint8_t *q = b + (n - len);
	uint32_t w;

	memset(b, 0, 16);	/* the pad is within the first block */
	memcpy(q, p, len);
	memcpy(&w, q, sizeof(w));
	w ^= htole32(reg);
	memcpy(q, &w, sizeof(w));
	return crc_fold(0, b, n);
}
#endif

/* The raw register update: no pre- or post-inversion. */
static uint32_t crc_update(uint32_t reg, const uint8_t *p, size_t len)
{
#if defined(__x86_64__)
	int impl = atomic_load_explicit(&crc_impl, memory_order_relaxed);

	if (impl != CRC_TABLE && len < 64)
		return len >= 8 ? crc_fold_short(reg, p, len) :
				  crc_table_update(reg, p, len);
	if (impl != CRC_TABLE) {
		size_t n = len & ~(size_t)15;

		if (impl == CRC_VCLMUL && n >= 256)
			reg = crc_fold512(reg, p, n);
		else
			reg = crc_fold(reg, p, n);
		p += n;
		len -= n;
	}
#endif
	return crc_table_update(reg, p, len);
}

/* crc_update() by the tables alone. */
static uint32_t crc_table_update(uint32_t reg, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		reg = crc_table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;
		uint32_t lo, hi;

		memcpy(&w, p, sizeof(w));
		w = le64toh(w);
		lo = (uint32_t)w ^ reg;
		hi = (uint32_t)(w >> 32);
		reg = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		reg = crc_table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
	return reg;
}

uint32_t srdma_crc32(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_table_init);
	return ~crc_update(~crc, buf, len);
}

int srdma_crc32_impl(int impl)
{
	pthread_once(&crc_once, crc_table_init);
	if (impl >= 0)
		atomic_store_explicit(&crc_impl,
				      impl < crc_best ? impl : crc_best,
				      memory_order_relaxed);
	return crc_best;
}

/*
 * The CRC so far over the LRH stand-in and the masked IP and UDP headers:
 * the part of the ICRC before the BTH. Return: 0 for an IP version other
 * than 4 or 6 (the caller gives up), else a running srdma_crc32() value.
 */
int srdma_icrc_pre(const uint8_t *ip, const uint8_t udp[SRDMA_UDP_HDR_BYTES],
		   uint32_t *crc)
{
	/* The LRH stand-in, the IP header, the UDP header, masked, in one
	 * buffer: one CRC run over 36 or 56 bytes. */
	uint8_t h[8 + SRDMA_IPV6_HDR_BYTES + SRDMA_UDP_HDR_BYTES];
	uint8_t *iph = h + 8, *udph;
	size_t ip_len;

	memset(h, 0xff, 8);
	switch (ip[0] >> 4) {
	case 4:
		ip_len = SRDMA_IPV4_HDR_BYTES;
		memcpy(iph, ip, ip_len);
		iph[1] = 0xff;		  /* TOS */
		iph[8] = 0xff;		  /* TTL */
		iph[10] = iph[11] = 0xff; /* header checksum */
		break;
	case 6:
		ip_len = SRDMA_IPV6_HDR_BYTES;
		memcpy(iph, ip, ip_len);
		/* Traffic class and flow label: all but the version nibble
		 * of the first word. */
		iph[0] |= 0x0f;
		iph[1] = iph[2] = iph[3] = 0xff;
		iph[7] = 0xff; /* hop limit */
		break;
	default:
		return -1;
	}
	udph = iph + ip_len;
	memcpy(udph, udp, SRDMA_UDP_HDR_BYTES);
	udph[6] = udph[7] = 0xff; /* UDP checksum */
	*crc = srdma_crc32(0, h, 8 + ip_len + SRDMA_UDP_HDR_BYTES);
	return 0;
}

uint32_t srdma_icrc_iov(const uint8_t *ip,
			const uint8_t udp[SRDMA_UDP_HDR_BYTES],
			const struct iovec *iov, int n)
{
	uint32_t crc;

	if (srdma_icrc_pre(ip, udp, &crc))
		return 0;
	return srdma_icrc_iov_from(crc, iov, n);
}

uint32_t srdma_icrc_iov_from(uint32_t crc, const struct iovec *iov, int n)
{
	uint8_t bth[SRDMA_BTH_BYTES];
	size_t have = 0, total = 0, off;
	int i;

	for (i = 0; i < n; i++)
		total += iov[i].iov_len;
	if (total < SRDMA_BTH_BYTES)
		return 0;
	if (total < 64) {
		/* A short packet (an ACK, a small request): one copy, its
		 * BTH masked, one CRC run (folded, where the CPU can). */
		uint8_t pkt[64];

		for (i = 0, off = 0; i < n; off += iov[i].iov_len, i++)
			memcpy(pkt + off, iov[i].iov_base, iov[i].iov_len);
		pkt[4] = 0xff; /* FECN, BECN, resv6a */
		return srdma_crc32(crc, pkt, total);
	}
	for (i = 0; i < n; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t len = iov[i].iov_len;

		/* The BTH, possibly split across iovecs, goes through a
		 * copy with byte 4 masked; the rest straight through. */
		off = 0;
		if (have < SRDMA_BTH_BYTES) {
			off = SRDMA_BTH_BYTES - have;
			if (off > len)
				off = len;
			memcpy(bth + have, p, off);
			have += off;
			if (have < SRDMA_BTH_BYTES)
				continue;
			bth[4] = 0xff; /* FECN, BECN, resv6a */
			crc = srdma_crc32(crc, bth, sizeof(bth));
		}
		if (len > off)
			crc = srdma_crc32(crc, p + off, len - off);
	}
	return crc;
}

uint32_t srdma_icrc(const uint8_t *ip, const uint8_t udp[SRDMA_UDP_HDR_BYTES],
		    const uint8_t *ib, size_t ib_len)
{
	struct iovec iov = {.iov_base = (void *)ib, .iov_len = ib_len};

	return srdma_icrc_iov(ip, udp, &iov, 1);
}

/*
 * Why an IPv4 ICRC may be explained by another identification.
 *
 * The CRC register update is linear over GF(2), so two packets that
 * differ only in IP header bytes 4..6 (identification, flags and the top
 * of the fragment offset) end with registers that differ by
 *   Z^tail * G(delta)
 * where delta is the 24-bit difference of those bytes, G the register a
 * zero register becomes after the three bytes of delta, Z one step over a
 * zero byte and tail the bytes after byte 6. Z is invertible (the top
 * byte of a table entry names the entry), so undoing tail zero steps on
 * the difference of the two ICRCs gives G(delta), and G, injective for
 * three bytes, is undone three steps back to a zero register. Z^-tail
 * is a product of the precomputed Z^-(2^k) (unzero[], 32x32 bit
 * matrices), one per set bit of tail: a few hundred operations, whatever
 * the packet's length (on top of the ICRC computed for the check).
 */

bool srdma_icrc_ipv4_explain(uint32_t got, uint32_t want, size_t tail,
			     uint16_t *id, bool *df)
{
	const uint32_t *t = crc_table[0];
	uint32_t v = got ^ want, r2, r1, reg;
	uint8_t i0, i1, i2, l1, l2, b[3];
	int k;

	pthread_once(&crc_once, crc_table_init);
	for (k = 0; tail && k < UNZERO_LEVELS; k++, tail >>= 1)
		if (tail & 1)
			v = gf2_apply(unzero[k], v);
	/* What is left counts 2^17 steps (no UDP datagram is that long). */
	for (; tail; tail--) {
		v = gf2_apply(unzero[UNZERO_LEVELS - 1], v);
		v = gf2_apply(unzero[UNZERO_LEVELS - 1], v);
	}
	/*
	 * Three steps back from v to a zero register. Step k took register
	 * r_k and byte b_k to t[i_k] ^ (r_k >> 8), i_k = (r_k ^ b_k) & 0xff:
	 * the top byte of the result names i_k and the rest gives r_k but for
	 * its low byte. r_0 = 0 makes r_1 = t[i_0] whole, which fixes the low
	 * bytes left open; the forward check below rejects the differences
	 * no bytes can make.
	 */
	i2 = crc_untop[v >> 24];
	r2 = (v ^ t[i2]) << 8; /* low byte l2 still unknown */
	i1 = crc_untop[r2 >> 24];
	r1 = (r2 ^ t[i1]) << 8; /* low bytes unknown */
	i0 = crc_untop[r1 >> 24];
	l1 = (uint8_t)t[i0];
	l2 = (uint8_t)((t[i0] >> 8) ^ t[i1]);
	b[0] = i0;
	b[1] = i1 ^ l1;
	b[2] = i2 ^ l2;
	for (reg = 0, k = 0; k < 3; k++)
		reg = t[(reg ^ b[k]) & 0xff] ^ (reg >> 8);
	if (reg != v)
		return false;
	/* Byte 6 was 0x40 (DF) in @want: only DF may differ, no MF, no
	 * fragment offset. */
	if (b[2] & ~0x40)
		return false;
	*id = (uint16_t)(b[0] << 8 | b[1]);
	*df = !(b[2] & 0x40);
	return true;
}

/*
 * The other direction: the register difference that a change of the
 * identification from 0 to @id makes, G(delta) stepped forward over
 * @tail zero bytes with the zero[] matrices (log2(tail) products).
 */
uint32_t srdma_icrc_ipv4_id_delta(uint16_t id, size_t tail)
{
	const uint8_t b[3] = { (uint8_t)(id >> 8), (uint8_t)id, 0 };
	uint32_t reg = 0;
	int k;

	pthread_once(&crc_once, crc_table_init);
	for (k = 0; k < 3; k++)
		reg = crc_table[0][(reg ^ b[k]) & 0xff] ^ (reg >> 8);
	for (k = 0; tail && k < UNZERO_LEVELS; k++, tail >>= 1)
		if (tail & 1)
			reg = gf2_apply(zero[k], reg);
	for (; tail; tail--) {
		reg = gf2_apply(zero[UNZERO_LEVELS - 1], reg);
		reg = gf2_apply(zero[UNZERO_LEVELS - 1], reg);
	}
	return reg;
}
