// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_selfcopy.c - util/selfcopy.h: copies within our own memory behave
 * as process_vm_writev/readv on ourselves (whole lists, in order; an
 * unmapped, unreadable, unwritable or truncated page is -1/EFAULT, never
 * a signal), and the fault guard behind the memcpy path never takes a
 * signal that is not its own.
 *
 * The guard is installed once per process (first use), so every case runs
 * in a forked child of its own, which checks with CHECK() and reports
 * through its exit status: the parent never uses the guard itself.
 *
 * Built twice. unit_test_selfcopy exports its static copy of the signal
 * watch's interposers (test_selfcopy.map), as libibverbs does when it
 * comes before the C library. unit_test_selfcopy_preload
 * (SELFCOPY_PRELOAD: the path of libsrdma_sigwatch.so) exports nothing,
 * as a libibverbs loaded after the C library (UCX, Open MPI, pyverbs):
 * it runs itself again with that library preloaded, as `srdma run` does,
 * and the same cases must hold through the preloaded watch; and a run
 * without it must find no watch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/selfcopy.h"
#include "util/sigwatch.h"

#define CHECK(c)                                                          \
	do {                                                              \
		if (!(c)) {                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n",      \
				__FILE__, __LINE__, #c);                  \
			_exit(1);                                         \
		}                                                         \
	} while (0)

#if defined(__SANITIZE_THREAD__)
#define GUARD_TESTABLE 0	/* TSan: the guard is off, process_vm_* only */
#define GUARD_ON NULL
#else
#define GUARD_TESTABLE 1
#define GUARD_ON "SRDMA_SELF_COPY=1"
#endif
/* The watch binds where the C library's version is known (sigwatch.c).
 * Under ASan it depends on how the runtime is linked (ahead of us when
 * shared; statically linked, its weak interceptors yield to this test's
 * static copy of ours): not asserted there. */
#if defined(__x86_64__) && defined(__GLIBC__) && GUARD_TESTABLE && \
	!defined(__SANITIZE_ADDRESS__)
#define WATCH_TESTABLE 1
#else
#define WATCH_TESTABLE 0
#endif

static void run_child(void (*fn)(void), const char *env)
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		if (env)
			putenv((char *)env);
		alarm(20);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		fprintf(stderr, "child: %s %d\n",
			WIFSIGNALED(st) ? "signal" : "exit",
			WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static char *map(size_t len, int prot)
{
	char *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	return p;
}

/* Uneven lists on both sides: every byte lands in order, both ways. */
static void lists(void)
{
	char src[100], dst[100];
	struct iovec l[3] = { { src, 7 }, { src + 7, 0 }, { src + 7, 93 } };
	struct iovec r[4] = { { dst, 50 }, { dst + 50, 1 }, { dst + 51, 49 },
			      { NULL, 0 } };
	int i;

	for (i = 0; i < 100; i++)
		src[i] = (char)i;
	memset(dst, 0, sizeof(dst));
	CHECK(srdma_self_vm_rw(l, 3, r, 4, true) == 100);
	CHECK(!memcmp(src, dst, 100));
	memset(src, 0, sizeof(src));
	CHECK(srdma_self_vm_rw(l, 3, r, 4, false) == 100);
	CHECK(!memcmp(src, dst, 100));
	/* Lists of different totals: the shorter one's. */
	l[2].iov_len = 13;
	CHECK(srdma_self_vm_rw(l, 3, r, 4, true) == 20);
	CHECK(srdma_self_vm_rw(l, 0, r, 4, true) == 0);
}

/* Each kind of bad page, several times over (a fault must not leave the
 * signal blocked), then a good copy again. */
static void faults(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *none = map(pg, PROT_NONE), *ro = map(pg, PROT_READ);
	char *gone = map(pg, PROT_READ | PROT_WRITE), buf[64] = "x";
	char *two = map(2 * pg, PROT_READ | PROT_WRITE);
	struct iovec l = { buf, sizeof(buf) }, r;
	char name[] = "/tmp/srdma-selfcopy-XXXXXX";
	char *file;
	int fd, i;

	CHECK(!munmap(gone, pg));
	CHECK(!mprotect(two + pg, pg, PROT_NONE));
	fd = mkstemp(name);
	CHECK(fd >= 0);
	unlink(name);
	CHECK(!ftruncate(fd, (off_t)pg));
	file = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(file != MAP_FAILED);
	CHECK(!ftruncate(fd, 0));	/* the page is past the end: SIGBUS */
	for (i = 0; i < 3; i++) {
		r = (struct iovec){ none + 8, 16 };
		errno = 0;
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, false) == -1);
		CHECK(errno == EFAULT);
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, true) == -1);
		r = (struct iovec){ ro, 16 };
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, false) == 16);
		errno = 0;
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, true) == -1);
		CHECK(errno == EFAULT);
		r = (struct iovec){ gone, 16 };
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, true) == -1);
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, false) == -1);
		r = (struct iovec){ file, 16 };
		errno = 0;
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, true) == -1);
		CHECK(errno == EFAULT);
		/* Partly good: the first page is fine, the fault comes
		 * part-way. */
		r = (struct iovec){ two + pg - 8, 16 };
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, false) == -1);
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, true) == -1);
	}
	lists();
	close(fd);
}

