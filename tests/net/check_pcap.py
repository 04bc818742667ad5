#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""check_pcap.py - judge a capture of RoCEv2 traffic with tools that share
no code with softrdma.

For every UDP datagram to the RoCEv2 port (4791) in a pcap or pcapng file:

  (a) the ICRC trailer must equal what scapy's RoCE layer
      (scapy.contrib.roce BTH.compute_icrc) computes. scapy 2.5.0 (Debian
      12) does IPv4 only; IPv6 packets are then checked by this script's
      own few lines over zlib.crc32 (rxe's algorithm, roce-wire.md 1.5.1)
      and counted apart, so the summary says which judge saw what.
      The datagram must also be a whole number of 4-byte words with BTH
      TVer 0.
  (b) tshark (Wireshark's InfiniBand dissector) must decode it as
      InfiniBand over UDP (RRoCE) with no malformed-packet flag and no
      expert info of severity warning or error.

Wireshark also offers SEND payloads to heuristic upper-layer dissectors
(RPC-over-RDMA, SMB Direct, EoIB, ...), which throw "malformed" on
application bytes that merely look like their headers (a 4-byte ping-pong
payload does). Those dissectors judge the application's data, not the
RoCE layer, so they are disabled for the check.

Exit status: 0 all good, 1 a packet failed (each failure is listed), 2
usage, 77 tshark or scapy missing (the caller's skip).

Usage: check_pcap.py [--port N] [--min N] [--allow-warn] FILE
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import zlib

SEV_WARN = 0x00600000
SEV_ERROR = 0x00800000


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def icrc_ipv6(ip6, udp, ib):
    """rxe's ICRC over IPv6: 8 x 0xff, the IPv6 header with traffic
    class, flow label and hop limit masked, UDP with its checksum masked,
    the BTH with byte 4 masked, then the rest (no ICRC)."""
    ip = bytearray(ip6[:40])
    ip[0] |= 0x0F
    ip[1] = ip[2] = ip[3] = 0xFF
    ip[7] = 0xFF
    u = bytearray(udp[:8])
    u[6] = u[7] = 0xFF
    b = bytearray(ib)
    b[4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(u) + bytes(b))
    return struct.pack("<I", crc & 0xFFFFFFFF)


def check_icrc(path, port, limit):
    """Return (rows, failures): rows maps frame number to 'v4'/'v6'."""
    try:
        from scapy.all import PcapReader, IP, IPv6, UDP
        from scapy.contrib.roce import BTH
        import scapy.error
    except ImportError as e:
        skip("python3-scapy is not installed (%s)" % e)
    import logging
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

    rows, fails = {}, []
    counts = {"v4_ok": 0, "v6_ok": 0, "v6_scapy": 0}
    with PcapReader(path) as rd:
        for num, pkt in enumerate(rd, start=1):
            if UDP not in pkt or pkt[UDP].dport != port:
                continue
            if limit and len(rows) >= limit:
                break
            udp = pkt[UDP]
            data = bytes(udp.payload)
            if len(data) < 16:
                rows[num] = "short"
                fails.append("frame %d: %d bytes after UDP, shorter than "
                             "BTH + ICRC" % (num, len(data)))
                continue
            trailer = data[-4:]
            # IBTA: a packet is a whole number of 4-byte words; TVer 0.
            if len(data) % 4:
                fails.append("frame %d: %d bytes after UDP, not a multiple "
                             "of 4" % (num, len(data)))
            if data[1] & 0x0F:
                fails.append("frame %d: BTH TVer %d" % (num, data[1] & 0x0F))
            if BTH not in pkt:
                rows[num] = "?"
                fails.append("frame %d: scapy did not decode a BTH" % num)
                continue
            if IP in pkt and pkt[IP].underlayer is not None \
                    and udp.underlayer is pkt[IP]:
                rows[num] = "v4"
                want = pkt[BTH].compute_icrc(None)
                if want == trailer:
                    counts["v4_ok"] += 1
                else:
                    fails.append("frame %d: ICRC %s on the wire, scapy "
                                 "computes %s" % (num, trailer.hex(),
                                                  want.hex()))
            elif IPv6 in pkt:
                rows[num] = "v6"
                # A scapy with IPv6 support answers itself; 2.5.0 returns
                # zeros (and a warning) for anything but IPv4.
                want = pkt[BTH].compute_icrc(None)
                if want != b"\0\0\0\0" or trailer == b"\0\0\0\0":
                    counts["v6_scapy"] += 1
                else:
                    raw = bytes(pkt[IPv6])
                    want = icrc_ipv6(raw[:40], bytes(udp)[:8], data[:-4])
                if want == trailer:
                    counts["v6_ok"] += 1
                else:
                    fails.append("frame %d: IPv6 ICRC %s on the wire, "
                                 "computed %s" % (num, trailer.hex(),
                                                  want.hex()))
            else:
                rows[num] = "?"
                fails.append("frame %d: neither IPv4 nor IPv6" % num)
    return rows, fails, counts


def tshark_heuristics(tshark):
    """The heuristic dissectors tshark offers InfiniBand payloads to."""
    out = subprocess.run([tshark, "-G", "heuristic-decodes"],
                         capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) >= 2 and f[0] == "infiniband.payload":
            names.append(f[1])
    return names


def check_tshark(path, port, rows, allow_warn):
    tshark = shutil.which("tshark")
    if not tshark:
        skip("tshark is not installed")
    cmd = [tshark, "-n", "-r", path,
           "-o", "infiniband.rroce.port:%d" % port]
    for h in tshark_heuristics(tshark):
        # Each is a protocol of its own, except the Ethernet-over-IB
        # guess, which belongs to "ethertype" (needed for Ethernet itself)
        # and goes by its heuristic's name.
        if h == "ethertype":
            cmd += ["--disable-heuristic", "eth_over_ib"]
        else:
            cmd += ["--disable-protocol", h]
    cmd += ["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a",
            "-E", "aggregator=|",
            "-e", "frame.number", "-e", "frame.protocols",
            "-e", "udp.dstport", "-e", "infiniband.bth.opcode",
            "-e", "_ws.malformed", "-e", "_ws.expert.severity",
            "-e", "_ws.expert.message"]
    env = dict(os.environ)
    env.setdefault("HOME", "/tmp")  # tshark wants a profile directory
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        return 0, 0, ["tshark failed (%d): %s" % (res.returncode,
                                                   res.stderr.strip())]
    decoded, malformed, fails, seen = 0, 0, [], set()
    for line in res.stdout.splitlines():
        f = line.split("\t") + [""] * 7
        num = int(f[0])
        if num not in rows:
            continue
        seen.add(num)
        protos = f[1].split(":")
        if "infiniband" not in protos or f[3] == "":
            fails.append("frame %d: tshark did not decode InfiniBand "
                         "(protocols %s)" % (num, f[1]))
        else:
            decoded += 1
        if f[4]:
            malformed += 1
            fails.append("frame %d: tshark: malformed (%s)" % (num, f[4]))
        sevs = [int(s, 0) for s in f[5].split("|") if s]
        msgs = f[6].split("|")
        for i, s in enumerate(sevs):
            if s >= SEV_ERROR or (s >= SEV_WARN and not allow_warn):
                fails.append("frame %d: tshark expert %s: %s" % (
                    num, "error" if s >= SEV_ERROR else "warning",
                    msgs[i] if i < len(msgs) else "?"))
    for num in sorted(set(rows) - seen):
        fails.append("frame %d: not in tshark's output" % num)
    return decoded, malformed, fails


def reexec_with_system_python():
    """Debian's python3-scapy lives in the system interpreter; a python3
    found first on PATH (pyenv, a venv) may not have it. Run again with
    /usr/bin/python3 then."""
    try:
        import scapy  # noqa: F401
        return
    except ImportError:
        pass
    sysp = "/usr/bin/python3"
    if os.path.realpath(sys.executable) != os.path.realpath(sysp) and \
            os.path.exists(sysp) and not os.environ.get("CHECK_PCAP_REEXEC"):
        os.environ["CHECK_PCAP_REEXEC"] = "1"
        os.execv(sysp, [sysp, os.path.abspath(__file__)] + sys.argv[1:])


def main():
    reexec_with_system_python()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--port", type=int, default=4791)
    ap.add_argument("--min", type=int, default=1,
                    help="fail with fewer RoCEv2 packets (default 1)")
    ap.add_argument("--limit", type=int, default=0,
                    help="check only the first N RoCEv2 packets")
    ap.add_argument("--allow-warn", action="store_true",
                    help="do not fail on tshark expert warnings")
    a = ap.parse_args()
    if not os.path.exists(a.file):
        print("%s: no such file" % a.file)
        return 2
    if not shutil.which("tshark"):
        skip("tshark is not installed")

    rows, fails, c = check_icrc(a.file, a.port, a.limit)
    decoded, malformed, tfails = check_tshark(a.file, a.port, rows,
                                              a.allow_warn)
    fails += tfails
    n = len(rows)
    v6 = sum(1 for v in rows.values() if v == "v6")
    if n < a.min:
        fails.append("only %d RoCEv2 packets (want at least %d)" % (n, a.min))
    for f in fails[:50]:
        print("FAIL " + f)
    if len(fails) > 50:
        print("FAIL ... and %d more" % (len(fails) - 50))
    print("%d packets, %d ICRC ok by scapy, %d decoded by tshark, "
          "%d malformed" % (n, c["v4_ok"] + c["v6_scapy"], decoded,
                            malformed))
    if v6:
        print("IPv6: %d packets, %d ICRC ok (%d by scapy, %d by this "
              "script's zlib check: scapy %s has no IPv6 ICRC)" % (
                  v6, c["v6_ok"], c["v6_scapy"],
                  c["v6_ok"] - c["v6_scapy"], scapy_version()))
    return 1 if fails else 0


def scapy_version():
    try:
        import scapy
        return scapy.__version__
    except ImportError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
