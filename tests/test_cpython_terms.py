"""The profile's ``cpython`` section (``backends/cpython``): measured by the probe, typed and validated once with
errors naming the field (in the section, or where profiles written before it kept the figures), and read by the
maps backend."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from post_fixtures import Loop, Op, Var, make_trace

from backends.cpython import probe as cpython_probe
from backends.cpython.runtime import Overrides, PythonRuntime
from backends.cpython.section import CPythonTerms, Exchange, Subscripts, WorkPoint
from backends.machine import profile as profiles
from backends.machine import whatif
from backends.machine.eq1 import Eq1Params
from backends.machine.profile import CPU, BandwidthFit, CacheLevel, Host, MachineProfile, Memory
from backends.maps import MapsBackend
from ma_core.errors import BackendError, ProfileError
from ma_post import ModelBuilder
from ma_post.traceset import from_traces

TERMS = CPythonTerms(call_overhead_s=1e-6, python_flops=1e9, annotation_s={"region": 1e-7, "loop": 2e-7, "mpi": 3e-7},
                     subscripts=Subscripts(5e-8, {"row_5d": 5e-8}, 1e-6, 3e-7),
                     exchange=Exchange((WorkPoint(0.0, 3e-6, 0), WorkPoint(1e-5, 2e-5, 4)), 3, 1e-6, 1e-6,
                                       {"pattern": "irecv-send-wait pairs", "ranks": 2}),
                     probe={"call_kernel": "ufunc_add_8", "calls_s": {"ufunc_add_8": 1e-6}})


def hand_profile(cpython: CPythonTerms | None = None) -> MachineProfile:
    fit = BandwidthFit(Eq1Params((1.0, 10.0), (40e9, 5e9), (), ()))
    return MachineProfile(name="hand", host=Host("h", "c", 1), caches=(CacheLevel(1, 32768, 8, 64),), cpu=CPU(2e9),
                          memory=Memory(4e9), bandwidth_fit=fit, cpython=cpython)


def legacy(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as profiles written before the cpython section kept the same figures: in cpu and network."""
    old = json.loads(json.dumps(doc))
    section = old.pop("cpython")
    old["cpu"].update({k: section[k] for k in ("call_overhead_s", "python_flops", "annotation_s") if k in section})
    old["cpu"]["python_probe"] = {"version": 1, **section.get("probe", {})}
    if "subscripts" in section:
        old["cpu"]["python_probe"]["subscripts"] = section["subscripts"]
    if "exchange" in section:
        old["network"] = {"latency_s": 1e-6, "bandwidth_bytes_per_s": 1e9, "python_exchange": section["exchange"]}
    return old


def test_measured_section_is_plausible_and_round_trips(tmp_path: Path) -> None:
    section = cpython_probe.measure(quick=True)
    calls = section["probe"]["calls_s"]
    assert set(calls) == {"ufunc_add_8", "slice_assign_8", "einsum_dot_8", "sparse_matvec_1row_8"}
    assert section["call_overhead_s"] == calls["ufunc_add_8"]
    # a call into compiled code costs between 10 ns and 1 ms on any machine this runs on
    assert all(1e-8 < seconds < 1e-3 for seconds in calls.values())
    # SciPy's product is several compiled calls behind one operator: dearer than one ufunc
    assert calls["sparse_matvec_1row_8"] > calls["ufunc_add_8"]
    assert 1e6 < section["python_flops"] < 1e12 and section["python_flops"] == section["probe"]["flops"]["ufunc_add"]
    # entering and leaving one annotated block, the runtime live: more than nothing, less than 100 us anywhere
    assert set(section["annotation_s"]) == {"region", "loop", "mpi"}
    assert all(1e-8 < seconds < 1e-4 for seconds in section["annotation_s"].values())
    measured = profiles.with_block(hand_profile(), "cpython", section)
    loaded = profiles.load(measured.save(tmp_path / "p.json"))
    assert loaded == measured and loaded.cpython is not None
    read = loaded.cpython
    assert (read.call_overhead_s, read.python_flops, read.annotation_s) == (
        section["call_overhead_s"], section["python_flops"], section["annotation_s"])
    assert read.subscripts is not None and read.subscripts.seconds == section["subscripts"]["seconds"]
    runtime = PythonRuntime(loaded.cpython, loaded.name)
    assert (runtime.call_overhead_s, runtime.python_flops) == (read.call_overhead_s, read.python_flops)
    given = PythonRuntime(loaded.cpython, loaded.name, Overrides(call_overhead_s=0.0))
    assert (given.call_overhead_s, given.python_flops) == (0.0, read.python_flops)
    bare = PythonRuntime(None, "bare")  # a profile without them: no call cost, and the peak (no NumPy rate)
    assert (bare.call_overhead_s, bare.python_flops, bare.annotation_s) == (0.0, None, None)


