"""Measuring the multicore MultiMAPS block (:mod:`.multicore`): the stride-1 read and the triad on k cores at once.

For each k of :func:`core_counts` (1, 2, 4, ... and the host's cores), k processes, one pinned to each of k
cores (:func:`pick_cpus`: one hardware thread per physical core where sysfs says which are siblings), each
allocate their own arrays at every per-core working set of :func:`working_sets`, then run every sample in step:
a barrier, an untimed pass (the arrays back into the caches they use), a barrier, the timed loop. A sample's
per-core bandwidth is the bytes one core moved over the slowest core's time, so no core is counted as done while
another still competes with it for the memory. The repetitions are calibrated once, on one core (the parent,
pinned): with more cores a run only lasts longer. Processes are spawned (not forked), so nothing of the
parent's threads or locks is inherited.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import statistics
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ma_core.errors import ProbeError

from . import levels
from .kernels import Kernels, aligned_array, build_kernels, calibrate
from .multicore import GB, MEMORY, VERSION
from .profile import CacheLevel

FloatArray = npt.NDArray[np.float64]
WORD = 8
LINE = 64
MIN_TIME_S = 0.01  # long beside the start's skew across processes (a barrier: tens of microseconds)
BARRIER_TIMEOUT_S = 120.0


def core_counts(cores: int) -> list[int]:
    """1, 2, 4, ... below ``cores``, then ``cores``."""
    counts, k = [], 1
    while k < cores:
        counts.append(k)
        k *= 2
    return [*counts, cores]


SYSFS_CPU = Path("/sys/devices/system/cpu")


def _core_of(cpu: int, root: Path) -> tuple[str, str]:
    """(package, core) of a CPU; the CPU itself where sysfs does not say."""
    try:
        return ((root / f"cpu{cpu}/topology/physical_package_id").read_text().strip(),
                (root / f"cpu{cpu}/topology/core_id").read_text().strip())
    except OSError:
        return "", str(cpu)


def pick_cpus(allowed: Sequence[int], root: Path = SYSFS_CPU) -> tuple[list[int], int]:
    """The allowed CPUs, one per physical core first (the lowest-numbered thread of each), then the siblings --
    k ranks on k cores, not on k hyperthreads of k/2 cores -- and how many physical cores they span."""
    firsts: list[int] = []
    siblings: list[int] = []
    seen: set[tuple[str, str]] = set()
    for cpu in sorted(allowed):
        core = _core_of(cpu, root)
        (siblings if core in seen else firsts).append(cpu)
        seen.add(core)
    return firsts + siblings, len(firsts)


def working_sets(caches: Sequence[CacheLevel], k: int) -> list[tuple[int, str]]:
    """Per-core working sets of a k-core run and the level that holds the k of them together: half the first
    private level past L1 (or L1), each core's half share of the last cache, and main memory (together twice the
    last cache, each at least 8 x the level inside the last)."""
    names = levels.level_names(len(caches))
    last = caches[-1].size_bytes
    inner = caches[-2].size_bytes if len(caches) > 1 else caches[0].size_bytes
    private = (caches[1] if len(caches) > 2 else caches[0]).size_bytes // 2
    chosen = {private: names[1] if len(caches) > 2 else names[0],
              last // (2 * k): names[len(caches) - 1],
              max(2 * last // k, 8 * inner): MEMORY}
    return sorted((max(LINE, size // LINE * LINE), level) for size, level in chosen.items())


def _arrays(size: int) -> tuple[FloatArray, tuple[FloatArray, FloatArray, FloatArray]]:
    """The read's array (size bytes) and the triad's three (size bytes together)."""
    words = max(8, size // WORD)
    third = max(8, size // (3 * WORD))
    return aligned_array(words), (aligned_array(third), aligned_array(third), aligned_array(third))


def _worker(library: str, cpu: int, sizes: Sequence[int], reps: Sequence[tuple[int, int]], samples: int,
            barrier: Any, results: Any, rank: int) -> None:
    """One core of a run: its own arrays, every sample in step with the others; puts (rank, seconds)."""
    try:
        if hasattr(os, "sched_setaffinity"):  # elsewhere the OS places the processes
            os.sched_setaffinity(0, {cpu})
        kernels = Kernels(Path(library))
        seconds: list[tuple[list[float], list[float]]] = []
        for size, (read_reps, triad_reps) in zip(sizes, reps, strict=True):
            data, (a, b, c) = _arrays(size)
            read, triad = [], []
            for _ in range(samples):
                barrier.wait(BARRIER_TIMEOUT_S)
                kernels.stride(data, data.size, 1, 1)
                barrier.wait(BARRIER_TIMEOUT_S)
                read.append(kernels.stride(data, data.size, 1, read_reps))
                barrier.wait(BARRIER_TIMEOUT_S)
                kernels.triad(a, b, c, 1)
                barrier.wait(BARRIER_TIMEOUT_S)
                triad.append(kernels.triad(a, b, c, triad_reps))
            seconds.append((read, triad))
            del data, a, b, c
        results.put((rank, seconds))
    except BaseException as exc:  # the parent reports it; a worker that dies silently would hang the others
        barrier.abort()
        results.put((rank, f"{type(exc).__name__}: {exc}"))


def _calibrate(kernels: Kernels, sizes: Sequence[int], min_time: float) -> list[tuple[int, int]]:
    out = []
    for size in sizes:
        data, (a, b, c) = _arrays(size)
        out.append((calibrate(partial(kernels.stride, data, data.size, 1), min_time),
                    calibrate(partial(kernels.triad, a, b, c), min_time)))
    return out


def _run(library: str, cpus: Sequence[int], sizes: Sequence[int], reps: Sequence[tuple[int, int]],
         samples: int) -> list[list[tuple[list[float], list[float]]]]:
    """Seconds of every core's samples, [core][size] = (read seconds, triad seconds)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(cpus))
    results = context.Queue()
    workers = [context.Process(target=_worker, args=(library, cpu, list(sizes), list(reps), samples, barrier,
                                                     results, rank), daemon=True)
               for rank, cpu in enumerate(cpus)]
    for worker in workers:
        worker.start()
    got: dict[int, Any] = {}
    try:
        while len(got) < len(workers):
            try:
                rank, value = results.get(timeout=1.0)
            except queue.Empty:  # a process that died before it could say why (killed, or failed to start)
                dead = [cpus[r] for r, w in enumerate(workers) if r not in got and w.exitcode not in (None, 0)]
                if dead:
                    barrier.abort()
                    raise ProbeError(f"multicore MultiMAPS: the process on cpu {dead[0]} ended without a result "
                                     f"(exit code {workers[cpus.index(dead[0])].exitcode})") from None
                continue
            got[rank] = value
    finally:
        for worker in workers:
            worker.join(5)
            if worker.is_alive():
                worker.terminate()
    failed = [f"cpu {cpus[r]}: {v}" for r, v in sorted(got.items()) if isinstance(v, str)]
    if failed:
        raise ProbeError(f"multicore MultiMAPS failed on {'; '.join(failed)}")
    return [got[r] for r in range(len(cpus))]


