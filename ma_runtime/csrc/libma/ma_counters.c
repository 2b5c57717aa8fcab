/*
 * ma_counters.c -- counter providers of the C runtime: PAPI, the `maflops` Valgrind tool, glibc mallinfo2.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Same roles as ma_runtime/counters: each provider reports its state for the trace header and hands out
 * running-total readers per kind; a region's value is the difference of two reads.
 *  - papi:     libma is built without PAPI when no papi.h/libpapi is found (the case on hosts without
 *              PAPI development files); it is then listed as unavailable with that reason.
 *  - valgrind: flops and loads/stores through the client requests of ma_vgcount.h, when the program runs
 *              under `valgrind --tool=maflops`. HOOK: this is where the Valgrind soft counter plugs in;
 *              built only when ma_vgcount.h and <valgrind/valgrind.h> are present (MA_HAVE_VGCOUNT).
 *  - mallinfo: heap bytes in use (glibc mallinfo2), for heap_memory regions; `valgrind` brings it along.
 */
#include "ma_counters.h"

#include <ctype.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#ifdef MA_HAVE_VGCOUNT
#include "ma_vgcount.h"
#endif

const char *const ma_kind_names[MA_N_KINDS] = {"flop", "loadstore", "heap_memory", "stack_memory"};

int ma_counters_kind_of(const char *type)
{
    for (int k = 0; k < MA_N_KINDS; k++)
        if (strcmp(ma_kind_names[k], type) == 0)
            return k;
    return -1;
}

static ma_provider *add_provider(ma_counters *c, const char *name)
{
    for (int i = 0; i < c->n_providers; i++)
        if (strcmp(c->providers[i].name, name) == 0)
            return NULL; /* named twice */
    if (c->n_providers >= MA_MAX_PROVIDERS)
        return NULL;
    ma_provider *p = &c->providers[c->n_providers++];
    memset(p, 0, sizeof *p);
    p->name = name;
    return p;
}

static void add_event(ma_provider *p, const char *event, const char *state)
{
    if (p->n_events >= MA_MAX_EVENTS)
        return;
    p->event_names[p->n_events] = event;
    snprintf(p->event_states[p->n_events], sizeof p->event_states[0], "%s", state);
    p->n_events++;
}

static void open_papi(ma_counters *c)
{
    ma_provider *p = add_provider(c, "papi");
    if (!p)
        return;
    p->available = 0;
    snprintf(p->reason, sizeof p->reason,
             "libma was built without PAPI (no papi.h and libpapi were found when it was compiled); "
             "run under valgrind --tool=maflops (MA_COUNTERS=valgrind) to measure flops and loads/stores");
}

#ifdef MA_HAVE_VGCOUNT
static long long vg_flops(void) { return (long long)ma_vg_flops(); }
static long long vg_loadstores(void) { return (long long)ma_vg_loadstores(); }
static int vg_cache_read(unsigned long long *out) { return ma_vg_cache_read(out); }
#endif

