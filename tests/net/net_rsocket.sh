#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# net_rsocket.sh - an rsocket client pair (tests/clients/rsockets.sh)
# across two test hosts: the server in host 1, the client in host 2, our
# rdma_cm connecting them and the net transport (RoCEv2) carrying the data.
#
# Usage: net_rsocket.sh MODE PORT SRDMA_EXE [ARGS...]   (as rsockets.sh)
# Makes the hosts with `hosts.sh with 2` (tag nr<pid>), so they are removed
# whatever happens; exit 77 without root.
set -u
here=$(cd "$(dirname "$0")" && pwd)
hosts=$here/hosts.sh
pair=$here/../clients/rsockets.sh

if [ "${1:-}" = --inner ]; then
	shift
	addr=$(bash "$hosts" addr 1) || exit 1
	RSOCK_HOSTS_SH=$hosts RSOCK_SERVER_NS=1 RSOCK_CLIENT_NS=2 \
		RSOCK_ADDR=$addr exec bash "$pair" "$@"
fi
exec bash "$hosts" with 2 --tag "nr$$" -- bash "$0" --inner "$@"
