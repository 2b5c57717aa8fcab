"""The host's vector memory bandwidth: unit-stride curves measured with AVX2 (32-byte) loads and stores.

The vector paper (section 4.2) gives the X1E's vector and scalar memory references their own bandwidths
(~34 vs ~4.5 GB/s per MSP). The machine profile's MultiMAPS curves are scalar ones: its strided loop issues
one 8-byte load per element, so in the caches it measures the scalar unit (two loads per cycle), not the
cache; a vectorised loop moves four doubles per load. So the vector backend measures its own curve with
``csrc/simd_bandwidth.c`` (built by the project's toolchain, ``-O2 -mavx2 -mfma``): a triad (two vector
loads, one vector store per four elements; the loops it stands for load and store) over working sets from
4 KiB to four times the last cache, and a read with eight independent vector sums for comparison.

The scalar unit gets its own curve the same way (``scalar_triad``): the same triad in plain C, one 8-byte
load/store per element, compiled without the vectoriser as a scalar build's loop is. The MultiMAPS curve
cannot stand for it in the caches: its loop adds every word it loads, so two adds per cycle cap it below
what a scalar triad (one FMA per three memory operations) moves.

Each point is repeated until a run lasts ``min_time``; the runs are taken in ``samples`` rounds, every round
running every kernel at every working set once (so a burst of load from other processes spoils one run of
many points, not all runs of one, and the scalar and vector curves see the same host), and the best run is
kept (a shared host only ever slows a run down). The curves are kept beside the machine profile
(:func:`sidecar_path`), not in it.
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

from ma_core.errors import BackendError
from ma_core.inputs import read_regular_file

CSRC = Path(__file__).resolve().parent / "csrc" / "simd_bandwidth.c"
ROWS_CSRC = CSRC.with_name("sparse_rows.c")  # the vectorised sparse row loop: built with the vectoriser on
SCHEMA = "ma-vector-simd-bandwidth"
VERSION = 4  # 2 added scalar_triad and gather, 3 sparse_dot, 4 sparse_rows_vectorised; older files still load
VERSIONS = (1, 2, 3, 4)
# curve -> the file version that added it
ADDED_IN = {"scalar_triad": 2, "gather": 2, "sparse_dot": 3, "sparse_rows_vectorised": 4}
ROW_ENTRIES = 32  # entries per row of the vectorised sparse row probe: eight AVX2 vectors, no remainder loop
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
    """The measured curves: ``triad`` (the vector backend's max for vectorised unit-stride loops in the caches),
    ``scalar_triad`` (likewise for scalar unit-stride loops; empty in version 1 files) and ``read``."""

    isa: str
    triad: tuple[SimdPoint, ...]
    read: tuple[SimdPoint, ...] = ()
    measured_at: str = ""
    notes: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    scalar_triad: tuple[SimdPoint, ...] = ()
    gather: tuple[SimdPoint, ...] = ()  # size_bytes: the gathered array's; GB/s: 8 bytes per gathered read
    sparse_dot: tuple[SimdPoint, ...] = ()  # as gather, each read with a value streamed beside it (a CSR row)
    # as sparse_dot, the entries in CSR rows of ROW_ENTRIES, the row loop as GCC vectorises it (sparse_rows.c)
    sparse_rows_vectorised: tuple[SimdPoint, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "version": VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: Any, source: str = "SIMD bandwidth") -> SimdBandwidth:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise BackendError(f"{source}: not a SIMD bandwidth file (expected \"schema\": \"{SCHEMA}\")")
        if data.get("version") not in VERSIONS:
            raise BackendError(f"{source}: SIMD bandwidth file version {data.get('version')!r} is not one this "
                               f"backend reads (expected one of {', '.join(map(str, VERSIONS))})")
        curves = {name: _points(data, name, source) for name in ("triad", "read", *ADDED_IN)}
        try:
            result = cls(str(data["isa"]), curves["triad"], curves["read"], str(data.get("measured_at", "")),
                         str(data.get("notes", "")), dict(data.get("settings", {})), curves["scalar_triad"],
                         curves["gather"], curves["sparse_dot"], curves["sparse_rows_vectorised"])
        except (KeyError, TypeError, ValueError) as exc:
            raise BackendError(f"{source}: bad SIMD bandwidth file ({exc!s}); expected isa, measured_at, notes and "
                               "settings (docs/vector-backend.md)") from None
        for name, version in ADDED_IN.items():
            if data["version"] < version and getattr(result, name):
                raise BackendError(f"{source}: a version {data['version']} SIMD bandwidth file has no {name} (it is "
                                   f"version {version}'s)")
        if not result.triad:
            raise BackendError(f"{source}: the SIMD bandwidth file has no triad points")
        return result

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> SimdBandwidth:
        try:
            data = json.loads(read_regular_file(Path(path)))
        except OSError as exc:
            raise BackendError(f"{path}: cannot read the SIMD bandwidth file: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise BackendError(f"{path}: cannot read the SIMD bandwidth file: {exc}") from None
        return cls.from_json(data, str(path))


def _points(data: dict[str, Any], name: str, source: str) -> tuple[SimdPoint, ...]:
    """The curve ``name`` of a SIMD bandwidth file's JSON (empty when absent)."""
    points = data.get(name, [])
    if not isinstance(points, (list, tuple)):
        raise BackendError(f"{source}: bad SIMD bandwidth file: {name} must be a list of points")
    out = []
    for index, p in enumerate(points):
        try:
            out.append(SimdPoint(int(p["size_bytes"]), float(p["bandwidth_gbs"]),
                                 tuple(float(s) for s in p.get("samples_gbs", ()))))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BackendError(f"{source}: bad SIMD bandwidth file: {name}[{index}] ({exc!s}); expected a point "
                               "with size_bytes and bandwidth_gbs (docs/vector-backend.md)") from None
    return tuple(out)


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
    """Build libmasimd.so with the SDK's build (ma_tools.build); return its path."""
    # no auto-vectoriser: the scalar triad stays scalar; loops on 64 bytes: the scalar triad's loop in one op-cache
    # line (across two it takes two cycles per element on Zen 4, a front-end limit, not the cache's)
    from backends.machine.kernels import TRIAD_HEADER
    from ma_tools.build import build_c
    from ma_tools.toolchain import find_mpicc

    command = [str(find_mpicc()), "-O2", "-mavx2", "-mfma", "-fno-tree-vectorize", "-falign-loops=64", "-g", "-Wall",
               "-Wextra", f"-I{TRIAD_HEADER.parent}", "-fPIC", "-shared", str(CSRC)]
    return build_c("libmasimd.so", command, [CSRC, TRIAD_HEADER], "the SIMD bandwidth probe", force)


def build_rows(force: bool = False) -> Path:
    """Build libmasimdrows.so (the vectorised sparse row loop): as a program's -O3 build on x86-64-v3, the
    vectoriser on; return its path."""
    from ma_tools.build import build_c
    from ma_tools.toolchain import find_mpicc

    command = [str(find_mpicc()), "-O3", "-mavx2", "-mfma", "-falign-loops=64", "-g", "-Wall", "-Wextra", "-fPIC",
               "-shared", str(ROWS_CSRC)]
    return build_c("libmasimdrows.so", command, [ROWS_CSRC], "the sparse row probe", force)


class SimdKernels:
    """ctypes view of libmasimd.so; each kernel returns the seconds of its loop."""

    def __init__(self, path: Path | None = None, rows_path: Path | None = None) -> None:
        self.path = path or build()
        self.rows_path = rows_path or build_rows()
        rows = ctypes.CDLL(str(self.rows_path))
        rows.ma_sparse_rows.argtypes = [ctypes.c_long, *[ctypes.c_void_p] * 5, ctypes.c_size_t]
        rows.ma_sparse_rows.restype = ctypes.c_double
        self._rows = rows
        lib = ctypes.CDLL(str(self.path))
        size_t, ptr = ctypes.c_size_t, ctypes.c_void_p
        lib.ma_simd_supported.restype = ctypes.c_int
        lib.ma_simd_triad.argtypes = [ptr, ptr, ptr, size_t, size_t]
        lib.ma_scalar_triad.argtypes = [ptr, ptr, ptr, size_t, size_t]
        lib.ma_simd_read.argtypes = [ptr, size_t, size_t]
        lib.ma_gather_stream.argtypes = [ptr, size_t, ptr, size_t, size_t]
        lib.ma_sparse_dot.argtypes = [ptr, ptr, size_t, ptr, size_t, size_t]
        for kernel in (lib.ma_simd_triad, lib.ma_scalar_triad, lib.ma_simd_read, lib.ma_gather_stream,
                       lib.ma_sparse_dot):
            kernel.restype = ctypes.c_double
        self._lib = lib

    @property
    def supported(self) -> bool:
        return bool(self._lib.ma_simd_supported())

    def triad(self, a: Any, b: Any, c: Any, reps: int) -> float:
        return float(self._lib.ma_simd_triad(a.ctypes.data, b.ctypes.data, c.ctypes.data, a.size, reps))

    def scalar_triad(self, a: Any, b: Any, c: Any, reps: int) -> float:
        return float(self._lib.ma_scalar_triad(a.ctypes.data, b.ctypes.data, c.ctypes.data, a.size, reps))

    def read(self, a: Any, reps: int) -> float:
        return float(self._lib.ma_simd_read(a.ctypes.data, a.size, reps))

    def gather(self, p: Any, index: Any, reps: int) -> float:
        """Gathers p[index & (p.size - 1)] (p.size a power of two, index uint64, a multiple of 8 long)."""
        return float(self._lib.ma_gather_stream(p.ctypes.data, p.size, index.ctypes.data, index.size, reps))

    def sparse_dot(self, a: Any, p: Any, index: Any, reps: int) -> float:
        """Sums a[k] * p[index[k] & (p.size - 1)] (as :meth:`gather`, a as long as index)."""
        return float(self._lib.ma_sparse_dot(a.ctypes.data, p.ctypes.data, p.size, index.ctypes.data, index.size,
                                             reps))

    def sparse_rows(self, rowstr: Any, colidx: Any, a: Any, p: Any, q: Any, reps: int) -> float:
        """q = A p over q.size CSR rows (rowstr int64 of q.size + 1, colidx int64 below p.size, a as long)."""
        return float(self._rows.ma_sparse_rows(q.size, rowstr.ctypes.data, colidx.ctypes.data, a.ctypes.data,
                                               p.ctypes.data, q.ctypes.data, reps))


def working_sets(last_cache_bytes: int, count: int = 24, smallest: int = 4096, multiple: float = 4.0) -> list[int]:
    """Log-spaced working sets in bytes from ``smallest`` to ``multiple`` x the last cache."""
    import numpy as np

    top = max(smallest * 2, int(multiple * last_cache_bytes))
    return sorted({int(s) for s in np.geomspace(smallest, top, count)})


KERNELS = ("triad", "scalar_triad", "read")  # the curves measure() takes, in the order of each round
GATHER_KERNELS = ("gather", "sparse_dot", "sparse_rows_vectorised")  # at the gathered array's sizes


def measure(sizes: Sequence[int], min_time: float = 1e-3, samples: int = 7, kernels: SimdKernels | None = None,
            notes: str = "", gather_sizes: Sequence[int] = (), index_bytes: int = 0) -> SimdBandwidth:
    """The three curves at ``sizes`` (bytes; each rounded down to whole unrolled iterations), on one core, in
    ``samples`` rounds of one run per kernel and size; the best run of each counts. With ``gather_sizes``
    (powers of two, bytes of the gathered array), the gather and sparse-dot curves too, in the same rounds: random
    reads of the array, their indices (and the sparse dot's values) streamed from arrays of ``index_bytes``
    (beyond the last cache)."""
    from backends.machine.kernels import aligned_array
    from backends.machine.probe import calibrate, pinned

    kernels = kernels or SimdKernels()
    if not kernels.supported:
        raise BackendError("this CPU has no AVX2+FMA: the SIMD bandwidth probe needs them")
    # one pool: the triads' a, b, c are its thirds (prefixes of them per size), the read a prefix of the pool
    third = max(TRIAD_BLOCK, max(sizes) // (3 * WORD) // TRIAD_BLOCK * TRIAD_BLOCK)
    pool = aligned_array(max(3 * third, READ_BLOCK, max(sizes) // WORD // READ_BLOCK * READ_BLOCK))
    a, b, c = pool[:third], pool[third:2 * third], pool[2 * third:]
    runs: dict[tuple[str, int], tuple[Callable[[int], float], int]] = {}  # (kernel, size) -> (run, bytes per rep)
    for size in sizes:
        words = max(TRIAD_BLOCK, size // (3 * WORD) // TRIAD_BLOCK * TRIAD_BLOCK)
        runs["triad", size] = partial(kernels.triad, a[:words], b[:words], c[:words]), 3 * WORD * words
        runs["scalar_triad", size] = partial(kernels.scalar_triad, a[:words], b[:words], c[:words]), 3 * WORD * words
        words = max(READ_BLOCK, size // WORD // READ_BLOCK * READ_BLOCK)
        runs["read", size] = partial(kernels.read, pool[:words]), WORD * words
    if gather_sizes:
        runs.update(_gather_runs(kernels, gather_sizes, index_bytes))
    order = [(kernel, size) for size in sizes for kernel in KERNELS] + [
        (kernel, size) for size in gather_sizes for kernel in GATHER_KERNELS]
    rates: dict[tuple[str, int], list[float]] = {key: [] for key in runs}
    with pinned():
        reps = {key: calibrate(run, min_time) for key, (run, _) in runs.items()}
        for _ in range(samples):
            for key in order:
                run, nbytes = runs[key]
                rates[key].append(nbytes * reps[key] / run(reps[key]) / 1e9)
    curves = {kernel: tuple(SimdPoint(_size_of(kernel, size, runs), max(rates[kernel, size]),
                                      tuple(round(r, 3) for r in rates[kernel, size])) for size in chosen)
              for kernel, chosen in (*((k, sizes) for k in KERNELS), *((k, gather_sizes) for k in GATHER_KERNELS))}
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return SimdBandwidth("avx2+fma", curves["triad"], curves["read"], stamp, notes,
                         {"min_time": min_time, "samples": samples, "statistic": "best",
                          "rounds": "each round runs every kernel at every size once", "index_bytes": index_bytes,
                          "row_entries": ROW_ENTRIES},
                         curves["scalar_triad"], curves["gather"], curves["sparse_dot"],
                         curves["sparse_rows_vectorised"])


def _gather_runs(kernels: SimdKernels, sizes: Sequence[int],
                 index_bytes: int) -> dict[tuple[str, int], tuple[Callable[[int], float], int]]:
    """The gather and sparse-dot kernels per array size: one random index array (fixed seed) for all, the sparse
    dot's values an array as long; 8 bytes per gathered read counted."""
    import numpy as np

    from backends.machine.kernels import aligned_array

    if any(size < WORD or size & (size - 1) for size in sizes):
        raise BackendError(f"gather sizes must be powers of two of at least {WORD} bytes, not {list(sizes)}")
    count = max(ROW_ENTRIES, index_bytes // WORD // ROW_ENTRIES * ROW_ENTRIES)  # whole rows, whole blocks of 8
    index = np.random.default_rng(19).integers(0, 1 << 62, count, dtype=np.uint64)
    array, values = aligned_array(max(sizes) // WORD), aligned_array(count)
    runs: dict[tuple[str, int], tuple[Callable[[int], float], int]] = {
        ("gather", size): (partial(kernels.gather, array[:size // WORD], index), WORD * count) for size in sizes}
    runs.update({("sparse_dot", size): (partial(kernels.sparse_dot, values, array[:size // WORD], index), WORD * count)
                 for size in sizes})
    rowstr = np.arange(0, count + 1, ROW_ENTRIES, dtype=np.int64)
    columns, sums = np.empty(count, dtype=np.int64), aligned_array(count // ROW_ENTRIES)
    runs.update({("sparse_rows_vectorised", size): (partial(_sparse_rows, kernels, rowstr, columns, index, values,
                                                            array[:size // WORD], sums), WORD * count)
                 for size in sizes})
    return runs


def _sparse_rows(kernels: SimdKernels, rowstr: Any, columns: Any, index: Any, values: Any, p: Any, q: Any,
                 reps: int) -> float:
    """The sparse row loop over p: its column indices (the shared random indices below p's size, as the loop has
    them, with no mask in it) written before the timed loop."""
    import numpy as np

    np.bitwise_and(index, np.uint64(p.size - 1), out=columns, casting="unsafe")
    return kernels.sparse_rows(rowstr, columns, values, p, q, reps)


def _size_of(kernel: str, size: int, runs: dict[tuple[str, int], tuple[Callable[[int], float], int]]) -> int:
    """A point's size: the bytes a triad or read run touches; a gather's, its array's (the reads are counted)."""
    return size if kernel in GATHER_KERNELS else runs[kernel, size][1]


def measure_for(machine: Any, **options: Any) -> SimdBandwidth:
    """The curves at :func:`working_sets` of a MachineProfile's caches; the gather curve at powers of two from
    4 KiB to four times the last cache, its indices streamed from twice the last cache."""
    if not machine.caches:
        raise BackendError(f"machine profile {machine.name!r} has no caches: cannot place the SIMD working sets")
    last = machine.caches[-1].size_bytes
    gathers = [1 << bits for bits in range(12, max(13, (4 * last).bit_length()))]
    return measure(working_sets(last), gather_sizes=options.pop("gather_sizes", gathers),
                   index_bytes=options.pop("index_bytes", 2 * last), **options)
