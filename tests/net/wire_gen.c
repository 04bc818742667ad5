// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * wire_gen.c - valid RoCEv2 packets of every opcode we speak, built with
 * the real codec (wire.c) and ICRC, for the checkers that do not trust it:
 *
 *   wire_gen pcap FILE     a capture (pcap.c) with every opcode, payload
 *                          sizes 0..MTU with each pad count, IPv4 and IPv6,
 *                          for tests/net/check_pcap.py (tshark + scapy)
 *   wire_gen corpus DIR [CTL]
 *                          one file per opcode: the UDP payload (BTH to
 *                          ICRC) for the IPv4 path the fuzz target checks
 *                          ICRCs against, the seed corpus of
 *                          tests/fuzz/fuzz_wire.c; with CTL, behind that
 *                          control byte (tests/fuzz/fuzz_resp.c)
 *   wire_gen verify FILE   the receiver's ICRC verdicts (wire.c) on every
 *                          UDP/4791 datagram of a pcap file written by
 *                          someone else (scapy, with IP identifications
 *                          of its choosing): prints how many pass strict
 *                          and lenient, and exits 1 if any is bad in
 *                          lenient mode
 *
 * Header fields get plausible values a real peer would send (AETH ACK or
 * NAK syndromes, 8-byte aligned atomic VAs, GSI Q_Key on UD), so the
 * dissector has nothing to flag.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/net/pcap.h"
#include "transport/net/wire.h"

/* The fuzz target's path (tests/fuzz/fuzz_wire.c): 198.18.0.1:0xc001 ->
 * 198.18.0.2:4791. */
static void fuzz_path(struct srdma_wire_path *p)
{
	memset(p, 0, sizeof(*p));
	p->sip[10] = p->sip[11] = 0xff;
	p->sip[12] = 198;
	p->sip[13] = 18;
	p->sip[15] = 1;
	memcpy(p->dip, p->sip, 16);
	p->dip[15] = 2;
	p->sport = 0xc001;
	p->dport = SRDMA_ROCE_PORT;
}

static void v6path(struct srdma_wire_path *p)
{
	static const uint8_t pfx[6] = {0xfd, 0x53, 0x72, 0x64, 0x6d, 0x61};

	memset(p, 0, sizeof(*p));
	memcpy(p->sip, pfx, sizeof(pfx));
	memcpy(p->dip, pfx, sizeof(pfx));
	p->sip[15] = 1;
	p->dip[15] = 2;
	p->sport = srdma_wire_udp_sport(0, 0x11, 0x22);
	p->dport = SRDMA_ROCE_PORT;
}

/* Build packet @op with @paylen bytes (pattern) into @buf, ICRC for @path
 * included. Return: its length, 0 for an opcode we do not speak. */
static size_t gen_packet(uint8_t *buf, uint8_t op, uint32_t paylen,
			 uint32_t psn, const struct srdma_wire_path *path)
{
	uint32_t h = srdma_wire_hdrs(op), hl, pad, i;
	struct srdma_pkt p;
	struct iovec iov;

	if (!h)
		return 0;
	if (!(h & SRDMA_HDR_PAYLOAD))
		paylen = 0;
	memset(&p, 0, sizeof(p));
	p.opcode = op;
	p.pkey = SRDMA_DEFAULT_PKEY;
	p.dqpn = (op & SRDMA_TR_MASK) == SRDMA_TR_UD ? 0x000101 : 0x000011;
	p.psn = psn & 0xffffff;
	p.ackreq = (op & SRDMA_TR_MASK) == SRDMA_TR_RC &&
		   (h & SRDMA_HDR_LAST) && !(h & SRDMA_HDR_AETH);
	p.se = (h & SRDMA_HDR_IMMDT) != 0;
	p.va = 0x00007f0000001000ull + (uint64_t)psn * 8;
	p.rkey = 0x00012345;
	p.dma_len = paylen;
	p.swap_add = 0x0102030405060708ull;
	p.compare = 0x1112131415161718ull;
	/* ACKs: plain ACK, an RNR NAK and each NAK code, by PSN. */
	switch (op & ~SRDMA_TR_MASK) {
	case SRDMA_OP_ACK:
		p.syndrome = (uint8_t)(psn % 3 == 0   ? SRDMA_AETH_ACK
				       : psn % 3 == 1 ? SRDMA_AETH_RNR(12)
						      : SRDMA_AETH_NAK_PSN +
								(psn / 3) % 4);
		break;
	default:
		p.syndrome = SRDMA_AETH_ACK;
	}
	p.msn = psn & 0xffffff;
	p.orig = 0x2122232425262728ull;
	p.imm = 0x78563412u;
	p.inv_rkey = 0x00054321;
	p.qkey = 0x11111111u;
	p.src_qp = 0x000202;
	p.paylen = paylen;
	hl = srdma_wire_build(buf, &p);
	for (i = 0; i < paylen; i++)
		buf[hl + i] = (uint8_t)('a' + (i + psn) % 26);
	pad = srdma_wire_pad(paylen);
	memset(buf + hl + paylen, 0, pad);
	iov.iov_base = buf;
	iov.iov_len = hl + paylen + pad;
	srdma_wire_put_icrc(buf + iov.iov_len, srdma_wire_icrc(path, &iov, 1));
	return iov.iov_len + SRDMA_ICRC_BYTES;
}

