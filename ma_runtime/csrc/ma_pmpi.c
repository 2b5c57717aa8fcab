/*
 * ma_pmpi.c -- libmapmpi: PMPI wrappers that count MPI calls, bytes, time, message sizes and peers.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Each wrapper times its PMPI_ twin and, when the call succeeded, folds one record into the routine's
 * counters and its group's running totals (see ma_pmpi.h). Bookkeeping happens only after a successful
 * call, so a bad argument reaches MPI's own error handling first and is never touched here.
 * Byte rules per routine are documented in docs/c-api.md.
 */
#define _GNU_SOURCE
#include "ma_pmpi_internal.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if MPI_VERSION >= 4
#define MA_LARGE_COUNT 1
#else
#define MA_LARGE_COUNT 0
#endif

/* Atomic adds only when MPI may be called from several threads at once (MPI_THREAD_MULTIPLE, or a thread
 * level we did not see because MPI started before this library was loaded); plain adds otherwise. */
static int concurrent = 1;
#define ADD(lvalue, amount)                                             \
    (concurrent ? (void)__atomic_fetch_add(&(lvalue), (amount), __ATOMIC_RELAXED) \
                : (void)((lvalue) += (amount)))
#define LOAD(lvalue) __atomic_load_n(&(lvalue), __ATOMIC_RELAXED)

#define N_BUCKETS MA_PMPI_HIST_BUCKETS /* [0,0], then [2^(k-1), 2^k - 1] for k = 1..64 */

typedef struct peer_count {
    uint64_t calls;
    uint64_t bytes;
} peer_count;

typedef struct routine {
    const char *name;
    int group;
    int flags;
    uint64_t calls, bytes, time_ns;
    uint64_t hist[N_BUCKETS];
    peer_count *peers; /* n_peers entries, allocated on the first call with a peer */
} routine;

#define AS_ENTRY(suffix, name, group, flags) {name, group, flags, 0, 0, 0, {0}, NULL},
static routine routines[N_ROUTINES] = {MA_ROUTINES(AS_ENTRY)};

static const char *const group_names[MA_PMPI_NGROUPS] = {
    "mpi_send", "mpi_isend", "mpi_recv", "mpi_irecv", "mpi_sendrecv", "mpi_bcast", "mpi_reduce",
    "mpi_allreduce", "mpi_gather", "mpi_scatter", "mpi_allgather", "mpi_alltoall", "mpi_barrier", "other"};

ma_pmpi_total ma_pmpi_group_totals[MA_PMPI_NGROUPS];
int32_t ma_pmpi_group_peers[MA_PMPI_NGROUPS][MA_PMPI_PEER_RING];

static int n_peers;  /* size of MPI_COMM_WORLD, bound of the per-peer arrays; 0 until known */
static uint32_t watch_mask;
static void (*watch_hook)(int group);

#define MAX_HOOKS 8
static void (*init_hooks[MAX_HOOKS])(void);
static void (*finalize_hooks[MAX_HOOKS])(void);
static int n_init_hooks, n_finalize_hooks;

/* ---- hot path ---------------------------------------------------------------------------------- */
static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int bucket_of(uint64_t bytes)
{
    return bytes ? 64 - __builtin_clzll(bytes) : 0;
}

static void learn_world_size(void)
{
    int initialized = 0, finalized = 0, size = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized && PMPI_Comm_size(MPI_COMM_WORLD, &size) == MPI_SUCCESS && size > 0)
        __atomic_store_n(&n_peers, size, __ATOMIC_RELAXED);
}

