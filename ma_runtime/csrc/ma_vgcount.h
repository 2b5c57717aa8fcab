/*
 * ma_vgcount.h -- client-request interface of the `maflops` Valgrind tool.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Shared by the tool (GPL-2, ma_runtime/counters/vgtool), the ctypes shim (ma_vgclient.c) and the C
 * runtime. The tool keeps six running 64-bit totals for the whole process (all threads); a region's
 * count is the difference of two reads. Outside Valgrind, or under another Valgrind tool, every read
 * reports "not under the tool" (ma_vg_running() == 0) and the totals read as zero.
 *
 * The client part uses the macros of <valgrind/valgrind.h> (BSD-style licensed, shipped by Valgrind):
 * a request outside Valgrind costs a few instructions and returns the default value. Include this
 * header with -I<ma_runtime/csrc>; nothing needs to be linked.
 */
#ifndef MA_VGCOUNT_H
#define MA_VGCOUNT_H

#define MA_VG_TOOL_NAME "maflops"
/* Bumped when the request codes or the counter layout change (2: the SDK fence, MA_VG_REQ_SDK_ENTER/LEAVE). */
#define MA_VG_ABI 2
/* What MA_VG_REQ_PING answers, so that a foreign tool's zero default cannot be mistaken for ours. */
#define MA_VG_MAGIC (0x4D464C00UL | MA_VG_ABI) /* "MFL" + ABI */

/* The running totals, in this order everywhere (tool array, struct fields, mask bits). */
enum ma_vg_counter {
    MA_VG_DP_FLOPS = 0,   /* double-precision flops: lanes x ops, fused multiply-add = 2 */
    MA_VG_SP_FLOPS = 1,   /* single-precision flops, same rules */
    MA_VG_LOADS = 2,      /* executed guest instructions that read memory */
    MA_VG_STORES = 3,     /* executed guest instructions that write memory */
    MA_VG_LOAD_BYTES = 4, /* bytes read */
    MA_VG_STORE_BYTES = 5,/* bytes written */
    MA_VG_N_COUNTERS = 6
};

#define MA_VG_MASK(c) (1UL << (c))
#define MA_VG_MASK_FLOPS (MA_VG_MASK(MA_VG_DP_FLOPS) | MA_VG_MASK(MA_VG_SP_FLOPS))
#define MA_VG_MASK_LOADSTORE (MA_VG_MASK(MA_VG_LOADS) | MA_VG_MASK(MA_VG_STORES))

typedef struct ma_vg_counts {
    unsigned long long dp_flops;
    unsigned long long sp_flops;
    unsigned long long loads;
    unsigned long long stores;
    unsigned long long load_bytes;
    unsigned long long store_bytes;
} ma_vg_counts;

/* Request codes: Valgrind's tool base for the letters 'M','F' (VG_USERREQ_TOOL_BASE('M','F')). */
#define MA_VG_REQ_BASE ((((unsigned long)'M') & 0xff) << 24 | (((unsigned long)'F') & 0xff) << 16)
enum ma_vg_request {
    MA_VG_REQ_PING = MA_VG_REQ_BASE + 0,    /* -> MA_VG_MAGIC */
    MA_VG_REQ_VERSION = MA_VG_REQ_BASE + 1, /* -> tool version major*10000 + minor*100 + patch */
    MA_VG_REQ_READ = MA_VG_REQ_BASE + 2,    /* (ma_vg_counts *out, size_t size) -> counters written */
    MA_VG_REQ_SUM = MA_VG_REQ_BASE + 3,     /* (unsigned long mask) -> sum of the masked totals */
    MA_VG_REQ_CORE_VERSION = MA_VG_REQ_BASE + 4, /* -> Valgrind core major*100 + minor it was built for */
    MA_VG_REQ_CACHE_READ = MA_VG_REQ_BASE + 5, /* (unsigned long long *out, size_t size) -> values written */
    MA_VG_REQ_SDK_ENTER = MA_VG_REQ_BASE + 6, /* the calling thread enters the SDK's own code: stop counting it */
    MA_VG_REQ_SDK_LEAVE = MA_VG_REQ_BASE + 7  /* ... and leaves it: count it again */
};

