/*
 * ma_trace.c -- the trace document of the C runtime (ma_trace.h), in the format of docs/trace-format.md: site nodes
 * in the layout of ma_trace_format.h (generated from ma_core/trace_format.py), the rest as the Python runtime
 * writes it (ma_runtime/mars.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#define _GNU_SOURCE
#include "ma_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ma_pmpi.h"
#include "ma_util.h"

#define AS_KEY_NAME(key, name, presence) name,
#define AS_KEY_PRESENCE(key, name, presence) presence,
#define AS_STRING(name) name,
const char *const ma_node_key_names[MA_NODE_N_KEYS] = {MA_NODE_KEYS(AS_KEY_NAME)};
static const enum ma_presence NODE_KEY_PRESENCE[MA_NODE_N_KEYS] = {MA_NODE_KEYS(AS_KEY_PRESENCE)};
static const char *const COUNT_KEYS[] = {MA_COUNT_KEYS(AS_STRING)};
static const char *const FIRST_MISMATCH_KEYS[] = {MA_FIRST_MISMATCH_KEYS(AS_STRING)};
static const char *const FIRST_FAIL_KEYS[] = {MA_FIRST_FAIL_KEYS(AS_STRING) MA_FIRST_FAIL_MPI_KEYS(AS_STRING)};
static const char *const CACHE_KEYS[] = {MA_CACHE_KEYS(AS_STRING)};
static const char *const GATHER_KEYS[] = {MA_VEC_LOOP_GATHER_KEYS(AS_STRING)};

int ma_trace_node_key(const char *name)
{
    for (int k = 0; k < MA_NODE_N_KEYS; k++)
        if (!strcmp(ma_node_key_names[k], name))
            return k;
    return -1;
}

static void count(ma_out *o, uint64_t n) { ma_out_fmt(o, "%llu", (unsigned long long)n); }

/* The node member behind each key that holds a text, a count or a stats object: X(key, member). */
#define TEXT_MEMBERS(X) X(MA_NODE_ID, id) X(MA_NODE_TYPE, type) X(MA_NODE_PATH, path) X(MA_NODE_EXPR, expr_text) \
    X(MA_NODE_FILE, file) X(MA_NODE_COUNT_EXPR, count_text)
#define COUNT_MEMBERS(X) X(MA_NODE_CALLS, calls) X(MA_NODE_PASS, pass) X(MA_NODE_FAIL, fail) \
    X(MA_NODE_UNMEASURED, unmeasured) X(MA_NODE_MISMATCH, mismatch) X(MA_NODE_WALL_NS, wall_ns) \
    X(MA_NODE_CPU_NS, cpu_ns)
#define STATS_MEMBERS(X) X(MA_NODE_PREDICTED, predicted) X(MA_NODE_MEASURED, measured)
#define AS_TEXT_CASE(key, member) case key: ma_json_str(o, n->member); break;
#define AS_COUNT_CASE(key, member) case key: count(o, n->member); break;
#define AS_STATS_CASE(key, member) case key: ma_json_stats(o, &n->member); break;

static void node(ma_out *o, const ma_node *n);

