// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_wire.c - the RoCEv2 header codec (transport/net/wire.c): exactly
 * the opcodes of IBTA/rxe are spoken (RC all, UC SEND and WRITE, UD
 * SEND_ONLY[_IMM]); every one survives build -> parse with every field;
 * every refusal of srdma_wire_parse() fires with its cause; the ICRC of
 * roce-wire.md §1.5.3 comes out of srdma_wire_icrc() from addresses alone
 * (ec d7 32 1d), however the packet is split into iovecs; the UDP source
 * port is rdma_get_udp_sport()'s and symmetric; the fast CRC agrees with
 * a bitwise one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "transport/net/wire.h"

/* The opcodes we must speak, and nothing else. */
static bool expected_opcode(unsigned int op)
{
	unsigned int o = op & 0x1f;

	switch (op & 0xe0) {
	case SRDMA_TR_RC:
		return o <= 0x14 || o == 0x16 || o == 0x17 || o == 0x1d;
	case SRDMA_TR_UC:
		return o <= 0x0b;
	case SRDMA_TR_UD:
		return o == 0x04 || o == 0x05;
	case SRDMA_TR_XRC:
		return o <= 0x14 || o == 0x16 || o == 0x17 || o == 0x1d;
	default:
		return false;
	}
}

static void test_opcode_table(void **state)
{
	unsigned int op;

	(void)state;
	for (op = 0; op < 256; op++) {
		uint32_t h = srdma_wire_hdrs((uint8_t)op);

		assert_int_equal(h != 0, expected_opcode(op));
		assert_int_equal(srdma_wire_hdr_len((uint8_t)op) != 0, h != 0);
		if (!h)
			continue;
		/* Every opcode has a position; ONLY is FIRST and LAST. */
		assert_true(h & (SRDMA_HDR_FIRST | SRDMA_HDR_MIDDLE |
				 SRDMA_HDR_LAST));
		assert_true(srdma_wire_hdr_len((uint8_t)op) <=
			    SRDMA_MAX_IB_HDR);
	}
	/* XRC: an XRCETH after the BTH of every request, none in
	 * responses (IBTA XRC annex; Wireshark's dissector agrees). */
	assert_int_equal(srdma_wire_hdr_len(0xa4), 12 + 4);
	assert_int_equal(srdma_wire_hdr_len(0xa1), 12 + 4);
	assert_int_equal(srdma_wire_hdr_len(0xab), 12 + 4 + 16 + 4);
	assert_int_equal(srdma_wire_hdr_len(0xac), 12 + 4 + 16);
	assert_int_equal(srdma_wire_hdr_len(0xb3), 12 + 4 + 28);
	assert_int_equal(srdma_wire_hdr_len(0xb1), 12 + 4);
	assert_int_equal(srdma_wire_hdr_len(0xae), 12);
	assert_int_equal(srdma_wire_hdr_len(0xb2), 12 + 4 + 8);
	/* A few layouts by size (roce-wire.md §1.4). */
	assert_int_equal(srdma_wire_hdr_len(0x04), 12);
	assert_int_equal(srdma_wire_hdr_len(0x0b), 12 + 16 + 4);
	assert_int_equal(srdma_wire_hdr_len(0x0c), 12 + 16);
	assert_int_equal(srdma_wire_hdr_len(0x11), 12 + 4);
	assert_int_equal(srdma_wire_hdr_len(0x12), 12 + 4 + 8);
	assert_int_equal(srdma_wire_hdr_len(0x13), 12 + 28);
	assert_int_equal(srdma_wire_hdr_len(0x17), 12 + 4);
	assert_int_equal(srdma_wire_hdr_len(0x64), 12 + 8);
	assert_int_equal(srdma_wire_hdr_len(0x65), 12 + 8 + 4);
	assert_int_equal(srdma_wire_hdrs(0x2c), 0); /* UC READ */
	assert_int_equal(srdma_wire_hdrs(0x31), 0); /* UC ACK */
	assert_int_equal(srdma_wire_hdrs(0x33), 0); /* UC CMP_SWAP */
	assert_int_equal(srdma_wire_hdrs(0x1c), 0); /* FLUSH */
	/* RC ATOMIC_WRITE: RETH and an 8-byte payload; not on UC. */
	assert_int_equal(srdma_wire_hdrs(0x1d), SRDMA_HDR_RETH |
				 srdma_wire_hdrs(0x0a)); /* as WRITE_ONLY */
	assert_int_equal(srdma_wire_hdr_len(0x1d), 12 + 16);
	assert_int_equal(srdma_wire_hdrs(0x3d), 0); /* UC ATOMIC_WRITE */
	assert_int_equal(srdma_wire_hdrs(0x81), 0); /* CNP */
	assert_int_equal(srdma_wire_hdrs(0x60), 0); /* UD SEND_FIRST */
	assert_true(srdma_wire_hdrs(0x64) & SRDMA_HDR_DETH);
	assert_true(srdma_wire_hdrs(0x65) & SRDMA_HDR_IMMDT);
}

