"""The host's vector memory bandwidth: unit-stride curves measured with AVX2 (32-byte) loads and stores.

The vector paper (section 4.2) gives the X1E's vector and scalar memory references their own bandwidths
(~34 vs ~4.5 GB/s per MSP). The machine profile's MultiMAPS curves are scalar ones: its strided loop issues
one 8-byte load per element, so in the caches it measures the scalar unit (two loads per cycle), not the
cache; a vectorised loop moves four doubles per load. So the vector backend measures its own curve with
``csrc/simd_bandwidth.c`` (built by the project's toolchain, ``-O2 -mavx2 -mfma``): a triad (two vector
loads, one vector store per four elements; the loops it stands for load and store) over working sets from
4 KiB to four times the last cache, and a read with eight independent vector sums for comparison. Each
point is repeated until a run lasts ``min_time`` and the best of ``samples`` runs is kept (a shared host only
ever slows a run down). The curve is kept beside the machine profile (:func:`sidecar_path`), not in it.
"""

from __future__ import annotations

import ctypes
import datetime
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ma.errors import BackendError

CSRC = Path(__file__).resolve().parent / "csrc" / "simd_bandwidth.c"
SCHEMA = "ma-vector-simd-bandwidth"
VERSION = 1
WORD = 8
TRIAD_BLOCK, READ_BLOCK = 16, 32  # doubles per unrolled iteration of each kernel


@dataclass(frozen=True)
class SimdPoint:
    """One working set's bandwidth in GB/s (bytes the kernel names: triad 24 per element, read 8)."""

    size_bytes: int
    bandwidth_gbs: float
    samples_gbs: tuple[float, ...] = ()


@dataclass(frozen=True)
class SimdBandwidth:
    """The measured curves: ``triad`` (the vector backend's max for vectorised unit-stride loops) and ``read``."""

    isa: str
    triad: tuple[SimdPoint, ...]
    read: tuple[SimdPoint, ...] = ()
    measured_at: str = ""
    notes: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "version": VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: Any, source: str = "SIMD bandwidth") -> SimdBandwidth:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise BackendError(f"{source}: not a SIMD bandwidth file (expected \"schema\": \"{SCHEMA}\")")
        try:
            curves = {name: tuple(SimdPoint(int(p["size_bytes"]), float(p["bandwidth_gbs"]),
                                            tuple(float(s) for s in p.get("samples_gbs", ())))
                                  for p in data.get(name, ())) for name in ("triad", "read")}
            result = cls(str(data["isa"]), curves["triad"], curves["read"], str(data.get("measured_at", "")),
                         str(data.get("notes", "")), dict(data.get("settings", {})))
        except (KeyError, TypeError, ValueError) as exc:
            raise BackendError(f"{source}: bad SIMD bandwidth file ({exc!s}); expected points with size_bytes "
                               "and bandwidth_gbs (docs/vector-backend.md)") from None
        if not result.triad:
            raise BackendError(f"{source}: the SIMD bandwidth file has no triad points")
        return result

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> SimdBandwidth:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise BackendError(f"{path}: cannot read the SIMD bandwidth file: {exc}") from None
        return cls.from_json(data, str(path))


def sidecar_path(profile: str | Path) -> Path:
    """Where a machine profile's SIMD curve is kept: ``host.json`` -> ``host.simd.json``."""
    path = Path(profile)
    return path.with_name(path.stem + ".simd.json")


def for_profile(profile: str | Path | None) -> SimdBandwidth | None:
    """The SIMD curve stored beside a machine profile file, None when there is none."""
    if profile is None or not sidecar_path(profile).is_file():
        return None
    return SimdBandwidth.load(sidecar_path(profile))


def build(force: bool = False) -> Path:
    """Build libmasimd.so with the project's toolchain; return its path."""
    from ma_runtime import pmpi, toolchain

    target = toolchain.build_dir() / "libmasimd.so"
    command = [str(toolchain.find_mpicc()), "-O2", "-mavx2", "-mfma", "-g", "-Wall", "-Wextra", "-fPIC", "-shared",
               str(CSRC)]
    return pmpi._build(target, command, [CSRC], "the SIMD bandwidth probe", force)


