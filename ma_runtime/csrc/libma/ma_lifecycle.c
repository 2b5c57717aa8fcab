/*
 * ma_lifecycle.c -- creating, flushing and finishing the C runtime (ma_lifecycle.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#define _GNU_SOURCE
#include "ma_lifecycle.h"

#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ma_anomalies.h"
#include "ma_config.h"
#include "ma_counters.h"
#include "ma_fence.h"
#include "ma_merge.h"
#include "ma_mpi.h"
#include "ma_pmpi.h"
#include "ma_regions.h"
#include "ma_scope.h"
#include "ma_state.h"
#include "ma_trace.h"
#include "ma_util.h"

ma_runtime_state *ma_rt;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;

static void refresh_rank(void)
{
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized) {
        PMPI_Comm_rank(MPI_COMM_WORLD, &ma_rt->rank);
        PMPI_Comm_size(MPI_COMM_WORLD, &ma_rt->size);
    }
}

static void on_exit_handler(void);

static void create_runtime(void)
{
    if (ma_config_env_true("MA_DISABLE"))
        return;
    ma_runtime_state *state = ma_xcalloc(1, sizeof *state);
    ma_config_read(&state->settings);
    char warning[512];
    ma_counters_open(&state->counters, state->settings.counters, warning, sizeof warning);
    if (warning[0])
        ma_warn("%s", warning);
    state->main_thread = pthread_self();
    state->enabled = 1;
    state->start_time = ma_wall_clock();
    ma_config_launcher_rank_size(&state->rank, &state->size);
    state->env_version = 1;
    state->iter_var = ma_scope_intern(state->vars, "iter", 4);
    state->root = ma_node_new(NULL, "root", "", NULL, NULL, NULL, 0, 0.0, 1);
    state->current = state->root;
    state->flush_interval_ns =
        state->settings.flush_seconds > 0 ? (uint64_t)(state->settings.flush_seconds * 1e9) : 0;
    state->flush_deadline = state->flush_interval_ns ? ma_mono_ns() + state->flush_interval_ns : UINT64_MAX;
    state->mpi_unmeasured = ma_pmpi_unmeasured_reason();
    if (state->mpi_unmeasured)
        ma_warn("MPI assertions will be unmeasured: %s", state->mpi_unmeasured);
    ma_rt = state;
    refresh_rank();
    atexit(on_exit_handler);
}

int ma_lifecycle_call_otherwise(void)
{
    if (!ma_rt) {
        pthread_once(&rt_once, create_runtime);
        if (!ma_rt)
            return 0;
    }
    if (ma_rt->finished)
        return 0;
    if (!pthread_equal(pthread_self(), ma_rt->main_thread)) {
        __atomic_fetch_add(&ma_rt->foreign_calls, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return 1;
}

void ma_lifecycle_init(void)
{
    if (!ma_rt)
        pthread_once(&rt_once, create_runtime);
    if (ma_rt && !ma_rt->finished)
        refresh_rank();
}

/* The final trace: every open annotation closed as unbalanced, then the merged trace of the job (under MPI with
 * more than one rank, unless MA_TRACE_LAYOUT=per-rank) or this rank's file. */
