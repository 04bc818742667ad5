#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# stacks_bench.sh - the stacks people use (UCX, Open MPI) over softrdma,
# side by side with the same clients over what they use without it, in
# one run: shared memory on one host, TCP between two test hosts.
#
# Usage: stacks_bench.sh [--rounds N] [--full] [BUILD_DIR]  (default ../build)
#
# On one host (softrdma's host transport: shared memory and cross-memory
# attach), every client through `srdma run`, with an SRDMA_DIR of its own:
#   ucx_perftest ucp_put_bw 1 MiB and ucp_am_lat 8 B with UCX_TLS=rc_v and
#   ud_v (softrdma), and posix, cma (with posix: cma alone has no active
#   messages, which UCP needs to connect; no ucp_am_lat for it) and sm
#   (UCX's own shared memory transports)
#   Open MPI 4.1, 2 ranks, tests/stacks/mpi_check.c --bench (plain 8 B and
#   1 MiB ping-pongs, the last message checked): --mca pml ucx with
#   UCX_TLS=rc_v (softrdma) vs --mca pml ob1 --mca btl vader,self
# Between two test hosts (tests/net/hosts.sh, MTU 9000; root needed), each
# pair through tests/net/net_stacks.sh (server or rank 0 in host 1):
#   ucx_perftest ucp_put_bw 1 MiB and ucp_am_lat 8 B with UCX_TLS=rc_v,
#   UCX_NET_DEVICES=srdma0:1 (softrdma's net transport, RoCEv2 on the
#   veth) vs UCX_TLS=tcp, UCX_NET_DEVICES=eth0 (UCX's TCP transport)
#   Open MPI, one rank per host: pml ucx over rc_v vs pml ob1 + btl tcp
#   the kernel's own figures: qperf tcp_bw (a TCP stream) and
#   bench/udp_pingpong (8-byte UDP ping-pong, both sides busy-polling)
# and prints Markdown tables, then the ratios the targets are set for:
#   UCX rc_v / UCX tcp, ucp_put_bw 1 MiB            target >= 1.0
#   UCX rc_v / UCX tcp, ucp_am_lat 8 B              target <= 1.0
#     (3 back-to-back pairs per round; the median of the pairs' ratios)
#   MPI pml ucx / MPI btl tcp, 1 MiB ping-pong      target >= 1.0
# with the one-host ratios against shared memory beside them (no target).
#
# Figures: bandwidth in GB/s (10^9 bytes/s; ucx_perftest's MB/s are MiB/s,
# converted; its "overall" column), latency one way in microseconds
# (ucx_perftest's median, "50.0%ile"; mpi_check's median half round trip;
# udp_pingpong's median, which it already prints one way). MPI bandwidth: 2 MiB per mean
# round trip of 1 MiB ping-pongs. Each figure is measured ROUNDS
# times (--rounds N, default 1), the rounds interleaved, and the table
# shows the median. Quick by default (under 3 minutes on an idle machine);
# --full: more iterations per measurement. The machine's load average is
# printed before and after: figures from a busy machine (two cores shared
# with other work) swing by 10x, read them as such.
# A missed target is a result, not a failure. Exit 0; 1 if a measurement
# failed (its output is printed, the table says "failed"); 77 when the
# clients are not installed. Without root the two-host half is skipped
# ("not run").
set -u

rounds=1
full=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
	--rounds=*) rounds=${1#--rounds=}; shift ;;
	--full) full=1; shift ;;
	-h | --help) sed -n '3,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) break ;;
	esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "stacks_bench: bad --rounds" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd) || exit 1
srdma=$build/bin/srdma
mpicheck=$build/bin/stacks_mpi_check
udppp=$build/bin/udp_pingpong
H=$here/../tests/net/hosts.sh
NS=$here/../tests/net/net_stacks.sh

for bin in "$srdma" "$mpicheck" "$udppp"; do
	[ -x "$bin" ] || { echo "stacks_bench: $bin not built" >&2; exit 1; }
done
for p in ucx_perftest mpirun; do
	command -v "$p" >/dev/null ||
		{ echo "stacks_bench: $p not installed: skipped"; exit 77; }
done
if [ -n "$full" ]; then
	bw_n=1000 lat_n=20000 mpi_n=10000 pp_n=50000 qtime=3
else
	bw_n=200 lat_n=5000 mpi_n=2000 pp_n=20000 qtime=2
fi
lat_pairs=3	# two-host ucp_am_lat pairs per round

