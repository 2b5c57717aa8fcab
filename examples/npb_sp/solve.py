"""NPB SP's x_solve, y_solve and z_solve: scalar pentadiagonal line solves pipelined across the cells.

A solve along direction d runs the Thomas algorithm on every grid line along d, for the three factors
of the diagonalised system (variables 1-3 share the first, 4 and 5 have their own). The lines cross p
cells on p ranks: NPB's multi-partition pipeline. Forward elimination goes through the cells in slab
order; before a cell it receives from the predecessor the last two rows of the previous cell (d and e
of the three factors and the five rhs: 22 doubles a line) and afterwards sends its own to the
successor. Back substitution goes the other way with the first two solution rows (10 doubles a line).
The recurrence over the planes of a cell is a Python loop; every step is a handful of array operations
on a whole plane of lines.

Flops per cell, in the driver's csize and isize (rhs.py says what they are): a line of n = csize rows
costs 58n - 66 in forward elimination (14 to normalise a row, 22 to eliminate it from each of the next
two), 66 more to take in the previous cell's two rows, and 20 per row in back substitution (10 for the
first row of the last cell, 40 for the two rows next to the successor's).

Work layout of a cell's solve: lhs (n, 3, 5, o1, o2) and rhs (n + 2, 5, o1, o2), the solve direction
first and contiguous planes, o1 x o2 the interior lines of the cell's cross-section. The rhs gets two
extra rows for the successor's first two solution rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ma

from .constants import C1C5, C3C4, CON43
from .state import AUX_GHOST, CellData, SPState, box, plane_points

DEFAULT_TAG = 0
FORWARD_DOUBLES, BACK_DOUBLES = 22, 10       # per line: what the pipeline passes between cells


@dataclass
class LineSystem:
    """One cell's lines along one direction, in the solve's layout (views of the cell's work buffers)."""

    lhs: np.ndarray           # (n, 3, 5, o1, o2): factors x diagonals a, b, c, d, e
    rhs: np.ndarray           # (n + 2, 5, o1, o2)
    target: np.ndarray        # the cell's interior rhs, moved to (n, 5, o1, o2): where the solution goes

    @property
    def n(self) -> int:
        return self.lhs.shape[0]


def line_view(arr: np.ndarray, d: int) -> np.ndarray:
    """``arr`` (.., z, y, x) with direction d's axis moved to the front."""
    return np.moveaxis(arr, arr.ndim - 1 - d, 0)


def lines(cd: CellData, d: int) -> LineSystem:
    """The cell's line system along d: lhs buffer shaped, rhs copied in (whole cell along d, interior across)."""
    cell = cd.cell
    n = cell.size[d]
    rows = (0, n)
    target = line_view(cd.rhs[(slice(None), *box(cell, 0, d, 0, rows))], d)
    o1, o2 = target.shape[2:]
    lhs = cd.lhs_buf[:n * 15 * o1 * o2].reshape(n, 3, 5, o1, o2)
    rhs = cd.work_buf[:(n + 2) * 5 * o1 * o2].reshape(n + 2, 5, o1, o2)
    rhs[:n] = target
    assert o1 * o2 == plane_points(cell, d)
    return LineSystem(lhs=lhs, rhs=rhs, target=target)


LHS_SITES = ("lhsx", "lhsy", "lhsz")


def build_lhs(st: SPState, cd: CellData, d: int, ls: LineSystem) -> None:
    """NPB's lhsx/lhsy/lhsz: the three factors' pentadiagonals; rows on the grid's faces are the identity."""
    with ma.subroutine(LHS_SITES[d]), ma.flop("lhs_flops", "isize^2*(27*isize + 12 - 6/ncells)"):
        _build_lhs(st, cd, d, ls)


def _build_lhs(st: SPState, cd: CellData, d: int, ls: LineSystem) -> None:
    k = st.k.dirs[d]
    kc = st.k
    cell = cd.cell
    lo, hi = cell.interior(d)
    n = ls.n
    lhs = ls.lhs
    lhs[...] = 0.0
    for face in ([0] if cell.start[d] else []) + ([n - 1] if cell.end[d] else []):
        lhs[face, :, 2] = 1.0
    vel = ("us", "vs", "ws")[d]
    ext = (lo - 1, hi + 1)       # rows lo-1 .. hi (the neighbours of the interior rows)
    sl = box(cell, AUX_GHOST, d, 0, ext)
    cv = line_view(cd.aux[vel][sl], d)
    ru1 = C3C4 * line_view(cd.aux["rho_i"][sl], d)
    rho = np.maximum(np.maximum(k.d_coef + CON43 * ru1, k.d_coef + C1C5 * ru1),
                     np.maximum(k.dmax + ru1, k.d_coef))
    f0 = lhs[lo:hi, 0]
    f0[:, 1] = -k.dtt2 * cv[:-2] - k.dtt1 * rho[:-2]
    f0[:, 2] = 1.0 + k.c2dtt1 * rho[1:-1]
    f0[:, 3] = k.dtt2 * cv[2:] - k.dtt1 * rho[2:]
    # fourth-order dissipation, one-sided next to the grid's faces
    z1, z4, z5, z6 = kc.comz1, kc.comz4, kc.comz5, kc.comz6
    f = lhs[:, 0]
    if cell.start[d]:
        f[1, 2] += z5
        f[1, 3] -= z4
        f[1, 4] += z1
        f[2, 1:5] += np.array([-z4, z6, -z4, z1])[:, None, None]
    a, b = 3 * cell.start[d], n - 3 * cell.end[d]
    f[a:b] += np.array([z1, -z4, z6, -z4, z1])[:, None, None]
    if cell.end[d]:
        f[n - 3, 0:4] += np.array([z1, -z4, z6, -z4])[:, None, None]
        f[n - 2, 0:3] += np.array([z1, -z4, z5])[:, None, None]
    # the u+c and u-c factors
    speed = line_view(cd.aux["speed"][sl], d)
    lhs[lo:hi, 1] = f0
    lhs[lo:hi, 2] = f0
    lhs[lo:hi, 1, 1] -= k.dtt2 * speed[:-2]
    lhs[lo:hi, 1, 3] += k.dtt2 * speed[2:]
    lhs[lo:hi, 2, 1] += k.dtt2 * speed[:-2]
    lhs[lo:hi, 2, 3] -= k.dtt2 * speed[2:]


def eliminate(lhs_row: np.ndarray, rhs_row: np.ndarray, de: np.ndarray, r: np.ndarray, col: int) -> None:
    """Subtract a normalised row (its d, e as ``de`` (3, 2, ...) and rhs ``r`` (5, ...)) times the target
    row's coefficient in column ``col`` (1: b, the next row; 0: a, the row after next)."""
    coef = lhs_row[:, col]
    lhs_row[:, col + 1:col + 3] -= coef[:, None] * de
    rhs_row[0:3] -= coef[0] * r[0:3]
    rhs_row[3:5] -= coef[1:3] * r[3:5]


def forward(ls: LineSystem, received: np.ndarray | None) -> None:
    """Forward elimination over the cell's rows; ``received``: the previous cell's last two rows."""
    lhs, rhs, n = ls.lhs, ls.rhs, ls.n
    if received is not None:
        nb = lhs.shape[3] * lhs.shape[4]
        de = received[:12 * nb].reshape(2, 3, 2, *lhs.shape[3:])
        r = received[12 * nb:].reshape(2, 5, *lhs.shape[3:])
        with ma.flop("fwd_unpack", "66*isize^2"):
            eliminate(lhs[0], rhs[0], de[0], r[0], 0)
            eliminate(lhs[0], rhs[0], de[1], r[1], 1)
            eliminate(lhs[1], rhs[1], de[1], r[1], 0)
    fac = np.empty((3, *lhs.shape[3:]))
    with ma.flop("fwd_elim", "isize^2*(58*csize - 66)"), ma.loop("fwd_rows", "csize") as lp:
        for i in lp.range(n):
            row, r = lhs[i], rhs[i]
            np.divide(1.0, row[:, 2], out=fac)
            row[:, 3:5] *= fac[:, None]
            r[0:3] *= fac[0]
            r[3:5] *= fac[1:3]
            if i + 1 < n:
                eliminate(lhs[i + 1], rhs[i + 1], row[:, 3:5], r, 1)
            if i + 2 < n:
                eliminate(lhs[i + 2], rhs[i + 2], row[:, 3:5], r, 0)


def forward_message(ls: LineSystem) -> np.ndarray:
    """The last two rows after elimination: d and e of the three factors, then the five rhs."""
    n = ls.n
    return np.concatenate((ls.lhs[n - 2:n, :, 3:5].ravel(), ls.rhs[n - 2:n].ravel()))


def backward(ls: LineSystem, received: np.ndarray | None) -> None:
    """Back substitution; ``received``: the successor cell's first two solution rows (None: last cell)."""
    lhs, rhs, n = ls.lhs, ls.rhs, ls.n
    if received is None:
        with ma.flop("back_last", "10*isize^2"):
            _subtract(rhs[n - 2], lhs[n - 2, :, 3], rhs[n - 1])
    else:
        rhs[n:n + 2] = received.reshape(2, *rhs.shape[1:])
        with ma.flop("back_unpack", "40*isize^2"):
            for i in (n - 1, n - 2):
                _subtract(rhs[i], lhs[i, :, 3], rhs[i + 1])
                _subtract(rhs[i], lhs[i, :, 4], rhs[i + 2])
    with ma.flop("back_subst", "20*isize^2*(csize - 2)"), ma.loop("back_rows", "csize - 2") as lp:
        for i in lp.range(n - 3, -1, -1):
            _subtract(rhs[i], lhs[i, :, 3], rhs[i + 1])
            _subtract(rhs[i], lhs[i, :, 4], rhs[i + 2])
    ls.target[...] = rhs[:n]


def _subtract(r: np.ndarray, coef: np.ndarray, x: np.ndarray) -> None:
    """r -= coef * x, coef by factor (3, ...) and r, x by variable (5, ...)."""
    r[0:3] -= coef[0] * x[0:3]
    r[3:5] -= coef[1:3] * x[3:5]


def backward_message(ls: LineSystem) -> np.ndarray:
    return ls.rhs[0:2].ravel().copy()
