/*
 * ma_pmpi_fortran.c -- libmapmpi's Fortran entry points: the MPI calls of a Fortran program, counted like C's.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Which layer an MPI's Fortran bindings call differs by MPI and by routine (docs/mpi.md has the measured
 * table): Open MPI 4.1's `mpif.h`/`use mpi` routines (mpi_send_) and `use mpi_f08` routines (mpi_send_f08_)
 * call PMPI_Send directly, so the C wrappers never see them; MPICH 4.0's `use mpi` routines call MPI_Send,
 * and so do its `use mpi_f08` routines that take a buffer (mpi_send_f08ts_), but its mpi_f08 MPI_Init,
 * MPI_Finalize, MPI_Barrier, waits, tests and probes (mpi_barrier_f08_, ...) call PMPI_ directly.
 *
 * So this file defines the gfortran names of both interfaces, <routine>_ and <routine>_f08_, for every
 * routine the C wrappers count, and forwards each call to the next definition of the same name (the MPI's
 * own, found with dlsym(RTLD_NEXT)) unchanged: the MPI itself handles Fortran's sentinels, handle
 * conversions, optional IERROR and errors. After the call, a routine that reached a C wrapper on its way
 * (the thread's count of recorded calls moved) has been counted there; otherwise it is counted here, with
 * the same byte rules (docs/c-api.md), from its Fortran arguments. A call is never counted twice, and MPI_Init
 * and MPI_Finalize run the C runtime's hooks once, whichever layer sees them first.
 *
 * The definitions win over the MPI's only when libmapmpi comes before the MPI's Fortran libraries in the
 * program's link order (what `ma config --flibs` gives); ma_pmpi_unmeasured_reason() tells when it does not.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ma_pmpi_internal.h"

typedef MPI_Fint F; /* a Fortran INTEGER: count, rank, tag, handle, error code */
typedef void (*any_function)(void);

/* The MPI's own definition of `name` (the next one after this library), looked up once. */
static any_function next_definition(const char *name, any_function *cache)
{
    any_function found = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (found)
        return found;
    void *symbol = dlsym(RTLD_NEXT, name);
    if (!symbol) {
        fprintf(stderr, "libmapmpi: the program calls the Fortran MPI routine %s, but no library after "
                        "libmapmpi defines it (is the MPI's Fortran library linked?)\n", name);
        abort();
    }
    memcpy(&found, &symbol, sizeof found);
    __atomic_store_n(cache, found, __ATOMIC_RELEASE);
    return found;
}

/* Forward to the MPI's definition of `symbol`, timed; then `counted_below` says whether a C wrapper counted it.
 * An absent optional IERROR (mpi_f08) is given one of ours, so that the outcome is known either way. */
