"""One SP time step (``adi``) on one rank: copy_faces, txinvr, the pipelined x/y/z solves, add.

Messages are NPB's: copy_faces posts six irecv and six isend (two ghost layers of the five variables of
the faces of the cells that have a neighbour that way) and waits for all twelve; each solve sends, per
stage of the pipeline, 22 doubles a line forward and 10 back (solve.py).

Message sizes are asserted in bytes as expressions of the mean cell: ``80*(ncells-1)*csize^2`` for a
face message (ncells-1 cells of csize^2 points, 5 variables, 2 layers, 8 bytes) and ``176*isize^2`` /
``80*isize^2`` for the pipeline's (22 or 10 doubles for each of the isize^2 lines of a cell). They are
exact for every message when ncells divides problem_size and ncells <= 2; with more cells the sizes
differ between cells by the boundary rows and the remainder points, and the expressions give the mean
message, exact in the sum over all ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

import ma

from .rhs import add, compute_rhs, ninvr, pinvr, txinvr, tzetar
from .solve import (
    BACK_DOUBLES,
    DEFAULT_TAG,
    FORWARD_DOUBLES,
    LineSystem,
    backward,
    backward_message,
    build_lhs,
    forward,
    forward_message,
    lines,
)
from .state import U_GHOST, CellData, SPState, plane_points

if TYPE_CHECKING:
    from mpi4py import MPI

# NPB's tags: messages towards higher coordinates (east, north, top) and towards lower ones.
HIGH_TAGS = (2000, 4000, 7000)
LOW_TAGS = (3000, 5000, 6000)
POST_SOLVE: tuple[Callable[[CellData], None], ...] = (ninvr, pinvr, tzetar)
SOLVES = ("x_solve", "y_solve", "z_solve")
AXES = ("x", "y", "z")
FACE_BYTES = "80*(ncells-1)*csize^2"
ONE_IF_SPLIT = "min(ncells-1, 1)"          # one message each way, none on a single process


def _mpi() -> type[MPI.Request]:
    from mpi4py import MPI

    return MPI.Request


def face(cd: CellData, d: int, where: str) -> np.ndarray:
    """Two planes of u across direction d: the cell's own 'low'/'high' planes or its 'below'/'above' ghosts."""
    g = U_GHOST
    size = cd.cell.size[d]
    first = {"low": g, "high": g + size - 2, "below": 0, "above": g + size}[where]
    sl: list[slice] = [slice(None)] + [slice(g, g + cd.cell.size[e]) for e in (2, 1, 0)]
    sl[3 - d] = slice(first, first + 2)
    return cd.u[tuple(sl)]


def pack(st: SPState, d: int, where: str, skip: int) -> np.ndarray:
    """The 'low' or 'high' faces of the cells whose coordinate along d is not ``skip``, one after another."""
    return np.concatenate([face(cd, d, where).ravel() for cd in st.cells if cd.cell.coord[d] != skip])


def unpack(st: SPState, d: int, where: str, skip: int, buf: np.ndarray) -> None:
    at = 0
    for cd in st.cells:
        if cd.cell.coord[d] != skip:
            ghost = face(cd, d, where)
            ghost[...] = buf[at:at + ghost.size].reshape(ghost.shape)
            at += ghost.size