out=$(mktemp -d /tmp/stacks_bench.XXXXXX) || exit 1
chmod 0755 "$out"
mkdir -m 0700 "$out/state"
export SRDMA_DIR=$out/state
unset SRDMA_LINK_LAYER SRDMA_TRANSPORT UCX_TLS UCX_NET_DEVICES
pids=()
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	local p
	for p in "${pids[@]}"; do
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
	done
	rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
failed=0
declare -A val bad

# note NAME VALUE: one round's figure ("" if the measurement failed).
note()
{
	if [ -z "$2" ]; then
		failed=1
		bad[$1]=1
	fi
	val[$1]="${val[$1]-} $2"
}

# final_fig FILE COL SCALE: column COL of ucx_perftest's Final row x SCALE.
final_fig()
{
	awk -v c="$2" -v m="$3" '$1 == "Final:" && $c ~ /^[0-9.]+$/ {
		v = sprintf("%.4f", $c * m) } END { if (v != "") print v }' "$1"
}

# mpi_fig FILE lat|bw|rt: mpi_check --bench's figure (us, GB/s; rt: the
# median 1 MiB round trip, us, which the mean behind bw hides: a run with
# a few stalls of a scheduler tick has a low mean and a fast median).
mpi_fig()
{
	awk -v w="$2" '$1 == "mpi_check:" && $2 == "BENCH" {
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=")
			if (w == "lat" && kv[1] == "pingpong_8B_median_us")
				printf "%.4f\n", kv[2]
			if (w == "bw" && kv[1] == "pingpong_1MiB_MBps")
				printf "%.4f\n", kv[2] / 1000
			if (w == "rt" && kv[1] == "pingpong_1MiB_rt_us") {
				split(kv[2], rt, "/")
				printf "%.0f\n", rt[2]
			}
		}
	}' "$1"
}

# free_port: a TCP port nothing listens on, from 18760 up.
free_port()
{
	local p
	for ((p = 18760; p < 18800; p++)); do
		ss -ltnH "sport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
	done
	echo 18799
}

# local_ucx NAME TLS ARGS...: ucx_perftest pair on this host.
local_ucx()
{
	local name=$1 tls=$2 port i spid col=3 scale=1

	shift 2
	case $name in *bw*) col=7 scale=0.001048576 ;; esac
	port=$(free_port)
	echo "== one host: UCX_TLS=$tls ucx_perftest $*"
	UCX_TLS=$tls setsid timeout -k 2 60 "$srdma" run -- \
		ucx_perftest -p "$port" "$@" >"$out/server" 2>&1 &
	spid=$!
	pids+=("$spid")
	for ((i = 0; i < 200; i++)); do
		ss -ltnH "sport = :$port" 2>/dev/null | grep -q . && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.05
	done
	UCX_TLS=$tls timeout -k 2 60 "$srdma" run -- \
		ucx_perftest -p "$port" "$@" 127.0.0.1 >"$out/client" 2>&1
	wait "$spid"
	v=$(final_fig "$out/client" "$col" "$scale")
	if [ -n "$v" ]; then
		grep -E '^Final:' "$out/client"
	else
		echo "-- server:"; cat "$out/server"
		echo "-- client:"; cat "$out/client"
	fi
	note "$name" "$v"
}

# local_mpi NAME MPIRUN_ARGS...: mpi_check --bench, 2 ranks on this host.
local_mpi()
{
	local name=$1

	shift
	echo "== one host: mpirun -np 2 $*"
	timeout -k 2 120 "$srdma" run -- mpirun --allow-run-as-root -np 2 \
		--bind-to none "$@" "$mpicheck" --bench "$mpi_n" \
		>"$out/mpi" 2>&1
	grep -E '^mpi_check:' "$out/mpi" || cat "$out/mpi"
	note "$name.lat" "$(mpi_fig "$out/mpi" lat)"
	note "$name.bw" "$(mpi_fig "$out/mpi" bw)"
}

