/*
 * ma.h -- modeling assertions for C programs (the C side of the Modeling Assertions SDK).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 *
 * Build:   mpicc $(ma config --cflags) prog.c -o prog $(ma config --libs)
 * Disable: add -DMA_DISABLE and every call below compiles to nothing (its arguments are not evaluated).
 *
 * Calls follow the MA paper (Figures 2, 4, 5, 7): an identifier, the expression text of what the author
 * expects, and the value the program computed for it (MA_NO_VALUE when it has none: the runtime then
 * relies on its own evaluation of the expression against the declared variables). The runtime (libma)
 * writes one trace per rank in the format of docs/trace-format.md, the same as the Python runtime:
 *  - it starts at the first call, at ma_init(), or inside MPI_Init (libmapmpi calls it);
 *  - it writes the final trace at ma_finalize(), inside MPI_Finalize (before MPI shuts down), or at
 *    exit; and every MA_FLUSH_SECONDS seconds (checked at annotation calls) while the program runs.
 *
 * Measurement: loop trip counts come from ma_loop_end; MPI bytes and message counts from libmapmpi (the
 * PMPI wrapper library, always linked with libma); heap bytes from glibc mallinfo2; flops and
 * loads/stores from the `maflops` Valgrind tool when the program runs under it (PAPI is used when libma
 * was built against it -- see the header's `counters` in the trace for what measured what, and why not).
 * Annotations are recorded from the thread that made the first call (MPI+threads programs annotate the
 * master thread); calls from other threads are counted as an anomaly and otherwise ignored.
 * See docs/c-api.md.
 */
#ifndef MA_H
#define MA_H

#include <limits.h>

#define MA_C_API_VERSION "0.1.0"
/* Pass as `value` when the program has no value of its own for the expression. */
#define MA_NO_VALUE LLONG_MIN

#ifdef MA_DISABLE
/* Every call vanishes; sizeof keeps the arguments "used" without evaluating them. */
#define MA__USE1(a) ((void)sizeof(a))
#define MA__USE2(a, b) ((void)sizeof(a), (void)sizeof(b))
#define MA__USE3(a, b, c) ((void)sizeof(a), (void)sizeof(b), (void)sizeof(c))
#define MA__USE4(a, b, c, d) ((void)sizeof(a), (void)sizeof(b), (void)sizeof(c), (void)sizeof(d))
#define ma_init() ((void)0)
#define ma_finalize() ((void)0)
#define ma_flush() ((void)0)
#define ma_set_tracing() ((void)0)
#define ma_unset_tracing() ((void)0)
#define ma_def_variable_int(name, value) MA__USE2(name, value)
#define ma_def_variable_double(name, value) MA__USE2(name, value)
#define ma_def_variable_assign_int(name, expr, value) MA__USE3(name, expr, value)
#define ma_loop_start(id, expr, value) MA__USE3(id, expr, value)
#define ma_loop_end(id, iterations) MA__USE2(id, iterations)
#define ma_loop_next(id) MA__USE1(id)
#define ma_subroutine_start(id) MA__USE1(id)
#define ma_subroutine_end(id) MA__USE1(id)
#define ma_flop_start(id, expr, value) MA__USE3(id, expr, value)
#define ma_flop_stop(id) MA__USE1(id)
#define ma_loadstore_start(id, expr, value) MA__USE3(id, expr, value)
#define ma_loadstore_stop(id) MA__USE1(id)
#define ma_heap_memory_start(id, expr, value) MA__USE3(id, expr, value)
#define ma_heap_memory_stop(id) MA__USE1(id)
#define ma_stack_memory_start(id, expr, value) MA__USE3(id, expr, value)
#define ma_stack_memory_stop(id) MA__USE1(id)
#define ma_vec_loop_start(id, vls, vls_value, vfl, vfl_value, avl, avl_value, mv) \
    (MA__USE4(id, vls, vls_value, vfl), MA__USE4(vfl_value, avl, avl_value, mv))
#define ma_vec_loop_stop(id) MA__USE1(id)
#define ma_vec_loop_gathers(id, gathers, gathers_value, bytes, bytes_value) \
    (MA__USE3(id, gathers, gathers_value), MA__USE2(bytes, bytes_value))
#define ma_mpi(type, id, expr, value, count_expr, count) \
    (MA__USE3(type, id, expr), MA__USE3(value, count_expr, count))
#define ma_mpi_peer(expr) MA__USE1(expr)
#define ma_mpi_send(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_isend(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_recv(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_irecv(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_sendrecv(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_bcast(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_reduce(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_allreduce(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_gather(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_scatter(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_allgather(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_alltoall(id, expr, value, count) MA__USE4(id, expr, value, count)
#define ma_mpi_barrier(id, expr, value, count) MA__USE4(id, expr, value, count)

