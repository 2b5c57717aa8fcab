/*
 * ma_npz.h -- writing a .npz file: an uncompressed (stored) zip of .npy members, as numpy.load reads it
 * (ma_npz.c). Files under 4 GiB (no zip64).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_NPZ_H
#define MA_NPZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ma_json.h"

#pragma GCC visibility push(hidden)

typedef struct ma_zip {
    FILE *f;
    ma_out directory;
    int entries, failed;
    uint64_t offset;
} ma_zip;

/* Start the archive at `path` (truncated); -1 when it cannot be opened. */
int ma_zip_open(ma_zip *z, const char *path);
/* One member from two pieces (the .npy header, then the data; either may be empty). */
void ma_zip_member(ma_zip *z, const char *name, const void *a, size_t na, const void *b, size_t nb);
/* An .npy member: `descr` ("<f8", "<i8"), the shape (ndim values), the data in C order. */
void ma_npy_member(ma_zip *z, const char *name, const char *descr, const size_t *shape, int ndim, const void *data,
                   size_t n);
/* Write the central directory and close; 0, or -1 when anything failed on the way. */
int ma_zip_close(ma_zip *z);

#pragma GCC visibility pop

#endif /* MA_NPZ_H */
