"""Post-processing at scale: 1024 synthetic rank traces of a CG-sized run, then model-grid evaluation.

1. Writes 1024 rank files (the CG-shaped annotation tree of tests/post_fixtures.py: ~55 sites, depth 5,
   variables, MPI profile with histogram and peers) and times ``load``, ``validate`` and building every
   default model (``ma model`` without --quantity): the target is <= 5 s in total.
2. Evaluates the exported mpi_bytes and flops models on the same 100k-point grid with the NumPy export
   and with the Octave export (one octave-cli call; time inside Octave and the whole call) and prints the
   points per second of each, side by side.

Run: .venv/bin/python bench/post_scale.py [--ranks 1024] [--points 100000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import post_fixtures  # noqa: E402

from ma_post.export import export_octave, export_python  # noqa: E402
from ma_post.models import ModelBuilder, available_quantities  # noqa: E402
from ma_post.traceset import load  # noqa: E402
from ma_post.validation import validate  # noqa: E402


def synthesize(directory: Path, ranks: int) -> tuple[float, int]:
    program = post_fixtures.cg_program(na=150000, nonzer=15, niter=75, flop_noise=0.05)
    total = 0
    for rank in range(ranks):
        # Compact, as the runtimes write it.
        text = json.dumps(post_fixtures.make_trace(program, rank, ranks, run_id="bench"), separators=(",", ":"))
        (directory / f"rank-{rank}.ma.json").write_text(text)
        total += len(text)
    return total / ranks, post_fixtures.count_sites(json.loads(text))


def timed(label: str, fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    elapsed = time.perf_counter() - start
    print(f"  {label:<28} {elapsed:7.3f} s")
    return result, elapsed


def scale(ranks: int, workdir: Path) -> tuple[Any, list[Any]]:
    traces = workdir / "traces"
    traces.mkdir()
    start = time.perf_counter()
    size, sites = synthesize(traces, ranks)
    print(f"synthesized {ranks} rank files of {size / 1024:.1f} KiB ({sites} sites each) "
          f"in {time.perf_counter() - start:.1f} s (not timed below)")
    print("load + validate + model:")
    ts, t_load = timed(f"load ({ranks} ranks)", load, traces)
    report, t_validate = timed("validate", validate, ts)
    quantities = available_quantities(ts)

    def build():
        builder = ModelBuilder(ts)
        return [builder.model(q) for q in quantities]

    models, t_model = timed(f"model ({len(quantities)} quantities)", build)
    total = t_load + t_validate + t_model
    verdict = "within" if total <= 5.0 else "OVER"
    print(f"  {'total':<28} {total:7.3f} s  ({verdict} the 5 s target)")
    print(f"  ({len(report.results)} assertions validated, {len(report.failed)} failing; "
          f"mpi_bytes check max rel. diff {models[quantities.index('mpi_bytes')].check.max_rel_diff():.1e})")
    return ts, models


def grid_eval(models, points: int, workdir: Path) -> None:
    wanted = [m for m in models if m.quantity in ("mpi_bytes", "flops")]
    py_path = export_python(wanted, workdir / "py", module="bench_models")
    spec = importlib.util.spec_from_file_location("bench_models", py_path)
    assert spec is not None and spec.loader is not None, py_path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(1)
    columns = {"na": rng.integers(1000, 2_000_000, points).astype(float),
               "nprocs": 2.0 ** rng.integers(0, 17, points), "nonzer": rng.integers(5, 30, points).astype(float),
               "niter": np.full(points, 75.0), "cgitmax": np.full(points, 25.0), "dp": np.full(points, 8.0)}
    print(f"\nmodel-grid evaluation, {points} points, quantities {', '.join(m.quantity for m in wanted)}:")
    start = time.perf_counter()
    numpy_results = {m.quantity: module.QUANTITIES[m.quantity](*(columns[a] for a in module.INPUTS[m.quantity]))
                     for m in wanted}
    t_numpy = time.perf_counter() - start
    print(f"  NumPy export      {t_numpy:8.4f} s  {points / t_numpy:14,.0f} points/s")
    octave = shutil.which("octave-cli")
    if not octave:
        print("  Octave export     octave-cli not found: not measured")
        return
    m_dir = workdir / "m"
    export_octave(wanted, m_dir)
    header = list(columns)
    np.savetxt(workdir / "grid.csv", np.column_stack([columns[h] for h in header]), delimiter=",", fmt="%.17g")
    calls = []
    for m in wanted:
        args = ", ".join(f"g(:, {header.index(a) + 1})" for a in m.inputs)
        calls.append(f"r_{m.quantity} = {m.quantity}({args});")
    script = "\n".join([
        f"addpath('{m_dir}');", f"g = dlmread('{workdir / 'grid.csv'}', ',');",
        calls[0], "tic;", *calls, "t = toc;",
        f"dlmwrite('{workdir / 'octave.csv'}', [{', '.join('r_' + m.quantity for m in wanted)}], "
        "'precision', '%.17g');",
        "printf('%.6f\\n', t);"])
    (workdir / "bench_grid.m").write_text(script)
    start = time.perf_counter()
    done = subprocess.run([octave, "--no-gui", "--no-window-system", "-q", str(workdir / "bench_grid.m")],
                          capture_output=True, text=True, cwd=workdir)
    t_call = time.perf_counter() - start
    if done.returncode != 0:
        print(f"  Octave export     failed: {done.stderr.strip()[:300]}")
        return
    t_inside = float(done.stdout.strip().splitlines()[-1])
    print(f"  Octave export     {t_inside:8.4f} s  {points / t_inside:14,.0f} points/s (inside Octave, tic/toc)")
    print(f"  Octave whole call {t_call:8.4f} s  {points / t_call:14,.0f} points/s (start-up, CSV in/out included)")
    print(f"  NumPy / Octave (inside) speed ratio: {t_inside / t_numpy:.2f}")
    octave_results = np.loadtxt(workdir / "octave.csv", delimiter=",", ndmin=2)
    for i, m in enumerate(wanted):
        rel = np.max(np.abs(octave_results[:, i] - numpy_results[m.quantity]) / np.abs(numpy_results[m.quantity]))
        print(f"  {m.quantity}: max relative difference NumPy vs Octave {rel:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--points", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ma-post-bench-") as tmp:
        workdir = Path(tmp)
        _, models = scale(args.ranks, workdir)
        grid_eval(models, args.points, workdir)


if __name__ == "__main__":
    main()
