// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_sysfs.c - the synthesised sysfs tree (docs/design/sysfs.md) as
 * programs read it: ibv_get_sysfs_path(), ibv_device's ibdev_path and
 * dev_path, ibv_read_sysfs_file(), and every file compared with what the
 * verbs queries say (node GUID, firmware, port state, link layer, rate,
 * LID, capability mask, every GID with its type and interface, P_Keys).
 * Runs in both link layers (func.eth.test_sysfs).
 *
 * The tree is read where the library writes it, $SRDMA_DIR/sysfs (each
 * test has its own SRDMA_DIR), so a tree mounted over /sys/class on this
 * host by `srdma sysfs mount` does not change the answers; the reported
 * root is then "/sys", which is accepted too.
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "func_util.h"

/* Not declared by rdma-core 44's public headers. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);
enum fu_gid_type_sysfs { FU_GID_IB_ROCE_V1 = 0, FU_GID_ROCE_V2 = 1 };
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
		       unsigned int index, enum fu_gid_type_sysfs *type);

static char tree[512];		/* $SRDMA_DIR/sysfs */
static char dev_dir[600];	/* tree/class/infiniband/srdma0 */
static char port_dir[640];	/* dev_dir/ports/1 */

static void paths(void)
{
	const char *d = getenv("SRDMA_DIR");

	assert_non_null(d);
	snprintf(tree, sizeof(tree), "%s/sysfs", d);
	snprintf(dev_dir, sizeof(dev_dir), "%s/class/infiniband/srdma0", tree);
	snprintf(port_dir, sizeof(port_dir), "%s/ports/1", dev_dir);
}

/* The content of @dir/@file without its newline; "" (and a report) if it
 * cannot be read. */
static const char *rd(const char *dir, const char *file)
{
	static char buf[8][256];
	static unsigned int k;
	char *b = buf[k++ % 8];
	int n = ibv_read_sysfs_file(dir, file, b, 256);

	if (n < 0) {
		fu_expect(0, "%s/%s: %s", dir, file, strerror(errno));
		b[0] = 0;
	}
	return b;
}

static bool exists(const char *dir, const char *file)
{
	char p[1024];

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return !access(p, F_OK);
}

static void gid_text(const union ibv_gid *g, char *s, size_t len)
{
	const uint8_t *r = g->raw;
	size_t i, o = 0;

	for (i = 0; i < 16 && o < len; i += 2)
		o += (size_t)snprintf(s + o, len - o, "%s%02x%02x",
				      i ? ":" : "", r[i], r[i + 1]);
}

static void test_sysfs_paths(void **state)
{
	struct ibv_device **list;
	const char *root;
	char want[1024];
	int n;

	paths();
	root = ibv_get_sysfs_path();
	assert_non_null(root);
	fu_expect(!strcmp(root, tree) || !strcmp(root, "/sys"),
		  "ibv_get_sysfs_path() %s, want %s (or /sys when mounted)",
		  root, tree);
	fu_expect(ibv_get_sysfs_path() == root, "the path is not stable");
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_true(n >= 1);
	snprintf(want, sizeof(want), "%s/class/infiniband/srdma0", root);
	fu_expect(!strcmp(list[0]->ibdev_path, want), "ibdev_path %s, want %s",
		  list[0]->ibdev_path, want);
	/* dev_name is the uverbs name /dev/infiniband/<dev_name> uses. */
	fu_expect(!strcmp(list[0]->dev_name, "uverbs_srdma0"), "dev_name %s",
		  list[0]->dev_name);
	snprintf(want, sizeof(want), "%s/class/infiniband_verbs/uverbs_srdma0",
		 root);
	fu_expect(!strcmp(list[0]->dev_path, want), "dev_path %s, want %s",
		  list[0]->dev_path, want);
	/* Both exist and describe each other, as rdma-core checks. */
	fu_expect(!strcmp(rd(list[0]->dev_path, "ibdev"), "srdma0"),
		  "uverbs ibdev");
	fu_expect(!strcmp(rd(list[0]->ibdev_path, "node_type"), "1: CA"),
		  "node_type");
	snprintf(want, sizeof(want), "%s/class", root);
	fu_expect(!strcmp(rd(want, "infiniband_verbs/abi_version"), "6"),
		  "uverbs class abi_version");
	ibv_free_device_list(list);
	fu_done();
}

