"""CSR row loops in the maps backend (``backends/maps/rowchain.py``): the probe's curve of SciPy's CSR product by
entries per row (measured for real), its symbolic interpolation, a kernel a signature states as a row loop (its
chains in L1 plus its memory beyond L1 hits), the signature file's ``csr_rows`` and its errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import sympy
from post_fixtures import Loop, Op, Var, make_trace, octave_value

from backends.machine import csrrows
from backends.machine import profile as profiles
from backends.machine.curves import constant_ends as seconds_per_entry
from backends.machine.eq1 import Eq1Params
from backends.machine.profile import CPU, GB, BandwidthFit, CacheLevel, Host, MachineProfile, Memory
from backends.maps import MapsBackend
from backends.signature import Signatures, load_signature_file, save_signature_file
from ma_core.errors import BackendError, ProbeError, ProfileError
from ma_post import ModelBuilder
from ma_post.traceset import from_traces

PEAK, C2, B1, B2 = 2e9, 10.0, 40.0, 5.0
CURVE = {"entries_per_row": [2.0, 8.0], "seconds_per_entry": [1e-9, 4e-9]}
VALUES = {"n": 10, "m": 1000}


def profile(curve: dict[str, list[float]] | None = CURVE) -> MachineProfile:
    fit = BandwidthFit(Eq1Params((1.0, C2), (B1 * GB, B2 * GB), (), ()))
    bare = MachineProfile(name="hand", host=Host("h", "c", 64), caches=(CacheLevel(1, 32768, 8, 64),), cpu=CPU(PEAK),
                          memory=Memory(4e9), bandwidth_fit=fit)
    return bare if curve is None else profiles.with_block(bare, profiles.CSR_ROWS_FIELD, curve)


def builder(flops: str = "2*m") -> ModelBuilder:
    """A loop of n iterations around a kernel (a loadstore region of 3m words in a flop region) and a loop site."""
    program = [Var("n", 10), Var("m", 1000),
               Loop("it", "n", [Op("flop", "k", flops, body=[Op("loadstore", "k_ls", "3*m")]),
                                Loop("inner", "1", [])])]
    return ModelBuilder(from_traces([make_trace(program, 0, 1, language="c")]))


def memory_seconds() -> float:
    """10 x 3000 words x 8 B at F(h) of the assumed stride-1 stream, h1 = 0.875, without penalties."""
    h1 = 0.875
    return 10 * 3000 * 8 / ((h1 * B1 + (1 - h1) * C2 * B2) / (h1 + (1 - h1) * C2) * 1e9)


def test_the_curve_interpolates_in_log_log_and_keeps_its_end_values() -> None:
    points = [(2.0, 1e-9), (8.0, 4e-9), (32.0, 4e-9)]
    k = sympy.Symbol("k")
    curve = seconds_per_entry(points, k)
    assert float(curve.subs(k, 4)) == pytest.approx(2e-9)  # slope 1 in log-log between 2 and 8
    assert float(curve.subs(k, 1)) == pytest.approx(1e-9)
    assert float(curve.subs(k, 16)) == pytest.approx(4e-9)
    assert float(curve.subs(k, 1000)) == pytest.approx(4e-9)
    assert float(seconds_per_entry([(2.0, 1e-9), (8.0, 2e-9)], 4.0)) == pytest.approx(math.sqrt(2) * 1e-9)


def in_l1_seconds() -> float:
    """The same words as L1 hits: at Eq. 1's L1 plateau."""
    return 10 * 3000 * 8 / (B1 * 1e9)


@pytest.mark.parametrize(("entries", "rows", "chain", "extra_flops"),
                         [("m", "m/4", 10 * 1000 * 2e-9, 0), ("m", "m/2", 10 * 1000 * 1e-9, 0),
                          ("m/4", "m/4", 10 * 250 * 1e-9, 10 * 1500)])
