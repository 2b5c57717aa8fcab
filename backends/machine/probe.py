"""``ma machine probe``: measure a machine profile on this host.

MultiMAPS (Tikir et al. SC07, Figure 2): a strided read over working sets from 1 KiB to past twice the last
cache, strides 1..64 words, plus a random-access curve, as :mod:`.plan` lays them out within the probe's time
budget (its estimate is said before anything runs); each point is repeated until one measurement lasts
``min_time``, then measured ``samples`` times (fewer where one pass is long), and the median kept (every sample
is stored too). The process is
pinned to one core while it measures. Then the flop peak of that core (FMA chains in registers), the STREAM
triad, the vector stream curve (:mod:`.vectorstreams`), and MPI ping-pong latency and bandwidth between two
ranks of the environment's ``mpiexec`` (and, in rounds of exchanges, on twice as many ranks as cores:
``network.oversubscribed``); then the hit rates of every MultiMAPS point on the hierarchy (:mod:`.hitrates`)
and the GA fit (:mod:`.gafit`).
"""

from __future__ import annotations

import datetime
import os
import platform
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ma_core.errors import ProbeError
from ma_core.programs import run_program

from ..cpython import exchange as python_exchange
from ..cpython import probe as cpython_probe
from . import chains, csrrows, gafit, hitrates, levels, multicore_probe, vectorstreams
from . import plan as plans
from .hierarchy import from_sysfs
from .kernels import Kernels, aligned_array, build_pingpong, calibrate
from .profile import GB, VECTOR_STREAMS_VERSION, BandwidthFit, CacheLevel, MachineProfile, MultiMapsPoint, from_json
from .schema import SCHEMA_NAME, SCHEMA_VERSION

if TYPE_CHECKING:
    from ma_tools.mpis import MpiInstall

STRIDES = (1, 2, 4, 8, 16, 32, 64)
OVERSUBSCRIBED_VERSION = 2  # of the network.oversubscribed block (2: with the work curve)
SYNCHRONISED_VERSION = 1  # of the network.synchronised block
SYNCHRONISED_MIN_STREAM_MIB = 64  # each rank's buffer of the synchronised exchange's work, at least
WORD = 8
LINE = 64


@dataclass(frozen=True)
class ProbeSettings:
    """What ``ma machine probe`` measures; :meth:`quick` is the test suite's setting."""

    sizes: int = 48  # twice the vector stream curve's working sets (MultiMAPS's are the plan's: plan.py)
    min_size: int = 1 << 10
    llc_multiple: float = 4.0  # the triad's arrays and the vector stream curve's top, x the last cache (the plan's)
    budget_s: float | None = None  # the probe's time budget (None: plan.FULL_BUDGET_S, or QUICK_BUDGET_S)
    strides: tuple[int, ...] = STRIDES
    min_loads: int = 64  # per pass: with fewer (32 measured), a point times the loop overhead, not the memory
    random: bool = True
    min_time: float = 1e-3  # seconds one timed measurement must last: short, so most escape preemption
    samples: int = 9
    statistic: str = "median"  # of the samples: "median", or "best" on a host others load
    flop_time: float = 2e-3  # short, like min_time: the best of the samples is the peak
    pingpong_sizes: tuple[int, ...] = (8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20)
    pingpong_time: float = 0.02
    # the oversubscribed exchange: a batch lasts many scheduler time slices, so it averages over who runs when
    oversubscribed_time: float = 0.1
    # passes over 32 KiB (under a microsecond each) before each message of the oversubscribed exchange: its work curve
    oversubscribed_work: tuple[int, ...] = (0, 4, 16, 64, 256, 1024, 4096)
    # the synchronised exchange (one rank per core): passes over 32 KiB streamed from memory (a few us each) before
    # each message, and how long a batch lasts (many messages, so a batch holds many late partners)
    synchronised_work: tuple[int, ...] = (0, 1, 4, 16, 64, 256, 1024)
    synchronised_time: float = 0.05
    mpi: bool = True
    multicore: bool = True  # the stride-1 read and triad on k = 1, 2, 4, ... cores at once (multicore_probe.py)
    multicore_samples: int = 5
    fit: bool = True
    ga: gafit.GASettings = field(default_factory=gafit.GASettings)
    penalties: int | None = None  # Equation 1's p_i: None, one per cache level
    is_quick: bool = False  # set by quick(), recorded in the profile

    @classmethod
    def quick(cls) -> ProbeSettings:
        return cls(sizes=12, llc_multiple=plans.BEYOND_QUICK[-1], min_time=2e-4, samples=5, flop_time=5e-4,
                   pingpong_sizes=(8, 4096, 65536), pingpong_time=2e-3, oversubscribed_time=5e-3,
                   oversubscribed_work=(0, 16, 256), synchronised_work=(0, 16, 256), synchronised_time=5e-3,
                   multicore_samples=3,
                   ga=gafit.GASettings(population=400, generations=30, lamarck_every=10, lamarck_evals=400),
                   is_quick=True)


