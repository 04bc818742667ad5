#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# devnode.sh - `srdma devnode` and the ways `srdma run` shows
# /dev/infiniband/uverbs_srdma0 to a program (SRDMA_DEVNODE auto, preload,
# namespace, off), checked without touching the host: everything happens
# in a private mount namespace with an empty tmpfs over /dev/infiniband.
# Needs root (and /dev/infiniband to exist, as scripts/setup.sh leaves
# it); skips (77) otherwise.
#
# Usage: devnode.sh SRDMA_EXE
set -u
SRDMA=$1
NODE=/dev/infiniband/uverbs_srdma0

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
step() { echo "== $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (a private mount namespace)"
[ -d /dev/infiniband ] || skip "no /dev/infiniband (run scripts/setup.sh)"
if [ -z "${DEVNODE_PRIVATE:-}" ]; then
	export DEVNODE_PRIVATE=1
	exec unshare -m bash "$0" "$@"
fi
mount -t tmpfs -o mode=0755 none /dev/infiniband || fail "mount tmpfs"
unset SRDMA_DEVNODE SRDMA_DEVICE LD_PRELOAD

step "missing: --check says so"
"$SRDMA" devnode --check && fail "--check passed with no node"

step "srdma run (auto): the program sees a usable node"
out=$("$SRDMA" run -- bash -c 'echo "$LD_PRELOAD"
	test -c '"$NODE"' && test -r '"$NODE"' && test -w '"$NODE"' &&
	echo bash-sees-it') || fail "srdma run failed"
echo "$out"
echo "$out" | grep -q 'libsrdma_devnode\.so' || fail "not preloaded"
echo "$out" | grep -q bash-sees-it || fail "bash's test -c/-r/-w fail"
"$SRDMA" run -- "$SRDMA" devnode --check || fail "stat/access miss it"
"$SRDMA" run -- stat -c '%F %t:%T' "$NODE" | grep -qx 'character special file 1:3' ||
	fail "statx does not show /dev/null's numbers"
[ ! -e "$NODE" ] || fail "the preload changed the file system"

step "only that path: other names in /dev/infiniband stay missing"
"$SRDMA" run -- stat /dev/infiniband/uverbs0 >/dev/null 2>&1 &&
	fail "uverbs0 answered"
SRDMA_DEVICE=other "$SRDMA" run -- stat "$NODE" >/dev/null 2>&1 &&
	fail "uverbs_srdma0 answered for SRDMA_DEVICE=other"
SRDMA_DEVICE=other "$SRDMA" run -- \
	stat /dev/infiniband/uverbs_other >/dev/null ||
	fail "uverbs_other missing for SRDMA_DEVICE=other"

step "SRDMA_DEVNODE=off: nothing"
SRDMA_DEVNODE=off "$SRDMA" run -- "$SRDMA" devnode --check &&
	fail "off still shows the node"

step "no libsrdma_devnode.so: auto runs the program anyway, preload fails"
libs=$(mktemp -d) || fail "mktemp"
trap 'rm -rf "$libs"' EXIT
ln -s "$(dirname "$SRDMA")/../lib/libibverbs.so.1" "$libs/" || fail "ln"
SRDMA_LIBDIR=$libs "$SRDMA" run -- true || fail "auto gave up"
SRDMA_LIBDIR=$libs SRDMA_DEVNODE=preload "$SRDMA" run -- true
[ $? = 125 ] || fail "preload without the library is not exit 125"

step "SRDMA_DEVNODE=bogus: usage error"
SRDMA_DEVNODE=bogus "$SRDMA" run -- true
[ $? = 2 ] || fail "a bad SRDMA_DEVNODE is not exit 2"

step "SRDMA_DEVNODE=namespace: a real node in a private /dev"
out=$(SRDMA_DEVNODE=namespace "$SRDMA" run -- bash -c \
	'echo "preload=$LD_PRELOAD"; ls -l '"$NODE"'; ls /dev/shm >/dev/null &&
	 echo shm-ok') || fail "namespace run failed"
echo "$out"
echo "$out" | grep -q '^preload=.*libsrdma_devnode' &&
	fail "namespace also preloaded"
echo "$out" | grep -q "^crw-rw-rw- .* 1, *3 .*$NODE\$" ||
	fail "no character node 1:3 in the namespace"
echo "$out" | grep -qx shm-ok || fail "/dev/shm missing in the namespace"
# The nobody steps need a build nobody can reach: a checkout under a
# 0700 directory (mktemp -d) is not, and those steps are then left out
# with a line saying so (the rest of the test still runs).
if setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$SRDMA"; then
	nobody_ok=1
else
	nobody_ok=
	echo "nobody cannot reach $SRDMA (a parent directory is not" \
		"searchable): its steps are left out"
fi
if [ -n "$nobody_ok" ]; then
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env SRDMA_DEVNODE=namespace "$SRDMA" run -- "$SRDMA" devnode \
		--check || fail "namespace as nobody (user namespace) failed"
fi
[ ! -e "$NODE" ] || fail "the namespace leaked its node"

step "srdma devnode: makes it for every user, idempotent"
"$SRDMA" devnode || fail "devnode failed"
[ "$(stat -c '%F %a %t:%T' "$NODE")" = "character special file 666 1:3" ] ||
	fail "wrong node: $(stat -c '%F %a %t:%T' "$NODE")"
if [ -n "$nobody_ok" ]; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$SRDMA" devnode \
		--check || fail "nobody cannot use it"
fi
chmod 0600 "$NODE"
"$SRDMA" devnode || fail "second devnode failed"
[ "$(stat -c %a "$NODE")" = 666 ] || fail "mode not raised back to 0666"
out=$("$SRDMA" run -- bash -c 'echo "$LD_PRELOAD"')
case $out in
*libsrdma_devnode*) fail "preloaded although the node exists: $out" ;;
esac

step "something else in the way is refused"
rm -f "$NODE" && touch "$NODE"
out=$("$SRDMA" devnode 2>&1) && fail "devnode accepted a regular file"
echo "$out"
echo "$out" | grep -q "in the way" || fail "no reason given"
echo "PASS"
