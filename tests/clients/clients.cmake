# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Debian's own two-sided clients against softrdma: ibverbs-utils'
# ibv_{rc,uc,ud,srq}_pingpong (polling and -e event mode) and perftest's
# RC bandwidth/latency tests plus its UD send tests. Each test is one
# server and one client process on this host, both run through
# `srdma run` by run_pair.sh, which also judges their output.
#
# Every test gets its own TCP port (counted up from 18600), so `ctest -j`
# can run them side by side; no -g: the port is InfiniBand with LID
# addressing, which is what the clients use without a GID index.
# Included by tests/CMakeLists.txt, which defines srdma_test_env().
set(SRDMA_RUN_PAIR ${CMAKE_CURRENT_LIST_DIR}/run_pair.sh)
set_property(GLOBAL PROPERTY SRDMA_CLIENT_PORT 18600)

# srdma_client_test(NAME KIND PROGRAM ARGS...) registers clients.NAME.
function(srdma_client_test name kind prog)
	get_property(port GLOBAL PROPERTY SRDMA_CLIENT_PORT)
	math(EXPR next "${port} + 1")
	set_property(GLOBAL PROPERTY SRDMA_CLIENT_PORT ${next})

	set(test clients.${name})
	add_test(NAME ${test}
		COMMAND bash ${SRDMA_RUN_PAIR} ${kind} ${port}
			$<TARGET_FILE:srdma> ${prog} ${ARGN})
	set_tests_properties(${test} PROPERTIES TIMEOUT 120 LABELS clients
		SKIP_RETURN_CODE 77)
	srdma_test_env(${test})
endfunction()

foreach(t rc uc ud srq)
	srdma_client_test(${t}_pingpong pingpong ibv_${t}_pingpong -n 200)
	srdma_client_test(${t}_pingpong_events pingpong ibv_${t}_pingpong
		-n 200 -e)
endforeach()

foreach(t write read send atomic)
	srdma_client_test(ib_${t}_bw bw ib_${t}_bw -d srdma0 -n 5000)
	srdma_client_test(ib_${t}_lat lat ib_${t}_lat -d srdma0 -n 1000)
endforeach()
srdma_client_test(ib_send_bw_ud bw ib_send_bw -d srdma0 -c UD -n 5000)
srdma_client_test(ib_send_lat_ud lat ib_send_lat -d srdma0 -c UD -n 1000)
