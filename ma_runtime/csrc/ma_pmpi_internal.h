/*
 * ma_pmpi_internal.h -- what the two source files of libmapmpi share: the routine table, and the bookkeeping the
 * Fortran entry points (ma_pmpi_fortran.c) do with the C wrappers' functions. Not installed; nothing here is
 * exported from the library.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_PMPI_INTERNAL_H
#define MA_PMPI_INTERNAL_H

#include <mpi.h>
#include <stdint.h>

#include "ma_pmpi.h"

#define MA_HIDDEN __attribute__((visibility("hidden")))

/* ---- routine table ----------------------------------------------------------------------------- */
/* X(enum suffix, name, group, flags): P2P keeps per-peer counts, HIST keeps a message-size histogram. */
#define P2P 1
#define HIST 2
#define MA_ROUTINES(X)                                     \
    X(SEND, "MPI_Send", MA_PMPI_SEND, P2P | HIST)          \
    X(BSEND, "MPI_Bsend", MA_PMPI_SEND, P2P | HIST)        \
    X(SSEND, "MPI_Ssend", MA_PMPI_SEND, P2P | HIST)        \
    X(RSEND, "MPI_Rsend", MA_PMPI_SEND, P2P | HIST)        \
    X(ISEND, "MPI_Isend", MA_PMPI_ISEND, P2P | HIST)       \
    X(IBSEND, "MPI_Ibsend", MA_PMPI_ISEND, P2P | HIST)     \
    X(ISSEND, "MPI_Issend", MA_PMPI_ISEND, P2P | HIST)     \
    X(IRSEND, "MPI_Irsend", MA_PMPI_ISEND, P2P | HIST)     \
    X(RECV, "MPI_Recv", MA_PMPI_RECV, P2P | HIST)          \
    X(MRECV, "MPI_Mrecv", MA_PMPI_RECV, P2P | HIST)        \
    X(IRECV, "MPI_Irecv", MA_PMPI_IRECV, P2P | HIST)       \
    X(IMRECV, "MPI_Imrecv", MA_PMPI_IRECV, P2P | HIST)     \
    X(SENDRECV, "MPI_Sendrecv", MA_PMPI_SENDRECV, P2P | HIST) \
    X(SENDRECV_REPLACE, "MPI_Sendrecv_replace", MA_PMPI_SENDRECV, P2P | HIST) \
    X(BCAST, "MPI_Bcast", MA_PMPI_BCAST, HIST)             \
    X(REDUCE, "MPI_Reduce", MA_PMPI_REDUCE, HIST)          \
    X(ALLREDUCE, "MPI_Allreduce", MA_PMPI_ALLREDUCE, HIST) \
    X(GATHER, "MPI_Gather", MA_PMPI_GATHER, HIST)          \
    X(GATHERV, "MPI_Gatherv", MA_PMPI_GATHER, HIST)        \
    X(SCATTER, "MPI_Scatter", MA_PMPI_SCATTER, HIST)       \
    X(SCATTERV, "MPI_Scatterv", MA_PMPI_SCATTER, HIST)     \
    X(ALLGATHER, "MPI_Allgather", MA_PMPI_ALLGATHER, HIST) \
    X(ALLGATHERV, "MPI_Allgatherv", MA_PMPI_ALLGATHER, HIST) \
    X(ALLTOALL, "MPI_Alltoall", MA_PMPI_ALLTOALL, HIST)    \
    X(ALLTOALLV, "MPI_Alltoallv", MA_PMPI_ALLTOALL, HIST)  \
    X(BARRIER, "MPI_Barrier", MA_PMPI_BARRIER, HIST)       \
    X(WAIT, "MPI_Wait", MA_PMPI_OTHER, 0)                  \
    X(WAITALL, "MPI_Waitall", MA_PMPI_OTHER, 0)            \
    X(WAITANY, "MPI_Waitany", MA_PMPI_OTHER, 0)            \
    X(WAITSOME, "MPI_Waitsome", MA_PMPI_OTHER, 0)          \
    X(TEST, "MPI_Test", MA_PMPI_OTHER, 0)                  \
    X(TESTALL, "MPI_Testall", MA_PMPI_OTHER, 0)            \
    X(TESTANY, "MPI_Testany", MA_PMPI_OTHER, 0)            \
    X(TESTSOME, "MPI_Testsome", MA_PMPI_OTHER, 0)          \
    X(PROBE, "MPI_Probe", MA_PMPI_OTHER, 0)                \
    X(IPROBE, "MPI_Iprobe", MA_PMPI_OTHER, 0)              \
    X(MPROBE, "MPI_Mprobe", MA_PMPI_OTHER, 0)              \
    X(IMPROBE, "MPI_Improbe", MA_PMPI_OTHER, 0)

#define AS_ENUM(suffix, name, group, flags) R_##suffix,
enum routine_id { MA_ROUTINES(AS_ENUM) N_ROUTINES };


/* Calls this thread's wrappers have counted so far. A Fortran entry point compares it before and after the
 * MPI library's own Fortran routine: when that reached a C wrapper (MPICH's `use mpi`), the call is counted
 * there, once; when it went straight to PMPI (Open MPI's bindings), the entry point counts it. */
extern __thread uint64_t ma_pmpi_thread_records __attribute__((tls_model("initial-exec"), visibility("hidden")));

MA_HIDDEN uint64_t ma_pmpi_clock_ns(void);
/* Count one completed call of `routine` (see record() in ma_pmpi.c). */
MA_HIDDEN void ma_pmpi_count(int routine, uint64_t bytes, int peer, int tag, uint64_t elapsed);
MA_HIDDEN uint64_t ma_pmpi_payload(MPI_Count count, MPI_Datatype type);
MA_HIDDEN uint64_t ma_pmpi_received(const MPI_Status *status);
MA_HIDDEN int ma_pmpi_remote_size(MPI_Comm comm);
MA_HIDDEN int ma_pmpi_rank_in(MPI_Comm comm);
MA_HIDDEN void ma_pmpi_remember_probe(MPI_Message message, const MPI_Status *status);
/* The source MPI_Mprobe/MPI_Improbe reported for `message` (-1: unknown); `forget`: it is being received. */
MA_HIDDEN int ma_pmpi_probed_source(MPI_Message message, int forget);
/* After MPI came up, and before it goes down: the hooks of the C runtime, run once whichever layer (C or
 * Fortran entry point) sees the call first. */
MA_HIDDEN void ma_pmpi_after_init(void);
MA_HIDDEN void ma_pmpi_before_finalize(void);
/* Append "name (from LIBRARY)" to buf when the process's definition of `name` is another library's than this
 * one (its calls bypass the wrappers); *length counts what was (or would have been) written. */
MA_HIDDEN void ma_pmpi_note_if_bypassed(const char *name, char *buf, size_t *length, size_t cap);
/* The same for every Fortran entry point of ma_pmpi_fortran.c. */
MA_HIDDEN void ma_pmpi_fortran_bypassed(char *buf, size_t *length, size_t cap);

#endif /* MA_PMPI_INTERNAL_H */
