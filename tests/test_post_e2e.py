"""End to end with the real runtime: a model built from one run predicts a run at other parameters.

tests/post_stencil_prog.py is annotated with ma; it runs for real (and under the venv's mpiexec with the
PMPI library for the MPI test), then ma_post builds the model from the first run and evaluates it at the
second run's inputs. What it is compared with was counted by the runtime in the second run: site calls
and loop trips (lp.range), the runtime's own evaluation of every assertion, and PMPI's bytes and messages.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from post_fixtures import checked

from ma_cli.main import main
from ma_post.evaluation import evaluate
from ma_post.models import ModelBuilder
from ma_post.msgdist import measured_distribution, message_distribution
from ma_post.traceset import load
from ma_post.validation import PASS, UNMEASURED, validate

PROGRAM = Path(__file__).with_name("post_stencil_prog.py")
BIN = Path(sys.executable).parent


def _env(trace_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["MA_TRACE_DIR"] = str(trace_dir)
    env.pop("MA_DISABLE", None)
    return env


def run_program(trace_dir: Path, n: int, m: int, steps: int, ranks: int = 0) -> Path:
    args = [sys.executable, str(PROGRAM), str(n), str(m), str(steps)]
    if ranks:  # through `ma run`, which launches the venv's mpiexec and gives the ranks one run id
        args = [sys.executable, "-m", "ma_cli.main", "run", "-n", str(ranks), "--trace-dir", str(trace_dir), "--",
                *args, "--mpi"]
    done = subprocess.run(args, env=_env(trace_dir), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return trace_dir


def test_model_from_one_run_predicts_another(tmp_path: Path) -> None:
    small = load(run_program(tmp_path / "small", 12, 9, 3))
    big = load(run_program(tmp_path / "big", 23, 17, 5))
    assert small.language == "python" and small.headers[0]["status"] == "complete"
    # The loops' trip counts were measured for real and agree with the assertions.
    for result in validate(big).results:
        if result.type == "loop":
            assert result.status == PASS, result
    builder = ModelBuilder(small)
    inputs = {"n": 23, "m": 17, "steps": 5}
    for quantity in ("flops", "heap_memory"):
        m = builder.model(quantity)
        assert not [note for note in m.notes if note.kind in ("conditional", "check", "calls")], m.notes
        truth = checked(ModelBuilder(big).model(quantity)).trace_predicted
        assert m.evaluate(inputs) == pytest.approx(float(truth[0]), rel=1e-12)
    flops = builder.model("flops")
    # Site by site, the model's count of calls at the new inputs is what the second run executed.
    for term in flops.terms:
        calls = evaluate(builder.submodel(term.site.path, term.multiplier), inputs).value
        assert calls == big.find(term.site.path, term.site.type).calls.sum(), term.site.path
    assert str(flops.inlined()) == "2*m*n*steps + 2*steps*(5*m - 10)*(n - 2)"


@pytest.mark.mpi
def test_mpi_model_predicts_pmpi_measurements_at_another_scale(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    small = load(run_program(tmp_path / "small", 12, 9, 3, ranks=2))
    big = load(run_program(tmp_path / "big", 16, 13, 4, ranks=3))
    assert big.ranks.tolist() == [0, 1, 2] and big.headers[0]["mpi"]["profiling"] and big.run_id
    report = validate(big)
    mpi_results = [r for r in report.results if r.type.startswith("mpi_")]
    assert mpi_results and all(r.status == PASS for r in mpi_results)
    assert all(r.status in (PASS, UNMEASURED) for r in report.results)
    builder = ModelBuilder(small)
    inputs = {"n": 16, "m": 13, "steps": 4, "nprocs": 3}
    big_builder = ModelBuilder(big)
    for quantity in ("mpi_bytes", "mpi_count", "send_bytes", "mpi_sendrecv_count"):
        measured = checked(big_builder.model(quantity)).trace_measured  # PMPI, per rank
        assert np.all(np.isfinite(measured))
        assert builder.model(quantity).evaluate(inputs) == pytest.approx(float(measured[0]), rel=1e-12), quantity
    # Message sizes and counts per rank at the new scale, against PMPI's histogram of that run.
    classes = message_distribution(small, inputs)
    for bucket in measured_distribution(big):
        predicted = sum(c.per_rank for c in classes if bucket.lo <= c.size <= bucket.hi)
        assert predicted == pytest.approx(bucket.per_rank), bucket
    assert main(["validate", str(tmp_path / "big")]) == 0
    assert "halo_down:ma_mpi_sendrecv:104:104:0.0:PASS=12:FAIL=0" in capsys.readouterr().out


RING = Path(__file__).resolve().parent.parent / "examples" / "c_ring" / "ring.c"


def _ma_config(flag: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "ma_cli.main", "config", flag], capture_output=True, text=True,
                          env=_env(Path("unused")), timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.mpi
def test_c_runtime_traces_model_and_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The C runtime's traces (examples/c_ring) go through the same post-processing."""
    binary = tmp_path / "ring"
    build = subprocess.run([str(BIN / "mpicc"), "-O2", *_ma_config("--cflags"), str(RING), "-o", str(binary),
                            *_ma_config("--libs")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr

    def ring(trace_dir: Path, ranks: int, *args: str) -> Path:
        done = subprocess.run([str(BIN / "mpiexec"), "-n", str(ranks), str(binary), *args], env=_env(trace_dir),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return trace_dir

    small = load(ring(tmp_path / "small", 2, "1000", "3"))
    big = load(ring(tmp_path / "big", 3, "2000", "5", "--wrong"))
    assert small.language == "c" and big.ranks.tolist() == [0, 1, 2]
    builder, big_builder = ModelBuilder(small), ModelBuilder(big)
    inputs = {"n": 2000, "niter": 5, "nprocs": 3}
    for quantity in ("mpi_bytes", "mpi_count", "send_bytes"):  # against what PMPI measured
        measured = checked(big_builder.model(quantity)).trace_measured
        assert builder.model(quantity).evaluate(inputs) == pytest.approx(float(measured[0]), rel=1e-12), quantity
    for quantity in ("flops", "heap_memory"):  # against the C runtime's own evaluation in the second run
        predicted = checked(big_builder.model(quantity)).trace_predicted
        assert builder.model(quantity).evaluate(inputs) == pytest.approx(float(predicted[0]), rel=1e-12), quantity
    # malloc's bookkeeping: the heap measured is within 1% of the model
    heap = checked(big_builder.model("heap_memory")).trace_measured
    if np.all(np.isfinite(heap)):
        assert builder.model("heap_memory").evaluate(inputs) == pytest.approx(float(heap[0]), rel=0.01)
    assert str(builder.model("mpi_bytes", inline=True).expr) == "16*n*niter + 8*niter + 16"
    # The deliberately wrong trip count fails validation, and the exit status says so.
    halves = next(r for r in validate(big).results if r.id == "halves")
    assert halves.status == "FAIL" and halves.predicted[0] == 1001 and halves.measured[0] == 1000
    assert main(["validate", str(tmp_path / "big")]) == 1
    assert "halves:ma_loop:1001:1000:0.001:PASS=0:FAIL=3" in capsys.readouterr().out
