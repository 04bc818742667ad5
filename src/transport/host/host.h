/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * host.h - the host transport's view of host-wide state: the registry of
 * live contexts and the per-context control segments (shm_layout.h).
 *
 * A context attaches once (srdma_host_attach) at ibv_open_device: it claims
 * a registry entry, which fixes its LID and QPN range, and creates its
 * segment. Other processes map that segment read-write to validate keys
 * and mark accesses in flight. Nothing here touches application memory.
 */
#ifndef SRDMA_TRANSPORT_HOST_HOST_H
#define SRDMA_TRANSPORT_HOST_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/types.h>

#include "transport/host/shm_layout.h"

struct srdma_registry {
	int fd;				/* registry file, O_RDWR */
	struct srdma_reg_hdr *hdr;	/* mapping; immutable after open */
	struct srdma_reg_entry *ent;	/* hdr + entries_off */
	size_t map_len;
};

struct srdma_host_ctx {
	struct srdma_registry reg;	/* immutable after attach */
	int reg_index;			/* immutable; LID = reg_index + 1 */
	uint32_t lid;			/* immutable */
	int seg_fd;			/* immutable */
	struct srdma_seg_hdr *seg;	/* immutable mapping */
	size_t seg_size;		/* immutable */
	pid_t pid;			/* immutable: owner at attach time */
	uint64_t start_time;		/* immutable */
	char seg_name[48];		/* immutable */
	char dir[256];			/* immutable: SRDMA_DIR resolved */
	_Atomic uint64_t acc_busy;	/* bitmap of access records in use */
};

/* A mapping of some context's segment (possibly our own, possibly dead). */
struct srdma_peer_seg {
	struct srdma_seg_hdr *seg;
	size_t size;
};

/**
 * srdma_host_dir() - resolve SRDMA_DIR (default /dev/shm/srdma-<uid>) and
 * make sure it exists, is ours and is mode 0700.
 * @buf: receives the path; @len: its size
 * Return: 0, or -errno (-EACCES when the directory belongs to another user).
 */
int srdma_host_dir(char *buf, size_t len);

/**
 * srdma_registry_open() - map (creating if needed) the host registry.
 * @dir: SRDMA_DIR; @r: filled on success
 * Return: 0 or -errno. Release with srdma_registry_close().
 */
int srdma_registry_open(const char *dir, struct srdma_registry *r);
void srdma_registry_close(struct srdma_registry *r);

/**
 * srdma_registry_reap() - free registry entries whose owner is dead,
 * releasing the in-flight marks its access records still hold and removing
 * its segment file.
 * Requires: the registry flock held exclusively (srdma_registry_lock()).
 * Return: number of entries reaped.
 */
int srdma_registry_reap(struct srdma_registry *r, const char *dir);
int srdma_registry_lock(struct srdma_registry *r, bool exclusive);
void srdma_registry_unlock(struct srdma_registry *r);

/**
 * srdma_proc_start_time() - start time of @pid in clock ticks since boot.
 * Return: the start time, or 0 if the process does not exist.
 */
uint64_t srdma_proc_start_time(pid_t pid);

/**
 * srdma_proc_alive() - true if @pid exists and started at @start_time (a
 * recycled pid is not mistaken for the old owner).
 */
bool srdma_proc_alive(pid_t pid, uint64_t start_time);

/**
 * srdma_host_unlink_fifos() - remove the wake-up FIFOs (completion
 * channels, async fd) of the context @lid owned by @pid.
 */
void srdma_host_unlink_fifos(const char *dir, uint32_t lid, pid_t pid);

/**
 * srdma_host_attach() - claim a registry entry and create this context's
 * segment with @key_slots key table entries.
 * @h: zeroed by the caller; filled on success
 * @dev_name: device name recorded for srdma status
 * Context: ibv_open_device; may block on the registry flock.
 * Return: 0, -ENOSPC when all LIDs are taken, or another -errno.
 */
int srdma_host_attach(struct srdma_host_ctx *h, const char *dev_name,
		      uint32_t key_slots);

/**
 * srdma_host_publish() - make the attached segment visible to peers
 * (segment magic, then the registry entry's LIVE state).
 * Requires: the header, including the key scramble parameters, is complete.
 */
void srdma_host_publish(struct srdma_host_ctx *h);

/**
 * srdma_host_detach() - release the registry entry and delete the segment.
 * Requires: no access of ours is in flight anywhere.
 */
void srdma_host_detach(struct srdma_host_ctx *h);

/**
 * srdma_peer_seg_map() - map the segment named @seg_name under @dir and
 * check its magic, version and sizes.
 * Return: 0 or -errno (-EPROTO for a malformed or foreign-version segment).
 */
int srdma_peer_seg_map(const char *dir, const char *seg_name,
		       struct srdma_peer_seg *p);
void srdma_peer_seg_unmap(struct srdma_peer_seg *p);

/**
 * srdma_host_release_dead_holders() - drop the in-flight marks that dead
 * initiators hold on @slot of our own key table.
 * Context: called by a drain that waited too long; takes the registry
 * flock shared.
 * Return: number of marks released.
 */
int srdma_host_release_dead_holders(struct srdma_host_ctx *h, uint32_t slot);

/**
 * srdma_host_acc_reserve() / srdma_host_acc_release() - an access record of
 * this context for one in-flight access.
 * Return: record index, or -EAGAIN when all are busy (caller retries).
 */
int srdma_host_acc_reserve(struct srdma_host_ctx *h);
void srdma_host_acc_release(struct srdma_host_ctx *h, int idx);

static inline struct srdma_shm_access *
srdma_seg_access(struct srdma_seg_hdr *s, unsigned int i)
{
	return (struct srdma_shm_access *)((char *)s + s->acc_off) + i;
}

/**
 * srdma_shm_mutex_init() - make @m a process-shared robust mutex.
 * Return: 0 or -errno.
 */
int srdma_shm_mutex_init(pthread_mutex_t *m);
/**
 * srdma_shm_lock() - lock a shared mutex, recovering it when its holder
 * died. Return: true if the previous holder died inside its section.
 */
bool srdma_shm_lock(pthread_mutex_t *m);
void srdma_shm_unlock(pthread_mutex_t *m);

static inline struct srdma_shm_cq *srdma_seg_cq(struct srdma_seg_hdr *s,
						unsigned int i)
{
	return (struct srdma_shm_cq *)((char *)s + s->cq_off) + i;
}

static inline struct srdma_shm_qp *srdma_seg_qp(struct srdma_seg_hdr *s,
						unsigned int i)
{
	return (struct srdma_shm_qp *)((char *)s + s->qp_off) + i;
}

static inline struct srdma_shm_srq *srdma_seg_srq(struct srdma_seg_hdr *s,
						  unsigned int i)
{
	return (struct srdma_shm_srq *)((char *)s + s->srq_off) + i;
}

static inline struct srdma_shm_aq *srdma_seg_aq(struct srdma_seg_hdr *s)
{
	return (struct srdma_shm_aq *)((char *)s + s->aq_off);
}

static inline void *srdma_seg_ptr(struct srdma_seg_hdr *s, uint64_t off)
{
	return (char *)s + off;
}

static inline struct srdma_shm_key *srdma_seg_keys(struct srdma_seg_hdr *s)
{
	return (struct srdma_shm_key *)((char *)s + s->key_off);
}

#endif