def _per_core(nbytes: int, seconds: Sequence[Sequence[float]], statistic: str) -> tuple[float, list[float]]:
    """Per-core bandwidth of each sample (nbytes over the slowest core's time) and their statistic."""
    samples = [nbytes / max(core[i] for core in seconds) for i in range(len(seconds[0]))]
    return (max(samples) if statistic == "best" else statistics.median(samples)), samples


def measure(caches: Sequence[CacheLevel], counts: Sequence[int] | None = None, samples: int = 5,
            min_time: float = MIN_TIME_S, statistic: str = "median") -> dict[str, Any]:
    """The ``memory.multicore`` block of this host (``counts``: default :func:`core_counts` of its physical
    cores)."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count()
                                                                                                   or 1))
    cpus, cores = pick_cpus(allowed)
    counts = list(counts or core_counts(cores))
    if max(counts) > len(cpus):
        raise ProbeError(f"multicore MultiMAPS: {max(counts)} cores asked, this process may use {len(cpus)}")
    library = str(build_kernels())
    kernels = Kernels(Path(library))
    runs = []
    for k in counts:
        plan = working_sets(caches, k)
        sizes = [size for size, _ in plan]
        if hasattr(os, "sched_setaffinity"):
            previous = os.sched_getaffinity(0)
            os.sched_setaffinity(0, {cpus[0]})
            try:
                reps = _calibrate(kernels, sizes, min_time)
            finally:
                os.sched_setaffinity(0, previous)
        else:
            reps = _calibrate(kernels, sizes, min_time)
        seconds = _run(library, cpus[:k], sizes, reps, samples)
        points = []
        for i, ((size, level), (read_reps, triad_reps)) in enumerate(zip(plan, reps, strict=True)):
            words, third = max(8, size // WORD), max(8, size // (3 * WORD))
            read, read_samples = _per_core(words * WORD * read_reps, [core[i][0] for core in seconds], statistic)
            triad, triad_samples = _per_core(3 * third * WORD * triad_reps, [core[i][1] for core in seconds],
                                             statistic)
            points.append({"size_bytes": size, "level": level, "read_gbs": read / GB, "triad_gbs": triad / GB,
                           "read_samples_gbs": [round(v / GB, 4) for v in read_samples],
                           "triad_samples_gbs": [round(v / GB, 4) for v in triad_samples]})
        runs.append({"cores": k, "cpus": cpus[:k], "points": points})
    return {"version": VERSION, "min_time_s": min_time, "samples": samples, "statistic": statistic, "runs": runs}
