! Problem classes of NPB 3.4 CG: matrix order, nonzeros per generated vector, outer iterations,
! diagonal shift and the zeta every conforming run must reproduce.
module cg_classes
   use, intrinsic :: iso_fortran_env, only: int64, real64
   implicit none
   private

   integer, parameter, public :: dp = real64
   real(dp), parameter, public :: rcond = 0.1_dp         ! smallest eigenvalue bound, every class
   integer, parameter, public :: cgitmax = 25            ! CG steps per inverse-power iteration
   real(dp), parameter, public :: verify_epsilon = 1.0e-10_dp

   type, public :: problem_class
      character :: name = 'U'
      integer :: na = 0
      integer :: nonzer = 0
      integer :: niter = 0
      real(dp) :: shift = 0.0_dp
      real(dp) :: zeta_verify = 0.0_dp
   end type problem_class

   type(problem_class), parameter :: classes(6) = [ &
      problem_class('S', 1400, 7, 15, 10.0_dp, 8.5971775078648_dp), &
      problem_class('W', 7000, 8, 15, 12.0_dp, 10.362595087124_dp), &
      problem_class('A', 14000, 11, 15, 20.0_dp, 17.130235054029_dp), &
      problem_class('B', 75000, 13, 75, 60.0_dp, 22.712745482631_dp), &
      problem_class('C', 150000, 15, 75, 110.0_dp, 28.973605592845_dp), &
      problem_class('D', 1500000, 21, 100, 500.0_dp, 52.514532105794_dp)]

   public :: lookup_class, official_op_count

contains

   ! The class named by `letter` (either case); found is false for an unknown letter.
   subroutine lookup_class(letter, problem, found)
      character, intent(in) :: letter
      type(problem_class), intent(out) :: problem
      logical, intent(out) :: found
      character :: upper
      integer :: i

      upper = letter
      if (letter >= 'a' .and. letter <= 'z') upper = achar(iachar(letter) - 32)
      do i = 1, size(classes)
         if (classes(i)%name == upper) then
            problem = classes(i)
            found = .true.
            return
         end if
      end do
      found = .false.
   end subroutine lookup_class

   ! The operations NPB credits to `niter` timed iterations: the numerator of its Mop/s.
   pure real(dp) function official_op_count(na, nonzer, niter) result(ops)
      integer, intent(in) :: na, nonzer, niter
      real(dp) :: per_row

      per_row = 3.0_dp + real(nonzer, dp)*(nonzer + 1) + 25.0_dp*(5.0_dp + real(nonzer, dp)*(nonzer + 1)) + 3.0_dp
      ops = 2.0_dp*niter*real(na, dp)*per_row
   end function official_op_count

end module cg_classes