static int gen_pcap(const char *file)
{
	static const uint32_t sizes[] = {0, 1,	2,    3,    4,
					 5, 64, 1023, 1024, 4096};
	struct srdma_wire_path path[2];
	static uint8_t buf[SRDMA_MAX_IB_HDR + 4096 + 8];
	struct srdma_pcap *pc;
	unsigned int op, v, s;
	uint32_t psn = 0, n = 0;

	unlink(file);
	pc = srdma_pcap_open(file);
	if (!pc) {
		perror(file);
		return 1;
	}
	fuzz_path(&path[0]);
	v6path(&path[1]);
	for (v = 0; v < 2; v++)
		for (op = 0; op < 256; op++) {
			uint32_t h = srdma_wire_hdrs((uint8_t)op);

			if (!h)
				continue;
			for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				struct iovec iov;

				/* Middle packets are exactly one MTU; only
				 * payload opcodes vary their size; ACKs go
				 * through every syndrome. */
				if (h & SRDMA_HDR_MIDDLE && sizes[s] != 1024 &&
				    sizes[s] != 4096)
					continue;
				if (!(h & SRDMA_HDR_PAYLOAD) && s > 0 &&
				    (op & 0x1f) != SRDMA_OP_ACK)
					continue;
				iov.iov_base = buf;
				iov.iov_len =
					gen_packet(buf, (uint8_t)op, sizes[s],
						   psn++, &path[v]);
				srdma_pcap_write(pc, &path[v], &iov, 1);
				n++;
			}
		}
	if (atomic_load(&pc->errors)) {
		fprintf(stderr, "%s: write errors\n", file);
		return 1;
	}
	srdma_pcap_close(pc);
	printf("wire_gen: %u packets in %s\n", n, file);
	return 0;
}

static int gen_corpus(const char *dir, int ctl)
{
	struct srdma_wire_path path;
	uint8_t buf[SRDMA_MAX_IB_HDR + 64];
	unsigned int op, n = 0;

	fuzz_path(&path);
	mkdir(dir, 0755);
	for (op = 0; op < 256; op++) {
		char name[4200];
		size_t len;
		FILE *f;

		len = gen_packet(buf, (uint8_t)op, 13, op, &path);
		if (!len)
			continue;
		snprintf(name, sizeof(name), "%s/op-%02x", dir, op);
		f = fopen(name, "wb");
		if (f && ctl >= 0 && fputc(ctl, f) == EOF) {
			fclose(f);
			f = NULL;
		}
		if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
			perror(name);
			return 1;
		}
		n++;
	}
	printf("wire_gen: %u seeds in %s\n", n, dir);
	return 0;
}

/* Read a whole file; NULL on error (reported). */
static uint8_t *slurp(const char *file, size_t *len)
{
	FILE *f = fopen(file, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(b = malloc((size_t)n + 1)) ||
	    fread(b, 1, (size_t)n, f) != (size_t)n) {
		perror(file);
		free(b);
		if (f)
			fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int verify(const char *file)
{
	unsigned int n = 0, strict = 0, other = 0, bad = 0;
	size_t len, off = 24;
	uint8_t *b = slurp(file, &len);

	if (!b)
		return 1;
	while (off + 16 <= len) {
		uint32_t incl;
		const uint8_t *f, *ip, *udp;
		struct srdma_wire_path path;
		size_t iplen, flen;

		memcpy(&incl, b + off + 8, 4);
		f = b + off + 16;
		off += 16 + incl;
		if (off > len || incl < 14 + 20 + 8)
			break;
		flen = incl;
		ip = f + 14;
		memset(&path, 0, sizeof(path));
		if (f[12] == 0x08 && f[13] == 0x00) {
			iplen = (size_t)(ip[0] & 0x0f) * 4;
			path.sip[10] = path.sip[11] = 0xff;
			path.dip[10] = path.dip[11] = 0xff;
			memcpy(path.sip + 12, ip + 12, 4);
			memcpy(path.dip + 12, ip + 16, 4);
		} else if (f[12] == 0x86 && f[13] == 0xdd) {
			iplen = 40;
			memcpy(path.sip, ip + 8, 16);
			memcpy(path.dip, ip + 24, 16);
		} else {
			continue;
		}
		if (14 + iplen + 8 > flen)
			continue;
		udp = ip + iplen;
		path.sport = (uint16_t)(udp[0] << 8 | udp[1]);
		path.dport = (uint16_t)(udp[2] << 8 | udp[3]);
		if (path.dport != SRDMA_ROCE_PORT)
			continue;
		n++;
		switch (srdma_wire_icrc_verify(&path, udp + 8,
					       flen - 14 - iplen - 8,
					       SRDMA_ICRC_LENIENT)) {
		case SRDMA_ICRC_OK:
			strict++;
			break;
		case SRDMA_ICRC_OK_ID:
		case SRDMA_ICRC_OK_GSO: /* an identification below 64 */
			other++;
			break;
		default:
			bad++;
		}
	}
	free(b);
	printf("wire_gen verify: %u packets: %u ok as softrdma sends (strict), "
	       "%u ok with another IPv4 identification/DF (lenient), %u bad\n",
	       n, strict, other, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "pcap"))
		return gen_pcap(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "corpus"))
		return gen_corpus(argv[2], -1);
	if (argc == 3 && !strcmp(argv[1], "verify"))
		return verify(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "corpus"))
		return gen_corpus(argv[2],
				  (int)strtol(argv[3], NULL, 0) & 0xff);
	fprintf(stderr,
		"usage: %s pcap FILE | corpus DIR [CTL] | verify FILE\n",
		argv[0]);
	return 2;
}
