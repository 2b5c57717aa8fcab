"""A backend's predicted time in the studies: `ma scaling`, `ma sweep` and `ma report` with `--backend maps
--machine amd-epyc-zen4-kvm` on a real CG class S run of 2 ranks, checked against `Prediction.evaluate`."""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path

import numpy as np
import pytest

import ma_post
from backends import registry
from backends.base import Prediction
from ma_cli.main import main
from ma_cli.support import load_profile
from ma_post.studies.scaling import base_values

MACHINE = "amd-epyc-zen4-kvm"
BACKEND = ["--backend", "maps", "--machine", MACHINE]
P = [1.0, 4.0, 64.0]  # each exact evaluation of the whole prediction (the oracle) takes seconds

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def cg(cg_class_s_on_two_ranks: Path) -> Path:
    return cg_class_s_on_two_ranks


def _prediction(trace_dir: Path, **options: object) -> tuple[Prediction, dict[str, float]]:
    """The maps prediction, symbolic in every input, and the traced inputs (the same on both ranks here)."""
    builder = ma_post.ModelBuilder(ma_post.load(trace_dir))
    machine = load_profile(MACHINE)
    backend = registry.load("maps").from_options(argparse.Namespace(**options), builder.ts, machine)
    prediction = backend.predict(builder, machine, {})
    model = builder.submodel("time", prediction.total)
    assert all(np.ptp(v) == 0 for v in model.trace_values.values())  # else a mean of evaluations would differ
    return prediction, base_values([model], {})


def _csv(capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_scaling_prints_the_predicted_time_and_its_parallel_efficiency(
        cg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prediction, traced = _prediction(cg)
    assert main(["scaling", str(cg), "-q", "flops", "--nprocs", ",".join(map(str, P)), "--format", "csv",
                 "--no-shares", *BACKEND]) == 0
    rows = _csv(capsys)
    expected = np.array([prediction.evaluate({**traced, "nprocs": p}) for p in P])
    time = np.array([float(r["time/rank"]) for r in rows])
    np.testing.assert_allclose(time, expected, rtol=1e-12)
    assert len(set(np.round(time, 12))) == len(P)  # the prediction does depend on the process count
    np.testing.assert_allclose([float(r["time:eff"]) for r in rows], expected[0] * P[0] / (expected * np.array(P)),
                               rtol=1e-12)
    np.testing.assert_allclose([float(r["time:all"]) for r in rows], expected * np.array(P), rtol=1e-12)

    assert main(["scaling", str(cg), "-q", "flops", "--nprocs", "1,4,16", "--weak", "na=na0*nprocs",
                 "--format", "csv", "--no-shares", *BACKEND]) == 0
    rows = _csv(capsys)
    weak = np.array([expected[0], *(prediction.evaluate({**traced, "nprocs": p, "na": traced["na"] * p})
                                    for p in (4, 16))])
    np.testing.assert_allclose([float(r["time/rank"]) for r in rows], weak, rtol=1e-12)
    np.testing.assert_allclose([float(r["time:eff"]) for r in rows], weak[0] / weak, rtol=1e-12)

    overlapped, _ = _prediction(cg, overlap="max", call_overhead=1e-6)  # the backend's own options pass through
    assert main(["scaling", str(cg), "-q", "flops", "--nprocs", "1,8", "--format", "csv", "--no-shares", *BACKEND,
                 "--overlap", "max", "--call-overhead", "1e-6"]) == 0
    rows = _csv(capsys)
    overlapped_time = np.array([overlapped.evaluate({**traced, "nprocs": p}) for p in (1, 8)])
    np.testing.assert_allclose([float(r["time/rank"]) for r in rows], overlapped_time, rtol=1e-12)
    assert abs(overlapped_time[0] - expected[0]) > 1e-4

    assert main(["scaling", str(cg), "-q", "flops", "--nprocs", "1:4", "--backend", "maps"]) == 2
    assert "needs --machine" in capsys.readouterr().err


def test_sweep_adds_the_predicted_time_as_a_column(cg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prediction, traced = _prediction(cg)
    assert main(["sweep", str(cg), "-q", "flops", "--set", "nprocs=1,8", "--set", "na=1400,5600",
                 "--format", "csv", *BACKEND]) == 0
    for row in _csv(capsys):
        point = {**traced, "nprocs": float(row["nprocs"]), "na": float(row["na"])}
        assert float(row["time"]) == pytest.approx(prediction.evaluate(point), rel=1e-12)


def test_report_has_a_predictions_section(cg: Path, tmp_path: Path) -> None:
    prediction, traced = _prediction(cg)
    out = tmp_path / "report.html"
    assert main(["report", str(cg), "-o", str(out), "--nprocs", "1,2,4", *BACKEND]) == 0
    text = out.read_text()
    section = text.split('<section id="backend">')[1].split("</section>")[0]
    assert f"maps on {MACHINE}" in section  # CG's whole predicted time is too long to read: the command exporting it
    assert f"<code>ma export DIR --backend maps --machine {MACHINE} --python OUT</code> writes it as code" in section
    assert section.count("<tr>") > 3 and 'id="backend-measured"' in section  # CG's subroutines are timed
    measured = section.split('id="backend-measured"')[1]
    for name in ("warmup/conj_grad", "conj_loop/conj_grad"):  # subroutines by path, in both tables
        assert f'<td class="text">{name}</td>' in section.split('id="backend-measured"')[0]
        assert f'<td class="text">{name}</td>' in measured
    total = float(section.split("(mean over ranks): ")[1].split(" s")[0])
    assert total == pytest.approx(prediction.evaluate(traced), rel=1e-9)
