#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""fault_budget.py - may a net.fault_* test fail by chance alone?

Usage: fault_budget.py TAG|SPEC|PINGPONGS|BW_MESSAGES|ATOMICS ...
(the list net.cmake registers its net.fault_* tests from).

Under SRDMA_NET_FAULT both sides of a pair run SPEC, so a datagram meets
the sender's transmit faults and then the receiver's receive faults: it
is lost with p = 1 - (1 - tx)(1 - rx). A retransmission round of an RC
request succeeds only when the request and its ACK both arrive, so it
fails with q = 1 - (1 - p)^2, and a request fails for good
(IBV_WC_RETRY_EXC_ERR, as on hardware) when its first transmission and
its retry_cnt = 7 retries (what ibv_rc_pingpong and perftest set) all
fail: q^8. A run moves M messages (2 per ping-pong, one per bw message
or atomic); M * q^8 estimates the chance that it fails although nothing
is wrong. With loss=10% on both sides (p = 19%, q = 34%) that was 2e-4
per message: ibv_rc_pingpong -n 50 failed in about 1 CI run of 100,
with 8 round trips in a row each losing its request or its ACK.

Each test must stay below BUDGET; prints one line per test and exits 1
if one does not (the spec must then lose less, or the test move less).
"""
import sys

BUDGET = 1e-3
RETRY_CNT = 7


def stage_losses(spec):
    """(tx, rx) loss probabilities of SPEC (netfault.h's syntax)."""
    loss = [0.0, 0.0]
    for item in spec.replace(" ", "").split(","):
        if not item:
            continue
        key, _, val = item.partition("=")
        dirs = (0, 1)
        if key.lower().startswith("tx."):
            dirs, key = (0,), key[3:]
        elif key.lower().startswith("rx."):
            dirs, key = (1,), key[3:]
        if key.lower() != "loss":
            continue
        v = float(val[:-1]) / 100 if val.endswith("%") else float(val)
        for d in dirs:
            loss[d] = v
    return loss


def main(args):
    if not args:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    bad = 0
    for a in args:
        tag, spec, n_pp, n_bw, n_at = a.split("|")
        tx, rx = stage_losses(spec)
        p = 1 - (1 - tx) * (1 - rx)
        q = 1 - (1 - p) ** 2
        m = max(2 * int(n_pp), int(n_bw), int(n_at))
        risk = m * q ** (RETRY_CNT + 1)
        ok = risk < BUDGET
        bad += not ok
        print(f"fault_budget: {tag} ({spec}): datagram lost {p:.2%}, "
              f"round trip {q:.2%}, {m} messages: chance of a run "
              f"failing by chance {risk:.1e}"
              f"{'' if ok else f' > {BUDGET:g}: FAIL'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
