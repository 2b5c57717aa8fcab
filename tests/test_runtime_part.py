"""The runtime part of a prediction (``backends/cpython/runtime.py``): only where a trace's language includes Python.
A C or a Fortran trace predicts with a zero runtime part, with the shipped profile's CPython terms and without any
option; a Python trace's is the interpreter's calls, subscripts and annotated sites, a part of its own (its compute
is flop time alone); ``ma predict`` prints the four parts per subroutine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from post_fixtures import Loop, Mpi, Op, Sub, Var, make_trace, write_run

from backends.base import PARTS
from backends.cpython.runtime import applies
from backends.machine.profile import load, shipped_profiles
from backends.maps import MapsBackend
from ma_cli.main import main
from ma_post import ModelBuilder
from ma_post.traceset import from_traces

SHIPPED = shipped_profiles()["amd-epyc-zen4-kvm"]
VALUES = {"n": 10, "m": 1000, "nprocs": 2}


def program() -> list[object]:
    return [Var("n", 10), Var("m", 1000), Var("nprocs", lambda e: e["__size"]),
            Sub("solve", [Loop("it", "n", [Op("flop", "fl", "2*m"), Op("loadstore", "ls", "3*m"),
                                           Mpi("mpi_allreduce", "sum", "8")])])]


def builder(language: str) -> ModelBuilder:
    return ModelBuilder(from_traces([make_trace(program(), r, 2, language=language) for r in range(2)]))


@pytest.mark.parametrize("language", ["c", "fortran"])
def test_a_compiled_trace_has_no_runtime_part(language: str) -> None:
    machine = load(SHIPPED)
    assert machine.cpython is not None and machine.cpython.call_overhead_s  # the profile has the CPython terms
    traces = builder(language)
    assert not applies(traces.ts)
    prediction = MapsBackend().predict(traces, machine)
    assert all(site.runtime == 0 for site in prediction.sites) and prediction.part("runtime") == 0
    assert prediction.assumed_calls == () and not any("call" in note for note in prediction.notes)
    # its flops at the FMA peak, none of the NumPy rate
    flop = next(s for s in prediction.sites if s.path == "solve/it/fl")
    assert float(flop.compute.subs(VALUES)) <= 10 * 2000 / machine.peak_flops * (1 + 1e-12)
    # the runtime options do not apply to it, and the prediction says so
    given = MapsBackend(call_overhead_s=1e-6, annotation_s=dict.fromkeys(("region", "loop", "mpi"), 1e-6),
                        python_flops=1e8).predict(traces, machine)
    assert given.evaluate(VALUES) == pytest.approx(prediction.evaluate(VALUES), rel=1e-12)
    assert any("not Python" in note for note in given.notes)


def test_a_python_trace_has_the_interpreter_as_a_part_of_its_own() -> None:
    machine = load(SHIPPED)
    assert machine.cpython is not None and machine.cpython.call_overhead_s and machine.cpython.annotation_s
    prediction = MapsBackend().predict(builder("python"), machine)
    flop = next(s for s in prediction.sites if s.path == "solve/it/fl")
    # no measured calls: one per execution of each kernel, and the annotated site's own cost, in the runtime part
    per_execution = machine.cpython.call_overhead_s + machine.cpython.annotation_s["region"]
    assert float(flop.runtime.subs(VALUES)) == pytest.approx(10 * per_execution, rel=1e-12)
    assert machine.cpython.python_flops is not None
    assert float(flop.compute.subs(VALUES)) == pytest.approx(10 * 2000 / machine.cpython.python_flops, rel=1e-12)
    assert float(prediction.part("runtime").subs(VALUES)) > 0
    assert prediction.evaluate(VALUES) == pytest.approx(sum(float(prediction.part(p).subs(VALUES)) for p in PARTS))


def test_ma_predict_prints_the_four_parts_per_subroutine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for language in ("python", "c"):
        run = write_run(tmp_path / language, program(), 2, language=language)
        assert main(["predict", str(run), "--machine", "amd-epyc-zen4-kvm", "--format", "json"]) == 0
        report = json.loads(capsys.readouterr().out)
        solve = next(row for row in report["subroutines"] if row["name"] == "solve")
        assert set(PARTS) <= set(solve) and solve["seconds"] == pytest.approx(sum(solve[p] for p in PARTS))
        assert (solve["runtime"] > 0) == (language == "python")
    assert main(["predict", str(tmp_path / "python"), "--machine", "amd-epyc-zen4-kvm"]) == 0
    table = capsys.readouterr().out
    assert re.search(r"subroutine \(own sites\)\s+seconds\s+compute\s+memory\s+comm\s+runtime\n", table)
