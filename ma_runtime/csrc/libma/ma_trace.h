/*
 * ma_trace.h -- the rank file of the C runtime: the trace document in the format of docs/trace-format.md, with the
 * same fields as the Python runtime writes (ma_trace.c; ma_runtime/mars.py, tree.py, trace.py).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_TRACE_H
#define MA_TRACE_H

#include <stdint.h>

#include "ma_json.h"
#include "ma_state.h"
#include "ma_trace_format.h"
#include "ma_tree.h"

#pragma GCC visibility push(hidden)

#define MA_PRODUCER "libma 0.1.0"

/* The keys of a site node (ma_trace_format.h), as an enum: MA_NODE_ID, ..., MA_NODE_N_KEYS. */
#define MA_AS_NODE_KEY(key, name, presence) key,
enum ma_node_key { MA_NODE_KEYS(MA_AS_NODE_KEY) MA_NODE_N_KEYS };
#undef MA_AS_NODE_KEY
extern const char *const ma_node_key_names[MA_NODE_N_KEYS];

/* The JSON of the whole trace document. Returns a malloc'ed NUL-terminated string (NULL, errno ENOMEM). */
char *ma_trace_document(const ma_runtime_state *rt, const char *status, const char *reason, int final);
/* Write `text` atomically as <dir>/rank-<rank>.ma.json; 0 or -1 (errno set). */
int ma_trace_write_atomic(const char *dir, int rank, const char *text);
/* mkdir -p; 0 or -1 (errno set). */
int ma_trace_make_dirs(const char *dir);

/* Pieces of the document the merged trace reuses (ma_merge.c). */
/* The value of a node's key; 0, writing nothing, when the node does not have that key. */
int ma_trace_node_value(ma_out *o, const ma_node *n, enum ma_node_key key);
/* The index of a node key's name, or -1. */
int ma_trace_node_key(const char *name);
void ma_trace_header(ma_out *o, const ma_runtime_state *rt, const char *status, const char *reason, int final);
void ma_trace_anomaly(ma_out *o, const char *kind, const char *path, const char *message, uint64_t count,
                      const char *file, int line);
/* `,"peers":[...]` and `,"vector_loops":[...]`, each only when used. */
void ma_trace_optional_keys(ma_out *o, const ma_runtime_state *rt);

#pragma GCC visibility pop

#endif /* MA_TRACE_H */
