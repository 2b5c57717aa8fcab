/*
 * ma_anomalies.h -- what went wrong with the annotations themselves, folded by (kind, site path) into the trace's
 * `anomalies` (ma_anomalies.c; the Runtime.anomaly of ma_runtime/mars.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_ANOMALIES_H
#define MA_ANOMALIES_H

#include <stdint.h>

#include "ma_tree.h"

#pragma GCC visibility push(hidden)

typedef struct ma_anomaly {
    char *kind, *path, *message, *file;
    int line;
    uint64_t count;
    struct ma_anomaly *next;
} ma_anomaly;

/* Count an anomaly of `kind` at `node` (NULL: the top level). The first of a (kind, path) keeps its message and
 * place: the node's file and line when it has them, else `file` and `line`. */
void ma_anomaly_add(const char *kind, const ma_node *node, const char *file, int line, const char *format, ...)
    __attribute__((format(printf, 5, 6)));

#pragma GCC visibility pop

#endif /* MA_ANOMALIES_H */
