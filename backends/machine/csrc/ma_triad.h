/* The timed STREAM triad a = b + q*c (q = 3) that the machine probe (multimaps.c, the profile's memory.triad_gbs)
 * and the vector backend's SIMD probe (simd_bandwidth.c, its scalar triad curve) both run: one loop, compiled in
 * each file with that file's flags (the SIMD probe's without the vectoriser) and that file's pointer qualifiers.
 *
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef MA_TRIAD_H
#define MA_TRIAD_H

#include <stddef.h>
#include <time.h>

static inline double ma_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds of `reps` passes of the triad over `words` doubles (a GNU statement expression); the middle element is
 * left in `sink`, so that the compiler keeps the loop. A macro, not a function: the caller's `restrict` holds. */
#define MA_TIMED_TRIAD(a, b, c, words, reps, sink)                                                               \
    ({                                                                                                           \
        double start_ = ma_now();                                                                                \
        for (size_t r_ = 0; r_ < (reps); r_++) {                                                                 \
            for (size_t i_ = 0; i_ < (words); i_++)                                                              \
                (a)[i_] = (b)[i_] + 3.0 * (c)[i_];                                                               \
            __asm__ volatile("" ::: "memory");                                                                   \
        }                                                                                                        \
        double elapsed_ = ma_now() - start_;                                                                     \
        (sink) = (a)[(words) / 2];                                                                               \
        elapsed_;                                                                                                \
    })

#endif
