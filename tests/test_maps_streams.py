"""The vector stream curve (``memory.vector_streams``): the probe's SIMD add stream, the curve read by level,
its schema, and the maps backend pricing a Python kernel's lines beyond L1 with it (or, without it, with
Equation 1's scalar-load stream and a note)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from post_fixtures import Loop, Op, Sub, Var, make_trace, write_run

from backends.machine import profile as profiles
from backends.machine import vectorstreams
from backends.machine.eq1 import Eq1Params
from backends.machine.kernels import Kernels, aligned_array
from backends.machine.probe import ProbeSettings, measure_vector_streams
from backends.machine.profile import CPU, GB, BandwidthFit, CacheLevel, Host, MachineProfile, Memory, StreamPoint
from backends.maps import MapsBackend
from backends.maps.streams import line_bandwidths
from backends.signature import Signatures
from ma_cli.main import main
from ma_core.errors import BackendError, ProfileError
from ma_post import ModelBuilder
from ma_post.traceset import from_traces

C2, B1, B2 = 10.0, 40.0, 5.0  # Equation 1 of one cache and memory, no penalties
L1 = CacheLevel(1, 32768, 8, 64)
L2 = CacheLevel(2, 1 << 20, 8, 64)


def curve(*points: tuple[int, float]) -> dict[str, object]:
    return {"version": 1, "kernel": "vector_add", "isa": "avx2", "bytes_per_element": 24,
            "points": [{"size_bytes": s, "bandwidth_gbs": b} for s, b in points]}


def machine(streams: object | None) -> MachineProfile:
    """The hand profile with the curve's block put into its document (validated like a measured block)."""
    bare = MachineProfile(name="hand", host=Host("h", "c", 64), caches=(L1,), cpu=CPU(2e9), memory=Memory(4e9),
                          bandwidth_fit=BandwidthFit(Eq1Params((1.0, C2), (B1 * GB, B2 * GB), (), ())))
    return bare if streams is None else profiles.with_block(bare, vectorstreams.FIELD, streams)


def read_points(block: object) -> tuple[StreamPoint, ...]:
    streams = machine(block).memory.vector_streams
    assert streams is not None
    return streams.points


def eq1_stream() -> float:
    """F(0.875) of the hand profile: a stride-1 stream of 8-byte words from memory, bytes per second."""
    h = 0.875
    return (h * B1 + (1 - h) * C2 * B2) / (h + (1 - h) * C2) * 1e9


def test_levels_of_the_curve_by_hand() -> None:
    """Level k's figure is the median of the points above twice level k-1 and up to half of level k; memory's
    from twice the last cache. 2 KiB and 16 KiB lie in L1's range, 100 KiB and 512 KiB in L2's, 40 KiB (above
    L1's half, below twice L1) in none."""
    points = read_points(curve((2048, 200.0), (16384, 180.0), (40960, 150.0), (102400, 110.0), (524288, 100.0),
                               (4 << 20, 30.0), (8 << 20, 20.0), (16 << 20, 25.0)))
    assert vectorstreams.level_ranges([L1, L2]) == [(0.0, 16384), (65536, 524288), (2 << 20, float("inf"))]
    assert vectorstreams.level_bandwidths(points, [L1, L2]) == [190e9, 105e9, 25e9]
    # a hierarchy whose memory range no point reaches
    assert vectorstreams.level_bandwidths(points[:3], [L1, L2]) == [190e9, None, None]


@pytest.mark.parametrize(("block", "field", "expected"), [
    (curve((4096, 100.0)) | {"version": 2}, "memory.vector_streams.version", "1 was expected"),
    (curve((4096, 100.0), (8192, -1.0)), "memory.vector_streams.points[1].bandwidth_gbs",
     "less than or equal to the minimum of 0"),
    (curve((4096, 100.0), (8192, 5.0)) | {"points": [{"size_bytes": "big", "bandwidth_gbs": 1.0}]},
     "memory.vector_streams.points[0].size_bytes", "is not of type 'integer'"),
    (curve(), "memory.vector_streams.points", "a non-empty list"),
    ([1, 2], "memory.vector_streams", "is not of type 'object'"),
])
def test_a_bad_block_names_the_field(block: object, field: str, expected: str) -> None:
    with pytest.raises(ProfileError, match=expected) as caught:
        machine(block)
    assert caught.value.field == field
    assert str(caught.value).startswith("<hand>: field")


def test_the_profile_schema_checks_the_block(tmp_path: Path) -> None:
    good = machine(curve((4096, 100.0), (1 << 20, 10.0))).save(tmp_path / "good.json")
    streams = profiles.load(good).memory.vector_streams
    assert streams is not None and streams.points[1].bandwidth_bytes_per_s == 10e9
    assert json.loads(good.read_text())["memory"]["vector_streams"]["points"][1]["bandwidth_gbs"] == 10.0
    doc = json.loads(good.read_text())
    doc["memory"]["vector_streams"]["points"][0]["bandwidth_gbs"] = 0
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match=r"vector_streams.*points.*0.*bandwidth_gbs"):
        profiles.load(tmp_path / "bad.json")


