/*
 * ma_api.c -- the entry points of the C runtime: every function of ma.h, and the end of an annotation that the
 * Fortran bindings share (ma_api.h).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Each entry opens the SDK fence (ma_fence.h), asks the life cycle whether this call records (creating the runtime
 * at the first one), hands the call to the file that does its job, and gives the periodic flush its chance. The
 * paper's names (ma_loop_start, ...) are real functions for callers without the header's macros (dlsym); ma.h maps
 * them to the *_at forms, which carry the source location. Besides them only the Fortran bindings (ma_fortran.c)
 * are visible outside libma.
 */
#define MA_NO_SOURCE_LOCATION /* define the real functions (checked against ma.h), not the location-passing macros */
#include "ma.h"

#include <string.h>

#include "ma_api.h"
#include "ma_fence.h"
#include "ma_lifecycle.h"
#include "ma_mpi.h"
#include "ma_peers.h"
#include "ma_regions.h"
#include "ma_scope.h"
#include "ma_util.h"
#include "ma_variables.h"
#include "ma_vector.h"

#ifdef MA_HAVE_VGCOUNT
_Static_assert(MA__VG_SDK_ENTER_CODE == MA_VG_REQ_SDK_ENTER && MA__VG_SDK_LEAVE_CODE == MA_VG_REQ_SDK_LEAVE,
               "ma.h and ma_vgcount.h disagree on the fence's request codes");
#endif

/* ---- life cycle ---- */
void ma_init(void)
{
    MA_FENCE_THIS_CALL();
    ma_lifecycle_init();
}

void ma_finalize(void)
{
    MA_FENCE_THIS_CALL();
    ma_lifecycle_finalize();
}

void ma_flush(void)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_call())
        ma_lifecycle_flush();
}

/* ---- tracing control ---- */
void ma_set_tracing(void)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_call())
        ma_lifecycle_set_tracing(1);
}

void ma_unset_tracing(void)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_call())
        ma_lifecycle_set_tracing(0);
}

/* ---- variables (bound while tracing is off too) ---- */
void ma_def_variable_int_at(const char *name, long long value, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_call())
        ma_variables_declare("variable", name, NULL, 1, ma_int(value), file, line);
}

void ma_def_variable_double_at(const char *name, double value, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_call())
        ma_variables_declare("variable", name, NULL, 1, ma_dbl(value), file, line);
}

void ma_def_variable_assign_int_at(const char *name, const char *expr, long long value, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_call())
        ma_variables_declare("assign", name, expr, value != MA_NO_VALUE, ma_int(value), file, line);
}

/* ---- regions ---- */
void ma_start_at(const char *type, const char *id, const char *expr, long long value, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_recording())
        ma_regions_start(type, id, expr, value, file, line);
}

void ma_api_end(const char *type, const char *id, size_t id_len, int fortran_text, long long measured,
                const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    ma_end_reading reading;
    ma_regions_read_end(&reading); /* first: the counted region ends here */
    if (!ma_lifecycle_recording())
        return;
    if (fortran_text && id)
        id_len = ma_fortran_length(id, id_len);
    ma_regions_end(&reading, type, id, id_len, measured, file, line);
    ma_lifecycle_maybe_flush(reading.t1);
}

void ma_end_at(const char *type, const char *id, long long measured, const char *file, int line)
{
    ma_api_end(type, id, id ? strlen(id) : 0, 0, measured, file, line);
}

void ma_loop_next_at(const char *id, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_recording())
        ma_regions_next(id, file, line);
}

/* ---- MPI assertions ---- */
void ma_mpi_at(const char *type, const char *id, const char *expr, long long value, const char *count_expr,
               long long count, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    uint64_t t0 = ma_fence_now();
    if (!ma_lifecycle_recording())
        return;
    ma_mpi_assert(type, id, expr, value, count_expr, count, file, line, t0);
    ma_lifecycle_maybe_flush(t0);
}

void ma_mpi_peer_at(const char *expr, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_recording())
        ma_peers_name(expr, file, line);
}

/* ---- ma_vec_loop ---- */
void ma_vec_loop_start_at(const char *id, const char *vloadstore, long long vloadstore_value, const char *vflops,
                          long long vflops_value, const char *avl, double avl_value, int mv, const char *file,
                          int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_recording())
        ma_vector_start(id, vloadstore, vloadstore_value, vflops, vflops_value, avl, avl_value, mv, file, line);
}

void ma_vec_loop_stop_at(const char *id, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_recording())
        ma_vector_stop(id, file, line);
}

