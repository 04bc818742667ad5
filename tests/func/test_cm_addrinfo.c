// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_cm_addrinfo.c - rdma_getaddrinfo() and rdma_freeaddrinfo() as
 * rdma-core 44 answers them (src/cm/cma_addrinfo.c has the rules).
 *
 * Passive lookups give the source address (the wildcard for a NULL node),
 * active ones the destination plus the local address the kernel would use
 * to reach it; hints pick the QP type and port space and each implies the
 * other; resolution failures come back as the EAI_* code with errno set,
 * argument errors as -1 with errno EINVAL. Only loopback and numeric or
 * /etc/services lookups are used, so no test depends on DNS. The IPv6 case
 * is skipped on machines without ::1.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <rdma/rdma_cma.h>

#include "func_util.h"

#define TEST_PORT 7471

static struct rdma_addrinfo *lookup(const char *node, const char *service,
				    const struct rdma_addrinfo *hints)
{
	struct rdma_addrinfo *res = NULL;
	int ret;

	errno = 0;
	ret = rdma_getaddrinfo(node, service, hints, &res);
	fu_expect(ret == 0 && res, "rdma_getaddrinfo(%s, %s): ret %d (%s), %s",
		  node ? node : "NULL", service ? service : "NULL", ret,
		  gai_strerror(ret), fu_errname(errno));
	return ret ? NULL : res;
}

/* Expect failure with return @want_ret and errno @want_errno. */
static void expect_fail(const char *node, const char *service,
			const struct rdma_addrinfo *hints, int want_ret,
			int want_errno, const char *what)
{
	struct rdma_addrinfo *sentinel = (struct rdma_addrinfo *)&sentinel;
	struct rdma_addrinfo *res = sentinel;
	int ret;

	errno = 0;
	ret = rdma_getaddrinfo(node, service, hints, &res);
	fu_expect(ret == want_ret && errno == want_errno,
		  "%s: ret %d errno %s, want ret %d errno %s", what, ret,
		  fu_errname(errno), want_ret, fu_errname(want_errno));
	fu_expect(res == sentinel, "%s: *res written on failure", what);
	if (!ret && res != sentinel)
		rdma_freeaddrinfo(res);
}

static bool is_in4(const struct sockaddr *sa, socklen_t len, uint32_t addr,
		   uint16_t port)
{
	const struct sockaddr_in *sin = (const void *)sa;

	return sa && len == sizeof(*sin) && sin->sin_family == AF_INET &&
	       sin->sin_addr.s_addr == htonl(addr) &&
	       sin->sin_port == htons(port);
}

static bool is_in6(const struct sockaddr *sa, socklen_t len,
		   const struct in6_addr *addr, uint16_t port)
{
	const struct sockaddr_in6 *sin6 = (const void *)sa;

	return sa && len == sizeof(*sin6) && sin6->sin6_family == AF_INET6 &&
	       !memcmp(&sin6->sin6_addr, addr, sizeof(*addr)) &&
	       sin6->sin6_port == htons(port);
}

static bool is_wildcard(const struct sockaddr *sa, socklen_t len, uint16_t port)
{
	return is_in4(sa, len, INADDR_ANY, port) ||
	       is_in6(sa, len, &in6addr_any, port);
}

static void test_cm_addrinfo_passive_null_node_is_wildcard(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE};
	struct rdma_addrinfo *res = lookup(NULL, "7471", &hints);

	assert_non_null(res);
	fu_expect(is_wildcard(res->ai_src_addr, res->ai_src_len, TEST_PORT),
		  "src is not the wildcard, port %d (len %u)", TEST_PORT,
		  (unsigned)res->ai_src_len);
	fu_expect(!res->ai_dst_addr && !res->ai_dst_len,
		  "passive result has a destination");
	fu_expect(res->ai_family == res->ai_src_addr->sa_family,
		  "ai_family %d, src family %d", res->ai_family,
		  res->ai_src_addr->sa_family);
	fu_expect_int(res->ai_flags, RAI_PASSIVE, "ai_flags");
	fu_expect_int(res->ai_port_space, RDMA_PS_TCP, "ai_port_space");
	fu_expect_int(res->ai_qp_type, IBV_QPT_RC, "ai_qp_type");
	fu_expect(!res->ai_next, "more than one entry");
	rdma_freeaddrinfo(res);
	fu_done();
}

