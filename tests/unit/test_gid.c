// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_gid.c - the link layer, the GID table and the transport choice
 * (transport/net/gid.c, select.c).
 *
 * The link layer and the transport mode are read from the environment
 * once per process, so every case that depends on them runs in a fork()
 * child with its own environment; the parent never asks. A child reports
 * each failed check on stderr and exits non-zero.
 *
 * What is checked: SRDMA_LINK_LAYER and SRDMA_TRANSPORT parsing (unknown
 * values fall back to InfiniBand / auto); the InfiniBand table (one GID
 * that decodes to the LID); the Ethernet table against getifaddrs() (the
 * order: per interface its fe80:: default GID first, IPv4-mapped GIDs
 * before other IPv6 ones; RoCE v2; ifindex and MTU; loopback only when
 * nothing else is up; no duplicates); the MTU as rxe derives it; which
 * GIDs are local; and srdma_net_dest() against a fake registry.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/core.h"
#include "transport/host/host.h"
#include "transport/net/gid.h"
#include "transport/net/net.h"

static int child_fails;

#define CHK(cond, ...)                                                         \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__,     \
				#cond);                                        \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			child_fails++;                                         \
		}                                                              \
	} while (0)

/* Run @fn in a child with SRDMA_LINK_LAYER=@ll and SRDMA_TRANSPORT=@tr
 * (NULL: unset); assert it passed. */
