// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_rdma_helpers.c - the librdmacm registration helpers rdma_reg_msgs,
 * rdma_reg_read, rdma_reg_write and rdma_dereg_mr (docs verbs-semantics.md
 * 8.1).
 *
 * The helpers are inline in <rdma/rdma_verbs.h> and call ibv_reg_mr on
 * id->pd with LW, LW|RR and LW|RW, so they inherit every errno of
 * ibv_reg_mr. A zeroed rdma_cm_id with only pd (and verbs) set is enough to
 * drive them; no connection is made. The access each helper asks for is not
 * observable without a data path, only that all three ask for local write.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "func_util.h"

typedef struct ibv_mr *(*reg_helper_fn)(struct rdma_cm_id *, void *, size_t);

static const struct {
	const char *name;
	reg_helper_fn fn;
} helpers[] = {
	{"rdma_reg_msgs", rdma_reg_msgs},
	{"rdma_reg_read", rdma_reg_read},
	{"rdma_reg_write", rdma_reg_write},
};
#define N_HELPERS (sizeof(helpers) / sizeof(helpers[0]))

static struct rdma_cm_id fake_id(struct ibv_pd *pd)
{
	struct rdma_cm_id id;

	memset(&id, 0, sizeof(id));
	id.pd = pd;
	id.verbs = pd ? pd->context : NULL;
	return id;
}

static void test_rdma_helpers_register_on_id_pd(void **state)
{
	struct rdma_cm_id id = fake_id(fu.pd);
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);
	size_t i;

	for (i = 0; i < N_HELPERS; i++) {
		struct ibv_mr *mr = helpers[i].fn(&id, buf + 4, fu.pg);

		fu_expect(mr != NULL, "%s failed: %s", helpers[i].name,
			  fu_errname(errno));
		if (!mr)
			continue;
		fu_expect(mr->pd == fu.pd && mr->context == fu.ctx,
			  "%s: mr pd/context not id's", helpers[i].name);
		fu_expect(mr->addr == buf + 4 && mr->length == fu.pg,
			  "%s: mr addr %p len %#zx", helpers[i].name, mr->addr,
			  mr->length);
		fu_expect(mr->lkey == mr->rkey, "%s: lkey %#x rkey %#x",
			  helpers[i].name, mr->lkey, mr->rkey);
		fu_expect_int(rdma_dereg_mr(mr), 0, "rdma_dereg_mr");
	}
	munmap(buf, 2 * fu.pg);
	fu_done();
}

static void test_rdma_helpers_need_writable_memory(void **state)
{
	struct rdma_cm_id id = fake_id(fu.pd);
	char *ro = fu_map(fu.pg, PROT_READ);
	size_t i;

	for (i = 0; i < N_HELPERS; i++) {
		struct ibv_mr *mr;

		errno = 0;
		mr = helpers[i].fn(&id, ro, fu.pg);
		fu_expect(!mr && errno == EFAULT,
			  "%s on read-only memory: %s, want EFAULT",
			  helpers[i].name,
			  mr ? "succeeded" : fu_errname(errno));
		if (mr)
			rdma_dereg_mr(mr);
	}
	munmap(ro, fu.pg);
	fu_done();
}

static void expect_helper_err(size_t i, struct rdma_cm_id *id, void *addr,
			      size_t len, int want, const char *what)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = helpers[i].fn(id, addr, len);
	fu_expect(!mr && errno == want, "%s %s: %s, want %s", helpers[i].name,
		  what, mr ? "succeeded" : fu_errname(errno), fu_errname(want));
	if (mr)
		rdma_dereg_mr(mr);
}

static void test_rdma_helpers_inherit_reg_mr_errors(void **state)
{
	struct rdma_cm_id id = fake_id(fu.pd);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	char *gone = fu_unmapped(fu.pg);
	size_t i;

	for (i = 0; i < N_HELPERS; i++) {
		expect_helper_err(i, &id, buf, 0, EINVAL, "length 0");
		expect_helper_err(i, &id, gone, fu.pg, EFAULT, "unmapped");
		expect_helper_err(i, &id, NULL, fu.pg, EFAULT, "NULL addr");
		expect_helper_err(i, &id, (void *)(UINTPTR_MAX - 100), fu.pg,
				  EINVAL, "wrapping range");
	}
	munmap(buf, fu.pg);
	fu_done();
}

static void test_rdma_helpers_null_pd_einval(void **state)
{
	struct rdma_cm_id id = fake_id(NULL);
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	size_t i;

	for (i = 0; i < N_HELPERS; i++) {
		struct ibv_mr *mr;

		errno = 0;
		mr = helpers[i].fn(&id, buf, fu.pg);
		fu_expect(!mr && errno == EINVAL,
			  "%s with id->pd NULL: %s, want EINVAL",
			  helpers[i].name,
			  mr ? "succeeded" : fu_errname(errno));
		if (mr)
			rdma_dereg_mr(mr);
	}
	munmap(buf, fu.pg);
	fu_done();
}

static void test_rdma_helpers_dereg_error_sets_errno(void **state)
{
	int ret;

	errno = 0;
	ret = rdma_dereg_mr(fu_fake_object(fu.ctx));
	fu_expect(ret == -1 && errno == EINVAL,
		  "rdma_dereg_mr(fake MR) gave %d errno %s, want -1 EINVAL",
		  ret, fu_errname(errno));
	fu_done();
}

/* With a real id, id->pd is the device's default PD once bound. */
static void test_rdma_helpers_bound_id_has_default_pd(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rdma_cm_id *id = NULL;
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr;

	if (!ch)
		skip();
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		rdma_destroy_event_channel(ch);
		skip();
	}
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (rdma_bind_addr(id, (struct sockaddr *)&sin) || !id->verbs) {
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		skip();
	}
	fu_expect(id->pd != NULL, "bound id has no default PD");
	if (id->pd) {
		fu_expect(id->pd->context == id->verbs,
			  "id->pd belongs to another context");
		mr = rdma_reg_write(id, buf, fu.pg);
		fu_expect(mr != NULL && mr->pd == id->pd,
			  "rdma_reg_write on a bound id: %s",
			  mr ? "wrong PD" : fu_errname(errno));
		if (mr)
			fu_expect_int(rdma_dereg_mr(mr), 0, "rdma_dereg_mr");
	}
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	munmap(buf, fu.pg);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		FU_TEST(test_rdma_helpers_register_on_id_pd),
		FU_TEST(test_rdma_helpers_need_writable_memory),
		FU_TEST(test_rdma_helpers_inherit_reg_mr_errors),
		FU_TEST(test_rdma_helpers_null_pd_einval),
		FU_TEST(test_rdma_helpers_dereg_error_sets_errno),
		FU_TEST(test_rdma_helpers_bound_id_has_default_pd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
