// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * wire.c - the RoCEv2 header codec (wire.h): which extended headers each
 * opcode carries, bytes to struct srdma_pkt and back, and the ICRC of a
 * datagram computed from its addresses rather than from captured IP and
 * UDP headers (a UDP socket never shows us those).
 *
 * The opcode table is the whole protocol knowledge of this file. It holds
 * the operations each transport has in the IBTA tables as rxe implements
 * them: RC all of SEND, WRITE, READ, ACK and the two atomics (plus SEND
 * with invalidate); UC only SEND and WRITE (no READ, atomics or
 * acknowledgements; no invalidate either, as in rxe and the IBTA table);
 * UD only SEND_ONLY and SEND_ONLY with immediate. Extended headers follow
 * the BTH in one fixed order, DETH, RETH, AtomicETH, AETH, AtomicAckETH,
 * ImmDt, IETH, which agrees with every opcode's layout in the IBTA (UD:
 * DETH before ImmDt; WRITE_ONLY_IMM: RETH before ImmDt; ATOMIC_ACK: AETH
 * before AtomicAckETH), so the table only says which are present.
 *
 * Parsing checks every length before reading a field and reads nothing
 * past @len; it is the first code that sees hostile input and is the
 * fuzz target's subject (tests/fuzz/fuzz_wire.c).
 *
 * The receiver's ICRC verdict (srdma_wire_icrc_verify) also lives here,
 * with SRDMA_NET_ICRC: lenient (default) accepts an IPv4 trailer that is
 * right for some IP identification and DF flag, as peers other than
 * softrdma pick their own (icrc.c srdma_icrc_ipv4_explain); strict only
 * DF with identification 0, or 1..63 (the segments of our own UDP GSO
 * sends, whose ICRCs srdma_wire_icrc_id_delta patches); off checks
 * nothing.
 *
 * Pure functions over immutable tables (the mode is read once) and a
 * per-thread cache of UDP GSO identification deltas (no lock): callable
 * from any thread.
 */
#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "transport/net/wire.h"
#include "util/log.h"

/* The longest payload any path MTU allows (IBV_MTU_4096). */
#define MAX_PAYLOAD 4096

#define P SRDMA_HDR_PAYLOAD
#define F SRDMA_HDR_FIRST
#define M SRDMA_HDR_MIDDLE
#define L SRDMA_HDR_LAST
#define O SRDMA_HDR_ONLY

/* Headers of each operation (bits 4:0) on RC; UC and UD take subsets. */
static const uint32_t rc_ops[32] = {
	[SRDMA_OP_SEND_FIRST] = P | F,
	[SRDMA_OP_SEND_MIDDLE] = P | M,
	[SRDMA_OP_SEND_LAST] = P | L,
	[SRDMA_OP_SEND_LAST_IMM] = SRDMA_HDR_IMMDT | P | L,
	[SRDMA_OP_SEND_ONLY] = P | O,
	[SRDMA_OP_SEND_ONLY_IMM] = SRDMA_HDR_IMMDT | P | O,
	[SRDMA_OP_WRITE_FIRST] = SRDMA_HDR_RETH | P | F,
	[SRDMA_OP_WRITE_MIDDLE] = P | M,
	[SRDMA_OP_WRITE_LAST] = P | L,
	[SRDMA_OP_WRITE_LAST_IMM] = SRDMA_HDR_IMMDT | P | L,
	[SRDMA_OP_WRITE_ONLY] = SRDMA_HDR_RETH | P | O,
	[SRDMA_OP_WRITE_ONLY_IMM] = SRDMA_HDR_RETH | SRDMA_HDR_IMMDT | P | O,
	[SRDMA_OP_READ_REQ] = SRDMA_HDR_RETH | O,
	[SRDMA_OP_READ_RESP_FIRST] = SRDMA_HDR_AETH | P | F,
	[SRDMA_OP_READ_RESP_MIDDLE] = P | M,
	[SRDMA_OP_READ_RESP_LAST] = SRDMA_HDR_AETH | P | L,
	[SRDMA_OP_READ_RESP_ONLY] = SRDMA_HDR_AETH | P | O,
	[SRDMA_OP_ACK] = SRDMA_HDR_AETH | O,
	[SRDMA_OP_ATOMIC_ACK] = SRDMA_HDR_AETH | SRDMA_HDR_ATOMICACKETH | O,
	[SRDMA_OP_CMP_SWAP] = SRDMA_HDR_ATOMICETH | O,
	[SRDMA_OP_FETCH_ADD] = SRDMA_HDR_ATOMICETH | O,
	[SRDMA_OP_SEND_LAST_INV] = SRDMA_HDR_IETH | P | L,
	[SRDMA_OP_SEND_ONLY_INV] = SRDMA_HDR_IETH | P | O,
	[SRDMA_OP_ATOMIC_WRITE] = SRDMA_HDR_RETH | P | O,
};

