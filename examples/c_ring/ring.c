/*
 * ring.c -- an annotated MPI C program: each iteration does an axpy and a dot product on n doubles,
 * passes its vector to the right neighbour in a ring, and sums the dot products over all ranks.
 *
 *     mpicc -O2 $(ma config --cflags) ring.c -o ring $(ma config --libs)
 *     MA_TRACE_DIR=traces mpiexec -n 2 ./ring [n [niter]] [--wrong]
 *
 * Every rank writes traces/rank-<r>.ma.json. --wrong adds one deliberately wrong assertion (a trip
 * count off by one) to show a FAIL. Compile with -DMA_DISABLE to remove every annotation.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ma.h"

/* y = a*x + y, then the local dot product y.y: 2n flops each. */
static double axpy_dot(long long n, double a, const double *x, double *y)
{
    ma_subroutine_start("axpy_dot");
    ma_flop_start("axpy", "2*n", 2 * n);
    for (long long i = 0; i < n; i++)
        y[i] = a * x[i] + y[i];
    ma_flop_stop("axpy");

    double dot = 0.0;
    ma_flop_start("dot", "2*n", 2 * n);
    for (long long i = 0; i < n; i++)
        dot += y[i] * y[i];
    ma_flop_stop("dot");
    ma_subroutine_end("axpy_dot");
    return dot;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv); /* also starts the MA runtime (libmapmpi calls it) */
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    long long params[2] = {1000, 4}; /* n, niter: rank 0 reads them, everyone gets them by broadcast */
    int wrong = 0, positional = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--wrong"))
            wrong = 1;
        else if (positional < 2)
            params[positional++] = atoll(argv[i]);
    }
    ma_mpi_bcast("params", "8", 8, 2); /* the next 2 broadcasts carry 8 bytes each */
    MPI_Bcast(&params[0], 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(&params[1], 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    long long n = params[0], niter = params[1];

    ma_def_variable_int("n", n);
    ma_def_variable_int("niter", niter);
    ma_def_variable_int("nprocs", nprocs);
    ma_def_variable_assign_int("dp", "8", (long long)sizeof(double));

    ma_heap_memory_start("buffers", "3*dp*n", 3 * 8 * n);
    double *x = malloc((size_t)n * sizeof *x);
    double *y = malloc((size_t)n * sizeof *y);
    double *incoming = malloc((size_t)n * sizeof *incoming);
    ma_heap_memory_stop("buffers");
    if (!x || !y || !incoming) {
        fprintf(stderr, "ring: cannot allocate %lld doubles\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long long i = 0; i < n; i++) {
        x[i] = 1.0 / (double)(i + 1);
        y[i] = (double)rank;
    }

    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    double total = 0.0;
    long long it;
    ma_subroutine_start("ring");
    ma_loop_start("iterations", "niter", niter);
    for (it = 0; it < niter; it++) {
        double dot = axpy_dot(n, 0.5, x, y);

        MPI_Request request;
        ma_mpi_irecv("from_left", "dp*n", 8 * n, 1);
        MPI_Irecv(incoming, (int)n, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &request);
        ma_mpi_send("to_right", "dp*n", 8 * n, 1);
        MPI_Send(y, (int)n, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        memcpy(y, incoming, (size_t)n * sizeof *y);

        ma_mpi_allreduce("sum_dot", "dp", 8, 1);
        MPI_Allreduce(&dot, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    ma_loop_end("iterations", it);

    if (wrong) { /* deliberately wrong: the loop below runs n/2 times, the assertion says n/2 + 1 */
        long long k, half = n / 2;
        ma_loop_start("halves", "n/2 + 1", MA_NO_VALUE);
        for (k = 0; k < half; k++)
            x[k] = y[k];
        ma_loop_end("halves", k);
    }
    ma_subroutine_end("ring");

    if (rank == 0)
        printf("ring: n=%lld niter=%lld nprocs=%d total=%.6g\n", n, niter, nprocs, total);
    free(x);
    free(y);
    free(incoming);
    MPI_Finalize(); /* writes this rank's trace before MPI shuts down */
    return 0;
}
