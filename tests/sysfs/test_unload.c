// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_unload.c - softrdma's libraries loaded with dlopen(), used, and
 * unloaded with dlclose(), as Open MPI does with the libibverbs behind its
 * openib BTL at MPI_Finalize (its ranks keep running afterwards).
 *
 * The library leaves process-wide state behind that outlives every
 * context: a SIGBUS handler (the shared-memory guard) and, for librdmacm,
 * the CM service thread. Were the code unmapped under them, the next
 * SIGBUS of the process, or the thread's next wake-up, would jump into
 * nothing. So after both dlclose() calls this program raises SIGBUS, which
 * must reach the handler it installed before loading softrdma (the guard
 * chains to it), and it then waits a moment for the service thread.
 *
 * Usage: test_unload LIBDIR (softrdma's build/lib). Not linked against
 * libibverbs: everything goes through dlsym(). Exit 0 on success.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static volatile sig_atomic_t got_bus;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	got_bus = 1;
}

static void *need(void *h, const char *name)
{
	void *f = dlsym(h, name);

	if (!f) {
		fprintf(stderr, "test_unload: no %s: %s\n", name, dlerror());
		exit(2);
	}
	return f;
}

#define FN(h, name) ((__typeof__(&name))need(h, #name))

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;
	struct sigaction sa = { 0 };
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct rdma_cm_id *id;
	char path[4096];
	void *hv, *hc;
	int n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: test_unload LIBDIR\n");
		return 2;
	}
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL))
		return 2;

	snprintf(path, sizeof(path), "%s/libibverbs.so.1", argv[1]);
	hv = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	snprintf(path, sizeof(path), "%s/librdmacm.so.1", argv[1]);
	hc = hv ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!hv || !hc) {
		fprintf(stderr, "test_unload: %s\n", dlerror());
		return 2;
	}
	if (!dlsym(hv, "ibv_reg_mr_relaxed")) {
		fprintf(stderr, "test_unload: %s is not softrdma's\n", argv[1]);
		return 2;
	}

	/* Verbs: list, open, close (the registry and the SIGBUS guard). */
	list = FN(hv, ibv_get_device_list)(&n);
	if (!list || n < 1) {
		fprintf(stderr, "test_unload: no device\n");
		return 1;
	}
	ctx = FN(hv, ibv_open_device)(list[0]);
	if (!ctx) {
		fprintf(stderr, "test_unload: open: %s\n", strerror(errno));
		return 1;
	}
	FN(hv, ibv_close_device)(ctx);
	FN(hv, ibv_free_device_list)(list);

	/* The CM: a listener starts the service thread. */
	ch = FN(hc, rdma_create_event_channel)();
	if (!ch || FN(hc, rdma_create_id)(ch, &id, NULL, RDMA_PS_TCP)) {
		fprintf(stderr, "test_unload: CM id: %s\n", strerror(errno));
		return 1;
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (FN(hc, rdma_bind_addr)(id, (struct sockaddr *)&sin) ||
	    FN(hc, rdma_listen)(id, 1)) {
		fprintf(stderr, "test_unload: listen: %s\n", strerror(errno));
		return 1;
	}
	FN(hc, rdma_destroy_id)(id);
	FN(hc, rdma_destroy_event_channel)(ch);

	if (dlclose(hc) || dlclose(hv)) {
		fprintf(stderr, "test_unload: dlclose: %s\n", dlerror());
		return 1;
	}
	raise(SIGBUS);
	if (!got_bus) {
		fprintf(stderr, "test_unload: SIGBUS did not reach the "
				"program's own handler\n");
		return 1;
	}
	usleep(300000);	/* the CM thread, if it wakes, must find its code */
	printf("test_unload: unloaded; SIGBUS reached the program's handler\n");
	return 0;
}
