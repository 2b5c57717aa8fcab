/*
 * ma_npz.c -- a stored zip of .npy members (ma_npz.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#include "ma_npz.h"

#include <stdlib.h>
#include <string.h>

static uint32_t crc_table[256];

static uint32_t crc32_of(uint32_t crc, const unsigned char *p, size_t n)
{
    if (!crc_table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            crc_table[i] = c;
        }
    crc = ~crc;
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* `v` in n little-endian bytes. */
static void le(ma_out *o, uint64_t v, int n)
{
    unsigned char b[8];
    for (int i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    ma_out_bytes(o, b, (size_t)n);
}

int ma_zip_open(ma_zip *z, const char *path)
{
    memset(z, 0, sizeof *z);
    z->f = fopen(path, "wb");
    return z->f ? 0 : -1;
}

void ma_zip_member(ma_zip *z, const char *name, const void *a, size_t na, const void *b, size_t nb)
{
    uint32_t crc = crc32_of(crc32_of(0, a, na), b, nb);
    uint64_t size = na + nb, name_len = strlen(name);
    if (z->offset + size > 0xFFFFFFF0u) {
        z->failed = 1;
        return;
    }
    ma_out local = {0};
    le(&local, 0x04034b50, 4), le(&local, 20, 2), le(&local, 0, 2), le(&local, 0, 2), le(&local, 0, 2);
    le(&local, 0x21, 2), le(&local, crc, 4), le(&local, size, 4), le(&local, size, 4), le(&local, name_len, 2);
    le(&local, 0, 2), ma_out_bytes(&local, name, name_len);
    ma_out *d = &z->directory;
    le(d, 0x02014b50, 4), le(d, 20, 2), le(d, 20, 2), le(d, 0, 2), le(d, 0, 2), le(d, 0, 2), le(d, 0x21, 2);
    le(d, crc, 4), le(d, size, 4), le(d, size, 4), le(d, name_len, 2), le(d, 0, 2), le(d, 0, 2), le(d, 0, 2);
    le(d, 0, 2), le(d, 0, 4), le(d, z->offset, 4), ma_out_bytes(d, name, name_len);
    if (local.failed || fwrite(local.buf, 1, local.len, z->f) != local.len || (na && fwrite(a, 1, na, z->f) != na)
        || (nb && fwrite(b, 1, nb, z->f) != nb))
        z->failed = 1;
    z->offset += local.len + size;
    z->entries++;
    free(local.buf);
}

void ma_npy_member(ma_zip *z, const char *name, const char *descr, const size_t *shape, int ndim, const void *data,
                   size_t n)
{
    ma_out h = {0};
    ma_out_fmt(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        ma_out_fmt(&h, i ? ", %zu" : "%zu", shape[i]);
    ma_out_raw(&h, ndim == 1 ? ",), }" : "), }");
    size_t pad = 64 - (10 + h.len + 1) % 64;
    for (size_t i = 0; i < pad % 64; i++)
        ma_out_raw(&h, " ");
    ma_out_raw(&h, "\n");
    ma_out head = {0};
    ma_out_bytes(&head, "\x93NUMPY\x01\x00", 8), le(&head, h.len, 2), ma_out_bytes(&head, h.buf, h.len);
    z->failed |= h.failed || head.failed;
    ma_zip_member(z, name, head.buf, head.len, data, n);
    free(h.buf), free(head.buf);
}

int ma_zip_close(ma_zip *z)
{
    ma_out *d = &z->directory;
    uint64_t directory_offset = z->offset, directory_len = d->len;
    le(d, 0x06054b50, 4), le(d, 0, 2), le(d, 0, 2), le(d, (uint64_t)z->entries, 2), le(d, (uint64_t)z->entries, 2);
    le(d, directory_len, 4), le(d, directory_offset, 4), le(d, 0, 2);
    int failed = z->failed || d->failed || fwrite(d->buf, 1, d->len, z->f) != d->len;
    failed |= fclose(z->f) != 0;
    free(d->buf);
    memset(z, 0, sizeof *z);
    return failed ? -1 : 0;
}
