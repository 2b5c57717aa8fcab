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
   use ma
   use cg_classes, only: dp, cgitmax, problem_class, lookup_class, official_op_count, rcond, verify_epsilon
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
   call declare_parameters()
   call ma_subroutine_start('setup')
   state = npb_seed
   unused = randlc(state, npb_multiplier)       ! NPB discards the first draw before makea
   call makea(part, problem%nonzer, problem%shift, rcond, state, mat, ok)
   if (.not. ok) call fail('Space for matrix elements exceeded in makea', 2)
   call allocate_vectors()
   call ma_subroutine_end('setup')
   t_init = mpi_wtime() - t_start
   if (me == root) call print_banner()

   ! One untimed iteration pages in code and data; then x starts over.
   x(1:part%naa() + 1) = 1.0_dp
   call ma_subroutine_start('warmup')
   call power_step(rnorm, zeta)
   call ma_subroutine_end('warmup')
   x(1:part%naa() + 1) = 1.0_dp

   call ma_mpi_barrier('start_barrier', '0', 0, 1)
   call mpi_barrier(MPI_COMM_WORLD, ierr)
   if (me == root) write (output_unit, '(/,a)') '   iteration           ||r||                 zeta'
   t_start = mpi_wtime()
   call ma_loop_start('conj_loop', 'niter', niter)
   do it = 1, niter
      call power_step(rnorm, zeta)
      if (me == root) write (output_unit, '(4x,i5,6x,e21.14,f20.13)') it, rnorm, zeta
   end do
   call ma_loop_end('conj_loop', it - 1)
   t_local(1) = mpi_wtime() - t_start

   call ma_mpi_reduce('time_reduce', 'dp', 8, 1)
   call ma_mpi_peer('0')
   call mpi_reduce(t_local, t_max, 1, MPI_DOUBLE_PRECISION, MPI_MAX, root, MPI_COMM_WORLD, ierr)
   status = 0
   if (me == root) then
      mops = 0.0_dp
      if (t_max(1) > 0.0_dp) mops = 1.0e-6_dp*official_op_count(problem%na, problem%nonzer, niter)/t_max(1)
      err = abs(zeta - problem%zeta_verify)/problem%zeta_verify
      call print_report(err, t_max(1), mops, status)
   end if
   call mpi_finalize(ierr)
   if (status /= 0) call exit(status)      ! the root's status: the launcher reports the worst rank's

contains

   ! The model's inputs and the derived grid shape, with the MA paper's expressions (Figure 4); `rank`
   ! for the partner assertions. Declared outside every site: visible to all of them.
   subroutine declare_parameters()
      call ma_def_variable_int('na', problem%na)
      call ma_def_variable_int('nonzer', problem%nonzer)
      call ma_def_variable_int('niter', niter)
      call ma_def_variable_int('nprocs', nprocs)
      call ma_def_variable_int('rank', me)
      call ma_def_variable_int('cgitmax', cgitmax)
      call ma_def_variable_int('dp', 8)              ! bytes of a double
      call ma_def_variable_assign_int('num_proc_cols', '2^ceil(log(nprocs)/(2*log(2)))', part%num_proc_cols)
      call ma_def_variable_assign_int('num_proc_rows', '2^floor(log(nprocs)/(2*log(2)))', part%num_proc_rows)
      call ma_def_variable_assign_int('l2npcols', 'log(num_proc_cols)/log(2)', part%l2npcols)
   end subroutine declare_parameters

   ! One inverse-power iteration: z solves A z = x, zeta = shift + 1/(x.z), x = z/||z||.
   subroutine power_step(rnorm, zeta)
      real(dp), intent(out) :: rnorm, zeta
      real(dp) :: xz, zz, norms(2), inv_norm
      integer :: j, n

      call conj_grad(rnorm)
      n = part%ncols()
      call ma_flop_start('flopzeta', '4*na/num_proc_cols', 4*problem%na/part%num_proc_cols)
      call ma_loadstore_start('flopzeta_ls', '2*na/num_proc_cols', 2*n)
      xz = 0.0_dp
      zz = 0.0_dp
      do j = 1, n
         xz = xz + x(j)*z(j)
         zz = zz + z(j)*z(j)
      end do
      call ma_loadstore_stop('flopzeta_ls')
      call ma_flop_stop('flopzeta')
      norms = [xz, zz]
      call row_sum(norms, 2, 'dp*2', 'norm_red', 'norm_rcv', 'norm_snd')
      zeta = problem%shift + 1.0_dp/norms(1)
      inv_norm = 1.0_dp/sqrt(norms(2))
      call ma_flop_start('normalize', 'na/num_proc_cols', n)
      call ma_loadstore_start('normalize_ls', '2*na/num_proc_cols', 2*n)
      do j = 1, n
         x(j) = inv_norm*z(j)
      end do
      call ma_loadstore_stop('normalize_ls')
      call ma_flop_stop('normalize')
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
