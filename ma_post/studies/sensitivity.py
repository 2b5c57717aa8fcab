"""Sensitivity of a model to its inputs (MA paper section 4.2).

The *elasticity* of a quantity Q to a parameter p is  E = d log Q / d log p = (p / Q) dQ/dp : the percentage
change of Q per percent of p. ``n*nonzer^2`` has elasticity 1 to n and 2 to nonzer at every point; a model
that is a sum of such terms has, at a point, the elasticities of its terms weighted by their shares.

The derivative is taken symbolically (SymPy) on the model with every input positive. ``floor`` and
``ceiling`` are replaced by their arguments first: their derivative is zero almost everywhere, which says
nothing about how the quantity grows, while their argument is the trend they round. Where a derivative
stays unevaluated (``mod``), the value is a central difference in log p instead and says so.

``scale_factors`` gives the paper's Figure 15 numbers: Q at x1, x2, x10 of one parameter, the others fixed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from ma_core.errors import MAError

from ..evaluation import RankChoice, evaluate
from ..models import Model
from ..sympy_expr import symbol

SCALES = (1.0, 2.0, 10.0)
_STEP = 1e-4  # relative step of the central difference in log p
_SIMPLIFY_OPS = 80


@dataclass
class Elasticity:
    parameter: str
    expr: sympy.Expr  # d log Q / d log p, in the model's inputs
    value: float  # at the point
    symbolic: bool  # False: the value is a central difference (the derivative has no closed form)


def smooth(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with floor(x) and ceiling(x) replaced by x (the trend they round)."""
    return expr.replace(lambda e: isinstance(e, (sympy.floor, sympy.ceiling)), lambda e: e.args[0])


def elasticity_expr(model: Model, parameter: str) -> tuple[sympy.Expr, bool]:
    """(d log Q / d log p, whether it is closed-form), simplified, in the model's input symbols."""
    expr = smooth(model.inlined())
    positive = {symbol(name): sympy.Symbol(name, positive=True) for name in model.inputs}
    back = {v: k for k, v in positive.items()}
    q = expr.xreplace(positive)
    p = positive.get(symbol(parameter))
    if p is None:
        return sympy.Integer(0), True
    derivative = sympy.diff(q, p)
    closed = not derivative.has(sympy.Derivative, sympy.Subs)
    if not closed:
        return sympy.nan, False
    result = p * derivative / q
    if sympy.count_ops(result) <= _SIMPLIFY_OPS:  # big models: simplify is slow and may build overflowing powers
        result = sympy.simplify(result)
    return result.xreplace(back), closed


def elasticities(model: Model, at: Mapping[str, float] | None = None, *, parameters: Sequence[str] | None = None,
                 rank: RankChoice = None) -> list[Elasticity]:
    """Elasticities of ``model`` to every input (or ``parameters``) at ``at`` (traced values for the rest),
    largest magnitude first."""
    at = dict(at or {})
    names = list(parameters) if parameters is not None else list(model.inputs)
    unknown = [n for n in names if n not in model.inputs]
    if unknown:
        raise MAError(f"{model.quantity} does not depend on {', '.join(unknown)} "
                      f"(its inputs: {', '.join(model.inputs) or 'none'})")
    out = []
    for name in names:
        expr, closed = elasticity_expr(model, name)
        value = _value_of(model, expr, at, rank) if closed else _log_difference(model, name, at, rank)
        out.append(Elasticity(name, expr, value, closed))
    return sorted(out, key=lambda e: -abs(e.value) if np.isfinite(e.value) else 0.0)


def _value_of(model: Model, expr: sympy.Expr, at: Mapping[str, float], rank: RankChoice) -> float:
    """``expr`` evaluated like the model: its inputs at ``at`` or, when not given, at their traced values."""
    twin = dataclasses.replace(model, quantity=f"elasticity of {model.quantity}", expr=expr, definitions={},
                               terms=[], parts=None, cache={})
    return float(np.asarray(evaluate(twin, {k: v for k, v in at.items() if k in model.inputs}, rank=rank).value))


def _log_difference(model: Model, name: str, at: Mapping[str, float], rank: RankChoice) -> float:
    smooth_model = dataclasses.replace(model, expr=smooth(model.inlined()), definitions={}, terms=[], parts=None,
                                       cache={})
    centre = point_value(smooth_model, name, at)
    up, down = (_value_of(smooth_model, smooth_model.expr, {**at, name: centre * f}, rank)
                for f in (1 + _STEP, 1 - _STEP))
    with np.errstate(invalid="ignore", divide="ignore"):
        return float((np.log(up) - np.log(down)) / (np.log1p(_STEP) - np.log1p(-_STEP)))


def point_value(model: Model, name: str, at: Mapping[str, float]) -> float:
    """The value of input ``name`` at the point: given in ``at``, else traced (mean over ranks)."""
    if name in at:
        return float(at[name])
    traced = model.trace_values.get(name)
    if traced is None or not np.isfinite(traced).any():
        raise MAError(f"{model.quantity}: input {name!r} has no value in the trace; give it (--at {name}=...)")
    return float(np.nanmean(traced))


def scale_factors(model: Model, at: Mapping[str, float] | None = None, *, parameters: Sequence[str] | None = None,
                  scales: Sequence[float] = SCALES, rank: RankChoice = None) -> dict[str, list[float]]:
    """parameter -> [Q(s*p) / Q(p) for s in scales], the other inputs at ``at`` (traced values otherwise)."""
    at = dict(at or {})
    names = list(parameters) if parameters is not None else list(model.inputs)
    base = _evaluate(model, at, rank)
    out: dict[str, list[float]] = {}
    for name in names:
        p = point_value(model, name, at)
        values = [_evaluate(model, {**at, name: p * s}, rank) for s in scales]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = [float(v / base) if base else float("nan") for v in values]
    return out


def _evaluate(model: Model, at: Mapping[str, Any], rank: RankChoice) -> float:
    return float(np.asarray(evaluate(model, {k: v for k, v in at.items() if k in model.inputs}, rank=rank).value))
