# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Static analysis as a test: cppcheck over the library and the tool.
find_program(CPPCHECK cppcheck)
if(CPPCHECK)
	add_test(NAME lint.cppcheck COMMAND ${CPPCHECK} --quiet
		--error-exitcode=1 --enable=warning,performance,portability
		--inline-suppr -D_GNU_SOURCE
		-I ${CMAKE_SOURCE_DIR}/include -I ${CMAKE_SOURCE_DIR}/src
		${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tools)
	set_tests_properties(lint.cppcheck PROPERTIES TIMEOUT 600 LABELS lint)
endif()

# An optimised build sees more (-O2's maybe-uninitialized analysis): the
# two libraries, built Release with -Werror in a directory of the test's
# own, must compile without a warning.
add_test(NAME lint.release
	COMMAND ${CMAKE_COMMAND} -E env --unset=MAKEFLAGS
		sh -c "rm -rf \"$1\" && ${CMAKE_COMMAND} -S ${CMAKE_SOURCE_DIR} -B \"$1\" -DCMAKE_BUILD_TYPE=Release -DSRDMA_WERROR=ON >/dev/null && ${CMAKE_COMMAND} --build \"$1\" -j2 --target ibverbs rdmacm; r=$?; rm -rf \"$1\"; exit $r"
		lint.release ${CMAKE_BINARY_DIR}/lint-release)
set_tests_properties(lint.release PROPERTIES TIMEOUT 900 LABELS lint)

# A program linked against our libibverbs needs nothing of it but IBVERBS_*
# versions (so it runs on rdma-core's), and its sigaction reaches the
# signal watch (link_portable.sh says why both matter).
add_test(NAME lint.link_portable
	COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/link_portable.sh
		${CMAKE_BINARY_DIR}/lib ${CMAKE_SOURCE_DIR}/include
		${CMAKE_BINARY_DIR}/lint-link-portable)
set_tests_properties(lint.link_portable PROPERTIES TIMEOUT 120 LABELS lint)