# net_ucx NAME TLS DEVICES ARGS...: ucx_perftest between the test hosts.
net_ucx()
{
	local name=$1 tls=$2 dev=$3 col=3 scale=1

	shift 3
	case $name in *bw*) col=7 scale=0.001048576 ;; esac
	echo "== two hosts: UCX_TLS=$tls UCX_NET_DEVICES=$dev ucx_perftest $*"
	UCX_TLS=$tls UCX_NET_DEVICES=$dev bash "$NS" --reuse-hosts \
		--budget 60 ucx "$srdma" "$@" >"$out/pair" 2>&1
	awk '/^== host 2, client/ { c = 1 } c' "$out/pair" >"$out/client"
	v=$(final_fig "$out/client" "$col" "$scale")
	if [ -n "$v" ]; then
		grep -E '^Final:' "$out/client"
	else
		cat "$out/pair"
	fi
	note "$name" "$v"
}

# net_mpi NAME MPIRUN_ARGS...: mpi_check --bench, one rank per host.
net_mpi()
{
	local name=$1 rt

	shift
	echo "== two hosts: mpirun -np 2 --map-by node $*"
	bash "$NS" --reuse-hosts --budget 120 mpi "$srdma" 2 "$mpicheck" \
		"$@" -- --bench "$mpi_n" >"$out/mpi" 2>&1
	grep -E '^mpi_check:' "$out/mpi" || cat "$out/mpi"
	note "$name.lat" "$(mpi_fig "$out/mpi" lat)"
	note "$name.bw" "$(mpi_fig "$out/mpi" bw)"
	rt=$(mpi_fig "$out/mpi" rt)
	[ -n "$rt" ] && note "$name.rt" "$rt"
}

# qperf_fig FILE: qperf's first figure in FILE, in GB/s.
qperf_fig()
{
	awk '$2 == "=" {
		v = $3; u = $4
		if (u == "GB/sec") v *= 1
		else if (u == "MB/sec") v /= 1000
		else if (u == "KB/sec") v /= 1000000
		else next
		printf "%.4f\n", v
		exit
	}' "$1"
}

# kernel: qperf tcp_bw and udp_pingpong between the test hosts.
kernel()
{
	local addr spid i

	addr=$("$H" addr 1)
	if command -v qperf >/dev/null; then
		echo "== two hosts: qperf -t $qtime tcp_bw"
		"$H" run 1 -- timeout 30 qperf >"$out/server" 2>&1 &
		spid=$!
		pids+=("$spid")
		for ((i = 0; i < 100; i++)); do
			"$H" run 1 -- ss -Hltn "sport = :19765" | grep -q . && break
			sleep 0.05
		done
		"$H" run 2 -- timeout 30 qperf -t "$qtime" "$addr" tcp_bw \
			>"$out/tcp" 2>&1
		cat "$out/tcp"
		note tcpstream "$(qperf_fig "$out/tcp")"
		kill -TERM "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	echo "== two hosts: udp_pingpong (busy-polling), 8 B, $pp_n iterations"
	"$H" run 1 -- timeout 30 "$udppp" -s >"$out/server" 2>&1 &
	spid=$!
	pids+=("$spid")
	sleep 0.3
	"$H" run 2 -- timeout 30 "$udppp" -c "$addr" -n "$pp_n" >"$out/pp" 2>&1
	cat "$out/pp"
	note udppp "$(awk '$1 == "udp_pingpong" && $2 == "size=8" {
		sub("median_us=", "", $3); printf "%.4f\n", $3 }' "$out/pp")"
	kill -TERM "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}

# The two-host half, run inside `hosts.sh with` (which removes the hosts).
if [ "${STACKS_BENCH_INSIDE:-}" = 1 ]; then
	net_ucx nbw.rc rc_v srdma0:1 -t ucp_put_bw -s 1048576 -n "$bw_n"
	net_ucx nbw.tcp tcp eth0 -t ucp_put_bw -s 1048576 -n "$bw_n"
	# Latency in pairs, softrdma then UCX tcp, lat_pairs times: each
	# pair ran in the same moment of the machine (see "paired" below).
	for ((p = 0; p < lat_pairs; p++)); do
		net_ucx nlat.rc rc_v srdma0:1 -t ucp_am_lat -s 8 -n "$lat_n"
		net_ucx nlat.tcp tcp eth0 -t ucp_am_lat -s 8 -n "$lat_n"
	done
	net_mpi nmpi.ucx --mca pml ucx --mca btl ^openib -x UCX_TLS=rc_v \
		-x UCX_NET_DEVICES=srdma0:1
	net_mpi nmpi.tcp --mca pml ob1 --mca btl tcp,self
	kernel
	declare -p val bad >"$STACKS_BENCH_OUT"
	exit 0
fi

