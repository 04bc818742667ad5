# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The srdma command: `srdma run` puts our libraries first, `srdma status`
# shows a live process's contexts and MRs and reaps a SIGKILLed one.
# mr_holder is an ordinary verbs application (public ABI only) that holds
# a few MRs until its stdin closes.
add_executable(srdma_mr_holder ${CMAKE_CURRENT_LIST_DIR}/mr_holder.c)
set_target_properties(srdma_mr_holder PROPERTIES OUTPUT_NAME mr_holder
	RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/tools)
target_link_libraries(srdma_mr_holder PRIVATE ibverbs)

add_test(NAME tools.srdma
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_srdma.sh
		$<TARGET_FILE:srdma> $<TARGET_FILE:srdma_mr_holder>
		$<TARGET_FILE:srdma_res_holder>)
set_tests_properties(tools.srdma PROPERTIES TIMEOUT 120 LABELS tools)
srdma_test_env(tools.srdma)

# The state directory: squatted default path, non-private SRDMA_DIR and
# planted symlinks (root; a private mount namespace hides /dev/shm, /run).
add_test(NAME tools.statedir
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_statedir.sh
		$<TARGET_FILE:srdma> $<TARGET_FILE:srdma_mr_holder>)
set_tests_properties(tools.statedir PROPERTIES TIMEOUT 120
	LABELS "tools;robust")
srdma_test_env(tools.statedir)

# res_holder holds one of every resource (PDs, CQs, an SRQ, RC/UC/UD QPs
# with completions left unpolled) for the status checks of test_srdma.sh;
# in its net mode, one RC QP per host after a transfer (test_status_net.sh).
add_executable(srdma_res_holder ${CMAKE_CURRENT_LIST_DIR}/res_holder.c)
set_target_properties(srdma_res_holder PROPERTIES OUTPUT_NAME res_holder
	RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/tools)
target_link_libraries(srdma_res_holder PRIVATE ibverbs)

# srdma status of net QPs and ports across two test hosts (root: network
# namespaces; skipped without).
add_test(NAME tools.status_net
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_status_net.sh
		$<TARGET_FILE:srdma> $<TARGET_FILE:srdma_res_holder>)
set_tests_properties(tools.status_net PROPERTIES TIMEOUT 120
	LABELS "tools;net" SKIP_RETURN_CODE 77)
srdma_test_env(tools.status_net)
