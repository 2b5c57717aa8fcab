/*
 * ma_peers.h -- partner assertions: ma_mpi_peer(expr) names the rank an MPI assertion's calls talk to (ma_peers.c;
 * ma_runtime/peers.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_PEERS_H
#define MA_PEERS_H

#include <stdint.h>

#include "ma_tree.h"

#pragma GCC visibility push(hidden)

/* ma_mpi_peer_at of ma.h: the partner expression of the MPI assertion just made. */
void ma_peers_name(const char *expr, const char *file, int line);
/* Compare the partners of the group's calls first..end-1 (libmapmpi's ring) with the node's peer expression. */
void ma_peers_check(ma_node *n, int group, uint64_t first, uint64_t end);

#pragma GCC visibility pop

#endif /* MA_PEERS_H */
