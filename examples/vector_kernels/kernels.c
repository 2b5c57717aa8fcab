/*
 * The vector backend's C kernel set (docs/vector-backend.md): NPB SP's tzetar, NPB CG's sparse
 * matrix-vector product, a streaming triad, and a loop GCC refuses to vectorise (a first-order
 * recurrence). `ma loopmark kernels.c` scores every loop; bench/vector_predict.py times them built with
 * and without the vectoriser.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 *
 * Usage: kernels KERNEL N REPEAT [random]   (KERNEL: tzetar | matvec | triad | recurrence | gather | dot; "random":
 *        matvec's, gather's and dot's column indices drawn at random instead of (k * 7919) % N)
 * Prints: KERNEL N REPEAT seconds-per-call flops-per-call loadstores-per-call checksum working-set-bytes
 *         inner-trip (the bytes the kernel's arrays span, and the trip count of its innermost loop)
 *
 * Built with -DMA_TRACED against the annotation runtime (mpicc, `ma config --cflags --libs`) and run under
 * `ma run`, matvec's calls are asserted by ma_vec_loop_start with their gathers (ma_vec_loop_gathers: one read
 * of p per entry, p's bytes): bench/vector_predict.py reads them from that trace. Otherwise the calls compile away.
 */
#ifdef MA_TRACED
#include <math.h>
#include <mpi.h>
#include "ma.h"
#else
#define ma_def_variable_int(name, value) ((void)0)
#define ma_vec_loop_start(id, vls, vls_value, vfl, vfl_value, avl, avl_value, mv) ((void)0)
#define ma_vec_loop_gathers(id, gathers, gathers_value, bytes, bytes_value) ((void)0)
#define ma_vec_loop_stop(id) ((void)0)
#define ma_subroutine_start(id) ((void)0)
#define ma_subroutine_end(id) ((void)0)
#define ma_flop_start(id, expr, value) ((void)0)
#define ma_flop_stop(id) ((void)0)
#define ma_loadstore_start(id, expr, value) ((void)0)
#define ma_loadstore_stop(id) ((void)0)
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static const double BT = 0.70710678118654752440, C2IV = 2.5;

/* SP's tzetar at the interior points of an n^3 cell, arrays as SP's rhs/us/vs/ws/qs/speed/ainv/u. */
NOINLINE void tzetar(long n, double *restrict rhs, const double *restrict u, const double *restrict us,
                     const double *restrict vs, const double *restrict ws, const double *restrict qs,
                     const double *restrict speed, const double *restrict ainv)
{
    long plane = n * n, points = n * n * n;
    for (long k = 1; k < n - 1; k++)
        for (long j = 1; j < n - 1; j++)
            for (long i = 1; i < n - 1; i++) {
                long p = k * plane + j * n + i;
                double xvel = us[p], yvel = vs[p], zvel = ws[p], ac = speed[p], ac2u = ac * ac;
                double r1 = rhs[p], r2 = rhs[points + p], r3 = rhs[2 * points + p], r4 = rhs[3 * points + p],
                       r5 = rhs[4 * points + p];
                double uzik1 = u[p], btuz = BT * uzik1;
                double t1 = btuz * ainv[p] * (r4 + r5), t2 = r3 + t1, t3 = btuz * (r4 - r5);
                rhs[p] = t2;
                rhs[points + p] = -uzik1 * r2 + xvel * t2;
                rhs[2 * points + p] = uzik1 * r1 + yvel * t2;
                rhs[3 * points + p] = zvel * t2 + t3;
                rhs[4 * points + p] = uzik1 * (-xvel * r2 + yvel * r1) + qs[p] * t2 + C2IV * ac2u * t1 + zvel * t3;
            }
}

/* CG's q = A p for a CSR matrix: the inner loop is a gather reduction. */
NOINLINE void matvec(long rows, const long *restrict rowstr, const long *restrict colidx,
                     const double *restrict a, const double *restrict p, double *restrict q)
{
    for (long j = 0; j < rows; j++) {
        double sum = 0.0;
        for (long k = rowstr[j]; k < rowstr[j + 1]; k++)
            sum = sum + a[k] * p[colidx[k]];
        q[j] = sum;
    }
}

/* matvec's random reads alone: p[colidx[k]] in matvec's order into eight independent sums (no add chain, no
 * stream of a), for bench/vector_predict.py's look at what matvec's time is made of. */
