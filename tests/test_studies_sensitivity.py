"""`ma sensitivity`: elasticities of hand-checked models from a real (tiny) run, and the x1, x2, x10 factors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import sympy

import ma_post
from ma_cli.main import main
from ma_post.studies.sensitivity import elasticities, scale_factors

PROGRAM = """
import ma

ma.variable("na", 1000)
ma.variable("nonzer", 7)
ma.variable("n", 64)
with ma.flop("f", "na*nonzer^2"):
    pass
with ma.loadstore("ls", "na*nonzer^2 + 3*na"):
    pass
with ma.heap_memory("rounded", "8*n*ceil(log2(n))"):
    pass
with ma.stack_memory("wrapped", "8*mod(n, 7) + n"):
    pass
"""


@pytest.fixture
def models(run_program) -> dict[str, ma_post.Model]:  # type: ignore[no-untyped-def]
    run = run_program(PROGRAM)
    assert run.returncode == 0, run.stderr
    builder = ma_post.ModelBuilder(ma_post.load(run.trace_dir))
    out = {q: builder.model(q) for q in ("flops", "loadstore", "heap_memory", "stack_memory")}
    out["trace_dir"] = run.trace_dir  # type: ignore[assignment]
    return out


def _by_name(ranked: list) -> dict:  # type: ignore[type-arg]
    return {e.parameter: e for e in ranked}


def test_power_law_gives_its_exponents(models: dict[str, ma_post.Model]) -> None:
    ranked = elasticities(models["flops"], {"na": 150000, "nonzer": 15})
    assert [e.parameter for e in ranked] == ["nonzer", "na"]  # largest first
    assert [e.value for e in ranked] == [2.0, 1.0] and all(e.symbolic for e in ranked)
    assert [e.expr for e in ranked] == [2, 1]  # exact, at every point
    factors = scale_factors(models["flops"], {"na": 150000, "nonzer": 15})
    assert factors == {"na": [1.0, 2.0, 10.0], "nonzer": [1.0, 4.0, 100.0]}


def test_sum_weights_the_terms_by_their_shares(models: dict[str, ma_post.Model]) -> None:
    e = _by_name(elasticities(models["loadstore"]))  # at the traced na=1000, nonzer=7
    assert e["na"].value == pytest.approx(1.0, rel=1e-14)
    assert e["nonzer"].value == pytest.approx(2 * 49 / (49 + 3), rel=1e-14)
    nonzer = sympy.Symbol("nonzer")
    assert sympy.simplify(e["nonzer"].expr - 2 * nonzer**2 / (nonzer**2 + 3)) == 0


def test_rounding_is_taken_as_its_trend_and_mod_falls_back_to_a_difference(models: dict[str, ma_post.Model]) -> None:
    rounded = elasticities(models["heap_memory"], {"n": 1000})[0]
    assert rounded.symbolic and rounded.value == pytest.approx(1 + 1 / math.log(1000), rel=1e-12)
    wrapped = elasticities(models["stack_memory"], {"n": 64})[0]  # 8*mod(64, 7) + 64 = 72, slope 9
    assert not wrapped.symbolic and wrapped.value == pytest.approx(64 * 9 / 72, rel=1e-6)


def test_cli(models: dict[str, ma_post.Model], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir = str(models["trace_dir"])
    assert main(["sensitivity", trace_dir, "-q", "flops", "-q", "loadstore", "--at", "nonzer=10",
                 "--plot", str(tmp_path / "bars.svg")]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == "flops:" and lines[1].split() == ["parameter", "elasticity", "x1", "x2", "x10"]
    assert lines[2].split() == ["nonzer", "2", "1", "4", "100"] and lines[3].split() == ["na", "1", "1", "2", "10"]
    assert lines[4] == "loadstore:" and lines[6].split()[0] == "nonzer"
    assert "traced values: na=1000" in err and (tmp_path / "bars.svg").read_text().count("<svg") == 1
    assert main(["sensitivity", trace_dir, "-q", "flops", "--format", "json", "--scales", "1,3"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc[0]["point"] == {"na": 1000.0, "nonzer": 7.0} and doc[0]["scales"] == [1.0, 3.0]
    assert doc[0]["elasticities"][0] == {"parameter": "nonzer", "value": 2.0, "symbolic": True, "expr": "2",
                                         "factors": [1.0, 9.0]}
    assert main(["sensitivity", trace_dir, "-q", "flops", "--at", "na=1:3"]) == 2
    assert "one value per parameter" in capsys.readouterr().err
    assert main(["sensitivity", trace_dir, "-q", "flops", "-p", "steps"]) == 0
    assert "flops depends on none of steps" in capsys.readouterr().err
    assert main(["sensitivity", trace_dir, "-q", "flops", "--at", "stepz=3"]) == 2  # a misspelt name is an error
    assert "--at stepz=...: the run has no parameter 'stepz'; known parameters: " in capsys.readouterr().err
