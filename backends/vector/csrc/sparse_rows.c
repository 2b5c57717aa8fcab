/* The vector backend's probe of a vectorised sparse row loop (docs/vector-backend.md): a CSR matrix-vector
 * product's rows, the loop of examples/vector_kernels/kernels.c's matvec, built with the vectoriser on
 * (-O3 -mavx2 -mfma, the x86-64-v3 build of the kernels). GCC vectorises the row loop as a fold-left
 * reduction: per four entries four scalar index loads, p's four words inserted one by one into a vector
 * (vmovsd/vmovhpd/vinsertf128), one vmulpd with the row's values and four in-order vaddsd (the source's sum
 * order, without -ffast-math). simd_bandwidth.c is built without the vectoriser, so this loop has its own file
 * and library; tests/test_vector_simd.py checks the disassembly.
 *
 * SPDX-License-Identifier: BSD-3-Clause */
#include <stddef.h>
#include <time.h>

volatile double ma_rows_sink;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* q = A p over `rows` CSR rows (rowstr, colidx, a), `reps` times; returns the seconds. The same source as
 * kernels.c's matvec, so that the compiler gives it the same code. */
__attribute__((noinline)) static void rows_product(long rows, const long *restrict rowstr,
                                                   const long *restrict colidx, const double *restrict a,
                                                   const double *restrict p, double *restrict q) {
    for (long j = 0; j < rows; j++) {
        double sum = 0.0;
        for (long k = rowstr[j]; k < rowstr[j + 1]; k++)
            sum = sum + a[k] * p[colidx[k]];
        q[j] = sum;
    }
}

double ma_sparse_rows(long rows, const long *rowstr, const long *colidx, const double *a, const double *p,
                      double *q, size_t reps) {
    double start = now();
    for (size_t r = 0; r < reps; r++) {
        rows_product(rows, rowstr, colidx, a, p, q);
        __asm__ volatile("" ::: "memory");
    }
    double elapsed = now() - start;
    ma_rows_sink = q[rows / 2];
    return elapsed;
}
