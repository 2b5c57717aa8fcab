/*
 * ma_sites.h -- finding the site of an annotation call in the tree (ma_sites.c; ma_runtime/sites.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_SITES_H
#define MA_SITES_H

#include "ma_tree.h"

#pragma GCC visibility push(hidden)

/* The node (type, id) below the current one, created on first use with the settings' tolerance and CPU timing;
 * NULL for an invalid id (an `invalid` anomaly). An expression (or, with check_count, a count expression) other
 * than the node's first is an `expression_changed` anomaly: the first stays. `type` is ma_node_type's spelling. */
ma_node *ma_sites_child(const char *type, const char *id, const char *expr_text, const char *count_text,
                        int check_count, const char *file, int line);

#pragma GCC visibility pop

#endif /* MA_SITES_H */