static void faults_guarded(void)
{
	CHECK(srdma_self_copy_guarded() == GUARD_TESTABLE);
	faults();
}

static void faults_syscall(void)
{
	CHECK(!srdma_self_copy_guarded());
	faults();
}

static void test_lists(void **state)
{
	(void)state;
	run_child(lists, NULL);
}

static void test_faults(void **state)
{
	(void)state;
	run_child(faults_guarded, GUARD_ON);
	run_child(faults_syscall, "SRDMA_SELF_COPY=0");
}

/* ---- signals that are not ours ------------------------------------------ */

static sigjmp_buf app_env;
static volatile sig_atomic_t app_faults;

static void app_handler(int sig)
{
	(void)sig;
	app_faults++;
	siglongjmp(app_env, 1);
}

/* A fault outside our copies reaches the handler installed before ours. */
static void chains(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	volatile char *none = map(pg, PROT_NONE);
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = app_handler;
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGSEGV, &sa, NULL));
	CHECK(srdma_self_copy_guarded() == GUARD_TESTABLE);
	if (!sigsetjmp(app_env, 1))
		(void)none[0];
	CHECK(app_faults == 1);
	/* And our own faults still never reach it. */
	faults();
	CHECK(app_faults == 1);
}

/* A handler installed after ours: our copies step aside (process_vm_*),
 * so its owner never sees our faults; back to memcpy when ours is back. */
static void replaced(void)
{
	struct sigaction sa, ours;

	CHECK(srdma_self_copy_guarded() == GUARD_TESTABLE);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = app_handler;
	sigemptyset(&sa.sa_mask);
	CHECK(!sigaction(SIGSEGV, &sa, &ours));
	faults();
	CHECK(app_faults == 0);
	CHECK(!sigaction(SIGSEGV, &ours, NULL));
	faults();
	CHECK(app_faults == 0);
	/* A batch asks once, at its first copy: replaced before it, the
	 * whole batch steps aside. */
	CHECK(!sigaction(SIGSEGV, &sa, NULL));
	srdma_self_copy_batch(true);
	faults();
	srdma_self_copy_batch(false);
	CHECK(app_faults == 0);
	CHECK(!sigaction(SIGSEGV, &ours, NULL));
	srdma_self_copy_batch(true);
	srdma_self_copy_batch(true);
	faults();
	srdma_self_copy_batch(false);
	faults();
	srdma_self_copy_batch(false);
	CHECK(app_faults == 0);
}

/* A thread that blocks every signal, as our progress threads do for the
 * application's: its copies still fail with EFAULT (a blocked SIGSEGV is
 * delivered by the kernel with the default action: the process dies). */
static void *blocked_thread(void *arg)
{
	(void)arg;
	faults();
	return NULL;
}

static void blocked(void)
{
	pthread_t t;

	CHECK(srdma_self_copy_guarded() == GUARD_TESTABLE);
	CHECK(!srdma_thread_create_nosig(&t, blocked_thread, NULL));
	CHECK(!pthread_join(t, NULL));
}

static void test_blocked(void **state)
{
	(void)state;
	run_child(blocked, GUARD_ON);
}

static void replaced_unwatched(void)
{
	setenv("SRDMA_SIGWATCH", "0", 1);
	CHECK(!srdma_sigwatch_active());
	replaced();
}

static void test_chain(void **state)
{
	(void)state;
	run_child(chains, GUARD_ON);
	run_child(replaced, GUARD_ON);
	run_child(replaced_unwatched, GUARD_ON);
}

/* ---- the signal watch (sigwatch.h) ------------------------------------- */

