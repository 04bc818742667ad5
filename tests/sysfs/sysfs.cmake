# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The synthesised sysfs tree (docs/design/sysfs.md) as the programs that
# read sysfs use it. Labels "sysfs" and "stacks" (default run). The tree
# itself against the verbs queries is func.test_sysfs (tests/func).
#   sysfs.tools   ibstat, ibstatus, a GID picker's files and pyverbs'
#                 net-interface lookup after `srdma sysfs mount`, in a
#                 private mount namespace (root; skips without it)
#   sysfs.openib  Open MPI's openib BTL (btl_openib_allow_ib=1), 2 and 4
#                 ranks, every byte checked (no root needed)
add_test(NAME sysfs.tools
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_sysfs_tools.sh
		$<TARGET_FILE:srdma> $<TARGET_FILE:srdma_mr_holder>)
set_tests_properties(sysfs.tools PROPERTIES TIMEOUT 180
	LABELS "sysfs;stacks" SKIP_RETURN_CODE 77)
srdma_test_env(sysfs.tools)

find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
	add_executable(sysfs_mpi_openib ${CMAKE_CURRENT_LIST_DIR}/mpi_openib.c)
	set_target_properties(sysfs_mpi_openib PROPERTIES
		OUTPUT_NAME mpi_openib
		RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sysfs)
	target_link_libraries(sysfs_mpi_openib PRIVATE MPI::MPI_C)
	add_test(NAME sysfs.openib
		COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_openib.sh
			$<TARGET_FILE:srdma> $<TARGET_FILE:sysfs_mpi_openib>)
	set_tests_properties(sysfs.openib PROPERTIES TIMEOUT 300
		LABELS "sysfs;stacks" SKIP_RETURN_CODE 77)
	srdma_test_env(sysfs.openib)
else()
	message(WARNING "Open MPI (libopenmpi-dev) not found: no sysfs.openib "
		"test; run scripts/setup.sh")
endif()

# Unloading: Open MPI dlclose()s libibverbs at MPI_Finalize and runs on;
# what the libraries leave behind (SIGBUS guard, CM thread) must stay valid.
add_executable(sysfs_test_unload ${CMAKE_CURRENT_LIST_DIR}/test_unload.c)
set_target_properties(sysfs_test_unload PROPERTIES OUTPUT_NAME test_unload
	RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/sysfs)
target_link_libraries(sysfs_test_unload PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(sysfs_test_unload ibverbs rdmacm)
add_test(NAME sysfs.unload
	COMMAND sysfs_test_unload ${CMAKE_BINARY_DIR}/lib)
set_tests_properties(sysfs.unload PROPERTIES TIMEOUT 60
	LABELS "sysfs;stacks")
srdma_test_env(sysfs.unload)
