"""The maps backend: Equation 1 in SymPy against its NumPy twin, the convolution and the network costs on
hand-computed cases, the overlap option, assumed hit rates named in the notes, what-if scaling, and the
symbolic prediction exported to Octave and evaluated there."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy
from post_fixtures import Loop, Mpi, Op, Sub, Var, make_trace, octave_value, write_run

from backends import registry
from backends.base import Prediction
from backends.machine import profile as machines
from backends.machine import whatif
from backends.machine.eq1 import Eq1Params
from backends.machine.profile import CPU, GB, BandwidthFit, CacheLevel, Host, MachineProfile, Memory
from backends.maps import MapsBackend
from backends.maps.traffic import seconds_per_flop, stream_rows
from backends.signature import Signatures, load_signature_file, load_signatures, save_signature_file
from ma_cli.main import main
from ma_core.errors import BackendError, ProfileError
from ma_post import ModelBuilder
from ma_post.traceset import from_traces

# Two levels (L1, memory): with no penalties F(h) = (h1 c1 b1 + (1-h1) c2 b2) / (h1 c1 + (1-h1) c2).
C2, B1, B2 = 10.0, 40.0, 5.0
LATENCY, BANDWIDTH, PEAK = 1e-6, 1e9, 2e9


def profile(penalties: bool = False) -> MachineProfile:
    fit = BandwidthFit(Eq1Params((1.0, C2), (B1 * GB, B2 * GB), (3.0,) if penalties else (),
                                 (0.05,) if penalties else ()))
    return MachineProfile(name="hand", host=Host("h", "c", 64), caches=(CacheLevel(1, 32768, 8, 64),),
                          cpu=CPU(PEAK), memory=Memory(4e9),
                          network=machines.NetworkProfile(latency_s=LATENCY, bandwidth_bytes_per_s=BANDWIDTH),
                          bandwidth_fit=fit)


def program() -> list[object]:
    return [Var("n", 10), Var("m", 1000), Var("nprocs", lambda e: e["__size"]),
            Sub("solve", [Loop("it", "n", [
                Op("flop", "fl", "2*m"), Op("loadstore", "ls", "3*m"),
                Mpi("mpi_allreduce", "sum", "8"), Mpi("mpi_send", "halo", "8*m", count="2"),
                Mpi("mpi_irecv", "halo_in", "8*m", count="2")])]),
            Mpi("mpi_bcast", "params", "16")]


def builder(size: int = 4, language: str = "python") -> ModelBuilder:
    return ModelBuilder(from_traces([make_trace(program(), r, size, language=language) for r in range(size)]))


def hand_f(h1: float) -> float:
    return (h1 * B1 + (1 - h1) * C2 * B2) / (h1 + (1 - h1) * C2) * 1e9


def test_eq1_in_sympy_matches_the_numeric_fit() -> None:
    params = Eq1Params((1.0, 6.0, 40.0), (50.0, 20.0, 4.0), (2.0, -1.5), (0.03, 0.4))
    rows = [(1.0, 1.0, 1.0), (0.875, 0.875, 1.0), (0.5, 0.9, 1.0), (0.0, 0.0, 1.0), (0.2, 1.0, 1.0)]
    numeric = params.bandwidth(rows)
    for row, expected in zip(rows, numeric, strict=True):
        assert float(params.symbolic(row)) == pytest.approx(expected, rel=1e-12)
    h = sympy.symbols("h1 h2 h3")
    symbolic = params.symbolic(h)
    assert float(symbolic.subs(dict(zip(h, rows[2], strict=True)))) == pytest.approx(numeric[2], rel=1e-12)


def test_hand_computed_convolution_and_network() -> None:
    backend = registry.create("maps")
    assert isinstance(backend, MapsBackend)
    b = builder()
    prediction = backend.predict(b, profile(), {"nprocs": 4})
    sites = {s.path: s for s in prediction.sites}
    values = {"n": 10, "m": 1000}
    assert float(sites["solve/it/fl"].compute.subs(values)) == pytest.approx(10 * 2000 / PEAK)
    # no signature: the assumed stride-1 stream, h1 = 1 - 8/64
    assert prediction.assumed == ("solve/it/ls",)
    assert any("solve/it/ls" in note and "assumed" in note for note in prediction.notes)
    assert float(sites["solve/it/ls"].memory.subs(values)) == pytest.approx(10 * 3000 * 8 / hand_f(0.875))
    rounds = 2  # ceil(log2 4): recursive doubling and the binomial tree
    assert float(sites["solve/it/sum"].communication.subs(values)) == pytest.approx(
        rounds * (10 * LATENCY + 10 * 8 / BANDWIDTH))
    assert float(sites["solve/it/halo"].communication.subs(values)) == pytest.approx(
        20 * LATENCY + 20 * 8000 / BANDWIDTH)
    assert float(sites["solve/it/halo_in"].communication.subs(values)) == 0.0  # charged at the sender
    assert float(sites["params"].communication) == pytest.approx(rounds * (LATENCY + 16 / BANDWIDTH))
    total = (10 * 2000 / PEAK + 10 * 3000 * 8 / hand_f(0.875) + rounds * (10 * LATENCY + 80 / BANDWIDTH)
             + 20 * LATENCY + 20 * 8000 / BANDWIDTH + rounds * (LATENCY + 16 / BANDWIDTH))
    assert prediction.evaluate(values) == pytest.approx(total, rel=1e-12)
    solve = prediction.by_subroutine()["solve"]
    assert float(solve.total.subs(values)) == pytest.approx(total - rounds * (LATENCY + 16 / BANDWIDTH), rel=1e-12)
    # one rank: every collective is free
    assert float(backend.predict(b, profile(), {"nprocs": 1}).part("communication").subs(values)) == pytest.approx(
        20 * LATENCY + 20 * 8000 / BANDWIDTH)


def test_signatures_replace_the_assumed_rates_and_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "sig.json"
    path.write_text('{"format": "ma-signature", "sites": {"solve/it/ls": [0.5, 1.0]}}')
    prediction = MapsBackend(signatures=load_signatures(path, 2)).predict(builder(), profile(), {"nprocs": 4})
    assert prediction.assumed == ()
    memory = float(prediction.part("memory").subs({"n": 10, "m": 1000}))
    assert memory == pytest.approx(10 * 3000 * 8 / hand_f(0.5))
    path.write_text('{"format": "ma-signature", "sites": {"solve/it/ls": [0.9, 0.8]}}')
    with pytest.raises(BackendError, match=r"sig.json: field 'sites.solve/it/ls': .*cumulative"):
        load_signatures(path, 2)
    with pytest.raises(BackendError, match="expected 2 cumulative hit rates"):
        MapsBackend(signatures={"solve/it/ls": [1.0]}).predict(builder(), profile())
    bad: list[tuple[Any, str]] = [([1.5, 1.0], r"a rate outside \[0, 1\]"), (["high", 1.0], "not a list of numbers")]
    for rates, why in bad:
        with pytest.raises(BackendError, match=rf"signature of site 'solve/it/ls': hit rates .*: {why}"):
            MapsBackend(signatures={"solve/it/ls": rates}).predict(builder(), profile())


def test_max_overlap_costs_the_larger_of_compute_and_memory() -> None:
    values = {"n": 10, "m": 1000, "nprocs": 4}
    summed = MapsBackend().predict(builder(), profile(), {})
    overlapped = MapsBackend(overlap="max").predict(builder(), profile(), {})
    block = "solve/it/"
    compute, memory = 10 * 2000 / PEAK, 10 * 3000 * 8 / hand_f(0.875)

    def block_time(p: Prediction) -> float:
        return sum(float((s.compute + s.memory).subs(values)) for s in p.sites if s.path.startswith(block))

    assert block_time(summed) == pytest.approx(compute + memory)
    assert block_time(overlapped) == pytest.approx(max(compute, memory))
    with pytest.raises(BackendError, match="overlap must be one of auto, net, sum, max, got 'min'"):
        MapsBackend(overlap="min")


def kernel_program(flops: str, words: str) -> list[object]:
    """A loop around one kernel: a loadstore region nested in a flop region (CG's form), and a flop site alone."""
    return [Var("n", 10), Var("m", 1000),
            Loop("it", "n", [Op("flop", "k", flops, body=[Op("loadstore", "k_ls", words)]), Op("flop", "alone", "m")])]


def kernel_builder(flops: str, words: str, language: str = "c") -> ModelBuilder:
    return ModelBuilder(from_traces([make_trace(kernel_program(flops, words), 0, 1, language=language)]))


@pytest.mark.parametrize(("flops", "words", "extra"), [("5*m", "3*m", 2), ("2*m", "3*m", 0)])
def test_net_flop_time_takes_out_one_flop_per_word_of_each_kernel(flops: str, words: str, extra: int) -> None:
    """Net: a kernel's flop time is its flops beyond one per word (F(h)'s probe adds each word it loads), per
    kernel: the 3m words of k take out 3m of k's flops, never the flops of a site outside it."""
    values = {"n": 10, "m": 1000}
    net = MapsBackend(overlap="net").predict(kernel_builder(flops, words), profile(), {})
    summed = MapsBackend(overlap="sum").predict(kernel_builder(flops, words), profile(), {})
    sites = {s.path: s for s in net.sites}
    memory = 10 * 3000 * 8 / hand_f(0.875)
    assert float((sites["it/k"].compute + sites["it/k/k_ls"].compute).subs(values)) == pytest.approx(
        10 * extra * 1000 / PEAK)
    assert float(sites["it/k/k_ls"].memory.subs(values)) == pytest.approx(memory)
    assert float(sites["it/alone"].compute.subs(values)) == pytest.approx(10 * 1000 / PEAK)  # no words of its own
    flop_count = int(flops.split("*")[0])
    assert summed.evaluate(values) == pytest.approx(10 * (flop_count + 1) * 1000 / PEAK + memory)
    assert net.evaluate(values) == pytest.approx(10 * (extra + 1) * 1000 / PEAK + memory)


def test_auto_is_net_at_the_peak_and_sum_at_the_numpy_rate() -> None:
    """auto: net for flops at the FMA peak (a C program, or no NumPy rate in the profile), the paper's sum for a
    Python program's flops at cpu.python_flops, whose ufunc on L1 data holds its own loads and stores."""
    values = {"n": 10, "m": 1000}
    for language, python_flops, form in (("c", None, "net"), ("python", 1e9, "sum"), ("python", None, "net")):
        b = kernel_builder("5*m", "3*m", language)
        auto = MapsBackend(python_flops=python_flops).predict(b, profile(), {})
        explicit = MapsBackend(python_flops=python_flops, overlap=form).predict(b, profile(), {})
        assert auto.evaluate(values) == pytest.approx(explicit.evaluate(values), rel=1e-12)
    net = MapsBackend(overlap="net", python_flops=1e9).predict(kernel_builder("5*m", "3*m", "python"), profile(), {})
    assert net.evaluate(values) == pytest.approx(10 * (2 + 1) * 1000 / 1e9 + 10 * 3000 * 8 / hand_f(0.875))


def test_net_keeps_the_runtime_part_whole() -> None:
    """The runtime part is not flop time: net takes the probe's flops out of the flops only, never below 0."""
    values = {"n": 10, "m": 1000}
    b = kernel_builder("2*m", "3*m", "python")
    net = MapsBackend(overlap="net", call_overhead_s=1e-4, python_flops=PEAK).predict(b, profile(), {})
    assert float(net.part("runtime", "it/k").subs(values)) == pytest.approx(10 * 1e-4)  # one call per execution
    assert float(net.part("compute", "it/k").subs(values)) == 0.0  # 2m flops under the probe's 3m


def test_penalties_and_symbolic_inputs_stay_symbolic() -> None:
    prediction = MapsBackend().predict(builder(), profile(penalties=True))
    assert prediction.free_inputs == ["m", "n", "nprocs"]
    bw = Eq1Params((1.0, C2), (B1, B2), (3.0,), (0.05,)).bandwidth([(0.875, 1.0)])[0] * 1e9
    assert float(prediction.part("memory").subs({"n": 2, "m": 5, "nprocs": 4})) == pytest.approx(2 * 15 * 8 / bw)


@pytest.mark.octave
def test_prediction_exported_to_octave_evaluates_to_the_same_number(tmp_path: Path) -> None:
    b = builder()
    prediction = MapsBackend().predict(b, profile(penalties=True))
    model = b.submodel("maps_time", prediction.total)
    args = {"n": 10, "m": 1000, "nprocs": 8}
    expected = prediction.evaluate(args)
    assert math.isfinite(expected) and expected > 0
    assert octave_value(model, args, tmp_path) == pytest.approx(expected, rel=1e-12)
    assert np.isclose(float(model.evaluate(args)), expected, rtol=1e-12)


def test_what_if_scales_profile_fields() -> None:
    base = profile()
    faster = whatif.apply(base, whatif.parse("network.bandwidth=*2"))
    assert faster.network is not None and faster.network.bandwidth_bytes_per_s == 2 * BANDWIDTH
    slower = whatif.apply(base, whatif.parse("bandwidth_fit.plateaus_gbs[1]=/5"))
    assert slower.bandwidth_fit is not None and slower.bandwidth_fit.params.b == (B1 * GB, B2 * GB / 5)
    assert base.bandwidth_fit is not None and base.bandwidth_fit.params.b[1] == B2 * GB  # a new profile
    # a GB/s field is set in GB/s, as the document writes it; a whole field stays whole where the change leaves it
    set_to = whatif.apply(base, whatif.parse("bandwidth_fit.plateaus_gbs=8"))
    assert set_to.bandwidth_fit is not None and set_to.bandwidth_fit.params.b == (8e9, 8e9)
    assert whatif.apply(base, whatif.parse("caches[0].size_bytes=*2")).caches[0].size_bytes == 65536
    with pytest.raises(ProfileError, match="whole number of sets"):  # the changed profile is validated again
        whatif.apply(base, whatif.parse("caches[0].ways=*3"))
    assert whatif.apply(base, whatif.parse("cpu.peak=4e9")).peak_flops == 4e9
    with pytest.raises(BackendError, match=r"has no field 'network\.speed'"):
        whatif.apply(base, whatif.parse("network.speed=*2"))
    with pytest.raises(BackendError, match="expected FIELD="):
        whatif.parse("network.bandwidth=*fast")
    values = {"n": 10, "m": 1000, "nprocs": 4}
    before = MapsBackend().predict(builder(), base).part("communication").subs(values)
    after = MapsBackend().predict(builder(), faster).part("communication").subs(values)
    latency_part = 2 * 10 * LATENCY + 20 * LATENCY + 2 * LATENCY
    assert float(after) - latency_part == pytest.approx((float(before) - latency_part) / 2)


def test_ma_predict_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", program(), 4)
    machine_file = profile().save(tmp_path / "hand.json")
    assert main(["predict", str(run), "--machine", str(machine_file), "--set", "m=2000",
                 "--what-if", "network.latency=/2", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "solve/it/ls" in captured.err and "assumed" in captured.err  # the missing-signature warning
    report = json.loads(captured.out)
    assert report["assumed_hit_rates"] == ["solve/it/ls"]
    expected = MapsBackend().predict(builder(), profile()).evaluate({"n": 10, "m": 2000, "nprocs": 4})
    assert report["total_s"] == pytest.approx(expected, rel=1e-9)
    solve = next(r for r in report["subroutines"] if r["name"] == "solve")
    assert solve["memory"] == pytest.approx(10 * 6000 * 8 / hand_f(0.875))
    measured = {m["subroutine"]: m for m in report["measured"]}
    assert measured["solve"]["measured_s"] > 0 and measured["solve"]["predicted_s"] == pytest.approx(solve["seconds"])
    study = report["what_if"][0]
    assert study["field"] == "network.latency_s" and study["speedup"] > 1
    halo = next(r for r in study["sites"] if r["site"] == "solve/it/halo")
    assert halo["before_s"] - halo["after_s"] == pytest.approx(20 * LATENCY / 2)
    assert main(["predict", str(run), "--machine", str(machine_file)]) == 0
    text = capsys.readouterr().out
    assert "predicted vs measured" in text and "subroutine" in text
    assert main(["predict", str(run), "--machine", str(machine_file), "--set", "mm=3"]) == 2
    assert "the run has no parameter 'mm'" in capsys.readouterr().err


def test_call_overhead_term_counts_every_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = {"n": 10, "m": 1000, "nprocs": 4}
    plain = MapsBackend().predict(builder(), profile()).evaluate(values)
    charged = MapsBackend(call_overhead_s=1e-6).predict(builder(), profile())
    # no measured calls: one per execution of the flop, loadstore and MPI sites (5 x 10 in the loop, 1 bcast)
    assert charged.evaluate(values) - plain == pytest.approx(51 * 1e-6)
    assert len(charged.assumed_calls) == 6 and any("charged one call per execution" in n for n in charged.notes)
    assert float(charged.part("runtime", "solve").subs(values)) == pytest.approx(50e-6)
    assert float(charged.part("compute").subs(values)) == pytest.approx(
        float(MapsBackend().predict(builder(), profile()).part("compute").subs(values)))  # the calls are not compute
    # a C program has no runtime part, whatever the options: they apply to Python programs only, and it says so
    c_program = MapsBackend(call_overhead_s=1e-6).predict(builder(language="c"), profile())
    assert c_program.part("runtime") == 0 and c_program.assumed_calls == ()
    assert any("not Python" in note for note in c_program.notes)
    run = write_run(tmp_path / "run", program(), 2)
    machine_file = profile().save(tmp_path / "hand.json")
    assert main(["predict", str(run), "--machine", str(machine_file), "--backend", "peak", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["backend"] == "peak" and report["total_s"] > 0
    # any backend that names its sites' subroutines (the Prediction base's) gets them in the report
    assert {row["name"] for row in report["subroutines"]} == {"solve", ""} and "assumed_hit_rates" not in report


def test_calls_per_execution_from_a_signature_scale_with_the_trip_counts(tmp_path: Path) -> None:
    path = tmp_path / "sig.json"
    path.write_text(json.dumps({"format": "ma-signature", "sites": {
        "solve/it/ls": {"hit_rates": [0.5, 1.0], "c_calls": 3}, "solve/it": {"c_calls": 2}, "solve": {"c_calls": 5}}}))
    signatures = load_signature_file(path, 2)
    assert signatures.c_calls == {"solve/it/ls": 3.0, "solve/it": 2.0, "solve": 5.0}
    assert signatures.hit_rates == {"solve/it/ls": (0.5, 1.0)}
    assert load_signature_file(save_signature_file(signatures, tmp_path / "again.json"), 2) == signatures
    prediction = MapsBackend(signatures=signatures, call_overhead_s=1e-6).predict(builder(), profile())
    assert prediction.assumed_calls == ()  # measured calls: no site is charged the assumed one call
    # per execution x executions: the loop body n times, the subroutine once; symbolic in n
    total = prediction.part("runtime")
    assert prediction.free_inputs == ["m", "n", "nprocs"] and sympy.Symbol("n") in total.free_symbols
    for n in (1, 10, 1000):
        assert float(total.subs({"n": n, "nprocs": 4})) == pytest.approx(3e-6 * n + 2e-6 * n + 5e-6, rel=1e-12)
    assert float(prediction.subroutine_total("solve").subs({"n": 10, "m": 1000, "nprocs": 4})) == pytest.approx(
        float(MapsBackend(signatures=signatures).predict(builder(), profile()).subroutine_total("solve").subs(
            {"n": 10, "m": 1000, "nprocs": 4})) + 55e-6)
    for bad, message in (({"solve": {"c_calls": -1}}, r"sites\.solve'\.c_calls: expected a number >= 0"),
                         ({"solve": {"calls": 1}}, "expected the keys hit_rates, c_calls, lines_per_flop, "
                                                   "csr_rows, subscripts, add_chain and/or shared_hit_rates"),
                         ({"solve": 3}, "expected a list of 2 hit rates or an object")):
        path.write_text(json.dumps({"format": "ma-signature", "sites": bad}))
        with pytest.raises(BackendError, match=message):
            load_signature_file(path, 2)


def test_python_sites_use_the_numpy_rate_and_c_sites_the_peak() -> None:
    values = {"n": 10, "m": 1000, "nprocs": 4}
    python = MapsBackend(python_flops=1e8).predict(builder(), profile())
    c = MapsBackend(python_flops=1e8).predict(builder(language="c"), profile())
    flop = "solve/it/fl"
    assert float(next(s for s in python.sites if s.path == flop).compute.subs(values)) == pytest.approx(20000 / 1e8)
    assert float(next(s for s in c.sites if s.path == flop).compute.subs(values)) == pytest.approx(20000 / PEAK)
    without = MapsBackend().predict(builder(), profile())
    assert any("no cpython.python_flops" in note for note in without.notes)
    with pytest.raises(BackendError, match="python_flops must be > 0"):
        MapsBackend(python_flops=0)


def test_the_runtime_part_is_never_hidden_by_memory_in_the_max_overlap() -> None:
    values = {"n": 10, "m": 1000, "nprocs": 4}
    summed = MapsBackend(call_overhead_s=1e-4).predict(builder(), profile(), {})
    overlapped = MapsBackend(call_overhead_s=1e-4, overlap="max").predict(builder(), profile(), {})
    compute, memory = 10 * 2000 / PEAK, 10 * 3000 * 8 / hand_f(0.875)
    calls = 2 * 10 * 1e-4  # the flop and the loadstore site: one call per execution each

    def block_time(p: Prediction) -> float:
        return sum(float(s.total.subs(values)) for s in p.sites if s.path.startswith("solve/it/")
                   and s.path.rsplit("/", 1)[-1] in ("fl", "ls"))

    assert block_time(summed) == pytest.approx(compute + memory + calls)
    assert block_time(overlapped) == pytest.approx(max(compute, memory) + calls)


def test_more_ranks_than_cores_time_share_them() -> None:
    values = {"n": 10, "m": 1000}
    shared = MapsBackend(call_overhead_s=1e-6, cores=2).predict(builder(), profile())
    alone = MapsBackend(call_overhead_s=1e-6).predict(builder(), profile())  # the profile's 64 cores
    assert any("the 2 cores" in note for note in shared.notes) and any("the 64 cores" in n for n in alone.notes)
    for procs, factor in ((1, 1.0), (2, 1.0), (4, 2.0), (8, 4.0)):
        point = {**values, "nprocs": procs}
        for part in ("compute", "memory"):
            assert float(shared.part(part).subs(point)) == pytest.approx(factor * float(alone.part(part).subs(point)))
        assert float(shared.part("communication").subs(point)) == pytest.approx(
            float(alone.part("communication").subs(point)))
        assert float(shared.part("runtime").subs(point)) == pytest.approx(
            factor * float(alone.part("runtime").subs(point)))
    with pytest.raises(BackendError, match="cores must be >= 0"):
        MapsBackend(cores=-1)


def test_messages_beyond_one_rank_per_core_use_the_oversubscribed_exchange() -> None:
    """L and 1/B move from the two-rank figures to the oversubscribed exchange's (4 ranks on 2 cores) in
    proportion to the ranks per core beyond one: e = max(0, p/2 - 1) / (4/2 - 1)."""
    values = {"n": 10, "m": 1000}
    over_latency, over_bandwidth = 21e-6, BANDWIDTH / 4
    plain_network = profile().network
    assert plain_network is not None
    machine = replace(profile(), network=replace(plain_network, oversubscribed=machines.Oversubscribed(
        4, 2, over_latency, over_bandwidth, version=1, extra={"pattern": "exchange"})))
    plain = MapsBackend(cores=2).predict(builder(), profile())
    shared = MapsBackend(cores=2).predict(builder(), machine)
    assert any("oversubscribed" in note for note in shared.notes)
    for procs, excess in ((1, 0.0), (2, 0.0), (4, 1.0), (8, 3.0)):
        latency = LATENCY + excess * (over_latency - LATENCY)
        inverse = 1 / BANDWIDTH + excess * (1 / over_bandwidth - 1 / BANDWIDTH)
        point = {**values, "nprocs": procs}
        halo = halo_seconds(shared, point)
        assert halo == pytest.approx(20 * latency + 20 * 8000 * inverse, rel=1e-12)
        for part in ("compute", "memory"):  # the time-sharing term is the same with or without the block
            assert float(shared.part(part).subs(point)) == pytest.approx(float(plain.part(part).subs(point)))
    # --cores 0 (no time-sharing) and a profile without the block: the two-rank figures at any count
    for backend, prof in ((MapsBackend(cores=0), machine), (MapsBackend(cores=2), profile())):
        point = {**values, "nprocs": 8}
        assert halo_seconds(backend.predict(builder(), prof), point) == pytest.approx(
            20 * LATENCY + 20 * 8000 / BANDWIDTH, rel=1e-12)


def halo_seconds(prediction: Prediction, point: dict[str, int]) -> float:
    site = next(s for s in prediction.sites if s.path == "solve/it/halo")
    return float(site.communication.subs({k: sympy.Integer(v) for k, v in point.items()}))


def test_measured_traffic_prices_a_flop_site_without_loadstore(tmp_path: Path) -> None:
    """l_k lines per flop served beyond L1, each 64 B at F of a stride-1 stream from level k: here one cache
    and memory, so the stream's row is (1 - 8/64, 1) and a flop costs l_2 x 64 / F(0.875)."""
    ops = [Var("n", 10), Var("m", 1000), Var("nprocs", lambda e: e["__size"]),
           Sub("kern", [Loop("it", "n", [Op("flop", "numpy", "4*m")])]), *program()]
    b = ModelBuilder(from_traces([make_trace(ops, r, 2) for r in range(2)]))
    # solve/it/fl shares its block with the loadstore site solve/it/ls: its lines are not priced
    lines: dict[str, tuple[float, ...]] = {"kern/it/numpy": (3.0, 0.25), "solve/it/fl": (3.0, 0.5)}
    prediction = MapsBackend(signatures=Signatures(lines_per_flop=lines)).predict(b, profile(), {"nprocs": 2})
    sites = {s.path: s for s in prediction.sites}
    values = {"n": 10, "m": 1000}
    per_flop = 0.25 * 64 / hand_f(0.875)
    assert float(sites["kern/it/numpy"].memory.subs(values)) == pytest.approx(10 * 4000 * per_flop)
    assert float(sites["solve/it/fl"].memory.subs(values)) == 0.0
    assert prediction.measured_traffic == {"kern/it/numpy": pytest.approx(per_flop)}
    assert any("without a loadstore expression" in note and "kern/it/numpy" in note for note in prediction.notes)
    path = save_signature_file(Signatures(lines_per_flop=lines), tmp_path / "sig.json")
    assert load_signature_file(path, 2).lines_per_flop == lines
    path.write_text('{"format": "ma-signature", "sites": {"kern/it/numpy": {"lines_per_flop": [1.0]}}}')
    with pytest.raises(BackendError, match=r"field 'sites.kern/it/numpy'.lines_per_flop: expected 2 numbers >= 0"):
        load_signature_file(path, 2)


def test_stream_rows_and_seconds_per_flop_by_hand() -> None:
    three = MachineProfile(name="three", host=Host("h", "c", 2),
                           caches=(CacheLevel(1, 32768, 8, 64), CacheLevel(2, 1 << 20, 8, 128)),
                           cpu=CPU(PEAK), memory=Memory(4e9))
    assert stream_rows(three) == [(0.875, 1.0, 1.0), (0.875, 0.9375, 1.0)]
    assert seconds_per_flop((9.0, 0.5, 0.25), 64, (32e9, 8e9)) == pytest.approx(0.5 * 64 / 32e9 + 0.25 * 64 / 8e9)
    with pytest.raises(ValueError, match="3 levels of lines per flop for 2 levels"):
        seconds_per_flop((9.0, 0.5, 0.25), 64, (32e9,))
