/*
 * ma_state.h -- the state of the C runtime in one process (the Runtime of ma_runtime/mars.py and the one thread's
 * ThreadState of threadstate.py): what every file of libma reads and its owner file changes. Not installed.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * The runtime serves one thread (the first that calls it); ma_lifecycle.c creates it and owns its life cycle.
 */
#ifndef MA_STATE_H
#define MA_STATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ma_anomalies.h"
#include "ma_config.h"
#include "ma_counters.h"
#include "ma_expr.h"
#include "ma_mpi.h"
#include "ma_pmpi.h"
#include "ma_regions.h"
#include "ma_scope.h"
#include "ma_tree.h"
#include "ma_variables.h"
#include "ma_vector.h"

#pragma GCC visibility push(hidden)

typedef struct ma_runtime_state {
    ma_settings settings;
    ma_counters counters;
    pthread_t main_thread;
    int enabled, finished, writing;
    double start_time;
    int rank, size;
    ma_node *root, *current;
    /* open annotations (ma_regions.c) */
    ma_frame *stack;
    size_t depth, stack_cap;
    size_t too_deep; /* starts refused past MA_MAX_SITE_DEPTH and not yet ended: their ends are theirs */
    /* variables in scope, the declarations to undo, compiled expressions (ma_scope.c) */
    ma_undo *undo;
    size_t n_undo, undo_cap;
    ma_var *vars[MA_VAR_BUCKETS];
    uint64_t env_version;
    ma_compiled *exprs[MA_EXPR_BUCKETS];
    ma_var *iter_var;  /* `iter`: bound to the innermost counting loop's iteration at every evaluation ... */
    int iter_declared; /* ... unless the program declared a variable of that name */
    /* the trace's variable table (ma_variables.c) and anomalies (ma_anomalies.c) */
    ma_varrec *variables, *variables_tail;
    ma_anomaly *anomalies, *anomalies_tail;
    /* pending MPI assertions, one per group (ma_mpi.c) */
    ma_pending_mpi pending[MA_PMPI_NGROUPS];
    int n_pending; /* of them active: most ends close none */
    int last_mpi_group; /* group of the latest MPI assertion + 1 (0: none), for ma_mpi_peer */
    uint32_t watch;
    const char *mpi_unmeasured; /* why MPI calls bypass libmapmpi (its assertions are then unmeasured), or NULL */
    /* ma_vec_loop records (ma_vector.c) */
    ma_vector_loops vector;
    /* periodic flush (ma_lifecycle.c) */
    uint64_t flush_interval_ns, flush_deadline;
    uint64_t foreign_calls; /* annotation calls from other threads, ignored */
    int fortran_calls;      /* the program annotates through the Fortran module: the trace's language is "fortran" */
    int write_failed;
} ma_runtime_state;

/* The runtime, NULL until the first call (and for good under MA_DISABLE=1). */
extern ma_runtime_state *ma_rt;

#pragma GCC visibility pop

#endif /* MA_STATE_H */
