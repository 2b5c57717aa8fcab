"""One SP time step (``adi``) on one rank: copy_faces, txinvr, the pipelined x/y/z solves, add.

Messages are NPB's: copy_faces posts six irecv and six isend (two ghost layers of the five variables of
the faces of the cells that have a neighbour that way) and waits for all twelve; each solve sends, per
stage of the pipeline, 22 doubles a line forward and 10 back (solve.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .rhs import add, compute_rhs, ninvr, pinvr, txinvr, tzetar
from .solve import (BACK_DOUBLES, DEFAULT_TAG, FORWARD_DOUBLES, LineSystem, backward, backward_message, build_lhs,
                    forward, forward_message, lines)
from .state import U_GHOST, CellData, SPState, plane_points

if TYPE_CHECKING:
    from mpi4py import MPI

# NPB's tags: messages towards higher coordinates (east, north, top) and towards lower ones.
HIGH_TAGS = (2000, 4000, 7000)
LOW_TAGS = (3000, 5000, 6000)
POST_SOLVE: tuple[Callable[[CellData], None], ...] = (ninvr, pinvr, tzetar)


def _mpi() -> "type[MPI.Request]":
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


def copy_faces(st: SPState) -> None:
    """Fill the ghost layers from the six neighbouring ranks, then compute the rhs of every cell."""
    p = st.ncells
    if p > 1:
        lay = st.layout
        comm = st.comm_rhs
        requests = []
        recv: list[tuple[int, str, np.ndarray]] = []
        sends = []
        for d in range(3):
            # from the successor: its low planes into our 'above' ghosts, of cells not at the top coordinate
            up = [cd for cd in st.cells if cd.cell.coord[d] != p - 1]
            down = [cd for cd in st.cells if cd.cell.coord[d] != 0]
            from_succ = np.empty(sum(face(cd, d, "above").size for cd in up))
            from_pred = np.empty(sum(face(cd, d, "below").size for cd in down))
            requests.append(comm.Irecv(from_succ, source=lay.successor[d], tag=LOW_TAGS[d]))
            requests.append(comm.Irecv(from_pred, source=lay.predecessor[d], tag=HIGH_TAGS[d]))
            recv += [(d, "above", from_succ), (d, "below", from_pred)]
            sends.append((np.concatenate([face(cd, d, "high").ravel() for cd in up]), lay.successor[d],
                          HIGH_TAGS[d]))
            sends.append((np.concatenate([face(cd, d, "low").ravel() for cd in down]), lay.predecessor[d],
                          LOW_TAGS[d]))
        for buf, dest, tag in sends:
            requests.append(comm.Isend(buf, dest=dest, tag=tag))
        _mpi().Waitall(requests)
        for d, where, buf in recv:
            at = 0
            for cd in st.cells:
                if cd.cell.coord[d] != (p - 1 if where == "above" else 0):
                    ghost = face(cd, d, where)
                    ghost[...] = buf[at:at + ghost.size].reshape(ghost.shape)
                    at += ghost.size
    for cd in st.cells:
        compute_rhs(st, cd)


def solve(st: SPState, d: int) -> None:
    """x_solve (d=0), y_solve (1) or z_solve (2), pipelined across the cells as NPB does."""
    p = st.ncells
    lay = st.layout
    comm = st.comm_solve
    Request = _mpi()
    systems: dict[int, LineSystem] = {}
    send_req = None
    for stage in range(p):
        cd = st.cells[lay.slices[d][stage]]
        ls = systems[stage] = lines(cd, d)
        received = None
        if stage > 0:
            received = np.empty(FORWARD_DOUBLES * plane_points(cd.cell, d))
            req = comm.Irecv(received, source=lay.predecessor[d], tag=DEFAULT_TAG)
            build_lhs(st, cd, d, ls)                  # while the message travels
            Request.Waitall([req, send_req])
        else:
            build_lhs(st, cd, d, ls)
        forward(ls, received)
        if stage < p - 1:
            send_req = comm.Isend(forward_message(ls), dest=lay.successor[d], tag=DEFAULT_TAG)
    for stage in range(p - 1, -1, -1):
        cd = st.cells[lay.slices[d][stage]]
        ls = systems[stage]
        if stage < p - 1:
            received = np.empty(BACK_DOUBLES * plane_points(cd.cell, d))
            req = comm.Irecv(received, source=lay.successor[d], tag=DEFAULT_TAG)
            POST_SOLVE[d](st.cells[lay.slices[d][stage + 1]])   # while the message travels
            Request.Waitall([req, send_req])
            backward(ls, received)
        else:
            backward(ls, None)
        if stage > 0:
            send_req = comm.Isend(backward_message(ls), dest=lay.predecessor[d], tag=DEFAULT_TAG)
        else:
            POST_SOLVE[d](cd)


def adi(st: SPState) -> None:
    copy_faces(st)
    for cd in st.cells:
        txinvr(cd)
    for d in range(3):
        solve(st, d)
    for cd in st.cells:
        add(cd)
