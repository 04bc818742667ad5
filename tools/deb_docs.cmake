# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# deb_docs.cmake - run by cpack (CPACK_PRE_BUILD_SCRIPTS, after
# deb_manpages.cmake) on the tree it staged for the .deb. Debian policy
# wants every package to carry /usr/share/doc/<package>/copyright (the
# machine-readable copyright format, our licence terms) and, for a package
# whose version has a Debian revision, the Debian changelog as
# /usr/share/doc/<package>/changelog.Debian.gz, compressed with gzip -9n
# like the man pages. Both come from tools/deb/. The changelog's first
# entry must name the version CPack gives the package, so that a version
# bump without its changelog entry stops cpack instead of shipping a
# changelog that contradicts the package. A plain `cmake --install` is not
# affected.

set(stage "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
set(src "${CPACK_SRDMA_DEB_DIR}")
if(NOT IS_DIRECTORY "${stage}" OR NOT IS_DIRECTORY "${src}")
	message(FATAL_ERROR "deb_docs: staging '${stage}' or sources '${src}' missing")
endif()
set(doc "${stage}${CPACK_PACKAGING_INSTALL_PREFIX}/share/doc/${CPACK_PACKAGE_NAME}")
set(version "${CPACK_PACKAGE_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")

file(STRINGS "${src}/changelog.Debian" first LIMIT_COUNT 1)
if(NOT first MATCHES "^${CPACK_PACKAGE_NAME} \\(([^)]+)\\) ")
	message(FATAL_ERROR "deb_docs: changelog.Debian starts '${first}'")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL version)
	message(FATAL_ERROR "deb_docs: changelog.Debian's last entry is "
		"${CMAKE_MATCH_1}, the package is ${version}: add an entry")
endif()

file(MAKE_DIRECTORY "${doc}")
file(COPY "${src}/copyright" "${src}/changelog.Debian" DESTINATION "${doc}"
	FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
execute_process(COMMAND gzip -9nf -- "${doc}/changelog.Debian"
	RESULT_VARIABLE res)
if(NOT res EQUAL 0 OR NOT EXISTS "${doc}/changelog.Debian.gz")
	message(FATAL_ERROR "deb_docs: gzip -9n changelog.Debian: ${res}")
endif()
message(STATUS "deb_docs: ${doc}: copyright, changelog.Debian.gz (${version})")
