"""The probe's C kernels: built by the SDK's build (ma_tools.build) into the build directory, called through ctypes.

``-O2`` without ``-march=native`` (the memory loops are what a portable build runs); the flop-peak kernels
carry their own target attributes and run only where the CPU has the instructions.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from ma_tools.mpis import MpiInstall

CSRC_DIR = Path(__file__).resolve().parent / "csrc"
TRIAD_HEADER = CSRC_DIR / "ma_triad.h"  # the triad loop multimaps.c shares with the vector backend's SIMD probe
_CFLAGS = ("-O2", "-g", "-Wall", "-Wextra")
FLOP_KERNELS = (("sse2", 1, 2), ("avx2+fma", 2, 4), ("avx512f+fma", 4, 8))  # (name, support bit, lanes)
VECTOR_STREAM_KERNELS = {"sse2": (1, 2), "avx2": (2, 4), "avx512": (4, 8)}  # vector add: isa -> (support bit, lanes)
# Flops per 8-byte word of bandwidth that each measuring loop does itself (what a backend's "net" flop time takes
# out): the triads a = b + q*c one FMA per 3 words; the MultiMAPS random loop one add per access, counted as 12 bytes
# (index and word); its strided loop one add per word loaded.
KERNEL_FLOPS_PER_WORD = {"triad": 2.0 / 3.0, "random": 8.0 / 12.0, "stride": 1.0}


def build_kernels(force: bool = False) -> Path:
    """Build libmaprobe.so (MultiMAPS, random, triad, flop peak); return its path."""
    from ma_tools.build import build_c
    from ma_tools.toolchain import find_mpicc

    source = CSRC_DIR / "multimaps.c"
    command = [str(find_mpicc()), *_CFLAGS, "-fPIC", "-shared", str(source)]
    return build_c("libmaprobe.so", command, [source, TRIAD_HEADER], "the MultiMAPS probe kernels", force)


def build_pingpong(force: bool = False, mpi: MpiInstall | None = None) -> Path:
    """Build the MPI ping-pong program with ``mpi``'s mpicc (default: the selected MPI, ``MA_MPICC`` or the
    environment's) into that MPI's build directory; return its path."""
    from ma_tools import mpis
    from ma_tools.build import build_c

    install = mpi or mpis.selected()
    source = CSRC_DIR / "pingpong.c"
    command = [str(install.mpicc), *_CFLAGS, str(source)]
    return build_c("ma_pingpong", command, [source], f"the MPI ping-pong probe ({install.name})", force,
                   directory=install.build_dir)


def build_hitsim(force: bool = False) -> Path:
    """Build libmahitsim.so (the hit-rate simulation with prefetchers, :mod:`.hitrates`); return its path."""
    from ma_tools.build import build_c
    from ma_tools.toolchain import find_mpicc

    source = CSRC_DIR / "hitsim.c"
    command = [str(find_mpicc()), *_CFLAGS, "-fPIC", "-shared", str(source)]
    return build_c("libmahitsim.so", command, [source], "the hit-rate simulation", force)


def calibrate(run: Callable[[int], float], min_time: float) -> int:
    """Repetitions for one run to last at least min_time (doubling, or jumping when far off)."""
    reps = 1
    while (elapsed := run(reps)) < min_time:
        reps *= 2 if elapsed * 4 > min_time else max(2, int(min_time / max(elapsed, 1e-9) / 2))
    return reps


def aligned_array(words: int) -> npt.NDArray[np.float64]:
    """A float64 array of ``words`` elements starting on a 64-byte cache line, every page touched (the kernels'
    loads then stream whole lines, and no page fault lands inside a timing)."""
    raw = np.empty(words + 8, dtype=np.float64)
    offset = (-raw.ctypes.data % 64) // 8
    array = raw[offset:offset + words]
    array.fill(1.0)
    return array


class Kernels:
    """ctypes view of libmaprobe.so; every method returns the elapsed seconds of its loop."""

    def __init__(self, path: Path | None = None) -> None:
        lib = ctypes.CDLL(str(path or build_kernels()))
        size_t, dbl, ptr = ctypes.c_size_t, ctypes.c_double, ctypes.c_void_p
        lib.ma_multimaps_stride.argtypes = [ptr, size_t, size_t, size_t]
        lib.ma_multimaps_random.argtypes = [ptr, ptr, size_t, size_t]
        lib.ma_triad.argtypes = [ptr, ptr, ptr, size_t, size_t]
        for name in ("ma_multimaps_stride", "ma_multimaps_random", "ma_triad"):
            getattr(lib, name).restype = dbl
        for isa in VECTOR_STREAM_KERNELS:
            function = getattr(lib, f"ma_vector_add_{isa}")
            function.argtypes, function.restype = [ptr, ptr, ptr, size_t, size_t], dbl
        for suffix in ("sse2", "avx2_fma", "avx512_fma"):
            function = getattr(lib, f"ma_flops_{suffix}")
            function.argtypes, function.restype = [size_t], dbl
        lib.ma_flops_supported.restype = ctypes.c_int
        lib.ma_flops_chains.restype = ctypes.c_int
        self._lib = lib
        self.flop_chains = int(lib.ma_flops_chains())

    def stride(self, array: npt.NDArray[np.float64], words: int, stride: int, reps: int) -> float:
        return float(self._lib.ma_multimaps_stride(array.ctypes.data, words, stride, reps))

    def random(self, array: npt.NDArray[np.float64], index: npt.NDArray[np.uint32], reps: int) -> float:
        return float(self._lib.ma_multimaps_random(array.ctypes.data, index.ctypes.data, index.size, reps))

    def triad(self, a: npt.NDArray[np.float64], b: npt.NDArray[np.float64], c: npt.NDArray[np.float64],
              reps: int) -> float:
        return float(self._lib.ma_triad(a.ctypes.data, b.ctypes.data, c.ctypes.data, a.size, reps))

    def flop_kernels(self) -> list[tuple[str, int]]:
        """(name, lanes) of the flop kernels this CPU runs."""
        mask = int(self._lib.ma_flops_supported())
        return [(name, lanes) for name, bit, lanes in FLOP_KERNELS if mask & bit]

    def flops(self, kernel: str, iters: int) -> float:
        suffix = {"sse2": "sse2", "avx2+fma": "avx2_fma", "avx512f+fma": "avx512_fma"}[kernel]
        return float(getattr(self._lib, f"ma_flops_{suffix}")(iters))

    def vector_stream_isa(self) -> tuple[str, int]:
        """The widest vector add stream this CPU runs: (isa, lanes)."""
        mask = int(self._lib.ma_flops_supported())
        return max(((isa, lanes) for isa, (bit, lanes) in VECTOR_STREAM_KERNELS.items() if mask & bit),
                   key=lambda item: item[1])

    def vector_add(self, isa: str, a: npt.NDArray[np.float64], b: npt.NDArray[np.float64],
                   c: npt.NDArray[np.float64], reps: int) -> float:
        """a = b + c with ``isa``'s vector loads and stores; a.size a multiple of its lanes, arrays line-aligned."""
        function = getattr(self._lib, f"ma_vector_add_{isa}")
        return float(function(a.ctypes.data, b.ctypes.data, c.ctypes.data, a.size, reps))
