! ring.F90 -- an annotated MPI Fortran program in the style of the MA paper (Figures 4 and 5): each iteration does
! an axpy and a dot product on the rank's block of a vector of na doubles, passes the block to the right
! neighbour in a ring, and sums the dot products over all ranks.
!
!     make                      # ring (use mpi), ring_f08 (use mpi_f08), ring_disabled (no MA library)
!     ma run -n 4 -- ./ring [na [niter]] [--wrong]
!     ma validate ma-traces
!
! --wrong adds one deliberately wrong assertion (a trip count off by one) to show a FAIL.
! SPDX-License-Identifier: BSD-3-Clause
program ring
#ifdef USE_MPI_F08
    use mpi_f08
#else
    use mpi
#endif
    use ma
    implicit none
#ifdef USE_MPI_F08
    type(MPI_Request) :: request
#else
    integer :: request
#endif
    integer, parameter :: dp = 8                        ! bytes of a double precision number
    integer :: ierr, rank, nprocs, right, left, it, i, niter, na, nlocal
    integer :: params(2)
    double precision, allocatable :: x(:), y(:), incoming(:)
    double precision :: dot, total
    character(len=32) :: word
    logical :: wrong

    call MPI_Init(ierr)                                 ! also starts the MA runtime (libmapmpi calls it)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

    params = [24000, 4]                                 ! na, niter: rank 0 reads them, the others get them
    wrong = .false.
    do i = 1, command_argument_count()
        call get_command_argument(i, word)
        if (word == '--wrong') then
            wrong = .true.
        else if (i <= 2) then
            read (word, *) params(i)
        end if
    end do
    call ma_mpi_bcast('params', '4*2', 8, 1)            ! the next broadcast carries 2 default integers
    call MPI_Bcast(params, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    na = params(1)
    niter = params(2)

    ! the input parameters, then the derived values the annotations below are written in (Figure 4)
    call ma_def_variable_int('na', na)
    call ma_def_variable_int('niter', niter)
    call ma_def_variable_int('nprocs', nprocs)
    call ma_def_variable_int('rank', rank)
    call ma_def_variable_assign_int('dp', '8', dp)
    nlocal = na / nprocs
    call ma_def_variable_assign_int('nlocal', 'floor(na/nprocs)', nlocal)

    call ma_heap_memory_start('blocks', '3*dp*nlocal', 3*dp*nlocal)
    allocate(x(nlocal), y(nlocal), incoming(nlocal))
    call ma_heap_memory_stop('blocks')
    x = [(1.0d0 / (i + rank * nlocal), i = 1, nlocal)]
    y = rank

    right = mod(rank + 1, nprocs)
    left = mod(rank + nprocs - 1, nprocs)
    call ma_subroutine_start('ring')
    call ma_loop_start('ring_loop', 'niter', niter)
    do it = 1, niter
        call ma_flop_start('flopaxpy', '2*na/nprocs', 2*nlocal)   ! Figure 5: flops of the rank's block
        y = 0.5d0 * x + y
        call ma_flop_stop('flopaxpy')
        call ma_flop_start('flopdot', '2*nlocal', 2*nlocal)
        dot = 0
        do i = 1, nlocal
            dot = dot + y(i) * y(i)
        end do
        call ma_flop_stop('flopdot')

        call ma_mpi_irecv('from_left', 'dp*nlocal', dp*nlocal, 1)   ! bytes per message, number of calls
        call ma_mpi_peer('mod(rank + nprocs - 1, nprocs)')          ! and the partner, checked per call
        call MPI_Irecv(incoming, nlocal, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, request, ierr)
        call ma_mpi_send('to_right', 'dp*nlocal', dp*nlocal, 1)
        call ma_mpi_peer('mod(rank + 1, nprocs)')
        call MPI_Send(y, nlocal, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, ierr)
        call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
        y = incoming

        call ma_mpi_allreduce('sum_dot', 'dp', dp, 1)
        call MPI_Allreduce(dot, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    end do
    call ma_loop_end('ring_loop', it - 1)                           ! the trips it made, as in Figure 4

    if (wrong) then  ! deliberately wrong: the loop runs nlocal/2 times, the assertion says one more
        call ma_loop_start('halves', 'floor(nlocal/2) + 1', MA_NO_VALUE)
        do i = 1, nlocal / 2
            x(i) = y(i)
        end do
        call ma_loop_end('halves', i - 1)
    end if
    call ma_subroutine_end('ring')

    if (rank == 0) print '(a, i0, a, i0, a, i0, a, es12.5)', 'ring: na=', na, ' niter=', niter, ' nprocs=', &
        nprocs, ' total=', total
    deallocate(x, y, incoming)
    call MPI_Finalize(ierr)                             ! writes this rank's trace before MPI shuts down
end program ring
