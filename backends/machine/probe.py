"""``ma machine probe``: measure a machine profile on this host.

MultiMAPS (Tikir et al. SC07, Figure 2): a strided read over working sets from 1 KiB to four times the last
cache, strides 1..64 words, plus a random-access curve; each point is repeated until one measurement lasts
``min_time``, then measured ``samples`` times, and the median kept (every sample is stored too). The process is
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
from typing import Any

import numpy as np

from ma_core.errors import ProbeError
from ma_core.programs import run_program

from ..cpython import exchange as python_exchange
from ..cpython import probe as cpython_probe
from . import csrrows, gafit, hitrates, vectorstreams
from .hierarchy import from_sysfs
from .kernels import Kernels, aligned_array, build_pingpong
from .profile import GB, VECTOR_STREAMS_VERSION, BandwidthFit, CacheLevel, MachineProfile, MultiMapsPoint, from_json
from .schema import SCHEMA_NAME, SCHEMA_VERSION

STRIDES = (1, 2, 4, 8, 16, 32, 64)
OVERSUBSCRIBED_VERSION = 2  # of the network.oversubscribed block (2: with the work curve)
WORD = 8
LINE = 64


@dataclass(frozen=True)
class ProbeSettings:
    """What ``ma machine probe`` measures; :meth:`quick` is the test suite's setting."""

    sizes: int = 48  # log-spaced working sets from min_size to llc_multiple x the last cache
    min_size: int = 1 << 10
    llc_multiple: float = 4.0
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
    mpi: bool = True
    fit: bool = True
    ga: gafit.GASettings = field(default_factory=gafit.GASettings)
    penalties: int | None = None  # Equation 1's p_i: None, one per cache level
    is_quick: bool = False  # set by quick(), recorded in the profile

    @classmethod
    def quick(cls) -> ProbeSettings:
        return cls(sizes=12, llc_multiple=0.25, min_time=2e-4, samples=5, flop_time=5e-4,
                   pingpong_sizes=(8, 4096, 65536), pingpong_time=2e-3, oversubscribed_time=5e-3,
                   oversubscribed_work=(0, 16, 256),
                   ga=gafit.GASettings(population=400, generations=30, lamarck_every=10, lamarck_evals=400),
                   is_quick=True)


def working_sets(caches: Sequence[CacheLevel], settings: ProbeSettings) -> list[int]:
    """Log-spaced sizes in bytes, whole cache lines, from min_size to llc_multiple x the last cache."""
    top = max(settings.min_size * 2, int(settings.llc_multiple * caches[-1].size_bytes))
    sizes = np.geomspace(settings.min_size, top, settings.sizes)
    return sorted({round(s / LINE) * LINE for s in sizes})


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


def calibrate(run: Callable[[int], float], min_time: float) -> int:
    """Repetitions for one run to last at least min_time (doubling, or jumping when far off)."""
    reps = 1
    while (elapsed := run(reps)) < min_time:
        reps *= 2 if elapsed * 4 > min_time else max(2, int(min_time / max(elapsed, 1e-9) / 2))
    return reps


def _timed(run: Callable[[int], float], min_time: float, samples: int) -> tuple[int, list[float]]:
    """Calibrated repetitions and the seconds of ``samples`` runs of them."""
    reps = calibrate(run, min_time)
    return reps, [run(reps) for _ in range(samples)]


def _progress(total: int, what: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=what, disable=not sys.stderr.isatty(), leave=False)


@dataclass
class _Job:
    pattern: str
    size: int
    stride: int | None
    run: Callable[[int], float]
    bytes_per_rep: int
    reps: int = 1
    seconds: list[float] = field(default_factory=list)