def test_line_bandwidths_vector_eq1_and_the_fallbacks() -> None:
    with_curve = machine(curve((4096, 100.0), (1 << 20, 16.0)))  # L1's point and memory's (>= 64 KiB)
    assert line_bandwidths(with_curve, python=True) == ([16e9], [])
    assert line_bandwidths(with_curve, python=True, streams="eq1") == ([pytest.approx(eq1_stream())], [])
    assert line_bandwidths(with_curve, python=False) == ([pytest.approx(eq1_stream())], [])  # a C program
    scalar, notes = line_bandwidths(machine(None), python=True)
    assert scalar == [pytest.approx(eq1_stream())]
    assert "has no memory.vector_streams" in notes[0] and "ma machine streams" in notes[0]
    scalar, notes = line_bandwidths(machine(curve((4096, 100.0))), python=True)  # no point beyond 64 KiB
    assert scalar == [pytest.approx(eq1_stream())] and "no point inside memory" in notes[0]
    with pytest.raises(BackendError, match="streams must be one of vector, eq1"):
        line_bandwidths(with_curve, python=True, streams="simd")
    with pytest.raises(BackendError, match="streams must be one of vector, eq1"):
        MapsBackend(streams="simd")


def kernel_builder(language: str) -> ModelBuilder:
    ops = [Var("n", 10), Var("m", 1000), Sub("kern", [Loop("it", "n", [Op("flop", "numpy", "4*m")])])]
    return ModelBuilder(from_traces([make_trace(ops, 0, 1, language=language)]))


def test_a_python_kernel_s_lines_at_the_vector_curve_by_hand() -> None:
    """0.25 lines per flop from memory, 64 B each, at memory's vector figure (median of 12 and 16 GB/s): 10 x
    4000 flops x 0.25 x 64 B / 14e9 B/s. The same kernel of a C program, or with --streams eq1, at F(0.875)."""
    lines: dict[str, tuple[float, ...]] = {"kern/it/numpy": (3.0, 0.25)}
    hand = machine(curve((4096, 100.0), (1 << 20, 12.0), (4 << 20, 16.0)))
    values = {"n": 10, "m": 1000}

    def memory(prediction: object) -> float:
        site = next(s for s in prediction.sites if s.path == "kern/it/numpy")  # type: ignore[attr-defined]
        return float(site.memory.subs(values))

    vector = MapsBackend(signatures=Signatures(lines_per_flop=lines)).predict(kernel_builder("python"), hand)
    assert memory(vector) == pytest.approx(10 * 4000 * 0.25 * 64 / 14e9)
    assert vector.measured_traffic == {"kern/it/numpy": pytest.approx(0.25 * 64 / 14e9)}
    assert not any("vector_streams" in note for note in vector.notes)
    paper = MapsBackend(signatures=Signatures(lines_per_flop=lines), streams="eq1").predict(
        kernel_builder("python"), hand)
    c_program = MapsBackend(signatures=Signatures(lines_per_flop=lines)).predict(kernel_builder("c"), hand)
    assert memory(paper) == memory(c_program) == pytest.approx(10 * 4000 * 0.25 * 64 / eq1_stream())
    fallback = MapsBackend(signatures=Signatures(lines_per_flop=lines)).predict(kernel_builder("python"),
                                                                                machine(None))
    assert memory(fallback) == pytest.approx(memory(paper))
    assert any("has no memory.vector_streams" in note for note in fallback.notes)


def test_the_probe_s_vector_add_computes_and_measures_a_curve() -> None:
    kernels = Kernels()
    isa, lanes = kernels.vector_stream_isa()
    a, b, c = aligned_array(64), aligned_array(64), aligned_array(64)
    b[:] = np.arange(64.0)
    c[:] = 0.5
    assert kernels.vector_add(isa, a, b, c, 3) > 0
    assert np.array_equal(a, np.arange(64.0) + 0.5)
    settings = ProbeSettings.quick()
    block = measure_vector_streams(kernels, [L1, L2], settings)
    points = read_points(block)
    sizes = vectorstreams.working_sets([L1, L2], settings.sizes // 2, settings.llc_multiple)
    assert [p.size_bytes for p in points] == sizes
    assert block["isa"] == isa and lanes in (2, 4, 8)
    assert all(len(row["samples_gbs"]) == settings.samples for row in block["points"])  # type: ignore[index]
    assert all(p.size_bytes % (3 * 64) == 0 and p.bandwidth_bytes_per_s > 0 for p in points)


def test_ma_machine_streams_fills_a_profile_and_show_prints_it(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = machine(None).save(tmp_path / "p.json")
    assert main(["machine", "show", str(path)]) == 0
    assert "vector stream curve: not measured" in capsys.readouterr().out
    assert main(["machine", "streams", str(path)]) == 0
    streams = profiles.load(path).memory.vector_streams
    assert streams is not None and len(streams.points) == 24
    assert main(["machine", "show", str(path)]) == 0
    assert "by level (GB/s): L1 " in capsys.readouterr().out
    assert main(["machine", "streams", "amd-epyc-zen4-kvm"]) != 0  # a shipped profile is not written in place


def test_ma_predict_streams_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``ma predict --streams`` reaches the backend: the kernel's memory at V (vector) or F(0.875) (eq1)."""
    ops = [Var("n", 10), Var("m", 1000), Sub("kern", [Loop("it", "n", [Op("flop", "numpy", "4*m")])])]
    run = write_run(tmp_path / "run", ops, 1, language="python")
    machine_file = machine(curve((4096, 100.0), (1 << 20, 14.0))).save(tmp_path / "hand.json")
    signature = tmp_path / "sig.json"
    signature.write_text(json.dumps({"format": "ma-signature",
                                     "sites": {"kern/it/numpy": {"lines_per_flop": [3.0, 0.25]}}}))
    for streams, bandwidth in (("vector", 14e9), ("eq1", eq1_stream())):
        assert main(["predict", str(run), "--machine", str(machine_file), "--signatures", str(signature),
                     "--streams", streams, "--format", "json"]) == 0
        report = json.loads(capsys.readouterr().out)
        kern = next(r for r in report["subroutines"] if r["name"] == "kern")
        assert kern["memory"] == pytest.approx(10 * 4000 * 0.25 * 64 / bandwidth)
