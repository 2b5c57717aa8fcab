/* The vector backend's SIMD bandwidth probe (docs/vector-backend.md): unit-stride loops over a working set
 * with AVX2 32-byte loads and stores, the host's counterpart of the X1E's vector memory bandwidth (the
 * vector paper, section 4.2). The machine profile's MultiMAPS loop is scalar (one 8-byte load per element),
 * so in the caches it measures the scalar unit, not the cache; a vectorised loop moves four doubles per load.
 *
 * Beside them, the scalar unit's own curve: the same triad in plain C, one 8-byte load/store per element, as
 * GCC compiles a scalar build's loop (the X1E's scalar references had their own bandwidth too).
 *
 * Built -O2 -mavx2 -mfma -fno-tree-vectorize -falign-loops=64 (x86-64-v3 at most: Valgrind cannot decode
 * AVX-512; the vector kernels are intrinsics, so the no-vectoriser flag only keeps the scalar triad scalar, as
 * tests/test_vector_simd.py checks in the disassembly; the scalar triad's five-instruction loop must not
 * straddle a 64-byte line, where Zen 4's front end delivers it in two cycles, not one); the Python side calls a kernel only when ma_simd_supported() says the CPU has AVX2 and
 * FMA. Every kernel returns its elapsed seconds and leaves a result in ma_simd_sink so that the compiler keeps
 * the loop.
 *
 * SPDX-License-Identifier: BSD-3-Clause */
#include <immintrin.h>
#include <stddef.h>
#include <time.h>

#include "ma_triad.h" /* the machine probe's triad loop (backends/machine/csrc) */

volatile double ma_simd_sink;

static double now(void) { return ma_now(); }

int ma_simd_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* Triad a = b + q*c over `words` doubles (a multiple of 16, arrays 32-byte aligned), `reps` times: two
 * vector loads and one vector store per four elements, four independent vectors per iteration. */
double ma_simd_triad(double *a, const double *b, const double *c, size_t words, size_t reps) {
    const __m256d q = _mm256_set1_pd(3.0);
    double start = now();
    for (size_t r = 0; r < reps; r++) {
        for (size_t i = 0; i < words; i += 16) {
            __m256d x0 = _mm256_fmadd_pd(q, _mm256_load_pd(c + i), _mm256_load_pd(b + i));
            __m256d x1 = _mm256_fmadd_pd(q, _mm256_load_pd(c + i + 4), _mm256_load_pd(b + i + 4));
            __m256d x2 = _mm256_fmadd_pd(q, _mm256_load_pd(c + i + 8), _mm256_load_pd(b + i + 8));
            __m256d x3 = _mm256_fmadd_pd(q, _mm256_load_pd(c + i + 12), _mm256_load_pd(b + i + 12));
            _mm256_store_pd(a + i, x0);
            _mm256_store_pd(a + i + 4, x1);
            _mm256_store_pd(a + i + 8, x2);
            _mm256_store_pd(a + i + 12, x3);
        }
        __asm__ volatile("" ::: "memory"); /* each repetition reads and writes memory again */
    }
    double elapsed = now() - start;
    ma_simd_sink = a[words / 2];
    return elapsed;
}

/* The scalar triad a[i] = b[i] + q*c[i] over `words` doubles, `reps` times, as a scalar build's loop: one
 * scalar FMA, two 8-byte loads and one 8-byte store per element (compiled without the vectoriser). */
double ma_scalar_triad(double *restrict a, const double *restrict b, const double *restrict c, size_t words,
                       size_t reps) {
    return MA_TIMED_TRIAD(a, b, c, words, reps, ma_simd_sink);
}

/* Gathers with an index stream: sum p[idx[k] & (pwords - 1)] over `nidx` indices (a multiple of 8; pwords a
 * power of two, so that one random index array serves every size of p), `reps` times, into eight independent
 * sums. The index array is larger than the last cache, so it streams from memory while the gathered reads hit
 * wherever p's size puts them: the memory-level parallelism a sparse row loop has, which the MultiMAPS random
 * loop (its index array in cache) does not. */
