"""The plan of ``ma machine probe``: which MultiMAPS points it measures, how often, and how long that takes.

A probe must finish on any machine: a server with a 300 MB last cache would take many minutes at every stride
out to four times its cache. So the working sets are spaced by the hierarchy (a number of sizes per cache level
that grows with the octaves the level spans, not with its bytes), the strides past the last cache are sampled
(MultiMAPS's drops and plateaus are inside the caches; past the last one every stride reads memory, and a
stride of two lines or more is what gives the memory plateau its points), the random curve's accesses past the
cache are capped (still spread over the whole array, and over more lines than the last cache holds), and a point
whose pass is long gets fewer samples (one pass already averages over many scheduler ticks).

Every point's time is estimated from a cost model (:class:`CostModel`: deliberately slow bandwidths, so the
estimate is an upper bound on a machine that is not loaded) before anything runs; the plan then trims itself,
in a fixed order, until the estimate fits the budget (:data:`FULL_BUDGET_S`, :data:`QUICK_BUDGET_S`), and never
below one size past twice the last cache. A host whose free memory cannot hold that size gets a plan that says
so (:attr:`ProbePlan.unreached`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from .profile import CacheLevel

WORD = 8
LINE = 64
INDEX_BYTES = 4  # the random curve's index (uint32)
FULL_BUDGET_S = 180.0
QUICK_BUDGET_S = 30.0
BEYOND_FULL = (1.25, 1.5, 2.0, 2.5, 3.0, 4.0)  # working sets past the last cache, x its size
BEYOND_QUICK = (1.5, 2.5)
MIN_BEYOND = 2.5  # the last size a plan keeps whatever it trims: past twice the last cache
LONG_PASS_S = 0.01  # a point whose pass lasts this long is sampled fewer times
FEW_SAMPLES = 3


@dataclass(frozen=True)
class CostModel:
    """Seconds of the probe's parts on a slow core (an estimate that a quiet host beats; ``bench/probe_plan.py``
    compares it with measured times). Per-phase constants are those of the parts whose time does not depend on
    the caches."""

    loads_per_s: float = 1.5e9  # the strided loop's loads from L1
    cache_line_bytes_per_s: float = 12e9  # lines from L2 or a further cache
    memory_bytes_per_s: float = 4e9  # lines from main memory, one core
    random_cache_s: float = 4e-9  # one random access inside the caches (its index streamed beside it)
    random_memory_s: float = 30e-9  # one random access beyond the last cache (a TLB miss with it)
    call_s: float = 30e-6  # Python's cost of one timed kernel call
    page_bytes_per_s: float = 2e9  # first touch of an array's pages
    process_start_s: float = 1.5  # a spawned Python process with NumPy, ready to measure
    hitsim_load_s: float = 30e-9  # one load of the hit-rate simulation (C) that hits L1
    hitsim_miss_s: float = 170e-9  # what a load that misses L1 adds
    ga_eval_s: float = 2.5e-8  # Equation 1 at one point for one individual (vectorised)
    ga_fixed_s: float = 4.0  # the GA's Lamarckian steps and the final polish
    fixed_s: tuple[tuple[str, float], ...] = (("flops", 1.0), ("csr rows", 4.0), ("add chain", 0.5), ("cpython", 8.0))
    mpi_s: tuple[tuple[str, float], ...] = (("MPI", 12.0), ("Python exchange", 8.0))
    # the synchronised exchange (in the MPI phase), per rank count (2 and the cores): full, and quick settings
    synchronised_s: tuple[float, float] = (10.0, 0.5)
    quick_fraction: float = 0.25  # of the fixed parts' time with the quick settings


@dataclass(frozen=True)
class PlannedPoint:
    """One MultiMAPS point: ``stride`` in words (None: the random curve, ``accesses`` random loads per pass)."""

    pattern: str
    size_bytes: int
    stride: int | None
    samples: int
    accesses: int
    seconds: float  # estimated, calibration and samples together

    @property
    def bytes_per_pass(self) -> int:
        if self.pattern == "random":
            return self.accesses * (WORD + INDEX_BYTES)
        return self.accesses * WORD


@dataclass(frozen=True)
class ProbePlan:
    points: tuple[PlannedPoint, ...]
    phases: tuple[tuple[str, float], ...]  # estimated seconds of every part, MultiMAPS first
    last_cache_bytes: int
    budget_s: float
    trimmed: tuple[str, ...] = ()  # what was given up to fit the budget
    unreached: tuple[str, ...] = ()  # levels no working set reaches (main memory where RAM is short)
    warnings: tuple[str, ...] = ()
    multicore_counts: tuple[int, ...] = ()  # the multicore block's core counts; none: not measured

    @property
    def estimate_s(self) -> float:
        return sum(seconds for _, seconds in self.phases)

    @property
    def sizes(self) -> list[int]:
        return sorted({p.size_bytes for p in self.points})

    @property
    def top_multiple(self) -> float:
        """The largest working set over the last cache: what the triad and the vector stream curve reach too."""
        return max(self.sizes) / self.last_cache_bytes

    def summary(self) -> str:
        sizes = self.sizes
        parts = ", ".join(f"{name} {seconds:.0f}" for name, seconds in self.phases)
        text = (f"plan: {len(self.points)} MultiMAPS points at {len(sizes)} sizes, {size_text(sizes[0])} .. "
                f"{size_text(sizes[-1])} ({self.top_multiple:.2g} x the last cache); estimated {self.estimate_s:.0f} s "
                f"(budget {self.budget_s:.0f} s: {parts})")
        if self.trimmed:
            text += "; to fit the budget: " + "; ".join(self.trimmed)
        return text


@dataclass(frozen=True)
class _Shape:
    """What a plan measures; the budget trims it step by step (:func:`_trims`)."""

    per_octave: float
    min_per_level: int
    beyond: tuple[float, ...]
    strides: tuple[int, ...]
    beyond_strides: tuple[int, ...]
    samples: int
    random: bool
    random_beyond: bool = True  # the random curve at the largest size past the last cache too
    multicore_counts: tuple[int, ...] = ()  # the core counts of the multicore block (none: not measured)


def size_text(nbytes: float) -> str:
    """A byte count for people: 1.5 MiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def level_sizes(caches: Sequence[CacheLevel], min_size: int, per_octave: float, min_per_level: int,
                beyond: Sequence[float]) -> list[int]:
    """Working sets in whole lines: ``min_size``, then each cache level's range (from the level inside it up to
    its size) log-spaced with ``per_octave`` sizes per doubling (at least ``min_per_level``), then ``beyond`` x
    the last cache."""
    sizes: set[float] = {min_size}
    low = min_size
    for cache in caches:
        high = cache.size_bytes
        if high > low:
            count = max(min_per_level, math.ceil(per_octave * math.log2(high / low)))
            sizes.update(np.geomspace(low, high, count + 1)[1:].tolist())
            low = high
    sizes.update(m * caches[-1].size_bytes for m in beyond)
    return sorted({max(LINE, round(s / LINE) * LINE) for s in sizes})


