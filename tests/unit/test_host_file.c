// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_host_file.c - srdma_host_file_map(), the one mapping of the
 * host-wide files of SRDMA_DIR (the multicast table, the atomics locks):
 *
 *  - without create, a missing file maps nothing;
 *  - a new file is 0600 whatever the umask, sized to the layout, and its
 *    check sees it zeroed (and initialises it); a second mapping sees the
 *    initialised content and shares it with the first;
 *  - a refusing check unmaps and returns NULL;
 *  - a symbolic link or a directory under the name is not used;
 *  - a file of another size is resized to the layout.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "transport/host/host.h"

#define MAGIC 0x54534554u	/* "TEST" */

struct layout {
	uint32_t magic;
	uint32_t calls;		/* checks that saw it initialised */
	char pad[8192 - 8];
};

static char dir_path[] = "/tmp/test_host_file.XXXXXX";

/* A fresh directory (removed at the end of the test). */
static int ndir(void)
{
	int fd;

	assert_non_null(mkdtemp(dir_path));
	fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static bool init_check(void *map, void *arg)
{
	struct layout *l = map;
	int *zeroed = arg;

	if (l->magic != MAGIC) {
		size_t i;

		for (i = 0; i < sizeof(l->pad); i++)
			if (l->pad[i])
				*zeroed = 0;
		l->magic = MAGIC;
		return true;
	}
	l->calls++;
	return true;
}

static bool refuse(void *map, void *arg)
{
	(void)map;
	(void)arg;
	return false;
}

static void test_host_file_map(void **state)
{
	struct layout *a, *b;
	struct stat st;
	mode_t old;
	int dfd, zeroed = 1, fd;

	(void)state;
	dfd = ndir();
	assert_null(srdma_host_file_map(dfd, "f", sizeof(*a), false, init_check,
					&zeroed));
	assert_int_equal(fstatat(dfd, "f", &st, 0), -1);

	old = umask(0277);
	a = srdma_host_file_map(dfd, "f", sizeof(*a), true, init_check,
				&zeroed);
	umask(old);
	assert_non_null(a);
	assert_true(zeroed);
	assert_int_equal(a->magic, MAGIC);
	assert_int_equal(fstatat(dfd, "f", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, sizeof(*a));

	b = srdma_host_file_map(dfd, "f", sizeof(*b), false, init_check,
				&zeroed);
	assert_non_null(b);
	assert_true(a != b);
	assert_int_equal(b->calls, 1);
	b->pad[5] = 'x';
	assert_int_equal(a->pad[5], 'x');	/* one file, shared */

	assert_null(srdma_host_file_map(dfd, "f", sizeof(*a), true, refuse,
					NULL));

	/* Not a regular file of ours: a symbolic link, a directory. */
	assert_int_equal(symlinkat("f", dfd, "link"), 0);
	assert_null(srdma_host_file_map(dfd, "link", sizeof(*a), true,
					init_check, &zeroed));
	assert_int_equal(mkdirat(dfd, "dir", 0700), 0);
	assert_null(srdma_host_file_map(dfd, "dir", sizeof(*a), true,
					init_check, &zeroed));

	/* A short file grows to the layout. */
	fd = openat(dfd, "short", O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	close(fd);
	b = srdma_host_file_map(dfd, "short", sizeof(*b), false, init_check,
				&zeroed);
	assert_non_null(b);
	assert_int_equal(fstatat(dfd, "short", &st, 0), 0);
	assert_int_equal(st.st_size, sizeof(*b));

	unlinkat(dfd, "f", 0);
	unlinkat(dfd, "link", 0);
	unlinkat(dfd, "short", 0);
	unlinkat(dfd, "dir", AT_REMOVEDIR);
	close(dfd);
	rmdir(dir_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_file_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
