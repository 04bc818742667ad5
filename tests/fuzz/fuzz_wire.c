// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fuzz_wire.c - libFuzzer target over the first code that sees a hostile
 * datagram: srdma_wire_parse() and the ICRC check (transport/net/wire.c).
 * The input is one UDP payload (BTH through ICRC).
 *
 * Beyond "no crash, no read past the end" (ASan, UBSan), it checks what
 * a parse that says yes promises: headers + payload + pad + ICRC add up
 * to the datagram, the payload lies inside it, and building the header
 * back from the parsed fields gives the same bytes but for the bits a
 * sender must zero and a receiver ignores (FECN/BECN/reserved, DETH's
 * reserved byte). And that a datagram whose ICRC we compute and store
 * passes the check, over IPv4 and IPv6, while the raw input (whose ICRC
 * is random) is checked only for safety; and that the lenient IPv4 check
 * recovers exactly the identification and DF a peer used (those of a
 * softrdma GSO segment, DF and 1..63, with their own verdict), and the
 * GSO sender's patch (srdma_wire_icrc_id_delta) gives the same ICRC.
 *
 * Seeds: tests/fuzz/corpus/, one valid packet per opcode with its ICRC
 * for the IPv4 path below (tests/net/wire_gen.c corpus DIR).
 * Run: scripts/fuzz.sh (builds build-fuzz/ with clang).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/net/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c))                                                      \
			abort();                                               \
	} while (0)

static void paths(struct srdma_wire_path *v4, struct srdma_wire_path *v6)
{
	static const uint8_t pfx[6] = {0xfd, 0x53, 0x72, 0x64, 0x6d, 0x61};

	memset(v4, 0, sizeof(*v4));
	v4->sip[10] = v4->sip[11] = 0xff;
	v4->sip[12] = 198;
	v4->sip[13] = 18;
	v4->sip[15] = 1;
	memcpy(v4->dip, v4->sip, 16);
	v4->dip[15] = 2;
	v4->sport = 0xc001;
	v4->dport = SRDMA_ROCE_PORT;
	memset(v6, 0, sizeof(*v6));
	memcpy(v6->sip, pfx, sizeof(pfx));
	memcpy(v6->dip, pfx, sizeof(pfx));
	v6->sip[15] = 1;
	v6->dip[15] = 2;
	v6->sport = 0xc001;
	v6->dport = SRDMA_ROCE_PORT;
}

static void check_parsed(const uint8_t *data, size_t size,
			 const struct srdma_pkt *p)
{
	uint8_t hdr[SRDMA_MAX_IB_HDR], want[SRDMA_MAX_IB_HDR];
	uint32_t hl;

	CHECK(p->hdrs == srdma_wire_hdrs(p->opcode));
	CHECK(p->hdr_len == srdma_wire_hdr_len(p->opcode));
	CHECK(p->hdr_len <= SRDMA_MAX_IB_HDR);
	CHECK((size_t)p->hdr_len + p->paylen + p->padcnt + SRDMA_ICRC_BYTES ==
	      size);
	CHECK(p->payload == data + p->hdr_len);
	CHECK(p->padcnt == srdma_wire_pad(p->paylen));
	CHECK(p->paylen <= 4096);
	CHECK(p->paylen == 0 || (p->hdrs & SRDMA_HDR_PAYLOAD));
	CHECK(p->dqpn <= 0xffffff && p->psn <= 0xffffff);

	hl = srdma_wire_build(hdr, p);
	CHECK(hl == p->hdr_len);
	memcpy(want, data, hl);
	want[4] = 0;	 /* FECN, BECN, resv6a */
	want[8] &= 0x80; /* resv7 */
	if (p->hdrs & SRDMA_HDR_XRCETH)
		want[SRDMA_BTH_BYTES] = 0; /* XRCETH reserved (ignored) */
	if (p->hdrs & SRDMA_HDR_DETH)
		want[SRDMA_BTH_BYTES + 4] = 0; /* DETH reserved */
	CHECK(!memcmp(hdr, want, hl));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct srdma_wire_path v4, v6;
	struct srdma_pkt pkt;
	uint8_t *copy;

	paths(&v4, &v6);
	if (srdma_wire_parse(data, size, &pkt) == SRDMA_DROP_NONE)
		check_parsed(data, size, &pkt);
	(void)srdma_wire_icrc_check(&v4, data, size);
	(void)srdma_wire_icrc_check(&v6, data, size);
	(void)srdma_wire_icrc_verify(&v4, data, size, SRDMA_ICRC_LENIENT);

	/* Give the datagram a right ICRC: the check must agree. */
	if (size >= SRDMA_BTH_BYTES + SRDMA_ICRC_BYTES) {
		struct iovec iov;

		copy = malloc(size);
		if (!copy)
			return 0;
		memcpy(copy, data, size);
		iov.iov_base = copy;
		iov.iov_len = size - SRDMA_ICRC_BYTES;
		srdma_wire_put_icrc(copy + iov.iov_len,
				    srdma_wire_icrc(&v6, &iov, 1));
		CHECK(srdma_wire_icrc_check(&v6, copy, size));
		srdma_wire_put_icrc(copy + iov.iov_len,
				    srdma_wire_icrc(&v4, &iov, 1));
		CHECK(srdma_wire_icrc_check(&v4, copy, size));
		CHECK(srdma_wire_icrc_verify(&v4, copy, size,
					     SRDMA_ICRC_LENIENT) ==
		      SRDMA_ICRC_OK);
		/* A peer with its own identification and DF (taken from
		 * the input): lenient recovers exactly those. */
		{
			uint8_t ip[SRDMA_IPV6_HDR_BYTES], udp[8];
			uint16_t id = (uint16_t)(data[0] << 8 | data[1]), gid;
			bool df = data[2] & 1, gdf;
			uint32_t got, want;

			srdma_wire_ip_udp(&v4, size, ip, udp);
			want = srdma_icrc(ip, udp, copy, iov.iov_len);
			ip[4] = (uint8_t)(id >> 8);
			ip[5] = (uint8_t)id;
			ip[6] = df ? 0x40 : 0;
			got = srdma_icrc(ip, udp, copy, iov.iov_len);
			srdma_wire_put_icrc(copy + iov.iov_len, got);
			if (id || !df) {
				/* Identifications below 64 with DF: a
				 * segment of our own GSO sends. */
				bool gso = df && id < SRDMA_WIRE_GSO_SEGS;

				CHECK(!srdma_wire_icrc_check(&v4, copy, size));
				CHECK(srdma_wire_icrc_verify(
					      &v4, copy, size,
					      SRDMA_ICRC_LENIENT) ==
				      (gso ? SRDMA_ICRC_OK_GSO :
					     SRDMA_ICRC_OK_ID));
			}
			/* The GSO patch is the same difference. */
			if (df)
				CHECK((want ^ srdma_wire_icrc_id_delta(size,
								       id)) ==
				      got);
			CHECK(srdma_icrc_ipv4_explain(
				got, want, 13 + 8 + iov.iov_len, &gid, &gdf));
			CHECK(gid == id && gdf == df);
		}
		free(copy);
	}
	return 0;
}
