"""The model path (``to_sympy``, ``ma model``/``eval``/``export``) keeps the runtime evaluator's bounds.

An expression the runtime refuses whatever its variables hold is refused by the SymPy conversion with the
runtime's own message and column (the conversion evaluates its parts without variables with the runtime's
evaluator), and the commands name the site; one the runtime evaluates (``n*10^-100000000`` is 0) never makes the
model hang; a model evaluated past the bounds at given values is a ModelError naming the point.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import VENV_BIN, clean_env
from post_fixtures import site_node, trace_doc, variable_entry

import ma
from ma_cli.main import main
from ma_core.errors import ExpressionError, ModelError
from ma_core.trace_format import rank_file
from ma_post.sympy_expr import to_sympy

FIFTY_FACTORS = "*".join(["1e300"] * 50)
REFUSED = ["log(0)", "2^1024", "sqrt(-1)", FIFTY_FACTORS, "1e300*1e300*n", "9^9^9", "(-8)^(1/3)", "exp(1000)",
           "log2(2-2)", "n*mod(4,2)^-1", "10^(100000001/2)"]


def runtime_error(text: str) -> str:
    with pytest.raises(ExpressionError) as caught:
        ma.parse_expression(text).evaluate({"n": 1024})
    return str(caught.value)


@pytest.mark.parametrize("text", REFUSED)
def test_the_conversion_refuses_what_the_runtime_refuses_with_its_message(text: str) -> None:
    expected = runtime_error(text)
    with pytest.raises(ExpressionError) as caught:
        to_sympy(text)
    assert str(caught.value) == expected


@pytest.mark.parametrize(("text", "value"), [("n*10^-100000000", 0), ("10^-100000000", 0), ("2^1023", 2**1023),
                                             ("1.001^100000*n", 1.001**100000 * 1024), ("n*2^-1074", 1024 * 5e-324)])
def test_a_power_the_runtime_evaluates_converts_at_once_to_its_value(text: str, value: float) -> None:
    start = time.perf_counter()
    converted = to_sympy(text)
    assert time.perf_counter() - start < 1.0
    runtime = ma.parse_expression(text).evaluate({"n": 1024})
    assert float(converted.subs("n", 1024)) == pytest.approx(runtime, rel=1e-12, abs=1e-320)
    assert runtime == pytest.approx(value, rel=1e-12, abs=1e-320)


def test_what_cancelled_variables_leave_is_refused_not_printed() -> None:
    with pytest.raises(ExpressionError, match="not a finite real number for any value of its variables"):
        to_sympy("log(n-n)")


def write_trace(directory: Path, expr: str) -> Path:
    doc = trace_doc([site_node("flop", "f", "f", expr, 1, file="prog.py", line=5)],
                    variables=[variable_entry("n", 1024)])
    directory.mkdir(parents=True, exist_ok=True)
    rank_file(directory, 0).write_text(json.dumps(doc))
    return directory


@pytest.mark.parametrize("text", ["log(0)", "2^1024", "sqrt(-1)", FIFTY_FACTORS])
def test_model_eval_and_export_name_the_site_and_give_the_runtimes_error(
        text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_trace(tmp_path / "t", text)
    first_line = runtime_error(text).splitlines()[0]
    for argv in (["model", str(run)], ["eval", str(run), "-q", "flops", "--set", "n=5"],
                 ["export", str(run), "--python", str(tmp_path / "py")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.splitlines()[0] == f"ma {argv[0]}: error: site f (prog.py:5): {first_line}", err
    assert not (tmp_path / "py" / "ma_models.py").exists()


def test_a_power_that_underflows_never_makes_ma_model_hang(tmp_path: Path) -> None:
    run = write_trace(tmp_path / "t", "n*10^-100000000")
    done = subprocess.run([str(VENV_BIN / "ma"), "model", str(run), "--format", "json"], capture_output=True,
                          text=True, timeout=60, env=clean_env())  # before: past 600 s
    assert done.returncode == 0, done.stderr
    (flops,) = json.loads(done.stdout)
    assert flops["expr"] == "0"


def test_eval_past_the_bounds_at_given_values_names_the_point(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    run = write_trace(tmp_path / "t", "log(n) + sqrt(n)")
    assert main(["eval", str(run), "-q", "flops", "--set", "n=4,0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ma eval: error: flops at n=0 is -inf (its term log(n) is -inf there), not a finite number "
                          "within 1.7976931348623157e+308: outside the runtime's bounds"), err
    assert main(["eval", str(run), "-q", "flops", "--set", "n=4"]) == 0
    assert "3.386" in capsys.readouterr().out  # log(4) + 2
    from ma_post.models import ModelBuilder
    from ma_post.traceset import load

    model = ModelBuilder(load(run)).model("flops")
    with pytest.raises(ModelError, match=r"flops at n=-1 is nan \(its term (sqrt|log)\(n\) is nan there\)"):
        model.evaluate({"n": -1.0})


def test_a_model_of_several_expressions_names_the_one_past_the_bounds() -> None:
    import numpy as np
    import sympy

    from ma_post.evaluation import evaluate

    class Parts:  # several expressions evaluated at once, as a prediction's sites (evaluation.components)
        quantity, inputs, ranks, size = "seconds", ["n"], np.arange(1), 1

        def __init__(self) -> None:
            self.cache: dict[str, object] = {}
            self.trace_values: dict[str, np.ndarray] = {}

        def inlined(self) -> sympy.Expr:
            n = sympy.Symbol("n")
            return sympy.Tuple(n + 1, 2 * n + sympy.log(n))

    assert evaluate(Parts(), {"n": 1.0}).value.tolist() == [2.0, 2.0]
    with pytest.raises(ModelError, match=r"seconds \(expression 2 of 2\) at n=0 is -inf \(its term log\(n\) is "):
        evaluate(Parts(), {"n": [1.0, 0.0]})