static void count_peer(routine *r, int peer, uint64_t bytes)
{
    peer_count *table = __atomic_load_n(&r->peers, __ATOMIC_ACQUIRE);
    if (!table) {
        if (!LOAD(n_peers))
            learn_world_size();
        int n = LOAD(n_peers);
        if (n <= 0)
            return;
        peer_count *fresh = calloc((size_t)n, sizeof *fresh);
        if (!fresh)
            return;
        peer_count *expected = NULL;
        if (!__atomic_compare_exchange_n(&r->peers, &expected, fresh, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            free(fresh); /* another thread won the race */
            table = expected;
        } else {
            table = fresh;
        }
    }
    /* Ranks of an intercommunicator's remote group may exceed the world size: totals only. */
    if (peer < LOAD(n_peers)) {
        ADD(table[peer].calls, 1);
        ADD(table[peer].bytes, bytes);
    }
}

/* ---- per-call log (MA_PMPI_LOG=DIR): every call in order, written as DIR/rank-<r>.calls.tsv ---------- */
typedef struct logged_call {
    int32_t routine, peer, tag;
    uint64_t bytes;
} logged_call;

static int log_wanted = -1; /* -1: MA_PMPI_LOG not read yet */
static logged_call *call_log;
static size_t log_len, log_cap;

static void log_call(int id, int peer, int tag, uint64_t bytes)
{
    if (log_wanted < 0) {
        const char *dir = getenv("MA_PMPI_LOG");
        log_wanted = dir && *dir;
    }
    if (!log_wanted)
        return;
    if (log_len == log_cap) {
        size_t cap = log_cap ? 2 * log_cap : 4096;
        logged_call *grown = realloc(call_log, cap * sizeof *grown);
        if (!grown) {
            log_wanted = 0; /* out of memory: stop logging rather than fail the program */
            return;
        }
        call_log = grown;
        log_cap = cap;
    }
    call_log[log_len++] = (logged_call){id, peer, tag, bytes};
}

__thread uint64_t ma_pmpi_thread_records;

static inline void record(int id, uint64_t bytes, int peer, int tag, uint64_t elapsed)
{
    ma_pmpi_thread_records++;
    routine *r = &routines[id];
    ADD(r->calls, 1);
    ADD(r->bytes, bytes);
    ADD(r->time_ns, elapsed);
    if (r->flags & HIST)
        ADD(r->hist[bucket_of(bytes)], 1);
    int group = r->group;
    /* the peer of the group's n-th call lands in slot n % MA_PMPI_PEER_RING before the count moves on */
    ma_pmpi_group_peers[group][LOAD(ma_pmpi_group_totals[group].calls) % MA_PMPI_PEER_RING] = peer;
    ADD(ma_pmpi_group_totals[group].calls, 1);
    ADD(ma_pmpi_group_totals[group].bytes, bytes);
    if (log_wanted)
        log_call(id, peer, tag, bytes);
    if (peer >= 0 && (r->flags & P2P))
        count_peer(r, peer, bytes);
    if (watch_mask & (1u << group))
        watch_hook(group);
}

/* Payload of `count` elements of `type`; 0 for a null type (MPI accepts it with count 0). */
static inline uint64_t payload(MPI_Count count, MPI_Datatype type)
{
    if (count <= 0 || type == MPI_DATATYPE_NULL)
        return 0;
#if MA_LARGE_COUNT
    MPI_Count size = 0;
    PMPI_Type_size_c(type, &size);
#else
    int size = 0;
    PMPI_Type_size(type, &size);
#endif
    return size > 0 ? (uint64_t)count * (uint64_t)size : 0;
}

/* Bytes a completed receive delivered, from its status. */
static inline uint64_t received(const MPI_Status *status)
{
#if MA_LARGE_COUNT
    MPI_Count n = 0;
    PMPI_Get_count_c(status, MPI_BYTE, &n);
#else
    int n = 0;
    PMPI_Get_count(status, MPI_BYTE, &n);
#endif
    return n > 0 ? (uint64_t)n : 0;
}

static inline int peer_of_status(const MPI_Status *status)
{
    return status->MPI_SOURCE >= 0 ? status->MPI_SOURCE : -1;
}

static int remote_size(MPI_Comm comm)
{
    int inter = 0, size = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_size(comm, &size);
    else
        PMPI_Comm_size(comm, &size);
    return size;
}

static int rank_in(MPI_Comm comm)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

/* Source of a matched message, remembered from MPI_Mprobe/MPI_Improbe for MPI_Imrecv (which has no
 * status at posting time). A few slots per thread suffice: a probed message is received soon after. */
#define PROBE_SLOTS 8
static __thread struct {
    MPI_Message message;
    int source;
} probed[PROBE_SLOTS];
static __thread unsigned probed_next;

static void remember_probe(MPI_Message message, const MPI_Status *status)
{
    unsigned slot = probed_next++ % PROBE_SLOTS;
    probed[slot].message = message;
    probed[slot].source = status->MPI_SOURCE;
}

static int probed_source_of(MPI_Message message, int forget)
{
    for (unsigned i = 0; i < PROBE_SLOTS; i++)
        if (probed[i].message == message && message != MPI_MESSAGE_NULL) {
            if (forget)
                probed[i].message = MPI_MESSAGE_NULL;
            return probed[i].source >= 0 ? probed[i].source : -1;
        }
    return -1;
}

static int probed_source(MPI_Message message) { return probed_source_of(message, 1); }

/* The same, for the Fortran entry points in ma_pmpi_fortran.c. */
uint64_t ma_pmpi_clock_ns(void) { return now_ns(); }
void ma_pmpi_count(int routine, uint64_t bytes, int peer, int tag, uint64_t elapsed)
{
    record(routine, bytes, peer, tag, elapsed);
}
uint64_t ma_pmpi_payload(MPI_Count count, MPI_Datatype type) { return payload(count, type); }
uint64_t ma_pmpi_received(const MPI_Status *status) { return received(status); }
int ma_pmpi_remote_size(MPI_Comm comm) { return remote_size(comm); }
int ma_pmpi_rank_in(MPI_Comm comm) { return rank_in(comm); }
void ma_pmpi_remember_probe(MPI_Message message, const MPI_Status *status) { remember_probe(message, status); }
int ma_pmpi_probed_source(MPI_Message message, int forget) { return probed_source_of(message, forget); }

/* ---- wrappers ---------------------------------------------------------------------------------- */
/* Each X_LIKE macro defines the classic form (int counts) and, under MPI-4, the `_c` form. */
#define TIMED(call)                     \
    uint64_t t0 = now_ns();             \
    int rc = (call);                    \
    uint64_t elapsed = now_ns() - t0;   \
    if (rc != MPI_SUCCESS)              \
        return rc

#define SEND_LIKE(NAME, ID, CT)                                                                        \
    int MPI_##NAME(const void *buf, CT count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)     \
    {                                                                                                  \
        TIMED(PMPI_##NAME(buf, count, type, dest, tag, comm));                                         \
        record(ID, payload(count, type), dest, tag, elapsed);                                          \
        return rc;                                                                                     \
    }

#define ISEND_LIKE(NAME, ID, CT)                                                                       \
    int MPI_##NAME(const void *buf, CT count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,     \
                   MPI_Request *request)                                                               \
    {                                                                                                  \
        TIMED(PMPI_##NAME(buf, count, type, dest, tag, comm, request));                                \
        record(ID, payload(count, type), dest, tag, elapsed);                                          \
        return rc;                                                                                     \
    }

#define RECV_LIKE(NAME, CT)                                                                            \
    int MPI_##NAME(void *buf, CT count, MPI_Datatype type, int source, int tag, MPI_Comm comm,         \
                   MPI_Status *status)                                                                 \
    {                                                                                                  \
        MPI_Status own;                                                                                \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;                                  \
        TIMED(PMPI_##NAME(buf, count, type, source, tag, comm, st));                                   \
        record(R_RECV, received(st), peer_of_status(st), st->MPI_TAG, elapsed);                        \
        return rc;                                                                                     \
    }

#define IRECV_LIKE(NAME, CT)                                                                           \
    int MPI_##NAME(void *buf, CT count, MPI_Datatype type, int source, int tag, MPI_Comm comm,         \
                   MPI_Request *request)                                                               \
    {                                                                                                  \
        TIMED(PMPI_##NAME(buf, count, type, source, tag, comm, request));                              \
        record(R_IRECV, payload(count, type), source, tag, elapsed);                                   \
        return rc;                                                                                     \
    }

#define MRECV_LIKE(NAME, CT)                                                                           \
    int MPI_##NAME(void *buf, CT count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)   \
    {                                                                                                  \
        MPI_Status own;                                                                                \
        MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;                                  \
        if (message)                                                                                   \
            probed_source(*message); /* forget it: this message is being received */                  \
        TIMED(PMPI_##NAME(buf, count, type, message, st));                                             \
        record(R_MRECV, received(st), peer_of_status(st), st->MPI_TAG, elapsed);                       \
        return rc;                                                                                     \
    }

#define IMRECV_LIKE(NAME, CT)                                                                          \
    int MPI_##NAME(void *buf, CT count, MPI_Datatype type, MPI_Message *message, MPI_Request *request) \
    {                                                                                                  \
        int peer = message ? probed_source(*message) : -1;                                             \
        TIMED(PMPI_##NAME(buf, count, type, message, request));                                        \
        record(R_IMRECV, payload(count, type), peer, -1, elapsed);                                     \
        return rc;                                                                                     \
    }

#define SENDRECV_LIKE(NAME, CT)                                                                        \
    int MPI_##NAME(const void *sendbuf, CT sendcount, MPI_Datatype sendtype, int dest, int sendtag,    \
                   void *recvbuf, CT recvcount, MPI_Datatype recvtype, int source, int recvtag,        \
                   MPI_Comm comm, MPI_Status *status)                                                  \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,   \
                          source, recvtag, comm, status));                                             \
        record(R_SENDRECV, payload(sendcount, sendtype), dest, sendtag, elapsed);                      \
        return rc;                                                                                     \
    }