static void in_child(void (*fn)(void), const char *ll, const char *tr)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid) {
		unsetenv("SRDMA_LINK_LAYER");
		unsetenv("SRDMA_TRANSPORT");
		if (ll)
			setenv("SRDMA_LINK_LAYER", ll, 1);
		if (tr)
			setenv("SRDMA_TRANSPORT", tr, 1);
		fn();
		_exit(child_fails ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "child (SRDMA_LINK_LAYER=%s SRDMA_TRANSPORT=%s) "
			"failed\n", ll ? ll : "-", tr ? tr : "-");
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- link layer --------------------------------------------------------- */

static void want_eth(void)
{
	CHK(srdma_link_is_eth(), "want Ethernet");
	CHK(srdma_link_is_eth(), "answer changed");
}

static void want_ib(void)
{
	CHK(!srdma_link_is_eth(), "want InfiniBand");
}

static void test_link_layer_from_env(void **state)
{
	(void)state;
	in_child(want_ib, NULL, NULL);
	in_child(want_ib, "ib", NULL);
	in_child(want_ib, "infiniband", NULL);
	in_child(want_ib, "bogus", NULL);		/* unknown: IB */
	in_child(want_ib, "", NULL);			/* empty: default */
	in_child(want_eth, "eth", NULL);
	in_child(want_eth, "ETH", NULL);
	in_child(want_eth, "ethernet", NULL);
	in_child(want_eth, NULL, "net");		/* implied */
	in_child(want_ib, NULL, "host");
	in_child(want_ib, NULL, "auto");
	/* An explicit InfiniBand wins over the implication (logged). */
	in_child(want_ib, "ib", "net");
}

static void mode_auto(void)
{
	CHK(srdma_transport_mode() == SRDMA_TRANSPORT_AUTO, "want auto");
}

static void mode_host(void)
{
	CHK(srdma_transport_mode() == SRDMA_TRANSPORT_HOST, "want host");
}

static void mode_net(void)
{
	CHK(srdma_transport_mode() == SRDMA_TRANSPORT_NET, "want net");
}

static void test_transport_mode_from_env(void **state)
{
	(void)state;
	in_child(mode_auto, NULL, NULL);
	in_child(mode_auto, NULL, "auto");
	in_child(mode_auto, NULL, "bogus");
	in_child(mode_host, NULL, "host");
	in_child(mode_net, NULL, "net");
	in_child(mode_net, NULL, "NET");
}

/* ---- the tables ---------------------------------------------------------- */

static void ib_table(void)
{
	struct srdma_gid_table t;
	uint64_t guid = htobe64(0x0002c90300a0b0c0ull);

	CHK(srdma_gid_table_build(&t, 0x1234, guid) == 0, "build");
	CHK(t.n == 1, "n %u", t.n);
	CHK(be64toh(t.e[0].gid.global.subnet_prefix) == 0xfe80000000000000ull,
	    "prefix");
	CHK(be64toh(t.e[0].gid.global.interface_id) == 0x0002c90300a01234ull,
	    "interface id %#llx",
	    (unsigned long long)be64toh(t.e[0].gid.global.interface_id));
	CHK(t.e[0].type == IBV_GID_TYPE_IB, "type %u", t.e[0].type);
	CHK(t.e[0].ifindex == 0 && t.e[0].if_mtu == 0, "netdev");
	CHK(srdma_gid_active_mtu(&t) == IBV_MTU_4096, "IB MTU");
}

static void test_ib_table_is_the_lid_gid(void **state)
{
	(void)state;
	in_child(ib_table, NULL, NULL);
}

static void v4_gid(const struct in_addr *a, union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	memcpy(&g->raw[12], &a->s_addr, 4);
}

static bool is_link_local(const union ibv_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

static bool is_v4(const union ibv_gid *g)
{
	static const uint8_t p[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(g->raw, p, 12);
}

static uint32_t mtu_of(const char *name)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct ifreq r;
	uint32_t m = 0;

	memset(&r, 0, sizeof(r));
	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", name);
	if (fd >= 0 && !ioctl(fd, SIOCGIFMTU, &r))
		m = (uint32_t)r.ifr_mtu;
	if (fd >= 0)
		close(fd);
	return m;
}

static void eth_table(void)
{
	struct srdma_gid_table t;
	struct ifaddrs *all, *a;
	bool other_up = false;
	uint32_t k, j;

	CHK(srdma_gid_table_build(&t, 7, 0) == 0, "build");
	CHK(t.n >= 1 && t.n <= SRDMA_GID_MAX, "n %u", t.n);
	if (!t.n)
		return;
	assert_int_equal(getifaddrs(&all), 0);
	for (a = all; a; a = a->ifa_next)
		if ((a->ifa_flags & IFF_UP) && !(a->ifa_flags & IFF_LOOPBACK))
			other_up = true;
	for (k = 0; k < t.n; k++) {
		const struct srdma_gid_ent *e = &t.e[k];

		CHK(e->type == IBV_GID_TYPE_ROCE_V2, "GID[%u] type %u", k,
		    e->type);
		CHK(e->ifindex && e->ifindex == if_nametoindex(e->ifname),
		    "GID[%u] ifindex %u of %s", k, e->ifindex, e->ifname);
		CHK(e->if_mtu == mtu_of(e->ifname), "GID[%u] MTU %u", k,
		    e->if_mtu);
		CHK(!other_up || strcmp(e->ifname, "lo"),
		    "GID[%u] on lo while another interface is up", k);
		CHK(srdma_gid_is_local(&e->gid), "GID[%u] not local", k);
		for (j = 0; j < k; j++)
			CHK(memcmp(t.e[j].gid.raw, e->gid.raw, 16),
			    "GID[%u] repeats GID[%u]", k, j);
		/* An interface's entries start with its default GID, then
		 * IPv4, then IPv6. */
		if (!k || strcmp(t.e[k - 1].ifname, e->ifname)) {
			CHK(is_link_local(&e->gid),
			    "GID[%u], first of %s, not fe80::", k, e->ifname);
		} else {
			CHK(!is_link_local(&e->gid),
			    "GID[%u]: second link-local of %s", k, e->ifname);
			CHK(!is_v4(&e->gid) || is_v4(&t.e[k - 1].gid) ||
				    is_link_local(&t.e[k - 1].gid),
			    "GID[%u]: IPv4 after IPv6", k);
		}
		CHK(srdma_gid_find(&t, &e->gid) == (int)k, "find GID[%u]", k);
	}
	/* Every IPv4 address of a listed interface is there. */
	for (a = all; a; a = a->ifa_next) {
		union ibv_gid g;
		bool listed = false;

		if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET)
			continue;
		for (k = 0; k < t.n; k++)
			listed |= !strcmp(t.e[k].ifname, a->ifa_name);
		if (!listed)
			continue;
		v4_gid(&((struct sockaddr_in *)a->ifa_addr)->sin_addr, &g);
		CHK(srdma_gid_find(&t, &g) >= 0, "IPv4 of %s missing",
		    a->ifa_name);
	}
	freeifaddrs(all);
}

static void test_eth_table_from_the_interfaces(void **state)
{
	(void)state;
	in_child(eth_table, "eth", NULL);
}

static void test_active_mtu_as_rxe(void **state)
{
	static const struct {
		uint32_t netdev;
		enum ibv_mtu want;
	} v[] = {
		{ 1500, IBV_MTU_1024 }, { 9000, IBV_MTU_4096 },
		{ 65536, IBV_MTU_4096 }, { 4176, IBV_MTU_4096 },
		{ 4175, IBV_MTU_2048 }, { 2128, IBV_MTU_2048 },
		{ 2127, IBV_MTU_1024 }, { 1104, IBV_MTU_1024 },
		{ 1103, IBV_MTU_512 }, { 591, IBV_MTU_256 },
		{ 68, IBV_MTU_256 },
	};
	static struct srdma_gid_table t;
	size_t i;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.n = 2;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		t.e[0].if_mtu = v[i].netdev;
		assert_int_equal(srdma_gid_active_mtu(&t), v[i].want);
	}
	/* The first entry with a netdev decides. */
	t.e[0].if_mtu = 0;
	t.e[1].if_mtu = 1500;
	assert_int_equal(srdma_gid_active_mtu(&t), IBV_MTU_1024);
	t.e[1].if_mtu = 0;
	assert_int_equal(srdma_gid_active_mtu(&t), IBV_MTU_4096);
}

