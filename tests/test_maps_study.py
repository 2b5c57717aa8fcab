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