int ma_trace_node_value(ma_out *o, const ma_node *n, enum ma_node_key key)
{
    if (NODE_KEY_PRESENCE[key] == MA_MPI_ONLY && !n->count_text)
        return 0; /* only an MPI node has a count expression */
    switch (key) {
        TEXT_MEMBERS(AS_TEXT_CASE)
        COUNT_MEMBERS(AS_COUNT_CASE)
        STATS_MEMBERS(AS_STATS_CASE)
    case MA_NODE_LINE:
        if (n->file)
            ma_out_fmt(o, "%d", n->line);
        else
            ma_out_raw(o, "null");
        break;
    case MA_NODE_FIRST_MISMATCH: {
        ma_num values[] = {n->first_mismatch_given, n->first_mismatch_evaluated};
        if (n->has_first_mismatch)
            ma_json_object(o, FIRST_MISMATCH_KEYS, 2, NULL, values);
        else
            ma_out_raw(o, "null");
        break;
    }
    case MA_NODE_FIRST_FAIL: {
        ma_num values[] = {ma_int((long long)n->first_fail_call), n->first_fail_predicted, n->first_fail_measured,
                           n->first_fail_count_predicted, n->first_fail_count_measured};
        if (n->has_first_fail)
            ma_json_object(o, FIRST_FAIL_KEYS, n->first_fail_has_count ? 5 : 3, NULL, values);
        else
            ma_out_raw(o, "null");
        break;
    }
    case MA_NODE_COUNT:
        ma_out_raw(o, "{"), ma_json_key(o, COUNT_KEYS[0]), ma_json_stats(o, &n->count_predicted);
        ma_out_raw(o, ","), ma_json_key(o, COUNT_KEYS[1]), ma_json_stats(o, &n->count_measured), ma_out_raw(o, "}");
        break;
    case MA_NODE_CHILDREN:
        ma_out_raw(o, "[");
        for (const ma_node *c = n->first_child; c; c = c->next_sibling) {
            node(o, c);
            if (c->next_sibling)
                ma_out_raw(o, ",");
        }
        ma_out_raw(o, "]");
        break;
    case MA_NODE_CACHE:
        if (!n->cache_calls)
            return 0; /* no call measured by the cache simulation */
        ma_out_raw(o, "{"), ma_json_key(o, CACHE_KEYS[0]), count(o, n->cache_calls);
        ma_out_raw(o, ","), ma_json_key(o, CACHE_KEYS[1]), count(o, n->cache_accesses);
        ma_out_raw(o, ","), ma_json_key(o, CACHE_KEYS[2]), ma_out_raw(o, "[");
        for (int k = 0; k < n->cache_levels; k++)
            ma_out_fmt(o, "%s%llu", k ? "," : "", (unsigned long long)n->cache_hits[k]);
        ma_out_raw(o, "]}");
        break;
    case MA_NODE_C_CALLS:
    case MA_NODE_SUBSCRIPTS:
        return 0; /* counted by the Python runtime's ccalls counter only */
    case MA_NODE_N_KEYS:
        return 0;
    }
    return 1;
}

/* A site node: its keys in the order of the layout, each it has. */
static void node(ma_out *o, const ma_node *n)
{
    ma_out_raw(o, "{");
    for (int k = 0, written = 0; k < MA_NODE_N_KEYS; k++) {
        size_t mark = o->len;
        if (written)
            ma_out_raw(o, ",");
        ma_json_key(o, ma_node_key_names[k]);
        if (ma_trace_node_value(o, n, (enum ma_node_key)k))
            written = 1;
        else if (!o->failed)
            o->len = mark; /* a key this node does not have */
    }
    ma_out_raw(o, "}");
}

static void command_line(ma_out *o)
{
    ma_out_raw(o, "[");
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (f) {
        char arg[4096];
        size_t n = 0;
        int c, first = 1;
        while ((c = fgetc(f)) != EOF) {
            if (c && n + 1 < sizeof arg) {
                arg[n++] = (char)c;
                continue;
            }
            if (c)
                continue; /* an over-long argument is cut */
            arg[n] = '\0';
            if (!first)
                ma_out_raw(o, ",");
            ma_json_str(o, arg);
            first = 0;
            n = 0;
        }
        fclose(f);
    }
    ma_out_raw(o, "]");
}

static void provider(ma_out *o, const ma_provider *p)
{
    ma_out_raw(o, "{"), ma_json_key(o, "name"), ma_json_str(o, p->name);
    ma_out_raw(o, ","), ma_json_key(o, "available"), ma_out_raw(o, p->available ? "true" : "false");
    ma_out_raw(o, ","), ma_json_key(o, "version"), ma_json_str(o, p->version[0] ? p->version : NULL);
    ma_out_raw(o, ","), ma_json_key(o, "reason"), ma_json_str(o, p->reason[0] ? p->reason : NULL);
    ma_out_raw(o, ",\"events\":{");
    for (int i = 0; i < p->n_events; i++) {
        if (i)
            ma_out_raw(o, ",");
        ma_json_key(o, p->event_names[i]);
        ma_json_str(o, p->event_states[i]);
    }
    ma_out_raw(o, "}}");
}

