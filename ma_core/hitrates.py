"""What makes a row of cumulative cache hit rates valid: h_1..h_n numbers in [0, 1], non-decreasing, the last
1 (main memory serves every access). One rule for the runtime, which checks ``ma.loadstore(..., hits=)`` at the
call, and the maps backend, which checks every row it prices against its profile's levels."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable


def cumulative_problem(rates: Iterable[object]) -> str | None:
    """Why ``rates`` is not a row of cumulative hit rates (a short phrase), or None when it is one."""
    try:
        values = [float(h) for h in rates]  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "not a list of numbers"
    if not all(math.isfinite(h) and 0.0 <= h <= 1.0 for h in values):
        return "a rate outside [0, 1]"
    if any(b < a - 1e-12 for a, b in itertools.pairwise(values)) or not values or abs(values[-1] - 1.0) > 1e-9:
        return "not cumulative (non-decreasing, ending at 1)"
    return None
