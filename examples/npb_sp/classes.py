"""NPB 3.4 SP problem classes, verification values and the official operation count."""

from __future__ import annotations

from dataclasses import dataclass

VERIFY_EPSILON = 1.0e-8


@dataclass(frozen=True)
class ProblemClass:
    """One NPB SP class: an N x N x N grid, ``niter`` time steps of ``dt``, and NPB's reference norms.

    ``xcr`` are the RMS norms of the residual (divided by dt), ``xce`` of the error against the exact
    solution, for the five conserved variables.
    """

    name: str
    problem_size: int
    niter: int
    dt: float
    xcr: tuple[float, float, float, float, float]
    xce: tuple[float, float, float, float, float]


CLASSES: dict[str, ProblemClass] = {
    c.name: c
    for c in (
        ProblemClass("S", 12, 100, 0.015,
                     (2.7470315451339479e-02, 1.0360746705285417e-02, 1.6235745065095532e-02,
                      1.5840557224455615e-02, 3.4849040609362460e-02),
                     (2.7289258557377227e-05, 1.0364446640837285e-05, 1.6154798287166471e-05,
                      1.5750704994480102e-05, 3.4177666183390531e-05)),
        ProblemClass("W", 36, 400, 0.0015,
                     (0.1893253733584e-02, 0.1717075447775e-03, 0.2778153350936e-03,
                      0.2887475409984e-03, 0.3143611161242e-02),
                     (0.7542088599534e-04, 0.6512852253086e-05, 0.1049092285688e-04,
                      0.1128838671535e-04, 0.1212845639773e-03)),
        ProblemClass("A", 64, 400, 0.0015,
                     (2.4799822399300195e0, 1.1276337964368832e0, 1.5028977888770491e0,
                      1.4217816211695179e0, 2.1292113035138280e0),
                     (1.0900140297820550e-04, 3.7343951769282091e-05, 5.0092785406541633e-05,
                      4.7671093939528255e-05, 1.3621613399213001e-04)),
        ProblemClass("B", 102, 400, 0.001,
                     (0.6903293579998e+02, 0.3095134488084e+02, 0.4103336647017e+02,
                      0.3864769009604e+02, 0.5643482272596e+02),
                     (0.9810006190188e-02, 0.1022827905670e-02, 0.1720597911692e-02,
                      0.1694479428231e-02, 0.1847456263981e-01)),
        ProblemClass("C", 162, 400, 0.00067,
                     (0.5881691581829e+03, 0.2454417603569e+03, 0.3293829191851e+03,
                      0.3081924971891e+03, 0.4597223799176e+03),
                     (0.2598120500183e+00, 0.2590888922315e-01, 0.5132886416320e-01,
                      0.4806073419454e-01, 0.5483377491301e+00)),
    )
}


def official_op_count(problem_size: int, niter: int) -> float:
    """Operations NPB credits to the ``niter`` timed steps (numerator of the Mop/s rate): a fitted polynomial."""
    n = float(problem_size)
    return niter * (881.174 * n ** 3 - 4683.91 * n ** 2 + 11484.5 * n - 19272.4)