static void test_cm_addrinfo_passive_numeric_node(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_PASSIVE,
				      .ai_port_space = RDMA_PS_TCP};
	struct rdma_addrinfo *res = lookup("127.0.0.1", "7471", &hints);

	assert_non_null(res);
	fu_expect(is_in4(res->ai_src_addr, res->ai_src_len, INADDR_LOOPBACK,
			 TEST_PORT),
		  "src is not 127.0.0.1:%d", TEST_PORT);
	fu_expect(!res->ai_dst_addr, "passive result has a destination");
	fu_expect_int(res->ai_family, AF_INET, "ai_family");
	fu_expect_int(res->ai_flags, RAI_PASSIVE, "ai_flags");
	fu_expect_int(res->ai_qp_type, IBV_QPT_RC, "ai_qp_type");
	rdma_freeaddrinfo(res);
	fu_done();
}

static void test_cm_addrinfo_active_fills_route_source(void **state)
{
	struct rdma_addrinfo *res = lookup("127.0.0.1", "7471", NULL);

	assert_non_null(res);
	fu_expect(is_in4(res->ai_dst_addr, res->ai_dst_len, INADDR_LOOPBACK,
			 TEST_PORT),
		  "dst is not 127.0.0.1:%d", TEST_PORT);
	fu_expect(is_in4(res->ai_src_addr, res->ai_src_len, INADDR_LOOPBACK, 0),
		  "src is not 127.0.0.1 port 0 (len %u)",
		  (unsigned)res->ai_src_len);
	fu_expect_int(res->ai_flags, 0, "ai_flags");
	fu_expect_int(res->ai_family, AF_INET, "ai_family");
	fu_expect_int(res->ai_port_space, RDMA_PS_TCP, "ai_port_space");
	fu_expect_int(res->ai_qp_type, IBV_QPT_RC, "ai_qp_type");
	fu_expect(!res->ai_next, "more than one entry");
	rdma_freeaddrinfo(res);
	fu_done();
}

static void test_cm_addrinfo_noroute_leaves_source_empty(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_NOROUTE};
	struct rdma_addrinfo *res = lookup("127.0.0.1", "7471", &hints);

	assert_non_null(res);
	fu_expect(res->ai_dst_addr != NULL, "no destination");
	fu_expect(!res->ai_src_addr && !res->ai_src_len,
		  "RAI_NOROUTE still filled a source");
	rdma_freeaddrinfo(res);
	fu_done();
}

