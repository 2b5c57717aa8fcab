/*
 * ma_merge.c -- the merged trace of a job (ma_merge.h; ma_runtime/merge.py writes the same file).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Each rank turns its final trace into a part (binary: numbers, then texts and doubles, each with its length),
 * the parts travel up a binomial tree of PMPI messages to rank 0 (rank r receives from r+1, r+2, r+4, ... and
 * sends everything it holds to r - lowbit(r)), rank 0 writes job.ma.npz (an uncompressed zip of .npy members
 * and trace.json, ma_npz.c), and an acknowledgement comes back down. Every wait polls with a deadline
 * (MA_MERGE_TIMEOUT). Parts arrive at rank 0 in rank order: each subtree is a contiguous run of ranks.
 */
#define _GNU_SOURCE
#include "ma_merge.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ma_json.h"
#include "ma_npz.h"
#include "ma_pmpi.h"
#include "ma_trace.h"
#include "ma_trace_format.h"
#include "ma_util.h"

#define TAG_DATA 0x4D41
#define TAG_ACK 0x4D42
enum { P_NUMBERS, P_STRUCTURE, P_HEADER, P_STATUS, P_HOST, P_ANOMALIES, P_FIRSTS, P_VALUES, P_VARIABLES, P_MPI,
       P_HIST, P_PEERS, P_OPTIONAL, P_FIELDS };
#define AS_STRING(name) name,
static const char *const VALUE_FIELDS[MA_N_VALUE_FIELDS] = {MA_VALUE_FIELDS(AS_STRING)};
static const char *const VARIABLE_FIELDS[] = {MA_VARIABLE_FIELDS(AS_STRING)};
static const char *const ROW_KEYS[] = {MA_NODE_ROW_KEYS(AS_STRING)};
#define N_ROW_KEYS (sizeof ROW_KEYS / sizeof *ROW_KEYS)
#define N_VARIABLE_FIELDS (sizeof VARIABLE_FIELDS / sizeof *VARIABLE_FIELDS)
/* A node's value row (part_nodes): 7 counts, 4 stats of 4, the cache simulation's 3 + levels, ccalls and subscripts
 * pairs. A column added to VALUE_FIELDS (ma_core/trace_format.py) stops the build here until part_nodes writes it. */
_Static_assert(MA_N_VALUE_FIELDS == 7 + 4 * 4 + 3 + MA_CACHE_MAX_LEVELS + 2 + 2, "part_nodes writes VALUE_FIELDS");

static void dbl(ma_out *o, double d) { ma_out_bytes(o, &d, sizeof d); }
static double num_d(ma_num n) { return ma_num_as_double(n); }

static void stats_d(ma_out *o, const ma_stats *s)
{
    if (!s->n) {
        dbl(o, 0), dbl(o, NAN), dbl(o, NAN), dbl(o, 0);
        return;
    }
    dbl(o, (double)s->n), dbl(o, num_d(s->min)), dbl(o, num_d(s->max)), dbl(o, num_d(s->sum));
}

/* Preorder walk: structure rows into `st`, numbers into `vals`, first fails/mismatches into `firsts`. */
static void part_nodes(const ma_node *parent_node, long parent_row, long *row, int rank, ma_out *st, ma_out *vals,
                       ma_out *firsts, const int *row_keys)
{
    for (const ma_node *n = parent_node->first_child; n; n = n->next_sibling) {
        long mine = (*row)++;
        ma_out_fmt(st, "%s[%ld", mine ? "," : "", parent_row);
        for (size_t k = 0; k < N_ROW_KEYS; k++) {
            ma_out_raw(st, ",");
            if (!ma_trace_node_value(st, n, (enum ma_node_key)row_keys[k]))
                ma_out_raw(st, "null");
        }
        ma_out_raw(st, "]");
        double head[7] = {(double)n->calls, (double)n->pass, (double)n->fail, (double)n->unmeasured,
                          (double)n->mismatch, (double)n->wall_ns, (double)n->cpu_ns};
        ma_out_bytes(vals, head, sizeof head);
        stats_d(vals, &n->predicted), stats_d(vals, &n->measured);
        stats_d(vals, &n->count_predicted), stats_d(vals, &n->count_measured);
        /* the signature columns: the cache simulation's sums; calls into compiled code and subscripts are
         * Python's only */
        dbl(vals, (double)n->cache_calls), dbl(vals, (double)n->cache_levels), dbl(vals, (double)n->cache_accesses);
        for (int k = 0; k < MA_CACHE_MAX_LEVELS; k++)
            dbl(vals, k < n->cache_levels ? (double)n->cache_hits[k] : 0.0);
        dbl(vals, 0), dbl(vals, 0), dbl(vals, 0), dbl(vals, 0);
        static const enum ma_node_key first_keys[] = {MA_NODE_FIRST_FAIL, MA_NODE_FIRST_MISMATCH};
        for (int k = 0; k < 2; k++) {
            if (first_keys[k] == MA_NODE_FIRST_FAIL ? !n->has_first_fail : !n->has_first_mismatch)
                continue;
            ma_out_fmt(firsts, "%s[\"%s\",%d,%ld,", firsts->len ? "," : "", ma_node_key_names[first_keys[k]], rank,
                       mine);
            ma_trace_node_value(firsts, n, first_keys[k]);
            ma_out_raw(firsts, "]");
        }
        part_nodes(n, mine, row, rank, st, vals, firsts, row_keys);
    }
}

