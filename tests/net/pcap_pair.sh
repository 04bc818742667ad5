#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# pcap_pair.sh SRDMA_EXE - SRDMA_PCAP end to end: two test hosts run
# ibv_rc_pingpong (IPv4, then IPv6) and ib_read_bw over the net transport,
# both sides writing one shared capture file. Then:
#   - check_pcap.py: every packet decoded by tshark, every ICRC right
#     (scapy for IPv4, its own zlib check for IPv6);
#   - each datagram is in the file as often as sent by one side as
#     received by the other: an even number of times (twice, or four
#     times for a retransmission; no fault injection, no loss on a veth);
#   - both IP versions are there.
# Exit: 0 pass, 1 fail, 77 skip (no root, tshark, scapy or the clients).
set -u
here=$(cd "$(dirname "$0")" && pwd)
srdma=${1:?usage: pcap_pair.sh SRDMA_EXE}
py=/usr/bin/python3

[ "$(id -u)" = 0 ] || { echo "pcap_pair: needs root (test hosts): skipped"; exit 77; }
for p in tshark ibv_rc_pingpong ib_read_bw; do
	command -v "$p" >/dev/null ||
		{ echo "pcap_pair: $p not installed: skipped"; exit 77; }
done
$py -c 'import scapy.contrib.roce' 2>/dev/null ||
	{ echo "pcap_pair: python3-scapy not installed: skipped"; exit 77; }

dir=${SRDMA_DIR:-$(mktemp -d)}
mkdir -p "$dir" && chmod 700 "$dir"
pcap=$dir/pair.pcap
rm -f "$pcap"
export SRDMA_PCAP=$pcap
tag=wp$$
fail=0
run() {
	if ! out=$("$here/net_pair.sh" --timeout 40 --tag "$tag" "$@" 2>&1); then
		echo "$out" | tail -30
		echo "pcap_pair: FAIL: net_pair.sh $*"
		fail=1
	fi
}
run pingpong "$srdma" ibv_rc_pingpong -n 50 -s 3000 -c
run --ipv6 pingpong "$srdma" ibv_rc_pingpong -n 50 -s 3000 -c
run bw "$srdma" ib_read_bw -d srdma0 -s 5000 -n 20
((fail)) && exit 1
[ -s "$pcap" ] || { echo "pcap_pair: FAIL: $pcap is empty"; exit 1; }

$py "$here/check_pcap.py" --min 400 "$pcap" || exit 1
$py - "$pcap" <<'PY' || exit 1
import collections, struct, sys
b = open(sys.argv[1], "rb").read()
assert struct.unpack_from("<I", b, 0)[0] == 0xa1b2c3d4, "not our pcap"
seen, ver, off = collections.Counter(), collections.Counter(), 24
while off < len(b):
    incl = struct.unpack_from("<I", b, off + 8)[0]
    f = b[off + 16:off + 16 + incl]
    v = f[14] >> 4
    ver[v] += 1
    if v == 4:
        key = (f[14 + 12:14 + 20], f[14 + 20 + 8:])
    else:
        key = (f[14 + 8:14 + 40], f[14 + 40 + 8:])
    seen[key] += 1
    off += 16 + incl
odd = [k for k, n in seen.items() if n % 2]
print("pcap_pair: %d records, %d datagrams (IPv4 %d, IPv6 %d records), "
      "%d recorded an odd number of times" % (sum(seen.values()), len(seen),
                                          ver[4], ver[6], len(odd)))
sys.exit(1 if odd or not ver[4] or not ver[6] else 0)
PY
echo "pcap_pair: PASS"
