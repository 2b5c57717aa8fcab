! The 2-D process grid of NPB CG and each rank's block of the na x na matrix.
!
! nprocs = num_proc_rows * num_proc_cols, both powers of two, with num_proc_cols = num_proc_rows or
! 2*num_proc_rows. Rank me sits at (me / num_proc_cols, mod(me, num_proc_cols)). Rows are cut over
! the processor rows, columns over the processor columns; when the grid is not square and na does
! not divide evenly, a column piece is cut as for the rows, then halved between an even and an odd rank.
! Positions are 1-based, as the vectors that hold them.
module cg_grid
   implicit none
   private

   type, public :: partition
      integer :: na = 0, nprocs = 1, me = 0
      integer :: num_proc_rows = 1, num_proc_cols = 1, l2npcols = 0
      integer :: proc_row = 0, proc_col = 0
      integer :: firstrow = 1, lastrow = 0, firstcol = 1, lastcol = 0
      ! The transpose exchange: this rank sends w(send_start : send_start+send_len-1) to exch_proc
      ! and receives exch_recv_length doubles from it.
      integer :: send_start = 1, send_len = 0, exch_proc = 0, exch_recv_length = 0
      ! Butterfly step i (1..l2npcols) pairs this rank with reduce_exch_proc(i) across its row.
      integer, allocatable :: reduce_exch_proc(:)
      integer, allocatable :: reduce_send_starts(:), reduce_send_lengths(:)
      integer, allocatable :: reduce_recv_starts(:), reduce_recv_lengths(:)
   contains
      procedure :: nrows => partition_nrows
      procedure :: ncols => partition_ncols
      procedure :: naa => partition_naa
   end type partition

   public :: process_grid, decompose

contains

   integer function partition_nrows(self)
      class(partition), intent(in) :: self
      partition_nrows = self%lastrow - self%firstrow + 1
   end function partition_nrows

   integer function partition_ncols(self)
      class(partition), intent(in) :: self
      partition_ncols = self%lastcol - self%firstcol + 1
   end function partition_ncols

   ! NPB's bound on a rank's vector length: work vectors hold naa+2 entries.
   integer function partition_naa(self)
      class(partition), intent(in) :: self
      partition_naa = self%na/self%num_proc_rows
   end function partition_naa

   ! (rows, cols) of the grid for nprocs processes; ok is false unless nprocs is a power of two.
   subroutine process_grid(nprocs, rows, cols, ok)
      integer, intent(in) :: nprocs
      integer, intent(out) :: rows, cols
      logical, intent(out) :: ok
      integer :: log_p

      rows = 1
      cols = 1
      ok = nprocs >= 1
      if (.not. ok) return
      ok = iand(nprocs, nprocs - 1) == 0
      if (.not. ok) return
      log_p = trailing_zeros(nprocs)
      rows = 2**(log_p/2)
      cols = 2**(log_p - log_p/2)     ! the odd factor of two goes to the columns
   end subroutine process_grid

   integer function trailing_zeros(n)
      integer, intent(in) :: n
      integer :: m

      trailing_zeros = 0
      m = n
      do while (m > 1)
         m = m/2
         trailing_zeros = trailing_zeros + 1
      end do
   end function trailing_zeros

   ! 1-based [first, last] of block `index` (0-based) when n is cut into `parts` blocks, larger ones first.
   subroutine split(n, parts, index, first, last)
      integer, intent(in) :: n, parts, index
      integer, intent(out) :: first, last
      integer :: small, extra

      small = n/parts
      extra = n - small*parts
      if (index < extra) then
         first = index*(small + 1) + 1
         last = first + small
      else
         first = extra*(small + 1) + (index - extra)*small + 1
         last = first + small - 1
      end if
   end subroutine split

   ! The partition of rank `me` of `nprocs` (a power of two, checked by process_grid beforehand).
   subroutine decompose(na, nprocs, me, part)
      integer, intent(in) :: na, nprocs, me
      type(partition), intent(out) :: part
      integer :: rows, cols, nrows, piece, i, block, partner_col
      logical :: ok, square

      call process_grid(nprocs, rows, cols, ok)
      part%na = na
      part%nprocs = nprocs
      part%me = me
      part%num_proc_rows = rows
      part%num_proc_cols = cols
      part%l2npcols = trailing_zeros(cols)
      part%proc_row = me/cols
      part%proc_col = mod(me, cols)
      square = rows == cols

      call split(na, rows, part%proc_row, part%firstrow, part%lastrow)
      if (mod(na, cols) == 0 .or. square) then
         call split(na, cols, part%proc_col, part%firstcol, part%lastcol)
      else
         call split(na, cols/2, part%proc_col/2, part%firstcol, part%lastcol)
         piece = part%lastcol - part%firstcol + 1
         if (mod(me, 2) == 0) then
            part%lastcol = part%firstcol + (piece - 1)/2
         else
            part%firstcol = part%firstcol + (piece - 1)/2 + 1
            part%lastcol = part%firstcol - 1 + piece/2
         end if
      end if

      nrows = part%lastrow - part%firstrow + 1
      if (square) then
         part%send_start = 1
         part%send_len = nrows
         part%exch_proc = mod(me, rows)*rows + me/rows
      else
         ! Two ranks of a row pair share one transposed block: the even one sends the first half.
         if (mod(me, 2) == 0) then
            part%send_start = 1
            part%send_len = (nrows + 1)/2
         else
            part%send_start = (nrows + 1)/2 + 1
            part%send_len = nrows/2
         end if
         part%exch_proc = 2*(mod(me/2, rows)*rows + me/2/rows) + mod(me, 2)
      end if
      part%exch_recv_length = part%lastcol - part%firstcol + 1

      allocate (part%reduce_exch_proc(max(1, part%l2npcols)), part%reduce_send_starts(max(1, part%l2npcols)), &
                part%reduce_send_lengths(max(1, part%l2npcols)), part%reduce_recv_starts(max(1, part%l2npcols)), &
                part%reduce_recv_lengths(max(1, part%l2npcols)))
      ! Step i pairs columns block/2 apart inside blocks of block = cols/2**(i-1) columns.
      block = cols
      do i = 1, part%l2npcols
         partner_col = mod(part%proc_col + block/2, block) + (part%proc_col/block)*block
         part%reduce_exch_proc(i) = part%proc_row*cols + partner_col
         block = block/2
      end do
      do i = 1, part%l2npcols
         part%reduce_recv_starts(i) = part%send_start
         if (square) then
            part%reduce_send_starts(i) = part%send_start
            part%reduce_send_lengths(i) = part%send_len
            part%reduce_recv_lengths(i) = nrows
         else if (i == part%l2npcols) then
            ! The first step run (the row reduction goes i = l2npcols..1): each rank of the pair
            ! hands over the half of its rows it does not keep.
            part%reduce_recv_lengths(i) = part%send_len
            part%reduce_send_lengths(i) = nrows - part%send_len
            if (mod(me, 2) == 0) then
               part%reduce_send_starts(i) = part%send_start + part%send_len
            else
               part%reduce_send_starts(i) = 1
            end if
         else
            part%reduce_recv_lengths(i) = part%send_len
            part%reduce_send_lengths(i) = part%send_len
            part%reduce_send_starts(i) = part%send_start
         end if
      end do
   end subroutine decompose

end module cg_grid
