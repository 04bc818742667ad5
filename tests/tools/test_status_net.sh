#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_status_net.sh - `srdma status` of net QPs and ports across two test
# hosts (tests/net/hosts.sh), after a transfer (TAP output).
#
# res_holder runs as server in host 1 and as client in host 2: one RC QP
# each, connected over RoCEv2 (GIDs of the hosts' IPv4 addresses); the
# client SENDs 20 messages of 1000 bytes, the server receives them, and
# both hold their resources. Then `srdma status` in each host must show:
#   - the QP: RC, RTS, VIA net, the peer's QPN and GID, its live PSNs (20
#     packets past those set at connect), 20 sends (client) / 20
#     receives (server);
#   - its net counters: at least 20 packets and 20,000 bytes sent (client)
#     and received (server), ACKs the other way;
#   - the port's endpoint counters, mirrored from process memory: at least
#     20 datagrams sent (client) and received (server);
# in text and in --json (valid JSON, fields checked with python3).
#
# Usage: test_status_net.sh SRDMA_EXE RES_HOLDER_EXE
# Exit: 0 pass, 1 fail, 77 skip (no root for network namespaces).
set -u

SRDMA=${1:?usage: test_status_net.sh SRDMA_EXE RES_HOLDER_EXE}
HOLDER=${2:?usage: test_status_net.sh SRDMA_EXE RES_HOLDER_EXE}
here=$(cd "$(dirname "$0")" && pwd)
H=$here/../net/hosts.sh
PORT=18530
export SRDMA_NET_TAG=stn$$

ntest=0
failed=0
ok() {
	ntest=$((ntest + 1))
	echo "ok $ntest - $*"
}
not_ok() {
	ntest=$((ntest + 1))
	failed=$((failed + 1))
	echo "not ok $ntest - $*"
}
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else not_ok "$desc"; fi
}
diag() {
	sed 's/^/# /'
}

