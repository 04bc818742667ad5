# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The stacks most RDMA software reaches verbs through, unmodified, over
# softrdma on one host (label "stacks", in the default run): UCX
# (ucx_info; ucx_perftest over UCT rc_verbs/ud_verbs and over UCP with
# UCX_TLS=rc_v / ud_v), Open MPI 4.1 with `--mca pml ucx` on 2 and 4 ranks
# running tests/stacks/mpi_check.c (ping-pong with every byte checked,
# allreduce checked element by element), and libfabric's verbs provider
# (fi_pingpong -c, which checks every byte: msg, dgram, and the
# verbs;ofi_rxm RDM endpoint - stack_run.sh's rdm adds that provider). The same clients over shared memory (UCX
# posix/cma, Open MPI vader, libfabric shm) run next to them, so one run
# shows both sets of figures (each test prints a RESULT line).
#
# UCX keeps an IB device only if /dev/infiniband/uverbs_srdma0 exists
# (docs/design/stacks.md): scripts/setup.sh makes it (root); otherwise
# `srdma run` shows it to the program. The "nonroot" tests run as nobody
# with the node hidden (root: in a private mount namespace), the way a
# user without root meets softrdma; "no_node" shows that without the node
# and without srdma run's help UCX really sees nothing.
#
# Ports: 18850-18899 (clients use 18600 up, bench 18700-18703). Every test
# is driven by stack_run.sh, which kills what it started when its budget
# runs out; CTest's timeout is 30 s more.
# Included by tests/CMakeLists.txt, which defines srdma_test_env().
set(SRDMA_STACK_RUN ${CMAKE_CURRENT_LIST_DIR}/stack_run.sh)
set_property(GLOBAL PROPERTY SRDMA_STACK_PORT 18850)

# The MPI program, built with the MPI compiler wrapper's flags when Open
# MPI's development files are there (libopenmpi-dev); without them the MPI
# tests skip.
find_package(MPI QUIET COMPONENTS C)
if(MPI_C_FOUND)
	add_executable(stacks_mpi_check
		${CMAKE_CURRENT_LIST_DIR}/mpi_check.c)
	target_link_libraries(stacks_mpi_check PRIVATE MPI::MPI_C)
	set(SRDMA_MPI_CHECK $<TARGET_FILE:stacks_mpi_check>)
else()
	set(SRDMA_MPI_CHECK ${CMAKE_BINARY_DIR}/bin/stacks_mpi_check)
endif()

# srdma_stack_test(NAME [PORT] [ETH] [BUDGET SECS] [ENV VAR=VALUE...]
#                  [OPTS --as-user ...] CMD KIND ARGS...) registers
# stacks.NAME: stack_run.sh OPTS KIND srdma [PORT] ARGS. With PORT, the
# next free port is passed first. ETH makes it stacks.eth.NAME, on a RoCE
# port (SRDMA_LINK_LAYER=eth), labelled eth as tests/eth/eth.cmake does.
function(srdma_stack_test name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "PORT;ETH" "BUDGET"
		"ENV;OPTS;CMD")
	set(test stacks.${name})
	set(label stacks)
	if(arg_ETH)
		set(test stacks.eth.${name})
		set(label eth)
		list(APPEND arg_ENV SRDMA_LINK_LAYER=eth)
	endif()
	set(budget 60)
	if(arg_BUDGET)
		set(budget ${arg_BUDGET})
	endif()
	list(POP_FRONT arg_CMD kind)
	set(port)
	if(arg_PORT)
		get_property(port GLOBAL PROPERTY SRDMA_STACK_PORT)
		math(EXPR next "${port} + 1")
		set_property(GLOBAL PROPERTY SRDMA_STACK_PORT ${next})
	endif()
	add_test(NAME ${test}
		COMMAND bash ${SRDMA_STACK_RUN} ${arg_OPTS} ${kind}
			$<TARGET_FILE:srdma> ${port} ${arg_CMD})
	math(EXPR ctest_timeout "${budget} + 30")
	set_tests_properties(${test} PROPERTIES TIMEOUT ${ctest_timeout}
		LABELS ${label} SKIP_RETURN_CODE 77)
	srdma_test_env(${test})
	set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
		BUDGET=${budget} STACK_TEST=${test} ${arg_ENV})
