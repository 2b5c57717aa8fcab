"""Equation 1 of Tikir et al. (ga_bandwidth.txt, Section 3), with Equations 3-6: bandwidth as a function of the
cumulative cache hit rates, written once for every use.

For ``n`` levels (the caches, then main memory) and cumulative hit rates ``h_1 <= ... <= h_n = 1``
(``h_0 = 0``)::

    t_i = (h_i - h_{i-1}) c_i                      (3)      T = sum_i t_i                     (4)
    p_i = f_i (1 - exp(-(1-h_i)/(1-h_i+x_i))) / (1 - e) * t_i/T          for i <= k          (6)
    F(h) = sum_i t_i/T * b_i * (1 - (p_1 + ... + p_k))   if i = 1
                                (1 + p_{i-1})            otherwise (p_i = 0 for i > k)        (1)

:func:`equation1` computes it term by term on anything with arithmetic: NumPy arrays that broadcast (the GA's
population of parameters against many rows of hit rates, :mod:`.gafit`) or SymPy expressions (a prediction that
stays symbolic in a site's hit rates, the maps backend). :class:`Eq1Params` holds one machine's parameters; F is
in the unit of its plateaus ``b`` (bytes per second in a typed :class:`.profile.MachineProfile`, GB/s in the fit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import sympy

ONE_MINUS_E = 1.0 - math.e
T = TypeVar("T")


def equation1(h: Sequence[Any], c: Sequence[Any], b: Sequence[Any], f: Sequence[Any], x: Sequence[Any],
              damping: Callable[[Any], Any]) -> Any:
    """F(h) from the hit rates ``h`` and the parameters, one entry per level (``f``, ``x``: one per penalty).

    Each entry may be a number, an array (entries broadcast against each other) or an expression;
    ``damping(z)`` is ``1 - exp(-z)`` in the arithmetic of the entries (``-expm1(-z)`` for arrays, exact near 0)."""
    n, k = len(b), len(f)
    if len(h) != n:
        raise ValueError(f"Equation 1 of this profile has {n} levels, got {len(h)} hit rates")
    t = [(h[i] - (h[i - 1] if i else 0)) * c[i] for i in range(n)]
    inverse_total = 1 / sum(t[1:], t[0])
    share = [ti * inverse_total for ti in t]
    penalty = []
    for i in range(k):
        miss = 1 - h[i]
        penalty.append(damping(miss / (miss + x[i])) * share[i] * (f[i] / ONE_MINUS_E))
    first = 1 - sum(penalty[1:], penalty[0]) if penalty else 1
    bandwidth = share[0] * b[0] * first
    for i in range(1, n):
        factor = 1 + penalty[i - 1] if i - 1 < k else 1
        bandwidth = bandwidth + share[i] * b[i] * factor
    return bandwidth


def numeric_damping(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """1 - exp(-z) on arrays, exact for small z."""
    return np.asarray(-np.expm1(-z))


def symbolic_damping(z: sympy.Expr) -> sympy.Expr:
    import sympy

    return 1 - sympy.exp(-z)


@dataclass(frozen=True)
class Eq1Params:
    """The free parameters of Equation 1: latencies c (c[0] = 1), plateau bandwidths b, penalties f and x."""

    c: tuple[float, ...]
    b: tuple[float, ...]
    f: tuple[float, ...]
    x: tuple[float, ...]

    @property
    def levels(self) -> int:
        return len(self.b)

    def bandwidth(self, hit_rates: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """F(h) for rows of cumulative hit rates (shape (m, n) or (n,)); the unit is that of b."""
        h = np.atleast_2d(np.asarray(hit_rates, dtype=float))
        return np.asarray(equation1([h[:, i] for i in range(h.shape[1])], self.c, self.b, self.f, self.x,
                                    numeric_damping), dtype=float)

    def symbolic(self, hit_rates: Sequence[sympy.Expr | float]) -> sympy.Expr:
        """F(h) as a SymPy expression of the hit rates (numbers or symbols); the unit is that of b."""
        import sympy

        from ma_post.sympy_expr import as_expr

        c, b, f, x = ([sympy.Float(v) for v in values] for values in (self.c, self.b, self.f, self.x))
        return as_expr(equation1([as_expr(v) for v in hit_rates], c, b, f, x, symbolic_damping))

    def scaled(self, factor: float) -> Eq1Params:
        """The same function in another unit: every plateau times ``factor``."""
        return Eq1Params(self.c, tuple(v * factor for v in self.b), self.f, self.x)

    def text(self, unit: float = 1.0, name: str = "") -> str:
        """One line of the parameters, the plateaus over ``unit`` (named ``name``, e.g. 1e9 and "GB/s")."""
        def numbers(values: tuple[float, ...], scale: float = 1.0) -> str:
            return ", ".join(f"{v / scale:.3g}" for v in values)

        return (f"c = {numbers(self.c)}; b{f' ({name})' if name else ''} = {numbers(self.b, unit)}; "
                f"f = {numbers(self.f)}; x = {numbers(self.x)}")

    def as_dict(self) -> dict[str, list[float]]:
        return {"latencies": list(self.c), "plateaus": list(self.b), "penalty_f": list(self.f),
                "penalty_x": list(self.x)}