static void open_valgrind(ma_counters *c, int only_if_running)
{
#ifdef MA_HAVE_VGCOUNT
    int running = ma_vg_running();
    if (only_if_running && !running)
        return;
    ma_provider *p = add_provider(c, "valgrind");
    if (!p)
        return;
    if (!running) {
        snprintf(p->reason, sizeof p->reason,
                 "not running under the %s Valgrind tool: start the program with 'ma run --counters valgrind'",
                 MA_VG_TOOL_NAME);
        return;
    }
    /* as the Python provider: "valgrind-<core major.minor> maflops-<tool major.minor.patch>" */
    unsigned long tool = (unsigned long)VALGRIND_DO_CLIENT_REQUEST_EXPR(0, MA_VG_REQ_VERSION, 0, 0, 0, 0, 0);
    unsigned long core = (unsigned long)VALGRIND_DO_CLIENT_REQUEST_EXPR(0, MA_VG_REQ_CORE_VERSION, 0, 0, 0, 0, 0);
    snprintf(p->version, sizeof p->version, "valgrind-%lu.%lu %s-%lu.%lu.%lu", core / 100, core % 100,
             MA_VG_TOOL_NAME, tool / 10000, tool / 100 % 100, tool % 100);
    p->available = 1;
    static const char *const names[] = {"dp_flops", "sp_flops", "loads", "stores", "load_bytes", "store_bytes"};
    for (int i = 0; i < MA_VG_N_COUNTERS; i++)
        add_event(p, names[i], "ok");
    p->readers[MA_KIND_FLOP] = vg_flops;
    p->sources[MA_KIND_FLOP] = MA_VG_TOOL_NAME ":dp_flops+sp_flops";
    p->readers[MA_KIND_LOADSTORE] = vg_loadstores;
    p->sources[MA_KIND_LOADSTORE] = MA_VG_TOOL_NAME ":loads+stores";
    unsigned long long probe[MA_VG_CACHE_VALUES];
    if (ma_vg_cache_read(probe) > 0) /* ma run --cache: every flop/loadstore site reads it too */
        c->cache_reader = vg_cache_read;
#else
    if (only_if_running)
        return;
    ma_provider *p = add_provider(c, "valgrind");
    if (p)
        snprintf(p->reason, sizeof p->reason,
                 "libma was built without the Valgrind client requests (ma_vgcount.h or valgrind/valgrind.h "
                 "missing at build time)");
#endif
}

static long long heap_in_use(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
#else
    struct mallinfo info = mallinfo();
    return (long long)(unsigned)info.uordblks + (long long)(unsigned)info.hblkhd;
#endif
}

static void open_mallinfo(ma_counters *c)
{
    ma_provider *p = add_provider(c, "mallinfo");
    if (!p)
        return;
    p->available = 1;
    snprintf(p->version, sizeof p->version, "glibc %d.%d", __GLIBC__, __GLIBC_MINOR__);
    add_event(p, "in_use_bytes", "ok");
    p->readers[MA_KIND_HEAP] = heap_in_use;
    p->sources[MA_KIND_HEAP] = "mallinfo2 uordblks+hblkhd (heap bytes in use)";
}

void ma_counters_open(ma_counters *c, const char *spec, char *warning, size_t warnlen)
{
    memset(c, 0, sizeof *c);
    if (warning && warnlen)
        warning[0] = '\0';
    char names[256];
    snprintf(names, sizeof names, "%s", spec && *spec ? spec : "auto");
    for (char *save = NULL, *name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*name))
            name++;
        for (char *end = name + strlen(name); end > name && isspace((unsigned char)end[-1]); *--end = '\0')
            ;
        for (char *q = name; *q; q++)
            *q = (char)tolower((unsigned char)*q);
        if (!*name || strcmp(name, "none") == 0)
            continue;
        if (strcmp(name, "auto") == 0) { /* PAPI, the Valgrind tool when running under it, mallinfo */
            open_papi(c);
            open_valgrind(c, 1);
            open_mallinfo(c);
        } else if (strcmp(name, "papi") == 0) {
            open_papi(c);
        } else if (strcmp(name, "valgrind") == 0) {
            open_valgrind(c, 0);
            open_mallinfo(c); /* the tool counts no heap: mallinfo2 does (named twice: added once) */
        } else if (strcmp(name, "ccalls") == 0) {
            continue; /* calls from Python into compiled code: nothing to count in a C program */
        } else if (strcmp(name, "mallinfo") == 0 || strcmp(name, "tracemalloc") == 0) {
            open_mallinfo(c); /* tracemalloc is Python's heap provider: mallinfo is the C one */
        } else if (warning && warnlen) {
            snprintf(warning, warnlen, "MA_COUNTERS: unknown counter provider '%s' ignored (expected auto, none, "
                     "papi, valgrind, mallinfo or tracemalloc)", name);
        }
    }
    for (int k = 0; k < MA_N_KINDS; k++)
        for (int i = 0; i < c->n_providers && !c->readers[k]; i++)
            if (c->providers[i].readers[k]) {
                c->readers[k] = c->providers[i].readers[k];
                c->measured_by[k] = &c->providers[i];
            }
}