static void test_cm_addrinfo_hints_source_is_copied(void **state)
{
	struct sockaddr_in src = {.sin_family = AF_INET,
				  .sin_port = htons(1234),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rdma_addrinfo hints = {.ai_src_addr = (struct sockaddr *)&src,
				      .ai_src_len = sizeof(src)};
	struct rdma_addrinfo *res = lookup("127.0.0.1", "7471", &hints);

	assert_non_null(res);
	fu_expect(is_in4(res->ai_src_addr, res->ai_src_len, INADDR_LOOPBACK,
			 1234),
		  "hints' source not copied");
	fu_expect(res->ai_src_addr != (struct sockaddr *)&src,
		  "source aliases the hints");
	rdma_freeaddrinfo(res);
	fu_done();
}

static void test_cm_addrinfo_port_space_implies_qp_type(void **state)
{
	struct rdma_addrinfo udp = {.ai_port_space = RDMA_PS_UDP};
	struct rdma_addrinfo ud = {.ai_qp_type = IBV_QPT_UD};
	struct rdma_addrinfo ib = {.ai_port_space = RDMA_PS_IB,
				   .ai_qp_type = IBV_QPT_RC};
	struct rdma_addrinfo *res;

	res = lookup("127.0.0.1", "7471", &udp);
	assert_non_null(res);
	fu_expect_int(res->ai_port_space, RDMA_PS_UDP, "PS_UDP: port space");
	fu_expect_int(res->ai_qp_type, IBV_QPT_UD, "PS_UDP: qp type");
	rdma_freeaddrinfo(res);

	res = lookup("127.0.0.1", "7471", &ud);
	assert_non_null(res);
	fu_expect_int(res->ai_port_space, RDMA_PS_UDP, "QPT_UD: port space");
	fu_expect_int(res->ai_qp_type, IBV_QPT_UD, "QPT_UD: qp type");
	rdma_freeaddrinfo(res);

	res = lookup("127.0.0.1", "7471", &ib);
	assert_non_null(res);
	fu_expect_int(res->ai_port_space, RDMA_PS_IB, "PS_IB: port space");
	fu_expect_int(res->ai_qp_type, IBV_QPT_RC, "PS_IB: qp type");
	rdma_freeaddrinfo(res);
	fu_done();
}

static void test_cm_addrinfo_hints_only(void **state)
{
	struct sockaddr_in dst = {.sin_family = AF_INET,
				  .sin_port = htons(TEST_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct rdma_addrinfo hints = {.ai_family = AF_INET,
				      .ai_qp_type = IBV_QPT_UD,
				      .ai_port_space = RDMA_PS_UDP,
				      .ai_dst_addr = (struct sockaddr *)&dst,
				      .ai_dst_len = sizeof(dst)};
	struct rdma_addrinfo *res = lookup(NULL, NULL, &hints);

	assert_non_null(res);
	fu_expect(is_in4(res->ai_dst_addr, res->ai_dst_len, INADDR_LOOPBACK,
			 TEST_PORT),
		  "hints' destination not copied");
	fu_expect(is_in4(res->ai_src_addr, res->ai_src_len, INADDR_LOOPBACK, 0),
		  "no route source for the hints' destination");
	fu_expect_int(res->ai_qp_type, IBV_QPT_UD, "qp type");
	fu_expect_int(res->ai_port_space, RDMA_PS_UDP, "port space");
	rdma_freeaddrinfo(res);
	fu_done();
}

static void test_cm_addrinfo_numerichost_rejects_name(void **state)
{
	struct rdma_addrinfo hints = {.ai_flags = RAI_NUMERICHOST};

	expect_fail("localhost", "7471", &hints, EAI_NONAME, ENOENT,
		    "RAI_NUMERICHOST localhost");
	expect_fail("not-an-address", NULL, &hints, EAI_NONAME, ENOENT,
		    "RAI_NUMERICHOST not-an-address");
	fu_done();
}

static void test_cm_addrinfo_bad_requests_return_eai(void **state)
{
	struct rdma_addrinfo mismatch = {.ai_qp_type = IBV_QPT_UD,
					 .ai_port_space = RDMA_PS_TCP};
	struct rdma_addrinfo v6_only = {.ai_family = AF_INET6};
	struct rdma_addrinfo ib = {.ai_flags = RAI_FAMILY | RAI_NUMERICHOST,
				   .ai_family = AF_IB};

	expect_fail("127.0.0.1", "no-such-service-srdma", NULL, EAI_SERVICE,
		    EPROTOTYPE, "unknown service");
	expect_fail("256.1.1.1", "7471",
		    &(struct rdma_addrinfo){.ai_flags = RAI_NUMERICHOST},
		    EAI_NONAME, ENOENT, "bad dotted quad");
	expect_fail("127.0.0.1", "7471", &mismatch, EAI_SOCKTYPE, EPROTOTYPE,
		    "QPT_UD with PS_TCP");
	expect_fail("127.0.0.1", "7471", &v6_only, EAI_ADDRFAMILY,
		    EADDRNOTAVAIL, "IPv4 address with AF_INET6");
	expect_fail("::1", "7471", &ib, EAI_FAMILY, EAFNOSUPPORT,
		    "AF_IB result");
	fu_done();
}

static void test_cm_addrinfo_bad_arguments_einval(void **state)
{
	struct rdma_addrinfo hints = {.ai_src_len = sizeof(struct sockaddr_in)};

	errno = 0;
	fu_expect_int(rdma_getaddrinfo("127.0.0.1", "7471", NULL, NULL), -1,
		      "NULL res");
	fu_expect_int(errno, EINVAL, "NULL res errno");
	expect_fail(NULL, NULL, NULL, -1, EINVAL, "no node, service, hints");
	expect_fail("127.0.0.1", "7471", &hints, -1, EINVAL,
		    "hints src_len without src_addr");
	fu_done();
}

static void test_cm_addrinfo_free_null_and_chain(void **state)
{
	struct rdma_addrinfo *a, *b;

	rdma_freeaddrinfo(NULL);
	a = lookup("127.0.0.1", "7471", NULL);
	b = lookup("127.0.0.1", "7472", NULL);
	assert_non_null(a);
	assert_non_null(b);
	/* Callers may splice lists; free must walk ai_next (ASan checks). */
	a->ai_next = b;
	rdma_freeaddrinfo(a);
	fu_done();
}

static bool have_ipv6_loopback(void)
{
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6,
				    .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	int fd = socket(AF_INET6, SOCK_DGRAM, 0);
	bool ok;

	if (fd < 0)
		return false;
	ok = !bind(fd, (struct sockaddr *)&sin6, sizeof(sin6));
	close(fd);
	return ok;
}

static void test_cm_addrinfo_ipv6_loopback(void **state)
{
	struct rdma_addrinfo passive = {.ai_flags = RAI_PASSIVE,
					.ai_family = AF_INET6};
	struct rdma_addrinfo *res;

	if (!have_ipv6_loopback())
		skip();

	res = lookup("::1", "7471", NULL);
	assert_non_null(res);
	fu_expect_int(res->ai_family, AF_INET6, "ai_family");
	fu_expect(is_in6(res->ai_dst_addr, res->ai_dst_len, &in6addr_loopback,
			 TEST_PORT),
		  "dst is not [::1]:%d", TEST_PORT);
	fu_expect(
		is_in6(res->ai_src_addr, res->ai_src_len, &in6addr_loopback, 0),
		"src is not [::1] port 0");
	rdma_freeaddrinfo(res);

	res = lookup(NULL, "7471", &passive);
	assert_non_null(res);
	fu_expect(is_in6(res->ai_src_addr, res->ai_src_len, &in6addr_any,
			 TEST_PORT),
		  "AF_INET6 passive src is not [::]:%d", TEST_PORT);
	rdma_freeaddrinfo(res);
	fu_done();
}

#define AI_TEST(t) cmocka_unit_test(t)

int main(void)
{
	const struct CMUnitTest tests[] = {
		AI_TEST(test_cm_addrinfo_passive_null_node_is_wildcard),
		AI_TEST(test_cm_addrinfo_passive_numeric_node),
		AI_TEST(test_cm_addrinfo_active_fills_route_source),
		AI_TEST(test_cm_addrinfo_noroute_leaves_source_empty),
		AI_TEST(test_cm_addrinfo_hints_source_is_copied),
		AI_TEST(test_cm_addrinfo_port_space_implies_qp_type),
		AI_TEST(test_cm_addrinfo_hints_only),
		AI_TEST(test_cm_addrinfo_numerichost_rejects_name),
		AI_TEST(test_cm_addrinfo_bad_requests_return_eai),
		AI_TEST(test_cm_addrinfo_bad_arguments_einval),
		AI_TEST(test_cm_addrinfo_free_null_and_chain),
		AI_TEST(test_cm_addrinfo_ipv6_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