#else /* !MA_DISABLE */

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- life cycle (all optional: MPI_Init/MPI_Finalize and exit do the same) ---- */
void ma_init(void);
void ma_finalize(void);
/* Write the trace now (status "running"), as the periodic flush does. */
void ma_flush(void);

/* ---- runtime tracing control: while off, annotations record nothing (variables still bind) ---- */
void ma_set_tracing(void);
void ma_unset_tracing(void);

/* ---- variables: visible in the loop/subroutine that declares them and below it ---- */
void ma_def_variable_int(const char *name, long long value);
void ma_def_variable_double(const char *name, double value);
/* A derived variable: the runtime evaluates `expr` and binds the result; `value` (the program's own
 * number, or MA_NO_VALUE) is recorded as measured and compared with the evaluation. */
void ma_def_variable_assign_int(const char *name, const char *expr, long long value);

/* ---- structure and assertions ---- */
void ma_loop_start(const char *id, const char *expr, long long value);
/* the measured trip count (MA_NO_VALUE: the ma_loop_next calls, when the loop made them; else none) */
void ma_loop_end(const char *id, long long iterations);
/* At the start of every iteration of loop `id` (its innermost open loop): counts the iteration, and inside it
 * every expression may use `iter`, the iteration from 0 ("1 + min(iter, 1)": once in the first, twice after). */
void ma_loop_next(const char *id);
void ma_subroutine_start(const char *id);
void ma_subroutine_end(const char *id);
void ma_flop_start(const char *id, const char *expr, long long value);
void ma_flop_stop(const char *id);
void ma_loadstore_start(const char *id, const char *expr, long long value);
void ma_loadstore_stop(const char *id);
/* Net heap bytes allocated inside the region and still allocated at its end. */
void ma_heap_memory_start(const char *id, const char *expr, long long value);
void ma_heap_memory_stop(const char *id);
/* Stack bytes used inside the region: asserted and modelled like the others, but no C counter measures them
 * (the calls count as unmeasured), as in Python's ma.stack_memory. */
void ma_stack_memory_start(const char *id, const char *expr, long long value);
void ma_stack_memory_stop(const char *id);
/* The vector paper's loop assertion (docs/vector-backend.md), in its argument order: vector load/stores,
 * vector flops and AVL (each an expression and the program's value, MA_NO_VALUE / NAN when it has none)
 * and the MV score (0..3 = 2*vectorised + multithreaded). No site-tree node: a record per (enclosing site,
 * id) in the trace's `vector_loops`, measured under the maflops Valgrind tool. */
void ma_vec_loop_start(const char *id, const char *vloadstore, long long vloadstore_value, const char *vflops,
                       long long vflops_value, const char *avl, double avl_value, int mv);
void ma_vec_loop_stop(const char *id);
/* Inside ma_vec_loop_start/stop of `id`: its indexed loads, `gathers` reads per call (expression and value,
 * MA_NO_VALUE when the program has none) of an array of `bytes` bytes (likewise), timed by the vector
 * backend on the measured gather curves (Python: ma.vec_loop(..., gathers=, gathered_bytes=)). */
void ma_vec_loop_gathers(const char *id, const char *gathers, long long gathers_value, const char *bytes,
                         long long bytes_value);

/* ---- MPI assertions: `expr` = bytes per message, `count` = number of calls ----
 * Placed just before the MPI call(s) they describe (paper, Figure 4). The assertion measures the next
 * `count` calls of its type (ma_mpi_send: MPI_Send/Bsend/Ssend/Rsend, ...; see docs/c-api.md); it
 * closes after the count-th call, or earlier at the next assertion of the same type, at the end of the
 * enclosing loop/subroutine, or at finalisation -- whichever comes first. */
void ma_mpi(const char *type, const char *id, const char *expr, long long value, const char *count_expr,
            long long count);
void ma_mpi_send(const char *id, const char *expr, long long value, long long count);
void ma_mpi_isend(const char *id, const char *expr, long long value, long long count);
void ma_mpi_recv(const char *id, const char *expr, long long value, long long count);
void ma_mpi_irecv(const char *id, const char *expr, long long value, long long count);
void ma_mpi_sendrecv(const char *id, const char *expr, long long value, long long count);
void ma_mpi_bcast(const char *id, const char *expr, long long value, long long count);
void ma_mpi_reduce(const char *id, const char *expr, long long value, long long count);
void ma_mpi_allreduce(const char *id, const char *expr, long long value, long long count);
void ma_mpi_gather(const char *id, const char *expr, long long value, long long count);
void ma_mpi_scatter(const char *id, const char *expr, long long value, long long count);
void ma_mpi_allgather(const char *id, const char *expr, long long value, long long count);
void ma_mpi_alltoall(const char *id, const char *expr, long long value, long long count);
void ma_mpi_barrier(const char *id, const char *expr, long long value, long long count);
/* The partner of the MPI assertion just made (the destination or source rank of its point-to-point calls,
 * the root of a rooted collective), as an expression of the variables in scope; the program declares `rank`
 * (ma_def_variable_int("rank", rank)). Checked against every call the assertion measures: its PASS/FAIL
 * go into the trace's `peers` list (docs/trace-format.md). Call it right after ma_mpi_send(...) & co. */
