/*
 * stream.c -- a memory-bound kernel for bench/node_weak_scaling.py: every rank sums its own array of n doubles
 * (far larger than the last cache) niter times, then the ranks sum their results. Weak scaling: n per rank
 * fixed, so on one node more ranks only share its memory bandwidth.
 *
 *     mpicc -O2 $(ma config --cflags) stream.c -o stream $(ma config --libs)
 *     MA_TRACE_DIR=traces mpiexec -n 2 ./stream [n [niter]]
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "ma.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    long long n = argc > 1 ? atoll(argv[1]) : 16LL << 20;
    long long niter = argc > 2 ? atoll(argv[2]) : 20;
    ma_def_variable_int("n", n);
    ma_def_variable_int("niter", niter);
    ma_def_variable_int("nprocs", nprocs);

    double *a = malloc((size_t)n * sizeof *a);
    if (!a) {
        fprintf(stderr, "stream: cannot allocate %lld doubles\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long long i = 0; i < n; i++)
        a[i] = 1.0 / (double)(i + 1);

    double total = 0.0;
    MPI_Barrier(MPI_COMM_WORLD); /* the ranks start their sweeps together */
    ma_subroutine_start("stream");
    for (long long it = 0; it < niter; it++) {
        /* eight sums: one running sum is bound by its add chain, not by the memory */
        double s[8] = {0};
        ma_loadstore_start("sum", "n", n);
        for (long long i = 0; i + 8 <= n; i += 8)
            for (int j = 0; j < 8; j++)
                s[j] += a[i + j];
        ma_loadstore_stop("sum");
        total += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    }
    ma_subroutine_end("stream");
    double all = 0.0;
    ma_mpi_allreduce("result", "8", 8, 1);
    MPI_Allreduce(&total, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("stream: %d ranks, n = %lld, niter = %lld, sum %.6g\n", nprocs, n, niter, all);
    free(a);
    MPI_Finalize();
    return 0;
}