/* Fill every field with distinct values that use all their bits. */
static void fill(struct srdma_pkt *p, uint8_t op, uint32_t paylen)
{
	memset(p, 0, sizeof(*p));
	p->opcode = op;
	p->se = true;
	p->migreq = true;
	p->pkey = 0xa5c3;
	p->dqpn = 0xfedcba;
	p->ackreq = true;
	p->psn = 0xabcdef;
	p->va = 0x0123456789abcdefull;
	p->rkey = 0xdeadbeef;
	p->dma_len = 0x80000001u;
	p->swap_add = 0x1122334455667788ull;
	p->compare = 0x99aabbccddeeff00ull;
	p->syndrome = 0x63;
	p->msn = 0x00ff01;
	p->orig = 0xcafebabe87654321ull;
	p->imm = 0x04030201u;
	p->inv_rkey = 0x13572468u;
	p->qkey = 0x80010000u;
	p->src_qp = 0x7a5a5a;
	p->xrc_srqn = 0x3c5a69;
	p->paylen = paylen;
}

static void test_round_trip_every_opcode(void **state)
{
	uint8_t buf[SRDMA_MAX_IB_HDR + 16 + 4];
	unsigned int op;

	(void)state;
	for (op = 0; op < 256; op++) {
		uint32_t h = srdma_wire_hdrs((uint8_t)op), paylen, maxp;

		if (!h)
			continue;
		maxp = h & SRDMA_HDR_PAYLOAD ? 9 : 0;
		for (paylen = 0; paylen <= maxp; paylen++) {
			struct srdma_pkt in, out;
			uint32_t hl, pad = srdma_wire_pad(paylen), i;
			size_t len;

			fill(&in, (uint8_t)op, paylen);
			memset(buf, 0xee, sizeof(buf));
			hl = srdma_wire_build(buf, &in);
			assert_int_equal(hl, srdma_wire_hdr_len((uint8_t)op));
			for (i = 0; i < paylen; i++)
				buf[hl + i] = (uint8_t)(i + 1);
			memset(buf + hl + paylen, 0, pad);
			len = hl + paylen + pad + SRDMA_ICRC_BYTES;
			assert_int_equal(len % 4, 0);

			assert_int_equal(srdma_wire_parse(buf, len, &out),
					 SRDMA_DROP_NONE);
			assert_int_equal(out.opcode, op);
			assert_true(out.se && out.migreq && out.ackreq);
			assert_int_equal(out.padcnt, pad);
			assert_int_equal(out.pkey, 0xa5c3);
			assert_int_equal(out.dqpn, 0xfedcba);
			assert_int_equal(out.psn, 0xabcdef);
			assert_int_equal(out.hdrs, h);
			assert_int_equal(out.hdr_len, hl);
			assert_int_equal(out.paylen, paylen);
			assert_ptr_equal(out.payload, buf + hl);
			if (h & (SRDMA_HDR_RETH | SRDMA_HDR_ATOMICETH)) {
				assert_true(out.va == in.va);
				assert_int_equal(out.rkey, in.rkey);
			} else {
				assert_true(out.va == 0);
			}
			if (h & SRDMA_HDR_RETH)
				assert_int_equal(out.dma_len, in.dma_len);
			if (h & SRDMA_HDR_ATOMICETH) {
				assert_true(out.swap_add == in.swap_add);
				assert_true(out.compare == in.compare);
			} else {
				assert_true(out.swap_add == 0);
			}
			if (h & SRDMA_HDR_AETH) {
				assert_int_equal(out.syndrome, 0x63);
				assert_int_equal(out.msn, 0x00ff01);
			}
			if (h & SRDMA_HDR_ATOMICACKETH)
				assert_true(out.orig == in.orig);
			if (h & SRDMA_HDR_IMMDT) {
				/* Opaque, network order, both ways. */
				assert_int_equal(out.imm, in.imm);
				assert_memory_equal(
					buf + hl - 4 -
						(h & SRDMA_HDR_IETH ? 4 : 0),
					&in.imm, 4);
			} else {
				assert_int_equal(out.imm, 0);
			}
			if (h & SRDMA_HDR_IETH)
				assert_int_equal(out.inv_rkey, in.inv_rkey);
			if (h & SRDMA_HDR_DETH) {
				assert_int_equal(out.qkey, in.qkey);
				assert_int_equal(out.src_qp, in.src_qp);
			} else {
				assert_int_equal(out.qkey, 0);
			}
			if (h & SRDMA_HDR_XRCETH) {
				/* Right after the BTH, its first byte zero. */
				assert_int_equal(out.xrc_srqn, in.xrc_srqn);
				assert_int_equal(buf[12], 0);
				assert_int_equal(buf[13], 0x3c);
				assert_int_equal(buf[15], 0x69);
			} else {
				assert_int_equal(out.xrc_srqn, 0);
			}
			/* BTH byte 4 and the reserved bits go out zero. */
			assert_int_equal(buf[4], 0);
			assert_int_equal(buf[8] & 0x7f, 0);
			assert_int_equal(buf[1] & 0x0f, 0);
		}
	}
	/* An unknown opcode builds nothing. */
	{
		struct srdma_pkt p;

		fill(&p, 0x2c, 0);
		assert_int_equal(srdma_wire_build(buf, &p), 0);
	}
}

