/*
 * ma_fortran.c -- the C side of the Fortran API (`use ma`): the procedures of the generated module call these.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * A Fortran string arrives as an address and a length, without a NUL; its trailing blanks are not part of
 * it (a CHARACTER(len=32) variable holding 'x' means "x"), nor is a C_NULL_CHAR a C habit appended.
 * The runtime keeps C strings and compares an expression's address with the one it last saw at the site
 * (an equal address is taken as the same text), so every distinct text gets one NUL-terminated copy for
 * the life of the process: the same text always has the same address, and a character variable whose
 * contents changed gets another one. A small table keyed by the Fortran address finds the copy without
 * hashing the text; the text at that address is compared with the copy on every call, unless the address is
 * in read-only memory (a literal, by far the most common argument: its text cannot change).
 *
 * The type of a start or an end comes from the module as a NUL-terminated constant ('loop'//C_NULL_CHAR).
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ma.h"
#include "ma_api.h"
#include "ma_lifecycle.h"
#include "ma_util.h"

/* ---- one copy per distinct text ---------------------------------------------------------------- */
typedef struct pooled {
    char *text; /* NUL-terminated copy, kept until exit */
    size_t length;
    uint64_t hash;
} pooled;

typedef struct by_address {
    const char *source; /* the Fortran string's address (NULL: free slot) */
    size_t length;
    const char *text; /* its pooled copy */
    int fixed;        /* the source is in read-only memory (a literal): its text cannot change */
} by_address;

static pooled *pool;
static size_t pool_capacity, pool_used;
static by_address *addresses;
static size_t address_capacity, address_used;
#define ADDRESS_TABLE_MAX 4096 /* a cache: emptied when full (temporaries at ever new addresses) */

static uint64_t hash_text(const char *text, size_t length)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < length; i++)
        h = (h ^ (unsigned char)text[i]) * 1099511628211u;
    return h;
}

static void *zeroed(size_t count, size_t size)
{
    void *memory = calloc(count, size);
    if (!memory)
        abort(); /* the runtime cannot go on without its tables (as ma_util.c's allocations) */
    return memory;
}

static void pool_put(pooled entry)
{
    size_t mask = pool_capacity - 1, i = (size_t)entry.hash & mask;
    while (pool[i].text)
        i = (i + 1) & mask;
    pool[i] = entry;
}

static const char *pooled_copy(const char *text, size_t length)
{
    if (2 * (pool_used + 1) > pool_capacity) {
        pooled *old = pool;
        size_t old_capacity = pool_capacity;
        pool_capacity = old_capacity ? 2 * old_capacity : 256;
        pool = zeroed(pool_capacity, sizeof *pool);
        for (size_t i = 0; i < old_capacity; i++)
            if (old[i].text)
                pool_put(old[i]);
        free(old);
    }
    uint64_t h = hash_text(text, length);
    size_t mask = pool_capacity - 1, i = (size_t)h & mask;
    for (; pool[i].text; i = (i + 1) & mask)
        if (pool[i].hash == h && pool[i].length == length && !memcmp(pool[i].text, text, length))
            return pool[i].text;
    char *copy = malloc(length + 1);
    if (!copy)
        abort();
    memcpy(copy, text, length);
    copy[length] = '\0';
    pool[i] = (pooled){copy, length, h};
    pool_used++;
    return copy;
}

static size_t address_slot(const char *source)
{
    return (size_t)(((uint64_t)(uintptr_t)source * 0x9E3779B97F4A7C15u) >> 32) & (address_capacity - 1);
}

/* Whether [address, address + length) lies in a read-only segment of a loaded object: a Fortran literal, whose
 * bytes cannot change, so a later call at the same address needs no comparison of its text. */
typedef struct segment_query {
    uintptr_t start, end;
    int read_only;
} segment_query;

static int find_segment(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    segment_query *query = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        uintptr_t low = info->dlpi_addr + segment->p_vaddr, high = low + segment->p_memsz;
        if (segment->p_type == PT_LOAD && query->start >= low && query->end <= high) {
            query->read_only = !(segment->p_flags & PF_W);
            return 1;
        }
    }
    return 0;
}

static int read_only(const char *address, size_t length)
{
    segment_query query = {(uintptr_t)address, (uintptr_t)address + length, 0};
    dl_iterate_phdr(find_segment, &query);
    return query.read_only;
}

/* The pooled copy of a string the address table does not know yet (or after the table was emptied). */
__attribute__((noinline)) static const char *c_text_new(const char *source, size_t length)
{
    if (!addresses || 2 * (address_used + 1) > address_capacity) {
        if (address_capacity < ADDRESS_TABLE_MAX) {
            by_address *old = addresses;
            size_t old_capacity = address_capacity;
            address_capacity = old_capacity ? 2 * old_capacity : 256;
            addresses = zeroed(address_capacity, sizeof *addresses);
            for (size_t k = 0; k < old_capacity; k++)
                if (old[k].source) {
                    size_t j = address_slot(old[k].source);
                    while (addresses[j].source)
                        j = (j + 1) & (address_capacity - 1);
                    addresses[j] = old[k];
                }
            free(old);
        } else {
            memset(addresses, 0, address_capacity * sizeof *addresses);
            address_used = 0;
        }
    }
    size_t mask = address_capacity - 1, i = address_slot(source);
    while (addresses[i].source)
        i = (i + 1) & mask;
    const char *text = pooled_copy(source, length);
    addresses[i] = (by_address){source, length, text, read_only(source, length)};
    address_used++;
    return text;
}

/* The pooled C string of a Fortran string (NULL for a NULL address). A NUL inside the text ends it for the
 * runtime, which reads C strings. Inlined: the common case is a literal seen before, a few loads. */