#define FORWARD(symbol, prototype, ...)                                                               \
    static any_function next;                                                                      \
    void(*forward) prototype = (void(*) prototype)next_definition(#symbol, &next);                 \
    F own_error = MPI_SUCCESS, *err = ierr ? ierr : &own_error;                                    \
    uint64_t seen = ma_pmpi_thread_records, t0 = ma_pmpi_clock_ns();                              \
    forward(__VA_ARGS__);                                                                          \
    uint64_t elapsed = ma_pmpi_clock_ns() - t0;                                                    \
    int count_here = *err == MPI_SUCCESS && ma_pmpi_thread_records == seen;                       \
    (void)elapsed

/* ---- Fortran sentinels ------------------------------------------------------------------------- */
/* The addresses a program passes for MPI_IN_PLACE: weak, since each MPI defines only its own names. */
extern int mpi_fortran_in_place_ __attribute__((weak)); /* Open MPI: mpif.h, mpi, mpi_f08 */
extern int MPIR_F_MPI_IN_PLACE __attribute__((weak));   /* MPICH: mpif.h, mpi */
extern int MPIR_F08_MPI_IN_PLACE __attribute__((weak)); /* MPICH: mpi_f08 */

static int in_place(const void *buffer)
{
    return buffer && (buffer == (const void *)&mpi_fortran_in_place_ || buffer == (const void *)&MPIR_F_MPI_IN_PLACE ||
                      buffer == (const void *)&MPIR_F08_MPI_IN_PLACE);
}

/* Room for either status layout below (an INTEGER array, or the C struct of TYPE(MPI_Status)). */
typedef struct status_space {
    F words[32];
} status_space;

/* mpif.h and `use mpi`: an INTEGER array; MPI_STATUS_IGNORE is MPI_F_STATUS_IGNORE. */
static void *classic_status(void *status, status_space *own)
{
    return status == (void *)MPI_F_STATUS_IGNORE ? (void *)own : status;
}
static void classic_to_c(const void *status, MPI_Status *c) { PMPI_Status_f2c((const F *)status, c); }

#if MPI_VERSION >= 4
/* mpi_f08, MPI 4: TYPE(MPI_Status) is MPI_F08_status. MPICH 4.0 defines its converter in the Fortran library
 * only: weak, so that C programs (which never call the _f08_ entry points) link without it. */
#pragma weak PMPI_Status_f082c
static void *f08_status(void *status, status_space *own)
{
    return status == (void *)MPI_F08_STATUS_IGNORE ? (void *)own : status;
}
static void f08_to_c(const void *status, MPI_Status *c)
{
    if (PMPI_Status_f082c) {
        PMPI_Status_f082c((const MPI_F08_status *)status, c);
    } else { /* an f08 call without the MPI's Fortran library loaded cannot happen; say "unknown" if it does */
        memset(c, 0, sizeof *c);
        c->MPI_SOURCE = -1;
    }
}
#else
/* mpi_f08 before MPI 4 (Open MPI 4.1): TYPE(MPI_Status) has the INTEGER array's layout and its IGNORE. */
#define f08_status classic_status
#define f08_to_c classic_to_c
#endif

static int source_of(const MPI_Status *status) { return status->MPI_SOURCE >= 0 ? status->MPI_SOURCE : -1; }

#define TYPE(handle) PMPI_Type_f2c(*(handle))
#define COMM(handle) PMPI_Comm_f2c(*(handle))

/* ---- the routines: each macro defines one entry point; BOTH gives the `use mpi` and mpi_f08 names ---- */
#define BOTH(MACRO, routine, ...) MACRO(routine##_, classic, __VA_ARGS__) MACRO(routine##_f08_, f08, __VA_ARGS__)

#define SEND_LIKE(symbol, layout, id)                                                                 \
    void symbol(void *buf, F *count, F *type, F *dest, F *tag, F *comm, F *ierr)                      \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, F *, F *, F *), buf, count, type, dest, tag, comm, err); \
        if (count_here)                                                                                \
            ma_pmpi_count(id, ma_pmpi_payload(*count, TYPE(type)), *dest, *tag, elapsed);              \
    }

#define ISEND_LIKE(symbol, layout, id)                                                                \
    void symbol(void *buf, F *count, F *type, F *dest, F *tag, F *comm, F *request, F *ierr)          \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, F *, F *, F *, F *), buf, count, type, dest, tag, comm, \
                request, err);                                                                         \
        if (count_here)                                                                                \
            ma_pmpi_count(id, ma_pmpi_payload(*count, TYPE(type)), *dest, *tag, elapsed);              \
    }

#define RECV(symbol, layout, id)                                                                      \
    void symbol(void *buf, F *count, F *type, F *source, F *tag, F *comm, void *status, F *ierr)      \
    {                                                                                                  \
        status_space own;                                                                              \
        void *st = layout##_status(status, &own);                                                      \
        FORWARD(symbol, (void *, F *, F *, F *, F *, F *, void *, F *), buf, count, type, source, tag, \
                comm, st, err);                                                                        \
        if (count_here) {                                                                              \
            MPI_Status c;                                                                              \
            layout##_to_c(st, &c);                                                                     \
            ma_pmpi_count(id, ma_pmpi_received(&c), source_of(&c), c.MPI_TAG, elapsed);                \
        }                                                                                              \
    }

