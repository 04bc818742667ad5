/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * compiler.h - small language helpers shared by every layer.
 *
 * SRDMA_EXPORT marks the only symbols that leave the shared objects (the
 * build uses -fvisibility=hidden plus version scripts); it may appear only in
 * src/verbs and src/cm, the ABI front ends.
 */
#ifndef SRDMA_UTIL_COMPILER_H
#define SRDMA_UTIL_COMPILER_H

#include <stddef.h>
#include <stdint.h>
#include <assert.h>

#define SRDMA_EXPORT __attribute__((visibility("default")))

#define container_of(ptr, type, member)                                        \
	((type *)((char *)(ptr) - offsetof(type, member)))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BIT(n) (1u << (n))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Spin-wait hint. */
#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

#ifdef NDEBUG
#define srdma_assert(x) ((void)0)
#else
#define srdma_assert(x) assert(x)
#endif

/* Smallest power of two >= @v (1 for 0). Ring sizes. */
static inline uint32_t srdma_roundup_pow2(uint32_t v)
{
	uint32_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

#endif