void ma_trace_header(ma_out *o, const ma_runtime_state *rt, const char *status, const char *reason, int final)
{
    const ma_settings *s = &rt->settings;
    const ma_counters *c = &rt->counters;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    ma_out_raw(o, rt->fortran_calls ? "{\"language\":\"fortran\",\"producer\":"
                                    : "{\"language\":\"c\",\"producer\":");
    ma_json_str(o, MA_PRODUCER);
    ma_out_fmt(o, ",\"rank\":%d,\"size\":%d,\"host\":", rt->rank, rt->size);
    ma_json_str(o, host);
    ma_out_fmt(o, ",\"pid\":%ld,\"run_id\":", (long)getpid());
    ma_json_str(o, s->has_run_id ? s->run_id : NULL);
    ma_out_raw(o, ",\"command\":");
    command_line(o);
    ma_out_raw(o, ",\"start_time\":");
    ma_json_num(o, ma_dbl(rt->start_time));
    ma_out_raw(o, ",\"end_time\":");
    if (final)
        ma_json_num(o, ma_dbl(ma_wall_clock()));
    else
        ma_out_raw(o, "null");
    ma_out_raw(o, ",\"status\":");
    ma_json_str(o, status);
    ma_out_raw(o, ",\"exit_reason\":");
    ma_json_str(o, reason);
    ma_out_raw(o, ",\"tolerance\":{\"default\":");
    ma_json_num(o, ma_dbl(s->tolerance));
    ma_out_raw(o, ",\"by_type\":{");
    for (int i = 0; i < s->n_by_type; i++) {
        int later = 0; /* a type named twice: the last value wins, as in a Python dict */
        for (int j = i + 1; j < s->n_by_type; j++)
            later |= !strcmp(s->by_type_names[i], s->by_type_names[j]);
        if (later)
            continue;
        if (o->len && o->buf[o->len - 1] != '{')
            ma_out_raw(o, ",");
        ma_json_key(o, s->by_type_names[i]);
        ma_json_num(o, ma_dbl(s->by_type_values[i]));
    }
    ma_out_raw(o, "}},\"counters\":{\"providers\":[");
    for (int i = 0; i < c->n_providers; i++) {
        if (i)
            ma_out_raw(o, ",");
        provider(o, &c->providers[i]);
    }
    ma_out_raw(o, "],\"measures\":{");
    for (int k = 0; k < MA_N_KINDS; k++) {
        if (k)
            ma_out_raw(o, ",");
        ma_json_key(o, ma_kind_names[k]);
        const ma_provider *p = c->measured_by[k];
        if (p) {
            ma_out_raw(o, "{"), ma_json_key(o, "provider"), ma_json_str(o, p->name);
            ma_out_raw(o, ","), ma_json_key(o, "source"), ma_json_str(o, p->sources[k]), ma_out_raw(o, "}");
        } else {
            ma_out_raw(o, "null");
        }
    }
    ma_out_raw(o, rt->mpi_unmeasured ? "}},\"mpi\":{\"profiling\":false,\"library\":"
                                     : "}},\"mpi\":{\"profiling\":true,\"library\":");
    ma_json_str(o, ma_pmpi_library_path());
    ma_out_raw(o, ",\"reason\":");
    ma_json_str(o, rt->mpi_unmeasured);
    ma_out_raw(o, "}}");
}

void ma_trace_anomaly(ma_out *o, const char *kind, const char *path, const char *message, uint64_t count,
                      const char *file, int line)
{
    ma_out_raw(o, "{"), ma_json_key(o, "kind"), ma_json_str(o, kind);
    ma_out_raw(o, ","), ma_json_key(o, "path"), ma_json_str(o, path);
    ma_out_raw(o, ","), ma_json_key(o, "message"), ma_json_str(o, message);
    ma_out_fmt(o, ",\"count\":%llu,\"file\":", (unsigned long long)count);
    ma_json_str(o, file);
    ma_out_raw(o, ",\"line\":");
    if (file)
        ma_out_fmt(o, "%d", line);
    else
        ma_out_raw(o, "null");
    ma_out_raw(o, "}");
}

