// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_fork_init.c - ibv_fork_init(), ibv_is_fork_initialized(),
 * RDMAV_FORK_SAFE / IBV_FORK_SAFE / RDMAV_HUGEPAGES_SAFE answer as
 * rdma-core 44 does.
 *
 * Fork support state is per process and one-way, so every scenario runs
 * in a fresh process: this binary re-executes itself as
 * "scenario NAME LIBRARY", dlopen()s the library (RTLD_DEEPBIND, so the
 * real one keeps its own symbols) and prints its answers. Each scenario
 * runs against softrdma and, when Debian's libibverbs 44 is installed
 * (and this is not a sanitizer build, whose runtime refuses
 * RTLD_DEEPBIND), against it too: the lines must be identical. They are also checked
 * against the rules (upstream memory.c), with the kernel's copy-on-fork
 * answer probed the way rdma-core does it: UNNEEDED everywhere when the
 * kernel reports copy-on-fork, else DISABLED until ibv_fork_init()
 * succeeds, which is too late (EINVAL) once a range was registered.
 */
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>

#include "func_util.h"


#define REAL_LIB "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0"

/* The sanitizer runtimes refuse RTLD_DEEPBIND: rules only there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CAN_LOAD_REAL 0
#else
#define CAN_LOAD_REAL 1
#endif

struct lib {
	int (*fork_init)(void);
	enum ibv_fork_status (*is_init)(void);
	int (*dontfork)(void *, size_t);
	int (*dofork)(void *, size_t);
	struct ibv_device **(*get_list)(int *);
	void (*free_list)(struct ibv_device **);
};

static char status_char(enum ibv_fork_status s)
{
	switch (s) {
	case IBV_FORK_DISABLED:
		return 'D';
	case IBV_FORK_ENABLED:
		return 'E';
	case IBV_FORK_UNNEEDED:
		return 'U';
	}
	return '?';
}

/* Child side: run one scenario, print "answer answer ...". */
static int scenario(const char *name, const char *path)
{
	/* Ours is loaded already (linked in); the real one must keep its
	 * internal calls to itself. */
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL |
				       (strcmp(path, REAL_LIB) ? 0 :
								 RTLD_DEEPBIND));
	static char buf[4096];
	struct ibv_device **list;
	struct lib l;
	int n;

	if (!h) {
		printf("dlopen failed: %s\n", dlerror());
		return 1;
	}
	l.fork_init = (int (*)(void))dlsym(h, "ibv_fork_init");
	l.is_init = (enum ibv_fork_status(*)(void))dlsym(
		h, "ibv_is_fork_initialized");
	l.dontfork = (int (*)(void *, size_t))dlsym(h, "ibv_dontfork_range");
	l.dofork = (int (*)(void *, size_t))dlsym(h, "ibv_dofork_range");
	l.get_list = (struct ibv_device * *(*)(int *))dlsym(
		h, "ibv_get_device_list");
	l.free_list =
		(void (*)(struct ibv_device **))dlsym(h, "ibv_free_device_list");
	if (!l.fork_init || !l.is_init || !l.dontfork || !l.dofork ||
	    !l.get_list || !l.free_list) {
		printf("dlsym failed\n");
		return 1;
	}
	if (!strcmp(name, "plain")) {
		printf("%c", status_char(l.is_init()));
		printf(" %d", l.fork_init());
		printf(" %c", status_char(l.is_init()));
		printf(" %d", l.fork_init());
		printf(" %c\n", status_char(l.is_init()));
	} else if (!strcmp(name, "dontfork") || !strcmp(name, "dofork")) {
		n = name[1] == 'o' && name[2] == 'n' ?
			    l.dontfork(buf, sizeof(buf)) :
			    l.dofork(buf, sizeof(buf));
		printf("%d", n);
		printf(" %d", l.fork_init());
		printf(" %c\n", status_char(l.is_init()));
	} else if (!strcmp(name, "enabled_range")) {
		printf("%d", l.fork_init());
		printf(" %d", l.dontfork(buf, sizeof(buf)));
		printf(" %d", l.dofork(buf, sizeof(buf)));
		printf(" %d", l.fork_init());
		printf(" %c\n", status_char(l.is_init()));
	} else if (!strcmp(name, "env")) {
		printf("%c", status_char(l.is_init()));
		list = l.get_list(&n);
		if (list)
			l.free_list(list);
		printf(" %c\n", status_char(l.is_init()));
	} else if (!strcmp(name, "env_late")) {
		l.dontfork(buf, sizeof(buf));
		list = l.get_list(&n);
		if (list)
			l.free_list(list);
		printf("%c\n", status_char(l.is_init()));
	} else {
		printf("unknown scenario\n");
		return 1;
	}
	return 0;
}

/* softrdma only: the registrations that make ibv_fork_init too late. */
static int scenario_reg(bool odp)
{
	struct ibv_context *ctx = fu_open_srdma();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static char buf[8192] __attribute__((aligned(4096)));
	struct ibv_mr *mr;
	int ret;

	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE |
				(odp ? IBV_ACCESS_ON_DEMAND : 0));
	if (!mr)
		return 1;
	ret = ibv_fork_init();
	printf("%d %c\n", ret, status_char(ibv_is_fork_initialized()));
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}

