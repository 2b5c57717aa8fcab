"""``ma.vec_loop``: the vector paper's annotation, recorded in the trace and printed by ``ma validate``.

SP's ``tzetar`` at class W on one process gives the paper's numbers (section 5.2): 1179360 vector
load/stores, 725760 vector flops, AVL 35, MV 3. A small NumPy loop run under the maflops tool is validated
against its measured vector metrics.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, VENV_BIN, clean_env

import ma_post
from ma_core.errors import AnnotationError, MAError
from ma_post.vector import vec_loop_results

SP = REPO / "examples" / "npb_sp" / "sp.py"
PAPER_START = ("ma_vec_loop_start:tzetar:(size^2)*(size-1)*26:1179360:(size^2)*(size-1)*16:725760:"
               "(size-1)/(floor(size/64)+1):35.000000:3")


def ma(*argv: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "ma"), *argv], env=clean_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="module")
def sp_class_w(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SP class W, one process, one step: its trace directory."""
    trace = tmp_path_factory.mktemp("sp_w")
    done = ma("run", "-n", "1", "--trace-dir", str(trace), "--", sys.executable, str(SP), "--class", "W",
              "--niter", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    return trace


@pytest.mark.mpi
def test_tzetar_class_w_one_process_prints_the_papers_numbers(sp_class_w: Path) -> None:
    results = [r for r in vec_loop_results(ma_post.load(sp_class_w)) if r.id == "tzetar"]
    assert results and all(r.predicted == {"vloadstore": 1179360, "vflops": 725760, "avl": 35} for r in results)
    assert all(r.mv == 3 and r.measured is None for r in results)  # no maflops tool: unmeasured
    rhs = SP.parent / "rhs.py"
    line = next(i for i, text in enumerate(rhs.read_text().splitlines(), start=1) if 'ma.vec_loop("tzetar"' in text)
    assert all((r.file, r.line) == (str(rhs), line) for r in results)
    shown = ma("validate", str(sp_class_w), "--vec-loops", "both")
    assert shown.returncode in (0, 1), shown.stderr
    lines = shown.stdout.splitlines()
    assert f"# {rhs}:{line}: tzetar ({results[0].path}), rank 0" in lines
    assert "tzetar:vec_loop.vloadstore:1179360:unmeasured:-" in lines
    assert "tzetar:vec_loop.vflops:725760:unmeasured:-" in lines
    assert "tzetar:vec_loop.avl:35:unmeasured:-" in lines
    assert "tzetar:vec_loop.mv:3:unmeasured:-" in lines
    starts = [line for line in lines if line.startswith("MA:")]
    assert starts and all(line.split(":", 2)[2] == PAPER_START for line in starts)


@pytest.mark.mpi
def test_tzetar_class_w_evaluates_from_the_input_parameters(sp_class_w: Path) -> None:
    """The annotation is written in ``size`` (derived: floor(problem_size/ncells), ncells = sqrt(nprocs)); its
    expressions and the vector prediction resolve to problem_size and nprocs, and give the paper's values."""
    import sympy

    from backends.machine.profile import load, shipped_profiles
    from backends.vector import CRAY_X1E, VectorBackend, loop_time, loops_from_trace

    builder = ma_post.ModelBuilder(ma_post.load(sp_class_w))
    loops = loops_from_trace(builder.ts)
    assert sorted(loops) == ["step/adi/z_solve/tzetar", "warmup/adi/z_solve/tzetar"]
    inputs = {sympy.Symbol("problem_size"), sympy.Symbol("nprocs")}
    at_w = {sympy.Symbol("problem_size"): 36, sympy.Symbol("nprocs"): 1}
    for path, loop in loops.items():
        exprs = loop.resolved(builder, path)
        assert all(e.free_symbols == inputs for e in exprs.values())
        assert {k: e.subs(at_w) for k, e in exprs.items()} == {"vloadstore": 1179360, "vflops": 725760, "avl": 35}
    path = "step/adi/z_solve/tzetar"
    machine = load(next(iter(shipped_profiles().values())))  # unused: the X1E's profile is given
    prediction = VectorBackend(loops, "max", CRAY_X1E).predict(builder, machine)
    assert not {"size", "ncells", "csize", "isize"} & set(prediction.free_inputs)
    tzetar = [s for s in prediction.sites if s.path.startswith(path + "/")]
    assert tzetar
    flops = builder.model("flops", inline=True)
    site_flops = sum(e for site, e in flops.by_site() if site.path.startswith(path + "/"))
    assert site_flops.free_symbols <= inputs | {sympy.Symbol("niter")}
    # the loop's AVL 35 (not a free symbol) penalises its memory time by 64/35 on the X1E
    words = builder.model("loadstore", inline=True)
    site_words = sum(e for site, e in words.by_site() if site.path.startswith(path + "/"))
    point = {"problem_size": 36, "nprocs": 1, "niter": 1}
    expected = loop_time(site_flops, site_words, 3, 35, CRAY_X1E, "max")
    memory = sum(float(s.memory.subs(point)) for s in tzetar)
    assert memory == pytest.approx(float(expected.memory.subs(point)), rel=1e-12)


NUMPY_APP = r"""
import numpy as np
import ma
n = ma.variable("n", %(n)d)
x, y = np.arange(n, dtype=np.float64), np.ones(n)
for _ in range(3):
    # NumPy makes two passes (t = 2.5*x, then y += t): read x, write t, read y and t, write y
    with ma.vec_loop("daxpy", "5*n/%(lanes)d", "2*n", "%(lanes)d", 2):
        y += 2.5 * x
"""


@pytest.mark.valgrind
def test_numpy_vec_loop_is_validated_against_the_measured_vector_metrics(tmp_path: Path) -> None:
    n = 40_000
    app = tmp_path / "app.py"
    import importlib

    features = importlib.import_module("numpy._core._multiarray_umath").__cpu_features__
    lanes = 4 if features.get("AVX2") else 2  # what NumPy dispatches to under Valgrind (no AVX-512 there)
    app.write_text(NUMPY_APP % {"n": n, "lanes": lanes})
    trace = tmp_path / "trace"
    done = ma("run", "-n", "1", "--counters", "valgrind", "--trace-dir", str(trace), "--", sys.executable, str(app))
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = vec_loop_results(ma_post.load(trace))
    assert result.calls == 3 and result.measured is not None
    assert result.measured["avl"] == pytest.approx(lanes, rel=1e-3)
    assert result.error("vflops") == pytest.approx(0, abs=0.01)  # 2n flops, all in full vectors
    assert abs(result.error("vloadstore") or 1) < 0.05           # 5n/lanes, whole vectors
    assert result.measured["mv"] == 2
    shown = ma("validate", str(trace), "--vec-loops", "paper")
    stop = [line for line in shown.stdout.splitlines() if line.startswith("MA:1:ma_vec_loop_stop:daxpy:3:")]
    assert len(stop) == 1 and float(stop[0].split(":")[7]) == pytest.approx(lanes, rel=1e-3)


def test_bad_mv_score_is_an_annotation_error() -> None:
    from ma_runtime.vector import vec_loop

    with pytest.raises(AnnotationError, match="MV score"):
        vec_loop("x", "n", "n", "1", 7)
    with pytest.raises(AnnotationError, match="vflops must be an expression"):
        vec_loop("x", "n", 3, "1", 2)  # type: ignore[arg-type]


def test_vec_loop_errors_name_the_annotations_file_and_line() -> None:
    from ma_runtime.vector import vec_loop

    here = Path(__file__)
    with pytest.raises(AnnotationError, match="MV score") as bad_mv:
        vec_loop("x", "n", "n", "1", 7)
    assert str(bad_mv.value).startswith(f"{here}:{bad_mv.tb.tb_lineno}: ")
    with pytest.raises(MAError) as bad_expr:
        vec_loop("x", "n", "n", "(1+", 2)
    assert f"in the avl of ma.vec_loop('x') at {here}:{bad_expr.tb.tb_lineno}" in bad_expr.value.__notes__


def test_noop_binding_exists() -> None:
    from ma._noop import bindings

    with bindings(())["vec_loop"]("x", "n", "n", "1", 2):
        pass


C_APP = r"""
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include "ma.h"

__attribute__((noinline)) static void daxpy(long n, double a, const double *x, double *y)
{ for (long i = 0; i < n; i++) y[i] += a * x[i]; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long n = 4000;
    ma_def_variable_int("n", n);
    double *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    ma_subroutine_start("kernel");
    for (int r = 0; r < 2; r++) {
        ma_vec_loop_start("daxpy", "3*n/4", MA_NO_VALUE, "2*n", MA_NO_VALUE, "4", NAN, 2);
        daxpy(n, 2.5, x, y);
        ma_vec_loop_stop("daxpy");
    }
    ma_subroutine_end("kernel");
    free(x); free(y);
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.mpi
@pytest.mark.valgrind
def test_c_vec_loop_records_and_measures(tmp_path: Path) -> None:
    from ma_tools import cparts
    from ma_tools.toolchain import find_mpicc

    source, exe = tmp_path / "app.c", tmp_path / "app"
    source.write_text(C_APP)
    subprocess.run([str(find_mpicc()), "-O3", "-mavx2", "-Wall", "-Werror", *cparts.c_flags(), str(source), "-o",
                    str(exe), *cparts.c_libs()], check=True, timeout=300)
    trace = tmp_path / "trace"
    done = ma("run", "-n", "1", "--counters", "valgrind", "--trace-dir", str(trace), "--", str(exe))
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = vec_loop_results(ma_post.load(trace))
    assert (result.id, result.path, result.depth, result.calls, result.mv) == ("daxpy", "kernel", 2, 2, 2)
    line = next(i for i, text in enumerate(C_APP.splitlines(), start=1) if "ma_vec_loop_start" in text)
    assert (result.file, result.line) == (str(source), line)
    assert result.predicted == {"vloadstore": 3000, "vflops": 8000, "avl": 4}
    assert result.measured is not None and result.measured["avl"] == 4 and result.measured["vflops"] == 8000
    assert result.error("vloadstore") == pytest.approx(0, abs=0.01)
    shown = ma("validate", str(trace), "--vec-loops", "paper").stdout.splitlines()
    assert "MA:2:ma_vec_loop_start:daxpy:3*n/4:3000:2*n:8000:4:4.000000:2" in shown


GATHERS_APP = """
import ma

for nnz in (1000, 3000):
    ma.variable("n", 128)
    ma.variable("nnz", nnz)
    with ma.subroutine("spmv"), ma.vec_loop("rows", "2*nnz+n", "2*nnz", "1", 0, gathers="nnz", gathered_bytes="8*n"):
        pass
"""


def test_python_vec_loop_records_its_gathers(run_program) -> None:
    """ma.vec_loop's keyword-only gathers and gathered_bytes: the record's ``gathers`` object (expressions, the first
    call's values, their sums), read back by the reader and by the vector backend's loops."""
    from backends.vector import VectorLoop, loops_from_trace

    run = run_program(GATHERS_APP)
    assert run.returncode == 0, run.stderr[-2000:]
    (record,) = run.trace()["vector_loops"]
    assert record["gathers"] == {"expr": {"gathers": "nnz", "gathered_bytes": "8*n"},
                                 "predicted_first": {"gathers": 1000, "gathered_bytes": 1024},
                                 "predicted_sum": {"gathers": 4000, "gathered_bytes": 2048}}
    ts = ma_post.load(run.trace_dir)
    (result,) = vec_loop_results(ts)
    assert result.gather_exprs == {"gathers": "nnz", "gathered_bytes": "8*n"}
    assert result.gathers == {"gathers": 1000, "gathered_bytes": 1024}
    line = next(i for i, text in enumerate(GATHERS_APP.splitlines(), start=1) if "ma.vec_loop" in text)
    assert loops_from_trace(ts) == {"spmv": VectorLoop(0, "1", "2*nnz+n", "2*nnz", where=f"{run.trace_dir.parent}/"
                                                       f"prog.py:{line}", gathers="nnz", gathered_bytes="8*n")}


def test_vec_loop_without_gathers_records_null() -> None:
    from ma_runtime.vector import VecLoopRecord

    assert VecLoopRecord("x", "", 1, ("n", "n", "1"), 0).to_json()["gathers"] is None


def test_gathers_and_gathered_bytes_go_together() -> None:
    from ma_runtime.vector import vec_loop

    with pytest.raises(AnnotationError, match="gathers and gathered_bytes go together"):
        vec_loop("x", "n", "n", "1", 0, gathers="n")
    with pytest.raises(AnnotationError, match="gathered_bytes must be an expression"):
        vec_loop("x", "n", "n", "1", 0, gathers="n", gathered_bytes=8)  # type: ignore[arg-type]
    with pytest.raises(MAError) as bad:
        vec_loop("x", "n", "n", "1", 0, gathers="n+", gathered_bytes="8")
    assert any("in the gathers of ma.vec_loop('x')" in note for note in bad.value.__notes__)


C_GATHERS_APP = r"""
#include <math.h>
#include <mpi.h>
#include "ma.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long n = 256, nnz = 1000;
    ma_def_variable_int("n", n);
    ma_def_variable_int("nnz", nnz);
    ma_subroutine_start("spmv");
    for (int r = 0; r < 2; r++) {
        ma_vec_loop_start("rows", "2*nnz+n", MA_NO_VALUE, "2*nnz", MA_NO_VALUE, "1", NAN, 0);
        ma_vec_loop_gathers("rows", "nnz", r ? 1500 : MA_NO_VALUE, "8*n", MA_NO_VALUE);
        ma_vec_loop_stop("rows");
    }
    ma_vec_loop_gathers("rows", "nnz", MA_NO_VALUE, "8*n", MA_NO_VALUE);
    ma_subroutine_end("spmv");
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.mpi
def test_c_vec_loop_gathers(tmp_path: Path) -> None:
    """ma_vec_loop_gathers inside the region: the same ``gathers`` object as the Python runtime's; outside any
    open vec_loop it is an anomaly naming its file."""
    from backends.vector import VectorLoop, loops_from_trace
    from ma_tools import cparts
    from ma_tools.toolchain import find_mpicc

    source, exe = tmp_path / "app.c", tmp_path / "app"
    source.write_text(C_GATHERS_APP)
    subprocess.run([str(find_mpicc()), "-O2", "-Wall", "-Werror", *cparts.c_flags(), str(source), "-o", str(exe),
                    *cparts.c_libs()], check=True, timeout=300)
    trace = tmp_path / "trace"
    done = ma("run", "-n", "1", "--trace-dir", str(trace), "--", str(exe))
    assert done.returncode == 0, done.stderr[-2000:]
    ts = ma_post.load(trace)
    (result,) = vec_loop_results(ts)
    assert result.gather_exprs == {"gathers": "nnz", "gathered_bytes": "8*n"}
    assert result.gathers == {"gathers": 1000, "gathered_bytes": 2048}
    (record,) = ts.optional("vector_loops")[0].entries
    assert record["gathers"]["predicted_sum"] == {"gathers": 2500, "gathered_bytes": 4096}
    line = next(i for i, text in enumerate(C_GATHERS_APP.splitlines(), start=1) if "ma_vec_loop_start" in text)
    assert loops_from_trace(ts) == {"spmv": VectorLoop(0, "1", "2*nnz+n", "2*nnz", where=f"{source}:{line}",
                                                       gathers="nnz", gathered_bytes="8*n")}
    outside = [a for a in ts.anomalies if "ma_vec_loop_gathers('rows'" in a.message]
    assert len(outside) == 1 and outside[0].file == str(source)  # (an anomaly takes its site's line)
    shown = ma("validate", str(trace), "--vec-loops", "paper").stdout.splitlines()
    assert "MA:2:ma_vec_loop_gathers:rows:nnz:1000:8*n:2048" in shown


@pytest.mark.mpi
def test_the_c_kernel_sets_matvec_states_its_gathers(tmp_path: Path) -> None:
    """examples/vector_kernels/kernels.c built with the annotation runtime (-DMA_TRACED, as bench/vector_predict.py
    builds it): matvec's trace states one read of p per entry (32 a row) of p's 8 x rows bytes, and its loads,
    flops and AVL as the program counts them."""
    from backends.vector import loops_from_trace
    from ma_tools import cparts
    from ma_tools.toolchain import find_mpicc

    exe, trace = tmp_path / "kernels", tmp_path / "trace"
    subprocess.run([str(find_mpicc()), "-O3", "-march=x86-64-v3", "-DMA_TRACED", *cparts.c_flags(),
                    str(REPO / "examples" / "vector_kernels" / "kernels.c"), "-o", str(exe), *cparts.c_libs()],
                   check=True, timeout=300)
    done = ma("run", "-n", "1", "--trace-dir", str(trace), "--", str(exe), "matvec", "1000", "2")
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout.split()
    ts = ma_post.load(trace)
    (result,) = vec_loop_results(ts)
    assert (result.id, result.calls, result.mv) == ("matvec", 2, 2)
    assert result.gathers == {"gathers": 32000, "gathered_bytes": 8000}
    assert (result.predicted["vflops"], result.predicted["vloadstore"]) == (float(printed[4]), float(printed[5]))
    loop = loops_from_trace(ts)["matvec"]  # in its subroutine, over its flop and load/store sites
    assert (loop.gathers, loop.traced_cache) == ("nnz", None)  # no cache simulated: no counts to separate
    assert [site.path for site in ts.walk() if site.type in ("flop", "loadstore")] == [
        "matvec/matvec_flops", "matvec/matvec_flops/matvec_ldst"]
