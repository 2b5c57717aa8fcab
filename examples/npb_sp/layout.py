"""NPB SP's multi-partition decomposition (``make_set``): p x p x p cells, p per rank, one in every slab.

Rank ``node`` at (i, j) = (node mod p, node div p) owns cells c = 0..p-1 at (x, y, z) =
((i + c) mod p, (j - c) mod p, c). Along each direction the first ``N mod p`` cell coordinates get
``N div p + 1`` points and the others ``N div p``; a cell of two points or fewer is an error. Every
neighbour of a cell lies on another rank, the same one for all p cells of a rank (its predecessor or
successor in that direction), which is what makes the pipelined line solves and the face exchange work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ma_core.errors import MAError

MIN_CELL = 3


class SPSetupError(MAError):
    """An SP run that cannot be set up: process count, class, cell size or iteration count not allowed."""


@dataclass(frozen=True)
class Cell:
    """One cell: grid coordinates (x, y, z), points per direction, global index of its first point, and
    ``start``/``end`` = 1 where it touches the low/high global boundary in that direction."""

    coord: tuple[int, int, int]
    size: tuple[int, int, int]
    low: tuple[int, int, int]
    start: tuple[int, int, int]
    end: tuple[int, int, int]

    def interior(self, d: int) -> tuple[int, int]:
        """The cell-local range [lo, hi) of points off the global boundary in direction ``d``."""
        return self.start[d], self.size[d] - self.end[d]


@dataclass(frozen=True)
class Layout:
    n: int
    ncells: int
    node: int
    cells: tuple[Cell, ...]
    slices: tuple[tuple[int, ...], ...]           # slices[d][stage] = the cell in slab ``stage`` along d
    predecessor: tuple[int, int, int]             # rank of the neighbouring cells at lower coordinate
    successor: tuple[int, int, int]

    @property
    def nprocs(self) -> int:
        return self.ncells * self.ncells


def cell_count(nprocs: int) -> int:
    """p = sqrt(nprocs), or SPSetupError when nprocs is not a perfect square."""
    p = math.isqrt(nprocs)
    if nprocs < 1 or p * p != nprocs:
        squares = ", ".join(str(k * k) for k in range(1, 6))
        raise SPSetupError(f"SP needs a square number of processes ({squares}, ...), got {nprocs}")
    return p


def extent(n: int, p: int, coord: int) -> tuple[int, int]:
    """(size, low) of the cell at ``coord`` along a direction of n points cut into p cells."""
    size, excess = divmod(n, p)
    if coord < excess:
        return size + 1, coord * (size + 1)
    return size, excess * (size + 1) + (coord - excess) * size


def make_set(n: int, nprocs: int, node: int) -> Layout:
    p = cell_count(nprocs)
    if n // p < MIN_CELL:
        raise SPSetupError(f"cells too small: {n} points per direction on {p} x {p} x {p} cells gives cells "
                           f"of {n // p} points; the minimum is {MIN_CELL} (use at most "
                           f"{(n // MIN_CELL) ** 2} processes)")
    i, j = node % p, node // p
    cells = []
    for c in range(p):
        coord = ((i + c) % p, (j - c) % p, c)
        sizes, lows = zip(*(extent(n, p, coord[d]) for d in range(3)), strict=True)
        cells.append(Cell(coord=coord, size=tuple(sizes), low=tuple(lows),  # type: ignore[arg-type]
                          start=tuple(int(x == 0) for x in coord),           # type: ignore[arg-type]
                          end=tuple(int(x == p - 1) for x in coord)))        # type: ignore[arg-type]
    slices = tuple(tuple(next(c for c in range(p) if cells[c].coord[d] == s) for s in range(p)) for d in range(3))
    predecessor = ((i - 1) % p + p * j, i + p * ((j - 1) % p), (i + 1) % p + p * ((j - 1) % p))
    successor = ((i + 1) % p + p * j, i + p * ((j + 1) % p), (i - 1) % p + p * ((j + 1) % p))
    return Layout(n=n, ncells=p, node=node, cells=tuple(cells), slices=slices,
                  predecessor=predecessor, successor=successor)
