"""Scaling studies (MA paper section 4.1): quantities per rank and over all ranks against the process count.

*Strong* scaling keeps the problem fixed; *weak* scaling grows it with the process count by named rules
such as ``na=na0*nprocs``: the right-hand side is an expression of the annotation language in the process
count and in ``<input>0``, an input's base value (given, or traced). Rules are evaluated by ``ma_core.expr``
(never ``eval``).

For every quantity: the per-rank value, the aggregate (per rank x process count), the efficiency
relative to the first process count -- strong: x(p0)*p0 / (x(p)*p), weak: x(p0) / x(p), 1 when the work
divides perfectly -- and the share of each subroutine (innermost enclosing, merged by name as the MA
paper's Figure 17) in the per-rank value. A backend's predicted time, where one is given as a function of
the parameters, gets the same columns: that efficiency is the parallel efficiency.

Inputs the rules do not set keep their values, and what that means depends on the input: a *global* one (the
work in it divides among the processes: ``na`` in ``na/nprocs``) gives strong scaling in it, a *per rank* one
(each process's own amount: a local grid size ``nx``) makes the job's problem grow with the process count, weak
scaling in it. ``ScalingResult.input_roles`` says which is which, from the models: an input is global when the
change it makes to the per-rank value shrinks as the process count grows. A model in ``rank`` is evaluated on every
rank of each process count (ma_post.evaluation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ma_core.errors import MAError

from ..evaluation import RANK, RankChoice, evaluate
from ..models import Model

TimeFunction = Callable[[Mapping[str, np.ndarray]], Any]  # parameters -> predicted seconds


@dataclass
class ScalingResult:
    mode: str  # "strong" or "weak"
    procs_name: str
    nprocs: np.ndarray
    rules: dict[str, str]  # weak scaling: input -> rule text
    inputs: dict[str, np.ndarray]  # the inputs the rules set, at every process count
    per_rank: dict[str, np.ndarray] = field(default_factory=dict)
    aggregate: dict[str, np.ndarray] = field(default_factory=dict)
    efficiency: dict[str, np.ndarray] = field(default_factory=dict)
    shares: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # quantity -> subroutine -> share
    input_roles: dict[str, str] = field(default_factory=dict)  # input held fixed -> "global" or "per rank"

    def inputs_with_role(self, role: str) -> list[str]:
        return sorted(name for name, r in self.input_roles.items() if r == role)

    def columns(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {self.procs_name: self.nprocs, **self.inputs}
        for q in self.per_rank:
            out[f"{q}/rank"] = self.per_rank[q]
            out[f"{q}:all"] = self.aggregate[q]
            out[f"{q}:eff"] = self.efficiency[q]
        for q, shares in self.shares.items():
            for name, share in shares.items():
                out[f"{q}:share:{name or '(main)'}"] = share
        return out


def parse_rule(text: str) -> tuple[str, str]:
    """``"na=na0*nprocs"`` -> ``("na", "na0*nprocs")``, the right-hand side checked by the expression grammar."""
    from ma_core.expr import parse_expression

    name, sep, rhs = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier() or not rhs.strip():
        raise MAError(f"--weak {text!r}: expected NAME=EXPRESSION, e.g. na=na0*nprocs")
    try:
        parse_expression(rhs.strip())
    except MAError as exc:
        raise MAError(f"--weak {text!r}: {exc}") from None
    return name, rhs.strip()


def base_values(models: Sequence[Model], given: Mapping[str, float]) -> dict[str, float]:
    """Every input's base value: given, else traced (the same on every rank, or the mean over ranks)."""
    out = dict(given)
    for model in models:
        for name in model.inputs:
            traced = model.trace_values.get(name)
            if name not in out and traced is not None and np.isfinite(traced).any():
                out[name] = float(np.nanmean(traced))
    return out


