// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_status_net.c - `srdma status` shows the QPs of a RoCE port with
 * their PSNs and the net transport's counters, read from the shared
 * segment (the QP entry's net_st_off -> struct srdma_net_qp_stats).
 *
 * Two RC QPs of one context are connected to each other with known PSNs.
 * On a RoCE port (SRDMA_LINK_LAYER=eth) the test finds its own QP's
 * counters through the segment file, as `srdma status` does, checks the
 * offset is published, stores known counter values there (the net
 * transport would; between two QPs of one host it is not used), and reads
 * the QP's row back from `srdma status`. On InfiniBand there is no net
 * half: no counters are published and no net QP table is printed.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "dp_util.h"
#include "transport/host/shm_layout.h"
#include "transport/net/net.h"

static struct dp_ep A;

static void connect_qp(struct ibv_qp *qp, uint32_t dqpn, uint32_t rq_psn,
		       uint32_t sq_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = DP_REMOTE_ACCESS;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_256;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.ah_attr.dlid = A.lid;
	a.ah_attr.port_num = 1;
	fu_av_fix(qp->context, &a.ah_attr);
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				       IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.max_rd_atomic = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				       IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

/* The whole output of `srdma status`, NUL terminated (free it). */
static char *status_output(void)
{
	const char *bd = getenv("SRDMA_BUILD_DIR");
	char cmd[512], *buf = NULL;
	size_t len = 0, cap = 0, n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/bin/srdma status --no-reap",
		 bd ? bd : ".");
	f = popen(cmd, "r");
	assert_non_null(f);
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 16384;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n);
	buf[len] = 0;
	assert_int_equal(pclose(f), 0);
	return buf;
}

/* The line of @out's net QP table that shows QPN @qpn, copied into
 * @line (the table of every QP, before it, shows the QPN too). */
static bool find_row(const char *out, uint32_t qpn, char *line, size_t len)
{
	char want[32];
	const char *p = strstr(out, "RETRANSMITTED");

	snprintf(want, sizeof(want), " %#x ", qpn);
	while (p && *p) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l < len && memmem(p, l, want, strlen(want))) {
			memcpy(line, p, l);
			line[l] = 0;
			return true;
		}
		p = e ? e + 1 : NULL;
	}
	return false;
}

static void test_status_shows_net_qps(void **state)
{
	struct ibv_qp *b;
	struct ibv_qp_init_attr ia;
	struct srdma_shm_qp *sh;
	struct srdma_net_qp_stats *st;
	char path[600], line[1024], *out;
	uint64_t off;
	void *seg;
	int fd;

	(void)state;
	dp_ep_open(&A, false);
	dp_qp_create(&A, IBV_QPT_RC, 0);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = A.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	b = ibv_create_qp(A.pd, &ia);
	assert_non_null(b);
	connect_qp(A.qp, b->qp_num, 0x123456, 0xabcdef);
	connect_qp(b, A.qp->qp_num, 0xabcdef, 0x123456);

	/* Our own segment, as srdma status maps it. */
	snprintf(path, sizeof(path), "%s/ctx.%u.%d", getenv("SRDMA_DIR"),
		 A.qp->qp_num >> SRDMA_QPN_SHIFT, (int)getpid());
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	seg = mmap(NULL, SRDMA_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	assert_true(seg != MAP_FAILED);
	close(fd);
	sh = (struct srdma_shm_qp *)((char *)seg + SRDMA_SEG_QP_OFF) +
	     (A.qp->qp_num & (SRDMA_SEG_QP_SLOTS - 1));
	off = atomic_load(&sh->net_st_off);

	if (!fu_is_roce(A.ctx)) {
		fu_expect(off == 0, "IB QP with net counters at %#llx",
			  (unsigned long long)off);
		out = status_output();
		fu_expect(!strstr(out, "RETRANSMITTED"),
			  "net QP table on IB:\n%s", out);
		goto done;
	}
	fu_expect(off >= SRDMA_SEG_ARENA_OFF &&
			  off + sizeof(*st) <= SRDMA_SEG_SIZE,
		  "net_st_off %#llx", (unsigned long long)off);
	if (off < SRDMA_SEG_ARENA_OFF || off + sizeof(*st) > SRDMA_SEG_SIZE)
		goto done_unmap;
	st = (struct srdma_net_qp_stats *)((char *)seg + off);
	fu_expect(atomic_load(&st->sq_psn) == 0xabcdef &&
			  atomic_load(&st->rq_psn) == 0x123456,
		  "PSNs %#x/%#x in the counters", atomic_load(&st->sq_psn),
		  atomic_load(&st->rq_psn));
	atomic_store(&st->tx_pkts, 5);
	atomic_store(&st->tx_bytes, 320);
	atomic_store(&st->rx_pkts, 7);
	atomic_store(&st->rx_bytes, 448);
	atomic_store(&st->retransmits, 2);
	atomic_store(&st->naks_sent, 4);
	atomic_store(&st->naks_rcvd, 1);
	atomic_store(&st->rnr_rcvd, 9);
	atomic_store(&st->drops[SRDMA_DROP_ICRC], 3);
	out = status_output();
	if (!find_row(out, A.qp->qp_num, line, sizeof(line))) {
		fu_expect(false, "no row for QPN %#x in:\n%s", A.qp->qp_num,
			  out);
	} else {
		fu_expect(strstr(line, " RC ") && strstr(line, " RTS "),
			  "type/state: %s", line);
		fu_expect(strstr(line, " host "), "VIA host: %s", line);
		fu_expect(strstr(line, " 0xabcdef ") && strstr(line,
							    " 0x123456 "),
			  "PSNs: %s", line);
		fu_expect(strstr(line, "5 (320 B)") && strstr(line,
							     "7 (448 B)"),
			  "packets: %s", line);
		fu_expect(strstr(line, " 2 "), "retransmits: %s", line);
		fu_expect(strstr(line, " 4/1 ") && strstr(line, " 0/9 "),
			  "NAK and RNR sent/received: %s", line);
		fu_expect(strstr(line, ":3"), "drops: %s", line);
	}
done:
	free(out);
done_unmap:
	munmap(seg, SRDMA_SEG_SIZE);
	assert_int_equal(ibv_destroy_qp(b), 0);
	dp_ep_close(&A);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_shows_net_qps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
