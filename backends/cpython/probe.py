"""The CPython probes of ``ma machine probe``: the cost of one call from Python into compiled code, the rate at
which NumPy's vectorised kernels do floating-point work in cache, and the cost of an annotation site (the profile's
``cpython`` section, :mod:`.section`).

PMaC prices flops at the FMA peak because its programs are compiled loops whose time is memory time. A
Python + NumPy program pays two things more: a fixed cost per call into compiled code (argument parsing,
dispatch, the interpreter around it), whatever the data size; and NumPy's inner loops, which reach a few
per cent of the FMA peak. Both are measured once per machine, independently of any application:

- ``calls``: seconds per call of small kernels of the kinds the ports make, each on 8 doubles (so the data
  costs nothing): a ufunc with ``out=`` (``np.add(a, b, out=c)``), a slice assignment (``v[:8] = 0.0``), an
  ``einsum`` dot, and SciPy's sparse matrix-vector product of a 1 x 8 CSR matrix. The median over
  ``repeats`` timings of ``calls_per_timing`` calls each. ``call_overhead_s`` is the ufunc's figure, the
  commonest call of the ports (the others are kept to say how much calls differ; a SciPy product is several
  compiled calls behind one Python operator).
  ``dispatches`` says how many of its statement's dispatches ``ma run --counters ccalls`` counts (a call or a
  binary operator of the program's code counts one, a subscript store none), so per counted dispatch the
  ufunc costs what ``call_overhead_s`` says, a SciPy product or an ``einsum`` several times that.
- ``flops``: the incremental rate of a kernel on arrays that stay in cache (L1 and L2): (t(n_large) -
  t(n_small)) over the extra flops, so the per-call cost drops out, each t the fastest of the timings (a rate
  is a best case, as the FMA peak is). ``python_flops`` is the ufunc ``add``'s rate (1 flop, 2 loads, 1 store
  per element: the ports' vector updates); the ``einsum`` dot's is kept beside it (its C loop is erratic).
- ``annotation_s``: seconds per call of an annotation site of a Python program, by kind: ``region`` (entering
  and leaving one ``with ma.flop(name, expr):`` block; loadstore, memory and subroutine sites are the same
  code), ``loop`` (a loop site with one trip of ``lp.range``, beyond the plain ``range``) and ``mpi`` (an
  ``mpi_irecv`` or ``mpi_send`` site with a ``peer`` expression around a message to the process itself).
  Measured in a child process, the runtime live and writing its trace (:func:`measure_annotation`): each
  loop of annotated blocks against the same loop without them, the median of the per-site differences. An
  annotated program pays it at every site it enters (with ``MA_DISABLE=1`` the no-op blocks cost about the
  same: the ``with`` statement and a call are most of it); NPB CG enters tens of thousands of them.
  Optional: profiles measured before it have none.
- ``subscripts``: seconds per subscript of the kinds the ports make (a view of a row, a column pair, a broadcast
  axis, a block; the store of an augmented slice assignment), their mean the price of each subscript
  ``ma run --counters ccalls`` counts (:mod:`.subscripts`); beside it an in-place broadcasting ufunc on a small
  strided view against the same on a contiguous array. Optional: profiles measured before it have none.

The section carries its own ``version`` (:data:`.section.SECTION_VERSION`). SciPy's CSR product in cache, which
the same probe times, is a compiled kernel's price and the machine's (:mod:`backends.machine.csrrows`).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from ma_core.errors import CPUTermsError

from . import subscripts
from .section import ANNOTATION_KINDS, SECTION_VERSION

CALL_KERNEL = "ufunc_add_8"
FLOPS_KERNEL = "ufunc_add"
DISPATCHES = {"ufunc_add_8": 1, "slice_assign_8": 0, "einsum_dot_8": 1, "sparse_matvec_1row_8": 1}
SMALL, LARGE = 8, 4096  # doubles: 3 x 32 KiB at LARGE stay in any L2 of 256 KiB or more, far from memory


def _median_seconds(call: Callable[[], object], per_timing: int, repeats: int, best: bool = False) -> float:
    """Median (or with ``best`` the minimum) over ``repeats`` of the seconds per call, each timing
    ``per_timing`` calls."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(per_timing):
            call()
        samples.append((time.perf_counter() - started) / per_timing)
    return min(samples) if best else statistics.median(samples)


def _kernels(n: int) -> dict[str, tuple[Callable[[], object], int]]:
    """Each kernel on n doubles, with the flops one call does."""
    import numpy as np
    import scipy.sparse as sp

    a, b, c = np.ones(n), np.ones(n), np.empty(n)
    row = sp.csr_matrix(np.ones((1, n)))
    return {
        "ufunc_add": (lambda: np.add(a, b, out=c), n),
        "slice_assign": (lambda: c.__setitem__(slice(0, n), 0.0), 0),
        "einsum_dot": (lambda: np.einsum("i,i->", a, b), 2 * n),
        "sparse_matvec_1row": (lambda: row @ a, 2 * n),
    }


