"""The ``valgrind`` counter provider: exact software counts from the ``maflops`` Valgrind tool.

Hosts without a hardware PMU (most VMs and CI runners) give PAPI no events. There, ``ma run --counters
valgrind`` starts every rank under ``maflops`` (ma_runtime/counters/vgtool, GPL-2), which counts the
floating-point operations and the memory operations of everything the process executes. The provider
reads the running totals through a tiny shim library (csrc/ma_vgclient.c) with one ctypes call per read.

The tool and the shim are built by ``ma tools build`` (ma_tools/valgrind.py) into
``ma_runtime.built.valgrind_dir()``; this module only loads the shim, on first use, and is cheap to import.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self

from ma_runtime.built import read_stamp, valgrind_dir
from ma_runtime.counters.base import CounterProvider, ProviderStatus, Reader

# ctypes is imported where it is used: a rank under Valgrind pays ~50x for every module it imports.

TOOL_NAME = "maflops"
SHIM_NAME = "libmavgclient.so"

_CACHE_VALUES = 6  # MA_VG_CACHE_VALUES of ma_vgcount.h: levels, line accesses, hits of up to 4 levels


class _Totals:
    """A reading of running totals, field by field in the order of the C struct; the difference of two readings
    is what happened between them."""

    def __sub__(self, other: Self) -> Self:
        return type(self)(*(a - b for a, b in zip(self.values(), other.values(), strict=True)))

    def values(self) -> tuple[int, ...]:
        return tuple(getattr(self, field.name) for field in fields(self))  # type: ignore[arg-type]


@dataclass(frozen=True)
class VgCounts(_Totals):
    """One reading of the tool's six running totals (ma_vg_counts of ma_vgcount.h)."""

    dp_flops: int
    sp_flops: int
    loads: int
    stores: int
    load_bytes: int
    store_bytes: int

    @property
    def flops(self) -> int:
        return self.dp_flops + self.sp_flops


@dataclass(frozen=True)
class CacheCounts:
    """One reading of the tool's cache simulation (``--ma-cache``): line accesses (loads and stores, each
    line an access touches) and the accesses each level served, innermost first."""

    accesses: int
    hits: tuple[int, ...]

    def __sub__(self, other: CacheCounts) -> CacheCounts:
        return CacheCounts(self.accesses - other.accesses,
                           tuple(a - b for a, b in zip(self.hits, other.hits, strict=True)))

    def hit_rates(self) -> list[float]:
        """Cumulative h_1..h_n, then 1 for main memory (the machine profile's convention); NaN without accesses."""
        if self.accesses <= 0:
            return [float("nan")] * len(self.hits) + [1.0]
        total, out = 0, []
        for served in self.hits:
            total += served
            out.append(total / self.accesses)
        return [*out, 1.0]


@dataclass(frozen=True)
class VgVecCounts(_Totals):
    """One reading of the tool's vector metrics (the X1E's vector counters in SIMD terms; ma_vg_vec_counts).

    A vector FP instruction does floating-point work in two or more lanes; a vector load (store) reads
    (writes) 16 bytes or more. ``avl`` is the average vector length in lanes of the vector FP
    instructions (0 when there were none).
    """

    vec_flops: int
    scalar_flops: int
    vec_fp_insns: int
    vec_lanes: int
    vec_loads: int
    vec_stores: int
    scalar_loads: int
    scalar_stores: int

    @property
    def avl(self) -> float:
        return self.vec_lanes / self.vec_fp_insns if self.vec_fp_insns else 0.0


_COUNTER_NAMES = tuple(field.name for field in fields(VgCounts))
_VEC_COUNTER_NAMES = tuple(field.name for field in fields(VgVecCounts))


# ---------------------------------------------------------------------------------------------------
# The provider


