/*
 * ma_internal.h -- state of the C runtime (libma), shared by its source files. Not installed.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_INTERNAL_H
#define MA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ma_expr.h"
#include "ma_pmpi.h"

#define MA_PRODUCER "libma 0.1.0"
#define MA_TRACE_VERSION 1

/* MA_VG_CACHE_MAX_LEVELS and MA_VG_CACHE_VALUES of ma_vgcount.h (CACHE_MAX_LEVELS of ma_core/trace_format.py) */
#define MA_CACHE_MAX_LEVELS 4
#define MA_CACHE_VALUES (2 + MA_CACHE_MAX_LEVELS)

/* ---- statistics and site-tree nodes (mirror ma_runtime/tree.py) ---- */
typedef struct ma_stats {
    uint64_t n;
    ma_num min, max, sum;
} ma_stats;

void ma_stats_add(ma_stats *s, ma_num x);

typedef struct ma_node {
    struct ma_node *parent, *first_child, *last_child, *next_sibling;
    const char *type; /* one of the static type names */
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
    int uses_iter;          /* an expression names `iter`: the cache also keys on the iteration */
    long long cache_iter;   /* the iteration the cached prediction was computed for */
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

/* ---- counters (ma_counters.c) ---- */
enum ma_kind { MA_KIND_FLOP, MA_KIND_LOADSTORE, MA_KIND_HEAP, MA_KIND_STACK, MA_N_KINDS };
extern const char *const ma_kind_names[MA_N_KINDS];

typedef long long (*ma_reader)(void);

#define MA_MAX_PROVIDERS 4
#define MA_MAX_EVENTS 6
typedef struct ma_provider {
    const char *name;
    int available;
    char version[64];
    char reason[256];
    int n_events;
    const char *event_names[MA_MAX_EVENTS];
    char event_states[MA_MAX_EVENTS][128];
    ma_reader readers[MA_N_KINDS];
    const char *sources[MA_N_KINDS];
} ma_provider;

typedef struct ma_counters {
    int n_providers;
    ma_provider providers[MA_MAX_PROVIDERS];
    ma_reader readers[MA_N_KINDS];        /* the winning reader per kind, or NULL */
    const ma_provider *measured_by[MA_N_KINDS];
    /* the cache simulation's totals into out[MA_CACHE_VALUES] (levels, accesses, hits per level); NULL when the
       tool simulates no cache */
    int (*cache_reader)(unsigned long long *out);
} ma_counters;

/* Open the providers named by MA_COUNTERS (`spec`); unknown names go to `warning`. */
void ma_counters_open(ma_counters *c, const char *spec, char *warning, size_t warnlen);

/* ---- the process-wide runtime ---- */
typedef struct ma_varrec { /* entry of the trace's variable table: one per (name, scope) */
    char *name, *expr, *scope;
    int derived;
    ma_stats stats;
    ma_num last;
    struct ma_varrec *next;
} ma_varrec;

typedef struct ma_anomaly {
    char *kind, *path, *message, *file;
    int line;
    uint64_t count;
    struct ma_anomaly *next;
} ma_anomaly;

typedef struct ma_settings {
    char trace_dir[4096];
    double tolerance;
    int n_by_type;
    char by_type_names[32][32];
    double by_type_values[32];
    double flush_seconds;
    char run_id[256];
    int has_run_id;
    int cpu_time; /* 0 none, 1 subroutines, 2 all */
    char counters[256];
} ma_settings;

typedef struct ma_runtime_state ma_runtime_state;

/* JSON of the whole trace document (ma_trace.c). Returns a malloc'ed NUL-terminated string. */
char *ma_trace_document(const ma_runtime_state *rt, const char *status, const char *reason, int final);
/* Write `text` atomically as <dir>/rank-<rank>.ma.json; 0 or -1 (errno set). */
int ma_trace_write_atomic(const char *dir, int rank, const char *text);

/* The merged trace at MPI_Finalize (collective over MPI_COMM_WORLD; every wait has a deadline). *written is 1
 * when this rank's numbers are in <dir>/job.ma.npz (its rank file is then not needed). */
int ma_trace_merge(const ma_runtime_state *rt, const char *status, const char *reason, int *written);

/* Accessors the trace writer needs (ma_runtime.c). */
const ma_settings *ma_rt_settings(const ma_runtime_state *rt);
const ma_counters *ma_rt_counters(const ma_runtime_state *rt);
const ma_node *ma_rt_root(const ma_runtime_state *rt);
const ma_varrec *ma_rt_variables(const ma_runtime_state *rt);
const ma_anomaly *ma_rt_anomalies(const ma_runtime_state *rt);
void ma_rt_identity(const ma_runtime_state *rt, int *rank, int *size, double *start_time);
/* One ma_vec_loop site: asserted values (first call, sums) and measured vector metrics (ma_vgcount.h order). */
#define MA_VEC_N_MEASURED 8
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
const ma_vecrec *ma_rt_vector_loops(const ma_runtime_state *rt);

/* ---- the Fortran bindings (ma_fortran.c, called by the `ma` module's procedures) ---- */
#define MA_HIDDEN __attribute__((visibility("hidden"))) /* libma's own: called directly, not through the PLT */
/* Length of a Fortran string without its trailing blanks (and a trailing NUL a C habit appended). */
MA_HIDDEN size_t ma_fortran_length(const char *text, size_t length);
/* ma_end_at for an id of `id_len` characters that need not end in a NUL (read as ma_fortran_length does). */
MA_HIDDEN void ma_end_fortran(const char *type, const char *id, size_t id_len, long long measured);
/* 1 when an annotation call from this thread is recorded or at least binds variables (the runtime is running,
 * this is its thread); ma_rt_recording also wants tracing on. Starts the runtime on the first call. */
MA_HIDDEN int ma_rt_accepting(void);
MA_HIDDEN int ma_rt_recording(void);
/* Set by the first call through the Fortran module (the header's language is then "fortran"). */
MA_HIDDEN extern int ma_fortran_calls;

/* Annotation calls made from threads other than the recording one (ignored, reported as an anomaly). */
uint64_t ma_rt_foreign_calls(const ma_runtime_state *rt);
/* Why the process's MPI calls bypass libmapmpi (ma_pmpi_unmeasured_reason), or NULL. */
const char *ma_rt_mpi_unmeasured(const ma_runtime_state *rt);
double ma_wall_clock(void);

#endif /* MA_INTERNAL_H */
