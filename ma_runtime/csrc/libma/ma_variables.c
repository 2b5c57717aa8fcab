/*
 * ma_variables.c -- declared variables (ma_variables.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_variables.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#include "ma_anomalies.h"
#include "ma_scope.h"
#include "ma_sites.h"
#include "ma_state.h"
#include "ma_util.h"

static int is_identifier(const char *s)
{
    if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return 0;
    return 1;
}

static int same_value(ma_num a, ma_num b)
{
    double x = ma_num_as_double(a), y = ma_num_as_double(b);
    return a.is_int && b.is_int ? a.i == b.i : x == y || (isnan(x) && isnan(y));
}

/* A variable declared again in the same scope with another value: both values, both places (the site keeps
 * the first declaration's file and line). */
static void redeclared(const ma_node *n, const ma_varrec *r, ma_num value, const char *file, int line)
{
    char now[64], before[64];
    ma_num_format(value, now, sizeof now);
    ma_num_format(r->last, before, sizeof before);
    ma_anomaly_add("redeclared", n, file, line, "variable '%s' declared again with value %s at %s:%d; it was %s "
                   "(first declared at %s:%d)", r->name, now, file ? file : "?", line, before,
                   n->file ? n->file : "?", n->line);
}

/* The table entry of `name` in `scope`, created on first use. */
static ma_varrec *record_of(const char *name, const char *expr, const char *scope)
{
    ma_varrec *r = ma_rt->variables;
    for (; r; r = r->next)
        if (!strcmp(r->name, name) && !strcmp(r->scope, scope))
            return r;
    r = ma_xcalloc(1, sizeof *r);
    r->name = ma_xstrdup(name);
    r->expr = ma_dup_or_null(expr);
    r->scope = ma_xstrdup(scope);
    r->derived = expr != NULL;
    MA_APPEND(ma_rt->variables, ma_rt->variables_tail, r, next);
    return r;
}

void ma_variables_declare(const char *type, const char *name, const char *expr, int has_value, ma_num value,
                          const char *file, int line)
{
    if (!expr && !strcmp(type, "assign")) {
        ma_anomaly_add("invalid", ma_rt->current, file, line, "ma_def_variable_assign_int('%s', NULL, ...): the "
                       "expression is missing (ignored)", name ? name : "(null)");
        return;
    }
    if (!is_identifier(name)) {
        ma_anomaly_add("invalid", ma_rt->current, file, line, "variable name must be an identifier, not '%s' "
                       "(ignored)", name ? name : "(null)");
        return;
    }
    const char *canonical = ma_node_type(type);
    ma_node *n = ma_rt->enabled ? ma_sites_child(canonical, name, expr, NULL, 0, file, line) : NULL;
    ma_num evaluated = value;
    int ok = 1;
    if (expr) {
        ok = ma_scope_evaluate(expr, n ? n : ma_rt->current, file, line, &evaluated) == 0;
        if (!ok && has_value)
            evaluated = value; /* keep the program's value bound, so later expressions still evaluate */
    }
    const ma_node *scope = ma_scope_innermost();
    if (n) {
        n->calls++;
        if (!expr) {
            ma_stats_add(&n->predicted, evaluated); /* a declared input asserts nothing */
        } else {
            ma_node_record(n, ok, evaluated, has_value, value);
            if (ok && has_value)
                ma_node_note_value(n, value, evaluated);
        }
        if (ok || has_value) {
            ma_varrec *r = record_of(name, expr, scope ? scope->path : "");
            if (r->stats.n && !same_value(r->last, evaluated))
                redeclared(n, r, evaluated, file, line);
            ma_stats_add(&r->stats, evaluated);
            r->last = evaluated;
        }
    }
    if (ok || has_value)
        ma_scope_define(name, evaluated);
}
