/*
 * ma_api.h -- what the entries of ma.h (ma_api.c) share with the Fortran bindings (ma_fortran.c). Not installed.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_API_H
#define MA_API_H

#include <stddef.h>

#pragma GCC visibility push(hidden)

/* ma_end_at for an id of `id_len` characters that need not end in a NUL; with `fortran_text`, a Fortran string:
 * its trailing blanks (and a trailing NUL) are not part of it, trimmed after the counter is read. */
void ma_api_end(const char *type, const char *id, size_t id_len, int fortran_text, long long measured,
                const char *file, int line);

#pragma GCC visibility pop

#endif /* MA_API_H */
