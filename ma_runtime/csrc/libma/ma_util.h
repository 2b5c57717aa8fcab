/*
 * ma_util.h -- what every file of the C runtime (libma) uses: clocks, memory that cannot fail, warnings.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_UTIL_H
#define MA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Internal symbols stay inside libma.so: direct calls, and nothing a program could bind to by mistake. */
#pragma GCC visibility push(hidden)

/* Monotonic and process-CPU clocks in nanoseconds (inline: an annotation reads them at its start and end). */
static inline uint64_t ma_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ma_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Seconds since the epoch (the trace header's start and end times). */
double ma_wall_clock(void);

/* Allocation that aborts with a message instead of returning NULL: the runtime has no way to go on without. */
void ma_fail_memory(void);
void *ma_xcalloc(size_t n, size_t size);
void *ma_xrealloc(void *p, size_t size);
char *ma_xstrdup(const char *s);
char *ma_dup_or_null(const char *s);

/* Append `item` to the singly linked list `first`..`last` whose items link through `next` (creation order). */
#define MA_APPEND(first, last, item, next) \
    do {                                   \
        if (last)                          \
            (last)->next = (item);         \
        else                               \
            (first) = (item);              \
        (last) = (item);                   \
    } while (0)

/* The decimal text of `value` in `buf` (at least 21 bytes), returned. Not snprintf: it runs on every MPI assertion,
 * and a Fortran program's libquadmath registers printf extensions that send every printf down glibc's slow path. */
const char *ma_decimal(long long value, char *buf);

/* Length of a Fortran string without its trailing blanks (and a trailing NUL a C habit appended). Inline: every
 * call through the Fortran module trims its texts. */
static inline size_t ma_fortran_length(const char *text, size_t length)
{
    while (length && (text[length - 1] == ' ' || text[length - 1] == '\0'))
        length--;
    return length;
}

/* "libma: warning: ..." on stderr. */
void ma_warn(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* FNV-1a of n bytes (the hash tables of variables and compiled expressions; inline: every evaluation hashes). */
static inline unsigned ma_hash_text(const char *s, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

#pragma GCC visibility pop

#endif /* MA_UTIL_H */
