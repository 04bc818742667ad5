# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# rsockets: Debian's rdmacm-utils rsocket clients (rstream with its default
# table and with -S 1M -C, riostream, rcopy, udpong) and an ordinary TCP
# program under Debian's librspreload.so, each a server and a client
# process on this host through `srdma run` (rsockets.sh judges them).
# Included by tests/CMakeLists.txt after clients.cmake.
set(SRDMA_RSOCKETS_SH ${CMAKE_CURRENT_LIST_DIR}/rsockets.sh)

add_executable(rsock_tcp ${CMAKE_CURRENT_LIST_DIR}/rsock_tcp.c)

# srdma_rsocket_test(NAME MODE ARGS...) registers clients.rsocket_NAME.
function(srdma_rsocket_test name mode)
	srdma_client_port(port)
	set(test clients.rsocket_${name})
	add_test(NAME ${test}
		COMMAND bash ${SRDMA_RSOCKETS_SH} ${mode} ${port}
			$<TARGET_FILE:srdma> ${ARGN})
	set_tests_properties(${test} PROPERTIES TIMEOUT 180 LABELS clients
		SKIP_RETURN_CODE 77)
	srdma_test_env(${test})
endfunction()

srdma_rsocket_test(rstream rstream)
srdma_rsocket_test(rstream_1m rstream -S 1048576 -C 100)
srdma_rsocket_test(rstream_verify rstream -S 65536 -C 200 -T v)
srdma_rsocket_test(rstream_blocking rstream -S 4096 -C 2000 -T b)
srdma_rsocket_test(rstream_async rstream -S 4096 -C 2000 -T a)
srdma_rsocket_test(riostream riostream)
srdma_rsocket_test(riostream_blocking riostream -S 1048576 -C 100 -T b)
srdma_rsocket_test(rcopy rcopy)
srdma_rsocket_test(preload preload $<TARGET_FILE:rsock_tcp>)
srdma_rsocket_test(udpong udpong -S 1024 -C 5000)
srdma_rsocket_test(udpong_echo udpong -S 64 -C 100 -T e)
