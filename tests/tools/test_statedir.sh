#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_statedir.sh - the state directory cannot be squatted or abused by
# another user (TAP output; docs/design/host-segment.md, "The state
# directory").
#
#   squat    /dev/shm/srdma-0 pre-created by uid 65534 (a directory, or a
#            symlink to a directory of root's): the device still opens,
#            in $XDG_RUNTIME_DIR/srdma or /run/srdma-0, says so under
#            SRDMA_LOG=info, and srdma status finds the same directory;
#            the symlink's target is left untouched.
#   refuse   an explicit SRDMA_DIR that is world-writable, owned by
#            another uid or a symlink: the open fails with a clear
#            SRDMA_LOG error and srdma status says why (exit 1).
#   delete   uid 65534 plants a registry in a world-writable SRDMA_DIR
#            whose dead entry names "../precious": root's open refuses the
#            directory, precious survives. A symlink planted as "registry"
#            in a valid directory is not followed (the target's contents
#            survive).
#   umask    uid 65534 with umask 0277 opens the device: the directory
#            is 0700 and every file in it 0600, its sysfs tree 0755/0444
#            (not the umask's 0500 /
#            0400), and a later process of that uid opens it too.
#
# Needs root (other uids, a private mount namespace with tmpfs over
# /dev/shm and /run, so the real ones are never touched); skips otherwise.
# Usage: test_statedir.sh SRDMA_EXE MR_HOLDER_EXE
set -u

SRDMA=${1:?usage: test_statedir.sh SRDMA_EXE MR_HOLDER_EXE}
HOLDER=${2:?usage: test_statedir.sh SRDMA_EXE MR_HOLDER_EXE}

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (other uids, mount namespace)"
	exit 0
fi
if [ -z "${SRDMA_STATEDIR_NS:-}" ]; then
	exec env SRDMA_STATEDIR_NS=1 unshare -m --propagation private \
		bash "$0" "$@"
fi
mount -t tmpfs -o mode=1777 srdma-test-shm /dev/shm || exit 1
mount -t tmpfs -o mode=755 srdma-test-run /run || exit 1
WORK=$(mktemp -d /tmp/srdma-statedir.XXXXXX)
chmod 0755 "$WORK"	# uid 65534 plays in $WORK/ww
trap 'rm -rf "$WORK"' EXIT
unset SRDMA_DIR XDG_RUNTIME_DIR SRDMA_LOG SRDMA_LOG_FILE SRDMA_DEVICE

ntest=0
failed=0
check() {
	local desc=$1
	shift
	ntest=$((ntest + 1))
	if "$@"; then
		echo "ok $ntest - $desc"
	else
		failed=$((failed + 1))
		echo "not ok $ntest - $desc"
	fi
}
diag() {
	sed 's/^/# /'
}

# Open the device once (mr_holder exits at stdin EOF); output in $out.
open_dev() {
	out=$("$HOLDER" </dev/null 2>&1)
	local rc=$?
	echo "$out" | grep -v '^mr \|^mw \|^pd ' | diag
	[ $rc = 0 ] && echo "$out" | grep -q '^ready$'
}
status_out() {
	sout=$("$SRDMA" status --all 2>&1)
	src=$?
	echo "$sout" | head -3 | diag
}
fresh_shm() {
	rm -rf /dev/shm/srdma-0 /run/srdma-0 "$WORK/xdg"
}
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

echo "# default: /dev/shm/srdma-0, created 0700"
fresh_shm
check "device opens with nothing squatted" open_dev
check "... in /dev/shm/srdma-0, mode 0700" \
	test "$(stat -c %a:%u /dev/shm/srdma-0)" = 700:0

echo "# squat: a directory of uid 65534"
fresh_shm
as_nobody mkdir -m 0777 /dev/shm/srdma-0
SRDMA_LOG=info open_dev
rc=$?
check "device opens despite the squatter (fallback /run/srdma-0)" test $rc = 0
check "... and says so under SRDMA_LOG=info" \
	grep -q "state directory /run/srdma-0 (/dev/shm/srdma-0: owned by another user)" <<<"$out"
