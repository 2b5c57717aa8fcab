"""NPB SP's point-wise kernels: ``compute_rhs``, ``txinvr``, ``ninvr``, ``pinvr``, ``tzetar`` and ``add``,
each vectorised over one cell's points (whole-cell array expressions, no loop over points).

Flop expressions count the array operations written here (add, subtract, multiply, divide, sqrt; not
negation or max), per cell, in the derived parameters of the driver: ``csize`` = problem_size/ncells
(points of a cell per direction) and ``isize`` = (problem_size-2)/ncells (its points off the grid's
faces). Both are means over the cells: exact for every cell when ncells divides problem_size and
ncells <= 2, exact in the sum over all ranks otherwise. ``8/ncells``-like terms are the one-sided
dissipation rows, which only cells on the grid's faces have (2 of every ncells along a direction).
"""

from __future__ import annotations

import numpy as np

import ma

from .constants import BT, C1, C1C2, C2, C2IV, CON43
from .exact import dissipation
from .state import AUX_GHOST, U_GHOST, CellData, SPState, box

ALL = slice(None)


def pointwise(st: SPState, cd: CellData) -> None:
    """rho_i, us, vs, ws, square, qs, speed, ainv on the cell and one ghost layer."""
    g = U_GHOST - AUX_GHOST
    u = cd.u[:, g:-g, g:-g, g:-g]
    a = cd.aux
    np.divide(1.0, u[0], out=a["rho_i"])
    np.multiply(u[1], a["rho_i"], out=a["us"])
    np.multiply(u[2], a["rho_i"], out=a["vs"])
    np.multiply(u[3], a["rho_i"], out=a["ws"])
    np.multiply(0.5 * (u[1] * u[1] + u[2] * u[2] + u[3] * u[3]), a["rho_i"], out=a["square"])
    np.multiply(a["square"], a["rho_i"], out=a["qs"])
    np.sqrt(C1C2 * a["rho_i"] * (u[4] - a["square"]), out=a["speed"])
    np.divide(1.0, a["speed"], out=a["ainv"])


def fluxes(st: SPState, cd: CellData, d: int, r: np.ndarray) -> None:
    """The convective and viscous fluxes along direction ``d`` added to r (the cell's interior rhs)."""
    k = st.k.dirs[d]
    cell, a = cd.cell, cd.aux
    md = 1 + d
    vel = (a["us"], a["vs"], a["ws"])

    def u_at(shift: int) -> np.ndarray:
        return cd.u[(ALL, *box(cell, U_GHOST, d, shift))]

    def at(name: np.ndarray, shift: int) -> np.ndarray:
        return name[box(cell, AUX_GHOST, d, shift)]

    def second(arr: np.ndarray) -> np.ndarray:
        return at(arr, 1) - 2.0 * at(arr, 0) + at(arr, -1)

    up, uc, um = u_at(1), u_at(0), u_at(-1)
    vp, vc, vm = at(vel[d], 1), at(vel[d], 0), at(vel[d], -1)
    sqp, sqm = at(a["square"], 1), at(a["square"], -1)
    r += k.dd * (up - 2.0 * uc + um)
    r[0] -= k.t2 * (up[md] - um[md])
    for m in (1, 2, 3):
        if m == md:
            r[m] += k.con2 * CON43 * (vp - 2.0 * vc + vm) - k.t2 * (up[m] * vp - um[m] * vm
                                                                  + (up[4] - sqp - um[4] + sqm) * C2)
        else:
            r[m] += k.con2 * second(vel[m - 1]) - k.t2 * (up[m] * vp - um[m] * vm)
    rho = a["rho_i"]
    r[4] += (k.con3 * second(a["qs"]) + k.con4 * (vp * vp - 2.0 * vc * vc + vm * vm)
             + k.con5 * (up[4] * at(rho, 1) - 2.0 * uc[4] * at(rho, 0) + um[4] * at(rho, -1))
             - k.t2 * ((C1 * up[4] - C2 * sqp) * vp - (C1 * um[4] - C2 * sqm) * vm))


FLUX_SITES = (("xi_flux", "xi_diss"), ("eta_flux", "eta_diss"), ("zeta_flux", "zeta_diss"))


def compute_rhs_cell(st: SPState, cd: CellData) -> None:
    """rhs = dt * (forcing + fluxes + fourth-order dissipation) at the cell's interior points; forcing elsewhere."""
    with ma.flop("rhs_pointwise", "17*(csize+2)^3"):
        pointwise(st, cd)
    cd.rhs[...] = cd.forcing
    r = cd.rhs[(ALL, *box(cd.cell, 0))]
    for d in range(3):
        flux, diss = FLUX_SITES[d]
        with ma.flop(flux, "95*isize^3"):
            fluxes(st, cd, d, r)
        with ma.flop(diss, "5*isize^2*(9*isize - 8/ncells)"):
            dissipation(cd.u, cd, d, U_GHOST, st.k.dssp, r)
    with ma.flop("rhs_dt", "5*isize^3"):
        r *= st.k.dt


@ma.subroutine("compute_rhs")
def compute_rhs(st: SPState) -> None:
    with ma.loop("rhs_cells", "ncells") as lp:
        for c in lp.range(st.ncells):
            compute_rhs_cell(st, st.cells[c])


