! conj_grad of NPB CG: cgitmax conjugate-gradient steps on A z = x from z = 0, then the residual
! norm ||x - A z||. A rank holds one block of A; a product with A is its block's product, summed
! across the processor row by a butterfly (steps l2npcols..1), then exchanged with the transposed
! block's rank so that the result is laid out like the vector it multiplied. Dot products are local
! sums completed by a butterfly across the row (steps 1..l2npcols). No collective runs in here.
!
! Modeling assertions (MA paper, Figures 4 and 5) use the inputs na, nonzer, nprocs, cgitmax, dp and the
! derived num_proc_rows, num_proc_cols, l2npcols that the main program declares. A rank holds an
! (na/num_proc_rows) x (na/num_proc_cols) block, so a kernel over its columns costs a multiple of
! na/num_proc_cols. The message sizes, counts and partners are the same expressions as those of the
! Python port (examples/npb_cg/conj_grad.py).
module cg_solver
   use mpi
   use ma
   use cg_classes, only: dp, cgitmax
   use cg_grid, only: partition
   use cg_makea, only: block_matrix
   implicit none
   private

   type(partition), public :: part
   type(block_matrix), public :: mat
   ! The work vectors of the algorithm, naa+2 entries each; x is the inverse-power iterate.
   real(dp), allocatable, public :: x(:), z(:), p(:), q(:), r(:), w(:)

   ! Partners of the butterfly steps as expressions of the rank: step s pairs ranks d/2 apart within
   ! blocks of d = num_proc_cols/2^(s-1) columns; s = iter+1 in the scalar sums (steps 1..l2npcols),
   ! s = l2npcols-iter in the row reduction of a product (steps l2npcols..1), iter counting the
   ! enclosing loop's iterations from 0. The transpose swaps the (row, column) block with (column,
   ! row); on a grid with twice as many columns as rows a rank holds half a block.
   character(len=*), parameter :: butterfly_peer = &
      'floor(rank/(num_proc_cols/2^((iter+1)-1)))*(num_proc_cols/2^((iter+1)-1))' // &
      ' + mod(rank + num_proc_cols/2^(iter+1), num_proc_cols/2^((iter+1)-1))'
   character(len=*), parameter :: rowred_peer = &
      'floor(rank/(num_proc_cols/2^((l2npcols-iter)-1)))*(num_proc_cols/2^((l2npcols-iter)-1))' // &
      ' + mod(rank + num_proc_cols/2^(l2npcols-iter), num_proc_cols/2^((l2npcols-iter)-1))'
   character(len=*), parameter :: transpose_peer = &
      '(num_proc_cols/num_proc_rows)*(mod(floor(rank/(num_proc_cols/num_proc_rows)), num_proc_rows)' // &
      '*num_proc_rows + floor(rank/num_proc_cols)) + mod(rank, num_proc_cols/num_proc_rows)'

   ! The block product is asserted with NPB's count of the nonzeros, na*nonzer*(nonzer+1) over the
   ! whole matrix, within 1 % of what makea builds for every class (a single block deviates more).
   character(len=*), parameter :: matvec_flops = '2*na*nonzer*(nonzer+1)/nprocs'
   ! Loads and stores as the Valgrind tool counts them: one per instruction that reads (writes) memory.
   ! Every kernel is a scalar loop at -O2, one access per array element it touches (the Makefile keeps
   ! GCC from turning fills and copies into memset/memcpy, whose counts follow glibc's size thresholds).
   ! The product loads a value, its column index and the entry of v per nonzero, and per row two row
   ! pointers and one store of the result.
   character(len=*), parameter :: matvec_loadstores = '3*na*nonzer*(nonzer+1)/nprocs + 3*na/num_proc_rows'
   ! Initialisation: x read, q, z, r, p, w written over na/num_proc_rows + 1 entries.
   character(len=*), parameter :: init_loadstores = '6*(na/num_proc_rows + 1)'
   ! A piece of the product exchanged across the row: the whole row block on a square grid, half of it
   ! (num_proc_cols = 2*num_proc_rows) otherwise.
   character(len=*), parameter :: row_piece = 'dp*na/num_proc_cols'

   public :: allocate_vectors, conj_grad, row_sum

contains

   subroutine allocate_vectors()
      integer :: length

      length = part%naa() + 2
      allocate (x(length), z(length), p(length), q(length), r(length), w(length))
      x = 0.0_dp; z = 0.0_dp; p = 0.0_dp; q = 0.0_dp; r = 0.0_dp; w = 0.0_dp
   end subroutine allocate_vectors

   ! values(1:n) summed over the processor row: at step i each rank adds what its partner holds.
   ! The sites are the caller's: each call site of a reduction is its own term of the model.
   subroutine row_sum(values, n, bytes, loop_id, recv_id, send_id)
      integer, intent(in) :: n
      real(dp), intent(inout) :: values(n)
      character(len=*), intent(in) :: bytes, loop_id, recv_id, send_id
      real(dp), asynchronous :: partner(2)
      integer :: i, request, ierr

      call ma_loop_start(loop_id, 'l2npcols', part%l2npcols)
      do i = 1, part%l2npcols
         call ma_mpi_irecv(recv_id, bytes, 8*n, 1)
         call ma_mpi_peer(butterfly_peer)
         call mpi_irecv(partner, n, MPI_DOUBLE_PRECISION, part%reduce_exch_proc(i), i, MPI_COMM_WORLD, &
                        request, ierr)
         call ma_mpi_send(send_id, bytes, 8*n, 1)
         call ma_mpi_peer(butterfly_peer)
         call mpi_send(values, n, MPI_DOUBLE_PRECISION, part%reduce_exch_proc(i), i, MPI_COMM_WORLD, ierr)
         call mpi_wait(request, MPI_STATUS_IGNORE, ierr)
         values(1:n) = values(1:n) + partner(1:n)
      end do
      call ma_loop_end(loop_id, i - 1)
   end subroutine row_sum

   ! out(1:nrows) = this block times v(1:ncols).
   subroutine block_product(v, out)
      real(dp), intent(in) :: v(:)
      real(dp), intent(inout) :: out(:)
      integer :: j, k
      real(dp) :: s

      call ma_flop_start('matvec', matvec_flops, ma_no_value)
      call ma_loadstore_start('matvec_ls', matvec_loadstores, ma_no_value)
      do j = 1, mat%nrows
         s = 0.0_dp
         do k = mat%rowstr(j), mat%rowstr(j + 1) - 1
            s = s + mat%a(k)*v(mat%colidx(k))
         end do
         out(j) = s
      end do
      call ma_loadstore_stop('matvec_ls')
      call ma_flop_stop('matvec')
   end subroutine block_product

   ! The block products of the row summed into prod(send_start ..), with `recv` as the landing area.
   subroutine reduce_row_pieces(prod, recv)
      real(dp), intent(inout), contiguous :: prod(:)
      real(dp), intent(inout), contiguous, asynchronous :: recv(:)
      integer :: i, j, request, ierr, rfirst, rlen, sfirst, slen

      call ma_loop_start('rowred', 'l2npcols', part%l2npcols)
      do i = part%l2npcols, 1, -1
         rfirst = part%reduce_recv_starts(i)
         rlen = part%reduce_recv_lengths(i)
         sfirst = part%reduce_send_starts(i)
         slen = part%reduce_send_lengths(i)
         call ma_mpi_irecv('rowred_rcv', row_piece, 8*rlen, 1)
         call ma_mpi_peer(rowred_peer)
         call mpi_irecv(recv(rfirst:rfirst + rlen - 1), rlen, MPI_DOUBLE_PRECISION, &
                        part%reduce_exch_proc(i), i, MPI_COMM_WORLD, request, ierr)
         call ma_mpi_send('rowred_snd', row_piece, 8*slen, 1)
         call ma_mpi_peer(rowred_peer)
         call mpi_send(prod(sfirst:sfirst + slen - 1), slen, MPI_DOUBLE_PRECISION, &
                       part%reduce_exch_proc(i), i, MPI_COMM_WORLD, ierr)
         call mpi_wait(request, MPI_STATUS_IGNORE, ierr)
         call ma_flop_start('rowred_add', 'na/num_proc_cols', rlen)
         call ma_loadstore_start('rowred_add_ls', '3*na/num_proc_cols', 3*rlen)
         do j = part%send_start, part%send_start + rlen - 1
            prod(j) = prod(j) + recv(j)
         end do
         call ma_loadstore_stop('rowred_add_ls')
         call ma_flop_stop('rowred_add')
      end do
      call ma_loop_end('rowred', part%l2npcols - i)
   end subroutine reduce_row_pieces

   ! dest(1:ncols) = the summed product rows that match this rank's columns. One message each way,
   ! none on a single processor column (the piece is copied): count min(l2npcols, 1).
   subroutine transpose_exchange(prod, dest)
      real(dp), intent(inout), contiguous :: prod(:)
      real(dp), intent(inout), contiguous, asynchronous :: dest(:)
      integer :: request, ierr, last, messages

      messages = min(part%l2npcols, 1)
      call ma_mpi('mpi_irecv', 'transpose_rcv', row_piece, ma_no_value, 'min(l2npcols, 1)', messages)
      call ma_mpi_peer(transpose_peer)
      if (messages > 0) call mpi_irecv(dest(1:part%exch_recv_length), part%exch_recv_length, &
                                       MPI_DOUBLE_PRECISION, part%exch_proc, 1, MPI_COMM_WORLD, request, ierr)
      call ma_mpi('mpi_send', 'transpose_snd', row_piece, ma_no_value, 'min(l2npcols, 1)', messages)
      call ma_mpi_peer(transpose_peer)
      if (messages > 0) then
         last = part%send_start + part%send_len - 1
         call mpi_send(prod(part%send_start:last), part%send_len, MPI_DOUBLE_PRECISION, &
                       part%exch_proc, 1, MPI_COMM_WORLD, ierr)
         call mpi_wait(request, MPI_STATUS_IGNORE, ierr)
      else
         dest(1:part%exch_recv_length) = prod(1:part%exch_recv_length)
      end if
   end subroutine transpose_exchange

   ! r.r over the whole vector: the sum of squares over this rank's n columns (2n flops, n loads), then
   ! the row's butterfly. The sites are the caller's: the first rho and that of a CG step are terms apart.
   real(dp) function r_dot_r(n, flop_id, loadstore_id, loop_id, recv_id, send_id) result(rho)
      integer, intent(in) :: n
      character(len=*), intent(in) :: flop_id, loadstore_id, loop_id, recv_id, send_id
      real(dp) :: acc(1), s
      integer :: j

      call ma_flop_start(flop_id, '2*na/num_proc_cols', 2*n)
      call ma_loadstore_start(loadstore_id, 'na/num_proc_cols', n)
      s = 0.0_dp
      do j = 1, n
         s = s + r(j)*r(j)
      end do
      call ma_loadstore_stop(loadstore_id)
      call ma_flop_stop(flop_id)
      acc(1) = s
      call row_sum(acc, 1, 'dp', loop_id, recv_id, send_id)
      rho = acc(1)
   end function r_dot_r

   subroutine conj_grad(rnorm)
      real(dp), intent(out) :: rnorm
      real(dp) :: acc(1), s, rho, rho0, alpha, beta, d
      integer :: j, n, naa, wlen, cgit

      call ma_subroutine_start('conj_grad')
      n = part%ncols()
      naa = part%naa()
      wlen = max(part%nrows(), n)
      call ma_loadstore_start('init_vectors', init_loadstores, ma_no_value)
      do j = 1, naa + 1
         q(j) = 0.0_dp
         z(j) = 0.0_dp
         r(j) = x(j)
         p(j) = r(j)
         w(j) = 0.0_dp
      end do
      call ma_loadstore_stop('init_vectors')

      rho = r_dot_r(n, 'rho0_dot', 'rho0_dot_ls', 'rho0_red', 'rho0_rcv', 'rho0_snd')

      call ma_loop_start('cgit', 'cgitmax', cgitmax)
      do cgit = 1, cgitmax
         call block_product(p, w)
         call reduce_row_pieces(w, q)
         call transpose_exchange(w, q)
         call ma_loadstore_start('clear_w', 'max(na/num_proc_rows, na/num_proc_cols)', ma_no_value)
         do j = 1, wlen
            w(j) = 0.0_dp
         end do
         call ma_loadstore_stop('clear_w')

         call ma_flop_start('pq_dot', '2*na/num_proc_cols', 2*n)
         call ma_loadstore_start('pq_dot_ls', '2*na/num_proc_cols', 2*n)
         s = 0.0_dp
         do j = 1, n
            s = s + p(j)*q(j)
         end do
         call ma_loadstore_stop('pq_dot_ls')
         call ma_flop_stop('pq_dot')
         acc(1) = s
         call row_sum(acc, 1, 'dp', 'pq_red', 'pq_rcv', 'pq_snd')
         d = acc(1)
         alpha = rho/d
         rho0 = rho

         call ma_flop_start('zr_axpy', '4*na/num_proc_cols', 4*n)
         call ma_loadstore_start('zr_axpy_ls', '6*na/num_proc_cols', 6*n)
         do j = 1, n
            z(j) = z(j) + alpha*p(j)
            r(j) = r(j) - alpha*q(j)
         end do
         call ma_loadstore_stop('zr_axpy_ls')
         call ma_flop_stop('zr_axpy')

         rho = r_dot_r(n, 'rr_dot', 'rr_dot_ls', 'rr_red', 'rr_rcv', 'rr_snd')
         beta = rho/rho0

         call ma_flop_start('p_update', '2*na/num_proc_cols', 2*n)
         call ma_loadstore_start('p_update_ls', '3*na/num_proc_cols', 3*n)
         do j = 1, n
            p(j) = r(j) + beta*p(j)
         end do
         call ma_loadstore_stop('p_update_ls')
         call ma_flop_stop('p_update')
      end do
      call ma_loop_end('cgit', cgit - 1)

      call residual_norm(rnorm)
      call ma_subroutine_end('conj_grad')
   end subroutine conj_grad

   ! ||x - A z||: r = A z formed like A p in the CG steps.
   subroutine residual_norm(rnorm)
      real(dp), intent(out) :: rnorm
      real(dp) :: acc(1), s, d
      integer :: j, n

      call ma_subroutine_start('residual_norm')
      n = part%ncols()
      call block_product(z, w)
      call reduce_row_pieces(w, r)
      call transpose_exchange(w, r)
      call ma_flop_start('resid_sq', '3*na/num_proc_cols', 3*n)
      call ma_loadstore_start('resid_sq_ls', '2*na/num_proc_cols', 2*n)
      s = 0.0_dp
      do j = 1, n
         d = x(j) - r(j)
         s = s + d*d
      end do
      call ma_loadstore_stop('resid_sq_ls')
      call ma_flop_stop('resid_sq')
      acc(1) = s
      call row_sum(acc, 1, 'dp', 'resid_red', 'resid_rcv', 'resid_snd')
      rnorm = sqrt(acc(1))
      call ma_subroutine_end('residual_norm')
   end subroutine residual_norm

end module cg_solver
