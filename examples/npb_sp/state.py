"""Per-rank state of SP: for every cell its solution with ghost layers, right-hand side, forcing and the
point-wise quantities of ``compute_rhs``, plus the work buffers of the line solves.

Arrays are indexed (m, z, y, x) - NPB's u(i, j, k, m, c) with x fastest. ``u`` has two ghost layers on
every side (NPB's -2..size+1), the point-wise quantities (rho_i, us, ...) one (-1..size), ``rhs`` and
``forcing`` none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .constants import Constants
from .layout import Cell, Layout

if TYPE_CHECKING:
    from mpi4py import MPI

AUX = ("rho_i", "us", "vs", "ws", "square", "qs", "speed", "ainv")
U_GHOST, AUX_GHOST = 2, 1


def box(cell: Cell, ghost: int, d: int | None = None, shift: int = 0,
        rows: tuple[int, int] | None = None) -> tuple[slice, slice, slice]:
    """(z, y, x) slices of the cell's interior points in an array with ``ghost`` layers, moved by ``shift``
    along direction ``d`` and, along ``d``, limited to the cell-local ``rows`` [lo, hi) when given."""
    out = []
    for dim in (2, 1, 0):
        lo, hi = rows if (dim == d and rows is not None) else cell.interior(dim)
        s = shift if dim == d else 0
        out.append(slice(ghost + lo + s, ghost + hi + s))
    return out[0], out[1], out[2]


@dataclass
class CellData:
    cell: Cell
    u: np.ndarray
    rhs: np.ndarray
    forcing: np.ndarray
    aux: dict[str, np.ndarray]
    lhs_buf: np.ndarray        # flat: the solve's (n, 3, 5, o1, o2) lhs of one direction at a time
    work_buf: np.ndarray       # flat: the solve's (n + 2, 5, o1, o2) right-hand sides

    @classmethod
    def allocate(cls, cell: Cell) -> CellData:
        sx, sy, sz = cell.size
        u = np.empty((5, sz + 2 * U_GHOST, sy + 2 * U_GHOST, sx + 2 * U_GHOST))
        aux_shape = (sz + 2 * AUX_GHOST, sy + 2 * AUX_GHOST, sx + 2 * AUX_GHOST)
        lines = max((cell.size[d] + 2) * plane_points(cell, d) for d in range(3))
        return cls(cell=cell, u=u, rhs=np.zeros((5, sz, sy, sx)), forcing=np.zeros((5, sz, sy, sx)),
                   aux={name: np.zeros(aux_shape) for name in AUX},
                   lhs_buf=np.zeros(15 * lines), work_buf=np.zeros(5 * lines))


def plane_points(cell: Cell, d: int) -> int:
    """Lines of a solve along ``d``: the interior points of the cell's cross-section."""
    a, b = (cell.interior(e) for e in range(3) if e != d)
    return (a[1] - a[0]) * (b[1] - b[0])


@dataclass
class SPState:
    """Everything one rank holds: problem, layout, constants, cells, communicators."""

    class_name: str
    niter: int
    layout: Layout
    k: Constants
    comm_setup: MPI.Comm
    comm_solve: MPI.Comm
    comm_rhs: MPI.Comm
    cells: list[CellData] = field(init=False)

    def __post_init__(self) -> None:
        self.cells = [CellData.allocate(c) for c in self.layout.cells]

    @property
    def ncells(self) -> int:
        return self.layout.ncells
