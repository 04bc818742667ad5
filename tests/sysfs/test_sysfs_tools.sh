#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_sysfs_tools.sh - programs that read /sys/class/infiniband directly
# see srdma0 after the documented set-up, `srdma sysfs mount` (TAP).
#
#   ibstat     (infiniband-diags, through libibumad): the CA, its GUIDs and
#              firmware, port 1 Active/LinkUp, rate, link layer; the base
#              LID is the live context's (a running mr_holder), 0 after it
#              exits; `ibstat -l`, `ibstat -p`.
#   ibstatus   the port's default GID, LID, state, rate, link layer.
#   GID picker every gids/<i> and gid_attrs/types/<i> against what
#              `ibv_devinfo -v` reports on a RoCE port (SRDMA_LINK_LAYER=eth),
#              gid_attrs/ndevs/<i> against the interface holding the address.
#   pyverbs    rdma-core's own test helper (tests/base.py, v44) finds the
#              device's net interface and its address.
#   paths      ibv_get_sysfs_path() is then "/sys"; `srdma sysfs umount`
#              takes the device away again and leaves /sys/class intact.
#
# Everything runs in a private mount namespace (unshare -m), so the host's
# /sys/class is never touched; needs root, exits 77 (skip) without it.
#
# Usage: test_sysfs_tools.sh SRDMA_EXE MR_HOLDER_EXE (CTest sets SRDMA_DIR).
set -u

SRDMA=${1:?usage: test_sysfs_tools.sh SRDMA_EXE MR_HOLDER_EXE}
HOLDER=${2:?usage: test_sysfs_tools.sh SRDMA_EXE MR_HOLDER_EXE}
export PATH=$PATH:/usr/sbin:/sbin
# Debian's python3: pyverbs is installed for it (python3-pyverbs).
PYTHON=/usr/bin/python3
unset SRDMA_DEVICE SRDMA_LINK_LAYER SRDMA_TRANSPORT SYSFS_PATH SRDMA_SYSFS

if [ "${SRDMA_SYSFS_TEST_NS:-}" != 1 ]; then
	for t in ibstat ibstatus unshare /usr/bin/python3 ip; do
		command -v $t >/dev/null || {
			echo "1..0 # SKIP $t not installed (scripts/setup.sh)"
			exit 77
		}
	done
	if ! err=$(unshare -m --propagation private true 2>&1); then
		echo "1..0 # SKIP unshare -m not permitted (needs root): $err"
		exit 77
	fi
	exec env SRDMA_SYSFS_TEST_NS=1 unshare -m --propagation private \
		bash "$0" "$@"
fi

[ -n "${SRDMA_DIR:-}" ] || { echo "SRDMA_DIR not set"; exit 2; }
mkdir -p -m 0700 "$SRDMA_DIR"
WORK=$(mktemp -d /tmp/srdma-sysfs.XXXXXX)
LIBDIR=$(readlink -f "$(dirname "$SRDMA")/../lib")
RUN=("$SRDMA" run --)

ntest=0
failed=0
ok() { ntest=$((ntest + 1)); echo "ok $ntest - $*"; }
not_ok() { ntest=$((ntest + 1)); failed=$((failed + 1)); echo "not ok $ntest - $*"; }
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
diag() { sed 's/^/# /'; }
# has FILE REGEX: FILE has a line matching REGEX (shown if not).
has() {
	grep -Eq -- "$2" "$1" && return 0
	echo "# no line matching '$2' in:"
	diag <"$1"
	return 1
}

