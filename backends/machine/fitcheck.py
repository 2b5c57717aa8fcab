"""What no measurement of a profile backs, said: Equation 1's levels no fitted point constrains
(:func:`.levels.unconstrained_levels`, kept in ``bandwidth_fit.unconstrained_levels``) and levels the probe could
not reach (``multimaps.unreached_levels``). ``ma machine show``, ``probe`` and ``fit`` print these lines, and
``ma predict`` warns with them: a prediction whose loads reach a flagged level is a guess.
"""

from __future__ import annotations

from .levels import MIN_POINTS, MIN_SHARE, level_names
from .profile import MachineProfile


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