static void test_gid_is_local(void **state)
{
	union ibv_gid g;

	(void)state;
	memset(&g, 0, sizeof(g));
	g.raw[15] = 1;				/* ::1 */
	assert_true(srdma_gid_is_local(&g));
	inet_pton(AF_INET6, "::ffff:127.0.0.1", g.raw);
	assert_true(srdma_gid_is_local(&g));
	inet_pton(AF_INET6, "::ffff:127.1.2.3", g.raw);
	assert_true(srdma_gid_is_local(&g));
	/* Test-host addresses no interface of this namespace has. */
	inet_pton(AF_INET6, "::ffff:198.19.255.254", g.raw);
	assert_false(srdma_gid_is_local(&g));
	inet_pton(AF_INET6, "fd53:7264:6d61:ffff::fe", g.raw);
	assert_false(srdma_gid_is_local(&g));
	memset(&g, 0, sizeof(g));
	assert_false(srdma_gid_is_local(&g));
}

/* ---- the transport choice ------------------------------------------------ */

#define OWN_LID 3u
#define PEER_LID 4u	/* live, this process */
#define DEAD_LID 5u	/* LIVE in the registry, owner gone */
#define FREE_LID 6u	/* no context */
#define OTHERPID_LID 7u	/* live entry of another PID namespace */
#define NOREACH_LID 8u	/* live peer that may not attach others */
#define PARENT_LID 9u	/* live: our parent process (a real other pid) */

static struct srdma_context *fake_ctx(void)
{
	struct srdma_context *ctx = calloc(1, sizeof(*ctx));
	struct srdma_reg_entry *ent = calloc(SRDMA_REG_ENTRIES, sizeof(*ent));
	pid_t dead = fork();

