#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_deb.sh - build softrdma's .deb with CPack, install it with dpkg into
# this (Debian 12) system next to the distribution's rdma-core packages,
# use it, and remove it again:
#   - the package: named softrdma, Depends on libc6; no file that any
#     installed package owns (dpkg -S), none in the loader's directories
#     (/usr/lib/<triplet>, /usr/lib/lib*), no ld.so.conf entry; man pages
#     compressed with gzip -9n, link pages symbolic links (Debian policy);
#   - dpkg -i succeeds beside libibverbs1/librdmacm1/ibverbs-providers,
#     which keep serving every program not started through srdma
#     (ibv_devinfo's libibverbs.so.1 is still the distribution's, ldconfig
#     knows no softrdma directory);
#   - /usr/bin/srdma finds /usr/lib/softrdma: ibv_devinfo, the device
#     node preload, srdma sysfs, an ibv_rc_pingpong and an rping pair;
#     `pkg-config --cflags --libs softrdma` (default search path) builds a
#     program calling ibv_reg_mr_relaxed, which runs on its own; man srdma;
#   - dpkg -r removes it all.
# It changes the real system for a few seconds, so it needs root (it skips
# without) and takes a lock (/run/lock/softrdma-test-deb.lock): two runs
# of it on one host, from two checkouts, take turns. It leaves alone a
# softrdma package it did not install itself.
#
# Usage: test_deb.sh BUILD_DIR SOURCE_DIR PORT  (PORT, PORT + 1: TCP)
# Exit: 0 pass, 1 fail, 77 (CTest skip) without root, dpkg or a client.
set -u

build=$(realpath "$1") il_src=$(realpath "$2") port=$3
# shellcheck source=tests/install/install_lib.sh
. "$il_src/tests/install/install_lib.sh"

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: installing the .deb needs root (dpkg -i into the system)"
	exit 77
fi
for p in dpkg dpkg-deb cpack ibv_devinfo ibv_rc_pingpong rping pkg-config cc
do
	command -v "$p" >/dev/null || {
		echo "SKIP: $p not installed (./scripts/setup.sh installs it)"
		exit 77
	}
done

lock=/run/lock/softrdma-test-deb.lock
mark=/run/lock/softrdma-test-deb.installed	# "this test installed it"
exec 9>"$lock"
flock -w 600 9 || { echo "FAIL: $lock held for 600 s"; exit 1; }

installed() {
	dpkg-query -W -f='${Status}' softrdma 2>/dev/null |
		grep -q 'ok installed'
}
# dpkg ARGS..., retried while another dpkg or apt holds its lock.
dpkg_retry() {
	local i out
	for ((i = 0; i < 60; i++)); do
		out=$(dpkg "$@" 2>&1) && { echo "$out"; return 0; }
		grep -qi 'lock' <<<"$out" || { echo "$out"; return 1; }
		sleep 2
	done
	echo "$out"
	return 1
}

if installed; then
	if [ -e "$mark" ]; then
		echo "note: an earlier run of this test left softrdma installed:" \
			"removing it"
		dpkg_retry -r softrdma >/dev/null || {
			echo "FAIL: dpkg -r softrdma"
			exit 1
		}
		rm -f "$mark"
	else
		echo "SKIP: a softrdma package is installed on this system, not" \
			"by this test: left alone"
		exit 77
	fi
fi

il_tmp=$(mktemp -d) || exit 1
cleanup() {
	if [ -e "$mark" ] && installed; then
		dpkg_retry -r softrdma >/dev/null ||
			echo "FAIL: dpkg -r softrdma (cleanup)"
	fi
	rm -f "$mark"
	rm -rf "$il_tmp"
}
trap cleanup EXIT

if ! out=$(cpack --config "$build/CPackConfig.cmake" -G DEB \
	-B "$il_tmp/pkg" 2>&1); then
	echo "FAIL: cpack -G DEB"
	echo "$out"
	exit 1
