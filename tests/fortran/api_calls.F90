! api_calls.F90 -- every call of the Fortran module once, in the order of api_calls.c, which makes the same calls
! through ma.h: tests/test_fortran.py checks that both write the same trace. Also what only Fortran has:
! 4- and 8-byte integers, a blank-padded CHARACTER variable, a C_NULL_CHAR a C habit appends, and a variable
! whose text changes between calls at the same address.
program api_calls
    use, intrinsic :: iso_c_binding, only: c_null_char
    use, intrinsic :: iso_fortran_env, only: int64
    use ma
    implicit none
    integer :: n, i, k, status
    character(len=16) :: padded, changing
    character(len=40) :: text

    n = 10
    call ma_def_variable_int('n', n)
    call ma_def_variable_int('big', 3000000000_int64)
    call ma_def_variable_double('x', 2.5d0)
    call ma_def_variable_double('y', 0.5)
    call ma_def_variable_assign_int('m', '2*n', 2*n)
    call ma_def_variable_assign_int('bad', 'n+1', n)
    call ma_subroutine_start('main')
    call ma_loop_start('outer', 'n', n)
    do i = 1, n
        call ma_flop_start('f', 'm', MA_NO_VALUE)
        call ma_flop_stop('f')
        call ma_loadstore_start('ls', 'n*4', 4*n)
        call ma_loadstore_stop('ls')
    end do
    call ma_loop_end('outer', i - 1)
    padded = 'padded'
    call ma_loop_start(padded, 'big/1000000', 3000_int64)
    call ma_loop_end(padded, 3000_int64)
    call ma_loop_start('nul'//c_null_char, 'n'//c_null_char, n)
    call ma_loop_end('nul', n)
    call ma_heap_memory_start('h', '0', 0)
    call ma_heap_memory_stop('h')
    call ma_stack_memory_start('s', '8*n', 8*n)
    call ma_stack_memory_stop('s')
    call ma_unset_tracing()
    call ma_loop_start('hidden', 'n', n)
    call ma_loop_end('hidden', n)
    call ma_set_tracing()
    do k = 1, 2
        if (k == 1) then
            changing = 'n'
        else
            changing = 'n+1'
        end if
        call ma_loop_start('changing', changing, MA_NO_VALUE)
        call ma_loop_end('changing', n)
    end do
    call ma_mpi_send('s0', '8*n', 8*n, 0)
    call ma_mpi('mpi_bcast', 'b0', '8', 8_int64, 'n-10', 0)
    call ma_mpi_peer('0')
    call ma_mpi_allreduce('a0', 'n/0', MA_NO_VALUE, 0_int64)
    call ma_vec_loop_start('v', 'n', 10, '2*n', 20_int64, 'n/2', 5.0d0, 2)
    call ma_vec_loop_gathers('v', 'n', MA_NO_VALUE, '8*n', 80)
    call ma_vec_loop_stop('v')
    call ma_vec_loop_start('w', 'n', MA_NO_VALUE, 'n', MA_NO_VALUE, 'n', MA_NO_REAL_VALUE, 0)
    call ma_vec_loop_stop('w')
    call ma_subroutine_end('main')
    call ma_loop_end('notopen', 1)
    status = ma_evaluate('2^k + n', 'k=3, n=2', text)
    print '(i0, 1x, a)', status, trim(text)
    status = ma_evaluate('1/', '', text)
    print '(i0, 1x, a)', status, trim(text)
    call ma_finalize()
end program api_calls
