/*
 * ma_vgclient.c -- a tiny shared library through which Python (ctypes) reads the maflops totals.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Each function is one Valgrind client request (ma_vgcount.h). Outside the tool they return 0 and
 * ma_vgc_running() says so. Built with plain `cc -shared -fPIC`; needs only <valgrind/valgrind.h>.
 */
#include "ma_vgcount.h"

#define MA_VGC_API __attribute__((visibility("default")))

MA_VGC_API int ma_vgc_running(void) { return ma_vg_running(); }

MA_VGC_API int ma_vgc_abi(void) { return MA_VG_ABI; }

MA_VGC_API int ma_vgc_read(ma_vg_counts *out) { return ma_vg_read(out); }

MA_VGC_API int ma_vgc_vec_read(ma_vg_vec_counts *out) { return ma_vg_vec_read(out); }

MA_VGC_API unsigned long long ma_vgc_sum(unsigned long mask) { return ma_vg_sum(mask); }

/* The two readers of the counter provider: one call each, no argument marshalling. */
MA_VGC_API unsigned long long ma_vgc_flops(void) { return ma_vg_flops(); }

MA_VGC_API unsigned long long ma_vgc_loadstores(void) { return ma_vg_loadstores(); }

/* Tool version as major*10000 + minor*100 + patch; 0 when not under the tool. */
MA_VGC_API long ma_vgc_tool_version(void)
{
    return (long)MA_VG_REQUEST(0, MA_VG_REQ_VERSION, 0, 0);
}

/* Valgrind core the tool was built for, as major*100 + minor; 0 when not under the tool. */
MA_VGC_API long ma_vgc_core_version(void)
{
    return (long)MA_VG_REQUEST(0, MA_VG_REQ_CORE_VERSION, 0, 0);
}

/* The cache simulation's totals (ma_vg_cache_read): values written, 0 without a simulated cache. */
MA_VGC_API int ma_vgc_cache_read(unsigned long long *out) { return ma_vg_cache_read(out); }

/* The SDK fence (ma_vgcount.h): the Python runtime's work between the two is left out of every count. */
MA_VGC_API void ma_vgc_sdk_enter(void) { MA_VG_SDK_ENTER(); }

MA_VGC_API void ma_vgc_sdk_leave(void) { MA_VG_SDK_LEAVE(); }