fi
deb=$(find "$il_tmp/pkg" -maxdepth 1 -name 'softrdma_*.deb')
if [ ! -f "$deb" ]; then
	echo "FAIL: cpack made no softrdma_*.deb"
	echo "$out"
	exit 1
fi
il_ok "cpack -G DEB: $(basename "$deb")"

name=$(dpkg-deb -f "$deb" Package)
deps=$(dpkg-deb -f "$deb" Depends)
[ "$name" = softrdma ]
il_judge $? "Package: $name" "Package: '$name', expected softrdma"
[[ $deps == *libc6* ]]
il_judge $? "Depends: $deps" "Depends: '$deps', expected libc6"

# The package's files (not directories), as absolute paths.
files=$(dpkg-deb --fsys-tarfile "$deb" | tar -t |
	grep -v '/$' | sed 's|^\./|/|')
for f in /usr/bin/srdma /usr/lib/softrdma/libibverbs.so.1 \
	 /usr/lib/softrdma/librdmacm.so.1 \
	 /usr/lib/softrdma/libsrdma_devnode.so \
	 /usr/lib/softrdma/libsrdma_sigwatch.so \
	 /usr/lib/pkgconfig/softrdma.pc \
	 /usr/include/infiniband/verbs_relaxed.h \
	 /usr/share/man/man1/srdma.1.gz \
	 /usr/share/man/man3/ibv_reg_mr_relaxed.3.gz \
	 /usr/share/man/man3/ibv_dereg_mr_relaxed.3.gz \
	 /usr/share/man/man3/ibv_flush_relaxed_mr.3.gz
do
	grep -qx "$f" <<<"$files" || il_fail "not in the package: $f"
done
# Man pages as Debian policy wants them: every one compressed with
# gzip -9n (header: no file name, no time stamp, best compression), a link
# page a symbolic link to the compressed page it names.
dpkg-deb -x "$deb" "$il_tmp/root" || il_fail "dpkg-deb -x"
pages=$(grep '^/usr/share/man/' <<<"$files")
notgz=$(grep -v '\.gz$' <<<"$pages")
[ -n "$pages" ] && [ -z "$notgz" ]
il_judge $? "man pages: all gzipped ($(wc -l <<<"$pages"))" \
	"man pages not gzipped: ${notgz:-none at all}"
for f in $pages; do
	g=$il_tmp/root$f
	if [ -L "$g" ]; then
		t=$(readlink "$g")
		[[ $t == *.gz && -f $(dirname "$g")/$t && ! -L $(dirname "$g")/$t ]]
		il_judge $? "$f -> $t" "$f -> '$t': not a packaged page"
		continue
	fi
	# Bytes 3..8 of the gzip header: flags (FNAME 0x08 must be clear),
	# mtime (4 bytes, 0), extra flags (2: best compression).
	hdr=$(od -An -tx1 -j3 -N6 "$g" | tr -d ' \n')
	gzip -t "$g" 2>/dev/null && [ "$hdr" = 000000000002 ]
	il_judge $? "$f: gzip -9n" "$f: not gzip -9n (header $hdr)"
done
# Debian policy 12.5 and 12.7: the copyright file (machine-readable
# format, our licence) and, the version having a Debian revision, the
# Debian changelog compressed with gzip -9n, its last entry this version.
doc=/usr/share/doc/softrdma
version=$(dpkg-deb -f "$deb" Version)
g=$il_tmp/root$doc/changelog.Debian.gz
grep -qx "$doc/copyright" <<<"$files" &&
	grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
		"$il_tmp/root$doc/copyright" &&
	grep -q '^License: GPL-2 or BSD-2-clause' "$il_tmp/root$doc/copyright"
il_judge $? "$doc/copyright (GPL-2 or BSD-2-clause)" \
	"$doc/copyright missing or not in the copyright format"
hdr=$(od -An -tx1 -j3 -N6 "$g" 2>/dev/null | tr -d ' \n')
[ "$hdr" = 000000000002 ] &&
	gzip -dc "$g" | head -1 | grep -q "^softrdma ($version) "