static void field(ma_out *o, const ma_out *f)
{
    uint64_t n = f->len;
    ma_out_bytes(o, &n, sizeof n);
    if (n)
        ma_out_bytes(o, f->buf, f->len);
}

/* The histogram and peer rows of this rank's MPI profile, [routine, lo, hi, count] and [routine, peer, calls,
 * bytes], from libmapmpi's tables. */
static void profile_rows(ma_out *hist, ma_out *peers)
{
    ma_pmpi_bucket buckets[MA_PMPI_HIST_BUCKETS];
    ma_pmpi_peer_total *totals = NULL;
    size_t room = 0;
    for (int r = 0; r < ma_pmpi_nroutines(); r++) {
        size_t n = ma_pmpi_read_hist(r, buckets, MA_PMPI_HIST_BUCKETS);
        for (size_t k = 0; k < n; k++)
            dbl(hist, r), dbl(hist, (double)buckets[k].lo), dbl(hist, (double)buckets[k].hi),
                dbl(hist, (double)buckets[k].calls);
        size_t m = ma_pmpi_read_peers(r, totals, room);
        if (m > room) { /* the table grows to the most peers a routine has */
            free(totals);
            totals = ma_xcalloc(m, sizeof *totals);
            room = m;
            m = ma_pmpi_read_peers(r, totals, room);
        }
        for (size_t k = 0; k < m && k < room; k++)
            dbl(peers, r), dbl(peers, (double)totals[k].peer), dbl(peers, (double)totals[k].calls),
                dbl(peers, (double)totals[k].bytes);
    }
    free(totals);
}

