/*
 * ma_lifecycle.h -- the C runtime's life: created at the first call, ma_init() or inside MPI_Init; written
 * periodically, at ma_finalize(), inside MPI_Finalize or at exit (ma_lifecycle.c; the Runtime of
 * ma_runtime/mars.py and ma_runtime/bootstrap.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_LIFECYCLE_H
#define MA_LIFECYCLE_H

#include <pthread.h>
#include <stdint.h>

#include "ma_state.h"

#pragma GCC visibility push(hidden)

/* ma_lifecycle_call when the answer is not simply yes: the first call, a finished runtime, another thread. */
int ma_lifecycle_call_otherwise(void);

/* Whether an annotation call records: the runtime is created on the first, then 1 on the recording thread while it
 * runs; 0 when disabled (MA_DISABLE=1), finished, or called from another thread (counted as an anomaly). Inline:
 * every annotation asks. */
static inline int ma_lifecycle_call(void)
{
    if (ma_rt && !ma_rt->finished && pthread_equal(pthread_self(), ma_rt->main_thread))
        return 1;
    return ma_lifecycle_call_otherwise();
}

/* ma_lifecycle_call, and tracing is on. */
static inline int ma_lifecycle_recording(void) { return ma_lifecycle_call() && ma_rt->enabled; }
/* ma_init of ma.h: create the runtime (if it is not) and learn the rank. */
void ma_lifecycle_init(void);
/* ma_finalize of ma.h: close what is open and write the final trace (merged under MPI, see ma_merge.h). */
void ma_lifecycle_finalize(void);
/* Write the trace now, status "running" (ma_flush of ma.h, and the periodic flush). */
void ma_lifecycle_flush(void);
/* The periodic flush, when its deadline has passed at `now` (checked at annotation calls). */
void ma_lifecycle_maybe_flush(uint64_t now);
/* ma_set_tracing (on) and ma_unset_tracing (off) of ma.h. */
void ma_lifecycle_set_tracing(int on);

#pragma GCC visibility pop

#endif /* MA_LIFECYCLE_H */
