"""``ma.loadstore(..., hits=[...])``: hit rates the programmer states for a site, checked at the call, written
into the trace (``given_hit_rates``) by a real run, and used by the maps backend where no signature run
measured the site, which the prediction then names as using assumed (stated, not measured) rates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_maps_backend import hand_f, profile

import ma
from ma_cli.main import main
from ma_core.errors import AnnotationError

PROGRAM = """
import ma
ma.variable("n", {n})
with ma.subroutine("main"):
    for _ in range(3):
        with ma.loadstore("stated", "3*n", hits={hits}):
            pass
        with ma.loadstore("plain", "2*n"):
            pass
"""


@pytest.mark.parametrize("hits, why", [("abc", "not a list of numbers"), ([0.5], "fewer than two levels"),
                                       ([0.5, 1.2], r"a rate outside \[0, 1\]"),
                                       ([0.5, 0.9], "not cumulative"), ([0.9, 0.5, 1.0], "not cumulative"),
                                       ([float("nan"), 1.0], r"outside \[0, 1\]")])
def test_bad_hits_are_refused_at_the_call_naming_it(hits: Any, why: str) -> None:
    with pytest.raises(AnnotationError, match=rf"test_maps_given_hits\.py:\d+: ma\.loadstore\('x', \.\.\., hits=.*"
                                              rf"{why}.*expected cumulative hit rates"):
        ma.loadstore("x", "n", hits=hits)


def run_program(tmp_path: Path, hits: str, n: int = 1000) -> Path:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM.format(n=n, hits=hits))
    trace_dir = tmp_path / "traces"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "MA_TRACE_DIR": str(trace_dir), "MA_COUNTERS": "none"})
    assert done.returncode == 0, done.stderr
    return trace_dir


def predict(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[dict[str, Any], str]:
    assert main(["predict", *argv, "--format", "json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_a_run_records_them_and_the_backend_prices_and_names_them(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir = run_program(tmp_path, "[0.5, 1]")
    document = json.loads((trace_dir / "rank-0.ma.json").read_text())
    assert document["given_hit_rates"] == [{"path": "main/stated", "hit_rates": [0.5, 1.0],
                                            "file": str(tmp_path / "prog.py"), "line": 6}]
    machine = profile().save(tmp_path / "hand.json")  # L1 and memory: two rates
    report, err = predict(capsys, str(trace_dir), "--machine", str(machine))
    assert report["stated_hit_rates"] == ["main/stated"] and report["assumed_hit_rates"] == ["main/plain"]
    assert "1 loadstore site(s) used the hit rates their annotation states" in err and "main/stated" in err
    memory = {row["name"]: row["memory"] for row in report["sites"]}
    assert memory["main/stated"] == pytest.approx(3 * 3000 * 8 / hand_f(0.5), rel=1e-12)
    assert memory["main/plain"] == pytest.approx(3 * 2000 * 8 / hand_f(0.875), rel=1e-12)
    signature = tmp_path / "sig.json"  # a signature file's rates come first
    signature.write_text(json.dumps({"format": "ma-signature", "sites": {"main/stated": [0.25, 1.0]}}))
    report, _ = predict(capsys, str(trace_dir), "--machine", str(machine), "--signatures", str(signature))
    assert report["stated_hit_rates"] == []
    assert {r["name"]: r["memory"] for r in report["sites"]}["main/stated"] == pytest.approx(
        3 * 3000 * 8 / hand_f(0.25), rel=1e-12)


def test_rates_for_another_hierarchy_or_a_malformed_entry_are_one_line_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir = run_program(tmp_path, "[0.5, 0.9, 1]")
    machine = profile().save(tmp_path / "hand.json")
    assert main(["predict", str(trace_dir), "--machine", str(machine)]) == 2
    assert ("hits of ma.loadstore at site 'main/stated' (profile 'hand'): expected 2 cumulative hit rates"
            in capsys.readouterr().err)
    rank_file = trace_dir / "rank-0.ma.json"
    document = json.loads(rank_file.read_text())
    document["given_hit_rates"] = [{"path": "main/stated", "hit_rates": "high"}]
    rank_file.write_text(json.dumps(document))
    assert main(["predict", str(trace_dir), "--machine", str(machine)]) == 2
    err = capsys.readouterr().err
    assert "rank-0.ma.json" in err and "'given_hit_rates'[0] is" in err and len(err.strip().splitlines()) == 1


@pytest.mark.mpi
def test_the_merged_trace_of_an_mpi_run_keeps_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "prog.py"
    script.write_text("from mpi4py import MPI\n" + PROGRAM.format(n=1000, hits="[0.5, 1]"))  # MPI: a merged trace
    trace_dir = tmp_path / "traces"
    assert main(["run", "-n", "2", "--trace-dir", str(trace_dir), "--", sys.executable, str(script)]) == 0
    assert (trace_dir / "job.ma.npz").exists() and not list(trace_dir.glob("rank-*.ma.json"))
    capsys.readouterr()
    report, _ = predict(capsys, str(trace_dir), "--machine", str(profile().save(tmp_path / "hand.json")))
    assert report["stated_hit_rates"] == ["main/stated"]


def test_measured_rates_come_before_stated_ones_and_must_match_the_profiles_levels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir = run_program(tmp_path, "[0.9, 1]")
    machine = profile().save(tmp_path / "hand.json")
    rank_file = trace_dir / "rank-0.ma.json"
    document = json.loads(rank_file.read_text())
    main_node = next(n for n in document["threads"][0]["root"]["children"] if n["id"] == "main")
    stated = next(n for n in main_node["children"] if n["id"] == "stated")

    def measured(hits: list[int]) -> None:  # as a signature run's cache simulation writes it
        stated["cache"] = {"calls": 3, "accesses": 300, "hits": hits}
        rank_file.write_text(json.dumps(document))

    measured([150])  # one cache: h = (0.5, 1)
    report, _ = predict(capsys, str(trace_dir), "--machine", str(machine))
    assert report["stated_hit_rates"] == [] and report["assumed_hit_rates"] == ["main/plain"]
    assert {r["name"]: r["memory"] for r in report["sites"]}["main/stated"] == pytest.approx(
        3 * 3000 * 8 / hand_f(0.5), rel=1e-12)
    measured([150, 100])  # simulated on two caches, predicted on a profile with one
    assert main(["predict", str(trace_dir), "--machine", str(machine)]) == 2
    assert ("hit rates of site 'main/stated': the trace's cache simulation had 2 level(s), profile 'hand' has 1"
            in capsys.readouterr().err)