#undef P
#undef F
#undef M
#undef L
#undef O

uint32_t srdma_wire_hdrs(uint8_t opcode)
{
	uint8_t op = opcode & ~SRDMA_TR_MASK;

	switch (opcode & SRDMA_TR_MASK) {
	case SRDMA_TR_RC:
		return rc_ops[op];
	case SRDMA_TR_UC:
		return op <= SRDMA_OP_WRITE_ONLY_IMM ? rc_ops[op] : 0;
	case SRDMA_TR_UD:
		if (op == SRDMA_OP_SEND_ONLY || op == SRDMA_OP_SEND_ONLY_IMM)
			return rc_ops[op] | SRDMA_HDR_DETH;
		return 0;
	case SRDMA_TR_XRC:
		/* Responses (READ responses, ACKs) are RC's; requests name
		 * the XRC SRQ in an XRCETH. */
		if (!rc_ops[op])
			return 0;
		if (op >= SRDMA_OP_READ_RESP_FIRST &&
		    op <= SRDMA_OP_ATOMIC_ACK)
			return rc_ops[op];
		return rc_ops[op] | SRDMA_HDR_XRCETH;
	default:
		return 0; /* RD, CNP, reserved, vendor */
	}
}

/* Bytes of the extended headers in @hdrs. */
static uint32_t ext_len(uint32_t hdrs)
{
	uint32_t n = 0;

	if (hdrs & SRDMA_HDR_XRCETH)
		n += SRDMA_XRCETH_BYTES;
	if (hdrs & SRDMA_HDR_DETH)
		n += SRDMA_DETH_BYTES;
	if (hdrs & SRDMA_HDR_RETH)
		n += SRDMA_RETH_BYTES;
	if (hdrs & SRDMA_HDR_ATOMICETH)
		n += SRDMA_ATOMICETH_BYTES;
	if (hdrs & SRDMA_HDR_AETH)
		n += SRDMA_AETH_BYTES;
	if (hdrs & SRDMA_HDR_ATOMICACKETH)
		n += SRDMA_ATOMICACKETH_BYTES;
	if (hdrs & SRDMA_HDR_IMMDT)
		n += SRDMA_IMMDT_BYTES;
	if (hdrs & SRDMA_HDR_IETH)
		n += SRDMA_IETH_BYTES;
	return n;
}

uint32_t srdma_wire_hdr_len(uint8_t opcode)
{
	uint32_t hdrs = srdma_wire_hdrs(opcode);

	return hdrs ? SRDMA_BTH_BYTES + ext_len(hdrs) : 0;
}

static const char *const drop_names[SRDMA_DROP_MAX] = {
	[SRDMA_DROP_NONE] = "none",
	[SRDMA_DROP_SHORT] = "short",
	[SRDMA_DROP_OPCODE] = "opcode",
	[SRDMA_DROP_TVER] = "tver",
	[SRDMA_DROP_PAD] = "pad",
	[SRDMA_DROP_LENGTH] = "length",
	[SRDMA_DROP_ICRC] = "icrc",
	[SRDMA_DROP_QPN] = "qpn",
	[SRDMA_DROP_PKEY] = "pkey",
	[SRDMA_DROP_QKEY] = "qkey",
	[SRDMA_DROP_SOURCE] = "source",
	[SRDMA_DROP_STATE] = "state",
	[SRDMA_DROP_TRANSPORT] = "transport",
	[SRDMA_DROP_PSN] = "psn",
	[SRDMA_DROP_DUP] = "dup",
	[SRDMA_DROP_RNR] = "rnr",
	[SRDMA_DROP_ADDR] = "addr",
	[SRDMA_DROP_FAULT] = "fault",
	[SRDMA_DROP_OTHER] = "other",
};

