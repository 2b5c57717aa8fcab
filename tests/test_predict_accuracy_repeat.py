"""bench/predict_accuracy.py --repeat: every case run round by round, the same prediction each round, and the
range of the errors over the rounds printed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench" / "predict_accuracy.py"

pytestmark = pytest.mark.mpi


def test_repeat_runs_every_round_and_prints_the_interval(tmp_path: Path) -> None:
    out = tmp_path / "acc"
    done = subprocess.run([sys.executable, str(BENCH), "--cases", "cg:S:1", "--no-signature", "--repeat", "2",
                           "--out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "cg-S-1" / "ma-run.json").is_file() and (out / "cg-S-1-r2" / "ma-run.json").is_file()
    rows = json.loads((out / "accuracy.json").read_text())["rows"]
    assert sorted((r["round"], r["region"]) for r in rows) == [(1, "conj_grad"), (1, "timed loop"),
                                                                (2, "conj_grad"), (2, "timed loop")]
    first, second = (next(r for r in rows if r["round"] == k and r["region"] == "timed loop") for k in (1, 2))
    assert first["predicted"] == pytest.approx(second["predicted"], rel=1e-12)  # one model, one profile
    assert first["measured"] != second["measured"]  # two real runs
    errors = sorted(100 * abs(r["error"]) for r in rows)
    text = done.stdout
    assert "round 1: average absolute error" in text and "round 2: average absolute error" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("over 2 rounds: average absolute error"))
    low, high = (float(x) for x in line.split("(range ")[1].split("%)")[0].split("-"))
    assert errors[0] - 0.05 <= low <= high <= errors[-1] + 0.05
    assert "measured time of the timed loop, spread over the rounds" in text


def test_repeat_below_one_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--repeat", "0", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 2 and "--repeat: N must be at least 1" in done.stderr
