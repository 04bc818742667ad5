# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Debian's own two-sided clients against softrdma: ibverbs-utils'
# ibv_{rc,uc,ud,srq,xsrq}_pingpong (polling and -e event mode), perftest's
# RC bandwidth/latency tests plus its UD send tests and two in rdma_cm
# mode (-R), and rdmacm-utils' rping (also -q), rdma_server/rdma_client,
# udaddy and ucmatose. Each test is one server and one client process on
# this host, both run through `srdma run` by run_pair.sh, which also
# judges their output; rping_no_listener runs only a client, which must
# fail.
#
# Every test gets its own TCP port, counted up from a base that depends on
# the build directory (10240 + 256 * (MD5 of its path mod 85): below the
# kernel's ephemeral range, and different for two checkouts built side by
# side on one host, so their test runs do not take each other's ports;
# bench/ uses 18700-18703 and tests/stacks 18850-18899), so `ctest -j` can run them side by side. A program that
# cannot be told its port (udaddy: 7174) takes a RESOURCE_LOCK on it
# instead, and run_pair.sh --fixed-port runs it in a private network
# namespace where it may, so no other run on this host can hold that port. No -g for the ibverbs clients: the port is InfiniBand with LID
# addressing, which is what they use without a GID index. The rdma_cm
# servers bind 127.0.0.1 where they have an option for it.
# Included by tests/CMakeLists.txt, which defines srdma_test_env().
set(SRDMA_RUN_PAIR ${CMAKE_CURRENT_LIST_DIR}/run_pair.sh)
string(MD5 srdma_dir_md5 "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${srdma_dir_md5}" 0 6 srdma_dir_md5)
math(EXPR srdma_port_base "10240 + 256 * (0x${srdma_dir_md5} % 85)")
if(srdma_port_base GREATER_EQUAL 18432 AND srdma_port_base LESS 18944)
	set(srdma_port_base 19200)	# keep clear of bench/'s 18700-18703
endif()
set_property(GLOBAL PROPERTY SRDMA_CLIENT_PORT ${srdma_port_base})

# srdma_client_port(VAR): the next free test port, in VAR.
function(srdma_client_port var)
	get_property(port GLOBAL PROPERTY SRDMA_CLIENT_PORT)
	math(EXPR next "${port} + 1")
	set_property(GLOBAL PROPERTY SRDMA_CLIENT_PORT ${next})
	set(${var} ${port} PARENT_SCOPE)
endfunction()

# srdma_client_test(NAME KIND PROGRAM ARGS...) registers clients.NAME:
# PROGRAM ARGS -p PORT on both sides, the client also given 127.0.0.1.
function(srdma_client_test name kind prog)
	srdma_client_port(port)
	set(test clients.${name})
	add_test(NAME ${test}
		COMMAND bash ${SRDMA_RUN_PAIR} ${kind} ${port}
			$<TARGET_FILE:srdma> ${prog} ${ARGN})
	set_tests_properties(${test} PROPERTIES TIMEOUT 120 LABELS clients
		SKIP_RETURN_CODE 77)
	srdma_test_env(${test})
endfunction()

