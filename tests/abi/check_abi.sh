#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# check_abi.sh - prove that Debian's RDMA binaries can load against our
# libibverbs.so.1 and librdmacm.so.1.
#
# Every client is linked BIND_NOW, so each versioned symbol it imports
# from either library, and each version node it names, must exist in ours
# or the loader refuses to start it (docs/abi.md section 0). For every
# installed client below, this compares the imports shown by `objdump -T`
# (symbols) and `readelf -V` (version needs) against what our libraries
# define. Clients that are not installed are skipped.
#
# Usage: check_abi.sh [BUILD_DIR]
#   BUILD_DIR defaults to $SRDMA_BUILD_DIR, then to <source>/build.
# Exit status: 0 if nothing is missing, 1 if something is (each missing
# symbol@version is listed with the clients that need it), 2 on setup
# errors.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${SRDMA_BUILD_DIR:-$here/../../build}}
libdir=$build/lib
ours=("$libdir/libibverbs.so.1" "$libdir/librdmacm.so.1")

for tool in objdump readelf; do
	command -v "$tool" >/dev/null ||
		{ echo "check_abi: $tool not found" >&2; exit 2; }
done
for lib in "${ours[@]}"; do
	[ -e "$lib" ] || { echo "check_abi: $lib not built" >&2; exit 2; }
done

clients=(
	/usr/bin/ibv_devinfo
	/usr/bin/ibv_rc_pingpong
	/usr/bin/ib_write_bw
	/usr/bin/rping
	/usr/bin/udaddy
	/usr/bin/ucmatose
	/usr/bin/rdma_server
	/usr/bin/rdma_client
	/usr/lib/x86_64-linux-gnu/libmlx5.so.1
	/usr/lib/x86_64-linux-gnu/libefa.so.1
	/usr/lib/x86_64-linux-gnu/libmlx4.so.1
)
if [ -d /usr/lib/python3/dist-packages/pyverbs ]; then
	while IFS= read -r so; do
		clients+=("$so")
	done < <(find /usr/lib/python3/dist-packages/pyverbs -name '*.so' | sort)
fi

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# Defined, versioned symbols of our libraries as name@version. Hidden
# (compat) versions print in parentheses; the loader still binds to them.
for lib in "${ours[@]}"; do
	objdump -T "$lib" | awk '$0 !~ /\*UND\*/ && NF >= 7 {
		v = $(NF - 1); gsub(/[()]/, "", v); print $NF "@" v }'
done | sort -u > "$tmp/exports"

# Version nodes our libraries define, as lib:node.
for lib in "${ours[@]}"; do
	base=$(basename "$lib")
	readelf -V "$lib" | sed -n '/Version definition/,/Version needs/p' |
		awk -v lib="$base" '/Name:/ && !/Flags: BASE/ {
			print lib ":" $NF }'
done | sort -u > "$tmp/nodes"

: > "$tmp/missing"
checked=0
for bin in "${clients[@]}"; do
	if [ ! -e "$bin" ]; then
		echo "check_abi: skip $bin (not installed)"
		continue
	fi
	checked=$((checked + 1))

	# Imported symbols whose version belongs to one of our libraries.
	objdump -T "$bin" | awk '/\*UND\*/ {
		v = $(NF - 1); gsub(/[()]/, "", v)
		if (v ~ /^(IBVERBS|RDMACM)_/) print $NF "@" v }' |
		sort -u > "$tmp/imports"
	comm -23 "$tmp/imports" "$tmp/exports" |
		sed "s|\$| $bin|" >> "$tmp/missing"

	# Version needs on our sonames: "File: libibverbs.so.1" blocks.
	readelf -V "$bin" | awk '
		/File:/ { f = $0; sub(/.*File: */, "", f); sub(/ .*/, "", f) }
		/Name:/ && f ~ /^lib(ibverbs|rdmacm)\.so\.1$/ {
			n = $0; sub(/.*Name: */, "", n); sub(/ .*/, "", n)
			print f ":" n }' | sort -u > "$tmp/needs"
	comm -23 "$tmp/needs" "$tmp/nodes" |
		sed "s|^|node |; s|\$| $bin|" >> "$tmp/missing"
done

if [ -s "$tmp/missing" ]; then
	echo "check_abi: FAIL - missing from $libdir:"
	sort "$tmp/missing" | awk '{
		key = $1; if ($1 == "node") key = $1 " " $2
		who[key] = who[key] " " $NF; if (!(key in seen)) {
			seen[key] = 1; order[n++] = key } }
		END { for (i = 0; i < n; i++)
			printf "  %s  (needed by%s)\n", order[i], who[order[i]] }'
	exit 1
fi
echo "check_abi: OK - $checked clients, $(wc -l < "$tmp/exports") exports"
exit 0