holder_pid=
cleanup() {
	[ -n "$holder_pid" ] && kill -9 "$holder_pid" 2>/dev/null
	exec 3>&- 2>/dev/null
	"$SRDMA" sysfs umount >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

echo "# the set-up: srdma sysfs mount"
"$SRDMA" sysfs mount >"$WORK/mount" 2>&1
check "srdma sysfs mount" has "$WORK/mount" "now shows"
"$SRDMA" sysfs mount >"$WORK/mount2" 2>&1
check "a second mount is a no-op" has "$WORK/mount2" "already shows"
check "the real classes stay visible" test -d /sys/class/net/lo
"$SRDMA" sysfs show >"$WORK/show" 2>&1
check "ibv_get_sysfs_path() is /sys once mounted" \
	has "$WORK/show" "^ibv_get_sysfs_path: /sys$"
TREE=$SRDMA_DIR/sysfs/class/infiniband/srdma0
GUID=0x$(tr -d ':' <"$TREE/node_guid")

echo "# ibstat with no context open"
ibstat >"$WORK/ibstat" 2>&1
check "ibstat exits 0" test $? -eq 0
check "ibstat: CA 'srdma0'" has "$WORK/ibstat" "^CA 'srdma0'$"
check "ibstat: node GUID" has "$WORK/ibstat" "Node GUID: $GUID$"
check "ibstat: system image GUID" has "$WORK/ibstat" \
	"System image GUID: $GUID$"
check "ibstat: firmware" has "$WORK/ibstat" "Firmware version: 1\.0\.0$"
check "ibstat: 1 port" has "$WORK/ibstat" "Number of ports: 1$"
check "ibstat: port Active" has "$WORK/ibstat" "State: Active$"
check "ibstat: LinkUp" has "$WORK/ibstat" "Physical state: LinkUp$"
check "ibstat: rate 100" has "$WORK/ibstat" "Rate: 100$"
check "ibstat: InfiniBand" has "$WORK/ibstat" "Link layer: InfiniBand$"
check "ibstat: CM capability" has "$WORK/ibstat" \
	"Capability mask: 0x00010000$"
check "ibstat: LID 0 with no context" has "$WORK/ibstat" "Base lid: 0$"
ibstat -l >"$WORK/list" 2>&1
check "ibstat -l lists srdma0" has "$WORK/list" "^srdma0$"

echo "# ibstat while a context is open"
mkfifo "$WORK/in"
"${RUN[@]}" "$HOLDER" <"$WORK/in" >"$WORK/holder" 2>&1 &
holder_pid=$!
exec 3>"$WORK/in"
for _ in $(seq 100); do
	grep -q '^ready' "$WORK/holder" && break
	sleep 0.1
done
check "mr_holder is ready" has "$WORK/holder" "^ready"
hpid=$(awk '$1 == "pid" { print $2 }' "$WORK/holder")
lid=$("$SRDMA" status 2>/dev/null | awk -v p="$hpid" '$2 == p { print $1; exit }')
echo "# mr_holder pid $hpid has LID $lid"
ibstat srdma0 >"$WORK/ibstat2" 2>&1
check "ibstat: base LID is the live context's ($lid)" \
	has "$WORK/ibstat2" "Base lid: ${lid:-none}$"
ibstatus >"$WORK/ibstatus" 2>&1
check "ibstatus exits 0" test $? -eq 0
check "ibstatus: srdma0 port 1" has "$WORK/ibstatus" \
	"^Infiniband device 'srdma0' port 1 status:$"
check "ibstatus: base lid" has "$WORK/ibstatus" \
	"base lid:[[:space:]]+$(printf '0x%x' "${lid:-0}")$"
check "ibstatus: state" has "$WORK/ibstatus" "state:[[:space:]]+4: ACTIVE$"
check "ibstatus: default GID" has "$WORK/ibstatus" \
	"default gid:[[:space:]]+$(cat "$TREE/ports/1/gids/0")$"
check "ibstatus: rate" has "$WORK/ibstatus" \
	"rate:[[:space:]]+100 Gb/sec \(4X EDR\)$"
exec 3>&-
wait "$holder_pid"
holder_pid=
"$SRDMA" sysfs show >/dev/null 2>&1	# refresh: the context is gone
ibstat -p >"$WORK/portguid" 2>&1
check "ibstat -p: port GUID (LID 0 again)" \
	has "$WORK/portguid" "^${GUID:0:14}0000$"

echo "# a RoCE port: GIDs, their types and interfaces, as GID pickers read them"
SRDMA_LINK_LAYER=eth "$SRDMA" sysfs show >/dev/null 2>&1
ibstat srdma0 >"$WORK/ibstat3" 2>&1
check "ibstat: Ethernet" has "$WORK/ibstat3" "Link layer: Ethernet$"
SRDMA_LINK_LAYER=eth "${RUN[@]}" ibv_devinfo -v >"$WORK/devinfo" 2>&1
"$PYTHON" - "$WORK/devinfo" >"$WORK/gids" 2>&1 <<'EOF'
import ipaddress, re, subprocess, sys, json
port = '/sys/class/infiniband/srdma0/ports/1'
want = {}
for line in open(sys.argv[1]):
    m = re.match(r'\s*GID\[\s*(\d+)\]:\s*(\S+), (RoCE v2|RoCE v1|IB)', line)
    if m:
        want[int(m.group(1))] = (ipaddress.ip_address(m.group(2)), m.group(3))
if not want:
    sys.exit('ibv_devinfo listed no GID')
bad = 0
for i, (gid, kind) in sorted(want.items()):
    got = ipaddress.ip_address(open(f'{port}/gids/{i}').read().strip())
    typ = open(f'{port}/gid_attrs/types/{i}').read().strip()
    ndev = open(f'{port}/gid_attrs/ndevs/{i}').read().strip()
    # the interface must hold that address (IPv4-mapped or IPv6)
    addrs = json.loads(subprocess.check_output(['ip', '-j', 'addr', 'show', ndev]))
    mine = {ipaddress.ip_address(a['local']) for a in addrs[0]['addr_info']}
    held = (gid.ipv4_mapped in mine) if gid.ipv4_mapped else \
        (gid in mine or gid.is_link_local)
    print(f'GID[{i}] {got} {typ} {ndev} held={held}')
    if got != gid or typ != kind or not held:
        print(f'  want {gid} {kind}')
        bad += 1
print(f'{len(want)} GIDs checked, {bad} wrong')
sys.exit(bad != 0)
EOF
check "every GID, type and netdev matches ibv_devinfo -v" test $? -eq 0
diag <"$WORK/gids"

echo "# pyverbs: rdma-core's tests/base.py finds the net interface"
mkdir -p "$WORK/suite"
cp -r /usr/share/doc/rdma-core/tests "$WORK/suite/tests" 2>/dev/null &&
	gunzip -fq "$WORK/suite/tests"/*.gz 2>/dev/null
LD_LIBRARY_PATH=$LIBDIR PYTHONPATH=$WORK/suite:$WORK/suite/tests "$PYTHON" - >"$WORK/py" 2>&1 <<'EOF'
import sys
from tests.base import RDMATestCase
net = RDMATestCase.get_net_name('srdma0')
ip, mac = RDMATestCase.get_ip_mac_address(net)
print(f'srdma0 -> {net} -> {ip} ({mac})')
sys.exit(0 if net and ip else 1)
EOF
check "pyverbs get_net_name/get_ip_mac_address" test $? -eq 0
diag <"$WORK/py"

echo "# srdma sysfs umount"
"$SRDMA" sysfs umount >"$WORK/umount" 2>&1
check "srdma sysfs umount" has "$WORK/umount" "restored"
check "/sys/class/infiniband is gone" test ! -e /sys/class/infiniband
check "/sys/class/net is still there" test -d /sys/class/net/lo
ibstatus >"$WORK/ibstatus2" 2>&1
check "ibstatus: No devices" has "$WORK/ibstatus2" "No devices"

echo "1..$ntest"
[ "$failed" -eq 0 ]
