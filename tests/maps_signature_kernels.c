/* Kernels with known hit rates, annotated (tests/test_maps_signature.py): the trace's measured signature.
 * Built as a program against libma (the C runtime) or, with -DMA_KERNELS_LIBRARY, as a shared library that a
 * Python program calls inside its own ma.loadstore regions. -O1 without vectorisation: one 8-byte access per
 * element, so a stream misses once per 64-byte line (hit rate 1 - 8/64 = 0.875 at each level). */
#define N (1 << 19)
static double a[N] __attribute__((aligned(64))), b[N] __attribute__((aligned(64))), c[N] __attribute__((aligned(64)));

void kernels_init(void)
{
    for (long i = 0; i < N; i++) {
        a[i] = 0;
        b[i] = (double)i;
        c[i] = 1;
    }
}

/* a = b + q c over 3 arrays of 4 MiB (16x the L2 of the tests' hierarchy) */
void kernels_triad(void)
{
    for (long i = 0; i < N; i++)
        a[i] = b[i] + 3.0 * c[i];
}

/* `reps` passes over 128 KiB with a 512-byte stride: 256 lines in 8 of L1's 64 sets (every access misses L1),
 * spread over 128 of L2's 1024 sets (every access hits L2 once it is warm) */
double kernels_walk(int reps)
{
    double s = 0;
    for (int rep = 0; rep < reps; rep++)
        for (long i = 0; i < 16384; i += 64)
            s += a[i];
    return s;
}

#ifndef MA_KERNELS_LIBRARY
#include <mpi.h>

#include "ma.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv); /* under MPI, the C runtime merges the ranks' traces in MPI_Finalize */
    kernels_init();
    kernels_triad();
    for (int call = 0; call < 2; call++) { /* two calls: the trace sums them */
        ma_loadstore_start("triad", "3*2^19", MA_NO_VALUE);
        kernels_triad();
        ma_loadstore_stop("triad");
    }
    double s = kernels_walk(2); /* warm L2 */
    ma_loadstore_start("walk", "256000", MA_NO_VALUE); /* many passes: the runtime's own accesses stay below 0.1 % */
    s += kernels_walk(1000);
    ma_loadstore_stop("walk");
    MPI_Finalize();
    return s == 0.5;
}
#endif
