// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dm.c - device memory: ibv_alloc_dm, ibv_free_dm, ibv_memcpy_to/from_dm
 * and ibv_reg_dm_mr (docs/design/dm.md).
 *
 * A NIC's device memory is a small on-chip SRAM that the host maps and
 * peers reach by RDMA through zero-based MRs. Here it is a file of
 * SRDMA_DIR, dm.<lid>.<pid>.<handle>, mapped shared by the owning process
 * and charged against a per-context budget of max_dm_size bytes. Nothing
 * else about it is special: an MR over it is an ordinary zero-based
 * registration whose key entry points at the mapping, so the host
 * transport (cross-memory attach) and the net responder reach it without
 * the owner doing anything.
 *
 * The file is what makes a DM shareable with a process that imported the
 * owner's context (ibv_import_dm, docs/design/import.md): the importer
 * maps the same file, so copies and MRs on either side reach the same
 * bytes. The file's header page is the DM's shared state: one atomic word
 * counts the MRs over the DM in every process and carries the FREED bit,
 * set by compare-and-swap from 0 by whichever process destroys the DM
 * (ibv_free_dm; EBUSY while MRs use it, as the kernel's usecnt). After it,
 * every copy and registration on any side is EINVAL, and the bytes stay
 * mapped until each side releases its own object, so nothing crashes. The
 * destroyer unlinks the file; a dead owner's files go with its context
 * (registry.c's reaper). Copies go through the fault-guarded self copy: a
 * file another process truncated is EFAULT, not SIGBUS.
 *
 * Rules, as rdma-core's man pages give them and mlx5 applies them where
 * the man pages are silent: comp_mask must be 0 and the length at most
 * max_dm_size (EINVAL); the budget exhausted is ENOMEM (the kernel's
 * answer); copies use 4-byte units (EINVAL) inside the DM (EFAULT);
 * ibv_free_dm is EBUSY while an MR uses the DM (the kernel's usecnt).
 *
 * Stale pointers: ibv_free_dm and ibv_memcpy_*_dm are inline in the
 * application and read dm->context or the copy function pointers before
 * we can check anything. Freed DM structs are therefore never returned to
 * malloc: they go to a spare list and keep their context and function
 * pointers, so a double free or a copy after free reaches our check and
 * fails with EINVAL instead of touching freed memory. The list is bounded
 * by the most DMs ever live at once.
 *
 * fork(): a DM may be allocated on a context inherited from the parent
 * (the child's copy of a real uverbs fd still works too): it is private
 * anonymous memory of the child (no file: the inherited context's LID is
 * not the child's to name files with), charged to the child's copy of the
 * budget, and used by copies only (its context has no live PD to register
 * it with).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/dm.h"
#include "core/import.h"
#include "util/fault.h"
#include "util/log.h"
#include "util/selfcopy.h"

#define DM_ACCESS_OK                                                           \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_ZERO_BASED)

static pthread_mutex_t dm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srdma_dm *dm_spare;	/* dm_lock: freed DM structs */
static uint32_t dm_next_handle = 1;	/* dm_lock: process-wide */

/* Hold dm_lock across fork() so the child's spare list is consistent. */
static void dm_prepare(void)
{
	pthread_mutex_lock(&dm_lock);
}

static void dm_unlock(void)
{
	pthread_mutex_unlock(&dm_lock);
}

__attribute__((constructor)) static void dm_register_atfork(void)
{
	pthread_atfork(dm_prepare, dm_unlock, dm_unlock);
}

/* Charge @n bytes to @ctx's budget, or fail without charging. */
static bool dm_charge(struct srdma_context *ctx, uint64_t n)
{
	uint64_t used = atomic_load(&ctx->dm_used);

	do {
		if (used > SRDMA_MAX_DM_SIZE || n > SRDMA_MAX_DM_SIZE - used)
			return false;
	} while (!atomic_compare_exchange_weak(&ctx->dm_used, &used,
					       used + n));
	return true;
}

/* A DM struct from the spare list or malloc, zeroed. */
static struct srdma_dm *dm_get_struct(void)
{
	struct srdma_dm *dm;

	pthread_mutex_lock(&dm_lock);
	dm = dm_spare;
	if (dm)
		dm_spare = dm->next_free;
	pthread_mutex_unlock(&dm_lock);
	if (!dm)
		dm = calloc(1, sizeof(*dm));
	if (dm)
		memset(dm, 0, sizeof(*dm));
	return dm;
}

/* Back to the spare list (the header comment: never to malloc). */
static void dm_put_struct(struct srdma_dm *dm)
{
	pthread_mutex_lock(&dm_lock);
	dm->next_free = dm_spare;
	dm_spare = dm;
	pthread_mutex_unlock(&dm_lock);
}

/* The file offset of the bytes: the header's page. */
static uint64_t dm_data_off(void)
{
	return srdma_page_size;
}

/*
 * Create, size and map @dm's file (dm->name set) for @map_len bytes of
 * @ctx's DM, and fill its header. Return: 0 or -ENOMEM (any failure of
 * the file system is the device's memory running out).
 */
static int dm_file_new(struct srdma_context *ctx, struct srdma_dm *dm,
		       size_t map_len)
{
	size_t total = dm_data_off() + map_len;
	struct srdma_shm_dm *sh;
	void *map;
	int fd;

	fd = openat(ctx->host.dirfd, dm->name,
		    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* A dead namesake's (same pid, LID and handle): stale. */
		unlinkat(ctx->host.dirfd, dm->name, 0);
		fd = openat(ctx->host.dirfd, dm->name,
			    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
			    0600);
	}
	if (fd < 0) {
		srdma_dbg("alloc_dm: cannot create %s: %s", dm->name,
			  strerror(errno));
		return -ENOMEM;
	}
	if (ftruncate(fd, (off_t)total)) {
		srdma_dbg("alloc_dm: cannot size %s: %s", dm->name,
			  strerror(errno));
		goto err;
	}
	map = SRDMA_FAULT(DM_ALLOC) ? MAP_FAILED
		: mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto err;
	close(fd);
	sh = map;
	sh->version = SRDMA_DM_VERSION;
	sh->hdr_size = sizeof(*sh);
	sh->owner_pid = ctx->host.seg->owner_pid;
	sh->lid = ctx->host.lid;
	sh->owner_start = ctx->host.seg->owner_start;
	sh->length = dm->length;
	sh->data_off = dm_data_off();
	sh->data_len = map_len;
	sh->handle = dm->ibdm.handle;
	atomic_store(&sh->use, 0);
	/* Last, though nobody reads it before we return: an importer
	 * learns the handle from the application, after this. */
	sh->magic = SRDMA_DM_MAGIC;
	dm->sh = sh;
	dm->map = map;
	dm->map_len = total;
	dm->base = (uint8_t *)map + dm_data_off();
	return 0;
err:
	close(fd);
	unlinkat(ctx->host.dirfd, dm->name, 0);
	return -ENOMEM;
}

int srdma_dm_alloc(struct srdma_context *ctx, bool inherited,
		   const struct ibv_alloc_dm_attr *attr, struct srdma_dm **out)
{
	struct srdma_dm *dm;
	uint64_t charged;
	size_t map_len;
	void *base;
	int ret;

	if (!attr || attr->comp_mask)
		return -EINVAL;
	if (!attr->length || attr->length > SRDMA_MAX_DM_SIZE) {
		srdma_dbg("alloc_dm: length %zu, max_dm_size %u", attr->length,
			  SRDMA_MAX_DM_SIZE);
		return -EINVAL;
	}
	if (attr->log_align_req > SRDMA_DM_MAX_LOG_ALIGN)
		return -EINVAL;
	charged = (attr->length + SRDMA_DM_GRAIN - 1) &
		  ~(uint64_t)(SRDMA_DM_GRAIN - 1);
	if (!dm_charge(ctx, charged)) {
		srdma_dbg("alloc_dm: %" PRIu64 " bytes: device memory used up",
			  charged);
		return -ENOMEM;
	}
	map_len = (attr->length + srdma_page_size - 1) &
		  ~(srdma_page_size - 1);
	dm = dm_get_struct();
	if (!dm) {
		ret = -ENOMEM;
		goto err_uncharge;
	}
	dm->ctx = ctx;
	dm->length = attr->length;
	dm->charged = charged;
	dm->fork_child = inherited;
	dm->ibdm.context = &ctx->vctx.context;
	pthread_mutex_lock(&dm_lock);
	dm->ibdm.handle = dm_next_handle++;
	if (dm_next_handle >= SRDMA_DM_LOCAL_HANDLE)
		dm_next_handle = 1;
	pthread_mutex_unlock(&dm_lock);
	if (ctx->import)	/* never mistaken for one of the source's */
		dm->ibdm.handle |= SRDMA_DM_LOCAL_HANDLE;
	if (inherited) {
		base = SRDMA_FAULT(DM_ALLOC) ? MAP_FAILED
			: mmap(NULL, map_len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (base == MAP_FAILED) {
			ret = -ENOMEM;
			goto err_spare;
		}
		dm->map = dm->base = base;
		dm->map_len = map_len;
		dm->sh = &dm->local_sh;
	} else {
		snprintf(dm->name, sizeof(dm->name), "dm.%u.%d.%u",
			 ctx->host.lid, (int)ctx->host.seg->owner_pid,
			 dm->ibdm.handle);
		ret = dm_file_new(ctx, dm, map_len);
		if (ret)
			goto err_spare;
	}
	ret = srdma_handle_add(dm, SRDMA_OBJ_DM);
	if (ret)
		goto err_unmap;
	atomic_fetch_add(&ctx->n_dm, 1);
	*out = dm;
	return 0;

err_unmap:
	munmap(dm->map, dm->map_len);
	if (dm->name[0])
		unlinkat(ctx->host.dirfd, dm->name, 0);
err_spare:
	dm_put_struct(dm);
err_uncharge:
	atomic_fetch_sub(&ctx->dm_used, charged);
	return ret;
}

static struct srdma_dm *dm_lookup(struct ibv_dm *ibdm)
{
	if (!srdma_handle_check(ibdm, SRDMA_OBJ_DM))
		return NULL;
	return container_of(ibdm, struct srdma_dm, ibdm);
}

/* Take one use of @dm for an MR: false once it is destroyed. */
static bool dm_use_get(struct srdma_dm *dm)
{
	uint32_t u = atomic_load(&dm->sh->use);

	do {
		if (u & SRDMA_DM_FREED || u + 1 >= SRDMA_DM_FREED)
			return false;
	} while (!atomic_compare_exchange_weak(&dm->sh->use, &u, u + 1));
	return true;
}

static void dm_use_put(struct srdma_dm *dm)
{
	uint32_t u = atomic_load(&dm->sh->use);

	do {
		if (!(u & ~SRDMA_DM_FREED))
			return;		/* another process broke the count */
	} while (!atomic_compare_exchange_weak(&dm->sh->use, &u, u - 1));
}

static bool dm_destroyed(const struct srdma_dm *dm)
{
	return atomic_load(&dm->sh->use) & SRDMA_DM_FREED;
}

/* Forget @dm (deleted from the handle table already): unmap, uncharge. */
static void dm_release(struct srdma_dm *dm)
{
	munmap(dm->map, dm->map_len);
	atomic_fetch_sub(&dm->ctx->dm_used, dm->charged);
	atomic_fetch_sub(&dm->ctx->n_dm, 1);
	/* ibdm keeps its context and copy functions (see the header). */
	dm->base = NULL;
	dm->map = NULL;
	dm->length = 0;
	dm_put_struct(dm);
}

int srdma_dm_free(struct ibv_dm *ibdm)
{
	struct srdma_dm *dm = dm_lookup(ibdm);
	uint32_t u;

	if (!dm) {
		/* A fork child freeing its parent's DM: forget it. The
		 * child's copy of the mapping is left to exit/exec. */
		if (ibdm && srdma_handle_forget_inherited(ibdm, SRDMA_OBJ_DM))
			return 0;
		return -EINVAL;
	}
	if (atomic_load(&dm->n_mr)) {
		srdma_dbg("free_dm %u: %u MR(s) still registered",
			  ibdm->handle, atomic_load(&dm->n_mr));
		return -EBUSY;
	}
	/* Destroy it for everybody, unless MRs of another process use it
	 * or another process destroyed it already. */
	u = atomic_load(&dm->sh->use);
	while (!(u & SRDMA_DM_FREED)) {
		if (u && !dm->imported && !dm->fork_child &&
		    !srdma_import_has_importers(dm->ctx)) {
			/* Nobody imports our context any more: these are
			 * the MRs of importers that died. */
			srdma_info("free_dm %u: %u MR(s) of dead importers dropped",
				   ibdm->handle, u);
			if (!atomic_compare_exchange_strong(&dm->sh->use, &u,
							    0))
				continue;
			u = 0;
		}
		if (u) {
			srdma_dbg("free_dm %u: %u MR(s) of other processes still registered",
				  ibdm->handle, u);
			return -EBUSY;
		}
		if (atomic_compare_exchange_weak(&dm->sh->use, &u,
						 SRDMA_DM_FREED)) {
			if (dm->name[0])
				unlinkat(dm->ctx->host.dirfd, dm->name, 0);
			break;
		}
	}
	/* A concurrent free may have won between the check and here. */
	if (!srdma_handle_del(dm, SRDMA_OBJ_DM))
		return -EINVAL;
	if (!dm->imported && dm->name[0])
		unlinkat(dm->ctx->host.dirfd, dm->name, 0);
	dm_release(dm);
	return 0;
}

int srdma_dm_copy(struct ibv_dm *ibdm, bool to_dm, uint64_t offset,
		  void *host, size_t length)
{
	struct srdma_dm *dm = dm_lookup(ibdm);

	struct iovec h = { host, length }, d;

	if (!dm)
		return -EINVAL;
	if (dm_destroyed(dm) ||
	    (dm->imported && !srdma_import_live(dm->ctx, false))) {
		srdma_dbg("memcpy %s DM %u: destroyed by another process, or its owner is gone",
			  to_dm ? "to" : "from", ibdm->handle);
		return -EINVAL;
	}
	if (offset > dm->length || length > dm->length - offset)
		return -EFAULT;
	if ((offset | length) & (SRDMA_DM_COPY_ALIGN - 1))
		return -EINVAL;
	if (!length)
		return 0;
	if (!host)
		return -EFAULT;
	d.iov_base = dm->base + offset;
	d.iov_len = length;
	if (srdma_self_vm_rw(&h, 1, &d, 1, to_dm) != (ssize_t)length) {
		srdma_dbg("memcpy %s DM %u: memory not accessible",
			  to_dm ? "to" : "from", ibdm->handle);
		return -EFAULT;
	}
	return 0;
}

int srdma_dm_reg_mr(struct ibv_pd *ibpd, struct ibv_dm *ibdm, uint64_t offset,
		    size_t length, unsigned int access, struct srdma_mr **out)
{
	struct srdma_pd *pd = srdma_pd_lookup(ibpd);
	struct srdma_dm *dm = dm_lookup(ibdm);
	struct srdma_mr_args a;
	int ret;

	if (!pd || !dm || dm->ctx != pd->ctx)
		return -EINVAL;
	if (!(access & IBV_ACCESS_ZERO_BASED) || (access & ~DM_ACCESS_OK)) {
		srdma_dbg("reg_dm_mr: access %#x (ZERO_BASED required; "
			  "allowed %#x)", access, DM_ACCESS_OK);
		return -EINVAL;
	}
	if (offset > dm->length || length > dm->length - offset)
		return -EINVAL;
	if (!dm_use_get(dm)) {
		srdma_dbg("reg_dm_mr: DM %u was destroyed", ibdm->handle);
		return -EINVAL;
	}
	memset(&a, 0, sizeof(a));
	a.addr = dm->base + offset;
	a.length = length;
	a.iova = 0;
	a.access = access;
	a.dmabuf_fd = -1;
	a.dm = dm;
	/* Counted first, so a racing free_dm sees the MR coming. */
	atomic_fetch_add(&dm->n_mr, 1);
	ret = srdma_mr_reg(ibpd, &a, out);
	if (ret) {
		atomic_fetch_sub(&dm->n_mr, 1);
		dm_use_put(dm);
	}
	return ret;
}

void srdma_dm_mr_put(struct srdma_dm *dm)
{
	dm_use_put(dm);
	atomic_fetch_sub(&dm->n_mr, 1);
}

struct dm_match {
	struct srdma_context *ctx;
	uint32_t handle;
};

static bool dm_match(const void *p, void *arg)
{
	const struct srdma_dm *dm = p;
	const struct dm_match *m = arg;

	/* Each import of another process's DM is an object of its own. */
	return dm->ctx == m->ctx && dm->ibdm.handle == m->handle &&
	       !dm->imported;
}

struct srdma_dm *srdma_dm_find(struct srdma_context *ctx, uint32_t handle)
{
	struct dm_match m = { .ctx = ctx, .handle = handle };

	return srdma_handle_find(SRDMA_OBJ_DM, dm_match, &m);
}

/* ---- import ------------------------------------------------------------- */

/* Does the header @sh (read from the file, @size bytes) describe DM
 * @handle of the source @imp, live? */
static bool dm_hdr_ok(const struct srdma_shm_dm *sh, uint64_t size,
		      const struct srdma_import *imp, uint32_t handle)
{
	return sh->magic == SRDMA_DM_MAGIC &&
	       sh->version == SRDMA_DM_VERSION &&
	       sh->hdr_size == sizeof(*sh) && sh->owner_pid == imp->pid &&
	       sh->owner_start == imp->start && sh->lid == imp->lid &&
	       sh->handle == handle && sh->length &&
	       sh->length <= SRDMA_MAX_DM_SIZE &&
	       sh->data_off == dm_data_off() &&
	       sh->data_len >= sh->length &&
	       sh->data_len <= SRDMA_MAX_DM_SIZE &&
	       !(sh->data_len & (srdma_page_size - 1)) &&
	       sh->data_off + sh->data_len <= size &&
	       !(atomic_load(&sh->use) & SRDMA_DM_FREED);
}

int srdma_dm_import(struct srdma_context *ctx, uint32_t handle,
		    struct srdma_dm **out)
{
	const struct srdma_import *imp = ctx->import;
	struct srdma_shm_dm hdr;
	struct srdma_dm *dm;
	struct stat st;
	size_t total;
	void *map;
	int fd, ret;

	if (!imp || !handle || handle >= SRDMA_DM_LOCAL_HANDLE ||
	    !srdma_import_live(ctx, true))
		return -EINVAL;
	dm = dm_get_struct();
	if (!dm)
		return -ENOMEM;
	snprintf(dm->name, sizeof(dm->name), "dm.%u.%d.%u", imp->lid,
		 (int)imp->pid, handle);
	fd = openat(ctx->host.dirfd, dm->name,
		    O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() ||
	    pread(fd, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr) ||
	    !dm_hdr_ok(&hdr, (uint64_t)st.st_size, imp, handle)) {
		srdma_dbg("import_dm: pid %d has no live DM %u", imp->pid,
			  handle);
		ret = -EINVAL;
		goto err;
	}
	total = hdr.data_off + hdr.data_len;
	map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -ENOMEM;
		goto err;
	}
	close(fd);
	fd = -1;
	dm->ctx = ctx;
	dm->imported = true;
	dm->sh = map;
	dm->map = map;
	dm->map_len = total;
	dm->base = (uint8_t *)map + hdr.data_off;
	dm->length = hdr.length;	/* ours: the mapping is sized by it */
	dm->ibdm.context = &ctx->vctx.context;
	dm->ibdm.handle = handle;
	ret = srdma_handle_add(dm, SRDMA_OBJ_DM);
	if (ret) {
		munmap(map, total);
		goto err;
	}
	atomic_fetch_add(&ctx->n_dm, 1);
	srdma_dbg("import_dm: DM %u of pid %d, %" PRIu64 " bytes", handle,
		  imp->pid, dm->length);
	*out = dm;
	return 0;
err:
	if (fd >= 0)
		close(fd);
	dm_put_struct(dm);
	return ret;
}

int srdma_dm_unimport(struct ibv_dm *ibdm)
{
	struct srdma_dm *dm = dm_lookup(ibdm);

	if (!dm)
		return -EINVAL;
	if (!dm->imported)
		return 0;	/* an alias of our own DM: nothing to undo */
	if (atomic_load(&dm->n_mr)) {
		srdma_dbg("unimport_dm %u: %u MR(s) of ours over it",
			  ibdm->handle, atomic_load(&dm->n_mr));
		return -EBUSY;
	}
	if (!srdma_handle_del(dm, SRDMA_OBJ_DM))
		return -EINVAL;
	dm_release(dm);
	return 0;
}
