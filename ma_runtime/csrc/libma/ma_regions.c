/*
 * ma_regions.c -- annotations with a start and an end (ma_regions.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_regions.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ma.h"
#include "ma_anomalies.h"
#include "ma_fence.h"
#include "ma_mpi.h"
#include "ma_scope.h"
#include "ma_sites.h"
#include "ma_state.h"
#include "ma_util.h"

static void finish_frame(size_t index, int has_measured, ma_num measured, uint64_t t1, int unbalanced);

/* Close every frame above `index` as unbalanced: `index` is ending while they are still open. */
static void close_above(size_t index, uint64_t t1)
{
    while (ma_rt->depth > index + 1) {
        ma_frame *inner = &ma_rt->stack[ma_rt->depth - 1];
        ma_frame *outer = &ma_rt->stack[index];
        ma_anomaly_add("unbalanced", inner->node, NULL, 0, "%s '%s' was still open when %s '%s' ended", inner->type,
                       inner->node->id, outer->type, outer->node->id);
        finish_frame(ma_rt->depth - 1, 0, ma_int(0), t1, 1);
    }
}

static void finish_frame(size_t index, int has_measured, ma_num measured, uint64_t t1, int unbalanced)
{
    close_above(index, t1);
    ma_mpi_close_from(index + 1, t1);
    ma_frame f = ma_rt->stack[index];
    ma_rt->depth = index;
    ma_rt->current = f.node->parent;
    if (f.scope)
        ma_scope_undo_to(f.undo_base);
    ma_node *n = f.node;
    n->calls++;
    ma_node_add_time(n, f.t0, f.c0, f.self0, t1);
    if (!strcmp(f.type, "subroutine"))
        return; /* structure only: asserts nothing */
    if (unbalanced)
        ma_node_record(n, f.has_pred, f.pred, 0, ma_int(0));
    else
        ma_node_record(n, f.has_pred, f.pred, has_measured, measured);
}

void ma_regions_close_unbalanced(size_t index, uint64_t t1) { finish_frame(index, 0, ma_int(0), t1, 1); }

void ma_regions_start(const char *type, const char *id, const char *expr, long long value, const char *file,
                      int line)
{
    const char *canonical = ma_node_type(type);
    int is_subroutine = canonical && !strcmp(canonical, "subroutine");
    if (!canonical || !strncmp(canonical, "mpi_", 4) || !strcmp(canonical, "root") ||
        !strcmp(canonical, "variable") || !strcmp(canonical, "assign") || (!is_subroutine && !expr)) {
        ma_anomaly_add("invalid", ma_rt->current, file, line, "%s start of '%s'%s: not an annotation with a start "
                       "and an end (ignored)", type ? type : "(null)", id ? id : "(null)",
                       expr || is_subroutine ? "" : " without an expression");
        return;
    }
    if (ma_rt->depth >= MA_MAX_SITE_DEPTH || ma_rt->too_deep) {
        /* a trace must stay readable (JSON readers stop near 1000 levels) and the memory linear: refused, with
         * everything inside, until its end */
        if (!ma_rt->too_deep++)
            ma_anomaly_add("invalid", ma_rt->current, file, line, "%s '%s' would open level %d of the site tree, "
                           "which is at most %d levels deep: it and the annotations inside are not recorded",
                           canonical, id ? id : "(null)", MA_MAX_SITE_DEPTH + 1, MA_MAX_SITE_DEPTH);
        return;
    }
    ma_node *n = ma_sites_child(canonical, id, is_subroutine ? NULL : expr, NULL, 0, file, line);
    if (!n)
        return;
    /* predicted before the frame is pushed: a loop's trip count sees the iteration of the loop around it */
    int has_pred = !is_subroutine && ma_scope_predict(n, file, line) == 0;
    if (ma_rt->depth == ma_rt->stack_cap) {
        ma_rt->stack_cap = ma_rt->stack_cap ? 2 * ma_rt->stack_cap : 32;
        ma_rt->stack = ma_xrealloc(ma_rt->stack, ma_rt->stack_cap * sizeof *ma_rt->stack);
    }
    ma_frame *f = &ma_rt->stack[ma_rt->depth++];
    memset(f, 0, sizeof *f);
    f->node = n;
    f->type = canonical;
    f->scope = is_subroutine || !strcmp(canonical, "loop");
    f->undo_base = ma_rt->n_undo;
    f->kind = ma_counters_kind_of(canonical);
    if (!is_subroutine) {
        f->has_pred = has_pred;
        f->pred = n->cache_value;
        if (f->has_pred && value != MA_NO_VALUE)
            ma_node_note_value(n, ma_int(value), f->pred);
    }
    ma_rt->current = n;
    if (n->track_cpu)
        f->c0 = ma_cpu_ns();
    f->t0 = ma_fence_now();
    f->self0 = ma_fence_spent_at(f->t0);
    if (f->kind >= 0 && (f->reader = ma_rt->counters.readers[f->kind])) {
        if (ma_rt->counters.cache_reader && f->kind <= MA_KIND_LOADSTORE)
            f->has_cache0 = ma_rt->counters.cache_reader(f->cache0) > 0;
        f->m0 = f->reader(); /* last, so that the runtime's own work stays outside the counted region */
    }
}

