"""A Python program's messages beyond the C latency (``cpython.exchange``): the term by hand, how the maps backend
charges it (per latency a message pays, Python programs only, its zero-work part beyond one rank per core, nothing
without the curve), the block's schema and errors, and the probe with real MPI ranks."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import sympy
from test_maps_backend import BANDWIDTH, LATENCY, builder, halo_seconds, profile

from backends.cpython import exchange
from backends.cpython.runtime import message_extra as python_message_extra
from backends.cpython.section import EXCHANGE_CALLS, EXCHANGE_PATTERN
from backends.machine.profile import MachineProfile, from_json, load, with_block
from backends.maps import MapsBackend
from ma_cli.main import main
from ma_core.errors import ProfileError
from ma_post.export.octave import export_octave

CALL = 0.5e-6  # seconds per counted call (the backend's call_overhead_s in these tests)
VALUES = {"n": 10, "m": 1000}


def block(rows: list[tuple[float, float]], calls: int = 3, version: int = 1) -> dict[str, object]:
    return {"version": version, "pattern": EXCHANGE_PATTERN, "ranks": 2, "bytes": 8, "calls": calls,
            "work": [{"passes": i, "work_s": w, "seconds": s} for i, (w, s) in enumerate(rows)]}


def with_curve(rows: list[tuple[float, float]], **reference: float) -> MachineProfile:
    return with_block(profile(), exchange.FIELD, {**block(rows), **reference})


def test_the_extra_by_hand() -> None:
    """max(0, y(w) - w - L - calls c): y linear from the zero-work point to the next, then w/x_k y_k."""
    curve = [(0.0, 4e-6), (10e-6, 16e-6)]
    extra = [float(python_message_extra(curve, 3, 1e-6, CALL, sympy.Float(w))) for w in (0.0, 5e-6, 20e-6)]
    assert extra == pytest.approx([4e-6 - 2.5e-6, (4e-6 + 6e-6) - 5e-6 - 2.5e-6, 32e-6 - 20e-6 - 2.5e-6])
    # a curve faster than L and the calls charge already: nothing more
    assert float(python_message_extra([(0.0, 2e-6)], 3, 1e-6, CALL, sympy.Float(1e-6))) == 0.0
    w = sympy.Symbol("w")
    symbolic = python_message_extra(curve, 3, 1e-6, CALL, w)
    assert float(symbolic.subs(w, 5e-6)) == pytest.approx(extra[1])


def test_the_backend_charges_it_per_latency_of_a_python_programs_messages() -> None:
    # y = 4 us + w: the extra is 4 - L - 3 c = 1.5 us whatever the work per message
    flat = with_curve([(0.0, 4e-6), (1.0, 1.0 + 4e-6)])
    extra = 4e-6 - LATENCY - 3 * CALL
    prediction = MapsBackend(call_overhead_s=CALL, cores=0).predict(builder(), flat)
    assert any("cpython.exchange" in note for note in prediction.notes)
    point = {**VALUES, "nprocs": 4}
    assert halo_seconds(prediction, point) == pytest.approx(20 * (LATENCY + extra) + 20 * 8000 / BANDWIDTH, rel=1e-9)
    allreduce = next(s for s in prediction.sites if s.path == "solve/it/sum")
    assert float(allreduce.communication.subs(point)) == pytest.approx(2 * (10 * (LATENCY + extra) + 80 / BANDWIDTH))
    # a C program, the option off, a profile without the curve: L alone (the last says so)
    plain = 20 * LATENCY + 20 * 8000 / BANDWIDTH
    for backend, language, machine in ((MapsBackend(call_overhead_s=CALL, cores=0), "c", flat),
                                       (MapsBackend(call_overhead_s=CALL, cores=0, python_exchange=False), "python",
                                        flat),
                                       (MapsBackend(call_overhead_s=CALL, cores=0), "python", profile())):
        other = backend.predict(builder(language=language), machine)
        assert halo_seconds(other, point) == pytest.approx(plain, rel=1e-12)
        assert any("has no cpython.exchange" in n for n in other.notes) == (machine is not flat)


def test_the_work_per_message_reads_the_curve_and_beyond_one_rank_per_core_only_the_calls() -> None:
    curve = [(0.0, 4e-6), (1e-3, 1.5e-3)]  # y = 4 us + 1.496 w up to 1 ms of work
    machine = with_curve(curve)
    prediction = MapsBackend(call_overhead_s=CALL, cores=2).predict(builder(), machine)
    for procs in (2, 4):
        point = {**VALUES, "nprocs": procs}
        work = float(prediction.work_per_message.subs(point))
        assert 0 < work < 1e-3
        at = work if procs <= 2 else 0.0  # 4 ranks on 2 cores: the oversubscribed curve's wait, the calls' part here
        extra = 4e-6 + (1.5e-3 - 4e-6) / 1e-3 * at - at - LATENCY - 3 * CALL
        assert halo_seconds(prediction, point) == pytest.approx(
            20 * (LATENCY + extra) + 20 * 8000 / BANDWIDTH, rel=1e-9)


def test_a_what_if_on_the_latency_moves_a_message_by_its_change() -> None:
    """The curve's excess is net of the latency it was measured with (the block's reference), so halving the
    profile's L takes L/2 off every message; without a reference the excess absorbs the change."""
    rows = [(0.0, 4e-6), (1.0, 1.0 + 4e-6)]
    point = {**VALUES, "nprocs": 2}
    times = []
    for reference in ({"latency_s": LATENCY}, {}):
        base = with_curve(rows, **reference)
        assert base.network is not None
        faster = replace(base, network=replace(base.network, latency_s=LATENCY / 2))
        backend = MapsBackend(call_overhead_s=CALL, cores=0)
        times.append([halo_seconds(backend.predict(builder(), m), point) for m in (base, faster)])
    assert times[0][0] - times[0][1] == pytest.approx(20 * LATENCY / 2, rel=1e-9)
    assert times[1][0] == pytest.approx(times[1][1], rel=1e-12)