#define MRECV(symbol, layout, id)                                                                     \
    void symbol(void *buf, F *count, F *type, F *message, void *status, F *ierr)                      \
    {                                                                                                  \
        status_space own;                                                                              \
        void *st = layout##_status(status, &own);                                                      \
        MPI_Message matched = PMPI_Message_f2c(*message);                                              \
        FORWARD(symbol, (void *, F *, F *, F *, void *, F *), buf, count, type, message, st, err);     \
        if (count_here) {                                                                              \
            MPI_Status c;                                                                              \
            ma_pmpi_probed_source(matched, 1); /* received: forget it */                               \
            layout##_to_c(st, &c);                                                                     \
            ma_pmpi_count(id, ma_pmpi_received(&c), source_of(&c), c.MPI_TAG, elapsed);                \
        }                                                                                              \
    }

#define IRECV(symbol, layout, id)                                                                     \
    void symbol(void *buf, F *count, F *type, F *source, F *tag, F *comm, F *request, F *ierr)        \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, F *, F *, F *, F *), buf, count, type, source, tag,    \
                comm, request, err);                                                                   \
        if (count_here)                                                                                \
            ma_pmpi_count(id, ma_pmpi_payload(*count, TYPE(type)), *source, *tag, elapsed);            \
    }

#define IMRECV(symbol, layout, id)                                                                    \
    void symbol(void *buf, F *count, F *type, F *message, F *request, F *ierr)                        \
    {                                                                                                  \
        /* only looked at: a C wrapper the call reaches takes it (and counts the call) */             \
        MPI_Message matched = PMPI_Message_f2c(*message);                                              \
        int peer = ma_pmpi_probed_source(matched, 0);                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, F *, F *), buf, count, type, message, request, err);   \
        if (count_here) {                                                                              \
            ma_pmpi_probed_source(matched, 1);                                                         \
            ma_pmpi_count(id, ma_pmpi_payload(*count, TYPE(type)), peer, -1, elapsed);                 \
        }                                                                                              \
    }

#define SENDRECV(symbol, layout, id)                                                                  \
    void symbol(void *sendbuf, F *sendcount, F *sendtype, F *dest, F *sendtag, void *recvbuf,         \
                F *recvcount, F *recvtype, F *source, F *recvtag, F *comm, void *status, F *ierr)      \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, F *, void *, F *, F *, F *, F *, F *, void *, F *),    \
                sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,     \
                recvtag, comm, status, err);                                                           \
        if (count_here)                                                                                \
            ma_pmpi_count(id, ma_pmpi_payload(*sendcount, TYPE(sendtype)), *dest, *sendtag, elapsed);  \
    }

#define SENDRECV_REPLACE(symbol, layout, id)                                                          \
    void symbol(void *buf, F *count, F *type, F *dest, F *sendtag, F *source, F *recvtag, F *comm,    \
                void *status, F *ierr)                                                                 \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, F *, F *, F *, F *, void *, F *), buf, count, type,    \
                dest, sendtag, source, recvtag, comm, status, err);                                    \
        if (count_here)                                                                                \
            ma_pmpi_count(id, ma_pmpi_payload(*count, TYPE(type)), *dest, *sendtag, elapsed);          \
    }

#define BCAST(symbol, layout, id)                                                                     \
    void symbol(void *buf, F *count, F *type, F *root, F *comm, F *ierr)                              \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, F *, F *), buf, count, type, root, comm, err);         \
        if (count_here)                                                                                \
            ma_pmpi_count(id, ma_pmpi_payload(*count, TYPE(type)), *root, -1, elapsed);                \
    }

#define REDUCE(symbol, layout, id)                                                                    \
    void symbol(void *sendbuf, void *recvbuf, F *count, F *type, F *op, F *root, F *comm, F *ierr)    \
    {                                                                                                  \
        FORWARD(symbol, (void *, void *, F *, F *, F *, F *, F *, F *), sendbuf, recvbuf, count, type, \
                op, root, comm, err);                                                                  \
        if (count_here)                                                                                \
            ma_pmpi_count(id, ma_pmpi_payload(*count, TYPE(type)), *root, -1, elapsed);                \
    }

