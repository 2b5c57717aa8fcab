"""Models of thousands of sites and values of other numeric types: evaluated, exported and checked like small ones.

A sum of a few thousand terms printed as one flat chain of ``+`` makes Python's compiler (and so ``lambdify``)
fail with a RecursionError after minutes; the printers group long sums and products (ma_post/printers.py).
NumPy's fixed-width integers wrap silently (``int64(2**62) * 4 == 0``); the expression compiler reads them as
Python numbers, so their results are exact or an error at the magnitude limit, as for Python ints.
"""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import clean_env
from post_fixtures import Op, Sub, Var, write_run
from test_post_export import import_path

from ma_core.errors import ExpressionError
from ma_core.expr import Number, parse_expression
from ma_post.evaluation import evaluate
from ma_post.export import export_c, export_octave, export_python
from ma_post.models import Model, ModelBuilder
from ma_post.traceset import load as load_traces

SITES = 3000


def value(text: str, **variables: Any) -> Number:
    return parse_expression(text).evaluate(variables)


def test_numpy_integers_are_exact_or_an_overflow_error_never_a_wrap() -> None:
    big = np.int64(2**62)
    assert value("n*4", n=big) == 2**64  # int64 arithmetic would give 0
    assert value("n - m", n=np.int64(-(2**63)), m=np.uint64(1)) == -(2**63) - 1
    with pytest.raises(ExpressionError, match=r"column 3: result is too large"):
        value("n^17", n=big)
    assert value("x*2", x=np.float32(3e38)) == pytest.approx(6e38)  # no float32 inf
    with pytest.raises(ExpressionError, match=r"variable 'x' is str_ '12', not a number"):
        value("x + 1", x=np.str_("12"))


def test_a_numpy_integer_in_a_python_annotation_is_not_wrapped(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import numpy as np
        import ma
        n = ma.variable("n", np.int64(2**62))
        with ma.flop("f", "n*4"):
            pass
        try:
            with ma.flop("g", "n^17"):
                pass
        except ma.MAError as error:
            print(type(error).__name__, str(error).splitlines()[0])
    """))
    done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, env=clean_env(MA_TRACE_DIR="traces"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("ExpressionDomainError expression 'n^17' at column 3: result is too large "
                           "(magnitude over 1.7976931348623157e+308)\n")
    site = load_traces(tmp_path / "traces").find("f")
    assert int(site.predicted.sum.sum()) == 2**64


@pytest.fixture(scope="module")
def thousands(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Terms SymPy cannot fold into one another (a*n + b*n would be one term), in one input (ctypes takes 1024).
    program = [Var("n", 100), *(Sub(f"s{i}", [Op("flop", f"f{i}", f"ceil(n/{i + 1}) + {i}")]) for i in range(SITES))]
    return write_run(tmp_path_factory.mktemp("thousands"), program)


@pytest.fixture(scope="module")
def model(thousands: Path) -> Model:
    return ModelBuilder(load_traces(thousands)).model("flops")


def expected_flops(n: float) -> float:
    return float(sum(math.ceil(n / (i + 1)) + i for i in range(SITES)))


@pytest.mark.slow
def test_a_model_of_thousands_of_sites_evaluates(model: Model) -> None:
    started = time.monotonic()
    assert model.inputs == ["n"] and len(model.expr.args) > SITES / 2
    assert float(evaluate(model, {"n": np.array([200.0, 3.0])}).value[0]) == expected_flops(200)
    assert float(evaluate(model, {"n": np.array([200.0, 3.0])}).value[1]) == expected_flops(3)
    assert time.monotonic() - started < 300  # minutes before the RecursionError when sums printed flat


@pytest.mark.slow
def test_a_model_of_thousands_of_sites_exports(model: Model, tmp_path: Path) -> None:
    module = import_path(export_python([model], tmp_path / "py"))
    assert module.flops(np.array([200.0, 3.0])).tolist() == [expected_flops(200), expected_flops(3)]

    _header, source = export_c([model], tmp_path / "c")
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed for the C export test"
    library = tmp_path / "c" / "libmodels.so"
    done = subprocess.run([gcc, "-std=c99", "-O1", "-Wall", "-Werror", "-shared", "-fPIC", str(source), "-o",
                           str(library), "-lm"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[:2000]
    function = ctypes.CDLL(str(library)).flops
    function.restype = ctypes.c_double
    function.argtypes = [ctypes.c_double]
    assert function(200.0) == expected_flops(200)

    (path,) = export_octave([model], tmp_path / "m")
    text = path.read_text()
    assert "n/3000" in text.replace(" ", "") and "function r = flops(n)" in text
