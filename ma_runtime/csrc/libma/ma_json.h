/*
 * ma_json.h -- a growing output buffer and the JSON pieces the trace writer and the merge put in it (ma_json.c).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * An allocation that fails marks the buffer failed and every later write does nothing: the writer checks
 * `failed` once at the end (a trace the runtime cannot write is a warning, never an abort).
 */
#ifndef MA_JSON_H
#define MA_JSON_H

#include <stddef.h>

#include "ma_expr.h"
#include "ma_tree.h"

#pragma GCC visibility push(hidden)

typedef struct ma_out {
    char *buf;
    size_t len, cap;
    int failed;
    unsigned long long unrepresentable; /* non-finite doubles written as {"$num": ...} */
} ma_out;

/* Room for `more` bytes and a NUL. */
void ma_out_reserve(ma_out *o, size_t more);
void ma_out_bytes(ma_out *o, const void *data, size_t n);
void ma_out_raw(ma_out *o, const char *s);
void ma_out_fmt(ma_out *o, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* A JSON string (null for NULL). */
void ma_json_str(ma_out *o, const char *s);
/* `"name":` */
void ma_json_key(ma_out *o, const char *name);
/* A number; a non-finite double (a sum of large predictions can overflow) in the form of docs/trace-format.md
 * that strict JSON can carry, counted in o->unrepresentable for an `unrepresentable` anomaly. */
void ma_json_num(ma_out *o, ma_num n);
/* `{"n":..,"min":..,"max":..,"sum":..}`, or null for no call. */
void ma_json_stats(ma_out *o, const ma_stats *s);
/* `{"k0":v0,...}` of n keys: strings when `texts`, else `numbers`. */
void ma_json_object(ma_out *o, const char *const *keys, int n, char *const *texts, const ma_num *numbers);

#pragma GCC visibility pop

#endif /* MA_JSON_H */
