/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * wire.h - RoCEv2 packets as bytes: the InfiniBand transport headers (BTH
 * and the extended headers), their opcodes, and the two directions
 * between bytes and struct srdma_pkt.
 *
 * Every packet softrdma sends is built here and every datagram it
 * receives is parsed here first. srdma_wire_parse() trusts nothing: it
 * checks the length against the opcode's header layout, TVer, the pad
 * count and the payload size before any field is used, and says why a
 * datagram is refused (enum srdma_drop). The protocol rules that need QP
 * state (PSN windows, keys, Q_Keys, sources) are the protocol's, in
 * req.c and resp.c; this file only knows the layout (docs/design/net.md).
 *
 * All multi-byte fields are big-endian on the wire and host order in
 * struct srdma_pkt, except the immediate data, which is opaque and kept
 * in network order, as ibv_wc.imm_data is.
 *
 * Pure functions, no state: callable from any thread.
 */
#ifndef SRDMA_TRANSPORT_NET_WIRE_H
#define SRDMA_TRANSPORT_NET_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "transport/net/icrc.h"

#define SRDMA_ROCE_PORT 4791		/* destination port of every packet */
#define SRDMA_DEFAULT_PKEY 0xffff
#define SRDMA_GSI_QKEY 0x80010000u

/* Extended header sizes (bytes). */
#define SRDMA_RETH_BYTES 16
#define SRDMA_AETH_BYTES 4
#define SRDMA_ATOMICETH_BYTES 28
#define SRDMA_ATOMICACKETH_BYTES 8
#define SRDMA_IMMDT_BYTES 4
#define SRDMA_IETH_BYTES 4
#define SRDMA_DETH_BYTES 8
#define SRDMA_XRCETH_BYTES 4	/* reserved byte, 24-bit XRC SRQ number */
/* Longest BTH + extended headers of any opcode we speak. */
#define SRDMA_MAX_IB_HDR 64

/* Transport bits of the opcode (bits 7:5). */
#define SRDMA_TR_RC 0x00
#define SRDMA_TR_UC 0x20
#define SRDMA_TR_UD 0x60
#define SRDMA_TR_XRC 0xa0	/* IBTA XRC: RC's operations; requests carry
				 * an XRCETH right after the BTH */
#define SRDMA_TR_MASK 0xe0

/* Operation numbers (bits 4:0); the opcode is transport | operation. */
enum srdma_ib_op {
	SRDMA_OP_SEND_FIRST = 0x00,
	SRDMA_OP_SEND_MIDDLE = 0x01,
	SRDMA_OP_SEND_LAST = 0x02,
	SRDMA_OP_SEND_LAST_IMM = 0x03,
	SRDMA_OP_SEND_ONLY = 0x04,
	SRDMA_OP_SEND_ONLY_IMM = 0x05,
	SRDMA_OP_WRITE_FIRST = 0x06,
	SRDMA_OP_WRITE_MIDDLE = 0x07,
	SRDMA_OP_WRITE_LAST = 0x08,
	SRDMA_OP_WRITE_LAST_IMM = 0x09,
	SRDMA_OP_WRITE_ONLY = 0x0a,
	SRDMA_OP_WRITE_ONLY_IMM = 0x0b,
	SRDMA_OP_READ_REQ = 0x0c,
	SRDMA_OP_READ_RESP_FIRST = 0x0d,
	SRDMA_OP_READ_RESP_MIDDLE = 0x0e,
	SRDMA_OP_READ_RESP_LAST = 0x0f,
	SRDMA_OP_READ_RESP_ONLY = 0x10,
	SRDMA_OP_ACK = 0x11,
	SRDMA_OP_ATOMIC_ACK = 0x12,
	SRDMA_OP_CMP_SWAP = 0x13,
	SRDMA_OP_FETCH_ADD = 0x14,
	SRDMA_OP_SEND_LAST_INV = 0x16,
	SRDMA_OP_SEND_ONLY_INV = 0x17,
	SRDMA_OP_ATOMIC_WRITE = 0x1d,
};

/* Which extended headers an opcode carries (srdma_wire_hdrs()). */
enum {
	SRDMA_HDR_RETH = 1u << 0,
	SRDMA_HDR_AETH = 1u << 1,
	SRDMA_HDR_ATOMICETH = 1u << 2,
	SRDMA_HDR_ATOMICACKETH = 1u << 3,
	SRDMA_HDR_IMMDT = 1u << 4,
	SRDMA_HDR_IETH = 1u << 5,
	SRDMA_HDR_DETH = 1u << 6,
	SRDMA_HDR_PAYLOAD = 1u << 7,	/* the opcode may carry payload */
	SRDMA_HDR_XRCETH = 1u << 11,	/* XRC request: first after the BTH */
	/* Position within a message. */
	SRDMA_HDR_FIRST = 1u << 8,
	SRDMA_HDR_MIDDLE = 1u << 9,
	SRDMA_HDR_LAST = 1u << 10,	/* LAST and ONLY */
	SRDMA_HDR_ONLY = SRDMA_HDR_FIRST | SRDMA_HDR_LAST,
};