def scaling(models: Sequence[Model], nprocs: Sequence[float] | np.ndarray, *, given: Mapping[str, float] | None = None,
            procs_name: str = "nprocs", rules: Mapping[str, str] | None = None, rank: RankChoice = None,
            time: TimeFunction | None = None, shares: bool = True) -> ScalingResult:
    """Evaluate ``models`` at every process count; ``rules`` (input -> expression) make it weak scaling."""
    from ma_core.expr import parse_expression

    p = np.asarray(nprocs, dtype=float).reshape(-1)
    if p.size == 0 or np.any(p <= 0):
        raise MAError("process counts must be positive")
    if not any(procs_name in m.inputs or RANK in m.inputs for m in models):
        raise MAError(f"no model depends on {procs_name!r} (inputs: "
                      f"{', '.join(sorted({n for m in models for n in m.inputs})) or 'none'}); "
                      "name the process-count parameter with --procs-name")
    given = dict(given or {})
    base = base_values(models, given)
    env = {**base, **{f"{k}0": v for k, v in base.items()}}
    inputs: dict[str, np.ndarray] = {}
    for name, rhs in (rules or {}).items():
        expression = parse_expression(rhs)
        missing = sorted(expression.symbols - set(env) - {procs_name})
        if missing:
            raise MAError(f"--weak {name}={rhs}: no value for {', '.join(missing)} (a name0 is the base value of "
                          "an input; set it with --set)")
        inputs[name] = np.array([float(expression.evaluate({**env, procs_name: float(v)})) for v in p])
    values: dict[str, Any] = {**given, **inputs, procs_name: p}
    result = ScalingResult("weak" if rules else "strong", procs_name, p, dict(rules or {}), inputs)
    result.input_roles = input_roles(models, procs_name, p, {**given, **{k: v[0] for k, v in inputs.items()}},
                                     set(inputs))
    for model in models:
        per_rank = _at(model, model.expr, values, rank, p.size, procs_name)
        _add(result, model.quantity, per_rank)
        if shares and model.terms:
            parts = model.by_subroutine(by="name")
            with np.errstate(invalid="ignore", divide="ignore"):
                result.shares[model.quantity] = {name: _at(model, expr, values, rank, p.size, procs_name) / per_rank
                                                 for name, expr in parts.items()}
    if time is not None:
        _add(result, "time", np.broadcast_to(np.asarray(time(values), dtype=float), p.shape).copy())
    return result


def input_roles(models: Sequence[Model], procs_name: str, nprocs: np.ndarray, given: Mapping[str, float],
                skip: set[str]) -> dict[str, str]:
    """Each input held fixed (not ``procs_name``, ``rank`` or ``skip``): "global" when doubling it changes some
    model's per-rank value by less at the largest process count than at the smallest (its work divides among the
    ranks), else "per rank" (each process's own amount; a boundary effect such as the neighbours of the edge
    ranks may still make its change grow). Inputs a model cannot be evaluated for are left out."""
    low = float(nprocs[0])
    high = float(nprocs[-1]) if nprocs[-1] != nprocs[0] else 2 * low
    base = base_values(models, given)
    roles: dict[str, str] = {}
    for model in models:
        for name in model.inputs:
            if name in (procs_name, RANK) or name in skip or roles.get(name) == "global":
                continue
            x0 = base.get(name) or 1.0
            values = {**{k: v for k, v in given.items() if k in model.inputs}, name: np.array([x0, 2 * x0, x0, 2 * x0]),
                      procs_name: np.array([low, low, high, high])}
            try:
                q = np.asarray(evaluate(model, values, procs_name=procs_name).value, dtype=float).reshape(-1)
            except MAError:
                continue
            change_low, change_high = abs(q[1] - q[0]), abs(q[3] - q[2])
            divided = bool(np.isfinite(q).all() and change_high < change_low
                           and not np.isclose(change_low, change_high, rtol=1e-9, atol=0.0))
            roles[name] = "global" if divided else "per rank"
    return roles


def _add(result: ScalingResult, name: str, per_rank: np.ndarray) -> None:
    p = result.nprocs
    result.per_rank[name] = per_rank
    result.aggregate[name] = per_rank * p
    with np.errstate(invalid="ignore", divide="ignore"):
        if per_rank[0] == 0:  # nothing at the first count (messages on one process): no reference
            result.efficiency[name] = np.full(p.shape, np.nan)
        elif result.mode == "strong":
            result.efficiency[name] = per_rank[0] * p[0] / (per_rank * p)
        else:
            result.efficiency[name] = per_rank[0] / per_rank


def _at(model: Model, expr: Any, values: Mapping[str, Any], rank: RankChoice, n: int, procs_name: str) -> np.ndarray:
    """``expr`` (in the model's symbols) at every process count, inputs not given taken from the trace; a model in
    ``rank`` over every rank of the job of each count."""
    part = model if expr is model.expr else dataclasses.replace(model, expr=expr, terms=[], parts=None, cache={})
    value = evaluate(part, {k: v for k, v in values.items() if k in model.inputs or k == procs_name}, rank=rank,
                     procs_name=procs_name).value
    return np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
