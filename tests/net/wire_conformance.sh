#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# wire_conformance.sh GEN - CTest net.wire_pcap: GEN (net_wire_gen) writes
# a capture of every opcode we speak through the real codec and pcap
# writer; check_pcap.py must find every packet decoded by tshark and every
# ICRC right by scapy (IPv4) or its own zlib check (IPv6). Then the
# checker must catch a flipped ICRC byte, over IPv4 and over IPv6, so a
# pass is not the checker looking away. Last, the other direction: scapy
# builds packets as a foreign peer (rxe, a NIC) sends them, with IPv4
# identifications of its own, and our receiver must accept exactly those
# in lenient mode (SRDMA_NET_ICRC), the softrdma-like ones in strict
# mode, and none once a payload byte is flipped. Exit 77 (skip) without
# tshark or python3-scapy.
set -euo pipefail
gen=$1
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
dir=${SRDMA_DIR:-$(mktemp -d)}
mkdir -p "$dir"
chmod 700 "$dir"
pcap=$dir/every-opcode.pcap

command -v tshark >/dev/null || { echo "SKIP: tshark is not installed"; exit 77; }
$py -c 'import scapy.contrib.roce' 2>/dev/null ||
	{ echo "SKIP: python3-scapy is not installed"; exit 77; }

"$gen" pcap "$pcap"
$py "$here/check_pcap.py" --min 500 "$pcap"

# Flip the first byte of the ICRC of the first frame of IP version $1.
corrupt() {
	$py - "$pcap" "$2" "$1" <<'PY'
import struct, sys
src, dst, ver = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = bytearray(open(src, "rb").read())
off = 24
while off < len(b):
    incl = struct.unpack_from("<I", b, off + 8)[0]
    frame = off + 16
    if b[frame + 14] >> 4 == ver:
        b[frame + incl - 4] ^= 0x01
        break
    off = frame + incl
else:
    sys.exit("no IPv%d frame" % ver)
open(dst, "wb").write(b)
PY
}
for v in 4 6; do
	corrupt $v "$dir/bad$v.pcap"
	if $py "$here/check_pcap.py" "$dir/bad$v.pcap" >"$dir/bad$v.out"; then
		echo "FAIL: a flipped IPv$v ICRC went unnoticed"
		exit 1
	fi
	grep -q "ICRC" "$dir/bad$v.out" ||
		{ cat "$dir/bad$v.out"; echo "FAIL: wrong complaint"; exit 1; }
	echo "ok: a flipped IPv$v ICRC is caught: $(grep -m1 FAIL "$dir/bad$v.out")"
done

# A foreign peer's IPv4 identifications, ICRC'd by scapy alone.
read -r strict other < <($py "$here/scapy_peer_pcap.py" "$dir/peer.pcap")
out=$("$gen" verify "$dir/peer.pcap") || { echo "$out"; echo "FAIL: bad ICRC verdicts"; exit 1; }
echo "$out"
want="$((strict + other)) packets: $strict ok as softrdma sends (strict), $other ok with another IPv4 identification/DF (lenient), 0 bad"
[[ "$out" == *"$want" ]] || { echo "FAIL: want: $want"; exit 1; }
read -r strict other < <($py "$here/scapy_peer_pcap.py" "$dir/peer-bad.pcap" --corrupt)
out=$("$gen" verify "$dir/peer-bad.pcap") || true
echo "$out"
want="$((strict + other)) packets: 0 ok as softrdma sends (strict), 0 ok with another IPv4 identification/DF (lenient), $((strict + other)) bad"
[[ "$out" == *"$want" ]] || { echo "FAIL: want: $want"; exit 1; }
echo "ok: foreign IPv4 identifications accepted (lenient), corruption refused"