def test_a_profile_written_before_the_section_loads_into_it(tmp_path: Path) -> None:
    new = hand_profile(TERMS).to_json()
    old = legacy(new)
    old["cpu"]["python_probe"]["csr_rows"] = {"entries_per_row": [2.0, 8.0], "seconds_per_entry": [6e-10, 5e-10]}
    loaded = profiles.from_json(old, "old.json")
    assert loaded.cpython == TERMS
    assert loaded.cpu.csr_rows is not None and loaded.cpu.csr_rows.points == [(2.0, 6e-10), (8.0, 5e-10)]
    written = loaded.to_json()  # saved again, in the section
    assert written["cpython"] == new["cpython"] and "call_overhead_s" not in written["cpu"]
    assert written["cpu"]["csr_rows"] == old["cpu"]["python_probe"]["csr_rows"]
    assert profiles.from_json(written) == loaded
    both = {**old, "cpython": new["cpython"]}
    with pytest.raises(ProfileError, match="not in both") as caught:
        profiles.from_json(both, "both.json")
    assert caught.value.field == "cpu.call_overhead_s"


@pytest.mark.parametrize("layout", ["section", "legacy"])
def test_bad_terms_name_the_field(tmp_path: Path, layout: str) -> None:
    new = hand_profile(replace(TERMS, exchange=None)).to_json()
    where, block = ("cpython", new["cpython"]) if layout == "section" else ("cpu", legacy(new)["cpu"])
    version = ({"version": 2}, "cpython.version") if layout == "section" else (
        {"python_probe": {"version": 2}}, "cpu.python_probe.version")
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"call_overhead_s": -1.0}, f"{where}.call_overhead_s", "less than or equal to the minimum of 0"),
        ({"python_flops": None}, where, "'python_flops' is a dependency of 'call_overhead_s'"),
        (version[0], version[1], "1 was expected"),
        ({"annotation_s": {"region": 1e-7, "loop": 0, "mpi": 1e-7}}, f"{where}.annotation_s.loop",
         "less than or equal to the minimum of 0"),
        ({"annotation_s": {"region": 1e-7}}, f"{where}.annotation_s.loop", "required field is missing"),
        ({"annotation_s": {"region": 1e-7, "loop": 1e-7, "mpi": 1e-7, "call": 1e-7}}, f"{where}.annotation_s",
         "expected an object with region, loop, mpi")]
    for change, field, message in cases:
        bad = json.loads(json.dumps(new if layout == "section" else legacy(new)))
        bad[where].update(change)
        if change.get("python_flops", 0) is None:
            del bad[where]["python_flops"]
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(ProfileError) as info:
            profiles.load(path)
        assert info.value.field == field and str(path) in str(info.value) and message in str(info.value)
    assert block  # the section or the legacy cpu block was edited


def test_exchange_rows_are_checked_where_the_block_is() -> None:
    doc = hand_profile(TERMS).to_json()
    doc["cpython"]["exchange"]["work"] = [{"work_s": 0.0, "seconds": 1e-6}, {"work_s": 0.0, "seconds": 2e-6}]
    with pytest.raises(ProfileError, match="distinct work_s") as caught:
        profiles.from_json(doc)
    assert caught.value.field == "cpython.exchange.work"
    old = legacy(hand_profile(TERMS).to_json())
    old["network"]["python_exchange"]["version"] = 2
    with pytest.raises(ProfileError, match="1 was expected") as caught:
        profiles.from_json(old)
    assert caught.value.field == "network.python_exchange.version"


