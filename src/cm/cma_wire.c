// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_wire.c - encode and decode the CM side-channel messages.
 *
 * The layout and its rules are in cma_wire.h. Everything here is pure: no
 * I/O, no allocation, no locks, so the unit test can feed it every
 * truncation and corruption of a valid message. Decoding reads the buffer
 * byte by byte through get16/get32 and never trusts a length before it
 * has compared it with what was actually received.
 */
#include <errno.h>
#include <string.h>

#include "cm/cma_wire.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

unsigned int srdma_cm_pdata_max(unsigned int type)
{
	switch (type) {
	case SRDMA_CM_REQ:
		return SRDMA_CM_PDATA_REQ;
	case SRDMA_CM_REP:
		return SRDMA_CM_PDATA_REP;
	case SRDMA_CM_RTU:
		return SRDMA_CM_PDATA_RTU;
	case SRDMA_CM_REJ:
		return SRDMA_CM_PDATA_REJ;
	case SRDMA_CM_DREQ:
		return SRDMA_CM_PDATA_DREQ;
	case SRDMA_CM_DREP:
		return SRDMA_CM_PDATA_DREP;
	case SRDMA_CM_SIDR_REQ:
		return SRDMA_CM_PDATA_SIDR_REQ;
	case SRDMA_CM_SIDR_REP:
		return SRDMA_CM_PDATA_SIDR_REP;
	default:
		return 0;
	}
}

int srdma_cm_hdr_check(const uint8_t *buf, size_t *len)
{
	size_t l;

	if (get32(buf) != SRDMA_CM_WIRE_MAGIC)
		return -EPROTO;
	if (buf[4] != SRDMA_CM_WIRE_VERSION)
		return -EPROTONOSUPPORT;
	if (!srdma_cm_pdata_max(buf[5]))
		return -EPROTO;
	l = get16(buf + 6);
	if (l < SRDMA_CM_FIXED_LEN ||
	    l - SRDMA_CM_FIXED_LEN > srdma_cm_pdata_max(buf[5]))
		return -EPROTO;
	*len = l;
	return 0;
}

int srdma_cm_decode(const uint8_t *buf, size_t len, struct srdma_cm_msg *msg)
{
	size_t want;
	int ret;

	if (len < SRDMA_CM_HDR_LEN)
		return -EPROTO;
	ret = srdma_cm_hdr_check(buf, &want);
	if (ret)
		return ret;
	if (len != want || buf[33] != want - SRDMA_CM_FIXED_LEN)
		return -EPROTO;
	if (get16(buf + 34) || get32(buf + 52))
		return -EPROTO;

	memset(msg, 0, sizeof(*msg));
	msg->type = buf[5];
	msg->port_space = get16(buf + 8);
	msg->qp_type = buf[10];
	msg->flags = buf[11];
	msg->qpn = get32(buf + 12);
	msg->psn = get32(buf + 16);
	msg->qkey = get32(buf + 20);
	msg->reason = get16(buf + 24);
	msg->lid = get16(buf + 26);
	msg->resp_res = buf[28];
	msg->init_depth = buf[29];
	msg->retry_count = buf[30];
	msg->rnr_retry_count = buf[31];
	msg->mtu = buf[32];
	msg->pdata_len = buf[33];
	memcpy(msg->gid, buf + 36, sizeof(msg->gid));
	memcpy(msg->pdata, buf + SRDMA_CM_FIXED_LEN, msg->pdata_len);

	if (msg->flags & ~SRDMA_CM_F_ALL || msg->qpn > 0xffffff ||
	    msg->psn > 0xffffff || msg->retry_count > 7 ||
	    msg->rnr_retry_count > 7 || msg->mtu > 5)
		return -EPROTO;
	return 0;
}

int srdma_cm_encode(const struct srdma_cm_msg *msg, uint8_t *buf)
{
	unsigned int max = srdma_cm_pdata_max(msg->type);
	size_t len = SRDMA_CM_FIXED_LEN + msg->pdata_len;

	if (!max || msg->pdata_len > max)
		return -EINVAL;
	memset(buf, 0, SRDMA_CM_FIXED_LEN);
	put32(buf, SRDMA_CM_WIRE_MAGIC);
	buf[4] = SRDMA_CM_WIRE_VERSION;
	buf[5] = msg->type;
	put16(buf + 6, (uint16_t)len);
	put16(buf + 8, msg->port_space);
	buf[10] = msg->qp_type;
	buf[11] = msg->flags;
	put32(buf + 12, msg->qpn & 0xffffff);
	put32(buf + 16, msg->psn & 0xffffff);
	put32(buf + 20, msg->qkey);
	put16(buf + 24, msg->reason);
	put16(buf + 26, msg->lid);
	buf[28] = msg->resp_res;
	buf[29] = msg->init_depth;
	buf[30] = msg->retry_count & 7;
	buf[31] = msg->rnr_retry_count & 7;
	buf[32] = msg->mtu;
	buf[33] = msg->pdata_len;
	memcpy(buf + 36, msg->gid, sizeof(msg->gid));
	memcpy(buf + SRDMA_CM_FIXED_LEN, msg->pdata, msg->pdata_len);
	return (int)len;
}
