"""Multicore MultiMAPS (backends/machine/multicore.py, multicore_probe.py): the stride-1 read and the triad on
k = 1, 2 cores of this host at once, one pinned process per core, into a versioned block of the profile that is
read, validated, shown, plotted, what-if-able and written back."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_machine_profile import sample_profile

from backends.machine import multicore, multicore_probe, whatif
from backends.machine.profile import CacheLevel, from_json, load, with_block
from ma_cli.main import main
from ma_core.errors import ProfileError

SERVER = (CacheLevel(1, 48 << 10, 12, 64), CacheLevel(2, 2 << 20, 16, 64), CacheLevel(3, 300 << 20, 20, 64))


def block(ratio: float = 0.6) -> dict[str, Any]:
    """A hand-made block: memory read per core falls to ``ratio`` with two cores."""
    def point(size: int, level: str, read: float) -> dict[str, Any]:
        return {"size_bytes": size, "level": level, "read_gbs": read, "triad_gbs": read * 0.8}

    return {"version": 1, "samples": 3, "statistic": "median",
            "runs": [{"cores": 1, "cpus": [0], "points": [point(2048, "L1", 30.0), point(131072, "memory", 10.0)]},
                     {"cores": 2, "cpus": [0, 1], "points": [point(2048, "L1", 30.0),
                                                             point(65536, "memory", 10.0 * ratio)]}]}


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = sample_profile().save(tmp_path_factory.mktemp("multicore") / "p.json")
    assert main(["machine", "multicore", str(path), "--cores", "1,2", "--quick"]) == 0
    return path


def test_one_and_two_cores_measured_into_the_profile(measured: Path) -> None:
    cores = load(measured).memory.multicore
    assert cores is not None and [run.cores for run in cores.runs] == [1, 2]
    assert [len(set(run.cpus)) for run in cores.runs] == [1, 2]
    for run in cores.runs:
        # the hierarchy's levels: a private cache, the core's share of the last one, memory past twice it
        assert [p.level for p in run.points] == ["L1", "L2", "memory"]
        assert run.memory.size_bytes * run.cores >= 2 * 65536
        for p in run.points:
            assert p.read_bytes_per_s > 1e8 and p.triad_bytes_per_s > 1e8
            assert len(p.read_samples_bytes_per_s) == len(p.triad_samples_bytes_per_s) == 3
    # each run's memory point against the one-core run's (timings on a host others load: no order is asserted)
    ratios = dict(cores.memory_ratio())
    assert ratios[1] == 1.0 and ratios[2] == pytest.approx(cores.runs[1].memory.read_bytes_per_s
                                                           / cores.runs[0].memory.read_bytes_per_s)


def test_show_and_plot(measured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["machine", "show", str(measured)]) == 0
    out = capsys.readouterr().out
    assert "multicore MultiMAPS, GB/s per core (stride-1 read / triad) with k cores at once:" in out
    assert "k = 2" in out and "memory read per core over one core alone: k=1 1.00, k=2 " in out
    assert main(["machine", "plot", str(measured), "-o", str(tmp_path / "fig"), "--stride", "8"]) == 0
    assert (tmp_path / "fig-multicore.png").read_bytes()[:4] == b"\x89PNG"


def test_the_block_round_trips_and_what_ifs_change_it() -> None:
    machine = with_block(sample_profile(), multicore.FIELD, block(0.6))
    assert machine.memory.multicore is not None
    assert machine.memory.multicore.memory_ratio() == [(1, 1.0), (2, pytest.approx(0.6))]
    again = from_json(json.loads(json.dumps(machine.to_json())))
    assert again.memory.multicore == machine.memory.multicore
    halved = whatif.apply(machine, whatif.parse("memory.multicore.runs[1].points[1].read_gbs=*0.5"))
    assert halved.memory.multicore is not None
    assert dict(halved.memory.multicore.memory_ratio())[2] == pytest.approx(0.3)
    every = whatif.apply(machine, whatif.parse("memory.multicore.runs.points.read_gbs=*2"))
    assert every.memory.multicore is not None
    assert every.memory.multicore.memory_read() == [(1, pytest.approx(20e9)), (2, pytest.approx(12e9))]


@pytest.mark.parametrize("change, field, message", [
    (lambda b: b["runs"].pop(0), "memory.multicore.runs", "distinct core counts including 1"),
    (lambda b: b["runs"][1].update(cpus=[0, 0]), "memory.multicore.runs[1].cpus", "expected 2 distinct cpus"),
    (lambda b: b["runs"][0]["points"][0].update(level="L3"), "memory.multicore.runs[0].points[0].level",
     "expected one of L1, L2, memory, got 'L3'"),
    (lambda b: b["runs"][1]["points"].pop(1), "memory.multicore.runs[1].points", "a run needs a point in memory"),
    (lambda b: b["runs"][0]["points"][1].update(read_gbs=0), "memory.multicore.runs[0].points[1].read_gbs", ""),
    (lambda b: b.update(version=2), "memory.multicore.version", ""),
])
def test_a_bad_block_is_refused_naming_the_field(change: Any, field: str, message: str) -> None:
    doc = sample_profile().to_json()
    bad = copy.deepcopy(block())
    change(bad)
    doc["memory"]["multicore"] = bad
    with pytest.raises(ProfileError, match=re.escape(f"p.json: field '{field}'")) as error:
        from_json(doc, "p.json")
    assert message in str(error.value)


def test_core_counts_and_working_sets_of_a_server() -> None:
    assert multicore_probe.core_counts(16) == [1, 2, 4, 8, 16]
    assert multicore_probe.core_counts(12) == [1, 2, 4, 8, 12] and multicore_probe.core_counts(1) == [1]
    sets = multicore_probe.working_sets(SERVER, 16)
    assert [level for _, level in sets] == ["L2", "L3", "memory"]
    (private, _), (share, _), (memory, _) = sets
    assert private == 1 << 20 and share * 16 * 2 == 300 << 20 and memory * 16 >= 600 << 20


def test_one_cpu_per_physical_core_first(tmp_path: Path) -> None:
    """Eight hardware threads on four cores (cpu n and n+4 siblings): the first four are one per core."""
    for cpu in range(8):
        topology = tmp_path / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text("0\n")
        (topology / "core_id").write_text(f"{cpu % 4}\n")
    assert multicore_probe.pick_cpus(range(8), tmp_path) == ([0, 1, 2, 3, 4, 5, 6, 7], 4)
    assert multicore_probe.pick_cpus([1, 5, 6], tmp_path) == ([1, 6, 5], 2)


def test_more_cores_than_allowed_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sample_profile().save(tmp_path / "p.json")
    assert main(["machine", "multicore", str(path), "--cores", "1,4096"]) == 2
    assert "4096 cores asked" in capsys.readouterr().err
    assert main(["machine", "multicore", str(path), "--cores", "2"]) == 2
    assert "including 1" in capsys.readouterr().err
