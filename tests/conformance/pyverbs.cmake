# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rdma-core's v44 pyverbs suite run against build/lib (run_pyverbs.sh).
#   label conformance:      the subset expected to pass; in the default run
#   label conformance-full: whole modules that later work needs; excluded
#                           from the default run by a label filter (none
#                           today)
# Included by tests/CMakeLists.txt, which defines srdma_test_env().
set(SRDMA_PYVERBS_RUNNER ${CMAKE_CURRENT_LIST_DIR}/run_pyverbs.sh)
set(SRDMA_PYVERBS_RDMACM_RUNNER ${CMAKE_CURRENT_LIST_DIR}/run_rdmacm.sh)

# srdma_pyverbs_test_with(RUNNER NAME LABEL TIMEOUT SPEC...) registers
# conformance.NAME, run by RUNNER BUILD_DIR SPEC... (run_pyverbs.sh or a
# wrapper of it); exit 77 is a skip. The runner stops python 20 s before
# CTest's timeout (SIGKILL 10 s later), so forked rdmacm children never
# outlive the test.
function(srdma_pyverbs_test_with runner name label timeout)
	set(test conformance.${name})
	add_test(NAME ${test}
		COMMAND ${runner} ${CMAKE_BINARY_DIR} ${ARGN})
	set_tests_properties(${test} PROPERTIES TIMEOUT ${timeout}
		LABELS ${label} SKIP_RETURN_CODE 77)
	srdma_test_env(${test})
	math(EXPR inner "${timeout} - 20")
	set_property(TEST ${test} APPEND PROPERTY
		ENVIRONMENT SRDMA_PYVERBS_TIMEOUT=${inner})
endfunction()

# srdma_pyverbs_test(NAME LABEL TIMEOUT SPEC...): the same, by run_pyverbs.sh.
function(srdma_pyverbs_test name label timeout)
	srdma_pyverbs_test_with(${SRDMA_PYVERBS_RUNNER} ${name} ${label}
		${timeout} ${ARGN})
endfunction()

srdma_pyverbs_test(test_device conformance 300 test_device)
srdma_pyverbs_test(test_pd conformance 300 test_pd)
# Address handles; its RoCE case (no AH without a GRH) runs in tests/eth.
srdma_pyverbs_test(test_addr conformance 300 test_addr)
srdma_pyverbs_test(test_mr_bad_flags conformance 300
	test_mr.MRTest.test_reg_mr_bad_flags)
# ibv_fork_init / ibv_is_fork_initialized as pyverbs expects them.
srdma_pyverbs_test(test_fork conformance 300 test_fork)

# Whole modules of the data path (issue 3). Traffic tests poll for up to
# 10 s each when completions go missing, so these get more time.
foreach(mod test_qp test_cq test_cqex test_cq_events test_mr test_atomic
	    test_odp test_qpex)
	srdma_pyverbs_test(${mod} conformance 900 ${mod})
endforeach()
# Parent domains with custom allocators (docs/design/parent-domain.md).
srdma_pyverbs_test(test_parent_domain conformance 300 test_parent_domain)
# librdmacm (issue 4). Without a net interface for the device every test
# skips: run_rdmacm.sh gives srdma0 the interface lo (127.0.0.1) in a private
# mount and network namespace. It needs root, and exits 77 (skip) without.
# base.py waits at most 30 s for the two forked players of each of the 10
# tests, so 340 s bounds even a run where every one of them hangs.
srdma_pyverbs_test_with(${SRDMA_PYVERBS_RDMACM_RUNNER} test_rdmacm
	conformance 360 test_rdmacm)
# Object import within a process (docs/design/dm.md): a shared PD and MR.
srdma_pyverbs_test(test_shared_pd conformance 300 test_shared_pd)
# Completion timestamps (docs/design/dm.md): the real-time RC test runs;
# the free-running ones convert with mlx5dv (vendor), the raw ones need raw
# packet QPs.
srdma_pyverbs_test(test_mlx5_timestamp conformance 300 test_mlx5_timestamp)

# The whole suite, every module (vendor ones too), with its counts and the
# reason for every skip sorted into vendor and other (full_suite.sh); on an
# InfiniBand port and on a RoCE one. About 10 s each. As root they reserve
# 2 MiB huge pages for the run, one run at a time.
foreach(ll ib eth)
	set(test conformance.full_suite_${ll})
	if(ll STREQUAL eth)
		set(opt --eth)
	else()
		set(opt)
	endif()
	add_test(NAME ${test} COMMAND bash
		${CMAKE_CURRENT_LIST_DIR}/full_suite.sh ${CMAKE_BINARY_DIR} ${opt})
	set_tests_properties(${test} PROPERTIES TIMEOUT 600
		LABELS conformance SKIP_RETURN_CODE 77
		RESOURCE_LOCK hugepages)
	srdma_test_env(${test})
	set_property(TEST ${test} APPEND PROPERTY
		ENVIRONMENT SRDMA_PYVERBS_TIMEOUT=580)
endforeach()

# Object import across processes through pyverbs (docs/design/import.md):
# rdma-core's test_shared_pd imports within one process only.
add_test(NAME conformance.pyverbs_import_xproc
	COMMAND /usr/bin/python3
		${CMAKE_CURRENT_LIST_DIR}/pyverbs_import_xproc.py)
set_tests_properties(conformance.pyverbs_import_xproc PROPERTIES
	TIMEOUT 120 LABELS conformance SKIP_RETURN_CODE 77)
srdma_test_env(conformance.pyverbs_import_xproc)
set_property(TEST conformance.pyverbs_import_xproc APPEND PROPERTY
	ENVIRONMENT LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/lib)
