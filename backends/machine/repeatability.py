"""How far two probes of the same host differ point by point: the measurement's own noise floor.

A fit cannot be more accurate, on average, than the measurement repeats: if two quiet probes of one host
differ by d % at a point, a model that matches one probe exactly is d % off the other. ``bench/ga_fit.py
--repeat`` prints this table beside the fit's.
"""

from __future__ import annotations

from ma_core.errors import ProfileError

from .gafit import ErrorSummary, relative_errors, summarise
from .profile import MachineProfile, MultiMapsPoint


def _key(point: MultiMapsPoint) -> tuple[str, int]:
    return point.curve, point.size_bytes


def _curve_order(curve: str) -> tuple[bool, int]:
    """Strides in increasing order, then the random curve."""
    return curve == "random", int(curve.split()[-1]) if curve.startswith("stride ") else 0


def probe_difference(first: MachineProfile, second: MachineProfile) -> dict[str, ErrorSummary]:
    """Relative differences (first - second) / second of the MultiMAPS bandwidths both probes measured (same
    curve, same size): ``all`` over the stride points (the ones a fit uses), then per curve."""
    others = {_key(p): p.bandwidth_bytes_per_s for p in second.multimaps}
    pairs = [(p.curve, p.bandwidth_bytes_per_s, others[_key(p)]) for p in first.multimaps if _key(p) in others]
    strided = [(a, b) for curve, a, b in pairs if curve != "random"]
    if not strided:
        raise ProfileError(second.name, f"no MultiMAPS stride point in common with profile {first.name!r} "
                                        "(same stride and size) to compare", "multimaps")
    table = {"all": summarise(relative_errors([b for _, b in strided], [a for a, _ in strided]))}
    for curve in sorted({curve for curve, _, _ in pairs}, key=_curve_order):
        chosen = [(a, b) for c, a, b in pairs if c == curve]
        table[curve] = summarise(relative_errors([b for _, b in chosen], [a for a, _ in chosen]))
    return table
