"""Numeric evaluation of models at any parameters, vectorised over grids and ranks.

Numbers are float64 with the semantics of the exported code (the same NumPy printer), so ``ma eval``
agrees with the exported Python, C and Octave functions. Inputs not given are taken from the trace:
an input with the same value on every rank is a scalar; a rank-dependent one (e.g. a local size) gives a
result per traced rank, reduced to the mean, min or max over ranks, or taken at one rank.

A model in ``rank`` itself (a neighbour count ``min(rank, 1) + min(nprocs - 1 - rank, 1)``) is evaluated on
every rank of the *evaluated* job: ``nprocs`` given (``--set nprocs=1024``: ranks 0..1023), else the traced one,
and reduced over those ranks the same way. A rank outside the job (``rank >= nprocs``) is an error, and so is an
input that differs between the traced ranks without being an expression of ``rank`` when the job has another
size: its value on the new ranks is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import sympy

from ma_core.errors import ModelError
from ma_core.expr.limits import MAX_MAGNITUDE

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

    @property
    def size(self) -> int: ...

    def inlined(self) -> sympy.Expr: ...

RankChoice = int | str | None  # None: per rank + mean; "mean" | "min" | "max"; or a rank number
RANK = "rank"  # the variable of a process's rank (the name peer= expressions use)
PROCS = "nprocs"  # the variable of the job's process count
_RANK_CHUNK = 1 << 16  # ranks evaluated at once over a large job


@dataclass
class Evaluation:
    """Result of evaluating a model. ``value`` is reduced over ranks; ``per_rank`` keeps the rank axis first."""

    value: Any
    per_rank: np.ndarray | None = None
    ranks: np.ndarray | None = None
    from_trace: dict[str, str] = field(default_factory=dict)  # input -> how its value was taken from the trace
    unused: list[str] = field(default_factory=list)  # given values the model does not depend on
    # Over the ranks of an evaluated job of another size (a model in ``rank``): per grid point, the smallest and
    # largest value and the rank of the largest (``per_rank`` is None then: each point may have its own ranks).
    job_spread: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def worst_rank(self) -> tuple[int, Any] | None:
        """(rank, value) of the rank with the largest value, when the result depends on the rank."""
        if self.job_spread is not None:
            _, high, at = (np.asarray(a).reshape(-1) for a in self.job_spread)
            idx = int(np.nanargmax(high))
            return int(at[idx]), float(high[idx])
        if self.per_rank is None or self.ranks is None:
            return None
        flat = self.per_rank.reshape(len(self.ranks), -1)
        score = np.nanmax(flat, axis=1)
        idx = int(np.nanargmax(score))
        return int(self.ranks[idx]), self.per_rank[idx]

    def spread(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Per grid point (flattened): the smallest and the largest value over the ranks and the rank of the
        largest; None when the result does not depend on the rank."""
        if self.job_spread is not None:
            return tuple(np.asarray(a, dtype=float).reshape(-1) for a in self.job_spread)  # type: ignore[return-value]
        if self.per_rank is None or self.ranks is None:
            return None
        flat = np.asarray(self.per_rank).reshape(len(self.ranks), -1)
        at = self.ranks[np.nanargmax(np.where(np.isnan(flat), -np.inf, flat), axis=0)]
        return np.nanmin(flat, axis=0), np.nanmax(flat, axis=0), at.astype(float)


def components(model: NumericModel) -> tuple[int, ...]:
    """``(k,)`` for a model of ``k`` expressions at once (its expression a ``sympy.Tuple``: e.g. every part of
    every site of a prediction, compiled and evaluated in one pass), else ``()``. Their values get a last axis."""
    found = model.cache.get("components")
    if found is None:
        expr = model.inlined()
        found = model.cache["components"] = (len(expr.args),) if isinstance(expr, sympy.Tuple) else ()
    return found  # type: ignore[no-any-return]


def numeric_function(model: NumericModel) -> Callable[..., Any]:
    """NumPy function of the model's inputs (in ``model.inputs`` order), compiled once per model."""
    fn = model.cache.get("numpy")
    if fn is None:
        args = [symbol(name) for name in model.inputs]
        expr = model.inlined()
        if isinstance(expr, sympy.Tuple):  # several expressions: one function returning their list, with one cse
            expr = list(expr.args)
        # An input named like a global of the printed code would shadow it: such inputs (rare) become dummies.
        # Every input is not dummified: that rebuilds the whole tree, which takes minutes for thousands of sites.
        clashing = {arg: sympy.Dummy(arg.name) for arg in args if arg.name in _PRINTED_GLOBALS}
        if clashing:
            args = [clashing.get(arg, arg) for arg in args]
            expr = [e.xreplace(clashing) for e in expr] if isinstance(expr, list) else expr.xreplace(clashing)
        # lambdify prints the SymPy tree (built from the lark parse, never from text) with our printer. A model
        # holds no implemented_function: use_imps=False skips lambdify's walk of every node looking for one,
        # which was as long as the printing on a whole program's prediction.
        try:
            fn = sympy.lambdify(args, expr, modules=[{NUMPY_MOD_HELPER: numpy_mod}, "numpy"],
                                printer=NumpyPrinter, cse=True, dummify=False, use_imps=False)
        except (RecursionError, SyntaxError, MemoryError) as exc:  # Python's own limits on the code's nesting
            raise ModelError(f"{model.quantity}: the model is too deeply nested to compile for evaluation "
                             f"({type(exc).__name__}: {exc})") from None
        model.cache["numpy"] = fn
    return fn


