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
 */
#ifndef MA_FENCE_H
#define MA_FENCE_H

#ifdef MA_HAVE_VGCOUNT
#include "ma_vgcount.h"
#endif

#pragma GCC visibility push(hidden)

#if defined(MA_HAVE_VGCOUNT) && (defined(__GNUC__) || defined(__clang__))
static inline void ma_fence_close(int *unused)
{
    (void)unused;
    MA_VG_SDK_LEAVE();
}
#define MA_FENCE_THIS_CALL() \
    int fence_ __attribute__((cleanup(ma_fence_close), unused)) = __extension__({ MA_VG_SDK_ENTER(); 0; })
#else
#define MA_FENCE_THIS_CALL() ((void)0)
#endif

#pragma GCC visibility pop

#endif /* MA_FENCE_H */