/* A valid packet of @op with @paylen bytes of payload, in @buf; returns
 * its length including the ICRC trailer (zeros). */
static size_t make(uint8_t *buf, uint8_t op, uint32_t paylen)
{
	struct srdma_pkt p;
	uint32_t hl;
	size_t len;

	fill(&p, op, paylen);
	hl = srdma_wire_build(buf, &p);
	len = hl + paylen + srdma_wire_pad(paylen);
	memset(buf + hl, 0x5a, len - hl);
	memset(buf + len, 0, SRDMA_ICRC_BYTES);
	return len + SRDMA_ICRC_BYTES;
}

static void test_parse_refusals(void **state)
{
	static uint8_t buf[8192];
	struct srdma_pkt p;
	size_t len;
	unsigned int op;

	(void)state;
	/* Shorter than BTH + ICRC, whatever the opcode. */
	len = make(buf, 0x04, 0);
	for (size_t l = 0; l < 16; l++)
		assert_int_equal(srdma_wire_parse(buf, l, &p),
				 SRDMA_DROP_SHORT);
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_NONE);

	/* TVer: any non-zero value. */
	buf[1] |= 0x01;
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_TVER);
	buf[1] = (uint8_t)((buf[1] & 0xf0) | 0x08);
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_TVER);

	/* Every opcode we do not speak. */
	for (op = 0; op < 256; op++) {
		if (expected_opcode(op))
			continue;
		len = make(buf, 0x04, 8);
		buf[0] = (uint8_t)op;
		assert_int_equal(srdma_wire_parse(buf, len, &p),
				 SRDMA_DROP_OPCODE);
	}

	/* Shorter than the opcode's own headers (+ ICRC). */
	for (op = 0; op < 256; op++) {
		uint32_t hl = srdma_wire_hdr_len((uint8_t)op);

		if (!hl || hl == SRDMA_BTH_BYTES)
			continue;
		make(buf, (uint8_t)op, 0);
		for (len = 16; len < hl + 4; len += 4)
			assert_int_equal(srdma_wire_parse(buf, len, &p),
					 SRDMA_DROP_SHORT);
		assert_int_equal(srdma_wire_parse(buf, hl + 4, &p),
				 SRDMA_DROP_NONE);
	}

	/* Pad count on an opcode without payload. */
	len = make(buf, 0x11, 0); /* ACK */
	buf[1] |= 0x10;
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_PAD);
	len = make(buf, 0x0c, 0); /* READ request */
	buf[1] |= 0x30;
	assert_int_equal(srdma_wire_parse(buf, len + 4, &p), SRDMA_DROP_PAD);
	/* Payload on an opcode without payload. */
	len = make(buf, 0x11, 0);
	assert_int_equal(srdma_wire_parse(buf, len + 4, &p), SRDMA_DROP_LENGTH);
	len = make(buf, 0x13, 0); /* CMP_SWAP */
	assert_int_equal(srdma_wire_parse(buf, len + 8, &p), SRDMA_DROP_LENGTH);
	/* A pad with no payload to pad. */
	len = make(buf, 0x04, 0);
	buf[1] |= 0x30;
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_PAD);
	/* Payload + pad not a multiple of 4 (the pad count lies). */
	len = make(buf, 0x04, 5); /* pad 3 */
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_NONE);
	assert_int_equal(p.paylen, 5);
	buf[1] = (uint8_t)(buf[1] & ~0x30);
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_NONE);
	assert_int_equal(p.paylen, 8);
	assert_int_equal(srdma_wire_parse(buf, len - 1, &p), SRDMA_DROP_PAD);
	assert_int_equal(srdma_wire_parse(buf, len + 2, &p), SRDMA_DROP_PAD);
	/* Payload beyond the largest MTU; exactly 4096 is fine. */
	len = make(buf, 0x24, 4096); /* UC SEND_ONLY */
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_NONE);
	assert_int_equal(p.paylen, 4096);
	assert_int_equal(srdma_wire_parse(buf, len + 4, &p), SRDMA_DROP_LENGTH);
	len = make(buf, 0x64, 4093); /* UD, pad 3 */
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_NONE);
	assert_int_equal(p.paylen, 4093);
	len = make(buf, 0x64, 4097); /* one byte too many, pad 3 */
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_LENGTH);

	/* A refused parse leaves nothing half-filled behind. */
	len = make(buf, 0x0a, 0);
	buf[1] |= 0x02;
	assert_int_equal(srdma_wire_parse(buf, len, &p), SRDMA_DROP_TVER);
	assert_true(p.payload == NULL && p.va == 0 && p.rkey == 0);
}

/* The §1.5.3 packet: 198.18.0.1:0xc001 -> 198.18.0.2:4791, RC SEND_ONLY
 * to QPN 0x11, AckReq, PSN 1, payload "ABCD". */
static void v4path(struct srdma_wire_path *path)
{
	memset(path, 0, sizeof(*path));
	path->sip[10] = path->sip[11] = 0xff;
	path->sip[12] = 198;
	path->sip[13] = 18;
	path->sip[15] = 1;
	memcpy(path->dip, path->sip, 16);
	path->dip[15] = 2;
	path->sport = 0xc001;
	path->dport = SRDMA_ROCE_PORT;
}

