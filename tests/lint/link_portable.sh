#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# link_portable.sh - a program built against our libibverbs must run on
# rdma-core's.
#
# libibverbs exports the C library's handler-installing functions
# (sigaction, signal, ...) for the memcpy guard's signal watch
# (src/util/sigwatch.c), under the C library's own version node. They
# must stay NON-default versions (name@GLIBC_2.2.5): with a default one
# the static linker binds a program's sigaction to libibverbs, the
# program then needs "GLIBC_2.2.5 from libibverbs.so.1", and it fails to
# start against any other libibverbs. This builds such a program against
# the build tree's library and checks (1) that it needs nothing but
# IBVERBS_* versions from libibverbs.so.1 and (2) that, run against our
# library, its sigaction still resolves to our watch.
#
# Usage: link_portable.sh BUILD_LIB_DIR INCLUDE_DIR WORKDIR
set -eu
lib=$1 inc=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
cat >"$dir/p.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>
int main(void)
{
	struct sigaction sa;
	Dl_info i;
	void *p;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGUSR1, &sa, NULL) || signal(SIGUSR2, SIG_IGN) == SIG_ERR)
		return 2;
	ibv_free_device_list(ibv_get_device_list(NULL));
	p = dlvsym(RTLD_DEFAULT, "sigaction", "GLIBC_2.2.5");
	if (!p || !dladdr(p, &i))
		return 3;
	printf("sigaction from %s\n", i.dli_fname);
	return 0;
}
C
cc -I"$inc" "$dir/p.c" -o "$dir/p" -L"$lib" -libverbs -ldl
need=$(readelf -V "$dir/p" | awk '/File: libibverbs/ {f=1; next} /File:/ {f=0} f && /Name:/ {print $3}')
echo "versions needed from libibverbs.so.1: $need"
for v in $need; do
	case $v in
	IBVERBS_*) ;;
	*) echo "FAIL: the program needs $v from libibverbs.so.1: it would not start on rdma-core's libibverbs"; exit 1 ;;
	esac
done
out=$(LD_LIBRARY_PATH="$lib" "$dir/p")
echo "$out"
case $out in
*"$lib"/libibverbs.so*) ;;
*) echo "FAIL: the program's sigaction does not reach libibverbs's signal watch"; exit 1 ;;
esac
rm -rf "$dir"
echo "link_portable: OK"
