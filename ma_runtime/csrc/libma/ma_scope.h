/*
 * ma_scope.h -- the variables in scope and the expressions evaluated on them (ma_scope.c; the variable binding of
 * ma_runtime/threadstate.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Shallow binding: every variable is interned once and holds its visible value; a declaration inside an open loop
 * or subroutine saves the value it hides, and the end of that annotation restores it (ma_scope_undo_to). A
 * declaration outside every loop and subroutine is global. Each change bumps the environment's version, which
 * tells a node whether its cached prediction still holds.
 */
#ifndef MA_SCOPE_H
#define MA_SCOPE_H

#include <stddef.h>

#include "ma_expr.h"
#include "ma_tree.h"

#pragma GCC visibility push(hidden)

#define MA_VAR_BUCKETS 256
#define MA_EXPR_BUCKETS 256

typedef struct ma_undo {
    ma_var *var;
    int had;
    ma_num old;
} ma_undo;

/* An expression text compiled once (or the message of why it does not parse). */
typedef struct ma_compiled {
    char *text;
    ma_expr *expr;
    char *error;
    struct ma_compiled *next;
} ma_compiled;

/* The variable `name[0..length)` of a hash table of MA_VAR_BUCKETS chains, created undefined on first use. */
ma_var *ma_scope_intern(ma_var **table, const char *name, size_t length);
/* Evaluate `text` on the variables in scope, `iter` bound to the iteration of the innermost loop that counts them
 * (unless the program declared its own); on failure record an `evaluation` anomaly at `node`, return -1. */
int ma_scope_evaluate(const char *text, const ma_node *node, const char *file, int line, ma_num *out);
/* The node's prediction (and MPI count) into node->cache_value/cache_count, cached until a variable changes
 * (or, in `iter`, the iteration);
 * 0, or -1 when an expression failed (an anomaly says why). */
int ma_scope_predict(ma_node *node, const char *file, int line);
/* Bind `name` (undone at the end of the innermost open loop or subroutine, if any). */
void ma_scope_define(const char *name, ma_num value);
/* Undo the declarations made since the undo list held `base` entries. */
void ma_scope_undo_to(size_t base);
/* The node of the innermost open loop or subroutine: the scope a declaration goes to (NULL: global). */
const ma_node *ma_scope_innermost(void);
/* ma_evaluate of ma.h: `expr` on the bindings "n=4, x=2.5", without the runtime. */
int ma_scope_evaluate_bindings(const char *expr, const char *bindings, char *out, size_t cap);

#pragma GCC visibility pop

#endif /* MA_SCOPE_H */
