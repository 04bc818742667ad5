// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * locality.c - can two contexts of one host use the host transport, or
 * must they talk over the wire? (host.h; docs/design/containers.md)
 *
 * The host transport needs two things of a peer: its registry entry names
 * it (a LID, a pid, a segment), and we may attach its memory with
 * process_vm_readv/writev, which the kernel grants only with ptrace
 * rights. Containers break both without telling anyone:
 *
 *   - another PID namespace: the registry's pid names some other process
 *     of ours, or none (a shared /dev/shm across PID namespaces);
 *   - another /dev/shm, SRDMA_DIR or user: another registry, whose LIDs,
 *     hence QPNs, may be the same numbers as ours;
 *   - Yama ptrace_scope >= 1 (Ubuntu's default), a seccomp filter or an
 *     LSM: the pid is right, the kernel refuses the attach (EPERM).
 *
 * So an entry carries its owner's namespace inodes and a reach flag, and
 * this file provides the pieces the choice (transport/net/select.c) and
 * the LID allocation (segment.c) use:
 *
 *   srdma_ns_self()      the inodes of our network and PID namespaces;
 *   srdma_cma_self_ok()  may we attach same-user processes, and they us?
 *                        Yama's scope (0, or CAP_SYS_PTRACE for 1 and 2),
 *                        and process_vm_readv on ourselves not refused;
 *   srdma_cma_probe()    would the kernel let us attach this pid? A
 *                        one-byte read of address 0 of the peer: the
 *                        permission check comes first (EPERM, ESRCH), an
 *                        allowed attach then fails with EFAULT, so no
 *                        address of the peer is needed;
 *   srdma_lid_lock()     a LID unique in the network namespace, across
 *                        registries and users: an abstract unix socket
 *                        named after the LID, bound for the context's life
 *                        (abstract names are per network namespace, as UDP
 *                        port 4791 and the QPN steering on it are).
 *
 * The library never widens who may attach it (no PR_SET_PTRACER): the
 * security boundary is what the kernel already allows
 * (docs/architecture.md, principle 7); where it allows less, the
 * wire is used.
 *
 *   srdma_lid_held()     is that LID held by a live context of the
 *                        namespace? (judges members of the port 4791
 *                        steering table whose pid is not ours to judge)
 *
 * Concurrency: the held LID sockets are listed under held_lock (an
 * atfork child closes them); the self checks are cached by the caller
 * (per context, at open).
 */
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/host/host.h"
#include "util/log.h"
#include "util/sys.h"

#define CAP_PTRACE_BIT 19	/* CAP_SYS_PTRACE */

static uint32_t ns_inode(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return 0;
	return (uint32_t)st.st_ino;
}

void srdma_ns_self(uint32_t *net, uint32_t *pid)
{
	*net = ns_inode("/proc/self/ns/net");
	*pid = ns_inode("/proc/self/ns/pid");
}

/* Yama's ptrace_scope, 0 when Yama is absent or unreadable. */
static int yama_scope(void)
{
	char buf[16] = "";
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = 0;

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		v = atoi(buf);
	fclose(f);
	return v;
}

static bool have_cap_ptrace(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[CAP_PTRACE_BIT / 32].effective &
	       (1u << (CAP_PTRACE_BIT % 32));
}

bool srdma_cma_self_ok(const char **why)
{
	return srdma_cma_self_ok_scope(yama_scope(), why);
}

bool srdma_cma_self_ok_scope(int scope, const char **why)
{
	static char probe = 1;
	char got = 0;
	struct iovec l = { &got, 1 }, r = { &probe, 1 };

	if (scope >= 3) {
		*why = "Yama ptrace_scope 3: no process may attach another";
		return false;
	}
	if (scope >= 1 && !have_cap_ptrace()) {
		*why = scope == 1 ?
			"Yama ptrace_scope 1: only descendants may be "
			"attached (no CAP_SYS_PTRACE)" :
			"Yama ptrace_scope 2: attaching needs CAP_SYS_PTRACE";
		return false;
	}
	if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1) {
		*why = "process_vm_readv refused (seccomp?)";
		return false;
	}
	*why = NULL;
	return true;
}

int srdma_cma_probe(pid_t pid)
{
	char got;
	struct iovec l = { &got, 1 }, r = { NULL, 1 };

	if (pid <= 0)
		return -ESRCH;
	if (process_vm_readv(pid, &l, 1, &r, 1, 0) >= 0 || errno == EFAULT)
		return 0;
	if (errno == EACCES)
		return -EPERM;
	return -errno;
}

/*
 * The LID sockets this process holds, so that a fork child closes its
 * copies (atfork): a child that kept them would hold its parent's LIDs
 * after the parent's death. held_lock guards held/n_held/cap_held.
 */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static int *held;
static size_t n_held, cap_held;
static pthread_once_t held_once = PTHREAD_ONCE_INIT;

static void held_prepare(void)
{
	pthread_mutex_lock(&held_lock);
}

static void held_parent(void)
{
	pthread_mutex_unlock(&held_lock);
}

static void held_child(void)
{
	size_t i;

	for (i = 0; i < n_held; i++)
		close(held[i]);
	n_held = 0;
	pthread_mutex_unlock(&held_lock);
}

static void held_init(void)
{
	pthread_atfork(held_prepare, held_parent, held_child);
}

static socklen_t lid_addr(uint32_t lid, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* a->sun_path[0] stays '\0': the abstract namespace. */
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
		     "srdma-lid.%u", lid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

int srdma_lid_lock(uint32_t lid)
{
	struct sockaddr_un a;
	socklen_t len = lid_addr(lid, &a);
	int fd, ret;

	pthread_once(&held_once, held_init);
	fd = srdma_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, len)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	pthread_mutex_lock(&held_lock);
	if (n_held == cap_held) {
		size_t c = cap_held ? 2 * cap_held : 8;
		int *p = realloc(held, c * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&held_lock);
			close(fd);
			return -ENOMEM;
		}
		held = p;
		cap_held = c;
	}
	held[n_held++] = fd;
	pthread_mutex_unlock(&held_lock);
	return fd;
}

void srdma_lid_unlock(int fd)
{
	size_t i;

	if (fd < 0)
		return;
	pthread_mutex_lock(&held_lock);
	for (i = 0; i < n_held; i++)
		if (held[i] == fd)
			break;
	/* Not ours any more (a fork child closed it): leave it alone,
	 * the number may name another file now. */
	if (i < n_held) {
		held[i] = held[--n_held];
		close(fd);
	}
	pthread_mutex_unlock(&held_lock);
}

bool srdma_lid_held(uint32_t lid)
{
	struct sockaddr_un a;
	socklen_t len = lid_addr(lid, &a);
	int fd = srdma_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool bound;

	if (fd < 0)
		return false;
	/* connect() to an unbound abstract name fails (ECONNREFUSED). */
	bound = !connect(fd, (struct sockaddr *)&a, len);
	close(fd);
	return bound;
}
