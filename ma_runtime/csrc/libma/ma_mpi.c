/*
 * ma_mpi.c -- MPI assertions (ma_mpi.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_mpi.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "ma.h"
#include "ma_anomalies.h"
#include "ma_fence.h"
#include "ma_peers.h"
#include "ma_pmpi.h"
#include "ma_scope.h"
#include "ma_sites.h"
#include "ma_state.h"
#include "ma_util.h"

static void watch_hook(int group);

static void update_watch(void)
{
    ma_pmpi_set_watch(ma_rt->watch, ma_rt->watch ? watch_hook : NULL);
}

void ma_mpi_stop_watching(void)
{
    ma_rt->watch = 0;
    ma_pmpi_set_watch(0, NULL);
}

static void close_mpi(int group, uint64_t t1)
{
    ma_pending_mpi *p = &ma_rt->pending[group];
    if (!p->active)
        return;
    p->active = 0;
    ma_rt->n_pending--;
    uint64_t calls, bytes;
    ma_pmpi_read(group, &calls, &bytes);
    ma_node *n = p->node;
    n->calls++;
    ma_node_add_time(n, p->t0, p->c0, p->self0, t1);
    if (ma_rt->mpi_unmeasured) { /* the calls did not all reach libmapmpi: its counts say nothing */
        ma_stats_add(&n->count_predicted, p->pcount);
        ma_node_record(n, p->has_pred, p->pred, 0, ma_int(0));
        if (p->has_peer)
            n->peer_unmeasured++;
    } else {
        ma_node_record_mpi(n, p->has_pred, p->pred, p->pcount, calls - p->calls0, bytes - p->bytes0);
        if (p->has_peer)
            ma_peers_check(n, group, p->calls0, calls);
    }
    if (ma_rt->watch & (1u << group)) {
        ma_rt->watch &= ~(1u << group);
        update_watch();
    }
}

void ma_mpi_close_from(size_t depth, uint64_t t1)
{
    for (int g = 0; g < MA_PMPI_NGROUPS && ma_rt->n_pending; g++)
        if (ma_rt->pending[g].active && ma_rt->pending[g].depth >= depth)
            close_mpi(g, t1);
}

/* libmapmpi calls this after each call of a watched group, inside the MPI wrapper. */
static void watch_hook(int group)
{
    MA_FENCE_THIS_CALL();
    if (!ma_rt || ma_rt->finished || !pthread_equal(pthread_self(), ma_rt->main_thread))
        return;
    ma_pending_mpi *p = &ma_rt->pending[group];
    if (!p->active || p->want <= 0)
        return;
    uint64_t calls, bytes;
    ma_pmpi_read(group, &calls, &bytes);
    if (calls - p->calls0 >= (uint64_t)p->want)
        close_mpi(group, ma_fence_now());
}

void ma_mpi_assert(const char *type, const char *id, const char *expr, long long value, const char *count_expr,
                   long long count, const char *file, int line, uint64_t t0)
{
    const char *canonical = ma_node_type(type);
    int group = canonical ? ma_pmpi_group_id(canonical) : -1;
    if (group < 0 || group >= MA_PMPI_OTHER || !expr) {
        ma_anomaly_add("invalid", ma_rt->current, file, line, "ma_mpi('%s', '%s', ...): %s (ignored)",
                       type ? type : "(null)", id ? id : "(null)",
                       group < 0 || group >= MA_PMPI_OTHER ? "not an MPI assertion type"
                                                           : "the expression is missing");
        return;
    }
    close_mpi(group, t0); /* an assertion of the same type ends the previous one */
    char literal[32];
    const char *count_text = count_expr ? count_expr : ma_decimal(count, literal);
    ma_node *n = ma_sites_child(canonical, id, expr, count_text, 1, file, line);
    if (!n)
        return;
    ma_pending_mpi *p = &ma_rt->pending[group];
    memset(p, 0, sizeof *p);
    p->node = n;
    p->depth = ma_rt->depth;
    /* the node evaluates its first count expression; a literal count passed by the program wins */
    p->has_pred = ma_scope_predict(n, file, line) == 0;
    p->pred = n->cache_value;
    p->pcount = count_expr ? n->cache_count : ma_int(count);
    if (count_expr && !p->has_pred)
        p->pcount = ma_int(count);
    if (p->has_pred && value != MA_NO_VALUE)
        ma_node_note_value(n, ma_int(value), p->pred);
    double want = ma_num_as_double(p->pcount);
    p->want = want >= 1 && want == floor(want) && want < 9e18 ? (long long)want : 0;
    p->active = 1;
    ma_rt->n_pending++;
    if (n->track_cpu)
        p->c0 = ma_cpu_ns();
    p->t0 = ma_fence_now();
    p->self0 = ma_fence_spent_at(p->t0);
    ma_pmpi_read(group, &p->calls0, &p->bytes0);
    ma_rt->last_mpi_group = group + 1;
    if (p->want && !(ma_rt->watch & (1u << group))) {
        ma_rt->watch |= 1u << group;
        update_watch();
    }
}