/* Fold one call's cache counts (`after` minus the frame's start) into its node (the trace's `cache` field). */
static void add_cache_counts(const ma_frame *f, const unsigned long long *after)
{
    ma_node *n = f->node;
    int levels = (int)after[0];
    if (levels < 1 || levels > MA_CACHE_MAX_LEVELS || levels != (int)f->cache0[0])
        return;
    n->cache_calls++;
    n->cache_levels = levels;
    n->cache_accesses += after[1] - f->cache0[1];
    for (int k = 0; k < levels; k++)
        n->cache_hits[k] += after[2 + k] - f->cache0[2 + k];
}

void ma_regions_read_end(ma_end_reading *r)
{
    /* the counter first, for the same reason as at the start (only the recording thread touches the stack) */
    int recording = ma_rt && !ma_rt->finished && pthread_equal(pthread_self(), ma_rt->main_thread);
    r->top = recording && ma_rt->depth ? &ma_rt->stack[ma_rt->depth - 1] : NULL;
    r->m1 = r->top && r->top->reader ? r->top->reader() : 0;
    r->has_cache1 = r->top && r->top->has_cache0 && ma_rt->counters.cache_reader(r->cache1) > 0;
    r->t1 = ma_fence_now();
}

void ma_regions_end(ma_end_reading *r, const char *type, const char *id, size_t id_len, long long measured,
                    const char *file, int line)
{
    if (ma_rt->too_deep) { /* the end of a start refused past the depth limit */
        ma_rt->too_deep--;
        return;
    }
    ma_frame *top = r->top;
    const char *canonical = ma_node_type(type);
    size_t index = ma_rt->depth; /* the innermost open annotation of this type and id */
    while (index > 0) {
        const ma_node *open = ma_rt->stack[index - 1].node;
        if (ma_rt->stack[index - 1].type == canonical && id && open->id_len == id_len && !memcmp(open->id, id, id_len))
            break;
        index--;
    }
    if (index == 0) {
        char where[600];
        if (top)
            snprintf(where, sizeof where, "the innermost open annotation is %s '%s'", top->type, top->node->id);
        else
            snprintf(where, sizeof where, "none is open");
        ma_anomaly_add("mismatched_end", top ? top->node : NULL, file, line, "end of %s '%.*s', which is not open "
                       "(%s); ignored", type ? type : "(null)", id ? (int)id_len : 6, id ? id : "(null)", where);
        return;
    }
    ma_frame *f = &ma_rt->stack[index - 1];
    long long m1 = r->m1;
    if (f != top) {
        ma_anomaly_add("mismatched_end", top->node, file, line, "end of %s '%s' while %s '%s' is the innermost open "
                       "annotation; the annotations opened after it are closed as unbalanced", f->type,
                       f->node->id, top->type, top->node->id);
        if (f->reader)
            m1 = f->reader();
        r->has_cache1 = f->has_cache0 && ma_rt->counters.cache_reader(r->cache1) > 0;
    }
    if (r->has_cache1)
        add_cache_counts(f, r->cache1);
    int has_measured = 0;
    ma_num value = ma_int(0);
    if (f->kind >= 0) {
        has_measured = f->reader != NULL;
        value = ma_int(m1 - f->m0);
    } else if (!strcmp(f->type, "loop") && measured != MA_NO_VALUE) {
        has_measured = 1;
        value = ma_int(measured);
    } else if (!strcmp(f->type, "loop") && f->iterations > 0) {
        has_measured = 1; /* no count given: the iterations ma_loop_next counted */
        value = ma_int((long long)f->iterations);
    }
    finish_frame(index - 1, has_measured, value, r->t1, 0);
}

void ma_regions_next(const char *id, const char *file, int line)
{
    if (ma_rt->too_deep) /* inside a start refused past the depth limit: not recorded */
        return;
    for (size_t i = ma_rt->depth; i > 0; i--) {
        ma_frame *f = &ma_rt->stack[i - 1];
        if (strcmp(f->type, "loop"))
            continue;
        if (!strcmp(f->node->id, id ? id : "")) {
            f->iterations++;
            return;
        }
        ma_anomaly_add("invalid", f->node, file, line, "ma_loop_next('%s'): the innermost open loop is '%s' "
                       "(ignored)", id ? id : "(null)", f->node->id);
        return;
    }
    ma_anomaly_add("invalid", ma_rt->current, file, line, "ma_loop_next('%s'): no loop is open (ignored)",
                   id ? id : "(null)");
}
