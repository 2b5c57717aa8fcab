"""The subscript term: a subscript's price probed into ``cpython.subscripts`` (``backends/cpython/subscripts.py``),
read back with errors naming the field, and charged per counted subscript per execution in the runtime part
(``backends/cpython/runtime.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sympy
from test_cpython_terms import hand_profile
from test_maps_backend import builder, profile

from backends.cpython import subscripts
from backends.cpython.section import CPythonTerms
from backends.machine import profile as profiles
from backends.machine import whatif
from backends.maps import MapsBackend
from backends.signature import Signatures, load_signature_file, save_signature_file
from ma_core.errors import BackendError, ProfileError

VALUES = {"n": 10, "m": 1000, "nprocs": 4}


def with_subscript_price(seconds: object) -> dict[str, Any]:
    """The hand profile of test_maps_backend with CPython terms whose subscripts block holds ``seconds``."""
    doc = profile().to_json()
    doc["cpython"] = {"version": 1, "call_overhead_s": 1e-6, "python_flops": 1e9, "subscripts": {"seconds": seconds}}
    return doc


def test_the_probe_measures_every_kind_and_the_profile_keeps_it(tmp_path: Path) -> None:
    block = subscripts.measure(quick=True)
    assert set(block["kinds_s"]) == set(subscripts.KINDS)
    # a view or a store costs more than nothing and less than a microsecond-scale call on any host this runs on
    assert all(1e-9 < s < 1e-5 for s in block["kinds_s"].values())
    assert block["seconds"] == pytest.approx(sum(block["kinds_s"].values()) / len(subscripts.KINDS))
    assert block["view_ufunc_s"] > 0 and block["contiguous_ufunc_s"] > 0
    machine = profiles.with_block(hand_profile(CPythonTerms(1e-6, 1e9)), subscripts.FIELD, block)
    loaded = profiles.load(machine.save(tmp_path / "p.json"))  # the schema takes the block
    assert loaded.cpython is not None and loaded.cpython.subscripts is not None
    assert loaded.cpython.subscripts.seconds == block["seconds"]


def test_subscripts_per_execution_times_the_price_scale_with_the_trip_counts(tmp_path: Path) -> None:
    # per execution: 4 subscripts in each iteration of solve/it (n of them), 2 in solve's own code (once)
    signatures = Signatures(c_calls={"solve/it": 1.0}, subscripts={"solve/it": 4.0, "solve": 2.0})
    saved = load_signature_file(save_signature_file(signatures, tmp_path / "sig.json"), 2)
    assert saved.subscripts == {"solve/it": 4.0, "solve": 2.0}
    machine = profiles.from_json(with_subscript_price(1e-7), "<hand>")
    prediction = MapsBackend(signatures=saved, call_overhead_s=0.0).predict(builder(), machine)
    total = prediction.part("runtime", "solve")
    assert sympy.Symbol("n") in total.free_symbols
    for n in (1, 10, 1000):
        assert float(total.subs({**VALUES, "n": n})) == pytest.approx(4e-7 * n + 2e-7, rel=1e-12)
    assert any("subscripts" in note and "100 ns" in note for note in prediction.notes)
    # with the calls: 1 us per call per iteration besides; and the override and a what-if move the price alike
    both = MapsBackend(signatures=saved).predict(builder(), machine).part("runtime", "solve")
    assert float(both.subs(VALUES)) == pytest.approx(10 * (1e-6 + 4e-7) + 2e-7, rel=1e-12)
    doubled = whatif.apply(machine, whatif.parse("cpu.subscript=*2"))
    again = MapsBackend(signatures=saved, call_overhead_s=0.0).predict(builder(), doubled).part("runtime", "solve")
    assert float(again.subs(VALUES)) == pytest.approx(2 * (4e-7 * 10 + 2e-7), rel=1e-12)
    given = MapsBackend(signatures=saved, call_overhead_s=0.0, subscript_s=5e-8).predict(builder(), machine)
    assert float(given.part("runtime", "solve").subs(VALUES)) == pytest.approx(5e-8 * 42, rel=1e-12)
    with pytest.raises(BackendError, match="subscript_s must be >= 0"):
        MapsBackend(subscript_s=-1.0)


def test_a_profile_without_the_price_loads_and_the_prediction_says_so() -> None:
    doc = with_subscript_price(1e-7)
    del doc["cpython"]["subscripts"]
    old = profiles.from_json(doc, "<old>")
    assert old.cpython is not None and old.cpython.subscripts is None
    signatures = Signatures(subscripts={"solve/it": 4.0})
    prediction = MapsBackend(signatures=signatures, call_overhead_s=0.0).predict(builder(), old)
    assert float(prediction.part("runtime", "solve").subs(VALUES)) == 0.0  # the old behaviour: not charged
    assert any("has no cpython.subscripts" in note and "ma machine subscripts" in note
               for note in prediction.notes)


def test_a_malformed_price_names_the_field(tmp_path: Path) -> None:
    for bad in (-1.0, "fast", None):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(with_subscript_price(bad)))
        with pytest.raises(ProfileError) as info:
            profiles.load(path)  # the schema refuses it at load
        assert str(info.value.field).startswith(subscripts.FIELD) and str(path) in str(info.value)
    signature = tmp_path / "sig.json"
    signature.write_text(json.dumps({"format": "ma-signature", "sites": {"solve": {"subscripts": -2}}}))
    with pytest.raises(BackendError, match=r"sites\.solve'\.subscripts: expected a number >= 0"):
        load_signature_file(signature, 2)


def test_a_subscript_timed_at_zero_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subscripts, "_difference", lambda *args: 0.0)
    with pytest.raises(subscripts.SubscriptProbeError, match=r"no slower than its bare loop.*row_5d"):
        subscripts.measure(quick=True)


def test_ma_machine_subscripts_fills_a_profile_and_show_prints_it(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from ma_cli.main import main

    path = hand_profile(CPythonTerms(1e-6, 1e9)).save(tmp_path / "p.json")
    assert main(["machine", "show", str(path)]) == 0
    assert "a subscript: not measured (ma machine subscripts PROFILE)" in capsys.readouterr().out
    assert main(["machine", "subscripts", str(path), "--quick"]) == 0
    terms = profiles.load(path).cpython
    assert terms is not None and terms.subscripts is not None and terms.subscripts.seconds > 0
    price = terms.subscripts.seconds
    assert main(["machine", "show", str(path)]) == 0
    assert f"a subscript: {price * 1e9:.0f} ns" in capsys.readouterr().out
    assert main(["machine", "subscripts", "amd-epyc-zen4-kvm"]) != 0  # a shipped profile is not written in place
    bare = hand_profile().save(tmp_path / "bare.json")  # no CPU terms of Python programs at all
    assert main(["machine", "subscripts", str(bare)]) != 0
    assert "field 'cpython'" in capsys.readouterr().err
