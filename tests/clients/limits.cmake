# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Clients that need what docs/design/limits.md describes (issue 11):
#   clients.qperf        qperf's whole RDMA test list once, in its default
#                        (blocking) mode: its SIGALRM must interrupt
#                        ibv_get_cq_event (EINTR). Default run.
#   clients.qperf_soak   the same list 20 times in a row with one server.
#                        Label "soak" (about 8 minutes on 2 idle cores):
#                        excluded from scripts/test.sh, run it with
#                        ctest --test-dir build -L soak
#   clients.rdma_xserver_xclient  rdmacm-utils' RC pair: the client asks
#                        for 0 bytes of inline data, then sends 16 bytes
#                        inline; the granted inline size is rounded up.
# Included by tests/CMakeLists.txt after clients.cmake (whose helpers it
# uses).
srdma_client_port(qperf_port)
add_test(NAME clients.qperf
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/qperf.sh
		$<TARGET_FILE:srdma> ${qperf_port} 1 1)
set_tests_properties(clients.qperf PROPERTIES TIMEOUT 240
	LABELS "clients;stacks" SKIP_RETURN_CODE 77)
srdma_test_env(clients.qperf)

srdma_client_port(qperf_soak_port)
add_test(NAME clients.qperf_soak
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/qperf.sh
		$<TARGET_FILE:srdma> ${qperf_soak_port} 20 1)
set_tests_properties(clients.qperf_soak PROPERTIES TIMEOUT 2400
	LABELS "soak;stacks" SKIP_RETURN_CODE 77)
srdma_test_env(clients.qperf_soak)

srdma_cm_test(rdma_xserver_xclient cm
	SERVER rdma_xserver
	CLIENT rdma_xclient -s 127.0.0.1)
