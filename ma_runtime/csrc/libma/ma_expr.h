/*
 * ma_expr.h -- the expression language of modeling assertions, for the C runtime (internal header).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Same grammar and arithmetic as the Python runtime (ma_core/expr/grammar.lark, ma_core/expr/compiler.py):
 * + - * / ^ (or **, right-associative; -2^2 = -4), unary minus and plus, parentheses, integer and float
 * literals, identifiers, and ceil floor log log2 log10 exp sqrt abs min max mod. Integers stay exact
 * where the result is an integer (8*n/2 is an int when it divides). Integers are 64-bit here: a result
 * that overflows becomes a double (Python's integers stay exact up to the magnitude limit below).
 *
 * The limits of ma_core/expr/limits.py, with the same messages: text of at most MA_EXPR_MAX_LENGTH bytes; at
 * most MA_EXPR_MAX_DEPTH nested constructs (each parenthesis, function call, unary sign and exponent opens
 * one; a run of + - or * / at one level counts once and is evaluated in a loop), so the parser's and the
 * evaluator's recursion stays bounded; every literal, variable value and result finite and at most DBL_MAX
 * in magnitude, otherwise an error at its column.
 */
#ifndef MA_EXPR_H
#define MA_EXPR_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

#define MA_EXPR_MAX_LENGTH 10000
#define MA_EXPR_MAX_DEPTH 100

typedef struct ma_num {
    int is_int;
    long long i; /* when is_int */
    double d;    /* otherwise */
} ma_num;

/* A variable: interned once per name, never freed, so compiled expressions point at it directly. */
typedef struct ma_var {
    char *name;
    int defined;
    ma_num value;
    struct ma_var *next; /* hash chain */
} ma_var;

typedef struct ma_expr ma_expr;

/* Resolves a name to its (possibly not yet defined) variable. */
typedef ma_var *(*ma_var_lookup)(void *context, const char *name, size_t length);

/* Parse `text`; on error return NULL and write a message like the Python ExpressionError into err. */
ma_expr *ma_expr_parse(const char *text, ma_var_lookup lookup, void *context, char *err, size_t errlen);
/* Evaluate; 0 on success, -1 with a message in err (undefined variable, division by zero, domain). */
int ma_expr_eval(const ma_expr *expr, ma_num *out, char *err, size_t errlen);
void ma_expr_free(ma_expr *expr);
/* Whether `text` (NULL: no) names the identifier `name` (`iter`: the iteration of the innermost loop). */
int ma_expr_names(const char *text, const char *name);

static inline ma_num ma_int(long long i) { ma_num n = {1, i, 0.0}; return n; }
static inline ma_num ma_dbl(double d) { ma_num n = {0, 0, d}; return n; }
static inline double ma_num_as_double(ma_num n) { return n.is_int ? (double)n.i : n.d; }
/* Numeric comparison across int and double, -1, 0 or 1. */
int ma_num_cmp(ma_num a, ma_num b);
ma_num ma_num_add(ma_num a, ma_num b);
ma_num ma_num_sub(ma_num a, ma_num b);
/* a / b exact when both are ints and b divides a; b must not be 0. */
ma_num ma_num_div(ma_num a, ma_num b);
/* JSON text of a number: integers as digits, doubles as the shortest text that reads back the same,
 * always with a '.' or an exponent (so a reader keeps it a float); Infinity/NaN as Python's json does. */
int ma_num_format(ma_num n, char *buf, size_t cap);

#pragma GCC visibility pop

#endif /* MA_EXPR_H */