static inline const char *c_text(const char *source, size_t length)
{
    if (!source)
        return NULL;
    length = ma_fortran_length(source, length);
    if (addresses) {
        size_t mask = address_capacity - 1;
        for (size_t i = address_slot(source); addresses[i].source; i = (i + 1) & mask) {
            by_address *seen = &addresses[i];
            if (seen->source == source && seen->length == length) {
                if (!seen->fixed && memcmp(seen->text, source, length)) /* the same variable, another text */
                    seen->text = pooled_copy(source, length);
                return seen->text;
            }
        }
    }
    return c_text_new(source, length);
}

/* ---- the calls (ma_tools/fortran.py writes the module that binds them) ------------------------ */
/* 1 when an annotation call from this thread is recorded or at least binds variables (ma_lifecycle_call); the
 * trace's language is then "fortran". Starts the runtime on the first call. */
static int accepting(void)
{
    if (!ma_lifecycle_call())
        return 0;
    ma_rt->fortran_calls = 1;
    return 1;
}

/* accepting(), and tracing is on. */
static int recording(void) { return accepting() && ma_rt->enabled; }

void ma_fortran_variable(const char *name, size_t name_length, long long value)
{
    if (accepting())
        ma_def_variable_int_at(c_text(name, name_length), value, NULL, 0);
}

void ma_fortran_variable_double(const char *name, size_t name_length, double value)
{
    if (accepting())
        ma_def_variable_double_at(c_text(name, name_length), value, NULL, 0);
}

void ma_fortran_assign(const char *name, size_t name_length, const char *expr, size_t expr_length, long long value)
{
    if (accepting())
        ma_def_variable_assign_int_at(c_text(name, name_length), c_text(expr, expr_length), value, NULL, 0);
}

void ma_fortran_start(const char *type, const char *id, size_t id_length, const char *expr, size_t expr_length,
                      long long value)
{
    if (recording())
        ma_start_at(type, c_text(id, id_length), c_text(expr, expr_length), value, NULL, 0);
}

void ma_fortran_subroutine_start(const char *id, size_t id_length)
{
    if (recording())
        ma_start_at("subroutine", c_text(id, id_length), NULL, MA_NO_VALUE, NULL, 0);
}

void ma_fortran_loop_next(const char *id, size_t id_length)
{
    if (recording())
        ma_loop_next_at(c_text(id, id_length), NULL, 0);
}

void ma_fortran_end(const char *type, const char *id, size_t id_length, long long measured)
{
    ma_api_end(type, id, id_length, 1, measured, NULL, 0); /* reads the counters before anything else */
}

void ma_fortran_mpi(const char *type, const char *id, size_t id_length, const char *expr, size_t expr_length,
                    long long value, long long count)
{
    if (recording())
        ma_mpi_at(type, c_text(id, id_length), c_text(expr, expr_length), value, NULL, count, NULL, 0);
}

/* ma_mpi(type, id, expr, value, count_expr, count): the type named by the program, the count an expression. */
void ma_fortran_mpi_typed(const char *type, size_t type_length, const char *id, size_t id_length,
                          const char *expr, size_t expr_length, long long value, const char *count_expr,
                          size_t count_expr_length, long long count)
{
    if (recording())
        ma_mpi_at(c_text(type, type_length), c_text(id, id_length), c_text(expr, expr_length), value,
                  c_text(count_expr, count_expr_length), count, NULL, 0);
}

void ma_fortran_mpi_peer(const char *expr, size_t expr_length)
{
    if (recording())
        ma_mpi_peer_at(c_text(expr, expr_length), NULL, 0);
}

void ma_fortran_vec_loop_start(const char *id, size_t id_length, const char *vloadstore, size_t vloadstore_length,
                               long long vloadstore_value, const char *vflops, size_t vflops_length,
                               long long vflops_value, const char *avl, size_t avl_length, double avl_value, int mv)
{
    if (recording())
        ma_vec_loop_start_at(c_text(id, id_length), c_text(vloadstore, vloadstore_length), vloadstore_value,
                             c_text(vflops, vflops_length), vflops_value, c_text(avl, avl_length), avl_value, mv,
                             NULL, 0);
}

void ma_fortran_vec_loop_stop(const char *id, size_t id_length)
{
    if (recording())
        ma_vec_loop_stop_at(c_text(id, id_length), NULL, 0);
}

void ma_fortran_vec_loop_gathers(const char *id, size_t id_length, const char *gathers, size_t gathers_length,
                                 long long gathers_value, const char *bytes, size_t bytes_length,
                                 long long bytes_value)
{
    if (recording())
        ma_vec_loop_gathers_at(c_text(id, id_length), c_text(gathers, gathers_length), gathers_value,
                               c_text(bytes, bytes_length), bytes_value, NULL, 0);
}

/* ma_evaluate for Fortran: the result (or the error) into `out`, blank-padded to `out_length`. Touches no
 * runtime state, so it copies its arguments instead of pooling them. */
int ma_fortran_evaluate(const char *expr, size_t expr_length, const char *bindings, size_t bindings_length,
                        char *out, size_t out_length)
{
    expr_length = ma_fortran_length(expr, expr_length);
    bindings_length = ma_fortran_length(bindings, bindings_length);
    char *e = malloc(expr_length + 1), *b = malloc(bindings_length + 1), *result = malloc(out_length + 1);
    int status = -1;
    if (e && b && result) {
        memcpy(e, expr, expr_length), e[expr_length] = '\0';
        memcpy(b, bindings, bindings_length), b[bindings_length] = '\0';
        status = ma_evaluate(e, b, result, out_length + 1);
        size_t n = strlen(result);
        memcpy(out, result, n);
        memset(out + n, ' ', out_length - n);
    }
    free(e);
    free(b);
    free(result);
    return status;
}
