"""Numeric evaluation of models at any parameters, vectorised over grids and ranks.

Numbers are float64 with the semantics of the exported code (the same NumPy printer), so ``ma eval``
agrees with the exported Python, C and Octave functions. Inputs not given are taken from the trace:
an input with the same value on every rank is a scalar; a rank-dependent one (e.g. a local size) gives a
result per traced rank, reduced to the mean, min or max over ranks, or taken at one rank.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import sympy

from ma_core.errors import ModelError

from .printers import NUMPY_MOD_HELPER, NumpyPrinter, numpy_mod
from .sympy_expr import symbol


class NumericModel(Protocol):
    """What evaluation reads of a model (models.Model): evaluation sits below the models that use it."""

    @property
    def quantity(self) -> str: ...

    @property
    def inputs(self) -> list[str]: ...

    @property
    def trace_values(self) -> dict[str, np.ndarray]: ...

    @property
    def ranks(self) -> np.ndarray: ...

    @property
    def cache(self) -> dict[str, Any]: ...

    def inlined(self) -> sympy.Expr: ...

RankChoice = int | str | None  # None: per rank + mean; "mean" | "min" | "max"; or a rank number


@dataclass
class Evaluation:
    """Result of evaluating a model. ``value`` is reduced over ranks; ``per_rank`` keeps the rank axis first."""

    value: Any
    per_rank: np.ndarray | None = None
    ranks: np.ndarray | None = None
    from_trace: dict[str, str] = field(default_factory=dict)  # input -> how its value was taken from the trace
    unused: list[str] = field(default_factory=list)  # given values the model does not depend on

    def worst_rank(self) -> tuple[int, Any] | None:
        """(rank, value) of the rank with the largest value, when the result depends on the rank."""
        if self.per_rank is None or self.ranks is None:
            return None
        flat = self.per_rank.reshape(len(self.ranks), -1)
        score = np.nanmax(flat, axis=1)
        idx = int(np.nanargmax(score))
        return int(self.ranks[idx]), self.per_rank[idx]


def numeric_function(model: NumericModel) -> Callable[..., Any]:
    """NumPy function of the model's inputs (in ``model.inputs`` order), compiled once per model."""
    fn = model.cache.get("numpy")
    if fn is None:
        args = [symbol(name) for name in model.inputs]
        expr = model.inlined()
        # An input named like a global of the printed code would shadow it: such inputs (rare) become dummies.
        # Every input is not dummified: that rebuilds the whole tree, which takes minutes for thousands of sites.
        clashing = {arg: sympy.Dummy(arg.name) for arg in args if arg.name in _PRINTED_GLOBALS}
        if clashing:
            args = [clashing.get(arg, arg) for arg in args]
            expr = expr.xreplace(clashing)
        # lambdify prints the SymPy tree (built from the lark parse, never from text) with our printer.
        try:
            fn = sympy.lambdify(args, expr, modules=[{NUMPY_MOD_HELPER: numpy_mod}, "numpy"],
                                printer=NumpyPrinter, cse=True, dummify=False)
        except (RecursionError, SyntaxError, MemoryError) as exc:  # Python's own limits on the code's nesting
            raise ModelError(f"{model.quantity}: the model is too deeply nested to compile for evaluation "
                             f"({type(exc).__name__}: {exc})") from None
        model.cache["numpy"] = fn
    return fn


# The names the code printed by NumpyPrinter and lambdify uses besides the model's inputs.
_PRINTED_GLOBALS = frozenset({"numpy", NUMPY_MOD_HELPER, "_lambdifygenerated", "builtins", "range"})


def _call(model: NumericModel, arrays: list[Any]) -> Any:
    fn = numeric_function(model)
    with np.errstate(all="ignore"):
        result = fn(*arrays)
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays)) if arrays else ()
    return np.broadcast_to(np.asarray(result, dtype=float), shape).copy() if shape else float(result)


def evaluate(model: NumericModel, values: Mapping[str, Any], *, rank: RankChoice = None) -> Evaluation:
    """Evaluate ``model`` with ``values`` (scalars or broadcastable arrays); missing inputs from the trace."""
    given = {name: np.asarray(value, dtype=float) for name, value in values.items()}
    unused = sorted(set(given) - set(model.inputs))
    grid_shape = np.broadcast_shapes(*(v.shape for v in given.values())) if given else ()
    arrays: list[Any] = []
    from_trace: dict[str, str] = {}
    per_rank_inputs: list[int] = []
    for name in model.inputs:
        if name in given:
            arrays.append(given[name])
            continue
        traced = model.trace_values.get(name)
        if traced is None or not np.isfinite(traced).any():
            raise ModelError(f"{model.quantity}: input {name!r} has no value in the trace; give it "
                             f"(--set {name}=...)")
        present = traced[np.isfinite(traced)]
        if np.all(present == present[0]):
            arrays.append(np.asarray(float(present[0])))
            from_trace[name] = f"{_fmt(present[0])} (traced)"
        elif isinstance(rank, int) and not isinstance(rank, bool):
            idx = np.flatnonzero(model.ranks == rank)
            if not idx.size:
                raise ModelError(f"rank {rank} is not in the trace")
            arrays.append(np.asarray(float(traced[idx[0]])))
            from_trace[name] = f"{_fmt(traced[idx[0]])} (traced on rank {rank})"
        else:
            per_rank_inputs.append(len(arrays))
            arrays.append(traced)
            from_trace[name] = f"{_fmt(present.min())}..{_fmt(present.max())} (per traced rank)"
    if not per_rank_inputs:
        return Evaluation(_call(model, arrays), from_trace=from_trace, unused=unused)
    # Rank axis first, in front of the grid's axes.
    expand = (slice(None),) + (None,) * len(grid_shape)
    arrays = [a[expand] if i in per_rank_inputs else a for i, a in enumerate(arrays)]
    per_rank = np.asarray(_call(model, arrays), dtype=float)
    per_rank = np.broadcast_to(per_rank, (len(model.ranks), *tuple(grid_shape))).copy()
    reducer = {"min": np.nanmin, "max": np.nanmax}.get(rank if isinstance(rank, str) else "", np.nanmean)
    if isinstance(rank, str) and rank not in ("mean", "min", "max"):
        raise ModelError(f"rank must be a rank number, 'mean', 'min' or 'max', not {rank!r}")
    value = reducer(per_rank, axis=0)
    return Evaluation(value if np.ndim(value) else float(value), per_rank, model.ranks, from_trace, unused)


def evaluate_at_trace(model: NumericModel) -> np.ndarray:
    """The model at every traced rank's own inputs (NaN where an input was not traced on that rank)."""
    n = len(model.ranks)
    arrays = []
    for name in model.inputs:
        traced = model.trace_values.get(name)
        arrays.append(np.full(n, np.nan) if traced is None else traced)
    result = _call(model, arrays) if arrays else float(_call(model, []))
    return np.broadcast_to(np.asarray(result, dtype=float), (n,)).copy()


def exact_value(model: NumericModel, values: Mapping[str, Any]) -> sympy.Expr:
    """Exact SymPy value at a point (rational arithmetic; floor/ceil of exact values)."""
    subs = {symbol(name): sympy.nsimplify(value, rational=True) if isinstance(value, float) else sympy.Integer(value)
            for name, value in values.items()}
    return model.inlined().xreplace(subs)


def _fmt(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:.6g}"
