/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * demux.h - sharing UDP port 4791 between the contexts of one network
 * namespace (docs/design/net-endpoint.md). Internal to the endpoint.
 *
 * Every context's endpoint owns one UDP socket bound to [::]:4791 with
 * SO_REUSEPORT: together they form the kernel's reuseport group of the
 * namespace. A classic BPF program attached to the group steers each
 * datagram to the socket of the context whose LID is in the BTH DQPN
 * (DQPN >> SRDMA_QPN_SHIFT); the program is built from the steering table,
 * a small file in the state directory that mirrors the kernel's order of
 * the group's sockets. The table is a speed device only: a datagram that
 * lands on the wrong socket (a stale table, a crash, a context of another
 * state directory) is forwarded to its owner's forwarding socket, an
 * abstract unix datagram socket named by euid and LID, so every packet
 * reaches its QP's context or is dropped and counted.
 */
#ifndef SRDMA_TRANSPORT_NET_DEMUX_H
#define SRDMA_TRANSPORT_NET_DEMUX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/host/shm_layout.h"
#include "transport/net/wire.h"

/* Who a context is, for the steering table. */
struct srdma_demux_id {
	int dirfd;			/* state directory (table file) */
	uint32_t lid;
	pid_t pid;
	uint64_t start_time;		/* of pid, clock ticks since boot */
};

/**
 * srdma_demux_join() - open the context's UDP socket on [::]:@port in the
 * namespace's reuseport group and re-steer the group so that datagrams
 * for @id->lid come to it.
 * Return: the socket (non-blocking, close-on-exec, options set for
 * sending and receiving RoCEv2, see endpoint.c), or -errno (-EADDRINUSE:
 * the port is owned by a socket we cannot share with, e.g. rxe or another
 * user's contexts). Context: endpoint open; takes the table's flock.
 */
int srdma_demux_join(const struct srdma_demux_id *id, uint16_t port);

/**
 * srdma_demux_leave() - take @fd (from srdma_demux_join) out of the group:
 * re-steer the others, then close it. Datagrams queued on it are lost
 * (the protocol retransmits). Context: endpoint close; takes the flock.
 */
void srdma_demux_leave(const struct srdma_demux_id *id, int fd);

/**
 * srdma_demux_resteer() - datagrams for other contexts reach @fd: prune
 * dead members from the steering table and attach its program again
 * (through @fd, a member). Context: the endpoint's drainer, rate-limited;
 * takes the flock.
 */
void srdma_demux_resteer(const struct srdma_demux_id *id, int fd);

/**
 * srdma_demux_conn_socket() - a UDP socket set up as the group's members
 * (dual-stack, SO_REUSEPORT, IPV6_RECVPKTINFO, DF, buffers), bound to our
 * address @local (16 bytes, v4-mapped for IPv4) port 4791 - not the
 * wildcard, so it is not a member of the [::]:4791 group and moves no
 * steering index - and connected to @peer (16 bytes) port @peer_port.
 * Non-blocking, close-on-exec.
 * Return: the socket, or -errno.
 */
int srdma_demux_conn_socket(const uint8_t local[16], const uint8_t peer[16],
			    uint16_t peer_port);

/**
 * srdma_demux_fwd_open() - the context's forwarding socket: an abstract
 * unix datagram socket, unique for (euid, @lid) in the network namespace,
 * non-blocking, with SO_PASSCRED so that the sender's uid can be checked.
 * Return: the fd or -errno (-EADDRINUSE: some context with this LID
 * already has an endpoint in this namespace, from another state
 * directory).
 */
int srdma_demux_fwd_open(uint32_t lid);

/* Address of @lid's forwarding socket, for sendto(); returns its length. */
socklen_t srdma_demux_fwd_addr(uint32_t lid, void *sun);

/* Forwarded datagrams travel in batches: a header, then records. */
#define SRDMA_FWD_MAGIC 0x46445253u	/* "SRDF" */
#define SRDMA_FWD_MAX 65000u		/* bytes per batch message */

struct srdma_fwd_hdr {
	uint32_t magic;
	uint32_t count;			/* records that follow */
};

struct srdma_fwd_rec {
	struct srdma_wire_path path;	/* as received: source, destination */
	uint16_t pad;
	uint32_t len;			/* UDP payload bytes that follow,
					 * padded to 8 */
};

/* LID a DQPN belongs to. */
static inline uint32_t srdma_demux_lid(uint32_t dqpn)
{
	return (dqpn & 0xffffff) >> SRDMA_QPN_SHIFT;
}

#endif
