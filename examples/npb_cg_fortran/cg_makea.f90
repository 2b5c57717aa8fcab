! The CG test matrix: A = sum over k of ratio**(k-1) * v_k v_k**T + (rcond - shift) * I, where v_k
! is a random sparse vector with nonzer entries (from NPB's randlc stream) plus 0.5 at position k.
!
! Every rank draws the whole stream and keeps the products that fall in its block, so the matrix does
! not depend on the process count. Duplicates are summed in the order they were generated and the
! entries of a row keep the order in which their columns first appeared: the row sums of the
! matrix-vector product then add in the same order as NPB's.
module cg_makea
   use, intrinsic :: iso_fortran_env, only: int64
   use cg_classes, only: dp
   use cg_grid, only: partition
   use cg_random, only: randlc, npb_multiplier
   implicit none
   private

   ! One rank's block in compressed rows; column indices are local (1 .. lastcol-firstcol+1).
   type, public :: block_matrix
      integer :: nrows = 0
      real(dp), allocatable :: a(:)
      integer, allocatable :: colidx(:)
      integer, allocatable :: rowstr(:)      ! row j holds entries rowstr(j) .. rowstr(j+1)-1
   end type block_matrix

   public :: makea, element_bound

contains

   ! NPB's bound on the generated elements of one rank (its alloc_space), in 64-bit arithmetic.
   integer(int64) function element_bound(part, nonzer) result(bound)
      type(partition), intent(in) :: part
      integer, intent(in) :: nonzer

      bound = int(part%na, int64)*(nonzer + 1)/part%nprocs*(nonzer + 1) + nonzer &
              + int(part%na, int64)*(nonzer + 2 + part%nprocs/256)/part%num_proc_cols
   end function element_bound

   ! Draws nz distinct positions in 1..n with their values. Each candidate costs two draws (value,
   ! then position scaled by the power of two nn1 >= n); positions past n and repeats are dropped.
   ! `taken` is all false on entry and on return.
   subroutine sprnvc(n, nz, state, values, positions, taken)
      integer, intent(in) :: n, nz
      integer(int64), intent(inout) :: state
      real(dp), intent(out) :: values(:)
      integer, intent(out) :: positions(:)
      logical, intent(inout) :: taken(:)
      integer :: nn1, found, pos
      real(dp) :: value, where

      nn1 = 1
      do
         nn1 = 2*nn1
         if (nn1 >= n) exit
      end do
      found = 0
      do while (found < nz)
         value = randlc(state, npb_multiplier)
         where = randlc(state, npb_multiplier)
         pos = int(nn1*where) + 1
         if (pos > n) cycle
         if (taken(pos)) cycle
         taken(pos) = .true.
         found = found + 1
         values(found) = value
         positions(found) = pos
      end do
      taken(positions(1:nz)) = .false.
   end subroutine sprnvc

   ! Entry `k` of the sparse vector becomes `val`; appended when the vector has no entry k.
   subroutine vecset(nzv, values, positions, k, val)
      integer, intent(inout) :: nzv
      real(dp), intent(inout) :: values(:)
      integer, intent(inout) :: positions(:)
      integer, intent(in) :: k
      real(dp), intent(in) :: val
      integer :: i
      logical :: present

      present = .false.
      do i = 1, nzv
         if (positions(i) == k) then
            values(i) = val
            present = .true.
         end if
      end do
      if (.not. present) then
         nzv = nzv + 1
         values(nzv) = val
         positions(nzv) = k
      end if
   end subroutine vecset

   ! This rank's block of the matrix; `state` is the generator after NPB's discarded first draw.
   ! ok is false when the block has more elements than NPB's bound allows.
   subroutine makea(part, nonzer, shift, rcond, state, mat, ok)
      type(partition), intent(in) :: part
      integer, intent(in) :: nonzer
      real(dp), intent(in) :: shift, rcond
      integer(int64), intent(inout) :: state
      type(block_matrix), intent(out) :: mat
      logical, intent(out) :: ok
      integer(int64) :: bound, nelt
      integer, allocatable :: erow(:), ecol(:), positions(:)
      real(dp), allocatable :: eval(:), values(:)
      logical, allocatable :: taken(:)
      real(dp) :: ratio, size, scaled
      integer :: k, nzv, jv, iv, col, row, n

      n = part%na
      bound = element_bound(part, nonzer)
      allocate (erow(bound), ecol(bound), eval(bound))
      allocate (values(nonzer + 1), positions(nonzer + 1), taken(n))
      taken = .false.
      ratio = rcond**(1.0_dp/real(n, dp))
      size = 1.0_dp
      nelt = 0
      ok = .true.
      do k = 1, n
         nzv = nonzer
         call sprnvc(n, nonzer, state, values, positions, taken)
         call vecset(nzv, values, positions, k, 0.5_dp)
         ! The outer product v v**T scaled by size, column entry outside, row entry inside.
         do jv = 1, nzv
            col = positions(jv)
            if (col < part%firstcol .or. col > part%lastcol) cycle
            scaled = size*values(jv)
            do iv = 1, nzv
               row = positions(iv)
               if (row < part%firstrow .or. row > part%lastrow) cycle
               call add_element(row, col, values(iv)*scaled)
               if (.not. ok) return
            end do
         end do
         size = size*ratio
      end do
      ! The shifted identity, on the diagonal entries this block holds.
      do row = max(part%firstrow, part%firstcol), min(part%lastrow, part%lastcol)
         call add_element(row, row, rcond - shift)
         if (.not. ok) return
      end do
      deallocate (values, positions, taken)
      call assemble(part, nelt, erow, ecol, eval, mat)

   contains

      ! Appends one element to the list; ok turns false past NPB's bound.
      subroutine add_element(row, col, value)
         integer, intent(in) :: row, col
         real(dp), intent(in) :: value

         nelt = nelt + 1
         if (nelt > bound) then
            ok = .false.
            return
         end if
         erow(nelt) = row
         ecol(nelt) = col
         eval(nelt) = value
      end subroutine add_element
   end subroutine makea

   ! Compressed rows from the element list: a stable bucket sort by row, then per row the sum of the
   ! elements of each column in list order, columns in order of first appearance, exact zeros dropped.
   subroutine assemble(part, nelt, erow, ecol, eval, mat)
      type(partition), intent(in) :: part
      integer(int64), intent(in) :: nelt
      integer, intent(in) :: erow(:), ecol(:)
      real(dp), intent(in) :: eval(:)
      type(block_matrix), intent(out) :: mat
      integer, allocatable :: start(:), next_slot(:), sorted_col(:), row_cols(:)
      real(dp), allocatable :: sorted_val(:), acc(:)
      logical, allocatable :: seen(:)
      integer(int64) :: e, slot, kept
      integer :: nrows, ncols, j, c, ncols_row, i

      nrows = part%nrows()
      ncols = part%ncols()
      allocate (start(nrows + 1), next_slot(nrows))
      start = 0
      do e = 1, nelt
         j = erow(e) - part%firstrow + 1
         start(j + 1) = start(j + 1) + 1
      end do
      start(1) = 1
      do j = 1, nrows
         start(j + 1) = start(j + 1) + start(j)
      end do
      allocate (sorted_col(nelt), sorted_val(nelt))
      next_slot = start(1:nrows)
      do e = 1, nelt
         j = erow(e) - part%firstrow + 1
         slot = next_slot(j)
         sorted_col(slot) = ecol(e) - part%firstcol + 1
         sorted_val(slot) = eval(e)
         next_slot(j) = next_slot(j) + 1
      end do

      allocate (acc(ncols), seen(ncols), row_cols(ncols))
      acc = 0.0_dp
      seen = .false.
      ! Merged rows are written back over the sorted list: a row never grows, so it cannot
      ! overtake the unread part of the list.
      kept = 0
      allocate (mat%rowstr(nrows + 1))
      mat%nrows = nrows
      mat%rowstr(1) = 1
      do j = 1, nrows
         ncols_row = 0
         do slot = start(j), start(j + 1) - 1
            c = sorted_col(slot)
            acc(c) = acc(c) + sorted_val(slot)
            if (.not. seen(c) .and. acc(c) /= 0.0_dp) then
               seen(c) = .true.
               ncols_row = ncols_row + 1
               row_cols(ncols_row) = c
            end if
         end do
         do i = 1, ncols_row
            c = row_cols(i)
            if (acc(c) /= 0.0_dp) then
               kept = kept + 1
               sorted_col(kept) = c
               sorted_val(kept) = acc(c)
            end if
            acc(c) = 0.0_dp
            seen(c) = .false.
         end do
         mat%rowstr(j + 1) = int(kept) + 1
      end do
      allocate (mat%a(kept), mat%colidx(kept))
      mat%a = sorted_val(1:kept)
      mat%colidx = sorted_col(1:kept)
   end subroutine assemble

end module cg_makea
