"""Machine profiles: JSON round trip, schema errors naming file and field, the cache hierarchy from sysfs and its
overrides, simulated hit rates of MultiMAPS loops, and the shipped example profile."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from backends.machine import hierarchy, hitrates, profile
from backends.machine.eq1 import Eq1Params
from backends.machine.profile import (
    CPU,
    GB,
    BandwidthFit,
    CacheLevel,
    Host,
    MachineProfile,
    Memory,
    Message,
    MultiMapsPoint,
    MultiMapsSettings,
    NetworkProfile,
    Oversubscribed,
)
from ma_core.errors import ProfileError

SMALL = (CacheLevel(1, 4096, 4, 64), CacheLevel(2, 65536, 8, 64))
OVERSUBSCRIBED = {"version": 1, "pattern": "exchange", "ranks": 4, "cores": 2, "latency_s": 4e-5,
                  "bandwidth_bytes_per_s": 1e9, "pingpong": [{"bytes": 8, "seconds": 4e-5}]}


def sample_profile() -> MachineProfile:
    # GB/s figures of a few decimals, as probes write them: bytes per second and back give the same numbers
    points = [MultiMapsPoint("stride", size, (50.0 - 10 * i) * GB, stride=s, samples_bytes_per_s=(1e9, 2e9),
                             hit_rates=tuple(hitrates.stride_hit_rates(SMALL, size, s)))
              for i, size in enumerate((2048, 32768, 262144)) for s in (1, 8)]
    points.append(MultiMapsPoint("random", 2048, 9e9, hit_rates=(0.5, 1.0, 1.0)))
    over = Oversubscribed(4, 2, 4e-5, 1e9, version=1, pingpong=(Message(8, 4e-5),), extra={"pattern": "exchange"})
    return MachineProfile(
        name="sample", host=Host("h", "cpu", 2, "2026-01-01T00:00:00Z"), caches=SMALL, cpu=CPU(1e10, "sse2"),
        memory=Memory(10e9), multimaps=tuple(points),
        multimaps_settings=MultiMapsSettings(samples=2, statistic="median"),
        network=NetworkProfile(2e-6, 5e9, pingpong=(Message(8, 2e-6),), oversubscribed=over),
        bandwidth_fit=BandwidthFit(Eq1Params((1.0, 3.0, 30.0), (50e9, 20e9, 5e9), (1.0, -1.0), (0.1, 0.2))))


def test_round_trip(tmp_path: Path) -> None:
    original = sample_profile()
    path = original.save(tmp_path / "p.json")
    loaded = profile.load(path)
    assert loaded == original
    assert loaded.levels == 3
    assert loaded.bandwidth_fit is not None
    assert loaded.bandwidth_fit.bandwidth([1.0, 1.0, 1.0])[0] == pytest.approx(50e9)
    assert loaded.network is not None and loaded.network.message_seconds(5e9) == pytest.approx(1.000002)
    # the document keeps GB/s: the typed profile's bytes per second are converted at the boundary, both ways
    doc = json.loads(path.read_text())
    assert doc["memory"]["triad_gbs"] == 10.0 and doc["bandwidth_fit"]["plateaus_gbs"] == [50.0, 20.0, 5.0]
    assert doc["multimaps"]["points"][0]["bandwidth_gbs"] == 50.0 and loaded.memory.triad_bytes_per_s == 10e9


def test_fields_this_sdk_does_not_read_are_kept(tmp_path: Path) -> None:
    doc = sample_profile().to_json()
    doc["host"]["rack"] = "b7"
    doc["cpu"]["vendor_note"] = {"microcode": "0xa"}
    doc["memory"]["numa_nodes"] = 1
    loaded = profile.from_json(doc)
    assert loaded.host.extra == {"rack": "b7"} and loaded.cpu.extra == {"vendor_note": {"microcode": "0xa"}}
    assert loaded.to_json() == doc


def test_with_block_validates_the_measured_block() -> None:
    streams = {"version": 1, "isa": "avx2", "points": [{"size_bytes": 8192, "bandwidth_gbs": 90.0}]}
    changed = profile.with_block(sample_profile(), "memory.vector_streams", streams)
    assert changed.memory.vector_streams is not None
    assert changed.memory.vector_streams.points[0].bandwidth_bytes_per_s == 90e9
    with pytest.raises(ProfileError, match="non-empty list of points") as caught:
        profile.with_block(sample_profile(), "memory.vector_streams", {**streams, "points": []})
    assert caught.value.field == "memory.vector_streams.points"


def edited(tmp_path: Path, change: Any) -> Path:
    doc = sample_profile().to_json()
    change(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda d: d["caches"][1].update(size_bytes=-3), "caches[1].size_bytes", "less than the minimum of 1"),
    (lambda d: d["caches"][1].update(level=3), "caches[1].level", "expected level 2"),
    (lambda d: d["caches"][0].update(size_bytes=4000), "caches[0].size_bytes", "whole number of sets"),
    (lambda d: d["caches"][0].update(replacement="PLRU"), "caches[0].replacement", "is not one of"),
    (lambda d: d.update(version=3), "version", "version 3 is not supported"),
    (lambda d: d.update(schema="other"), "schema", "not a machine profile"),
    (lambda d: d["cpu"].pop("peak_flops"), "cpu.peak_flops", "required field is missing"),
    (lambda d: d.pop("caches"), "caches", "required field is missing"),
    (lambda d: d["multimaps"]["points"][2].update(hit_rates=[0.9, 0.5, 1.0]), "multimaps.points[2].hit_rates",
     "cumulative"),
    (lambda d: d["multimaps"]["points"][2].update(hit_rates=[1.0, 1.0]), "multimaps.points[2].hit_rates",
     "expected 3 cumulative hit rates"),
    (lambda d: d["multimaps"]["points"][0].update(pattern="zigzag"), "multimaps.points[0].pattern", "is not one of"),
    (lambda d: d["multimaps"]["points"][0].pop("stride"), "multimaps.points[0].stride", "needs its stride"),
    (lambda d: d["bandwidth_fit"].update(plateaus_gbs=[1.0, 2.0]), "bandwidth_fit.plateaus_gbs", "expected 3"),
    (lambda d: d["network"].update(latency_s="fast"), "network.latency_s", "is not of type 'number'"),
    (lambda d: d["network"].update(oversubscribed={**OVERSUBSCRIBED, "version": 3}), "network.oversubscribed.version",
     "is not one of"),
    (lambda d: d["network"].update(oversubscribed={**OVERSUBSCRIBED, "work": [{"work_s": -1.0, "seconds": 1e-5}]}),
     "network.oversubscribed.work[0].work_s", "less than the minimum of 0"),
    (lambda d: d["network"].update(oversubscribed={**OVERSUBSCRIBED, "pingpong": [{"bytes": 8, "seconds": 0}]}),
     "network.oversubscribed.pingpong[0].seconds", "less than or equal to the minimum of 0"),
])
def test_schema_errors_name_file_and_field(tmp_path: Path, change: Any, field: str, message: str) -> None:
    path = edited(tmp_path, change)
    with pytest.raises(ProfileError, match=message) as caught:
        profile.load(path)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{path}: field {field!r}: ")


def test_unreadable_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read"):
        profile.load(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "ma-machine-profile",\n "version": 1,,}')
    with pytest.raises(ProfileError, match="not valid JSON at line 2, column 15"):
        profile.load(broken)
    broken.write_text("[1, 2]")
    with pytest.raises(ProfileError, match="expected a JSON object"):
        profile.load(broken)


def test_hierarchy_from_sysfs(tmp_path: Path) -> None:
    for index, (level, kind, size, ways) in enumerate([(1, "Data", "32K", 8), (1, "Instruction", "32K", 8),
                                                       (2, "Unified", "1024K", 8), (3, "Unified", "32768K", 16)]):
        d = tmp_path / f"index{index}"
        d.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size), ("ways_of_associativity", ways),
                            ("coherency_line_size", 64)):
            (d / name).write_text(f"{value}\n")
    caches = hierarchy.from_sysfs(root=tmp_path, arch="x86_64")
    assert [(c.level, c.size_bytes, c.ways) for c in caches] == [(1, 32768, 8), (2, 1 << 20, 8), (3, 32 << 20, 16)]
    # the modelled parts: LRU, pages in random frames, and x86's adjacent-line prefetcher at L2
    assert [(c.replacement, c.indexing, c.prefetch) for c in caches] == [
        ("LRU", "physical", "none"), ("LRU", "physical", "adjacent"), ("LRU", "physical", "none")]
    assert [c.prefetch for c in hierarchy.from_sysfs(root=tmp_path, arch="aarch64")] == ["none"] * 3
    assert caches[2].sets == 32768
    overridden = hierarchy.apply_overrides(caches, {2: "512K", 3: "16M:16:64:RR", 1: "32K:8:64:LRU"})
    assert (overridden[1].size_bytes, overridden[1].ways, overridden[1].source) == (512 << 10, 8, "override")
    assert overridden[2].replacement == "RR"
    with pytest.raises(ProfileError, match="expected SIZE"):
        hierarchy.apply_overrides(caches, {2: "lots"})
    with pytest.raises(ProfileError, match="replacement policy"):
        hierarchy.apply_overrides(caches, {2: "512K:8:64:PLRU"})
    with pytest.raises(ProfileError, match="without gaps"):
        hierarchy.apply_overrides(caches, {5: "64M"})
    with pytest.raises(ProfileError, match="no data caches"):
        hierarchy.from_sysfs(root=tmp_path / "index1" / "nothing")


def test_this_hosts_hierarchy_is_read() -> None:
    caches = hierarchy.from_sysfs()
    assert caches[0].level == 1 and all(a.size_bytes < b.size_bytes for a, b in itertools.pairwise(caches))


def test_simulated_hit_rates_of_strided_loops() -> None:
    # fits in L1: every load hits after the warm-up pass
    assert hitrates.stride_hit_rates(SMALL, 2048, 1) == [1.0, 1.0, 1.0]
    # stride 1 past L2: one miss per 64-byte line of 8 words, at every level (LRU, cyclic)
    assert hitrates.stride_hit_rates(SMALL, 1 << 20, 1) == pytest.approx([7 / 8, 7 / 8, 1.0])
    # a line per load, between L1 and L2: L1 always misses (LRU, cyclic), L2 always hits
    assert hitrates.stride_hit_rates(SMALL, 32768, 8) == [0.0, 1.0, 1.0]
    # stride 2 between the two: 3 of 4 loads of a line hit L1
    assert hitrates.stride_hit_rates(SMALL, 32768, 2) == pytest.approx([0.75, 1.0, 1.0])


def test_shipped_example_profiles_load() -> None:
    shipped = profile.shipped_profiles()
    assert shipped, "an example profile ships in backends/profiles/"
    for path in shipped.values():
        machine = profile.load(path)
        assert machine.bandwidth_fit is not None and machine.network is not None
        assert len({p.curve for p in machine.multimaps}) >= 8  # seven strides and the random curve


def test_simulated_hit_rates_of_the_random_loop() -> None:
    import numpy as np

    # a data array that fits in L1: after the warm-up pass every load hits, index and data alike
    small = np.random.default_rng(0).integers(0, 256, 256, dtype=np.uint32)
    assert hitrates.random_hit_rates(SMALL, 2048, small) == [1.0, 1.0, 1.0]
    # a data array of 16 x L2: the index stream hits L1 on 15 of 16 loads (4-byte words, 64-byte lines), the
    # data loads mostly miss everywhere
    words = 16 * 65536 // 8
    big = np.random.default_rng(0).integers(0, words, words, dtype=np.uint32)
    h1, h2, h3 = hitrates.random_hit_rates(SMALL, 8 * words, big)
    assert 0.5 * 15 / 16 <= h1 < 0.5 * 15 / 16 + 0.02 and h1 <= h2 < h1 + 0.05 and h3 == 1.0


def test_schema_is_printed_and_validates_a_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jsonschema import Draft202012Validator

    from ma_cli.main import main

    assert main(["machine", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    Draft202012Validator.check_schema(schema)
    Draft202012Validator(schema).validate(sample_profile().to_json())