# The names the code printed by NumpyPrinter and lambdify uses besides the model's inputs.
_PRINTED_GLOBALS = frozenset({"numpy", NUMPY_MOD_HELPER, "_lambdifygenerated", "builtins", "range"})


def _call(model: NumericModel, arrays: list[Any], *, strict: bool = True) -> Any:
    """The model's values at ``arrays`` (in ``model.inputs`` order). A value that is not a finite number within
    MAX_MAGNITUDE where every input is finite is past the runtime's bounds (ma_core/expr/limits.py), which refuse
    it: ``strict``, a ModelError naming the point; else NaN there (the model's check against its own trace,
    whose runtime reported it already)."""
    fn = numeric_function(model)
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays)) if arrays else ()
    parts = components(model)
    full = (*shape, *parts)
    try:
        with np.errstate(all="ignore"):
            raw = fn(*arrays)
            if parts:  # each expression's value over the inputs' shape, on a last axis
                result = np.stack([np.broadcast_to(np.asarray(r, dtype=float), shape) for r in raw], axis=-1)
            else:
                result = np.broadcast_to(np.asarray(raw, dtype=float), shape)
    except OverflowError:  # an exact integer of the model past the double range (n*10^600) meets a float
        result = np.broadcast_to(np.asarray(np.inf), full)
    except ZeroDivisionError:  # Python's own arithmetic on constants of the printed code, not NumPy's
        result = np.broadcast_to(np.asarray(np.nan), full)
    outside = ~(np.abs(result) <= MAX_MAGNITUDE)
    if outside.any():
        inputs = [np.broadcast_to(np.asarray(a, dtype=float), shape) for a in arrays]
        finite = np.logical_and.reduce([np.isfinite(a) for a in inputs]) if inputs else np.ones(shape, dtype=bool)
        outside &= np.asarray(finite)[..., None] if parts else finite
        if strict and outside.any():
            at = np.unravel_index(int(np.flatnonzero(outside)[0]), full) if full else ()
            point = {name: float(a[at[:len(shape)]]) for name, a in zip(model.inputs, inputs, strict=True)}
            shown = ", ".join(f"{name}={_fmt(value)}" for name, value in point.items())
            expr = model.inlined().args[at[-1]] if parts else model.inlined()
            which = f" (expression {at[-1] + 1} of {parts[0]})" if parts else ""
            raise ModelError(f"{model.quantity}{which} at {shown or 'its constant inputs'} is {float(result[at])}"
                             f"{_culprit(expr, point)}, not a finite number within {MAX_MAGNITUDE!r}: outside the "
                             "runtime's bounds (a logarithm of 0 or less, a root of a negative number, a division by "
                             "zero, a magnitude too large), as its assertion would be at run time")
        result = np.where(outside, np.nan, result)
    return np.array(result) if full else float(result)


_CULPRIT_TERMS = 64  # terms of a sum tried one by one to name the one past the bounds (only on that error)


def _culprit(expr: sympy.Expr, point: Mapping[str, float]) -> str:
    """`` (its term T is V there)`` for the first term of the sum ``expr`` not finite at ``point``, else ''."""
    for term in (expr.args if expr.is_Add else (expr,))[:_CULPRIT_TERMS]:
        names = sorted(s.name for s in term.free_symbols)
        try:
            fn = sympy.lambdify([symbol(n) for n in names], term, modules=[{NUMPY_MOD_HELPER: numpy_mod}, "numpy"],
                                printer=NumpyPrinter, use_imps=False)
            with np.errstate(all="ignore"):
                value = float(fn(*(np.float64(point[n]) for n in names)))  # NumPy's arithmetic, as in _call
        except (ArithmeticError, KeyError, TypeError, ValueError, RecursionError, SyntaxError):
            continue
        if not abs(value) <= MAX_MAGNITUDE:
            return f" (its term {sympy.sstr(term).replace('**', '^')[:120]} is {value} there)"
    return ""


