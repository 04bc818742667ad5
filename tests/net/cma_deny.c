// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * cma_deny.c - run a program that may not attach other processes' memory,
 * as under Yama ptrace_scope=1 between two unrelated processes
 * (tests/net/ctr_local.sh, docs/design/containers.md).
 *
 * Usage: cma_deny PROGRAM [ARGS...]
 *
 * Installs a seccomp filter, then execs PROGRAM (the pid stays ours):
 * process_vm_readv and process_vm_writev on any pid but our own fail with
 * EPERM, the error the kernel gives when ptrace access is refused; on our
 * own pid they work, as Yama lets a process attach itself. Nothing else
 * changes. The kernel this runs on has no Yama, so the tests make the
 * same refusal this way.
 *
 * Exit: PROGRAM's, or 125 when the filter cannot be installed, 127 when
 * PROGRAM cannot be executed.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "cma_deny: add this architecture's AUDIT_ARCH"
#endif

#define LD(f) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, f))

int main(int argc, char **argv)
{
	unsigned int pid = (unsigned int)getpid();
	struct sock_filter f[] = {
		LD(arch),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		LD(nr),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_writev, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		LD(args[0]),	/* pid_t: the low word (little endian) */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, pid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (argc < 2) {
		fprintf(stderr, "usage: cma_deny PROGRAM [ARGS...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		fprintf(stderr, "cma_deny: seccomp: %s\n", strerror(errno));
		return 125;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "cma_deny: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
