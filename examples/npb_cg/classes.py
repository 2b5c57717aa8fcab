"""NPB 3.4 CG problem classes, verification values and the official operation count."""

from __future__ import annotations

from dataclasses import dataclass

RCOND = 0.1          # lower bound on the smallest eigenvalue added to the diagonal (every class)
CGITMAX = 25         # CG steps per outer (inverse power) iteration
VERIFY_EPSILON = 1.0e-10


@dataclass(frozen=True)
class ProblemClass:
    """One NPB CG class: matrix order ``na``, ``nonzer`` per generated vector, ``niter``, ``shift``."""

    name: str
    na: int
    nonzer: int
    niter: int
    shift: float
    zeta_verify: float


CLASSES: dict[str, ProblemClass] = {
    c.name: c
    for c in (
        ProblemClass("S", 1400, 7, 15, 10.0, 8.5971775078648),
        ProblemClass("W", 7000, 8, 15, 12.0, 10.362595087124),
        ProblemClass("A", 14000, 11, 15, 20.0, 17.130235054029),
        ProblemClass("B", 75000, 13, 75, 60.0, 22.712745482631),
        ProblemClass("C", 150000, 15, 75, 110.0, 28.973605592845),
        ProblemClass("D", 1500000, 21, 100, 500.0, 52.514532105794),
    )
}


def official_op_count(na: int, nonzer: int, niter: int) -> float:
    """Operations NPB credits to the ``niter`` timed iterations (numerator of the Mop/s rate)."""
    per_row = 3 + nonzer * (nonzer + 1) + 25 * (5 + nonzer * (nonzer + 1)) + 3
    return 2.0 * niter * na * per_row


def relative_error(zeta: float, reference: float) -> float:
    return abs(zeta - reference) / reference
