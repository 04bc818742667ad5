#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# run_pyverbs_root.sh - run_pyverbs.sh for modules every test of which
# needs root (the suite's raw packet, flow steering and RSS tests skip for
# other users, and run_pyverbs.sh fails a run where nothing ran): exit 77
# (CTest: skipped) when not root, else the same arguments to
# run_pyverbs.sh.
[ "$(id -u)" -eq 0 ] || { echo "run_pyverbs_root: needs root: skipped"; exit 77; }
exec bash "$(dirname "$0")/run_pyverbs.sh" "$@"