static void good_copies(int n)
{
	char a[8] = "abcdefg", b[8];
	struct iovec l = { a, sizeof(a) }, r = { b, sizeof(b) };

	while (n--)
		CHECK(srdma_self_vm_rw(&l, 1, &r, 1, n & 1) == 8);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* Installs app_handler for SIGSEGV the way @how says, through the C
 * library's functions the watch interposes. */
static void install_app(int how)
{
	switch (how) {
	case 0:
		CHECK(signal(SIGSEGV, app_handler) != SIG_ERR);
		break;
	case 1:
		CHECK(sysv_signal(SIGSEGV, app_handler) != SIG_ERR);
		break;
	case 2:
		CHECK(ssignal(SIGSEGV, app_handler) != SIG_ERR);
		break;
	case 3:
		CHECK(sigset(SIGSEGV, app_handler) != SIG_ERR);
		break;
	default: {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = app_handler;
		sigemptyset(&sa.sa_mask);
		CHECK(!sigaction(SIGSEGV, &sa, NULL));
	}
	}
}
#pragma GCC diagnostic pop

/* With the watch, a copy asks the kernel nothing while no handler
 * changes, and a handler installed through the C library just before a
 * fault in a copy never sees it, whichever function installed it. */
static void watched(void)
{
	struct sigaction ours;
	unsigned long q;
	int how;

	CHECK(srdma_self_copy_guarded() == GUARD_TESTABLE);
	if (WATCH_TESTABLE)
		CHECK(srdma_sigwatch_active());
	good_copies(1);
	q = srdma_self_copy_queries();
	good_copies(1000);
	if (srdma_sigwatch_active())	/* at most the backstop's look (2) */
		CHECK(srdma_self_copy_queries() - q <= 2);
	CHECK(!sigaction(SIGSEGV, NULL, &ours));
	for (how = 0; how < 5; how++) {
		install_app(how);
		faults();
		CHECK(app_faults == 0);
		CHECK(!sigaction(SIGSEGV, &ours, NULL));
		faults();
		CHECK(app_faults == 0);
	}
	/* Back to no system call once ours is found again. */
	good_copies(1);
	q = srdma_self_copy_queries();
	good_copies(1000);
	if (srdma_sigwatch_active())
		CHECK(srdma_self_copy_queries() - q <= 2);
}

/* Without the watch, every copy asks. */
static void unwatched(void)
{
	unsigned long q;

	setenv("SRDMA_SIGWATCH", "0", 1);
	CHECK(srdma_self_copy_guarded() == GUARD_TESTABLE);
	CHECK(!srdma_sigwatch_active());
	q = srdma_self_copy_queries();
	good_copies(1000);
	if (GUARD_TESTABLE)
		CHECK(srdma_self_copy_queries() - q >= 1000);
}

/* The kernel's struct sigaction on x86-64 (rt_sigaction's own). */
struct kact {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

static void raw_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	app_handler(sig);
}

/* What the watch cannot see, a raw rt_sigaction system call, the
 * backstop catches: within 1024 copies of the thread, ours found gone,
 * the copies step aside until it is back. (A fault in a copy before
 * that would reach the raw handler: the contract's one gap.) */
static void raw_installed(void)
{
	struct kact ours, app;
	unsigned long q;

	CHECK(srdma_self_copy_guarded() == GUARD_TESTABLE);
	CHECK(!syscall(SYS_rt_sigaction, SIGSEGV, NULL, &ours, 8));
	app = ours;	/* keeps the C library's restorer */
	app.handler = (void *)raw_handler;
	CHECK(!syscall(SYS_rt_sigaction, SIGSEGV, &app, NULL, 8));
	good_copies(1024);
	faults();
	CHECK(app_faults == 0);
	CHECK(!syscall(SYS_rt_sigaction, SIGSEGV, &ours, NULL, 8));
	faults();
	CHECK(app_faults == 0);
	good_copies(1);
	q = srdma_self_copy_queries();
	good_copies(1000);
	CHECK(srdma_self_copy_queries() - q <= 2);
}

static void test_watch(void **state)
{
	(void)state;
	run_child(watched, GUARD_ON);
	run_child(unwatched, GUARD_ON);
	if (WATCH_TESTABLE)
		run_child(raw_installed, GUARD_ON);
}

#ifdef SELFCOPY_PRELOAD
/* Without the preload, this executable's copy of the watch binds nowhere
 * (it exports nothing): no watch, every copy asks. Checked by running
 * ourselves again without LD_PRELOAD (main, SRDMA_TEST_BARE). */
static void test_needs_preload(void **state)
{
	static char name[] = "unit_test_selfcopy_preload";
	char *const argv[] = { name, NULL };
	int st;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		unsetenv("LD_PRELOAD");
		setenv("SRDMA_TEST_BARE", "1", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void bare(void)
{
	unsigned long q;

	CHECK(srdma_self_copy_guarded() == GUARD_TESTABLE);
	CHECK(!srdma_sigwatch_active());
	q = srdma_self_copy_queries();
	good_copies(100);
	if (GUARD_TESTABLE)
		CHECK(srdma_self_copy_queries() - q >= 100);
}

/* Run again with libsrdma_sigwatch.so preloaded (not under a sanitizer,
 * whose runtime must come first and whose interceptors come before any
 * watch anyway). */
static void preload_self(char **argv)
{
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	if (getenv("SRDMA_TEST_PRELOADED"))
		return;
	setenv("SRDMA_TEST_PRELOADED", "1", 1);
	setenv("LD_PRELOAD", SELFCOPY_PRELOAD, 1);
	execv("/proc/self/exe", argv);
	fprintf(stderr, "exec with the preload: %s\n", strerror(errno));
	exit(1);
#else
	(void)argv;
#endif
}
#endif

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_blocked),
		cmocka_unit_test(test_watch),
#ifdef SELFCOPY_PRELOAD
		cmocka_unit_test(test_needs_preload),
#endif
	};

	(void)argc;
#ifdef SELFCOPY_PRELOAD
	if (getenv("SRDMA_TEST_BARE")) {
#if GUARD_TESTABLE
		putenv((char *)GUARD_ON);
#endif
		bare();
		return 0;
	}
	preload_self(argv);
#else
	(void)argv;
#endif
	return cmocka_run_group_tests(tests, NULL, NULL);
}