static void test_sysfs_read_sysfs_file(void **state)
{
	char small[4], buf[64];
	int n;

	paths();
	ibv_get_sysfs_path();
	n = ibv_read_sysfs_file(dev_dir, "fw_ver", buf, sizeof(buf));
	fu_expect(n > 0 && (size_t)n == strlen(buf) && buf[n - 1] != '\n',
		  "fw_ver read gave %d '%s'", n, buf);
	errno = 0;
	n = ibv_read_sysfs_file(dev_dir, "no_such_file", buf, sizeof(buf));
	fu_expect(n == -1 && errno == ENOENT, "missing file gave %d errno %d",
		  n, errno);
	/* Too small to hold the text and its NUL: refused, not truncated. */
	n = ibv_read_sysfs_file(dev_dir, "node_guid", small, sizeof(small));
	fu_expect(n == -1, "a 4-byte buffer for node_guid gave %d", n);
	fu_expect(ibv_read_sysfs_file(NULL, "x", buf, sizeof(buf)) == -1 &&
			  errno == EINVAL,
		  "NULL dir");
	fu_done();
}

static void test_sysfs_device_files(void **state)
{
	struct ibv_context *ctx;
	struct ibv_device_attr a;
	char want[64];
	uint64_t g;

	paths();
	ctx = fu_open_srdma();
	assert_int_equal(ibv_query_device(ctx, &a), 0);
	g = be64toh(a.node_guid);
	snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x",
		 (unsigned int)(g >> 48), (unsigned int)(g >> 32) & 0xffff,
		 (unsigned int)(g >> 16) & 0xffff, (unsigned int)g & 0xffff);
	fu_expect(!strcmp(rd(dev_dir, "node_guid"), want), "node_guid %s/%s",
		  rd(dev_dir, "node_guid"), want);
	g = be64toh(a.sys_image_guid);
	snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x",
		 (unsigned int)(g >> 48), (unsigned int)(g >> 32) & 0xffff,
		 (unsigned int)(g >> 16) & 0xffff, (unsigned int)g & 0xffff);
	fu_expect(!strcmp(rd(dev_dir, "sys_image_guid"), want),
		  "sys_image_guid");
	fu_expect(!strcmp(rd(dev_dir, "fw_ver"), a.fw_ver), "fw_ver %s/%s",
		  rd(dev_dir, "fw_ver"), a.fw_ver);
	snprintf(want, sizeof(want), "0x%x", a.hw_ver);
	fu_expect(!strcmp(rd(dev_dir, "hw_rev"), want), "hw_rev");
	fu_expect(*rd(dev_dir, "hca_type") && *rd(dev_dir, "board_id") &&
			  strstr(rd(dev_dir, "node_desc"), "srdma0"),
		  "hca_type, board_id, node_desc");
	ibv_close_device(ctx);
	fu_done();
}

