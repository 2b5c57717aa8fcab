"""The exact solution and what NPB SP derives from it: ``initialize``, ``exact_rhs`` (the forcing term)
and the error norms of ``verify`` - all vectorised over a cell's points."""

from __future__ import annotations

import numpy as np

from .constants import C1, C2, CE
from .layout import Cell
from .state import U_GHOST, CellData, SPState, box


def exact_solution(xi: np.ndarray | float, eta: np.ndarray | float, zeta: np.ndarray | float) -> np.ndarray:
    """u_exact(m, ...) at the (broadcast) coordinates: a quartic in each coordinate."""
    ce = CE[:, :, None, None, None]
    xi, eta, zeta = (np.asarray(v, dtype=float)[None] for v in (xi, eta, zeta))
    return (ce[:, 0] + xi * (ce[:, 1] + xi * (ce[:, 4] + xi * (ce[:, 7] + xi * ce[:, 10])))
            + eta * (ce[:, 2] + eta * (ce[:, 5] + eta * (ce[:, 8] + eta * ce[:, 11])))
            + zeta * (ce[:, 3] + zeta * (ce[:, 6] + zeta * (ce[:, 9] + zeta * ce[:, 12]))))


def coordinates(st: SPState, cd: CellData, pad: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(zeta, eta, xi) of the cell's points, ``pad`` points beyond it on every side, shaped to broadcast."""
    h = st.k.dirs[0].dnm1
    axes = []
    for d in range(3):
        idx = np.arange(cd.cell.low[d] - pad, cd.cell.low[d] + cd.cell.size[d] + pad)
        axes.append(idx * h)
    xi, eta, zeta = axes
    return zeta[:, None, None], eta[None, :, None], xi[None, None, :]


def initialize(st: SPState) -> None:
    """u: 1, 0, 0, 0, 1 everywhere (ghosts included), then the transfinite interpolation of the boundary
    values inside every cell, then the exact solution on the six faces of the grid."""
    for cd in st.cells:
        cd.u[...] = np.array([1.0, 0.0, 0.0, 0.0, 1.0])[:, None, None, None]
        zeta, eta, xi = coordinates(st, cd)
        pxi = xi * exact_solution(1.0, eta, zeta) + (1.0 - xi) * exact_solution(0.0, eta, zeta)
        peta = eta * exact_solution(xi, 1.0, zeta) + (1.0 - eta) * exact_solution(xi, 0.0, zeta)
        pzeta = zeta * exact_solution(xi, eta, 1.0) + (1.0 - zeta) * exact_solution(xi, eta, 0.0)
        inner = (pxi + peta + pzeta - pxi * peta - pxi * pzeta - peta * pzeta + pxi * peta * pzeta)
        sx, sy, sz = cd.cell.size
        cd.u[:, U_GHOST:U_GHOST + sz, U_GHOST:U_GHOST + sy, U_GHOST:U_GHOST + sx] = inner
    for d in range(3):
        for stage, at in ((0, 0.0), (st.ncells - 1, 1.0)):
            cd = st.cells[st.layout.slices[d][stage]]
            zeta, eta, xi = coordinates(st, cd)
            coords = [xi, eta, zeta]
            coords[d] = np.asarray(at)
            face = exact_solution(*coords)
            sx, sy, sz = cd.cell.size
            target = [slice(U_GHOST, U_GHOST + sz), slice(U_GHOST, U_GHOST + sy), slice(U_GHOST, U_GHOST + sx)]
            plane = 0 if stage == 0 and at == 0.0 else cd.cell.size[d] - 1
            target[2 - d] = slice(U_GHOST + plane, U_GHOST + plane + 1)
            cd.u[(slice(None), *target)] = np.broadcast_to(face, cd.u[(slice(None), *target)].shape)


# NPB's fourth-difference dissipation: coefficients of u at shifts -2..+2 along the direction, on the
# rows of a line off the grid's faces, and one-sided on rows 1, 2, N-3 and N-2.
FULL = (1.0, -4.0, 6.0, -4.0, 1.0)
ROW_1 = (0.0, 0.0, 5.0, -4.0, 1.0)
ROW_2 = (0.0, -4.0, 6.0, -4.0, 1.0)
ROW_N3 = (1.0, -4.0, 6.0, -4.0, 0.0)
ROW_N2 = (1.0, -4.0, 5.0, 0.0, 0.0)


def dissipation(ue: np.ndarray, cd: CellData, d: int, ghost: int, dssp: float, out: np.ndarray) -> None:
    """out -= dssp * (fourth difference of ue along d) on the cell's interior (``out``); ``ue`` has
    ``ghost`` layers."""
    cell = cd.cell
    lo = cell.interior(d)[0]
    size = cell.size[d]

    def apply(a: int, b: int, coefs: tuple[float, ...]) -> None:
        """Rows [a, b) (cell-local) of out -= dssp * sum(coef * u(shift)), terms of coefficient 0 left out."""
        total: np.ndarray | None = None
        for shift, coef in zip(range(-2, 3), coefs, strict=True):
            if coef != 0.0:
                term = ue[(slice(None), *box(cell, ghost, d, shift, (a, b)))]
                term = term if coef == 1.0 else coef * term
                total = term if total is None else total + term
        assert total is not None
        sl: list[slice] = [slice(None)] * 4
        sl[3 - d] = slice(a - lo, b - lo)
        out[tuple(sl)] -= dssp * total

    apply(3 * cell.start[d], size - 3 * cell.end[d], FULL)
    if cell.start[d]:
        apply(1, 2, ROW_1)
        apply(2, 3, ROW_2)
    if cell.end[d]:
        apply(size - 3, size - 2, ROW_N3)
        apply(size - 2, size - 1, ROW_N2)


def exact_rhs(st: SPState) -> None:
    """forcing = -(the scheme's right-hand side applied to the exact solution) at interior points, 0 elsewhere."""
    g = U_GHOST
    for cd in st.cells:
        cd.forcing[...] = 0.0
        zeta, eta, xi = coordinates(st, cd, pad=g)
        ue = exact_solution(xi, eta, zeta)                      # (5, sz+4, sy+4, sx+4), like u
        buf = ue / ue[0]                                        # buf(2..5) = velocities, buf(5) = e/rho
        sumsq = buf[1] ** 2 + buf[2] ** 2 + buf[3] ** 2         # NPB's buf(., 1)
        q = 0.5 * (buf[1] * ue[1] + buf[2] * ue[2] + buf[3] * ue[3])
        f = cd.forcing[(slice(None), *box(cd.cell, 0))]
        for d in range(3):
            k = st.k.dirs[d]
            md = 1 + d

            def at(a: np.ndarray, shift: int, d: int = d, cell: Cell = cd.cell) -> np.ndarray:
                return a[(..., *box(cell, g, d, shift))]

            def second(a: np.ndarray, d: int = d) -> np.ndarray:
                return at(a, 1, d) - 2.0 * at(a, 0, d) + at(a, -1, d)

            cuf = buf[md] ** 2
            up, um = at(ue, 1), at(ue, -1)
            vp, vm = at(buf[md], 1), at(buf[md], -1)
            f[0] += -k.t2 * (up[md] - um[md]) + k.dd * second(ue[0])
            for m in (1, 2, 3):
                if m == md:
                    f[m] += (-k.t2 * ((up[m] * vp + C2 * (up[4] - at(q, 1)))
                                      - (um[m] * vm + C2 * (um[4] - at(q, -1))))
                             + k.con1 * second(buf[m]) + k.dd * second(ue[m]))
                else:
                    f[m] += (-k.t2 * (up[m] * vp - um[m] * vm) + k.con2 * second(buf[m]) + k.dd * second(ue[m]))
            f[4] += (-k.t2 * (vp * (C1 * up[4] - C2 * at(q, 1)) - vm * (C1 * um[4] - C2 * at(q, -1)))
                     + 0.5 * k.con3 * second(sumsq) + k.con4 * second(cuf) + k.con5 * second(buf[4])
                     + k.dd * second(ue[4]))
            dissipation(ue, cd, d, g, st.k.dssp, f)
        f *= -1.0


def error_sums(st: SPState) -> np.ndarray:
    """Per-variable sums of (u - u_exact)^2 over this rank's points (NPB's error_norm before the allreduce)."""
    sums = np.zeros(5)
    for cd in st.cells:
        zeta, eta, xi = coordinates(st, cd)
        sx, sy, sz = cd.cell.size
        diff = cd.u[:, U_GHOST:U_GHOST + sz, U_GHOST:U_GHOST + sy, U_GHOST:U_GHOST + sx] - exact_solution(xi, eta,
                                                                                                       zeta)
        sums += np.einsum("mzyx,mzyx->m", diff, diff)
    return sums


def rhs_sums(st: SPState) -> np.ndarray:
    """Per-variable sums of rhs^2 over this rank's interior points (NPB's rhs_norm before the allreduce)."""
    sums = np.zeros(5)
    for cd in st.cells:
        r = cd.rhs[(slice(None), *box(cd.cell, 0))]
        sums += np.einsum("mzyx,mzyx->m", r, r)
    return sums
