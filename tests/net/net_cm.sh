#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_cm.sh - one of Debian's rdma_cm clients (rdmacm-utils' rping,
# rdma_server/rdma_client, udaddy, ucmatose, cmtime; perftest with -R)
# across two test hosts: the server in host 1, the client in host 2, our
# librdmacm's side channel (TCP) and the net transport (RoCEv2) between
# them. Issue 12 item 1; docs/design/cm.md, "Between hosts".
#
# Usage: net_cm.sh [OPTIONS] KIND SRDMA_EXE
#                  @server PROGRAM [ARGS...] @client PROGRAM [ARGS...]
#   KIND       run_pair.sh's (rping | cm | bw | lat), or cmtime (below)
#   ARGS       the word @ADDR is replaced by host 1's address: IPv4, or
#              its IPv6 address (fd53:...) under --ipv6
# Options:
#   --ipv6          @ADDR is host 1's IPv6 address: side channel and
#                   RoCEv2 over IPv6
#   --mtu M         the hosts' MTU (default 1500)
#   --timeout SECS  budget (default 60)
#   --tag T         hosts.sh tag T.<pid> (default ncm<pid>)
#   --fixed-port P  the program has its own port P (udaddy: 7174); else
#                   run_pair.sh appends -p 18515 to both sides
#
# perftest (-R) makes two connections in a row, and its client can ask
# for the second before its server listens again; the library tries a
# refused connect again for a moment (cm.md), so no retry is needed here.
#
# Steps: `hosts.sh up 2`, then run_pair.sh runs the pair with each side
# wrapped in `hosts.sh run I --` (so in its host's namespace, with its
# own SRDMA_DIR and a RoCE port) and judges it by KIND's rule, as on one
# host (tests/clients/run_pair.sh's header). KIND cmtime: the cmtime
# server never exits (it serves until killed), so it runs in the
# background; the client must exit 0 and print its table, one row per
# step (create id ... destroy), every figure a number; the server is then
# killed. `hosts.sh down` on every exit.
#
# Exit: 0 pass, 1 fail, 2 usage, 77 skip (no root, program not installed).
set -u

here=$(cd "$(dirname "$0")" && pwd)
H=$here/hosts.sh
RUN_PAIR=$here/../clients/run_pair.sh
PORT=18515
timeout=60
mtu=1500
tag=ncm$$
v6=
fixed=

die()
{
	echo "net_cm: $*" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--ipv6) v6=-6; shift ;;
	--mtu) mtu=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--tag) tag=${2:?}.$$; shift 2 ;;
	--fixed-port) fixed=${2:?}; shift 2 ;;
	-*) die "unknown option '$1'" ;;
	*) break ;;
	esac
done
[ $# -ge 4 ] || die "usage: $0 [OPTIONS] KIND SRDMA_EXE @server ... @client ..."
kind=$1 srdma=$2
shift 2
[ -x "$srdma" ] || die "'$srdma' is not executable"
export SRDMA_NET_TAG=$tag

srv_pid=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup()
{
	if [ -n "$srv_pid" ] && kill -0 "$srv_pid" 2>/dev/null; then
		kill -KILL "$srv_pid" 2>/dev/null
		wait "$srv_pid" 2>/dev/null
	fi
	"$H" down >/dev/null 2>&1
	[ -n "${work:-}" ] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

"$H" up 2 --mtu "$mtu"
rc=$?
[ $rc -eq 0 ] || exit $rc
addr=$("$H" addr 1 $v6) || exit 1
args=()
for a; do
	args+=("${a//@ADDR/$addr}")
done
echo "net_cm: host 1 $addr (server), host 2 $("$H" addr 2 $v6) (client)," \
	"MTU $mtu"

if [ "$kind" != cmtime ]; then
	opts=(--timeout "$timeout" --server-wrap "$H run 1 --"
		--client-wrap "$H run 2 --")
	[ -n "$fixed" ] && opts+=(--fixed-port)
	bash "$RUN_PAIR" "${opts[@]}" "$kind" "${fixed:-$PORT}" "$srdma" \
		"${args[@]}"
	exit $?
fi

# cmtime: split the two command lines.
srv=() cli=() side=
for a in "${args[@]}"; do
	case $a in
	@server | @client) side=$a ;;
	*) if [ "$side" = @server ]; then srv+=("$a"); else cli+=("$a"); fi ;;
	esac
done
command -v "${cli[0]}" >/dev/null || { echo "net_cm: ${cli[0]} not installed: skipped"; exit 77; }
work=$(mktemp -d /tmp/net_cm.XXXXXX) || exit 1
"$H" run 1 -- "$srdma" run -- "${srv[@]}" -p "$PORT" >"$work/server" 2>&1 &
srv_pid=$!
for ((i = 0; i < 200; i++)); do
	[ -n "$("$H" run 1 -- ss -Hltn "sport = :$PORT")" ] && break
	kill -0 "$srv_pid" 2>/dev/null || break
	sleep 0.05
done
start=$SECONDS
timeout "$timeout" "$H" run 2 -- "$srdma" run -- "${cli[@]}" -p "$PORT" \
	>"$work/client" 2>&1
cli_rc=$?
echo "----- host 1, server: ${srv[*]} -p $PORT"
cat "$work/server"
echo "----- host 2, client: ${cli[*]} -p $PORT"
cat "$work/client"
echo "-----"
[ "$cli_rc" -eq 0 ] || { echo "net_cm: FAIL: client exited $cli_rc"; exit 1; }
why=$(awk '
BEGIN { split("create id|resolve addr|resolve route|create qp|connect|" \
	"disconnect|destroy", want, "|") }
{
	split($0, f, ":")
	step = f[1]; sub(/[ \t]+$/, "", step)
	n = split(f[2], v, " ")
	if (n == 4 && v[1] ~ /^[0-9.]+$/ && v[2] ~ /^[0-9.]+$/ &&
	    v[3] ~ /^[0-9.]+$/ && v[4] ~ /^[0-9.]+$/)
		got[step] = 1
}
END {
	for (i = 1; i <= 7; i++)
		if (!got[want[i]]) { print "no numeric row \"" want[i] "\""; exit }
}' "$work/client")
[ -z "$why" ] || { echo "net_cm: FAIL: client: $why"; exit 1; }
echo "net_cm: PASS in $((SECONDS - start)) s"