def test_a_stated_row_loop_costs_its_chains_in_l1_and_its_memory_beyond(entries: str, rows: str, chain: float,
                                                                          extra_flops: int) -> None:
    """Entries over rows per call: 4 a row (2 ns an entry on the curve: chains of 20 us over the words' 6 us as L1
    hits), 2 a row (1 ns: 10 us), or m/4 entries of one a row (below the curve: 1 ns; 2.5 us of chains, under the
    6 us the words take from L1). The kernel costs max(chains, M_1) + (M - M_1), M = 12.4 us its memory at F(h),
    plus the flops beyond the entries' two each (the last case: 1500 a call)."""
    prediction = MapsBackend(signatures=Signatures(csr_rows={"it/k/k_ls": (entries, rows)})).predict(
        builder(), profile(), {})
    kernel = sum(float(s.total.subs(VALUES)) for s in prediction.sites if s.path.startswith("it/k"))
    memory, in_l1 = memory_seconds(), in_l1_seconds()
    assert kernel == pytest.approx(max(chain, in_l1) + memory - in_l1 + extra_flops / PEAK)
    memory_part = sum(float(s.memory.subs(VALUES)) for s in prediction.sites if s.path.startswith("it/k"))
    assert memory_part == pytest.approx(memory)  # memory stays where it was, the chains go to compute
    assert any("CSR row loops" in note and "it/k" in note for note in prediction.notes)


def test_flops_beyond_the_entries_are_added_and_the_paper_forms_ignore_the_statement() -> None:
    signatures = Signatures(csr_rows={"it/k/k_ls": ("m", "m/4")})
    loop = 10 * VALUES["m"] * 2e-9 + memory_seconds() - in_l1_seconds()
    for form in ("auto", "net"):
        prediction = MapsBackend(signatures=signatures, overlap=form).predict(builder("5*m"), profile(), {})
        assert prediction.evaluate(VALUES) == pytest.approx(loop + 10 * 3000 / PEAK)
    summed = MapsBackend(signatures=signatures, overlap="sum").predict(builder("5*m"), profile(), {})
    assert summed.evaluate(VALUES) == pytest.approx(10 * 5000 / PEAK + memory_seconds())


def test_without_the_curve_a_stated_row_loop_is_priced_like_any_kernel_and_the_notes_say_so() -> None:
    signatures = Signatures(csr_rows={"it/k/k_ls": ("m", "m/4")})
    prediction = MapsBackend(signatures=signatures).predict(builder(), profile(None), {})
    plain = MapsBackend().predict(builder(), profile(None), {})
    assert prediction.evaluate(VALUES) == pytest.approx(plain.evaluate(VALUES))
    assert any("no cpu.csr_rows" in note for note in prediction.notes)


def test_the_row_length_stays_symbolic() -> None:
    prediction = MapsBackend(signatures=Signatures(csr_rows={"it/k/k_ls": ("m", "m/4")})).predict(
        builder(), profile())
    assert prediction.free_inputs == ["m", "n"]
    assert prediction.evaluate(VALUES) == pytest.approx(10 * 1000 * 2e-9 + memory_seconds() - in_l1_seconds())


def test_a_row_loop_stated_for_a_region_that_is_no_kernel_is_an_error() -> None:
    with pytest.raises(BackendError, match=r"site 'it/inner'.*loop region, not a flop or loadstore kernel"):
        MapsBackend(signatures=Signatures(csr_rows={"it/inner": ("m", "m")})).predict(builder(), profile())


def test_the_signature_file_carries_csr_rows_and_names_a_bad_one(tmp_path: Path) -> None:
    path = save_signature_file(Signatures(csr_rows={"it/k/k_ls": ("na*nonzer", "na/num_proc_rows")}),
                               tmp_path / "sig.json")
    assert load_signature_file(path, 2).csr_rows == {"it/k/k_ls": ("na*nonzer", "na/num_proc_rows")}
    for stated, expected in (({"entries": "m"}, "expected {\"entries\": EXPR, \"rows\": EXPR}"),
                             ({"entries": "m", "rows": 4}, r"csr_rows.rows: expected an expression string"),
                             ({"entries": "m*(", "rows": "m"}, r"csr_rows.entries: 'm\*\(' is not an expression")):
        path.write_text(json.dumps({"format": "ma-signature", "sites": {"it/k/k_ls": {"csr_rows": stated}}}))
        with pytest.raises(BackendError, match=r"sig.json: field 'sites.it/k/k_ls'.*" + expected):
            load_signature_file(path, 2)