NOINLINE double gather(long nnz, const long *restrict colidx, const double *restrict p)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    for (long k = 0; k + 8 <= nnz; k += 8) {
        s0 += p[colidx[k]]; s1 += p[colidx[k + 1]]; s2 += p[colidx[k + 2]]; s3 += p[colidx[k + 3]];
        s4 += p[colidx[k + 4]]; s5 += p[colidx[k + 5]]; s6 += p[colidx[k + 6]]; s7 += p[colidx[k + 7]];
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

/* STREAM's triad, multithreaded where OpenMP is on. */
NOINLINE void triad(long n, double *restrict a, const double *restrict b, const double *restrict c, double s)
{
#pragma omp parallel for
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

/* x[i] depends on x[i-1]: GCC refuses to vectorise it. */
NOINLINE void recurrence(long n, double *restrict x, const double *restrict b)
{
    for (long i = 1; i < n; i++)
        x[i] = x[i - 1] * 0.5 + b[i];
}

/* matvec without its rows (after the other kernels: their code stays where it was, and with it the
 * alignment of their loops, which a scalar loop's speed depends on: docs/vector-backend.md): a[k] * p[colidx[k]] into eight independent sums (no per-row add chain, no q or
 * rowstr), for bench/vector_predict.py's look at what matvec's time is made of. */
NOINLINE double dot(long nnz, const long *restrict colidx, const double *restrict a, const double *restrict p)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    for (long k = 0; k + 8 <= nnz; k += 8) {
        s0 += a[k] * p[colidx[k]]; s1 += a[k + 1] * p[colidx[k + 1]]; s2 += a[k + 2] * p[colidx[k + 2]];
        s3 += a[k + 3] * p[colidx[k + 3]]; s4 += a[k + 4] * p[colidx[k + 4]]; s5 += a[k + 5] * p[colidx[k + 5]];
        s6 += a[k + 6] * p[colidx[k + 6]]; s7 += a[k + 7] * p[colidx[k + 7]];
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double *filled(long n, double scale)
{
    double *x = malloc((size_t)n * sizeof *x);
    if (x == NULL) { perror("malloc"); exit(2); }
    for (long i = 0; i < n; i++) x[i] = 1.0 + scale * (double)(i % 97);
    return x;
}

int main(int argc, char **argv)
{
#ifdef MA_TRACED
    MPI_Init(&argc, &argv);
#endif
    if (argc != 4 && !(argc == 5 && strcmp(argv[4], "random") == 0)) {
        fprintf(stderr, "usage: %s tzetar|matvec|triad|recurrence|gather|dot N REPEAT [random]\n", argv[0]);
        return 2;
    }
    int random_columns = argc == 5;
    const char *kernel = argv[1];
    long n = atol(argv[2]), repeat = atol(argv[3]);
    double checksum = 0.0, flops = 0.0, loadstores = 0.0, t0 = 0.0, t1 = 0.0, bytes = 0.0;
    long trip = 0;
    if (strcmp(kernel, "tzetar") == 0) {
        long points = n * n * n, inner = (n - 2) * (n - 2) * (n - 2);
        double *rhs = filled(5 * points, 1e-3), *u = filled(points, 1e-3), *us = filled(points, 2e-3),
               *vs = filled(points, 3e-3), *ws = filled(points, 4e-3), *qs = filled(points, 5e-3),
               *speed = filled(points, 6e-3), *ainv = filled(points, 7e-3);
        t0 = seconds();
        for (long r = 0; r < repeat; r++) tzetar(n, rhs, u, us, vs, ws, qs, speed, ainv);
        t1 = seconds();
        for (long i = 0; i < 5 * points; i++) checksum += rhs[i];
        flops = 27.0 * (double)inner;          /* NPB 3.4's count per interior point */
        loadstores = 18.0 * (double)inner;     /* 13 arrays read (rhs x5, 8 others), rhs x5 written */
        bytes = 13.0 * 8.0 * (double)points;
        trip = n - 2;
    } else if (strcmp(kernel, "matvec") == 0 || strcmp(kernel, "gather") == 0 || strcmp(kernel, "dot") == 0) {
        int whole = strcmp(kernel, "matvec") == 0, with_a = strcmp(kernel, "dot") == 0;
        long per_row = 32, nnz = n * per_row;
        long *rowstr = malloc((size_t)(n + 1) * sizeof *rowstr), *colidx = malloc((size_t)nnz * sizeof *colidx);
        for (long j = 0; j <= n; j++) rowstr[j] = j * per_row;
        unsigned long long state = 19;  /* a 64-bit LCG's high bits: fixed, uniform column indices */
        for (long k = 0; k < nnz; k++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            colidx[k] = random_columns ? (long)((state >> 20) % (unsigned long long)n) : (k * 7919) % n;
        }
        double *a = filled(nnz, 1e-3), *p = filled(n, 2e-3), *q = filled(n, 0.0);
        ma_def_variable_int("rows", n);
        ma_def_variable_int("nnz", nnz);
        t0 = seconds();
        for (long r = 0; r < repeat; r++) {
            if (whole) {
                /* a, colidx, p per entry, q, rowstr per row; vectorised (GCC -O3): 32 entries a row, AVL 4 */
                ma_subroutine_start("matvec");
                ma_vec_loop_start("matvec", "3*nnz+2*rows", MA_NO_VALUE, "2*nnz", MA_NO_VALUE, "4", NAN, 2);
                ma_vec_loop_gathers("matvec", "nnz", MA_NO_VALUE, "8*rows", MA_NO_VALUE); /* p[colidx[k]] */
                /* the model's sites: under --counters valgrind --cache, the load/store site's simulated hits */
                ma_flop_start("matvec_flops", "2*nnz", MA_NO_VALUE);
                ma_loadstore_start("matvec_ldst", "3*nnz+2*rows", MA_NO_VALUE);
                matvec(n, rowstr, colidx, a, p, q);
                ma_loadstore_stop("matvec_ldst");
                ma_flop_stop("matvec_flops");
                ma_vec_loop_stop("matvec");
                ma_subroutine_end("matvec");
            }
            else if (with_a) checksum += dot(nnz, colidx, a, p);
            else checksum += gather(nnz, colidx, p);
        }
        t1 = seconds();
        if (whole) {
            for (long j = 0; j < n; j++) checksum += q[j];
            flops = 2.0 * (double)nnz;
            loadstores = 3.0 * (double)nnz + 2.0 * (double)n; /* a, colidx, p per entry; q, rowstr per row */
            bytes = 8.0 * (2.0 * (double)nnz + 3.0 * (double)n + 1.0); /* a, colidx; p, q, rowstr */
            trip = per_row;
        } else {
            flops = (with_a ? 2.0 : 1.0) * (double)nnz;
            loadstores = (with_a ? 3.0 : 2.0) * (double)nnz;                 /* (a,) colidx, p */
            bytes = 8.0 * ((with_a ? 2.0 : 1.0) * (double)nnz + (double)n);  /* (a,) colidx; p */
            trip = nnz;
        }
    } else if (strcmp(kernel, "triad") == 0) {
        double *a = filled(n, 0.0), *b = filled(n, 1e-3), *c = filled(n, 2e-3);
        t0 = seconds();
        for (long r = 0; r < repeat; r++) triad(n, a, b, c, 3.0);
        t1 = seconds();
        for (long i = 0; i < n; i++) checksum += a[i];
        flops = 2.0 * (double)n;
        loadstores = 3.0 * (double)n;
        bytes = 3.0 * 8.0 * (double)n;
        trip = n;
    } else if (strcmp(kernel, "recurrence") == 0) {
        double *x = filled(n, 1e-3), *b = filled(n, 2e-3);
        t0 = seconds();
        for (long r = 0; r < repeat; r++) recurrence(n, x, b);
        t1 = seconds();
        for (long i = 0; i < n; i++) checksum += x[i];
        flops = 2.0 * (double)(n - 1);
        loadstores = 2.0 * (double)(n - 1);     /* b read, x written (x[i-1] stays in a register) */
        bytes = 2.0 * 8.0 * (double)n;
        trip = n - 1;
    } else {
        fprintf(stderr, "unknown kernel %s\n", kernel);
        return 2;
    }
    printf("%s %ld %ld %.9e %.0f %.0f %.6e %.0f %ld\n", kernel, n, repeat, (t1 - t0) / (double)repeat, flops,
           loadstores, checksum, bytes, trip);
#ifdef MA_TRACED
    MPI_Finalize();
#endif
    return 0;
}
