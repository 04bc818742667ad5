#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# ucx_lat_ab.sh - paired A/B of UCX's small-message latency between two
# test hosts: one or more softrdma build trees against UCX's own tcp
# transport, interleaved round by round on the same two hosts, so that
# the load of the shared machine hits every build and the reference alike
# (lat_ab.sh is the perftest twin).
#
# Usage: ucx_lat_ab.sh [-r ROUNDS] [-m MTU] [-n ITERS] [-t TEST] BUILD_DIR...
#   -r  rounds (default 3)    -m  the hosts' MTU (default 9000)
#   -n  iterations per measurement (default 10000)
#   -t  which measurements (repeatable; default ucp uct):
#       ucp   ucx_perftest ucp_am_lat 8 B, UCX_TLS=rc_v (each build)
#             against UCX_TLS=tcp
#       uct   ucx_perftest am_lat 8 B on UCT rc_verbs (each build)
#             against UCT tcp
#       send  perftest ib_send_lat 8 B (each build; no tcp twin)
# Each round: every TEST, each build then the tcp twin. Prints one line
# per measurement (one-way median in microseconds: ucx_perftest's
# "50.0%ile" of its Final row, perftest's t_typical), then per test and
# build every round's figure, the median, and the median of the per-round
# ratios to tcp (each ratio from the same round).
# Environment: SRDMA_AB_ENV_<i>="VAR=x VAR2=y" adds variables to build
# i's (1-based) runs, e.g. to compare a tunable with one build.
# Exit: 0, 1 on a failed measurement, 77 without root or ucx_perftest.
set -u
here=$(cd "$(dirname "$0")" && pwd)
H=$here/../tests/net/hosts.sh
net_pair=$here/../tests/net/net_pair.sh
rounds=3 mtu=9000 iters=10000 tests=()
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
[ $# -ge 1 ] || { echo "usage: ucx_lat_ab.sh [opts] BUILD_DIR..." >&2; exit 2; }
[ ${#tests[@]} -gt 0 ] || tests=(ucp uct)
builds=()
for b in "$@"; do
	builds+=("$(cd "$b" && pwd)") || exit 2
done
command -v ucx_perftest >/dev/null || { echo "ucx_lat_ab: no ucx_perftest"; exit 77; }
# shellcheck source=ab_hosts.sh
. "$here/ab_hosts.sh"
ab_hosts_up uab ucx_lat_ab
port=18970
failed=0
declare -A val rat

# perftest_pair SRDMA ENV... -- ARGS...: ucx_perftest ARGS in host 1
# (server) and host 2 (client, with host 1's address); prints the
# client's one-way median, nothing if it failed.
perftest_pair()
{
	local srdma=$1 i
	local -a env=()
	shift
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	"$H" run 1 -- env "${env[@]}" timeout -k 2 90 "$srdma" run -- \
		ucx_perftest -p "$port" "$@" >"$out/s" 2>&1 &
	srv=$!
	for ((i = 0; i < 200; i++)); do
		"$H" run 1 -- ss -ltnH "sport = :$port" 2>/dev/null |
			grep -q . && break
		sleep 0.05
	done
	"$H" run 2 -- env "${env[@]}" timeout -k 2 90 "$srdma" run -- \
		ucx_perftest -p "$port" "$@" "$addr" >"$out/c" 2>&1
	wait "$srv"
	srv=
	awk '$1 == "Final:" && $3 ~ /^[0-9.]+$/ { v = $3 } END {
		if (v != "") print v }' "$out/c"
}

# one TEST BUILD_INDEX|tcp: one measurement.
one()
{
	local t=$1 i=$2 b srdma envname
	local -a env=()

	if [ "$i" = tcp ]; then
		srdma=${builds[0]}/bin/srdma
	else
		b=${builds[$i]}
		srdma=$b/bin/srdma
		envname=SRDMA_AB_ENV_$((i + 1))
		# shellcheck disable=SC2206 # words on purpose
		env=(${!envname-})
	fi
	case $t.$i in
	ucp.tcp) perftest_pair "$srdma" "${env[@]}" UCX_TLS=tcp \
		UCX_NET_DEVICES=eth0 -- -t ucp_am_lat -s 8 -n "$iters" ;;
	ucp.*) perftest_pair "$srdma" "${env[@]}" UCX_TLS=rc_v \
		UCX_NET_DEVICES=srdma0:1 -- -t ucp_am_lat -s 8 -n "$iters" ;;
	uct.tcp) perftest_pair "$srdma" "${env[@]}" -- -d eth0 -x tcp \
		-t am_lat -s 8 -n "$iters" ;;
	uct.*) perftest_pair "$srdma" "${env[@]}" -- -d srdma0:1 \
		-x rc_verbs -t am_lat -s 8 -n "$iters" ;;
	send.*)
		# shellcheck disable=SC2086 # words on purpose
		if env "${env[@]}" bash "$net_pair" --reuse-hosts --timeout 90 \
			--client-log "$out/c" lat "$srdma" ib_send_lat \
			-d srdma0 -s 8 -n "$iters" >"$out/p" 2>&1; then
			awk '/#bytes/ { h = 1; next }
				h && NF >= 5 { print $5; exit }' "$out/c"
		fi ;;
	esac
}

for ((r = 1; r <= rounds; r++)); do
	for t in "${tests[@]}"; do
		who=("${!builds[@]}")
		[ "$t" = send ] || who+=(tcp)
		declare -A now=()
		for i in "${who[@]}"; do
			v=$(one "$t" "$i")
			if [ -z "$v" ]; then
				echo "round $r $t $i: failed"
				cat "$out/c" "$out/s" 2>/dev/null | tail -20
				failed=1
			fi
			echo "round $r $t ${i/#[0-9]*/build$((${i//tcp/0} + 1))} $v"
			val[$t.$i]="${val[$t.$i]-} $v"
			now[$i]=$v
		done
		if [ -n "${now[tcp]-}" ]; then
			for i in "${!builds[@]}"; do
				[ -n "${now[$i]}" ] || continue
				rat[$t.$i]="${rat[$t.$i]-} $(awk -v a="${now[$i]}" \
					-v b="${now[tcp]}" 'BEGIN { printf "%.3f", a / b }')"
			done
		fi
		unset now
	done
done
med()
{
	# shellcheck disable=SC2086
	printf '%s\n' $1 | sort -g | awk '{ v[n++] = $1 } END { if (n)
		printf "%.3f", n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'
}
echo "MTU $mtu, $rounds rounds, $iters iterations, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for t in "${tests[@]}"; do
	[ "$t" = send ] ||
		echo "$t tcp rounds:${val[$t.tcp]-} median $(med "${val[$t.tcp]-}")"
	for i in "${!builds[@]}"; do
		echo "$t build$((i + 1)) (${builds[$i]}) rounds:${val[$t.$i]-} median $(med "${val[$t.$i]-}")${rat[$t.$i]+ ratio to tcp per round:${rat[$t.$i]} median $(med "${rat[$t.$i]}")}"
	done
done
exit $failed