# A child process, so that the runtime starts there (at its first annotation) and not in the probe. Each
# kind's annotated loop against the same loop bare; expressions of inputs like the ports' sites carry.
_ANNOTATION_SCRIPT = """
import json, statistics, sys, time
import numpy as np
from mpi4py import MPI
import ma
n, repeats = int(sys.argv[1]), int(sys.argv[2])
comm = MPI.COMM_WORLD
me = comm.Get_rank()
out, into = np.zeros(1), np.zeros(1)
for name, value in (("na", 14000), ("nprocs", 4), ("l2npcols", 1), ("dp", 8)):
    ma.variable(name, value)
PEER = "floor(rank/(nprocs/2))*(nprocs/2) + mod(rank + 1, nprocs/2)"
def region():
    for _ in range(n):
        with ma.flop("site", "2*na/nprocs"):
            pass
def loop():
    for _ in range(n):
        with ma.loop("trips", "l2npcols") as lp:
            for _ in lp.range(1, 2):
                pass
def loop_bare():
    for _ in range(n):
        for _ in range(1, 2):
            pass
def mpi():
    for _ in range(n):
        with ma.mpi_irecv("rcv", "dp", peer=PEER):
            req = comm.Irecv(into, source=me, tag=1)
        with ma.mpi_send("snd", "dp", peer=PEER):
            comm.Send(out, dest=me, tag=1)
        req.Wait()
def mpi_bare():
    for _ in range(n):
        req = comm.Irecv(into, source=me, tag=1)
        comm.Send(out, dest=me, tag=1)
        req.Wait()
def empty():
    for _ in range(n):
        pass
def seconds(run):
    t = time.perf_counter(); run(); return time.perf_counter() - t
pairs = {"region": (region, empty, 1), "loop": (loop, loop_bare, 1), "mpi": (mpi, mpi_bare, 2)}
samples = {kind: [] for kind in pairs}
with ma.subroutine("probe"):
    for _ in range(repeats):
        for kind, (annotated, bare, sites) in pairs.items():
            samples[kind].append((seconds(annotated) - seconds(bare)) / n / sites)
print(json.dumps({kind: statistics.median(values) for kind, values in samples.items()}))
"""


def measure_annotation(quick: bool = False) -> dict[str, float]:
    """Seconds per call of an annotation site of a Python program by kind, the runtime live (``annotation_s``)."""
    per_timing, repeats = (1000, 5) if quick else (10000, 15)
    with tempfile.TemporaryDirectory(prefix="ma-annotation-probe-") as traces:
        env = {k: v for k, v in os.environ.items() if k != "MA_DISABLE"} | {"MA_TRACE_DIR": traces}
        done = subprocess.run([sys.executable, "-c", _ANNOTATION_SCRIPT, str(per_timing), str(repeats)],
                              capture_output=True, text=True, env=env, check=False)
    figures = _figures(done.stdout)
    if figures is None:
        raise CPUTermsError(f"annotation probe: the child process (exit {done.returncode}) printed no figures: "
                            f"{(done.stderr or done.stdout).strip()[-400:]}")
    if not all(figures[kind] > 0 for kind in ANNOTATION_KINDS):
        raise CPUTermsError(f"annotation probe: an annotated loop timed no slower than its bare twin ({figures})")
    return figures


def _figures(stdout: str) -> dict[str, float] | None:
    """The child's last line, a JSON object ``{"region": s, "loop": s, "mpi": s}``."""
    try:
        value = json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return None
    if not isinstance(value, dict) or set(value) != set(ANNOTATION_KINDS):
        return None
    return {kind: float(value[kind]) for kind in ANNOTATION_KINDS}


def measure(quick: bool = False) -> dict[str, Any]:
    """The ``cpython`` section of the profile: ``call_overhead_s``, ``python_flops``, ``annotation_s``, the
    kernels' figures (``probe``) and ``subscripts``."""
    per_timing, repeats = (500, 5) if quick else (5000, 15)
    small, large = _kernels(SMALL), _kernels(LARGE)
    calls = {f"{name}_{SMALL}": _median_seconds(call, per_timing, repeats) for name, (call, _) in small.items()}
    flops = {}
    for name, (call, work) in large.items():
        extra = work - small[name][1]
        if extra <= 0 or name == "sparse_matvec_1row":  # a 1-row product is a scalar loop: not a vector kernel
            continue
        slope = (_median_seconds(call, per_timing, repeats, best=True)
                 - _median_seconds(small[name][0], per_timing, repeats, best=True))
        flops[name] = extra / slope if slope > 0 else float("inf")
    if not all(0 < v < float("inf") for v in (*calls.values(), *flops.values())):
        raise CPUTermsError(f"CPU terms: a kernel timed at zero or less (calls {calls}, flops {flops})")
    return {"version": SECTION_VERSION, "call_overhead_s": calls[CALL_KERNEL], "python_flops": flops[FLOPS_KERNEL],
            "annotation_s": measure_annotation(quick),
            "probe": {"call_kernel": CALL_KERNEL, "calls_s": calls, "dispatches": DISPATCHES,
                      "flops_kernel": FLOPS_KERNEL, "flops": flops, "sizes": [SMALL, LARGE], "statistic": "median",
                      "repeats": repeats, "calls_per_timing": per_timing},
            "subscripts": subscripts.measure(quick)}