#define SENDRECV_REPLACE_LIKE(NAME, CT)                                                                \
    int MPI_##NAME(void *buf, CT count, MPI_Datatype type, int dest, int sendtag, int source,          \
                   int recvtag, MPI_Comm comm, MPI_Status *status)                                     \
    {                                                                                                  \
        TIMED(PMPI_##NAME(buf, count, type, dest, sendtag, source, recvtag, comm, status));            \
        record(R_SENDRECV_REPLACE, payload(count, type), dest, sendtag, elapsed);                      \
        return rc;                                                                                     \
    }

#define BCAST_LIKE(NAME, CT)                                                                           \
    int MPI_##NAME(void *buffer, CT count, MPI_Datatype type, int root, MPI_Comm comm)                 \
    {                                                                                                  \
        TIMED(PMPI_##NAME(buffer, count, type, root, comm));                                           \
        record(R_BCAST, payload(count, type), root, -1, elapsed);                                      \
        return rc;                                                                                     \
    }

#define REDUCE_LIKE(NAME, CT)                                                                          \
    int MPI_##NAME(const void *sendbuf, void *recvbuf, CT count, MPI_Datatype type, MPI_Op op,         \
                   int root, MPI_Comm comm)                                                            \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, recvbuf, count, type, op, root, comm));                             \
        record(R_REDUCE, payload(count, type), root, -1, elapsed);                                     \
        return rc;                                                                                     \
    }

