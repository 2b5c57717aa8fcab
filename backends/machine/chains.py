"""The dependent add chain of a compiled dot product: the profile's ``cpu.add_chain_s``.

A compiled sum ``s += a[i] * b[i]`` (a dot product, a CSR row, a norm) built without ``-ffast-math`` keeps the
order of its adds, so each add waits for the one before: the loop runs at one add latency per term, however many
flops the core's peak could do and however fast its two loads arrive from L1. Neither of Eq. 1's rates bounds it
(F(h)'s probe adds into eight independent sums, the flop peak runs independent FMA chains in registers). The
probe times that loop on two arrays in L1 (``csrc/addchain.c``, ``-O2`` like the other memory kernels): seconds
per term. The maps backend prices a kernel a signature states as an add chain (``add_chains``) at it
(:mod:`backends.maps.rowchain`).
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path

from ma_core.errors import ProbeError

from .kernels import CSRC_DIR, aligned_array

ADD_CHAIN_SOURCE = CSRC_DIR / "addchain.c"
# Two arrays of 1024 doubles (16 KiB together, within any L1 of 32 KiB); repetitions of about a millisecond,
# short enough that the fastest of many ran without the host taking the core away.
CHAIN_TERMS = 1024
CHAIN_REPS = 1000


def build_add_chain(force: bool = False) -> Path:
    """Build libmaaddchain.so; return its path."""
    from ma_tools.build import build_c
    from ma_tools.toolchain import find_mpicc

    command = [str(find_mpicc()), "-O2", "-g", "-Wall", "-Wextra", "-fPIC", "-shared", str(ADD_CHAIN_SOURCE)]
    return build_c("libmaaddchain.so", command, [ADD_CHAIN_SOURCE], "the add-chain probe", force)


def measure_add_chain(quick: bool = False) -> float:
    """Seconds per term of a dot product's add chain on L1 data: the fastest of many timings."""
    lib = ctypes.CDLL(str(build_add_chain()))
    lib.ma_add_chain.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    lib.ma_add_chain.restype = ctypes.c_double
    a, b = aligned_array(CHAIN_TERMS), aligned_array(CHAIN_TERMS)
    a.fill(1e-3)
    b.fill(1e-3)
    timings = 9 if quick else 41
    best = min(float(lib.ma_add_chain(a.ctypes.data, b.ctypes.data, CHAIN_TERMS, CHAIN_REPS))
               for _ in range(timings))
    if not best > 0:
        raise ProbeError(f"add-chain probe: {CHAIN_REPS} x {CHAIN_TERMS} terms timed {best} s")
    return best / (CHAIN_REPS * CHAIN_TERMS)


if __name__ == "__main__":  # pragma: no cover - a look at this host's figure
    started = time.perf_counter()
    print(f"{measure_add_chain() * 1e9:.3f} ns per term ({time.perf_counter() - started:.1f} s)")
