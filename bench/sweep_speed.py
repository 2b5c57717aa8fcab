"""Sweep speed: a 10^6-point grid of NPB CG's flops and mpi_bytes, ``ma sweep``'s path vs the Octave export.

The models come from a real run (NPB CG class S on two processes under the venv's mpiexec, or --trace-dir).
The grid is na (1000 geometric values) x nprocs (2^0..2^9) x nonzer (5..104): 10^6 points. Timed, best of
--repeat runs, side by side in this one process:

1. ``ma_post.studies.sweep.sweep``: what ``ma sweep`` does (open grid: each parameter along its own axis,
   broadcast by the model's NumPy function);
2. the exported NumPy module on dense columns (one value of every parameter per point);
3. the exported Octave functions in one ``octave-cli`` call, on the same open grid (Octave broadcasts too)
   and on the same dense columns; timed inside Octave (tic/toc), and the whole call with start-up.

Every variant's values are compared with the sweep's. Goal: the sweep at least as fast as Octave on the
same grid, and at least 10^7 points/s.

Run: .venv/bin/python bench/sweep_speed.py [--repeat 5] [--trace-dir DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ma_post  # noqa: E402
from ma_post.export import export_octave, export_python  # noqa: E402
from ma_post.export.octave import octave_function_name  # noqa: E402
from ma_post.studies.ranges import parse_values  # noqa: E402
from ma_post.studies.sweep import open_grid, sweep  # noqa: E402

QUANTITIES = ("flops", "mpi_bytes")
GRID = {"na": "1e3:1e7:log1000", "nprocs": "2^(0:9)", "nonzer": "5:104"}


def cg_traces(workdir: Path) -> Path:
    trace_dir = workdir / "cg-S-2"
    argv = [str(Path(sys.executable).parent / "ma"), "run", "-n", "2", "--trace-dir", str(trace_dir), "--",
            sys.executable, str(ROOT / "examples" / "npb_cg" / "cg.py"), "--class", "S"]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the CG run failed:\n{done.stderr[-2000:]}")
    return trace_dir


def best(repeat: int, fn, *args):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - start)
    return min(times), result


def line(label: str, seconds: float, points: int, note: str = "") -> None:
    print(f"  {label:<34} {seconds:8.4f} s  {points / seconds:14,.0f} points/s  {note}")


def max_rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(a - b) / np.maximum(np.abs(b), 1e-300)
    return float(np.max(np.where(a == b, 0.0, rel)))


def octave_script(models, axes, workdir: Path, repeat: int) -> Path:
    """One Octave script: the open grid and the dense columns, each timed ``repeat`` times with tic/toc."""
    names = list(axes)
    for name in names:
        np.asarray(axes[name], dtype=float).tofile(workdir / f"{name}.bin")
    lines = [f"addpath('{workdir / 'm'}');"]
    for i, name in enumerate(names):
        shape = [1] * len(names)
        shape[i] = len(axes[name])
        lines.append(f"f = fopen('{workdir / name}.bin'); {name} = reshape(fread(f, Inf, 'double'), "
                     f"[{', '.join(map(str, shape))}]); fclose(f);")
    full = ", ".join(f"numel({n})" for n in names)
    points = int(np.prod([len(v) for v in axes.values()]))
    lines.append(f"[{', '.join(f'd_{n}' for n in names)}] = ndgrid({', '.join(f'{n}(:)' for n in names)});")
    lines += [f"d_{n} = d_{n}(:);" for n in names]
    fixed = {name: float(m.trace_values[name][0]) for m in models for name in m.inputs if name not in axes}
    lines += [f"{name} = {value!r}; d_{name} = {value!r};" for name, value in fixed.items()]
    for kind, prefix in (("open", ""), ("dense", "d_")):
        calls = [f"r_{m.quantity} = {octave_function_name(m.quantity)}("
                 f"{', '.join(prefix + a for a in m.inputs)});" for m in models]
        lines += [*calls, f"t_{kind} = Inf;", f"for k = 1:{repeat}", "  tic;", *("  " + c for c in calls),
                  f"  t_{kind} = min(t_{kind}, toc);", "end"]
        for m in models:
            lines.append(f"r = r_{m.quantity}; if numel(r) != {points}, r = r .* ones({full}); end; "
                         f"f = fopen('{workdir}/{kind}_{m.quantity}.bin', 'w'); fwrite(f, r(:), 'double'); fclose(f);")
    lines.append("printf('%.9f %.9f\\n', t_open, t_dense);")
    script = workdir / "sweep_bench.m"
    script.write_text("\n".join(lines) + "\n")
    return script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--trace-dir", type=Path, help="traces of a CG run (default: run class S on 2 processes)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ma-sweep-bench-") as tmp:
        workdir = Path(tmp)
        trace_dir = args.trace_dir or cg_traces(workdir)
        builder = ma_post.ModelBuilder(ma_post.load(trace_dir))
        models = [builder.model(q) for q in QUANTITIES]
        axes = {name: parse_values(spec) for name, spec in GRID.items()}
        points = int(np.prod([len(v) for v in axes.values()]))
        print(f"{points:,} points: " + ", ".join(f"{n} {GRID[n]}" for n in axes) + f"; {', '.join(QUANTITIES)}; "
              f"best of {args.repeat}")
        sweep(models, {k: v[:2] for k, v in axes.items()})  # compile the NumPy functions once

        t_sweep, result = best(args.repeat, sweep, models, axes)
        line("ma sweep (open grid)", t_sweep, points)

        module_path = export_python(models, workdir / "py", module="sweep_bench_models")
        spec = importlib.util.spec_from_file_location("sweep_bench_models", module_path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        grid = open_grid(axes)
        dense = {n: np.broadcast_to(v, result.shape).ravel().copy() for n, v in grid.items()}
        fixed = {n: float(m.trace_values[n][0]) for m in models for n in m.inputs if n not in axes}

        def numpy_dense():
            return {m.quantity: module.QUANTITIES[m.quantity](*(dense.get(a, fixed.get(a)) for a in m.inputs))
                    for m in models}

        t_dense, dense_values = best(args.repeat, numpy_dense)
        line("NumPy export (dense columns)", t_dense, points,
             f"max rel. diff {max(max_rel(dense_values[q], result.values[q]) for q in QUANTITIES):.1e}")

        octave = shutil.which("octave-cli")
        if not octave:
            print("  Octave export: octave-cli not found, not measured")
            return
        export_octave(models, workdir / "m")
        script = octave_script(models, axes, workdir, args.repeat)
        start = time.perf_counter()
        done = subprocess.run([octave, "--no-gui", "--no-window-system", "-q", str(script)], capture_output=True,
                              text=True, cwd=workdir)
        t_call = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"octave failed: {done.stderr[-1500:]}")
        t_open, t_odense = (float(x) for x in done.stdout.split()[-2:])
        for kind, seconds in (("open", t_open), ("dense", t_odense)):
            diff = max(max_rel(np.fromfile(workdir / f"{kind}_{q}.bin").reshape(result.shape, order="F"),
                               result.values[q]) for q in QUANTITIES)
            line(f"Octave export ({'open grid' if kind == 'open' else 'dense columns'})", seconds, points,
                 f"max rel. diff {diff:.1e}")
        line("Octave whole call (start-up, I/O)", t_call, points, "both grids, every repeat")
        print(f"ratios: sweep vs Octave on the open grid {t_open / t_sweep:.2f}x; NumPy vs Octave on dense columns "
              f"{t_odense / t_dense:.2f}x; sweep {points / t_sweep / 1e7:.2f} x 10^7 points/s")


if __name__ == "__main__":
    main()
