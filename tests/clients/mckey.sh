#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# mckey.sh - Debian's mckey (rdmacm-utils: UD multicast through
# rdma_join_multicast) against softrdma: receivers join a group, post
# their receives and wait for COUNT messages; a sender joins the same
# group and sends COUNT messages to it (DQPN 0xffffff).
#
# Usage: mckey.sh [--net] [--ipv6] [--send-flag F] [--timeout SECS] SRDMA_EXE
#   default  one host: two receivers (one of them with two ids, -c 2)
#            and a sender, all bound to 127.0.0.1, in a private network
#            namespace with only lo up (where unshare(1) is permitted;
#            root), so a RoCE port (SRDMA_LINK_LAYER=eth) sends nothing
#            to the machine's real network
#   --net    two test hosts (tests/net/hosts.sh): two receivers in host
#            1, a receiver and the sender in host 2. The sender's copies
#            reach host 2's receiver through the host transport and host
#            1's over the wire (RoCEv2 to the group's IP address).
#   --ipv6   with --net: an IPv6 group (ff05::...) and the hosts' IPv6
#            addresses
#   --send-flag F  give the sender mckey's flag F too: -o (join as a
#            send-only member: its QP is not attached) or -l (its QP is
#            created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
#
# mckey prints "mckey: joined dgid: ..." when its join completed, sleeps
# 3 s (for an SM), then the sender sends and each receiver polls until it
# has COUNT completions. Receivers are started first and the sender only
# once every receiver has joined. Pass: every process exits 0 and prints
# "data transfers complete" and "return status 0" (a receiver that misses
# a message never prints it: it is killed at the end of SECS).
#
# With --net, tcpdump on host 1's interface checks the wire: exactly
# COUNT RoCEv2 datagrams from the sender's address to the group's, UDP
# 4791 both ways, UD SEND with immediate, DQPN 0xffffff, the Q_Key the
# CM announced; and tests/net/check_pcap.py judges each datagram's ICRC
# (scapy) and its decoding by Wireshark's InfiniBand dissector.
#
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (mckey not installed; --net
# without root).
set -u

here=$(cd "$(dirname "$0")" && pwd)
H=$here/../net/hosts.sh
timeout=60
net=
MCKEY_V6=
send_flag=
COUNT=10
SIZE=512

die()
{
	echo "mckey.sh: $*" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--net) net=1; shift ;;
	--ipv6) MCKEY_V6=1; shift ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--send-flag) send_flag=${2:?}; shift 2 ;;
	--in-namespace) innet=1; shift ;;	# (internal: re-executed)
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || die "usage: $0 [--net] [--ipv6] [--timeout SECS] SRDMA_EXE"
srdma=$1
command -v mckey >/dev/null || { echo "mckey.sh: SKIP: mckey not installed"; exit 77; }

# One host: into a private network namespace with only lo, if we may.
if [ -z "$net" ] && [ -z "${innet:-}" ]; then
	if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
	   unshare --net true 2>/dev/null; then
		exec unshare --net bash -c 'ip link set lo up && exec "$@"' \
			mckey.sh bash "$0" --in-namespace --timeout "$timeout" \
			${send_flag:+--send-flag "$send_flag"} "$srdma"
	fi
	echo "mckey.sh: no private network namespace; using this one"
fi