class SimdKernels:
    """ctypes view of libmasimd.so; each kernel returns the seconds of its loop."""

    def __init__(self, path: Path | None = None) -> None:
        lib = ctypes.CDLL(str(path or build()))
        size_t, ptr = ctypes.c_size_t, ctypes.c_void_p
        lib.ma_simd_supported.restype = ctypes.c_int
        lib.ma_simd_triad.argtypes = [ptr, ptr, ptr, size_t, size_t]
        lib.ma_simd_read.argtypes = [ptr, size_t, size_t]
        lib.ma_simd_triad.restype = lib.ma_simd_read.restype = ctypes.c_double
        self._lib = lib

    @property
    def supported(self) -> bool:
        return bool(self._lib.ma_simd_supported())

    def triad(self, a: Any, b: Any, c: Any, reps: int) -> float:
        return float(self._lib.ma_simd_triad(a.ctypes.data, b.ctypes.data, c.ctypes.data, a.size, reps))

    def read(self, a: Any, reps: int) -> float:
        return float(self._lib.ma_simd_read(a.ctypes.data, a.size, reps))


def _aligned(words: int) -> Any:
    """A float64 array of ``words`` elements on a 64-byte boundary, every page touched."""
    import numpy as np

    raw = np.empty(words + 8, dtype=np.float64)
    offset = (-raw.ctypes.data % 64) // WORD
    array = raw[offset:offset + words]
    array.fill(1.0)
    return array


def _best_of(run: Callable[[int], float], nbytes: int, min_time: float, samples: int) -> SimdPoint:
    """Repetitions for a run of at least ``min_time``, then the best of ``samples`` runs (after a warm-up run)."""
    reps = 1
    while (elapsed := run(reps)) < min_time:
        reps = max(reps * 2, int(reps * min_time / max(elapsed, 1e-9) * 1.2))
    seconds = [run(reps) for _ in range(samples)]
    rates = [nbytes * reps / s / 1e9 for s in seconds]
    return SimdPoint(nbytes, max(rates), tuple(round(r, 3) for r in rates))


def working_sets(last_cache_bytes: int, count: int = 24, smallest: int = 4096, multiple: float = 4.0) -> list[int]:
    """Log-spaced working sets in bytes from ``smallest`` to ``multiple`` x the last cache."""
    import numpy as np

    top = max(smallest * 2, int(multiple * last_cache_bytes))
    return sorted({int(s) for s in np.geomspace(smallest, top, count)})


def measure(sizes: Sequence[int], min_time: float = 1e-3, samples: int = 7, kernels: SimdKernels | None = None,
            notes: str = "") -> SimdBandwidth:
    """Both curves at ``sizes`` (bytes; each rounded down to whole unrolled iterations), on one core."""
    from backends.machine.probe import pinned

    kernels = kernels or SimdKernels()
    if not kernels.supported:
        raise BackendError("this CPU has no AVX2+FMA: the SIMD bandwidth probe needs them")
    triad: list[SimdPoint] = []
    read: list[SimdPoint] = []
    with pinned():
        for size in sizes:
            words = max(TRIAD_BLOCK, size // (3 * WORD) // TRIAD_BLOCK * TRIAD_BLOCK)
            a, b, c = _aligned(words), _aligned(words), _aligned(words)
            triad.append(_best_of(partial(kernels.triad, a, b, c), 3 * WORD * words, min_time, samples))
            words = max(READ_BLOCK, size // WORD // READ_BLOCK * READ_BLOCK)
            x = _aligned(words)
            read.append(_best_of(partial(kernels.read, x), WORD * words, min_time, samples))
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return SimdBandwidth("avx2+fma", tuple(triad), tuple(read), stamp, notes,
                         {"min_time": min_time, "samples": samples, "statistic": "best"})


def measure_for(machine: Any, **options: Any) -> SimdBandwidth:
    """The curves at :func:`working_sets` of a MachineProfile's caches."""
    if not machine.caches:
        raise BackendError(f"machine profile {machine.name!r} has no caches: cannot place the SIMD working sets")
    return measure(working_sets(machine.caches[-1].size_bytes), **options)
