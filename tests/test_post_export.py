"""Round trips: expression text -> SymPy -> Octave / Python (NumPy) / C code -> the same numbers.

Octave runs for real (octave-cli), C is compiled with gcc and called through ctypes, the Python module is
imported; every result is compared with SymPy's exact value at many parameter points (relative 1e-12),
and the vectorised forms evaluate whole grids in one call.
"""

from __future__ import annotations

import ctypes
import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import sympy
from post_fixtures import cg_program, make_trace

from ma_cli.main import main
from ma_post.export import c_sources, export_c, export_octave, export_python, octave_function
from ma_post.models import Model, ModelBuilder, available_quantities
from ma_post.sympy_expr import symbol, to_sympy
from ma_post.traceset import from_traces

# Every function and operator of the language, and names that are keywords in the target languages.
EXPRESSIONS = {
    "q_arith": "a*b + c/n - 3*a/7 + 2^c + a^0.5 + (a + b)^-1 + 1e-3*n",
    "q_paper": "2^ceil(log(n)/(2*log(2))) * log(2^ceil(log(n)/(2*log(2))))/log(2)",
    "q_round": "ceil(a/b) + floor(b/3) + ceil(log2(n)) + floor(log10(n))",
    "q_funcs": "sqrt(a) + exp(b/10) + log(a) + abs(c - 5) + log2(b) + log10(a)",
    "q_minmax": "min(a, b) + max(a, b, c) + min(n, 3*c, a*b, 7)",
    "q_mod": "mod(a, b) + mod(n, c) + mod(c - 6, 4) + mod(n, c - 3)",
    "q_keywords": "end + lambda*int + r*numpy + double/k",
    "q_const": "42",
}


def expression_model(name: str, text: str) -> Model:
    expr = to_sympy(text)
    inputs = sorted(s.name for s in expr.free_symbols)
    return Model(name, expr, inputs, {}, [], [], {}, np.array([0]), True)