class _Shim:
    """The loaded client shim with its ctypes signatures."""

    def __init__(self, path: Path) -> None:
        import ctypes

        class CCounts(ctypes.Structure):  # ma_vg_counts of ma_vgcount.h
            _fields_ = [(name, ctypes.c_ulonglong) for name in _COUNTER_NAMES]

        lib = ctypes.CDLL(str(path))
        for name in ("ma_vgc_flops", "ma_vgc_loadstores"):
            getattr(lib, name).restype = ctypes.c_ulonglong
            getattr(lib, name).argtypes = []
        lib.ma_vgc_sum.restype = ctypes.c_ulonglong
        lib.ma_vgc_sum.argtypes = [ctypes.c_ulong]
        lib.ma_vgc_read.restype = ctypes.c_int
        lib.ma_vgc_read.argtypes = [ctypes.POINTER(CCounts)]

        class CVecCounts(ctypes.Structure):  # ma_vg_vec_counts of ma_vgcount.h
            _fields_ = [(name, ctypes.c_ulonglong) for name in _VEC_COUNTER_NAMES]

        lib.ma_vgc_vec_read.restype = ctypes.c_int
        lib.ma_vgc_vec_read.argtypes = [ctypes.POINTER(CVecCounts)]
        self._vec_counts = CVecCounts()
        self._vec_counts_ref = ctypes.byref(self._vec_counts)
        for name in ("ma_vgc_running", "ma_vgc_abi"):
            getattr(lib, name).restype = ctypes.c_int
        for name in ("ma_vgc_tool_version", "ma_vgc_core_version"):
            getattr(lib, name).restype = ctypes.c_long
        lib.ma_vgc_cache_read.restype = ctypes.c_int
        lib.ma_vgc_cache_read.argtypes = [ctypes.POINTER(ctypes.c_ulonglong)]
        for name in ("ma_vgc_sdk_enter", "ma_vgc_sdk_leave"):
            getattr(lib, name).restype = None
            getattr(lib, name).argtypes = []
        self._cache_values = (ctypes.c_ulonglong * _CACHE_VALUES)()
        self.lib = lib
        self.path = path
        self.running = bool(lib.ma_vgc_running())
        self._counts = CCounts()
        self._counts_ref = ctypes.byref(self._counts)

    def cache_read(self) -> CacheCounts | None:
        if self.lib.ma_vgc_cache_read(self._cache_values) == 0:
            return None
        values = list(self._cache_values)
        levels = int(values[0])
        return CacheCounts(int(values[1]), tuple(int(v) for v in values[2:2 + levels]))

    def read(self) -> VgCounts | None:
        if self.lib.ma_vgc_read(self._counts_ref) != 1:
            return None
        return VgCounts(*(getattr(self._counts, name) for name in _COUNTER_NAMES))

    def read_vector(self) -> VgVecCounts | None:
        if self.lib.ma_vgc_vec_read(self._vec_counts_ref) != 1:
            return None
        return VgVecCounts(*(getattr(self._vec_counts, name) for name in _VEC_COUNTER_NAMES))


def _shim_path() -> Path:
    override = os.environ.get("MA_VALGRIND_TOOL_DIR")
    return (Path(override) if override else valgrind_dir()) / SHIM_NAME


def _unpack_version(packed: int, parts: int) -> str:
    digits = []
    for _ in range(parts):
        packed, part = divmod(packed, 100)
        digits.append(str(part))
    return ".".join([str(packed), *reversed(digits)])


class ValgrindProvider(CounterProvider):
    """Flops (DP+SP) and loads+stores from the maflops tool; available only when running under it."""

    name = "valgrind"

    def __init__(self, shim: Path | None = None) -> None:
        self._shim_file = shim
        self._shim: _Shim | None = None
        self._problem: str | None = None
        self._loaded = False

    def _load(self) -> _Shim | None:
        if not self._loaded:
            self._loaded = True
            path = self._shim_file or _shim_path()
            if not path.is_file():
                self._problem = (f"the Valgrind client shim {path} is not built: run 'ma tools build' "
                                 "(or start the program with 'ma run --counters valgrind', which builds it)")
            else:
                try:
                    self._shim = _Shim(path)
                except OSError as exc:
                    self._problem = f"cannot load the Valgrind client shim {path}: {exc}"
                else:
                    if not self._shim.running:
                        self._problem = (f"not running under the {TOOL_NAME} Valgrind tool: start the "
                                         "program with 'ma run --counters valgrind'")
        return self._shim if self._shim is not None and self._shim.running else None

    @property
    def running(self) -> bool:
        return self._load() is not None

    def status(self) -> ProviderStatus:
        shim = self._load()
        if shim is None:
            return ProviderStatus(self.name, False, reason=self._problem)
        core = _unpack_version(shim.lib.ma_vgc_core_version(), 1)  # "3.19": what the tool was built for
        built = str(read_stamp(shim.path.parent).get("valgrind", ""))  # "3.19.0": `valgrind --version`
        valgrind = built if built.split(".")[:2] == core.split(".") else core
        tool = _unpack_version(shim.lib.ma_vgc_tool_version(), 2)
        events = {name: "ok" for name in _COUNTER_NAMES}
        return ProviderStatus(self.name, True, version=f"valgrind-{valgrind} {TOOL_NAME}-{tool}", events=events)

    def reader(self, kind: str) -> Reader | None:
        shim = self._load()
        if shim is None:
            return None
        if kind == "flop":
            return shim.lib.ma_vgc_flops  # one ctypes call per read
        if kind == "loadstore":
            return shim.lib.ma_vgc_loadstores
        return None

    def source(self, kind: str) -> str:
        return {"flop": f"{TOOL_NAME}:dp_flops+sp_flops",
                "loadstore": f"{TOOL_NAME}:loads+stores"}.get(kind, self.name)

    def fence(self) -> tuple[Callable[[], Any], Callable[[], Any]] | None:
        """The shim's SDK fence requests (enter, leave), for the plain-Python runtime (ma_runtime/fence.py); None
        when not under the tool."""
        shim = self._load()
        return (shim.lib.ma_vgc_sdk_enter, shim.lib.ma_vgc_sdk_leave) if shim is not None else None

    def read(self) -> VgCounts | None:
        """All six totals at once (None when not under the tool)."""
        shim = self._load()
        return shim.read() if shim is not None else None

    def cache_read(self) -> CacheCounts | None:
        """The cache simulation's totals (None when not under the tool or it simulates no cache)."""
        shim = self._load()
        return shim.cache_read() if shim is not None else None

    def read_vector(self) -> VgVecCounts | None:
        """The vector metrics at once (None when not under the tool)."""
        shim = self._load()
        return shim.read_vector() if shim is not None else None