const char *srdma_drop_str(enum srdma_drop d)
{
	if ((unsigned int)d >= SRDMA_DROP_MAX || !drop_names[d])
		return "unknown";
	return drop_names[d];
}

/* ---- big-endian field access (no alignment assumed) ------------------ */

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

/* ---- parse ----------------------------------------------------------- */

/* Decode the extended headers of @pkt->hdrs that start at @p. */
static void parse_ext(const uint8_t *p, struct srdma_pkt *pkt)
{
	uint32_t h = pkt->hdrs;

	if (h & SRDMA_HDR_XRCETH) {
		pkt->xrc_srqn = get24(p + 1);
		p += SRDMA_XRCETH_BYTES;
	}
	if (h & SRDMA_HDR_DETH) {
		pkt->qkey = get32(p);
		pkt->src_qp = get24(p + 5);
		p += SRDMA_DETH_BYTES;
	}
	if (h & SRDMA_HDR_RETH) {
		pkt->va = get64(p);
		pkt->rkey = get32(p + 8);
		pkt->dma_len = get32(p + 12);
		p += SRDMA_RETH_BYTES;
	}
	if (h & SRDMA_HDR_ATOMICETH) {
		pkt->va = get64(p);
		pkt->rkey = get32(p + 8);
		pkt->swap_add = get64(p + 12);
		pkt->compare = get64(p + 20);
		p += SRDMA_ATOMICETH_BYTES;
	}
	if (h & SRDMA_HDR_AETH) {
		pkt->syndrome = p[0];
		pkt->msn = get24(p + 1);
		p += SRDMA_AETH_BYTES;
	}
	if (h & SRDMA_HDR_ATOMICACKETH) {
		pkt->orig = get64(p);
		p += SRDMA_ATOMICACKETH_BYTES;
	}
	if (h & SRDMA_HDR_IMMDT) {
		memcpy(&pkt->imm, p, sizeof(pkt->imm)); /* network order */
		p += SRDMA_IMMDT_BYTES;
	}
	if (h & SRDMA_HDR_IETH)
		pkt->inv_rkey = get32(p);
}

enum srdma_drop srdma_wire_parse(const uint8_t *buf, size_t len,
				 struct srdma_pkt *pkt)
{
	uint32_t hdrs, hlen;
	size_t rest;

	memset(pkt, 0, sizeof(*pkt));
	if (len < SRDMA_BTH_BYTES + SRDMA_ICRC_BYTES)
		return SRDMA_DROP_SHORT;
	if (buf[1] & 0x0f)
		return SRDMA_DROP_TVER;
	hdrs = srdma_wire_hdrs(buf[0]);
	if (!hdrs)
		return SRDMA_DROP_OPCODE;
	hlen = SRDMA_BTH_BYTES + ext_len(hdrs);
	if (len < (size_t)hlen + SRDMA_ICRC_BYTES)
		return SRDMA_DROP_SHORT;

	pkt->opcode = buf[0];
	pkt->se = buf[1] & 0x80;
	pkt->migreq = buf[1] & 0x40;
	pkt->padcnt = (buf[1] >> 4) & 3;
	pkt->pkey = (uint16_t)(buf[2] << 8 | buf[3]);
	pkt->dqpn = get24(buf + 5);
	pkt->ackreq = buf[8] & 0x80;
	pkt->psn = get24(buf + 9);
	pkt->hdrs = hdrs;
	pkt->hdr_len = hlen;

	/* What follows the headers: payload, pad, ICRC. */
	rest = len - hlen - SRDMA_ICRC_BYTES;
	if (!(hdrs & SRDMA_HDR_PAYLOAD)) {
		if (pkt->padcnt)
			return SRDMA_DROP_PAD;
		if (rest)
			return SRDMA_DROP_LENGTH;
	} else {
		/* The pad rounds the payload up to 4 bytes: it needs a
		 * payload, and payload + pad is a multiple of 4. */
		if (rest < pkt->padcnt)
			return SRDMA_DROP_PAD;
		if (rest & 3)
			return SRDMA_DROP_PAD;
		if (rest - pkt->padcnt > MAX_PAYLOAD)
			return SRDMA_DROP_LENGTH;
	}
	parse_ext(buf + SRDMA_BTH_BYTES, pkt);
	pkt->payload = buf + hlen;
	pkt->paylen = (uint32_t)(rest - pkt->padcnt);
	return SRDMA_DROP_NONE;
}

