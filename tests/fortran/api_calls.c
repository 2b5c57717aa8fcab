/* api_calls.c -- the calls of api_calls.F90 through ma.h (without source locations, as Fortran has none). */
#define MA_NO_SOURCE_LOCATION
#include <math.h>
#include <stdio.h>

#include "ma.h"

int main(void)
{
    long long n = 10, i;
    char text[64];
    ma_def_variable_int("n", n);
    ma_def_variable_int("big", 3000000000LL);
    ma_def_variable_double("x", 2.5);
    ma_def_variable_double("y", 0.5);
    ma_def_variable_assign_int("m", "2*n", 2 * n);
    ma_def_variable_assign_int("bad", "n+1", n);
    ma_subroutine_start("main");
    ma_loop_start("outer", "n", n);
    for (i = 0; i < n; i++) {
        ma_flop_start("f", "m", MA_NO_VALUE);
        ma_flop_stop("f");
        ma_loadstore_start("ls", "n*4", 4 * n);
        ma_loadstore_stop("ls");
    }
    ma_loop_end("outer", i);
    ma_loop_start("padded", "big/1000000", 3000);
    ma_loop_end("padded", 3000);
    ma_loop_start("nul", "n", n);
    ma_loop_end("nul", n);
    ma_heap_memory_start("h", "0", 0);
    ma_heap_memory_stop("h");
    ma_stack_memory_start("s", "8*n", 8 * n);
    ma_stack_memory_stop("s");
    ma_unset_tracing();
    ma_loop_start("hidden", "n", n);
    ma_loop_end("hidden", n);
    ma_set_tracing();
    for (int k = 1; k <= 2; k++) {
        ma_loop_start("changing", k == 1 ? "n" : "n+1", MA_NO_VALUE);
        ma_loop_end("changing", n);
    }
    ma_mpi_send("s0", "8*n", 8 * n, 0);
    ma_mpi("mpi_bcast", "b0", "8", 8, "n-10", 0);
    ma_mpi_peer("0");
    ma_mpi_allreduce("a0", "n/0", MA_NO_VALUE, 0);
    ma_vec_loop_start("v", "n", 10, "2*n", 20, "n/2", 5.0, 2);
    ma_vec_loop_gathers("v", "n", MA_NO_VALUE, "8*n", 80);
    ma_vec_loop_stop("v");
    ma_vec_loop_start("w", "n", MA_NO_VALUE, "n", MA_NO_VALUE, "n", NAN, 0);
    ma_vec_loop_stop("w");
    ma_subroutine_end("main");
    ma_loop_end("notopen", 1);
    int status = ma_evaluate("2^k + n", "k=3, n=2", text, sizeof text);
    printf("%d %s\n", status, text);
    status = ma_evaluate("1/", "", text, sizeof text);
    printf("%d %s\n", status, text);
    ma_finalize();
    return 0;
}