/* The `peers` entries of the sites below `n` that name their partner (ma_mpi_peer); returns how many so far. */
static int peer_entries(ma_out *o, const ma_node *n, int rank, int written)
{
    for (const ma_node *c = n->first_child; c; c = c->next_sibling) {
        if (c->peer_text) {
            ma_out_raw(o, written ? ",{" : "{"), ma_json_key(o, "path"), ma_json_str(o, c->path);
            ma_out_raw(o, ","), ma_json_key(o, "type"), ma_json_str(o, c->type);
            ma_out_raw(o, ",\"thread\":0,"), ma_json_key(o, "expr"), ma_json_str(o, c->peer_text);
            ma_out_fmt(o, ",\"pass\":%llu,\"fail\":%llu,\"unmeasured\":%llu,\"first_fail\":",
                       (unsigned long long)c->peer_pass, (unsigned long long)c->peer_fail,
                       (unsigned long long)c->peer_unmeasured);
            if (c->has_peer_fail)
                ma_out_fmt(o, "{\"call\":%llu,\"rank\":%d,\"expected\":%lld,\"actual\":%lld}}",
                           (unsigned long long)c->peer_fail_call, rank, c->peer_fail_expected, c->peer_fail_actual);
            else
                ma_out_raw(o, "null}");
            written++;
        }
        written = peer_entries(o, c, rank, written);
    }
    return written;
}

static int any_peer(const ma_node *n)
{
    for (const ma_node *c = n->first_child; c; c = c->next_sibling)
        if (c->peer_text || any_peer(c))
            return 1;
    return 0;
}

/* `"expr":{...},"predicted_first":{...},"predicted_sum":{...}` of n asserted values under `keys`. */
static void asserted(ma_out *o, const char *const *keys, int n, char *const *exprs, const ma_num *first,
                     const double *sums)
{
    ma_num sum[3];
    for (int i = 0; i < n && i < 3; i++)
        sum[i] = ma_dbl(sums[i]);
    ma_json_key(o, "expr"), ma_json_object(o, keys, n, exprs, NULL);
    ma_out_raw(o, ","), ma_json_key(o, "predicted_first"), ma_json_object(o, keys, n, NULL, first);
    ma_out_raw(o, ","), ma_json_key(o, "predicted_sum"), ma_json_object(o, keys, n, NULL, sum);
}

/* `,"gathers":{...}` of a record (ma_vec_loop_gathers), null when not stated. */
static void vector_loop_gathers(ma_out *o, const ma_vecrec *r)
{
    if (!r->gather_expr[0]) {
        ma_out_raw(o, ",\"gathers\":null");
        return;
    }
    ma_out_raw(o, ",\"gathers\":{");
    asserted(o, GATHER_KEYS, 2, r->gather_expr, r->gather_first, r->gather_sum);
    ma_out_raw(o, "}");
}

/* `,"vector_loops":[...]` of the ma_vec_loop records (ma_runtime/vector.py writes the same); nothing when none. */
static void vector_loops(ma_out *o, const ma_vecrec *r)
{
    static const char *const predicted[3] = {"vloadstore", "vflops", "avl"};
    static const char *const measured[MA_VEC_N_MEASURED] = {"vec_flops", "scalar_flops", "vec_fp_insns", "vec_lanes",
                                                            "vec_loads", "vec_stores", "scalar_loads", "scalar_stores"};
    if (!r)
        return;
    ma_out_raw(o, ",\"vector_loops\":[");
    for (int first = 1; r; r = r->next, first = 0) {
        ma_out_raw(o, first ? "{" : ",{");
        ma_json_key(o, "id"), ma_json_str(o, r->id), ma_out_raw(o, ",");
        ma_json_key(o, "path"), ma_json_str(o, r->path), ma_out_raw(o, ",");
        ma_json_key(o, "file"), ma_json_str(o, r->file);
        if (r->file)
            ma_out_fmt(o, ",\"line\":%d", r->line);
        else
            ma_out_raw(o, ",\"line\":null");
        ma_out_fmt(o, ",\"depth\":%d,\"mv\":%d,\"calls\":%llu,", r->depth, r->mv, (unsigned long long)r->calls);
        asserted(o, predicted, 3, r->expr, r->first, r->sum);
        ma_out_raw(o, ",\"measured\":");
        if (r->measured_calls) {
            for (int i = 0; i < MA_VEC_N_MEASURED; i++) {
                ma_out_raw(o, i ? "," : "{");
                ma_json_key(o, measured[i]);
                ma_out_fmt(o, "%llu", r->measured[i]);
            }
            ma_out_raw(o, "}");
        } else {
            ma_out_raw(o, "null");
        }
        ma_out_fmt(o, ",\"measured_calls\":%llu", (unsigned long long)r->measured_calls);
        vector_loop_gathers(o, r);
        ma_out_raw(o, "}");
    }
    ma_out_raw(o, "]");
}

/* The optional top-level keys (OPTIONAL_DOCUMENT_KEYS of ma_core/trace_format.py), each only when used; the rank
 * file and the merged trace's part both carry them. */