/* This rank's part: u64 total length, then P_FIELDS fields of (u64 length, bytes). */
static int make_part(const ma_runtime_state *rt, const char *status, const char *reason, ma_out *part)
{
    int rank = rt->rank;
    ma_out f[P_FIELDS] = {{0}};
    double numbers[4] = {(double)rank, (double)getpid(), rt->start_time, ma_wall_clock()};
    int failed = 0;
    ma_out_bytes(&f[P_NUMBERS], numbers, sizeof numbers);
    ma_out_raw(&f[P_STRUCTURE], "{\"threads\":[{\"thread\":0,\"name\":\"main\",\"nodes\":[");
    long row = 0;
    int row_keys[N_ROW_KEYS];
    for (size_t k = 0; k < N_ROW_KEYS; k++)
        row_keys[k] = ma_trace_node_key(ROW_KEYS[k]); /* every one a node key: tests/test_node_layout.py */
    part_nodes(rt->root, -1, &row, rank, &f[P_STRUCTURE], &f[P_VALUES], &f[P_FIRSTS], row_keys);
    ma_out_raw(&f[P_STRUCTURE], "]}],\"variables\":[");
    for (const ma_varrec *v = rt->variables; v; v = v->next) {
        ma_out_raw(&f[P_STRUCTURE], "["), ma_json_str(&f[P_STRUCTURE], v->name), ma_out_raw(&f[P_STRUCTURE], ",");
        ma_json_str(&f[P_STRUCTURE], v->scope);
        ma_out_raw(&f[P_STRUCTURE], v->derived ? ",\"derived\"," : ",\"input\",");
        ma_json_str(&f[P_STRUCTURE], v->expr), ma_out_raw(&f[P_STRUCTURE], v->next ? "]," : "]");
        dbl(&f[P_VARIABLES], num_d(v->last)), dbl(&f[P_VARIABLES], v->stats.n ? num_d(v->stats.min) : NAN);
        dbl(&f[P_VARIABLES], v->stats.n ? num_d(v->stats.max) : NAN), dbl(&f[P_VARIABLES], (double)v->stats.n);
    }
    ma_out_raw(&f[P_STRUCTURE], "]}");
    /* The shared header: the rank file's header with the per-rank fields (rank, pid, host, times, status)
     * set to fixed values, so that it is one text on every rank; the reader puts each rank's own back. */
    ma_out h = {0};
    ma_trace_header(&h, rt, MA_STATUS_COMPLETE, NULL, 0);
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
            ma_out_bytes(&f[P_HEADER], p, (size_t)(a - p));
            p = b;
        }
        ma_out_raw(&f[P_HEADER], p);
        ma_out_raw(&f[P_HOST], host);
    }
    free(h.buf);
    ma_out_raw(&f[P_STATUS], "["), ma_json_str(&f[P_STATUS], status);
    ma_out_raw(&f[P_STATUS], ","), ma_json_str(&f[P_STATUS], reason), ma_out_raw(&f[P_STATUS], "]");
    for (const ma_anomaly *a = rt->anomalies; a; a = a->next) {
        if (f[P_ANOMALIES].len)
            ma_out_raw(&f[P_ANOMALIES], ",");
        ma_trace_anomaly(&f[P_ANOMALIES], a->kind, a->path, a->message, a->count, a->file, a->line);
        f[P_ANOMALIES].len--; /* reopen the object to add the rank */
        ma_out_fmt(&f[P_ANOMALIES], ",\"ranks\":[%d]}", rank);
    }
    for (int r = 0; r < ma_pmpi_nroutines(); r++) {
        uint64_t calls = 0, nbytes = 0, time_ns = 0;
        ma_pmpi_read_routine(r, &calls, &nbytes, &time_ns);
        dbl(&f[P_MPI], (double)calls), dbl(&f[P_MPI], (double)nbytes), dbl(&f[P_MPI], (double)time_ns);
    }
    profile_rows(&f[P_HIST], &f[P_PEERS]);
    /* `,"peers":[...],...` -> `[rank,{"peers":[...],...}]`, the entry of trace.json's optional */
    ma_out optional = {0};
    ma_trace_optional_keys(&optional, rt);
    if (optional.len) {
        ma_out_fmt(&f[P_OPTIONAL], "[%d,{", rank);
        ma_out_bytes(&f[P_OPTIONAL], optional.buf + 1, optional.len - 1);
        ma_out_raw(&f[P_OPTIONAL], "}]");
    }
    failed |= optional.failed;
    free(optional.buf);
    uint64_t total = 0;
    for (int i = 0; i < P_FIELDS; i++)
        total += sizeof(uint64_t) + f[i].len, failed |= f[i].failed;
    ma_out_bytes(part, &total, sizeof total);
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

static int receive_by(ma_out *into, int source, int tag, double deadline)
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
    ma_out_reserve(into, (size_t)count);
    if (into->failed)
        return -1;
    PMPI_Recv(into->buf + into->len, count, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    into->len += (size_t)count;
    return 0;
}

typedef struct part_view {
    const unsigned char *field[P_FIELDS];
    uint64_t len[P_FIELDS];
    int rank, group, header, host, status;
} part_view;

static int parse_parts(const ma_out *bundle, part_view **parts, size_t *n_parts)
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

static void text_list(ma_out *o, part_view *parts, int f, const int *firsts, int n, int quote)
{
    ma_out_raw(o, "[");
    for (int k = 0; k < n; k++) {
        ma_out t = {0};
        ma_out_bytes(&t, parts[firsts[k]].field[f], parts[firsts[k]].len[f]);
        ma_out_raw(&t, "");
        if (k)
            ma_out_raw(o, ",");
        if (quote)
            ma_json_str(o, t.buf ? t.buf : "");
        else
            ma_out_raw(o, t.buf ? t.buf : "");
        free(t.buf);
    }
    ma_out_raw(o, "]");
}

