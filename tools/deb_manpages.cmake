# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# deb_manpages.cmake - run by cpack (CPACK_PRE_BUILD_SCRIPTS) on the tree it
# staged for the .deb, before it builds the package. Debian policy wants
# man pages compressed with `gzip -9n` (best compression; no file name and
# no time stamp in the header, so two builds give the same bytes), and a
# page that only names another one (a lone `.so` request) shipped as a
# symbolic link to that page's compressed file, as debhelper's
# dh_installman does. A plain `cmake --install` is not affected: its pages
# stay the roff sources of docs/man. Any failure stops cpack: a package
# with half-compressed pages is worse than none.

set(stage "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
if(NOT IS_DIRECTORY "${stage}")
	message(FATAL_ERROR "deb_manpages: no staging directory '${stage}'")
endif()
file(GLOB_RECURSE pages LIST_DIRECTORIES false "${stage}/*/share/man/man*/*")
if(NOT pages)
	message(FATAL_ERROR "deb_manpages: no man pages under ${stage}")
endif()

foreach(page ${pages})
	if(page MATCHES "\\.gz$" OR IS_SYMLINK "${page}")
		continue()
	endif()
	# A link page: comment lines (.\") and one `.so manN/NAME`, nothing else.
	file(STRINGS "${page}" lines)
	set(target "")
	set(other FALSE)
	foreach(line ${lines})
		if(line MATCHES "^\\.\\\\\"" OR line STREQUAL "")
			continue()
		elseif(line MATCHES "^\\.so[ \t]+(man[^/ \t]+)/([^/ \t]+)[ \t]*$"
		       AND target STREQUAL "")
			set(target "${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
			set(tdir "${CMAKE_MATCH_1}")
			set(tname "${CMAKE_MATCH_2}")
		else()
			set(other TRUE)
		endif()
	endforeach()
	get_filename_component(dir "${page}" DIRECTORY)
	get_filename_component(name "${page}" NAME)
	if(NOT target STREQUAL "" AND NOT other)
		get_filename_component(mandir "${dir}" DIRECTORY)
		if(NOT EXISTS "${mandir}/${target}" AND
		   NOT EXISTS "${mandir}/${target}.gz")
			message(FATAL_ERROR
				"deb_manpages: ${name} names ${target}, not in the package")
		endif()
		get_filename_component(sect "${dir}" NAME)
		if(sect STREQUAL tdir)
			set(link "${tname}.gz")
		else()
			set(link "../${tdir}/${tname}.gz")
		endif()
		file(REMOVE "${page}")
		file(CREATE_LINK "${link}" "${page}.gz" RESULT res SYMBOLIC)
		if(NOT res EQUAL 0)
			message(FATAL_ERROR "deb_manpages: ${name}.gz -> ${link}: ${res}")
		endif()
		message(STATUS "deb_manpages: ${name}.gz -> ${link}")
	else()
		execute_process(COMMAND gzip -9n -- "${page}" RESULT_VARIABLE res)
		if(NOT res EQUAL 0 OR NOT EXISTS "${page}.gz")
			message(FATAL_ERROR "deb_manpages: gzip -9n ${name}: ${res}")
		endif()
		message(STATUS "deb_manpages: ${name}.gz")
	endif()
endforeach()
