"""`ma sweep`: the --set grammar, and grids evaluated in one vectorised call equal to SymPy point by point.

The traces come from real runs: the stencil program of tests/post_stencil_prog.py (one process) and, under
the venv's mpiexec, NPB CG class S on two processes.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import VENV_BIN, clean_env

import ma_post
from ma_cli.main import main
from ma_core.errors import MAError
from ma_post.evaluation import exact_value
from ma_post.studies.ranges import RangeError, is_geometric, parse_assignment, parse_values
from ma_post.studies.sweep import sweep

STENCIL = Path(__file__).with_name("post_stencil_prog.py")


@pytest.fixture(scope="module")
def stencil_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trace_dir = tmp_path_factory.mktemp("stencil") / "traces"
    done = subprocess.run([sys.executable, str(STENCIL), "12", "9", "3"], env=clean_env(MA_TRACE_DIR=str(trace_dir)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return trace_dir


@pytest.mark.parametrize("spec, expected", [
    ("150000", [150000]),
    ("1.5e5,2^10,75*2", [150000, 1024, 150]),
    ("1:5", [1, 2, 3, 4, 5]),
    ("10:0:-5", [10, 5, 0]),
    ("0:1:lin5", [0, 0.25, 0.5, 0.75, 1]),
    ("2^(0:12)", [2.0 ** k for k in range(13)]),
    ("3^(0:4:2)", [1, 9, 81]),
    ("min(4,2),max(1,3)", [2, 3]),
])
def test_set_values(spec: str, expected: list[float]) -> None:
    assert parse_values(spec).tolist() == pytest.approx(expected, rel=1e-15)


def test_geometric_range_has_equal_ratios_and_reads_as_log() -> None:
    values = parse_values("1e5:1e6:log10")
    assert len(values) == 10 and values[0] == pytest.approx(1e5) and values[-1] == pytest.approx(1e6)
    assert np.allclose(values[1:] / values[:-1], 10 ** (1 / 9))
    assert is_geometric(values) and is_geometric(parse_values("2^(0:3)"))
    assert not is_geometric(parse_values("1:10")) and not is_geometric(parse_values("-4,-2,-1"))


@pytest.mark.parametrize("item, message", [
    ("na", "expected NAME=VALUES"),
    ("na=", "expected NAME=VALUES"),
    ("na=abc", "'abc' is not a number (it names abc)"),
    ("na=1:10:0", "does not lead from 1 to 10"),
    ("na=-1:10:log3", "needs positive ends"),
    ("na=1e6:1:1", "does not lead"),
    ("na=2^(0:1e9)", "more than"),
    ("na=(1,2", "unbalanced"),
    ("na=__import__('os')", "not a number"),
    ("na=1:2:3:4", "a range is A:B"),
])
def test_bad_set_values_name_the_item(item: str, message: str) -> None:
    with pytest.raises(RangeError) as caught:
        parse_assignment(item)
    assert item in str(caught.value) and message in str(caught.value)


def _exact(model: ma_post.Model, point: dict[str, float]) -> float:
    values = {name: point.get(name, float(model.trace_values[name][0])) for name in model.inputs}
    return float(exact_value(model, {k: int(v) if float(v).is_integer() else v for k, v in values.items()}))


def _check_pointwise(models: list[ma_post.Model], result, sets: dict[str, np.ndarray], samples: int = 60) -> None:
    rng = np.random.default_rng(7)
    names = list(result.axes)
    for _ in range(samples):
        index = tuple(int(rng.integers(len(result.axes[n]))) for n in names)
        point = {n: float(result.axes[n][i]) for n, i in zip(names, index, strict=True)} | result.fixed
        for model in models:
            assert result.values[model.quantity][index] == pytest.approx(_exact(model, point), rel=1e-12, abs=0), \
                (model.quantity, point)


def test_sweep_equals_pointwise_sympy(stencil_run: Path) -> None:
    builder = ma_post.ModelBuilder(ma_post.load(stencil_run))
    models = [builder.model(q) for q in ("flops", "heap_memory", "flops/heap_memory")]
    sets = {"n": parse_values("3:400"), "m": parse_values("2^(2:11)"), "steps": parse_values("1,7,30")}
    result = sweep(models, sets)
    assert result.shape == (398, 10, 3) and result.points == 398 * 10 * 3
    _check_pointwise(models, result, sets)
    # Cut into slabs of the longest axis, the grid gives the same numbers.
    slabbed = sweep(models, sets, chunk_points=1000)
    for q in result.values:
        np.testing.assert_array_equal(slabbed.values[q], result.values[q])
    # A quantity that ignores a swept parameter is constant along it, and says so.
    assert result.unused["heap_memory"] == ["steps"]
    assert np.all(result.values["heap_memory"] == result.values["heap_memory"][:, :, :1])


def test_sweep_keeps_traced_values_and_fixed_parameters(stencil_run: Path) -> None:
    model = ma_post.model(ma_post.load(stencil_run), "flops")
    result = sweep([model], {"n": [10.0, 20.0], "steps": [4.0]})
    assert result.fixed == {"steps": 4.0} and list(result.axes) == ["n"]
    assert result.from_trace["flops"] == {"m": "9 (traced)"}
    assert result.values["flops"].tolist() == [_exact(model, {"n": 10, "steps": 4, "m": 9}),
                                               _exact(model, {"n": 20, "steps": 4, "m": 9})]


def test_extra_columns_are_evaluated_on_the_same_open_grid(stencil_run: Path) -> None:
    model = ma_post.model(ma_post.load(stencil_run), "flops")
    shapes = []

    def per_point_time(grid):  # type: ignore[no-untyped-def]  # e.g. a backend's prediction
        shapes.append((np.shape(grid["n"]), np.shape(grid["m"]), grid["steps"]))
        return grid["n"] * grid["m"] * 1e-9

    result = sweep([model], {"n": parse_values("1:5"), "m": parse_values("1:3"), "steps": [2.0]},
                   extra={"time": per_point_time})
    assert shapes == [((5, 1), (1, 3), 2.0)]  # parameters along their own axes, no point-by-point call
    np.testing.assert_allclose(result.values["time"], np.outer(np.arange(1, 6), np.arange(1, 4)) * 1e-9)
    with pytest.raises(MAError, match="asked for twice"):
        sweep([model], {"n": [1.0, 2.0]}, extra={"flops": per_point_time})


def test_rank_dependent_input_is_reduced_as_asked(tmp_path: Path) -> None:
    import post_fixtures as pf

    program = [pf.Var("n", 10), pf.Var("local", lambda env: 100 + 10 * env["__rank"]), pf.Op("flop", "f", "local*n")]
    model = ma_post.model(ma_post.load(pf.write_run(tmp_path / "run", program, size=4)), "flops")
    n = np.array([1.0, 2.0, 5.0])
    locals_ = np.array([100.0, 110.0, 120.0, 130.0])
    expected = {None: locals_.mean() * n, "mean": locals_.mean() * n, "max": 130 * n, "min": 100 * n, 2: 120 * n}
    for rank, values in expected.items():
        assert sweep([model], {"n": n}, rank=rank).values["flops"].tolist() == values.tolist(), rank
    assert sweep([model], {"n": n, "local": [7.0]}).values["flops"].tolist() == (7 * n).tolist()


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_formats_and_plots(stencil_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ("sweep", str(stencil_run), "-q", "flops", "-q", "heap_memory", "--set", "n=1e1:1e3:log5",
            "--set", "m=2^(2:4)")
    status, out, err = _cli(capsys, *base, "--format", "csv")
    assert status == 0 and "steps = 3 (traced)" in err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 15 and list(rows[0]) == ["n", "m", "flops", "heap_memory"]
    model = ma_post.model(ma_post.load(stencil_run), "flops")
    for row in rows:
        assert float(row["flops"]) == pytest.approx(_exact(model, {"n": float(row["n"]), "m": float(row["m"])}),
                                                    rel=1e-12)
    status, out, _ = _cli(capsys, *base, "--format", "json")
    doc = json.loads(out)
    assert doc["shape"] == [5, 3] and doc["columns"]["m"][:3] == [4.0, 8.0, 16.0]
    status, out, _ = _cli(capsys, *base)
    assert out.splitlines()[0].split() == ["n", "m", "flops", "heap_memory"] and len(out.splitlines()) == 16
    # Plots: a heat map over two parameters, lines over one; three swept parameters cannot be drawn.
    for name, extra in (("heat.svg", ()), ("lines.png", ("--set", "steps=1:9"))):
        argv = [*base, "--plot", str(tmp_path / name), "--quiet"]
        if extra:
            argv = ["sweep", str(stencil_run), "-q", "flops", "--set", "steps=1:9", "--plot", str(tmp_path / name),
                    "--quiet"]
        status, out, err = _cli(capsys, *argv)
        assert status == 0 and out == "" and (tmp_path / name).stat().st_size > 1000, err
    assert "<svg" in (tmp_path / "heat.svg").read_text()
    status, _, err = _cli(capsys, *base, "--set", "steps=1,2", "--plot", str(tmp_path / "x.png"))
    assert status == 2 and "one or two swept parameters, not 3" in err
    status, _, err = _cli(capsys, *base, "--set", "steps=1:10", "--max-points", "100")
    assert status == 2 and "150 points" in err
    status, _, err = _cli(capsys, "sweep", str(stencil_run), "-q", "flops", "--set", "n=1:x")
    assert status == 2 and "--set 'n=1:x'" in err


@pytest.mark.mpi
def test_cg_sweep_of_a_million_points_equals_sympy(cg_class_s_on_two_ranks: Path) -> None:
    builder = ma_post.ModelBuilder(ma_post.load(cg_class_s_on_two_ranks))
    models = [builder.model("flops"), builder.model("mpi_bytes")]
    sets = {"na": parse_values("1e3:1e7:log1000"), "nprocs": parse_values("2^(0:9)"),
            "nonzer": parse_values("5:104")}
    result = sweep(models, sets)
    assert result.points == 1_000_000
    assert np.all(np.isfinite(result.values["flops"])) and np.all(result.values["mpi_bytes"] >= 0)
    _check_pointwise(models, result, sets, samples=40)


def test_progress_bar_on_a_terminal_only(stencil_run: Path) -> None:
    import fcntl
    import os
    import pty
    import struct
    import termios

    argv = [str(VENV_BIN / "ma"), "sweep", str(stencil_run), "-q", "flops", "--set", "n=1:30", "--set", "m=1:20",
            "--quiet"]
    piped = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0 and "\r" not in piped.stderr and "slab" not in piped.stderr, piped.stderr
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # a terminal has a size
    try:
        done = subprocess.run(argv, env=clean_env(), stdout=subprocess.DEVNULL, stderr=follower, timeout=300)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0 and b"sweep" in seen and b"slab" in seen, seen