void ma_vec_loop_gathers_at(const char *id, const char *gathers, long long gathers_value, const char *bytes,
                            long long bytes_value, const char *file, int line)
{
    MA_FENCE_THIS_CALL();
    if (ma_lifecycle_recording())
        ma_vector_gathers(id, gathers, gathers_value, bytes, bytes_value, file, line);
}

/* ---- evaluation utility (no runtime) ---- */
int ma_evaluate(const char *expr, const char *bindings, char *out, size_t cap)
{
    return ma_scope_evaluate_bindings(expr, bindings, out, cap);
}

/* ---- the paper's names, without the source location ---- */
void ma_def_variable_int(const char *name, long long value) { ma_def_variable_int_at(name, value, NULL, 0); }
void ma_def_variable_double(const char *name, double value) { ma_def_variable_double_at(name, value, NULL, 0); }
void ma_def_variable_assign_int(const char *name, const char *expr, long long value)
{
    ma_def_variable_assign_int_at(name, expr, value, NULL, 0);
}
void ma_loop_start(const char *id, const char *expr, long long value) { ma_start_at("loop", id, expr, value, NULL, 0); }
void ma_loop_end(const char *id, long long iterations) { ma_end_at("loop", id, iterations, NULL, 0); }
void ma_loop_next(const char *id) { ma_loop_next_at(id, NULL, 0); }
void ma_subroutine_start(const char *id) { ma_start_at("subroutine", id, NULL, MA_NO_VALUE, NULL, 0); }
void ma_subroutine_end(const char *id) { ma_end_at("subroutine", id, MA_NO_VALUE, NULL, 0); }
void ma_flop_start(const char *id, const char *expr, long long value) { ma_start_at("flop", id, expr, value, NULL, 0); }
void ma_flop_stop(const char *id) { ma_end_at("flop", id, MA_NO_VALUE, NULL, 0); }
void ma_loadstore_start(const char *id, const char *expr, long long value)
{
    ma_start_at("loadstore", id, expr, value, NULL, 0);
}
void ma_loadstore_stop(const char *id) { ma_end_at("loadstore", id, MA_NO_VALUE, NULL, 0); }
void ma_heap_memory_start(const char *id, const char *expr, long long value)
{
    ma_start_at("heap_memory", id, expr, value, NULL, 0);
}
void ma_heap_memory_stop(const char *id) { ma_end_at("heap_memory", id, MA_NO_VALUE, NULL, 0); }
void ma_stack_memory_start(const char *id, const char *expr, long long value)
{
    ma_start_at("stack_memory", id, expr, value, NULL, 0);
}
void ma_stack_memory_stop(const char *id) { ma_end_at("stack_memory", id, MA_NO_VALUE, NULL, 0); }
void ma_vec_loop_start(const char *id, const char *vloadstore, long long vloadstore_value, const char *vflops,
                       long long vflops_value, const char *avl, double avl_value, int mv)
{
    ma_vec_loop_start_at(id, vloadstore, vloadstore_value, vflops, vflops_value, avl, avl_value, mv, NULL, 0);
}
void ma_vec_loop_stop(const char *id) { ma_vec_loop_stop_at(id, NULL, 0); }
void ma_vec_loop_gathers(const char *id, const char *gathers, long long gathers_value, const char *bytes,
                         long long bytes_value)
{
    ma_vec_loop_gathers_at(id, gathers, gathers_value, bytes, bytes_value, NULL, 0);
}
void ma_mpi(const char *type, const char *id, const char *expr, long long value, const char *count_expr,
            long long count)
{
    ma_mpi_at(type, id, expr, value, count_expr, count, NULL, 0);
}
void ma_mpi_peer(const char *expr) { ma_mpi_peer_at(expr, NULL, 0); }
#define MPI_FORM(name)                                                                 \
    void ma_##name(const char *id, const char *expr, long long value, long long count) \
    {                                                                                  \
        ma_mpi_at(#name, id, expr, value, NULL, count, NULL, 0);                       \
    }
MPI_FORM(mpi_send)
MPI_FORM(mpi_isend)
MPI_FORM(mpi_recv)
MPI_FORM(mpi_irecv)
MPI_FORM(mpi_sendrecv)
MPI_FORM(mpi_bcast)
MPI_FORM(mpi_reduce)
MPI_FORM(mpi_allreduce)
MPI_FORM(mpi_gather)
MPI_FORM(mpi_scatter)
MPI_FORM(mpi_allgather)
MPI_FORM(mpi_alltoall)
MPI_FORM(mpi_barrier)
