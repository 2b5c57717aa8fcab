"""The profile's CPU terms of Python programs (``backends/machine/cputerms.py``): measured by the probe's
block, stored in ``cpu``, validated with errors naming the field, and read by the maps backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from post_fixtures import Loop, Op, Var, make_trace

from backends.machine import cputerms
from backends.machine import profile as profiles
from backends.machine.profile import BandwidthFit, CacheLevel, MachineProfile
from backends.maps import MapsBackend, whatif
from ma_core.errors import BackendError, ProfileError
from ma_post import ModelBuilder
from ma_post.traceset import from_traces


def hand_profile(**cpu: object) -> MachineProfile:
    fit = BandwidthFit(latencies=[1.0, 10.0], plateaus_gbs=[40.0, 5.0], penalty_f=[], penalty_x=[])
    return MachineProfile(name="hand", host={"hostname": "h", "cpu_model": "c", "cpus": 1, "measured_at": ""},
                          caches=[CacheLevel(1, 32768, 8, 64)], cpu={"peak_flops": 2e9, **cpu},
                          memory={"triad_gbs": 4.0}, bandwidth_fit=fit)


def test_measured_terms_are_plausible_and_round_trip(tmp_path: Path) -> None:
    terms = cputerms.measure(quick=True)
    calls = terms["python_probe"]["calls_s"]
    assert set(calls) == {"ufunc_add_8", "slice_assign_8", "einsum_dot_8", "sparse_matvec_1row_8"}
    assert terms["call_overhead_s"] == calls["ufunc_add_8"]
    # a call into compiled code costs between 10 ns and 1 ms on any machine this runs on
    assert all(1e-8 < seconds < 1e-3 for seconds in calls.values())
    # SciPy's product is several compiled calls behind one operator: dearer than one ufunc
    assert calls["sparse_matvec_1row_8"] > calls["ufunc_add_8"]
    assert 1e6 < terms["python_flops"] < 1e12 and terms["python_flops"] == terms["python_probe"]["flops"]["ufunc_add"]
    # the probe's block carries the CSR curve (what the maps backend prices row loops on), and the schema takes it
    assert terms["python_probe"]["csr_rows"]["entries_per_row"] == [float(k) for k in cputerms.CSR_ROW_LENGTHS]
    path = hand_profile(**terms).save(tmp_path / "p.json")
    loaded = profiles.load(path)
    read = cputerms.python_terms(loaded.cpu)
    assert read == cputerms.PythonTerms(terms["call_overhead_s"], terms["python_flops"], terms["annotation_s"])
    # entering and leaving one annotated block, the runtime live: more than nothing, less than 100 us anywhere
    assert set(terms["annotation_s"]) == {"region", "loop", "mpi"}
    assert all(1e-8 < seconds < 1e-4 for seconds in terms["annotation_s"].values())
    assert MapsBackend().cpu_terms(loaded) == (read.call_overhead_s, read.python_flops)
    assert MapsBackend(call_overhead_s=0.0).cpu_terms(loaded) == (0.0, read.python_flops)
    assert MapsBackend().cpu_terms(hand_profile()) == (0.0, None)  # a profile without them: none, the peak


def test_bad_cpu_terms_name_the_field(tmp_path: Path) -> None:
    assert cputerms.python_terms(hand_profile().cpu) is None  # a profile from before the CPU terms
    doc = hand_profile(call_overhead_s=1e-6, python_flops=1e9, python_probe={"version": 1}).to_json()
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"call_overhead_s": -1.0}, "cpu.call_overhead_s", "less than or equal to the minimum of 0"),
        ({"python_flops": None}, "cpu", "'python_flops' is a dependency of 'call_overhead_s'"),
        ({"python_probe": {"version": 2}}, "cpu.python_probe.version", "1 was expected"),
        ({"annotation_s": {"region": 1e-7, "loop": 0, "mpi": 1e-7}}, "cpu.annotation_s.loop",
         "less than or equal to the minimum of 0"),
        ({"annotation_s": {"region": 1e-7}}, "cpu.annotation_s.loop", "required field is missing")]
    for change, field, message in cases:
        bad = json.loads(json.dumps(doc))
        bad["cpu"].update(change)
        if change.get("python_flops", 0) is None:
            del bad["cpu"]["python_flops"]
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(ProfileError) as info:
            profiles.load(path)
        assert info.value.field == field and str(path) in str(info.value) and message in str(info.value)
    with pytest.raises(ProfileError, match="CPU terms version 3 is not supported"):
        cputerms.python_terms({"call_overhead_s": 1e-6, "python_flops": 1e9, "python_probe": {"version": 3}})


def test_what_if_on_the_cpu_terms_changes_the_prediction() -> None:
    base = hand_profile(call_overhead_s=1e-6, python_flops=1e8, python_probe={"version": 1})
    builder = ModelBuilder(from_traces([make_trace([Var("n", 10), Loop("it", "n", [Op("flop", "fl", "1000")])])]))
    before = MapsBackend().predict(builder, base).evaluate({"n": 10})
    assert before == pytest.approx(10 * (1000 / 1e8 + 1e-6))  # the NumPy rate and one assumed call per execution
    faster = whatif.apply(base, whatif.parse("cpu.call_overhead=/2"))
    assert MapsBackend().predict(builder, faster).evaluate({"n": 10}) == pytest.approx(10 * (1000 / 1e8 + 0.5e-6))
    cheaper = whatif.apply(base, whatif.parse("cpu.python=*10"))
    assert MapsBackend().predict(builder, cheaper).evaluate({"n": 10}) == pytest.approx(10 * (1000 / 1e9 + 1e-6))


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
    assert float((charged.interpreter_total("solve/it") - plain.interpreter_total("solve/it")).subs(values)) == \
        pytest.approx(loop + 2 * 10 * region + 3 * 10 * mpi)
    assert MapsBackend(annotation_s=cost).predict(builder(language="c"), profile()).evaluate(values) == \
        pytest.approx(MapsBackend().predict(builder(language="c"), profile()).evaluate(values))  # C: not charged
    machine = profile()
    machine.cpu.update(call_overhead_s=1e-6, python_flops=1e9, annotation_s=cost)
    assert MapsBackend().predict(builder(), machine).evaluate(values) == pytest.approx(
        MapsBackend(annotation_s=cost).predict(builder(), machine).evaluate(values))  # the profile's figures
    assert any("no cpu.annotation_s" in note for note in MapsBackend().predict(builder(), profile()).notes)
    with pytest.raises(BackendError, match="annotation_s must give seconds >= 0 for each of region, loop, mpi"):
        MapsBackend(annotation_s={"region": 1e-6})


def test_annotation_probe_and_block_errors_say_what_went_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    # the child's output is read as JSON of the three kinds: anything else is an error naming the probe
    monkeypatch.setattr(cputerms, "_ANNOTATION_SCRIPT", "import sys; print('no figures'); sys.exit(3)")
    with pytest.raises(cputerms.CPUTermsError, match=r"annotation probe: the child process \(exit 3\) printed no"):
        cputerms.measure_annotation(quick=True)
    monkeypatch.setattr(cputerms, "_ANNOTATION_SCRIPT", 'print(\'{"region": 1e-7, "loop": 0.0, "mpi": 1e-7}\')')
    with pytest.raises(cputerms.CPUTermsError, match="timed no slower than its bare twin"):
        cputerms.measure_annotation(quick=True)
    base = {"call_overhead_s": 1e-6, "python_flops": 1e9}
    with pytest.raises(ProfileError, match="expected an object with region, loop, mpi") as caught:
        cputerms.python_terms({**base, "annotation_s": 2e-7}, "p.json")
    assert caught.value.field == "cpu.annotation_s"
    with pytest.raises(ProfileError, match="expected a positive number, got -1") as caught:
        cputerms.python_terms({**base, "annotation_s": {"region": 1e-7, "loop": 1e-7, "mpi": -1}}, "p.json")
    assert caught.value.field == "cpu.annotation_s.mpi"
