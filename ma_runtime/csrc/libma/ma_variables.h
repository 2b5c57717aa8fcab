/*
 * ma_variables.h -- declared variables: bound in scope, asserted (a derived variable's expression against the
 * program's value), and listed in the trace's `variables` (ma_variables.c; ma.variable/ma.assign of
 * ma_runtime/api.py and the variable table of ma_runtime/mars.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_VARIABLES_H
#define MA_VARIABLES_H

#include <stdint.h>

#include "ma_expr.h"
#include "ma_tree.h"

#pragma GCC visibility push(hidden)

/* One entry of the trace's variable table: one per (name, scope). */
typedef struct ma_varrec {
    char *name, *expr, *scope;
    int derived;
    ma_stats stats;
    ma_num last;
    struct ma_varrec *next;
} ma_varrec;

/* ma_def_variable_int_at / _double_at (type "variable", expr NULL) and ma_def_variable_assign_int_at ("assign",
 * with its expression; `value` is the program's own when has_value). Variables bind while tracing is off too. */
void ma_variables_declare(const char *type, const char *name, const char *expr, int has_value, ma_num value,
                          const char *file, int line);

#pragma GCC visibility pop

#endif /* MA_VARIABLES_H */
