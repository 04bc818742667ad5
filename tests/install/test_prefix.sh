#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_prefix.sh - `cmake --install BUILD_DIR --prefix P` into a scratch
# prefix, then use softrdma from there as a user would:
#   - the layout: libibverbs.so.1, librdmacm.so.1, libsrdma_devnode.so and
#     libsrdma_sigwatch.so
#     in P/lib/softrdma and no library of ours in P/lib (where it could
#     shadow the distribution's), srdma in P/bin, verbs_relaxed.h,
#     softrdma.pc, the man pages (formatted without a warning), librdmacm's
#     run path $ORIGIN;
#   - P/bin/srdma finds P/lib/softrdma by itself: ibv_devinfo, the device
#     node preload, srdma sysfs, an ibv_rc_pingpong and an rping pair;
#   - pkg-config: a small program calling ibv_reg_mr_relaxed builds with
#     `pkg-config --cflags --libs softrdma` and runs on its own;
#   - P moved elsewhere still works; SRDMA_LIBDIR overrides the lookup; the
#     build tree's build/bin/srdma finds build/lib; an srdma with no
#     libraries next to it exits 125 and says so.
#
# Usage: test_prefix.sh BUILD_DIR SOURCE_DIR PORT  (PORT, PORT + 1: TCP)
# Exit: 0 pass, 1 fail, 77 (CTest skip) if a client program is missing.
set -u

build=$(realpath "$1") il_src=$(realpath "$2") port=$3
# shellcheck source=tests/install/install_lib.sh
. "$il_src/tests/install/install_lib.sh"

for p in ibv_devinfo ibv_rc_pingpong rping pkg-config cc; do
	command -v "$p" >/dev/null || {
		echo "SKIP: $p not installed (./scripts/setup.sh installs it)"
		exit 77
	}
done
il_tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$il_tmp"' EXIT
P=$il_tmp/prefix

if ! out=$(cmake --install "$build" --prefix "$P" 2>&1); then
	echo "FAIL: cmake --install $build --prefix $P"
	echo "$out"
	exit 1
fi
il_ok "cmake --install --prefix $P"

for f in lib/softrdma/libibverbs.so.1 lib/softrdma/librdmacm.so.1 \
	 lib/softrdma/libsrdma_devnode.so lib/softrdma/libsrdma_sigwatch.so \
	 bin/srdma \
	 include/infiniband/verbs_relaxed.h lib/pkgconfig/softrdma.pc \
	 share/man/man1/srdma.1 share/man/man3/ibv_reg_mr_relaxed.3 \
	 share/man/man3/ibv_dereg_mr_relaxed.3 \
	 share/man/man3/ibv_flush_relaxed_mr.3; do
	[ -e "$P/$f" ] || il_fail "not installed: P/$f"
done
stray=$(find "$P" -name 'lib*.so*' ! -path "$P/lib/softrdma/*")
if [ -z "$stray" ]; then
	il_ok "every library in P/lib/softrdma"
else
	il_fail "libraries outside P/lib/softrdma: $stray"
fi
rp=$(readelf -d "$P/lib/softrdma/librdmacm.so.1" | grep -E 'RUNPATH|RPATH')
if [[ $rp == *"[\$ORIGIN]"* ]]; then
	il_ok "librdmacm.so.1 run path \$ORIGIN"
else
	il_fail "librdmacm.so.1 run path: $rp"
fi
il_man "$P"

il_clients "$P/bin/srdma" "$P/lib/softrdma" "$port"
PKG_CONFIG_PATH=$P/lib/pkgconfig il_pkgconfig "$P/lib/softrdma"

# Moved: srdma finds its libraries from where it is now.
mv "$P" "$il_tmp/moved"
got=$(il_first_libdir "$il_tmp/moved/bin/srdma")
if [ "$got" = "$il_tmp/moved/lib/softrdma" ] &&
   "$il_tmp/moved/bin/srdma" run -- ibv_devinfo -l 2>&1 | grep -q srdma0; then
	il_ok "prefix moved: srdma finds $got"
else
	il_fail "prefix moved: srdma finds '$got'"
fi
got=$(SRDMA_LIBDIR=$build/lib il_first_libdir "$il_tmp/moved/bin/srdma")
if [ "$got" = "$build/lib" ]; then
	il_ok "SRDMA_LIBDIR overrides: $got"
else
	il_fail "SRDMA_LIBDIR=$build/lib: srdma chose '$got'"
fi
got=$(il_first_libdir "$build/bin/srdma")
if [ "$got" = "$build/lib" ]; then
	il_ok "build tree: build/bin/srdma finds $got"
else
	il_fail "build tree: build/bin/srdma finds '$got'"
fi
mkdir -p "$il_tmp/lonely/bin"
cp "$il_tmp/moved/bin/srdma" "$il_tmp/lonely/bin/"
out=$(env -u SRDMA_LIBDIR "$il_tmp/lonely/bin/srdma" run -- true 2>&1)
rc=$?
if [ $rc = 125 ] && [[ $out == *"cannot find softrdma's libibverbs.so.1"* ]]
then
	il_ok "no libraries next to srdma: exit 125, '$out'"
else
	il_fail "no libraries next to srdma: exit $rc, '$out'"
fi

((il_failed)) && exit 1
echo "install.prefix: all checks passed"
