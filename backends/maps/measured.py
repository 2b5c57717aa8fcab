"""Predicted against measured time per subroutine: the traces carry each site's inclusive wall time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import sympy

from ma_core.errors import BackendError

from .backend import MapsPrediction

if TYPE_CHECKING:
    from ma_post import ModelBuilder

_NS = 1e-9


@dataclass(frozen=True)
class Comparison:
    subroutine: str  # path
    predicted_s: float  # mean over the traced ranks, per rank
    measured_s: float

    @property
    def error(self) -> float:
        """Relative error of the prediction, (predicted - measured) / measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s if self.measured_s else float("nan")


def per_rank(builder: ModelBuilder, expr: sympy.Expr, values: Mapping[str, float]) -> np.ndarray:
    """An expression of the prediction at every traced rank's own inputs (``values`` override them)."""
    from ma_post.evaluation import evaluate

    model = builder.submodel("predicted", expr)
    result = evaluate(model, dict(values))  # its value is the mean over ranks where their inputs differ
    seconds = np.asarray(result.value if result.per_rank is None else result.per_rank, dtype=float)
    return np.broadcast_to(seconds, (len(model.ranks),)) if seconds.ndim == 0 else seconds


def compare(builder: ModelBuilder, prediction: MapsPrediction, values: Mapping[str, float]) -> list[Comparison]:
    """Every subroutine site of the trace that has predicted sites inside, predicted vs its measured wall time."""
    ts = builder.ts
    out = []
    for site in ts.walk():
        if site.type != "subroutine":
            continue
        try:
            expr = prediction.subroutine_total(site.path)
        except BackendError:  # no predicted site inside: nothing to compare
            continue
        predicted = per_rank(builder, expr, values)
        present = np.nansum(site.calls, axis=1) > 0  # (ranks, threads): threads run at once, the longest counts
        measured = np.nanmax(np.asarray(site.wall_ns, dtype=float), axis=1)[present] * _NS
        if not measured.size:
            continue
        out.append(Comparison(site.path, float(np.mean(predicted[present])), float(np.mean(measured))))
    return out