def points(count: int, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    cols = {
        "a": rng.uniform(0.5, 500, count), "b": rng.uniform(0.1, 50, count),
        "c": rng.integers(0, 12, count).astype(float),
        "n": rng.choice([1, 2, 3, 4, 7, 8, 10, 16, 100, 1000, 1024, 4096, 10000, 65536, 999999], count).astype(float),
    }
    for name in ("end", "lambda", "int", "r", "numpy", "double", "k"):
        cols[name] = rng.uniform(1, 100, count)
    return cols


def exact(model: Model, cols: dict[str, np.ndarray], k: int) -> float:
    subs = {symbol(name): sympy.Rational(repr(float(cols[name][k]))) for name in model.inputs}
    return float(model.inlined().xreplace(subs).evalf(30))


def cg_models() -> list[Model]:
    ts = from_traces([make_trace(cg_program(), r, 4) for r in range(4)])
    builder = ModelBuilder(ts)
    return [builder.model(q) for q in available_quantities(ts)] + [builder.model("bytes_per_message")]


def cg_points(count: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {"na": rng.integers(1000, 10**6, count).astype(float), "nonzer": rng.integers(3, 30, count).astype(float),
            "niter": rng.integers(1, 100, count).astype(float), "cgitmax": np.full(count, 25.0),
            "dp": np.full(count, 8.0), "nprocs": 2.0 ** rng.integers(0, 14, count)}


ALL_MODELS = [expression_model(n, t) for n, t in EXPRESSIONS.items()]
N_EXACT = 60


def check_against_sympy(models: list[Model], cols: dict[str, np.ndarray], results: dict[str, np.ndarray]) -> None:
    for m in models:
        got = np.broadcast_to(np.asarray(results[m.quantity], dtype=float), cols[next(iter(cols))].shape)
        for k in range(N_EXACT):
            want = exact(m, cols, k)
            where = (m.quantity, k, {n: cols[n][k] for n in m.inputs})
            assert got[k] == pytest.approx(want, rel=1e-12, abs=1e-300), where


def test_python_export_matches_sympy(tmp_path: Path) -> None:
    path = export_python(ALL_MODELS, tmp_path, module="expr_models")
    module = import_path(path)
    cols = points(200)
    results = {m.quantity: module.QUANTITIES[m.quantity](*(cols[a] for a in module.INPUTS[m.quantity]))
               for m in ALL_MODELS}
    check_against_sympy(ALL_MODELS, cols, results)
    assert module.q_const().shape == () and float(module.q_const()) == 42
    # Scalars broadcast against arrays; the keyword-named inputs were renamed.
    assert module.INPUTS["q_keywords"] == ("double", "end", "int", "k", "lambda", "numpy", "r")
    # mod(a, 0) = a; mod(-1, 4) = 3 (sign of the divisor)
    assert module.q_mod(7, 0, np.array([5.0, 6.0]), 4).tolist() == [7 + 4 + 3 + 0, 7 + 4 + 0 + 1]


def import_path(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem + "_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_export_of_cg_models_with_definitions(tmp_path: Path) -> None:
    models = cg_models()
    module = import_path(export_python(models, tmp_path))
    cols = cg_points(500)
    results = {m.quantity: module.QUANTITIES[m.quantity](*(cols[a] for a in m.inputs)) for m in models}
    check_against_sympy(models, cols, results)
    text = (tmp_path / "ma_models.py").read_text()
    assert "    num_proc_cols = 2**numpy.ceil(" in text  # derived variables are local statements


@pytest.fixture(scope="module")
def compiled_c(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    gcc = shutil.which("gcc")
    assert gcc, "gcc is needed for the C export test"
    out = tmp_path_factory.mktemp("c")
    models = ALL_MODELS + cg_models()
    _header, source = export_c(models, out)
    lib = out / "libmodels.so"
    done = subprocess.run([gcc, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-shared", "-fPIC",
                           str(source), "-o", str(lib), "-lm"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return ctypes.CDLL(str(lib))


def c_call(lib: ctypes.CDLL, m: Model, cols: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(scalar function at each point, the _v function over all points)."""
    count = len(next(iter(cols.values())))
    scalar = getattr(lib, m.quantity.replace("/", "_per_"))
    scalar.restype = ctypes.c_double
    scalar.argtypes = [ctypes.c_double] * len(m.inputs)
    one_by_one = np.array([scalar(*(float(cols[a][k]) for a in m.inputs)) for k in range(count)])
    vector = getattr(lib, m.quantity.replace("/", "_per_") + "_v")
    arrays = [np.ascontiguousarray(cols[a], dtype=np.float64) for a in m.inputs]
    out = np.empty(count)
    ptr = ctypes.POINTER(ctypes.c_double)
    vector.restype = None
    vector.argtypes = [ctypes.c_size_t] + [ptr] * (len(m.inputs) + 1)
    vector(count, *(a.ctypes.data_as(ptr) for a in arrays), out.ctypes.data_as(ptr))
    return one_by_one, out


def test_c_export_matches_sympy(compiled_c: ctypes.CDLL) -> None:
    cols = points(200)
    results = {}
    for m in ALL_MODELS:
        scalar, vector = c_call(compiled_c, m, cols)
        assert np.array_equal(scalar, vector)
        results[m.quantity] = scalar
    check_against_sympy(ALL_MODELS, cols, results)


def test_c_export_of_cg_models(compiled_c: ctypes.CDLL) -> None:
    models = cg_models()
    cols = cg_points(300)
    check_against_sympy(models, cols, {m.quantity: c_call(compiled_c, m, cols)[0] for m in models})


def test_c_header_declares_every_function() -> None:
    header, source = c_sources(ALL_MODELS[:2])
    # 'n' (the length argument of the _v functions) is renamed in every signature.
    assert "double q_arith(double a, double b, double c, double n_);" in header
    assert ("void q_arith_v(size_t n, const double *a, const double *b, const double *c, const double *n_, "
            "double *out);") in header
    assert "double q_arith(double a, double b, double c, double n_)\n{" in source


def run_octave(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    octave = shutil.which("octave-cli")
    assert octave, "octave-cli is needed for the Octave export test"
    path = cwd / "driver.m"
    path.write_text(script)
    done = subprocess.run([octave, "--no-gui", "--no-window-system", "-q", "--norc", str(path)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def octave_call(m: Model, arg_expr: dict[str, str]) -> str:
    from ma_post.export.octave import octave_function_name

    return f"{octave_function_name(m.quantity)}({', '.join(arg_expr[a] for a in m.inputs)})"


@pytest.mark.octave
def test_octave_export_matches_sympy_vectorised(tmp_path: Path) -> None:
    models = ALL_MODELS + cg_models()
    m_dir = tmp_path / "m"
    written = export_octave(models, m_dir)
    assert {p.name for p in written} >= {"q_arith.m", "flops.m", "mpi_bytes.m", "bytes_per_message.m"}
    cols = {**points(200), **cg_points(200)}
    names = list(cols)
    np.savetxt(tmp_path / "points.csv", np.column_stack([cols[n] for n in names]), delimiter=",", fmt="%.17g")
    arg = {n: f"P(:, {i + 1})" for i, n in enumerate(names)}
    lines = [f"addpath('{m_dir}');", "P = dlmread('points.csv', ',');", "R = zeros(rows(P), 0);"]
    for m in models:
        lines.append(f"R(:, end + 1) = {octave_call(m, arg)} + zeros(rows(P), 1);")
    lines.append("dlmwrite('results.csv', R, 'precision', '%.17g');")
    # A scalar broadcasts against a column; a 3x4 grid evaluates in one call.
    lines.append("s = flops(25, [1400; 14000], 15, 7, 4); printf('broadcast %.17g %.17g\\n', s(1), s(2));")
    lines.append("[na, np] = meshgrid([1400 7000 14000 75000], [1 4 16]);")
    lines.append("g = mpi_bytes(25, 8, na, 15, np); printf('grid %d %d %.17g\\n', rows(g), columns(g), g(3, 4));")
    lines.append("h = help('mpi_bytes'); printf('help %d\\n', numel(strfind(h, 'MPI message volume per rank')));")
    done = run_octave("\n".join(lines) + "\n", tmp_path)
    results_matrix = np.loadtxt(tmp_path / "results.csv", delimiter=",", ndmin=2)
    results = {m.quantity: results_matrix[:, i] for i, m in enumerate(models)}
    check_against_sympy(models, cols, results)
    out = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    flops = next(m for m in models if m.quantity == "flops")
    base = {"cgitmax": 25, "niter": 15, "nonzer": 7, "nprocs": 4}
    b1, b2 = map(float, out["broadcast"].split())
    assert b1 == pytest.approx(flops.evaluate({**base, "na": 1400}), rel=1e-12)
    assert b2 == pytest.approx(flops.evaluate({**base, "na": 14000}), rel=1e-12)
    rows, cols_, value = out["grid"].split()
    mpi = next(m for m in models if m.quantity == "mpi_bytes")
    assert (rows, cols_) == ("3", "4")
    assert float(value) == pytest.approx(mpi.evaluate({"cgitmax": 25, "dp": 8, "na": 75000, "niter": 15, "nprocs": 16}),
                                         rel=1e-12)
    assert out["help"] == "1"


@pytest.mark.octave
def test_cli_export_all_targets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from post_fixtures import write_run

    run = write_run(tmp_path / "run", cg_program(), size=4)
    assert main(["export", str(run), "--octave", str(tmp_path / "m"), "--python", str(tmp_path / "py"),
                 "--c", str(tmp_path / "c"), "-q", "mpi_bytes", "-q", "flops"]) == 0
    listed = capsys.readouterr().out.split()
    assert sorted(Path(p).name for p in listed) == ["flops.m", "ma_models.c", "ma_models.h", "ma_models.py",
                                                     "mpi_bytes.m"]
    text = (tmp_path / "m" / "mpi_bytes.m").read_text()
    assert text.startswith("function r = mpi_bytes(cgitmax, dp, na, niter, nprocs)\n")
    assert "num_proc_cols = 2.^ceil(" in text and ".*" in text
    done = run_octave(f"addpath('{tmp_path / 'm'}'); printf('%.17g\\n', mpi_bytes(25, 8, 1400, 15, 4));", tmp_path)
    module = import_path(tmp_path / "py" / "ma_models.py")
    assert float(done.stdout.split()[-1]) == float(module.mpi_bytes(25, 8, 1400, 15, 4))
    assert main(["export", str(run)]) == 2
    assert "nothing to export" in capsys.readouterr().err


def test_octave_function_layout() -> None:
    name, text = octave_function(expression_model("q_keywords", EXPRESSIONS["q_keywords"]))
    assert name == "q_keywords.m"
    first = text.splitlines()[0]
    assert first == "function r = q_keywords(double, end_, int, k, lambda, numpy, r_)"
    assert text.rstrip().endswith("end")
    assert "  r = double./k + end_ + int.*lambda + numpy.*r_;" in text


def test_octave_function_does_not_shadow_octave_builtins() -> None:
    name, text = octave_function(expression_model("memory", "8*na"))
    assert name == "memory_.m"  # a memory.m would hide Octave's own memory()
    assert text.splitlines()[0] == "function r = memory_(na)"