double ma_gather_stream(const double *p, size_t pwords, const unsigned long *idx, size_t nidx, size_t reps) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    const unsigned long m = pwords - 1;
    double start = now();
    for (size_t r = 0; r < reps; r++) {
        for (size_t k = 0; k < nidx; k += 8) {
            s0 += p[idx[k] & m]; s1 += p[idx[k + 1] & m]; s2 += p[idx[k + 2] & m]; s3 += p[idx[k + 3] & m];
            s4 += p[idx[k + 4] & m]; s5 += p[idx[k + 5] & m]; s6 += p[idx[k + 6] & m]; s7 += p[idx[k + 7] & m];
        }
        __asm__ volatile("" ::: "memory");
    }
    double elapsed = now() - start;
    ma_simd_sink = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    return elapsed;
}

/* A sparse row's entries: sum a[k] * p[idx[k] & (pwords - 1)] over `nidx` entries (a multiple of 8), `reps`
 * times, into eight independent sums: per entry one value and one index streamed (both arrays larger than the
 * last cache), one gathered read of p and one FMA, as a CSR matrix-vector product's inner loop has. The gather
 * kernel above lacks the value stream; on Zen 4 that stream does not run beside the gathers at the triad's rate
 * but shares their misses in flight (docs/vector-backend.md), so a sparse row loop needs its own curve. */
double ma_sparse_dot(const double *a, const double *p, size_t pwords, const unsigned long *idx, size_t nidx,
                     size_t reps) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    const unsigned long m = pwords - 1;
    double start = now();
    for (size_t r = 0; r < reps; r++) {
        for (size_t k = 0; k < nidx; k += 8) {
            s0 += a[k] * p[idx[k] & m]; s1 += a[k + 1] * p[idx[k + 1] & m];
            s2 += a[k + 2] * p[idx[k + 2] & m]; s3 += a[k + 3] * p[idx[k + 3] & m];
            s4 += a[k + 4] * p[idx[k + 4] & m]; s5 += a[k + 5] * p[idx[k + 5] & m];
            s6 += a[k + 6] * p[idx[k + 6] & m]; s7 += a[k + 7] * p[idx[k + 7] & m];
        }
        __asm__ volatile("" ::: "memory");
    }
    double elapsed = now() - start;
    ma_simd_sink = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    return elapsed;
}

/* Read of `words` doubles (a multiple of 32, 32-byte aligned), `reps` times, into eight independent vector
 * sums: one sum would be bound by its add latency, not by the loads. */
double ma_simd_read(const double *a, size_t words, size_t reps) {
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    double start = now();
    for (size_t r = 0; r < reps; r++) {
        for (size_t i = 0; i < words; i += 32) {
            s0 = _mm256_add_pd(s0, _mm256_load_pd(a + i));
            s1 = _mm256_add_pd(s1, _mm256_load_pd(a + i + 4));
            s2 = _mm256_add_pd(s2, _mm256_load_pd(a + i + 8));
            s3 = _mm256_add_pd(s3, _mm256_load_pd(a + i + 12));
            s4 = _mm256_add_pd(s4, _mm256_load_pd(a + i + 16));
            s5 = _mm256_add_pd(s5, _mm256_load_pd(a + i + 20));
            s6 = _mm256_add_pd(s6, _mm256_load_pd(a + i + 24));
            s7 = _mm256_add_pd(s7, _mm256_load_pd(a + i + 28));
        }
        __asm__ volatile("" ::: "memory");
    }
    double elapsed = now() - start;
    __m256d t = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)),
                              _mm256_add_pd(_mm256_add_pd(s4, s5), _mm256_add_pd(s6, s7)));
    double lanes[4];
    _mm256_storeu_pd(lanes, t);
    ma_simd_sink = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    return elapsed;
}