#define ALLREDUCE(symbol, layout, id)                                                                 \
    void symbol(void *sendbuf, void *recvbuf, F *count, F *type, F *op, F *comm, F *ierr)             \
    {                                                                                                  \
        FORWARD(symbol, (void *, void *, F *, F *, F *, F *, F *), sendbuf, recvbuf, count, type, op,  \
                comm, err);                                                                            \
        if (count_here)                                                                                \
            ma_pmpi_count(id, ma_pmpi_payload(*count, TYPE(type)), -1, -1, elapsed);                   \
    }

/* One block per rank, rooted (Gather, Scatter) or not (Allgather, Alltoall); `bytes` is the routine's rule. */
#define BLOCKS_ROOTED(symbol, id, bytes)                                                              \
    void symbol(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcount, F *recvtype,   \
                F *root, F *comm, F *ierr)                                                             \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, void *, F *, F *, F *, F *, F *), sendbuf, sendcount,       \
                sendtype, recvbuf, recvcount, recvtype, root, comm, err);                              \
        if (count_here)                                                                                \
            ma_pmpi_count(id, bytes, *root, -1, elapsed);                                              \
    }
#define BLOCKS(symbol, id, bytes)                                                                     \
    void symbol(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcount, F *recvtype,   \
                F *comm, F *ierr)                                                                      \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, void *, F *, F *, F *, F *), sendbuf, sendcount, sendtype,  \
                recvbuf, recvcount, recvtype, comm, err);                                              \
        if (count_here)                                                                                \
            ma_pmpi_count(id, bytes, -1, -1, elapsed);                                                 \
    }
#define SEND_BLOCK ma_pmpi_payload(*sendcount, TYPE(sendtype))
#define RECV_BLOCK ma_pmpi_payload(*recvcount, TYPE(recvtype))
/* Gather, Allgather: this rank's contribution (at an MPI_IN_PLACE root, its recvcount block). */
#define GATHER(symbol, layout, id) BLOCKS_ROOTED(symbol, id, in_place(sendbuf) ? RECV_BLOCK : SEND_BLOCK)
#define ALLGATHER(symbol, layout, id) BLOCKS(symbol, id, in_place(sendbuf) ? RECV_BLOCK : SEND_BLOCK)
/* Scatter: the block this rank receives (at an MPI_IN_PLACE root, its own block of the send side). */
#define SCATTER(symbol, layout, id) BLOCKS_ROOTED(symbol, id, in_place(recvbuf) ? SEND_BLOCK : RECV_BLOCK)
/* Alltoall(v): everything this rank sends, its own block included. */
#define ALLTOALL(symbol, layout, id)                                                                  \
    BLOCKS(symbol, id, (in_place(sendbuf) ? RECV_BLOCK : SEND_BLOCK) * (uint64_t)ma_pmpi_remote_size(COMM(comm)))

#define GATHERV(symbol, layout, id)                                                                   \
    void symbol(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcounts, F *displs,    \
                F *recvtype, F *root, F *comm, F *ierr)                                                \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, void *, F *, F *, F *, F *, F *, F *), sendbuf, sendcount,  \
                sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, err);                     \
        if (count_here)                                                                                \
            ma_pmpi_count(id, in_place(sendbuf)                                                        \
                                  ? ma_pmpi_payload(recvcounts[ma_pmpi_rank_in(COMM(comm))], TYPE(recvtype)) \
                                  : ma_pmpi_payload(*sendcount, TYPE(sendtype)),                       \
                          *root, -1, elapsed);                                                         \
    }