/* ---- build ----------------------------------------------------------- */

uint32_t srdma_wire_build(uint8_t *buf, const struct srdma_pkt *pkt)
{
	uint32_t h = srdma_wire_hdrs(pkt->opcode);
	uint8_t *p = buf + SRDMA_BTH_BYTES;

	if (!h)
		return 0;
	buf[0] = pkt->opcode;
	buf[1] = (uint8_t)((pkt->se ? 0x80 : 0) | (pkt->migreq ? 0x40 : 0) |
			   srdma_wire_pad(pkt->paylen) << 4);
	buf[2] = (uint8_t)(pkt->pkey >> 8);
	buf[3] = (uint8_t)pkt->pkey;
	buf[4] = 0; /* FECN, BECN, reserved */
	put24(buf + 5, pkt->dqpn);
	buf[8] = pkt->ackreq ? 0x80 : 0;
	put24(buf + 9, pkt->psn);

	if (h & SRDMA_HDR_XRCETH) {
		p[0] = 0;
		put24(p + 1, pkt->xrc_srqn);
		p += SRDMA_XRCETH_BYTES;
	}
	if (h & SRDMA_HDR_DETH) {
		put32(p, pkt->qkey);
		p[4] = 0;
		put24(p + 5, pkt->src_qp);
		p += SRDMA_DETH_BYTES;
	}
	if (h & SRDMA_HDR_RETH) {
		put64(p, pkt->va);
		put32(p + 8, pkt->rkey);
		put32(p + 12, pkt->dma_len);
		p += SRDMA_RETH_BYTES;
	}
	if (h & SRDMA_HDR_ATOMICETH) {
		put64(p, pkt->va);
		put32(p + 8, pkt->rkey);
		put64(p + 12, pkt->swap_add);
		put64(p + 20, pkt->compare);
		p += SRDMA_ATOMICETH_BYTES;
	}
	if (h & SRDMA_HDR_AETH) {
		p[0] = pkt->syndrome;
		put24(p + 1, pkt->msn);
		p += SRDMA_AETH_BYTES;
	}
	if (h & SRDMA_HDR_ATOMICACKETH) {
		put64(p, pkt->orig);
		p += SRDMA_ATOMICACKETH_BYTES;
	}
	if (h & SRDMA_HDR_IMMDT) {
		memcpy(p, &pkt->imm, sizeof(pkt->imm));
		p += SRDMA_IMMDT_BYTES;
	}
	if (h & SRDMA_HDR_IETH) {
		put32(p, pkt->inv_rkey);
		p += SRDMA_IETH_BYTES;
	}
	return (uint32_t)(p - buf);
}

/* ---- addresses and the ICRC ------------------------------------------ */

bool srdma_gid_is_v4(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(gid, prefix, sizeof(prefix));
}

/* Fields the ICRC masks get the kernel's values too, for pcap records. */
size_t srdma_wire_ip_udp(const struct srdma_wire_path *path, size_t ib_len,
			 uint8_t ip[SRDMA_IPV6_HDR_BYTES],
			 uint8_t udp[SRDMA_UDP_HDR_BYTES])
{
	uint32_t ulen = (uint32_t)(SRDMA_UDP_HDR_BYTES + ib_len);
	size_t iplen;

	udp[0] = (uint8_t)(path->sport >> 8);
	udp[1] = (uint8_t)path->sport;
	udp[2] = (uint8_t)(path->dport >> 8);
	udp[3] = (uint8_t)path->dport;
	udp[4] = (uint8_t)(ulen >> 8);
	udp[5] = (uint8_t)ulen;
	udp[6] = udp[7] = 0;

	if (srdma_gid_is_v4(path->sip)) {
		uint32_t tot = SRDMA_IPV4_HDR_BYTES + ulen, sum = 0;
		int i;

		iplen = SRDMA_IPV4_HDR_BYTES;
		ip[0] = 0x45;
		ip[1] = 0; /* TOS */
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[4] = ip[5] = 0; /* identification */
		ip[6] = 0x40;	   /* DF */
		ip[7] = 0;
		ip[8] = 64; /* TTL */
		ip[9] = 17; /* UDP */
		ip[10] = ip[11] = 0;
		memcpy(ip + 12, path->sip + 12, 4);
		memcpy(ip + 16, path->dip + 12, 4);
		for (i = 0; i < SRDMA_IPV4_HDR_BYTES; i += 2)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		sum = ~sum & 0xffff;
		ip[10] = (uint8_t)(sum >> 8);
		ip[11] = (uint8_t)sum;
	} else {
		iplen = SRDMA_IPV6_HDR_BYTES;
		ip[0] = 0x60;
		ip[1] = ip[2] = ip[3] = 0;    /* traffic class, flow label */
		ip[4] = (uint8_t)(ulen >> 8); /* payload length */
		ip[5] = (uint8_t)ulen;
		ip[6] = 17; /* next header: UDP */
		ip[7] = 64; /* hop limit */
		memcpy(ip + 8, path->sip, 16);
		memcpy(ip + 24, path->dip, 16);
	}
	return iplen;
}

