! conj_grad of NPB CG: cgitmax conjugate-gradient steps on A z = x from z = 0, then the residual
! norm ||x - A z||. A rank holds one block of A; a product with A is its block's product, summed
! across the processor row by a butterfly (steps l2npcols..1), then exchanged with the transposed
! block's rank so that the result is laid out like the vector it multiplied. Dot products are local
! sums completed by a butterfly across the row (steps 1..l2npcols). No collective runs in here.
module cg_solver
   use mpi
   use cg_classes, only: dp, cgitmax
   use cg_grid, only: partition
   use cg_makea, only: block_matrix
   implicit none
   private

   type(partition), public :: part
   type(block_matrix), public :: mat
   ! The work vectors of the algorithm, naa+2 entries each; x is the inverse-power iterate.
   real(dp), allocatable, public :: x(:), z(:), p(:), q(:), r(:), w(:)

   public :: allocate_vectors, conj_grad, row_sum

contains

   subroutine allocate_vectors()
      integer :: length

      length = part%naa() + 2
      allocate (x(length), z(length), p(length), q(length), r(length), w(length))
      x = 0.0_dp; z = 0.0_dp; p = 0.0_dp; q = 0.0_dp; r = 0.0_dp; w = 0.0_dp
   end subroutine allocate_vectors

   ! values(1:n) summed over the processor row: at step i each rank adds what its partner holds.
   subroutine row_sum(values, n)
      integer, intent(in) :: n
      real(dp), intent(inout) :: values(n)
      real(dp), asynchronous :: partner(2)
      integer :: i, request, ierr

      do i = 1, part%l2npcols
         call mpi_irecv(partner, n, MPI_DOUBLE_PRECISION, part%reduce_exch_proc(i), i, MPI_COMM_WORLD, &
                        request, ierr)
         call mpi_send(values, n, MPI_DOUBLE_PRECISION, part%reduce_exch_proc(i), i, MPI_COMM_WORLD, ierr)
         call mpi_wait(request, MPI_STATUS_IGNORE, ierr)
         values(1:n) = values(1:n) + partner(1:n)
      end do
   end subroutine row_sum

   ! out(1:nrows) = this block times v(1:ncols).
   subroutine block_product(v, out)
      real(dp), intent(in) :: v(:)
      real(dp), intent(inout) :: out(:)
      integer :: j, k
      real(dp) :: s

      do j = 1, mat%nrows
         s = 0.0_dp
         do k = mat%rowstr(j), mat%rowstr(j + 1) - 1
            s = s + mat%a(k)*v(mat%colidx(k))
         end do
         out(j) = s
      end do
   end subroutine block_product

   ! The block products of the row summed into prod(send_start ..), with `recv` as the landing area.
   subroutine reduce_row_pieces(prod, recv)
      real(dp), intent(inout), contiguous :: prod(:)
      real(dp), intent(inout), contiguous, asynchronous :: recv(:)
      integer :: i, j, request, ierr, rfirst, rlen, sfirst, slen

      do i = part%l2npcols, 1, -1
         rfirst = part%reduce_recv_starts(i)
         rlen = part%reduce_recv_lengths(i)
         sfirst = part%reduce_send_starts(i)
         slen = part%reduce_send_lengths(i)
         call mpi_irecv(recv(rfirst:rfirst + rlen - 1), rlen, MPI_DOUBLE_PRECISION, &
                        part%reduce_exch_proc(i), i, MPI_COMM_WORLD, request, ierr)
         call mpi_send(prod(sfirst:sfirst + slen - 1), slen, MPI_DOUBLE_PRECISION, &
                       part%reduce_exch_proc(i), i, MPI_COMM_WORLD, ierr)
         call mpi_wait(request, MPI_STATUS_IGNORE, ierr)
         do j = part%send_start, part%send_start + rlen - 1
            prod(j) = prod(j) + recv(j)
         end do
      end do
   end subroutine reduce_row_pieces

   ! dest(1:ncols) = the summed product rows that match this rank's columns.
   subroutine transpose_exchange(prod, dest)
      real(dp), intent(inout), contiguous :: prod(:)
      real(dp), intent(inout), contiguous, asynchronous :: dest(:)
      integer :: request, ierr, last

      if (part%l2npcols /= 0) then
         last = part%send_start + part%send_len - 1
         call mpi_irecv(dest(1:part%exch_recv_length), part%exch_recv_length, MPI_DOUBLE_PRECISION, &
                        part%exch_proc, 1, MPI_COMM_WORLD, request, ierr)
         call mpi_send(prod(part%send_start:last), part%send_len, MPI_DOUBLE_PRECISION, &
                       part%exch_proc, 1, MPI_COMM_WORLD, ierr)
         call mpi_wait(request, MPI_STATUS_IGNORE, ierr)
      else
         dest(1:part%exch_recv_length) = prod(1:part%exch_recv_length)
      end if
   end subroutine transpose_exchange

   subroutine conj_grad(rnorm)
      real(dp), intent(out) :: rnorm
      real(dp) :: acc(1), rho, rho0, alpha, beta, d
      integer :: j, n, cgit

      n = part%ncols()
      do j = 1, part%naa() + 1
         q(j) = 0.0_dp
         z(j) = 0.0_dp
         r(j) = x(j)
         p(j) = r(j)
         w(j) = 0.0_dp
      end do

      acc(1) = 0.0_dp
      do j = 1, n
         acc(1) = acc(1) + r(j)*r(j)
      end do
      call row_sum(acc, 1)
      rho = acc(1)

      do cgit = 1, cgitmax
         call block_product(p, w)
         call reduce_row_pieces(w, q)
         call transpose_exchange(w, q)
         do j = 1, max(part%nrows(), n)
            w(j) = 0.0_dp
         end do

         acc(1) = 0.0_dp
         do j = 1, n
            acc(1) = acc(1) + p(j)*q(j)
         end do
         call row_sum(acc, 1)
         d = acc(1)
         alpha = rho/d
         rho0 = rho

         do j = 1, n
            z(j) = z(j) + alpha*p(j)
            r(j) = r(j) - alpha*q(j)
         end do

         acc(1) = 0.0_dp
         do j = 1, n
            acc(1) = acc(1) + r(j)*r(j)
         end do
         call row_sum(acc, 1)
         rho = acc(1)
         beta = rho/rho0

         do j = 1, n
            p(j) = r(j) + beta*p(j)
         end do
      end do

      ! r = A z, formed like A p above, then ||x - r||.
      call block_product(z, w)
      call reduce_row_pieces(w, r)
      call transpose_exchange(w, r)
      acc(1) = 0.0_dp
      do j = 1, n
         d = x(j) - r(j)
         acc(1) = acc(1) + d*d
      end do
      call row_sum(acc, 1)
      rnorm = sqrt(acc(1))
   end subroutine conj_grad

end module cg_solver