echo "stacks_bench: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (start)"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
net_ok=1
for ((round = 1; round <= rounds; round++)); do
	echo "== round $round of $rounds"
	for tls in rc_v ud_v posix cma,posix sm; do
		local_ucx "bw.$tls" "$tls" -t ucp_put_bw -s 1048576 -n "$bw_n"
		# cma has no active messages: posix would carry them alone.
		[ "$tls" = cma,posix ] ||
			local_ucx "lat.$tls" "$tls" -t ucp_am_lat -s 8 -n "$lat_n"
	done
	local_mpi mpi.ucx --mca pml ucx --mca btl ^openib -x UCX_TLS=rc_v
	local_mpi mpi.vader --mca pml ob1 --mca btl vader,self
	[ "$net_ok" = 1 ] || continue
	STACKS_BENCH_INSIDE=1 STACKS_BENCH_OUT=$out/net.vals \
		"$H" with 2 --mtu 9000 -- "$0" --rounds 1 \
		${full:+--full} "$build"
	rc=$?
	if [ "$rc" = 77 ]; then
		echo "stacks_bench: no test hosts (needs root): the two-host half is not run"
		net_ok=0
		continue
	fi
	if [ -f "$out/net.vals" ]; then
		# Merge that round's figures into ours.
		declare -A nval nbad
		eval "$(sed 's/declare -A val=/nval=/; s/declare -A bad=/nbad=/' \
			"$out/net.vals")"
		for k in "${!nval[@]}"; do
			val[$k]="${val[$k]-} ${nval[$k]}"
		done
		for k in "${!nbad[@]}"; do
			bad[$k]=1
			failed=1
		done
		unset nval nbad
		rm -f "$out/net.vals"
	else
		echo "stacks_bench: the two-host half failed (exit $rc)"
		failed=1
	fi
done
echo

# The 8 B latency target is judged pair by pair: on this shared machine a
# whole measurement of either side can land in a slow phase (UCX tcp's
# median swings between 5.0 and 7.1 us from one run to the next, ours
# as much), so the ratio of the two medians over a few rounds moves by
# more than the margin it judges. Each pair ran back to back; the
# median of their ratios is the figure (lat_ab.sh and ucx_lat_ab.sh
# judge their A/B runs the same way). Pairs with a failed side are left
# out; the ratio of the medians is printed beside it.
if [ -z "${bad[nlat.rc]-}${bad[nlat.tcp]-}" ]; then
	read -ra lr <<<"${val[nlat.rc]-}"
	read -ra lt <<<"${val[nlat.tcp]-}"
	if [ "${#lr[@]}" -gt 0 ] && [ "${#lr[@]}" = "${#lt[@]}" ]; then
		for i in "${!lr[@]}"; do
			val[nlat.pair]="${val[nlat.pair]-} $(awk -v a="${lr[$i]}" \
				-v b="${lt[$i]}" 'BEGIN { printf "%.4f", a / b }')"
		done
		echo "ucp_am_lat pairs (softrdma / UCX tcp, us):$(for i in \
			"${!lr[@]}"; do printf ' %s/%s' "${lr[$i]}" "${lt[$i]}"; done)"
	fi
fi

# The median of each figure over the rounds.
for k in "${!val[@]}"; do
	if [ -n "${bad[$k]-}" ]; then
		val[$k]=
		continue
	fi
	# shellcheck disable=SC2086 # one number per word
	val[$k]=$(printf '%s\n' ${val[$k]} | sort -g | awk '{ v[n++] = $1 } END {
		if (n)
			printf "%.3f\n", n % 2 ? v[(n - 1) / 2] \
					   : (v[n / 2 - 1] + v[n / 2]) / 2
	}')
done

show()
{
	if [ -z "${val[$1]+set}" ]; then
		echo "not run"
	elif [ -z "${val[$1]}" ]; then
		echo "failed"
	else
		echo "${val[$1]}"
	fi
}

# ratio A B [OP T]: A / B, judged against target T if given.
ratio()
{
	awk -v a="${val[$1]-}" -v b="${val[$2]-}" -v op="${3-}" -v t="${4-}" 'BEGIN {
		if (a == "" || b == "" || b <= 0) { print "- (no figure)"; exit }
		r = a / b
		if (op == "") { printf "%.2f\n", r; exit }
		ok = op == ">=" ? r >= t : r <= t
		printf "%.2f (target %s %s: %s)\n", r, op, t, ok ? "met" : "MISSED"
	}'
}

