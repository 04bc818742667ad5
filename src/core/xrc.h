/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * xrc.h - XRC domains, XRC SRQs and the XRC QP types (docs/design/xrc.md).
 *
 * An XRC domain is named by an inode: every ibv_open_xrcd() of the same
 * file, in any process of the host, opens the same domain; fd -1 makes a
 * private one. The domain's identity (struct srdma_xrcd.id) is written
 * into the shared entries of its XRC SRQs and XRC_RECV (TGT) QPs, so an
 * initiator (host transport) or our progress thread (net transport)
 * delivering to a TGT QP can check that the SRQ the XRCETH names is in
 * the same domain, whichever context of the host owns it.
 *
 * An SRQ number is (LID << SRDMA_QPN_SHIFT) | slot, like a QPN: it names
 * its context, so it routes on the host.
 */
#ifndef SRDMA_CORE_XRC_H
#define SRDMA_CORE_XRC_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/core.h"

/* srdma_xrcd.id[0] of a private domain (fd -1); id[1] is then unique on
 * the host: (LID << 32) | a per-process counter. */
#define SRDMA_XRCD_PRIVATE (1ull << 62)
/* srdma_xrcd.id[0] of a domain named by an inode: this bit | st_dev. */
#define SRDMA_XRCD_INODE (1ull << 63)

struct srdma_xrcd {
	struct ibv_xrcd ibxrcd;		/* public; immutable */
	struct srdma_context *ctx;	/* immutable */
	uint64_t id[2];			/* immutable: the domain's identity */
	int lock_fd;			/* immutable: holds LOCK_SH on the
					 * domain's file in the state directory
					 * (-1: private) */
	char lock_name[48];		/* immutable: that file's name,
					 * xrcd.<dev>.<ino> (the last holder
					 * removes it) */
	_Atomic uint32_t usecnt;	/* atomic: XRC SRQs and TGT QPs */
	struct srdma_xrcd *pool_next;	/* xrcd.c's pool lock: closed ones */
};

/**
 * srdma_xrcd_open() - ibv_open_xrcd(3). @a->fd names the domain by its
 * inode (-1: a new private domain); O_CREAT creates it if no process of
 * the host has it open, O_EXCL refuses one that exists.
 * Return: 0 with *@out set, -EINVAL (comp_mask lacks FD or OFLAGS, unknown
 * oflags, O_EXCL on an existing domain), -EOPNOTSUPP (unknown comp_mask
 * bits), -EBADF (bad fd), -EAGAIN (no such domain and no O_CREAT),
 * -ENOMEM. Context: any thread.
 */
int srdma_xrcd_open(struct srdma_context *ctx, struct ibv_xrcd_init_attr *a,
		    struct srdma_xrcd **out);

/**
 * srdma_xrcd_close() - ibv_close_xrcd(3).
 * Return: 0, -EINVAL (not a live XRC domain), -EBUSY (XRC SRQs or TGT QPs
 * still use it). Context: any thread.
 */
int srdma_xrcd_close(struct ibv_xrcd *ibxrcd);

/**
 * srdma_xrcd_drop_inherited() - ibv_close_xrcd of a domain inherited across
 * fork(), after srdma_handle_forget_inherited(): close this process's copy
 * of its lock file, so the parent's close ends the domain. Touches nothing
 * shared and takes no lock. Context: a fork child.
 */
void srdma_xrcd_drop_inherited(struct ibv_xrcd *ibxrcd);

/* Resolve a public XRC domain pointer; NULL if not a live one of ours. */
struct srdma_xrcd *srdma_xrcd_lookup(struct ibv_xrcd *ibxrcd);

/**
 * srdma_srq_create_xrc() - ibv_create_srq_ex(3) with IBV_SRQT_XRC: an SRQ
 * in @a->xrcd whose completions go to @a->cq, its receive buffers in
 * @a->pd. Return: 0 with *@out set, -EINVAL (PD, XRCD or CQ missing or
 * not ours, sizes), -ENOMEM. Context: any thread.
 */
struct srdma_srq;
int srdma_srq_create_xrc(struct srdma_context *ctx,
			 struct ibv_srq_init_attr_ex *a, struct srdma_srq **out);

/* The SRQ number of @srq (ibv_get_srq_num). */
uint32_t srdma_srq_num(const struct srdma_srq *srq);

/**
 * srdma_qp_open() - ibv_open_qp(3): another handle on the XRC_RECV (TGT)
 * QP @a->qp_num of @a->xrcd, created by this or another context of the
 * host. Return: 0 with *@out set, -EINVAL (comp_mask, type, no such QP,
 * or a QP of another domain), -ENOMEM. Context: any thread.
 */
struct srdma_qp;
int srdma_qp_open(struct srdma_context *ctx, struct ibv_qp_open_attr *a,
		  struct srdma_qp **out);

#endif
