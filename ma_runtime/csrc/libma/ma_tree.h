/*
 * ma_tree.h -- site-tree nodes of the C runtime: one per annotation site, every call folded into aggregates
 * (ma_tree.c; ma_runtime/tree.py, rule for rule).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_TREE_H
#define MA_TREE_H

#include <stdint.h>

#include "ma_expr.h"
#include "ma_trace_format.h"

#pragma GCC visibility push(hidden)

typedef struct ma_stats {
    uint64_t n;
    ma_num min, max, sum;
} ma_stats;

void ma_stats_add(ma_stats *s, ma_num x);

typedef struct ma_node {
    struct ma_node *parent, *first_child, *last_child, *next_sibling;
    const char *type; /* the static spelling of ma_node_type: nodes compare types by pointer */
    char *id, *path, *expr_text, *count_text, *file;
    size_t id_len; /* strlen(id), for ends that come with a length (Fortran) */
    int line;
    const char *seen_expr, *seen_count; /* last argument pointers checked against expr_text/count_text */
    uint64_t calls, pass, fail, unmeasured, mismatch;
    ma_stats predicted, measured, count_predicted, count_measured;
    int has_first_mismatch;
    ma_num first_mismatch_given, first_mismatch_evaluated;
    int has_first_fail, first_fail_has_count;
    uint64_t first_fail_call;
    ma_num first_fail_predicted, first_fail_measured, first_fail_count_predicted, first_fail_count_measured;
    uint64_t wall_ns, cpu_ns;
    double tolerance;
    int track_cpu;
    uint64_t cache_version; /* env version the cached prediction was computed for; 0 = none */
    int cache_ok;
    int uses_iter;        /* an expression names `iter`: the cache also keys on the iteration */
    long long cache_iter; /* the iteration the cached prediction was computed for */
    ma_num cache_value, cache_count;
    /* partner assertion (ma_mpi_peer): its expression, verdicts and first wrong call */
    char *peer_text;
    uint64_t peer_pass, peer_fail, peer_unmeasured, peer_fail_call;
    int has_peer_fail;
    long long peer_fail_expected, peer_fail_actual;
    /* the Valgrind tool's cache simulation (node field `cache`): calls measured, line accesses, accesses each
       level served (MA_VG_CACHE_VALUES layout of ma_vgcount.h), summed over the calls */
    uint64_t cache_calls, cache_accesses, cache_hits[MA_CACHE_MAX_LEVELS];
    int cache_levels;
} ma_node;

/* The static spelling of a node type name (MA_STRUCTURE_TYPES, MA_MPI_TYPES), or NULL for an unknown one. */
const char *ma_node_type(const char *type);

/* A node below `parent` (NULL: the root), last of its children. `type` is ma_node_type's spelling. */
ma_node *ma_node_new(ma_node *parent, const char *type, const char *id, const char *expr_text,
                     const char *count_text, const char *file, int line, double tolerance, int track_cpu);

/* Add one call's time, from t0 to t1 on the monotonic clock (c0: the process CPU clock at t0), less what the SDK
 * itself spent in between (self0: ma_fence_spent_at(t0), ma_fence.h): the program's wall and CPU time. */
void ma_node_add_time(ma_node *n, uint64_t t0, uint64_t c0, uint64_t self0, uint64_t t1);
/* Fold one call (tree.py Node.record). A call whose prediction failed to evaluate counts as unmeasured. */
void ma_node_record(ma_node *n, int has_pred, ma_num pred, int has_meas, ma_num meas);
/* Fold one MPI assertion (tree.py Node.record_mpi): bytes per message and number of calls must both pass. */
void ma_node_record_mpi(ma_node *n, int has_pred, ma_num size, ma_num count, uint64_t calls, uint64_t bytes);
/* The program passed its own value for the expression: count it when it differs from the evaluation. */
void ma_node_note_value(ma_node *n, ma_num given, ma_num evaluated);

#pragma GCC visibility pop

#endif /* MA_TREE_H */
