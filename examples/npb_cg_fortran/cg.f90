! NPB 3.4 CG, a Fortran 90 + MPI port: the inverse power method for the smallest eigenvalue of a
! random sparse symmetric positive definite matrix, each step solved by conjugate gradients.
!
!    mpiexec -n P ./cg --class S [--niter N]
!
! P must be a power of two. Exit status: 0 verified (or no verification asked for, with a
! non-standard --niter), 1 verification failed, 2 bad process count, class or iteration count.
program cg
   use, intrinsic :: iso_fortran_env, only: int64, output_unit, error_unit
   use mpi
   use cg_classes, only: dp, problem_class, lookup_class, official_op_count, rcond, verify_epsilon
   use cg_grid, only: process_grid, decompose
   use cg_makea, only: makea
   use cg_random, only: randlc, npb_seed, npb_multiplier
   use cg_solver, only: part, mat, x, z, allocate_vectors, conj_grad, row_sum
   implicit none

   integer, parameter :: root = 0
   type(problem_class) :: problem
   integer :: ierr, me, nprocs, niter, it, rows, cols, status
   integer(int64) :: state
   real(dp) :: rnorm, zeta, err, t_start, t_init, t_local(1), t_max(1), mops, unused
   logical :: ok, verify
   character(len=200) :: message

   call mpi_init(ierr)
   call mpi_comm_rank(MPI_COMM_WORLD, me, ierr)
   call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)

   call parse_arguments(problem, niter, message)
   if (len_trim(message) == 0) then
      call process_grid(nprocs, rows, cols, ok)
      if (.not. ok) then
         write (message, '(a,i0,a)') 'Number of processes (', nprocs, ') is not a power of two'
      else if (problem%na < 2*cols) then
         write (message, '(a,i0,a,i0,a)') 'na=', problem%na, ' is too small for ', nprocs, ' processes'
      end if
   end if
   if (len_trim(message) > 0) call fail(trim(message), 2)
   verify = niter == problem%niter

   t_start = mpi_wtime()
   call decompose(problem%na, nprocs, me, part)
   state = npb_seed
   unused = randlc(state, npb_multiplier)       ! NPB discards the first draw before makea
   call makea(part, problem%nonzer, problem%shift, rcond, state, mat, ok)
   if (.not. ok) call fail('Space for matrix elements exceeded in makea', 2)
   call allocate_vectors()
   t_init = mpi_wtime() - t_start
   if (me == root) call print_banner()

   ! One untimed iteration pages in code and data; then x starts over.
   x(1:part%naa() + 1) = 1.0_dp
   call power_step(rnorm, zeta)
   x(1:part%naa() + 1) = 1.0_dp

   call mpi_barrier(MPI_COMM_WORLD, ierr)
   if (me == root) write (output_unit, '(/,a)') '   iteration           ||r||                 zeta'
   t_start = mpi_wtime()
   do it = 1, niter
      call power_step(rnorm, zeta)
      if (me == root) write (output_unit, '(4x,i5,6x,e21.14,f20.13)') it, rnorm, zeta
   end do
   t_local(1) = mpi_wtime() - t_start

   call mpi_reduce(t_local, t_max, 1, MPI_DOUBLE_PRECISION, MPI_MAX, root, MPI_COMM_WORLD, ierr)
   status = 0
   if (me == root) then
      mops = 0.0_dp
      if (t_max(1) > 0.0_dp) mops = 1.0e-6_dp*official_op_count(problem%na, problem%nonzer, niter)/t_max(1)
      err = abs(zeta - problem%zeta_verify)/problem%zeta_verify
      call print_report(err, t_max(1), mops, status)
   end if
   call mpi_bcast(status, 1, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
   call mpi_finalize(ierr)
   if (status /= 0) call exit(status)

contains

   ! One inverse-power iteration: z solves A z = x, zeta = shift + 1/(x.z), x = z/||z||.
   subroutine power_step(rnorm, zeta)
      real(dp), intent(out) :: rnorm, zeta
      real(dp) :: norms(2)
      integer :: j

      call conj_grad(rnorm)
      norms = 0.0_dp
      do j = 1, part%ncols()
         norms(1) = norms(1) + x(j)*z(j)
         norms(2) = norms(2) + z(j)*z(j)
      end do
      call row_sum(norms, 2)
      zeta = problem%shift + 1.0_dp/norms(1)
      norms(2) = 1.0_dp/sqrt(norms(2))
      do j = 1, part%ncols()
         x(j) = norms(2)*z(j)
      end do
   end subroutine power_step

   ! --class LETTER and --niter N; message is blank when both are usable.
   subroutine parse_arguments(problem, niter, message)
      type(problem_class), intent(out) :: problem
      integer, intent(out) :: niter
      character(len=*), intent(out) :: message
      character(len=64) :: arg, val
      character :: letter
      integer :: i, nargs, ios
      logical :: found

      letter = 'S'
      niter = -1
      message = ''
      nargs = command_argument_count()
      i = 1
      do while (i <= nargs)
         call get_command_argument(i, arg)
         if (arg /= '--class' .and. arg /= '-c' .and. arg /= '--niter') then
            message = 'unknown argument '//trim(arg)//' (usage: cg [--class S|W|A|B|C|D] [--niter N])'
            return
         end if
         if (i == nargs) then
            message = trim(arg)//' needs a value'
            return
         end if
         call get_command_argument(i + 1, val)
         if (arg == '--niter') then
            read (val, *, iostat=ios) niter
            if (ios /= 0 .or. niter < 1) then
               message = '--niter '//trim(val)//': expected a positive number of iterations'
               return
            end if
         else
            if (len_trim(val) /= 1) then
               message = 'class '//trim(val)//': expected one of S, W, A, B, C, D'
               return
            end if
            letter = val(1:1)
         end if
         i = i + 2
      end do
      call lookup_class(letter, problem, found)
      if (.not. found) then
         message = 'class '//letter//': expected one of S, W, A, B, C, D'
         return
      end if
      if (niter < 0) niter = problem%niter
   end subroutine parse_arguments

   ! Every rank reaches this with the same message: the root says it, all leave with `code`.
   subroutine fail(text, code)
      character(len=*), intent(in) :: text
      integer, intent(in) :: code
      integer :: ierr

      if (me == root) write (error_unit, '(a)') 'cg: '//text
      call mpi_finalize(ierr)
      call exit(code)
   end subroutine fail

   subroutine print_banner()
      write (output_unit, '(//,a,/)') ' NAS Parallel Benchmarks 3.4 -- CG Benchmark (Fortran 90 port)'
      write (output_unit, '(a,i10,a,a,a)') ' Size: ', problem%na, '  (class ', problem%name, ')'
      write (output_unit, '(a,i5)') ' Iterations: ', niter
      write (output_unit, '(a,i5)') ' Number of processes: ', nprocs
      write (output_unit, '(a,i8)') ' Number of nonzeroes per row: ', problem%nonzer
      write (output_unit, '(a,f9.3)') ' Eigenvalue shift: ', problem%shift
      write (output_unit, '(a,f15.3,a)') ' Initialization time = ', t_init, ' seconds'
   end subroutine print_banner

   subroutine print_report(err, time, mops, status)
      real(dp), intent(in) :: err, time, mops
      integer, intent(out) :: status
      character(len=13) :: verdict

      write (output_unit, '(/,a)') ' Benchmark completed '
      status = 0
      if (.not. verify) then
         write (output_unit, '(a,i0,a,a,a,i0,a)') ' NO VERIFICATION PERFORMED (niter=', niter, ', class ', &
            problem%name, ' verifies after ', problem%niter, ')'
         write (output_unit, '(a,e20.13)') ' Zeta is    ', zeta
         verdict = 'NOT PERFORMED'
      else if (err <= verify_epsilon) then        ! false for a NaN error
         write (output_unit, '(a)') ' VERIFICATION SUCCESSFUL '
         write (output_unit, '(a,e20.13)') ' Zeta is    ', zeta
         write (output_unit, '(a,e20.13)') ' Error is   ', err
         verdict = 'SUCCESSFUL'
      else
         write (output_unit, '(a)') ' VERIFICATION FAILED'
         write (output_unit, '(a,e20.13)') ' Zeta                ', zeta
         write (output_unit, '(a,e20.13)') ' The correct zeta is ', problem%zeta_verify
         write (output_unit, '(a,e20.13)') ' Error is   ', err
         verdict = 'UNSUCCESSFUL'
         status = 1
      end if
      write (output_unit, '(//,a)') ' CG Benchmark Completed.'
      write (output_unit, '(a,12x,a12)') ' Class           = ', problem%name
      write (output_unit, '(a,12x,i12)') ' Size            = ', problem%na
      write (output_unit, '(a,12x,i12)') ' Iterations      = ', niter
      write (output_unit, '(a,12x,f12.2)') ' Time in seconds = ', time
      write (output_unit, '(a,12x,i12)') ' Total processes = ', nprocs
      write (output_unit, '(a,12x,f12.2)') ' Mop/s total     = ', mops
      write (output_unit, '(a,12x,f12.2)') ' Mop/s/process   = ', mops/nprocs
      write (output_unit, '(a,a24)') ' Operation type  = ', 'floating point'
      write (output_unit, '(a,11x,a13)') ' Verification    = ', verdict
      write (output_unit, '(a,12x,a12,/)') ' Version         = ', '3.4 (f90)'
   end subroutine print_report

end program cg
