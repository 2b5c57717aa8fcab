"""``conj_grad`` of NPB 3.4 MPI CG: kernels, butterfly reductions and the transpose exchange.

Each kernel and each Irecv/Send/Wait group is its own function, with its modeling assertions around
it (MA paper, Figures 4, 5 and 7). Message tags, partners and lengths are NPB's. Vectors are 0-based
views of NPB's 1-based arrays (Fortran x(j) is x[j-1]).

The expressions use the input parameters na, nonzer, nprocs and the derived num_proc_rows,
num_proc_cols, l2npcols declared by the driver (cg.py). A rank holds an (na/num_proc_rows) x
(na/num_proc_cols) block, so a vector kernel over its columns costs a multiple of na/num_proc_cols.
The matrix-vector product is asserted as 2*na*nonzer*(nonzer+1)/nprocs flops: NPB's official count
takes na*nonzer*(nonzer+1) for the number of nonzeros, which is within 1 % of what makea builds
(+0.32 % for class S, -0.87 % for W, -0.28 % for A over the whole matrix; a single block deviates more).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse import _sparsetools  # the compiled kernels behind scipy.sparse's operators

import ma

from .classes import CGITMAX
from .grid import Decomposition

if TYPE_CHECKING:
    from mpi4py import MPI

ROOT = 0


@dataclass
class CGState:
    """Per-rank problem, partition, matrix block and the NPB work vectors (length naa+2)."""

    class_name: str
    na: int
    nonzer: int
    niter: int
    shift: float
    grid: Decomposition
    comm: MPI.Comm
    a: sp.csr_matrix
    cgitmax: int = CGITMAX
    x: np.ndarray = field(init=False)
    z: np.ndarray = field(init=False)
    p: np.ndarray = field(init=False)
    q: np.ndarray = field(init=False)
    r: np.ndarray = field(init=False)
    w: np.ndarray = field(init=False)
    # Scratch for the kernels' intermediate vectors (alpha*p, x - r), so that they allocate nothing.
    scratch: np.ndarray = field(init=False)
    # One- and two-element buffers for the scalar butterflies (NPB's sum/rho/d and norm_temp1/2).
    red_send: np.ndarray = field(init=False)
    red_recv: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        length = self.grid.naa + 2
        if max(self.grid.nrows, self.grid.ncols) > length:
            raise ValueError(f"partition block {self.grid.nrows}x{self.grid.ncols} exceeds naa+2={length}")
        names = ("x", "z", "p", "q", "r", "w", "scratch", "red_send", "red_recv")
        for name, vector in zip(names, common_block([(length, np.float64)] * 7 + [(2, np.float64)] * 2), strict=False):
            setattr(self, name, vector)

    @property
    def nprocs(self) -> int:
        return self.grid.nprocs

    @property
    def me(self) -> int:
        return self.grid.me


PAGE = 4096
GAP = 64  # bytes after each array of a block: equal lengths never put two arrays at one offset in a page


def common_block(specs: Sequence[tuple[int, type]]) -> list[np.ndarray]:
    """Zeroed arrays of (length, dtype), one after the other in one page-aligned block.

    NPB's Fortran keeps its arrays in common blocks: one layout, whatever else the program allocated.
    Arrays from the heap instead land where the process's allocation history puts them, and the kernels'
    speed depends on their offsets within a page; an annotated job and an MA_DISABLE=1 job have different
    histories. Here the offsets depend on the lengths alone. The block takes sum(nbytes + GAP) + PAGE bytes.
    Arrays come in order of non-increasing item size, so that each starts aligned for its type.
    """
    sizes = [n * np.dtype(dtype).itemsize for n, dtype in specs]
    raw = np.zeros(sum(sizes) + GAP * len(sizes) + PAGE, dtype=np.uint8)
    start = first = -raw.ctypes.data % PAGE
    arrays: list[np.ndarray] = []
    for (_n, dtype), size in zip(specs, sizes, strict=True):
        if (start - first) % np.dtype(dtype).itemsize:
            raise ValueError(f"common block {specs}: put the arrays of larger items first")
        arrays.append(raw[start:start + size].view(dtype))
        start += size + GAP
    return arrays


def matrix_in_common_block(a: sp.csr_matrix) -> sp.csr_matrix:
    """``a``, its values, column indices and row pointers moved into one common block."""
    arrays = common_block(((a.nnz, a.data.dtype.type), (a.nnz, a.indices.dtype.type),
                           (a.indptr.size, a.indptr.dtype.type)))
    for placed, kept in zip(arrays, (a.data, a.indices, a.indptr), strict=False):
        placed[:] = kept
    # Set, not passed to the constructor: scipy copies an array that is a small view of a larger one.
    a.data, a.indices, a.indptr = arrays
    return a


# --------------------------------------------------------------------------------------------------
# Local kernels
# --------------------------------------------------------------------------------------------------

# Loads and stores as the Valgrind tool counts them: one per instruction that reads (writes) memory, whatever
# its width. SciPy's CSR kernel is a scalar loop: per nonzero it loads the value, the column index and the x
# entry it gathers; per row both row pointers and the result, which it stores back. NumPy's ufunc loops
# move vlen doubles per access (examples/npb_cg/simd.py), einsum's dot 2 (its SSE baseline) from each of two
# arrays. The accesses of the interpreter around each call are not counted here (they are the calls' cost).
MATVEC_FLOPS = "2*na*nonzer*(nonzer+1)/nprocs"
# The product as a CSR row loop (its signature's ``csr_rows``, docs/maps-backend.md): a rank's block has
# na*nonzer*(nonzer+1)/nprocs entries (NPB's count) over na/num_proc_rows rows, each row a chain of dependent adds.
MATVEC_ROWS = {"entries": "na*nonzer*(nonzer+1)/nprocs", "rows": "na/num_proc_rows"}
MATVEC_LOADSTORES = "3*na*nonzer*(nonzer+1)/nprocs + 4*na/num_proc_rows"
DOT_LOADS = "na/num_proc_cols"
RESID_LOADSTORES = f"3*na/num_proc_cols/vlen + {DOT_LOADS}"
# A fill (``v[:n] = 0.0``) is NumPy's baseline loop: 2 doubles per store, whatever the CPU.
CLEAR_W_STORES = "max(na/num_proc_rows, na/num_proc_cols)/2"
# Three fills and two copies, which NumPy hands to memmove and glibc does with `rep movsb`: the tool counts
# each repetition, a load and a store per byte.
INIT_LOADSTORES = "(3/2 + 2*2*dp)*(na/num_proc_rows + 1)"

def init_vectors(st: CGState) -> None:
    """q = z = w = 0, r = p = x over the first naa+1 entries (NPB's initialisation loop)."""
    n = st.grid.naa + 1
    st.q[:n] = 0.0
    st.z[:n] = 0.0
    st.r[:n] = st.x[:n]
    st.p[:n] = st.r[:n]
    st.w[:n] = 0.0


def _dot(u: np.ndarray, v: np.ndarray) -> float:
    # einsum's own loop, not BLAS ddot: threaded BLAS spins against MPI ranks sharing the cores.
    return float(np.einsum("i,i->", u, v))


def local_dot(st: CGState, u: np.ndarray, v: np.ndarray) -> float:
    """Sum of u(j)*v(j) over this rank's columns (j = 1..lastcol-firstcol+1)."""
    n = st.grid.ncols
    return _dot(u[:n], v[:n])


def matvec(st: CGState, vec: np.ndarray, out: np.ndarray) -> None:
    """out(1..nrows) += A_block . vec(1..ncols): the partition submatrix-vector product, summed into ``out`` as
    NPB sums into w, which is zero beforehand (init_vectors, clear_w). SciPy's compiled CSR kernel is called
    directly: ``a @ v`` would add a Python layer, a zeroed temporary and a copy of it."""
    a, g = st.a, st.grid
    _sparsetools.csr_matvec(g.nrows, g.ncols, a.indptr, a.indices, a.data, vec[:g.ncols], out[:g.nrows])


def clear_w(st: CGState) -> None:
    """w = 0 over max(nrows, ncols) entries, ready for the next product."""
    st.w[:max(st.grid.nrows, st.grid.ncols)] = 0.0


def update_z_r(st: CGState, alpha: float) -> None:
    """z = z + alpha*p and r = r - alpha*q over this rank's columns."""
    n = st.grid.ncols
    scaled = np.multiply(st.p[:n], alpha, out=st.scratch[:n])
    np.add(st.z[:n], scaled, out=st.z[:n])
    np.multiply(st.q[:n], alpha, out=scaled)
    np.subtract(st.r[:n], scaled, out=st.r[:n])


def update_p(st: CGState, beta: float) -> None:
    """p = r + beta*p over this rank's columns."""
    p = st.p[:st.grid.ncols]
    np.multiply(p, beta, out=p)
    np.add(p, st.r[:st.grid.ncols], out=p)


def local_residual_sq(st: CGState) -> float:
    """Sum of (x(j) - r(j))^2 over this rank's columns, r holding A.z."""
    n = st.grid.ncols
    d = np.subtract(st.x[:n], st.r[:n], out=st.scratch[:n])
    return _dot(d, d)


# --------------------------------------------------------------------------------------------------
# Communication (Irecv / Send / Wait groups)
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReductionSites:
    """Site ids of one butterfly reduction: each call site gets its own, so each is its own model term."""

    loop: str
    irecv: str
    send: str


RHO0, PQ, RR, RESIDUAL, NORMS = (ReductionSites(f"{name}_red", f"{name}_rcv", f"{name}_snd")
                                 for name in ("rho0", "pq", "rr", "resid", "norm"))

# Partners (NPB's reduce_exch_proc and exch_proc, grid.py) as expressions of the rank, checked per call by
# the PMPI layer. Step s of a butterfly pairs ranks d/2 apart within blocks of d = num_proc_cols/2^(s-1)
# columns: s = iter+1 in the reductions (steps 1..l2npcols), s = l2npcols-iter in the row reduction of A.p
# (steps l2npcols..1); `iter` is the enclosing loop's iteration, so no index variable is declared (one would
# make every annotation of the loop evaluate again). The transpose swaps a rank's (row, column) block with
# (column, row), where a rank of a grid with twice as many columns as rows (h = 2) holds one half of a block.
_BUTTERFLY = ("floor(rank/(num_proc_cols/2^({s}-1)))*(num_proc_cols/2^({s}-1))"
              " + mod(rank + num_proc_cols/2^{s}, num_proc_cols/2^({s}-1))")
BUTTERFLY_PEER = _BUTTERFLY.format(s="(iter+1)")
ROWRED_PEER = _BUTTERFLY.format(s="(l2npcols-iter)")
TRANSPOSE_PEER = ("(num_proc_cols/num_proc_rows)*(mod(floor(rank/(num_proc_cols/num_proc_rows)), num_proc_rows)"
                  "*num_proc_rows + floor(rank/num_proc_cols)) + mod(rank, num_proc_cols/num_proc_rows)")


def butterfly_sum(st: CGState, values: np.ndarray, sites: ReductionSites) -> np.ndarray:
    """Sum ``values`` (1 or 2 doubles) over the processor row: l2npcols exchange-and-add steps.

    Equivalent to an allreduce within the row; NPB spells it out with irecv/send/wait, tag i.
    """
    g = st.grid
    n = values.size
    size = "dp" if n == 1 else "dp*2"
    send, recv = st.red_send[:n], st.red_recv[:n]
    send[:] = values
    with ma.loop(sites.loop, "l2npcols") as lp:
        for i in lp.range(1, g.l2npcols + 1):
            with ma.mpi_irecv(sites.irecv, size, peer=BUTTERFLY_PEER):
                req = st.comm.Irecv(recv, source=g.reduce_exch_proc[i - 1], tag=i)
            with ma.mpi_send(sites.send, size, peer=BUTTERFLY_PEER):
                st.comm.Send(send, dest=g.reduce_exch_proc[i - 1], tag=i)
            req.Wait()
            send += recv
    return send.copy()


def butterfly_scalar(st: CGState, value: float, sites: ReductionSites) -> float:
    """``butterfly_sum`` of one double (rho, p.q and the residual norm)."""
    return float(butterfly_sum(st, np.array([value]), sites)[0])


def row_reduce_exchange(st: CGState, w: np.ndarray, recv: np.ndarray) -> None:
    """Sum the pieces of A.v across the processor row into w(send_start..): steps l2npcols..1.

    Step i receives reduce_recv_lengths(i) doubles into recv(reduce_recv_starts(i)..) and sends
    reduce_send_lengths(i) doubles from w(reduce_send_starts(i)..) to reduce_exch_proc(i).
    """
    g = st.grid
    s0 = g.send_start - 1
    # Every step moves na/num_proc_cols doubles: the whole row block on a square grid, half of it
    # (num_proc_cols = 2*num_proc_rows) otherwise.
    with ma.loop("rowred", "l2npcols") as lp:
        for i in lp.range(g.l2npcols, 0, -1):
            r0, rlen = g.reduce_recv_starts[i - 1] - 1, g.reduce_recv_lengths[i - 1]
            t0, tlen = g.reduce_send_starts[i - 1] - 1, g.reduce_send_lengths[i - 1]
            with ma.mpi_irecv("rowred_rcv", "dp*na/num_proc_cols", peer=ROWRED_PEER):
                req = st.comm.Irecv(recv[r0:r0 + rlen], source=g.reduce_exch_proc[i - 1], tag=i)
            with ma.mpi_send("rowred_snd", "dp*na/num_proc_cols", peer=ROWRED_PEER):
                st.comm.Send(w[t0:t0 + tlen], dest=g.reduce_exch_proc[i - 1], tag=i)
            req.Wait()
            with ma.flop("rowred_add", "na/num_proc_cols"), ma.loadstore("rowred_add_ls", "3*na/num_proc_cols/vlen"):
                w[s0:s0 + rlen] += recv[s0:s0 + rlen]


def transpose_exchange(st: CGState, w: np.ndarray, dest: np.ndarray) -> None:
    """Send w(send_start..+send_len) to exch_proc and receive exch_recv_length doubles into dest(1..).

    With a single processor column there is no partner and the piece is copied.
    """
    g = st.grid
    exchange = g.l2npcols != 0
    # One message each way, none on a single processor column: count min(l2npcols, 1).
    with ma.mpi_irecv("transpose_rcv", "dp*na/num_proc_cols", count="min(l2npcols, 1)", peer=TRANSPOSE_PEER):
        if exchange:
            req = st.comm.Irecv(dest[:g.exch_recv_length], source=g.exch_proc, tag=1)
    with ma.mpi_send("transpose_snd", "dp*na/num_proc_cols", count="min(l2npcols, 1)", peer=TRANSPOSE_PEER):
        if exchange:
            s0 = g.send_start - 1
            st.comm.Send(w[s0:s0 + g.send_len], dest=g.exch_proc, tag=1)
    if exchange:
        req.Wait()
    else:
        dest[:g.exch_recv_length] = w[:g.exch_recv_length]


# --------------------------------------------------------------------------------------------------
# The CG solve
# --------------------------------------------------------------------------------------------------

def cg_step(st: CGState, rho: float) -> float:
    """One of the cgitmax CG steps; returns the new rho."""
    with ma.flop("matvec", MATVEC_FLOPS), ma.loadstore("matvec_ls", MATVEC_LOADSTORES):
        matvec(st, st.p, st.w)                 # q = A.p, first as the local partial product in w
    row_reduce_exchange(st, st.w, st.q)
    transpose_exchange(st, st.w, st.q)
    with ma.loadstore("clear_w", CLEAR_W_STORES):
        clear_w(st)

    with ma.flop("pq_dot", "2*na/num_proc_cols"), ma.loadstore("pq_dot_ls", DOT_LOADS):
        local = local_dot(st, st.p, st.q)
    d = butterfly_scalar(st, local, PQ)
    alpha = rho / d
    rho0 = rho
    with ma.flop("zr_axpy", "4*na/num_proc_cols"), ma.loadstore("zr_axpy_ls", "10*na/num_proc_cols/vlen"):
        update_z_r(st, alpha)

    with ma.flop("rr_dot", "2*na/num_proc_cols"), ma.loadstore("rr_dot_ls", DOT_LOADS):
        local = local_dot(st, st.r, st.r)
    rho = butterfly_scalar(st, local, RR)
    beta = rho / rho0
    with ma.flop("p_update", "2*na/num_proc_cols"), ma.loadstore("p_update_ls", "5*na/num_proc_cols/vlen"):
        update_p(st, beta)
    return rho


@ma.subroutine("residual_norm")
def residual_norm(st: CGState) -> float:
    """||x - A.z||, with A.z formed, reduced and transposed into r as NPB does."""
    with ma.flop("matvec", MATVEC_FLOPS), ma.loadstore("matvec_ls", MATVEC_LOADSTORES):
        matvec(st, st.z, st.w)
    row_reduce_exchange(st, st.w, st.r)
    transpose_exchange(st, st.w, st.r)
    with ma.flop("resid_sq", "3*na/num_proc_cols"), ma.loadstore("resid_sq_ls", RESID_LOADSTORES):
        local = local_residual_sq(st)
    return math.sqrt(butterfly_scalar(st, local, RESIDUAL))


@ma.subroutine("conj_grad")
def conj_grad(st: CGState) -> float:
    """cgitmax CG steps on A z = x from z = 0; returns the residual norm ||x - A.z||."""
    with ma.loadstore("init_vectors", INIT_LOADSTORES):
        init_vectors(st)
    with ma.flop("rho0_dot", "2*na/num_proc_cols"), ma.loadstore("rho0_dot_ls", DOT_LOADS):
        local = local_dot(st, st.r, st.r)
    rho = butterfly_scalar(st, local, RHO0)
    with ma.loop("cgit", "cgitmax") as lp:
        for _cgit in lp.range(st.cgitmax):
            rho = cg_step(st, rho)
    return residual_norm(st)
