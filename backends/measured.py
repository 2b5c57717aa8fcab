"""Predicted against measured time per subroutine: the traces carry each site's inclusive wall time, and a
prediction whose backend names each site's subroutine (:attr:`.base.Prediction.subroutines`) sums its sites inside
any of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ma_post import ModelBuilder

    from .base import PredictedSeconds, Prediction

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


def compare(builder: ModelBuilder, prediction: Prediction, values: Mapping[str, float],
            seconds: PredictedSeconds | None = None) -> list[Comparison]:
    """Every subroutine site of the trace that has predicted sites inside, predicted vs its measured wall time
    (none where the prediction names no subroutines). ``seconds``: the prediction already evaluated at
    ``values`` (:meth:`.base.Prediction.seconds`), if the caller has it."""
    ts = builder.ts
    if seconds is None:
        seconds = prediction.seconds(builder, values)
    out = []
    for site in ts.walk():
        if site.type != "subroutine":
            continue
        inside = seconds.in_subroutine(site.path)
        if not inside:  # no predicted site inside: nothing to compare
            continue
        predicted = seconds.total(inside)
        present = np.nansum(site.calls, axis=1) > 0  # (ranks, threads): threads run at once, the longest counts
        measured = np.nanmax(np.asarray(site.wall_ns, dtype=float), axis=1)[present] * _NS
        if not measured.size:
            continue
        out.append(Comparison(site.path, float(np.mean(predicted[present])), float(np.mean(measured))))
    return out