#define ALLREDUCE_LIKE(NAME, CT)                                                                       \
    int MPI_##NAME(const void *sendbuf, void *recvbuf, CT count, MPI_Datatype type, MPI_Op op,         \
                   MPI_Comm comm)                                                                      \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, recvbuf, count, type, op, comm));                                   \
        record(R_ALLREDUCE, payload(count, type), -1, -1, elapsed);                                    \
        return rc;                                                                                     \
    }

/* Gather: this rank's contribution (at an MPI_IN_PLACE root, its recvcount block). */
#define GATHER_LIKE(NAME, CT)                                                                          \
    int MPI_##NAME(const void *sendbuf, CT sendcount, MPI_Datatype sendtype, void *recvbuf,            \
                   CT recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)                       \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm));    \
        uint64_t bytes = sendbuf == MPI_IN_PLACE ? payload(recvcount, recvtype)                        \
                                                 : payload(sendcount, sendtype);                       \
        record(R_GATHER, bytes, root, -1, elapsed);                                                    \
        return rc;                                                                                     \
    }

#define GATHERV_LIKE(NAME, CT, DT)                                                                     \
    int MPI_##NAME(const void *sendbuf, CT sendcount, MPI_Datatype sendtype, void *recvbuf,            \
                   const CT recvcounts[], const DT displs[], MPI_Datatype recvtype, int root,          \
                   MPI_Comm comm)                                                                      \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,   \
                          comm));                                                                      \
        uint64_t bytes = sendbuf == MPI_IN_PLACE ? payload(recvcounts[rank_in(comm)], recvtype)        \
                                                 : payload(sendcount, sendtype);                       \
        record(R_GATHERV, bytes, root, -1, elapsed);                                                   \
        return rc;                                                                                     \
    }

/* Scatter: the block each rank receives (sendcount x sendtype at an MPI_IN_PLACE root). */
#define SCATTER_LIKE(NAME, CT)                                                                         \
    int MPI_##NAME(const void *sendbuf, CT sendcount, MPI_Datatype sendtype, void *recvbuf,            \
                   CT recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)                       \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm));    \
        uint64_t bytes = recvbuf == MPI_IN_PLACE ? payload(sendcount, sendtype)                        \
                                                 : payload(recvcount, recvtype);                       \
        record(R_SCATTER, bytes, root, -1, elapsed);                                                   \
        return rc;                                                                                     \
    }

#define SCATTERV_LIKE(NAME, CT, DT)                                                                    \
    int MPI_##NAME(const void *sendbuf, const CT sendcounts[], const DT displs[],                      \
                   MPI_Datatype sendtype, void *recvbuf, CT recvcount, MPI_Datatype recvtype,          \
                   int root, MPI_Comm comm)                                                            \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,   \
                          comm));                                                                      \
        uint64_t bytes = recvbuf == MPI_IN_PLACE ? payload(sendcounts[rank_in(comm)], sendtype)        \
                                                 : payload(recvcount, recvtype);                       \
        record(R_SCATTERV, bytes, root, -1, elapsed);                                                  \
        return rc;                                                                                     \
    }

#define ALLGATHER_LIKE(NAME, CT)                                                                       \
    int MPI_##NAME(const void *sendbuf, CT sendcount, MPI_Datatype sendtype, void *recvbuf,            \
                   CT recvcount, MPI_Datatype recvtype, MPI_Comm comm)                                 \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));          \
        uint64_t bytes = sendbuf == MPI_IN_PLACE ? payload(recvcount, recvtype)                        \
                                                 : payload(sendcount, sendtype);                       \
        record(R_ALLGATHER, bytes, -1, -1, elapsed);                                                   \
        return rc;                                                                                     \
    }

#define ALLGATHERV_LIKE(NAME, CT, DT)                                                                  \
    int MPI_##NAME(const void *sendbuf, CT sendcount, MPI_Datatype sendtype, void *recvbuf,            \
                   const CT recvcounts[], const DT displs[], MPI_Datatype recvtype, MPI_Comm comm)     \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm)); \
        uint64_t bytes = sendbuf == MPI_IN_PLACE ? payload(recvcounts[rank_in(comm)], recvtype)        \
                                                 : payload(sendcount, sendtype);                       \
        record(R_ALLGATHERV, bytes, -1, -1, elapsed);                                                  \
        return rc;                                                                                     \
    }

/* Alltoall(v): everything this rank sends, its own block included. */
#define ALLTOALL_LIKE(NAME, CT)                                                                        \
    int MPI_##NAME(const void *sendbuf, CT sendcount, MPI_Datatype sendtype, void *recvbuf,            \
                   CT recvcount, MPI_Datatype recvtype, MPI_Comm comm)                                 \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm));          \
        uint64_t block = sendbuf == MPI_IN_PLACE ? payload(recvcount, recvtype)                        \
                                                 : payload(sendcount, sendtype);                       \
        record(R_ALLTOALL, block * (uint64_t)remote_size(comm), -1, -1, elapsed);                      \
        return rc;                                                                                     \
    }

