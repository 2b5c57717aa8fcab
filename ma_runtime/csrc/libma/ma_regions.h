/*
 * ma_regions.h -- annotations with a start and an end: loop, subroutine, flop, loadstore, heap_memory,
 * stack_memory (ma_regions.c; the region annotations of ma_runtime/annotations.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Each open one is a frame on the runtime's stack: its node, its prediction, the counter and clocks read at its
 * start. A loop or subroutine is a scope: its declarations are undone at its end.
 */
#ifndef MA_REGIONS_H
#define MA_REGIONS_H

#include <stddef.h>
#include <stdint.h>

#include "ma_counters.h"
#include "ma_expr.h"
#include "ma_tree.h"

#pragma GCC visibility push(hidden)

typedef struct ma_frame {
    ma_node *node;
    const char *type;
    int scope;          /* loop or subroutine: its declarations are undone at its end */
    size_t undo_base;
    int has_pred;
    ma_num pred;
    int kind;           /* counter kind measured, or -1 */
    ma_reader reader;
    long long m0;
    uint64_t t0, c0;
    uint64_t self0;     /* the SDK's time up to t0 (ma_fence_spent_at): left out of the wall and CPU times */
    int has_cache0;     /* the cache simulation's totals at the start (flop and loadstore sites under --cache) */
    unsigned long long cache0[MA_CACHE_VALUES];
    uint64_t iterations; /* a loop: its ma_loop_next calls so far (the iteration is iterations - 1) */
} ma_frame;

/* The counter and clocks read the moment an end is called, before the runtime does anything else. */
typedef struct ma_end_reading {
    ma_frame *top;   /* the innermost open frame on the recording thread, or NULL */
    long long m1;
    int has_cache1;
    unsigned long long cache1[MA_CACHE_VALUES];
    uint64_t t1;
} ma_end_reading;

/* ma_start_at of ma.h (the runtime records): open a frame. */
void ma_regions_start(const char *type, const char *id, const char *expr, long long value, const char *file,
                      int line);
/* Read the counter of the innermost frame and the clock: first thing in ma_end_at (any thread). */
void ma_regions_read_end(ma_end_reading *r);
/* ma_end_at of ma.h (the runtime records), with what ma_regions_read_end read; `id` is `id_len` characters long
 * (it need not end there: a Fortran string). A loop given no count measures the iterations ma_loop_next counted. */
void ma_regions_end(ma_end_reading *r, const char *type, const char *id, size_t id_len, long long measured,
                    const char *file, int line);
/* ma_loop_next_at of ma.h (the runtime records): one more iteration of loop `id`, the innermost open loop. */
void ma_regions_next(const char *id, const char *file, int line);
/* Close the frame at `index` and every frame above it, as unbalanced (the program ends, tracing goes off). */
void ma_regions_close_unbalanced(size_t index, uint64_t t1);

#pragma GCC visibility pop

#endif /* MA_REGIONS_H */
