// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_device_basic.c - the srdma0 device as an application first sees it:
 * device list, open/close, ibv_query_device(_ex), ibv_query_port, GID and
 * P_Key tables (docs verbs-semantics.md 2.5 ODP caps, 2.11 attributes;
 * architecture.md "Addressing").
 *
 * Values that the spec fixes are compared exactly (max_mr_size, page size
 * cap, MW and ODP capabilities); the rest must only be sane and non-zero.
 */
#include <endian.h>

#include "func_util.h"

static void test_device_basic_list_has_srdma0(void **state)
{
	struct ibv_device **list;
	int i, n = -1, found = 0;

	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_true(n >= 1);
	assert_null(list[n]); /* NULL-terminated */
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), "srdma0"))
			continue;
		found++;
		fu_expect(ibv_get_device_guid(list[i]) != 0,
			  "srdma0 node GUID is 0");
	}
	fu_expect_int(found, 1, "srdma0 entries in the device list");
	ibv_free_device_list(list);
	fu_done();
}

static void test_device_basic_open_close(void **state)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	assert_non_null(list);
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), "srdma0"))
			continue;
		ctx = ibv_open_device(list[i]);
		assert_non_null(ctx);
		fu_expect(ctx->device == list[i], "ctx->device %p, want %p",
			  (void *)ctx->device, (void *)list[i]);
		fu_expect(ctx->num_comp_vectors >= 1, "num_comp_vectors %d",
			  ctx->num_comp_vectors);
		fu_expect(ctx->async_fd >= 0, "async_fd %d", ctx->async_fd);
		assert_int_equal(ibv_close_device(ctx), 0);
	}
	assert_non_null(ctx);
	/* the list may be freed while a context is open */
	ctx = NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "srdma0"))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	assert_int_equal(ibv_close_device(ctx), 0);
	fu_done();
}

static void test_device_basic_query_device_sane(void **state)
{
	struct ibv_device_attr a;
	uint64_t want_cap = ~(uint64_t)(fu.pg - 1) & 0xffffffffULL;
	int ret;

	memset(&a, 0, sizeof(a));
	ret = ibv_query_device(fu.ctx, &a);
	assert_int_equal(ret, 0);
	fu_expect(a.vendor_id != 0, "vendor_id is 0");
	fu_expect(a.node_guid != 0, "node_guid is 0");
	fu_expect(a.max_mr > 0, "max_mr %d", a.max_mr);
	fu_expect(a.max_mw > 0, "max_mw %d", a.max_mw);
	fu_expect(a.max_pd > 0, "max_pd %d", a.max_pd);
	fu_expect(a.max_mr_size == UINT64_MAX,
		  "max_mr_size %#" PRIx64 ", want UINT64_MAX", a.max_mr_size);
	fu_expect(a.page_size_cap == want_cap,
		  "page_size_cap %#" PRIx64 ", want %#" PRIx64, a.page_size_cap,
		  want_cap);
	fu_expect(a.atomic_cap == IBV_ATOMIC_HCA ||
			  a.atomic_cap == IBV_ATOMIC_GLOB,
		  "atomic_cap %d, want HCA or GLOB", a.atomic_cap);
	fu_expect(a.max_fmr > 0, "max_fmr %d (relaxed pool)", a.max_fmr);
	fu_expect(a.max_map_per_fmr > 0, "max_map_per_fmr %d",
		  a.max_map_per_fmr);
	fu_expect(
		(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
			(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) &&
			(a.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS),
		"device_cap_flags %#x lack MEM_WINDOW/TYPE_2B/MEM_MGT",
		a.device_cap_flags);
	fu_expect(a.phys_port_cnt == 1, "phys_port_cnt %u", a.phys_port_cnt);
	fu_done();
}

static void test_device_basic_query_device_ex_odp_caps(void **state)
{
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr a;
	uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		      IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	uint32_t uc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
	uint32_t ud = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		      IBV_ODP_SUPPORT_SRQ_RECV;
	const struct ibv_odp_caps *o = &ax.odp_caps;

	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(fu.ctx, NULL, &ax), 0);
	assert_int_equal(ibv_query_device(fu.ctx, &a), 0);
	fu_expect((o->general_caps &
		   (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT)) ==
			  (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT),
		  "odp general_caps %#" PRIx64 " lack SUPPORT|IMPLICIT",
		  o->general_caps);
	fu_expect((o->per_transport_caps.rc_odp_caps & rc) == rc,
		  "rc_odp_caps %#x, want at least %#x",
		  o->per_transport_caps.rc_odp_caps, rc);
	fu_expect((o->per_transport_caps.uc_odp_caps & uc) == uc,
		  "uc_odp_caps %#x, want at least %#x",
		  o->per_transport_caps.uc_odp_caps, uc);
	fu_expect((o->per_transport_caps.ud_odp_caps & ud) == ud,
		  "ud_odp_caps %#x, want at least %#x",
		  o->per_transport_caps.ud_odp_caps, ud);
	fu_expect(!(o->per_transport_caps.ud_odp_caps &
		    (IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		     IBV_ODP_SUPPORT_ATOMIC)),
		  "ud_odp_caps %#x claim RDMA/atomic on UD",
		  o->per_transport_caps.ud_odp_caps);
	fu_expect(ax.orig_attr.max_mr == a.max_mr &&
			  ax.orig_attr.node_guid == a.node_guid &&
			  ax.orig_attr.max_mr_size == a.max_mr_size &&
			  ax.orig_attr.max_fmr == a.max_fmr,
		  "ibv_query_device_ex orig_attr differs from "
		  "ibv_query_device");
	fu_done();
}

/* The link layer this run asks for: Ethernet (RoCE) with
 * SRDMA_LINK_LAYER=eth or SRDMA_TRANSPORT=net, InfiniBand by default. */
