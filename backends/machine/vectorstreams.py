"""The vector stream curve of the profile (``memory.vector_streams``): MultiMAPS's stride-1 read done with the
host's vector loads and stores, as NumPy's ufunc loops move data.

MultiMAPS reads with scalar 8-byte loads (eight independent sums, one add per load), so its stride-1 plateaus
from L1 to L3 are the load issue rate (about 59 GB/s on the shipped profile), not what a cache level delivers
to vector loads (about twice that from L2: docs/machine-profile.md). A NumPy kernel's lines are moved by SIMD
loads and stores, so the maps backend prices the lines a Python program's kernels pull from beyond L1 at this
curve's figure for the level that served them (:func:`level_bandwidths`), where the profile has it.

The kernel (``csrc/multimaps.c``, ``ma_vector_add_<isa>``): ``a = b + c`` over three line-aligned arrays that
together make the working set, with the widest vector ISA of the probe's build that the CPU runs (AVX-512,
AVX2 or SSE2, as NumPy's dispatch picks its widest), at log-spaced working sets from 4 KiB to
``llc_multiple`` x the last cache. 24 bytes per element counted: per 8 elements three lines pass beyond L1
(two read, one allocated by the store), which is what the signature run's cache simulation counts as lines
served. Each point is timed like a MultiMAPS point
(calibrated to ``min_time``, ``samples`` runs, their median or best).

Measured by :func:`.probe.measure_vector_streams`, filled by ``ma machine probe`` (and into an existing
profile by ``ma machine streams PROFILE``). Versioned by its own ``version`` (:data:`.profile.VECTOR_STREAMS_VERSION`);
optional: a profile without it prices those lines at Equation 1's scalar-load stream and the prediction says so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np

from .profile import VECTOR_STREAMS_FIELD, CacheLevel, StreamPoint

FIELD = VECTOR_STREAMS_FIELD
BYTES_PER_ELEMENT = 24  # two operands read, one written
MIN_SIZE = 4 << 10


def working_sets(caches: Sequence[CacheLevel], sizes: int, llc_multiple: float) -> list[int]:
    """``sizes`` log-spaced working sets (bytes of the three arrays together; the probe takes half MultiMAPS's
    number of sizes: one curve, not eight), whole lines of each array, from 4 KiB to llc_multiple x the last
    cache."""
    top = max(MIN_SIZE * 4, int(llc_multiple * caches[-1].size_bytes))
    unit = 3 * 64  # a line of each array
    return sorted({max(1, round(s / unit)) * unit for s in np.geomspace(MIN_SIZE, top, max(4, sizes))})


def level_ranges(caches: Sequence[CacheLevel]) -> list[tuple[float, float]]:
    """Working sets (bytes) that level 1, 2, ..., main memory serve cleanly: above twice the level inside
    (so that level no longer holds them) up to half the level's size (conflicts and the neighbours' share of a
    shared cache aside); main memory from twice the last cache."""
    ranges, inner = [], 0.0
    for cache in caches:
        ranges.append((2 * inner, cache.size_bytes / 2))
        inner = cache.size_bytes
    ranges.append((2 * inner, float("inf")))
    return ranges


def level_bandwidths(points: Sequence[StreamPoint], caches: Sequence[CacheLevel]) -> list[float | None]:
    """Bytes per second of a vector stream from each level (L1 first, memory last): the median of the curve's points in
    that level's clean range (:func:`level_ranges`); None for a level with no point there."""
    out: list[float | None] = []
    for low, high in level_ranges(caches):
        inside = [p.bandwidth_bytes_per_s for p in points if low < p.size_bytes <= high]
        out.append(statistics.median(inside) if inside else None)
    return out