work=$(mktemp -d /tmp/test_status_net.XXXXXX) || exit 1
pids=()
cleanup() {
	local p
	[ -n "${in1:-}" ] && exec {in1}>&-
	[ -n "${in2:-}" ] && exec {in2}>&-
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	"$H" down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

"$H" up 2
rc=$?
[ $rc -eq 77 ] && exit 77
if [ $rc -ne 0 ]; then
	echo "not ok 1 - hosts.sh up 2 (exit $rc)"
	exit 1
fi
addr1=$("$H" addr 1)
gid1=$("$H" run 1 -- "$here/../net/gid_index.sh" "$SRDMA" "$addr1") ||
	{ echo "not ok 1 - host 1 has a GID for $addr1"; exit 1; }
gid2=$("$H" run 2 -- "$here/../net/gid_index.sh" "$SRDMA" "$("$H" addr 2)") ||
	{ echo "not ok 1 - host 2 has a GID for its address"; exit 1; }

mkfifo "$work/in1" "$work/in2"
"$H" run 1 -- "$SRDMA" run -- "$HOLDER" server "$PORT" "$gid1" \
	<"$work/in1" >"$work/out1" 2>&1 &
pids+=($!)
exec {in1}>"$work/in1"
"$H" run 2 -- "$SRDMA" run -- "$HOLDER" client "$addr1" "$PORT" "$gid2" \
	<"$work/in2" >"$work/out2" 2>&1 &
pids+=($!)
exec {in2}>"$work/in2"
for _ in $(seq 300); do
	grep -qx ready "$work/out1" && grep -qx ready "$work/out2" && break
	sleep 0.1
done
if ! grep -qx ready "$work/out1" || ! grep -qx ready "$work/out2"; then
	not_ok "the transfer between the hosts completed"
	diag <"$work/out1"
	diag <"$work/out2"
	echo "1..$ntest"
	exit 1
fi
ok "the transfer between the hosts completed (20 x 1000 B)"
pid1=$(sed -n 's/^pid //p' "$work/out1")
pid2=$(sed -n 's/^pid //p' "$work/out2")
read -r _ _ _ qpn1 _ dest1 _ sq1 _ rq1 < <(grep '^qp ' "$work/out1")
read -r _ _ _ qpn2 _ dest2 _ sq2 _ rq2 < <(grep '^qp ' "$work/out2")

# host I ROLE PID QPN DEST SQ RQ (SQ and RQ: the PSNs set at connect)
host_checks() {
	local i=$1 role=$2 pid=$3 qpn=$4 dest=$5 sq=$6 rq=$7 out json py
	# The endpoint mirror follows the progress thread's wake-ups: what
	# the polling application received inline is mirrored when poll
	# mode ends and the thread wakes (SRDMA_NET_POLL_US), and a loaded
	# machine may get there late: wait until the mirror has every
	# datagram of the transfer.
	local want=rx_dgrams
	[ "$role" = client ] && want=tx_dgrams
	for _ in $(seq 100); do
		json=$("$H" run "$i" -- "$SRDMA" status --json)
		grep -Eq "\"$want\": ([2-9][0-9]|[0-9]{3,})" <<<"$json" && break
		sleep 0.1
	done
	out=$("$H" run "$i" -- "$SRDMA" status)
	check "host $i ($role): QP $qpn RC RTS via net, peer $dest" \
		grep -Eq "^ *[0-9]+ +$pid +$qpn +RC +RTS +1 +net +$dest gid ::ffff:198\.18\.[0-9.]+ +0x[0-9a-f]{6} +0x[0-9a-f]{6} " \
		<<<"$out"
	if [ "$failed" -ne 0 ]; then diag <<<"$out"; fi
	check "host $i ($role): the net QP table shows it" \
		grep -Eq "^ *[0-9]+ +$pid +$qpn +RC +RTS +net +$dest " <<<"$out"
	check "host $i ($role): the port's endpoint counters are shown" \
		grep -q "GSO SEGS" <<<"$out"
	check "host $i ($role): every mirrored endpoint counter has a column" \
		grep -Eq "RX LOCAL .*POLL HANDOFFS +LONE ACKS +ICRC OTHER ID" \
		<<<"$out"
	check "host $i ($role): --json is valid JSON" \
		bash -c 'python3 -m json.tool >/dev/null <<<"$0"' "$json"
	printf '%s\n' "$json" >"$work/status$i.json"
	py=$(python3 - "$role" "$pid" "$work/status$i.json" 2>&1 <<'PY'
import json, sys
role, pid, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = json.load(open(path))
qp = [q for q in d["qps"] if q["pid"] == pid]
assert len(qp) == 1, qp
qp = qp[0]
assert qp["type"] == "RC" and qp["state"] == "RTS" and qp["via"] == "net", qp
assert qp["dest_gid"].startswith("::ffff:198.18."), qp
nq = [q for q in d["net_qps"] if q["pid"] == pid][0]
ep = [e for e in d["endpoints"] if e["pid"] == pid][0]
for k in ("rx_dgrams", "tx_dgrams", "tx_bytes", "tx_gso_segs",
          "rx_gro_segs", "poll_handoffs", "wakeups", "drops",
          "acks_delayed", "acks_piggybacked", "lone_acks", "rx_local",
          "icrc_other_id"):
    assert k in ep, (k, ep)
# Each 1000-byte SEND is one packet at MTU 1024: the PSNs moved by 20.
if role == "client":
    assert qp["sq_psn"] == 0x200000 + 20, qp
    assert qp["sends"] == 20, qp
    assert nq["tx_pkts"] >= 20 and nq["tx_bytes"] >= 20000, nq
    assert nq["rx_pkts"] >= 1, nq
    assert ep["tx_dgrams"] >= 20 and ep["rx_dgrams"] >= 1, ep
else:
    assert qp["rq_psn"] == 0x200000 + 20, qp
    assert qp["recvs"] == 20, qp
    assert nq["rx_pkts"] >= 20 and nq["rx_bytes"] >= 20000, nq
    assert nq["tx_pkts"] >= 1, nq
    assert ep["rx_dgrams"] >= 20 and ep["tx_dgrams"] >= 1, ep
print("ok", "qp", {k: nq[k] for k in ("tx_pkts", "tx_bytes", "rx_pkts",
      "rx_bytes", "retransmits", "acks_delayed")},
      "port", {k: ep[k] for k in ("tx_dgrams", "rx_dgrams", "wakeups",
      "tx_gso_segs", "rx_gro_segs", "poll_handoffs")})
PY
)
	if [[ $py == ok* ]]; then
		ok "host $i ($role): --json counters after the transfer"
		echo "# $py"
	else
		not_ok "host $i ($role): --json counters after the transfer"
		diag <<<"$py"
		diag <<<"$out"
	fi
}

host_checks 1 server "$pid1" "$qpn1" "$dest1" "$sq1" "$rq1"
host_checks 2 client "$pid2" "$qpn2" "$dest2" "$sq2" "$rq2"

exec {in1}>&- {in2}>&-
in1='' in2=''
for p in "${pids[@]}"; do
	wait "$p"
	check "res_holder (job $p) released everything cleanly" test $? -eq 0
done
pids=()

echo "1..$ntest"
[ "$failed" -eq 0 ]
