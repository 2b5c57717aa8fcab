/*
 * ma_trace.c -- the trace document of the C runtime, in the format of docs/trace-format.md (version 1),
 * with the same fields, in the same order, as the Python runtime writes (ma_runtime/mars.py, tree.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ma_internal.h"

typedef struct out {
    char *buf;
    size_t len, cap;
    int failed;
    unsigned long long unrepresentable; /* non-finite doubles written as {"$num": ...} */
} out;

static void reserve(out *o, size_t more)
{
    if (o->failed || o->len + more + 1 <= o->cap)
        return;
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + more + 1)
        cap *= 2;
    char *grown = realloc(o->buf, cap);
    if (!grown) {
        o->failed = 1;
        return;
    }
    o->buf = grown;
    o->cap = cap;
}

static void raw(out *o, const char *s)
{
    size_t n = strlen(s);
    reserve(o, n);
    if (o->failed)
        return;
    memcpy(o->buf + o->len, s, n + 1);
    o->len += n;
}

static void fmt(out *o, const char *format, ...)
{
    char small[256];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        raw(o, small);
        return;
    }
    reserve(o, (size_t)n);
    if (o->failed)
        return;
    va_start(args, format);
    vsnprintf(o->buf + o->len, (size_t)n + 1, format, args);
    va_end(args);
    o->len += (size_t)n;
}

static void str(out *o, const char *s)
{
    if (!s) {
        raw(o, "null");
        return;
    }
    raw(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char piece[8] = {(char)*p, 0};
        if (*p == '"')
            strcpy(piece, "\\\"");
        else if (*p == '\\')
            strcpy(piece, "\\\\");
        else if (*p == '\n')
            strcpy(piece, "\\n");
        else if (*p == '\t')
            strcpy(piece, "\\t");
        else if (*p == '\r')
            strcpy(piece, "\\r");
        else if (*p < 0x20)
            snprintf(piece, sizeof piece, "\\u%04x", *p);
        raw(o, piece);
    }
    raw(o, "\"");
}

static void key(out *o, const char *name)
{
    str(o, name);
    raw(o, ":");
}

/* A number; a non-finite double (a sum of large predictions can overflow) in the form of docs/trace-format.md
 * that strict JSON can carry, counted for an `unrepresentable` anomaly. */
static void num(out *o, ma_num n)
{
    if (!n.is_int && !isfinite(n.d)) {
        o->unrepresentable++;
        raw(o, isnan(n.d) ? "{\"$num\":\"nan\"}" : n.d > 0 ? "{\"$num\":\"inf\"}" : "{\"$num\":\"-inf\"}");
        return;
    }
    char text[64];
    ma_num_format(n, text, sizeof text);
    raw(o, text);
}

static void stats(out *o, const ma_stats *s)
{
    if (!s->n) {
        raw(o, "null");
        return;
    }
    fmt(o, "{\"n\":%llu,\"min\":", (unsigned long long)s->n);
    num(o, s->min);
    raw(o, ",\"max\":");
    num(o, s->max);
    raw(o, ",\"sum\":");
    num(o, s->sum);
    raw(o, "}");
}

static void node(out *o, const ma_node *n)
{
    raw(o, "{");
    key(o, "id"), str(o, n->id);
    raw(o, ","), key(o, "type"), str(o, n->type);
    raw(o, ","), key(o, "path"), str(o, n->path);
    raw(o, ","), key(o, "expr"), str(o, n->expr_text);
    raw(o, ","), key(o, "file"), str(o, n->file);
    raw(o, ","), key(o, "line");
    if (n->file)
        fmt(o, "%d", n->line);
    else
        raw(o, "null");
    fmt(o, ",\"calls\":%llu,\"predicted\":", (unsigned long long)n->calls);
    stats(o, &n->predicted);
    raw(o, ",\"measured\":");
    stats(o, &n->measured);
    fmt(o, ",\"pass\":%llu,\"fail\":%llu,\"unmeasured\":%llu,\"mismatch\":%llu,\"first_mismatch\":",
        (unsigned long long)n->pass, (unsigned long long)n->fail, (unsigned long long)n->unmeasured,
        (unsigned long long)n->mismatch);
    if (n->has_first_mismatch) {
        raw(o, "{\"given\":");
        num(o, n->first_mismatch_given);
        raw(o, ",\"evaluated\":");
        num(o, n->first_mismatch_evaluated);
        raw(o, "}");
    } else {
        raw(o, "null");
    }
    raw(o, ",\"first_fail\":");
    if (n->has_first_fail) {
        fmt(o, "{\"call\":%llu,\"predicted\":", (unsigned long long)n->first_fail_call);
        num(o, n->first_fail_predicted);
        raw(o, ",\"measured\":");
        num(o, n->first_fail_measured);
        if (n->first_fail_has_count) {
            raw(o, ",\"count_predicted\":");
            num(o, n->first_fail_count_predicted);
            raw(o, ",\"count_measured\":");
            num(o, n->first_fail_count_measured);
        }
        raw(o, "}");
    } else {
        raw(o, "null");
    }
    fmt(o, ",\"wall_ns\":%llu,\"cpu_ns\":%llu", (unsigned long long)n->wall_ns, (unsigned long long)n->cpu_ns);
    if (n->cache_calls) { /* NODE_CACHE_KEY of ma_core/trace_format.py */
        fmt(o, ",\"cache\":{\"calls\":%llu,\"accesses\":%llu,\"hits\":[", (unsigned long long)n->cache_calls,
            (unsigned long long)n->cache_accesses);
        for (int k = 0; k < n->cache_levels; k++)
            fmt(o, "%s%llu", k ? "," : "", (unsigned long long)n->cache_hits[k]);
        raw(o, "]}");
    }
    if (n->count_text) {
        raw(o, ","), key(o, "count_expr"), str(o, n->count_text);
        raw(o, ",\"count\":{\"predicted\":");
        stats(o, &n->count_predicted);
        raw(o, ",\"measured\":");
        stats(o, &n->count_measured);
        raw(o, "}");
    }
    raw(o, ",\"children\":[");
    for (const ma_node *c = n->first_child; c; c = c->next_sibling) {
        node(o, c);
        if (c->next_sibling)
            raw(o, ",");
    }
    raw(o, "]}");
}

