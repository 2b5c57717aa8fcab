"""Exports never run code: hostile text in a trace directory's path or in a name reaches the generated Python,
Octave and C only inside comments it cannot end, and names the target language reserves are renamed.

Each hostile path below ran its payload in the export of its language before (Python on import of the module,
Octave when the function is called, C when the compiled library is loaded); the tests export from it, import
the module, call the Octave function with octave-cli and compile and load the C, and check that the sentinel
file the payload would create never appears and the functions still compute the model.
"""

from __future__ import annotations

import ast
import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import sympy
from post_fixtures import cg_program, write_run
from test_post_export import expression_model, import_path

from ma_cli.main import main
from ma_post.export import c_sources, export_c, export_octave, export_python, octave_function, python_module
from ma_post.export.common import c_comment, comment_text, python_docstring
from ma_post.models import ModelBuilder
from ma_post.traceset import load

SENTINEL = "SENTINEL_EXPORT_RAN"
# One payload per target: each closes the comment or docstring the path is printed in, runs a command, and
# opens a new one so that the rest of the file still parses.
HOSTILE_PATHS = {
    "python": f'run"""\nimport os; os.system("touch {SENTINEL}")\n"""',
    "octave": f"run\nsystem('touch {SENTINEL}');\n%",
    "c": (f"run*/\n#ifndef HOSTILE\n#define HOSTILE\n#include <stdlib.h>\n__attribute__((constructor)) static "
          f'void hostile(void) {{ if (system("touch {SENTINEL}")) {{}} }}\n#endif\n/*'),
}
NEEDS = {"python": None, "octave": "octave-cli", "c": "gcc"}


def hostile_run(base: Path, text: str) -> Path:
    """A CG-shaped trace set in a directory whose path is ``text`` (its ``/`` make subdirectories)."""
    return write_run(base / text, cg_program(), size=2)


def build_c(directory: Path) -> Path:
    lib = directory / "libmodels.so"
    done = subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-shared", "-fPIC",
                           str(directory / "ma_models.c"), "-o", str(lib), "-lm"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return lib


def call_octave(directory: Path, call: str, cwd: Path) -> str:
    done = subprocess.run(["octave-cli", "--no-gui", "--no-window-system", "-q", "--norc", "--eval",
                           f"addpath('{directory}'); printf('%.17g\\n', {call});"],
                          cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("target", ["python", pytest.param("octave", marks=pytest.mark.octave), "c"])
def test_a_hostile_trace_directory_path_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str], target: str) -> None:
    tool = NEEDS[target]
    assert tool is None or shutil.which(tool), f"{tool} is needed for the {target} export test"
    run = hostile_run(tmp_path, HOSTILE_PATHS[target])
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where the payload's 'touch' would create the sentinel
    assert main(["export", str(run), "--python", "py", "--octave", "m", "--c", "c", "-q", "flops"]) == 0
    capsys.readouterr()
    flops = ModelBuilder(load(run)).model("flops")
    args = {"cgitmax": 25, "na": 1400, "niter": 15, "nonzer": 7, "nprocs": 4}
    assert flops.inputs == list(args)
    expected = flops.evaluate(args)
    if target == "python":
        module = import_path(work / "py" / "ma_models.py")
        assert float(module.flops(*args.values())) == pytest.approx(expected, rel=1e-12)
        # The docstring names the directory in one line, its newlines written as \n.
        assert "run\"\"\"\\nimport os" in (module.__doc__ or "")
    elif target == "octave":
        value = call_octave(work / "m", f"flops({', '.join(map(str, args.values()))})", work)
        assert float(value.split()[-1]) == pytest.approx(expected, rel=1e-12)
    else:
        lib = ctypes.CDLL(str(build_c(work / "c")))
        lib.flops.restype = ctypes.c_double
        lib.flops.argtypes = [ctypes.c_double] * len(args)
        assert lib.flops(*map(float, args.values())) == pytest.approx(expected, rel=1e-12)
    assert not (work / SENTINEL).exists()
    assert not list(tmp_path.rglob(SENTINEL))


