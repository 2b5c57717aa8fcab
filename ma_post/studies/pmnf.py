"""Fitting measured values with the performance-model normal form (PMNF, as Extra-P uses it).

A hypothesis is a sum of a constant and terms c * prod_p p^i * log2(p)^j over the parameters that vary
between the data points, with i from ``EXPONENTS`` and j from ``LOG_EXPONENTS``. Searched: one term in one
parameter; for every pair of parameters, one product term and the sum of one term in each; each with and
without a constant. Coefficients are least-squares fits of the *relative* error (a point at 10^9 counts as
much as one at 10^3). The choice is by leave-one-out cross-validation: every hypothesis is fitted without
one point and predicts it; the smallest mean relative error of those predictions wins, and among equal ones
(exact data) the hypothesis with fewer coefficients and smaller exponents. Coefficients close to a simple
fraction become that fraction when the fit stays as good. All hypotheses of one shape are fitted at once
(batched pseudo-inverses), so the search costs milliseconds.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy
from sympy.codegen.cfunctions import log2

from ma_core.errors import MAError

from ..sympy_expr import symbol

EXPONENTS = tuple(Fraction(x) for x in ("-1", "-1/2", "0", "1/4", "1/3", "1/2", "2/3", "3/4", "1", "5/4", "4/3",
                                        "3/2", "5/3", "7/4", "2", "9/4", "7/3", "5/2", "8/3", "11/4", "3"))
LOG_EXPONENTS = (0, 1, 2)
TIE = 1e-9  # cross-validation errors this close are equal (exact data)


@dataclass(frozen=True)
class Factor:
    """p^i * log2(p)^j of one parameter."""

    param: str
    i: Fraction
    j: int

    def column(self, values: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.power(values, float(self.i)) * np.log2(values) ** self.j

    def expr(self) -> sympy.Expr:
        p = symbol(self.param)
        return p ** sympy.Rational(self.i.numerator, self.i.denominator) * log2(p) ** self.j

    @property
    def complexity(self) -> float:
        return abs(float(self.i)) + self.j


Term = tuple[Factor, ...]  # a product of factors of different parameters


@dataclass
class Fit:
    expr: sympy.Expr
    terms: list[Term]
    constant: bool
    coefficients: list[float]  # the constant first, when there is one
    cv_error: float  # mean relative error of the leave-one-out predictions
    predictions: np.ndarray  # at the data points
    errors: np.ndarray  # relative error at the data points
    hypotheses: int  # how many were compared

    @property
    def max_error(self) -> float:
        return float(np.max(np.abs(self.errors))) if self.errors.size else 0.0


def factors(param: str, values: np.ndarray) -> list[Factor]:
    """Every p^i log2(p)^j (not the constant) that is finite at ``values``."""
    positive = bool(np.all(values > 0))
    out = []
    for i, j in itertools.product(EXPONENTS, LOG_EXPONENTS):
        if i == 0 and j == 0:
            continue
        if not positive and (j or i < 0 or i.denominator != 1):
            continue
        factor = Factor(param, i, j)
        column = factor.column(values)
        if np.all(np.isfinite(column)) and np.ptp(column) > 0:
            out.append(factor)
    return out


def hypotheses(params: Mapping[str, np.ndarray]) -> list[list[Term]]:
    """The term lists searched (without the constant, which every one is tried with and without)."""
    by_param = {name: factors(name, values) for name, values in params.items()}
    out: list[list[Term]] = [[]]
    for fs in by_param.values():
        out += [[(f,)] for f in fs]
    for a, b in itertools.combinations(by_param, 2):
        for fa, fb in itertools.product(by_param[a], by_param[b]):
            out.append([(fa, fb)])
            out.append([(fa,), (fb,)])
    return out


def fit(params: Mapping[str, Sequence[float] | np.ndarray], y: Sequence[float] | np.ndarray) -> Fit:
    """The best PMNF hypothesis for ``y`` at the points ``params`` (name -> value per point)."""
    y = np.asarray(y, dtype=float)
    n = y.size
    columns = {name: np.asarray(v, dtype=float) for name, v in params.items()}
    if n < 2 or any(v.shape != y.shape for v in columns.values()):
        raise MAError(f"a fit needs at least two points with a value of every parameter (have {n})")
    varying = {name: v for name, v in columns.items() if np.ptp(v) > 0}
    scale = np.where(y != 0, np.abs(y), max(float(np.max(np.abs(y))), 1e-300))
    candidates: list[tuple[float, int, float, list[Term], bool]] = []
    total = 0
    for constant in (False, True):
        shaped: dict[int, list[list[Term]]] = {}
        for terms in hypotheses(varying):
            k = len(terms) + constant
            if 0 < k < n:  # leave-one-out needs a point more than coefficients
                shaped.setdefault(k, []).append(terms)
        for k, group in shaped.items():
            x = np.stack([_design(terms, constant, varying, n) for terms in group])  # (H, n, k)
            errors = _loo_errors(x, y, scale)
            total += len(group)
            for terms, error in zip(group, errors, strict=True):
                if np.isfinite(error):
                    complexity = sum(f.complexity for term in terms for f in term)
                    candidates.append((float(error), k, complexity, terms, constant))
    if not candidates:
        raise MAError(f"no hypothesis can be cross-validated with {n} points")
    best_error = min(c[0] for c in candidates)
    error, _, _, terms, constant = min((c for c in candidates if c[0] <= best_error + TIE),
                                       key=lambda c: (c[1], c[2], c[0]))
    return _final(terms, constant, varying, y, scale, error, total)


def _design(terms: list[Term], constant: bool, params: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    cols = [np.ones(n)] if constant else []
    for term in terms:
        col = np.ones(n)
        for f in term:
            col = col * f.column(params[f.param])
        cols.append(col)
    return np.stack(cols, axis=1)


def _solve(x: np.ndarray, y: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Coefficients minimising the relative residuals, batched over the leading axis; columns normalised."""
    norm = np.max(np.abs(x), axis=-2, keepdims=True)
    norm = np.where(norm > 0, norm, 1.0)
    a = x / norm / scale[..., :, None]
    b = y / scale
    with np.errstate(all="ignore"):
        coef = np.einsum("...kn,...n->...k", np.linalg.pinv(a), b)
    return coef / norm[..., 0, :]