/* The SDK fence. Everything a thread executes between MA_VG_REQ_SDK_ENTER and the matching
   MA_VG_REQ_SDK_LEAVE (they nest: a depth per thread) is the SDK's own work -- the runtime's bookkeeping, its
   expression evaluation, its reads of these counters -- and is left out of every total (flops, loads and stores,
   bytes, the vector metrics and the simulated caches), so a region counts the program, not the runtime. Reads
   made inside the fence see the totals as they were at its entry.

   MA_VG_FENCE(code) issues the request with no memory access of its own: the argument block is a static
   constant (its address goes to RAX by a LEA) and the result register is only clobbered, so no load or store of
   the request itself is counted at any optimisation level. It is the amd64 client-request sequence of
   <valgrind/valgrind.h> (a no-op of five instructions outside Valgrind); elsewhere, and with -DMA_NO_VG_FENCE, it
   is empty. ma.h repeats it for programs, which do not see this header. */
#define MA_VG_ARGS_OF(code) {(unsigned long)(code), 0, 0, 0, 0, 0}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(MA_NO_VG_FENCE)
#define MA_VG_FENCE_AT(args)                                                                            \
    __asm__ volatile("rolq $3, %%rdi ; rolq $13, %%rdi\n\trolq $61, %%rdi ; rolq $51, %%rdi\n\t"  \
                     "xchgq %%rbx, %%rbx" : : "a"(args) : "rdx", "cc", "memory")
#define MA_VG_HAVE_FENCE 1
#else
#define MA_VG_FENCE_AT(args) ((void)(args))
#endif

/* Cache simulation (tool option --ma-cache=SIZE:WAYS:LINE[,...], innermost level first): MA_VG_REQ_CACHE_READ
   writes levels, line accesses, then the accesses each level served (not cumulative), up to `size` bytes. */
#define MA_VG_CACHE_MAX_LEVELS 4
#define MA_VG_CACHE_VALUES (2 + MA_VG_CACHE_MAX_LEVELS)
/* Vector metrics (the X1E's vector counters, in SIMD terms), kept apart from the six totals above.
   A guest instruction is a *vector* FP instruction when one evaluation of it does floating-point work in
   two or more lanes (a packed op, or VEX's one-MAdd-per-lane expansion of a packed FMA); its flops count as
   vector flops and its lane count adds to MA_VG_VEC_LANES, so AVL = VEC_LANES / VEC_FP_INSNS. A guest
   instruction that reads (writes) 16 bytes or more is a vector load (store); smaller ones are scalar. */
enum ma_vg_vec_counter {
    MA_VG_VEC_FLOPS = 0,      /* flops of vector FP instructions (lanes x ops, FMA = 2 per lane) */
    MA_VG_SCALAR_FLOPS = 1,   /* flops of one-lane FP instructions */
    MA_VG_VEC_FP_INSNS = 2,   /* executed vector FP instructions */
    MA_VG_VEC_LANES = 3,      /* their lanes, summed */
    MA_VG_VEC_LOADS = 4,      /* executed instructions reading >= 16 bytes */
    MA_VG_VEC_STORES = 5,     /* executed instructions writing >= 16 bytes */
    MA_VG_SCALAR_LOADS = 6,   /* the other reading instructions */
    MA_VG_SCALAR_STORES = 7,  /* the other writing instructions */
    MA_VG_N_VEC_COUNTERS = 8
};
#define MA_VG_VECTOR_BYTES 16

typedef struct ma_vg_vec_counts {
    unsigned long long vec_flops;
    unsigned long long scalar_flops;
    unsigned long long vec_fp_insns;
    unsigned long long vec_lanes;
    unsigned long long vec_loads;
    unsigned long long vec_stores;
    unsigned long long scalar_loads;
    unsigned long long scalar_stores;
} ma_vg_vec_counts;

