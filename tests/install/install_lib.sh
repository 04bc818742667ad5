# shellcheck shell=bash disable=SC2016,SC2034,SC2154
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# install_lib.sh - the checks test_prefix.sh and test_deb.sh both make on
# an installed softrdma (sourced, not run). Each check prints one line,
# "ok: ..." or "FAIL: ...", and a failure sets il_failed=1 (the caller's
# exit status); the output of a failed step is printed under its line.
#
# Needs: il_src (the source tree), il_tmp (a scratch directory), and the
# test's SRDMA_DIR in the environment, as CTest gives it.

il_failed=0

il_ok() { echo "ok: $*"; }
il_fail() { echo "FAIL: $*"; il_failed=1; }
# il_judge STATUS OK_TEXT FAIL_TEXT: il_ok OK_TEXT if STATUS is 0.
il_judge() {
	if [ "$1" = 0 ]; then il_ok "$2"; else il_fail "$3"; fi
}

# il_first_libdir SRDMA: the first directory `SRDMA run` puts on the
# LD_LIBRARY_PATH of the program it runs.
il_first_libdir() {
	"$1" run -- sh -c 'printf "%s\n" "${LD_LIBRARY_PATH%%:*}"'
}

# il_clients SRDMA LIBDIR PORT: real clients through this srdma, which
# must find its libraries in LIBDIR: ibv_devinfo shows srdma0; the
# device-node preload and `srdma sysfs` find theirs there too; an
# ibv_rc_pingpong pair (libibverbs) on TCP port PORT and an rping pair
# (librdmacm) on PORT + 1, judged by tests/clients/run_pair.sh.
il_clients() {
	local srdma=$1 libdir=$2 port=$3 out got

	got=$(il_first_libdir "$srdma")
	if [ "$got" = "$libdir" ]; then
		il_ok "$srdma run: libraries from $got"
	else
		il_fail "$srdma run: libraries from '$got', expected $libdir"
	fi
	if out=$("$srdma" run -- ibv_devinfo 2>&1) &&
	   grep -q '^hca_id:[[:space:]]*srdma0$' <<<"$out"; then
		il_ok "$srdma run -- ibv_devinfo: srdma0"
	else
		il_fail "$srdma run -- ibv_devinfo: no srdma0"
		echo "$out"
	fi
	# A device whose node surely does not exist: only the preloaded
	# libsrdma_devnode.so of LIBDIR can make it look usable.
	if out=$(SRDMA_DEVICE=srdmainstall0 SRDMA_DEVNODE=preload \
		"$srdma" run -- "$srdma" devnode --check 2>&1) &&
	   grep -q "$libdir/libsrdma_devnode.so" < <(SRDMA_DEVNODE=preload \
		"$srdma" run -- sh -c 'echo "$LD_PRELOAD"'); then
		il_ok "device node preload: $libdir/libsrdma_devnode.so"
	else
		il_fail "device node preload from $libdir"
		echo "$out"
	fi
	if out=$("$srdma" sysfs show 2>&1) &&
	   grep -q '^device: .*/class/infiniband/srdma0$' <<<"$out"; then
		il_ok "$srdma sysfs show"
	else
		il_fail "$srdma sysfs show"
		echo "$out"
	fi
	if out=$(bash "$il_src/tests/clients/run_pair.sh" --timeout 60 \
		pingpong "$port" "$srdma" ibv_rc_pingpong -n 200 2>&1); then
		il_ok "ibv_rc_pingpong pair through $srdma:" \
			"$(grep -m1 'usec/iter' <<<"$out")"
	else
		il_fail "ibv_rc_pingpong pair through $srdma"
		echo "$out"
	fi
	if out=$(bash "$il_src/tests/clients/run_pair.sh" --timeout 60 \
		rping $((port + 1)) "$srdma" \
		@server rping -s -a 127.0.0.1 -C 10 -v \
		@client rping -c -a 127.0.0.1 -C 10 -v 2>&1); then
		il_ok "rping pair through $srdma (10 pings)"
	else
		il_fail "rping pair through $srdma"
		echo "$out"
	fi
}

# il_pkgconfig LIBDIR: build tests/install/relaxed_prog.c with nothing but
# `pkg-config --cflags --libs softrdma` (PKG_CONFIG_PATH as the caller
# set it) and run it with no LD_LIBRARY_PATH and no srdma run: it must
# load LIBDIR/libibverbs.so.1 through its run path and register a
# relaxed MR on srdma0.
il_pkgconfig() {
	local libdir=$1 flags out

	if ! flags=$(pkg-config --cflags --libs softrdma 2>&1); then
		il_fail "pkg-config --cflags --libs softrdma"
		echo "$flags"
		return
	fi
	il_ok "pkg-config --cflags --libs softrdma: $flags"
	# shellcheck disable=SC2086 # flags are words
	if ! out=$(cc -Wall -Werror -o "$il_tmp/relaxed_prog" \
		"$il_src/tests/install/relaxed_prog.c" $flags 2>&1); then
		il_fail "cc relaxed_prog.c \$(pkg-config --cflags --libs softrdma)"
		echo "$out"
		return
	fi
	out=$(ldd "$il_tmp/relaxed_prog" | grep 'libibverbs.so.1')
	if [[ $out == *"=> $libdir/libibverbs.so.1 "* ]]; then
		il_ok "relaxed_prog links $libdir/libibverbs.so.1"
	else
		il_fail "relaxed_prog's libibverbs.so.1 is not $libdir's: $out"
	fi
	if out=$(env -u LD_LIBRARY_PATH -u LD_PRELOAD \
		"$il_tmp/relaxed_prog" 2>&1) &&
	   grep -q '^relaxed: ok' <<<"$out"; then
		il_ok "relaxed_prog, run directly: $out"
	else
		il_fail "relaxed_prog, run directly"
		echo "$out"
	fi
}

# il_man ROOT: the man pages under ROOT/share/man format without a warning.
il_man() {
	local root=$1 page out

	command -v groff >/dev/null || {
		echo "note: groff not installed, man pages not formatted"
		return
	}
	for page in man1/srdma.1 man3/ibv_reg_mr_relaxed.3; do
		if out=$(groff -man -ww -z "$root/share/man/$page" 2>&1) &&
		   [ -z "$out" ]; then
			il_ok "man page $page formats cleanly"
		else
			il_fail "man page $page"
			echo "$out"
		fi
	done
}