def test_the_probe_measures_the_csr_curve_and_the_profile_checks_it() -> None:
    measured = csrrows.measure_csr_rows(quick=True)
    assert measured["entries_per_row"] == [float(k) for k in csrrows.CSR_ROW_LENGTHS]
    # an entry of a CSR product in cache costs between 0.05 and 50 ns on any machine this runs on
    assert all(5e-11 < s < 5e-8 for s in measured["seconds_per_entry"])
    curve = profile(measured).cpu.csr_rows
    assert curve is not None and [k for k, _ in curve.points] == sorted(measured["entries_per_row"])
    assert profile(None).cpu.csr_rows is None
    for bad, message in (({"entries_per_row": [2.0]}, "required field is missing"),
                         ({"entries_per_row": [2.0, 4.0], "seconds_per_entry": [1e-9]}, "of one length"),
                         ({"entries_per_row": [2.0], "seconds_per_entry": [-1.0]}, "minimum of 0"),
                         ({"entries_per_row": [2.0, 2.0], "seconds_per_entry": [1e-9, 1e-9]}, "distinct row")):
        with pytest.raises(ProfileError, match=message) as caught:
            profile(bad)
        assert str(caught.value.field).startswith("cpu.csr_rows")


def test_the_csr_probe_takes_more_rounds_through_noise_and_then_names_what_it_could_not_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's noise is simulated (the timer is the one thing a test cannot make noisy on demand): a first round
    whose two sizes time alike is followed by another; a size difference that never shows is a ProbeError."""
    timings: list[float] = []

    def timed(call: object, per_timing: int) -> float:
        timings.append(1e-6)
        larger, first_round = len(timings) % 2 == 1, len(timings) <= 2 * 9  # a pair a repeat, 9 repeats a round
        return 1e-6 + (1e-9 if larger or first_round else 0.0)  # noise slows the smaller one in the first round

    monkeypatch.setattr(csrrows, "_seconds_per_call", timed)
    monkeypatch.setattr(csrrows, "CSR_ROW_LENGTHS", (8,))
    measured = csrrows.measure_csr_rows(quick=True)
    assert measured["seconds_per_entry"] == [pytest.approx(1e-9 / 1024)] and len(timings) == 2 * 2 * 9
    monkeypatch.setattr(csrrows, "_seconds_per_call", lambda call, per_timing: 1e-6)
    with pytest.raises(ProbeError, match=r"8 entries per row timed no slower on 2048 nonzeros than on 1024 in 4 "
                                         r"rounds of 9 timings"):
        csrrows.measure_csr_rows(quick=True)


@pytest.mark.octave
def test_a_row_loop_prediction_exported_to_octave_evaluates_to_the_same_number(tmp_path: Path) -> None:
    """The curve's Piecewise of powers of entries / rows exports like the rest: m = 1000 gives 5.3 a row, between
    two measured row lengths."""
    b = builder()
    prediction = MapsBackend(signatures=Signatures(csr_rows={"it/k/k_ls": ("m", "m/4 - 62")})).predict(b, profile())
    model = b.submodel("maps_time", prediction.total)
    expected = prediction.evaluate(VALUES)
    per_entry = 1e-9 * (1000 / 188 / 2) ** 1.0  # slope 1 in log-log between 2 and 8 entries a row
    assert expected == pytest.approx(10 * 1000 * per_entry + memory_seconds() - in_l1_seconds())
    assert octave_value(model, VALUES, tmp_path) == pytest.approx(expected, rel=1e-12)
