#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""scapy_peer_pcap.py FILE [--corrupt] - a capture of RoCEv2 packets as a
peer other than softrdma sends them, built and ICRC'd by scapy's RoCE
layer alone: IPv4 with identifications of its own choosing (as rxe's
hashed ones), DF set or not, TTL and TOS as routers leave them, random
source ports and payloads. One packet in ten carries identification 0
with DF, as softrdma sends. --corrupt flips one payload byte of every
packet after its ICRC was computed.

Prints "STRICT OTHER": how many packets a softrdma receiver should find
right as softrdma sends (strict) and how many only for another
identification or DF (lenient). tests/net/wire_conformance.sh compares
that with `net_wire_gen verify FILE`.
"""
import logging
import random
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import Ether, IP, UDP, Raw, wrpcap  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402


def main():
    out = sys.argv[1]
    corrupt = "--corrupt" in sys.argv[2:]
    rnd = random.Random(4791)
    pkts, strict, other = [], 0, 0
    for i in range(200):
        ident = 0 if i % 10 == 0 else rnd.randrange(65536)
        df = i % 3 != 1
        payload = bytes(rnd.randrange(256)
                        for _ in range(4 * rnd.randrange(1, 300)))
        p = (Ether(src="02:00:c6:12:00:01", dst="02:00:c6:12:00:02") /
             IP(src="198.18.0.1", dst="198.18.0.2", id=ident,
                flags="DF" if df else 0, ttl=rnd.randrange(1, 255),
                tos=rnd.randrange(256)) /
             UDP(sport=rnd.randrange(0xC000, 0x10000), dport=4791,
                 chksum=0) /
             BTH(opcode=4, dqpn=0x11 + i, psn=i, ackreq=1) / Raw(payload))
        raw = bytearray(bytes(p))  # scapy computes the ICRC here
        if corrupt:
            raw[14 + 20 + 8 + 12 + rnd.randrange(len(payload))] ^= \
                1 << rnd.randrange(8)
        pkts.append(Ether(bytes(raw)))
        if ident == 0 and df:
            strict += 1
        else:
            other += 1
    wrpcap(out, pkts)
    print(strict, other)


if __name__ == "__main__":
    main()