def measure_multimaps(kernels: Kernels, caches: Sequence[CacheLevel], settings: ProbeSettings,
                      rng: np.random.Generator) -> list[MultiMapsPoint]:
    """Every point calibrated once, then sampled in rounds over all points, so that a burst of load from other
    processes spoils one sample of many points rather than every sample of a few. Each sample follows an untimed
    pass that brings the array back into the caches the previous point used."""
    sizes = working_sets(caches, settings)
    data = aligned_array(max(sizes) // WORD)
    jobs: list[_Job] = []
    for size in sizes:
        words = size // WORD
        for stride in settings.strides:
            loads = -(-words // stride)
            if loads >= settings.min_loads:
                jobs.append(_Job("stride", size, stride, partial(kernels.stride, data, words, stride), loads * WORD))
        if settings.random:
            index = rng.integers(0, words, words, dtype=np.uint32)
            # both loads of an iteration count (index and data), as they do in its simulated hit rates
            jobs.append(_Job("random", size, None, partial(kernels.random, data, index),
                             words * (WORD + hitrates.INDEX_BYTES)))
    with _progress(len(jobs) * (1 + settings.samples), "MultiMAPS") as bar:
        for job in jobs:
            job.reps = calibrate(job.run, settings.min_time)
            bar.update()
        for _ in range(settings.samples):
            for job in jobs:
                job.run(1)
                job.seconds.append(job.run(job.reps))
                bar.update()
    return [_point(job.pattern, job.size, job.bytes_per_rep * job.reps, job.seconds, job.stride, settings.statistic)
            for job in jobs]


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
    """STREAM triad over three arrays of llc_multiple x the last cache each; 24 bytes per element, best run."""
    words = max(1 << 12, int(settings.llc_multiple * caches[-1].size_bytes) // WORD)
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
    seconds: list[list[float]] = [[] for _ in jobs]
    for _ in range(settings.samples):
        for i, (_, _, run) in enumerate(jobs):
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
                    sizes: Sequence[int] | None = None, statistic: str | None = None) -> list[dict[str, float]]:
    """One-way seconds per message size: ranks 0 and 1's ping-pong, or with ``mode`` ("exchange",) every rank's
    rounds of exchanges (``csrc/pingpong.c``; other modes take amounts of work for ``sizes``)."""
    sizes = settings.pingpong_sizes if sizes is None else sizes
    statistic = statistic or settings.statistic
    from ma_tools import toolchain

    mpiexec = toolchain.find_program("mpiexec")
    if mpiexec is None:
        raise ProbeError("no mpiexec beside this Python or on PATH: install the 'mpich' wheel or pass --no-mpi")
    argv = [str(mpiexec), "-n", str(ranks), str(build_pingpong()), *mode, str(min_time), str(settings.samples),
            *map(str, sizes)]
    done = run_program(argv, ProbeError, "MPI ping-pong", timeout=600)
    table = []
    for line in done.stdout.splitlines():
        nbytes, median, best = line.split()
        table.append({"bytes": int(nbytes), "seconds": float(best if statistic == "best" else median)})
    if len(table) != len(sizes):
        raise ProbeError(f"MPI ping-pong printed {len(table)} of {len(sizes)} lines:\n{done.stdout}")
    return table


def _hockney(table: Sequence[Mapping[str, float]]) -> tuple[float, float]:
    """Latency (the smallest message's time) and bandwidth (the best bytes per second) of a ping-pong table."""
    smallest = min(table, key=lambda row: row["bytes"])
    return smallest["seconds"], max(row["bytes"] / row["seconds"] for row in table)


def measure_network(settings: ProbeSettings) -> dict[str, Any]:
    """The ``network`` block: MPI ping-pong between two ranks started by the environment's mpiexec (intra-node),
    then :func:`measure_oversubscribed`."""
    from ma_tools import toolchain

    table = _pingpong_table(2, settings.pingpong_time, settings)
    latency, bandwidth = _hockney(table)
    launcher = toolchain.find_program("mpiexec")
    # its name, not its path: a profile describes a machine, and is shipped and shared beyond the host it was taken on
    return {"latency_s": latency, "bandwidth_bytes_per_s": bandwidth, "ranks": 2,
            "launcher": launcher.name if launcher else "mpiexec", "pingpong": table,
            "oversubscribed": measure_oversubscribed(settings)}


def measure_python_exchange(settings: ProbeSettings, last_cache_bytes: int, latency_s: float | None = None,
                            call_overhead_s: float | None = None) -> dict[str, Any]:
    """The two-rank Python exchange curve (``cpython.exchange``, :mod:`backends.cpython.exchange`), referred to
    the profile's C latency and call cost; the quick setting measures three amounts of work with short batches."""
    quick = python_exchange.QUICK if settings.is_quick else {}
    return python_exchange.measure(last_cache_bytes, statistic=settings.statistic, latency_s=latency_s,
                                   call_overhead_s=call_overhead_s, **quick)


def measure_oversubscribed(settings: ProbeSettings, cores: int | None = None) -> dict[str, Any]:
    """Exchanges on twice as many ranks as this host's cores (``network.oversubscribed``): every rank sends
    and receives in rounds whose partners change (``ma_pingpong exchange``), so a message waits for a partner
    the scheduler has taken off its core, as an application's exchanges and collectives do. The maps backend
    prices messages with it when a run has more ranks than cores."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ranks = 2 * cores
    table = _pingpong_table(ranks, settings.oversubscribed_time, settings, ("exchange",))
    latency, bandwidth = _hockney(table)
    return {"version": OVERSUBSCRIBED_VERSION, "pattern": "exchange", "ranks": ranks, "cores": cores,
            "latency_s": latency, "bandwidth_bytes_per_s": bandwidth, "batch_s": settings.oversubscribed_time,
            "pingpong": table, "work": measure_work_curve(settings, ranks)}


def measure_work_curve(settings: ProbeSettings, ranks: int) -> list[dict[str, float]]:
    """The oversubscribed exchange with work before every message (``ma_pingpong exchange-work``): per amount
    of work, the work's seconds on a core of its own (one rank, the fastest batch) and the wall seconds per
    message on ``ranks`` ranks. A rank that is done polls on its core while its partner waits for one, so the
    wall time grows faster than the time-shared work; the maps backend reads the wait off this curve."""
    passes = sorted(set(settings.oversubscribed_work))
    working = [p for p in passes if p > 0]
    alone = {row["bytes"]: row["seconds"] for row in _pingpong_table(
        1, settings.pingpong_time, settings, ("work",), working, "best")} if working else {}
    wall = _pingpong_table(ranks, settings.oversubscribed_time, settings, ("exchange-work",), passes)
    return [{"passes": int(row["bytes"]), "work_s": alone.get(row["bytes"], 0.0), "seconds": row["seconds"]}
            for row in wall]


def simulate_hit_rates(points: Sequence[MultiMapsPoint], caches: Sequence[CacheLevel],
                       rng: np.random.Generator) -> tuple[MultiMapsPoint, ...]:
    """The points with their ``hit_rates`` simulated on ``caches`` (the random curve's with an index stream of the
    same law)."""
    out = []
    with _progress(len(points), "hit rates") as bar:
        for point in points:
            if point.pattern == "stride":
                assert point.stride is not None
                rates = hitrates.stride_hit_rates(caches, point.size_bytes, point.stride)
            else:
                words = point.size_bytes // WORD
                index = rng.integers(0, words, words, dtype=np.uint32)
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
                           "cpu_seconds": result.cpu_seconds, "fitted_points": len(fitted)})
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


def probe(settings: ProbeSettings | None = None, *, caches: Sequence[CacheLevel] | None = None,
          name: str | None = None, notes: str = "", seed: int = 0,
          log: Callable[[str], None] | None = None) -> MachineProfile:
    """Measure this host into a MachineProfile (quick settings for tests: :meth:`ProbeSettings.quick`)."""
    cfg = settings or ProbeSettings()
    say = log or (lambda _text: None)
    started = time.perf_counter()
    hierarchy = list(caches) if caches else from_sysfs()
    rng = np.random.default_rng(seed)
    kernels = Kernels()
    with pinned() as cpu:
        say(f"MultiMAPS: {cfg.sizes} sizes x {len(cfg.strides) + int(cfg.random)} curves on cpu {cpu}")
        points = measure_multimaps(kernels, hierarchy, cfg, rng)
        say("flop peak and triad")
        cpu_info = measure_flops(kernels, cfg)
        say("SciPy's CSR product in cache, by entries per row")
        cpu_info["csr_rows"] = csrrows.measure_csr_rows(cfg.is_quick)
        say("CPython terms (per-call cost, NumPy flop rate, annotation sites, subscripts)")
        cpython = cpython_probe.measure(cfg.is_quick)
        memory = measure_triad(kernels, hierarchy, cfg)
        say("vector stream curve (the host's SIMD loads and stores, as NumPy's loops)")
        memory["vector_streams"] = measure_vector_streams(kernels, hierarchy, cfg)
    network = None
    if cfg.mpi:
        say("MPI ping-pong (2 ranks; then exchanges on twice as many ranks as cores; the Python exchange)")
        network = measure_network(cfg)
        cpython["exchange"] = measure_python_exchange(cfg, hierarchy[-1].size_bytes, network["latency_s"],
                                                      cpython["call_overhead_s"])
    say("hit rates (simulated on the hierarchy, prefetchers included)")
    simulated = simulate_hit_rates(points, hierarchy, np.random.default_rng(seed))
    doc = {"schema": SCHEMA_NAME, "version": SCHEMA_VERSION, "name": name or socket.gethostname(),
           "host": host_info(cpu, cfg.is_quick, notes), "caches": [c.to_json() for c in hierarchy],
           "cpu": cpu_info, "memory": memory, "network": network, "cpython": cpython,
           "multimaps": {"word_bytes": WORD, "min_time_s": cfg.min_time, "samples": cfg.samples,
                         "statistic": cfg.statistic, "points": [p.to_json() for p in simulated]}}
    profile = from_json(doc, f"<probe of {doc['name']}>")
    if cfg.fit:
        say(f"GA fit: population {cfg.ga.population} x {cfg.ga.generations} generations")
        profile = fit_profile(profile, cfg.ga, cfg.penalties)
    return replace(profile, host=replace(profile.host, probe_seconds=round(time.perf_counter() - started, 1)))