/* (ma_vg_vec_counts *out, size_t size) -> counters written; far above the base codes so that other
   request additions do not collide with it. */
#define MA_VG_REQ_VEC_READ (MA_VG_REQ_BASE + 0x40)

#ifndef MA_VG_TOOL_SIDE /* the client API; the tool itself only needs the codes above */
#include <string.h>

/* Without Valgrind's header (Valgrind not installed) every request yields its default: "not under the tool". */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define MA_VG_HAVE_VALGRIND_H 1
#endif
#else
#include <valgrind/valgrind.h>
#define MA_VG_HAVE_VALGRIND_H 1
#endif

#ifdef MA_VG_HAVE_VALGRIND_H
#define MA_VG_REQUEST(dflt, req, a1, a2) VALGRIND_DO_CLIENT_REQUEST_EXPR(dflt, req, a1, a2, 0, 0, 0)
#else
#define MA_VG_REQUEST(dflt, req, a1, a2) ((void)(a1), (void)(a2), (unsigned long)(dflt))
#endif

/* 1 when this process runs under the maflops tool, else 0. */
static inline int ma_vg_running(void)
{
    return MA_VG_REQUEST(0, MA_VG_REQ_PING, 0, 0) == MA_VG_MAGIC;
}

/* Fill *out with the running totals; returns 1, or 0 (and zeros) when not under the tool. */
static inline int ma_vg_read(ma_vg_counts *out)
{
    memset(out, 0, sizeof *out);
    return MA_VG_REQUEST(0, MA_VG_REQ_READ, out, sizeof *out)
           == MA_VG_N_COUNTERS;
}

/* Sum of the totals selected by `mask` (MA_VG_MASK bits); 0 when not under the tool. */
static inline unsigned long long ma_vg_sum(unsigned long mask)
{
    return (unsigned long long)MA_VG_REQUEST(0, MA_VG_REQ_SUM, mask, 0);
}

static inline unsigned long long ma_vg_flops(void) { return ma_vg_sum(MA_VG_MASK_FLOPS); }
static inline unsigned long long ma_vg_loadstores(void) { return ma_vg_sum(MA_VG_MASK_LOADSTORE); }

/* The cache simulation's totals into out[MA_VG_CACHE_VALUES] (levels, accesses, hits per level); returns the
   number of values written, 0 when not under the tool or when it simulates no cache. */
static inline int ma_vg_cache_read(unsigned long long *out)
{
    memset(out, 0, MA_VG_CACHE_VALUES * sizeof *out);
    return (int)MA_VG_REQUEST(0, MA_VG_REQ_CACHE_READ, out, MA_VG_CACHE_VALUES * sizeof *out);
}

/* The SDK fence (MA_VG_REQ_SDK_ENTER/LEAVE above): no memory access of its own. */
#if defined(__GNUC__) || defined(__clang__)
#define MA_VG_UNUSED __attribute__((unused))
#else
#define MA_VG_UNUSED
#endif
static const unsigned long ma_vg_sdk_enter_args[6] MA_VG_UNUSED = MA_VG_ARGS_OF(MA_VG_REQ_SDK_ENTER);
static const unsigned long ma_vg_sdk_leave_args[6] MA_VG_UNUSED = MA_VG_ARGS_OF(MA_VG_REQ_SDK_LEAVE);
#define MA_VG_SDK_ENTER() MA_VG_FENCE_AT(ma_vg_sdk_enter_args)
#define MA_VG_SDK_LEAVE() MA_VG_FENCE_AT(ma_vg_sdk_leave_args)

/* Fill *out with the vector totals; returns 1, or 0 (and zeros) when not under the tool. */
static inline int ma_vg_vec_read(ma_vg_vec_counts *out)
{
    memset(out, 0, sizeof *out);
    return MA_VG_REQUEST(0, MA_VG_REQ_VEC_READ, out, sizeof *out) == MA_VG_N_VEC_COUNTERS;
}

#endif /* MA_VG_TOOL_SIDE */
#endif /* MA_VGCOUNT_H */
