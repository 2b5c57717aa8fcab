"""The bandwidths of Figure 4's three scenarios on a measured host, at a loop's working set and stride.

The vector paper took them from two benchmarks: RandomAccess (min), STREAM (max) and their mean (mixed),
one figure each for the X1E's memory. A cached host has one such figure per level of its hierarchy, and
its machine profile measured them: the MultiMAPS curves (a strided read and a random read over working
sets from the first cache to beyond the last) and the STREAM triad. So a loop's scenarios are read at its
own working set:

- **max**: the MultiMAPS curve of the loop's stride (the measured stride nearest to it) at the working set;
  beyond the last cache, for unit stride, the STREAM triad, which is measured there and, unlike the
  read-only MultiMAPS loop, with a store stream as the loops have;
- **min**: the random-access curve at the working set;
- **mixed**: their mean, as the paper's 5.5 GB/s between 2.5 and 8.5.

Between two measured sizes a curve is interpolated linearly in log(size); outside them it keeps its end
value. Without a working set a loop is taken to stream from main memory (the largest measured set).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ma.errors import BackendError

if TYPE_CHECKING:
    from backends.machine.profile import MachineProfile, MultiMapsPoint


def memory_level(machine: MachineProfile, working_set: float) -> int:
    """1..len(caches) for the first cache the working set fits in, len(caches) + 1 for main memory."""
    for cache in machine.caches:
        if working_set <= cache.size_bytes:
            return cache.level
    return len(machine.caches) + 1


def curve_at(points: Sequence[MultiMapsPoint], size: float) -> float:
    """A measured curve's bandwidth (GB/s) at ``size`` bytes: log-size interpolation, clamped at its ends."""
    ordered = sorted(points, key=lambda p: p.size_bytes)
    sizes = [p.size_bytes for p in ordered]
    at = bisect.bisect_left(sizes, size)
    if at == 0:
        return ordered[0].bandwidth_gbs
    if at == len(ordered):
        return ordered[-1].bandwidth_gbs
    low, high = ordered[at - 1], ordered[at]
    weight = (math.log(size) - math.log(low.size_bytes)) / (math.log(high.size_bytes) - math.log(low.size_bytes))
    return low.bandwidth_gbs + weight * (high.bandwidth_gbs - low.bandwidth_gbs)


def _curve(machine: MachineProfile, pattern: str, stride: int | None = None) -> list[MultiMapsPoint]:
    points = [p for p in machine.multimaps if p.pattern == pattern]
    if pattern == "stride" and points:
        measured = {p.stride for p in points if p.stride}
        nearest = min(measured, key=lambda s: (abs(math.log(s) - math.log(stride or 1)), s))
        points = [p for p in points if p.stride == nearest]
    if not points:
        what = "random-access" if pattern == "random" else "strided"
        raise BackendError(f"machine profile {machine.name!r} has no {what} MultiMAPS curve: the vector backend's "
                           f"{'min' if pattern == 'random' else 'max'} bandwidth comes from it (run 'ma machine "
                           "probe' with its MultiMAPS curves)")
    return points


def scenario_bandwidths(machine: MachineProfile, working_set: float | None = None,
                        stride: int = 1) -> dict[str, float]:
    """GB/s of the min, mixed and max scenarios for a loop touching ``working_set`` bytes at ``stride`` words
    (None: main memory, the largest measured set)."""
    if working_set is not None and not working_set > 0:
        raise BackendError(f"working set must be a positive number of bytes, not {working_set!r}")
    if stride < 1:
        raise BackendError(f"stride must be a positive number of 8-byte words, not {stride!r}")
    random, strided = _curve(machine, "random"), _curve(machine, "stride", stride)
    size = working_set if working_set is not None else max(p.size_bytes for p in machine.multimaps)
    in_memory = working_set is None or memory_level(machine, working_set) > len(machine.caches)
    high = machine.triad_gbs if in_memory and stride == 1 else curve_at(strided, size)
    low = curve_at(random, size)
    return {"min": low, "mixed": (low + high) / 2, "max": high}
