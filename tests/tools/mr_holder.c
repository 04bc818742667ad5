// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * mr_holder.c - a process that holds a few memory regions for test_srdma.sh.
 *
 * Opens the softrdma device (SRDMA_DEVICE, else the first device), allocates
 * a PD, registers MRs with different access flags (and an MW when the device
 * supports them), prints one line per object and then "ready", and waits
 * until stdin reaches EOF or SIGTERM/SIGINT arrives; then it releases
 * everything in order, so a clean exit can be told from SIGKILL.
 *
 * Output, one object per line (parsed by the test):
 *   pid <pid>
 *   pd handle <handle>
 *   mr lkey 0x<lkey> rkey 0x<rkey> addr 0x<addr> len <len> access 0x<access>
 *   mw rkey 0x<rkey> type <1|2>
 *   ready
 * Uses only the public verbs API, exactly as an application does.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define NMR 5

/* clang-format off */
static const struct {
	size_t len;
	size_t offset;		/* into a page-aligned buffer */
	int access;
} mr_spec[NMR] = {
	{ 4096, 0, 0 },
	{ 4096, 0, IBV_ACCESS_LOCAL_WRITE },
	{ 65536, 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ },
	{ 1000, 24, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC },
	{ 1 << 20, 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND },
};
/* clang-format on */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static struct ibv_device *pick_device(struct ibv_device **list)
{
	const char *want = getenv("SRDMA_DEVICE");
	int i;

	for (i = 0; list[i]; i++)
		if (!want || !*want ||
		    !strcmp(ibv_get_device_name(list[i]), want))
			return list[i];
	return NULL;
}

int main(void)
{
	struct ibv_mr *mr[NMR] = {0};
	void *buf[NMR] = {0};
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device *dev;
	struct sigaction sa;
	struct ibv_mw *mw = NULL;
	struct ibv_pd *pd;
	int i, ret = 1;
	char c;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	list = ibv_get_device_list(NULL);
	if (!list) {
		perror("mr_holder: ibv_get_device_list");
		return 1;
	}
	dev = pick_device(list);
	if (!dev) {
		fprintf(stderr, "mr_holder: no device\n");
		goto out_free_list;
	}
	ctx = ibv_open_device(dev);
	if (!ctx) {
		perror("mr_holder: ibv_open_device");
		goto out_free_list;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		perror("mr_holder: ibv_alloc_pd");
		goto out_close;
	}
	printf("pid %d\n", (int)getpid());
	printf("pd handle %u\n", pd->handle);

	for (i = 0; i < NMR; i++) {
		if (posix_memalign(&buf[i], 4096,
				   mr_spec[i].offset + mr_spec[i].len)) {
			fprintf(stderr, "mr_holder: out of memory\n");
			goto out_dereg;
		}
		memset(buf[i], 0, mr_spec[i].offset + mr_spec[i].len);
		mr[i] = ibv_reg_mr(pd, (char *)buf[i] + mr_spec[i].offset,
				   mr_spec[i].len, mr_spec[i].access);
		if (!mr[i]) {
			fprintf(stderr,
				"mr_holder: ibv_reg_mr(access %#x): %s\n",
				mr_spec[i].access, strerror(errno));
			goto out_dereg;
		}
		printf("mr lkey 0x%08x rkey 0x%08x addr %#lx len %zu access "
		       "%#x\n",
		       mr[i]->lkey, mr[i]->rkey, (unsigned long)mr[i]->addr,
		       mr[i]->length, (unsigned int)mr_spec[i].access);
	}
	/* Memory windows are optional here: report one if the device has it. */
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	if (mw)
		printf("mw rkey 0x%08x type 1\n", mw->rkey);
	printf("ready\n");
	fflush(stdout);

	while (!stop) {
		ssize_t n = read(STDIN_FILENO, &c, 1);

		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	ret = 0;
out_dereg:
	if (mw && ibv_dealloc_mw(mw))
		ret = 1;
	for (i = NMR - 1; i >= 0; i--) {
		if (mr[i] && ibv_dereg_mr(mr[i]))
			ret = 1;
		free(buf[i]);
	}
	if (ibv_dealloc_pd(pd))
		ret = 1;
out_close:
	if (ibv_close_device(ctx))
		ret = 1;
out_free_list:
	ibv_free_device_list(list);
	return ret;
}
