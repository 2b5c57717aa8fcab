/*
 * ma_pmpi.h -- read API of libmapmpi, the PMPI wrapper library of the Modeling Assertions SDK.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * libmapmpi defines MPI_Send, MPI_Recv, MPI_Allreduce, ... (classic and MPI-4 large-count `_c` forms) and
 * forwards each to its PMPI_ twin, counting calls, payload bytes (type size x count), time inside MPI, a
 * histogram of message sizes and, for point-to-point calls, calls and bytes per peer. What "bytes" means
 * for each routine is documented in docs/c-api.md.
 *
 * Two views of the counters:
 *  - per *routine* (MPI_Send, MPI_Bsend, ...; a `_c` form counts with its classic routine): the whole-run
 *    profile written into the trace as `mpi_profile`;
 *  - per *group*, one per MPI annotation type (mpi_send = Send+Bsend+Ssend+Rsend, ...): the running
 *    totals an assertion reads at its start and end. They are kept in the hot path, so a read is two
 *    loads (ma_pmpi_group_totals is exported for readers that map it directly, e.g. ctypes).
 *
 * With MA_PMPI_LOG=DIR set, every call is also logged in order (routine, peer, tag, bytes) and written at
 * MPI_Finalize to DIR/rank-<r>.calls.tsv: the sequence `ma synth` is checked against.
 *
 * Under MPI_THREAD_MULTIPLE counters are updated with relaxed atomic adds, so concurrent MPI calls from
 * several threads are counted correctly (plain adds at lower thread levels); reads and ma_pmpi_reset() are
 * not synchronised with calls in flight.
 */
#ifndef MA_PMPI_H
#define MA_PMPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MA_PMPI_API_VERSION 2 /* 2: ma_pmpi_read_hist, ma_pmpi_read_peers */

/* One group per MPI annotation type, in this order (ma_runtime/pmpi.py MPI_TYPES follows it). */
enum ma_pmpi_group {
    MA_PMPI_SEND = 0,  /* mpi_send:      MPI_Send, MPI_Bsend, MPI_Ssend, MPI_Rsend */
    MA_PMPI_ISEND,     /* mpi_isend:     MPI_Isend, MPI_Ibsend, MPI_Issend, MPI_Irsend */
    MA_PMPI_RECV,      /* mpi_recv:      MPI_Recv, MPI_Mrecv */
    MA_PMPI_IRECV,     /* mpi_irecv:     MPI_Irecv, MPI_Imrecv */
    MA_PMPI_SENDRECV,  /* mpi_sendrecv:  MPI_Sendrecv, MPI_Sendrecv_replace */
    MA_PMPI_BCAST,     /* mpi_bcast */
    MA_PMPI_REDUCE,    /* mpi_reduce */
    MA_PMPI_ALLREDUCE, /* mpi_allreduce */
    MA_PMPI_GATHER,    /* mpi_gather:    MPI_Gather, MPI_Gatherv */
    MA_PMPI_SCATTER,   /* mpi_scatter:   MPI_Scatter, MPI_Scatterv */
    MA_PMPI_ALLGATHER, /* mpi_allgather: MPI_Allgather, MPI_Allgatherv */
    MA_PMPI_ALLTOALL,  /* mpi_alltoall:  MPI_Alltoall, MPI_Alltoallv */
    MA_PMPI_BARRIER,   /* mpi_barrier */
    MA_PMPI_OTHER,     /* completion and probe calls (Wait*, Test*, *probe): time only, no annotation type */
    MA_PMPI_NGROUPS
};

/* Running totals of one group: {calls, bytes}. */
typedef struct ma_pmpi_total {
    uint64_t calls;
    uint64_t bytes;
} ma_pmpi_total;

extern ma_pmpi_total ma_pmpi_group_totals[MA_PMPI_NGROUPS];

/* Partner of each group's most recent calls: the n-th call (counting from 0, as the group's `calls` total)
 * of a group is in ma_pmpi_group_peers[group][n % MA_PMPI_PEER_RING]: the destination or source rank in
 * the call's communicator for point-to-point calls (the matched source for a receive), the root of a rooted
 * collective, -1 otherwise. An assertion with a `peer=` expression compares it with the calls it made. */
