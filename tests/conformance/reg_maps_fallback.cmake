# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# The registration test set again, with the mapping check forced onto the
# path a kernel without PROCMAP_QUERY (Debian 12's 6.1) takes:
# SRDMA_MAPS_QUERY=fallback (src/core/memcheck.c), and once more with
# SRDMA_MAPS_QUERY=parse, where the fallback's /proc/self/maps reader
# answers every check alone. The machines we build on are newer, so
# without this the fallback would only run on old kernels.
# Every registration rule (EFAULT for unmapped memory, EFAULT for a
# read-only range with a write access, nothing checked for ODP) must answer
# the same on both paths.
#
# Included by tests/CMakeLists.txt after the func tests and pyverbs.cmake
# (fragments are included in name order), so the func_* targets and
# srdma_pyverbs_test() exist.
set(SRDMA_REG_TESTS test_reg_mr test_reg_mr_env test_reg_mr_maps
	test_rereg test_relaxed test_mw test_advise_mr test_dmabuf
	test_dmabuf_memfd)

foreach(mode fallback parse)
	foreach(t ${SRDMA_REG_TESTS})
		if(NOT TARGET func_${t})
			continue()
		endif()
		set(test func.${t}.maps_${mode})
		add_test(NAME ${test} COMMAND func_${t})
		set_tests_properties(${test} PROPERTIES TIMEOUT 300
			LABELS "func;robust")
		srdma_test_env(${test})
		set_property(TEST ${test} APPEND PROPERTY
			ENVIRONMENT SRDMA_MAPS_QUERY=${mode})
	endforeach()
	foreach(mod test_mr test_odp)
		set(test conformance.${mod}.maps_${mode})
		srdma_pyverbs_test(${mod}.maps_${mode} conformance 900 ${mod})
		set_property(TEST ${test} APPEND PROPERTY LABELS robust)
		set_property(TEST ${test} APPEND PROPERTY
			ENVIRONMENT SRDMA_MAPS_QUERY=${mode})
	endforeach()
endforeach()

# The test written for the fallback (forged line, crowded address space)
# belongs to the robust set on the default path too.
set_tests_properties(func.test_reg_mr_maps PROPERTIES LABELS "func;robust")
