/* Kernels with known hit rates for the Valgrind tool's cache simulation (tests/test_maps_cachesim.py). */
#include <stdio.h>
#include "ma_vgcount.h"
#define N (1 << 19)
static double a[N] __attribute__((aligned(64))), b[N] __attribute__((aligned(64))), c[N] __attribute__((aligned(64)));
static void report(const char* name, unsigned long long* r0, unsigned long long* r1) {
    unsigned long long n = r1[1] - r0[1], cum = 0;
    printf("%s %llu", name, n);
    for (unsigned long long i = 0; i < r1[0]; i++) { cum += r1[2 + i] - r0[2 + i]; printf(" %.6f", (double)cum / n); }
    printf("\n");
}
int main(void) {
    unsigned long long r0[MA_VG_CACHE_VALUES], r1[MA_VG_CACHE_VALUES];
    double q = 3.0, s = 0;
    for (long i = 0; i < N; i++) { b[i] = i; c[i] = 1; }
    for (long i = 0; i < N; i++) a[i] = b[i] + q * c[i];
    ma_vg_cache_read(r0);
    for (long i = 0; i < N; i++) a[i] = b[i] + q * c[i];
    ma_vg_cache_read(r1);
    report("triad", r0, r1);
    for (int rep = 0; rep < 2; rep++) for (long i = 0; i < 16384; i += 64) s += a[i];
    ma_vg_cache_read(r0);
    for (int rep = 0; rep < 10; rep++) for (long i = 0; i < 16384; i += 64) s += a[i];
    ma_vg_cache_read(r1);
    report("stride64_128k", r0, r1);
    ma_vg_cache_read(r0);
    for (long i = 0; i < N; i += 64) s += b[i];
    ma_vg_cache_read(r1);
    report("stride64_4m", r0, r1);
    return s == 0.5;
}
