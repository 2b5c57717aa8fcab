"""``examples/npb_cg/study.py --accuracy``: the predicted-vs-measured figure from the accuracy bench's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.npb_cg.study import main


def row(klass: str, procs: int, predicted: float, measured: float) -> dict[str, object]:
    return {"app": "cg", "class": klass, "procs": procs, "region": "timed loop", "predicted": predicted,
            "measured": measured, "subroutines": {"conj_loop/conj_grad": {"predicted": predicted * 0.9,
                                                                           "measured": measured * 0.9}}}


def test_accuracy_figure_is_drawn_and_bad_input_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "accuracy.json"
    results.write_text(json.dumps({"rows": [row("S", 1, 0.05, 0.04), row("S", 2, 0.03, 0.1),
                                            row("W", 1, 0.4, 0.5), row("W", 4, 0.2, 0.3)]}))
    assert main(["--accuracy", str(results), "--out", str(tmp_path / "fig")]) == 0
    figure = tmp_path / "fig" / "maps_accuracy.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000
    results.write_text("{}")
    assert main(["--accuracy", str(results), "--out", str(tmp_path / "fig")]) == 2
    assert "expected the bench's accuracy.json" in capsys.readouterr().err


def test_sp_study_draws_its_own_rows_and_names_a_file_without_them(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from examples.npb_sp.study import main as sp_main

    def sp_row(klass: str, procs: int) -> dict[str, object]:
        return {"app": "sp", "class": klass, "procs": procs, "region": "timed loop", "predicted": 0.2 * procs,
                "measured": 0.25, "subroutines": {"step/adi": {"predicted": 0.18, "measured": 0.2},
                                                  "step/adi/x_solve": {"predicted": 0.05, "measured": 0.06}}}

    results = tmp_path / "accuracy.json"
    results.write_text(json.dumps({"rows": [sp_row("S", 1), sp_row("S", 4), sp_row("W", 1), row("S", 1, 1, 1)]}))
    assert sp_main(["--accuracy", str(results), "--out", str(tmp_path / "sp")]) == 0
    figure = tmp_path / "sp" / "maps_accuracy.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size > 10_000
    results.write_text(json.dumps({"rows": [row("S", 1, 1, 1)]}))  # CG's rows only
    assert sp_main(["--accuracy", str(results), "--out", str(tmp_path / "sp")]) == 2
    assert "no timed-loop row of sp" in capsys.readouterr().err