/*
 * srdma_wire_icrc() keeps the CRC over the headers before the BTH per path
 * and length (a small per-thread cache): packets of several lengths on
 * paths that differ in one field each, interleaved and repeated, get the
 * ICRC computed from their own IP and UDP headers every time.
 */
static void test_icrc_header_cache(void **state)
{
	struct srdma_wire_path paths[6];
	static const size_t lens[] = { 12, 16, 20, 24, 36, 44, 1036 };
	uint8_t ib[1100], ip[40], udp[8];
	struct iovec iov;
	unsigned int round, i, j, k;

	(void)state;
	for (i = 0; i < sizeof(ib); i++)
		ib[i] = (uint8_t)(i * 7 + 3);
	for (i = 0; i < 6; i++)
		v4path(&paths[i]);
	paths[1].sip[15] = 2;			/* the other direction */
	paths[1].dip[15] = 1;
	paths[2].sport = SRDMA_ROCE_PORT;	/* another source port */
	paths[3].dport = 0xc002;		/* another destination port */
	paths[4].dip[14] = 1;			/* another address, same last byte */
	memset(paths[5].sip, 0, 16);		/* IPv6 */
	memset(paths[5].dip, 0, 16);
	paths[5].sip[0] = paths[5].dip[0] = 0xfd;
	paths[5].sip[15] = 1;
	paths[5].dip[15] = 2;
	for (round = 0; round < 3; round++)
		for (k = 0; k < 6 * 7; k++) {
			/* A different interleaving each round. */
			i = (k * (round + 1)) % 6;
			j = (k + round) % 7;
			iov.iov_base = ib;
			iov.iov_len = lens[j];
			srdma_wire_ip_udp(&paths[i], lens[j] + SRDMA_ICRC_BYTES,
					  ip, udp);
			assert_int_equal(srdma_wire_icrc(&paths[i], &iov, 1),
					 srdma_icrc(ip, udp, ib, lens[j]));
		}
}

static void test_icrc_vector_from_addresses(void **state)
{
	static const uint8_t want[4] = {0xec, 0xd7, 0x32, 0x1d};
	struct srdma_wire_path path;
	struct srdma_pkt p;
	uint8_t pkt[20], hdr[SRDMA_MAX_IB_HDR];
	struct iovec iov[3];
	uint32_t hl;
	size_t cut;

	(void)state;
	v4path(&path);
	memset(&p, 0, sizeof(p));
	p.opcode = SRDMA_TR_RC | SRDMA_OP_SEND_ONLY;
	p.pkey = SRDMA_DEFAULT_PKEY;
	p.dqpn = 0x11;
	p.ackreq = true;
	p.psn = 1;
	p.paylen = 4;
	hl = srdma_wire_build(hdr, &p);
	assert_int_equal(hl, 12);
	memcpy(pkt, hdr, hl);
	memcpy(pkt + hl, "ABCD", 4);

	/* Headers and payload in two iovecs, as a sender has them. */
	iov[0].iov_base = hdr;
	iov[0].iov_len = hl;
	iov[1].iov_base = (void *)"ABCD";
	iov[1].iov_len = 4;
	assert_int_equal(srdma_wire_icrc(&path, iov, 2), 0x1d32d7ecu);
	srdma_wire_put_icrc(pkt + 16, srdma_wire_icrc(&path, iov, 2));
	assert_memory_equal(pkt + 16, want, 4);

	/* Split anywhere, even inside the BTH: the same ICRC. */
	for (cut = 0; cut <= 16; cut++) {
		size_t cut2 = cut + (16 - cut) / 2;

		iov[0].iov_base = pkt;
		iov[0].iov_len = cut;
		iov[1].iov_base = pkt + cut;
		iov[1].iov_len = cut2 - cut;
		iov[2].iov_base = pkt + cut2;
		iov[2].iov_len = 16 - cut2;
		assert_int_equal(srdma_wire_icrc(&path, iov, 3), 0x1d32d7ecu);
	}

	/* The receiver's check, and what it catches. */
	assert_true(srdma_wire_icrc_check(&path, pkt, sizeof(pkt)));
	assert_false(srdma_wire_icrc_check(&path, pkt, 15));
	pkt[19] ^= 1;
	assert_false(srdma_wire_icrc_check(&path, pkt, sizeof(pkt)));
	pkt[19] ^= 1;
	pkt[13] ^= 0x20; /* payload */
	assert_false(srdma_wire_icrc_check(&path, pkt, sizeof(pkt)));
	pkt[13] ^= 0x20;
	pkt[4] = 0xc0; /* FECN/BECN on the way: masked */
	assert_true(srdma_wire_icrc_check(&path, pkt, sizeof(pkt)));
	path.sport++; /* covered */
	assert_false(srdma_wire_icrc_check(&path, pkt, sizeof(pkt)));
	path.sport--;
	path.sip[15] = 3; /* covered */
	assert_false(srdma_wire_icrc_check(&path, pkt, sizeof(pkt)));
}

