"""The profile's price of a subscript in a Python program (``cpython.subscripts``).

``ma run --counters ccalls`` counts a program's subscript instructions per site apart from its calls
(``Site.subscripts``). On a NumPy array each is a dispatch into compiled code that builds an index and a view
(``lhs[i]``, ``row[:, 3:5]``, ``fac[:, None]``, ``r[0:3]``) or stores into one (the ``STORE_SUBSCR`` of an
augmented assignment ``x[0:3] -= y``, which copies the updated view onto itself). This module times one
subscript of each of those kinds, on arrays shaped like the ports' (a 5-D work array and 4-D and 3-D views of
it, a few points per plane, so the data costs nothing), as the time of a loop of ten of them less the same
loop with the subscripts left out, over ten. ``seconds``, the price the maps backend charges per counted
subscript, is their mean: the ports make each kind about as often (SP's row loops: a row, a column pair, a
broadcast axis, a block of variables, and the store of every ``x[a:b] -= ...``).

Beside it, measured the same way and kept to say what the call price leaves out (not charged: the counter
cannot see a call's operands): ``view_ufunc_s``, an in-place ufunc broadcasting a (3, 1, 4, 4) array into a
strided (3, 2, 4, 4) view of the 5-D array (``row[:, 3:5] *= fac[:, None]``: NumPy's general iterator), and
``contiguous_ufunc_s``, the same in-place ufunc on a contiguous array of the view's shape (the trivial loop, as
the 8-double add of ``cpython.call_overhead_s``).
"""

# ruff: noqa: E702, B018 (the timed loops are lines of bare subscripts: those statements are the measurement)
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from ma_core.errors import SubscriptProbeError

FIELD = "cpython.subscripts"
KINDS = ("row_5d", "slice_4d", "newaxis_3d", "slice_3d", "store_3d")
PLANE = 4  # points per side of a cell's plane: (n, 3, 5, 4, 4) doubles, all in L1
PER_LOOP = 10  # subscripts per iteration of a timed loop

Timed = Callable[[int], None]


def _statements() -> dict[str, tuple[Timed, Timed]]:
    """Each kind's loop of PER_LOOP subscripts and its bare twin (the same names loaded, nothing subscripted)."""
    import numpy as np

    lhs = np.ones((6, 3, 5, PLANE, PLANE))
    row, fac, r = lhs[1], np.ones((3, PLANE, PLANE)), np.ones((5, PLANE, PLANE))
    view = r[0:3]

    def row_5d(reps: int) -> None:
        for _ in range(reps):
            lhs[1]; lhs[2]; lhs[1]; lhs[2]; lhs[1]; lhs[2]; lhs[1]; lhs[2]; lhs[1]; lhs[2]

    def slice_4d(reps: int) -> None:
        for _ in range(reps):
            row[:, 3:5]; row[:, 3:5]; row[:, 3:5]; row[:, 3:5]; row[:, 3:5]
            row[:, 3:5]; row[:, 3:5]; row[:, 3:5]; row[:, 3:5]; row[:, 3:5]

    def newaxis_3d(reps: int) -> None:
        for _ in range(reps):
            fac[:, None]; fac[:, None]; fac[:, None]; fac[:, None]; fac[:, None]
            fac[:, None]; fac[:, None]; fac[:, None]; fac[:, None]; fac[:, None]

    def slice_3d(reps: int) -> None:
        for _ in range(reps):
            r[0:3]; r[0:3]; r[0:3]; r[0:3]; r[0:3]; r[0:3]; r[0:3]; r[0:3]; r[0:3]; r[0:3]

    def store_3d(reps: int) -> None:
        for _ in range(reps):
            r[0:3] = view; r[0:3] = view; r[0:3] = view; r[0:3] = view; r[0:3] = view
            r[0:3] = view; r[0:3] = view; r[0:3] = view; r[0:3] = view; r[0:3] = view

    def bare(name: Any) -> Timed:
        def loads(reps: int) -> None:
            for _ in range(reps):
                name; name; name; name; name; name; name; name; name; name
        return loads

    return {"row_5d": (row_5d, bare(lhs)), "slice_4d": (slice_4d, bare(row)), "newaxis_3d": (newaxis_3d, bare(fac)),
            "slice_3d": (slice_3d, bare(r)), "store_3d": (store_3d, bare(view))}


def _ufuncs() -> tuple[Timed, Timed, Timed]:
    """The in-place ufunc on a strided view with a broadcast operand, on a contiguous array of its shape with
    one of that shape, and the empty loop both are measured against."""
    import numpy as np

    lhs = np.ones((6, 3, 5, PLANE, PLANE))
    view, scale = lhs[1][:, 3:5], np.ones((3, 1, PLANE, PLANE))
    dense, other = np.ones((3, 2, PLANE, PLANE)), np.ones((3, 2, PLANE, PLANE))

    def on_view(reps: int) -> None:
        for _ in range(reps):
            np.multiply(view, scale, out=view)

    def on_dense(reps: int) -> None:
        for _ in range(reps):
            np.multiply(dense, other, out=dense)

    def empty(reps: int) -> None:
        for _ in range(reps):
            pass

    return on_view, on_dense, empty


def _difference(timed: Timed, bare: Timed, reps: int, rounds: int) -> float:
    """Median over ``rounds`` of (seconds of ``timed`` - seconds of ``bare``) per iteration, the two timed
    alternately so that both see the same moments of the host."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        timed(reps)
        middle = time.perf_counter()
        bare(reps)
        samples.append(((middle - started) - (time.perf_counter() - middle)) / reps)
    return statistics.median(samples)


def measure(quick: bool = False) -> dict[str, Any]:
    """The ``subscripts`` block of the ``cpython`` section: seconds per subscript by kind, their mean, and the two
    in-place ufuncs."""
    reps, rounds = (500, 7) if quick else (2000, 25)
    kinds = {name: _difference(timed, bare, reps, rounds) / PER_LOOP
             for name, (timed, bare) in _statements().items()}
    on_view, on_dense, empty = _ufuncs()
    ufuncs = {"view_ufunc_s": _difference(on_view, empty, reps, rounds),
              "contiguous_ufunc_s": _difference(on_dense, empty, reps, rounds)}
    bad = {k: v for k, v in {**kinds, **ufuncs}.items() if not v > 0}
    if bad:
        raise SubscriptProbeError(f"subscript probe: timed no slower than its bare loop: {bad}")
    return {"seconds": statistics.fmean(kinds.values()), "kinds_s": kinds, **ufuncs, "plane": PLANE,
            "repeats": rounds, "loops_per_timing": reps}
