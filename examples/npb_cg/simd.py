"""How many doubles one load or store of NumPy's arithmetic loops moves on this CPU.

NumPy 2 compiles its float64 add/subtract/multiply loops for several instruction sets and picks one at
import from its own CPU detection (``__cpu_features__``): AVX-512 (X86_V4, 8 doubles per instruction), AVX2
(X86_V3, 4), else its SSE baseline (2). The Valgrind tool counts one load or store per instruction, and
Valgrind's virtual CPU has no AVX-512, so the same kernel counts 4 doubles per access under it and 8 natively
on a Zen 4: the loadstore expressions of the ports divide by this value, declared as the input ``vlen``.
``einsum`` (the dot products) is compiled for the baseline only: 2 doubles per access everywhere.
"""

from __future__ import annotations

BASELINE_DOUBLES = 2  # SSE: 128-bit registers


def ufunc_doubles() -> int:
    """8, 4 or 2: doubles per access of the dispatched float64 arithmetic loops, as NumPy sees this CPU."""
    import numpy as np

    core = getattr(np, "_core", None) or np.core  # NumPy 2, else 1.x
    features: dict[str, bool] = core._multiarray_umath.__cpu_features__
    if features.get("X86_V4") or features.get("AVX512_SKX"):
        return 8
    if features.get("X86_V3") or features.get("AVX2"):
        return 4
    return BASELINE_DOUBLES