endfunction()

# UCX sees the device.
srdma_stack_test(ucx_info CMD info)
srdma_stack_test(ucx_info_nonroot OPTS --as-user --no-node CMD info)
srdma_stack_test(ucx_info_no_node OPTS --no-node --expect-fail CMD info)

# UCT: the transports themselves, ucx_perftest's own bandwidth and latency.
srdma_stack_test(uct_rc_put_bw PORT CMD ucx
	-d srdma0:1 -x rc_verbs -t put_bw -D zcopy -s 65536 -n 5000)
srdma_stack_test(uct_rc_am_lat PORT CMD ucx
	-d srdma0:1 -x rc_verbs -t am_lat -n 10000)
srdma_stack_test(uct_ud_am_bw PORT CMD ucx
	-d srdma0:1 -x ud_verbs -t am_bw -D bcopy -s 4000 -n 5000)
srdma_stack_test(uct_ud_am_lat PORT CMD ucx
	-d srdma0:1 -x ud_verbs -t am_lat -n 5000)

# UCP (what MPI uses) restricted to one softrdma transport, then over
# shared memory for comparison.
foreach(tl rc ud)
	srdma_stack_test(ucp_${tl}_tag_lat PORT ENV UCX_TLS=${tl}_v
		CMD ucx -t tag_lat -n 5000)
	srdma_stack_test(ucp_${tl}_tag_bw PORT ENV UCX_TLS=${tl}_v
		CMD ucx -t tag_bw -s 1048576 -n 200)
endforeach()
srdma_stack_test(ucp_rc_tag_bw_nonroot PORT ENV UCX_TLS=rc_v
	OPTS --as-user --no-node CMD ucx -t tag_bw -s 1048576 -n 200)
srdma_stack_test(ucp_sm_tag_lat PORT ENV UCX_TLS=posix,cma
	CMD ucx -t tag_lat -n 5000)
srdma_stack_test(ucp_sm_tag_bw PORT ENV UCX_TLS=posix,cma
	CMD ucx -t tag_bw -s 1048576 -n 200)

# Open MPI 4.1 over UCX over softrdma, 2 and 4 ranks (oversubscribed on
# small machines), then the same program over shared memory.
foreach(tl rc ud)
	foreach(np 2 4)
		srdma_stack_test(mpi_ucx_${tl}_${np} BUDGET 120
			CMD mpi ${np} ${SRDMA_MPI_CHECK} --mca pml ucx
			--mca btl ^openib -x UCX_TLS=${tl}_v)
	endforeach()
endforeach()
srdma_stack_test(mpi_ucx_rc_4_nonroot BUDGET 120 OPTS --as-user --no-node
	CMD mpi 4 ${SRDMA_MPI_CHECK} --mca pml ucx --mca btl ^openib
	-x UCX_TLS=rc_v)
# The same as nobody with SRDMA_DEVNODE=namespace: a private /dev with a
# real node, shared by mpirun and its ranks (one user namespace).
srdma_stack_test(mpi_ucx_rc_2_namespace_nonroot BUDGET 120
	OPTS --as-user --no-node ENV SRDMA_DEVNODE=namespace
	CMD mpi 2 ${SRDMA_MPI_CHECK} --mca pml ucx --mca btl ^openib
	-x UCX_TLS=rc_v)
# Open MPI takes the UCX PML only where UCX offers one of pml_ucx_tls's
# network transports (rc_verbs, ud_verbs, ...), unless told "any".
srdma_stack_test(mpi_ucx_sm_2 BUDGET 120
	CMD mpi 2 ${SRDMA_MPI_CHECK} --mca pml ucx --mca pml_ucx_tls any
	--mca pml_ucx_devices any --mca btl ^openib -x UCX_TLS=posix,cma)
srdma_stack_test(mpi_vader_2 BUDGET 120
	CMD mpi 2 ${SRDMA_MPI_CHECK} --mca pml ob1 --mca btl self,vader)

