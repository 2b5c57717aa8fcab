"""The ``vector`` backend: the vector paper's Tv/Ts formulas (Figure 4), the X1E's and a host's profile,
symbolic predictions of a modelled CG run per bandwidth scenario, exported to Octave and run there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import sympy
from conftest import VENV_BIN, clean_env
from post_fixtures import cg_program, make_trace

from backends import registry
from backends.machine.profile import CPU, CacheLevel, Host, MachineProfile, Memory, MultiMapsPoint
from backends.vector import CRAY_X1E, VectorBackend, VectorLoop, host_profile, loop_time, loops_from_trace
from backends.vector.simd import SimdBandwidth, SimdPoint
from ma_cli.main import main
from ma_core.errors import BackendError
from ma_post import ModelBuilder, load
from ma_post.export.octave import export_octave, octave_function_name
from ma_post.traceset import from_traces

POINT = {"na": 14000, "nonzer": 11, "niter": 15, "nprocs": 4, "cgitmax": 25, "dp": 8}


def machine(isa: str = "avx2+fma") -> MachineProfile:
    return MachineProfile(name="host", host=Host("h", "c", 2), caches=(CacheLevel(1, 32768, 8, 64),),
                          cpu=CPU(16.0e9, isa), memory=Memory(10e9),
                          multimaps=(MultiMapsPoint("random", 1 << 20, 3e9), MultiMapsPoint("random", 1 << 26, 1e9),
                                     MultiMapsPoint("stride", 1 << 26, 9e9, stride=1)))


def test_the_papers_tzetar_on_the_x1e() -> None:
    """Class W, one MPI task: 725760 vector flops, 1179360 vector load/stores, AVL 35, MV 3 (section 5)."""
    times = {s: loop_time(725760, 1179360, 3, 35, CRAY_X1E, s) for s in ("min", "mixed", "max")}
    assert float(times["max"].compute) == pytest.approx(725760 / 18e9)
    # 8-byte words, penalised by 64/35 for the short vectors, at 8.5 GB/s
    assert float(times["max"].memory) == pytest.approx(1179360 * 8 * 64 / (8.5e9 * 35))
    assert float(times["min"].total) > float(times["mixed"].total) > float(times["max"].total)
    not_streamed = loop_time(725760, 1179360, 2, 35, CRAY_X1E, "max")  # -O stream0: one SSP of four
    assert float(not_streamed.compute) == pytest.approx(4 * float(times["max"].compute))
    full = loop_time(725760, 1179360, 3, 64, CRAY_X1E, "max")
    assert float(full.memory) == pytest.approx(35 / 64 * float(times["max"].memory))
    scalar = loop_time(725760, 1179360, 0, None, CRAY_X1E, "max")
    assert float(scalar.compute) == pytest.approx(725760 / 0.565e9)
    assert float(scalar.memory) == pytest.approx(1179360 * 8 / 8.5e9)


def test_host_profile_from_the_machine_profile() -> None:
    prof = host_profile(machine())
    assert prof.avl_max == 4 and prof.vector_flops == 16e9 and prof.scalar_flops == 4e9
    assert prof.vector_flops_multi == 32e9  # two cores
    assert prof.bandwidth_gbs == {"min": 1.0, "mixed": 5.5, "max": 10.0}  # random at its largest set; triad
    beyond_l1 = host_profile(machine(), working_set=1 << 20)  # main memory: triad, random curve at 1 MiB
    assert beyond_l1.bandwidth_gbs == {"min": 3.0, "mixed": 6.5, "max": 10.0}
    assert host_profile(machine("avx512f+fma")).avl_max == 8 and host_profile(machine("sse2")).avl_max == 2
    with pytest.raises(BackendError, match=r"cpu.isa: 'avx9' is not a flop kernel.*expected one of sse2, avx2\+fma"):
        host_profile(machine("avx9"))
    bare = MachineProfile(name="bare", host=Host(cpus=1), caches=(), cpu=CPU(1e9, "sse2"), memory=Memory(1e9))
    with pytest.raises(BackendError, match="random-access MultiMAPS curve"):
        host_profile(bare)


@pytest.fixture(scope="module")
def builder() -> ModelBuilder:
    return ModelBuilder(from_traces([make_trace(cg_program(), r, 4) for r in range(4)]))


def test_prediction_is_symbolic_and_follows_the_mv_scores(builder: ModelBuilder) -> None:
    backend = registry.create("vector")
    assert isinstance(backend, VectorBackend)
    scalar = backend.predict(builder, machine(), {"na": 14000})
    assert "na" not in scalar.free_inputs and "niter" in scalar.free_inputs
    values = {k: v for k, v in POINT.items() if k != "na"}
    loops = {"conj_loop/conj_grad/cgit": VectorLoop(3, "4")}
    vector = VectorBackend(loops, flop_time="sum").predict(builder, machine(), {"na": 14000})  # the rates alone
    flops = builder.model("flops").evaluate(POINT)
    inner = [s for s in vector.sites if s.path.startswith("conj_loop/conj_grad/cgit/")]
    assert inner and all(s.communication == 0 for s in vector.sites)
    # vectorised and multithreaded sites: 8x the scalar one-core rate (4 lanes x 2 cores)
    for site in inner:
        before = next(s for s in scalar.sites if s.path == site.path)
        if before.compute != 0:
            assert float(before.compute.subs(values)) == pytest.approx(8 * float(site.compute.subs(values)))
    assert float(scalar.part("compute").subs(values)) == pytest.approx(flops / 4e9)  # all scalar: one lane
    by_scenario = VectorBackend(loops).predict_scenarios(builder, machine(), {"na": 14000})
    totals = [by_scenario[s].evaluate(values) for s in ("min", "mixed", "max")]
    assert totals[0] > totals[1] > totals[2] > 0
    with pytest.raises(BackendError, match="unknown bandwidth scenario"):
        VectorBackend(scenario="fast")


@pytest.mark.octave
def test_prediction_exports_to_octave(builder: ModelBuilder, tmp_path: Path) -> None:
    """The X1E's prediction (Figure 4's sum) and the host's (the net flop time: a max(...) per loop)."""
    loops = {"conj_loop/conj_grad/cgit": VectorLoop(2, "4")}
    octave = shutil.which("octave-cli")
    assert octave, "octave-cli is needed (scripts/setup.sh installs it)"
    for name, profile in (("vector_time", CRAY_X1E), ("vector_host_time", None)):
        prediction = VectorBackend(loops, "max", profile).predict(builder, machine())
        assert (profile is None) == prediction.total.has(sympy.Max)
        model = builder.submodel(name, sympy.sympify(prediction.total))
        (path,) = export_octave([model], tmp_path)
        args = ", ".join(str(POINT[name]) for name in model.inputs)
        done = subprocess.run([octave, "--no-gui", "--no-window-system", "-q", "--norc", "--eval",
                               f"printf('%.17g\\n', {octave_function_name(name)}({args}))"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, check=True)
        assert path.name == f"{name}.m"
        assert float(done.stdout.split()[-1]) == pytest.approx(prediction.evaluate(POINT), rel=1e-12)


DAXPY_APP = """
import numpy as np
import ma

n = ma.variable("n", 20000)
x, y = np.arange(n, dtype=np.float64), np.ones(n)
with ma.subroutine("kernel"):
    with ma.loop("repeat", "4") as lp:
        for _ in lp.range(4):
            with ma.vec_loop("daxpy", "3*n/4", "2*n", "4", 2):
                with ma.flop("axpy", "2*n"), ma.loadstore("xy", "3*n"):
                    y += 2.5 * x
"""


def test_ma_predict_with_the_vector_backend_on_a_traced_run(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`ma predict --backend vector`: the CLI builds the backend through Backend.from_options, with the loops of
    the run's own ma.vec_loop records, and prints the prediction under each bandwidth scenario."""
    (tmp_path / "app.py").write_text(DAXPY_APP)
    trace = tmp_path / "trace"
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "1", "--trace-dir", str(trace), "--", sys.executable,
                           str(tmp_path / "app.py")], env=clean_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    ts = load(trace)
    line = next(i for i, text in enumerate(DAXPY_APP.splitlines(), start=1) if "ma.vec_loop" in text)
    assert loops_from_trace(ts) == {"kernel/repeat": VectorLoop(2, "4", "3*n/4", "2*n",
                                                                where=f"{tmp_path / 'app.py'}:{line}")}
    profile_file = machine().save(tmp_path / "host.json")
    assert main(["predict", str(trace), "--backend", "vector", "--machine", str(profile_file), "--scenario", "max",
                 "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    builder = ModelBuilder(ts)
    loops = loops_from_trace(ts)
    expected = {s: VectorBackend(loops, s).predict(builder, machine()).evaluate({"n": 20000})
                for s in ("min", "mixed", "max")}
    assert report["backend"] == "vector" and report["total_s"] == pytest.approx(expected["max"], rel=1e-9)
    assert [v["name"] for v in report["variants"]] == ["scenario min", "scenario mixed", "scenario max"]
    assert [v["total_s"] for v in report["variants"]] == pytest.approx([expected[s] for s in ("min", "mixed", "max")])
    assert expected["min"] > expected["mixed"] > expected["max"] > 0
    scalar = VectorBackend(scenario="max").predict(builder, machine()).evaluate({"n": 20000})
    assert scalar > expected["max"]  # the traced vector loop (MV 2, AVL 4) counts
    assert main(["predict", str(trace), "--backend", "vector", "--machine", str(profile_file)]) == 0
    text = capsys.readouterr().out
    assert "backend vector" in text and "kernel/repeat/axpy" in text
    assert all(f"scenario {s}: predicted time per rank" in text for s in ("min", "mixed", "max"))
    with pytest.raises(SystemExit):  # the backend's own option, checked by the parser
        main(["predict", str(trace), "--backend", "vector", "--machine", str(profile_file), "--scenario", "fast"])
    assert "invalid choice: 'fast'" in capsys.readouterr().err
    (tmp_path / "host.simd.json").write_text('{"schema": "something else"}')  # read from beside --machine
    assert main(["predict", str(trace), "--backend", "vector", "--machine", str(profile_file)]) != 0
    assert "host.simd.json: not a SIMD bandwidth file" in capsys.readouterr().err
    SimdBandwidth("avx2+fma", (SimdPoint(1024, 100.0),)).save(tmp_path / "good.simd.json")
    assert main(["predict", str(trace), "--backend", "vector", "--machine", str(profile_file),
                 "--simd-bandwidth", str(tmp_path / "good.simd.json")]) == 0


TZETAR_APP = """
import ma

ma.variable("problem_size", 36)
ma.variable("nprocs", 1)
ma.assign("ncells", "sqrt(nprocs)", 1)
ma.assign("size", "floor(problem_size/ncells)", 36)
with ma.subroutine("adi"):
    with ma.vec_loop("tzetar", "(size^2)*(size-1)*26", "(size^2)*(size-1)*16", "(size-1)/(floor(size/64)+1)", 3):
        with ma.flop("tzetar_flops", "(size^2)*(size-1)*16"), ma.loadstore("tzetar_ldst", "(size^2)*(size-1)*26"):
            pass
"""


@pytest.fixture(scope="module")
def tzetar(tmp_path_factory: pytest.TempPathFactory) -> ModelBuilder:
    """The model of a run of TZETAR_APP."""
    directory = tmp_path_factory.mktemp("tzetar")
    (directory / "app.py").write_text(TZETAR_APP)
    trace = directory / "trace"
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "1", "--trace-dir", str(trace), "--", sys.executable,
                           str(directory / "app.py")], env={**clean_env(), "MA_TRACE_LAYOUT": "per-rank"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return ModelBuilder(load(trace))


def test_vec_loop_expressions_resolve_through_derived_variables(tzetar: ModelBuilder) -> None:
    """SP's tzetar annotation (section 5.1) in ``size``, derived from problem_size and nprocs: its AVL, vector
    load/stores and flops become functions of the inputs, and so does the prediction (class W, one task: the
    paper's 1179360, 725760, 35)."""
    builder = tzetar
    loops = loops_from_trace(builder.ts)
    exprs = loops["adi"].resolved(builder, "adi")
    inputs = {sympy.Symbol("problem_size"), sympy.Symbol("nprocs")}
    assert all(e.free_symbols == inputs for e in exprs.values())
    at_w = {sympy.Symbol("problem_size"): 36, sympy.Symbol("nprocs"): 1}
    assert {k: e.subs(at_w) for k, e in exprs.items()} == {"vloadstore": 1179360, "vflops": 725760, "avl": 35}
    assert exprs["avl"].subs({sympy.Symbol("problem_size"): 102, sympy.Symbol("nprocs"): 4}) == 50  # class B, 4
    prediction = VectorBackend(loops, "max", CRAY_X1E).predict(builder, machine())
    assert set(prediction.free_inputs) == {"problem_size", "nprocs"}
    paper = loop_time(725760, 1179360, 3, 35, CRAY_X1E, "max").total
    assert prediction.evaluate({"problem_size": 36, "nprocs": 1}) == pytest.approx(float(paper), rel=1e-12)


def test_a_loops_working_set_picks_its_bandwidths(tzetar: ModelBuilder) -> None:
    """A working set (an expression in the inputs) puts the loop on the measured curves: here in the first
    cache, so its bandwidths are the curves' there, not main memory's; a symbolic one falls back to memory."""
    from backends.vector.bandwidth import scenario_bandwidths

    builder = tzetar
    host = machine()
    host = replace(host, multimaps=(*host.multimaps, MultiMapsPoint("stride", 1 << 10, 30e9, stride=1)))
    in_l1 = {"adi": VectorLoop(2, "4", working_set="size*8*10")}  # 2880 bytes at size 36
    at_w = {"problem_size": 36, "nprocs": 1}
    fast = VectorBackend(in_l1, "max").predict(builder, host, at_w)
    memory = VectorBackend({"adi": VectorLoop(2, "4")}, "max").predict(builder, host, at_w)
    expected = scenario_bandwidths(host, 2880)["max"]
    assert 9.0 < expected < 30.0  # between the stride curve's two points, not the triad
    words = 1179360 * 8
    assert float(fast.part("memory")) == pytest.approx(words / (expected * 1e9))
    assert float(memory.part("memory")) == pytest.approx(words / 10e9)
    symbolic = VectorBackend(in_l1, "max").predict(builder, host)
    assert any("not a number at the given parameters" in note for note in symbolic.notes)


def test_a_bad_vec_loop_record_is_named_by_its_annotations_file_and_line(tzetar: ModelBuilder,
                                                                          tmp_path: Path) -> None:
    from ma_core.errors import TraceError
    from ma_core.trace_format import rank_file_name
    from ma_post.vector import vec_loop_results

    (section,) = tzetar.ts.optional("vector_loops")
    source = Path(section.source)
    assert source.name == rank_file_name(0)
    document = json.loads(source.read_text())
    (record,) = document["vector_loops"]
    line = next(i for i, text in enumerate(TZETAR_APP.splitlines(), start=1) if "ma.vec_loop" in text)
    assert (Path(record["file"]).name, record["line"]) == ("app.py", line)
    del record["mv"]
    (tmp_path / source.name).write_text(json.dumps(document))
    broken = load(tmp_path)
    with pytest.raises(TraceError, match=rf"vector_loops\[0\] \(ma.vec_loop at .*app.py:{line}\): bad record"):
        vec_loop_results(broken)
    with pytest.raises(BackendError, match=rf"vector_loops\[0\] \(ma.vec_loop at .*app.py:{line}\): bad record"):
        loops_from_trace(broken)


def test_a_loop_without_a_working_set_is_placed_by_its_load_stores(tzetar: ModelBuilder) -> None:
    """The trace's record has no working set: its asserted vector load/stores x 8 bytes place it (class W:
    1179360 x 8 = 9434880 bytes). By hand, on a SIMD curve of 100 GB/s at 1 MiB and 50 at 16 MiB, that is
    100 - 50 * log(9434880 / 2**20) / log(16) GB/s for the vectorised loop (MV 3, AVL 35 >= 4 lanes: no
    penalty), 9 (the stride-1 curve) for a scalar one; an explicit working set wins."""
    import math

    curve = SimdBandwidth("avx2+fma", (SimdPoint(1 << 20, 100.0), SimdPoint(1 << 24, 50.0)))
    host = machine()
    host = replace(host, caches=(*host.caches, CacheLevel(2, 1 << 25, 16, 64)))  # 9.4 MB is in the 32 MiB L2
    loops = loops_from_trace(tzetar.ts)
    at_w = {"problem_size": 36, "nprocs": 1}
    bandwidth = 100 - 50 * math.log(9434880 / 2**20) / math.log(16)
    predicted = VectorBackend(loops, "max", simd=curve).predict(tzetar, host, at_w)
    assert float(predicted.part("memory")) == pytest.approx(1179360 * 8 / (bandwidth * 1e9))
    placed = {"adi": VectorLoop(3, "35", "(size^2)*(size-1)*26", working_set="2**30")}  # memory: the triad
    predicted = VectorBackend(placed, "max", simd=curve).predict(tzetar, host, at_w)
    assert float(predicted.part("memory")) == pytest.approx(1179360 * 8 / 10e9)
    scalar = {"adi": VectorLoop(0, None, "(size^2)*(size-1)*26")}  # scalar: the profile's stride-1 curve
    predicted = VectorBackend(scalar, "max", simd=curve).predict(tzetar, host, at_w)
    assert float(predicted.part("memory")) == pytest.approx(1179360 * 8 / 9e9)


def test_flop_time_net_of_the_bandwidth_loops_own_flops_by_hand() -> None:
    """A scalar loop of 27 flops and 18 words on a profile whose bandwidths come from loops doing 2/3 flop per
    word (the triads): 12 of its flops are inside the memory time, 15 are added at the scalar rate (net); Figure
    4's sum adds all 27; the overlap form takes the larger of the two times. A profile without the kernels'
    flops (the X1E) gives the paper's sum in every form but max."""
    from backends.vector.profile import VectorProfile

    triads = {"min": 2 / 3, "mixed": 2 / 3, "max": 2 / 3}
    profile = VectorProfile("p", 4e9, 8e9, 1e9, 2e9, 4, {"min": 1.0, "mixed": 2.0, "max": 8.0},
                            kernel_flops_per_word=triads)
    memory = 18 * 8 / 8e9
    net = loop_time(27, 18, 0, None, profile, "max")
    assert (float(net.compute), float(net.memory)) == pytest.approx((15 / 1e9, memory))
    assert float(loop_time(27, 18, 0, None, profile, "max", "sum").total) == pytest.approx(27 / 1e9 + memory)
    assert float(loop_time(27, 18, 0, None, profile, "max", "max").total) == pytest.approx(max(27 / 1e9, memory))
    assert float(loop_time(6, 18, 0, None, profile, "max").compute) == 0  # all its flops inside the triad's
    for form in ("net", "sum"):
        assert loop_time(725760, 1179360, 3, 35, CRAY_X1E, "max", form).total == \
            loop_time(725760, 1179360, 3, 35, CRAY_X1E, "max", "sum").total
    with pytest.raises(BackendError, match="unknown flop time form"):
        loop_time(1, 1, 0, None, profile, "max", "overlap")


def test_the_host_profile_knows_the_flops_of_its_bandwidth_loops() -> None:
    """Max from the triad (memory, unit stride; or the SIMD file's triads) holds 2/3 flop per word, from the
    MultiMAPS strided loop 1; min from the random loop (one add per 12 bytes) 2/3; mixed the smaller."""
    curve = SimdBandwidth("avx2+fma", (SimdPoint(1 << 10, 100.0), SimdPoint(1 << 24, 50.0)),
                          scalar_triad=(SimdPoint(1 << 10, 40.0), SimdPoint(1 << 24, 20.0)))
    in_memory, in_l1 = host_profile(machine()), host_profile(machine(), working_set=4096)
    assert in_memory.kernel_flops("max") == pytest.approx(2 / 3) and in_l1.kernel_flops("max") == 1.0
    assert in_l1.kernel_flops("min") == in_l1.kernel_flops("mixed") == pytest.approx(2 / 3)
    simd = host_profile(machine(), working_set=4096, simd=curve)
    assert simd.kernel_flops("max") == simd.kernel_flops("max", vector=True) == pytest.approx(2 / 3)
    assert CRAY_X1E.kernel_flops("max") == CRAY_X1E.kernel_flops("min", vector=True) == 0


def test_a_loops_flop_and_load_store_sites_are_timed_together(tzetar: ModelBuilder) -> None:
    """SP's tzetar annotates its flops and load/stores at two sites under one vec_loop: the net form takes the
    loop's 725760 flops against its 1179360 words (class W) in memory, where the triad's 2/3 flop per word
    covers them all, so the loop costs its memory time; Figure 4's sum adds 725760 flops at the multistreamed
    rate (MV 3: 16 GF/s x 2 cores); the X1E gives the paper's figure in both."""
    loops = loops_from_trace(tzetar.ts)
    at_w = {"problem_size": 36, "nprocs": 1}
    memory = 1179360 * 8 / 10e9
    net = VectorBackend(loops, "max").predict(tzetar, machine(), at_w)
    paper = VectorBackend(loops, "max", flop_time="sum").predict(tzetar, machine(), at_w)
    assert (float(net.part("compute")), float(net.part("memory"))) == pytest.approx((0.0, memory))
    assert float(paper.part("compute")) == pytest.approx(725760 / 32e9)
    assert any("flop time 'net'" in note for note in net.notes)
    x1e = {form: VectorBackend(loops, "max", CRAY_X1E, flop_time=form).predict(tzetar, machine(), at_w)
           for form in ("net", "sum")}
    assert x1e["net"].evaluate({}) == x1e["sum"].evaluate({}) == pytest.approx(
        float(loop_time(725760, 1179360, 3, 35, CRAY_X1E, "max").total))


def test_a_sparse_loops_asserted_gathers_take_the_sparse_dot_curve(tzetar: ModelBuilder) -> None:
    """A loop asserting 1000 gathers (sparse-row entries) of a 1 MiB array: they cost the sparse-dot curve's 2 ns
    each there (4 GB/s of 8-byte reads), their 3000 words and 2000 flops leave Figure 4's part (class W: 1179360
    words, 725760 flops; in memory at the triad's 10 GB/s; net, the rest's flops are inside the triad's 2/3 per
    word; the sum adds them at the scalar rate, 4 GF/s). With the reads' hit rates (half in the first cache,
    0.5 ns at the curve's smallest point; half in memory, 2 ns at its largest) 1.25 ns each."""
    curve = SimdBandwidth("avx2+fma", (SimdPoint(1 << 10, 100.0),),
                          sparse_dot=(SimdPoint(4096, 16.0), SimdPoint(1 << 20, 4.0)))
    at_w = {"problem_size": 36, "nprocs": 1}
    sparse = {"adi": VectorLoop(0, None, "(size^2)*(size-1)*26", gathers="1000", gathered_bytes="2**20")}
    memory = (1179360 - 3000) * 8 / 10e9
    net = VectorBackend(sparse, "max", simd=curve).predict(tzetar, machine(), at_w)
    assert (float(net.part("compute")), float(net.part("memory"))) == pytest.approx((0.0, memory + 1000 * 2e-9))
    paper = VectorBackend(sparse, "max", simd=curve, flop_time="sum").predict(tzetar, machine(), at_w)
    assert float(paper.part("compute")) == pytest.approx((725760 - 2000) / 4e9)
    by_level = {"adi": VectorLoop(0, None, "(size^2)*(size-1)*26", gathers="1000", gather_hit_rates=(0.5, 1.0))}
    predicted = VectorBackend(by_level, "max", simd=curve).predict(tzetar, machine(), at_w)
    assert float(predicted.part("memory")) == pytest.approx(memory + 1000 * 1.25e-9)
    with pytest.raises(BackendError, match="sparse-dot curve: give one"):
        VectorBackend(sparse, "max").predict(tzetar, machine(), at_w)
    unsized = {"adi": VectorLoop(0, None, "(size^2)*(size-1)*26", gathers="1000", gathered_bytes="8*size*n")}
    with pytest.raises(BackendError, match="need gathered_bytes, a number"):
        VectorBackend(unsized, "max", simd=curve).predict(tzetar, machine(), at_w)


def test_traced_cache_counts_price_the_gathers_by_level_and_say_so(tzetar: ModelBuilder) -> None:
    """The case above with the hit rates from a signature run's counts (backends/vector/gathers.py): 800 streamed
    words (100 lines, 700 L1 hits) and 1000 gathers, 500 of them L1 hits, 500 from memory: h = 0.5, 1, so 1.25 ns
    each, as given rates; the prediction's notes name the source. A vectorised loop (MV 2) takes the file's
    sparse_rows_vectorised curve (2 GB/s at 1 MiB: 4 ns at the array's size, 2 ns more per gather than the
    sparse-dot curve) and, without it, the sparse-dot curve with a note."""
    from backends.vector.gathers import TracedCache

    curve = SimdBandwidth("avx2+fma", (SimdPoint(1 << 10, 100.0),),
                          sparse_dot=(SimdPoint(4096, 16.0), SimdPoint(1 << 20, 4.0)))
    at_w = {"problem_size": 36, "nprocs": 1}
    counts = TracedCache(1800, (1200,), gathers=1000, loadstores=1800, sites=("adi/ldst",))
    traced = {"adi": VectorLoop(0, None, "(size^2)*(size-1)*26", gathers="1000", traced_cache=counts)}
    predicted = VectorBackend(traced, "max", simd=curve).predict(tzetar, machine(), at_w)
    assert float(predicted.part("memory")) == pytest.approx((1179360 - 3000) * 8 / 10e9 + 1000 * 1.25e-9)
    assert any("hit rates 0.50/1.00 (the signature run's simulated caches at adi/ldst" in n for n in predicted.notes)
    sized = {"adi": VectorLoop(2, "4", "(size^2)*(size-1)*26", gathers="1000", gathered_bytes="2**20")}
    rows = SimdBandwidth("avx2+fma", curve.triad, sparse_dot=curve.sparse_dot,
                         sparse_rows_vectorised=(SimdPoint(1 << 20, 2.0),))
    on_dot = VectorBackend(sized, "max", simd=curve).predict(tzetar, machine(), at_w)
    on_rows = VectorBackend(sized, "max", simd=rows).predict(tzetar, machine(), at_w)
    assert float(on_rows.part("memory")) - float(on_dot.part("memory")) == pytest.approx(1000 * 2e-9)
    assert any("no sparse_rows_vectorised curve" in note for note in on_dot.notes)
    assert any("gathers on the sparse_rows_vectorised curve at the gathered array's 1.049e+06 bytes (random "
               "indices assumed" in note for note in on_rows.notes)


SPARSE_APP = """
import ma

ma.variable("n", 131072)
ma.variable("nnz", 1000000)
with ma.subroutine("spmv"):
    with ma.vec_loop("rows", "64*n", "2*nnz", "1", 0, gathers="nnz", gathered_bytes="8*n"):
        with ma.flop("rows_flops", "2*nnz"), ma.loadstore("rows_ldst", "64*n"):
            pass
"""


def test_a_traced_loops_gathers_are_in_every_scenario(tmp_path: Path) -> None:
    """A traced ma.vec_loop stating 10^6 gathers of a 1 MiB array (n = 131072): each scenario prices them on the
    sparse-dot curve at the array's size (4 GB/s there: 2 ns each) and the rest of the loop's 8 Mi words (64 MiB,
    beyond the cache) less the gathers' 3 each at its bandwidth: min the random curve at 64 MiB (1 GB/s), max the
    triad (10 GB/s), mixed their mean; the loop's 2 flops per gather are the gathers' own (no compute left)."""
    (tmp_path / "app.py").write_text(SPARSE_APP)
    trace = tmp_path / "trace"
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "1", "--trace-dir", str(trace), "--", sys.executable,
                           str(tmp_path / "app.py")], env=clean_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    builder = ModelBuilder(load(trace))
    curve = SimdBandwidth("avx2+fma", (SimdPoint(1 << 10, 100.0),),
                          sparse_dot=(SimdPoint(4096, 16.0), SimdPoint(1 << 20, 4.0)))
    run = {"n": 131072, "nnz": 10**6}
    predictions = VectorBackend(loops_from_trace(builder.ts), simd=curve).predict_scenarios(builder, machine(), run)
    rest, gathers = (8 * 131072 * 8 - 3 * 10**6) * 8, 10**6 * 2e-9
    for scenario, bandwidth in (("min", 1.0), ("mixed", 5.5), ("max", 10.0)):
        prediction = predictions[scenario]
        assert float(prediction.part("compute")) == pytest.approx(0.0)
        assert float(prediction.part("memory")) == pytest.approx(rest / (bandwidth * 1e9) + gathers)
    assert any("random indices assumed: no hit rates given or traced" in n for n in predictions["max"].notes)
    without = VectorBackend(loops_from_trace(builder.ts), "max", simd=curve)
    without.loops = {path: VectorLoop(0, "1", "64*n", "2*nnz") for path in without.loops}
    assert float(without.predict(builder, machine(), run).part("memory")) == pytest.approx(8 * 131072 * 8 * 8 / 10e9)