/*
 * The ICRC's CRC over the headers before the BTH depends only on the path
 * and the datagram's length: per thread, the last few are kept (a
 * ping-pong sends and receives two or three lengths on two paths), so a
 * packet's ICRC is a look-up plus the CRC of its own bytes. Same result
 * as computing it each time (unit.test_wire holds it to the reference).
 * The entries live on the heap with the thread's other caches
 * (wire_thread()), not in TLS.
 */
#define PRE_CACHE 8
struct icrc_pre {
	struct srdma_wire_path path;
	size_t len;			/* 0: empty */
	uint32_t crc;
};
/* This thread's entries; NULL (no cache) if they cannot be had. */
static struct icrc_pre *pre_cache(void);

uint32_t srdma_wire_icrc(const struct srdma_wire_path *path,
			 const struct iovec *iov, int n)
{
	uint8_t ip[SRDMA_IPV6_HDR_BYTES], udp[SRDMA_UDP_HDR_BYTES];
	struct icrc_pre *c = pre_cache(), one = { .len = 0 };
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++)
		len += iov[i].iov_len;
	len += SRDMA_ICRC_BYTES;
	c = c ? &c[(len ^ path->sip[15] ^ (size_t)path->dip[15] << 1) %
		   PRE_CACHE] : &one;
	if (c->len != len || memcmp(&c->path, path, sizeof(*path))) {
		srdma_wire_ip_udp(path, len, ip, udp);
		if (srdma_icrc_pre(ip, udp, &c->crc)) {
			c->len = 0;
			return 0;
		}
		memcpy(&c->path, path, sizeof(*path));
		c->len = len;
	}
	return srdma_icrc_iov_from(c->crc, iov, n);
}

void srdma_wire_put_icrc(uint8_t *p, uint32_t icrc)
{
	p[0] = (uint8_t)icrc;
	p[1] = (uint8_t)(icrc >> 8);
	p[2] = (uint8_t)(icrc >> 16);
	p[3] = (uint8_t)(icrc >> 24);
}

bool srdma_wire_icrc_check(const struct srdma_wire_path *path,
			   const uint8_t *buf, size_t len)
{
	return srdma_wire_icrc_verify(path, buf, len, SRDMA_ICRC_STRICT) ==
	       SRDMA_ICRC_OK;
}

/*
 * The deltas of identifications 0..SRDMA_WIRE_GSO_SEGS-1 for a few
 * datagram lengths, per thread: a sender patches, and a receiver
 * recognises, GSO segments of a handful of lengths (the first, middle
 * and last packets of a message, an ACK riding behind a request), so
 * each costs a table lookup instead of the matrix products of
 * srdma_icrc_ipv4_id_delta / _explain (six of them to fill an entry,
 * ~0.5 us). Any entry holds any length, replaced in turn: with one slot
 * per length class (len / 4 modulo 4), two lengths of one flow could
 * take turns in a slot and recompute it on every packet. On the heap
 * (wire_thread(); these 1 KiB were most of the library's static TLS).
 */
#define GSO_CACHE 8
struct gso_deltas {
	size_t len;			/* 0: empty */
	uint32_t d[SRDMA_WIRE_GSO_SEGS];
};
struct gso_cache {
	struct gso_deltas e[GSO_CACHE];
	unsigned int victim;		/* the next one replaced */
};
static _Atomic uint64_t gso_fills;	/* relaxed: srdma_wire_gso_fills */

