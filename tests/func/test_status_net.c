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
 *
 * Every counter of struct srdma_net_qp_stats is shown, in text and in
 * --json (each field gets its own value; a field this test does not know
 * fails it: add it to `srdma status` and here), and the port's endpoint
 * table has a column for each mirrored counter (lone ACKs among them).
 * A library of another build is named as such, not read: a resource
 * table stamped with another counter layout hides the net counters with
 * a message, and a segment of another layout version says which.
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

/* The whole output of `srdma status @args 2>&1`, NUL terminated (free
 * it). */
static char *status_run(const char *args)
{
	const char *bd = getenv("SRDMA_BUILD_DIR");
	char cmd[512], *buf = NULL;
	size_t len = 0, cap = 0, n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/bin/srdma status --no-reap %s 2>&1",
		 bd ? bd : ".", args);
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

static char *status_output(void)
{
	return status_run("");
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

/* Our own segment, mapped read-write as a peer would (munmap it). */
static void *own_segment(uint32_t lid)
{
	char path[600];
	void *seg;
	int fd;

	snprintf(path, sizeof(path), "%s/ctx.%u.%d", getenv("SRDMA_DIR"), lid,
		 (int)getpid());
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	seg = mmap(NULL, SRDMA_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	assert_true(seg != MAP_FAILED);
	close(fd);
	return seg;
}

static void test_status_shows_net_qps(void **state)
{
	struct ibv_qp *b;
	struct ibv_qp_init_attr ia;
	struct srdma_shm_qp *sh;
	struct srdma_net_qp_stats *st;
	char line[1024], *out;
	uint64_t off;
	void *seg;

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
	seg = own_segment(A.qp->qp_num >> SRDMA_QPN_SHIFT);
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

/* Every field of struct srdma_net_qp_stats, with the value this test
 * stores there (PSNs and flags excepted: status shows them otherwise). */
#define NETST_COUNTERS(X)                                                      \
	X(tx_pkts, 101) X(rx_pkts, 103) X(tx_bytes, 102) X(rx_bytes, 104)     \
	X(retransmits, 105) X(timeouts, 106) X(naks_sent, 107)                 \
	X(naks_rcvd, 108) X(rnr_sent, 109) X(rnr_rcvd, 110)                    \
	X(dups_rcvd, 111) X(acks_delayed, 112) X(acks_piggybacked, 113)       \
	X(acks_coalesced, 114)
#define NETST_SIZE(f, v) +sizeof(((struct srdma_net_qp_stats *)0)->f)
#define NETST_STORE(f, v) atomic_store(&st->f, v);
#define NETST_JSON(f, v)                                                       \
	snprintf(want, sizeof(want), "\"%s\": %d", #f, v);                     \
	fu_expect(strstr(out, want) != NULL, "--json lacks %s", want);

static void test_status_every_net_counter(void **state)
{
	static const char *const text_cols[] = {
		"SENT", "RECEIVED", "RETRANSMITTED", "TIMEOUTS", "NAK S/R",
		"RNR S/R", "DUPS", "ACKS DLY/PIGGY/COAL", "DROPS",
	};
	static const char *const ep_cols[] = {
		"RX DGRAMS", "RX LOCAL", "FWD OUT/IN", "INLINE RX", "TX DGRAMS",
		"TX BYTES", "TX ERR", "WAKEUPS", "GSO SEGS", "GRO SEGS",
		"POLL HANDOFFS", "LONE ACKS", "ICRC OTHER ID",
	};
	/* sq_psn, rq_psn, flags; the struct's size is a multiple of 8 */
	const size_t known = (0 NETST_COUNTERS(NETST_SIZE) +
			      sizeof(((struct srdma_net_qp_stats *)0)->drops) +
			      3 * sizeof(uint32_t) + 7) & ~(size_t)7;
	struct srdma_net_qp_stats *st;
	struct srdma_seg_hdr *hdr;
	struct srdma_shm_rt *rt;
	struct srdma_shm_qp *sh;
	char line[2048], want[96], *out;
	uint32_t layout;
	uint16_t version;
	uint64_t off;
	void *seg;
	size_t i;
	int d;

	(void)state;
	/* A field added to the struct must be added to srdma status (and
	 * to NETST_COUNTERS). */
	fu_expect(known == sizeof(struct srdma_net_qp_stats),
		  "struct srdma_net_qp_stats has %zu bytes, this test knows "
		  "%zu: a counter srdma status may not print",
		  sizeof(struct srdma_net_qp_stats), known);
	dp_ep_open(&A, false);
	dp_qp_create(&A, IBV_QPT_RC, 0);
	connect_qp(A.qp, A.qp->qp_num, 0x10, 0x10);
	seg = own_segment(A.qp->qp_num >> SRDMA_QPN_SHIFT);
	hdr = seg;
	rt = (struct srdma_shm_rt *)((char *)seg + SRDMA_SEG_RT_OFF);
	sh = (struct srdma_shm_qp *)((char *)seg + SRDMA_SEG_QP_OFF) +
	     (A.qp->qp_num & (SRDMA_SEG_QP_SLOTS - 1));
	off = atomic_load(&sh->net_st_off);
	if (!fu_is_roce(A.ctx) || off < SRDMA_SEG_ARENA_OFF ||
	    off + sizeof(*st) > SRDMA_SEG_SIZE) {
		fu_expect(!fu_is_roce(A.ctx), "net_st_off %#llx",
			  (unsigned long long)off);
		goto version;
	}
	st = (struct srdma_net_qp_stats *)((char *)seg + off);
	NETST_COUNTERS(NETST_STORE)
	for (d = 1; d < SRDMA_DROP_MAX; d++)
		atomic_store(&st->drops[d], 200 + d);
	out = status_output();
	for (i = 0; i < sizeof(text_cols) / sizeof(text_cols[0]); i++)
		fu_expect(strstr(out, text_cols[i]) != NULL,
			  "no column %s in:\n%s", text_cols[i], out);
	/* Where there is an endpoint table, every mirrored counter has its
	 * column. */
	if (strstr(out, "POLL HANDOFFS"))
		for (i = 0; i < sizeof(ep_cols) / sizeof(ep_cols[0]); i++)
			fu_expect(strstr(out, ep_cols[i]) != NULL,
				  "no endpoint column %s", ep_cols[i]);
	if (!find_row(out, A.qp->qp_num, line, sizeof(line))) {
		fu_expect(false, "no row for QPN %#x in:\n%s", A.qp->qp_num,
			  out);
	} else {
		static const char *const vals[] = {
			" 101 (102 B) ", " 103 (104 B) ", " 105 ", " 106 ",
			" 107/108 ", " 109/110 ", " 111 ", " 112/113/114 ",
		};

		for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			fu_expect(strstr(line, vals[i]) != NULL,
				  "text row lacks '%s': %s", vals[i], line);
		for (d = 1; d < SRDMA_DROP_MAX; d++) {
			snprintf(want, sizeof(want), ":%d", 200 + d);
			fu_expect(strstr(line, want) != NULL,
				  "text row lacks drop cause %d: %s", d, line);
		}
	}
	free(out);
	out = status_run("--json");
	NETST_COUNTERS(NETST_JSON)
	for (d = 1; d < SRDMA_DROP_MAX; d++) {
		snprintf(want, sizeof(want), ": %d", 200 + d);
		fu_expect(strstr(out, want) != NULL, "--json lacks drop %d",
			  d);
	}
	fu_expect(strstr(out, "\"lone_acks\"") != NULL ||
			  !strstr(out, "\"poll_handoffs\""),
		  "--json endpoint without lone_acks");
	free(out);

	/* A library that lays the counters out otherwise. */
	layout = rt->stats_layout;
	fu_expect(layout != 0, "resource table not stamped");
	rt->stats_layout = layout ^ 0x5a5a;
	out = status_output();
	fu_expect(strstr(out, "another softrdma build") != NULL &&
			  !find_row(out, A.qp->qp_num, line, sizeof(line)),
		  "counters of another layout:\n%s", out);
	free(out);
	out = status_run("--json");
	fu_expect(strstr(out, "\"net_counters\": \"other build\"") &&
			  !strstr(out, "\"acks_coalesced\""),
		  "--json, counters of another layout:\n%s", out);
	free(out);
	rt->stats_layout = layout;

version:
	/* A segment of another layout version: which one, and why. */
	version = hdr->version;
	hdr->version = 99;
	out = status_output();
	snprintf(want, sizeof(want),
		 "layout version 99, this srdma reads version %u",
		 (unsigned int)SRDMA_SEG_VERSION);
	fu_expect(strstr(out, want) && strstr(out, "another softrdma build"),
		  "segment of version 99:\n%s", out);
	free(out);
	hdr->version = version;
	munmap(seg, SRDMA_SEG_SIZE);
	dp_ep_close(&A);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_shows_net_qps),
		cmocka_unit_test(test_status_every_net_counter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
