#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# lat_ab.sh - paired A/B latency between two test hosts: the busy-polled
# UDP ping-pong and 8-byte perftest latency of one or more softrdma build
# trees, interleaved round by round on the same two hosts, so that the
# machine's load hits every build alike (the figures of a shared 2-vCPU
# machine move by 2x from minute to minute; only same-run comparisons
# mean anything).
#
# Usage: lat_ab.sh [-r ROUNDS] [-m MTU] [-n ITERS] [-t TEST] BUILD_DIR...
#   -r  rounds (default 3)    -m  the hosts' MTU (default 1500)
#   -n  perftest iterations (default 2000)
#   -t  perftest program (default ib_write_lat; repeatable)
# Each round: udp_pingpong (of the first build), then for each TEST each
# build's `srdma run -- TEST -s 8`, across host 1 (server) and host 2.
# Prints one line per measurement (t_typical, then t_min in brackets;
# udp_pingpong: its median, then its minimum, one way), then per build and
# test the t_typical of every round, its median, and the median ratio to
# udp_pingpong's median; then the same for the minima (t_min against
# udp_pingpong's minimum: the figure the machine's load moves least).
# Both figures are one way, round trip / 2, on both sides of the ratio.
# Environment: SRDMA_AB_ENV_<i>="VAR=x VAR2=y" adds variables to build i's
# (1-based) runs, e.g. to compare a tunable with one build;
# SRDMA_AB_UDPPP=PATH: the udp_pingpong to run (default: the first build's;
# one that prints no minimum leaves the minima's ratios empty).
# Exit: 0, 1 on a failed measurement, 77 without root or perftest.
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/../tests/net/hosts.sh
net_pair=$here/../tests/net/net_pair.sh
rounds=3 mtu=1500 iters=2000 tests=()
while getopts r:m:n:t: o; do
	case $o in
	r) rounds=$OPTARG ;;
	m) mtu=$OPTARG ;;
	n) iters=$OPTARG ;;
	t) tests+=("$OPTARG") ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: lat_ab.sh [opts] BUILD_DIR..." >&2; exit 2; }
[ ${#tests[@]} -gt 0 ] || tests=(ib_write_lat)
builds=("$@")
udppp=${SRDMA_AB_UDPPP:-${builds[0]}/bin/udp_pingpong}
command -v ib_write_lat >/dev/null || { echo "lat_ab: no perftest"; exit 77; }
# shellcheck source=ab_hosts.sh
. "$here/ab_hosts.sh"
ab_hosts_up ab lat_ab
failed=0
declare -A val
for ((r = 1; r <= rounds; r++)); do
	"$H" run 1 -- "$udppp" -s >/dev/null 2>&1 &
	srv=$!
	sleep 0.2
	read -r v vm < <("$H" run 2 -- "$udppp" \
		-c "$addr" -n 20000 | awk '
		$2 ~ /^avg_us=/ { sub("min_us=", "", $3); m = $3 }
		$2 == "size=8" { sub("median_us=", "", $3); v = $3 }
		END { print v, m }')
	kill -TERM "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	srv=
	echo "round $r udp_pingpong $v ($vm)"
	val[udp]="${val[udp]-} $v"
	val[udpmin]="${val[udpmin]-} $vm"
	for t in "${tests[@]}"; do
		for i in "${!builds[@]}"; do
			b=${builds[$i]}
			envname=SRDMA_AB_ENV_$((i + 1))
			# shellcheck disable=SC2086 # words on purpose
			if env ${!envname-} bash "$net_pair" --reuse-hosts \
				--timeout 90 --client-log "$out/c" lat \
				"$b/bin/srdma" "$t" -d srdma0 -s 8 -n "$iters" \
				>"$out/p" 2>&1; then
				read -r v vm < <(awk '/#bytes/ { h = 1; next }
					h && NF >= 5 { print $5, $3; exit }' \
					"$out/c")
			else
				cat "$out/p"
				v= vm=
				failed=1
			fi
			echo "round $r $t build$((i + 1)) $v ($vm)"
			val[$t.$i]="${val[$t.$i]-} $v"
			val[$t.$i.min]="${val[$t.$i.min]-} $vm"
		done
	done
done
med()
{
	# shellcheck disable=SC2086
	printf '%s\n' $1 | sort -g | awk '{ v[n++] = $1 } END { if (n)
		printf "%.2f", n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'
}
ratio()
{
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "") printf "%.2f", a / b }'
}
u=$(med "${val[udp]}")
um=$(med "${val[udpmin]}")
echo "MTU $mtu, $rounds rounds: udp_pingpong rounds:${val[udp]} median $u"
for t in "${tests[@]}"; do
	for i in "${!builds[@]}"; do
		m=$(med "${val[$t.$i]}")
		echo "$t build$((i + 1)) (${builds[$i]}) rounds:${val[$t.$i]} median $m ratio $(ratio "$m" "$u")"
	done
done
echo "minima: udp_pingpong rounds:${val[udpmin]} median $um"
for t in "${tests[@]}"; do
	for i in "${!builds[@]}"; do
		m=$(med "${val[$t.$i.min]}")
		echo "$t t_min build$((i + 1)) rounds:${val[$t.$i.min]} median $m ratio $(ratio "$m" "$um")"
	done
done
exit $failed
