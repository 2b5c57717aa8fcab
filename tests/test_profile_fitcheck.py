"""No silent nonsense: a plateau of Equation 1 that no MultiMAPS point constrains is flagged in the profile,
printed by ``ma machine show`` and warned of by ``ma predict``; a probe that could not reach main memory says so."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from post_fixtures import write_run
from test_maps_predict_cli import program

from backends.machine import fitcheck, gafit, hitrates, probe
from backends.machine import profile as machines
from backends.machine.eq1 import Eq1Params
from backends.machine.profile import GB, MachineProfile
from ma_cli.main import main
from ma_core.errors import ProfileError

CACHES = (machines.CacheLevel(1, 4096, 4, 64), machines.CacheLevel(2, 65536, 8, 64))
FAST_GA = gafit.GASettings(population=60, generations=5, lamarck_every=0, lamarck_top=1, lamarck_evals=50,
                           polish_evals=0)


def measured(top: int) -> MachineProfile:
    """A profile whose MultiMAPS points stop at ``top`` bytes, with made-up bandwidths by level (unfitted)."""
    points = []
    for size in (1024, 2048, 8192, 16384, 32768, 65536, 131072, 262144):
        for stride in (1, 4, 16):
            if size > top:
                continue
            rates = tuple(hitrates.stride_hit_rates(CACHES, size, stride))
            gbs = rates[0] * 40 + (rates[1] - rates[0]) * 15 + (1 - rates[1]) * 3
            points.append(machines.MultiMapsPoint("stride", size, gbs * GB, stride=stride, hit_rates=rates))
    return MachineProfile(name="cut", host=machines.Host("h", "c", 2, "2026-01-01T00:00:00Z"), caches=CACHES,
                          cpu=machines.CPU(1e10), memory=machines.Memory(5e9), multimaps=tuple(points))


@pytest.fixture(scope="module")
def inside() -> MachineProfile:
    return probe.fit_profile(measured(32768), FAST_GA)  # the old quick probe: a quarter of the last cache


@pytest.fixture(scope="module")
def past() -> MachineProfile:
    return probe.fit_profile(measured(262144), FAST_GA)  # past twice the last cache: every level has its points


def test_a_probe_that_stops_inside_the_last_cache_leaves_memory_unconstrained(inside: MachineProfile,
                                                                              past: MachineProfile) -> None:
    assert inside.bandwidth_fit is not None and inside.bandwidth_fit.unconstrained_levels == ("memory",)
    assert past.bandwidth_fit is not None and past.bandwidth_fit.unconstrained_levels == ()
    warning = fitcheck.warnings(inside)
    assert len(warning) == 1 and "b_3 and c_3 (memory) are unconstrained" in warning[0]
    assert fitcheck.warnings(past) == []


def test_the_flag_is_in_the_document_and_an_older_one_gets_it_from_its_points(inside: MachineProfile,
                                                                             tmp_path: Path) -> None:
    doc = inside.to_json()
    assert doc["bandwidth_fit"]["unconstrained_levels"] == ["memory"]
    again = machines.load(inside.save(tmp_path / "p.json")).bandwidth_fit
    assert again is not None and again.unconstrained_levels == ("memory",)
    del doc["bandwidth_fit"]["unconstrained_levels"]  # written before the flag existed
    assert machines.from_json(doc).bandwidth_fit.unconstrained_levels == ("memory",)  # type: ignore[union-attr]
    doc["bandwidth_fit"]["unconstrained_levels"] = ["L4"]
    with pytest.raises(ProfileError, match=r"field 'bandwidth_fit.unconstrained_levels\[0\]': expected one of L1, "
                                           r"L2, memory, got 'L4'"):
        machines.from_json(doc, "p.json")


def test_show_and_predict_say_it(inside: MachineProfile, past: MachineProfile, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = inside.save(tmp_path / "inside.json")
    assert main(["machine", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "FLAGGED: profile 'cut': Equation 1's b_3 and c_3 (memory) are unconstrained" in out
    trace_dir = write_run(tmp_path / "run", program(), 2)
    assert main(["predict", str(trace_dir), "--machine", str(path), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "ma predict: warning: profile 'cut': Equation 1's b_3 and c_3 (memory) are unconstrained" in captured.err
    assert any("(memory) are unconstrained" in note for note in json.loads(captured.out)["notes"])
    assert main(["predict", str(trace_dir), "--machine", str(past.save(tmp_path / "past.json"))]) == 0
    assert "unconstrained" not in capsys.readouterr().err


def test_a_probe_that_could_not_reach_memory_says_so(inside: MachineProfile, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    doc = inside.to_json()
    doc["multimaps"]["unreached_levels"] = ["memory"]
    path = tmp_path / "short.json"
    path.write_text(json.dumps(doc))
    machine = machines.load(path)
    assert machine.multimaps_settings.unreached_levels == ("memory",)
    assert main(["machine", "show", str(path)]) == 0
    assert "FLAGGED: profile 'cut': the probe could not reach memory" in capsys.readouterr().out
    doc["multimaps"]["unreached_levels"] = ["L2"]
    with pytest.raises(ProfileError, match="unreached_levels"):
        machines.from_json(doc)


def test_a_hand_made_fit_without_points_is_not_flagged_by_default() -> None:
    """A typed profile built in code says what it flags; only a document without the field is derived."""
    fit = machines.BandwidthFit(Eq1Params((1.0, 5.0), (40 * GB, 4 * GB), (), ()))
    machine = replace(measured(0), bandwidth_fit=fit, caches=CACHES[:1])
    assert fitcheck.warnings(machine) == [] and machines.from_json(machine.to_json()).bandwidth_fit == fit