	assert_non_null(ctx);
	assert_non_null(ent);
	assert_true(dead >= 0);
	if (!dead)
		_exit(0);
	waitpid(dead, NULL, 0);		/* reaped: its pid names nobody */
	ctx->host.lid = OWN_LID;
	ctx->host.reg_index = OWN_LID - 1;
	ctx->host.pid = getpid();
	ctx->host.reg.ent = ent;
	srdma_ns_self(&ctx->host.ns_net, &ctx->host.ns_pid);
	for (uint32_t l = OWN_LID; l <= PARENT_LID; l++) {
		if (l == FREE_LID)
			continue;
		atomic_store(&ent[l - 1].state, SRDMA_REG_LIVE);
		ent[l - 1].pid = getpid();
		ent[l - 1].ns_net = ctx->host.ns_net;
		ent[l - 1].ns_pid = ctx->host.ns_pid;
		atomic_store(&ent[l - 1].reach, SRDMA_REACH_CMA);
	}
	ent[DEAD_LID - 1].pid = dead;
	ent[OTHERPID_LID - 1].ns_pid = ctx->host.ns_pid + 1;
	atomic_store(&ent[NOREACH_LID - 1].reach, 0);
	ent[PARENT_LID - 1].pid = getppid();
	return ctx;
}

static struct ibv_ah_attr av(const char *dgid, bool global)
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.port_num = 1;
	a.is_global = global;
	inet_pton(AF_INET6, dgid, a.grh.dgid.raw);
	return a;
}

#define QPN(lid) (((lid) << SRDMA_QPN_SHIFT) | 0x21)

static void dest_auto(void)
{
	struct srdma_context *ctx = fake_ctx();
	struct ibv_ah_attr lo = av("::ffff:127.0.0.1", true);
	struct ibv_ah_attr far = av("fd53:7264:6d61:ffff::fe", true);
	struct ibv_ah_attr nogrh = av("::ffff:127.0.0.1", false);

	CHK(!srdma_net_dest(ctx, &lo, QPN(OWN_LID)), "own context: host");
	CHK(!srdma_net_dest(ctx, &lo, QPN(PEER_LID)), "live peer: host");
	CHK(srdma_net_dest(ctx, &lo, QPN(DEAD_LID)), "dead owner: net");
	CHK(srdma_net_dest(ctx, &lo, QPN(FREE_LID)), "no context: net");
	CHK(srdma_net_dest(ctx, &lo, 0x21), "LID 0: net");
	CHK(srdma_net_dest(ctx, &far, QPN(PEER_LID)), "other host: net");
	CHK(!srdma_net_dest(ctx, &nogrh, QPN(FREE_LID)), "no GRH: host");
	CHK(!srdma_net_dest(ctx, NULL, QPN(FREE_LID)), "no AV: host");
	CHK(srdma_net_dest(ctx, &lo, QPN(OTHERPID_LID)),
	    "another PID namespace: net");
	CHK(srdma_net_dest(ctx, &lo, QPN(NOREACH_LID)),
	    "peer may not attach: net");
	CHK(!srdma_net_dest(ctx, &lo, QPN(PARENT_LID)),
	    "other live process, attachable: host");
	/* We may not attach anyone: every other process is net. */
	atomic_store(&ctx->host.reg.ent[OWN_LID - 1].reach, 0);
	CHK(srdma_net_dest(ctx, &lo, QPN(PEER_LID)), "we may not attach: net");
	CHK(!srdma_net_dest(ctx, &lo, QPN(OWN_LID)), "own context: host");
}

/* The kernel refuses to let us attach other processes (as Yama does,
 * here by a seccomp filter that denies process_vm_* on any other pid):
 * a peer whose entry says all is well is net all the same, and our own
 * entry stops saying we can attach, for peers that decide later. */