/* AETH syndromes (bits 7:5 type, 4:0 value). */
#define SRDMA_AETH_ACK 0x1f		/* ACK, unlimited credits */
#define SRDMA_AETH_RNR(t) (0x20 | ((t) & 0x1f))
#define SRDMA_AETH_NAK_PSN 0x60
#define SRDMA_AETH_NAK_INV 0x61
#define SRDMA_AETH_NAK_ACC 0x62
#define SRDMA_AETH_NAK_OPS 0x63
#define SRDMA_AETH_TYPE(s) ((s) & 0xe0)
#define SRDMA_AETH_TYPE_ACK 0x00
#define SRDMA_AETH_TYPE_RNR 0x20
#define SRDMA_AETH_TYPE_NAK 0x60

/* Why a datagram was dropped: counted per cause, logged under SRDMA_LOG. */
enum srdma_drop {
	SRDMA_DROP_NONE = 0,
	SRDMA_DROP_SHORT,		/* shorter than its opcode's headers */
	SRDMA_DROP_OPCODE,		/* unknown or unsupported opcode */
	SRDMA_DROP_TVER,		/* BTH TVer != 0 */
	SRDMA_DROP_PAD,			/* pad count impossible for the op */
	SRDMA_DROP_LENGTH,		/* payload length impossible (MTU...) */
	SRDMA_DROP_ICRC,		/* ICRC mismatch */
	SRDMA_DROP_QPN,			/* QPN 0, unknown, or not ours */
	SRDMA_DROP_PKEY,		/* P_Key mismatch */
	SRDMA_DROP_QKEY,		/* UD Q_Key mismatch */
	SRDMA_DROP_SOURCE,		/* RC/UC from a source not the QP's */
	SRDMA_DROP_STATE,		/* QP state does not receive */
	SRDMA_DROP_TRANSPORT,		/* opcode's transport != QP type */
	SRDMA_DROP_PSN,			/* out of window (after the one NAK) */
	SRDMA_DROP_DUP,			/* duplicate that gets no reply */
	SRDMA_DROP_RNR,			/* UC/UD: no receive WQE */
	SRDMA_DROP_ADDR,		/* not IPv4/IPv6, or a bad address */
	SRDMA_DROP_FAULT,		/* injected (SRDMA_NET_FAULT) */
	SRDMA_DROP_OTHER,
	SRDMA_DROP_MAX
};

/* Short name of a drop cause, for logs and `srdma status`. */
const char *srdma_drop_str(enum srdma_drop d);

/* A decoded packet. Built by srdma_wire_parse() (pointers into the
 * datagram) or filled by a sender for srdma_wire_build(). */
struct srdma_pkt {
	uint8_t opcode;			/* transport | operation */
	bool se;			/* solicited event */
	bool migreq;
	uint8_t padcnt;
	uint16_t pkey;
	uint32_t dqpn;			/* 24 bits */
	bool ackreq;
	uint32_t psn;			/* 24 bits */
	uint32_t hdrs;			/* SRDMA_HDR_* of the opcode */
	/* RETH (or the VA/R_Key/length of an AtomicETH) */
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
	/* AtomicETH */
	uint64_t swap_add;
	uint64_t compare;
	/* AETH */
	uint8_t syndrome;
	uint32_t msn;			/* 24 bits */
	/* AtomicAckETH */
	uint64_t orig;
	/* ImmDt (network order, opaque) and IETH */
	uint32_t imm;
	uint32_t inv_rkey;
	/* DETH */
	uint32_t qkey;
	uint32_t src_qp;		/* 24 bits */
	/* XRCETH */
	uint32_t xrc_srqn;		/* 24 bits */
	/* payload (without pad and ICRC) */
	const uint8_t *payload;
	uint32_t paylen;
	uint32_t hdr_len;		/* BTH + extended headers */
};

/**
 * srdma_wire_hdrs() - the SRDMA_HDR_* set of @opcode, or 0 if we do not
 * speak it (RD, CNP, vendor, FLUSH, or an operation its
 * transport does not have: READ on UC, anything but SEND_ONLY[_IMM] on UD).
 * XRC has RC's operations; its requests add SRDMA_HDR_XRCETH.
 */
