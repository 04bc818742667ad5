# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# ab_hosts.sh - sourced by the paired A/B latency scripts (lat_ab.sh,
# ucx_lat_ab.sh): two test hosts (tests/net/hosts.sh, $H) at MTU $mtu,
# torn down on exit with the scratch directory and any server left.
#
# ab_hosts_up TAG NAME: sets SRDMA_NET_TAG (TAG and our pid), out (a
# scratch directory /tmp/NAME.*), srv (empty; a server pid the caller
# starts, killed on exit) and addr (host 1's address). Exits 77 when test
# hosts cannot be made here (no root), 1 on another failure.

ab_hosts_cleanup()
{
	[ -n "$srv" ] && kill -KILL "$srv" 2>/dev/null
	"$H" down >/dev/null 2>&1
	rm -rf "$out"
}

ab_hosts_up()
{
	local rc

	export SRDMA_NET_TAG=$1$$
	out=$(mktemp -d "/tmp/$2.XXXXXX") || exit 1
	srv=
	trap ab_hosts_cleanup EXIT
	trap 'exit 1' INT TERM HUP
	"$H" up 2 --mtu "$mtu" >/dev/null
	rc=$?
	[ $rc -eq 77 ] && exit 77
	[ $rc -eq 0 ] || exit 1
	addr=$("$H" addr 1)
}
