#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# test_hosts.sh - self-test of hosts.sh (CTest net.hosts).
#
# 1. Three hosts (bridge): each pings the two others, IPv4 and IPv6; each
#    has its own 0700 SRDMA_DIR, SRDMA_LINK_LAYER=eth under `run`, and no
#    route beyond its own subnets (no default route, 192.0.2.1 and
#    2001:db8::1 unreachable).
# 2. Two hosts (veth pair) at MTU 9000: an 8972-byte ping with "don't
#    fragment" goes through, so jumbo frames are real.
# 3. `down` leaves nothing: no srdma-TAG-* in `ip netns list`, no state
#    directory. `gc` removes the hosts of a caller that is gone.
# Exit: 0 pass, 1 fail, 77 skip (no root).
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
tag=hst$$
export SRDMA_NET_TAG=$tag
fails=0

fail()
{
	echo "test_hosts: FAIL: $*"
	fails=$((fails + 1))
}

cleanup()
{
	"$H" down >/dev/null 2>&1
	"$H" down --tag "${tag}g" >/dev/null 2>&1
}
trap cleanup EXIT

"$H" up 3
rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || { echo "test_hosts: FAIL: up 3 exited $rc"; exit 1; }
command -v ping >/dev/null || { echo "test_hosts: ping (iputils-ping) not installed"; exit 1; }

for i in 1 2 3; do
	for j in 1 2 3; do
		[ "$i" = "$j" ] && continue
		for fam in 4 6; do
			if [ $fam = 6 ]; then a=$("$H" addr "$j" -6); else a=$("$H" addr "$j"); fi
			if "$H" run "$i" -- ping -"$fam" -c 1 -W 2 "$a" >/dev/null; then
				echo "test_hosts: host $i -> host $j ($a): ok"
			else
				fail "host $i cannot ping host $j at $a"
			fi
		done
	done
	d=$("$H" dir "$i")
	got=$("$H" run "$i" -- sh -c 'echo "$SRDMA_DIR $SRDMA_LINK_LAYER"')
	[ "$got" = "$d eth" ] || fail "host $i: run gives '$got', not '$d eth'"
	[ "$(stat -c %a "$d")" = 700 ] || fail "host $i: $d is not mode 0700"
	"$H" run "$i" -- ip route show default | grep -q . &&
		fail "host $i has a default route"
	"$H" run "$i" -- ip -6 route show default | grep -q . &&
		fail "host $i has an IPv6 default route"
	"$H" run "$i" -- ip route get 192.0.2.1 >/dev/null 2>&1 &&
		fail "host $i has a route to 192.0.2.1"
	"$H" run "$i" -- ip -6 route get 2001:db8::1 >/dev/null 2>&1 &&
		fail "host $i has a route to 2001:db8::1"
done
dirs=$("$H" dir 1)
dirs=${dirs%/h1}
"$H" down
left=$(ip netns list | awk -v p="srdma-$tag-" 'index($1, p) == 1')
[ -z "$left" ] || fail "namespaces left after down: $left"
[ ! -e "$dirs" ] || fail "state directory $dirs left after down"

"$H" up 2 --mtu 9000 || fail "up 2 --mtu 9000"
mtu=$("$H" run 1 -- cat /sys/class/net/eth0/mtu)
[ "$mtu" = 9000 ] || fail "MTU is $mtu, not 9000"
"$H" run 2 -- ping -c 1 -W 2 -M 'do' -s 8972 "$("$H" addr 1)" >/dev/null ||
	fail "no 9000-byte frame from host 2 to host 1"
"$H" run 1 -- ping -c 1 -W 2 -M 'do' -s 8973 "$("$H" addr 2)" >/dev/null 2>&1 &&
	fail "a 9001-byte packet went through unfragmented"
"$H" down
left=$(ip netns list | awk -v p="srdma-$tag-" 'index($1, p) == 1')
[ -z "$left" ] || fail "namespaces left after the second down: $left"

# A caller that is gone: its hosts go at the next gc.
bash -c "'$H' up 1 --tag ${tag}g >/dev/null"
ip netns list | grep -q "^srdma-${tag}g-1" || fail "up 1 from a subshell"
"$H" gc
left=$(ip netns list | awk -v p="srdma-${tag}g-" 'index($1, p) == 1')
[ -z "$left" ] || fail "gc left the hosts of a dead caller: $left"

if [ "$fails" -eq 0 ]; then
	echo "test_hosts: PASS"
	exit 0
fi
echo "test_hosts: $fails failure(s)"
exit 1