def plan_for(caches: Sequence[CacheLevel], settings: ProbeSettings) -> plans.ProbePlan:
    """The MultiMAPS points these settings measure on ``caches``, and the estimated time of the whole probe."""
    return plans.make_plan(caches, quick=settings.is_quick, strides=settings.strides, samples=settings.samples,
                           min_time=settings.min_time, min_size=settings.min_size, min_loads=settings.min_loads,
                           random=settings.random, vector_sizes=settings.sizes // 2,
                           population=settings.ga.population if settings.fit else 0,
                           generations=settings.ga.generations if settings.fit else 0, mpi=settings.mpi,
                           multicore_cores=_physical_cores() if settings.multicore else 0,
                           multicore_samples=settings.multicore_samples, budget_s=settings.budget_s)


def _physical_cores() -> int:
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return multicore_probe.pick_cpus(sorted(allowed))[1]


def working_sets(caches: Sequence[CacheLevel], settings: ProbeSettings) -> list[int]:
    """The plan's working sets in bytes, whole cache lines, from min_size to past twice the last cache."""
    return plan_for(caches, settings).sizes


@contextmanager
def pinned() -> Iterator[int | None]:
    """Run the block on one core (the first this process may use); yields it, or None where not possible."""
    if not hasattr(os, "sched_setaffinity"):
        yield None
        return
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, allowed)


def _timed(run: Callable[[int], float], min_time: float, samples: int) -> tuple[int, list[float]]:
    """Calibrated repetitions and the seconds of ``samples`` runs of them."""
    reps = calibrate(run, min_time)
    return reps, [run(reps) for _ in range(samples)]


def _progress(total: float, what: str, unit: str = "it") -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=what, unit=unit, disable=not sys.stderr.isatty(), leave=False)


@dataclass
class _Job:
    planned: plans.PlannedPoint
    run: Callable[[int], float]
    reps: int = 1
    seconds: list[float] = field(default_factory=list)


