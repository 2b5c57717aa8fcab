"""The annotated NPB CG: validated under `ma run`, modelled, compared with NPB's official count, exported.

The MA paper's CG study (sections 3.2, 4.1, 4.2) redone for real: every loop and MPI assertion passes with
zero error at 1, 2, 4 and 8 processes for classes S and W; the flop model agrees with NPB's operation
count; the MPI model built at one process count predicts what PMPI measures at another; the exported
Octave model gives SymPy's numbers; under the Valgrind counter the flop assertions are measured.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, VENV_BIN, clean_env
from npb_cg_checks import (
    check_flops_against_the_official_count,
    check_flops_measured,
    check_message_sizes_at_1024_ranks,
)

import ma_post
from examples.npb_cg.study import CGModels, class_inputs, value

pytestmark = pytest.mark.mpi
CG = REPO / "examples" / "npb_cg" / "cg.py"
RUNS = [("S", 1), ("S", 2), ("S", 4), ("S", 8), ("W", 1), ("W", 2), ("W", 4), ("W", 8)]


def ma_run(trace_dir: Path, class_name: str, nprocs: int, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [str(VENV_BIN / "ma"), "run", "-n", str(nprocs), "--trace-dir", str(trace_dir), *extra, "--",
            sys.executable, str(CG), "--class", class_name]
    return subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cg_class_s_on_two_ranks: Path) -> dict[tuple[str, int], Path]:
    root = tmp_path_factory.mktemp("cg-runs")
    out = {("S", 2): cg_class_s_on_two_ranks}  # the session's run, shared with the report and study tests
    for class_name, nprocs in RUNS:
        if (class_name, nprocs) in out:
            continue
        trace_dir = root / f"{class_name}-{nprocs}"
        done = ma_run(trace_dir, class_name, nprocs)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "VERIFICATION SUCCESSFUL" in done.stdout
        out[(class_name, nprocs)] = trace_dir
    return out


@pytest.fixture(scope="module")
def models(runs: dict[tuple[str, int], Path]) -> CGModels:
    return CGModels.build(runs[("S", 4)])


@pytest.mark.parametrize("class_name, nprocs", RUNS)
def test_every_loop_and_mpi_assertion_passes_with_zero_error(runs: dict[tuple[str, int], Path],
                                                             class_name: str, nprocs: int) -> None:
    report = ma_post.validate(ma_post.load(runs[(class_name, nprocs)]))
    checked = [r for r in report.results if r.site.type == "loop" or r.site.type.startswith("mpi_")]
    assert len(checked) >= (50 if nprocs > 1 else 20)  # one process: no butterfly step runs
    for result in checked:
        assert result.fails == 0 and result.unmeasured == 0, (result.site.path, result)
        assert result.error_rate == 0.0, result.site.path
        assert result.passes == result.calls
    mpi_sites = [r for r in checked if r.site.type.startswith("mpi_")]
    assert sum(r.calls for r in mpi_sites) > 0
    flops = [r for r in report.results if r.site.type == "flop"]
    assert flops and all(r.unmeasured == r.calls for r in flops)  # no PMU on this host: unmeasured, not PASS


def test_flop_model_agrees_with_the_official_operation_count(models: CGModels) -> None:
    check_flops_against_the_official_count(models)


def test_mpi_model_from_four_ranks_predicts_what_pmpi_measures_at_eight(runs: dict[tuple[str, int], Path],
                                                                        models: CGModels) -> None:
    eight = ma_post.load(runs[("S", 8)])
    annotated = ("MPI_Send", "MPI_Irecv", "MPI_Reduce", "MPI_Barrier")  # every MPI call of cg.py is annotated
    measured_bytes = np.array([sum(entry["bytes"] for name, entry in profile["calls"].items()
                                   if name in annotated)
                               for profile in eight.mpi_profiles])
    measured_count = np.array([sum(entry["calls"] for name, entry in profile["calls"].items()
                                   if name in annotated)
                               for profile in eight.mpi_profiles])
    inputs = class_inputs("S", nprocs=8)
    assert np.all(measured_bytes == value(models.mpi_bytes, inputs))
    assert np.all(measured_count == value(models.mpi_count, inputs))


def test_models_at_process_counts_never_run(models: CGModels) -> None:
    flops = [float(value(models.flops, class_inputs("C", nprocs=p))) for p in (1, 4, 1024)]
    assert flops[0] > flops[1] > flops[2] > 0
    volume_1024 = float(value(models.mpi_bytes, class_inputs("C", nprocs=1024)))
    sizes = check_message_sizes_at_1024_ranks(models)
    assert volume_1024 == pytest.approx(sum(c.size * c.per_rank for c in sizes.values()), rel=1e-12)


@pytest.mark.octave
def test_exported_octave_model_gives_the_sympy_numbers(runs: dict[tuple[str, int], Path], tmp_path: Path) -> None:
    from ma_post.evaluation import exact_value

    out = tmp_path / "m"
    done = subprocess.run([str(VENV_BIN / "ma"), "export", str(runs[("S", 4)]), "--octave", str(out),
                           "-q", "flops", "-q", "mpi_bytes"], env=clean_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ts = ma_post.load(runs[("S", 4)])
    points = [class_inputs(c, nprocs=p) for c in "SWABC" for p in (1, 2, 8, 64, 1024)]
    for quantity in ("flops", "mpi_bytes"):
        model = ma_post.model(ts, quantity)
        columns = {name: [pt[name] for pt in points] for name in model.inputs}
        call = f"{quantity}({', '.join(f'[{chr(59).join(map(str, columns[n]))}]' for n in model.inputs)})"
        script = f"addpath('{out}'); printf('%.17g\\n', {call});"
        result = subprocess.run([shutil.which("octave-cli") or "octave-cli", "--no-gui", "--quiet", "--eval", script],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        octave = [float(line) for line in result.stdout.split()]
        exact = [float(exact_value(model, {n: pt[n] for n in model.inputs})) for pt in points]
        assert octave == pytest.approx(exact, rel=1e-12, abs=0)


@pytest.mark.valgrind
def test_flop_assertions_are_measured_under_the_software_counter(tmp_path: Path) -> None:
    done = ma_run(tmp_path / "vg", "S", 2, "--counters", "valgrind")
    assert done.returncode == 0, done.stderr[-3000:]
    report = ma_post.validate(ma_post.load(tmp_path / "vg"))
    check_flops_measured(report, "S", 2)
    lines = ma_post.format_lines(report).splitlines()
    assert any(line.startswith("matvec:ma_flop:78400:78148:0.00322:PASS=") for line in lines), lines[:12]
