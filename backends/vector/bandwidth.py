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

Those curves are the scalar unit's: the MultiMAPS loop loads (and adds) one 8-byte word at a time. Where the
host's SIMD bandwidth curve is given (:mod:`.simd`), vectorised unit-stride loops take their max in the
caches from it: the AVX2 triad (32-byte loads and stores) at the working set, as the X1E's vector references
had their own bandwidth (:func:`vector_scenario_bandwidths`); beyond the last cache, the triad as for scalar
loops, which keep the scalar curves, or where the file has it the scalar triad curve (8-byte loads and stores,
:func:`scalar_unit_scenario_bandwidths`) for unit stride in the caches. The min stays the random-access curve for
both (a gather is scalar loads).

Between two measured sizes a curve is interpolated linearly in log(size); outside them it keeps its end
value. Without a working set a loop is taken to stream from main memory (the largest measured set).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Protocol

import numpy as np

from backends.machine.kernels import KERNEL_FLOPS_PER_WORD
from backends.machine.profile import GB
from ma_core.errors import BackendError

if TYPE_CHECKING:
    from backends.machine.profile import MachineProfile

    from .simd import SimdBandwidth


class CurvePoint(Protocol):
    """A measured point of a bandwidth curve (MultiMAPS or SIMD)."""

    @property
    def size_bytes(self) -> int: ...

    @property
    def bandwidth_gbs(self) -> float: ...


def memory_level(machine: MachineProfile, working_set: float) -> int:
    """1..len(caches) for the first cache the working set fits in, len(caches) + 1 for main memory."""
    for cache in machine.caches:
        if working_set <= cache.size_bytes:
            return cache.level
    return len(machine.caches) + 1


def curve_at(points: Sequence[CurvePoint], size: float) -> float:
    """A measured curve's bandwidth (GB/s) at ``size`` bytes: log-size interpolation, clamped at its ends."""
    ordered = sorted(points, key=lambda p: p.size_bytes)
    return float(np.interp(math.log(size), [math.log(p.size_bytes) for p in ordered],
                           [p.bandwidth_gbs for p in ordered]))


@dataclass(frozen=True)
class _Measured:
    """A MultiMAPS point in this module's unit (the vector paper's figures are GB/s; the profile's bytes/s)."""

    size_bytes: int
    bandwidth_gbs: float


def _curve(machine: MachineProfile, pattern: str, stride: int | None = None) -> list[_Measured]:
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
    return [_Measured(p.size_bytes, p.bandwidth_bytes_per_s / GB) for p in points]


def scenario_bandwidths(machine: MachineProfile, working_set: float | None = None,
                        stride: int = 1) -> dict[str, float]:
    """GB/s of the min, mixed and max scenarios for a loop touching ``working_set`` bytes at ``stride`` words
    (None: main memory, the largest measured set)."""
    _check(working_set)
    if stride < 1:
        raise BackendError(f"stride must be a positive number of 8-byte words, not {stride!r}")
    random, strided = _curve(machine, "random"), _curve(machine, "stride", stride)
    size = _size(machine, working_set)
    in_memory = working_set is None or memory_level(machine, working_set) > len(machine.caches)
    high = machine.triad_bytes_per_s / GB if in_memory and stride == 1 else curve_at(strided, size)
    low = curve_at(random, size)
    return {"min": low, "mixed": (low + high) / 2, "max": high}


def vector_scenario_bandwidths(machine: MachineProfile, simd: SimdBandwidth,
                               working_set: float | None = None) -> dict[str, float]:
    """GB/s of the scenarios for the vector memory operations of a vectorised unit-stride loop: max the SIMD
    triad curve at the working set, or beyond the last cache (None: main memory) the machine profile's STREAM
    triad as for scalar loops (main memory's bandwidth does not depend on the width of the loads, and the
    triad is measured far beyond the last cache, the curve's largest set only four times it); min the
    random-access curve there, mixed their mean."""
    return _unit_stride_scenarios(machine, simd.triad, working_set)


def scalar_unit_scenario_bandwidths(machine: MachineProfile, simd: SimdBandwidth,
                                    working_set: float | None = None) -> dict[str, float]:
    """GB/s of the scenarios for a scalar unit-stride loop where the SIMD file has the scalar triad curve: as
    :func:`vector_scenario_bandwidths`, with the scalar triad (8-byte loads and stores) in the caches in place of
    the MultiMAPS stride-1 curve, whose loop is bound by adding every word it loads."""
    if not simd.scalar_triad:
        raise BackendError("the SIMD bandwidth file has no scalar triad curve (a version 1 file): measure it again "
                           "(backends.vector.simd.measure_for)")
    return _unit_stride_scenarios(machine, simd.scalar_triad, working_set)


def _unit_stride_scenarios(machine: MachineProfile, triad: Sequence[CurvePoint],
                           working_set: float | None) -> dict[str, float]:
    _check(working_set)
    size = _size(machine, working_set)
    in_memory = working_set is None or memory_level(machine, working_set) > len(machine.caches)
    high = machine.triad_bytes_per_s / GB if in_memory else curve_at(triad, size)
    low = curve_at(_curve(machine, "random"), size)
    return {"min": low, "mixed": (low + high) / 2, "max": high}