def evaluate(model: NumericModel, values: Mapping[str, Any], *, rank: RankChoice = None,
             procs_name: str = PROCS) -> Evaluation:
    """Evaluate ``model`` with ``values`` (scalars or broadcastable arrays); missing inputs from the trace.

    ``procs_name`` names the job's process count: given, it sets the ranks a model in ``rank`` is evaluated on.
    """
    given = {name: np.asarray(value, dtype=float) for name, value in values.items()}
    if isinstance(rank, str) and rank not in ("mean", "min", "max"):
        raise ModelError(f"rank must be a rank number, 'mean', 'min' or 'max', not {rank!r}")
    job = _job_size(model, given, procs_name)
    if RANK in given:
        _check_ranks(given[RANK], job, procs_name)
    if RANK in model.inputs and RANK not in given:
        return _over_the_job(model, given, rank, job, procs_name)
    unused = sorted(set(given) - set(model.inputs))
    grid_shape = np.broadcast_shapes(*(v.shape for v in given.values())) if given else ()
    arrays: list[Any] = []
    from_trace: dict[str, str] = {}
    per_rank_inputs: list[int] = []
    for name in model.inputs:
        if name in given:
            arrays.append(given[name])
            continue
        present = _traced(model, name)
        traced = model.trace_values[name]
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
    per_rank = np.broadcast_to(per_rank, (len(model.ranks), *tuple(grid_shape), *components(model))).copy()
    reducer = {"min": np.nanmin, "max": np.nanmax}.get(rank if isinstance(rank, str) else "", np.nanmean)
    value = reducer(per_rank, axis=0)
    return Evaluation(value if np.ndim(value) else float(value), per_rank, model.ranks, from_trace, unused)


def _traced(model: NumericModel, name: str) -> np.ndarray:
    """The input's traced values on the ranks that declared it; ModelError when none did."""
    traced = model.trace_values.get(name)
    if traced is None or not np.isfinite(traced).any():
        raise ModelError(f"{model.quantity}: input {name!r} has no value in the trace; give it (--set {name}=...)")
    return traced[np.isfinite(traced)]


def _job_size(model: NumericModel, given: Mapping[str, np.ndarray], procs_name: str) -> np.ndarray:
    """Processes of the evaluated job: ``procs_name`` given, else traced (its value, or the traced job's size)."""
    if procs_name in given:
        size = given[procs_name]
        if np.any(~np.isfinite(size)) or np.any(size < 1) or np.any(size != np.round(size)):
            raise ModelError(f"{procs_name} is a number of processes: a whole number >= 1")
        return size
    traced = model.trace_values.get(procs_name)
    if traced is not None and np.isfinite(traced).any():
        return np.asarray(float(np.nanmax(traced)))
    return np.asarray(float(model.size or len(model.ranks)))


def _check_ranks(ranks: np.ndarray, job: np.ndarray, procs_name: str) -> None:
    """A rank of the evaluated job is a whole number in 0..nprocs-1."""
    ranks, job = np.broadcast_arrays(ranks, job)
    bad = (ranks < 0) | (ranks >= job) | (ranks != np.round(ranks))
    if bad.any():
        at = np.flatnonzero(bad.reshape(-1))[0]
        raise ModelError(f"rank {_fmt(ranks.reshape(-1)[at])} is not a rank of a job of {procs_name}="
                         f"{_fmt(job.reshape(-1)[at])} processes (ranks 0..{_fmt(job.reshape(-1)[at] - 1)})")