static bool want_eth(void)
{
	const char *l = getenv("SRDMA_LINK_LAYER");
	const char *t = getenv("SRDMA_TRANSPORT");

	if (l && *l)
		return !strcmp(l, "eth");
	return t && !strcmp(t, "net");
}

static void test_device_basic_query_port_active_ib(void **state)
{
	struct ibv_port_attr p;

	memset(&p, 0, sizeof(p));
	assert_int_equal(ibv_query_port(fu.ctx, 1, &p), 0);
	fu_expect(p.state == IBV_PORT_ACTIVE, "port state %d, want ACTIVE",
		  p.state);
	if (want_eth()) {
		/* RoCE: no LID (test_roce_port checks the rest). */
		fu_expect(p.link_layer == IBV_LINK_LAYER_ETHERNET,
			  "link_layer %u, want ETHERNET", p.link_layer);
		fu_expect(p.lid == 0, "LID is %u on Ethernet", p.lid);
	} else {
		fu_expect(p.link_layer == IBV_LINK_LAYER_INFINIBAND,
			  "link_layer %u, want INFINIBAND", p.link_layer);
		fu_expect(p.lid != 0, "LID is 0");
	}
	fu_expect(p.gid_tbl_len >= 1, "gid_tbl_len %d", p.gid_tbl_len);
	fu_expect(p.pkey_tbl_len >= 1, "pkey_tbl_len %u", p.pkey_tbl_len);
	fu_expect(p.max_mtu >= IBV_MTU_256 && p.active_mtu >= IBV_MTU_256 &&
			  p.active_mtu <= p.max_mtu,
		  "mtu max %d active %d", p.max_mtu, p.active_mtu);
	fu_done();
}

static void test_device_basic_contexts_get_distinct_lids(void **state)
{
	struct ibv_context *ctx2 = fu_open_srdma();
	struct ibv_port_attr p1, p2;
	union ibv_gid g1, g2;

	assert_int_equal(ibv_query_port(fu.ctx, 1, &p1), 0);
	assert_int_equal(ibv_query_port(ctx2, 1, &p2), 0);
	assert_int_equal(ibv_query_gid(fu.ctx, 1, 0, &g1), 0);
	assert_int_equal(ibv_query_gid(ctx2, 1, 0, &g2), 0);
	if (want_eth()) {
		/* RoCE: the contexts of a host share its GIDs, like the
		 * processes sharing a NIC; QPNs tell them apart. */
		fu_expect(p1.lid == 0 && p2.lid == 0,
			  "RoCE contexts have LIDs %u and %u", p1.lid,
			  p2.lid);
		fu_expect(memcmp(&g1, &g2, sizeof(g1)) == 0,
			  "two RoCE contexts of one host differ in GID[0]");
	} else {
		fu_expect(p1.lid != 0 && p2.lid != 0 && p1.lid != p2.lid,
			  "two contexts have LIDs %u and %u", p1.lid,
			  p2.lid);
		fu_expect(memcmp(&g1, &g2, sizeof(g1)) != 0,
			  "two contexts have the same GID[0]");
	}
	assert_int_equal(ibv_close_device(ctx2), 0);
	fu_done();
}

static void test_device_basic_gid0_link_local(void **state)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	assert_int_equal(ibv_query_gid(fu.ctx, 1, 0, &g), 0);
	fu_expect(g.global.interface_id != 0, "GID[0] interface id is 0");
	fu_expect(be64toh(g.global.subnet_prefix) == 0xfe80000000000000ULL,
		  "GID[0] subnet prefix %#" PRIx64 ", want fe80::/64",
		  be64toh(g.global.subnet_prefix));
	fu_done();
}

static void test_device_basic_query_pkey_default(void **state)
{
	uint16_t pkey = 0;

	assert_int_equal(ibv_query_pkey(fu.ctx, 1, 0, &pkey), 0);
	fu_expect((be16toh(pkey) & 0x7fff) == 0x7fff,
		  "P_Key[0] %#x, want the default partition", be16toh(pkey));
	fu_done();
}

static void test_device_basic_bad_port_einval(void **state)
{
	struct ibv_port_attr p;
	union ibv_gid g;
	uint16_t pkey;
	int ret;

	ret = ibv_query_port(fu.ctx, 0, &p);
	fu_expect(ret == EINVAL, "query_port(0) gave %s", fu_errname(ret));
	ret = ibv_query_port(fu.ctx, 2, &p);
	fu_expect(ret == EINVAL, "query_port(2) gave %s", fu_errname(ret));
	ret = ibv_query_port(fu.ctx, 255, &p);
	fu_expect(ret == EINVAL, "query_port(255) gave %s", fu_errname(ret));
	fu_expect(ibv_query_gid(fu.ctx, 2, 0, &g) != 0,
		  "query_gid on port 2 succeeded");
	fu_expect(ibv_query_gid(fu.ctx, 1, 100000, &g) != 0,
		  "query_gid index 100000 succeeded");
	fu_expect(ibv_query_pkey(fu.ctx, 2, 0, &pkey) != 0,
		  "query_pkey on port 2 succeeded");
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_basic_list_has_srdma0),
		cmocka_unit_test(test_device_basic_open_close),
		FU_TEST(test_device_basic_query_device_sane),
		FU_TEST(test_device_basic_query_device_ex_odp_caps),
		FU_TEST(test_device_basic_query_port_active_ib),
		FU_TEST(test_device_basic_contexts_get_distinct_lids),
		FU_TEST(test_device_basic_gid0_link_local),
		FU_TEST(test_device_basic_query_pkey_default),
		FU_TEST(test_device_basic_bad_port_einval),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
