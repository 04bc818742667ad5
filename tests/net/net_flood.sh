#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_flood.sh - hostile datagrams while a transfer runs (issue 10, item
# 8): ibv_rc_pingpong -c between two test hosts while host 2 floods host
# 1's UDP port 4791 with random datagrams: random bytes and lengths;
# well-formed BTHs with random opcodes and PSNs aimed at the server's own
# QPN (parsed from its output) and at random QPNs, with wrong ICRCs;
# datagrams whose DQPN names another context. The transfer must complete
# with its data checked (-c), the server must not crash, and the server's
# endpoint must have counted drops (SRDMA_LOG=debug explains every drop:
# "dropped a packet").
#
# Usage: net_flood.sh SRDMA_EXE
# Exit: 0 pass, 1 fail, 77 skip (no root, no ibv_rc_pingpong).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
srdma=${1:?usage: net_flood.sh SRDMA_EXE}

if [ "${2:-}" != inner ]; then
	command -v ibv_rc_pingpong >/dev/null ||
		{ echo "skipped: ibv_rc_pingpong not installed"; exit 77; }
	exec bash "$H" with 2 --tag fl$$ -- bash "$0" "$srdma" inner
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
A1=$("$H" addr 1)
PORT=18517
ITERS=300

SRDMA_LOG=debug timeout 100 "$H" run 1 -- "$srdma" run -- stdbuf -oL \
	ibv_rc_pingpong -g 1 -p $PORT -n $ITERS -s 4096 -c \
	>"$out/srv" 2>"$out/srv.err" &
srv=$!
for _ in $(seq 100); do
	[ -n "$("$H" run 1 -- ss -Hltn "sport = :$PORT" 2>/dev/null)" ] && break
	sleep 0.1
done

# The flooder runs until told to stop (a file), from host 2.
cat >"$out/flood.py" <<'EOF'
import os, random, re, socket, sys, time
dst, stop, srvout = sys.argv[1], sys.argv[2], sys.argv[3]
rnd = random.Random(int(os.environ.get("SEED", "1")))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
qpn, sent = None, 0
while not os.path.exists(stop):
    if qpn is None:
        m = re.search(r"local address:.*QPN (0x[0-9a-f]+)",
                      open(srvout, errors="replace").read())
        qpn = int(m.group(1), 16) if m else None
    for _ in range(100):
        k = rnd.randrange(4)
        if k == 0:      # random bytes, random length (also < a BTH)
            b = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(40)))
        else:
            op = rnd.choice([0x00, 0x01, 0x02, 0x04, 0x06, 0x0a, 0x0c,
                             0x11, 0x12, 0x13, 0x14, 0x10, 0x64, 0xff])
            d = qpn if (k == 1 and qpn) else rnd.getrandbits(24)
            b1 = rnd.getrandbits(8) if rnd.randrange(2) else 0
            bth = bytes([op, b1, 0xff, 0xff, 0]) + \
                d.to_bytes(3, "big") + rnd.getrandbits(32).to_bytes(4, "big")
            b = bth + bytes(rnd.getrandbits(8)
                            for _ in range(rnd.choice([0, 4, 16, 28, 300])))
        try:
            s.sendto(b, (dst, 4791))
            sent += 1
        except OSError:
            pass
    time.sleep(0.002)
print("flood: %d datagrams, server QPN %s" % (sent, hex(qpn) if qpn else "?"))
EOF
"$H" run 2 -- python3 "$out/flood.py" "$A1" "$out/stop" "$out/srv" \
	>"$out/flood" 2>&1 &
flood=$!
sleep 0.5

timeout 90 "$H" run 2 -- "$srdma" run -- \
	ibv_rc_pingpong -g 1 -p $PORT -n $ITERS -s 4096 -c "$A1" \
	>"$out/cli" 2>&1
cli_rc=$?
wait $srv
srv_rc=$?
touch "$out/stop"
wait $flood

drops=$(grep -c 'dropped a packet' "$out/srv.err")
echo "client exit $cli_rc, server exit $srv_rc; $(cat "$out/flood")"
echo "server drops explained: $drops; by cause:"
sed -n 's/.*dropped a packet.*(\([a-z]*\)).*/\1/p' "$out/srv.err" |
	sort | uniq -c | sort -rn
fail=
[ $cli_rc -eq 0 ] && [ $srv_rc -eq 0 ] || fail="a side failed"
for f in "$out/srv" "$out/cli"; do
	grep -q "$ITERS iters in" "$f" || fail="no '$ITERS iters' line in ${f##*/}"
	! grep -q 'invalid data in page' "$f" || fail="data corrupted (${f##*/})"
done
[ "$drops" -gt 0 ] || fail="the server counted no drop"
grep -q 'dropped a packet.*(icrc)' "$out/srv.err" ||
	fail="no datagram aimed at the server's QP reached its ICRC check"
if [ -n "$fail" ]; then
	echo "net_flood: FAIL: $fail"
	for f in srv cli; do echo "----- $f"; cat "$out/$f"; done
	echo "----- server log (tail)"; tail -20 "$out/srv.err"
	exit 1
fi
echo "net_flood: PASS"
