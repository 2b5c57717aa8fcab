/* MultiMAPS and companion probes of `ma machine probe` (Tikir et al. SC07, Figure 2; Snavely et al. SC02).
 *
 * Built with -O2 and without -march=native, so the memory loops are the code a portable build runs; only the
 * flop-peak kernels ask for wider instruction sets through target attributes, and only where the CPU has them.
 * Every kernel returns its elapsed seconds and stores its result in ma_probe_sink, so the compiler cannot drop
 * the loop. */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "ma_triad.h"

volatile double ma_probe_sink;

static double now(void) { return ma_now(); }

/* Strided read of `words` doubles, `reps` times. Eight independent sums: one running sum is bound by its
 * add chain (one add per latency), which would flatten every cache level to the same rate. */
double ma_multimaps_stride(const double *a, size_t words, size_t stride, size_t reps) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    size_t step = 8 * stride;
    size_t unrolled = words >= step ? words - step + 1 : 0;
    double start = now();
    for (size_t r = 0; r < reps; r++) {
        size_t i = 0;
        for (; i < unrolled; i += step) {
            s0 += a[i];
            s1 += a[i + stride];
            s2 += a[i + 2 * stride];
            s3 += a[i + 3 * stride];
            s4 += a[i + 4 * stride];
            s5 += a[i + 5 * stride];
            s6 += a[i + 6 * stride];
            s7 += a[i + 7 * stride];
        }
        for (; i < words; i += stride)
            s0 += a[i];
        __asm__ volatile("" ::: "memory"); /* each repetition reads memory again */
    }
    double elapsed = now() - start;
    ma_probe_sink = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    return elapsed;
}

/* Random reads: a[index[k]] for k < count, `reps` times, with eight independent sums as above. */
double ma_multimaps_random(const double *a, const uint32_t *index, size_t count, size_t reps) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
    size_t unrolled = count & ~(size_t)7;
    double start = now();
    for (size_t r = 0; r < reps; r++) {
        size_t k = 0;
        for (; k < unrolled; k += 8) {
            s0 += a[index[k]];
            s1 += a[index[k + 1]];
            s2 += a[index[k + 2]];
            s3 += a[index[k + 3]];
            s4 += a[index[k + 4]];
            s5 += a[index[k + 5]];
            s6 += a[index[k + 6]];
            s7 += a[index[k + 7]];
        }
        for (; k < count; k++)
            s0 += a[index[k]];
        __asm__ volatile("" ::: "memory");
    }
    double elapsed = now() - start;
    ma_probe_sink = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    return elapsed;
}

/* STREAM triad a = b + q*c over `words` doubles, `reps` times. */
double ma_triad(double *a, const double *b, const double *c, size_t words, size_t reps) {
    return MA_TIMED_TRIAD(a, b, c, words, reps, ma_probe_sink);
}

/* Vector add stream a = b + c over `words` doubles, `reps` times, with the host's vector loads and stores
 * (NumPy's ufunc loops move data so: a binary ufunc reads two operands and writes one). `words` is a multiple
 * of LANES and the arrays start on a cache line. 24 bytes per element; per 8 elements 3 lines pass beyond L1
 * (two read, one allocated by the store), as the signature run's cache simulation counts them. */
#define MA_STREAM_KERNEL(NAME, LANES, ATTR)                                                              \
    ATTR double NAME(double *a, const double *b, const double *c, size_t words, size_t reps) {           \
        typedef double vec __attribute__((vector_size(8 * LANES), aligned(8 * LANES)));                 \
        vec *va = (vec *)a;                                                                              \
        const vec *vb = (const vec *)b, *vc = (const vec *)c;                                            \
        size_t n = words / LANES;                                                                        \
        double start = now();                                                                            \
        for (size_t r = 0; r < reps; r++) {                                                              \
            for (size_t i = 0; i < n; i++)                                                               \
                va[i] = vb[i] + vc[i];                                                                   \
            __asm__ volatile("" ::: "memory");                                                           \
        }                                                                                                \
        double elapsed = now() - start;                                                                  \
        ma_probe_sink = a[words / 2];                                                                    \
        return elapsed;                                                                                  \
    }

MA_STREAM_KERNEL(ma_vector_add_sse2, 2, )
MA_STREAM_KERNEL(ma_vector_add_avx2, 4, __attribute__((target("avx2"))))
MA_STREAM_KERNEL(ma_vector_add_avx512, 8, __attribute__((target("avx512f"))))

/* Peak flop rate: twelve independent multiply-add chains held in registers, enough to cover the FMA latency
 * times the number of FMA pipes. Each variant returns elapsed seconds; flops = 2 * LANES * MA_CHAINS * iters. */
#define MA_CHAINS 12
#define MA_STEP(k) a##k = a##k * mul + add
#define MA_FLOP_KERNEL(NAME, LANES, ATTR)                                                                \
    ATTR double NAME(size_t iters) {                                                                     \
        typedef double vec __attribute__((vector_size(8 * LANES)));                                     \
        vec mul, add, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11;                                 \
        for (int l = 0; l < LANES; l++) {                                                                \
            mul[l] = 0.999999;                                                                           \
            add[l] = 1e-7;                                                                               \
            a0[l] = a1[l] = a2[l] = a3[l] = a4[l] = a5[l] = 1.0 + l;                                     \
            a6[l] = a7[l] = a8[l] = a9[l] = a10[l] = a11[l] = 2.0 + l;                                   \
        }                                                                                                \
        double start = now();                                                                            \
        for (size_t i = 0; i < iters; i++) {                                                             \
            MA_STEP(0); MA_STEP(1); MA_STEP(2); MA_STEP(3); MA_STEP(4); MA_STEP(5);                       \
            MA_STEP(6); MA_STEP(7); MA_STEP(8); MA_STEP(9); MA_STEP(10); MA_STEP(11);                     \
        }                                                                                                \
        double elapsed = now() - start;                                                                  \
        vec total = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));       \
        double sum = 0;                                                                                  \
        for (int l = 0; l < LANES; l++)                                                                  \
            sum += total[l];                                                                             \
        ma_probe_sink = sum;                                                                             \
        return elapsed;                                                                                  \
    }

MA_FLOP_KERNEL(ma_flops_sse2, 2, )
MA_FLOP_KERNEL(ma_flops_avx2_fma, 4, __attribute__((target("avx2,fma"))))
MA_FLOP_KERNEL(ma_flops_avx512_fma, 8, __attribute__((target("avx512f,fma"))))

/* Which flop kernels this CPU can run: bit 0 sse2, bit 1 avx2+fma, bit 2 avx512f+fma. */
int ma_flops_supported(void) {
    __builtin_cpu_init();
    int mask = 1;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        mask |= 2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
        mask |= 4;
    return mask;
}

int ma_flops_chains(void) { return MA_CHAINS; }
