"""SP's operation mix per kernel, and NPB's official operation count read as *normalised* operations.

The ``ma.flop`` expressions count what the port executes, one operation each (add, subtract, multiply,
divide, square root; Valgrind's maflops counts the same). NPB's Mop/s uses a fitted polynomial,
``niter*(881.174 N^3 - 4683.91 N^2 + 11484.5 N - 19272.4)``, whose N^3 term is 51 operations a point
above what NPB 3.4's Fortran executes (830, measured: ``docs/npb-sp.md``). NPB does not say how it
counted; the difference matches the classic *normalised floating-point operation* weights of the
Livermore Fortran Kernels (F. H. McMahon, UCRL-53745, 1986), as tabulated by Hennessy & Patterson
(Computer Architecture: A Quantitative Approach, the section on MFLOPS): add, subtract, compare,
multiply 1; divide, square root 4. SP divides 11 times a point and step, takes one square root and
compares 9 times (the three ``max`` of each direction's lhs), so the convention adds 3*11 + 3 + 9 = 45.

``SPECIAL_OPS`` states, per flop site and call (one cell), how many of the site's counted operations are
divisions and square roots, and the comparisons it executes that the flop expressions leave out (max is
no flop for them or for Valgrind). ``kernel_op_counts`` checks them, and the flop expressions, by
counting the element operations of every NumPy ufunc each kernel calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

# Extra weight of an operation under the normalised convention, over what the flop expressions count:
# a division or square root counts 4 (counted 1), a comparison 1 (counted 0).
NORMALISED_EXTRA = {"divide": 3, "sqrt": 3, "compare": 1}
CONVENTION = ("normalised floating-point operations (Livermore Fortran Kernels, McMahon 1986; Hennessy & "
              "Patterson): +, -, *, compare 1; divide, sqrt 4")

# site -> kind -> operations per call (one cell), in the driver's parameters (rhs.py says what they are)
SPECIAL_OPS: dict[str, dict[str, str]] = {
    "rhs_pointwise": {"divide": "2*(csize+2)^3", "sqrt": "(csize+2)^3"},   # 1/rho, 1/speed; the speed of sound
    "fwd_elim": {"divide": "3*csize*isize^2"},                            # 1/pivot of each factor's row
    "lhs_flops": {"compare": "3*(isize+2)*isize^2"},                      # max of four viscous coefficients
}

FLOP_UFUNCS = ("add", "subtract", "multiply", "divide", "sqrt")
COMPARE_UFUNCS = ("maximum", "minimum")


_TALLY: Counter[str] = Counter()


class _Counting(np.ndarray):
    """An array whose ufunc calls add their element operations to ``_TALLY`` (by ufunc name)."""

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, out: Any = None, **kwargs: Any) -> Any:
        plain = [np.asarray(x) if isinstance(x, _Counting) else x for x in inputs]
        if out is not None:
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, _Counting) else o for o in out)
        result = getattr(ufunc, method)(*plain, **kwargs)
        if method == "__call__":
            _TALLY[ufunc.__name__] += int(np.size(result))
        if out is not None:
            return out[0] if len(out) == 1 else out
        return result.view(_Counting) if isinstance(result, np.ndarray) else result


@contextmanager
def _counting(into: dict[str, Counter[str]], site: str) -> Iterator[None]:
    _TALLY.clear()
    yield
    into.setdefault(site, Counter()).update(_TALLY)


def kernel_op_counts(n: int) -> dict[str, Counter[str]]:
    """Element operations by ufunc name of every kernel of one time step, one process, an n^3 grid.

    Run with annotations off (``MA_DISABLE=1``): the kernels' ``ma`` regions are then no-ops. Keys are
    the flop sites (per-direction sites summed over the three directions; ``back`` is ``back_last`` and
    ``back_subst``); negation (``negative``) is counted but is no flop.
    """
    from .constants import Constants
    from .exact import dissipation, exact_rhs, initialize
    from .layout import make_set
    from .rhs import ALL, FLUX_SITES, fluxes, ninvr_cell, pinvr_cell, pointwise, txinvr_cell, tzetar_cell
    from .solve import _build_lhs, backward, forward, lines
    from .state import U_GHOST, CellData, SPState, box

    no_comm: Any = None                   # one process: the kernels never communicate
    st = SPState(class_name="-", niter=1, layout=make_set(n, 1, 0), k=Constants.make(n, 0.015),
                 comm_setup=no_comm, comm_solve=no_comm, comm_rhs=no_comm)
    initialize(st)
    exact_rhs(st)
    src = st.cells[0]
    cd = CellData(cell=src.cell, u=src.u.view(_Counting), rhs=src.rhs.view(_Counting),
                  forcing=src.forcing.view(_Counting), aux={k: v.view(_Counting) for k, v in src.aux.items()},
                  lhs_buf=src.lhs_buf.view(_Counting), work_buf=src.work_buf.view(_Counting))
    out: dict[str, Counter[str]] = {}
    with _counting(out, "rhs_pointwise"):
        pointwise(st, cd)
    cd.rhs[...] = cd.forcing
    r = cd.rhs[(ALL, *box(cd.cell, 0))]
    for d in range(3):
        with _counting(out, FLUX_SITES[d][0]):
            fluxes(st, cd, d, r)
        with _counting(out, FLUX_SITES[d][1]):
            dissipation(cd.u, cd, d, U_GHOST, st.k.dssp, r)
    with _counting(out, "rhs_dt"):
        r *= st.k.dt
    with _counting(out, "txinvr_flops"):
        txinvr_cell(cd)
    for d, post in enumerate((ninvr_cell, pinvr_cell, tzetar_cell)):
        ls = lines(cd, d)
        with _counting(out, "lhs_flops"):
            _build_lhs(st, cd, d, ls)
        with _counting(out, "fwd_elim"):
            forward(ls, None)
        with _counting(out, "back"):
            backward(ls, None)
        with _counting(out, ("ninvr_flops", "pinvr_flops", "tzetar_flops")[d]):
            post(cd)
    with _counting(out, "add_flops"):
        cd.u[(ALL, *box(cd.cell, U_GHOST))] += cd.rhs[(ALL, *box(cd.cell, 0))]
    return out


def summary(tally: Counter[str]) -> dict[str, int]:
    """flops (as the flop expressions count them), divisions, square roots and comparisons of a tally."""
    return {"flops": sum(tally[u] for u in FLOP_UFUNCS), "divide": tally["divide"], "sqrt": tally["sqrt"],
            "compare": sum(tally[u] for u in COMPARE_UFUNCS)}


def main() -> None:
    """Print the operation mix per kernel of one step at class S and W (one process)."""
    for n in (12, 36):
        counts = kernel_op_counts(n)
        print(f"N = {n}: per kernel, one time step, one process")
        total: Counter[str] = Counter()
        for site, tally in counts.items():
            s = summary(tally)
            total.update(s)
            print(f"  {site:<14} " + "  ".join(f"{k} {v:>9d}" for k, v in s.items()))
        print(f"  {'total':<14} " + "  ".join(f"{k} {v:>9d}" for k, v in total.items()))


if __name__ == "__main__":
    main()
