/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * cma_wire.h - the connection-manager messages two librdmacm instances
 * exchange over their TCP side channel.
 *
 * This layout is ABI between hosts (and between softrdma versions on one
 * host): every message is a fixed 56-byte part followed by 0..224 bytes of
 * private data, all integers big-endian, the version byte bumped on any
 * change. A receiver never casts the byte stream to a struct: it checks the
 * 8-byte header first (srdma_cm_hdr_check(), enough to frame the stream),
 * then decodes and validates the whole message (srdma_cm_decode()). Anything
 * that fails either check is a protocol error; the caller drops the
 * connection and reports the event the state calls for.
 *
 *   off  size  field
 *     0     4  magic "SRCM" (0x5352434d)
 *     4     1  version (SRDMA_CM_WIRE_VERSION)
 *     5     1  type (enum srdma_cm_msg_type)
 *     6     2  length of the whole message, = 56 + pdata_len
 *     8     2  port space (RDMA_PS_*)
 *    10     1  QP type (IBV_QPT_*)
 *    11     1  flags (SRDMA_CM_F_*)
 *    12     4  QP number (24 bits)
 *    16     4  starting PSN (24 bits)
 *    20     4  Q_Key (SIDR_REP)
 *    24     2  reason: REJ reason or SIDR_REP status
 *    26     2  LID of the sender's port
 *    28     1  responder resources
 *    29     1  initiator depth
 *    30     1  retry count (0..7)
 *    31     1  RNR retry count (0..7)
 *    32     1  path MTU (enum ibv_mtu, 0 where unused)
 *    33     1  private data length
 *    34     2  reserved, 0
 *    36    16  GID of the sender's port
 *    52     4  reserved, 0
 *    56     n  private data
 *
 * Each type carries at most as much private data as its InfiniBand CM
 * counterpart leaves to an rdma_cm user (SRDMA_CM_PDATA_* below); that is
 * also the length the receiving side reports in its event.
 */
#ifndef SRDMA_CM_WIRE_H
#define SRDMA_CM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SRDMA_CM_WIRE_MAGIC   0x5352434du
#define SRDMA_CM_WIRE_VERSION 1
#define SRDMA_CM_HDR_LEN      8
#define SRDMA_CM_FIXED_LEN    56
#define SRDMA_CM_PDATA_MAX    224
#define SRDMA_CM_MSG_MAX      (SRDMA_CM_FIXED_LEN + SRDMA_CM_PDATA_MAX)

/* Private data an rdma_cm user gets per message (IB CM sizes). */
#define SRDMA_CM_PDATA_REQ	56
#define SRDMA_CM_PDATA_REP	196
#define SRDMA_CM_PDATA_REJ	148
#define SRDMA_CM_PDATA_RTU	224
#define SRDMA_CM_PDATA_DREQ	220
#define SRDMA_CM_PDATA_DREP	224
#define SRDMA_CM_PDATA_SIDR_REQ 180
#define SRDMA_CM_PDATA_SIDR_REP 136

enum srdma_cm_msg_type {
	SRDMA_CM_REQ = 1,      /* active: connect request (RC/UC) */
	SRDMA_CM_REP = 2,      /* passive: accept */
	SRDMA_CM_RTU = 3,      /* active: ready to use */
	SRDMA_CM_REJ = 4,      /* either: reject */
	SRDMA_CM_DREQ = 5,     /* either: disconnect request */
	SRDMA_CM_DREP = 6,     /* either: disconnect reply */
	SRDMA_CM_SIDR_REQ = 7, /* active: UD service id resolution */
	SRDMA_CM_SIDR_REP = 8, /* passive: UD answer (status in reason) */
};

#define SRDMA_CM_F_SRQ		0x01
#define SRDMA_CM_F_FLOW_CONTROL 0x02
#define SRDMA_CM_F_ALL		(SRDMA_CM_F_SRQ | SRDMA_CM_F_FLOW_CONTROL)

/* A decoded message; host byte order, private data copied. */
struct srdma_cm_msg {
	uint8_t type;
	uint8_t qp_type;
	uint8_t flags;
	uint8_t resp_res;
	uint8_t init_depth;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t mtu;
	uint16_t port_space;
	uint16_t reason;
	uint16_t lid;
	uint32_t qpn;
	uint32_t psn;
	uint32_t qkey;
	uint8_t gid[16];
	uint8_t pdata_len;
	uint8_t pdata[SRDMA_CM_PDATA_MAX];
};

/**
 * srdma_cm_pdata_max() - private data a message type may carry.
 * @type: enum srdma_cm_msg_type
 * Return: the limit in bytes, or 0 for an unknown type.
 */
unsigned int srdma_cm_pdata_max(unsigned int type);

/**
 * srdma_cm_hdr_check() - validate the first SRDMA_CM_HDR_LEN bytes.
 * @buf: at least SRDMA_CM_HDR_LEN bytes received
 * @len: out, the whole message's length the header announces
 * Return: 0, -EPROTO (bad magic, type or length) or -EPROTONOSUPPORT
 * (another version). The announced length is within [56, 280] on success.
 */
int srdma_cm_hdr_check(const uint8_t *buf, size_t *len);

/**
 * srdma_cm_decode() - validate and decode one whole message.
 * @buf: the bytes received
 * @len: how many; must equal the length the header announces
 * @msg: out
 * Return: 0, or -EPROTO / -EPROTONOSUPPORT; @msg is then unspecified.
 * Checks everything srdma_cm_hdr_check() checks plus: the private data
 * length against the length and the type's limit, reserved bytes zero,
 * QPN and PSN within 24 bits, retry counts within 3 bits, known flags.
 */
int srdma_cm_decode(const uint8_t *buf, size_t len, struct srdma_cm_msg *msg);

/**
 * srdma_cm_encode() - lay out @msg for the wire.
 * @msg: the message; its pdata_len must fit the type (checked)
 * @buf: out, at least SRDMA_CM_MSG_MAX bytes
 * Return: the length written, or -EINVAL for an unknown type or too much
 * private data.
 */
int srdma_cm_encode(const struct srdma_cm_msg *msg, uint8_t *buf);

#endif
