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
