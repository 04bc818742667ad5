/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rawwire.h - raw packet QPs' frames on a real interface, when asked for:
 * SRDMA_RAW_WIRE=IFNAME names one interface of the port (one of its GID
 * table's), and the contexts with raw packet QPs send every frame out of
 * it through an AF_PACKET socket and receive every frame that arrives on
 * it, flows applied. Unset (the default), frames stay in the host.
 * Design: docs/design/raw-packet.md.
 */
#ifndef SRDMA_TRANSPORT_NET_RAWWIRE_H
#define SRDMA_TRANSPORT_NET_RAWWIRE_H

#include <stdint.h>

struct srdma_context;

/**
 * srdma_rawwire_get() - a raw packet QP of @ctx was created: with
 * SRDMA_RAW_WIRE set, make sure @ctx has its socket on that interface and
 * the thread receiving from it (the first QP opens them), and count the
 * QP. Without it, nothing. Return: 0; -ENODEV (the name is not an
 * interface of the port); the socket's, bind's or the thread's -errno.
 * Context: QP creation, nothing held.
 */
int srdma_rawwire_get(struct srdma_context *ctx);
/**
 * srdma_rawwire_put() - a raw packet QP of @ctx is gone: the last one
 * stops the receiving thread and closes the socket. Nothing held.
 */
void srdma_rawwire_put(struct srdma_context *ctx);
/**
 * srdma_rawwire_send() - send @frame (@len bytes) out of @ctx's interface,
 * if it has one. Best effort, as a NIC: a frame the interface refuses
 * (above its MTU) is lost. Context: the sending QP's sq_lock.
 */
void srdma_rawwire_send(struct srdma_context *ctx, const uint8_t *frame,
			uint32_t len);

#endif
