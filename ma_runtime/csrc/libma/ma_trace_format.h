/*
 * ma_trace_format.h -- the trace format's names for the C runtime (docs/trace-format.md).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Generated from ma_core/trace_format.py by `python -m ma_core.trace_format_c`: do not edit (a test fails
 * while it differs from what that writes). Lists are X-macros: X(name) or X(ENUM, name, presence).
 */
#ifndef MA_TRACE_FORMAT_H
#define MA_TRACE_FORMAT_H

#define MA_TRACE_FORMAT "ma-trace"
#define MA_TRACE_VERSION 1
#define MA_MERGED_FORMAT "ma-trace-merged"
#define MA_MERGED_VERSION 3
#define MA_MERGED_FILE "job.ma.npz"
#define MA_MERGED_INDEX "trace.json"
#define MA_CACHE_MAX_LEVELS 4
#define MA_MAX_SITE_DEPTH 400
#define MA_N_VALUE_FIELDS 34

#define MA_STATUS_RUNNING "running"
#define MA_STATUS_COMPLETE "complete"
#define MA_STATUS_EXCEPTION "exception"
#define MA_STATUS_TERMINATED "terminated"

/* node types that assert no MPI call */
#define MA_STRUCTURE_TYPES(X) \
    X("root") \
    X("subroutine") \
    X("loop") \
    X("flop") \
    X("loadstore") \
    X("heap_memory") \
    X("stack_memory") \
    X("variable") \
    X("assign")

/* the MPI annotation types, in the order of the PMPI library's groups */
#define MA_MPI_TYPES(X) \
    X("mpi_send") \
    X("mpi_isend") \
    X("mpi_recv") \
    X("mpi_irecv") \
    X("mpi_sendrecv") \
    X("mpi_bcast") \
    X("mpi_reduce") \
    X("mpi_allreduce") \
    X("mpi_gather") \
    X("mpi_scatter") \
    X("mpi_allgather") \
    X("mpi_alltoall") \
    X("mpi_barrier")

/* where a node key is present: always, on MPI nodes only, only where a counter measured it */
enum ma_presence { MA_ALWAYS, MA_MPI_ONLY, MA_MEASURED };

/* the keys of a site node, in the order written */
#define MA_NODE_KEYS(X) \
    X(MA_NODE_ID, "id", MA_ALWAYS) \
    X(MA_NODE_TYPE, "type", MA_ALWAYS) \
    X(MA_NODE_PATH, "path", MA_ALWAYS) \
    X(MA_NODE_EXPR, "expr", MA_ALWAYS) \
    X(MA_NODE_FILE, "file", MA_ALWAYS) \
    X(MA_NODE_LINE, "line", MA_ALWAYS) \
    X(MA_NODE_CALLS, "calls", MA_ALWAYS) \
    X(MA_NODE_PREDICTED, "predicted", MA_ALWAYS) \
    X(MA_NODE_MEASURED, "measured", MA_ALWAYS) \
    X(MA_NODE_PASS, "pass", MA_ALWAYS) \
    X(MA_NODE_FAIL, "fail", MA_ALWAYS) \
    X(MA_NODE_UNMEASURED, "unmeasured", MA_ALWAYS) \
    X(MA_NODE_MISMATCH, "mismatch", MA_ALWAYS) \
    X(MA_NODE_FIRST_MISMATCH, "first_mismatch", MA_ALWAYS) \
    X(MA_NODE_FIRST_FAIL, "first_fail", MA_ALWAYS) \
    X(MA_NODE_WALL_NS, "wall_ns", MA_ALWAYS) \
    X(MA_NODE_CPU_NS, "cpu_ns", MA_ALWAYS) \
    X(MA_NODE_COUNT_EXPR, "count_expr", MA_MPI_ONLY) \
    X(MA_NODE_COUNT, "count", MA_MPI_ONLY) \
    X(MA_NODE_CHILDREN, "children", MA_ALWAYS) \
    X(MA_NODE_CACHE, "cache", MA_MEASURED) \
    X(MA_NODE_C_CALLS, "c_calls", MA_MEASURED) \
    X(MA_NODE_SUBSCRIPTS, "subscripts", MA_MEASURED)

/* a stats object */
#define MA_STATS_KEYS(X) \
    X("n") \
    X("min") \
    X("max") \
    X("sum")

/* an MPI node's `count` object (each a stats object) */
#define MA_COUNT_KEYS(X) \
    X("predicted") \
    X("measured")

/* a node's `first_mismatch` object */
#define MA_FIRST_MISMATCH_KEYS(X) \
    X("given") \
    X("evaluated")

/* a node's `first_fail` object; an MPI node's adds MA_FIRST_FAIL_MPI_KEYS */
#define MA_FIRST_FAIL_KEYS(X) \
    X("call") \
    X("predicted") \
    X("measured")

/* the count pair of an MPI node's `first_fail` */
#define MA_FIRST_FAIL_MPI_KEYS(X) \
    X("count_predicted") \
    X("count_measured")

/* a node's `cache` object */
#define MA_CACHE_KEYS(X) \
    X("calls") \
    X("accesses") \
    X("hits")

/* a node's row in a merged trace's structure, after its parent row */
#define MA_NODE_ROW_KEYS(X) \
    X("type") \
    X("id") \
    X("path") \
    X("expr") \
    X("count_expr") \
    X("file") \
    X("line")

/* the value columns of a merged trace, per node */
#define MA_VALUE_FIELDS(X) \
    X("calls") \
    X("pass") \
    X("fail") \
    X("unmeasured") \
    X("mismatch") \
    X("wall_ns") \
    X("cpu_ns") \
    X("pred_n") \
    X("pred_min") \
    X("pred_max") \
    X("pred_sum") \
    X("meas_n") \
    X("meas_min") \
    X("meas_max") \
    X("meas_sum") \
    X("cpred_n") \
    X("cpred_min") \
    X("cpred_max") \
    X("cpred_sum") \
    X("cmeas_n") \
    X("cmeas_min") \
    X("cmeas_max") \
    X("cmeas_sum") \
    X("cache_calls") \
    X("cache_levels") \
    X("cache_accesses") \
    X("cache_hits1") \
    X("cache_hits2") \
    X("cache_hits3") \
    X("cache_hits4") \
    X("ccalls_n") \
    X("ccalls") \
    X("subscripts_n") \
    X("subscripts")

/* the value columns of a merged trace, per variable */
#define MA_VARIABLE_FIELDS(X) \
    X("value") \
    X("min") \
    X("max") \
    X("defs")

/* a vector loop record's `gathers` objects */
#define MA_VEC_LOOP_GATHER_KEYS(X) \
    X("gathers") \
    X("gathered_bytes")

#endif /* MA_TRACE_FORMAT_H */