def random_accesses(size_bytes: int, caches: Sequence[CacheLevel]) -> int:
    """Loads per pass of the random curve at ``size_bytes``: one per word, capped at 1.25 loads per line of the
    working set (most of its lines are touched) and, past the last cache, per line of twice that cache (the lines
    a pass touches still overflow it on the next pass); never fewer than 64 Ki (a small set: one per word)."""
    words = size_bytes // WORD
    reach = min(size_bytes, 2 * caches[-1].size_bytes)
    return min(words, max(1 << 16, 5 * reach // (4 * LINE)))


def _level_of(size_bytes: float, caches: Sequence[CacheLevel]) -> int:
    """0-based index of the first level that holds ``size_bytes`` (len(caches): main memory)."""
    return next((i for i, c in enumerate(caches) if size_bytes <= c.size_bytes), len(caches))


def pass_seconds(pattern: str, size_bytes: int, stride: int | None, accesses: int, caches: Sequence[CacheLevel],
                 cost: CostModel) -> float:
    """Estimated seconds of one pass of a point's loop."""
    level = _level_of(size_bytes, caches)
    if pattern == "random":
        return accesses * (cost.random_cache_s if level < len(caches) else cost.random_memory_s)
    assert stride is not None
    loads = accesses
    if level == 0:
        return loads / cost.loads_per_s
    lines = min(size_bytes / LINE, loads * max(1, 2 if stride * WORD < 2 * LINE else 1))
    rate = cost.cache_line_bytes_per_s if level < len(caches) else cost.memory_bytes_per_s
    return max(loads / cost.loads_per_s, lines * LINE / rate)


def point_seconds(pass_s: float, samples: int, min_time: float, cost: CostModel) -> float:
    """Calibration (doubling up to min_time: about twice it, at least a pass), then per sample an untimed pass
    and a timed run of at least min_time."""
    timed = max(pass_s, min_time)
    return 2 * timed + samples * (pass_s + timed) + (samples + 8) * cost.call_s


def _points(caches: Sequence[CacheLevel], shape: _Shape, min_size: int, min_loads: int, min_time: float,
            cost: CostModel) -> list[PlannedPoint]:
    last = caches[-1].size_bytes
    points = []
    sizes = level_sizes(caches, min_size, shape.per_octave, shape.min_per_level, shape.beyond)
    for size in sizes:
        words = size // WORD
        curves: list[tuple[str, int | None, int]] = [
            ("stride", s, -(-words // s)) for s in (shape.strides if size <= last else shape.beyond_strides)
            if -(-words // s) >= min_loads]
        # the random curve is the fit's check, not fitted: past the last cache one size shows its plateau
        if shape.random and (size <= last or (shape.random_beyond and size == sizes[-1])):
            curves.append(("random", None, random_accesses(size, caches)))
        for pattern, stride, accesses in curves:
            one = pass_seconds(pattern, size, stride, accesses, caches, cost)
            samples = shape.samples if one < LONG_PASS_S else min(shape.samples, FEW_SAMPLES)
            points.append(PlannedPoint(pattern, size, stride, samples, accesses,
                                       point_seconds(one, samples, min_time, cost)))
    return points


def _hitsim_seconds(points: Sequence[PlannedPoint], caches: Sequence[CacheLevel], cost: CostModel) -> float:
    """The hit-rate simulation: a warm-up pass and a counted one per point, a strided one on its shorter similar
    sweep (:func:`.hitrates.similar_sweep`); a load that misses L1 costs the simulation more than one that hits."""
    from .hitrates import similar_sweep

    total = 0.0
    for p in points:
        missing = p.size_bytes > caches[0].size_bytes
        if p.pattern == "random":
            total += 2 * p.accesses * (2 * cost.hitsim_load_s + missing * cost.hitsim_miss_s)
            continue
        scale = similar_sweep(caches, p.size_bytes)[2]
        lines = min(p.accesses, p.size_bytes / LINE) if missing else 0
        total += 2 * (p.accesses * cost.hitsim_load_s + lines * cost.hitsim_miss_s) / scale
    return total


def _stream_seconds(caches: Sequence[CacheLevel], top_multiple: float, sizes: int, samples: int, min_time: float,
                    cost: CostModel) -> float:
    """The vector stream curve (``sizes`` working sets up to top_multiple x the last cache) and the triad (three
    arrays of top_multiple x the last cache each)."""
    last = caches[-1].size_bytes
    total = 0.0
    for size in np.geomspace(4096, max(4 * 4096, top_multiple * last), max(4, sizes)):
        rate = cost.cache_line_bytes_per_s if size <= last else cost.memory_bytes_per_s
        one = 4 / 3 * size / rate  # three arrays, the stored one read first
        total += point_seconds(one, samples if one < LONG_PASS_S else min(samples, FEW_SAMPLES), min_time, cost)
    triad = 4 / 3 * top_multiple * last / cost.memory_bytes_per_s
    pages = 2 * top_multiple * last / cost.page_bytes_per_s  # the arrays' pages touched before timing
    return total + point_seconds(triad, samples, min_time, cost) + pages


def _multicore_seconds(caches: Sequence[CacheLevel], counts: Sequence[int], samples: int, cost: CostModel) -> float:
    """The multicore block (:mod:`.multicore_probe`): per core count, starting its processes, then every sample
    of the read and the triad at each working set, an untimed pass and a timed run of at least its min_time."""
    from .multicore_probe import MIN_TIME_S, working_sets

    total = 0.0
    for k in counts:
        total += cost.process_start_s * (1 + k / 8)
        for size, level in working_sets(caches, k):
            rate = cost.memory_bytes_per_s / k if level == "memory" else cost.cache_line_bytes_per_s
            for one in (size / rate, 4 / 3 * size / rate):  # the read, the triad (its stored array read first)
                total += 2 * max(one, MIN_TIME_S) + samples * (one + max(one, MIN_TIME_S) + 4 * cost.call_s)
    return total


def _ga_seconds(points: Sequence[PlannedPoint], population: int, generations: int, cost: CostModel) -> float:
    if not population:
        return 0.0
    fitted = sum(1 for p in points if p.pattern == "stride")
    return population * generations * fitted * cost.ga_eval_s + cost.ga_fixed_s


def _trims(shape: _Shape) -> list[tuple[str, _Shape]]:
    """The shapes to try, each giving up more than the one before: sizes far past the cache, strides past it,
    samples, sizes per octave."""
    steps: list[tuple[str, _Shape]] = [("", shape)]
    beyond = tuple(m for m in shape.beyond)
    while len(beyond) > 1 and beyond[-1] > MIN_BEYOND:
        beyond = beyond[:-1]
        steps.append((f"sizes past the last cache up to {beyond[-1]:g} x it", replace(steps[-1][1], beyond=beyond)))
    kept = tuple(s for s in shape.beyond_strides if s in (1, 16)) or shape.beyond_strides[:1]
    steps.append((f"strides {', '.join(map(str, kept))} past the last cache",
                  replace(steps[-1][1], beyond_strides=kept, beyond=(MIN_BEYOND,))))
    if shape.random:
        steps.append(("the random curve inside the last cache only", replace(steps[-1][1], random_beyond=False)))
    ends = tuple(sorted({1, *shape.multicore_counts[-1:]}))
    if len(shape.multicore_counts) > len(ends):
        steps.append((f"the multicore block on {' and '.join(map(str, ends))} cores only",
                      replace(steps[-1][1], multicore_counts=ends)))
    if shape.samples > FEW_SAMPLES:
        steps.append((f"{FEW_SAMPLES} samples a point", replace(steps[-1][1], samples=FEW_SAMPLES)))
    per_octave = shape.per_octave
    while per_octave > 0.5:
        per_octave /= 2
        steps.append((f"{per_octave:g} sizes per doubling",
                      replace(steps[-1][1], per_octave=per_octave, min_per_level=2)))
    if shape.multicore_counts:
        steps.append(("no multicore block", replace(steps[-1][1], multicore_counts=())))
    return steps


def available_memory() -> int | None:
    """Bytes of memory free for the probe's arrays (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def make_plan(caches: Sequence[CacheLevel], *, quick: bool, strides: Sequence[int], samples: int, min_time: float,
              min_size: int, min_loads: int, random: bool, vector_sizes: int, population: int, generations: int,
              mpi: bool, multicore_cores: int = 0, multicore_samples: int = 5, budget_s: float | None = None,
              cost: CostModel | None = None, free_bytes: int | None = -1) -> ProbePlan:
    """The plan for ``caches`` (``multicore_cores``: the physical cores of the multicore block, 0 without it; the
    quick plan measures it on one and all of them, the full one on 1, 2, 4, ... too; ``free_bytes`` -1: ask the
    OS; None: unknown, not limited)."""
    from .multicore_probe import core_counts

    cost = cost or CostModel()
    budget = budget_s if budget_s is not None else (QUICK_BUDGET_S if quick else FULL_BUDGET_S)
    free = available_memory() if free_bytes == -1 else free_bytes
    last = caches[-1].size_bytes
    beyond: tuple[float, ...] = BEYOND_QUICK if quick else BEYOND_FULL
    warnings: list[str] = []
    unreached: tuple[str, ...] = ()
    if free is not None:
        # the largest array and its random index (the triad's and the stream curve's arrays are no larger, and
        # not alive with them), twice over for safety; half of what is free leaves the rest of the host alone
        fits = tuple(m for m in beyond if 2 * m * last <= free / 2)
        if not fits or fits[-1] < 2:
            unreached = ("memory",)
            warnings.append(f"{size_text(free)} of free memory cannot hold working sets past twice the last cache "
                            f"({size_text(2 * last)}): main memory is not measured, its plateau left unconstrained")
        beyond = fits or (min(beyond),)
    beyond_strides = tuple(s for s in strides if s in ((1, 16) if quick else (1, 4, 16, 64))) or tuple(strides[:1])
    counts = core_counts(multicore_cores) if multicore_cores else []
    shape = _Shape(per_octave=0.6 if quick else 2.0, min_per_level=2 if quick else 4, beyond=beyond,
                   strides=tuple(strides), beyond_strides=beyond_strides, samples=samples, random=random,
                   multicore_counts=tuple(sorted({1, counts[-1]}) if quick else counts) if counts else ())
    fixed = [(name, s * (cost.quick_fraction if quick else 1.0)) for name, s in cost.fixed_s]
    synchronised = 2 * cost.synchronised_s[1 if quick else 0]  # at most two rank counts
    fixed += [(name, s * (cost.quick_fraction if quick else 1.0) + (synchronised if name == "MPI" else 0.0))
              for name, s in cost.mpi_s] if mpi else []
    chosen: ProbePlan | None = None
    given_up: list[str] = []
    for what, candidate in _trims(shape):
        if what:
            given_up.append(what)
        points = _points(caches, candidate, min_size, min_loads, min_time, cost)
        top = max(p.size_bytes for p in points) / last
        phases = (("MultiMAPS", sum(p.seconds for p in points)), ("hit rates", _hitsim_seconds(points, caches, cost)),
                  ("streams and triad", _stream_seconds(caches, top, vector_sizes, samples, min_time, cost)),
                  *fixed, ("GA fit", _ga_seconds(points, population, generations, cost)))
        if candidate.multicore_counts:
            phases += (("multicore", _multicore_seconds(caches, candidate.multicore_counts, multicore_samples,
                                                        cost)),)
        chosen = ProbePlan(tuple(points), phases, last, budget, tuple(given_up), unreached, tuple(warnings),
                           candidate.multicore_counts)
        if chosen.estimate_s <= budget:
            break
    assert chosen is not None
    if chosen.estimate_s > budget:
        chosen = replace(chosen, warnings=(*chosen.warnings, f"estimated {chosen.estimate_s:.0f} s, over the "
                                                             f"{budget:.0f} s budget even trimmed"))
    return chosen
