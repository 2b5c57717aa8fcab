"""The profile's CPU terms for Python programs: the cost of one call from Python into compiled code, and the
rate at which NumPy's vectorised kernels do floating-point work in cache.

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
- ``csr_rows``: seconds per nonzero of SciPy's compiled CSR product (``_sparsetools.csr_matvec``, what
  ``A @ x`` runs) on a matrix in L1, by entries per row (:func:`measure_csr_rows`). Each row is a chain of
  dependent adds (``sum += a[k] * x[col[k]]``); an out-of-order core overlaps the chains of neighbouring rows, so
  short rows run at the loads' issue rate and long rows at the add latency. The maps backend prices a kernel
  stated as such a row loop on this curve (``backends/maps/rowchain.py``).
- ``subscripts``: seconds per subscript of the kinds the ports make (a view of a row, a column pair, a broadcast
  axis, a block; the store of an augmented slice assignment), their mean the price of each subscript
  ``ma run --counters ccalls`` counts (:mod:`.subscripts`); beside it an in-place broadcasting ufunc on a small
  strided view against the same on a contiguous array. Optional: profiles measured before it have none.

The block carries its own ``version`` (``PYTHON_TERMS_VERSION``) inside ``cpu.python_probe``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ma_core.errors import CPUTermsError, ProfileError

from . import subscripts

PYTHON_TERMS_VERSION = 1
CALL_KERNEL = "ufunc_add_8"
FLOPS_KERNEL = "ufunc_add"
DISPATCHES = {"ufunc_add_8": 1, "slice_assign_8": 0, "einsum_dot_8": 1, "sparse_matvec_1row_8": 1}
SMALL, LARGE = 8, 4096  # doubles: 3 x 32 KiB at LARGE stay in any L2 of 256 KiB or more, far from memory
# The CSR curve: entries per row; two matrices of each (their nonzeros), random sorted columns of an x of
# CSR_COLUMNS doubles: values, indices, row starts, x and y of the larger take 29 KiB, within a 32 KiB L1
# (a matrix in L2, 8 times larger, measured within 4 % of it: the chains, not the loads, set the rate).
CSR_ROW_LENGTHS = (2, 8, 32, 64, 128, 256, 1024)
CSR_NONZEROS, CSR_COLUMNS = (1024, 2048), 512


@dataclass(frozen=True)
class PythonTerms:
    """What the maps backend reads: seconds per Python-to-compiled call, flop/s of NumPy kernels in cache."""

    call_overhead_s: float
    python_flops: float
    annotation_s: Mapping[str, float] | None = None  # seconds per site call by ANNOTATION_KINDS; None: not measured


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


ANNOTATION_KINDS = ("region", "loop", "mpi")

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
    """The ``cpu`` fields of the profile: ``call_overhead_s``, ``python_flops``, ``annotation_s`` and
    ``python_probe``."""
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
    return {"call_overhead_s": calls[CALL_KERNEL], "python_flops": flops[FLOPS_KERNEL],
            "annotation_s": measure_annotation(quick),
            "python_probe": {"version": PYTHON_TERMS_VERSION, "call_kernel": CALL_KERNEL, "calls_s": calls,
                             "dispatches": DISPATCHES,
                             "flops_kernel": FLOPS_KERNEL, "flops": flops, "sizes": [SMALL, LARGE],
                             "statistic": "median", "repeats": repeats, "calls_per_timing": per_timing,
                             "csr_rows": measure_csr_rows(quick), "subscripts": subscripts.measure(quick)}}


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
        best = [min(timings) for timings in zip(*([_median_seconds(call, per_timing, 1) for call in pair]
                                                  for _ in range(repeats)), strict=True)]
        slope = best[0] - best[1]
        if not slope > 0:
            raise CPUTermsError(f"CPU terms: the CSR product with {per_row} entries per row timed no slower on "
                                f"{large} nonzeros than on {small}")
        seconds.append(slope / (large - small))
    return {"entries_per_row": [float(k) for k in CSR_ROW_LENGTHS], "seconds_per_entry": seconds}


def csr_rows_curve(cpu: Mapping[str, Any], where: str = "<profile>") -> list[tuple[float, float]] | None:
    """The profile's CSR curve as (entries per row, seconds per entry), sorted; None for a profile without it;
    ProfileError on a malformed one."""
    curve = (cpu.get("python_probe") or {}).get("csr_rows")
    if curve is None:
        return None
    field = "cpu.python_probe.csr_rows"
    try:
        lengths, seconds = curve["entries_per_row"], curve["seconds_per_entry"]
        points = sorted(zip((float(k) for k in lengths), (float(s) for s in seconds), strict=True))
    except (KeyError, TypeError, ValueError):
        raise ProfileError(where, "expected entries_per_row and seconds_per_entry, two lists of numbers of one "
                                  "length", field) from None
    if not points or any(k < 1 or s <= 0 for k, s in points) or len({k for k, _ in points}) != len(points):
        raise ProfileError(where, f"expected distinct row lengths >= 1 and positive seconds, got {points}", field)
    return points


def python_terms(cpu: Mapping[str, Any], where: str = "<profile>") -> PythonTerms | None:
    """The profile's CPU terms, or None for a profile measured before them; ProfileError on a bad block."""
    if "call_overhead_s" not in cpu and "python_flops" not in cpu:
        return None
    probe = cpu.get("python_probe") or {}
    version = probe.get("version", PYTHON_TERMS_VERSION)
    if version != PYTHON_TERMS_VERSION:
        raise ProfileError(where, f"CPU terms version {version!r} is not supported (this SDK reads version "
                                  f"{PYTHON_TERMS_VERSION})", "cpu.python_probe.version")
    for name in ("call_overhead_s", "python_flops"):
        value = cpu.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise ProfileError(where, f"expected a positive number, got {value!r}", f"cpu.{name}")
    annotation = cpu.get("annotation_s")
    if annotation is not None:
        if not isinstance(annotation, Mapping) or set(annotation) != set(ANNOTATION_KINDS):
            raise ProfileError(where, f"expected an object with {', '.join(ANNOTATION_KINDS)}, got {annotation!r}",
                               "cpu.annotation_s")
        for kind in ANNOTATION_KINDS:
            value = annotation[kind]
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ProfileError(where, f"expected a positive number, got {value!r}", f"cpu.annotation_s.{kind}")
        annotation = {kind: float(annotation[kind]) for kind in ANNOTATION_KINDS}
    return PythonTerms(float(cpu["call_overhead_s"]), float(cpu["python_flops"]), annotation)
