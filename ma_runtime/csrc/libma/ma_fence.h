/*
 * ma_fence.h -- the SDK fence of the maflops Valgrind tool around every entry into libma (ma_vgcount.h,
 * MA_VG_REQ_SDK_ENTER/LEAVE): what the runtime does for a call is left out of the program's counts.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Every entry, from the program (ma.h brackets its calls already; this covers the plain-named functions, Fortran
 * and -DMA_NO_VG_FENCE builds) or from libmapmpi's hooks, opens the fence with MA_FENCE_THIS_CALL() as its first
 * statement, and it closes when the function returns, whichever return (the cleanup attribute). Fences nest.
 *
 * The fence also times the runtime: each outermost entry, from the clock read just after it opens to the one just
 * before it closes, adds to the thread's SDK time, so that a region's wall time leaves out the annotations nested
 * in it and the MPI hooks run inside it, as its counts do (a region reports the program's time, not the SDK's).
 */
#ifndef MA_FENCE_H
#define MA_FENCE_H

#include <stdint.h>

#include "ma_util.h"

#ifdef MA_HAVE_VGCOUNT
#include "ma_vgcount.h"
#else
#define MA_VG_SDK_ENTER() ((void)0)
#define MA_VG_SDK_LEAVE() ((void)0)
#endif

#pragma GCC visibility push(hidden)

/* Per thread: the open entries' depth, when the outermost began, and the closed outermost entries' time. The static
 * TLS model (no lookup per use): libma is linked into the program, and a later dlopen (ctypes in the tests) fits
 * these few bytes in the reserve glibc keeps for it, as libmapmpi's thread-locals do. */
extern __thread unsigned ma_fence_depth __attribute__((tls_model("initial-exec")));
extern __thread uint64_t ma_fence_opened_ns __attribute__((tls_model("initial-exec")));
extern __thread uint64_t ma_fence_spent_ns __attribute__((tls_model("initial-exec")));

static inline void ma_fence_open(void)
{
    if (ma_fence_depth++ == 0)
        ma_fence_opened_ns = ma_mono_ns();
}

static inline void ma_fence_shut(void)
{
    if (ma_fence_depth && --ma_fence_depth == 0)
        ma_fence_spent_ns += ma_mono_ns() - ma_fence_opened_ns;
}

/* The clock for a region's start or end: inside an entry, the reading the fence took as the outermost one opened.
 * A region subtracts the SDK's time between its two readings, so where inside the entry they were taken cancels
 * out and a reading of its own would be one clock read more per annotation for nothing. */
static inline uint64_t ma_fence_now(void)
{
    return ma_fence_depth ? ma_fence_opened_ns : ma_mono_ns();
}

/* The thread's SDK time up to `t`, a clock reading taken inside the fence. A region keeps this at its start and
 * subtracts the difference at its end: what the runtime spent between its two readings. */
static inline uint64_t ma_fence_spent_at(uint64_t t)
{
    return ma_fence_spent_ns + (ma_fence_depth && t > ma_fence_opened_ns ? t - ma_fence_opened_ns : 0);
}

/* A region's program time: its wall time `t1 - t0` less the SDK's time in it (`self0`: ma_fence_spent_at(t0)). */
static inline uint64_t ma_fence_program_ns(uint64_t t0, uint64_t t1, uint64_t self0)
{
    uint64_t wall = t1 > t0 ? t1 - t0 : 0, self = ma_fence_spent_at(t1) - self0;
    return wall > self ? wall - self : 0;
}

#if defined(__GNUC__) || defined(__clang__)
static inline void ma_fence_close(int *unused)
{
    (void)unused;
    ma_fence_shut();
    MA_VG_SDK_LEAVE();
}
/* The Valgrind fence outermost, so that the clock reads stay out of the program's counts too. */
#define MA_FENCE_THIS_CALL() \
    int fence_ __attribute__((cleanup(ma_fence_close), unused)) = \
        __extension__({ MA_VG_SDK_ENTER(); ma_fence_open(); 0; })
#else
#define MA_FENCE_THIS_CALL() ((void)0)
#endif

#pragma GCC visibility pop

#endif /* MA_FENCE_H */
