// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_roce_port.c - the port as a RoCE port (SRDMA_LINK_LAYER=eth), seen
 * through the public ABI exactly as perftest, pyverbs and the pingpong
 * examples see it, and the rules such a port imposes.
 *
 * Registered twice (tests/eth/eth.cmake): in the default InfiniBand mode
 * it checks that nothing of RoCE leaks in (one GID, LID routing without a
 * GRH still works); under SRDMA_LINK_LAYER=eth it checks the port
 * attributes (Ethernet, LID 0, MTU from the interface as rxe derives it,
 * 64 GID slots), the GID queries (table order and types, empty slots as
 * rdma-core reports them), the RoCE rules (an AH or an RC/UC RTR without
 * a GRH, with an SGID index of an empty slot, or with a path MTU above
 * the port's is refused with EINVAL), and that traffic between two
 * contexts of this host works addressed by GRH, with the sender's GID in
 * a UD receiver's GRH.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "dp_util.h"

static struct dp_ep A, B;

static bool eth_mode(void)
{
	const char *l = getenv("SRDMA_LINK_LAYER");
	const char *t = getenv("SRDMA_TRANSPORT");

	if (l && *l)
		return !strcmp(l, "eth");
	return t && !strcmp(t, "net");
}

static int teardown(void **state)
{
	(void)state;
	dp_ep_close(&A);
	dp_ep_close(&B);
	return 0;
}

static enum ibv_mtu rxe_mtu(uint32_t netdev)
{
	uint32_t m = netdev > 80 ? netdev - 80 : 0;

	return m >= 4096 ? IBV_MTU_4096 : m >= 2048 ? IBV_MTU_2048 :
	       m >= 1024 ? IBV_MTU_1024 : m >= 512 ? IBV_MTU_512 : IBV_MTU_256;
}

static uint32_t netdev_mtu(uint32_t ifindex)
{
	char name[IF_NAMESIZE];
	struct ifreq r;
	int fd;
	uint32_t m = 0;

	if (!if_indextoname(ifindex, name))
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	memset(&r, 0, sizeof(r));
	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", name);
	if (fd >= 0 && !ioctl(fd, SIOCGIFMTU, &r))
		m = (uint32_t)r.ifr_mtu;
	if (fd >= 0)
		close(fd);
	return m;
}

/*
 * An IB port's table as a ConnectX shows it: GID[0] filled, the other
 * slots empty. An empty slot reads as the zero GID through ibv_query_gid,
 * is ENODATA for ibv_query_gid_ex and is left out of ibv_query_gid_table
 * (pyverbs' test_query_gid_ex_bad_flow); beyond the table is EINVAL.
 */
static void ib_empty_gid_slots(struct ibv_context *ctx, int tbl_len)
{
	struct ibv_gid_entry ents[8], e;
	union ibv_gid g, zero;
	int i;

	memset(&zero, 0, sizeof(zero));
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &g), 0);
	fu_expect(memcmp(&g, &zero, sizeof(g)) != 0, "GID[0] is zero");
	fu_expect_int(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0, "GID[0] ex");
	for (i = 1; i < tbl_len; i++) {
		memset(&g, 0xa5, sizeof(g));
		fu_expect_int(ibv_query_gid(ctx, 1, i, &g), 0, "empty slot");
		fu_expect(!memcmp(&g, &zero, sizeof(g)),
			  "empty GID[%d] is not zero", i);
		fu_expect_int(ibv_query_gid_ex(ctx, 1, (uint32_t)i, &e, 0),
			      ENODATA, "query_gid_ex of an empty slot");
	}
	errno = 0;
	fu_expect(ibv_query_gid(ctx, 1, tbl_len, &g) == -1 && errno == EINVAL,
		  "query_gid beyond the table: errno %d", errno);
	fu_expect_int(ibv_query_gid_ex(ctx, 1, (uint32_t)tbl_len, &e, 0),
		      ENODATA, "query_gid_ex beyond the table");
	fu_expect(ibv_query_gid_table(ctx, ents, 8, 0) == 1,
		  "query_gid_table lists %zd entries, want 1",
		  ibv_query_gid_table(ctx, ents, 8, 0));
}

