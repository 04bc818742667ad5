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

echo "== ibv_devinfo -v through softrdma"
build/bin/srdma run -- ibv_devinfo -v
echo "== memory registration demo"
build/bin/srdma run -- build/bin/srdma-reg-demo
