/*
 * ma_config.c -- the C runtime's settings from the environment (ma_config.h; ma_runtime/config.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#define _GNU_SOURCE
#include "ma_config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ma_util.h"

int ma_config_env_true(const char *name)
{
    const char *v = getenv(name);
    if (!v)
        return 0;
    char word[16];
    size_t n = 0;
    for (; *v && n + 1 < sizeof word; v++)
        if (!isspace((unsigned char)*v))
            word[n++] = (char)tolower((unsigned char)*v);
    word[n] = '\0';
    return !strcmp(word, "1") || !strcmp(word, "true") || !strcmp(word, "yes") || !strcmp(word, "on");
}

/* "0.05", "flop=0.2,loadstore=0.1" or "0.01,flop=0.2" (as ma_runtime/config.py parse_tolerance). */
static void parse_tolerance(ma_settings *s, const char *spec)
{
    s->tolerance = 0.0;
    s->n_by_type = 0;
    if (!spec)
        return;
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", spec);
    for (char *save = NULL, *part = strtok_r(copy, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*part))
            part++;
        if (!*part)
            continue;
        char *eq = strrchr(part, '=');
        char *number = eq ? eq + 1 : part;
        char *end;
        double value = strtod(number, &end);
        while (isspace((unsigned char)*end))
            end++;
        if (end == number || *end || value < 0) {
            ma_warn("MA_TOLERANCE=%s: %s is not a non-negative number (expected e.g. 0.05 or "
                    "flop=0.2,loadstore=0.1); ignored", spec, number);
            continue;
        }
        if (!eq) {
            s->tolerance = value;
            continue;
        }
        *eq = '\0';
        char *name = part;
        for (char *t = name + strlen(name); t > name && isspace((unsigned char)t[-1]); *--t = '\0')
            ;
        if (s->n_by_type < MA_MAX_TOLERANCES) {
            snprintf(s->by_type_names[s->n_by_type], sizeof s->by_type_names[0], "%s", name);
            s->by_type_values[s->n_by_type++] = value;
        }
    }
}

double ma_config_tolerance(const ma_settings *s, const char *type)
{
    for (int i = s->n_by_type - 1; i >= 0; i--)
        if (strcmp(s->by_type_names[i], type) == 0)
            return s->by_type_values[i];
    return s->tolerance;
}

int ma_config_tracks_cpu(const ma_settings *s, const char *type)
{
    return s->cpu_time == 2 || (s->cpu_time == 1 && !strcmp(type, "subroutine"));
}

void ma_config_read(ma_settings *s)
{
    memset(s, 0, sizeof *s);
    const char *dir = getenv("MA_TRACE_DIR");
    if (!dir || !*dir)
        dir = "ma-traces";
    char cwd[2048];
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(s->trace_dir, sizeof s->trace_dir, "%s/%s", cwd, dir);
    else
        snprintf(s->trace_dir, sizeof s->trace_dir, "%s", dir);
    parse_tolerance(s, getenv("MA_TOLERANCE"));
    const char *flush = getenv("MA_FLUSH_SECONDS");
    s->flush_seconds = 5.0;
    if (flush && *flush) {
        char *end;
        double value = strtod(flush, &end);
        if (end == flush)
            ma_warn("MA_FLUSH_SECONDS=%s is not a number of seconds; using 5", flush);
        else
            s->flush_seconds = value;
    }
    const char *run_id = getenv("MA_RUN_ID");
    if (run_id && *run_id) {
        s->has_run_id = 1;
        snprintf(s->run_id, sizeof s->run_id, "%s", run_id);
    }
    const char *cpu = getenv("MA_CPU_TIME");
    s->cpu_time = 1;
    if (cpu && *cpu) {
        if (!strcmp(cpu, "all"))
            s->cpu_time = 2;
        else if (!strcmp(cpu, "none"))
            s->cpu_time = 0;
        else if (strcmp(cpu, "subroutines") != 0)
            ma_warn("MA_CPU_TIME=%s: expected subroutines, all or none; using subroutines", cpu);
    }
    const char *counters = getenv("MA_COUNTERS");
    snprintf(s->counters, sizeof s->counters, "%s", counters && *counters ? counters : "auto");
}

void ma_config_launcher_rank_size(int *rank, int *size)
{
    static const char *const pairs[][2] = {{"PMI_RANK", "PMI_SIZE"},
                                           {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                           {"PMIX_RANK", "PMIX_SIZE"},
                                           {"SLURM_PROCID", "SLURM_NTASKS"}};
    *rank = 0;
    *size = 1;
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        const char *r = getenv(pairs[i][0]), *s = getenv(pairs[i][1]);
        if (r && *r && strspn(r, "0123456789") == strlen(r)) {
            *rank = atoi(r);
            *size = s && *s && strspn(s, "0123456789") == strlen(s) ? atoi(s) : *rank + 1;
            return;
        }
    }
}