static void test_port_attributes(void **state)
{
	struct ibv_port_attr p;
	struct ibv_gid_entry e;

	(void)state;
	dp_ep_open(&A, false);
	memset(&p, 0, sizeof(p));
	assert_int_equal(ibv_query_port(A.ctx, 1, &p), 0);
	fu_expect(p.state == IBV_PORT_ACTIVE, "state %d", p.state);
	if (!eth_mode()) {
		fu_expect_int(p.link_layer, IBV_LINK_LAYER_INFINIBAND,
			      "default link layer");
		fu_expect(p.lid != 0, "IB LID 0");
		fu_expect_int(p.gid_tbl_len, 8, "IB gid_tbl_len");
		fu_expect_int(p.active_mtu, IBV_MTU_4096, "IB active_mtu");
		ib_empty_gid_slots(A.ctx, p.gid_tbl_len);
		fu_done();
		return;
	}
	fu_expect_int(p.link_layer, IBV_LINK_LAYER_ETHERNET, "link layer");
	fu_expect_int(p.lid, 0, "RoCE LID");
	fu_expect_int(p.sm_lid, 0, "RoCE SM LID");
	fu_expect_int(p.gid_tbl_len, 64, "gid_tbl_len");
	fu_expect(p.port_cap_flags & IBV_PORT_IP_BASED_GIDS,
		  "port_cap_flags %#x without IP_BASED_GIDS", p.port_cap_flags);
	fu_expect(!(p.port_cap_flags & IBV_PORT_SM), "an SM on RoCE");
	assert_int_equal(ibv_query_gid_ex(A.ctx, 1, 0, &e, 0), 0);
	fu_expect(e.ndev_ifindex != 0, "GID 0 without a netdev");
	fu_expect_int(p.active_mtu, rxe_mtu(netdev_mtu(e.ndev_ifindex)),
		      "active_mtu from the interface MTU");
	fu_expect(p.max_mtu >= p.active_mtu, "max_mtu %d < active %d",
		  p.max_mtu, p.active_mtu);
	fu_done();
}

static void test_gid_queries(void **state)
{
	struct ibv_gid_entry ents[64], e;
	enum ibv_gid_type_sysfs { ROCE_V1 = 0, ROCE_V2 = 1 } type;
	union ibv_gid g, zero;
	ssize_t n, i;
	int ret;
	int ibv_query_gid_type(struct ibv_context *, uint8_t, unsigned int,
			       enum ibv_gid_type_sysfs *);

	(void)state;
	dp_ep_open(&A, false);
	memset(&zero, 0, sizeof(zero));
	n = ibv_query_gid_table(A.ctx, ents, 64, 0);
	assert_true(n >= 1);
	fu_expect(ibv_query_gid_table(A.ctx, ents, 0, 0) == -EINVAL,
		  "gid_table with no room");
	if (n > 1)
		fu_expect(ibv_query_gid_table(A.ctx, ents, (size_t)n - 1, 0) ==
				  -EINVAL,
			  "gid_table one entry short");
	for (i = 0; i < n; i++) {
		fu_expect_int(ents[i].gid_index, i, "gid_index");
		fu_expect_int(ents[i].port_num, 1, "port_num");
		assert_int_equal(ibv_query_gid(A.ctx, 1, (int)i, &g), 0);
		fu_expect(!memcmp(&g, &ents[i].gid, sizeof(g)),
			  "query_gid(%zd) differs from the table", i);
		assert_int_equal(ibv_query_gid_ex(A.ctx, 1, (uint32_t)i, &e, 0),
				 0);
		fu_expect(!memcmp(&e, &ents[i], sizeof(e)),
			  "query_gid_ex(%zd) differs from the table", i);
		assert_int_equal(ibv_query_gid_type(A.ctx, 1, (unsigned int)i,
						    &type), 0);
		if (eth_mode()) {
			fu_expect_int(ents[i].gid_type, IBV_GID_TYPE_ROCE_V2,
				      "RoCE gid_type");
			fu_expect_int(type, ROCE_V2, "sysfs type");
			fu_expect(ents[i].ndev_ifindex != 0, "no netdev");
		} else {
			fu_expect_int(ents[i].gid_type, IBV_GID_TYPE_IB,
				      "IB gid_type");
			fu_expect_int(type, ROCE_V1, "sysfs type (IB/RoCE v1)");
		}
	}
	/* GID 0 is link-local in both modes (RoCE: the default GID). */
	fu_expect(ents[0].gid.raw[0] == 0xfe && ents[0].gid.raw[1] == 0x80,
		  "GID 0 not fe80::/64");
	if (eth_mode()) {
		/* Empty slots, as rdma-core reports them. */
		fu_expect(n < 64, "64 GIDs?");
		assert_int_equal(ibv_query_gid(A.ctx, 1, (int)n, &g), 0);
		fu_expect(!memcmp(&g, &zero, sizeof(g)), "empty slot not 0");
		ret = ibv_query_gid_ex(A.ctx, 1, (uint32_t)n, &e, 0);
		fu_expect(ret == ENODATA, "query_gid_ex(empty): %s",
			  fu_errname(ret));
		fu_expect(ibv_query_gid_type(A.ctx, 1, (unsigned int)n,
					     &type) == -1 && errno == EINVAL,
			  "query_gid_type(empty)");
	}
	fu_expect(ibv_query_gid(A.ctx, 1, 64, &g) == -1 && errno == EINVAL,
		  "query_gid beyond the table");
	fu_expect(ibv_query_gid_ex(A.ctx, 1, 64, &e, 0) == ENODATA,
		  "query_gid_ex beyond the table");
	fu_done();
}

