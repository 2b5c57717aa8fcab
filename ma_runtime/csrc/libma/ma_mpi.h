/*
 * ma_mpi.h -- MPI assertions of the C runtime (ma_mpi.c; the MPI annotations of ma_runtime/annotations.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * An MPI assertion is one call placed before the MPI call(s) it describes (paper, Figure 4). It stays pending
 * until the count-th call of its type (libmapmpi tells us through its watch hook), the next assertion of the same
 * type, the end of the enclosing annotation, or finalisation; then the group's totals since its start are its
 * measurement.
 */
#ifndef MA_MPI_H
#define MA_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "ma_expr.h"
#include "ma_tree.h"

#pragma GCC visibility push(hidden)

typedef struct ma_pending_mpi {
    int active;
    ma_node *node;
    size_t depth; /* stack depth when it was asserted */
    uint64_t calls0, bytes0;
    int has_pred;
    ma_num pred, pcount;
    long long want; /* calls after which it closes itself; 0: only by the other rules */
    uint64_t t0, c0;
    uint64_t self0; /* the SDK's time up to t0 (ma_fence_spent_at) */
    int has_peer; /* ma_mpi_peer named the partner: check every call's at the close */
} ma_pending_mpi;

/* ma_mpi_at of ma.h, made at time t0: close the pending assertion of the same type and open this one. */
void ma_mpi_assert(const char *type, const char *id, const char *expr, long long value, const char *count_expr,
                   long long count, const char *file, int line, uint64_t t0);
/* Close the MPI assertions made while the stack of open annotations was at least `depth` deep. */
void ma_mpi_close_from(size_t depth, uint64_t t1);
/* Stop libmapmpi's watch hook (the runtime has finished). */
void ma_mpi_stop_watching(void);

#pragma GCC visibility pop

#endif /* MA_MPI_H */