#define SCATTERV(symbol, layout, id)                                                                  \
    void symbol(void *sendbuf, F *sendcounts, F *displs, F *sendtype, void *recvbuf, F *recvcount,    \
                F *recvtype, F *root, F *comm, F *ierr)                                                \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, void *, F *, F *, F *, F *, F *), sendbuf, sendcounts, \
                displs, sendtype, recvbuf, recvcount, recvtype, root, comm, err);                      \
        if (count_here)                                                                                \
            ma_pmpi_count(id, in_place(recvbuf)                                                        \
                                  ? ma_pmpi_payload(sendcounts[ma_pmpi_rank_in(COMM(comm))], TYPE(sendtype)) \
                                  : ma_pmpi_payload(*recvcount, TYPE(recvtype)),                       \
                          *root, -1, elapsed);                                                         \
    }

#define ALLGATHERV(symbol, layout, id)                                                                \
    void symbol(void *sendbuf, F *sendcount, F *sendtype, void *recvbuf, F *recvcounts, F *displs,    \
                F *recvtype, F *comm, F *ierr)                                                         \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, void *, F *, F *, F *, F *, F *), sendbuf, sendcount,       \
                sendtype, recvbuf, recvcounts, displs, recvtype, comm, err);                           \
        if (count_here)                                                                                \
            ma_pmpi_count(id, in_place(sendbuf)                                                        \
                                  ? ma_pmpi_payload(recvcounts[ma_pmpi_rank_in(COMM(comm))], TYPE(recvtype)) \
                                  : ma_pmpi_payload(*sendcount, TYPE(sendtype)),                       \
                          -1, -1, elapsed);                                                            \
    }

#define ALLTOALLV(symbol, layout, id)                                                                 \
    void symbol(void *sendbuf, F *sendcounts, F *sdispls, F *sendtype, void *recvbuf, F *recvcounts,  \
                F *rdispls, F *recvtype, F *comm, F *ierr)                                             \
    {                                                                                                  \
        FORWARD(symbol, (void *, F *, F *, F *, void *, F *, F *, F *, F *, F *), sendbuf, sendcounts, \
                sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, err);                 \
        if (count_here) {                                                                              \
            int replaced = in_place(sendbuf), n = ma_pmpi_remote_size(COMM(comm));                     \
            const F *counts = replaced ? recvcounts : sendcounts;                                      \
            MPI_Count total = 0;                                                                       \
            for (int i = 0; i < n; i++)                                                                \
                total += counts[i];                                                                    \
            ma_pmpi_count(id, ma_pmpi_payload(total, replaced ? TYPE(recvtype) : TYPE(sendtype)), -1,   \
                          -1, elapsed);                                                                \
        }                                                                                              \
    }

#define BARRIER(symbol, layout, id)                                                                   \
    void symbol(F *comm, F *ierr)                                                                     \
    {                                                                                                  \
        FORWARD(symbol, (F *, F *), comm, err);                                                        \
        if (count_here)                                                                                \
            ma_pmpi_count(id, 0, -1, -1, elapsed);                                                     \
    }

/* Completion and probe calls: time only (the arguments go through untouched). */
#define TIME_ONLY(symbol, id, parameters, prototype, ...)                                             \
    void symbol parameters                                                                             \
    {                                                                                                  \
        FORWARD(symbol, prototype, __VA_ARGS__);                                                       \
        if (count_here)                                                                                \
            ma_pmpi_count(id, 0, -1, -1, elapsed);                                                     \
    }
#define WAIT(symbol, layout, id) \
    TIME_ONLY(symbol, id, (F *request, void *status, F *ierr), (F *, void *, F *), request, status, err)
#define WAITALL(symbol, layout, id)                                                                \
    TIME_ONLY(symbol, id, (F *count, F *requests, void *statuses, F *ierr), (F *, F *, void *, F *), count, \
              requests, statuses, err)
#define WAITANY(symbol, layout, id)                                                                \
    TIME_ONLY(symbol, id, (F *count, F *requests, F *index, void *status, F *ierr),                  \
              (F *, F *, F *, void *, F *), count, requests, index, status, err)
#define WAITSOME(symbol, layout, id)                                                               \
    TIME_ONLY(symbol, id, (F *incount, F *requests, F *outcount, F *indices, void *statuses, F *ierr), \
              (F *, F *, F *, F *, void *, F *), incount, requests, outcount, indices, statuses, err)
