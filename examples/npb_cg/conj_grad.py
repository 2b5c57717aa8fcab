"""``conj_grad`` of NPB 3.4 MPI CG: kernels, butterfly reductions and the transpose exchange.

Each kernel and each Irecv/Send/Wait group is its own function, so modeling assertions can be put
around exactly one of them. Message tags, partners and lengths are NPB's. Vectors are 0-based views
of NPB's 1-based arrays (Fortran x(j) is x[j-1]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

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
    comm: "MPI.Comm"
    a: sp.csr_matrix
    cgitmax: int = CGITMAX
    x: np.ndarray = field(init=False)
    z: np.ndarray = field(init=False)
    p: np.ndarray = field(init=False)
    q: np.ndarray = field(init=False)
    r: np.ndarray = field(init=False)
    w: np.ndarray = field(init=False)
    # One- and two-element buffers for the scalar butterflies (NPB's sum/rho/d and norm_temp1/2).
    red_send: np.ndarray = field(init=False)
    red_recv: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        length = self.grid.naa + 2
        if max(self.grid.nrows, self.grid.ncols) > length:
            raise ValueError(f"partition block {self.grid.nrows}x{self.grid.ncols} exceeds naa+2={length}")
        for name in ("x", "z", "p", "q", "r", "w"):
            setattr(self, name, np.zeros(length))
        self.red_send = np.zeros(2)
        self.red_recv = np.zeros(2)

    @property
    def nprocs(self) -> int:
        return self.grid.nprocs

    @property
    def me(self) -> int:
        return self.grid.me


# --------------------------------------------------------------------------------------------------
# Local kernels
# --------------------------------------------------------------------------------------------------

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
    """out(1..nrows) = A_block . vec(1..ncols): the partition submatrix-vector product."""
    out[:st.grid.nrows] = st.a @ vec[:st.grid.ncols]


def clear_w(st: CGState) -> None:
    """w = 0 over max(nrows, ncols) entries, ready for the next product."""
    st.w[:max(st.grid.nrows, st.grid.ncols)] = 0.0


def update_z_r(st: CGState, alpha: float) -> None:
    """z = z + alpha*p and r = r - alpha*q over this rank's columns."""
    n = st.grid.ncols
    st.z[:n] += alpha * st.p[:n]
    st.r[:n] -= alpha * st.q[:n]


def update_p(st: CGState, beta: float) -> None:
    """p = r + beta*p over this rank's columns."""
    n = st.grid.ncols
    st.p[:n] = st.r[:n] + beta * st.p[:n]


def local_residual_sq(st: CGState) -> float:
    """Sum of (x(j) - r(j))^2 over this rank's columns, r holding A.z."""
    n = st.grid.ncols
    d = st.x[:n] - st.r[:n]
    return _dot(d, d)


# --------------------------------------------------------------------------------------------------
# Communication (Irecv / Send / Wait groups)
# --------------------------------------------------------------------------------------------------

def butterfly_sum(st: CGState, values: np.ndarray) -> np.ndarray:
    """Sum ``values`` (1 or 2 doubles) over the processor row: l2npcols exchange-and-add steps.

    Equivalent to an allreduce within the row; NPB spells it out with irecv/send/wait, tag i.
    """
    g = st.grid
    n = values.size
    send, recv = st.red_send[:n], st.red_recv[:n]
    send[:] = values
    for i in range(1, g.l2npcols + 1):
        req = st.comm.Irecv(recv, source=g.reduce_exch_proc[i - 1], tag=i)
        st.comm.Send(send, dest=g.reduce_exch_proc[i - 1], tag=i)
        req.Wait()
        send += recv
    return send.copy()


def butterfly_scalar(st: CGState, value: float) -> float:
    """``butterfly_sum`` of one double (rho, p.q and the residual norm)."""
    return float(butterfly_sum(st, np.array([value]))[0])


def row_reduce_exchange(st: CGState, w: np.ndarray, recv: np.ndarray) -> None:
    """Sum the pieces of A.v across the processor row into w(send_start..): steps l2npcols..1.

    Step i receives reduce_recv_lengths(i) doubles into recv(reduce_recv_starts(i)..) and sends
    reduce_send_lengths(i) doubles from w(reduce_send_starts(i)..) to reduce_exch_proc(i).
    """
    g = st.grid
    s0 = g.send_start - 1
    for i in range(g.l2npcols, 0, -1):
        r0, rlen = g.reduce_recv_starts[i - 1] - 1, g.reduce_recv_lengths[i - 1]
        t0, tlen = g.reduce_send_starts[i - 1] - 1, g.reduce_send_lengths[i - 1]
        req = st.comm.Irecv(recv[r0:r0 + rlen], source=g.reduce_exch_proc[i - 1], tag=i)
        st.comm.Send(w[t0:t0 + tlen], dest=g.reduce_exch_proc[i - 1], tag=i)
        req.Wait()
        w[s0:s0 + rlen] += recv[s0:s0 + rlen]


def transpose_exchange(st: CGState, w: np.ndarray, dest: np.ndarray) -> None:
    """Send w(send_start..+send_len) to exch_proc and receive exch_recv_length doubles into dest(1..).

    With a single processor column there is no partner and the piece is copied.
    """
    g = st.grid
    if g.l2npcols != 0:
        req = st.comm.Irecv(dest[:g.exch_recv_length], source=g.exch_proc, tag=1)
        s0 = g.send_start - 1
        st.comm.Send(w[s0:s0 + g.send_len], dest=g.exch_proc, tag=1)
        req.Wait()
    else:
        dest[:g.exch_recv_length] = w[:g.exch_recv_length]


# --------------------------------------------------------------------------------------------------
# The CG solve
# --------------------------------------------------------------------------------------------------

def cg_step(st: CGState, rho: float) -> float:
    """One of the cgitmax CG steps; returns the new rho."""
    matvec(st, st.p, st.w)                     # q = A.p, first as the local partial product in w
    row_reduce_exchange(st, st.w, st.q)
    transpose_exchange(st, st.w, st.q)
    clear_w(st)

    d = butterfly_scalar(st, local_dot(st, st.p, st.q))
    alpha = rho / d
    rho0 = rho
    update_z_r(st, alpha)

    rho = butterfly_scalar(st, local_dot(st, st.r, st.r))
    beta = rho / rho0
    update_p(st, beta)
    return rho


def residual_norm(st: CGState) -> float:
    """||x - A.z||, with A.z formed, reduced and transposed into r as NPB does."""
    matvec(st, st.z, st.w)
    row_reduce_exchange(st, st.w, st.r)
    transpose_exchange(st, st.w, st.r)
    return math.sqrt(butterfly_scalar(st, local_residual_sq(st)))


def conj_grad(st: CGState) -> float:
    """cgitmax CG steps on A z = x from z = 0; returns the residual norm ||x - A.z||."""
    init_vectors(st)
    rho = butterfly_scalar(st, local_dot(st, st.r, st.r))
    for _cgit in range(st.cgitmax):
        rho = cg_step(st, rho)
    return residual_norm(st)