work=$(mktemp -d)
pids=()
cleanup()
{
	local p
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# start NAME HOST CMD...: run one mckey in the background (HOST empty:
# here), output to $work/NAME.
start()
{
	local name=$1 host=$2
	shift 2
	if [ -n "$host" ]; then
		"$H" run "$host" -- "$srdma" run -- stdbuf -oL "$@" \
			>"$work/$name" 2>&1 &
	else
		"$srdma" run -- stdbuf -oL "$@" >"$work/$name" 2>&1 &
	fi
	pids+=($!)
	names+=("$name")
}

# wait_joined NAME...: until each printed its join (or exited).
wait_joined()
{
	local n deadline=$((SECONDS + 20))
	for n in "$@"; do
		until grep -q "mckey: joined dgid" "$work/$n"; do
			if [ $SECONDS -ge $deadline ]; then
				echo "mckey.sh: $n did not join within 20 s"
				return 1
			fi
			sleep 0.1
		done
	done
}

# check_wire PCAP GROUP SENDER: the capture holds exactly COUNT RoCEv2
# datagrams, each from SENDER:4791 to GROUP:4791, BTH opcode UD
# SEND_ONLY_WITH_IMMEDIATE (0x65), DQPN 0xffffff, DETH Q_Key RDMA_UDP_QKEY
# (0x01234567), payload SIZE bytes; and nothing else on 4791.
check_wire()
{
	python3 - "$@" "$COUNT" "$SIZE" <<'PY'
import ipaddress, struct, sys
path, group, sender, count, size = sys.argv[1:6]
count, size = int(count), int(size)
group, sender = ipaddress.ip_address(group), ipaddress.ip_address(sender)
data = open(path, 'rb').read()
magic = struct.unpack('<I', data[:4])[0]
end = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
off, n, bad = 24, 0, None
while off + 16 <= len(data):
    _, _, incl, _ = struct.unpack(end + 'IIII', data[off:off + 16])
    f = data[off + 16:off + 16 + incl]
    off += 16 + incl
    et = struct.unpack('>H', f[12:14])[0]
    if et == 0x0800:
        ihl = (f[14] & 15) * 4
        src = ipaddress.ip_address(f[26:30]); dst = ipaddress.ip_address(f[30:34])
        udp = 14 + ihl
    elif et == 0x86dd:
        src = ipaddress.ip_address(f[22:38]); dst = ipaddress.ip_address(f[38:54])
        udp = 54
    else:
        continue
    sport, dport, ulen = struct.unpack('>HHH', f[udp:udp + 6])
    bth = f[udp + 8:]
    n += 1
    why = None
    if (src, dst, sport, dport) != (sender, group, 4791, 4791):
        why = 'from %s:%d to %s:%d' % (src, sport, dst, dport)
    elif bth[0] != 0x65:
        why = 'BTH opcode %#x' % bth[0]
    elif bth[5:8].hex() != 'ffffff':
        why = 'DQPN %s' % bth[5:8].hex()
    elif struct.unpack('>I', bth[12:16])[0] != 0x01234567:
        why = 'Q_Key %#x' % struct.unpack('>I', bth[12:16])[0]
    elif ulen != 8 + 12 + 8 + 4 + size + 4:
        why = 'UDP length %d' % ulen
    if why and not bad:
        bad = 'datagram %d: %s' % (n, why)
if bad or n != count:
    print('mckey.sh: wire: %s' % (bad or '%d datagrams, want %d' % (n, count)))
    sys.exit(1)
print('mckey.sh: wire: %d RoCEv2 datagrams %s -> %s:4791, DQPN 0xffffff' % (n, sender, group))
PY
}

run_test()
{
	local group a1 a2 ok=0 i deadline
	names=()
	if [ -n "$net" ]; then
		if [ -n "$MCKEY_V6" ]; then
			group=ff05::5352:4d41
			a1=$("$H" addr 1 -6) a2=$("$H" addr 2 -6)
		else
			group=239.83.77.21
			a1=$("$H" addr 1) a2=$("$H" addr 2)
		fi
		start recv1 1 mckey -m "$group" -b "$a1" -C $COUNT -S $SIZE
		start recv2 1 mckey -m "$group" -b "$a1" -C $COUNT -S $SIZE -c 2
		start recv3 2 mckey -m "$group" -b "$a2" -C $COUNT -S $SIZE
		wait_joined recv1 recv2 recv3 || ok=1
		# The wire, seen from host 1 (software segmentation off, so
		# the capture sees datagrams as they travel).
		"$H" run 2 -- ethtool -K eth0 tx-udp-segmentation off \
			>/dev/null 2>&1
		: >"$work/tcpdump.log"
		"$H" run 1 -- tcpdump -i eth0 --immediate-mode -U -s 2048 \
			-w "$work/wire.pcap" udp port 4791 \
			2>"$work/tcpdump.log" &
		dump=$!
		for ((i = 0; i < 100; i++)); do
			grep -q 'listening on' "$work/tcpdump.log" && break
			sleep 0.05
		done
		start send 2 mckey -m "$group" -b "$a2" -C $COUNT -S $SIZE -s \
			$send_flag
	else
		group=239.83.77.20
		start recv1 "" mckey -m $group -b 127.0.0.1 -C $COUNT -S $SIZE
		start recv2 "" mckey -m $group -b 127.0.0.1 -C $COUNT -S $SIZE \
			-c 2
		wait_joined recv1 recv2 || ok=1
		start send "" mckey -m $group -b 127.0.0.1 -C $COUNT -S $SIZE -s \
			$send_flag
	fi
	# Every process must end within the budget.
	deadline=$((SECONDS + timeout))
	for i in "${!pids[@]}"; do
		while kill -0 "${pids[$i]}" 2>/dev/null; do
			if [ $SECONDS -ge $deadline ]; then
				echo "mckey.sh: ${names[$i]} still running after ${timeout} s: killed"
				kill -9 "${pids[$i]}"
				ok=1
				break
			fi
			sleep 0.2
		done
		if ! wait "${pids[$i]}"; then
			echo "mckey.sh: ${names[$i]} exited non-zero"
			ok=1
		fi
	done
	if [ -n "$net" ]; then
		sleep 0.3
		kill -INT "$dump" 2>/dev/null
		wait "$dump" 2>/dev/null
		check_wire "$work/wire.pcap" "$group" "$a2" || ok=1
		# ICRC by scapy and Wireshark's dissector (77: not installed).
		python3 "$(dirname "$H")/check_pcap.py" --min "$COUNT" \
			"$work/wire.pcap" >"$work/check_pcap.log" 2>&1
		case $? in
		0|77) tail -1 "$work/check_pcap.log" ;;
		*) cat "$work/check_pcap.log"; ok=1 ;;
		esac
	fi
	for i in "${names[@]}"; do
		echo "---- $i"
		cat "$work/$i"
		if ! grep -qx "data transfers complete" "$work/$i" ||
		   ! grep -qx "return status 0" "$work/$i"; then
			echo "mckey.sh: $i: no \"data transfers complete\" / \"return status 0\""
			ok=1
		fi
	done
	return $ok
}

if [ -n "$net" ]; then
	export -f start wait_joined check_wire run_test
	export srdma work H COUNT SIZE net MCKEY_V6 timeout send_flag
	"$H" with 2 --tag "mck$$" -- bash -c 'pids=(); names=(); run_test'
	st=$?
else
	run_test
	st=$?
fi
[ $st -eq 0 ] && echo "mckey.sh: PASS" || echo "mckey.sh: FAIL"
exit $st
