#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# hosts.sh - make N test "hosts" for the net transport: network namespaces
# on this machine, joined by an Ethernet link, each with its own softrdma
# state directory, so that two processes in two of them share nothing but
# the wire (issue 10, docs/design/net-testing.md).
#
# Usage:
#   hosts.sh up N [--mtu M] [--tag T]   make hosts 1..N (N >= 1)
#   hosts.sh run I [--tag T] -- CMD...  run CMD in host I
#   hosts.sh addr I [-6] [--tag T]      print host I's IPv4 (IPv6) address
#   hosts.sh ns I [--tag T]             print host I's namespace name
#   hosts.sh dir I [--tag T]            print host I's SRDMA_DIR
#   hosts.sh down [--tag T]             remove everything `up` made
#   hosts.sh with N [--mtu M] [--tag T] -- CMD...
#                                       up, run CMD (on this machine, with
#                                       SRDMA_NET_TAG exported so its own
#                                       `hosts.sh run` calls find the
#                                       hosts), down - also when CMD fails
#                                       or this script is interrupted
#   hosts.sh gc                         remove the hosts of every tag whose
#                                       owner process is gone
#
# The tag names one set of hosts, so that concurrent runs (CTest -j) never
# meet: --tag T, else $SRDMA_NET_TAG, else "p" + the caller's pid ($PPID),
# which is the same for every hosts.sh call of one calling script. Tags
# are [A-Za-z0-9_.-], 1 to 64 characters.
#
# What `up` makes, for tag T (x = a number 1..254 derived from T, so that
# concurrent sets also use different subnets, although they could not
# reach each other anyway):
#   namespaces   srdma-T-1 .. srdma-T-N, each with lo up and one Ethernet
#                interface eth0 (MAC 02:53:72:x:00:i), MTU M (default
#                1500; 9000 for jumbo frames), addresses 198.18.x.i/24 and
#                fd53:7264:6d61:x::i/64 (nodad: usable at once; duplicate
#                address detection is also off for the link-local address,
#                so the GID table is complete as soon as `up` returns).
#                No default route: a host reaches only the other hosts.
#   link         N = 2: a veth pair, eth0 <-> eth0. N > 2 (or 1): each
#                eth0 is a veth whose peer pI is a port of bridge br0 in
#                one more namespace, srdma-T-br (no STP, no forward delay).
#   state        ${TMPDIR:-/tmp}/srdma-net-T/ (0700): the file `hosts`
#                (N, x, MTU, the owner pid and its start time) and h1 ..
#                hN, the hosts' SRDMA_DIRs (0700).
# `up` first removes leftovers of the same tag, and those of any tag whose
# owner is gone (`gc`: a test killed by CTest's timeout runs no trap); on a
# failure half-way it removes what it made. The owner is the caller
# (`with`: hosts.sh itself), so `gc` never removes a live run's hosts.
#
# `run I -- CMD` executes CMD through `ip netns exec` in srdma-T-I with
# SRDMA_DIR set to host I's directory and SRDMA_LINK_LAYER=eth; the rest
# of the environment is kept (SRDMA_TRANSPORT, SRDMA_NET_FAULT...).
#
# `down` kills what still runs in the namespaces (processes started there
# by `run`, by pid), deletes them (their interfaces go with them) and the
# state directory. Nothing is left: `ip netns list` shows none of them.
#
# Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) for network namespaces;
# without it prints "skipped: needs root for network namespaces" and exits
# 77, CTest's SKIP_RETURN_CODE for these tests.
#
# Exit: 0, or CMD's status (run, with); 1 on failure; 2 usage; 77 skip.
set -u

me=hosts.sh
die()
{
	echo "$me: $*" >&2
	exit 1
}
usage()
{
	sed -n '/^# Usage:/,/^# The tag/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

need_root()
{
	if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null ||
	   ! unshare --net true 2>/dev/null; then
		echo "skipped: needs root for network namespaces"
		exit 77
	fi
}

# Parse the options common to every subcommand; the rest goes to $args.
tag=
[ "${1:-}" = with ] && tag=w$$
tag=${tag:-${SRDMA_NET_TAG:-p$PPID}}
mtu=1500
v6=
args=()
parse()
{
	while [ $# -gt 0 ]; do
		case $1 in
		--tag) tag=${2:?--tag needs a value}; shift 2 ;;
		--tag=*) tag=${1#--tag=}; shift ;;
		--mtu) mtu=${2:?--mtu needs a value}; shift 2 ;;
		--mtu=*) mtu=${1#--mtu=}; shift ;;
		-6) v6=1; shift ;;
		--) shift; cmd=("$@"); have_cmd=1; return ;;
		-*) echo "$me: unknown option '$1'" >&2; usage ;;
		*) args+=("$1"); shift ;;
		esac
	done
}
cmd=()
have_cmd=