uint32_t srdma_wire_hdrs(uint8_t opcode);

/* BTH plus the extended headers of @opcode, in bytes (0: unknown). */
uint32_t srdma_wire_hdr_len(uint8_t opcode);

/**
 * srdma_wire_parse() - decode and validate one datagram's UDP payload
 * (BTH through ICRC) of @len bytes at @buf.
 * Checks, in order: length >= BTH + ICRC; TVer 0; opcode known
 * (srdma_wire_hdrs); length >= headers + ICRC; pad count 0..3 and
 * payload present only where the opcode carries one; payload length
 * (len - headers - pad - 4) not negative. Fills every field of @pkt the
 * opcode carries (the others are zero). The ICRC is not checked here:
 * that needs the IP and UDP headers (srdma_wire_icrc_check()).
 * Return: SRDMA_DROP_NONE, or why the datagram must be dropped.
 */
enum srdma_drop srdma_wire_parse(const uint8_t *buf, size_t len,
				 struct srdma_pkt *pkt);

/**
 * srdma_wire_build() - write the BTH and the extended headers of
 * @pkt->opcode into @buf (at least SRDMA_MAX_IB_HDR bytes) from the
 * fields of @pkt; pkt->paylen gives the pad count (written into the
 * BTH). Other fields of @pkt are ignored.
 * Return: the header length written, or 0 if the opcode is unknown.
 */
uint32_t srdma_wire_build(uint8_t *buf, const struct srdma_pkt *pkt);

/* Pad bytes after @paylen bytes of payload (0..3). */
static inline uint32_t srdma_wire_pad(uint32_t paylen)
{
	return (4 - (paylen & 3)) & 3;
}

/*
 * The addresses of one datagram, as the ICRC covers them. Addresses are
 * 16-byte GIDs: IPv4 as ::ffff:a.b.c.d (RoCEv2's IPv4-mapped GIDs).
 */
struct srdma_wire_path {
	uint8_t sip[16];
	uint8_t dip[16];
	uint16_t sport;			/* host order */
	uint16_t dport;
};

/* True if @gid is an IPv4-mapped address (::ffff:a.b.c.d). */
bool srdma_gid_is_v4(const uint8_t gid[16]);

/**
 * srdma_wire_icrc() - the ICRC of a datagram carrying the @n iovecs of
 * @iov (BTH, extended headers, payload, pad; no ICRC) from @path, as the
 * kernel will send it: IPv4 with identification 0 and DF set (an
 * unconnected socket with IP_PMTUDISC_DO), IPv6 as is.
 * Return: the ICRC; store it with srdma_wire_put_icrc().
 */
uint32_t srdma_wire_icrc(const struct srdma_wire_path *path,
			 const struct iovec *iov, int n);

/**
 * srdma_wire_ip_udp() - the IP and UDP headers the kernel will put in
 * front of @ib_len bytes (BTH through ICRC) sent on @path from an
 * unconnected socket with IP_PMTUDISC_DO: IPv4 with identification 0,
 * DF, TTL 64 and its header checksum; IPv6 with hop limit 64, no traffic
 * class or flow label; UDP with checksum 0. srdma_wire_icrc() covers
 * these, and pcap records show them.
 * Return: the IP header length written at @ip (20 or 40); the UDP header
 * is at @udp.
 */
size_t srdma_wire_ip_udp(const struct srdma_wire_path *path, size_t ib_len,
			 uint8_t ip[SRDMA_IPV6_HDR_BYTES],
			 uint8_t udp[SRDMA_UDP_HDR_BYTES]);

/* Store @icrc little-endian at @p, as it goes on the wire. */
void srdma_wire_put_icrc(uint8_t *p, uint32_t icrc);

/**
 * srdma_wire_icrc_check() - is the last 4 bytes of the @len-byte UDP
 * payload @buf the right ICRC for a datagram received on @path?
 * IPv4 is checked assuming identification 0 and DF (what softrdma sends);
 * see docs/design/net.md for peers that send otherwise.
 */
bool srdma_wire_icrc_check(const struct srdma_wire_path *path,
			   const uint8_t *buf, size_t len);

/*
 * How a receiver judges ICRCs: SRDMA_NET_ICRC (docs/design/net-wire.md).
 * A UDP socket never shows a datagram's IPv4 identification and flags,
 * which the ICRC covers: softrdma sends identification 0 with DF, rxe a
 * hashed identification, NICs their own.
 */