static void finish(const char *status, const char *reason)
{
    if (!ma_rt || ma_rt->finished)
        return;
    if (!pthread_equal(pthread_self(), ma_rt->main_thread))
        return;
    uint64_t t1 = ma_mono_ns();
    ma_mpi_close_from(0, t1);
    while (ma_rt->depth) {
        ma_frame *top = &ma_rt->stack[ma_rt->depth - 1];
        if (reason)
            ma_anomaly_add("unbalanced", top->node, NULL, 0, "%s '%s' was still open at exit (%s: %s)", top->type,
                           top->node->id, status, reason);
        else
            ma_anomaly_add("unbalanced", top->node, NULL, 0, "%s '%s' was still open at exit", top->type,
                           top->node->id);
        ma_regions_close_unbalanced(ma_rt->depth - 1, t1);
    }
    ma_rt->finished = 1; /* before writing: nothing records after this point */
    ma_mpi_stop_watching();
    refresh_rank();
    const char *layout = getenv("MA_TRACE_LAYOUT");
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (!strcmp(status, MA_STATUS_COMPLETE) && initialized && !finalized && ma_rt->size > 1
        && !(layout && !strcmp(layout, "per-rank"))) {
        int written = 0; /* the merged trace of the job (docs/trace-format.md), collective: every rank is here */
        ma_merge_job(ma_rt, status, reason, &written);
        if (written && !(layout && !strcmp(layout, "both"))) {
            char flush[4200];
            snprintf(flush, sizeof flush, "%s/rank-%d.ma.json", ma_rt->settings.trace_dir, ma_rt->rank);
            unlink(flush); /* this rank's periodic flush, superseded */
            return;
        }
    }
    char *text = ma_trace_document(ma_rt, status, reason, 1);
    if (text && ma_trace_write_atomic(ma_rt->settings.trace_dir, ma_rt->rank, text))
        ma_warn("cannot write the trace into %s: %s", ma_rt->settings.trace_dir, strerror(errno));
    free(text);
}

void ma_lifecycle_finalize(void)
{
    if (!ma_rt)
        pthread_once(&rt_once, create_runtime);
    finish(MA_STATUS_COMPLETE, NULL);
}

void ma_lifecycle_flush(void)
{
    ma_rt->writing = 1;
    refresh_rank();
    char *text = ma_trace_document(ma_rt, MA_STATUS_RUNNING, NULL, 0);
    if (text && ma_trace_write_atomic(ma_rt->settings.trace_dir, ma_rt->rank, text) && !ma_rt->write_failed) {
        ma_rt->write_failed = 1;
        ma_warn("cannot write the trace into %s: %s", ma_rt->settings.trace_dir, strerror(errno));
    }
    free(text);
    ma_rt->flush_deadline = ma_rt->flush_interval_ns ? ma_mono_ns() + ma_rt->flush_interval_ns : UINT64_MAX;
    ma_rt->writing = 0;
}

void ma_lifecycle_maybe_flush(uint64_t now)
{
    if (now > ma_rt->flush_deadline && !ma_rt->writing)
        ma_lifecycle_flush();
}

void ma_lifecycle_set_tracing(int on)
{
    if (on) {
        ma_rt->enabled = 1;
        return;
    }
    if (!ma_rt->enabled)
        return;
    if (ma_rt->depth) {
        ma_frame *top = &ma_rt->stack[ma_rt->depth - 1];
        ma_anomaly_add("tracing", top->node, NULL, 0, "tracing switched off while %zu annotation%s open (innermost: "
                       "%s '%s'); their ends are ignored until tracing is back on", ma_rt->depth,
                       ma_rt->depth == 1 ? " was" : "s were", top->type, top->node->id);
    }
    ma_mpi_close_from(0, ma_mono_ns());
    ma_rt->enabled = 0;
}

static void on_exit_handler(void)
{
    MA_FENCE_THIS_CALL();
    if (!ma_rt || ma_rt->finished)
        return;
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized)
        finish(MA_STATUS_TERMINATED, "exit without MPI_Finalize");
    else
        finish(MA_STATUS_COMPLETE, NULL);
}

/* ---- hooks into libmapmpi: start inside MPI_Init, write inside MPI_Finalize ---- */
static void on_mpi_init(void)
{
    MA_FENCE_THIS_CALL();
    ma_lifecycle_init();
}

static void on_mpi_finalize(void)
{
    MA_FENCE_THIS_CALL();
    if (ma_rt && !ma_rt->finished)
        finish(MA_STATUS_COMPLETE, NULL);
}

__attribute__((constructor)) static void register_hooks(void)
{
    ma_pmpi_on_init(on_mpi_init);
    ma_pmpi_on_finalize(on_mpi_finalize);
}
