/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * log.h - the library's only voice.
 *
 * Silent unless SRDMA_LOG asks (error|warn|info|debug); output goes to
 * stderr or to SRDMA_LOG_FILE. Log once, where a problem is detected, naming
 * the object; callers that receive the error code do not log it again.
 */
#ifndef SRDMA_UTIL_LOG_H
#define SRDMA_UTIL_LOG_H

#include "util/compiler.h"

enum srdma_log_level {
	SRDMA_LOG_NONE = 0,
	SRDMA_LOG_ERROR,
	SRDMA_LOG_WARN,
	SRDMA_LOG_INFO,
	SRDMA_LOG_DEBUG,
};

/* Level read from SRDMA_LOG on first use; cheap to test on hot paths. */
extern int srdma_log_level;

/**
 * srdma_log_init() - read SRDMA_LOG / SRDMA_LOG_FILE once.
 * Context: any thread; idempotent and thread-safe.
 */
void srdma_log_init(void);

/**
 * srdma_log_write() - emit one line prefixed with "softrdma[pid] <func>: ".
 * @level: message level; dropped when above srdma_log_level
 * @func:  the reporting function (__func__)
 * @fmt:   printf format
 * Context: any thread; never changes errno.
 */
void srdma_log_write(int level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define srdma_log(lvl, ...)                                                    \
	do {                                                                   \
		if (unlikely(srdma_log_level >= (lvl)))                        \
			srdma_log_write((lvl), __func__, __VA_ARGS__);         \
	} while (0)

#define srdma_dbg(...) srdma_log(SRDMA_LOG_DEBUG, __VA_ARGS__)
#define srdma_info(...) srdma_log(SRDMA_LOG_INFO, __VA_ARGS__)
#define srdma_warn(...) srdma_log(SRDMA_LOG_WARN, __VA_ARGS__)
#define srdma_err(...) srdma_log(SRDMA_LOG_ERROR, __VA_ARGS__)

#endif