#define TEST(symbol, layout, id)                                                                   \
    TIME_ONLY(symbol, id, (F *request, F *flag, void *status, F *ierr), (F *, F *, void *, F *), request, \
              flag, status, err)
#define TESTALL(symbol, layout, id)                                                                \
    TIME_ONLY(symbol, id, (F *count, F *requests, F *flag, void *statuses, F *ierr),                 \
              (F *, F *, F *, void *, F *), count, requests, flag, statuses, err)
#define TESTANY(symbol, layout, id)                                                                \
    TIME_ONLY(symbol, id, (F *count, F *requests, F *index, F *flag, void *status, F *ierr),         \
              (F *, F *, F *, F *, void *, F *), count, requests, index, flag, status, err)
#define TESTSOME(symbol, layout, id) WAITSOME(symbol, layout, id)
#define PROBE(symbol, layout, id)                                                                  \
    TIME_ONLY(symbol, id, (F *source, F *tag, F *comm, void *status, F *ierr), (F *, F *, F *, void *, F *), \
              source, tag, comm, status, err)
#define IPROBE(symbol, layout, id)                                                                 \
    TIME_ONLY(symbol, id, (F *source, F *tag, F *comm, F *flag, void *status, F *ierr),              \
              (F *, F *, F *, F *, void *, F *), source, tag, comm, flag, status, err)

/* Matched probes also remember the message's source, for the MPI_Imrecv that receives it. */
#define MPROBE(symbol, layout, id)                                                                    \
    void symbol(F *source, F *tag, F *comm, F *message, void *status, F *ierr)                        \
    {                                                                                                  \
        status_space own;                                                                              \
        void *st = layout##_status(status, &own);                                                      \
        FORWARD(symbol, (F *, F *, F *, F *, void *, F *), source, tag, comm, message, st, err);       \
        if (count_here) {                                                                              \
            MPI_Status c;                                                                              \
            layout##_to_c(st, &c);                                                                     \
            ma_pmpi_remember_probe(PMPI_Message_f2c(*message), &c);                                    \
            ma_pmpi_count(id, 0, -1, -1, elapsed);                                                     \
        }                                                                                              \
    }

#define IMPROBE(symbol, layout, id)                                                                   \
    void symbol(F *source, F *tag, F *comm, F *flag, F *message, void *status, F *ierr)               \
    {                                                                                                  \
        status_space own;                                                                              \
        void *st = layout##_status(status, &own);                                                      \
        FORWARD(symbol, (F *, F *, F *, F *, F *, void *, F *), source, tag, comm, flag, message, st, err); \
        if (count_here) {                                                                              \
            if (*flag) { /* a Fortran LOGICAL: nonzero is .TRUE. with gfortran */                      \
                MPI_Status c;                                                                          \
                layout##_to_c(st, &c);                                                                 \
                ma_pmpi_remember_probe(PMPI_Message_f2c(*message), &c);                                \
            }                                                                                          \
            ma_pmpi_count(id, 0, -1, -1, elapsed);                                                     \
        }                                                                                              \
    }

/* MPI_Init and MPI_Finalize: the hooks of the C runtime (once, whichever layer comes first). */
#define INIT(symbol, layout, unused)                                                                  \
    void symbol(F *ierr)                                                                               \
    {                                                                                                  \
        FORWARD(symbol, (F *), err);                                                                   \
        if (*err == MPI_SUCCESS)                                                                       \
            ma_pmpi_after_init();                                                                      \
        (void)count_here;                                                                              \
    }
#define INIT_THREAD(symbol, layout, unused)                                                           \
    void symbol(F *required, F *provided, F *ierr)                                                    \
    {                                                                                                  \
        FORWARD(symbol, (F *, F *, F *), required, provided, err);                                     \
        if (*err == MPI_SUCCESS)                                                                       \
            ma_pmpi_after_init();                                                                      \
        (void)count_here;                                                                              \
    }
