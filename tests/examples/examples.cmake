# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The README's two-process example, run as the README shows it (server,
# then client given 127.0.0.1, both through `srdma run`) by
# tests/clients/run_pair.sh, which adds -p PORT to both. Both must print
# their "ok" line, the client only after finding the server's message
# intact in its buffer. Once on the default InfiniBand port, once on a
# RoCE port over the RoCEv2 wire (SRDMA_TRANSPORT=net), as between two
# hosts. Label clients.
# Included by tests/CMakeLists.txt after clients.cmake (srdma_client_port).
foreach(mode ib net)
	srdma_client_port(port)
	set(test examples.write_demo_${mode})
	add_test(NAME ${test}
		COMMAND bash ${SRDMA_RUN_PAIR} --timeout 60 cm ${port}
			$<TARGET_FILE:srdma>
			@server $<TARGET_FILE:srdma-write-demo>
			@client $<TARGET_FILE:srdma-write-demo> 127.0.0.1)
	set_tests_properties(${test} PROPERTIES TIMEOUT 80 LABELS clients
		SKIP_RETURN_CODE 77)
	srdma_test_env(${test})
endforeach()
set_property(TEST examples.write_demo_net APPEND PROPERTY ENVIRONMENT
	SRDMA_TRANSPORT=net)

# Between two test hosts (network namespaces; root, skipped without it),
# as the README's "Between hosts" shows it. Label net.
add_test(NAME examples.write_demo_hosts
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/write_demo_hosts.sh
		$<TARGET_FILE:srdma> $<TARGET_FILE:srdma-write-demo>)
set_tests_properties(examples.write_demo_hosts PROPERTIES TIMEOUT 90
	LABELS net SKIP_RETURN_CODE 77)
srdma_test_env(examples.write_demo_hosts)
