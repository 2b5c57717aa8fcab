"""`ma refine`: PMNF fits recover the true expressions of wrong assertions from several runs.

Synthetic runs (tests/post_fixtures.py simulates the runtime's folding) at 5 inputs recover 2*n*log2(n) and
n^2/p; three real runs of a small MPI program under the venv's mpiexec recover a loop's true trip count and
suggest assertions for MPI traffic that none covers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import numpy as np
import post_fixtures as pf
import pytest
import sympy
from conftest import VENV_BIN, clean_env
from sympy.codegen.cfunctions import log2

import ma_post
from ma_cli.main import main
from ma_core.errors import MAError
from ma_post.studies.pmnf import fit
from ma_post.studies.refine import refine

n, p = sympy.Symbol("n"), sympy.Symbol("p")
INPUTS = [(64, 1), (128, 4), (256, 2), (512, 8), (1024, 16)]


def test_pmnf_recovers_expressions_and_prefers_the_simplest_exact_one() -> None:
    ns = np.array([64.0, 128, 256, 512, 1024])
    assert fit({"n": ns}, 2 * ns * np.log2(ns)).expr == 2 * n * log2(n)
    ps = np.array([1.0, 4, 2, 8, 16])
    best = fit({"n": ns, "p": ps}, ns**2 / ps)
    assert best.expr == n**2 / p and best.max_error < 1e-12 and best.hypotheses > 10000
    assert fit({"n": ns[:3]}, 2 * ns[:3] - 1).expr == 2 * n - 1
    assert fit({"n": ns, "p": ps}, np.full(5, 8.0)).expr == 8  # a constant needs no parameter
    noisy = 5 * ns**1.5 * (1 + 0.01 * np.random.default_rng(1).standard_normal(5))
    rough = fit({"n": ns}, noisy)
    assert len(rough.terms) == 1 and rough.terms[0][0].i == Fraction(3, 2) and rough.terms[0][0].j == 0
    assert rough.max_error < 0.03


@pytest.fixture
def synthetic_runs(tmp_path: Path) -> list[tuple[str, ma_post.TraceSet]]:
    runs = []
    for nv, pv in INPUTS:
        program = [pf.Var("n", nv), pf.Var("p", pv),
                   pf.Op("flop", "sort", "n*n", actual="2*n*log2(n)"),
                   pf.Op("flop", "local", "n^2", actual="n^2/p"),
                   pf.Op("flop", "right", "3*n")]
        directory = pf.write_run(tmp_path / f"n{nv}-p{pv}", program)
        runs.append((directory.name, ma_post.load(directory)))
    return runs


def test_refine_recovers_the_measured_expressions_from_five_runs(synthetic_runs) -> None:  # type: ignore[no-untyped-def]
    suggestions = {s.path: s for s in refine(synthetic_runs)}
    assert sorted(suggestions) == ["local", "sort"]  # "right" agrees with its measurements
    sort, local = suggestions["sort"], suggestions["local"]
    assert sort.annotated == "n*n" and sort.fit is not None and sort.fit.expr == 2 * n * log2(n)
    assert local.fit is not None and local.fit.expr == n**2 / p and local.parameters == ["n", "p"]
    assert sort.reason == "FAIL in n64-p1, n128-p4, n256-p2, n512-p8, n1024-p16"
    assert local.reason == "FAIL in n128-p4, n256-p2, n512-p8, n1024-p16"  # right where p = 1
    for s in (sort, local):
        assert len(s.observations) == 5
        assert np.allclose(s.fitted(), [o.measured for o in s.observations], rtol=1e-12)
        assert all(o.predicted == o.inputs["n"] ** 2 for o in s.observations)


def test_refine_needs_two_runs_and_different_inputs(synthetic_runs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(MAError, match="at least two runs"):
        refine(synthetic_runs[:1])
    same = refine([synthetic_runs[0], ("again", synthetic_runs[0][1])])
    assert same and all(s.fit is None and "same inputs" in (s.problem or "") for s in same)


PROGRAM = """
import sys

