#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# gid_index.sh - print the index of a RoCE v2 GID in softrdma's GID table,
# as an application sees it: the clients' -g / -x argument.
#
# Usage: gid_index.sh SRDMA_EXE ADDR [DEVICE]
#   SRDMA_EXE  build/bin/srdma (ibv_devinfo runs through `srdma run`)
#   ADDR       an IPv4 address (its GID is the IPv4-mapped ::ffff:ADDR),
#              an IPv6 address, e.g. `hosts.sh addr 1`, or "link-local":
#              the first fe80::/64 entry (rxe's and our index 0, the GID
#              `ibv_rc_pingpong -g 0` uses)
#   DEVICE     default srdma0 (port 1)
# Run it in the host whose table is wanted: hosts.sh run I -- gid_index.sh
# ... (the table is built from that namespace's interfaces).
#
# The table is read from `ibv_devinfo -v` (rdma-core's own tool, through
# our library): lines "GID[  i]:  <gid>, RoCE v2", where <gid> is printed
# as ::ffff:a.b.c.d for an IPv4-mapped GID and as eight hex groups
# otherwise. Both sides are compared as parsed IPv6 addresses.
#
# Exit: 0 with the index on stdout; 1 if no RoCE v2 entry has that
# address (the table is printed on stderr); 2 usage.
set -u
srdma=${1:?usage: gid_index.sh SRDMA_EXE ADDR [DEVICE]}
addr=${2:?usage: gid_index.sh SRDMA_EXE ADDR [DEVICE]}
dev=${3:-srdma0}

out=$("$srdma" run -- ibv_devinfo -v -d "$dev" -i 1 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
	echo "gid_index: ibv_devinfo -v -d $dev failed ($rc):" >&2
	echo "$out" >&2
	exit 1
fi

# "GID[  3]:  x, RoCE v2" -> "3 x RoCE v2"
table=$(echo "$out" | sed -n \
	's/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*\([^,]*\),*[[:space:]]*\(.*\)$/\1 \2 \3/p')
idx=$(echo "$table" | python3 -c '
import ipaddress, sys
ll = sys.argv[1] == "link-local"
want = None if ll else ipaddress.ip_address(sys.argv[1])
if want is not None and want.version == 4:
    want = ipaddress.IPv6Address("::ffff:" + str(want))
for line in sys.stdin:
    f = line.split(None, 2)
    if len(f) < 3 or f[2].strip() != "RoCE v2":
        continue
    try:
        gid = ipaddress.IPv6Address(f[1])
    except ValueError:
        continue
    if gid == want or (ll and gid.is_link_local):
        print(f[0])
        break
' "$addr")
if [ -z "$idx" ]; then
	echo "gid_index: no RoCE v2 GID for $addr in $dev's table:" >&2
	echo "${table:-(no GID lines)}" >&2
	exit 1
fi
echo "$idx"
