"""Which parameters of a fitted Equation 1 no measured point constrains.

Equation 1 gives level i the share t_i / T of a point's time, t_i = (h_i - h_{i-1}) c_i; the plateau b_i and the
latency c_i of a level whose share is small at every point can take any value the GA drifts to without changing
the fitness. A quick probe that stopped inside the last cache fitted memory at 1.5 GB/s that way, and said
nothing, and every prediction of code that streams from memory was 2-8 x off. So a level is **constrained** only
where at least :data:`MIN_POINTS` fitted points have at least :data:`MIN_SHARE` of their loads served by it
(h_i - h_{i-1}: a share of the hit rates, which the fit cannot move); the others are flagged in the profile
(``bandwidth_fit.unconstrained_levels``), printed by ``ma machine show`` and warned of by ``ma predict``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the profile reads its flags through this module: types only, no cycle
    from .profile import MachineProfile, MultiMapsPoint

MIN_SHARE = 0.5
MIN_POINTS = 2


def level_names(caches: int) -> list[str]:
    """``L1``, ``L2``, ..., then ``memory``: Equation 1's levels."""
    return [f"L{i + 1}" for i in range(caches)] + ["memory"]


def unconstrained_levels(points: Sequence[MultiMapsPoint], caches: int) -> tuple[str, ...]:
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


def warnings(machine: MachineProfile) -> list[str]:
    """One line per flagged level of ``machine``'s fit, and one where the probe could not reach a level."""
    out = []
    unreached = machine.multimaps_settings.unreached_levels
    if unreached:
        out.append(f"profile {machine.name!r}: the probe could not reach {', '.join(unreached)} (too little free "
                   "memory for a working set past twice the last cache)")
    fit = machine.bandwidth_fit
    if fit is None:
        return out
    names = level_names(len(machine.caches))
    for level in fit.unconstrained_levels:
        i = names.index(level) + 1
        parameters = f"b_{i}" + (f" and c_{i}" if i > 1 else "")
        out.append(f"profile {machine.name!r}: Equation 1's {parameters} ({level}) are unconstrained: fewer than "
                   f"{MIN_POINTS} MultiMAPS points have {MIN_SHARE:.0%} of their loads served by {level}, so its "
                   f"plateau ({fit.params.b[i - 1] / 1e9:.3g} GB/s) is a guess; a prediction whose loads reach it is "
                   "too (probe again past twice the last cache: ma machine probe)")
    return out