/* Parent side: run @name against @lib with @env added; capture stdout. */
static void run(const char *name, const char *lib, const char *env,
		char *out, size_t len)
{
	char self[512], *argv[5], **envp;
	posix_spawn_file_actions_t fa;
	int pfd[2], st, n = 0;
	size_t got = 0;
	ssize_t r;
	pid_t pid;

	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);

	assert_true(sl > 0);
	self[sl] = '\0';
	while (environ[n])
		n++;
	envp = calloc((size_t)n + 2, sizeof(*envp));
	assert_non_null(envp);
	n = 0;
	/* The fork variables of this process must not leak in. */
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "RDMAV_FORK_SAFE=", 16) &&
		    strncmp(*e, "IBV_FORK_SAFE=", 14) &&
		    strncmp(*e, "RDMAV_HUGEPAGES_SAFE=", 21))
			envp[n++] = *e;
	if (env)
		envp[n++] = (char *)env;
	envp[n] = NULL;
	argv[0] = self;
	argv[1] = (char *)"scenario";
	argv[2] = (char *)name;
	argv[3] = (char *)lib;
	argv[4] = NULL;
	assert_int_equal(pipe(pfd), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	assert_int_equal(posix_spawn(&pid, self, &fa, NULL, argv, envp), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	while (got + 1 < len && (r = read(pfd[0], out + got,
					   len - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = '\0';
	if (got && out[got - 1] == '\n')
		out[got - 1] = '\0';
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	fu_expect(WIFEXITED(st) && !WEXITSTATUS(st), "%s %s: status %#x",
		  name, lib, st);
	free(envp);
}

/* Does the kernel report copy-on-fork? (the real library's own answer
 * when present, else ours, which asks the same netlink question). */
static bool kernel_cof(const char *lib)
{
	char out[128];

	run("plain", lib, NULL, out, sizeof(out));
	return out[0] == 'U';
}

static void test_fork_init_semantics(void **state)
{
	static const struct {
		const char *name, *env, *no_cof, *cof;
	} sc[] = {
		{ "plain", NULL, "D 0 E 0 E", "U 0 U 0 U" },
		{ "plain", "RDMAV_HUGEPAGES_SAFE=1", "D 0 E 0 E", "U 0 U 0 U" },
		{ "dontfork", NULL, "0 22 D", "0 22 U" },
		{ "dofork", NULL, "0 22 D", "0 22 U" },
		{ "enabled_range", NULL, "0 0 0 0 E", "0 0 0 0 U" },
		{ "env", NULL, "D D", "U U" },
		{ "env", "RDMAV_FORK_SAFE=1", "D E", "U U" },
		{ "env", "RDMAV_FORK_SAFE=0", "D D", "U U" },
		{ "env", "RDMAV_FORK_SAFE=", "D E", "U U" },
		{ "env", "IBV_FORK_SAFE=yes", "D E", "U U" },
		{ "env_late", "RDMAV_FORK_SAFE=1", "D", "U" },
	};
	char ours[512], real[512], lib[512];
	const char *bd = getenv("SRDMA_BUILD_DIR");
	bool have_real = CAN_LOAD_REAL && access(REAL_LIB, R_OK) == 0, cof;
	size_t i;

	(void)state;
	snprintf(lib, sizeof(lib), "%s/lib/libibverbs.so.1",
		 bd ? bd : "build");
	cof = kernel_cof(have_real ? REAL_LIB : lib);
	printf("fork_init: kernel copy-on-fork %s; rdma-core 44 %s\n",
	       cof ? "reported" : "not reported (no RDMA netlink or old)",
	       have_real ? "installed: compared line by line" :
			   "not loadable here: rules only");
	for (i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
		const char *want = cof ? sc[i].cof : sc[i].no_cof;

		run(sc[i].name, lib, sc[i].env, ours, sizeof(ours));
		fu_expect(!strcmp(ours, want), "%s [%s]: softrdma '%s', want '%s'",
			  sc[i].name, sc[i].env ? sc[i].env : "", ours, want);
		if (have_real) {
			run(sc[i].name, REAL_LIB, sc[i].env, real, sizeof(real));
			fu_expect(!strcmp(ours, real),
				  "%s [%s]: softrdma '%s', rdma-core 44 '%s'",
				  sc[i].name, sc[i].env ? sc[i].env : "", ours,
				  real);
		}
		printf("fork_init: %-13s %-24s softrdma '%s'%s%s%s\n",
		       sc[i].name, sc[i].env ? sc[i].env : "", ours,
		       have_real ? ", rdma-core 44 '" : "",
		       have_real ? real : "", have_real ? "'" : "");
	}
	/* Registrations: non-ODP makes it too late, ODP does not. */
	run("reg", lib, NULL, ours, sizeof(ours));
	fu_expect(!strcmp(ours, cof ? "22 U" : "22 D"),
		  "ibv_fork_init after ibv_reg_mr: '%s'", ours);
	printf("fork_init: after ibv_reg_mr      '%s'\n", ours);
	run("reg_odp", lib, NULL, ours, sizeof(ours));
	fu_expect(!strcmp(ours, cof ? "0 U" : "0 E"),
		  "ibv_fork_init after an ODP ibv_reg_mr: '%s'", ours);
	printf("fork_init: after ODP ibv_reg_mr  '%s'\n", ours);
	fu_done();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork_init_semantics),
	};

	if (argc == 4 && !strcmp(argv[1], "scenario")) {
		if (!strcmp(argv[2], "reg") || !strcmp(argv[2], "reg_odp"))
			return scenario_reg(argv[2][3] == '_');
		return scenario(argv[2], argv[3]);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
