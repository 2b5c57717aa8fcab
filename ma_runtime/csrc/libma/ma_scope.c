/*
 * ma_scope.c -- variables in scope and expression evaluation (ma_scope.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#define _GNU_SOURCE
#include "ma_scope.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ma_anomalies.h"
#include "ma_state.h"
#include "ma_util.h"

ma_var *ma_scope_intern(ma_var **table, const char *name, size_t length)
{
    unsigned bucket = ma_hash_text(name, length) % MA_VAR_BUCKETS;
    for (ma_var *v = table[bucket]; v; v = v->next)
        if (strlen(v->name) == length && !strncmp(v->name, name, length))
            return v;
    ma_var *v = ma_xcalloc(1, sizeof *v);
    v->name = ma_xcalloc(1, length + 1);
    memcpy(v->name, name, length);
    v->next = table[bucket];
    table[bucket] = v;
    return v;
}

static ma_var *lookup_in(void *table, const char *name, size_t length)
{
    return ma_scope_intern((ma_var **)table, name, length);
}

/* Compiled expression for `text`, parsed once per distinct text; NULL with *error set when it is bad. */
static const ma_expr *compiled(const char *text, const char **error)
{
    unsigned bucket = ma_hash_text(text, strlen(text)) % MA_EXPR_BUCKETS;
    ma_compiled *c = ma_rt->exprs[bucket];
    for (; c; c = c->next)
        if (!strcmp(c->text, text))
            break;
    if (!c) {
        char message[1024];
        c = ma_xcalloc(1, sizeof *c);
        c->text = ma_xstrdup(text);
        c->expr = ma_expr_parse(text, lookup_in, ma_rt->vars, message, sizeof message);
        if (!c->expr)
            c->error = ma_xstrdup(message);
        c->next = ma_rt->exprs[bucket];
        ma_rt->exprs[bucket] = c;
    }
    *error = c->error;
    return c->expr;
}

/* The iteration (from 0) of the innermost open loop, when it counts its iterations (ma_loop_next); else -1. */
static long long current_iteration(void)
{
    for (size_t i = ma_rt->depth; i > 0; i--)
        if (!strcmp(ma_rt->stack[i - 1].type, "loop"))
            return (long long)ma_rt->stack[i - 1].iterations - 1;
    return -1;
}

int ma_scope_evaluate(const char *text, const ma_node *node, const char *file, int line, ma_num *out)
{
    const char *error;
    const ma_expr *e = compiled(text, &error);
    char message[1024];
    if (!e) {
        ma_anomaly_add("evaluation", node, file, line, "%s", error);
        return -1;
    }
    long long iteration = -1;
    if (!ma_rt->iter_declared) {
        iteration = current_iteration();
        ma_rt->iter_var->defined = iteration >= 0;
        ma_rt->iter_var->value = ma_int(iteration);
    }
    if (ma_expr_eval(e, out, message, sizeof message)) {
        if (!ma_rt->iter_declared && iteration < 0 && ma_expr_names(text, "iter"))
            ma_anomaly_add("evaluation", node, file, line, "%s; iter is the iteration (from 0) of the innermost "
                           "open loop that counts its iterations (ma_loop_next); none is open here", message);
        else
            ma_anomaly_add("evaluation", node, file, line, "%s", message);
        return -1;
    }
    return 0;
}

int ma_scope_predict(ma_node *node, const char *file, int line)
{
    long long iteration = node->uses_iter && !ma_rt->iter_declared ? current_iteration() : 0;
    if (node->cache_version == ma_rt->env_version && node->cache_ok && node->cache_iter == iteration)
        return 0;
    node->cache_iter = iteration;
    node->cache_ok = 0;
    if (ma_scope_evaluate(node->expr_text, node, file, line, &node->cache_value))
        return -1;
    node->cache_count = ma_int(1);
    if (node->count_text && ma_scope_evaluate(node->count_text, node, file, line, &node->cache_count))
        return -1;
    node->cache_version = ma_rt->env_version;
    node->cache_ok = 1;
    return 0;
}

const ma_node *ma_scope_innermost(void)
{
    for (size_t i = ma_rt->depth; i > 0; i--)
        if (ma_rt->stack[i - 1].scope)
            return ma_rt->stack[i - 1].node;
    return NULL;
}

void ma_scope_define(const char *name, ma_num value)
{
    ma_var *v = ma_scope_intern(ma_rt->vars, name, strlen(name));
    if (v == ma_rt->iter_var)
        ma_rt->iter_declared = 1; /* the program's own `iter` wins from now on */
    if (ma_scope_innermost()) {
        if (ma_rt->n_undo == ma_rt->undo_cap) {
            ma_rt->undo_cap = ma_rt->undo_cap ? 2 * ma_rt->undo_cap : 64;
            ma_rt->undo = ma_xrealloc(ma_rt->undo, ma_rt->undo_cap * sizeof *ma_rt->undo);
        }
        ma_rt->undo[ma_rt->n_undo++] = (ma_undo){v, v->defined, v->value};
    }
    v->defined = 1;
    v->value = value;
    ma_rt->env_version++;
}

void ma_scope_undo_to(size_t base)
{
    if (ma_rt->n_undo == base)
        return;
    while (ma_rt->n_undo > base) {
        ma_undo *u = &ma_rt->undo[--ma_rt->n_undo];
        u->var->defined = u->had;
        u->var->value = u->old;
    }
    ma_rt->env_version++;
}

/* One "name=value" of ma_evaluate's bindings into `table`; 0, or -1 with the message in out. */
static int bind(ma_var **table, char *item, char *out, size_t cap)
{
    char *eq = strchr(item, '=');
    if (!eq) {
        snprintf(out, cap, "binding '%s' is not name=value", item);
        return -1;
    }
    *eq = '\0';
    char *name = item, *text = eq + 1, *end;
    while (isspace((unsigned char)*name))
        name++;
    for (char *t = name + strlen(name); t > name && isspace((unsigned char)t[-1]); *--t = '\0')
        ;
    while (isspace((unsigned char)*text))
        text++;
    ma_var *v = ma_scope_intern(table, name, strlen(name));
    errno = 0;
    long long i = strtoll(text, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (!*end && end != text && errno != ERANGE) {
        v->value = ma_int(i);
    } else {
        double d = strtod(text, &end);
        while (isspace((unsigned char)*end))
            end++;
        if (end == text || *end) {
            snprintf(out, cap, "binding '%s': '%s' is not a number", name, text);
            return -1;
        }
        v->value = ma_dbl(d);
    }
    v->defined = 1;
    return 0;
}

int ma_scope_evaluate_bindings(const char *expr, const char *bindings, char *out, size_t cap)
{
    ma_var *table[MA_VAR_BUCKETS] = {0};
    int status = -1, bound = 0;
    if (bindings) {
        char *copy = ma_xstrdup(bindings);
        char *save = NULL, *item = strtok_r(copy, ",;", &save);
        for (; item && bound == 0; item = strtok_r(NULL, ",;", &save))
            bound = bind(table, item, out, cap);
        free(copy);
    }
    ma_expr *e = bound ? NULL : ma_expr_parse(expr, lookup_in, table, out, cap);
    if (e) {
        ma_num result;
        if (ma_expr_eval(e, &result, out, cap) == 0) {
            ma_num_format(result, out, cap);
            status = 0;
        }
        ma_expr_free(e);
    }
    for (int b = 0; b < MA_VAR_BUCKETS; b++)
        for (ma_var *v = table[b], *next; v; v = next) {
            next = v->next;
            free(v->name);
            free(v);
        }
    return status;
}