# libfabric: the verbs provider's three endpoint types, every byte checked
# (-c), then the shm provider for comparison.
srdma_stack_test(fi_verbs_msg PORT CMD fi -p verbs -e msg -c -I 100 -S 4096)
srdma_stack_test(fi_verbs_dgram PORT CMD fi -p verbs -e dgram -c -I 100
	-S 1024)
srdma_stack_test(fi_verbs_msg_nonroot PORT OPTS --as-user --no-node
	CMD fi -p verbs -e msg -c -I 100 -S 4096)
srdma_stack_test(fi_rxm_rdm PORT CMD rdm -c -I 100 -S 4096)
srdma_stack_test(fi_rxm_rdm_1m PORT CMD rdm -c -I 20 -S 1048576)
# libfabric 1.17's rxm handles a peer's disconnect before the completions
# already in its CQ when a process loses the CPU for more than 10 ms at the
# end of a run, and then lost the peer's last "fin" (1 run in 4 to 10 on a
# loaded two-core machine). The CM now reports DISCONNECTED only once the
# application has polled the completions its QP had when the peer left
# (200 ms at most), so rxm sees the fin first: docs/design/stacks.md,
# "libfabric rxm at teardown".
srdma_stack_test(fi_shm_rdm PORT CMD fi -p shm -e rdm -c -I 100 -S 4096)

# A RoCE port: the same stacks pick a RoCE v2 GID themselves.
srdma_stack_test(uct_rc_put_bw PORT ETH CMD ucx
	-d srdma0:1 -x rc_verbs -t put_bw -D zcopy -s 65536 -n 5000)
srdma_stack_test(ucp_ud_tag_lat PORT ETH ENV UCX_TLS=ud_v
	CMD ucx -t tag_lat -n 5000)
foreach(tl rc ud)
	srdma_stack_test(mpi_ucx_${tl}_2 ETH BUDGET 120
		CMD mpi 2 ${SRDMA_MPI_CHECK} --mca pml ucx --mca btl ^openib
		-x UCX_TLS=${tl}_v)
endforeach()
srdma_stack_test(fi_verbs_msg PORT ETH CMD fi -p verbs -e msg -c -I 100
	-S 4096)
srdma_stack_test(fi_verbs_dgram PORT ETH CMD fi -p verbs -e dgram -c
	-I 100 -S 1024)

# `srdma devnode` and SRDMA_DEVNODE's modes, in a private mount namespace.
add_test(NAME stacks.devnode
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/devnode.sh $<TARGET_FILE:srdma>)
set_tests_properties(stacks.devnode PROPERTIES TIMEOUT 60 LABELS stacks
	SKIP_RETURN_CODE 77)
srdma_test_env(stacks.devnode)

# Between two test hosts (network namespaces, tests/net/hosts.sh; root
# needed, else skipped): the same clients with every byte on the veth as
# RoCEv2 (tests/net/net_stacks.sh; labels stacks and net). Open MPI runs
# 2 hosts x 2 ranks, started in host 2 through an rsh agent that enters
# its namespace. The slower pairs carry the label "long" as well, out of
# the default run's budget (ctest -L long).
# srdma_net_stack_test(NAME [LONG] [BUDGET SECS] [ENV VAR=VALUE...]
#                      CMD KIND ARGS...) registers stacks.net.NAME.
function(srdma_net_stack_test name)
	cmake_parse_arguments(PARSE_ARGV 1 arg "LONG" "BUDGET" "ENV;CMD")
	set(test stacks.net.${name})
	set(labels stacks net)
	if(arg_LONG)
		list(APPEND labels long)
	endif()
	set(budget 60)
	if(arg_BUDGET)
		set(budget ${arg_BUDGET})
	endif()
	list(POP_FRONT arg_CMD kind)
	add_test(NAME ${test}
		COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/../net/net_stacks.sh
			--budget ${budget} ${kind} $<TARGET_FILE:srdma>
			${arg_CMD})
	math(EXPR ctest_timeout "${budget} + 30")
	set_tests_properties(${test} PROPERTIES TIMEOUT ${ctest_timeout}
		LABELS "${labels}" SKIP_RETURN_CODE 77)
	srdma_test_env(${test})
	set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
		STACK_TEST=${test} ${arg_ENV})