static void test_icrc_ipv6(void **state)
{
	struct srdma_wire_path path;
	uint8_t ip[40], udp[8], pkt[24];
	struct srdma_pkt p;
	struct iovec iov;
	uint32_t icrc;

	(void)state;
	memset(&path, 0, sizeof(path));
	path.sip[0] = 0xfd; /* fd53:7264:6d61::1 -> ::2 */
	path.sip[1] = 0x53;
	path.sip[2] = 0x72;
	path.sip[3] = 0x64;
	path.sip[4] = 0x6d;
	path.sip[5] = 0x61;
	memcpy(path.dip, path.sip, 16);
	path.sip[15] = 1;
	path.dip[15] = 2;
	path.sport = 0xc123;
	path.dport = SRDMA_ROCE_PORT;
	assert_false(srdma_gid_is_v4(path.sip));

	memset(&p, 0, sizeof(p));
	p.opcode = SRDMA_TR_UD | SRDMA_OP_SEND_ONLY;
	p.pkey = SRDMA_DEFAULT_PKEY;
	p.dqpn = 0x22;
	p.psn = 7;
	p.qkey = 0x1234;
	p.src_qp = 0x33;
	p.paylen = 0;
	assert_int_equal(srdma_wire_build(pkt, &p), 20);

	/* The headers the kernel will send, then the ICRC over them. */
	assert_int_equal(srdma_wire_ip_udp(&path, 24, ip, udp), 40);
	assert_int_equal(ip[0], 0x60);
	assert_int_equal(ip[4] << 8 | ip[5], 8 + 24);
	assert_int_equal(ip[6], 17);
	assert_memory_equal(ip + 8, path.sip, 16);
	assert_memory_equal(ip + 24, path.dip, 16);
	assert_int_equal(udp[0] << 8 | udp[1], 0xc123);
	assert_int_equal(udp[2] << 8 | udp[3], 4791);
	assert_int_equal(udp[4] << 8 | udp[5], 8 + 24);
	icrc = srdma_icrc(ip, udp, pkt, 20);
	iov.iov_base = pkt;
	iov.iov_len = 20;
	assert_int_equal(srdma_wire_icrc(&path, &iov, 1), icrc);
	srdma_wire_put_icrc(pkt + 20, icrc);
	assert_true(srdma_wire_icrc_check(&path, pkt, sizeof(pkt)));
	path.dip[15] = 3;
	assert_false(srdma_wire_icrc_check(&path, pkt, sizeof(pkt)));
}

static void test_ipv4_header(void **state)
{
	struct srdma_wire_path path;
	uint8_t ip[40], udp[8];
	uint32_t sum = 0;
	int i;

	(void)state;
	v4path(&path);
	assert_true(srdma_gid_is_v4(path.sip));
	assert_int_equal(srdma_wire_ip_udp(&path, 20, ip, udp), 20);
	/* Exactly the §1.5.3 header, with a valid checksum. */
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(ip[2] << 8 | ip[3], 48);
	assert_int_equal(ip[4] | ip[5], 0);
	assert_int_equal(ip[6], 0x40);
	assert_int_equal(ip[8], 64);
	assert_int_equal(ip[9], 17);
	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	assert_int_equal(sum, 0xffff);
	assert_int_equal(udp[4] << 8 | udp[5], 28);
	assert_int_equal(udp[6] | udp[7], 0);
}

static void test_gid_is_v4(void **state)
{
	uint8_t g[16] = {0};

	(void)state;
	assert_false(srdma_gid_is_v4(g));
	g[10] = g[11] = 0xff;
	assert_true(srdma_gid_is_v4(g));
	g[0] = 0xfe; /* fe80::ffff:... is not mapped */
	assert_false(srdma_gid_is_v4(g));
	g[0] = 0;
	g[11] = 0xfe;
	assert_false(srdma_gid_is_v4(g));
}

/*
 * A peer that sends IPv4 with its own identification (rxe: hashed) and
 * maybe without DF: its ICRC covers what our socket never sees. Strict
 * refuses it, lenient finds the identification, corruption is refused.
 */
static uint32_t peer_icrc(const struct srdma_wire_path *path, uint16_t id,
			  bool df, uint8_t *pkt, size_t len)
{
	uint8_t ip[40], udp[8];

	srdma_wire_ip_udp(path, len + 4, ip, udp);
	ip[4] = (uint8_t)(id >> 8);
	ip[5] = (uint8_t)id;
	ip[6] = df ? 0x40 : 0;
	ip[8] = 57; /* TTL and TOS as a router left them: masked */
	ip[1] = 0x88;
	return srdma_icrc(ip, udp, pkt, len);
}