#define FINALIZE(symbol, layout, unused)                                                              \
    void symbol(F *ierr)                                                                               \
    {                                                                                                  \
        ma_pmpi_before_finalize(); /* MPI must still run: the C runtime writes the trace collectively */ \
        FORWARD(symbol, (F *), err);                                                                   \
        (void)count_here;                                                                              \
    }

/* X(MACRO, routine, id): every Fortran routine wrapped, in both interfaces. */
#define MA_FORTRAN_ROUTINES(X)                  \
    X(SEND_LIKE, mpi_send, R_SEND)              \
    X(SEND_LIKE, mpi_bsend, R_BSEND)            \
    X(SEND_LIKE, mpi_ssend, R_SSEND)            \
    X(SEND_LIKE, mpi_rsend, R_RSEND)            \
    X(ISEND_LIKE, mpi_isend, R_ISEND)           \
    X(ISEND_LIKE, mpi_ibsend, R_IBSEND)         \
    X(ISEND_LIKE, mpi_issend, R_ISSEND)         \
    X(ISEND_LIKE, mpi_irsend, R_IRSEND)         \
    X(RECV, mpi_recv, R_RECV)                   \
    X(MRECV, mpi_mrecv, R_MRECV)                \
    X(IRECV, mpi_irecv, R_IRECV)                \
    X(IMRECV, mpi_imrecv, R_IMRECV)             \
    X(SENDRECV, mpi_sendrecv, R_SENDRECV)       \
    X(SENDRECV_REPLACE, mpi_sendrecv_replace, R_SENDRECV_REPLACE) \
    X(BCAST, mpi_bcast, R_BCAST)                \
    X(REDUCE, mpi_reduce, R_REDUCE)             \
    X(ALLREDUCE, mpi_allreduce, R_ALLREDUCE)    \
    X(GATHER, mpi_gather, R_GATHER)             \
    X(GATHERV, mpi_gatherv, R_GATHERV)          \
    X(SCATTER, mpi_scatter, R_SCATTER)          \
    X(SCATTERV, mpi_scatterv, R_SCATTERV)       \
    X(ALLGATHER, mpi_allgather, R_ALLGATHER)    \
    X(ALLGATHERV, mpi_allgatherv, R_ALLGATHERV) \
    X(ALLTOALL, mpi_alltoall, R_ALLTOALL)       \
    X(ALLTOALLV, mpi_alltoallv, R_ALLTOALLV)    \
    X(BARRIER, mpi_barrier, R_BARRIER)          \
    X(WAIT, mpi_wait, R_WAIT)                   \
    X(WAITALL, mpi_waitall, R_WAITALL)          \
    X(WAITANY, mpi_waitany, R_WAITANY)          \
    X(WAITSOME, mpi_waitsome, R_WAITSOME)       \
    X(TEST, mpi_test, R_TEST)                   \
    X(TESTALL, mpi_testall, R_TESTALL)          \
    X(TESTANY, mpi_testany, R_TESTANY)          \
    X(TESTSOME, mpi_testsome, R_TESTSOME)       \
    X(PROBE, mpi_probe, R_PROBE)                \
    X(IPROBE, mpi_iprobe, R_IPROBE)             \
    X(MPROBE, mpi_mprobe, R_MPROBE)             \
    X(IMPROBE, mpi_improbe, R_IMPROBE)          \
    X(INIT, mpi_init, 0)                        \
    X(INIT_THREAD, mpi_init_thread, 0)          \
    X(FINALIZE, mpi_finalize, 0)

#define DEFINE(MACRO, routine, id) BOTH(MACRO, routine, id)
MA_FORTRAN_ROUTINES(DEFINE)

/* ---- is every entry point reached? -------------------------------------------------------------- */
#define NAMES(MACRO, routine, id) #routine "_", #routine "_f08_",
static const char *const entry_points[] = {MA_FORTRAN_ROUTINES(NAMES)};

void ma_pmpi_fortran_bypassed(char *buf, size_t *length, size_t cap)
{
    for (size_t i = 0; i < sizeof entry_points / sizeof *entry_points; i++)
        ma_pmpi_note_if_bypassed(entry_points[i], buf, length, cap);
}
