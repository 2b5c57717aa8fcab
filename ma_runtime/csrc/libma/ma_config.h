/*
 * ma_config.h -- the C runtime's settings, read from the environment (as ma_runtime/config.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_CONFIG_H
#define MA_CONFIG_H

#pragma GCC visibility push(hidden)

#define MA_MAX_TOLERANCES 32

typedef struct ma_settings {
    char trace_dir[4096];
    double tolerance;
    int n_by_type;
    char by_type_names[MA_MAX_TOLERANCES][32];
    double by_type_values[MA_MAX_TOLERANCES];
    double flush_seconds;
    char run_id[256];
    int has_run_id;
    int cpu_time; /* 0 none, 1 subroutines, 2 all */
    char counters[256];
} ma_settings;

/* MA_TRACE_DIR, MA_TOLERANCE, MA_FLUSH_SECONDS, MA_RUN_ID, MA_CPU_TIME, MA_COUNTERS; a bad value is warned about
 * and replaced by its default. */
void ma_config_read(ma_settings *s);
/* The relative tolerance of a node type (the last MA_TOLERANCE entry naming it, else the default). */
double ma_config_tolerance(const ma_settings *s, const char *type);
/* Whether a node of `type` adds up its CPU time (MA_CPU_TIME). */
int ma_config_tracks_cpu(const ma_settings *s, const char *type);
/* 1 for 1/true/yes/on (any case, blanks ignored), else 0 (unset included). */
int ma_config_env_true(const char *name);
/* Rank and size from the launcher's environment, before (or without) MPI (as mars._launcher_rank_size). */
void ma_config_launcher_rank_size(int *rank, int *size);

#pragma GCC visibility pop

#endif /* MA_CONFIG_H */