static void test_icrc_lenient_ipv4(void **state)
{
	static uint8_t pkt[4200];
	struct srdma_wire_path path;
	unsigned int seed = 99, i, trial;
	uint16_t id;
	bool df;

	(void)state;
	v4path(&path);
	for (trial = 0; trial < 300; trial++) {
		size_t len = 12 + (trial * 53) % 4100 / 4 * 4;
		uint16_t pid;
		bool pdf = trial % 3 != 0;
		uint32_t icrc;

		for (i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			pkt[i] = (uint8_t)(seed >> 16);
		}
		pkt[0] = 0x04;
		pkt[1] = 0;
		seed = seed * 1103515245u + 12345u;
		pid = (uint16_t)(seed >> 8);
		if (trial == 0)
			pid = 0; /* DF clear alone */
		icrc = peer_icrc(&path, pid, pdf, pkt, len);
		srdma_wire_put_icrc(pkt + len, icrc);
		if (pid == 0 && pdf) {
			assert_int_equal(
				srdma_wire_icrc_verify(&path, pkt, len + 4,
						       SRDMA_ICRC_STRICT),
				SRDMA_ICRC_OK);
			continue;
		}
		assert_false(srdma_wire_icrc_check(&path, pkt, len + 4));
		assert_int_equal(srdma_wire_icrc_verify(&path, pkt, len + 4,
							SRDMA_ICRC_STRICT),
				 SRDMA_ICRC_BAD);
		assert_int_equal(srdma_wire_icrc_verify(&path, pkt, len + 4,
							SRDMA_ICRC_LENIENT),
				 SRDMA_ICRC_OK_ID);
		assert_int_equal(srdma_wire_icrc_verify(&path, pkt, len + 4,
							SRDMA_ICRC_OFF),
				 SRDMA_ICRC_UNCHECKED);
		/* The identification and flag that explain it. */
		{
			struct iovec iov = {pkt, len};
			uint32_t want = srdma_wire_icrc(&path, &iov, 1);

			assert_true(srdma_icrc_ipv4_explain(
				icrc, want, 13 + 8 + len, &id, &df));
			assert_int_equal(id, pid);
			assert_int_equal(df, pdf);
		}
		/* One flipped bit anywhere covered (BTH byte 4 is not):
		 * refused. */
		seed = seed * 1103515245u + 12345u;
		i = (seed >> 8) % len;
		pkt[i == 4 ? 5 : i] ^= (uint8_t)(1u << (seed % 8));
		assert_int_equal(srdma_wire_icrc_verify(&path, pkt, len + 4,
							SRDMA_ICRC_LENIENT),
				 SRDMA_ICRC_BAD);
	}

	/* A tail longer than any datagram still works (2^17 and beyond). */
	{
		size_t big = 200000 + 3 * 4;
		uint8_t *h = calloc(1, big), ip[40], udp[8];
		uint32_t want, got;

		assert_non_null(h);
		h[0] = 0x04;
		h[big / 2] = 0x5a;
		srdma_wire_ip_udp(&path, big + 4, ip, udp);
		want = srdma_icrc(ip, udp, h, big);
		ip[4] = 0xbe;
		ip[5] = 0xef;
		got = srdma_icrc(ip, udp, h, big);
		assert_true(srdma_icrc_ipv4_explain(got, want, 13 + 8 + big,
						    &id, &df));
		assert_int_equal(id, 0xbeef);
		assert_true(df);
		free(h);
	}

	/* More Fragments or a fragment offset is no identification. */
	memset(pkt, 0x33, 32);
	pkt[0] = 0x04;
	pkt[1] = 0;
	{
		uint8_t ip[40], udp[8];

		srdma_wire_ip_udp(&path, 36, ip, udp);
		ip[6] = 0x60; /* DF + MF */
		srdma_wire_put_icrc(pkt + 32, srdma_icrc(ip, udp, pkt, 32));
		assert_int_equal(srdma_wire_icrc_verify(&path, pkt, 36,
							SRDMA_ICRC_LENIENT),
				 SRDMA_ICRC_BAD);
		ip[6] = 0x41; /* DF + offset */
		srdma_wire_put_icrc(pkt + 32, srdma_icrc(ip, udp, pkt, 32));
		assert_int_equal(srdma_wire_icrc_verify(&path, pkt, 36,
							SRDMA_ICRC_LENIENT),
				 SRDMA_ICRC_BAD);
	}
	/* Short: bad in every mode. */
	assert_int_equal(srdma_wire_icrc_verify(&path, pkt, 15, SRDMA_ICRC_OFF),
			 SRDMA_ICRC_BAD);
}

/*
 * UDP GSO: the kernel numbers a GSO send's segments 0, 1, 2, ..., so the
 * sender patches each segment's ICRC by srdma_wire_icrc_id_delta(). Held
 * to the ICRC computed directly over an IP header carrying that
 * identification; receivers accept such segments in both modes.
 */
/*
 * A flow's few lengths each keep their deltas: a ping-pong's request and
 * the ACK riding behind it, a message's first, middle and last packets.
 * These four lengths shared one slot of the old cache (len / 4 modulo
 * 4), and taking turns there refilled it on every call: 200 fills here.
 */
static void test_icrc_gso_cache_lengths(void **state)
{
	static const size_t lens[] = { 20, 36, 52, 68 };
	uint64_t before = srdma_wire_gso_fills();
	uint32_t first[4];
	unsigned int r, i;

	(void)state;
	for (r = 0; r < 50; r++)
		for (i = 0; i < 4; i++) {
			uint32_t d = srdma_wire_icrc_id_delta(lens[i], 1);

			if (!r)
				first[i] = d;
			assert_int_equal(d, first[i]);
		}
	assert_true(srdma_wire_gso_fills() - before <= 4);
}