void ma_mpi_peer(const char *expr);

/* ---- the same calls with the source location (the macros below pass __FILE__ and __LINE__) ---- */
void ma_def_variable_int_at(const char *name, long long value, const char *file, int line);
void ma_def_variable_double_at(const char *name, double value, const char *file, int line);
void ma_def_variable_assign_int_at(const char *name, const char *expr, long long value, const char *file,
                                   int line);
void ma_start_at(const char *type, const char *id, const char *expr, long long value, const char *file, int line);
void ma_end_at(const char *type, const char *id, long long measured, const char *file, int line);
void ma_loop_next_at(const char *id, const char *file, int line);
void ma_vec_loop_start_at(const char *id, const char *vloadstore, long long vloadstore_value, const char *vflops,
                          long long vflops_value, const char *avl, double avl_value, int mv, const char *file,
                          int line);
void ma_vec_loop_stop_at(const char *id, const char *file, int line);
void ma_vec_loop_gathers_at(const char *id, const char *gathers, long long gathers_value, const char *bytes,
                            long long bytes_value, const char *file, int line);
void ma_mpi_at(const char *type, const char *id, const char *expr, long long value, const char *count_expr,
               long long count, const char *file, int line);
void ma_mpi_peer_at(const char *expr, const char *file, int line);

/* ---- utility: evaluate `expr` with `bindings` ("n=4, x=2.5") without touching the runtime ----
 * Writes the value (JSON number text) or the error message into out; returns 0, or -1 on error. */