check "... into a private directory" \
	test "$(stat -c %a:%u /run/srdma-0)" = 700:0
check "... leaving the squatter's directory empty" \
	test -z "$(ls -A /dev/shm/srdma-0)"
status_out
check "srdma status uses the same directory" \
	grep -q "SRDMA_DIR /run/srdma-0\|no softrdma contexts (SRDMA_DIR /run/srdma-0)" <<<"$sout"
mkdir -m 0700 "$WORK/xdg"
XDG_RUNTIME_DIR=$WORK/xdg SRDMA_LOG=info open_dev
check "with XDG_RUNTIME_DIR set, the fallback is \$XDG_RUNTIME_DIR/srdma" \
	grep -q "state directory $WORK/xdg/srdma (" <<<"$out"

echo "# squat: a symlink (owned by 65534) to a directory of root's"
fresh_shm
mkdir -m 0700 "$WORK/rootdir"
echo keep >"$WORK/rootdir/file"
ln -s "$WORK/rootdir" /dev/shm/srdma-0
chown -h 65534:65534 /dev/shm/srdma-0
SRDMA_LOG=info open_dev
rc=$?
check "device opens, the symlink is not followed" test $rc = 0
check "... SRDMA_LOG says why" \
	grep -q "/dev/shm/srdma-0: a symlink or not a directory" <<<"$out"
check "... and nothing was created behind the symlink" \
	test "$(ls -A "$WORK/rootdir")" = file
rm -f /dev/shm/srdma-0

echo "# refuse: explicit SRDMA_DIR that is not private"
mkdir -m 0777 "$WORK/ww"
chmod 1777 "$WORK/ww"
SRDMA_DIR=$WORK/ww SRDMA_LOG=error open_dev
rc=$?
check "world-writable SRDMA_DIR: the open fails" test $rc != 0
check "... with a clear SRDMA_LOG error" \
	grep -q "SRDMA_DIR $WORK/ww refused: mode is not 0700" <<<"$out"
SRDMA_DIR=$WORK/ww status_out
check "... srdma status exits 1 and says why" \
	bash -c '[ "$1" = 1 ] && grep -q "refused: mode is not 0700" <<<"$2"' \
	_ "$src" "$sout"
mkdir -m 0700 "$WORK/theirs"
chown 65534:65534 "$WORK/theirs"
SRDMA_DIR=$WORK/theirs SRDMA_LOG=error open_dev
rc=$?
check "SRDMA_DIR of another uid: refused" \
	bash -c '[ "$1" != 0 ] && grep -q "refused: owned by another user" <<<"$2"' \
	_ "$rc" "$out"
mkdir -m 0700 "$WORK/real"
ln -s "$WORK/real" "$WORK/link"
SRDMA_DIR=$WORK/link SRDMA_LOG=error open_dev
rc=$?
check "SRDMA_DIR that is a symlink: refused" \
	bash -c '[ "$1" != 0 ] && grep -q "refused: a symlink" <<<"$2"' \
	_ "$rc" "$out"

echo "# delete: a registry planted by uid 65534 names ../precious"
echo precious >"$WORK/precious"
# Registry v1: header (magic SRDG, version 1, 64, 1023 entries of 128 at
# offset 64), entry 0 LIVE, a dead pid, seg_name "../precious".
# (Written by root, then given to 65534: python3 may not be reachable
# for 65534.)
python3 - "$WORK/ww/registry" <<'EOF'
import struct, sys
hdr = struct.pack('<IHHIIQ40x', 0x47445253, 1, 64, 1023, 128, 64)
ent = struct.pack('<IiQII48s32sQ16x', 1, 999999, 1, 1, 65534,
		  b'../precious', b'srdma0', 0)
