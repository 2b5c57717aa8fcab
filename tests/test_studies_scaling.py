"""`ma scaling`: strong and weak scaling of a hand-checkable model from a real (tiny) run."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pytest

import ma_post
from ma_cli.commands.scaling import nprocs_values
from ma_cli.main import main
from ma_core.errors import MAError
from ma_post.studies.scaling import parse_rule, scaling

PROGRAM = """
import ma

ma.variable("n", 1000)
ma.variable("nprocs", 4)
with ma.subroutine("compute"):
    with ma.flop("local", "n*n/nprocs"):
        pass
with ma.subroutine("reduce"):
    with ma.flop("tree", "n*log2(nprocs)"):
        pass
with ma.heap_memory("matrix", "8*n*n/nprocs"):
    pass
"""
P = np.array([1.0, 2.0, 4.0, 8.0, 16.0])


@pytest.fixture
def trace_dir(run_program) -> Path:  # type: ignore[no-untyped-def]
    run = run_program(PROGRAM)
    assert run.returncode == 0, run.stderr
    return run.trace_dir


def test_strong_scaling_per_rank_total_efficiency_and_shares(trace_dir: Path) -> None:
    flops = ma_post.model(ma_post.load(trace_dir), "flops")
    result = scaling([flops], P)  # n = 1000 from the trace
    n = 1000.0
    compute, tree = n * n / P, n * np.log2(P)
    np.testing.assert_allclose(result.per_rank["flops"], compute + tree, rtol=1e-15)
    np.testing.assert_allclose(result.aggregate["flops"], (compute + tree) * P, rtol=1e-15)
    np.testing.assert_allclose(result.efficiency["flops"], n * n / ((compute + tree) * P), rtol=1e-14)
    np.testing.assert_allclose(result.shares["flops"]["compute"], compute / (compute + tree), rtol=1e-14)
    np.testing.assert_allclose(result.shares["flops"]["reduce"], tree / (compute + tree), rtol=1e-14)
    assert result.mode == "strong" and result.inputs == {}


def test_weak_scaling_rule_grows_the_problem(trace_dir: Path) -> None:
    builder = ma_post.ModelBuilder(ma_post.load(trace_dir))
    models = [builder.model("flops"), builder.model("heap_memory")]
    result = scaling(models, P, given={"n": 500}, rules={"n": "n0*sqrt(nprocs)"})
    n = 500 * np.sqrt(P)
    np.testing.assert_allclose(result.inputs["n"], n, rtol=1e-15)
    np.testing.assert_allclose(result.per_rank["flops"], n * n / P + n * np.log2(P), rtol=1e-14)
    np.testing.assert_allclose(result.per_rank["heap_memory"], 8 * 500.0**2, rtol=1e-15)  # constant per rank
    np.testing.assert_allclose(result.efficiency["heap_memory"], 1.0, rtol=1e-15)
    flops0 = 500.0**2
    np.testing.assert_allclose(result.efficiency["flops"], flops0 / (n * n / P + n * np.log2(P)), rtol=1e-14)


def test_rules_and_process_counts_are_checked(trace_dir: Path) -> None:
    flops = ma_post.model(ma_post.load(trace_dir), "flops")
    assert parse_rule(" n = n0 * nprocs ") == ("n", "n0 * nprocs")
    for bad in ("n", "=n0", "n=n0*", "1n=2"):
        with pytest.raises(MAError, match="--weak"):
            parse_rule(bad)
    with pytest.raises(MAError, match="no value for m0"):
        scaling([flops], P, rules={"n": "m0*nprocs"})
    with pytest.raises(MAError, match="no model depends on 'procs'"):
        scaling([flops], P, procs_name="procs")
    with pytest.raises(MAError, match="positive"):
        scaling([flops], [0, 1])
    assert nprocs_values("1:4096") == [2.0**k for k in range(13)]
    assert nprocs_values("3:40") == [4.0, 8.0, 16.0, 32.0]
    assert nprocs_values("4:64:4")[:3] == [4.0, 8.0, 12.0] and nprocs_values("2^(1:3)") == [2.0, 4.0, 8.0]


def test_cli(trace_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scaling", str(trace_dir), "-q", "flops", "--nprocs", "1:16", "--set", "n=2000",
                 "--plot", str(tmp_path / "scaling.png")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "strong scaling" and lines[1].split() == ["nprocs", "flops/rank", "flops:all", "flops:eff"]
    assert lines[2].split() == ["1", "4000000", "4000000", "1"]
    assert "share of flops per rank by subroutine:" in out and (tmp_path / "scaling.png").stat().st_size > 1000
    assert "held fixed, global (divided among the processes): n\n" in out
    assert main(["scaling", str(trace_dir), "-q", "flops", "--nprocs", "1,4", "--weak", "n=n0*nprocs",
                 "--format", "csv", "--no-shares"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [float(r["n"]) for r in rows] == [1000.0, 4000.0]
    assert float(rows[1]["flops/rank"]) == pytest.approx(4000.0**2 / 4 + 4000 * math.log2(4), rel=1e-15)
    assert main(["scaling", str(trace_dir), "-q", "flops", "--nprocs", "1:4", "--set", "n=1,2"]) == 2
    assert "one base value per parameter" in capsys.readouterr().err


def test_a_backends_time_gets_parallel_efficiency(trace_dir: Path) -> None:
    flops = ma_post.model(ma_post.load(trace_dir), "flops")

    def seconds(values):  # type: ignore[no-untyped-def]  # a stand-in for a backend: 1 GFlop/s, 1 ms per doubling
        n, p = values.get("n", 1000.0), values["nprocs"]
        return (n * n / p + n * np.log2(p)) / 1e9 + 1e-3 * np.log2(p)

    result = scaling([flops], P, time=seconds)
    expected = seconds({"nprocs": P})
    np.testing.assert_allclose(result.per_rank["time"], expected, rtol=1e-15)
    np.testing.assert_allclose(result.efficiency["time"], expected[0] / (expected * P), rtol=1e-15)
    assert "time:eff" in result.columns()
