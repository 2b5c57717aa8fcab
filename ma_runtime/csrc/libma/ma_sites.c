/*
 * ma_sites.c -- the site of an annotation call (ma_sites.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_sites.h"

#include <stdio.h>
#include <string.h>

#include "ma_anomalies.h"
#include "ma_config.h"
#include "ma_state.h"

static int same_text(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* Python's repr of a string, as used in the Python runtime's messages. */
static const char *quoted(const char *s, char *buf, size_t cap)
{
    snprintf(buf, cap, "'%s'", s ? s : "");
    return buf;
}

ma_node *ma_sites_child(const char *type, const char *id, const char *expr_text, const char *count_text,
                        int check_count, const char *file, int line)
{
    ma_node *parent = ma_rt->current;
    if (!id || !*id || strchr(id, '/')) {
        ma_anomaly_add("invalid", parent, file, line, "a site id must be a non-empty string without '/', not '%s' "
                       "(%s ignored)", id ? id : "(null)", type);
        return NULL;
    }
    ma_node *n = parent->first_child;
    for (; n; n = n->next_sibling)
        if (n->type == type && (n->id == id || !strcmp(n->id, id)))
            break;
    if (!n) {
        const ma_settings *s = &ma_rt->settings;
        return ma_node_new(parent, type, id, expr_text, count_text, file, line, ma_config_tolerance(s, type),
                           ma_config_tracks_cpu(s, type));
    }
    if (expr_text != n->seen_expr) {
        if (same_text(expr_text, n->expr_text)) {
            n->seen_expr = expr_text;
        } else {
            char was[512], now[512];
            ma_anomaly_add("expression_changed", n, file, line, "%s '%s' was first asserted as %s, now %s; the "
                           "first expression is kept", type, id, quoted(n->expr_text, was, sizeof was),
                           quoted(expr_text, now, sizeof now));
        }
    }
    if (check_count && count_text != n->seen_count) {
        if (same_text(count_text, n->count_text)) {
            n->seen_count = count_text;
        } else {
            char was[512], now[512];
            ma_anomaly_add("expression_changed", n, file, line, "%s '%s' was first asserted with count %s, now %s; "
                           "the first count expression is kept in the trace (predictions use the count passed)",
                           type, id, quoted(n->count_text, was, sizeof was), quoted(count_text, now, sizeof now));
        }
    }
    return n;
}
