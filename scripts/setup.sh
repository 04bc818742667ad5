#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# setup.sh - README command 1: install the Debian 12 packages softrdma
# builds against and is tested with, build everything into build/, and run
# the demo (ibv_devinfo and a registration tour, both through `srdma run`).
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config libcmocka-dev
      libibverbs-dev librdmacm-dev rdma-core ibverbs-utils rdmacm-utils
      perftest python3-pyverbs libucx-dev libfabric-dev iproute2 procps
      cppcheck)
# The net transport's tests: capture and decode (tshark, tcpdump, scapy),
# faults and benchmarks (iptables, qperf), the wire fuzzer (clang with
# libFuzzer's runtime).
PKGS+=(tshark tcpdump python3-scapy iptables qperf clang libclang-rt-dev)
# ping for the test hosts' self-test (tests/net/test_hosts.sh).
PKGS+=(iputils-ping)
# sysfs readers (tests/sysfs): ibstat/ibstatus (Open MPI: below).
PKGS+=(infiniband-diags)
# The stacks tests (tests/stacks): UCX's tools, Open MPI with its compiler
# wrapper, libfabric's fi_pingpong, setpriv for the unprivileged runs.
PKGS+=(ucx-utils openmpi-bin libopenmpi-dev libfabric-bin util-linux)
# ethtool: the wire test turns GSO off on the test hosts' devices.
PKGS+=(ethtool)
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y \
		--no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -DSRDMA_WERROR=ON
cmake --build build -j"$(nproc)"

# UCX (and Open MPI and everything built on UCX) keeps an IB device only
# if /dev/infiniband/<dev_name> exists: make uverbs_srdma0 for every user
# (root; it lasts until /dev is remade at boot). Without root, `srdma run`
# shows the node to the programs it runs (docs/design/stacks.md).
if [ "$(id -u)" = 0 ]; then
	# A container may forbid mknod: then srdma run covers for it.
	build/bin/srdma devnode ||
		echo "== could not make the node; \`srdma run\` shows it to" \
			"the programs it runs"
else
	echo "== not root: /dev/infiniband/uverbs_srdma0 not made;" \
		"\`srdma run\` shows it to the programs it runs" \
		"(sudo build/bin/srdma devnode makes it for all)"
fi

echo "== ibv_devinfo -v through softrdma"
build/bin/srdma run -- ibv_devinfo -v
echo "== memory registration demo"
build/bin/srdma run -- build/bin/srdma-reg-demo
