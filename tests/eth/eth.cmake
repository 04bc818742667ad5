# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Both link layers on one host (issue 10): the functional tests, the fault
# sweep, rdma-core's pyverbs suite and Debian's clients run again with
# SRDMA_LINK_LAYER=eth, the port then a RoCE port (docs/design/net-gid.md).
# Every peer is a context of this host, so the host transport serves them
# all; what changes is what the applications see and must do: LID 0, GIDs
# from the interfaces, a GRH in every address vector, the interface's MTU.
# The ibverbs pingpong examples get -g 0 (they add a GRH only when given a
# GID index); perftest picks its GID index itself on Ethernet (the
# IPv4-mapped one, as on rxe); rdma_cm programs need nothing.
#
# Names: <kind>.eth.<name>; label "eth" only, in the default run
# (scripts/test.sh), so `ctest -L func` and friends stay one mode.
# Included last by tests/CMakeLists.txt: uses FUNC_TESTS and the helper
# functions of clients.cmake and pyverbs.cmake.

# srdma_eth_test(TEST): make TEST an Ethernet-mode run labelled eth.
function(srdma_eth_test test)
	set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
		SRDMA_LINK_LAYER=eth)
	set_tests_properties(${test} PROPERTIES LABELS eth)
endfunction()

# Functional tests (tests/func), unchanged: they read the port's link
# layer and add the GRH themselves (func_util.h fu_av_fix()).
foreach(src ${FUNC_TESTS})
	get_filename_component(name ${src} NAME_WE)
	add_test(NAME func.eth.${name} COMMAND func_${name})
	set_tests_properties(func.eth.${name} PROPERTIES TIMEOUT 300)
	srdma_test_env(func.eth.${name})
	srdma_eth_test(func.eth.${name})
endforeach()

# Every fault point, now also on the QP paths of a RoCE port (net half).
add_test(NAME fault.eth.sweep COMMAND fault_sweep)
set_tests_properties(fault.eth.sweep PROPERTIES TIMEOUT 300)
srdma_test_env(fault.eth.sweep)
srdma_eth_test(fault.eth.sweep)

# rdma-core's pyverbs suite: the modules of pyverbs.cmake. test_addr's
# test_create_ah_roce (an AH without a GRH must fail) skips on InfiniBand
# and runs here.
foreach(mod test_device test_pd test_fork test_addr)
	srdma_pyverbs_test(eth.${mod} eth 300 ${mod})
	srdma_eth_test(conformance.eth.${mod})
endforeach()
srdma_pyverbs_test(eth.test_mr_bad_flags eth 300
	test_mr.MRTest.test_reg_mr_bad_flags)
srdma_eth_test(conformance.eth.test_mr_bad_flags)
foreach(mod test_qp test_cq test_cqex test_cq_events test_mr test_atomic
	    test_odp test_qpex)
	srdma_pyverbs_test(eth.${mod} eth 900 ${mod})
	srdma_eth_test(conformance.eth.${mod})
endforeach()
srdma_pyverbs_test(eth.test_parent_domain eth 300 test_parent_domain)
srdma_eth_test(conformance.eth.test_parent_domain)
srdma_pyverbs_test_with(${SRDMA_PYVERBS_RDMACM_RUNNER} eth.test_rdmacm
	eth 360 test_rdmacm)
srdma_eth_test(conformance.eth.test_rdmacm)

# Debian's clients (clients.cmake), with a GID index where they need one.
foreach(t rc uc ud srq)
	srdma_client_test(eth.${t}_pingpong pingpong ibv_${t}_pingpong
		-g 0 -n 200)
	srdma_eth_test(clients.eth.${t}_pingpong)
	srdma_client_test(eth.${t}_pingpong_events pingpong
		ibv_${t}_pingpong -g 0 -n 200 -e)
	srdma_eth_test(clients.eth.${t}_pingpong_events)
endforeach()
foreach(t write read send atomic)
	srdma_client_test(eth.ib_${t}_bw bw ib_${t}_bw -d srdma0 -n 5000)
	srdma_eth_test(clients.eth.ib_${t}_bw)
	srdma_client_test(eth.ib_${t}_lat lat ib_${t}_lat -d srdma0 -n 1000)
	srdma_eth_test(clients.eth.ib_${t}_lat)
endforeach()
srdma_client_test(eth.ib_send_bw_ud bw ib_send_bw -d srdma0 -c UD -n 5000)
srdma_eth_test(clients.eth.ib_send_bw_ud)
srdma_client_test(eth.ib_send_lat_ud lat ib_send_lat -d srdma0 -c UD
	-n 1000)
srdma_eth_test(clients.eth.ib_send_lat_ud)
srdma_client_test(eth.ib_write_bw_rdma_cm bw ib_write_bw -d srdma0 -R
	-n 5000)
srdma_eth_test(clients.eth.ib_write_bw_rdma_cm)
srdma_client_test(eth.ib_send_lat_rdma_cm lat ib_send_lat -d srdma0 -R
	-n 1000)
srdma_eth_test(clients.eth.ib_send_lat_rdma_cm)
srdma_cm_test(eth.rping rping
	SERVER rping -s -a 127.0.0.1 -C 10 -v
	CLIENT rping -c -a 127.0.0.1 -C 10 -v)
srdma_eth_test(clients.eth.rping)
srdma_cm_test(eth.rping_self_qp rping
	SERVER rping -s -a 127.0.0.1 -C 10 -v -q
	CLIENT rping -c -a 127.0.0.1 -C 10 -v -q)
srdma_eth_test(clients.eth.rping_self_qp)
srdma_cm_test(eth.rdma_server_client cm
	SERVER rdma_server -s 127.0.0.1
	CLIENT rdma_client -s 127.0.0.1)
srdma_eth_test(clients.eth.rdma_server_client)
srdma_cm_test(eth.udaddy cm FIXED_PORT 7174
	SERVER udaddy -b 127.0.0.1
	CLIENT udaddy -s 127.0.0.1)
srdma_eth_test(clients.eth.udaddy)
srdma_cm_test(eth.ucmatose cm
	SERVER ucmatose -b 127.0.0.1
	CLIENT ucmatose -s 127.0.0.1)
srdma_eth_test(clients.eth.ucmatose)
srdma_cm_test(eth.rping_no_listener refused TIMEOUT 10
	CLIENT rping -c -a 127.0.0.1 -C 1)
srdma_eth_test(clients.eth.rping_no_listener)
# Peer death with every perftest binary (peer_death.sh), on RoCE.
srdma_client_port(eth_peer_death_port)
add_test(NAME clients.eth.peer_death
	COMMAND bash ${CMAKE_SOURCE_DIR}/tests/clients/peer_death.sh
		$<TARGET_FILE:srdma> ${eth_peer_death_port})
set_tests_properties(clients.eth.peer_death PROPERTIES TIMEOUT 300
	SKIP_RETURN_CODE 77)
srdma_test_env(clients.eth.peer_death)
srdma_eth_test(clients.eth.peer_death)

# Raw packet QPs, flow steering and RSS (docs/design/raw-packet.md):
# rdma-core's test_flow and test_rss_traffic (the raw cases of test_qp run
# in conformance.eth.test_qp). The suite runs them as root only (mlx5 asks
# for CAP_NET_RAW); skipped for other users.
srdma_pyverbs_test_with(${CMAKE_SOURCE_DIR}/tests/conformance/run_pyverbs_root.sh
	eth.test_flow eth 300 test_flow test_rss_traffic)
srdma_eth_test(conformance.eth.test_flow)
