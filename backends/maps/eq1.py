"""Equation 1 of Tikir et al. (ga_bandwidth.txt, Section 3) as a SymPy expression of the hit rates.

The numeric twin is :func:`backends.machine.gafit.eq1`; this one keeps the cumulative hit rates h_1..h_n as
expressions, so a prediction can stay symbolic in a site's hit rates (a what-if on the application signature)
or take numbers where the signature has them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import sympy

from backends.machine.gafit import Eq1Params
from ma_post.sympy_expr import as_expr


def bandwidth_expr(params: Eq1Params, hit_rates: Sequence[sympy.Expr | float]) -> sympy.Expr:
    """F(h) in the unit of ``params.b`` (GB/s in a profile): Equations 1 and 3-6, term by term like ``eq1``."""
    n, k = params.levels, len(params.f)
    if len(hit_rates) != n:
        raise ValueError(f"Equation 1 of this profile has {n} levels, got {len(hit_rates)} hit rates")
    h = [as_expr(v) for v in hit_rates]
    previous = [sympy.Integer(0), *h[:-1]]
    t = [(h[i] - previous[i]) * sympy.Float(params.c[i]) for i in range(n)]
    total = sympy.Add(*t)
    share = [ti / total for ti in t]
    penalty = []
    for i in range(k):
        miss = 1 - h[i]
        damping = 1 - sympy.exp(-miss / (miss + sympy.Float(params.x[i])))
        penalty.append(damping * share[i] * sympy.Float(params.f[i] / (1.0 - math.e)))
    first = 1 - sympy.Add(*penalty)
    bandwidth = share[0] * sympy.Float(params.b[0]) * first
    for i in range(1, n):
        factor = 1 + penalty[i - 1] if i - 1 < k else sympy.Integer(1)
        bandwidth += share[i] * sympy.Float(params.b[i]) * factor
    return bandwidth