def interior(cd: CellData) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The cell's interior rhs and point-wise quantities (views)."""
    sl = box(cd.cell, AUX_GHOST)
    return cd.rhs[(ALL, *box(cd.cell, 0))], {name: arr[sl] for name, arr in cd.aux.items()}


@ma.subroutine("txinvr")
def txinvr(st: SPState) -> None:
    with ma.loop("txinvr_cells", "ncells") as lp:
        for c in lp.range(st.ncells):
            with ma.flop("txinvr_flops", "27*isize^3"):
                txinvr_cell(st.cells[c])


def txinvr_cell(cd: CellData) -> None:
    """rhs := T_x^-1 rhs, the block-diagonal change to the x-characteristic variables."""
    r, a = interior(cd)
    r1, r2, r3, r4, r5 = (x.copy() for x in r)
    ru1, uu, vv, ww = a["rho_i"], a["us"], a["vs"], a["ws"]
    t1 = C2 * (a["ainv"] * a["ainv"]) * (a["qs"] * r1 - uu * r2 - vv * r3 - ww * r4 + r5)
    t2 = BT * ru1 * (uu * r1 - r2)
    t3 = (BT * ru1 * a["speed"]) * t1
    r[0] = r1 - t1
    r[1] = -ru1 * (ww * r1 - r4)
    r[2] = ru1 * (vv * r1 - r3)
    r[3] = -t2 + t3
    r[4] = t2 + t3


@ma.subroutine("ninvr")
def ninvr(cd: CellData) -> None:
    """rhs := N^-1 rhs, from the x- to the y-characteristic variables."""
    with ma.flop("ninvr_flops", "7*isize^3"):
        ninvr_cell(cd)


def ninvr_cell(cd: CellData) -> None:
    r, _ = interior(cd)
    r1, r2, r3, r4, r5 = (x.copy() for x in r)
    _rotate(r, (-r2, r1, BT * (r4 - r5)), BT * r3, r4, r5)


def _rotate(r: np.ndarray, first: tuple[np.ndarray, np.ndarray, np.ndarray], t1: np.ndarray, r4: np.ndarray,
            r5: np.ndarray) -> None:
    """The common end of ninvr and pinvr: rhs 1-3 as given, rhs 4 and 5 the pair t1 -/+ the mean of r4, r5."""
    t2 = 0.5 * (r4 + r5)
    r[0], r[1], r[2] = first
    r[3] = -t1 + t2
    r[4] = t1 + t2


@ma.subroutine("pinvr")
def pinvr(cd: CellData) -> None:
    """rhs := P^-1 rhs, from the y- to the z-characteristic variables."""
    with ma.flop("pinvr_flops", "7*isize^3"):
        pinvr_cell(cd)


def pinvr_cell(cd: CellData) -> None:
    r, _ = interior(cd)
    r1, r2, r3, r4, r5 = (x.copy() for x in r)
    _rotate(r, (BT * (r4 - r5), -r3, r2), BT * r1, r4, r5)


@ma.subroutine("tzetar")
def tzetar(cd: CellData) -> None:
    """rhs := T_z rhs, back from the z-characteristic to the conserved variables.

    The vector paper's assertion (Alam & Vetter, Cray X1E, section 5.1) is the ``vec_loop``: 26
    load/stores and 16 flops at each of size^2*(size-1) points of a cell, size = floor(problem_size/ncells),
    AVL with the paper's integer division. The ``flop`` assertion is what the loop really does: 27 flops at
    each interior point (NPB 3.4's Fortran and the NumPy code alike; the paper's figure is 6 % under that
    for class S on one process, 32 % under for class W).
    """
    with ma.vec_loop("tzetar", "(size^2)*(size-1)*26", "(size^2)*(size-1)*16", "(size-1)/(floor(size/64)+1)", 3), \
            ma.loadstore("tzetar_ldst", "size^2*(size-1)*26"), ma.flop("tzetar_flops", "27*isize^3"):
        tzetar_cell(cd)


def tzetar_cell(cd: CellData) -> None:
    r, a = interior(cd)
    r1, r2, r3, r4, r5 = (x.copy() for x in r)
    u1 = cd.u[(0, *box(cd.cell, U_GHOST))]
    xvel, yvel, zvel, ac = a["us"], a["vs"], a["ws"], a["speed"]
    btuz = BT * u1
    t1 = btuz * a["ainv"] * (r4 + r5)
    t2 = r3 + t1
    t3 = btuz * (r4 - r5)
    r[0] = t2
    r[1] = -u1 * r2 + xvel * t2
    r[2] = u1 * r1 + yvel * t2
    r[3] = zvel * t2 + t3
    r[4] = u1 * (-xvel * r2 + yvel * r1) + a["qs"] * t2 + C2IV * (ac * ac) * t1 + zvel * t3


@ma.subroutine("add")
def add(st: SPState) -> None:
    """u += rhs at the interior points of every cell."""
    with ma.loop("add_cells", "ncells") as lp:
        for c in lp.range(st.ncells):
            cd = st.cells[c]
            with ma.flop("add_flops", "5*isize^3"):
                cd.u[(ALL, *box(cd.cell, U_GHOST))] += cd.rhs[(ALL, *box(cd.cell, 0))]