def kernel_flops_per_word(triad: bool) -> dict[str, float]:
    """Per scenario, the flops per word inside its bandwidth: max from the triad (``triad``) or the strided curve,
    min from the random curve; mixed, a mean of the two bandwidths, holds what both loops do at least."""
    high, low = KERNEL_FLOPS_PER_WORD["triad" if triad else "stride"], KERNEL_FLOPS_PER_WORD["random"]
    return {"min": low, "mixed": min(low, high), "max": high}


def _check(working_set: float | None) -> None:
    if working_set is not None and not working_set > 0:
        raise BackendError(f"working set must be a positive number of bytes, not {working_set!r}")


def _size(machine: MachineProfile, working_set: float | None) -> float:
    return working_set if working_set is not None else max(p.size_bytes for p in machine.multimaps)


def gather_seconds(simd: SimdBandwidth, gathers: float, gathered_bytes: float, values: bool = False,
                   curve: Sequence[CurvePoint] | None = None) -> float:
    """An extension of Figure 4, not one of its scenarios: the seconds of ``gathers`` random reads (each with its
    index read from a stream) of an array of ``gathered_bytes``, at the SIMD file's measured gather curve there;
    with ``values``, each read also with a value streamed beside it and one FMA (a CSR row's entry), at the
    sparse-dot curve. Figure 4 gives a loop one bandwidth; a sparse row loop streams most of its words and gathers
    the rest from a smaller array, with fewer misses in flight than the random-access curve's loop (its indices in
    cache) has, and its value stream shares them with the gathers rather than running beside them at the triad's
    rate (docs/vector-backend.md). ``curve`` (e.g. :func:`sparse_row_curve`'s) replaces the one ``values`` picks."""
    curve = curve or gather_curve(simd, values)
    if not gathered_bytes > 0:
        raise BackendError(f"the gathered array's size must be a positive number of bytes, not {gathered_bytes!r}")
    return gathers * 8.0 / (curve_at(curve, gathered_bytes) * 1e9)


def sparse_row_curve(simd: SimdBandwidth, vectorised: bool) -> tuple[str, Sequence[CurvePoint]]:
    """The curve a sparse row loop's entries are priced on, and its name: for a vectorised build (MV >= 2) the SIMD
    file's ``sparse_rows_vectorised`` curve (a CSR row loop as GCC vectorises it: scalar index loads, the row's p
    words inserted into a vector, vmulpd, in-order adds) where the file has it (version 4), else, and for scalar
    builds, the sparse-dot curve."""
    if vectorised and simd.sparse_rows_vectorised:
        return "sparse_rows_vectorised", simd.sparse_rows_vectorised
    return "sparse_dot", gather_curve(simd, True)


def gather_curve(simd: SimdBandwidth, values: bool) -> Sequence[CurvePoint]:
    """The SIMD file's sparse-dot curve (``values``: a value streamed beside each gather) or its gather curve."""
    name, curve = ("sparse_dot", simd.sparse_dot) if values else ("gather", simd.gather)
    if not curve:
        raise BackendError(f"the SIMD bandwidth file has no {name} curve: measure it again "
                           "(backends.vector.simd.measure_for)")
    return curve


def level_reference_sizes(machine: MachineProfile, curve: Sequence[CurvePoint]) -> list[float]:
    """Per level (the caches, then main memory), the working set at which the gather curves stand for reads served
    there: random reads of an array 8 times the level above (capped at the level's own size) are at least 7/8 served
    by the level; the first cache at the curve's smallest point, main memory at its largest."""
    sizes = [p.size_bytes for p in curve]
    levels = [float(min(sizes))]
    for above, cache in pairwise(machine.caches):
        levels.append(float(min(8 * above.size_bytes, cache.size_bytes)))
    return [*levels, float(max(sizes))]


def gather_seconds_by_level(machine: MachineProfile, simd: SimdBandwidth, gathers: float,
                            hit_rates: Sequence[float], values: bool = False,
                            curve: Sequence[CurvePoint] | None = None) -> float:
    """:func:`gather_seconds` for reads whose index pattern is known: ``hit_rates`` are the gathered reads'
    cumulative h_1..h_n (+ 1.0 for main memory; :func:`backends.machine.hitrates.simulate` of their addresses),
    and each read served by a level costs what the curve measures where random reads are served there
    (:func:`level_reference_sizes`). The curve at the array's size assumes random indices; a pattern that reuses
    lines later than random (a constant stride through the array) is served further out. ``curve`` as in
    :func:`gather_seconds`."""
    curve = curve or gather_curve(simd, values)
    sizes = level_reference_sizes(machine, curve)
    if len(hit_rates) != len(sizes) or any(b < a for a, b in pairwise(hit_rates)):
        raise BackendError(f"hit rates {list(hit_rates)} are not cumulative h_1..h_n and 1.0 for the "
                           f"{len(sizes) - 1} caches and main memory of {machine.name!r}")
    served = np.diff([0.0, *hit_rates[:-1], 1.0])
    return gathers * sum(share * 8.0 / (curve_at(curve, size) * 1e9) for share, size in zip(served, sizes, strict=True))
