/*
 * ma_vector.c -- ma_vec_loop records (ma_vector.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_vector.h"

#include <math.h>
#include <string.h>

#include "ma.h"
#include "ma_anomalies.h"
#include "ma_scope.h"
#include "ma_state.h"
#include "ma_util.h"

#ifdef MA_HAVE_VGCOUNT
#include "ma_vgcount.h"
#endif

static int vec_read(unsigned long long out[MA_VEC_N_MEASURED])
{
#ifdef MA_HAVE_VGCOUNT
    ma_vg_vec_counts c;
    if (!ma_vg_running() || !ma_vg_vec_read(&c))
        return 0;
    unsigned long long values[MA_VEC_N_MEASURED] = {c.vec_flops, c.scalar_flops, c.vec_fp_insns, c.vec_lanes,
                                                    c.vec_loads, c.vec_stores, c.scalar_loads, c.scalar_stores};
    memcpy(out, values, sizeof values);
    return 1;
#else
    (void)out;
    return 0;
#endif
}

/* The record of `id` below the current site, created at its first call. */
static ma_vecrec *record_of(const char *id, const char *const exprs[3], int mv, const char *file, int line)
{
    ma_vector_loops *v = &ma_rt->vector;
    const char *path = ma_rt->current && ma_rt->current->path ? ma_rt->current->path : "";
    ma_vecrec *r = v->first;
    while (r && (strcmp(r->id, id) || strcmp(r->path, path)))
        r = r->next;
    if (r)
        return r;
    r = ma_xcalloc(1, sizeof *r);
    r->id = ma_xstrdup(id);
    r->path = ma_xstrdup(path);
    for (int i = 0; i < 3; i++)
        r->expr[i] = ma_xstrdup(exprs[i]);
    r->file = ma_dup_or_null(file);
    r->line = line;
    r->depth = (int)ma_rt->depth + 1;
    r->mv = mv;
    MA_APPEND(v->first, v->last, r, next);
    return r;
}

void ma_vector_start(const char *id, const char *vloadstore, long long vloadstore_value, const char *vflops,
                     long long vflops_value, const char *avl, double avl_value, int mv, const char *file, int line)
{
    ma_vector_loops *v = &ma_rt->vector;
    const char *const exprs[3] = {vloadstore, vflops, avl};
    if (!id || !vloadstore || !vflops || !avl || mv < 0 || mv > 3 || v->depth == MA_VEC_MAX_OPEN) {
        ma_anomaly_add("invalid", ma_rt->current, file, line, "ma_vec_loop_start('%s', ...): needs an id, three "
                       "expressions and an MV score 0..3, nested at most %d deep (ignored)", id ? id : "(null)",
                       MA_VEC_MAX_OPEN);
        return;
    }
    ma_num values[3];
    long long given[2] = {vloadstore_value, vflops_value};
    for (int i = 0; i < 3; i++) {
        if (i < 2 && given[i] != MA_NO_VALUE)
            values[i] = ma_int(given[i]);
        else if (i == 2 && !isnan(avl_value))
            values[i] = ma_dbl(avl_value);
        else if (ma_scope_evaluate(exprs[i], ma_rt->current, file, line, &values[i]))
            return;
    }
    ma_vecrec *r = record_of(id, exprs, mv, file, line);
    if (!r->calls)
        memcpy(r->first, values, sizeof values);
    r->calls++;
    for (int i = 0; i < 3; i++)
        r->sum[i] += ma_num_as_double(values[i]);
    v->open[v->depth].rec = r;
    v->open[v->depth].measuring = vec_read(v->open[v->depth].before);
    v->depth++;
}

void ma_vector_stop(const char *id, const char *file, int line)
{
    ma_vector_loops *v = &ma_rt->vector;
    if (!v->depth || !id || strcmp(v->open[v->depth - 1].rec->id, id)) {
        ma_anomaly_add("unbalanced", ma_rt->current, file, line, "ma_vec_loop_stop('%s') does not close the "
                       "innermost open ma_vec_loop (ignored)", id ? id : "(null)");
        return;
    }
    v->depth--;
    unsigned long long after[MA_VEC_N_MEASURED];
    if (v->open[v->depth].measuring && vec_read(after)) {
        ma_vecrec *r = v->open[v->depth].rec;
        for (int i = 0; i < MA_VEC_N_MEASURED; i++)
            r->measured[i] += after[i] - v->open[v->depth].before[i];
        r->measured_calls++;
    }
}

void ma_vector_gathers(const char *id, const char *gathers, long long gathers_value, const char *bytes,
                       long long bytes_value, const char *file, int line)
{
    ma_vector_loops *v = &ma_rt->vector;
    if (!v->depth || !id || strcmp(v->open[v->depth - 1].rec->id, id) || !gathers || !bytes) {
        ma_anomaly_add("invalid", ma_rt->current, file, line, "ma_vec_loop_gathers('%s', ...): needs two "
                       "expressions, inside the innermost open ma_vec_loop of that id (ignored)",
                       id ? id : "(null)");
        return;
    }
    const char *exprs[2] = {gathers, bytes};
    long long given[2] = {gathers_value, bytes_value};
    ma_num values[2];
    for (int i = 0; i < 2; i++) {
        if (given[i] != MA_NO_VALUE)
            values[i] = ma_int(given[i]);
        else if (ma_scope_evaluate(exprs[i], ma_rt->current, file, line, &values[i]))
            return;
    }
    ma_vecrec *r = v->open[v->depth - 1].rec;
    if (!r->gather_expr[0]) {
        for (int i = 0; i < 2; i++)
            r->gather_expr[i] = ma_xstrdup(exprs[i]);
        memcpy(r->gather_first, values, sizeof values);
    }
    r->gather_calls++;
    for (int i = 0; i < 2; i++)
        r->gather_sum[i] += ma_num_as_double(values[i]);
}