check_tag()
{
	[[ $tag =~ ^[A-Za-z0-9_.-]{1,64}$ ]] ||
		{ echo "$me: bad tag '$tag'" >&2; exit 2; }
}

state_root()
{
	echo "${TMPDIR:-/tmp}/srdma-net-$1"
}

# subnet_of TAG: 1..254, a hash of the tag.
subnet_of()
{
	local sum

	sum=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
	echo $((sum % 254 + 1))
}

# Process start time (field 22 of /proc/PID/stat), empty if gone.
start_time()
{
	local s

	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) }
	# shellcheck disable=SC2086 # split the fields on purpose
	set -- $s
	echo "${20}"
}

# state_get TAG KEY: KEY's value in TAG's state file (empty if none).
state_get()
{
	sed -n "s/^$2=//p" "$(state_root "$1")/hosts" 2>/dev/null
}

ns_name()
{
	echo "srdma-$tag-$1"
}

# remove TAG: kill what runs in TAG's namespaces, delete them and the
# state directory. Works from the state file if there is one, and from
# the namespace names otherwise (a failed `up` before it was written).
remove()
{
	local t=$1 ns p root

	root=$(state_root "$t")
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }'); do
		[ "${ns#"srdma-$t-"}" != "$ns" ] &&
			[[ ${ns#"srdma-$t-"} =~ ^([0-9]+|br)$ ]] || continue
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		for p in 1 2 3 4 5 6 7 8 9 10; do
			[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
			sleep 0.05
		done
		ip netns del "$ns" 2>/dev/null ||
			echo "$me: could not delete namespace $ns" >&2
	done
	# The state root is ours only if it holds our state file.
	if [ -d "$root" ] && { [ -f "$root/hosts" ] || [ -f "$root/.making" ]; }; then
		rm -rf "$root"
	fi
}

# gc: remove every set whose owner is gone (or is another process now).
# One gc at a time (flock), so two never remove the same set together.
gc()
{
	(
		flock 9 || exit 0
		gc_locked
	) 9>>"$(state_root '')lock"
}

gc_locked()
{
	local d t owner owner_start

	for d in "$(state_root '')"*; do
		[ -d "$d" ] || continue
		t=${d##*/srdma-net-}
		owner='' owner_start=''
		if [ -f "$d/hosts" ]; then
			owner=$(state_get "$t" owner)
			owner_start=$(state_get "$t" owner_start)
		elif [ -f "$d/.making" ]; then
			read -r owner owner_start <"$d/.making"
		else
			continue
		fi
		# No owner recorded: a set being made or removed right now.
		[ -n "$owner" ] && [ -n "$owner_start" ] || continue
		[ "$(start_time "$owner")" = "$owner_start" ] && continue
		remove "$t"
	done
}

# make_hosts N ROOT X: the namespaces, links and addresses of `up`.
# Return: 0, or 1 at the first step that failed (its message printed).
make_hosts()
{
	local n=$1 root=$2 x=$3 i ns mac k

	for ((i = 1; i <= n; i++)); do
		ns=$(ns_name "$i")
		ip netns add "$ns" || return 1
		# No DAD, no router solicitations: addresses are usable at
		# once and nothing but our own traffic goes out.
		for k in all default; do
			ip netns exec "$ns" sysctl -qw \
				"net.ipv6.conf.$k.accept_dad=0" \
				"net.ipv6.conf.$k.router_solicitations=0" \
				"net.ipv6.conf.$k.accept_ra=0" >/dev/null || return 1
		done
		ip -n "$ns" link set lo up || return 1
		(umask 077 && mkdir "$root/h$i") || return 1
	done
	if [ "$n" -eq 2 ]; then
		ip link add eth0 netns "$(ns_name 1)" type veth \
			peer name eth0 netns "$(ns_name 2)" || return 1
	else
		ns=$(ns_name br)
		ip netns add "$ns" || return 1
		ip -n "$ns" link add br0 type bridge forward_delay 0 \
			stp_state 0 || return 1
		ip -n "$ns" link set br0 mtu "$mtu" || return 1
		for ((i = 1; i <= n; i++)); do
			ip link add "p$i" netns "$ns" type veth \
				peer name eth0 netns "$(ns_name "$i")" || return 1
			ip -n "$ns" link set "p$i" mtu "$mtu" master br0 up ||
				return 1
		done
		ip -n "$ns" link set br0 up || return 1
	fi
	for ((i = 1; i <= n; i++)); do
		ns=$(ns_name "$i")
		mac=$(printf '02:53:72:%02x:00:%02x' "$x" "$i")
		ip -n "$ns" link set eth0 address "$mac" mtu "$mtu" || return 1
		ip -n "$ns" addr add "198.18.$x.$i/24" dev eth0 || return 1
		ip -n "$ns" addr add "fd53:7264:6d61:$x::$i/64" dev eth0 \
			nodad || return 1
		ip -n "$ns" link set eth0 up || return 1
	done
	# The link-local address comes with the link: wait until every
	# host has its three addresses (IPv4, ours, link-local), none
	# tentative.
	for ((i = 1; i <= n; i++)); do
		ns=$(ns_name "$i")
		for ((k = 0; k < 100; k++)); do
			[ "$(ip -n "$ns" addr show dev eth0 | grep -c ' inet')" -ge 3 ] &&
				! ip -n "$ns" addr show dev eth0 | grep -q tentative &&
				break
			sleep 0.02
		done
		[ "$k" -lt 100 ] ||
			{ echo "$me: $ns: eth0's addresses not ready" >&2; return 1; }
	done
}

# up N: make the hosts; the owner is $owner (pid).
up()
{
	local n=$1 root x

	[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] ||
		{ echo "$me: N must be 1..250" >&2; exit 2; }
	[[ $mtu =~ ^[0-9]+$ ]] && [ "$mtu" -ge 1280 ] && [ "$mtu" -le 65535 ] ||
		{ echo "$me: MTU must be 1280..65535 (IPv6 needs 1280)" >&2; exit 2; }
	gc
	remove "$tag"
	root=$(state_root "$tag")
	x=$(subnet_of "$tag")
	(umask 077 && mkdir "$root") || die "cannot create $root"
	echo "$owner $(start_time "$owner")" >"$root/.making.tmp" &&
		mv "$root/.making.tmp" "$root/.making"
	trap 'remove "$tag"; exit 1' INT TERM HUP
	if ! make_hosts "$n" "$root" "$x"; then
		remove "$tag"
		die "tag $tag: could not make $n hosts"
	fi
	# Written whole, then renamed: gc never reads half a state.
	{
		echo "n=$n"
		echo "x=$x"
		echo "mtu=$mtu"
		echo "owner=$owner"
		echo "owner_start=$(start_time "$owner")"
	} >"$root/hosts.tmp" && mv "$root/hosts.tmp" "$root/hosts"
	rm -f "$root/.making"
	trap - INT TERM HUP
}

# host_index: check host number ${args[0]} against the state of $tag; set
# i (the host), x (its subnet).
host_index()
{
	local n

	[ ${#args[@]} -eq 1 ] || usage
	i=${args[0]}
	[[ $i =~ ^[0-9]+$ ]] && [ "$i" -ge 1 ] || usage
	n=$(state_get "$tag" n)
	[ -n "$n" ] || die "no hosts with tag '$tag' (hosts.sh up first)"
	[ "$i" -le "$n" ] || die "host $i: tag '$tag' has $n hosts"
	x=$(state_get "$tag" x)
}

sub=${1:-}
[ $# -gt 0 ] && shift
parse "$@"
check_tag
case $sub in
up)
	need_root
	[ ${#args[@]} -eq 1 ] && [ -z "$have_cmd" ] || usage
	owner=$PPID
	up "${args[0]}"
	echo "hosts.sh: tag $tag: ${args[0]} hosts, MTU $mtu," \
		"198.18.$(subnet_of "$tag").0/24"
	;;
with)
	need_root
	[ ${#args[@]} -eq 1 ] && [ -n "$have_cmd" ] && [ ${#cmd[@]} -gt 0 ] ||
		usage
	owner=$$
	up "${args[0]}"
	export SRDMA_NET_TAG=$tag
	trap 'remove "$tag"' EXIT
	trap 'exit 1' INT TERM HUP
	# Not exec: the trap must run after CMD.
	"${cmd[@]}"
	rc=$?
	exit $rc
	;;
run)
	need_root
	[ -n "$have_cmd" ] && [ ${#cmd[@]} -gt 0 ] || usage
	host_index
	exec ip netns exec "$(ns_name "$i")" env \
		SRDMA_DIR="$(state_root "$tag")/h$i" SRDMA_LINK_LAYER=eth \
		"${cmd[@]}"
	;;
addr)
	[ -z "$have_cmd" ] || usage
	host_index
	if [ -n "$v6" ]; then
		echo "fd53:7264:6d61:$x::$i"
	else
		echo "198.18.$x.$i"
	fi
	;;
ns)
	[ -z "$have_cmd" ] || usage
	host_index
	ns_name "$i"
	;;
dir)
	[ -z "$have_cmd" ] || usage
	host_index
	echo "$(state_root "$tag")/h$i"
	;;
down)
	need_root
	[ ${#args[@]} -eq 0 ] || usage
	remove "$tag"
	;;
gc)
	need_root
	gc
	;;
*)
	usage
	;;
esac
