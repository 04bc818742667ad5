// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * reg_demo.c - a tour of memory registration on softrdma, written as any
 * verbs program would be (it links libibverbs and nothing else): register
 * buffers with different access flags, show the keys, then show the clear
 * errors softrdma gives for the misuse that real hardware reports (or
 * crashes on). Run it through `srdma run`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>
#include <infiniband/verbs_relaxed.h>

static void show(const char *what, struct ibv_mr *mr)
{
	if (mr)
		printf("  %-52s ok    lkey=rkey=%#010x addr=%p len=%zu\n", what,
		       mr->lkey, mr->addr, mr->length);
	else
		printf("  %-52s fails errno=%d (%s)\n", what, errno,
		       strerror(errno));
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	size_t len = 1 << 20, pg = 4096;
	struct ibv_mr *mr, *mr2, *odp, *rel;
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	char *buf, *ro;

	if (!list || !list[0]) {
		fprintf(stderr, "no RDMA device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (!ctx || !(pd = ibv_alloc_pd(ctx))) {
		perror("open/alloc_pd");
		return 1;
	}
	ibv_query_port(ctx, 1, &pa);
	printf("device %s, port 1 %s, LID %u\n", ibv_get_device_name(list[0]),
	       ibv_port_state_str(pa.state), pa.lid);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(buf, 0, len);

	printf("registrations:\n");
	mr = ibv_reg_mr(pd, buf, len,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ);
	show("1 MiB, LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ", mr);
	mr2 = ibv_reg_mr_iova(pd, buf, pg, 0, IBV_ACCESS_LOCAL_WRITE);
	show("4 KiB at iova 0", mr2);
	odp = ibv_reg_mr(pd, NULL, SIZE_MAX,
			 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE);
	show("implicit ODP (whole address space)", odp);
	rel = ibv_reg_mr_relaxed(pd, buf + 100, 1000, IBV_ACCESS_REMOTE_READ);
	show("relaxed MR (access to the end of the page)", rel);

	printf("misuse, reported instead of corrupting memory:\n");
	show("REMOTE_WRITE without LOCAL_WRITE",
	     ibv_reg_mr(pd, buf, len, IBV_ACCESS_REMOTE_WRITE));
	show("LOCAL_WRITE on read-only memory",
	     ibv_reg_mr(pd, ro, pg, IBV_ACCESS_LOCAL_WRITE));
	munmap(ro, pg);
	show("memory that is not mapped", ibv_reg_mr(pd, ro, pg, 0));
	show("length 0", ibv_reg_mr(pd, buf, 0, 0));
	show("NULL protection domain", ibv_reg_mr(NULL, buf, len, 0));
	printf("  %-52s -> %s\n", "dealloc PD while MRs use it",
	       strerror(ibv_dealloc_pd(pd)));

	if (getenv("SRDMA_DEMO_PAUSE")) {
		printf("paused: run `srdma status` in another shell\n");
		getchar();
	}
	ibv_dereg_mr_relaxed(rel);
	ibv_flush_relaxed_mr(pd);
	ibv_dereg_mr(odp);
	ibv_dereg_mr(mr2);
	ibv_dereg_mr(mr);
	printf("  %-52s -> %s\n", "dereg the same MR twice",
	       strerror(ibv_dereg_mr(mr)));
	printf("clean up: dealloc_pd %d", ibv_dealloc_pd(pd));
	printf(", close_device %d\n", ibv_close_device(ctx));
	ibv_free_device_list(list);
	munmap(buf, len);
	return 0;
}
