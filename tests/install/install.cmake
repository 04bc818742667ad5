# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Installing softrdma as a user would (label "install", in the default
# run, about 10 s each on an idle machine):
#   install.prefix  cmake --install into a scratch prefix; srdma, clients
#                   and a pkg-config build from there (test_prefix.sh)
#   install.deb     the CPack .deb, installed with dpkg into this system
#                   beside Debian's rdma-core, used, removed (root; skips
#                   without) (test_deb.sh)
# Both read the build tree's install rules; they take turns
# (RESOURCE_LOCK) and each gets two TCP ports for its client pairs.
# Included by tests/CMakeLists.txt after clients.cmake (srdma_client_port).
foreach(t prefix deb)
	srdma_client_port(port)
	srdma_client_port(unused)	# port + 1: the rping pair
	add_test(NAME install.${t}
		COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_${t}.sh
			${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR} ${port})
	set_tests_properties(install.${t} PROPERTIES TIMEOUT 300
		LABELS install SKIP_RETURN_CODE 77
		RESOURCE_LOCK srdma_install)
	srdma_test_env(install.${t})
endforeach()
