// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_reg_mr_env.c - registration with the device's optional features
 * switched off (docs verbs-semantics.md 2.3 steps 4 and 8, 2.5).
 *
 * SRDMA_ODP=0 must make the device stop advertising ODP and turn every
 * ON_DEMAND registration into EOPNOTSUPP, at the capability step of the
 * check order. SRDMA_MR_CHECK=0 switches the mapping/writability check off
 * ("switchable but on by default"). Both are read when a device is opened,
 * so each test sets its variable, opens its own context, and clears it.
 */
#include "func_util.h"

#define LW  IBV_ACCESS_LOCAL_WRITE
#define RW  IBV_ACCESS_REMOTE_WRITE
#define ODP IBV_ACCESS_ON_DEMAND

static int odp_off_setup(void **state)
{
	setenv("SRDMA_ODP", "0", 1);
	return fu_setup(state);
}

static int check_off_setup(void **state)
{
	setenv("SRDMA_MR_CHECK", "0", 1);
	return fu_setup(state);
}

static int env_teardown(void **state)
{
	unsetenv("SRDMA_ODP");
	unsetenv("SRDMA_MR_CHECK");
	return fu_teardown(state);
}

static void test_reg_mr_env_odp_off_not_advertised(void **state)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(fu.ctx, NULL, &ax), 0);
	fu_expect(!(ax.odp_caps.general_caps &
		    (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT)),
		  "SRDMA_ODP=0 but general_caps %#" PRIx64,
		  ax.odp_caps.general_caps);
	fu_done();
}

static void test_reg_mr_env_odp_off_on_demand_eopnotsupp(void **state)
{
	char *buf = fu_map(2 * fu.pg, PROT_READ | PROT_WRITE);

	fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf, ODP, EOPNOTSUPP);
	fu_expect_reg_err(fu.pd, buf, fu.pg, 0x10000, ODP | LW | RW,
			  EOPNOTSUPP);
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0, ODP, EOPNOTSUPP);
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0, ODP | LW, EOPNOTSUPP);
	/* capability (step 4) comes before shape, length and overflow */
	fu_expect_reg_err(fu.pd, NULL, SIZE_MAX, 0x1000, ODP, EOPNOTSUPP);
	fu_expect_reg_err(fu.pd, buf, 0, (uintptr_t)buf, ODP, EOPNOTSUPP);
	fu_expect_reg_err(fu.pd, (void *)(UINTPTR_MAX - 100), fu.pg,
			  UINTPTR_MAX - 100, ODP, EOPNOTSUPP);
	/* ... and after the pd, page-offset and access-bit checks */
	fu_expect_reg_err(NULL, buf, fu.pg, (uintptr_t)buf, ODP, EINVAL);
	fu_expect_reg_err(fu.pd, buf + 0x10, fu.pg, 0x20000, ODP, EINVAL);
	fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf, ODP | RW, EINVAL);
	fu_expect_reg_err(fu.pd, buf, fu.pg, (uintptr_t)buf, ODP | (1u << 13),
			  EINVAL);
	/* plain registration is unaffected */
	fu_expect_reg_ok(fu.pd, buf, fu.pg, (uintptr_t)buf, LW | RW);
	munmap(buf, 2 * fu.pg);
	fu_done();
}

static void test_reg_mr_env_odp_off_rereg_to_odp_fails(void **state)
{
	char *buf = fu_map(fu.pg, PROT_READ | PROT_WRITE);
	struct ibv_mr *mr = ibv_reg_mr(fu.pd, buf, fu.pg, LW);
	int ret;

	assert_non_null(mr);
	errno = 0;
	ret = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   ODP | LW);
	fu_expect(ret == IBV_REREG_MR_ERR_CMD &&
			  (errno == EINVAL || errno == EOPNOTSUPP),
		  "rereg to ON_DEMAND with ODP off gave %d/%s", ret,
		  fu_errname(errno));
	assert_int_equal(ibv_dereg_mr(mr), 0);
	munmap(buf, fu.pg);
	fu_done();
}

static void test_reg_mr_env_mr_check_off_skips_mapping_check(void **state)
{
	char *gone = fu_unmapped(2 * fu.pg);
	char *ro = fu_map(fu.pg, PROT_READ);

	fu_expect_reg_ok(fu.pd, gone, 2 * fu.pg, (uintptr_t)gone, LW);
	fu_expect_reg_ok(fu.pd, ro, fu.pg, (uintptr_t)ro, LW | RW);
	/* the arithmetic checks stay on */
	fu_expect_reg_err(fu.pd, gone, 0, (uintptr_t)gone, LW, EINVAL);
	fu_expect_reg_err(fu.pd, (void *)(UINTPTR_MAX - 100), fu.pg,
			  UINTPTR_MAX - 100, 0, EINVAL);
	fu_expect_reg_err(fu.pd, gone, fu.pg, (uintptr_t)gone, RW, EINVAL);
	munmap(ro, fu.pg);
	fu_done();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_reg_mr_env_odp_off_not_advertised, odp_off_setup,
			env_teardown),
		cmocka_unit_test_setup_teardown(
			test_reg_mr_env_odp_off_on_demand_eopnotsupp,
			odp_off_setup, env_teardown),
		cmocka_unit_test_setup_teardown(
			test_reg_mr_env_odp_off_rereg_to_odp_fails,
			odp_off_setup, env_teardown),
		cmocka_unit_test_setup_teardown(
			test_reg_mr_env_mr_check_off_skips_mapping_check,
			check_off_setup, env_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