@ma.subroutine("copy_faces")
def copy_faces(st: SPState) -> None:
    """Fill the ghost layers from the six neighbouring ranks, then compute the rhs of every cell."""
    p = st.ncells
    lay = st.layout
    comm = st.comm_rhs
    exchange = p > 1
    requests = []
    received = []
    for d in range(3):
        # from the successor: its low faces, into the ghosts above our cells not at the top coordinate;
        # from the predecessor: its high faces, below our cells not at the bottom
        from_succ = np.empty(sum(face(cd, d, "above").size for cd in st.cells if cd.cell.coord[d] != p - 1))
        from_pred = np.empty(sum(face(cd, d, "below").size for cd in st.cells if cd.cell.coord[d] != 0))
        with ma.mpi_irecv(f"faces_{AXES[d]}_recv_high", FACE_BYTES, count=ONE_IF_SPLIT):
            if exchange:
                requests.append(comm.Irecv(from_succ, source=lay.successor[d], tag=LOW_TAGS[d]))
        with ma.mpi_irecv(f"faces_{AXES[d]}_recv_low", FACE_BYTES, count=ONE_IF_SPLIT):
            if exchange:
                requests.append(comm.Irecv(from_pred, source=lay.predecessor[d], tag=HIGH_TAGS[d]))
        received.append((from_succ, from_pred))
    if exchange:
        sends = [(pack(st, d, "high", p - 1), pack(st, d, "low", 0)) for d in range(3)]
    for d in range(3):
        with ma.mpi_isend(f"faces_{AXES[d]}_send_high", FACE_BYTES, count=ONE_IF_SPLIT):
            if exchange:
                requests.append(comm.Isend(sends[d][0], dest=lay.successor[d], tag=HIGH_TAGS[d]))
        with ma.mpi_isend(f"faces_{AXES[d]}_send_low", FACE_BYTES, count=ONE_IF_SPLIT):
            if exchange:
                requests.append(comm.Isend(sends[d][1], dest=lay.predecessor[d], tag=LOW_TAGS[d]))
    if exchange:
        _mpi().Waitall(requests)
        for d in range(3):
            unpack(st, d, "above", p - 1, received[d][0])
            unpack(st, d, "below", 0, received[d][1])
    compute_rhs(st)


def solve(st: SPState, d: int) -> None:
    """x_solve (d=0), y_solve (1) or z_solve (2), pipelined across the cells as NPB does.

    The loops over the pipeline's stages start at its second stage, so that each of their iterations
    sends and receives one message: the previous stage's result goes out, this stage's input comes in.
    """
    p = st.ncells
    lay = st.layout
    comm = st.comm_solve
    axis = AXES[d]
    Request = _mpi()
    systems: list[LineSystem] = []
    with ma.subroutine(SOLVES[d]):
        # forward elimination, in slab order
        first = st.cells[lay.slices[d][0]]
        systems.append(lines(first, d))
        build_lhs(st, first, d, systems[0])
        forward(systems[0], None)
        send_req = None
        with ma.loop(f"{axis}_fwd_stages", "ncells-1") as lp:
            for stage in lp.range(1, p):
                with ma.mpi_isend(f"{axis}_fwd_send", "176*isize^2"):
                    send_req = comm.Isend(forward_message(systems[stage - 1]), dest=lay.successor[d],
                                          tag=DEFAULT_TAG)
                cd = st.cells[lay.slices[d][stage]]
                systems.append(lines(cd, d))
                received = np.empty(FORWARD_DOUBLES * plane_points(cd.cell, d))
                with ma.mpi_irecv(f"{axis}_fwd_recv", "176*isize^2"):
                    req = comm.Irecv(received, source=lay.predecessor[d], tag=DEFAULT_TAG)
                build_lhs(st, cd, d, systems[stage])          # while the message travels
                Request.Waitall([req, send_req])
                forward(systems[stage], received)
        # back substitution, in reverse slab order
        backward(systems[p - 1], None)
        with ma.loop(f"{axis}_back_stages", "ncells-1") as lp:
            for stage in lp.range(p - 2, -1, -1):
                with ma.mpi_isend(f"{axis}_back_send", "80*isize^2"):
                    send_req = comm.Isend(backward_message(systems[stage + 1]), dest=lay.predecessor[d],
                                          tag=DEFAULT_TAG)
                cd = st.cells[lay.slices[d][stage]]
                received = np.empty(BACK_DOUBLES * plane_points(cd.cell, d))
                with ma.mpi_irecv(f"{axis}_back_recv", "80*isize^2"):
                    req = comm.Irecv(received, source=lay.successor[d], tag=DEFAULT_TAG)
                POST_SOLVE[d](st.cells[lay.slices[d][stage + 1]])    # while the message travels
                Request.Waitall([req, send_req])
                backward(systems[stage], received)
        POST_SOLVE[d](first)


@ma.subroutine("adi")
def adi(st: SPState) -> None:
    copy_faces(st)
    txinvr(st)
    for d in range(3):
        solve(st, d)
    add(st)