# srdma_cm_test(NAME KIND [FIXED_PORT PORT] [TIMEOUT SECS]
#               [SERVER PROGRAM ARGS...] CLIENT PROGRAM ARGS...)
# registers clients.NAME: each side runs its own command, plus -p PORT
# unless FIXED_PORT names the program's built-in port. SECS is
# run_pair.sh's budget (default 100); CTest's timeout is 20 s more.
function(srdma_cm_test name kind)
	cmake_parse_arguments(PARSE_ARGV 2 arg "" "FIXED_PORT;TIMEOUT"
		"SERVER;CLIENT")
	if(NOT arg_CLIENT OR arg_UNPARSED_ARGUMENTS)
		message(FATAL_ERROR "srdma_cm_test(${name}): bad arguments")
	endif()
	set(test clients.${name})
	set(opts)
	if(arg_FIXED_PORT)
		set(port ${arg_FIXED_PORT})
		list(APPEND opts --fixed-port)
	else()
		srdma_client_port(port)
	endif()
	if(NOT arg_TIMEOUT)
		set(arg_TIMEOUT 100)
	endif()
	math(EXPR ctest_timeout "${arg_TIMEOUT} + 20")
	set(sides)
	if(arg_SERVER)
		list(APPEND sides @server ${arg_SERVER})
	endif()
	list(APPEND sides @client ${arg_CLIENT})

	add_test(NAME ${test}
		COMMAND bash ${SRDMA_RUN_PAIR} --timeout ${arg_TIMEOUT} ${opts}
			${kind} ${port} $<TARGET_FILE:srdma> ${sides})
	set_tests_properties(${test} PROPERTIES TIMEOUT ${ctest_timeout}
		LABELS clients SKIP_RETURN_CODE 77)
	if(arg_FIXED_PORT)
		set_tests_properties(${test} PROPERTIES
			RESOURCE_LOCK srdma_tcp_port_${port})
	endif()
	srdma_test_env(${test})
endfunction()

foreach(t rc uc ud srq)
	srdma_client_test(${t}_pingpong pingpong ibv_${t}_pingpong -n 200)
	srdma_client_test(${t}_pingpong_events pingpong ibv_${t}_pingpong
		-n 200 -e)
endforeach()

# XRC (docs/design/xrc.md): XRC domains, SRQs, INI and TGT QPs.
srdma_client_test(xsrq_pingpong xsrq ibv_xsrq_pingpong -n 200)
srdma_client_test(xsrq_pingpong_events xsrq ibv_xsrq_pingpong -n 200 -e)
# One server, 3 clients, one XRC SRQ each side (xsrq_multi.sh).
srdma_client_port(xsrq_port)
add_test(NAME clients.xsrq_pingpong_3clients
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/xsrq_multi.sh
		$<TARGET_FILE:srdma> ${xsrq_port} 3)
set_tests_properties(clients.xsrq_pingpong_3clients PROPERTIES TIMEOUT 90
	LABELS clients SKIP_RETURN_CODE 77)
srdma_test_env(clients.xsrq_pingpong_3clients)
# rdmacm-utils' rdma_xserver / rdma_xclient over XRC (-c x): an XRC_RECV
# id with an XRC SRQ in the device's private XRC domain, its SRQ number
# in the accept's private data, an XRC_SEND id that sends to it.
srdma_cm_test(rdma_xserver_xclient_xrc cm
	SERVER rdma_xserver -c x
	CLIENT rdma_xclient -c x -s 127.0.0.1)
# perftest's XRC connection type (-c XRC: XRC_SEND to XRC_RECV QPs, an
# XRC SRQ on the receiving side).
foreach(t send write read atomic)
	srdma_client_test(ib_${t}_bw_xrc bw ib_${t}_bw -d srdma0 -c XRC -n 2000)
endforeach()
srdma_client_test(ib_send_lat_xrc lat ib_send_lat -d srdma0 -c XRC -n 1000)
srdma_client_test(ib_read_lat_xrc lat ib_read_lat -d srdma0 -c XRC -n 1000)

foreach(t write read send atomic)
	srdma_client_test(ib_${t}_bw bw ib_${t}_bw -d srdma0 -n 5000)
	srdma_client_test(ib_${t}_lat lat ib_${t}_lat -d srdma0 -n 1000)
endforeach()
srdma_client_test(ib_send_bw_ud bw ib_send_bw -d srdma0 -c UD -n 5000)
srdma_client_test(ib_send_lat_ud lat ib_send_lat -d srdma0 -c UD -n 1000)

# rdma_cm: perftest connecting through rdma_cm instead of its own socket.
srdma_client_test(ib_write_bw_rdma_cm bw ib_write_bw -d srdma0 -R -n 5000)
srdma_client_test(ib_send_lat_rdma_cm lat ib_send_lat -d srdma0 -R -n 1000)