endfunction()

srdma_net_stack_test(uct_rc_put_bw CMD ucx
	-d srdma0:1 -x rc_verbs -t put_bw -D zcopy -s 65536 -n 2000)
srdma_net_stack_test(uct_rc_am_lat CMD ucx
	-d srdma0:1 -x rc_verbs -t am_lat -n 5000)
srdma_net_stack_test(uct_ud_am_bw CMD ucx
	-d srdma0:1 -x ud_verbs -t am_bw -D bcopy -s 1000 -n 2000)
srdma_net_stack_test(uct_ud_am_lat CMD ucx
	-d srdma0:1 -x ud_verbs -t am_lat -n 2000)
# The same over RoCEv2/IPv6: GID 2 of a test host is its fd53:: address
# (0 link-local, 1 IPv4-mapped); UCX finds the datagram's destination in
# the GRH area by the packet type in the completion's sl.
srdma_net_stack_test(uct_ud_am_lat_ipv6 ENV UCX_IB_GID_INDEX=2 CMD ucx
	-d srdma0:1 -x ud_verbs -t am_lat -n 2000)
# UCP over rc_verbs (its wire-up runs over ud_verbs).
srdma_net_stack_test(ucp_rc_put_bw ENV UCX_TLS=rc_v
	CMD ucx -t ucp_put_bw -s 1048576 -n 200)
srdma_net_stack_test(ucp_rc_am_lat ENV UCX_TLS=rc_v
	CMD ucx -t ucp_am_lat -n 5000)
srdma_net_stack_test(ucp_rc_tag_bw LONG ENV UCX_TLS=rc_v
	CMD ucx -t tag_bw -s 1048576 -n 200)
srdma_net_stack_test(ucp_ud_tag_lat LONG ENV UCX_TLS=ud_v
	CMD ucx -t tag_lat -n 5000)
# Open MPI 4.1 over UCX: 2 hosts x 2 ranks (rank 1 on host 2).
srdma_net_stack_test(mpi_ucx_rc_2x2 BUDGET 120 CMD mpi 4 ${SRDMA_MPI_CHECK}
	--mca pml ucx --mca btl ^openib -x UCX_TLS=rc_v)
srdma_net_stack_test(mpi_ucx_ud_2x2 LONG BUDGET 120 CMD mpi 4
	${SRDMA_MPI_CHECK} --mca pml ucx --mca btl ^openib -x UCX_TLS=ud_v)
# libfabric's verbs provider (rdma_cm across hosts), every byte checked.
# The server's listener is on the host's own address only because binding
# a loopback address on a RoCE port attaches no device (cma_id.c).
srdma_net_stack_test(fi_verbs_msg CMD fi -p verbs -e msg -c -I 100 -S 4096)
# rdm stays "long": libfabric 1.17's rxm used to lose the last message now
# and then at the end of a run (docs/design/stacks.md, "libfabric rxm at
# teardown"); since the CM orders DISCONNECTED after the completions, all
# but one of over 150 runs passed (load 4 to 18), the one failure a hang
# of both sides not yet explained.
srdma_net_stack_test(fi_rxm_rdm LONG CMD rdm -c -I 100 -S 4096)
srdma_net_stack_test(fi_rxm_rdm_1m LONG CMD rdm -c -I 20 -S 1048576)

# Open MPI's 1 MiB ping-pong between two test hosts with both ranks on one
# CPU (what a loaded machine does to a run now and then): the idle yield
# keeps it fast (docs/design/net-endpoint.md, "Sharing a CPU").
add_test(NAME stacks.net.mpi_shared_cpu
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/../net/net_mpi_shared_cpu.sh
		$<TARGET_FILE:srdma> ${SRDMA_MPI_CHECK})
set_tests_properties(stacks.net.mpi_shared_cpu PROPERTIES TIMEOUT 130
	LABELS "stacks;net" SKIP_RETURN_CODE 77)
srdma_test_env(stacks.net.mpi_shared_cpu)