il_judge $? "$doc/changelog.Debian.gz: gzip -9n, last entry $version" \
	"$doc/changelog.Debian.gz: header '$hdr', first line '$(gzip -dc "$g" 2>/dev/null | head -1)'"
# Debian's own checker, where installed: no errors (warnings and notes are
# reported, not judged).
if command -v lintian >/dev/null; then
	lint=$(lintian --allow-root "$deb" 2>&1)
	! grep -q '^E:' <<<"$lint"
	il_judge $? "lintian: no errors ($(grep -c '^W:' <<<"$lint") warnings)" \
		"lintian errors: $(grep '^E:' <<<"$lint")"
	grep '^W:' <<<"$lint" | sed 's/^/# /'
else
	echo "# lintian not installed: not run"
fi
bad=$(grep -E '^/usr/lib/[^/]+-linux-gnu/|^/usr/lib/lib|^/lib|^/etc/ld\.so' \
	<<<"$files")
[ -z "$bad" ]
il_judge $? "nothing in the loader's directories" \
	"files where the loader looks: $bad"
# Each path, and its /bin, /sbin, /lib twin: on a merged-/usr system a
# package may list /lib/x where /usr/lib/x is the same file. One dpkg -S
# prints "package: path" for every path some package owns.
paths=()
while read -r f; do
	paths+=("$f")
	case $f in
	/usr/bin/* | /usr/sbin/* | /usr/lib/*) paths+=("${f#/usr}") ;;
	esac
done <<<"$files"
owned=$(dpkg -S "${paths[@]}" 2>/dev/null)
[ -z "$owned" ]
il_judge $? "no file owned by an installed package (${#paths[@]} paths)" \
	"files other packages own: $owned"

touch "$mark"
if ! out=$(dpkg_retry -i "$deb"); then
	echo "FAIL: dpkg -i $(basename "$deb")"
	echo "$out"
	exit 1
fi
il_ok "dpkg -i: softrdma $(dpkg-query -W -f='${Version}' softrdma) installed"
for p in libibverbs1 librdmacm1 ibverbs-providers; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' &&
		il_ok "next to $p $(dpkg-query -W -f='${Version}' "$p")"
done
sys=$(ldd "$(command -v ibv_devinfo)" | grep 'libibverbs.so.1')
if [[ $sys == *softrdma* ]]; then
	il_fail "plain ibv_devinfo now loads softrdma: $sys"
else
	il_ok "plain ibv_devinfo keeps the distribution's:$sys"
fi
if ldconfig -p | grep -q softrdma; then
	il_fail "ldconfig knows softrdma's libraries"
fi

il_clients /usr/bin/srdma /usr/lib/softrdma "$port"
il_pkgconfig /usr/lib/softrdma
if command -v man >/dev/null; then
	page=$(man -w srdma 2>&1)
	[ "$page" = /usr/share/man/man1/srdma.1.gz ]
	il_judge $? "man -w srdma: $page" "man -w srdma: $page"
	# A link page: man follows it to ibv_reg_mr_relaxed(3).
	if MANPAGER=cat MANWIDTH=80 man 3 ibv_flush_relaxed_mr 2>&1 |
	   grep -q 'int ibv_flush_relaxed_mr(struct ibv_pd \*pd);'; then
		il_ok "man 3 ibv_flush_relaxed_mr: the relaxed-MR page"
	else
		il_fail "man 3 ibv_flush_relaxed_mr"
	fi
fi

if ! out=$(dpkg_retry -r softrdma); then
	il_fail "dpkg -r softrdma"
	echo "$out"
else
	rm -f "$mark"
	left=$(ls -d /usr/bin/srdma /usr/lib/softrdma 2>/dev/null)
	[ -z "$left" ]
	il_judge $? "dpkg -r softrdma: nothing left" "dpkg -r left: $left"
fi

((il_failed)) && exit 1
echo "install.deb: all checks passed"