# judge K OP T: figure K (itself a ratio) against target T.
judge()
{
	awk -v r="${val[$1]-}" -v op="$2" -v t="$3" 'BEGIN {
		if (r == "") { print "- (no figure)"; exit }
		ok = op == ">=" ? r >= t : r <= t
		printf "%.2f (target %s %s: %s)\n", r, op, t, ok ? "met" : "MISSED"
	}'
}

echo "medians of $rounds round(s); load average $load0 at the start," \
	"$(cut -d' ' -f1-3 /proc/loadavg) at the end ($(nproc) CPUs)"
echo
echo "| one host: ucx_perftest | ucp_put_bw 1 MiB (GB/s) | ucp_am_lat 8 B (us) |"
echo "|---|---|---|"
for tls in rc_v ud_v posix cma,posix sm; do
	who="UCX shared memory"
	case $tls in rc_v | ud_v) who=softrdma ;; esac
	lat=$(show "lat.$tls")
	[ "$tls" = cma,posix ] && lat="- (cma has no active messages)"
	printf '| %s, UCX_TLS=%s | %s | %s |\n' "$who" "$tls" \
		"$(show "bw.$tls")" "$lat"
done
echo
echo "| one host: Open MPI, 2 ranks | 1 MiB ping-pong (GB/s) | 8 B ping-pong, half round trip (us) |"
echo "|---|---|---|"
printf '| softrdma, pml ucx, UCX_TLS=rc_v | %s | %s |\n' \
	"$(show mpi.ucx.bw)" "$(show mpi.ucx.lat)"
printf '| shared memory, pml ob1, btl vader | %s | %s |\n' \
	"$(show mpi.vader.bw)" "$(show mpi.vader.lat)"
echo
echo "| two test hosts, MTU 9000 | 1 MiB (GB/s) | 8 B (us) |"
echo "|---|---|---|"
printf '| softrdma, UCX_TLS=rc_v: ucp_put_bw, ucp_am_lat | %s | %s |\n' \
	"$(show nbw.rc)" "$(show nlat.rc)"
printf '| UCX_TLS=tcp: ucp_put_bw, ucp_am_lat | %s | %s |\n' \
	"$(show nbw.tcp)" "$(show nlat.tcp)"
printf '| softrdma, Open MPI pml ucx (rc_v), ping-pong | %s | %s |\n' \
	"$(show nmpi.ucx.bw)" "$(show nmpi.ucx.lat)"
printf '| Open MPI pml ob1, btl tcp, ping-pong | %s | %s |\n' \
	"$(show nmpi.tcp.bw)" "$(show nmpi.tcp.lat)"
printf '| kernel TCP stream (qperf tcp_bw) | %s | - |\n' "$(show tcpstream)"
printf '| kernel UDP ping-pong, busy-polling (udp_pingpong) | - | %s |\n' \
	"$(show udppp)"
echo
echo "Targets, two test hosts:"
echo "  UCX rc_v / UCX tcp, ucp_put_bw 1 MiB: $(ratio nbw.rc nbw.tcp '>=' 1.0)"
echo "  UCX rc_v / UCX tcp, ucp_am_lat 8 B, median of the paired ratios: $(judge nlat.pair '<=' 1.0) (ratio of the medians $(ratio nlat.rc nlat.tcp))"
echo "  MPI pml ucx / btl tcp, 1 MiB ping-pong: $(ratio nmpi.ucx.bw nmpi.tcp.bw '>=' 1.0)"
echo "  (MPI pml ucx / btl tcp, 8 B latency: $(ratio nmpi.ucx.lat nmpi.tcp.lat))"
echo "  (MPI 1 MiB median round trip, us: pml ucx $(show nmpi.ucx.rt), btl tcp $(show nmpi.tcp.rt))"
echo "One host, softrdma against shared memory (no target):"
echo "  ucp_put_bw 1 MiB, rc_v / posix: $(ratio bw.rc_v bw.posix), rc_v / cma: $(ratio bw.rc_v bw.cma,posix), rc_v / sm: $(ratio bw.rc_v bw.sm)"
echo "  ucp_am_lat 8 B, rc_v / posix: $(ratio lat.rc_v lat.posix), rc_v / sm: $(ratio lat.rc_v lat.sm)"
echo "  MPI 1 MiB, ucx rc_v / vader: $(ratio mpi.ucx.bw mpi.vader.bw); 8 B: $(ratio mpi.ucx.lat mpi.vader.lat)"
exit "$failed"