/* Every port file against ibv_query_port/gid/gid_type/gid_ex/pkey. */
static void check_port(struct ibv_context *ctx)
{
	static const char *const state_names[] = {
		"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
	};
	struct ibv_port_attr pa;
	char want[128], f[64], ifname[IF_NAMESIZE];
	uint32_t i, filled = 0;
	__be16 pkey;

	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	snprintf(want, sizeof(want), "%u: %s", pa.state,
		 state_names[pa.state]);
	fu_expect(!strcmp(rd(port_dir, "state"), want), "state %s/%s",
		  rd(port_dir, "state"), want);
	fu_expect(atoi(rd(port_dir, "phys_state")) == pa.phys_state,
		  "phys_state");
	fu_expect(!strcmp(rd(port_dir, "link_layer"),
			  pa.link_layer == IBV_LINK_LAYER_ETHERNET
				  ? "Ethernet"
				  : "InfiniBand"),
		  "link_layer %s", rd(port_dir, "link_layer"));
	snprintf(want, sizeof(want), "0x%x", pa.lid);
	fu_expect(!strcmp(rd(port_dir, "lid"), want), "lid %s, want %s",
		  rd(port_dir, "lid"), want);
	snprintf(want, sizeof(want), "0x%x", pa.sm_lid);
	fu_expect(!strcmp(rd(port_dir, "sm_lid"), want), "sm_lid");
	fu_expect(atoi(rd(port_dir, "lid_mask_count")) == pa.lmc, "lmc");
	snprintf(want, sizeof(want), "0x%08x", pa.port_cap_flags);
	fu_expect(!strcmp(rd(port_dir, "cap_mask"), want), "cap_mask %s/%s",
		  rd(port_dir, "cap_mask"), want);
	/* 4X (width 2) EDR (speed 32): 100 Gb/s, as the kernel writes it. */
	if (pa.active_width == 2 && pa.active_speed == 32)
		fu_expect(!strcmp(rd(port_dir, "rate"),
				  "100 Gb/sec (4X EDR)"),
			  "rate %s", rd(port_dir, "rate"));
	for (i = 0; i < pa.pkey_tbl_len; i++) {
		assert_int_equal(ibv_query_pkey(ctx, 1, (int)i, &pkey), 0);
		snprintf(f, sizeof(f), "pkeys/%u", i);
		snprintf(want, sizeof(want), "0x%04x", be16toh(pkey));
		fu_expect(!strcmp(rd(port_dir, f), want), "%s", f);
	}
	snprintf(f, sizeof(f), "pkeys/%u", pa.pkey_tbl_len);
	fu_expect(!exists(port_dir, f), "%s exists", f);
	for (i = 0; i < (uint32_t)pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		enum fu_gid_type_sysfs type;
		union ibv_gid g;

		assert_int_equal(ibv_query_gid(ctx, 1, (int)i, &g), 0);
		gid_text(&g, want, sizeof(want));
		snprintf(f, sizeof(f), "gids/%u", i);
		fu_expect(!strcmp(rd(port_dir, f), want), "%s %s, want %s", f,
			  rd(port_dir, f), want);
		snprintf(f, sizeof(f), "gid_attrs/types/%u", i);
		if (ibv_query_gid_type(ctx, 1, i, &type)) {
			fu_expect(!exists(port_dir, f), "%s of an empty slot",
				  f);
			continue;
		}
		filled++;
		fu_expect(!strcmp(rd(port_dir, f), type == FU_GID_ROCE_V2
							   ? "RoCE v2"
							   : "IB/RoCE v1"),
			  "%s %s", f, rd(port_dir, f));
		snprintf(f, sizeof(f), "gid_attrs/ndevs/%u", i);
		assert_int_equal(ibv_query_gid_ex(ctx, 1, i, &e, 0), 0);
		if (!e.ndev_ifindex) {
			fu_expect(!exists(port_dir, f), "%s without a netdev",
				  f);
			continue;
		}
		fu_expect(if_indextoname(e.ndev_ifindex, ifname) &&
				  !strcmp(rd(port_dir, f), ifname),
			  "%s %s, want ifindex %u", f, rd(port_dir, f),
			  e.ndev_ifindex);
		/* pyverbs' lookup: the device lists the GID's interface. */
		snprintf(f, sizeof(f), "device/net/%s", ifname);
		fu_expect(exists(dev_dir, f), "%s missing", f);
	}
	fu_expect(filled >= 1, "no filled GID slot");
	snprintf(f, sizeof(f), "gids/%d", pa.gid_tbl_len);
	fu_expect(!exists(port_dir, f), "%s exists", f);
}

static void test_sysfs_port_files(void **state)
{
	struct ibv_context *ctx;

	paths();
	ctx = fu_open_srdma();
	check_port(ctx);
	/* Whatever the link layer, the device names an interface. */
	fu_expect(exists(dev_dir, "device/net"), "device/net missing");
	ibv_close_device(ctx);
	fu_done();
}

