/*
 * ma_vector.h -- ma_vec_loop, the vector paper's loop assertion (ma_vector.c; ma_runtime/vector.py,
 * docs/vector-backend.md). No site-tree node: one record per (enclosing site, id) in the trace's `vector_loops`,
 * measured under the maflops Valgrind tool.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_VECTOR_H
#define MA_VECTOR_H

#include <stdint.h>

#include "ma_expr.h"

#pragma GCC visibility push(hidden)

/* The measured vector metrics, in the order of ma_vgcount.h's ma_vg_vec_counts. */
#define MA_VEC_N_MEASURED 8
#define MA_VEC_MAX_OPEN 64

/* One ma_vec_loop site: asserted values (first call, sums) and measured vector metrics. */
typedef struct ma_vecrec {
    char *id, *path, *expr[3];
    char *file; /* where ma_vec_loop_start is written (its first call), NULL when unknown */
    int line, depth, mv;
    uint64_t calls, measured_calls;
    ma_num first[3];
    double sum[3];
    unsigned long long measured[MA_VEC_N_MEASURED];
    char *gather_expr[2]; /* ma_vec_loop_gathers: reads, gathered array's bytes; NULL when not stated */
    uint64_t gather_calls;
    ma_num gather_first[2];
    double gather_sum[2];
    struct ma_vecrec *next;
} ma_vecrec;

typedef struct ma_vector_loops {
    ma_vecrec *first, *last; /* the records, in order of first call */
    int depth;               /* open ma_vec_loops */
    struct {
        ma_vecrec *rec;
        int measuring;
        unsigned long long before[MA_VEC_N_MEASURED];
    } open[MA_VEC_MAX_OPEN];
} ma_vector_loops;

/* ma_vec_loop_start_at, ma_vec_loop_stop_at and ma_vec_loop_gathers_at of ma.h (the runtime records). */
void ma_vector_start(const char *id, const char *vloadstore, long long vloadstore_value, const char *vflops,
                     long long vflops_value, const char *avl, double avl_value, int mv, const char *file, int line);
void ma_vector_stop(const char *id, const char *file, int line);
void ma_vector_gathers(const char *id, const char *gathers, long long gathers_value, const char *bytes,
                       long long bytes_value, const char *file, int line);

#pragma GCC visibility pop

#endif /* MA_VECTOR_H */