/*
 * This thread's caches, on the heap (a pthread key frees them), not in
 * TLS: the library's TLS is static (selfcopy.c's initial-exec variables)
 * and must fit the small surplus glibc keeps for a dlopen()ed library
 * (UCX and pyverbs load us so; abi.md, "Static TLS"). NULL if they
 * cannot be had: the callers then compute without them.
 */
struct wire_thread {
	struct icrc_pre pre[PRE_CACHE];
	struct gso_cache gso;
};
static pthread_key_t wt_key;		/* immutable after wt_once */
static bool wt_key_ok;			/* immutable after wt_once */
static pthread_once_t wt_once = PTHREAD_ONCE_INIT;

static void wt_key_init(void)
{
	wt_key_ok = !pthread_key_create(&wt_key, free);
}

static struct wire_thread *wire_thread(void)
{
	struct wire_thread *w;

	pthread_once(&wt_once, wt_key_init);
	if (!wt_key_ok)
		return NULL;
	w = pthread_getspecific(wt_key);
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (w && pthread_setspecific(wt_key, w)) {
			free(w);
			w = NULL;
		}
	}
	return w;
}

static struct icrc_pre *pre_cache(void)
{
	struct wire_thread *w = wire_thread();

	return w ? w->pre : NULL;
}

static struct gso_cache *gso_cache(void)
{
	struct wire_thread *w = wire_thread();

	return w ? &w->gso : NULL;
}

/* Bytes the ICRC covers after IPv4 byte 6 for a @len-byte UDP payload:
 * 13 of IP header, the UDP header, BTH through pad (not the ICRC). */
static size_t id_tail(size_t len)
{
	return 13 + SRDMA_UDP_HDR_BYTES + len - SRDMA_ICRC_BYTES;
}

/* The deltas for @len, computed on a miss when @fill (else NULL; also
 * NULL when this thread has no cache). The delta is linear in the
 * identification: one product chain per bit, the rest by XOR. */
static const struct gso_deltas *gso_deltas(size_t len, bool fill)
{
	struct gso_cache *gc = gso_cache();
	struct gso_deltas *c;
	unsigned int i, low;

	if (!gc)
		return NULL;
	for (i = 0; i < GSO_CACHE; i++)
		if (gc->e[i].len == len)
			return &gc->e[i];
	if (!fill)
		return NULL;
	c = &gc->e[gc->victim++ % GSO_CACHE];
	atomic_fetch_add_explicit(&gso_fills, 1, memory_order_relaxed);
	c->d[0] = 0;
	for (i = 1; i < SRDMA_WIRE_GSO_SEGS; i++) {
		low = i & -i;
		c->d[i] = low == i ? srdma_icrc_ipv4_id_delta((uint16_t)i,
							      id_tail(len)) :
				     c->d[i - low] ^ c->d[low];
	}
	c->len = len;
	return c;
}

/* The identification 1..SRDMA_WIRE_GSO_SEGS-1 whose delta is @x for a
 * @len-byte datagram, or -1. */
static int gso_id(uint32_t x, size_t len)
{
	const struct gso_deltas *c = gso_deltas(len, false);
	int i;

	if (!c)
		return -1;
	for (i = 1; i < SRDMA_WIRE_GSO_SEGS; i++)
		if (c->d[i] == x)
			return i;
	return -1;
}

static enum srdma_icrc_mode icrc_mode; /* immutable after mode_once */
static pthread_once_t mode_once = PTHREAD_ONCE_INIT;

static void icrc_mode_init(void)
{
	const char *s = getenv("SRDMA_NET_ICRC");

	icrc_mode = SRDMA_ICRC_LENIENT;
	if (!s || !*s || !strcmp(s, "lenient"))
		return;
	if (!strcmp(s, "strict"))
		icrc_mode = SRDMA_ICRC_STRICT;
	else if (!strcmp(s, "off"))
		icrc_mode = SRDMA_ICRC_OFF;
	else
		srdma_warn("SRDMA_NET_ICRC=%s: not lenient, strict or off; "
			   "lenient",
			   s);
}

enum srdma_icrc_mode srdma_wire_icrc_mode(void)
{
	pthread_once(&mode_once, icrc_mode_init);
	return icrc_mode;
}

/* The ICRC the @len-byte datagram @buf (len >= BTH + ICRC) should carry
 * on @path with IPv4 identification 0; the one it carries in *@got. */
