# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Every symbol@version the Debian clients import must be exported.
add_test(NAME abi.check_abi
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_abi.sh ${CMAKE_BINARY_DIR})
set_tests_properties(abi.check_abi PROPERTIES TIMEOUT 120 LABELS abi)
srdma_test_env(abi.check_abi)

# The libraries' static TLS fits what glibc keeps for a dlopen()ed library.
add_test(NAME abi.check_tls
	COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_tls.sh ${CMAKE_BINARY_DIR})
set_tests_properties(abi.check_tls PROPERTIES TIMEOUT 30 LABELS abi)
srdma_test_env(abi.check_tls)
