! NPB's linear congruential generator: x <- a*x mod 2**46, each draw returned as x * 2**(-46).
! The state is kept as an exact integer; the 46-bit product is formed from 23-bit halves, so no
! intermediate reaches 2**48 and every draw equals the one NPB's split double arithmetic makes.
module cg_random
   use, intrinsic :: iso_fortran_env, only: int64, real64
   implicit none
   private

   integer(int64), parameter, public :: npb_seed = 314159265_int64
   integer(int64), parameter, public :: npb_multiplier = 1220703125_int64   ! 5**13
   integer(int64), parameter :: half_mask = 2_int64**23 - 1
   integer(int64), parameter :: state_mask = 2_int64**46 - 1
   real(real64), parameter :: r46 = 2.0_real64**(-46)

   public :: randlc

contains

   real(real64) function randlc(x, a) result(value)
      integer(int64), intent(inout) :: x
      integer(int64), intent(in) :: a
      integer(int64) :: a_hi, a_lo, x_hi, x_lo, cross

      a_hi = ishft(a, -23)
      a_lo = iand(a, half_mask)
      x_hi = ishft(x, -23)
      x_lo = iand(x, half_mask)
      ! a*x = a_hi*x_hi*2**46 + (a_hi*x_lo + a_lo*x_hi)*2**23 + a_lo*x_lo; the first term vanishes mod 2**46.
      cross = iand(a_hi*x_lo + a_lo*x_hi, half_mask)
      x = iand(ishft(cross, 23) + a_lo*x_lo, state_mask)
      value = real(x, real64)*r46
   end function randlc

end module cg_random
