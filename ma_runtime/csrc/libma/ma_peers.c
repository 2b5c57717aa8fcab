/*
 * ma_peers.c -- partner assertions (ma_peers.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#define _GNU_SOURCE
#include "ma_peers.h"

#include <string.h>

#include "ma_anomalies.h"
#include "ma_pmpi.h"
#include "ma_scope.h"
#include "ma_state.h"
#include "ma_util.h"

void ma_peers_name(const char *expr, const char *file, int line)
{
    ma_pending_mpi *p = ma_rt->last_mpi_group ? &ma_rt->pending[ma_rt->last_mpi_group - 1] : NULL;
    if (!expr || !p || !p->active) {
        ma_anomaly_add("invalid", ma_rt->current, file, line, "ma_mpi_peer('%s'): %s (ignored)",
                       expr ? expr : "(null)",
                       expr ? "no open MPI assertion to name the partner of" : "the expression is missing");
        return;
    }
    ma_node *n = p->node;
    if (!n->peer_text)
        n->peer_text = ma_xstrdup(expr);
    else if (strcmp(n->peer_text, expr) != 0)
        ma_anomaly_add("expression_changed", n, file, line, "the partner of %s '%s' was first asserted as '%s', "
                       "now '%s'; the first expression is kept", n->type, n->id, n->peer_text, expr);
    p->has_peer = n->peer_text != NULL;
}

void ma_peers_check(ma_node *n, int group, uint64_t first, uint64_t end)
{
    if (end == first)
        return; /* no call: nothing to judge */
    ma_num expected;
    if (end - first > MA_PMPI_PEER_RING || ma_scope_evaluate(n->peer_text, n, n->file, n->line, &expected)) {
        n->peer_unmeasured++;
        return;
    }
    double want = ma_num_as_double(expected);
    for (uint64_t k = first; k < end; k++) {
        int actual = ma_pmpi_group_peers[group][k % MA_PMPI_PEER_RING];
        if ((double)actual != want) {
            n->peer_fail++;
            if (!n->has_peer_fail) {
                n->has_peer_fail = 1;
                n->peer_fail_call = n->calls;
                n->peer_fail_expected = (long long)want;
                n->peer_fail_actual = actual;
            }
            return;
        }
    }
    n->peer_pass++;
}
