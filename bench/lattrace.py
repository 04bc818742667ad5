#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""lattrace.py - merge the latency traces (src/util/lattrace.h) of the
processes of one run into one timeline and print, for every step from one
event to the next (either process), how often it happened and its median
and 25/75th percentile in nanoseconds: where a one-way trip's time goes.

Usage: lattrace.py [--ghz F] [--own] DIR   (DIR holds <pid>.lt files; F:
the TSC frequency in GHz, default from /proc/cpuinfo's "cpu MHz")
--own: steps within each process only (from one event of a process to its
next one, whatever the other process did between): what each side's own
work and system calls cost, without the other side's events cutting them.
Only steps seen at least P% (--pct P, default 5) as often as the most
frequent one are shown.
"""
import collections
import glob
import os
import struct
import sys

EV = {1: "POST", 2: "TX0", 3: "TX1", 4: "PEND", 5: "RX1", 6: "DRAIN",
      7: "CQHIT", 8: "THREAD", 9: "RX0", 10: "PKT", 11: "ICRC", 12: "QPIN",
      13: "NRPOST", 14: "FLUSH", 15: "SRAW", 16: "YIELD", 17: "YRET",
      18: "PMOFF", 19: "PMON", 20: "LONE", 21: "NAP", 22: "ARM"}


def ghz():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) / 1000
    return 1.0


def main():
    args = sys.argv[1:]
    g = None
    own = False
    pct = 5.0
    while args and args[0] in ("--ghz", "--own", "--pct"):
        if args[0] == "--own":
            own = True
            args = args[1:]
            continue
        if args[0] == "--pct":
            pct = float(args[1])
        else:
            g = float(args[1])
        args = args[2:]
    g = g or ghz()
    recs = []
    files = sorted(glob.glob(os.path.join(args[0], "*.lt")))
    for i, fn in enumerate(files):
        data = open(fn, "rb").read()
        for tsc, ev, tid in struct.iter_unpack("<QII", data):
            recs.append((tsc, "P%d.%s" % (i, EV.get(ev, ev)), tid))
    recs.sort()
    steps = collections.defaultdict(list)
    if own:
        last = {}
        for r in recs:
            p = r[1].split(".")[0]
            if p in last:
                a = last[p]
                steps[(a[1], r[1])].append((r[0] - a[0]) / g)
            last[p] = r
    else:
        for a, b in zip(recs, recs[1:]):
            steps[(a[1], b[1])].append((b[0] - a[0]) / g)
    top = max(len(v) for v in steps.values()) if steps else 0
    print("%d events from %d processes; step: count, median [p25, p75] ns"
          % (len(recs), len(files)))
    for k, v in sorted(steps.items(), key=lambda kv: -len(kv[1])):
        if len(v) < top * pct / 100:
            continue
        v.sort()
        n = len(v)
        print("%-12s -> %-12s %7d %9.0f [%7.0f, %7.0f]"
              % (k[0], k[1], n, v[n // 2], v[n // 4], v[3 * n // 4]))


main()
