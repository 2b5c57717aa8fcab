/*
 * ma_tree.c -- site-tree nodes and their PASS/FAIL verdicts (ma_tree.h; ma_runtime/tree.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_tree.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ma_fence.h"
#include "ma_util.h"

#define AS_STRING(name) name,
static const char *const NODE_TYPES[] = {MA_STRUCTURE_TYPES(AS_STRING) MA_MPI_TYPES(AS_STRING)};
#define N_NODE_TYPES (sizeof NODE_TYPES / sizeof *NODE_TYPES)

const char *ma_node_type(const char *type)
{
    if (!type)
        return NULL;
    for (size_t i = 0; i < N_NODE_TYPES; i++)
        if (strcmp(NODE_TYPES[i], type) == 0)
            return NODE_TYPES[i];
    return NULL;
}

void ma_stats_add(ma_stats *s, ma_num x)
{
    if (s->n == 0) {
        s->min = s->max = x;
        s->sum = x;
    } else {
        if (ma_num_cmp(x, s->min) < 0)
            s->min = x;
        else if (ma_num_cmp(x, s->max) > 0)
            s->max = x;
        s->sum = ma_num_add(s->sum, x);
    }
    s->n++;
}

/* PASS rule of docs/trace-format.md: |p - m| <= t*|m| (exact equality when t = 0). */
static int close_enough(ma_num predicted, ma_num measured, double tolerance)
{
    if (tolerance == 0)
        return ma_num_cmp(predicted, measured) == 0;
    double p = ma_num_as_double(predicted), m = ma_num_as_double(measured);
    return fabs(p - m) <= tolerance * fabs(m);
}

static int values_differ(ma_num given, ma_num evaluated)
{
    if (ma_num_cmp(given, evaluated) == 0)
        return 0;
    double g = ma_num_as_double(given), e = ma_num_as_double(evaluated);
    return fabs(g - e) > 1e-9 * fmax(fabs(e), 1.0);
}

ma_node *ma_node_new(ma_node *parent, const char *type, const char *id, const char *expr_text,
                     const char *count_text, const char *file, int line, double tolerance, int track_cpu)
{
    ma_node *n = ma_xcalloc(1, sizeof *n);
    n->parent = parent;
    n->type = type;
    n->id = ma_xstrdup(id);
    n->id_len = strlen(n->id);
    if (!parent || !parent->path[0]) {
        n->path = ma_xstrdup(id);
    } else {
        size_t length = strlen(parent->path) + strlen(id) + 2;
        n->path = ma_xcalloc(1, length);
        snprintf(n->path, length, "%s/%s", parent->path, id);
    }
    n->expr_text = ma_dup_or_null(expr_text);
    n->count_text = ma_dup_or_null(count_text);
    n->uses_iter = ma_expr_names(expr_text, "iter") || ma_expr_names(count_text, "iter");
    n->seen_expr = expr_text;
    n->seen_count = count_text;
    n->file = ma_dup_or_null(file);
    n->line = line;
    n->tolerance = tolerance;
    n->track_cpu = track_cpu;
    if (parent)
        MA_APPEND(parent->first_child, parent->last_child, n, next_sibling);
    return n;
}

static void set_first_fail(ma_node *n, ma_num predicted, ma_num measured)
{
    if (n->has_first_fail)
        return;
    n->has_first_fail = 1;
    n->first_fail_call = n->calls;
    n->first_fail_predicted = predicted;
    n->first_fail_measured = measured;
}

void ma_node_add_time(ma_node *n, uint64_t t0, uint64_t c0, uint64_t self0, uint64_t t1)
{
    uint64_t self = ma_fence_spent_at(t1) - self0;
    n->wall_ns += ma_fence_program_ns(t0, t1, self0);
    if (n->track_cpu) {
        /* the SDK's calls run on the core: their wall time is their CPU time */
        uint64_t cpu = ma_cpu_ns() - c0;
        n->cpu_ns += cpu > self ? cpu - self : 0;
    }
}

void ma_node_record(ma_node *n, int has_pred, ma_num pred, int has_meas, ma_num meas)
{
    if (has_pred)
        ma_stats_add(&n->predicted, pred);
    if (!has_meas) {
        n->unmeasured++;
        return;
    }
    ma_stats_add(&n->measured, meas);
    if (!has_pred) {
        n->unmeasured++;
        return;
    }
    if (close_enough(pred, meas, n->tolerance)) {
        n->pass++;
    } else {
        n->fail++;
        set_first_fail(n, pred, meas);
    }
}

void ma_node_record_mpi(ma_node *n, int has_pred, ma_num size, ma_num count, uint64_t calls, uint64_t bytes)
{
    if (calls == 0 && ma_num_cmp(count, ma_int(0)) == 0)
        size = ma_int(0); /* no message asserted, none made: nothing to compare the size with */
    ma_stats_add(&n->count_predicted, count);
    ma_num measured_calls = ma_int((long long)calls);
    ma_stats_add(&n->count_measured, measured_calls);
    ma_num measured_size = calls ? ma_num_div(ma_int((long long)bytes), measured_calls) : ma_int(0);
    int had_fail = n->has_first_fail;
    uint64_t passed_before = n->pass;
    ma_node_record(n, has_pred, size, 1, measured_size);
    if (!close_enough(count, measured_calls, n->tolerance) && n->pass > passed_before) {
        n->pass--;
        n->fail++;
        set_first_fail(n, size, measured_size);
    }
    if (n->has_first_fail && !had_fail) {
        n->first_fail_has_count = 1;
        n->first_fail_count_predicted = count;
        n->first_fail_count_measured = measured_calls;
    }
}

void ma_node_note_value(ma_node *n, ma_num given, ma_num evaluated)
{
    if (!values_differ(given, evaluated))
        return;
    n->mismatch++;
    if (!n->has_first_mismatch) {
        n->has_first_mismatch = 1;
        n->first_mismatch_given = given;
        n->first_mismatch_evaluated = evaluated;
    }
}
