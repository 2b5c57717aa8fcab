"""SciPy's compiled CSR product on a matrix in L1, by entries per row: the profile's ``cpu.csr_rows``.

Seconds per nonzero of ``_sparsetools.csr_matvec`` (what ``A @ x`` runs) on a matrix in L1, by entries per row
(:func:`measure_csr_rows`). Each row is a chain of dependent adds (``sum += a[k] * x[col[k]]``); an out-of-order
core overlaps the chains of neighbouring rows, so short rows run at the loads' issue rate and long rows at the add
latency. The maps backend prices a kernel stated as such a row loop on this curve (``backends/maps/rowchain.py``).
It is a compiled kernel's price, whatever language calls it; it is timed from Python because SciPy's kernel is the
one at hand, with the call's cost taken out (the difference of two matrix sizes).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from ma_core.errors import ProbeError

# The CSR curve: entries per row; two matrices of each (their nonzeros), random sorted columns of an x of
# CSR_COLUMNS doubles: values, indices, row starts, x and y of the larger take 29 KiB, within a 32 KiB L1
# (a matrix in L2, 8 times larger, measured within 4 % of it: the chains, not the loads, set the rate).
CSR_ROW_LENGTHS = (2, 8, 32, 64, 128, 256, 1024)
CSR_NONZEROS, CSR_COLUMNS = (1024, 2048), 512
CSR_ROUNDS = 4  # rounds of timings a row length may take before the probe gives up


def _seconds_per_call(call: Callable[[], object], per_timing: int) -> float:
    """One timing of ``per_timing`` calls: seconds per call."""
    started = time.perf_counter()
    for _ in range(per_timing):
        call()
    return (time.perf_counter() - started) / per_timing


def _csr_product(nonzeros: int, per_row: int, rng: Any) -> Callable[[], object]:
    """One call of SciPy's compiled CSR product on a matrix of ``nonzeros`` entries, ``per_row`` a row, random
    sorted columns of an x of :data:`CSR_COLUMNS` doubles."""
    import numpy as np
    from scipy.sparse import _sparsetools

    rows = nonzeros // per_row
    columns = np.sort(rng.integers(0, CSR_COLUMNS, size=(rows, per_row)), axis=1).ravel().astype(np.int32)
    starts = np.arange(0, rows * per_row + 1, per_row, dtype=np.int32)
    values, x, y = rng.random(rows * per_row), rng.random(CSR_COLUMNS), np.zeros(rows)
    return lambda: _sparsetools.csr_matvec(rows, CSR_COLUMNS, starts, columns, values, x, y)


def measure_csr_rows(quick: bool = False) -> dict[str, list[float]]:
    """Seconds per nonzero of SciPy's CSR product in cache at each of :data:`CSR_ROW_LENGTHS` entries per row:
    the difference of the fastest timings of the two matrix sizes over their extra nonzeros, so the per-call
    cost drops out (as for the flop rates)."""
    import numpy as np

    rng = np.random.default_rng(12345)
    # the two sizes differ by about half a microsecond a call, a fraction of the call's own cost: their timings
    # alternate, so that both fastest ones come from the same moments of the host (a few ms a row length)
    per_timing, repeats = (200, 9) if quick else (200, 25)
    small, large = CSR_NONZEROS
    seconds = []
    for per_row in CSR_ROW_LENGTHS:
        pair = (_csr_product(large, per_row, rng), _csr_product(small, per_row, rng))
        best = [math.inf, math.inf]
        # A burst of the host's noise over one round can hide the half microsecond: more rounds before giving up
        for _ in range(CSR_ROUNDS):
            for _ in range(repeats):
                best = [min(b, _seconds_per_call(call, per_timing)) for b, call in zip(best, pair, strict=True)]
            if best[0] > best[1]:
                break
        else:
            raise ProbeError(f"CSR probe: the CSR product with {per_row} entries per row timed no slower on "
                             f"{large} nonzeros than on {small} in {CSR_ROUNDS} rounds of {repeats} timings")
        seconds.append((best[0] - best[1]) / (large - small))
    return {"entries_per_row": [float(k) for k in CSR_ROW_LENGTHS], "seconds_per_entry": seconds}