enum srdma_icrc_mode {
	SRDMA_ICRC_LENIENT = 0,	/* default: IPv4 right for some
				 * identification and DF (2^-15 of
				 * corruptions slip through); IPv6 exact */
	SRDMA_ICRC_STRICT,	/* IPv4 right with DF and identification 0,
				 * or 1..SRDMA_WIRE_GSO_SEGS-1 (softrdma's
				 * GSO segments): softrdma peers only */
	SRDMA_ICRC_OFF,		/* not checked at all */
};

/* SRDMA_NET_ICRC=lenient|strict|off, read once (unknown: lenient, with a
 * warning). Context: any thread. */
enum srdma_icrc_mode srdma_wire_icrc_mode(void);

enum srdma_icrc_verdict {
	SRDMA_ICRC_BAD = 0,	/* drop (SRDMA_DROP_ICRC) */
	SRDMA_ICRC_OK,		/* right as softrdma sends */
	SRDMA_ICRC_OK_ID,	/* IPv4, right with another identification
				 * or DF (lenient): count it */
	SRDMA_ICRC_UNCHECKED,	/* mode off */
	SRDMA_ICRC_OK_GSO,	/* IPv4, right with DF and an identification
				 * 1..SRDMA_WIRE_GSO_SEGS-1: a segment of a
				 * softrdma UDP GSO send (lenient and
				 * strict) */
};

/*
 * UDP GSO (docs/design/net-endpoint.md, "Speed"): a sender may hand the
 * kernel up to SRDMA_WIRE_GSO_SEGS packets of one size in one datagram
 * (the kernel's UDP_MAX_SEGMENTS), which it cuts into datagrams whose
 * IPv4 identifications count up from the first one's, 0: segment i goes
 * out with identification i, and its ICRC must say so.
 */
#define SRDMA_WIRE_GSO_SEGS 64
/* ... and at most this many bytes of UDP payload in all (the largest
 * IPv4 datagram's). */
#define SRDMA_WIRE_GSO_BYTES (65535u - 20u - 8u)

/**
 * srdma_wire_icrc_id_delta() - the ICRC of an IPv4 datagram whose UDP
 * payload (BTH through ICRC) is @len bytes, sent with IP identification
 * @id instead of 0 (DF set, as always), is srdma_wire_icrc() XOR this
 * value. IPv6 has no identification: do not use it there.
 * Return: the XOR mask (0 for @id 0). Context: any thread.
 */
uint32_t srdma_wire_icrc_id_delta(size_t len, uint16_t id);

/* Test hook: entries of the per-thread identification delta caches
 * filled so far, all threads (each fill costs ~0.5 us). */
uint64_t srdma_wire_gso_fills(void);

/**
 * srdma_wire_icrc_ipv4_id() - the IP identification that makes the ICRC
 * of the @len-byte UDP payload @buf right on the IPv4 path @path, with
 * DF set (0 when it is right as softrdma sends without GSO); for the
 * capture of received packets, which never show the real one.
 * Return: true with *@id set; false for IPv6, a short datagram or an
 * ICRC that no identification with DF explains.
 */
bool srdma_wire_icrc_ipv4_id(const struct srdma_wire_path *path,
			     const uint8_t *buf, size_t len, uint16_t *id);

/**
 * srdma_wire_ipv4_set_id() - set the identification of the IPv4 header
 * @ip (20 bytes, as srdma_wire_ip_udp() writes it) to @id and recompute
 * its header checksum.
 */
void srdma_wire_ipv4_set_id(uint8_t ip[SRDMA_IPV4_HDR_BYTES], uint16_t id);

/**
 * srdma_wire_icrc_verify() - srdma_wire_icrc_check() under @mode: the
 * receiver's verdict on the ICRC of the @len-byte UDP payload @buf that
 * arrived on @path. A datagram shorter than BTH + ICRC is BAD in every
 * mode. Context: any thread.
 */
enum srdma_icrc_verdict srdma_wire_icrc_verify(const struct srdma_wire_path *path,
					       const uint8_t *buf, size_t len,
					       enum srdma_icrc_mode mode);

/* UDP source port for a QP pair, as Linux derives it from the flow label
 * (rdma_get_udp_sport): symmetric in the two QPNs when @flow_label is 0. */
uint16_t srdma_wire_udp_sport(uint32_t flow_label, uint32_t lqpn,
			      uint32_t rqpn);

/* 24-bit PSN arithmetic: the signed distance a - b, as rxe's psn_compare. */
static inline int32_t srdma_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

static inline uint32_t srdma_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & 0xffffff;
}

#endif
