// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * log.c - SRDMA_LOG / SRDMA_LOG_FILE handling.
 *
 * The level is a plain int read by every logging site; it is written once
 * under pthread_once before any reader can see a non-zero value, so a racy
 * read only ever yields 0 (silent) or the final level.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/compiler.h"
#include "util/log.h"

int srdma_log_level;
static FILE *log_stream;	/* immutable after log_once() */
static pthread_once_t log_once_ctl = PTHREAD_ONCE_INIT;

static void log_once(void)
{
	const char *lvl = getenv("SRDMA_LOG");
	const char *file = getenv("SRDMA_LOG_FILE");
	int level = SRDMA_LOG_NONE;

	if (!lvl || !*lvl)
		return;
	if (!strcasecmp(lvl, "error") || !strcmp(lvl, "1"))
		level = SRDMA_LOG_ERROR;
	else if (!strcasecmp(lvl, "warn") || !strcmp(lvl, "2"))
		level = SRDMA_LOG_WARN;
	else if (!strcasecmp(lvl, "info") || !strcmp(lvl, "3"))
		level = SRDMA_LOG_INFO;
	else if (!strcasecmp(lvl, "debug") || !strcmp(lvl, "4"))
		level = SRDMA_LOG_DEBUG;
	log_stream = stderr;
	if (file && *file) {
		FILE *f = fopen(file, "ae");

		if (f) {
			setvbuf(f, NULL, _IOLBF, 0);
			log_stream = f;
		}
	}
	srdma_log_level = level;
}

void srdma_log_init(void)
{
	int saved = errno;

	pthread_once(&log_once_ctl, log_once);
	errno = saved;
}

void srdma_log_write(int level, const char *func, const char *fmt, ...)
{
	static const char *const names[] = { "", "error", "warn", "info",
					     "debug" };
	int saved = errno;
	char buf[1024];
	va_list ap;
	int n;

	if (!log_stream || level > srdma_log_level)
		goto out;
	n = snprintf(buf, sizeof(buf), "softrdma[%d] %s %s: ", (int)getpid(),
		     names[level], func);
	if (n < 0 || (size_t)n >= sizeof(buf))
		goto out;
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(log_stream, "%s\n", buf);
out:
	errno = saved;
}
