! every_routine.F90 -- each MPI routine libmapmpi counts, called from Fortran a known number of times with known
! sizes, on 2 ranks (rank 0 and 1 are partners). Compiled with `use mpi`, or with -DUSE_F08 for `use mpi_f08`;
! tests/test_fortran_mpi.py compares the trace's mpi_profile with what this program does (the table there).
! Counts are MPI_INTEGER elements (4 bytes); each routine has its own count, so a byte total says which call
! it came from. No annotation: the profile alone is checked (ma_init starts the runtime).
program every_routine
#ifdef USE_F08
    use mpi_f08
    use, intrinsic :: iso_c_binding, only: c_ptr
#else
    use mpi
#endif
    use ma
    implicit none
#ifdef USE_F08
    type(MPI_Request) :: requests(2)
    type(MPI_Status) :: status
    type(MPI_Message) :: message
    type(c_ptr) :: detached
#else
    integer :: requests(2)
    integer :: status(MPI_STATUS_SIZE)
    integer :: message
#endif
    integer :: ierr, rank, nprocs, partner, i, index, outcount, indices(2)
    integer :: a(64), b(64), c(64), counts(2), displs(2)
    integer, allocatable :: attached(:)
    logical :: flag

    call MPI_Init(ierr)
    call ma_init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
    partner = 1 - rank
    a = rank
    b = -1

    ! point to point, blocking: Send/Recv (3, MPI_STATUS_IGNORE), Ssend/Recv (5, a status)
    if (rank == 0) then
        call MPI_Send(a, 3, MPI_INTEGER, partner, 1, MPI_COMM_WORLD, ierr)
        call MPI_Recv(b, 3, MPI_INTEGER, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        call MPI_Ssend(a, 5, MPI_INTEGER, partner, 2, MPI_COMM_WORLD, ierr)
        call MPI_Recv(b, 5, MPI_INTEGER, partner, 2, MPI_COMM_WORLD, status, ierr)
    else
        call MPI_Recv(b, 3, MPI_INTEGER, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        call MPI_Send(a, 3, MPI_INTEGER, partner, 1, MPI_COMM_WORLD, ierr)
        call MPI_Recv(b, 5, MPI_INTEGER, partner, 2, MPI_COMM_WORLD, status, ierr)
        call MPI_Ssend(a, 5, MPI_INTEGER, partner, 2, MPI_COMM_WORLD, ierr)
    end if

    ! buffered: Bsend (2) and Ibsend (6), received by Recv with a larger buffer (what arrived counts)
    allocate(attached(1024))
    call MPI_Buffer_attach(attached, 4096, ierr)
    call MPI_Bsend(a, 2, MPI_INTEGER, partner, 3, MPI_COMM_WORLD, ierr)
    call MPI_Recv(b, 64, MPI_INTEGER, partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Ibsend(a, 6, MPI_INTEGER, partner, 4, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Recv(b, 64, MPI_INTEGER, partner, 4, MPI_COMM_WORLD, status, ierr)
    call MPI_Wait(requests(1), MPI_STATUS_IGNORE, ierr)
#ifdef USE_F08
    call MPI_Buffer_detach(detached, i, ierr)
#else
    call MPI_Buffer_detach(attached, i, ierr)
#endif

    ! ready sends after the matching receive is posted: Rsend (4), Irsend (7)
    call MPI_Irecv(b, 4, MPI_INTEGER, partner, 5, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Irecv(c, 7, MPI_INTEGER, partner, 6, MPI_COMM_WORLD, requests(2), ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Rsend(a, 4, MPI_INTEGER, partner, 5, MPI_COMM_WORLD, ierr)
    call MPI_Irsend(a, 7, MPI_INTEGER, partner, 6, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)

    ! nonblocking: Isend (8) + Irecv (8) + Waitany/Wait, Issend (9) + Recv + Waitsome
    call MPI_Irecv(b, 8, MPI_INTEGER, partner, 7, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Isend(a, 8, MPI_INTEGER, partner, 7, MPI_COMM_WORLD, requests(2), ierr)
    call MPI_Waitany(2, requests, index, MPI_STATUS_IGNORE, ierr)
    call MPI_Wait(requests(3 - index), MPI_STATUS_IGNORE, ierr)
    call MPI_Issend(a, 9, MPI_INTEGER, partner, 8, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Recv(b, 9, MPI_INTEGER, partner, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Waitsome(1, requests(1:1), outcount, indices, MPI_STATUSES_IGNORE, ierr)

    ! tests: Test, Testall, Testany, Testsome until done (called at least once each; the count varies)
    call MPI_Irecv(b, 10, MPI_INTEGER, partner, 9, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Isend(a, 10, MPI_INTEGER, partner, 9, MPI_COMM_WORLD, requests(2), ierr)
    flag = .false.
    do while (.not. flag)
        call MPI_Testall(2, requests, flag, MPI_STATUSES_IGNORE, ierr)
    end do
    call MPI_Irecv(b, 11, MPI_INTEGER, partner, 10, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Isend(a, 11, MPI_INTEGER, partner, 10, MPI_COMM_WORLD, requests(2), ierr)
    flag = .false.
    do while (.not. flag)
        call MPI_Test(requests(1), flag, MPI_STATUS_IGNORE, ierr)
    end do
    flag = .false.
    do while (.not. flag)
        call MPI_Testany(1, requests(2:2), index, flag, MPI_STATUS_IGNORE, ierr)
    end do
    call MPI_Irecv(b, 12, MPI_INTEGER, partner, 11, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Send(a, 12, MPI_INTEGER, partner, 11, MPI_COMM_WORLD, ierr)
    outcount = 0
    do while (outcount == 0)
        call MPI_Testsome(1, requests(1:1), outcount, indices, MPI_STATUSES_IGNORE, ierr)
    end do

    ! probes: Probe + Recv (13), Iprobe until found + Recv (14), Mprobe + Mrecv (15), Improbe + Imrecv (16)
    call MPI_Send(a, 13, MPI_INTEGER, partner, 12, MPI_COMM_WORLD, ierr)
    call MPI_Probe(partner, 12, MPI_COMM_WORLD, status, ierr)
    call MPI_Recv(b, 13, MPI_INTEGER, partner, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Isend(a, 14, MPI_INTEGER, partner, 13, MPI_COMM_WORLD, requests(1), ierr)
    flag = .false.
    do while (.not. flag)
        call MPI_Iprobe(partner, 13, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
    end do
    call MPI_Recv(b, 14, MPI_INTEGER, partner, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Wait(requests(1), MPI_STATUS_IGNORE, ierr)
    call MPI_Isend(a, 15, MPI_INTEGER, partner, 14, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Mprobe(partner, 14, MPI_COMM_WORLD, message, MPI_STATUS_IGNORE, ierr)
    call MPI_Mrecv(b, 15, MPI_INTEGER, message, MPI_STATUS_IGNORE, ierr)
    call MPI_Wait(requests(1), MPI_STATUS_IGNORE, ierr)
    call MPI_Isend(a, 16, MPI_INTEGER, partner, 15, MPI_COMM_WORLD, requests(1), ierr)
    flag = .false.
    do while (.not. flag)
        call MPI_Improbe(partner, 15, MPI_COMM_WORLD, flag, message, status, ierr)
    end do
    call MPI_Imrecv(b, 16, MPI_INTEGER, message, requests(2), ierr)
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)

    ! exchanges: Sendrecv (17 sent, 17 received), Sendrecv_replace (18)
    call MPI_Sendrecv(a, 17, MPI_INTEGER, partner, 16, b, 17, MPI_INTEGER, partner, 16, MPI_COMM_WORLD, &
                      MPI_STATUS_IGNORE, ierr)
    call MPI_Sendrecv_replace(c, 18, MPI_INTEGER, partner, 17, partner, 17, MPI_COMM_WORLD, status, ierr)

    ! collectives (root 0): Bcast 19, Reduce 20, Allreduce 21, Gather 22, Gather in place at the root (23 per
    ! rank), Gatherv 24, Scatter 25, Scatterv 26, Allgather 27, Allgatherv 28, Alltoall 29 per rank, Alltoallv
    ! 30 per rank, Barrier (three in all, with the two above)
    call MPI_Bcast(a, 19, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_Reduce(a, b, 20, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(a, b, 21, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Gather(a, 22, MPI_INTEGER, b, 22, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        call MPI_Gather(MPI_IN_PLACE, 0, MPI_INTEGER, b, 23, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    else
        call MPI_Gather(a, 23, MPI_INTEGER, b, 23, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    end if
    counts = 24
    displs = [0, 24]
    call MPI_Gatherv(a, 24, MPI_INTEGER, b, counts, displs, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_Scatter(a, 25, MPI_INTEGER, b, 25, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    counts = 26
    displs = [0, 26]
    call MPI_Scatterv(a, counts, displs, MPI_INTEGER, b, 26, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call MPI_Allgather(a, 27, MPI_INTEGER, b, 27, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    counts = 28
    displs = [0, 28]
    call MPI_Allgatherv(a, 28, MPI_INTEGER, b, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call MPI_Alltoall(a, 29, MPI_INTEGER, b, 29, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    counts = 30
    displs = [0, 30]
    call MPI_Alltoallv(a, counts, displs, MPI_INTEGER, b, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)

    if (rank == 0) print '(a)', 'every_routine: done'
    call MPI_Finalize(ierr)
end program every_routine