# rping: 10 pings (RDMA READ, then RDMA WRITE back), with rdma_create_qp
# and, under -q, with the application's own QP moved through
# rdma_init_qp_attr() and rdma_establish().
srdma_cm_test(rping rping
	SERVER rping -s -a 127.0.0.1 -C 10 -v
	CLIENT rping -c -a 127.0.0.1 -C 10 -v)
srdma_cm_test(rping_self_qp rping
	SERVER rping -s -a 127.0.0.1 -C 10 -v -q
	CLIENT rping -c -a 127.0.0.1 -C 10 -v -q)
srdma_cm_test(rdma_server_client cm
	SERVER rdma_server -s 127.0.0.1
	CLIENT rdma_client -s 127.0.0.1)
# udaddy's -p is the port space; its port is always 7174.
srdma_cm_test(udaddy cm FIXED_PORT 7174
	SERVER udaddy -b 127.0.0.1
	CLIENT udaddy -s 127.0.0.1)
srdma_cm_test(ucmatose cm
	SERVER ucmatose -b 127.0.0.1
	CLIENT ucmatose -s 127.0.0.1)

# Nothing listens: rping must report the failed connection and exit
# non-zero within seconds, not hang.
srdma_cm_test(rping_no_listener refused TIMEOUT 10
	CLIENT rping -c -a 127.0.0.1 -C 1)

# Peer death (issue 9): every perftest binary with its server, then its
# client, SIGKILLed at random moments (seeded, printed); the survivor must
# exit within a bound and never keep softrdma retrying. See peer_death.sh.
srdma_client_port(peer_death_port)
add_test(NAME clients.peer_death
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/peer_death.sh
		$<TARGET_FILE:srdma> ${peer_death_port})
set_tests_properties(clients.peer_death PROPERTIES TIMEOUT 300
	LABELS "clients;robust" SKIP_RETURN_CODE 77)
srdma_test_env(clients.peer_death)
# A client killed before it connects (as happens on a loaded machine at the
# earliest random moment, 100 ms) leaves perftest's server in accept(): a
# wait by design, not a hang of softrdma's.
srdma_client_port(peer_death_preconnect_port)
add_test(NAME clients.peer_death_preconnect
	COMMAND env PEER_DEATH_ONLY=ib_atomic_bw PEER_DEATH_CLIENT_MS=0
		bash ${CMAKE_CURRENT_LIST_DIR}/peer_death.sh
		$<TARGET_FILE:srdma> ${peer_death_preconnect_port})
set_tests_properties(clients.peer_death_preconnect PROPERTIES TIMEOUT 60
	LABELS "clients;robust" SKIP_RETURN_CODE 77)
srdma_test_env(clients.peer_death_preconnect)

# A long-running rping -s -P under ulimit -n 64 serving 400 sequential
# clients stays flat in fds, mappings and RSS (issue 9).
srdma_client_port(rping_persistent_port)
add_test(NAME clients.rping_persistent
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/rping_persistent.sh
		$<TARGET_FILE:srdma> ${rping_persistent_port} 400)
set_tests_properties(clients.rping_persistent PROPERTIES TIMEOUT 300
	LABELS "clients;robust" SKIP_RETURN_CODE 77)
srdma_test_env(clients.rping_persistent)

# perftest with --use_hugepages: buffers from shmget(SHM_HUGETLB) registered
# as ordinary MRs (the HUGETLB registrations of the suite's huge-page tests
# are conformance.full_suite_*'s). hugepages.sh reserves 2 MiB pages as root
# for the run and puts the count back; it skips without root and pages.
foreach(prog ib_write_bw ib_read_bw ib_send_lat)
	if(prog MATCHES "_lat$")
		set(kind lat)
	else()
		set(kind bw)
	endif()
	srdma_client_port(port)
	set(test clients.${prog}_hugepages)
	add_test(NAME ${test}
		COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/hugepages.sh ${kind} ${port}
			$<TARGET_FILE:srdma> ${prog} -d srdma0 --use_hugepages
			-n 1000)
	set_tests_properties(${test} PROPERTIES TIMEOUT 120 LABELS clients
		SKIP_RETURN_CODE 77 RESOURCE_LOCK hugepages)
	srdma_test_env(${test})
endforeach()