#define ALLTOALLV_LIKE(NAME, CT, DT)                                                                   \
    int MPI_##NAME(const void *sendbuf, const CT sendcounts[], const DT sdispls[],                     \
                   MPI_Datatype sendtype, void *recvbuf, const CT recvcounts[], const DT rdispls[],    \
                   MPI_Datatype recvtype, MPI_Comm comm)                                               \
    {                                                                                                  \
        TIMED(PMPI_##NAME(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,        \
                          recvtype, comm));                                                            \
        int in_place = sendbuf == MPI_IN_PLACE, n = remote_size(comm);                                 \
        const CT *counts = in_place ? recvcounts : sendcounts;                                         \
        MPI_Count total = 0;                                                                           \
        for (int i = 0; i < n; i++)                                                                    \
            total += counts[i];                                                                        \
        record(R_ALLTOALLV, payload(total, in_place ? recvtype : sendtype), -1, -1, elapsed);          \
        return rc;                                                                                     \
    }

SEND_LIKE(Send, R_SEND, int)
SEND_LIKE(Bsend, R_BSEND, int)
SEND_LIKE(Ssend, R_SSEND, int)
SEND_LIKE(Rsend, R_RSEND, int)
ISEND_LIKE(Isend, R_ISEND, int)
ISEND_LIKE(Ibsend, R_IBSEND, int)
ISEND_LIKE(Issend, R_ISSEND, int)
ISEND_LIKE(Irsend, R_IRSEND, int)
RECV_LIKE(Recv, int)
IRECV_LIKE(Irecv, int)
MRECV_LIKE(Mrecv, int)
IMRECV_LIKE(Imrecv, int)
SENDRECV_LIKE(Sendrecv, int)
SENDRECV_REPLACE_LIKE(Sendrecv_replace, int)
BCAST_LIKE(Bcast, int)
REDUCE_LIKE(Reduce, int)
ALLREDUCE_LIKE(Allreduce, int)
GATHER_LIKE(Gather, int)
GATHERV_LIKE(Gatherv, int, int)
SCATTER_LIKE(Scatter, int)
SCATTERV_LIKE(Scatterv, int, int)
ALLGATHER_LIKE(Allgather, int)
ALLGATHERV_LIKE(Allgatherv, int, int)
ALLTOALL_LIKE(Alltoall, int)
ALLTOALLV_LIKE(Alltoallv, int, int)

#if MA_LARGE_COUNT
SEND_LIKE(Send_c, R_SEND, MPI_Count)
SEND_LIKE(Bsend_c, R_BSEND, MPI_Count)
SEND_LIKE(Ssend_c, R_SSEND, MPI_Count)
SEND_LIKE(Rsend_c, R_RSEND, MPI_Count)
ISEND_LIKE(Isend_c, R_ISEND, MPI_Count)
ISEND_LIKE(Ibsend_c, R_IBSEND, MPI_Count)
ISEND_LIKE(Issend_c, R_ISSEND, MPI_Count)
ISEND_LIKE(Irsend_c, R_IRSEND, MPI_Count)
RECV_LIKE(Recv_c, MPI_Count)
IRECV_LIKE(Irecv_c, MPI_Count)
MRECV_LIKE(Mrecv_c, MPI_Count)
IMRECV_LIKE(Imrecv_c, MPI_Count)
SENDRECV_LIKE(Sendrecv_c, MPI_Count)
SENDRECV_REPLACE_LIKE(Sendrecv_replace_c, MPI_Count)
BCAST_LIKE(Bcast_c, MPI_Count)
REDUCE_LIKE(Reduce_c, MPI_Count)
ALLREDUCE_LIKE(Allreduce_c, MPI_Count)
GATHER_LIKE(Gather_c, MPI_Count)
GATHERV_LIKE(Gatherv_c, MPI_Count, MPI_Aint)
SCATTER_LIKE(Scatter_c, MPI_Count)
SCATTERV_LIKE(Scatterv_c, MPI_Count, MPI_Aint)
ALLGATHER_LIKE(Allgather_c, MPI_Count)
ALLGATHERV_LIKE(Allgatherv_c, MPI_Count, MPI_Aint)
ALLTOALL_LIKE(Alltoall_c, MPI_Count)
ALLTOALLV_LIKE(Alltoallv_c, MPI_Count, MPI_Aint)
#endif

int MPI_Barrier(MPI_Comm comm)
{
    TIMED(PMPI_Barrier(comm));
    record(R_BARRIER, 0, -1, -1, elapsed);
    return rc;
}