def test_what_if_on_the_cpu_terms_changes_the_prediction() -> None:
    base = hand_profile(CPythonTerms(call_overhead_s=1e-6, python_flops=1e8))
    builder = ModelBuilder(from_traces([make_trace([Var("n", 10), Loop("it", "n", [Op("flop", "fl", "1000")])])]))
    before = MapsBackend().predict(builder, base).evaluate({"n": 10})
    assert before == pytest.approx(10 * (1000 / 1e8 + 1e-6))  # the NumPy rate and one assumed call per execution
    faster = whatif.apply(base, whatif.parse("cpu.call_overhead=/2"))
    assert MapsBackend().predict(builder, faster).evaluate({"n": 10}) == pytest.approx(10 * (1000 / 1e8 + 0.5e-6))
    cheaper = whatif.apply(base, whatif.parse("cpu.python=*10"))
    assert MapsBackend().predict(builder, cheaper).evaluate({"n": 10}) == pytest.approx(10 * (1000 / 1e9 + 1e-6))
    # the fields' names in the section, and where profiles written before it kept them, name the same field
    for text in ("cpython.call_overhead_s=/2", "cpu.call_overhead_s=/2", "cpu.call_overhead=5e-7"):
        assert whatif.apply(base, whatif.parse(text)).cpython == faster.cpython


def test_annotation_cost_is_charged_once_per_site_call_by_kind() -> None:
    from test_maps_backend import builder, profile

    values = {"n": 10, "m": 1000, "nprocs": 4}
    region, loop, mpi = 1e-6, 1e-5, 1e-4
    cost = {"region": region, "loop": loop, "mpi": mpi}
    plain = MapsBackend(annotation_s=dict.fromkeys(cost, 0.0)).predict(builder(), profile())
    charged = MapsBackend(annotation_s=cost).predict(builder(), profile())
    # solve once; its loop `it` once (not once per trip); in the loop a flop and a loadstore site n times and
    # three MPI sites n times; the bcast once
    extra = region + loop + 2 * 10 * region + 3 * 10 * mpi + mpi
    assert charged.evaluate(values) - plain.evaluate(values) == pytest.approx(extra)
    assert float((charged.part("runtime", "solve/it") - plain.part("runtime", "solve/it")).subs(values)) == \
        pytest.approx(loop + 2 * 10 * region + 3 * 10 * mpi)
    assert MapsBackend(annotation_s=cost).predict(builder(language="c"), profile()).evaluate(values) == \
        pytest.approx(MapsBackend().predict(builder(language="c"), profile()).evaluate(values))  # C: not charged
    machine = replace(profile(), cpython=CPythonTerms(call_overhead_s=1e-6, python_flops=1e9, annotation_s=cost))
    assert MapsBackend().predict(builder(), machine).evaluate(values) == pytest.approx(
        MapsBackend(annotation_s=cost).predict(builder(), machine).evaluate(values))  # the profile's figures
    assert any("no cpython.annotation_s" in note for note in MapsBackend().predict(builder(), profile()).notes)
    with pytest.raises(BackendError, match="annotation_s must give seconds >= 0 for each of region, loop, mpi"):
        MapsBackend(annotation_s={"region": 1e-6})


def test_annotation_probe_and_block_errors_say_what_went_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    # the child's output is read as JSON of the three kinds: anything else is an error naming the probe
    monkeypatch.setattr(cpython_probe, "_ANNOTATION_SCRIPT", "import sys; print('no figures'); sys.exit(3)")
    with pytest.raises(cpython_probe.CPUTermsError, match=r"annotation probe: the child process \(exit 3\) printed"):
        cpython_probe.measure_annotation(quick=True)
    monkeypatch.setattr(cpython_probe, "_ANNOTATION_SCRIPT", 'print(\'{"region": 1e-7, "loop": 0.0, "mpi": 1e-7}\')')
    with pytest.raises(cpython_probe.CPUTermsError, match="timed no slower than its bare twin"):
        cpython_probe.measure_annotation(quick=True)