def test_the_block_round_trips_and_bad_ones_name_their_field(tmp_path: Path) -> None:
    machine = with_curve([(0.0, 4e-6), (1e-5, 2e-5)])
    machine.save(tmp_path / "p.json")
    loaded = load(tmp_path / "p.json")
    assert loaded.cpython is not None and machine.cpython is not None
    assert loaded.cpython.exchange == machine.cpython.exchange
    assert loaded.cpython.exchange is not None and loaded.cpython.exchange.curve == [(0.0, 4e-6), (1e-5, 2e-5)]
    doc = json.loads((tmp_path / "p.json").read_text())
    for bad, field in ((block([(0.0, 4e-6)], version=2), "cpython.exchange.version"),
                       (block([(0.0, 4e-6)], calls=-1), "cpython.exchange.calls"),
                       ({**block([(0.0, 4e-6)]), "latency_s": "1us"}, "cpython.exchange.latency_s"),
                       (block([(0.0, -4e-6)]), "cpython.exchange.work[0].seconds"),
                       (block([(0.0, 4e-6), (0.0, 5e-6)]), "cpython.exchange.work"),
                       ({"version": 1, "work": [{"seconds": 1e-6}]}, "cpython.exchange.work[0].work_s"),
                       ([1, 2], "cpython.exchange")):
        doc["cpython"]["exchange"] = bad
        with pytest.raises(ProfileError) as caught:
            from_json(doc, "p.json")
        assert caught.value.field == field and str(caught.value).startswith("p.json: field")


@pytest.mark.mpi
def test_ma_machine_exchange_measures_the_curve_with_two_python_ranks(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    machine = profile()
    machine.save(tmp_path / "p.json")
    assert main(["machine", "exchange", str(tmp_path / "p.json"), "--quick"]) == 0
    assert "written:" in capsys.readouterr().out
    measured = load(tmp_path / "p.json")
    assert measured.network is not None and measured.network.latency_s == LATENCY  # the rest of the profile kept
    found = measured.cpython.exchange if measured.cpython else None
    assert found is not None
    curve = found.curve
    assert found.calls == EXCHANGE_CALLS and len(curve) == len(exchange.QUICK["passes"])
    assert found.latency_s == LATENCY and found.call_overhead_s is None  # the profile's L; it has no CPU terms
    # the work streamed through 64 MiB (4 x a 32 KiB last cache < 64)
    assert found.extra["work_buffer_bytes"] == exchange.MIN_STREAM_MIB << 20
    assert curve[0][0] == 0.0 and all(w > 0 for w, _ in curve[1:])
    assert all(s > 0 for _, s in curve) and curve[-1][1] > curve[0][1]  # more work, more wall time per message
    # a shipped profile's name is not updated in place; a profile without a network block is refused
    assert shutil.which("mpiexec") is not None
    assert main(["machine", "exchange", "no-such-profile-name"]) != 0
    replace(machine, network=None).save(tmp_path / "none.json")
    assert main(["machine", "exchange", str(tmp_path / "none.json")]) != 0
    assert "'network'" in capsys.readouterr().err


def test_the_work_buffer_is_four_times_the_last_cache() -> None:
    assert exchange.stream_mib(32 << 20) == 128 and exchange.stream_mib(1 << 20) == exchange.MIN_STREAM_MIB
    assert exchange.stream_mib((32 << 20) + 1) == 129  # rounded up


@pytest.mark.octave
def test_the_term_exports_to_octave_and_evaluates_to_the_same_number(tmp_path: Path) -> None:
    b = builder()
    prediction = MapsBackend(call_overhead_s=CALL, cores=2).predict(b, with_curve([(0.0, 4e-6), (1e-5, 2e-5),
                                                                                    (1e-4, 1.3e-4)]))
    model = b.submodel("maps_time", prediction.total)
    export_octave([model], tmp_path)
    octave = shutil.which("octave-cli")
    assert octave
    for procs in (2, 8):  # the curve at the work per message; beyond the cores its zero-work part
        args = {"n": 10, "m": 1000, "nprocs": procs}
        call = f"printf('%.17g\\n', maps_time({', '.join(str(args[a]) for a in model.inputs)}))"
        done = subprocess.run([octave, "--no-gui", "--no-window-system", "-q", "--norc", "--eval",
                               f"addpath('{tmp_path}'); {call}"], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr
        expected = prediction.evaluate(args)
        assert float(done.stdout.strip()) == pytest.approx(expected, rel=1e-12)