#define MA_PMPI_PEER_RING 64
extern int32_t ma_pmpi_group_peers[MA_PMPI_NGROUPS][MA_PMPI_PEER_RING];

/* ---- groups (annotation types) ---- */
int ma_pmpi_api_version(void);
int ma_pmpi_ngroups(void);
/* "mpi_send", ..., "mpi_barrier", "other"; NULL when out of range. */
const char *ma_pmpi_group_name(int group);
/* Group index of an annotation type name, or -1. */
int ma_pmpi_group_id(const char *mpi_type);
/* Running totals of one group (zeros for a bad index). */
void ma_pmpi_read(int group, uint64_t *calls, uint64_t *bytes);

/* ---- routines (whole-run profile) ---- */
int ma_pmpi_nroutines(void);
const char *ma_pmpi_routine_name(int routine); /* "MPI_Send", ...; NULL when out of range */
int ma_pmpi_routine_group(int routine);        /* its group, or -1 */
void ma_pmpi_read_routine(int routine, uint64_t *calls, uint64_t *bytes, uint64_t *time_ns);
/* One bucket of a routine's message-size histogram: `calls` messages of lo..hi bytes (both included). */
typedef struct ma_pmpi_bucket {
    uint64_t lo, hi, calls;
} ma_pmpi_bucket;
/* What a point-to-point routine sent to (or received from) one rank of MPI_COMM_WORLD. */
typedef struct ma_pmpi_peer_total {
    int peer;
    uint64_t calls, bytes;
} ma_pmpi_peer_total;
/* The non-empty buckets of a routine's histogram, smallest sizes first, into out[0..cap); returns how many there
 * are (more than cap: the rest was not written), 0 for a bad index. At most MA_PMPI_HIST_BUCKETS. */
#define MA_PMPI_HIST_BUCKETS 65 /* [0,0], then [2^(k-1), 2^k - 1] for k = 1..64 */
size_t ma_pmpi_read_hist(int routine, ma_pmpi_bucket *out, size_t cap);
/* The peers a routine counted calls to, in rank order, into out[0..cap); returns how many there are, as above.
 * At most the size of MPI_COMM_WORLD. */
size_t ma_pmpi_read_peers(int routine, ma_pmpi_peer_total *out, size_t cap);
/* Time spent inside every wrapped routine, in nanoseconds. */
uint64_t ma_pmpi_total_time_ns(void);
/* The profile as the JSON object `mpi_profile` of docs/trace-format.md. Writes at most `cap` bytes
 * (NUL included) into `buf` and returns the length the whole text needs (without the NUL), like snprintf. */
size_t ma_pmpi_profile_json(char *buf, size_t cap);
/* Zero every counter (profile and groups). */
void ma_pmpi_reset(void);

/* Why some MPI calls of this process bypass the wrappers -- another library's MPI_Send or mpi_send_ (the
 * Fortran entry point) comes first in the symbol search order, i.e. the program linked its MPI before
 * libmapmpi --, naming them; NULL when every wrapped routine is reached. Checked on the first call. */
const char *ma_pmpi_unmeasured_reason(void);

/* Absolute path of the loaded libmapmpi (from dladdr), or NULL. */
const char *ma_pmpi_library_path(void);

/* ---- hooks for the C runtime ---- */
/* Called after PMPI_Init / PMPI_Init_thread succeeded (or at once when MPI is already initialised).
 * Returns 0, or -1 when the hook table is full. */
int ma_pmpi_on_init(void (*hook)(void));
/* Called inside the wrapped MPI_Finalize, before PMPI_Finalize (MPI is still usable). */
int ma_pmpi_on_finalize(void (*hook)(void));
/* After every counted call of a group whose bit (1u << group) is in `mask`, call hook(group). One watcher;
 * mask 0 turns it off. The hook runs inside the MPI wrapper: it must not call MPI. */
void ma_pmpi_set_watch(uint32_t mask, void (*hook)(int group));

#ifdef __cplusplus
}
#endif
#endif /* MA_PMPI_H */
