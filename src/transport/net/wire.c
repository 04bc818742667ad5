// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * wire.c - RoCEv2 header codec (wire.h). Placeholder until the codec
 * lands: every datagram is refused, nothing can be built.
 */
#include "transport/net/wire.h"

const char *srdma_drop_str(enum srdma_drop d)
{
	(void)d;
	return "drop";
}

uint32_t srdma_wire_hdrs(uint8_t opcode)
{
	(void)opcode;
	return 0;
}

uint32_t srdma_wire_hdr_len(uint8_t opcode)
{
	(void)opcode;
	return 0;
}

enum srdma_drop srdma_wire_parse(const uint8_t *buf, size_t len,
				 struct srdma_pkt *pkt)
{
	(void)buf;
	(void)len;
	(void)pkt;
	return SRDMA_DROP_OPCODE;
}

uint32_t srdma_wire_build(uint8_t *buf, const struct srdma_pkt *pkt)
{
	(void)buf;
	(void)pkt;
	return 0;
}
