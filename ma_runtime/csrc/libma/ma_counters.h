/*
 * ma_counters.h -- counter providers of the C runtime (ma_counters.c; ma_runtime/counters).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_COUNTERS_H
#define MA_COUNTERS_H

#include <stddef.h>

#include "ma_trace_format.h"

#pragma GCC visibility push(hidden)

/* MA_VG_CACHE_VALUES of ma_vgcount.h: levels, accesses, then the accesses each level served */
#define MA_CACHE_VALUES (2 + MA_CACHE_MAX_LEVELS)

/* What a counter measures: the region annotation types, in the order of the header's `measures`. */
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
/* The kind a node type measures (MA_KIND_FLOP ...), or -1 for a type no counter measures. */
int ma_counters_kind_of(const char *type);

#pragma GCC visibility pop

#endif /* MA_COUNTERS_H */
