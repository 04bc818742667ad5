# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Debian's mckey (UD multicast through rdma_join_multicast), run by
# mckey.sh: on one host (InfiniBand port, and a RoCE port as the other
# clients.eth.* tests), receivers and a sender in a private network
# namespace; and across two test hosts (label net, next to net.cm.*),
# over IPv4 and IPv6 groups. docs/design/multicast.md.
set(SRDMA_MCKEY_SH ${CMAKE_CURRENT_LIST_DIR}/mckey.sh)

add_test(NAME clients.mckey
	COMMAND bash ${SRDMA_MCKEY_SH} --timeout 60 $<TARGET_FILE:srdma>)
set_tests_properties(clients.mckey PROPERTIES TIMEOUT 90 LABELS clients
	SKIP_RETURN_CODE 77)
srdma_test_env(clients.mckey)

add_test(NAME clients.eth.mckey
	COMMAND bash ${SRDMA_MCKEY_SH} --timeout 60 $<TARGET_FILE:srdma>)
set_tests_properties(clients.eth.mckey PROPERTIES TIMEOUT 90 LABELS eth
	SKIP_RETURN_CODE 77)
srdma_test_env(clients.eth.mckey)
set_property(TEST clients.eth.mckey APPEND PROPERTY ENVIRONMENT
	SRDMA_LINK_LAYER=eth)

# The sender joining send-only (-o: not attached), and without loopback
# (-l: IBV_QP_CREATE_BLOCK_SELF_MCAST_LB).
foreach(f o l)
	add_test(NAME clients.mckey_${f}
		COMMAND bash ${SRDMA_MCKEY_SH} --send-flag -${f} --timeout 60
			$<TARGET_FILE:srdma>)
	set_tests_properties(clients.mckey_${f} PROPERTIES TIMEOUT 90
		LABELS clients SKIP_RETURN_CODE 77)
	srdma_test_env(clients.mckey_${f})
endforeach()

foreach(v IPV4 IPV6)
	if(v STREQUAL IPV6)
		set(name net.cm.mckey_ipv6)
		set(opt --ipv6)
	else()
		set(name net.cm.mckey)
		set(opt)
	endif()
	add_test(NAME ${name}
		COMMAND bash ${SRDMA_MCKEY_SH} --net ${opt} --timeout 60
			$<TARGET_FILE:srdma>)
	set_tests_properties(${name} PROPERTIES TIMEOUT 90 LABELS net
		SKIP_RETURN_CODE 77)
	srdma_test_env(${name})
endforeach()

# test_mcast scribbles the host's group table: it needs the layout.
target_include_directories(func_test_mcast PRIVATE ${CMAKE_SOURCE_DIR}/src)
