/* The dependent add chain of a scalar dot product, for `ma machine probe` (backends/machine/chains.py).
 *
 * s += a[i] * b[i] with one running sum, built with -O2 and no -ffast-math: a compiler may not reorder the adds
 * of a floating-point sum, so every add waits for the previous one (the loop a compiled dot product or a CSR
 * row runs without reassociation). The sum is carried across the repetitions, one chain of reps x n adds, so
 * the start of a repetition cannot overlap the end of the last. Returns the elapsed seconds. */
#include <stddef.h>
#include <time.h>

volatile double ma_add_chain_sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double ma_add_chain(const double *a, const double *b, size_t n, size_t reps) {
    double s = 0.0;
    double start = now();
    for (size_t r = 0; r < reps; r++) {
        for (size_t i = 0; i < n; i++) {
            s += a[i] * b[i];
        }
    }
    double elapsed = now() - start;
    ma_add_chain_sink = s;
    return elapsed;
}