static struct ibv_ah_attr grh_av(struct ibv_context *ctx, uint8_t sgid_index)
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.is_global = 1;
	a.grh.sgid_index = sgid_index;
	a.grh.hop_limit = 1;
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &a.grh.dgid), 0);
	return a;
}

static void test_ah_rules(void **state)
{
	struct ibv_ah_attr a;
	struct ibv_port_attr p;
	struct ibv_ah *ah;
	ssize_t n;
	struct ibv_gid_entry ents[64];

	(void)state;
	dp_ep_open(&A, false);
	assert_int_equal(ibv_query_port(A.ctx, 1, &p), 0);
	n = ibv_query_gid_table(A.ctx, ents, 64, 0);
	assert_true(n >= 1);
	/* With a GRH from GID 0: always fine. */
	a = grh_av(A.ctx, 0);
	a.dlid = p.lid;
	ah = ibv_create_ah(A.pd, &a);
	fu_expect(ah != NULL, "AH with a GRH: errno %d", errno);
	if (ah)
		ibv_destroy_ah(ah);
	/* An SGID index past the filled slots. */
	a = grh_av(A.ctx, (uint8_t)n);
	a.dlid = p.lid;
	errno = 0;
	ah = ibv_create_ah(A.pd, &a);
	fu_expect(!ah && errno == EINVAL, "AH from an empty SGID slot");
	/* No GRH: the LID routes on IB, nothing does on RoCE. */
	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.dlid = eth_mode() ? 1 : p.lid;
	errno = 0;
	ah = ibv_create_ah(A.pd, &a);
	if (eth_mode())
		fu_expect(!ah && errno == EINVAL, "RoCE AH without a GRH");
	else
		fu_expect(ah != NULL, "IB AH without a GRH: errno %d", errno);
	if (ah)
		ibv_destroy_ah(ah);
	fu_done();
}

/* INIT -> RTR of @qp to @dqpn with @av and @mtu; the errno. */
static int rtr(struct ibv_qp *qp, uint32_t dqpn, const struct ibv_ah_attr *av,
	       enum ibv_mtu mtu)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.ah_attr = *av;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

