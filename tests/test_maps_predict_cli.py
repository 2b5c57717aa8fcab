"""``ma predict`` names the slowest rank (the run time) beside the mean, and ``ma export --backend maps
--machine PROFILE`` writes the predicted time as one more symbolic model that Octave evaluates to the number
``ma predict`` prints."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from post_fixtures import Loop, Mpi, Op, Sub, Var, write_run
from test_maps_backend import profile

from ma_cli.main import main

SIZE = 3


def program() -> list[object]:
    """Rank r works on m = 1000 (r + 1) elements: the last rank is the slowest."""
    return [Var("n", 10), Var("m", lambda e: 1000 * (e["__rank"] + 1)), Var("nprocs", lambda e: e["__size"]),
            Sub("solve", [Loop("it", "n", [Op("flop", "fl", "2*m"), Op("loadstore", "ls", "3*m"),
                                           Mpi("mpi_allreduce", "sum", "8")])])]


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, Path]:
    return write_run(tmp_path / "run", program(), SIZE), profile().save(tmp_path / "hand.json")


def predict_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["predict", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_the_slowest_rank_is_the_run_time(run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir, machine = run
    report = predict_json(capsys, str(trace_dir), "--machine", str(machine))
    per_rank = report["per_rank_s"]
    assert isinstance(per_rank, list) and len(per_rank) == SIZE
    # each rank at its own m: the same as predicting with m set to that rank's value
    for rank, seconds in enumerate(per_rank):
        alone = predict_json(capsys, str(trace_dir), "--machine", str(machine), "--set", f"m={1000 * (rank + 1)}")
        assert seconds == pytest.approx(alone["total_s"], rel=1e-12)
    assert per_rank[0] < per_rank[1] < per_rank[2] and report["slowest_rank"] == SIZE - 1
    assert report["total_s"] == pytest.approx(sum(per_rank) / SIZE, rel=1e-12)
    assert main(["predict", str(trace_dir), "--machine", str(machine)]) == 0
    assert f"run time (slowest, rank 2): {per_rank[2]:.10g}"[:40] in capsys.readouterr().out


@pytest.mark.octave
def test_export_writes_the_predicted_time_for_octave(run: tuple[Path, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir, machine = run
    out = tmp_path / "octave"
    assert main(["export", str(trace_dir), "--backend", "maps", "--machine", str(machine), "--octave", str(out)]) == 0
    function = out / "maps_time.m"
    assert str(function) in capsys.readouterr().out
    assert function.read_text().startswith("function r = maps_time(m, n, nprocs)")
    expected = predict_json(capsys, str(trace_dir), "--machine", str(machine), "--set", "m=2500", "--set", "n=7",
                            "--set", "nprocs=8")["total_s"]
    octave = shutil.which("octave-cli")
    assert octave, "octave-cli is needed (scripts/setup.sh installs it)"
    done = subprocess.run([octave, "--no-gui", "--no-window-system", "-q", "--norc", "--eval",
                           f"addpath('{out}'); printf('%.17g\\n', maps_time(2500, 7, 8))"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) == pytest.approx(expected, rel=1e-12)


def test_export_backend_errors_are_one_line(run: tuple[Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir, machine = run
    assert main(["export", str(trace_dir), "--backend", "maps", "--machine", str(machine),
                 "--hatchet", str(tmp_path / "h.json")]) == 2
    assert "--backend maps: its predicted time is exported with --octave, --python or --c" in capsys.readouterr().err
    assert main(["export", str(trace_dir), "--backend", "maps", "--octave", str(tmp_path / "o")]) == 2
    assert "needs --machine PROFILE" in capsys.readouterr().err
    assert main(["export", str(trace_dir), "--backend", "maps", "--machine", str(tmp_path / "none.json"),
                 "--octave", str(tmp_path / "o")]) == 2
    assert "none.json: no such file" in capsys.readouterr().err


def test_a_signature_site_the_run_does_not_have_is_named(run: tuple[Path, Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir, machine = run
    signature = tmp_path / "sig.json"
    signature.write_text(json.dumps({"format": "ma-signature", "sites": {"solve/it/ls": [0.5, 1.0],
                                                                        "solve/it/lss": [0.9, 1.0]}}))
    report = predict_json(capsys, str(trace_dir), "--machine", str(machine), "--signatures", str(signature))
    notes = [n for n in report["notes"] if n.startswith("signature file:")]
    assert notes[0] == "signature file: hit rates at 1 site(s)" and report["signature_sites"]["hit_rates"] == [
        "solve/it/ls"]  # what it covered
    assert len(notes) == 2 and notes[1].endswith(": solve/it/lss") and "1 site(s) not in this run" in notes[1]
    assert report["assumed_hit_rates"] == []  # the path it does have is used
    signature.write_text(json.dumps({"format": "ma-signature", "sites": {"solve/it/ls": [0.5, 1.0]}}))
    report = predict_json(capsys, str(trace_dir), "--machine", str(machine), "--signatures", str(signature))
    assert not any("not in this run" in n for n in report["notes"])