static uint32_t icrc_of(const struct srdma_wire_path *path,
			const uint8_t *buf, size_t len, uint32_t *got)
{
	struct iovec iov = { .iov_base = (void *)buf,
			     .iov_len = len - SRDMA_ICRC_BYTES };
	const uint8_t *t = buf + iov.iov_len;

	*got = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
	       (uint32_t)t[3] << 24;
	return srdma_wire_icrc(path, &iov, 1);
}

enum srdma_icrc_verdict
srdma_wire_icrc_verify(const struct srdma_wire_path *path, const uint8_t *buf,
		       size_t len, enum srdma_icrc_mode mode)
{
	uint32_t got, want;
	uint16_t id;
	bool df;

	if (len < SRDMA_BTH_BYTES + SRDMA_ICRC_BYTES)
		return SRDMA_ICRC_BAD;
	if (mode == SRDMA_ICRC_OFF)
		return SRDMA_ICRC_UNCHECKED;
	want = icrc_of(path, buf, len, &got);
	if (got == want)
		return SRDMA_ICRC_OK;
	if (!srdma_gid_is_v4(path->sip))
		return SRDMA_ICRC_BAD;
	/* A segment of our own GSO sends (strict too: we send them): a
	 * look-up for the lengths seen before in this thread. */
	if (gso_id(got ^ want, len) > 0)
		return SRDMA_ICRC_OK_GSO;
	/* After IPv4 byte 6: 13 more bytes of IP, UDP, BTH through pad. */
	if (!srdma_icrc_ipv4_explain(got, want,
				     13 + SRDMA_UDP_HDR_BYTES + len - SRDMA_ICRC_BYTES,
				     &id, &df))
		return SRDMA_ICRC_BAD;
	/* A segment of our own GSO sends (strict too: we send them); the
	 * next ones of this length are a look-up. */
	if (df && id < SRDMA_WIRE_GSO_SEGS) {
		gso_deltas(len, true);
		return SRDMA_ICRC_OK_GSO;
	}
	return mode == SRDMA_ICRC_LENIENT ? SRDMA_ICRC_OK_ID : SRDMA_ICRC_BAD;
}

uint64_t srdma_wire_gso_fills(void)
{
	return atomic_load_explicit(&gso_fills, memory_order_relaxed);
}

uint32_t srdma_wire_icrc_id_delta(size_t len, uint16_t id)
{
	if (len < SRDMA_BTH_BYTES + SRDMA_ICRC_BYTES)
		return 0;
	if (id < SRDMA_WIRE_GSO_SEGS) {
		const struct gso_deltas *c = gso_deltas(len, true);

		if (c)
			return c->d[id];
	}
	return srdma_icrc_ipv4_id_delta(id, id_tail(len));
}

bool srdma_wire_icrc_ipv4_id(const struct srdma_wire_path *path,
			     const uint8_t *buf, size_t len, uint16_t *id)
{
	uint32_t got, want;
	bool df;

	if (len < SRDMA_BTH_BYTES + SRDMA_ICRC_BYTES ||
	    !srdma_gid_is_v4(path->sip))
		return false;
	want = icrc_of(path, buf, len, &got);
	if (got == want) {
		*id = 0;
		return true;
	}
	return srdma_icrc_ipv4_explain(got, want,
				       13 + SRDMA_UDP_HDR_BYTES + len - SRDMA_ICRC_BYTES,
				       id, &df) && df;
}

void srdma_wire_ipv4_set_id(uint8_t ip[SRDMA_IPV4_HDR_BYTES], uint16_t id)
{
	uint32_t sum = 0;
	int i;

	ip[4] = (uint8_t)(id >> 8);
	ip[5] = (uint8_t)id;
	ip[10] = ip[11] = 0;
	for (i = 0; i < SRDMA_IPV4_HDR_BYTES; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

uint16_t srdma_wire_udp_sport(uint32_t flow_label, uint32_t lqpn, uint32_t rqpn)
{
	uint32_t fl = flow_label & 0xfffff;

	if (!fl) {
		uint64_t v = (uint64_t)lqpn * rqpn;

		v ^= v >> 20;
		v ^= v >> 40;
		fl = (uint32_t)(v & 0xfffff);
	}
	return (uint16_t)(((fl & 0x3fff) ^ (fl >> 14)) | 0xc000);
}