static void command_line(out *o)
{
    raw(o, "[");
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
                raw(o, ",");
            str(o, arg);
            first = 0;
            n = 0;
        }
        fclose(f);
    }
    raw(o, "]");
}

static void provider(out *o, const ma_provider *p)
{
    raw(o, "{"), key(o, "name"), str(o, p->name);
    raw(o, ","), key(o, "available"), raw(o, p->available ? "true" : "false");
    raw(o, ","), key(o, "version"), str(o, p->version[0] ? p->version : NULL);
    raw(o, ","), key(o, "reason"), str(o, p->reason[0] ? p->reason : NULL);
    raw(o, ",\"events\":{");
    for (int i = 0; i < p->n_events; i++) {
        if (i)
            raw(o, ",");
        key(o, p->event_names[i]);
        str(o, p->event_states[i]);
    }
    raw(o, "}}");
}

static void header(out *o, const ma_runtime_state *rt, const char *status, const char *reason, int final)
{
    const ma_settings *s = ma_rt_settings(rt);
    const ma_counters *c = ma_rt_counters(rt);
    int rank, size;
    double start_time;
    ma_rt_identity(rt, &rank, &size, &start_time);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    raw(o, ma_fortran_calls ? "{\"language\":\"fortran\",\"producer\":" : "{\"language\":\"c\",\"producer\":");
    str(o, MA_PRODUCER);
    fmt(o, ",\"rank\":%d,\"size\":%d,\"host\":", rank, size);
    str(o, host);
    fmt(o, ",\"pid\":%ld,\"run_id\":", (long)getpid());
    str(o, s->has_run_id ? s->run_id : NULL);
    raw(o, ",\"command\":");
    command_line(o);
    raw(o, ",\"start_time\":");
    num(o, ma_dbl(start_time));
    raw(o, ",\"end_time\":");
    if (final)
        num(o, ma_dbl(ma_wall_clock()));
    else
        raw(o, "null");
    raw(o, ",\"status\":");
    str(o, status);
    raw(o, ",\"exit_reason\":");
    str(o, reason);
    raw(o, ",\"tolerance\":{\"default\":");
    num(o, ma_dbl(s->tolerance));
    raw(o, ",\"by_type\":{");
    for (int i = 0; i < s->n_by_type; i++) {
        int later = 0; /* a type named twice: the last value wins, as in a Python dict */
        for (int j = i + 1; j < s->n_by_type; j++)
            later |= !strcmp(s->by_type_names[i], s->by_type_names[j]);
        if (later)
            continue;
        if (o->len && o->buf[o->len - 1] != '{')
            raw(o, ",");
        key(o, s->by_type_names[i]);
        num(o, ma_dbl(s->by_type_values[i]));
    }
    raw(o, "}},\"counters\":{\"providers\":[");
    for (int i = 0; i < c->n_providers; i++) {
        if (i)
            raw(o, ",");
        provider(o, &c->providers[i]);
    }
    raw(o, "],\"measures\":{");
    for (int k = 0; k < MA_N_KINDS; k++) {
        if (k)
            raw(o, ",");
        key(o, ma_kind_names[k]);
        const ma_provider *p = c->measured_by[k];
        if (p) {
            raw(o, "{"), key(o, "provider"), str(o, p->name);
            raw(o, ","), key(o, "source"), str(o, p->sources[k]), raw(o, "}");
        } else {
            raw(o, "null");
        }
    }
    const char *unmeasured = ma_rt_mpi_unmeasured(rt);
    raw(o, unmeasured ? "}},\"mpi\":{\"profiling\":false,\"library\":" : "}},\"mpi\":{\"profiling\":true,\"library\":");
    str(o, ma_pmpi_library_path());
    raw(o, ",\"reason\":");
    str(o, unmeasured);
    raw(o, "}}");
}

static void anomaly_entry(out *o, const char *kind, const char *path, const char *message, uint64_t count,
                          const char *file, int line)
{
    raw(o, "{"), key(o, "kind"), str(o, kind);
    raw(o, ","), key(o, "path"), str(o, path);
    raw(o, ","), key(o, "message"), str(o, message);
    fmt(o, ",\"count\":%llu,\"file\":", (unsigned long long)count);
    str(o, file);
    raw(o, ",\"line\":");
    if (file)
        fmt(o, "%d", line);
    else
        raw(o, "null");
    raw(o, "}");
}

