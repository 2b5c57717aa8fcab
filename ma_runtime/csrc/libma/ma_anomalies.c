/*
 * ma_anomalies.c -- anomalies of the running program's annotations (ma_anomalies.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_anomalies.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ma_state.h"
#include "ma_util.h"

void ma_anomaly_add(const char *kind, const ma_node *node, const char *file, int line, const char *format, ...)
{
    const char *path = node ? node->path : "";
    ma_anomaly *a = ma_rt->anomalies;
    for (; a; a = a->next)
        if (!strcmp(a->kind, kind) && !strcmp(a->path, path))
            break;
    if (!a) {
        char message[1024];
        va_list args;
        va_start(args, format);
        vsnprintf(message, sizeof message, format, args);
        va_end(args);
        a = ma_xcalloc(1, sizeof *a);
        a->kind = ma_xstrdup(kind);
        a->path = ma_xstrdup(path);
        a->message = ma_xstrdup(message);
        a->file = ma_dup_or_null(node && node->file ? node->file : file);
        a->line = node && node->file ? node->line : line;
        MA_APPEND(ma_rt->anomalies, ma_rt->anomalies_tail, a, next);
    }
    a->count++;
}
