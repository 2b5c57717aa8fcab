"""Parameter sweeps: models evaluated over the grid of every combination of the swept parameters.

The grid is never built point by point: each swept parameter is an array along its own axis (an open
grid, as ``numpy.ix_``) and the model's NumPy function (the printer of the NumPy export, compiled once per
model) broadcasts them, so a term that depends on one parameter is computed once per value of that
parameter, not once per point. Grids larger than ``chunk_points`` are evaluated in slabs of the longest
axis, which bounds the temporaries and drives the progress bar.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ma_core.errors import MAError

from ..evaluation import RankChoice, evaluate
from ..models import Model
from ..progress import progress
from .ranges import is_geometric

# Extra columns over the same grid (e.g. a backend's predicted time): name -> function of the parameters.
GridFunction = Callable[[Mapping[str, np.ndarray]], Any]
CHUNK_POINTS = 1 << 22


@dataclass
class SweepResult:
    """Values of every quantity on the grid of the swept parameters (axes in the order given)."""

    axes: dict[str, np.ndarray]
    fixed: dict[str, float]
    values: dict[str, np.ndarray]  # quantity -> array of shape ``self.shape``
    from_trace: dict[str, dict[str, str]] = field(default_factory=dict)  # quantity -> input -> traced value
    unused: dict[str, list[str]] = field(default_factory=dict)  # quantity -> given parameters it ignores

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.axes.values())

    @property
    def points(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def log_axes(self) -> dict[str, bool]:
        return {name: is_geometric(values) for name, values in self.axes.items()}

    def columns(self) -> dict[str, np.ndarray]:
        """Every swept parameter and quantity as a flat column, one row per point (last axis fastest)."""
        out: dict[str, np.ndarray] = {}
        for i, (name, values) in enumerate(self.axes.items()):
            out[name] = np.broadcast_to(_along(values, i, len(self.axes)), self.shape).ravel()
        for name, values in self.values.items():
            out[name] = np.asarray(values).ravel()
        return out


def open_grid(axes: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each axis shaped to broadcast along its own dimension (``numpy.ix_``)."""
    return {name: _along(values, i, len(axes)) for i, (name, values) in enumerate(axes.items())}


def _along(values: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    shape = [1] * ndim
    shape[axis] = len(values)
    return np.asarray(values, dtype=float).reshape(shape)


def sweep(models: Sequence[Model], sets: Mapping[str, Sequence[float] | np.ndarray], *, rank: RankChoice = None,
          extra: Mapping[str, GridFunction] | None = None, chunk_points: int = CHUNK_POINTS) -> SweepResult:
    """Evaluate ``models`` on the grid of ``sets`` (name -> values; one value fixes a parameter).

    Inputs not in ``sets`` keep their traced values, as in ``ma eval``; ``rank`` chooses how an input that
    differs between ranks is reduced (see ma_post.evaluation.evaluate). ``extra`` adds columns computed by
    other functions of the same parameters (a backend's prediction).
    """
    axes = {name: np.asarray(v, dtype=float).reshape(-1) for name, v in sets.items() if np.size(v) > 1}
    fixed = {name: float(np.asarray(v, dtype=float).reshape(-1)[0]) for name, v in sets.items() if np.size(v) == 1}
    empty = [name for name, v in sets.items() if np.size(v) == 0]
    if empty:
        raise MAError(f"parameter {empty[0]!r} has no values")
    names = [m.quantity for m in models] + list(extra or {})
    if len(set(names)) != len(names):
        raise MAError(f"a quantity is asked for twice: {', '.join(names)}")
    result = SweepResult(axes, fixed, {})
    shape = result.shape
    for name in names:
        result.values[name] = np.empty(shape, dtype=float)
    for slab in progress(_slabs(shape, chunk_points), total=_slab_count(shape, chunk_points), desc="sweep",
                         unit="slab"):
        grid: dict[str, Any] = {name: values[_own(slab, i)] for i, (name, values) in enumerate(open_grid(axes).items())}
        grid.update(fixed)
        for model in models:
            evaluation = evaluate(model, {k: v for k, v in grid.items() if k in model.inputs}, rank=rank)
            result.values[model.quantity][slab] = evaluation.value
            result.from_trace.setdefault(model.quantity, evaluation.from_trace)
            result.unused.setdefault(model.quantity, sorted(set(sets) - set(model.inputs)))
        for name, function in (extra or {}).items():
            result.values[name][slab] = function(grid)
    return result


def _own(slab: tuple[slice, ...], axis: int) -> tuple[slice, ...]:
    """The part of ``slab`` that applies to the open-grid array of ``axis`` (length 1 on the other axes)."""
    return tuple(part if i == axis else slice(None) for i, part in enumerate(slab))


def _slab_plan(shape: tuple[int, ...], chunk_points: int) -> tuple[int, int]:
    """(axis to cut, values of that axis per slab)."""
    if not shape:
        return -1, 1
    axis = int(np.argmax(shape))
    per_value = int(np.prod(shape, dtype=np.int64)) // max(shape[axis], 1)
    return axis, max(1, chunk_points // max(per_value, 1))


def _slab_count(shape: tuple[int, ...], chunk_points: int) -> int:
    axis, step = _slab_plan(shape, chunk_points)
    return 1 if axis < 0 else -(-shape[axis] // step)


def _slabs(shape: tuple[int, ...], chunk_points: int) -> list[tuple[slice, ...]]:
    axis, step = _slab_plan(shape, chunk_points)
    if axis < 0:
        return [()]
    whole = [slice(None)] * len(shape)
    return [tuple([*whole[:axis], slice(start, start + step), *whole[axis + 1:]])
            for start in range(0, shape[axis], step)]
