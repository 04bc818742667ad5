// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * icrc.c - IEEE CRC-32 and the RoCEv2 ICRC over it (icrc.h says what is
 * covered and what is masked, and why).
 *
 * The CRC is table-driven, one byte per step, over a 256-entry table built
 * once. That is enough to pin the wire format now; the net transport's
 * data path will want a faster variant (slicing-by-8, or the SSE4.2/PCLMUL
 * folding of the same polynomial) and must keep this one as its reference
 * in the unit test. Concurrency: the table is built under pthread_once.
 */
#include <pthread.h>
#include <string.h>

#include "transport/net/icrc.h"

static uint32_t crc_table[256]; /* immutable after crc_once */
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	uint32_t i, k, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

/* The raw register update: no pre- or post-inversion. */
static uint32_t crc_update(uint32_t reg, const uint8_t *p, size_t len)
{
	while (len--)
		reg = crc_table[(reg ^ *p++) & 0xff] ^ (reg >> 8);
	return reg;
}

uint32_t srdma_crc32(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_table_init);
	return ~crc_update(~crc, buf, len);
}

uint32_t srdma_icrc(const uint8_t *ip, const uint8_t udp[SRDMA_UDP_HDR_BYTES],
		    const uint8_t *ib, size_t ib_len)
{
	static const uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff};
	uint8_t iph[SRDMA_IPV6_HDR_BYTES], udph[SRDMA_UDP_HDR_BYTES];
	uint8_t bth[SRDMA_BTH_BYTES];
	size_t ip_len;
	uint32_t crc;

	if (ib_len < SRDMA_BTH_BYTES)
		return 0;
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
		return 0;
	}
	memcpy(udph, udp, sizeof(udph));
	udph[6] = udph[7] = 0xff; /* UDP checksum */
	memcpy(bth, ib, sizeof(bth));
	bth[4] = 0xff; /* FECN, BECN, resv6a */

	crc = srdma_crc32(0, lrh, sizeof(lrh));
	crc = srdma_crc32(crc, iph, ip_len);
	crc = srdma_crc32(crc, udph, sizeof(udph));
	crc = srdma_crc32(crc, bth, sizeof(bth));
	return srdma_crc32(crc, ib + SRDMA_BTH_BYTES, ib_len - SRDMA_BTH_BYTES);
}