/* The LID is the oldest live context's; 0 when none is open. */
static void test_sysfs_lid_follows_contexts(void **state)
{
	struct ibv_context *c1, *c2;
	struct ibv_port_attr p1;
	char want[32];

	paths();
	c1 = fu_open_srdma();
	assert_int_equal(ibv_query_port(c1, 1, &p1), 0);
	sleep(1);	/* open times have a one-second grain */
	c2 = fu_open_srdma();
	snprintf(want, sizeof(want), "0x%x", p1.lid);
	fu_expect(!strcmp(rd(port_dir, "lid"), want),
		  "lid %s with two contexts, want the first's %s",
		  rd(port_dir, "lid"), want);
	ibv_close_device(c1);
	ibv_close_device(c2);
	fu_expect(!strcmp(rd(port_dir, "lid"), "0x0"),
		  "lid %s with no context open", rd(port_dir, "lid"));
	fu_done();
}

/* Listing the devices looks again at most once a second; a damaged tree
 * is repaired once the stamp says so; files it no longer describes go. */
static void test_sysfs_repair_and_prune(void **state)
{
	char p[1024], stale[1024], val[64];
	FILE *f;

	paths();
	ibv_close_device(fu_open_srdma());	/* a forced refresh, now */
	snprintf(val, sizeof(val), "%s", rd(dev_dir, "node_guid"));
	snprintf(p, sizeof(p), "%s/node_guid", dev_dir);
	assert_int_equal(chmod(p, 0644), 0);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("garbage\n", f);
	fclose(f);
	snprintf(stale, sizeof(stale), "%s/gids/999", port_dir);
	f = fopen(stale, "w");
	assert_non_null(f);
	fclose(f);
	/* With the stamp intact nothing is rewritten (cheap refreshes). */
	usleep(1100000);
	ibv_free_device_list(ibv_get_device_list(NULL));
	fu_expect(!strcmp(rd(dev_dir, "node_guid"), "garbage"),
		  "rewritten with an unchanged stamp");
	snprintf(p, sizeof(p), "%s/.stamp", tree);
	assert_int_equal(unlink(p), 0);
	/* Within a second of the last look, a listing does not look. */
	ibv_free_device_list(ibv_get_device_list(NULL));
	fu_expect(access(p, F_OK) && errno == ENOENT,
		  "a listing within a second refreshed the tree");
	usleep(1100000);
	ibv_free_device_list(ibv_get_device_list(NULL));
	fu_expect(!strcmp(rd(dev_dir, "node_guid"), val), "node_guid %s",
		  rd(dev_dir, "node_guid"));
	fu_expect(access(stale, F_OK) && errno == ENOENT, "stale file kept");
	fu_done();
}

/* Concurrent refreshes never show a reader half a file. */
static void test_sysfs_concurrent_refresh(void **state)
{
	char p[1024], guid[64];
	pid_t kids[3];
	unsigned int i, k;

	paths();
	ibv_get_sysfs_path();
	snprintf(guid, sizeof(guid), "%s", rd(dev_dir, "node_guid"));
	snprintf(p, sizeof(p), "%s/.stamp", tree);
	for (k = 0; k < 3; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (!kids[k]) {
			for (i = 0; i < 20; i++) {
				unlink(p);	/* make it rewrite everything */
				ibv_close_device(fu_open_srdma());
			}
			_exit(0);
		}
	}
	/* The children's contexts come and go: the LID file (and GID 0 on
	 * InfiniBand) is replaced again and again while we read it. */
	for (i = 0; i < 400; i++) {
		const char *v = rd(dev_dir, "node_guid");
		const char *lid = rd(port_dir, "lid");
		char *end;

		if (strcmp(v, guid)) {
			fu_expect(0, "node_guid read as '%s'", v);
			break;
		}
		strtoul(lid, &end, 16);
		if (strncmp(lid, "0x", 2) || end == lid + 2 || *end) {
			fu_expect(0, "lid read as '%s'", lid);
			break;
		}
	}
	for (k = 0; k < 3; k++) {
		int st;

		assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
		fu_expect(WIFEXITED(st) && !WEXITSTATUS(st), "child %u", k);
	}
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysfs_paths),
		cmocka_unit_test(test_sysfs_read_sysfs_file),
		cmocka_unit_test(test_sysfs_device_files),
		cmocka_unit_test(test_sysfs_port_files),
		cmocka_unit_test(test_sysfs_lid_follows_contexts),
		cmocka_unit_test(test_sysfs_repair_and_prune),
		cmocka_unit_test(test_sysfs_concurrent_refresh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