def test_comment_text_is_one_line_that_no_target_can_end() -> None:
    hostile = 'a\nb\r\x0b\x0c\x85\u2028\u2029\udcff\\ */ /* ?? """ \' %{'
    line = comment_text(hostile)
    assert line.isprintable() and len(line.splitlines()) == 1
    assert line == "a\\nb\\r\\x0b\\x0c\\x85\\u2028\\u2029\\udcff\\\\ */ /* ?? \"\"\" ' %{"
    c = c_comment(line)
    assert "*/" not in c and "/*" not in c and "??" not in c
    # A docstring holding the escaped line reads back as the line.
    doc = python_docstring(line)
    assert ast.literal_eval(f'"""{doc}"""') == line


RESERVED_NAMES = "NULL + HUGE_VAL + M_PI + lambda + _shaped + end + function + numpy + r + pow + __x + k + n + out"


def test_reserved_names_are_renamed_with_a_note_in_every_target(tmp_path: Path) -> None:
    model = expression_model("q_reserved", f"2*({RESERVED_NAMES}) + 3*NULL*M_PI")
    points = {name: float(i + 1) for i, name in enumerate(model.inputs)}
    expected = model.evaluate(points)
    # Python: imports, computes, says what it renamed.
    module = import_path(export_python([model], tmp_path / "py"))
    assert float(module.q_reserved(*points.values())) == pytest.approx(expected, rel=1e-12)
    assert module.INPUTS["q_reserved"] == tuple(model.inputs)
    doc = module.q_reserved.__doc__ or ""
    assert "lambda_ is the variable lambda (lambda is reserved in Python)" in doc
    assert "_shaped_ is the variable _shaped (_shaped is reserved in Python)" in doc
    # C: compiles with every warning an error, computes, says what it renamed.
    header, source = c_sources([model])
    for name in ("NULL", "HUGE_VAL", "pow", "k", "n", "out"):
        assert f"{name}_ is the variable {name} ({name} is reserved in C)" in source
    for name in ("M_PI", "__x"):  # reserved prefixes
        assert f"v_{name} is the variable {name} ({name} is reserved in C)" in source
    assert "double q_reserved(double HUGE_VAL_, double v_M_PI, double NULL_, double v___x," in header
    lib = ctypes.CDLL(str(build_c(export_c([model], tmp_path / "c")[1].parent)))
    lib.q_reserved.restype = ctypes.c_double
    lib.q_reserved.argtypes = [ctypes.c_double] * len(points)
    assert lib.q_reserved(*points.values()) == pytest.approx(expected, rel=1e-12)
    # Octave: the function's help says so; it runs (octave test below).
    _name, text = octave_function(model)
    assert "end_ is the variable end (end is reserved in Octave)" in text
    assert "function_ is the variable function (function is reserved in Octave)" in text


@pytest.mark.octave
def test_reserved_names_in_octave_run(tmp_path: Path) -> None:
    model = expression_model("q_reserved", f"2*({RESERVED_NAMES}) + 3*NULL*M_PI")
    points = {name: float(i + 1) for i, name in enumerate(model.inputs)}
    export_octave([model], tmp_path / "m")
    value = call_octave(tmp_path / "m", f"q_reserved({', '.join(map(str, points.values()))})", tmp_path)
    assert float(value.split()[-1]) == pytest.approx(model.evaluate(points), rel=1e-12)


def test_quantities_and_names_that_are_not_identifiers_stay_literals(tmp_path: Path) -> None:
    """A library caller's model whose quantity holds code and whose variable is not a name."""
    hostile = 'x"""\nimport os; os.system("touch ' + SENTINEL + '")\n"""'
    model = expression_model(hostile, "2*a")
    spaced = sympy.Symbol("a b")
    model = type(model)(hostile, model.expr.xreplace({sympy.Symbol("a"): spaced}), ["a b"], {}, [], [], {},
                        np.array([0]), True)
    text = python_module([model])
    path = tmp_path / "hostile_models.py"
    path.write_text(text)
    module = import_path(path)
    assert list(module.QUANTITIES) == [hostile]
    assert module.INPUTS[hostile] == ("a b",)
    assert float(next(iter(module.QUANTITIES.values()))(3.0)) == 6.0
    assert "a_b is the variable a b (a b is not a name in Python)" in text
    assert not list(tmp_path.rglob(SENTINEL))
    _header, source = c_sources([model])
    assert "\nimport os" not in source
