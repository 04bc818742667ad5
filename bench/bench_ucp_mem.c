// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * bench_ucp_mem.c - the UCX reference for bench_reg_mr: median cost of
 * ucp_mem_map + ucp_mem_unmap of an existing, pre-touched buffer.
 *
 * Issue 2 sets softrdma's target as a ratio against this number, measured
 * in the same run on the same machine. It must run against the system
 * libibverbs, not softrdma, and with UCX kept on host transports (the
 * caller sets UCX_TLS; run_reg_bench.sh does). Options: --quick divides
 * the iteration counts by ten, -v prints UCX's context info to stderr.
 */
#include "bench_util.h"

#include <stdio.h>
#include <string.h>
#include <ucp/api/ucp.h>

static int ucp_pair(void *ctx, void *buf, size_t size)
{
	ucp_context_h ucp = ctx;
	ucp_mem_map_params_t mp = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
			      UCP_MEM_MAP_PARAM_FIELD_LENGTH,
		.address = buf,
		.length = size,
	};
	ucp_mem_h memh;
	ucs_status_t st;

	st = ucp_mem_map(ucp, &mp, &memh);
	if (st != UCS_OK) {
		fprintf(stderr, "ucp_mem_map(%zu): %s\n", size,
			ucs_status_string(st));
		return -1;
	}
	st = ucp_mem_unmap(ucp, memh);
	if (st != UCS_OK) {
		fprintf(stderr, "ucp_mem_unmap(%zu): %s\n", size,
			ucs_status_string(st));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	ucp_params_t params = {
		.field_mask = UCP_PARAM_FIELD_FEATURES,
		.features = UCP_FEATURE_RMA,
	};
	unsigned int scale = 1;
	ucp_config_t *config;
	ucp_context_h ucp;
	ucs_status_t st;
	int verbose = 0, i, ret;

	for (i = 1; i < argc; i++) {
		if (bench_parse_common(argv[i], &scale))
			continue;
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
			continue;
		}
		fprintf(stderr, "usage: %s [--quick] [-v]\n", argv[0]);
		return 2;
	}

	st = ucp_config_read(NULL, NULL, &config);
	if (st != UCS_OK) {
		fprintf(stderr, "ucp_config_read: %s\n", ucs_status_string(st));
		return 1;
	}
	st = ucp_init(&params, config, &ucp);
	ucp_config_release(config);
	if (st != UCS_OK) {
		fprintf(stderr, "ucp_init: %s\n", ucs_status_string(st));
		return 1;
	}
	if (verbose)
		ucp_context_print_info(ucp, stderr);

	ret = bench_run("ucx", ucp_pair, ucp, scale);
	ucp_cleanup(ucp);
	return ret ? 1 : 0;
}
