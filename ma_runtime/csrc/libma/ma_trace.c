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
    raw(o, "{\"language\":\"c\",\"producer\":");
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
    raw(o, "}},\"mpi\":{\"profiling\":true,\"library\":");
    str(o, ma_pmpi_library_path());
    raw(o, ",\"reason\":null}}");
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

static void vector_loops(out *o, const ma_vecrec *r);

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
    vector_loops(&o, ma_rt_vector_loops(rt));
    raw(&o, "}\n");
    if (o.failed) {
        free(o.buf);
        errno = ENOMEM;
        return NULL;
    }
    return o.buf;
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
        fmt(o, ",\"depth\":%d,\"mv\":%d,\"calls\":%llu,\"expr\":{", r->depth, r->mv, (unsigned long long)r->calls);
        for (int i = 0; i < 3; i++) {
            raw(o, i ? "," : "");
            key(o, predicted[i]);
            str(o, r->expr[i]);
        }
        raw(o, "},\"predicted_first\":{");
        for (int i = 0; i < 3; i++) {
            raw(o, i ? "," : "");
            key(o, predicted[i]);
            num(o, r->first[i]);
        }
        raw(o, "},\"predicted_sum\":{");
        for (int i = 0; i < 3; i++) {
            raw(o, i ? "," : "");
            key(o, predicted[i]);
            num(o, ma_dbl(r->sum[i]));
        }
        raw(o, "},\"measured\":");
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
        fmt(o, ",\"measured_calls\":%llu}", (unsigned long long)r->measured_calls);
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
