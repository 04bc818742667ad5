#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Run rdma-core's pyverbs test_rdmacm (v44) against BUILD_DIR/lib, in a
# private mount and network namespace that gives the device a net interface.
#
# usage: run_rdmacm.sh BUILD_DIR [TEST_SPEC...]     (default: test_rdmacm)
#
# RDMACMBaseTest skips every test ("Device srdma0 doesn't have net
# interface") unless /sys/class/infiniband/<dev>/device/net/<if> exists; it
# then takes the first address of `ip -j addr show <if>` as the address both
# sides bind, listen on and connect to (TCP port 7471). There is no
# /sys/class/infiniband here, and nothing can be created inside sysfs, so the
# script re-executes itself under unshare(1) and, in the new namespaces:
#   * brings up a private loopback: lo has only 127.0.0.1 and ::1, port 7471
#     is ours alone, and concurrent CTest jobs cannot collide on it;
#   * mounts a tmpfs on /sys/class, rbind-mounts every original
#     /sys/class/<entry> back into it (reached through an fd opened before
#     the tmpfs hid them), and adds
#       /sys/class/infiniband/<dev>/device/net/lo -> ../../../../net/lo
#     for each device our libibverbs lists;
#   * checks that base.py's lookup yields an IPv4 address, then runs
#     run_pyverbs.sh. Nothing is visible outside the namespace, and it all
#     disappears with the last process in it.
# /sys/class/net still describes the host's network namespace (sysfs was
# mounted there); the suite only lists the net directory and asks `ip`.
#
# Exit status: run_pyverbs.sh's, or 77 (CTest SKIP_RETURN_CODE) when the
# namespaces or mounts are not permitted (not root, or a confined container).
#
# Environment (besides run_pyverbs.sh's):
#   SRDMA_RDMACM_NETNS   0: stay in the host network namespace (default 1)
#   SRDMA_RDMACM_NETDEV  interface to attach the device to (default lo)
set -u

PYTHON=/usr/bin/python3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF=$HERE/$(basename "${BASH_SOURCE[0]}")
NETDEV=${SRDMA_RDMACM_NETDEV:-lo}

die()
{
	echo "run_rdmacm: $*" >&2
	exit 2
}

skip()
{
	echo "run_rdmacm: SKIP: $*" >&2
	exit 77
}

# base.py runs `ip` by name; root's sbin may be missing from a CI PATH.
export PATH=$PATH:/usr/sbin:/sbin
command -v ip >/dev/null || die "ip(8) not found (iproute2)"

if [ "${1:-}" != --in-namespace ]; then
	[ $# -ge 1 ] || die "usage: $0 BUILD_DIR [TEST_SPEC...]"
	command -v unshare >/dev/null || skip "unshare(1) not found"
	flags=(--mount --propagation private)
	[ "${SRDMA_RDMACM_NETNS:-1}" = 0 ] || flags+=(--net)
	# Probe first, so a refusal becomes a skip with the reason.
	if ! err=$(unshare "${flags[@]}" true 2>&1); then
		skip "unshare ${flags[*]} not permitted (needs root): $err"
	fi
	exec unshare "${flags[@]}" -- "$BASH" "$SELF" --in-namespace "$@"
fi
shift

BUILD_DIR=$(cd "$1" && pwd) || die "no build directory '$1'"
shift
[ $# -ge 1 ] || set -- test_rdmacm

if [ "${SRDMA_RDMACM_NETNS:-1}" != 0 ]; then
	ip link set lo up || skip "cannot bring up lo in the new network namespace"
fi
ip link show "$NETDEV" >/dev/null 2>&1 || die "no interface '$NETDEV'"

# The devices to attach: whatever our library lists (SRDMA_DEVICE renames it).
devs=$(LD_LIBRARY_PATH=$BUILD_DIR/lib "$PYTHON" -c '
import pyverbs.device as d
print(" ".join(x.name.decode() for x in d.get_device_list()))' 2>/dev/null)
[ -n "$devs" ] || devs=srdma0	# let run_pyverbs.sh report the failure

exec 3</sys/class || die "cannot open /sys/class"
mount -t tmpfs -o mode=0755,size=1m srdma-class /sys/class ||
	skip "cannot mount a tmpfs on /sys/class"
for src in "/proc/$$/fd/3"/*; do
	name=${src##*/}
	mkdir "/sys/class/$name" || die "cannot create /sys/class/$name"
	# --no-canonicalize: realpath() of the magic link would name the
	# new, empty tmpfs directory instead of the sysfs one behind fd 3.
	mount --no-canonicalize --rbind "$src" "/sys/class/$name" ||
		skip "cannot bind-mount /sys/class/$name back"
done
exec 3<&-
for dev in $devs; do
	net=/sys/class/infiniband/$dev/device/net
	mkdir -p "$net" || die "cannot create $net"
	ln -s "../../../../net/$NETDEV" "$net/$NETDEV" ||
		die "cannot create $net/$NETDEV"
done

# Do base.py's lookup now, so a wrong environment is one clear line.
for dev in $devs; do
	"$PYTHON" - "$dev" <<'EOF' || exit 2
import json, os, subprocess, sys
dev = sys.argv[1]
net = os.listdir(f'/sys/class/infiniband/{dev}/device/net/')
out = subprocess.check_output(['ip', '-j', 'addr', 'show', net[0]])
addr = json.loads(out.decode())[0]['addr_info'][0]
if addr['family'] != 'inet':
    sys.exit(f'run_rdmacm: {net[0]} lists {addr["local"]} first; want IPv4')
print(f'run_rdmacm: {dev} -> {net[0]} -> {addr["local"]} (port 7471)')
EOF
done

exec "$HERE/run_pyverbs.sh" "$BUILD_DIR" "$@"
