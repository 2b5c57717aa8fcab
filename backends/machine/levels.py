"""Equation 1's levels by name (``L1``, ..., ``memory``), and which of them the fitted points constrain.

Equation 1 gives level i the share t_i / T of a point's time, t_i = (h_i - h_{i-1}) c_i; the plateau b_i and the
latency c_i of a level whose share is small at every point can take any value the GA drifts to without changing
the fitness. A quick probe that stopped inside the last cache fitted memory at 1.5 GB/s that way, and said
nothing, and every prediction of code that streams from memory was 2-8 x off. So a level is **constrained** only
where at least :data:`MIN_POINTS` fitted points have at least :data:`MIN_SHARE` of their loads served by it
(h_i - h_{i-1}: a share of the hit rates, which the fit cannot move). :mod:`.fitcheck` says what the others mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

MIN_SHARE = 0.5
MIN_POINTS = 2


class FittedPoint(Protocol):
    """What the check reads of a MultiMAPS point (:class:`.profile.MultiMapsPoint`)."""

    @property
    def pattern(self) -> str: ...

    @property
    def hit_rates(self) -> tuple[float, ...] | None: ...


def level_names(caches: int) -> list[str]:
    """``L1``, ``L2``, ..., then ``memory``: Equation 1's levels."""
    return [f"L{i + 1}" for i in range(caches)] + ["memory"]


def unconstrained_levels(points: Sequence[FittedPoint], caches: int) -> tuple[str, ...]:
    """The levels (:func:`level_names`) that fewer than MIN_POINTS fitted points (stride points with hit rates)
    serve at least MIN_SHARE of their loads from."""
    names = level_names(caches)
    served = [0] * len(names)
    for point in points:
        if point.pattern != "stride" or point.hit_rates is None:
            continue
        below = 0.0
        for i, rate in enumerate(point.hit_rates):
            if rate - below >= MIN_SHARE:
                served[i] += 1
            below = rate
    return tuple(name for name, count in zip(names, served, strict=True) if count < MIN_POINTS)