static void test_icrc_gso_id_delta(void **state)
{
	static const uint16_t ids[] = { 0, 1, 2, 3, 7, 14, 15, 62, 63,
					64, 255, 4096, 0xffff };
	static uint8_t pkt[4200];
	struct srdma_wire_path path;
	unsigned int seed = 4791, i, k, trial;
	uint8_t ip[40], udp[8];
	uint16_t got_id;

	(void)state;
	v4path(&path);
	for (trial = 0; trial < 40; trial++) {
		/* BTH only, small, around the 1024 and 4096 path MTUs. */
		static const size_t lens[] = { 12, 16, 44, 1040, 1056, 4108,
					       4112, 4128 };
		size_t len = trial < 8 ? lens[trial] :
					 12 + (trial * 997) % 4100 / 4 * 4;
		struct iovec iov = { pkt, len };
		uint32_t base;

		for (i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			pkt[i] = (uint8_t)(seed >> 16);
		}
		pkt[0] = 0x07; /* RC WRITE MIDDLE */
		pkt[1] = 0;
		base = srdma_wire_icrc(&path, &iov, 1);
		assert_int_equal(srdma_wire_icrc_id_delta(len + 4, 0), 0);
		for (k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
			uint32_t want = peer_icrc(&path, ids[k], true, pkt, len);
			uint32_t patched = base ^ srdma_wire_icrc_id_delta(
							  len + 4, ids[k]);
			enum srdma_icrc_verdict v;

			assert_int_equal(patched, want);
			srdma_wire_put_icrc(pkt + len, patched);
			/* The receiver: ours up to the segment limit, in
			 * both modes; beyond it, lenient only. */
			v = srdma_wire_icrc_verify(&path, pkt, len + 4,
						   SRDMA_ICRC_STRICT);
			if (!ids[k])
				assert_int_equal(v, SRDMA_ICRC_OK);
			else if (ids[k] < SRDMA_WIRE_GSO_SEGS)
				assert_int_equal(v, SRDMA_ICRC_OK_GSO);
			else
				assert_int_equal(v, SRDMA_ICRC_BAD);
			v = srdma_wire_icrc_verify(&path, pkt, len + 4,
						   SRDMA_ICRC_LENIENT);
			assert_int_equal(v, !ids[k] ? SRDMA_ICRC_OK :
					    ids[k] < SRDMA_WIRE_GSO_SEGS ?
					    SRDMA_ICRC_OK_GSO : SRDMA_ICRC_OK_ID);
			/* The capture recovers the identification. */
			assert_true(srdma_wire_icrc_ipv4_id(&path, pkt, len + 4,
							    &got_id));
			assert_int_equal(got_id, ids[k]);
			/* DF clear is no GSO segment of ours. */
			srdma_wire_put_icrc(pkt + len,
					    peer_icrc(&path, ids[k], false, pkt,
						      len));
			assert_int_equal(srdma_wire_icrc_verify(
						 &path, pkt, len + 4,
						 SRDMA_ICRC_STRICT),
					 SRDMA_ICRC_BAD);
			assert_false(srdma_wire_icrc_ipv4_id(&path, pkt,
							     len + 4, &got_id));
		}
	}
	/* The header the capture writes for segment 5: id and checksum. */
	srdma_wire_ip_udp(&path, 1044, ip, udp);
	srdma_wire_ipv4_set_id(ip, 5);
	assert_int_equal(ip[4] << 8 | ip[5], 5);
	{
		uint32_t sum = 0;

		for (i = 0; i < 20; i += 2)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		assert_int_equal(sum, 0xffff);
	}
	/* IPv6: no identification to explain. */
	{
		struct srdma_wire_path p6;
		struct iovec iov = { pkt, 100 };

		memset(&p6, 0, sizeof(p6));
		p6.sip[0] = p6.dip[0] = 0xfd;
		p6.sip[15] = 1;
		p6.dip[15] = 2;
		p6.sport = p6.dport = 4791;
		srdma_wire_put_icrc(pkt + 100, srdma_wire_icrc(&p6, &iov, 1));
		assert_false(srdma_wire_icrc_ipv4_id(&p6, pkt, 104, &got_id));
	}
}

static void test_icrc_lenient_not_for_ipv6(void **state)
{
	struct srdma_wire_path path;
	uint8_t pkt[20] = {0x04, 0, 0xff, 0xff, 0,   0,	  0,   0x11,
			   0x80, 0, 0,	  1,	'A', 'B', 'C', 'D'};
	struct iovec iov = {pkt, 16};

	(void)state;
	memset(&path, 0, sizeof(path));
	path.sip[0] = path.dip[0] = 0xfd;
	path.sip[15] = 1;
	path.dip[15] = 2;
	path.sport = 0xc001;
	path.dport = 4791;
	srdma_wire_put_icrc(pkt + 16, srdma_wire_icrc(&path, &iov, 1));
	assert_int_equal(
		srdma_wire_icrc_verify(&path, pkt, 20, SRDMA_ICRC_LENIENT),
		SRDMA_ICRC_OK);
	pkt[19] ^= 0x10;
	assert_int_equal(
		srdma_wire_icrc_verify(&path, pkt, 20, SRDMA_ICRC_LENIENT),
		SRDMA_ICRC_BAD);
}

