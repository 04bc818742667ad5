// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * relaxed_prog.c - what a user of the relaxed-MR calls writes, built by
 * tests/install/install_lib.sh with nothing but
 *   cc relaxed_prog.c $(pkg-config --cflags --libs softrdma)
 * against an installed softrdma (a prefix, or the .deb), and run with no
 * LD_LIBRARY_PATH and no `srdma run`: softrdma.pc's run path must bring
 * softrdma's libibverbs.so.1. Opens srdma0, registers a relaxed MR,
 * deregisters it, flushes the PD. Prints "relaxed: ok lkey=..." and exits
 * 0, or says what failed and exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs_relaxed.h>

int main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	long page = sysconf(_SC_PAGESIZE);
	void *buf;
	int n, ret;

	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(stderr, "relaxed: no RDMA device (%s)\n",
			strerror(errno));
		return 1;
	}
	if (strcmp(ibv_get_device_name(list[0]), "srdma0")) {
		fprintf(stderr, "relaxed: first device is %s, not srdma0\n",
			ibv_get_device_name(list[0]));
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd || posix_memalign(&buf, page, 4 * page)) {
		fprintf(stderr, "relaxed: open/alloc_pd failed\n");
		return 1;
	}
	mr = ibv_reg_mr_relaxed(pd, buf, 4 * page,
				IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		fprintf(stderr, "relaxed: ibv_reg_mr_relaxed: %s\n",
			strerror(errno));
		return 1;
	}
	printf("relaxed: ok lkey=0x%x\n", mr->lkey);
	ret = ibv_dereg_mr_relaxed(mr);
	if (!ret)
		ret = ibv_flush_relaxed_mr(pd);
	if (ret) {
		fprintf(stderr, "relaxed: dereg/flush: %s\n", strerror(ret));
		return 1;
	}
	free(buf);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