static void dest_refused(void)
{
	struct srdma_context *ctx = fake_ctx();
	struct ibv_ah_attr lo = av("::ffff:127.0.0.1", true);
	unsigned int me = (unsigned int)getpid();
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1,
			 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, me, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	const char *why;

	if (srdma_cma_probe(getppid())) {
		/* Already refused (Yama without CAP_SYS_PTRACE): the
		 * filter would show nothing more. */
		print_message("parent not attachable here: refusal by "
			      "filter not tested\n");
		CHK(srdma_net_dest(ctx, &lo, QPN(PARENT_LID)), "refused: net");
		return;
	}
	CHK(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) &&
	    !prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog),
	    "seccomp filter");
	CHK(srdma_cma_probe(getppid()) == -EPERM, "parent refused after");
	CHK(srdma_cma_self_ok(&why), "ourselves still attachable");
	CHK(srdma_net_dest(ctx, &lo, QPN(PARENT_LID)), "refused: net");
	CHK(!(atomic_load(&ctx->host.reg.ent[OWN_LID - 1].reach) &
	      SRDMA_REACH_CMA), "own reach flag cleared");
}

static void dest_forced_net(void)
{
	struct srdma_context *ctx = fake_ctx();
	struct ibv_ah_attr lo = av("::ffff:127.0.0.1", true);

	CHK(srdma_net_dest(ctx, &lo, QPN(OWN_LID)), "forced: net");
	CHK(srdma_net_dest(ctx, &lo, QPN(PEER_LID)), "forced: net");
}

static void dest_never(void)
{
	struct srdma_context *ctx = fake_ctx();
	struct ibv_ah_attr far = av("fd53:7264:6d61:ffff::fe", true);

	CHK(!srdma_net_dest(ctx, &far, QPN(FREE_LID)), "want host");
}

/* Yama's rules as the context publishes them (SRDMA_REACH_CMA): scope 0
 * lets same-user peers attach; 1 and 2 only with CAP_SYS_PTRACE (here
 * dropped, as for any unprivileged user); 3 never. */
static void reach_by_scope(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	const char *why;
	bool root_ptrace;

	memset(d, 0, sizeof(d));
	CHK(!syscall(SYS_capget, &hdr, d), "capget");
	root_ptrace = d[0].effective & (1u << CAP_SYS_PTRACE);
	CHK(srdma_cma_self_ok_scope(0, &why) && !why, "scope 0: yes");
	CHK(!srdma_cma_self_ok_scope(3, &why) && why, "scope 3: no");
	CHK(srdma_cma_self_ok_scope(1, &why) == root_ptrace,
	    "scope 1: as CAP_SYS_PTRACE");
	if (!root_ptrace)
		return;
	d[0].effective &= ~(1u << CAP_SYS_PTRACE);
	CHK(!syscall(SYS_capset, &hdr, d), "capset");
	CHK(!srdma_cma_self_ok_scope(1, &why) && why, "scope 1: no");
	CHK(!srdma_cma_self_ok_scope(2, &why) && why, "scope 2: no");
	CHK(srdma_cma_self_ok_scope(0, &why), "scope 0: still yes");
}

static void test_net_dest(void **state)
{
	(void)state;
	in_child(dest_auto, "eth", NULL);
	in_child(dest_auto, "eth", "auto");
	in_child(dest_forced_net, NULL, "net");
	in_child(dest_forced_net, "eth", "net");
	in_child(dest_never, "eth", "host");		/* forced host */
	in_child(dest_never, NULL, NULL);		/* InfiniBand */
	in_child(dest_never, "ib", "net");		/* InfiniBand */
	in_child(dest_refused, "eth", NULL);
	in_child(reach_by_scope, "eth", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_layer_from_env),
		cmocka_unit_test(test_transport_mode_from_env),
		cmocka_unit_test(test_ib_table_is_the_lid_gid),
		cmocka_unit_test(test_eth_table_from_the_interfaces),
		cmocka_unit_test(test_active_mtu_as_rxe),
		cmocka_unit_test(test_gid_is_local),
		cmocka_unit_test(test_net_dest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
