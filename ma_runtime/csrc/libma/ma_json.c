/*
 * ma_json.c -- output buffer and JSON pieces (ma_json.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ma_trace_format.h"

void ma_out_reserve(ma_out *o, size_t more)
{
    if (o->failed || o->len + more + 1 <= o->cap)
        return;
    size_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + more + 1)
        cap *= 2;
    char *grown = realloc(o->buf, cap);
    if (!grown) {
        o->failed = 1;
        return;
    }
    o->buf = grown;
    o->cap = cap;
}

void ma_out_bytes(ma_out *o, const void *data, size_t n)
{
    ma_out_reserve(o, n);
    if (o->failed)
        return;
    memcpy(o->buf + o->len, data, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

void ma_out_raw(ma_out *o, const char *s) { ma_out_bytes(o, s, strlen(s)); }

void ma_out_fmt(ma_out *o, const char *format, ...)
{
    char small[256];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(small, sizeof small, format, args);
    va_end(args);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        ma_out_bytes(o, small, (size_t)n);
        return;
    }
    ma_out_reserve(o, (size_t)n);
    if (o->failed)
        return;
    va_start(args, format);
    vsnprintf(o->buf + o->len, (size_t)n + 1, format, args);
    va_end(args);
    o->len += (size_t)n;
}

/* The length (2 to 4) of the well-formed UTF-8 sequence that starts at `p` (a byte of 0x80 or more), or 0 when
 * none does: no overlong form, no surrogate, nothing past U+10FFFF. Reads no further than the first byte that
 * is not a continuation byte, so never past the string's NUL. */
static int utf8_sequence(const unsigned char *p)
{
    unsigned char lead = p[0];
    int length = lead >= 0xC2 && lead <= 0xDF   ? 2
                 : lead >= 0xE0 && lead <= 0xEF ? 3
                 : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                : 0;
    for (int i = 1; i < length; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    if ((lead == 0xE0 && p[1] < 0xA0) || (lead == 0xED && p[1] >= 0xA0) || (lead == 0xF0 && p[1] < 0x90) ||
        (lead == 0xF4 && p[1] >= 0x90))
        return 0;
    return length;
}

/* A JSON string of `s`. A trace is UTF-8 whatever the program passed: a byte that starts no well-formed UTF-8
 * sequence (a Latin-1 id, a truncated name) is written as the four characters \xNN, visible in the trace and in
 * every message about the site, instead of making the whole file unreadable. */
void ma_json_str(ma_out *o, const char *s)
{
    if (!s) {
        ma_out_raw(o, "null");
        return;
    }
    ma_out_raw(o, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char piece[8] = {(char)*p, 0};
        if (*p >= 0x80) {
            int length = utf8_sequence(p);
            if (length) {
                ma_out_bytes(o, (const char *)p, (size_t)length);
                p += length - 1;
                continue;
            }
            snprintf(piece, sizeof piece, "\\\\x%02X", *p);
        } else if (*p == '"')
            strcpy(piece, "\\\"");
        else if (*p == '\\')
            strcpy(piece, "\\\\");
        else if (*p == '\n')
            strcpy(piece, "\\n");
        else if (*p == '\t')
            strcpy(piece, "\\t");
        else if (*p == '\r')
            strcpy(piece, "\\r");
        else if (*p < 0x20)
            snprintf(piece, sizeof piece, "\\u%04x", *p);
        ma_out_raw(o, piece);
    }
    ma_out_raw(o, "\"");
}

void ma_json_key(ma_out *o, const char *name)
{
    ma_json_str(o, name);
    ma_out_raw(o, ":");
}

void ma_json_num(ma_out *o, ma_num n)
{
    if (!n.is_int && !isfinite(n.d)) {
        o->unrepresentable++;
        ma_out_raw(o, isnan(n.d) ? "{\"$num\":\"nan\"}" : n.d > 0 ? "{\"$num\":\"inf\"}" : "{\"$num\":\"-inf\"}");
        return;
    }
    char text[64];
    ma_num_format(n, text, sizeof text);
    ma_out_raw(o, text);
}

#define AS_STRING(name) name,
static const char *const STATS_KEYS[] = {MA_STATS_KEYS(AS_STRING)};

void ma_json_stats(ma_out *o, const ma_stats *s)
{
    if (!s->n) {
        ma_out_raw(o, "null");
        return;
    }
    ma_num values[] = {ma_int((long long)s->n), s->min, s->max, s->sum};
    ma_json_object(o, STATS_KEYS, 4, NULL, values);
}

void ma_json_object(ma_out *o, const char *const *keys, int n, char *const *texts, const ma_num *numbers)
{
    for (int i = 0; i < n; i++) {
        ma_out_raw(o, i ? "," : "{");
        ma_json_key(o, keys[i]);
        if (texts)
            ma_json_str(o, texts[i]);
        else
            ma_json_num(o, numbers[i]);
    }
    ma_out_raw(o, "}");
}