def _over_the_job(model: NumericModel, given: dict[str, np.ndarray], rank: RankChoice, job: np.ndarray,
                  procs_name: str) -> Evaluation:
    """A model in ``rank``: evaluated on every rank 0..P-1 of the job at each grid point, then reduced."""
    if procs_name in given and procs_name not in model.inputs:
        given = {k: v for k, v in given.items() if k != procs_name}  # it sets the ranks, not a model input
    unused = sorted(set(given) - set(model.inputs))
    grid_shape = np.broadcast_shapes(job.shape, *(v.shape for v in given.values()))
    sizes = np.broadcast_to(job, grid_shape)
    traced_size = float(model.size or len(model.ranks))
    inputs: dict[str, np.ndarray] = {}
    from_trace = {RANK: (f"0..{_fmt(sizes.max() - 1)} (every rank of the evaluated job)" if sizes.min() == sizes.max()
                         else "every rank of the evaluated job (0..nprocs-1)")}
    per_traced_rank: list[str] = []
    for name in model.inputs:
        if name == RANK:
            continue
        if name in given:
            inputs[name] = np.broadcast_to(given[name], grid_shape)
            continue
        present = _traced(model, name)
        if np.all(present == present[0]):
            inputs[name] = np.broadcast_to(np.asarray(float(present[0])), grid_shape)
            from_trace[name] = f"{_fmt(present[0])} (traced)"
        elif np.all(sizes == traced_size) and len(model.ranks) == traced_size:
            per_traced_rank.append(name)
            from_trace[name] = f"{_fmt(present.min())}..{_fmt(present.max())} (per traced rank)"
        else:
            raise ModelError(f"{model.quantity}: input {name!r} differs between the traced ranks "
                             f"({_fmt(present.min())}..{_fmt(present.max())}) and is not an expression of {RANK}: "
                             f"its value on the ranks of a {procs_name}={_fmt(sizes.max())} job is unknown; declare "
                             f"it as an expression of {RANK} and {procs_name} (ma.assign, "
                             "ma_def_variable_assign_int) or give it (--set)")
    if isinstance(rank, int) and not isinstance(rank, bool):
        _check_ranks(np.asarray(float(rank)), sizes, procs_name)
    value_shape = (*grid_shape, *components(model))
    value = np.empty(value_shape)
    low, high, high_at = np.empty(value_shape), np.empty(value_shape), np.empty(value_shape)
    order = {name: np.argsort(model.ranks) for name in per_traced_rank}
    for size in np.unique(sizes):
        where = sizes == size
        points = {name: array[where] for name, array in inputs.items()}
        if isinstance(rank, int) and not isinstance(rank, bool):
            chosen = _ranks_values(model, points, np.asarray([float(rank)]), per_traced_rank, order)
            value[where] = low[where] = high[where] = chosen[0]
            high_at[where] = rank
            continue
        total, lo, hi, at = np.zeros((where.sum(), *components(model))), None, None, None
        for start in range(0, int(size), _RANK_CHUNK):
            ranks = np.arange(start, min(int(size), start + _RANK_CHUNK), dtype=float)
            chunk = _ranks_values(model, points, ranks, per_traced_rank, order)
            total += np.nansum(chunk, axis=0)
            chunk_lo, chunk_hi = np.nanmin(chunk, axis=0), np.nanmax(chunk, axis=0)
            chunk_at = ranks[np.argmax(np.where(np.isnan(chunk), -np.inf, chunk), axis=0)]
            if lo is None or hi is None or at is None:
                lo, hi, at = chunk_lo, chunk_hi, chunk_at
            else:
                at = np.where(chunk_hi > hi, chunk_at, at)
                lo, hi = np.fmin(lo, chunk_lo), np.fmax(hi, chunk_hi)
        low[where], high[where], high_at[where] = lo, hi, at
        value[where] = {"min": lo, "max": hi}.get(rank if isinstance(rank, str) else "", total / size)
    result: Any = value if value.ndim else float(value)
    return Evaluation(result, from_trace=from_trace, unused=unused, job_spread=(low, high, high_at))


def _ranks_values(model: NumericModel, points: Mapping[str, np.ndarray], ranks: np.ndarray,
                  per_traced_rank: list[str], order: Mapping[str, np.ndarray]) -> np.ndarray:
    """The model on ``ranks`` (axis 0) at each grid point (axis 1), each expression of a several-expression model
    on a last axis."""
    arrays: list[Any] = []
    for name in model.inputs:
        if name == RANK:
            arrays.append(ranks[:, None])
        elif name in per_traced_rank:  # the traced job itself: rank r's own traced value
            traced = model.trace_values[name][order[name]]
            arrays.append(traced[ranks.astype(np.int64)][:, None])
        else:
            arrays.append(np.asarray(points[name], dtype=float)[None, :])
    n_points = len(next(iter(points.values()))) if points else 1
    return np.broadcast_to(np.asarray(_call(model, arrays), dtype=float), (len(ranks), n_points, *components(model)))


def evaluate_at_trace(model: NumericModel) -> np.ndarray:
    """The model at every traced rank's own inputs (NaN where an input was not traced on that rank)."""
    n = len(model.ranks)
    arrays = []
    for name in model.inputs:
        traced = model.trace_values.get(name)
        arrays.append(np.full(n, np.nan) if traced is None else traced)
    result = _call(model, arrays, strict=False)
    return np.broadcast_to(np.asarray(result, dtype=float), (n,)).copy()


def exact_value(model: NumericModel, values: Mapping[str, Any]) -> sympy.Expr:
    """Exact SymPy value at a point (rational arithmetic; floor/ceil of exact values)."""
    subs = {symbol(name): sympy.nsimplify(value, rational=True) if isinstance(value, float) else sympy.Integer(value)
            for name, value in values.items()}
    return model.inlined().xreplace(subs)


def _fmt(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:.6g}"