import numpy as np
from mpi4py import MPI

import ma

n = int(sys.argv[1])
comm = MPI.COMM_WORLD
ma.variable("n", n)
ma.variable("nprocs", comm.Get_size())
with ma.loop("outer", "n") as outer:  # wrong on purpose: the loop runs 2*n + 1 times
    for _ in outer.range(2 * n + 1):
        pass
total = np.zeros(1)
for _ in range(n):  # no assertion: n allreduces of one double per rank
    comm.Allreduce(np.ones(1), total)
with ma.mpi_allreduce("sum", "8"):  # right
    comm.Allreduce(np.ones(1), total)
"""


@pytest.mark.mpi
def test_refine_finds_the_true_trip_count_from_three_real_runs(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(PROGRAM))
    dirs = []
    for size in (5, 9, 17):
        trace_dir = tmp_path / f"n{size}"
        done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "2", "--trace-dir", str(trace_dir), "--",
                               sys.executable, str(script), str(size)], env=clean_env(), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        dirs.append(str(trace_dir))
    assert main(["refine", *dirs, "--format", "json"]) == 0
    found = {(s["path"], s["what"]): s for s in json.loads(capsys.readouterr().out)}
    assert sorted(found) == [("(MPI_Allreduce, no assertion)", "bytes per message"),
                             ("(MPI_Allreduce, no assertion)", "messages per rank"), ("outer", "trips per call")]
    outer = found[("outer", "trips per call")]
    assert outer["annotated"] == "n" and outer["suggested"] == "2*n + 1" and outer["parameters"] == ["n"]
    assert [(o["inputs"]["n"], o["measured"], o["annotated"], o["ranks"]) for o in outer["observations"]] == \
        [(5.0, 11.0, 5.0, 2), (9.0, 19.0, 9.0, 2), (17.0, 35.0, 17.0, 2)]
    assert found[("(MPI_Allreduce, no assertion)", "messages per rank")]["suggested"] == "n"
    assert found[("(MPI_Allreduce, no assertion)", "bytes per message")]["suggested"] == "8"
    assert main(["refine", *dirs]) == 0
    text = capsys.readouterr().out
    assert "outer [loop] trips per call: FAIL in n5, n9, n17\n  annotated: n\n  suggested: 2*n + 1" in text
    assert main(["refine", dirs[0]]) == 2 and "at least two runs" in capsys.readouterr().err


def test_refine_never_claims_agreement_over_runs_of_different_programs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cg = pf.write_run(tmp_path / "cg", pf.cg_program(na=1400))
    other = pf.write_run(tmp_path / "other", [pf.Var("m", 10), pf.Loop("k", "m", [pf.Op("flop", "g", "3*m")])])
    assert main(["refine", str(cg), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ma refine: error: the runs share no assertion site (cg has 32, other has 2): refine "
                          "compares runs of one program at different inputs, not runs of different programs"), err
    # One site id in both, annotated differently: another program (or version), not another input.
    changed = pf.write_run(tmp_path / "changed", [pf.Var("m", 20), pf.Loop("k", "m", [pf.Op("flop", "g", "4*m")])])
    with pytest.raises(MAError, match=r"assertion k/g \[flop\] is '3\*m' at prog.py:\d+ in other but '4\*m' at "
                                      r"prog.py:\d+ in changed: refine compares runs of one program"):
        refine([("other", ma_post.load(other)), ("changed", ma_post.load(changed))])


def test_refine_states_the_sites_it_could_not_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = [pf.Op("flop", "g", "3*m")]
    small = pf.write_run(tmp_path / "m10", [pf.Var("m", 10), pf.Loop("k", "m", loop)])
    large = pf.write_run(tmp_path / "m20", [pf.Var("m", 20), pf.Loop("k", "m", [*loop, pf.Op("flop", "h", "m")])])
    assert main(["refine", str(small), str(large)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["every assertion in all runs agrees with its measurements within 0.001 in all 2 runs; no MPI "
                   "traffic outside assertions", "not compared: 1 assertion site not in every run: k/h (only in m20)"]
