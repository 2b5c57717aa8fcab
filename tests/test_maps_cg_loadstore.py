"""NPB CG's ``ma.loadstore`` annotations against the Valgrind tool's count (one rank, one iteration).

The tool counts one load (store) per guest instruction that reads (writes) memory, whatever its width
(``ma_runtime/counters/vgtool/mf_main.c``); the expressions count the kernels' instructions that way
(``examples/npb_cg/conj_grad.py``: 8 bytes per access in SciPy's CSR loop, ``vlen`` doubles in NumPy's ufunc
loops, 2 in ``einsum`` and in fills). The tool also sees the interpreter's own accesses around each kernel,
a constant few thousand per statement whatever the size. So the check is: at class S the matrix product
(240,800 accesses) is within 5 % of its expression; and for every site, the tool's count grows from class S
to class W exactly as the expression does (within 2 %, or 1,000 accesses of run-to-run jitter: the slope), with
a bounded constant left (the interpreter's accesses: the intercept).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, VENV_BIN, clean_env

import ma_post

pytestmark = [pytest.mark.valgrind, pytest.mark.mpi]

MATVEC_TOLERANCE = 0.05  # NPB's nonzero estimate is 0.3 % above class S's matrix; ~8,000 interpreter accesses
SLOPE_TOLERANCE = 0.02   # class W's matrix has 0.9 % fewer nonzeros than the estimate
JITTER = 1000  # accesses: a site called once per solve (rho0_dot) moved by up to 850 between runs
INTERPRETER_ACCESSES = 25_000  # per call of a site: two einsum calls are the most (about 2 x 10,500)


def start(tmp: pytest.TempPathFactory, class_name: str) -> tuple[subprocess.Popen[str], Path]:
    trace_dir = tmp.mktemp(f"cg-loadstore-{class_name}") / "vg"
    argv = [str(VENV_BIN / "ma"), "run", "-n", "1", "--counters", "valgrind", "--trace-dir", str(trace_dir), "--",
            sys.executable, str(REPO / "examples" / "npb_cg" / "cg.py"), "--class", class_name, "--niter", "1"]
    return subprocess.Popen(argv, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), \
        trace_dir


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ma_post.TraceSet]:
    # Both classes at once: each is one rank under the tool (one core), and the counts do not depend on timing
    started = {c: start(tmp_path_factory, c) for c in "SW"}
    out = {}
    for class_name, (job, trace_dir) in started.items():
        output, _ = job.communicate(timeout=900)
        assert job.returncode == 0, output[-4000:]
        out[class_name] = ma_post.load(trace_dir)
    return out


def per_call(ts: ma_post.TraceSet) -> dict[str, tuple[float, float]]:
    """Loadstore sites, by path below the warm-up or the timed loop: (predicted, fewest measured) accesses per
    call over both. The fewest, because a garbage collection that falls inside a region adds its accesses."""
    out: dict[str, tuple[float, float]] = {}
    for site in ts.walk():
        top, _, below = site.path.partition("/")
        if site.type != "loadstore" or top not in ("warmup", "conj_loop"):
            continue
        calls = float(np.nansum(site.calls))
        assert float(np.nansum(site.measured.n)) == calls > 0, f"{site.path}: not measured on every call"
        predicted, fewest = float(np.nansum(site.predicted.sum)) / calls, float(np.nanmin(site.measured.min))
        out[below] = (predicted, min(fewest, out.get(below, (predicted, fewest))[1]))
    return out


def test_matvec_loadstores_match_the_tool(traces: dict[str, ma_post.TraceSet]) -> None:
    sites = per_call(traces["S"])
    matvecs = [path for path in sites if path.endswith("/matvec_ls")]
    assert len(matvecs) == 2  # conj_grad's and residual_norm's
    for path in matvecs:
        predicted, measured = sites[path]
        assert predicted == 3 * 1400 * 7 * 8 + 4 * 1400
        assert abs(measured / predicted - 1) < MATVEC_TOLERANCE, (path, measured, predicted)


def test_every_site_grows_with_the_class_as_its_expression(traces: dict[str, ma_post.TraceSet]) -> None:
    small, large = per_call(traces["S"]), per_call(traces["W"])
    assert set(small) == set(large) and {p.rsplit("/", 1)[-1] for p in small} == {
        "init_vectors", "rho0_dot_ls", "matvec_ls", "clear_w", "pq_dot_ls", "zr_axpy_ls", "rr_dot_ls",
        "p_update_ls", "resid_sq_ls", "norm_dots_ls", "normalize_ls"}
    for path, (predicted_s, measured_s) in small.items():
        predicted_w, measured_w = large[path]
        slope = (measured_w - measured_s) / (predicted_w - predicted_s)
        growth_error = abs((measured_w - measured_s) - (predicted_w - predicted_s))
        assert abs(slope - 1) < SLOPE_TOLERANCE or growth_error < JITTER, (path, slope, growth_error)
        intercept = measured_s - predicted_s * slope
        assert 0 < intercept < INTERPRETER_ACCESSES, (path, intercept)