with open(sys.argv[1], 'wb') as f:
	f.write(hdr + ent + b'\0' * (128 * 1022))
EOF
chown 65534:65534 "$WORK/ww/registry"
SRDMA_DIR=$WORK/ww open_dev
SRDMA_DIR=$WORK/ww "$SRDMA" status >/dev/null 2>&1
check "root opening in that directory leaves ../precious alone" \
	test "$(cat "$WORK/precious" 2>/dev/null)" = precious

echo "# a symlink planted as \"registry\" in a valid directory"
mkdir -m 0700 "$WORK/ok"
echo keep >"$WORK/target"
ln -s "$WORK/target" "$WORK/ok/registry"
SRDMA_DIR=$WORK/ok SRDMA_LOG=error open_dev
rc=$?
check "the open fails cleanly" test $rc != 0
check "... and the link's target keeps its contents and size" \
	test "$(stat -c %s "$WORK/target"):$(head -c 4 "$WORK/target")" = 5:keep

echo "# umask 0277: files are created with our modes, not the umask's"
# A process whose umask masks owner bits (0277: r-- at most) must not
# leave a directory 0500 that every later open refuses, or a registry,
# segment or FIFO 0400 that no other process of the user can open.
rm -rf /dev/shm/srdma-65534
# uid 65534 must be able to run the holder and load our library, but the
# build tree may sit where only root can enter (CI's fresh clone in a
# private temporary directory): give it copies in a directory it can read.
NB=$WORK/nobody
mkdir -p "$NB/lib"
cp "$HOLDER" "$NB/mr_holder"
cp -P "$(dirname "$(readlink -f "$SRDMA")")"/../lib/lib*.so* "$NB/lib/"
chmod 755 "$WORK" "$NB" "$NB/lib"
chmod -R a+rX "$NB"
NB_RUN=(env "LD_LIBRARY_PATH=$NB/lib" "$NB/mr_holder")
exec 3< <(sleep 4)
as_nobody bash -c 'umask 0277; exec "$@"' _ "${NB_RUN[@]}" <&3 \
	>"$WORK/umask.out" 2>&1 &
upid=$!
exec 3<&-
for _ in $(seq 1 100); do
	grep -q '^ready$' "$WORK/umask.out" 2>/dev/null && break
	sleep 0.05
done
diag <"$WORK/umask.out"
check "uid 65534 with umask 0277 opens the device" \
	grep -q '^ready$' "$WORK/umask.out"
modes=$(cd /dev/shm/srdma-65534 2>/dev/null && stat -c '%n %a' . * | tr '\n' ' ')
echo "# modes: $modes"
check "... directory 0700, every file in it 0600" \
	bash -c '[ "$(stat -c %a "$1")" = 700 ] &&
		[ -n "$(ls -A "$1")" ] &&
		[ -z "$(find "$1" -mindepth 1 -path "$1/sysfs" -prune -o \
			! -perm 600 -print)" ]' \
	_ /dev/shm/srdma-65534
# The sysfs tree (docs/design/sysfs.md) is meant to be read by everyone
# once mounted over /sys/class: directories 0755, files 0444.
check "... its sysfs tree: directories 0755, files 0444" \
	bash -c '[ -d "$1/class/infiniband/srdma0/ports/1" ] &&
		[ -z "$(find "$1" \( -type d ! -perm 755 \) -o \
			\( -type f ! -perm 444 \) -print)" ]' \
	_ /dev/shm/srdma-65534/sysfs
as_nobody bash -c 'umask 0077; exec "$@" </dev/null' _ "${NB_RUN[@]}" \
	>"$WORK/umask2.out" 2>&1
check "... and a second process of that uid opens it too" \
	grep -q '^ready$' "$WORK/umask2.out"
diag <"$WORK/umask2.out"
wait $upid

echo "1..$ntest"
echo "state directory: $((ntest - failed)) of $ntest squatting, symlink and permission checks passed"
[ $failed = 0 ]