/* The `peers` entries of the sites below `n` that name their partner (ma_mpi_peer); returns how many so far. */
static int peer_entries(out *o, const ma_node *n, int rank, int written)
{
    for (const ma_node *c = n->first_child; c; c = c->next_sibling) {
        if (c->peer_text) {
            raw(o, written ? ",{" : "{"), key(o, "path"), str(o, c->path);
            raw(o, ","), key(o, "type"), str(o, c->type);
            raw(o, ",\"thread\":0,"), key(o, "expr"), str(o, c->peer_text);
            fmt(o, ",\"pass\":%llu,\"fail\":%llu,\"unmeasured\":%llu,\"first_fail\":",
                (unsigned long long)c->peer_pass, (unsigned long long)c->peer_fail,
                (unsigned long long)c->peer_unmeasured);
            if (c->has_peer_fail)
                fmt(o, "{\"call\":%llu,\"rank\":%d,\"expected\":%lld,\"actual\":%lld}}",
                    (unsigned long long)c->peer_fail_call, rank, c->peer_fail_expected, c->peer_fail_actual);
            else
                raw(o, "null}");
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
static void vector_loops(out *o, const ma_vecrec *r);

/* `,"peers":[...]` and `,"vector_loops":[...]`, the optional top-level keys (OPTIONAL_DOCUMENT_KEYS of
 * ma_core/trace_format.py), each only when used; the rank file and the merged trace's part both carry them. */
static void optional_keys(out *o, const ma_runtime_state *rt)
{
    if (any_peer(ma_rt_root(rt))) { /* only when some assertion named its partner */
        int rank, size;
        double start;
        ma_rt_identity(rt, &rank, &size, &start);
        raw(o, ",\"peers\":[");
        peer_entries(o, ma_rt_root(rt), rank, 0);
        raw(o, "]");
    }
    vector_loops(o, ma_rt_vector_loops(rt));
}

char *ma_trace_document(const ma_runtime_state *rt, const char *status, const char *reason, int final)
{
    out o = {0};
    fmt(&o, "{\"format\":\"ma-trace\",\"version\":%d,\"header\":", MA_TRACE_VERSION);
    header(&o, rt, status, reason, final);
    raw(&o, ",\"variables\":[");
    for (const ma_varrec *v = ma_rt_variables(rt); v; v = v->next) {
        raw(&o, "{"), key(&o, "name"), str(&o, v->name);
        raw(&o, ","), key(&o, "kind"), str(&o, v->derived ? "derived" : "input");
        raw(&o, ","), key(&o, "expr"), str(&o, v->expr);
        raw(&o, ","), key(&o, "scope"), str(&o, v->scope);
        fmt(&o, ",\"defs\":%llu,\"value\":", (unsigned long long)v->stats.n);
        num(&o, v->last);
        raw(&o, ",\"min\":");
        num(&o, v->stats.min);
        raw(&o, ",\"max\":");
        num(&o, v->stats.max);
        raw(&o, v->next ? "}," : "}");
    }
    raw(&o, "],\"threads\":[{\"thread\":0,\"name\":\"main\",\"root\":");
    node(&o, ma_rt_root(rt));
    raw(&o, "}],\"anomalies\":[");
    int first = 1;
    for (const ma_anomaly *a = ma_rt_anomalies(rt); a; a = a->next) {
        if (!first)
            raw(&o, ",");
        anomaly_entry(&o, a->kind, a->path, a->message, a->count, a->file, a->line);
        first = 0;
    }
    uint64_t foreign = ma_rt_foreign_calls(rt);
    if (foreign) {
        if (!first)
            raw(&o, ",");
        anomaly_entry(&o, "thread", "", "annotation calls from threads other than the one that started the C "
                      "runtime were ignored (libma records one thread)", foreign, NULL, 0);
        first = 0;
    }
    if (o.unrepresentable) {
        if (!first)
            raw(&o, ",");
        anomaly_entry(&o, "unrepresentable", "", "values that are not finite (a sum of large predictions, say) "
                      "are written as {\"$num\": \"inf\"} and the like", o.unrepresentable, NULL, 0);
    }
    raw(&o, "],\"mpi_profile\":");
    size_t need = ma_pmpi_profile_json(NULL, 0);
    reserve(&o, need + 2);
    if (!o.failed) {
        ma_pmpi_profile_json(o.buf + o.len, o.cap - o.len);
        o.len += need;
    }
    optional_keys(&o, rt);
    raw(&o, "}\n");
    if (o.failed) {
        free(o.buf);
        errno = ENOMEM;
        return NULL;
    }
    return o.buf;
}

/* `{"k0":v0,"k1":v1,...}`: strings, numbers, or sums (doubles) under the same keys. */
static void str_object(out *o, const char *const *keys, char *const *values, int n)
{
    for (int i = 0; i < n; i++) {
        raw(o, i ? "," : "{");
        key(o, keys[i]);
        str(o, values[i]);
    }
    raw(o, "}");
}

static void num_object(out *o, const char *const *keys, const ma_num *values, int n)
{
    for (int i = 0; i < n; i++) {
        raw(o, i ? "," : "{");
        key(o, keys[i]);
        num(o, values[i]);
    }
    raw(o, "}");
}

static void sum_object(out *o, const char *const *keys, const double *values, int n)
{
    for (int i = 0; i < n; i++) {
        raw(o, i ? "," : "{");
        key(o, keys[i]);
        num(o, ma_dbl(values[i]));
    }
    raw(o, "}");
}

/* `,"gathers":{...}` of a record (ma_vec_loop_gathers; VEC_LOOP_GATHER_KEYS), null when not stated. */
static void vector_loop_gathers(out *o, const ma_vecrec *r)
{
    static const char *const gather_keys[2] = {"gathers", "gathered_bytes"};
    if (!r->gather_expr[0]) {
        raw(o, ",\"gathers\":null");
        return;
    }
    raw(o, ",\"gathers\":{\"expr\":");
    str_object(o, gather_keys, r->gather_expr, 2);
    raw(o, ",\"predicted_first\":");
    num_object(o, gather_keys, r->gather_first, 2);
    raw(o, ",\"predicted_sum\":");
    sum_object(o, gather_keys, r->gather_sum, 2);
    raw(o, "}");
}

/* `,"vector_loops":[...]` of the ma_vec_loop records (ma_runtime/vector.py writes the same); nothing when none. */
static void vector_loops(out *o, const ma_vecrec *r)
{
    static const char *const predicted[3] = {"vloadstore", "vflops", "avl"};
    static const char *const measured[MA_VEC_N_MEASURED] = {"vec_flops", "scalar_flops", "vec_fp_insns", "vec_lanes",
                                                            "vec_loads", "vec_stores", "scalar_loads", "scalar_stores"};
    if (!r)
        return;
    raw(o, ",\"vector_loops\":[");
    for (int first = 1; r; r = r->next, first = 0) {
        raw(o, first ? "{" : ",{");
        key(o, "id");
        str(o, r->id);
        raw(o, ",");
        key(o, "path");
        str(o, r->path);
        raw(o, ",");
        key(o, "file");
        if (r->file)
            str(o, r->file);
        else
            raw(o, "null");
        if (r->file)
            fmt(o, ",\"line\":%d", r->line);
        else
            raw(o, ",\"line\":null");
        fmt(o, ",\"depth\":%d,\"mv\":%d,\"calls\":%llu,\"expr\":", r->depth, r->mv, (unsigned long long)r->calls);
        str_object(o, predicted, r->expr, 3);
        raw(o, ",\"predicted_first\":");
        num_object(o, predicted, r->first, 3);
        raw(o, ",\"predicted_sum\":");
        sum_object(o, predicted, r->sum, 3);
        raw(o, ",\"measured\":");
        if (r->measured_calls) {
            for (int i = 0; i < MA_VEC_N_MEASURED; i++) {
                raw(o, i ? "," : "{");
                key(o, measured[i]);
                fmt(o, "%llu", r->measured[i]);
            }
            raw(o, "}");
        } else {
            raw(o, "null");
        }
        fmt(o, ",\"measured_calls\":%llu", (unsigned long long)r->measured_calls);
        vector_loop_gathers(o, r);
        raw(o, "}");
    }
    raw(o, "]");
}

static int make_dirs(const char *dir)
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
    if (make_dirs(dir))
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

/* ==== the merged trace of a job (docs/trace-format.md, "Merged trace"; ma_runtime/merge.py) ==============
 * Each rank turns its final trace into a part (binary: numbers, then texts and doubles, each with its length),
 * the parts travel up a binomial tree of PMPI messages to rank 0 (rank r receives from r+1, r+2, r+4, ... and
 * sends everything it holds to r - lowbit(r)), rank 0 writes job.ma.npz (an uncompressed zip of .npy members
 * and trace.json), and an acknowledgement comes back down. Every wait polls with a deadline (MA_MERGE_TIMEOUT).
 * Parts arrive at rank 0 in rank order: each subtree is a contiguous run of ranks. */
#include <mpi.h>
#include <time.h>

#define TAG_DATA 0x4D41
#define TAG_ACK 0x4D42
#define N_VALUE_FIELDS 34
enum { P_NUMBERS, P_STRUCTURE, P_HEADER, P_STATUS, P_HOST, P_ANOMALIES, P_FIRSTS, P_VALUES, P_VARIABLES, P_MPI,
       P_HIST, P_PEERS, P_OPTIONAL, P_FIELDS };
static const char *const value_fields[N_VALUE_FIELDS] = {
    "calls", "pass", "fail", "unmeasured", "mismatch", "wall_ns", "cpu_ns", "pred_n", "pred_min", "pred_max",
    "pred_sum", "meas_n", "meas_min", "meas_max", "meas_sum", "cpred_n", "cpred_min", "cpred_max", "cpred_sum",
    "cmeas_n", "cmeas_min", "cmeas_max", "cmeas_sum", "cache_calls", "cache_levels", "cache_accesses",
    "cache_hits1", "cache_hits2", "cache_hits3", "cache_hits4", "ccalls_n", "ccalls", "subscripts_n",
    "subscripts"};

static void bytes(out *o, const void *data, size_t n)
{
    reserve(o, n);
    if (o->failed)
        return;
    memcpy(o->buf + o->len, data, n);
    o->len += n;
}

static void dbl(out *o, double d) { bytes(o, &d, sizeof d); }
static double num_d(ma_num n) { return ma_num_as_double(n); }

static void stats_d(out *o, const ma_stats *s)
{
    if (!s->n) {
        dbl(o, 0), dbl(o, NAN), dbl(o, NAN), dbl(o, 0);
        return;
    }
    dbl(o, (double)s->n), dbl(o, num_d(s->min)), dbl(o, num_d(s->max)), dbl(o, num_d(s->sum));
}

/* Preorder walk: structure rows into `st`, numbers into `vals`, first fails/mismatches into `firsts`. */
static void part_nodes(const ma_node *parent_node, long parent_row, long *row, int rank, out *st, out *vals,
                       out *firsts)
{
    for (const ma_node *n = parent_node->first_child; n; n = n->next_sibling) {
        long mine = (*row)++;
        if (mine)
            raw(st, ",");
        fmt(st, "[%ld,", parent_row), str(st, n->type), raw(st, ","), str(st, n->id), raw(st, ",");
        str(st, n->path), raw(st, ","), str(st, n->expr_text), raw(st, ","), str(st, n->count_text);
        raw(st, ","), str(st, n->file);
        if (n->file)
            fmt(st, ",%d]", n->line);
        else
            raw(st, ",null]");
        double head[7] = {(double)n->calls, (double)n->pass, (double)n->fail, (double)n->unmeasured,
                          (double)n->mismatch, (double)n->wall_ns, (double)n->cpu_ns};
        bytes(vals, head, sizeof head);
        stats_d(vals, &n->predicted), stats_d(vals, &n->measured);
        stats_d(vals, &n->count_predicted), stats_d(vals, &n->count_measured);
        /* the signature columns: the cache simulation's sums; calls into compiled code and subscripts are
         * Python's only */
        dbl(vals, (double)n->cache_calls), dbl(vals, (double)n->cache_levels), dbl(vals, (double)n->cache_accesses);
        for (int k = 0; k < MA_CACHE_MAX_LEVELS; k++)
            dbl(vals, k < n->cache_levels ? (double)n->cache_hits[k] : 0.0);
        dbl(vals, 0), dbl(vals, 0), dbl(vals, 0), dbl(vals, 0);
        if (n->has_first_fail) {
            fmt(firsts, "%s[\"first_fail\",%d,%ld,{\"call\":%llu,\"predicted\":", firsts->len ? "," : "", rank,
                mine, (unsigned long long)n->first_fail_call);
            num(firsts, n->first_fail_predicted), raw(firsts, ",\"measured\":"), num(firsts, n->first_fail_measured);
            if (n->first_fail_has_count) {
                raw(firsts, ",\"count_predicted\":"), num(firsts, n->first_fail_count_predicted);
                raw(firsts, ",\"count_measured\":"), num(firsts, n->first_fail_count_measured);
            }
            raw(firsts, "}]");
        }
        if (n->has_first_mismatch) {
            fmt(firsts, "%s[\"first_mismatch\",%d,%ld,{\"given\":", firsts->len ? "," : "", rank, mine);
            num(firsts, n->first_mismatch_given), raw(firsts, ",\"evaluated\":");
            num(firsts, n->first_mismatch_evaluated), raw(firsts, "}]");
        }
        part_nodes(n, mine, row, rank, st, vals, firsts);
    }
}

static void field(out *o, const out *f)
{
    uint64_t n = f->len;
    bytes(o, &n, sizeof n);
    if (n)
        bytes(o, f->buf, f->len);
}

/* The histogram and peer rows of this rank's MPI profile, [routine, lo, hi, count] and [routine, peer, calls,
 * bytes], read from the profile's JSON (ma_pmpi_profile_json, the rank file's form, which this library writes). */
static void profile_rows(out *hist, out *peers)
{
    size_t need = ma_pmpi_profile_json(NULL, 0);
    char *text = malloc(need + 1);
    if (!text)
        return;
    ma_pmpi_profile_json(text, need + 1);
    for (int r = 0; r < ma_pmpi_nroutines(); r++) {
        char name[96];
        snprintf(name, sizeof name, "\"%s\":{\"calls\":", ma_pmpi_routine_name(r));
        char *entry = strstr(text, name), *h = entry ? strstr(entry, "\"hist\":[") : NULL;
        char *p = h ? strstr(h, "\"peers\":{") : NULL;
        if (!entry || !h || !p)
            continue;
        for (char *c = h + 7; *c == '[' || *c == ','; ) {
            unsigned long long lo, hi, n;
            int used = 0;
            if (sscanf(c, ",[%llu,%llu,%llu]%n", &lo, &hi, &n, &used) != 3
                && sscanf(c, "[[%llu,%llu,%llu]%n", &lo, &hi, &n, &used) != 3)
                break;
            dbl(hist, r), dbl(hist, (double)lo), dbl(hist, (double)hi), dbl(hist, (double)n);
            c += used;
        }
        for (char *c = p + 8; *c == '{' || *c == ','; ) {
            unsigned long long peer, calls, nbytes;
            int used = 0;
            if (sscanf(c + 1, "\"%llu\":[%llu,%llu]%n", &peer, &calls, &nbytes, &used) != 3)
                break;
            dbl(peers, r), dbl(peers, (double)peer), dbl(peers, (double)calls), dbl(peers, (double)nbytes);
            c += 1 + used;
        }
    }
    free(text);
}

/* This rank's part: u64 total length, then P_FIELDS fields of (u64 length, bytes). */
static int make_part(const ma_runtime_state *rt, const char *status, const char *reason, out *part)
{
    int rank, size;
    double start_time;
    ma_rt_identity(rt, &rank, &size, &start_time);
    out f[P_FIELDS] = {{0}};
    double numbers[4] = {(double)rank, (double)getpid(), start_time, ma_wall_clock()};
    int failed = 0;
    bytes(&f[P_NUMBERS], numbers, sizeof numbers);
    raw(&f[P_STRUCTURE], "{\"threads\":[{\"thread\":0,\"name\":\"main\",\"nodes\":[");
    long row = 0;
    part_nodes(ma_rt_root(rt), -1, &row, rank, &f[P_STRUCTURE], &f[P_VALUES], &f[P_FIRSTS]);
    raw(&f[P_STRUCTURE], "]}],\"variables\":[");
    for (const ma_varrec *v = ma_rt_variables(rt); v; v = v->next) {
        raw(&f[P_STRUCTURE], "["), str(&f[P_STRUCTURE], v->name), raw(&f[P_STRUCTURE], ",");
        str(&f[P_STRUCTURE], v->scope), raw(&f[P_STRUCTURE], v->derived ? ",\"derived\"," : ",\"input\",");
        str(&f[P_STRUCTURE], v->expr), raw(&f[P_STRUCTURE], v->next ? "]," : "]");
        dbl(&f[P_VARIABLES], num_d(v->last)), dbl(&f[P_VARIABLES], v->stats.n ? num_d(v->stats.min) : NAN);
        dbl(&f[P_VARIABLES], v->stats.n ? num_d(v->stats.max) : NAN), dbl(&f[P_VARIABLES], (double)v->stats.n);
    }
    raw(&f[P_STRUCTURE], "]}");
    /* The shared header: the rank file's header with the per-rank fields (rank, pid, host, times, status)
     * set to fixed values, so that it is one text on every rank; the reader puts each rank's own back. */
    out h = {0};
    header(&h, rt, "complete", NULL, 0);
    if (!h.failed) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        const char *cut[][2] = {{",\"rank\":", ",\"size\":"}, {",\"host\":", ",\"pid\":"},
                                {",\"pid\":", ",\"run_id\":"}, {",\"start_time\":", ",\"end_time\":"}};
        /* Copy the header, skipping each cut's value. */
        const char *p = h.buf;
        for (size_t c = 0; c < sizeof cut / sizeof cut[0]; c++) {
            const char *a = strstr(p, cut[c][0]), *b = a ? strstr(a, cut[c][1]) : NULL;
            if (!a || !b)
                break;
            bytes(&f[P_HEADER], p, (size_t)(a - p));
            p = b;
        }
        raw(&f[P_HEADER], p);
        raw(&f[P_HOST], host);
    }
    free(h.buf);
    raw(&f[P_STATUS], "["), str(&f[P_STATUS], status), raw(&f[P_STATUS], ","), str(&f[P_STATUS], reason);
    raw(&f[P_STATUS], "]");
    for (const ma_anomaly *a = ma_rt_anomalies(rt); a; a = a->next) {
        if (f[P_ANOMALIES].len)
            raw(&f[P_ANOMALIES], ",");
        anomaly_entry(&f[P_ANOMALIES], a->kind, a->path, a->message, a->count, a->file, a->line);
        f[P_ANOMALIES].len--; /* reopen the object to add the rank */
        fmt(&f[P_ANOMALIES], ",\"ranks\":[%d]}", rank);
    }
    for (int r = 0; r < ma_pmpi_nroutines(); r++) {
        uint64_t calls = 0, nbytes = 0, time_ns = 0;
        ma_pmpi_read_routine(r, &calls, &nbytes, &time_ns);
        dbl(&f[P_MPI], (double)calls), dbl(&f[P_MPI], (double)nbytes), dbl(&f[P_MPI], (double)time_ns);
    }
    profile_rows(&f[P_HIST], &f[P_PEERS]);
    out optional = {0}; /* `,"peers":[...],...` -> `[rank,{"peers":[...],...}]`, the entry of trace.json's optional */
    optional_keys(&optional, rt);
    if (optional.len) {
        fmt(&f[P_OPTIONAL], "[%d,{", rank);
        bytes(&f[P_OPTIONAL], optional.buf + 1, optional.len - 1);
        raw(&f[P_OPTIONAL], "}]");
    }
    failed |= optional.failed;
    free(optional.buf);
    uint64_t total = 0;
    for (int i = 0; i < P_FIELDS; i++)
        total += sizeof(uint64_t) + f[i].len, failed |= f[i].failed;
    bytes(part, &total, sizeof total);
    for (int i = 0; i < P_FIELDS; i++) {
        field(part, &f[i]);
        free(f[i].buf);
    }
    return failed || part->failed ? -1 : 0;
}

/* ---- waiting with a deadline ---- */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void pause_for(double *pause)
{
    struct timespec t = {0, (long)(*pause * 1e9)};
    nanosleep(&t, NULL);
    *pause = *pause * 2 > 0.01 ? 0.01 : *pause * 2;
}

static int send_by(const void *data, size_t n, int dest, int tag, double deadline)
{
    MPI_Request request;
    if (n > (size_t)INT32_MAX || PMPI_Issend(data, (int)n, MPI_BYTE, dest, tag, MPI_COMM_WORLD, &request))
        return -1;
    int done = 0;
    double pause = 1e-4;
    while (!done) {
        PMPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done)
            break;
        if (now_s() > deadline) {
            PMPI_Cancel(&request);
            PMPI_Request_free(&request);
            return -1;
        }
        pause_for(&pause);
    }
    return 0;
}

static int receive_by(out *into, int source, int tag, double deadline)
{
    int ready = 0, count = 0;
    MPI_Status status;
    double pause = 1e-4;
    while (PMPI_Iprobe(source, tag, MPI_COMM_WORLD, &ready, &status) == MPI_SUCCESS && !ready) {
        if (now_s() > deadline)
            return -1;
        pause_for(&pause);
    }
    if (!ready)
        return -1;
    PMPI_Get_count(&status, MPI_BYTE, &count);
    reserve(into, (size_t)count);
    if (into->failed)
        return -1;
    PMPI_Recv(into->buf + into->len, count, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    into->len += (size_t)count;
    return 0;
}

/* ---- the .npz file: a stored (uncompressed) zip of .npy members ---- */
static uint32_t crc_table[256];

static uint32_t crc32_of(uint32_t crc, const unsigned char *p, size_t n)
{
    if (!crc_table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            crc_table[i] = c;
        }
    crc = ~crc;
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

typedef struct zip {
    FILE *f;
    out directory;
    int entries, failed;
    uint64_t offset;
} zip;

static void le(out *o, uint64_t v, int n)
{
    unsigned char b[8];
    for (int i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    bytes(o, b, (size_t)n);
}

/* One member from pieces (the .npy header, then the data). Files under 4 GiB (no zip64). */
static void zip_member(zip *z, const char *name, const void *a, size_t na, const void *b, size_t nb)
{
    uint32_t crc = crc32_of(crc32_of(0, a, na), b, nb);
    uint64_t size = na + nb, name_len = strlen(name);
    if (z->offset + size > 0xFFFFFFF0u) {
        z->failed = 1;
        return;
    }
    out local = {0};
    le(&local, 0x04034b50, 4), le(&local, 20, 2), le(&local, 0, 2), le(&local, 0, 2), le(&local, 0, 2);
    le(&local, 0x21, 2), le(&local, crc, 4), le(&local, size, 4), le(&local, size, 4), le(&local, name_len, 2);
    le(&local, 0, 2), bytes(&local, name, name_len);
    out *d = &z->directory;
    le(d, 0x02014b50, 4), le(d, 20, 2), le(d, 20, 2), le(d, 0, 2), le(d, 0, 2), le(d, 0, 2), le(d, 0x21, 2);
    le(d, crc, 4), le(d, size, 4), le(d, size, 4), le(d, name_len, 2), le(d, 0, 2), le(d, 0, 2), le(d, 0, 2);
    le(d, 0, 2), le(d, 0, 4), le(d, z->offset, 4), bytes(d, name, name_len);
    if (local.failed || fwrite(local.buf, 1, local.len, z->f) != local.len || (na && fwrite(a, 1, na, z->f) != na)
        || (nb && fwrite(b, 1, nb, z->f) != nb))
        z->failed = 1;
    z->offset += local.len + size;
    z->entries++;
    free(local.buf);
}

static void npy_member(zip *z, const char *name, const char *descr, const size_t *shape, int ndim, const void *data,
                       size_t n)
{
    out h = {0};
    fmt(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        fmt(&h, i ? ", %zu" : "%zu", shape[i]);
    raw(&h, ndim == 1 ? ",), }" : "), }");
    size_t pad = 64 - (10 + h.len + 1) % 64;
    for (size_t i = 0; i < pad % 64; i++)
        raw(&h, " ");
    raw(&h, "\n");
    out head = {0};
    bytes(&head, "\x93NUMPY\x01\x00", 8), le(&head, h.len, 2), bytes(&head, h.buf, h.len);
    zip_member(z, name, head.buf, head.len, data, n);
    free(h.buf), free(head.buf);
}

typedef struct part_view {
    const unsigned char *field[P_FIELDS];
    uint64_t len[P_FIELDS];
    int rank, group, header, host, status;
} part_view;

static int parse_parts(const out *bundle, part_view **parts, size_t *n_parts)
{
    size_t cap = 64, n = 0, at = 0;
    part_view *v = malloc(cap * sizeof *v);
    while (v && at + 8 <= bundle->len) {
        uint64_t total;
        memcpy(&total, bundle->buf + at, 8);
        size_t end = at + 8 + total, p = at + 8;
        if (end > bundle->len)
            break;
        if (n == cap) {
            part_view *grown = realloc(v, (cap *= 2) * sizeof *v);
            if (!grown)
                break;
            v = grown;
        }
        for (int i = 0; i < P_FIELDS && p + 8 <= end; i++) {
            memcpy(&v[n].len[i], bundle->buf + p, 8);
            v[n].field[i] = (const unsigned char *)bundle->buf + p + 8;
            p += 8 + v[n].len[i];
        }
        double numbers[4];
        memcpy(numbers, v[n].field[P_NUMBERS], sizeof numbers);
        v[n].rank = (int)numbers[0];
        n++;
        at = end;
    }
    *parts = v, *n_parts = n;
    return v && at == bundle->len ? 0 : -1;
}

/* Index of the text (field `f` of part i) among the distinct ones met so far (first occurrence: a new index). */
static int distinct(part_view *parts, size_t i, int f, int *firsts, int *n_distinct)
{
    for (int k = 0; k < *n_distinct; k++) {
        part_view *o = &parts[firsts[k]];
        if (o->len[f] == parts[i].len[f] && !memcmp(o->field[f], parts[i].field[f], parts[i].len[f]))
            return k;
    }
    firsts[*n_distinct] = (int)i;
    return (*n_distinct)++;
}

static void text_list(out *o, part_view *parts, int f, const int *firsts, int n, int quote)
{
    raw(o, "[");
    for (int k = 0; k < n; k++) {
        out t = {0};
        bytes(&t, parts[firsts[k]].field[f], parts[firsts[k]].len[f]);
        raw(&t, "");
        if (k)
            raw(o, ",");
        if (quote)
            str(o, t.buf ? t.buf : "");
        else
            raw(o, t.buf ? t.buf : "");
        free(t.buf);
    }
    raw(o, "]");
}

static int write_merged(const ma_runtime_state *rt, const out *bundle, int size, double reduction_s)
{
    part_view *parts = NULL;
    size_t n = 0;
    if (parse_parts(bundle, &parts, &n)) {
        free(parts);
        return -1;
    }
    int *firsts[4];
    int n_distinct[4] = {0};
    for (int k = 0; k < 4; k++)
        firsts[k] = calloc(n + 1, sizeof(int));
    int fields_of[4] = {P_STRUCTURE, P_HEADER, P_HOST, P_STATUS};
    for (size_t i = 0; i < n; i++) {
        parts[i].group = distinct(parts, i, fields_of[0], firsts[0], &n_distinct[0]);
        parts[i].header = distinct(parts, i, fields_of[1], firsts[1], &n_distinct[1]);
        parts[i].host = distinct(parts, i, fields_of[2], firsts[2], &n_distinct[2]);
        parts[i].status = distinct(parts, i, fields_of[3], firsts[3], &n_distinct[3]);
    }
    const ma_settings *s = ma_rt_settings(rt);
    char final_path[4300], temporary[4400];
    snprintf(final_path, sizeof final_path, "%s/job.ma.npz", s->trace_dir);
    snprintf(temporary, sizeof temporary, "%s/.job.ma.npz.%ld.tmp", s->trace_dir, (long)getpid());
    make_dirs(s->trace_dir);
    zip z = {fopen(temporary, "wb"), {0}, 0, 0, 0};
    if (!z.f) {
        for (int k = 0; k < 4; k++)
            free(firsts[k]);
        free(parts);
        return -1;
    }
    int n_routines = ma_pmpi_nroutines();
    for (int g = 0; g < n_distinct[0]; g++) {
        out values = {0}, variables = {0}, ranks = {0};
        size_t members = 0;
        for (size_t i = 0; i < n; i++) {
            if (parts[i].group != g)
                continue;
            bytes(&values, parts[i].field[P_VALUES], parts[i].len[P_VALUES]);
            bytes(&variables, parts[i].field[P_VARIABLES], parts[i].len[P_VARIABLES]);
            int64_t r = parts[i].rank;
            bytes(&ranks, &r, sizeof r);
            members++;
        }
        part_view *first = &parts[firsts[0][g]];
        size_t shape_v[3] = {members, first->len[P_VALUES] / (8 * N_VALUE_FIELDS), N_VALUE_FIELDS};
        size_t shape_w[3] = {members, first->len[P_VARIABLES] / 32, 4}, shape_r[1] = {members};
        char name[64];
        snprintf(name, sizeof name, "group-%d-values.npy", g);
        npy_member(&z, name, "<f8", shape_v, 3, values.buf, values.len);
        snprintf(name, sizeof name, "group-%d-variables.npy", g);
        npy_member(&z, name, "<f8", shape_w, 3, variables.buf, variables.len);
        snprintf(name, sizeof name, "group-%d-ranks.npy", g);
        npy_member(&z, name, "<i8", shape_r, 1, ranks.buf, ranks.len);
        free(values.buf), free(variables.buf), free(ranks.buf);
    }
    out cols[7] = {{0}};
    for (size_t i = 0; i < n; i++) {
        double numbers[4];
        memcpy(numbers, parts[i].field[P_NUMBERS], sizeof numbers);
        int64_t ints[6] = {parts[i].rank, parts[i].group, parts[i].header, parts[i].host, parts[i].status,
                           (int64_t)numbers[1]};
        for (int c = 0; c < 6; c++)
            bytes(&cols[c], &ints[c], 8);
        bytes(&cols[6], &numbers[2], 16);
    }
    const char *names[6] = {"rank.npy", "rank_group.npy", "rank_header.npy", "rank_host.npy", "rank_status.npy",
                            "rank_pid.npy"};
    size_t shape_n[2] = {n, 2};
    for (int c = 0; c < 6; c++)
        npy_member(&z, names[c], "<i8", shape_n, 1, cols[c].buf, cols[c].len);
    npy_member(&z, "rank_time.npy", "<f8", shape_n, 2, cols[6].buf, cols[6].len);
    out mpi = {0}, has = {0};
    for (size_t i = 0; i < n; i++) {
        bytes(&mpi, parts[i].field[P_MPI], parts[i].len[P_MPI]);
        int64_t one = 1;
        bytes(&has, &one, 8);
    }
    out rows[2] = {{0}}; /* mpi_hist, mpi_peers: each part's rows of 4 with its position in front */
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
            for (uint64_t at4 = 0; at4 + 32 <= parts[i].len[P_HIST + k]; at4 += 32) {
                dbl(&rows[k], (double)i);
                bytes(&rows[k], parts[i].field[P_HIST + k] + at4, 32);
            }
    size_t shape_m[3] = {n, (size_t)n_routines, 3}, shape_h[2] = {rows[0].len / 40, 5}, shape_p[2] = {rows[1].len / 40, 5};
    npy_member(&z, "rank_mpi.npy", "<i8", shape_n, 1, has.buf, has.len);
    npy_member(&z, "mpi_totals.npy", "<f8", shape_m, 3, mpi.buf, mpi.len);
    npy_member(&z, "mpi_hist.npy", "<f8", shape_h, 2, rows[0].buf, rows[0].len);
    npy_member(&z, "mpi_peers.npy", "<f8", shape_p, 2, rows[1].buf, rows[1].len);
    free(rows[0].buf), free(rows[1].buf);
    out index = {0};
    fmt(&index, "{\"format\":\"ma-trace-merged\",\"version\":3,\"size\":%d,\"run_id\":", size);
    str(&index, s->has_run_id ? s->run_id : NULL);
    raw(&index, ",\"fields\":[");
    for (int k = 0; k < N_VALUE_FIELDS; k++)
        raw(&index, k ? "," : ""), str(&index, value_fields[k]);
    raw(&index, "],\"variable_fields\":[\"value\",\"min\",\"max\",\"defs\"],\"absent\":[");
    size_t at = 0;
    for (int r = 0, first = 1; r < size; r++) {
        while (at < n && parts[at].rank < r)
            at++;
        if (at < n && parts[at].rank == r)
            continue;
        fmt(&index, first ? "%d" : ",%d", r);
        first = 0;
    }
    raw(&index, "],\"groups\":");
    text_list(&index, parts, P_STRUCTURE, firsts[0], n_distinct[0], 0);
    raw(&index, ",\"headers\":");
    text_list(&index, parts, P_HEADER, firsts[1], n_distinct[1], 0);
    raw(&index, ",\"hosts\":");
    text_list(&index, parts, P_HOST, firsts[2], n_distinct[2], 1);
    raw(&index, ",\"statuses\":");
    text_list(&index, parts, P_STATUS, firsts[3], n_distinct[3], 0);
    raw(&index, ",\"mpi_routines\":[");
    for (int r = 0; r < n_routines; r++)
        raw(&index, r ? "," : ""), str(&index, ma_pmpi_routine_name(r));
    raw(&index, "],\"anomalies\":[");
    for (size_t i = 0, first = 1; i < n; i++)
        if (parts[i].len[P_ANOMALIES]) {
            raw(&index, first ? "" : ",");
            bytes(&index, parts[i].field[P_ANOMALIES], parts[i].len[P_ANOMALIES]);
            first = 0;
        }
    raw(&index, "],\"firsts\":[");
    for (size_t i = 0, first = 1; i < n; i++)
        if (parts[i].len[P_FIRSTS]) {
            raw(&index, first ? "" : ",");
            bytes(&index, parts[i].field[P_FIRSTS], parts[i].len[P_FIRSTS]);
            first = 0;
        }
    raw(&index, "],\"optional\":[");
    for (size_t i = 0, first = 1; i < n; i++)
        if (parts[i].len[P_OPTIONAL]) {
            raw(&index, first ? "" : ",");
            bytes(&index, parts[i].field[P_OPTIONAL], parts[i].len[P_OPTIONAL]);
            first = 0;
        }
    fmt(&index, "],\"writer\":{\"producer\":\"%s\",\"reduction_seconds\":%.6f}}", MA_PRODUCER, reduction_s);
    zip_member(&z, "trace.json", index.buf, index.len, NULL, 0);
    out *d = &z.directory;
    uint64_t directory_offset = z.offset, directory_len = d->len;
    le(d, 0x06054b50, 4), le(d, 0, 2), le(d, 0, 2), le(d, (uint64_t)z.entries, 2), le(d, (uint64_t)z.entries, 2);
    le(d, directory_len, 4), le(d, directory_offset, 4), le(d, 0, 2);
    int failed = z.failed || index.failed || d->failed || fwrite(d->buf, 1, d->len, z.f) != d->len;
    failed |= fclose(z.f) != 0;
    failed = failed || rename(temporary, final_path) != 0;
    if (failed)
        unlink(temporary);
    for (int c = 0; c < 7; c++)
        free(cols[c].buf);
    for (int k = 0; k < 4; k++)
        free(firsts[k]);
    free(mpi.buf), free(has.buf), free(index.buf), free(d->buf), free(parts);
    return failed ? -1 : 0;
}

int ma_trace_merge(const ma_runtime_state *rt, const char *status, const char *reason, int *written)
{
    int rank, size;
    double start_time;
    ma_rt_identity(rt, &rank, &size, &start_time);
    const char *timeout_text = getenv("MA_MERGE_TIMEOUT");
    double timeout = timeout_text && *timeout_text ? atof(timeout_text) : 120.0;
    double start = now_s(), deadline = start + (timeout > 0 ? timeout : 120.0);
    out bundle = {0};
    *written = 0;
    if (make_part(rt, status, reason, &bundle))
        bundle.len = 0; /* no part: this rank is absent from the file and writes its own */
    int parent = -1, children[64], n_children = 0;
    for (int step = 1; step < size; step <<= 1) {
        if (rank & step) {
            if (send_by(bundle.buf, bundle.len, rank - step, TAG_DATA, deadline) == 0)
                parent = rank - step;
            break;
        }
        if (rank + step < size && receive_by(&bundle, rank + step, TAG_DATA, deadline) == 0)
            children[n_children++] = rank + step;
    }
    int ok = 0;
    if (rank == 0) {
        double reduced = now_s();
        ok = write_merged(rt, &bundle, size, reduced - start) == 0;
        if (getenv("MA_MERGE_TIMING") && *getenv("MA_MERGE_TIMING"))
            fprintf(stderr, "ma: merged job (C runtime): reduction %.4f s, write %.4f s\n", reduced - start,
                    now_s() - reduced);
    } else if (parent >= 0) {
        out ack = {0};
        ok = receive_by(&ack, parent, TAG_ACK, deadline) == 0 && ack.len == 1 && ack.buf[0] == 1;
        free(ack.buf);
    }
    char flag = (char)ok;
    for (int c = 0; c < n_children; c++)
        send_by(&flag, 1, children[c], TAG_ACK, deadline);
    free(bundle.buf);
    *written = ok;
    return 0;
}