static void test_icrc_mode_env(void **state)
{
	(void)state;
	setenv("SRDMA_NET_ICRC", "strict", 1);
	assert_int_equal(srdma_wire_icrc_mode(), SRDMA_ICRC_STRICT);
	/* Read once. */
	setenv("SRDMA_NET_ICRC", "off", 1);
	assert_int_equal(srdma_wire_icrc_mode(), SRDMA_ICRC_STRICT);
	unsetenv("SRDMA_NET_ICRC");
}

/* rdma_get_udp_sport() worked by hand: include/rdma/ib_verbs.h. */
static uint16_t ref_sport(uint32_t fl, uint32_t l, uint32_t r)
{
	if (!fl) {
		uint64_t v = (uint64_t)l * r;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)v & 0xfffff;
	}
	return (uint16_t)(((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000);
}

static void test_udp_sport(void **state)
{
	uint32_t i;

	(void)state;
	/* 0x11 * 0x12 = 0x132: no folding. */
	assert_int_equal(srdma_wire_udp_sport(0, 0x11, 0x12), 0xc132);
	/* Large QPNs fold the product's high bits in. */
	assert_int_equal(srdma_wire_udp_sport(0, 0xabcde, 0x12345),
			 ref_sport(0, 0xabcde, 0x12345));
	/* A flow label is used as is: 0x4001 folds to 0x0001 ^ 0x01. */
	assert_int_equal(srdma_wire_udp_sport(0x4001, 1, 2), 0xc000);
	assert_int_equal(srdma_wire_udp_sport(0xfffff, 5, 6),
			 ref_sport(0xfffff, 5, 6));
	for (i = 0; i < 10000; i++) {
		uint32_t a = (i * 2654435761u) & 0xffffff;
		uint32_t b = (i * 40503u + 17) & 0xffffff;
		uint16_t s = srdma_wire_udp_sport(0, a, b);

		assert_int_equal(s, srdma_wire_udp_sport(0, b, a));
		assert_int_equal(s, ref_sport(0, a, b));
		assert_true(s >= 0xc000);
	}
}

static void test_drop_names(void **state)
{
	int d, e;

	(void)state;
	for (d = 0; d < SRDMA_DROP_MAX; d++) {
		const char *s = srdma_drop_str((enum srdma_drop)d);

		assert_non_null(s);
		assert_string_not_equal(s, "unknown");
		for (e = 0; e < d; e++)
			assert_string_not_equal(
				s, srdma_drop_str((enum srdma_drop)e));
	}
	assert_string_equal(srdma_drop_str(SRDMA_DROP_MAX), "unknown");
	assert_string_equal(srdma_drop_str(SRDMA_DROP_ICRC), "icrc");
}

/* The fast CRC (folding or tables) against a bitwise one, over odd
 * lengths and alignments. */
static uint32_t bitwise_crc(uint32_t crc, const uint8_t *p, size_t n)
{
	int k;

	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
	}
	return ~crc;
}

static void test_crc_fast_matches_bitwise(void **state)
{
	static uint8_t data[4200];
	size_t off, len;
	unsigned int seed = 12345;

	(void)state;
	for (len = 0; len < sizeof(data); len++) {
		seed = seed * 1103515245u + 12345u;
		data[len] = (uint8_t)(seed >> 16);
	}
	for (off = 0; off < 9; off++)
		for (len = 0; len < 70; len++)
			assert_int_equal(srdma_crc32(0, data + off, len),
					 bitwise_crc(0, data + off, len));
	/* Lengths where the 16-byte folding (x86-64) takes over, with a
	 * tail, from a running CRC. */
	for (off = 0; off < 17; off += 3)
		for (len = 60; len < 340; len += 7)
			assert_int_equal(
				srdma_crc32(0xdeadbeef, data + off, len),
				bitwise_crc(0xdeadbeef, data + off, len));
	assert_int_equal(srdma_crc32(0, data + 3, 4190),
			 bitwise_crc(0, data + 3, 4190));
	assert_int_equal(srdma_crc32(0x12345678, data + 1, 4096),
			 bitwise_crc(0x12345678, data + 1, 4096));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opcode_table),
		cmocka_unit_test(test_round_trip_every_opcode),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_icrc_vector_from_addresses),
		cmocka_unit_test(test_icrc_header_cache),
		cmocka_unit_test(test_icrc_ipv6),
		cmocka_unit_test(test_ipv4_header),
		cmocka_unit_test(test_icrc_lenient_ipv4),
		cmocka_unit_test(test_icrc_gso_id_delta),
		cmocka_unit_test(test_icrc_gso_cache_lengths),
		cmocka_unit_test(test_icrc_lenient_not_for_ipv6),
		cmocka_unit_test(test_icrc_mode_env),
		cmocka_unit_test(test_gid_is_v4),
		cmocka_unit_test(test_udp_sport),
		cmocka_unit_test(test_drop_names),
		cmocka_unit_test(test_crc_fast_matches_bitwise),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