def measure_multimaps(kernels: Kernels, caches: Sequence[CacheLevel], settings: ProbeSettings,
                      rng: np.random.Generator, plan: plans.ProbePlan | None = None) -> list[MultiMapsPoint]:
    """The plan's points (:func:`plan_for` unless given), every one calibrated once, then sampled in rounds over
    all points, so that a burst of load from other processes spoils one sample of many points rather than every
    sample of a few. Each sample follows an untimed pass that brings the array back into the caches the previous
    point used. The progress bar counts the plan's estimated seconds."""
    plan = plan or plan_for(caches, settings)
    data = aligned_array(max(plan.sizes) // WORD)
    jobs: list[_Job] = []
    for point in plan.points:
        words = point.size_bytes // WORD
        if point.pattern == "stride":
            assert point.stride is not None
            jobs.append(_Job(point, partial(kernels.stride, data, words, point.stride)))
        else:
            index = rng.integers(0, words, point.accesses, dtype=np.uint32)
            # both loads of an iteration count (index and data), as they do in its simulated hit rates
            jobs.append(_Job(point, partial(kernels.random, data, index)))
    with _progress(round(sum(p.seconds for p in plan.points), 1), "MultiMAPS", "s") as bar:
        for job in jobs:
            job.reps = calibrate(job.run, settings.min_time)
            bar.update(job.planned.seconds / (job.planned.samples + 1))
        for round_ in range(max(job.planned.samples for job in jobs)):
            for job in jobs:
                if round_ < job.planned.samples:
                    job.run(1)
                    job.seconds.append(job.run(job.reps))
                    bar.update(job.planned.seconds / (job.planned.samples + 1))
    return [_point(job.planned.pattern, job.planned.size_bytes, job.planned.bytes_per_pass * job.reps,
                   job.seconds, job.planned.stride, settings.statistic) for job in jobs]


def _point(pattern: str, size: int, nbytes: int, seconds: Sequence[float], stride: int | None,
           statistic: str) -> MultiMapsPoint:
    samples = [nbytes / s for s in seconds]
    value = max(samples) if statistic == "best" else statistics.median(samples)
    # samples are kept to 4 decimals of GB/s: enough to see their spread
    return MultiMapsPoint(pattern=pattern, size_bytes=size, bandwidth_bytes_per_s=value, stride=stride,
                          samples_bytes_per_s=tuple(round(s / GB, 4) * GB for s in samples))


def measure_flops(kernels: Kernels, settings: ProbeSettings) -> dict[str, Any]:
    """Peak double-precision flop rate of one core: the best of the FMA (or mul+add) kernels it runs."""
    by_isa = {}
    for name, lanes in kernels.flop_kernels():
        reps, seconds = _timed(partial(kernels.flops, name), settings.flop_time, settings.samples)
        by_isa[name] = 2 * lanes * kernels.flop_chains * reps / min(seconds)
    best = vector_isa(by_isa)
    return {"peak_flops": by_isa[best], "isa": best, "by_isa": by_isa}


PEAK_TOLERANCE = 0.03  # two kernels within this of each other reach the same peak (timings spread by ~1 %)


def vector_isa(by_isa: dict[str, float]) -> str:
    """The narrowest ISA (``by_isa`` in the order of ``FLOP_KERNELS``, narrow to wide) that reaches the peak.

    A wider vector that adds no flops is not more vector capacity: Zen 4 runs an AVX-512 FMA as two 256-bit
    halves, so its AVX2 and AVX-512 kernels reach the same peak and the machine's vector is 4 doubles wide;
    taking the faster of two equal rates would make the width flip with timing noise."""
    peak = max(by_isa.values())
    return next(name for name, rate in by_isa.items() if rate >= (1 - PEAK_TOLERANCE) * peak)


def measure_triad(kernels: Kernels, caches: Sequence[CacheLevel], settings: ProbeSettings) -> dict[str, Any]:
    """STREAM triad over three arrays of llc_multiple x the last cache together (every pass misses a cache that
    holds less than half of them); 24 bytes per element, best run."""
    words = max(1 << 12, int(settings.llc_multiple * caches[-1].size_bytes) // (3 * WORD))
    a, b, c = aligned_array(words), aligned_array(words), aligned_array(words)
    reps, seconds = _timed(lambda r: kernels.triad(a, b, c, r), settings.min_time, settings.samples)
    return {"triad_gbs": 3 * WORD * words * reps / min(seconds) / 1e9, "triad_bytes": 3 * WORD * words}


def measure_vector_streams(kernels: Kernels, caches: Sequence[CacheLevel], settings: ProbeSettings) -> dict[str, Any]:
    """The ``memory.vector_streams`` block (:mod:`.vectorstreams`): every point calibrated once, then sampled in
    rounds over all points (as MultiMAPS: a burst of load spoils one sample of many points, not every sample of a
    few)."""
    isa, lanes = kernels.vector_stream_isa()
    jobs = []
    for size in vectorstreams.working_sets(caches, settings.sizes // 2, settings.llc_multiple):
        words = size // (3 * 8) // lanes * lanes
        a, b, c = aligned_array(words), aligned_array(words), aligned_array(words)
        jobs.append((size, words, lambda reps, a=a, b=b, c=c: kernels.vector_add(isa, a, b, c, reps)))
    reps = [calibrate(run, settings.min_time) for _, _, run in jobs]
    # a point whose pass is long is sampled fewer times, as MultiMAPS's (plan.py)
    counts = [settings.samples if n > 1 or run(1) < plans.LONG_PASS_S else min(settings.samples, plans.FEW_SAMPLES)
              for (_, _, run), n in zip(jobs, reps, strict=True)]
    seconds: list[list[float]] = [[] for _ in jobs]
    for round_ in range(settings.samples):
        for i, (_, _, run) in enumerate(jobs):
            if round_ < counts[i]:
                run(1)  # bring the arrays back into the caches the previous point used
                seconds[i].append(run(reps[i]))
    points = []
    for (size, words, _), n, times in zip(jobs, reps, seconds, strict=True):
        samples = [vectorstreams.BYTES_PER_ELEMENT * words * n / s / 1e9 for s in times]
        value = max(samples) if settings.statistic == "best" else statistics.median(samples)
        points.append({"size_bytes": size, "bandwidth_gbs": value, "samples_gbs": [round(s, 3) for s in samples]})
    return {"version": VECTOR_STREAMS_VERSION, "kernel": "vector_add", "isa": isa,
            "bytes_per_element": vectorstreams.BYTES_PER_ELEMENT, "statistic": settings.statistic, "points": points}


def _pingpong_table(ranks: int, min_time: float, settings: ProbeSettings, mode: tuple[str, ...] = (),
                    sizes: Sequence[int] | None = None, statistic: str | None = None,
                    mpi: MpiInstall | None = None) -> list[dict[str, float]]:
    """One-way seconds per message size: ranks 0 and 1's ping-pong, or with ``mode`` ("exchange",) every rank's
    rounds of exchanges (``csrc/pingpong.c``; other modes take amounts of work for ``sizes``), built with ``mpi``'s
    mpicc and started by its own mpiexec (default: the selected MPI)."""
    sizes = settings.pingpong_sizes if sizes is None else sizes
    statistic = statistic or settings.statistic
    rows = _pingpong_rows(ranks, min_time, settings.samples, mode, sizes, mpi)
    return [{"bytes": size, "seconds": best if statistic == "best" else median} for size, median, best in rows]


def _pingpong_rows(ranks: int, min_time: float, batches: int, mode: Sequence[str], sizes: Sequence[int],
                   mpi: MpiInstall | None) -> list[tuple[int, float, float]]:
    """The lines ``csrc/pingpong.c`` prints, one per size: (size, and two seconds whose meaning is the mode's)."""
    from ma_core.errors import LaunchError, ToolBuildError
    from ma_tools import mpilaunch, mpis

    try:
        install = mpi or mpis.selected()
        launch = mpilaunch.launcher(install, ranks, "mpiexec")
        program = build_pingpong(mpi=install)
    except (LaunchError, ToolBuildError) as exc:
        raise ProbeError(f"MPI ping-pong: {exc} (pass --no-mpi to probe without it)") from None
    argv = [*launch.argv, str(program), *mode, str(min_time), str(batches), *map(str, sizes)]
    done = run_program(argv, ProbeError, "MPI ping-pong", timeout=600, env={**os.environ, **launch.env})
    rows = []
    for line in done.stdout.splitlines():
        size, first, second = line.split()
        rows.append((int(size), float(first), float(second)))
    if len(rows) != len(sizes):
        raise ProbeError(f"MPI ping-pong printed {len(rows)} of {len(sizes)} lines:\n{done.stdout}")
    return rows


def _hockney(table: Sequence[Mapping[str, float]]) -> tuple[float, float]:
    """Latency (the smallest message's time) and bandwidth (the best bytes per second) of a ping-pong table."""
    smallest = min(table, key=lambda row: row["bytes"])
    return smallest["seconds"], max(row["bytes"] / row["seconds"] for row in table)


def measure_network(settings: ProbeSettings, mpi: MpiInstall | None = None,
                    last_cache_bytes: int | None = None) -> dict[str, Any]:
    """The ``network`` block of one MPI (default: the selected one, ``MA_MPICC`` or the environment's): ping-pong
    between two ranks started by its own mpiexec (intra-node), then :func:`measure_oversubscribed` and, given the
    last cache's size, :func:`measure_synchronised`. The block names its MPI (``mpi``,
    :attr:`ma_tools.mpis.MpiInstall.name`), which ``ma predict`` matches with a run's."""
    from ma_tools import mpis

    install = mpi or mpis.selected()
    table = _pingpong_table(2, settings.pingpong_time, settings, mpi=install)
    latency, bandwidth = _hockney(table)
    launcher = install.launcher
    # its name, not its path: a profile describes a machine, and is shipped and shared beyond the host it was taken on
    return {"latency_s": latency, "bandwidth_bytes_per_s": bandwidth, "ranks": 2,
            "launcher": launcher.name if launcher else "mpiexec", "mpi": install.name, "pingpong": table,
            "oversubscribed": measure_oversubscribed(settings, mpi=install),
            **({"synchronised": measure_synchronised(settings, last_cache_bytes, mpi=install)}
               if last_cache_bytes and synchronised_rank_counts(_physical_cores()) else {})}


def measure_python_exchange(settings: ProbeSettings, last_cache_bytes: int, latency_s: float | None = None,
                            call_overhead_s: float | None = None) -> dict[str, Any]:
    """The two-rank Python exchange curve (``cpython.exchange``, :mod:`backends.cpython.exchange`), referred to
    the profile's C latency and call cost; the quick setting measures three amounts of work with short batches."""
    quick = python_exchange.QUICK if settings.is_quick else {}
    return python_exchange.measure(last_cache_bytes, statistic=settings.statistic, latency_s=latency_s,
                                   call_overhead_s=call_overhead_s, **quick)


def measure_oversubscribed(settings: ProbeSettings, cores: int | None = None,
                           mpi: MpiInstall | None = None) -> dict[str, Any]:
    """Exchanges on twice as many ranks as this host's cores (``network.oversubscribed``): every rank sends
    and receives in rounds whose partners change (``ma_pingpong exchange``), so a message waits for a partner
    the scheduler has taken off its core, as an application's exchanges and collectives do. The maps backend
    prices messages with it when a run has more ranks than cores."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ranks = 2 * cores
    table = _pingpong_table(ranks, settings.oversubscribed_time, settings, ("exchange",), mpi=mpi)
    latency, bandwidth = _hockney(table)
    return {"version": OVERSUBSCRIBED_VERSION, "pattern": "exchange", "ranks": ranks, "cores": cores,
            "latency_s": latency, "bandwidth_bytes_per_s": bandwidth, "batch_s": settings.oversubscribed_time,
            "pingpong": table, "work": measure_work_curve(settings, ranks, mpi)}


def measure_work_curve(settings: ProbeSettings, ranks: int, mpi: MpiInstall | None = None) -> list[dict[str, float]]:
    """The oversubscribed exchange with work before every message (``ma_pingpong exchange-work``): per amount
    of work, the work's seconds on a core of its own (one rank, the fastest batch) and the wall seconds per
    message on ``ranks`` ranks. A rank that is done polls on its core while its partner waits for one, so the
    wall time grows faster than the time-shared work; the maps backend reads the wait off this curve."""
    passes = sorted(set(settings.oversubscribed_work))
    working = [p for p in passes if p > 0]
    alone = {row["bytes"]: row["seconds"] for row in _pingpong_table(
        1, settings.pingpong_time, settings, ("work",), working, "best", mpi)} if working else {}
    wall = _pingpong_table(ranks, settings.oversubscribed_time, settings, ("exchange-work",), passes, mpi=mpi)
    return [{"passes": int(row["bytes"]), "work_s": alone.get(row["bytes"], 0.0), "seconds": row["seconds"]}
            for row in wall]


def synchronised_rank_counts(cores: int) -> tuple[int, ...]:
    """The rank counts of the synchronised exchange: 2 and, on a larger node, every core (none on one core)."""
    return tuple(sorted({2, cores})) if cores >= 2 else ()


def measure_synchronised(settings: ProbeSettings, last_cache_bytes: int, cores: int | None = None,
                         mpi: MpiInstall | None = None) -> dict[str, Any]:
    """The exchange with work between messages on one rank per core (``network.synchronised``): on k = 2 ranks and
    on as many as the node's physical cores, every rank streams through its own buffer (``ma_pingpong --stream``)
    for an amount of work, then exchanges 8 bytes, as a bulk-synchronous program's steps do. Per amount: the
    work's seconds with all k ranks working at once and no messages (the mean of the ranks': the memory system's
    sharing is in the work) and the wall seconds per message of the exchange. Each message waits for the later of its
    partners, so the wall time exceeds the work by more than the latency as the work grows; the maps backend
    charges that excess per message where every rank has a core (:func:`backends.maps.network.synchronised_wait`).

    Each batch of the exchange is paired with a batch of the work alone run just before it, and the wait is the
    median of the pairs' differences: the host's speed drifts between batches by more than the wait."""
    if cores is None:
        cores = _physical_cores()
    passes = sorted(set(settings.synchronised_work))
    curves = []
    for ranks in synchronised_rank_counts(cores):
        # past the last cache together: each rank's buffer is its share of four times the last cache
        mib = max(SYNCHRONISED_MIN_STREAM_MIB, -(-4 * last_cache_bytes // (ranks << 20)))
        rows = _pingpong_rows(ranks, settings.synchronised_time, settings.samples,
                              ("--stream", str(mib), "synchronised"), passes, mpi)
        curves.append({"ranks": ranks, "stream_mib": mib,
                       "work": [{"passes": count, "work_s": work if count else 0.0, "seconds": wall}
                                for count, wall, work in rows]})
    return {"version": SYNCHRONISED_VERSION, "pattern": "exchange", "cores": cores,
            "batch_s": settings.synchronised_time, "curves": curves}


def simulate_hit_rates(points: Sequence[MultiMapsPoint], caches: Sequence[CacheLevel],
                       rng: np.random.Generator) -> tuple[MultiMapsPoint, ...]:
    """The points with their ``hit_rates`` simulated on ``caches`` (the random curve's with an index stream of the
    same law)."""
    out = []
    with _progress(len(points), "hit rates") as bar:
        for point in points:
            if point.pattern == "stride":
                assert point.stride is not None
                rates = hitrates.stride_hit_rates(caches, point.size_bytes, point.stride, similar=True)
            else:
                words = point.size_bytes // WORD
                index = rng.integers(0, words, plans.random_accesses(point.size_bytes, caches), dtype=np.uint32)
                rates = hitrates.random_hit_rates(caches, point.size_bytes, index)
            out.append(replace(point, hit_rates=tuple(rates)))
            bar.update()
    return tuple(out)


def fit_profile(profile: MachineProfile, ga: gafit.GASettings, penalties: int | None = None) -> MachineProfile:
    """The profile with Equation 1 GA-fitted to its stride curves (the random curve is left out, as a check). The
    fit works in GB/s, the unit of the paper's tables; the profile keeps bytes per second."""
    fitted = [p for p in profile.multimaps if p.pattern == "stride" and p.hit_rates is not None]
    if not fitted:
        raise ProbeError(f"profile {profile.name!r} has no MultiMAPS stride points with hit rates to fit")
    h = np.array([p.hit_rates for p in fitted])
    y = np.array([p.bandwidth_bytes_per_s / GB for p in fitted])
    with _progress(ga.generations, "GA fit") as bar:
        def advance(_generation: int, best: float) -> None:
            bar.set_postfix_str(f"fitness {best:.3g}", refresh=False)
            bar.update()

        result = gafit.fit(h, y, penalties=penalties, settings=ga, progress=advance)
    checked = sorted((p for p in profile.multimaps if p.hit_rates is not None),
                     key=lambda p: (p.pattern != "stride", p.stride or 0, p.size_bytes))
    modelled = result.params.bandwidth([p.hit_rates or [] for p in checked])
    table = gafit.error_table([p.bandwidth_bytes_per_s / GB for p in checked], modelled, [p.curve for p in checked])
    fitted_only = gafit.summarise(gafit.relative_errors(y, result.params.bandwidth(h)))
    fit = BandwidthFit(result.params.scaled(GB),
                       avg_abs_rel_error=fitted_only.avg_abs_rel_error,
                       std_abs_rel_error=fitted_only.std_abs_rel_error,
                       per_curve={k: v.as_dict() for k, v in table.items() if k != "all"},
                       ga={**gafit.settings_dict(ga), "fitness": result.fitness, "seconds": result.seconds,
                           "cpu_seconds": result.cpu_seconds, "fitted_points": len(fitted)},
                       unconstrained_levels=levels.unconstrained_levels(fitted, len(profile.caches)))
    return replace(profile, bandwidth_fit=fit)


def host_info(pinned_cpu: int | None, quick: bool, notes: str) -> dict[str, Any]:
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    except OSError:
        pass
    return {"hostname": socket.gethostname(), "cpu_model": model, "cpus": os.cpu_count() or 1,
            "kernel": platform.release(), "pinned_cpu": pinned_cpu, "quick": quick,
            "measured_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "notes": notes}


class _PhaseClock:
    """Seconds of each part of the probe, named as the plan's estimates are (``bench/probe_plan.py`` compares)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.perf_counter() - started, 2)


def probe(settings: ProbeSettings | None = None, *, caches: Sequence[CacheLevel] | None = None,
          name: str | None = None, notes: str = "", seed: int = 0,
          log: Callable[[str], None] | None = None) -> MachineProfile:
    """Measure this host into a MachineProfile (quick settings for tests: :meth:`ProbeSettings.quick`). The plan
    (:mod:`.plan`) and its estimate are said through ``log`` before anything is measured."""
    cfg = settings or ProbeSettings()
    say = log or (lambda _text: None)
    started = time.perf_counter()
    hierarchy = list(caches) if caches else from_sysfs()
    plan = plan_for(hierarchy, cfg)
    say(plan.summary())
    for warning in plan.warnings:
        say(f"warning: {warning}")
    # the triad and the vector stream curve reach as far past the last cache as MultiMAPS does
    reach = replace(cfg, llc_multiple=plan.top_multiple)
    rng = np.random.default_rng(seed)
    kernels = Kernels()
    clock = _PhaseClock()
    with pinned() as cpu:
        say(f"MultiMAPS: {len(plan.sizes)} sizes, {len(plan.points)} points on cpu {cpu}")
        with clock.phase("MultiMAPS"):
            points = measure_multimaps(kernels, hierarchy, cfg, rng, plan)
        say("flop peak")
        with clock.phase("flops"):
            cpu_info = measure_flops(kernels, cfg)
        say("SciPy's CSR product in cache, by entries per row")
        with clock.phase("csr rows"):
            cpu_info["csr_rows"] = csrrows.measure_csr_rows(cfg.is_quick)
        say("a compiled dot product's add chain in cache")
        with clock.phase("add chain"):
            cpu_info["add_chain_s"] = chains.measure_add_chain(cfg.is_quick)
        say("CPython terms (per-call cost, NumPy flop rate, annotation sites, subscripts)")
        with clock.phase("cpython"):
            cpython = cpython_probe.measure(cfg.is_quick)
        say("triad and the vector stream curve (the host's SIMD loads and stores, as NumPy's loops)")
        with clock.phase("streams and triad"):
            memory = measure_triad(kernels, hierarchy, reach)
            memory["vector_streams"] = measure_vector_streams(kernels, hierarchy, reach)
    if plan.multicore_counts:
        say(f"multicore MultiMAPS: the stride-1 read and the triad on {', '.join(map(str, plan.multicore_counts))} "
            "cores at once")
        with clock.phase("multicore"):
            memory["multicore"] = multicore_probe.measure(hierarchy, plan.multicore_counts,
                                                          samples=cfg.multicore_samples, statistic=cfg.statistic)
    network = None
    if cfg.mpi:
        say("MPI ping-pong (2 ranks; then exchanges on twice as many ranks as cores, and with work on one rank per "
            "core; the Python exchange)")
        with clock.phase("MPI"):
            network = measure_network(cfg, last_cache_bytes=hierarchy[-1].size_bytes)
        with clock.phase("Python exchange"):
            cpython["exchange"] = measure_python_exchange(cfg, hierarchy[-1].size_bytes, network["latency_s"],
                                                          cpython["call_overhead_s"])
    say("hit rates (simulated on the hierarchy, prefetchers included)")
    with clock.phase("hit rates"):
        simulated = simulate_hit_rates(points, hierarchy, np.random.default_rng(seed))
    host = {**host_info(cpu, cfg.is_quick, notes), "estimate_s": round(plan.estimate_s, 1)}
    multimaps = {"word_bytes": WORD, "min_time_s": cfg.min_time, "samples": cfg.samples, "statistic": cfg.statistic,
                 **({"unreached_levels": list(plan.unreached)} if plan.unreached else {}),
                 "points": [p.to_json() for p in simulated]}
    doc = {"schema": SCHEMA_NAME, "version": SCHEMA_VERSION, "name": name or socket.gethostname(),
           "host": host, "caches": [c.to_json() for c in hierarchy],
           "cpu": cpu_info, "memory": memory, "network": network, "cpython": cpython, "multimaps": multimaps}
    profile = from_json(doc, f"<probe of {doc['name']}>")
    if cfg.fit:
        say(f"GA fit: population {cfg.ga.population} x {cfg.ga.generations} generations")
        with clock.phase("GA fit"):
            profile = fit_profile(profile, cfg.ga, cfg.penalties)
    return replace(profile, host=replace(profile.host, probe_seconds=round(time.perf_counter() - started, 1),
                                         phase_seconds=dict(clock.seconds)))