/* Completion and probe calls: time only. */
int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    TIMED(PMPI_Wait(request, status));
    record(R_WAIT, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    TIMED(PMPI_Waitall(count, requests, statuses));
    record(R_WAITALL, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    TIMED(PMPI_Waitany(count, requests, index, status));
    record(R_WAITANY, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    TIMED(PMPI_Waitsome(incount, requests, outcount, indices, statuses));
    record(R_WAITSOME, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    TIMED(PMPI_Test(request, flag, status));
    record(R_TEST, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    TIMED(PMPI_Testall(count, requests, flag, statuses));
    record(R_TESTALL, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    TIMED(PMPI_Testany(count, requests, index, flag, status));
    record(R_TESTANY, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    TIMED(PMPI_Testsome(incount, requests, outcount, indices, statuses));
    record(R_TESTSOME, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    TIMED(PMPI_Probe(source, tag, comm, status));
    record(R_PROBE, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    TIMED(PMPI_Iprobe(source, tag, comm, flag, status));
    record(R_IPROBE, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    TIMED(PMPI_Mprobe(source, tag, comm, message, st));
    remember_probe(*message, st);
    record(R_MPROBE, 0, -1, -1, elapsed);
    return rc;
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    TIMED(PMPI_Improbe(source, tag, comm, flag, message, st));
    if (*flag)
        remember_probe(*message, st);
    record(R_IMPROBE, 0, -1, -1, elapsed);
    return rc;
}

/* ---- initialisation and finalisation ----------------------------------------------------------- */
static void run_hooks(void (**hooks)(void), int n)
{
    for (int i = 0; i < n; i++)
        hooks[i]();
}

static void learn_thread_level(void)
{
    int provided = MPI_THREAD_MULTIPLE;
    PMPI_Query_thread(&provided);
    concurrent = provided == MPI_THREAD_MULTIPLE;
}

static int init_seen, finalize_seen; /* the hooks ran (whichever layer saw the call first) */

void ma_pmpi_after_init(void)
{
    if (__atomic_exchange_n(&init_seen, 1, __ATOMIC_ACQ_REL))
        return;
    learn_thread_level();
    learn_world_size();
    run_hooks(init_hooks, n_init_hooks);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        ma_pmpi_after_init();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        ma_pmpi_after_init();
    return rc;
}

/* Write the per-call log of this rank: one line per call, "routine<TAB>peer<TAB>tag<TAB>bytes". */
static void write_call_log(void)
{
    const char *dir = getenv("MA_PMPI_LOG");
    if (log_wanted <= 0 || !dir || !*dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/rank-%d.calls.tsv", dir, rank_in(MPI_COMM_WORLD));
    FILE *out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "libmapmpi: MA_PMPI_LOG: cannot write %s\n", path);
        return;
    }
    fputs("# routine\tpeer\ttag\tbytes\n", out);
    for (size_t i = 0; i < log_len; i++)
        fprintf(out, "%s\t%d\t%d\t%" PRIu64 "\n", routines[call_log[i].routine].name, call_log[i].peer,
                call_log[i].tag, call_log[i].bytes);
    fclose(out);
}

void ma_pmpi_before_finalize(void)
{
    if (__atomic_exchange_n(&finalize_seen, 1, __ATOMIC_ACQ_REL))
        return;
    run_hooks(finalize_hooks, n_finalize_hooks);
    write_call_log();
    watch_mask = 0;
}

int MPI_Finalize(void)
{
    ma_pmpi_before_finalize();
    return PMPI_Finalize();
}

int ma_pmpi_on_init(void (*hook)(void))
{
    if (n_init_hooks >= MAX_HOOKS)
        return -1;
    init_hooks[n_init_hooks++] = hook;
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized)
        hook(); /* MPI came up before the hook was registered */
    return 0;
}

int ma_pmpi_on_finalize(void (*hook)(void))
{
    if (n_finalize_hooks >= MAX_HOOKS)
        return -1;
    finalize_hooks[n_finalize_hooks++] = hook;
    return 0;
}

void ma_pmpi_set_watch(uint32_t mask, void (*hook)(int group))
{
    watch_hook = hook;
    watch_mask = hook ? mask : 0;
}

/* ---- read API ---------------------------------------------------------------------------------- */
int ma_pmpi_api_version(void) { return MA_PMPI_API_VERSION; }
int ma_pmpi_ngroups(void) { return MA_PMPI_NGROUPS; }
int ma_pmpi_nroutines(void) { return N_ROUTINES; }

const char *ma_pmpi_group_name(int group)
{
    return group >= 0 && group < MA_PMPI_NGROUPS ? group_names[group] : NULL;
}

int ma_pmpi_group_id(const char *mpi_type)
{
    for (int g = 0; mpi_type && g < MA_PMPI_NGROUPS; g++)
        if (strcmp(group_names[g], mpi_type) == 0)
            return g;
    return -1;
}

void ma_pmpi_read(int group, uint64_t *calls, uint64_t *bytes)
{
    int ok = group >= 0 && group < MA_PMPI_NGROUPS;
    *calls = ok ? LOAD(ma_pmpi_group_totals[group].calls) : 0;
    *bytes = ok ? LOAD(ma_pmpi_group_totals[group].bytes) : 0;
}

const char *ma_pmpi_routine_name(int id)
{
    return id >= 0 && id < N_ROUTINES ? routines[id].name : NULL;
}

int ma_pmpi_routine_group(int id)
{
    return id >= 0 && id < N_ROUTINES ? routines[id].group : -1;
}

void ma_pmpi_read_routine(int id, uint64_t *calls, uint64_t *bytes, uint64_t *time_ns)
{
    int ok = id >= 0 && id < N_ROUTINES;
    *calls = ok ? LOAD(routines[id].calls) : 0;
    *bytes = ok ? LOAD(routines[id].bytes) : 0;
    *time_ns = ok ? LOAD(routines[id].time_ns) : 0;
}

uint64_t ma_pmpi_total_time_ns(void)
{
    uint64_t total = 0;
    for (int i = 0; i < N_ROUTINES; i++)
        total += LOAD(routines[i].time_ns);
    return total;
}

void ma_pmpi_reset(void)
{
    int n = LOAD(n_peers);
    for (int i = 0; i < N_ROUTINES; i++) {
        routine *r = &routines[i];
        r->calls = r->bytes = r->time_ns = 0;
        memset(r->hist, 0, sizeof r->hist);
        peer_count *table = __atomic_load_n(&r->peers, __ATOMIC_ACQUIRE);
        if (table)
            memset(table, 0, (size_t)n * sizeof *table);
    }
    memset(ma_pmpi_group_totals, 0, sizeof ma_pmpi_group_totals);
    log_len = 0;
}

/* snprintf-style appender: keeps counting past the end so the caller learns the size it needs. */
typedef struct text {
    char *buf;
    size_t cap, len;
} text;

static void put(text *t, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    int n = vsnprintf(room ? t->buf + t->len : NULL, room, format, args);
    va_end(args);
    if (n > 0)
        t->len += (size_t)n;
}

size_t ma_pmpi_read_hist(int id, ma_pmpi_bucket *out, size_t cap)
{
    size_t n = 0;
    for (int k = 0; id >= 0 && id < N_ROUTINES && k < N_BUCKETS; k++) {
        uint64_t calls = LOAD(routines[id].hist[k]);
        if (!calls)
            continue;
        if (n < cap) {
            out[n].lo = k ? (uint64_t)1 << (k - 1) : 0;
            out[n].hi = k ? (k == 64 ? UINT64_MAX : ((uint64_t)1 << k) - 1) : 0;
            out[n].calls = calls;
        }
        n++;
    }
    return n;
}

size_t ma_pmpi_read_peers(int id, ma_pmpi_peer_total *out, size_t cap)
{
    peer_count *table = id >= 0 && id < N_ROUTINES ? __atomic_load_n(&routines[id].peers, __ATOMIC_ACQUIRE) : NULL;
    int n_table = LOAD(n_peers);
    size_t n = 0;
    for (int p = 0; table && p < n_table; p++) {
        uint64_t calls = LOAD(table[p].calls);
        if (!calls)
            continue;
        if (n < cap)
            out[n] = (ma_pmpi_peer_total){p, calls, LOAD(table[p].bytes)};
        n++;
    }
    return n;
}

size_t ma_pmpi_profile_json(char *buf, size_t cap)
{
    text t = {buf, buf ? cap : 0, 0};
    if (t.cap)
        buf[0] = '\0';
    put(&t, "{\"calls\":{");
    int first = 1;
    ma_pmpi_bucket buckets[N_BUCKETS];
    size_t n_table = (size_t)LOAD(n_peers);
    ma_pmpi_peer_total *peers = n_table ? malloc(n_table * sizeof *peers) : NULL;
    for (int i = 0; i < N_ROUTINES; i++) {
        routine *r = &routines[i];
        uint64_t calls = LOAD(r->calls);
        if (!calls)
            continue;
        put(&t, "%s\"%s\":{\"calls\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"time_ns\":%" PRIu64 ",\"hist\":[",
            first ? "" : ",", r->name, calls, LOAD(r->bytes), LOAD(r->time_ns));
        first = 0;
        size_t n_buckets = ma_pmpi_read_hist(i, buckets, N_BUCKETS);
        for (size_t k = 0; k < n_buckets; k++)
            put(&t, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", k ? "," : "", buckets[k].lo, buckets[k].hi,
                buckets[k].calls);
        put(&t, "],\"peers\":{");
        size_t n_peer = peers ? ma_pmpi_read_peers(i, peers, n_table) : 0;
        for (size_t p = 0; p < n_peer && p < n_table; p++)
            put(&t, "%s\"%d\":[%" PRIu64 ",%" PRIu64 "]", p ? "," : "", peers[p].peer, peers[p].calls,
                peers[p].bytes);
        put(&t, "}}");
    }
    free(peers);
    put(&t, "}}");
    return t.len;
}

/* ---- the MPI this library was built for, and the one the process runs --------------------------- */
#define MA_STRING_OF(x) #x
#define MA_STRING(x) MA_STRING_OF(x)
#if defined(OMPI_MAJOR_VERSION)
#define BUILT_FOR "Open MPI v" MA_STRING(OMPI_MAJOR_VERSION) "." MA_STRING(OMPI_MINOR_VERSION) "." \
    MA_STRING(OMPI_RELEASE_VERSION)
#elif defined(MPICH_VERSION)
#define BUILT_FOR "MPICH Version: " MPICH_VERSION
#else
#define BUILT_FOR NULL
#endif

/* The version text after `marker` in the library's own description ("MPICH Version:\t4.0.2" -> "4.0.2"). */
static void version_after(const char *text, const char *marker, char *out, size_t cap)
{
    out[0] = '\0';
    const char *at = strstr(text, marker);
    if (!at)
        return;
    at += strlen(marker);
    while (*at == ' ' || *at == '\t')
        at++;
    size_t n = strcspn(at, " \t\n,");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), at);
}

/* A program built with one MPI and this library built with another would call into two ABIs and crash
 * somewhere inside MPI: say so at load time instead, and stop. The family must be the same, and so must the
 * version where the library's description gives it in the usual words (MPICH's "MPICH Version:", Open MPI's
 * "Open MPI v"; derivatives that word it otherwise -- Intel MPI, Cray MPICH -- are only held to the family). */
__attribute__((constructor)) static void check_mpi_library(void)
{
    const char *built = BUILT_FOR;
    static char running[16384];
    int length = 0;
    if (!built || PMPI_Get_library_version(running, &length) != MPI_SUCCESS)
        return;
    running[sizeof running - 1] = '\0';
    int built_openmpi = !strncmp(built, "Open MPI", 8), runs_openmpi = strstr(running, "Open MPI") != NULL;
    const char *marker = built_openmpi ? "Open MPI v" : "MPICH Version:";
    char want[64], have[64];
    version_after(built, marker, want, sizeof want);
    version_after(running, marker, have, sizeof have);
    if (built_openmpi == runs_openmpi && (!have[0] || !strcmp(want, have)))
        return;
    const char *self = ma_pmpi_library_path();
    size_t first_line = strcspn(running, "\n");
    fprintf(stderr, "libmapmpi: %s was built for %s %s, but this process runs %.*s: the program and the SDK's "
            "MPI libraries must come from the same MPI. Build them for the program's MPI (ma tools build "
            "--mpicc PATH-OF-ITS-MPICC) and link with that MPI's flags (ma config --mpicc PATH --libs), or run "
            "a Python program with the MPI its mpi4py uses.\n", self ? self : "libmapmpi.so",
            built_openmpi ? "Open MPI" : "MPICH", want, (int)first_line, running);
    _exit(1);
}

void ma_pmpi_note_if_bypassed(const char *name, char *buf, size_t *length, size_t cap)
{
    Dl_info mine, theirs;
    void *found = dlsym(RTLD_DEFAULT, name);
    if (!found || !dladdr(routines, &mine) || !dladdr(found, &theirs) ||
        theirs.dli_fbase == mine.dli_fbase)
        return;
    int n = snprintf(*length < cap ? buf + *length : NULL, *length < cap ? cap - *length : 0, "%s%s (from %s)",
                     *length ? ", " : "", name, theirs.dli_fname ? theirs.dli_fname : "?");
    if (n > 0)
        *length += (size_t)n;
}

const char *ma_pmpi_unmeasured_reason(void)
{
    static char reason[4096];
    static int checked;
    if (__atomic_load_n(&checked, __ATOMIC_ACQUIRE))
        return reason[0] ? reason : NULL;
    char names[3000];
    size_t length = 0;
    names[0] = '\0';
    static const char *const life_cycle[] = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"};
    for (int i = 0; i < N_ROUTINES; i++)
        ma_pmpi_note_if_bypassed(routines[i].name, names, &length, sizeof names);
    for (size_t i = 0; i < sizeof life_cycle / sizeof *life_cycle; i++)
        ma_pmpi_note_if_bypassed(life_cycle[i], names, &length, sizeof names);
    ma_pmpi_fortran_bypassed(names, &length, sizeof names);
    if (length)
        snprintf(reason, sizeof reason, "MPI calls do not reach libmapmpi: another library's definition comes "
                 "first for %s%s; link libmapmpi before the MPI libraries (ma config --libs / --flibs, before "
                 "the MPI's own) or preload it", names, length >= sizeof names ? "..." : "");
    __atomic_store_n(&checked, 1, __ATOMIC_RELEASE);
    return reason[0] ? reason : NULL;
}

const char *ma_pmpi_library_path(void)
{
    static char path[4096];
    Dl_info info;
    if (!path[0] && dladdr((void *)&ma_pmpi_library_path, &info) && info.dli_fname) {
        char *resolved = realpath(info.dli_fname, NULL);
        snprintf(path, sizeof path, "%s", resolved ? resolved : info.dli_fname);
        free(resolved);
    }
    return path[0] ? path : NULL;
}