def _loo_errors(x: np.ndarray, y: np.ndarray, scale: np.ndarray) -> np.ndarray:
    n = y.size
    errors = np.zeros(x.shape[0])
    for left in range(n):
        keep = np.arange(n) != left
        coef = _solve(x[:, keep, :], y[keep], scale[keep])
        with np.errstate(all="ignore"):
            predicted = np.einsum("hk,hk->h", x[:, left, :], coef)
        errors += np.abs(predicted - y[left]) / scale[left]
    errors /= n
    return np.where(np.isfinite(errors), errors, np.inf)


def _final(terms: list[Term], constant: bool, params: Mapping[str, np.ndarray], y: np.ndarray, scale: np.ndarray,
           cv_error: float, total: int) -> Fit:
    x = _design(terms, constant, params, y.size)
    coef = _solve(x, y, scale)
    exact_error = float(np.max(np.abs(x @ coef - y) / scale))
    snapped = [_simple(c, abs_floor=1e-9 * float(np.max(np.abs(y)))) for c in coef]
    snapped_values = np.array([float(c) for c in snapped])
    if float(np.max(np.abs(x @ snapped_values - y) / scale)) <= exact_error + 1e-9:
        coefficients: list[sympy.Expr] = snapped
        used = snapped_values
    else:
        coefficients = [sympy.Float(c, 6) for c in coef]
        used = coef
    exprs = ([sympy.Integer(1)] if constant else []) + [sympy.Mul(*(f.expr() for f in term)) for term in terms]
    expr = sympy.Add(*(c * e for c, e in zip(coefficients, exprs, strict=True)))
    predicted = x @ used
    return Fit(expr, terms, constant, [float(c) for c in used], cv_error, predicted, (predicted - y) / scale, total)


def _simple(c: float, *, abs_floor: float) -> sympy.Expr:
    """``c`` as a fraction of small denominator when it is one to 1e-6, 0 when negligible, else itself."""
    if abs(c) <= abs_floor:
        return sympy.Integer(0)
    frac = Fraction(c).limit_denominator(64)
    if abs(float(frac) - c) <= 1e-6 * abs(c):
        return sympy.Rational(frac.numerator, frac.denominator)
    return sympy.Float(c, 15)