static void test_rtr_rules_then_traffic(void **state)
{
	struct dp_conn init = {.access = DP_REMOTE_ACCESS, .no_rts = true};
	struct dp_conn k = {.access = DP_REMOTE_ACCESS};
	struct ibv_ah_attr av, nogrh;
	struct ibv_port_attr p;
	struct ibv_wc wc;
	int ret;

	(void)state;
	dp_ep_open(&A, false);
	dp_ep_open(&B, false);
	dp_qp_create(&A, IBV_QPT_RC, 1);
	dp_qp_create(&B, IBV_QPT_RC, 1);
	assert_int_equal(ibv_query_port(A.ctx, 1, &p), 0);
	assert_int_equal(dp_qp_connect(A.qp, 0, 0, &init), 0);
	memset(&nogrh, 0, sizeof(nogrh));
	nogrh.port_num = 1;
	nogrh.dlid = B.lid;
	av = grh_av(A.ctx, 0);
	if (eth_mode()) {
		ret = rtr(A.qp, B.qp->qp_num, &nogrh, IBV_MTU_256);
		fu_expect(ret == EINVAL, "RoCE RTR without a GRH: %s",
			  fu_errname(ret));
		av.grh.sgid_index = 63;
		ret = rtr(A.qp, B.qp->qp_num, &av, IBV_MTU_256);
		fu_expect(ret == EINVAL, "RTR from an empty SGID: %s",
			  fu_errname(ret));
		av.grh.sgid_index = 0;
		if (p.active_mtu < IBV_MTU_4096) {
			ret = rtr(A.qp, B.qp->qp_num, &av,
				  (enum ibv_mtu)(p.active_mtu + 1));
			fu_expect(ret == EINVAL,
				  "path_mtu above active_mtu: %s",
				  fu_errname(ret));
		}
		fu_expect_int(dp_qp_state(A.qp), IBV_QPS_INIT,
			      "state after refused RTRs");
	}
	/* Connected both ways (dp_qp_connect adds the GRH on RoCE), at
	 * the port's MTU, then a WRITE goes through. */
	ibv_modify_qp(A.qp, &(struct ibv_qp_attr){.qp_state = IBV_QPS_RESET},
		      IBV_QP_STATE);
	dp_connect(&A, B.qp->qp_num, B.lid, &k);
	dp_connect(&B, A.qp->qp_num, A.lid, &k);
	memset(A.buf, 0x5a, 64);
	assert_int_equal(dp_post(A.qp, 1, IBV_WR_RDMA_WRITE, (uintptr_t)A.buf,
				 64, A.mr->lkey, (uintptr_t)B.buf,
				 B.mr->rkey), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, &wc, "WRITE addressed by GRH");
	fu_expect(B.buf[63] == 0x5a, "WRITE data");
	fu_done();
}

/* A UD receiver's GRH carries the sender's GID at the AH's SGID index. */
static void test_ud_grh_carries_the_sgid(void **state)
{
	struct dp_conn k = {0};
	struct ibv_sge s;
	struct ibv_send_wr wr, *bad;
	struct ibv_ah_attr av;
	struct ibv_wc wc;
	union ibv_gid sgid;
	ssize_t n;
	struct ibv_gid_entry ents[64];
	uint8_t idx;

	(void)state;
	dp_ep_open(&A, false);
	dp_ep_open(&B, false);
	dp_qp_create(&A, IBV_QPT_UD, 0);
	dp_qp_create(&B, IBV_QPT_UD, 0);
	dp_connect(&A, 0, 0, &k);
	dp_connect(&B, 0, 0, &k);
	n = ibv_query_gid_table(A.ctx, ents, 64, 0);
	assert_true(n >= 1);
	idx = (uint8_t)(n - 1);		/* the last GID: not the default */
	av = grh_av(A.ctx, idx);
	av.dlid = B.lid;
	A.ah = ibv_create_ah(A.pd, &av);
	assert_non_null(A.ah);
	assert_int_equal(ibv_query_gid(A.ctx, 1, idx, &sgid), 0);
	dp_recv_buf(&B, 7, 0, 256);
	memset(A.buf, 0x33, 16);
	s = (struct ibv_sge){(uintptr_t)A.buf, 16, A.mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.wr.ud.ah = A.ah;
	wr.wr.ud.remote_qpn = B.qp->qp_num;
	wr.wr.ud.remote_qkey = DP_QKEY;
	assert_int_equal(ibv_post_send(A.qp, &wr, &bad), 0);
	dp_expect_wc(A.cq, IBV_WC_SUCCESS, NULL, "UD SEND");
	if (dp_expect_wc(B.cq, IBV_WC_SUCCESS, &wc, "UD receive")) {
		fu_expect(wc.wc_flags & IBV_WC_GRH, "no GRH flag");
		fu_expect(!memcmp(B.buf + 8, sgid.raw, 16),
			  "GRH SGID is not the sender's GID[%u]", idx);
		fu_expect(!memcmp(B.buf + 24, av.grh.dgid.raw, 16),
			  "GRH DGID is not the AH's");
	}
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_port_attributes, teardown),
		cmocka_unit_test_teardown(test_gid_queries, teardown),
		cmocka_unit_test_teardown(test_ah_rules, teardown),
		cmocka_unit_test_teardown(test_rtr_rules_then_traffic,
					  teardown),
		cmocka_unit_test_teardown(test_ud_grh_carries_the_sgid,
					  teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