/* Field `f` of every part that has one, separated by commas (the parts' pieces of a JSON array). */
static void joined(ma_out *o, const part_view *parts, size_t n, int f)
{
    for (size_t i = 0, first = 1; i < n; i++)
        if (parts[i].len[f]) {
            ma_out_raw(o, first ? "" : ",");
            ma_out_bytes(o, parts[i].field[f], parts[i].len[f]);
            first = 0;
        }
}

static int write_merged(const ma_runtime_state *rt, const ma_out *bundle, int size, double reduction_s)
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
    const ma_settings *s = &rt->settings;
    char final_path[4300], temporary[4400];
    snprintf(final_path, sizeof final_path, "%s/" MA_MERGED_FILE, s->trace_dir);
    snprintf(temporary, sizeof temporary, "%s/." MA_MERGED_FILE ".%ld.tmp", s->trace_dir, (long)getpid());
    ma_trace_make_dirs(s->trace_dir);
    ma_zip z;
    if (ma_zip_open(&z, temporary)) {
        for (int k = 0; k < 4; k++)
            free(firsts[k]);
        free(parts);
        return -1;
    }
    int n_routines = ma_pmpi_nroutines();
    for (int g = 0; g < n_distinct[0]; g++) {
        ma_out values = {0}, variables = {0}, ranks = {0};
        size_t members = 0;
        for (size_t i = 0; i < n; i++) {
            if (parts[i].group != g)
                continue;
            ma_out_bytes(&values, parts[i].field[P_VALUES], parts[i].len[P_VALUES]);
            ma_out_bytes(&variables, parts[i].field[P_VARIABLES], parts[i].len[P_VARIABLES]);
            int64_t r = parts[i].rank;
            ma_out_bytes(&ranks, &r, sizeof r);
            members++;
        }
        part_view *first = &parts[firsts[0][g]];
        size_t shape_v[3] = {members, first->len[P_VALUES] / (8 * MA_N_VALUE_FIELDS), MA_N_VALUE_FIELDS};
        size_t shape_w[3] = {members, first->len[P_VARIABLES] / (8 * N_VARIABLE_FIELDS), N_VARIABLE_FIELDS};
        size_t shape_r[1] = {members};
        char name[64];
        snprintf(name, sizeof name, "group-%d-values.npy", g);
        ma_npy_member(&z, name, "<f8", shape_v, 3, values.buf, values.len);
        snprintf(name, sizeof name, "group-%d-variables.npy", g);
        ma_npy_member(&z, name, "<f8", shape_w, 3, variables.buf, variables.len);
        snprintf(name, sizeof name, "group-%d-ranks.npy", g);
        ma_npy_member(&z, name, "<i8", shape_r, 1, ranks.buf, ranks.len);
        free(values.buf), free(variables.buf), free(ranks.buf);
    }
    ma_out cols[7] = {{0}};
    for (size_t i = 0; i < n; i++) {
        double numbers[4];
        memcpy(numbers, parts[i].field[P_NUMBERS], sizeof numbers);
        int64_t ints[6] = {parts[i].rank, parts[i].group, parts[i].header, parts[i].host, parts[i].status,
                           (int64_t)numbers[1]};
        for (int c = 0; c < 6; c++)
            ma_out_bytes(&cols[c], &ints[c], 8);
        ma_out_bytes(&cols[6], &numbers[2], 16);
    }
    const char *names[6] = {"rank.npy", "rank_group.npy", "rank_header.npy", "rank_host.npy", "rank_status.npy",
                            "rank_pid.npy"};
    size_t shape_n[2] = {n, 2};
    for (int c = 0; c < 6; c++)
        ma_npy_member(&z, names[c], "<i8", shape_n, 1, cols[c].buf, cols[c].len);
    ma_npy_member(&z, "rank_time.npy", "<f8", shape_n, 2, cols[6].buf, cols[6].len);
    ma_out mpi = {0}, has = {0};
    for (size_t i = 0; i < n; i++) {
        ma_out_bytes(&mpi, parts[i].field[P_MPI], parts[i].len[P_MPI]);
        int64_t one = 1;
        ma_out_bytes(&has, &one, 8);
    }
    ma_out rows[2] = {{0}}; /* mpi_hist, mpi_peers: each part's rows of 4 with its position in front */
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++)
            for (uint64_t at4 = 0; at4 + 32 <= parts[i].len[P_HIST + k]; at4 += 32) {
                dbl(&rows[k], (double)i);
                ma_out_bytes(&rows[k], parts[i].field[P_HIST + k] + at4, 32);
            }
    size_t shape_m[3] = {n, (size_t)n_routines, 3};
    size_t shape_h[2] = {rows[0].len / 40, 5}, shape_p[2] = {rows[1].len / 40, 5};
    ma_npy_member(&z, "rank_mpi.npy", "<i8", shape_n, 1, has.buf, has.len);
    ma_npy_member(&z, "mpi_totals.npy", "<f8", shape_m, 3, mpi.buf, mpi.len);
    ma_npy_member(&z, "mpi_hist.npy", "<f8", shape_h, 2, rows[0].buf, rows[0].len);
    ma_npy_member(&z, "mpi_peers.npy", "<f8", shape_p, 2, rows[1].buf, rows[1].len);
    free(rows[0].buf), free(rows[1].buf);
    ma_out index = {0};
    ma_out_fmt(&index, "{\"format\":\"%s\",\"version\":%d,\"size\":%d,\"run_id\":", MA_MERGED_FORMAT,
               MA_MERGED_VERSION, size);
    ma_json_str(&index, s->has_run_id ? s->run_id : NULL);
    ma_out_raw(&index, ",\"fields\":[");
    for (int k = 0; k < MA_N_VALUE_FIELDS; k++)
        ma_out_raw(&index, k ? "," : ""), ma_json_str(&index, VALUE_FIELDS[k]);
    ma_out_raw(&index, "],\"variable_fields\":[");
    for (size_t k = 0; k < N_VARIABLE_FIELDS; k++)
        ma_out_raw(&index, k ? "," : ""), ma_json_str(&index, VARIABLE_FIELDS[k]);
    ma_out_raw(&index, "],\"absent\":[");
    size_t at = 0;
    for (int r = 0, first = 1; r < size; r++) {
        while (at < n && parts[at].rank < r)
            at++;
        if (at < n && parts[at].rank == r)
            continue;
        ma_out_fmt(&index, first ? "%d" : ",%d", r);
        first = 0;
    }
    ma_out_raw(&index, "],\"groups\":");
    text_list(&index, parts, P_STRUCTURE, firsts[0], n_distinct[0], 0);
    ma_out_raw(&index, ",\"headers\":");
    text_list(&index, parts, P_HEADER, firsts[1], n_distinct[1], 0);
    ma_out_raw(&index, ",\"hosts\":");
    text_list(&index, parts, P_HOST, firsts[2], n_distinct[2], 1);
    ma_out_raw(&index, ",\"statuses\":");
    text_list(&index, parts, P_STATUS, firsts[3], n_distinct[3], 0);
    ma_out_raw(&index, ",\"mpi_routines\":[");
    for (int r = 0; r < n_routines; r++)
        ma_out_raw(&index, r ? "," : ""), ma_json_str(&index, ma_pmpi_routine_name(r));
    ma_out_raw(&index, "],\"anomalies\":[");
    joined(&index, parts, n, P_ANOMALIES);
    ma_out_raw(&index, "],\"firsts\":[");
    joined(&index, parts, n, P_FIRSTS);
    ma_out_raw(&index, "],\"optional\":[");
    joined(&index, parts, n, P_OPTIONAL);
    ma_out_fmt(&index, "],\"writer\":{\"producer\":\"%s\",\"reduction_seconds\":%.6f}}", MA_PRODUCER, reduction_s);
    ma_zip_member(&z, MA_MERGED_INDEX, index.buf, index.len, NULL, 0);
    int failed = index.failed;
    failed |= ma_zip_close(&z) != 0;
    failed = failed || rename(temporary, final_path) != 0;
    if (failed)
        unlink(temporary);
    for (int c = 0; c < 7; c++)
        free(cols[c].buf);
    for (int k = 0; k < 4; k++)
        free(firsts[k]);
    free(mpi.buf), free(has.buf), free(index.buf), free(parts);
    return failed ? -1 : 0;
}

int ma_merge_job(const ma_runtime_state *rt, const char *status, const char *reason, int *written)
{
    int rank = rt->rank, size = rt->size;
    const char *timeout_text = getenv("MA_MERGE_TIMEOUT");
    double timeout = timeout_text && *timeout_text ? atof(timeout_text) : 120.0;
    double start = now_s(), deadline = start + (timeout > 0 ? timeout : 120.0);
    ma_out bundle = {0};
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
        ma_out ack = {0};
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