void ma_trace_optional_keys(ma_out *o, const ma_runtime_state *rt)
{
    if (any_peer(rt->root)) { /* only when some assertion named its partner */
        ma_out_raw(o, ",\"peers\":[");
        peer_entries(o, rt->root, rt->rank, 0);
        ma_out_raw(o, "]");
    }
    vector_loops(o, rt->vector.first);
}

static void variables(ma_out *o, const ma_varrec *v)
{
    for (; v; v = v->next) {
        ma_out_raw(o, "{"), ma_json_key(o, "name"), ma_json_str(o, v->name);
        ma_out_raw(o, ","), ma_json_key(o, "kind"), ma_json_str(o, v->derived ? "derived" : "input");
        ma_out_raw(o, ","), ma_json_key(o, "expr"), ma_json_str(o, v->expr);
        ma_out_raw(o, ","), ma_json_key(o, "scope"), ma_json_str(o, v->scope);
        ma_out_fmt(o, ",\"defs\":%llu,\"value\":", (unsigned long long)v->stats.n);
        ma_json_num(o, v->last);
        ma_out_raw(o, ",\"min\":");
        ma_json_num(o, v->stats.min);
        ma_out_raw(o, ",\"max\":");
        ma_json_num(o, v->stats.max);
        ma_out_raw(o, v->next ? "}," : "}");
    }
}

char *ma_trace_document(const ma_runtime_state *rt, const char *status, const char *reason, int final)
{
    ma_out o = {0};
    ma_out_fmt(&o, "{\"format\":\"%s\",\"version\":%d,\"header\":", MA_TRACE_FORMAT, MA_TRACE_VERSION);
    ma_trace_header(&o, rt, status, reason, final);
    ma_out_raw(&o, ",\"variables\":[");
    variables(&o, rt->variables);
    ma_out_raw(&o, "],\"threads\":[{\"thread\":0,\"name\":\"main\",\"root\":");
    node(&o, rt->root);
    ma_out_raw(&o, "}],\"anomalies\":[");
    int first = 1;
    for (const ma_anomaly *a = rt->anomalies; a; a = a->next) {
        if (!first)
            ma_out_raw(&o, ",");
        ma_trace_anomaly(&o, a->kind, a->path, a->message, a->count, a->file, a->line);
        first = 0;
    }
    if (rt->foreign_calls) {
        if (!first)
            ma_out_raw(&o, ",");
        ma_trace_anomaly(&o, "thread", "", "annotation calls from threads other than the one that started the C "
                         "runtime were ignored (libma records one thread)", rt->foreign_calls, NULL, 0);
        first = 0;
    }
    if (o.unrepresentable) {
        if (!first)
            ma_out_raw(&o, ",");
        ma_trace_anomaly(&o, "unrepresentable", "", "values that are not finite (a sum of large predictions, say) "
                         "are written as {\"$num\": \"inf\"} and the like", o.unrepresentable, NULL, 0);
    }
    ma_out_raw(&o, "],\"mpi_profile\":");
    size_t need = ma_pmpi_profile_json(NULL, 0);
    ma_out_reserve(&o, need + 2);
    if (!o.failed) {
        ma_pmpi_profile_json(o.buf + o.len, o.cap - o.len);
        o.len += need;
    }
    ma_trace_optional_keys(&o, rt);
    ma_out_raw(&o, "}\n");
    if (o.failed) {
        free(o.buf);
        errno = ENOMEM;
        return NULL;
    }
    return o.buf;
}

int ma_trace_make_dirs(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(path, 0777) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(path, 0777) && errno != EEXIST ? -1 : 0;
}

int ma_trace_write_atomic(const char *dir, int rank, const char *text)
{
    if (ma_trace_make_dirs(dir))
        return -1;
    char final_path[4200], temporary[4300];
    snprintf(final_path, sizeof final_path, "%s/rank-%d.ma.json", dir, rank);
    snprintf(temporary, sizeof temporary, "%s/.rank-%d.ma.json.%ld.tmp", dir, rank, (long)getpid());
    FILE *f = fopen(temporary, "w");
    if (!f)
        return -1;
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad || rename(temporary, final_path)) {
        int saved = errno;
        unlink(temporary);
        errno = saved;
        return -1;
    }
    return 0;
}