int ma_evaluate(const char *expr, const char *bindings, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

/* ---- the SDK fence of the maflops Valgrind tool (ma_runtime/csrc/ma_vgcount.h, MA_VG_REQ_SDK_ENTER/LEAVE) ----
 * Under `ma run --counters valgrind` the tool leaves out what runs between the two requests, so every call below
 * is bracketed in the program's own code: a flop or loadstore region counts the program, not the runtime, down
 * to the call's argument set-up and return (an empty region measures 0). The request touches no memory (its
 * argument block is a static constant, the result register only clobbered); outside Valgrind it is five register
 * instructions. amd64 with GCC or Clang; elsewhere, or with -DMA_NO_VG_FENCE, the calls are plain calls. */
#define MA__VG_SDK_ENTER_CODE (((unsigned long)'M' << 24 | (unsigned long)'F' << 16) + 6)
#define MA__VG_SDK_LEAVE_CODE (((unsigned long)'M' << 24 | (unsigned long)'F' << 16) + 7)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(MA_NO_VG_FENCE)
static const unsigned long ma__vg_sdk_enter[6] __attribute__((unused)) = {MA__VG_SDK_ENTER_CODE, 0, 0, 0, 0, 0};
static const unsigned long ma__vg_sdk_leave[6] __attribute__((unused)) = {MA__VG_SDK_LEAVE_CODE, 0, 0, 0, 0, 0};
#define MA__VG_FENCE(args)                                                                           \
    __asm__ volatile("rolq $3, %%rdi ; rolq $13, %%rdi\n\trolq $61, %%rdi ; rolq $51, %%rdi\n\t" \
                     "xchgq %%rbx, %%rbx" : : "a"(args) : "rdx", "cc", "memory")
#define MA__FENCED(call) (__extension__({ MA__VG_FENCE(ma__vg_sdk_enter); call; MA__VG_FENCE(ma__vg_sdk_leave); }))
#else
#define MA__FENCED(call) (call)
#endif

#ifndef MA_NO_SOURCE_LOCATION
#define ma_def_variable_int(name, value) \
    MA__FENCED(ma_def_variable_int_at((name), (value), __FILE__, __LINE__))
#define ma_def_variable_double(name, value) \
    MA__FENCED(ma_def_variable_double_at((name), (value), __FILE__, __LINE__))
#define ma_def_variable_assign_int(name, expr, value) \
    MA__FENCED(ma_def_variable_assign_int_at((name), (expr), (value), __FILE__, __LINE__))
#define ma_loop_start(id, expr, value) \
    MA__FENCED(ma_start_at("loop", (id), (expr), (value), __FILE__, __LINE__))
#define ma_loop_end(id, iterations) \
    MA__FENCED(ma_end_at("loop", (id), (iterations), __FILE__, __LINE__))
#define ma_loop_next(id) \
    MA__FENCED(ma_loop_next_at((id), __FILE__, __LINE__))
#define ma_subroutine_start(id) \
    MA__FENCED(ma_start_at("subroutine", (id), NULL, MA_NO_VALUE, __FILE__, __LINE__))
#define ma_subroutine_end(id) \
    MA__FENCED(ma_end_at("subroutine", (id), MA_NO_VALUE, __FILE__, __LINE__))
#define ma_flop_start(id, expr, value) \
    MA__FENCED(ma_start_at("flop", (id), (expr), (value), __FILE__, __LINE__))
#define ma_flop_stop(id) \
    MA__FENCED(ma_end_at("flop", (id), MA_NO_VALUE, __FILE__, __LINE__))
#define ma_loadstore_start(id, expr, value) \
    MA__FENCED(ma_start_at("loadstore", (id), (expr), (value), __FILE__, __LINE__))
#define ma_loadstore_stop(id) \
    MA__FENCED(ma_end_at("loadstore", (id), MA_NO_VALUE, __FILE__, __LINE__))
#define ma_heap_memory_start(id, expr, value) \
    MA__FENCED(ma_start_at("heap_memory", (id), (expr), (value), __FILE__, __LINE__))
#define ma_heap_memory_stop(id) \
    MA__FENCED(ma_end_at("heap_memory", (id), MA_NO_VALUE, __FILE__, __LINE__))
#define ma_stack_memory_start(id, expr, value) \
    MA__FENCED(ma_start_at("stack_memory", (id), (expr), (value), __FILE__, __LINE__))
#define ma_stack_memory_stop(id) \
    MA__FENCED(ma_end_at("stack_memory", (id), MA_NO_VALUE, __FILE__, __LINE__))
#define ma_vec_loop_start(id, vls, vls_value, vfl, vfl_value, avl, avl_value, mv) \
    MA__FENCED(ma_vec_loop_start_at((id), (vls), (vls_value), (vfl), (vfl_value), (avl), (avl_value), (mv), \
                                    __FILE__, __LINE__))
#define ma_vec_loop_stop(id) \
    MA__FENCED(ma_vec_loop_stop_at((id), __FILE__, __LINE__))
#define ma_vec_loop_gathers(id, gathers, gathers_value, bytes, bytes_value) \
    MA__FENCED(ma_vec_loop_gathers_at((id), (gathers), (gathers_value), (bytes), (bytes_value), __FILE__, __LINE__))
#define ma_mpi(type, id, expr, value, count_expr, count) \
    MA__FENCED(ma_mpi_at((type), (id), (expr), (value), (count_expr), (count), __FILE__, __LINE__))
#define ma_mpi_peer(expr) \
    MA__FENCED(ma_mpi_peer_at((expr), __FILE__, __LINE__))
#define MA__MPI(type, id, expr, value, count) \
    MA__FENCED(ma_mpi_at(type, (id), (expr), (value), NULL, (count), __FILE__, __LINE__))
#define ma_mpi_send(id, expr, value, count) MA__MPI("mpi_send", id, expr, value, count)
#define ma_mpi_isend(id, expr, value, count) MA__MPI("mpi_isend", id, expr, value, count)
#define ma_mpi_recv(id, expr, value, count) MA__MPI("mpi_recv", id, expr, value, count)
#define ma_mpi_irecv(id, expr, value, count) MA__MPI("mpi_irecv", id, expr, value, count)
#define ma_mpi_sendrecv(id, expr, value, count) MA__MPI("mpi_sendrecv", id, expr, value, count)
#define ma_mpi_bcast(id, expr, value, count) MA__MPI("mpi_bcast", id, expr, value, count)
#define ma_mpi_reduce(id, expr, value, count) MA__MPI("mpi_reduce", id, expr, value, count)
#define ma_mpi_allreduce(id, expr, value, count) MA__MPI("mpi_allreduce", id, expr, value, count)
#define ma_mpi_gather(id, expr, value, count) MA__MPI("mpi_gather", id, expr, value, count)
#define ma_mpi_scatter(id, expr, value, count) MA__MPI("mpi_scatter", id, expr, value, count)
#define ma_mpi_allgather(id, expr, value, count) MA__MPI("mpi_allgather", id, expr, value, count)
#define ma_mpi_alltoall(id, expr, value, count) MA__MPI("mpi_alltoall", id, expr, value, count)
#define ma_mpi_barrier(id, expr, value, count) MA__MPI("mpi_barrier", id, expr, value, count)
#endif /* MA_NO_SOURCE_LOCATION */

#endif /* MA_DISABLE */
#endif /* MA_H */
