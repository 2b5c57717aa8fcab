/*
 * ma_util.c -- clocks, allocation and warnings of the C runtime (ma_util.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#define _GNU_SOURCE
#include "ma_util.h"

#include "ma_fence.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__thread unsigned ma_fence_depth;
__thread uint64_t ma_fence_opened_ns;
__thread uint64_t ma_fence_spent_ns;

double ma_wall_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ma_fail_memory(void)
{
    fputs("libma: out of memory\n", stderr);
    abort();
}

void *ma_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p)
        ma_fail_memory();
    return p;
}

void *ma_xrealloc(void *p, size_t size)
{
    void *grown = realloc(p, size);
    if (!grown)
        ma_fail_memory();
    return grown;
}

char *ma_xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        ma_fail_memory();
    return p;
}

char *ma_dup_or_null(const char *s) { return s ? ma_xstrdup(s) : NULL; }

const char *ma_decimal(long long value, char *buf)
{
    char *end = buf + 21, *p = end;
    unsigned long long magnitude = value < 0 ? 0ull - (unsigned long long)value : (unsigned long long)value;
    *p = '\0';
    do
        *--p = (char)('0' + magnitude % 10);
    while (magnitude /= 10);
    if (value < 0)
        *--p = '-';
    return p;
}

void ma_warn(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("libma: warning: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}
