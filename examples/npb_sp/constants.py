"""NPB SP's ``set_constants``: the exact solution's coefficients and the scheme's constants."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# ce(m, 1..13): the exact solution's polynomial coefficients for the five variables (rows).
CE = np.array([
    [2.0, 0.0, 0.0, 4.0, 5.0, 3.0, 0.5, 0.02, 0.01, 0.03, 0.5, 0.4, 0.3],
    [1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.01, 0.03, 0.02, 0.4, 0.3, 0.5],
    [2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.04, 0.03, 0.05, 0.3, 0.5, 0.4],
    [2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.03, 0.05, 0.04, 0.2, 0.1, 0.3],
    [5.0, 4.0, 3.0, 2.0, 0.1, 0.4, 0.3, 0.05, 0.04, 0.03, 0.1, 0.3, 0.2],
])

C1, C2, C3, C4, C5 = 1.4, 0.4, 0.1, 1.0, 1.4
BT = math.sqrt(0.5)
C1C2 = C1 * C2
C1C5 = C1 * C5
C3C4 = C3 * C4
CON43 = 4.0 / 3.0
CON16 = 1.0 / 6.0
C2IV = 2.5


@dataclass(frozen=True)
class Direction:
    """The constants of one coordinate direction (x, y or z: NPB's tx*/dx*/xxcon*, ty*/..., tz*/...)."""

    dnm1: float      # grid spacing 1/(N-1)
    t2: float        # 1/(2 h): central first difference
    dd: float        # dx1..dx5 (equal): the second-difference coefficient, times t1
    con1: float
    con2: float
    con3: float
    con4: float
    con5: float
    dmax: float      # dxmax / dymax / dzmax
    d_coef: float    # dx1 (lhs: the fourth argument of dmax1)
    dtt1: float
    dtt2: float
    c2dtt1: float


@dataclass(frozen=True)
class Constants:
    """The constants of one run: ``n`` grid points per direction, time step ``dt``."""

    n: int
    dt: float
    dirs: tuple[Direction, Direction, Direction]
    dssp: float
    comz1: float
    comz4: float
    comz5: float
    comz6: float

    @classmethod
    def make(cls, n: int, dt: float) -> Constants:
        dnm1 = 1.0 / (n - 1)
        t1, t2, t3 = 1.0 / (dnm1 * dnm1), 1.0 / (2.0 * dnm1), 1.0 / dnm1
        c3c4t3 = C3C4 * t3
        conz1 = 1.0 - C1C5
        dirs = []
        for d in (0.75, 0.75, 1.0):          # dx*, dy*, dz*
            dirs.append(Direction(dnm1=dnm1, t2=t2, dd=d * t1, con1=c3c4t3 * CON43 * t3, con2=c3c4t3 * t3,
                                  con3=c3c4t3 * conz1 * t3, con4=c3c4t3 * CON16 * t3, con5=c3c4t3 * C1C5 * t3,
                                  dmax=d, d_coef=d, dtt1=dt * t1, dtt2=dt * t2, c2dtt1=2.0 * dt * t1))
        dssp = 0.25 * max(0.75, 0.75, 1.0)
        dtdssp = dt * dssp
        return cls(n=n, dt=dt, dirs=(dirs[0], dirs[1], dirs[2]), dssp=dssp, comz1=dtdssp, comz4=4.0 * dtdssp,
                   comz5=5.0 * dtdssp, comz6=6.0 * dtdssp)
