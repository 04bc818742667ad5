/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * srdma_tool.h - what the srdma command's source files share.
 */
#ifndef SRDMA_TOOLS_SRDMA_TOOL_H
#define SRDMA_TOOLS_SRDMA_TOOL_H

/**
 * srdma_tool_libdir() - the directory holding softrdma's libibverbs.so.1:
 * $SRDMA_LIBDIR, else ../lib/softrdma, ../lib or ../lib64 next to the srdma
 * executable (the first that has it).
 * @buf: receives it; must hold PATH_MAX bytes
 * Return: 0 or -errno.
 */
int srdma_tool_libdir(char *buf);

/**
 * srdma_cmd_sysfs() - `srdma sysfs [show|mount|umount]` (srdma_sysfs.c).
 * @argc, @argv: the arguments after "sysfs"
 * Return: the exit status: 0, 1 on failure, 2 on a usage error.
 */
int srdma_cmd_sysfs(int argc, char **argv);

#endif
