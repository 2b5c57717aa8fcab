"""Post-processing at scale: synthetic traces of a CG-sized run (rank files and/or the merged file), then
model-grid evaluation.

1. Writes 1024 rank files and/or the merged file of as many ranks (``--layout``; the CG-shaped annotation
   tree of tests/post_fixtures.py: ~55 sites, depth 5, variables, MPI profile with histogram and peers) and
   times ``load``, ``validate`` and building every default model (``ma model`` without --quantity): the
   target is <= 5 s in total at 1024 ranks, <= 10 s above.
2. Evaluates the exported mpi_bytes and flops models on the same 100k-point grid with the NumPy export
   and with the Octave export (one octave-cli call; time inside Octave and the whole call) and prints the
   points per second of each, side by side.

Each layout is measured in a fresh process, whose peak resident memory (ru_maxrss) is printed with it.

Run: .venv/bin/python bench/post_scale.py [--ranks 1024] [--points 100000] [--layout per-rank|merged|both]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
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
from ma_runtime.merge import Bundle, build_archive, part_of, write_archive  # noqa: E402


def synthesize(directory: Path, ranks: int) -> tuple[float, int]:
    program = post_fixtures.cg_program(na=150000, nonzer=15, niter=75, flop_noise=0.05)
    total = 0
    for rank in range(ranks):
        # Compact, as the runtimes write it.
        text = json.dumps(post_fixtures.make_trace(program, rank, ranks, run_id="bench"), separators=(",", ":"))
        (directory / f"rank-{rank}.ma.json").write_text(text)
        total += len(text)
    return total / ranks, post_fixtures.count_sites(json.loads(text))


def synthesize_merged(directory: Path, ranks: int) -> tuple[float, int]:
    """The merged file the runtimes write at exit for the same traces (merge.py's reduction done in-process)."""
    program = post_fixtures.cg_program(na=150000, nonzer=15, niter=75, flop_noise=0.05)
    bundle = Bundle()
    for rank in range(ranks):
        bundle.add(part_of(post_fixtures.make_trace(program, rank, ranks, run_id="bench")))
    path = write_archive(directory, build_archive(bundle, ranks))
    return path.stat().st_size / ranks, len(bundle.structures)


def timed(label: str, fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    elapsed = time.perf_counter() - start
    print(f"  {label:<28} {elapsed:7.3f} s")
    return result, elapsed


def scale(traces: Path, target: float) -> tuple[Any, list[Any]]:
    print(f"load + validate + model ({traces.name}):")
    ts, t_load = timed(f"load ({len(ts_ranks(traces))} ranks)", load, traces)
    report, t_validate = timed("validate", validate, ts)
    quantities = available_quantities(ts)

    def build():
        builder = ModelBuilder(ts)
        return [builder.model(q) for q in quantities]

    models, t_model = timed(f"model ({len(quantities)} quantities)", build)
    total = t_load + t_validate + t_model
    verdict = "within" if total <= target else "OVER"
    print(f"  {'total':<28} {total:7.3f} s  ({verdict} the {target:g} s target)")
    print(f"  {'peak resident memory':<28} {peak_mib():7.0f} MiB (this process: import, load, validate, models)")
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


def peak_mib() -> float:
    """This process image's peak resident memory: VmHWM, which exec resets (ru_maxrss keeps the peak of the
    parent that forked it, here the synthesis)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ts_ranks(traces: Path) -> list[int]:
    merged = traces / "job.ma.npz"
    if merged.exists():
        return list(range(json.loads(__import__("zipfile").ZipFile(merged).read("trace.json"))["size"]))
    return [int(p.name.split("-")[1].split(".")[0]) for p in traces.glob("rank-*.ma.json")]


def json_ratio(traces: Path) -> None:
    """Rank files read with msgspec (typed structs; the reader's choice) and with the standard library's json
    (then checked and flattened in Python), side by side."""
    from ma_post import reader

    times = []
    for fast in (True, False):
        reader.FAST_JSON = fast
        start = time.perf_counter()
        load(traces)
        times.append(time.perf_counter() - start)
    reader.FAST_JSON = True
    print(f"  load with msgspec {times[0]:.3f} s, with the standard library's json {times[1]:.3f} s "
          f"(ratio {times[1] / times[0]:.2f})")


def measure(traces: Path, points: int, target: float, compare_json: bool) -> None:
    """One layout, in this (fresh) process: load + validate + models, peak memory, then the grid evaluation."""
    if compare_json and not (traces / "job.ma.npz").exists():
        json_ratio(traces)
    _, models = scale(traces, target)
    if points:
        grid_eval(models, points, traces.parent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--layout", choices=("per-rank", "merged", "both"), default="both")
    parser.add_argument("--target", type=float, default=None, help="seconds (default: 5 at 1024 ranks, 10 above)")
    parser.add_argument("--compare-json", action="store_true", help="also time the rank files' load with the "
                        "standard library's json parser (before the measured run: the peak memory includes it)")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # internal: measure one directory
    args = parser.parse_args()
    target = args.target or (5.0 if args.ranks <= 1024 else 10.0)
    if args.measure:
        measure(args.measure, args.points, target, args.compare_json)
        return
    layouts = ("per-rank", "merged") if args.layout == "both" else (args.layout,)
    with tempfile.TemporaryDirectory(prefix="ma-post-bench-") as tmp:
        for i, layout in enumerate(layouts):
            traces = Path(tmp) / layout
            traces.mkdir()
            start = time.perf_counter()
            if layout == "per-rank":
                size, sites = synthesize(traces, args.ranks)
                what = f"{args.ranks} rank files of {size / 1024:.1f} KiB ({sites} sites each)"
            else:
                size, structures = synthesize_merged(traces, args.ranks)
                what = f"a merged file of {args.ranks} ranks, {size / 1024:.1f} KiB per rank ({structures} structures)"
            print(f"synthesized {what} in {time.perf_counter() - start:.1f} s (not timed below)", flush=True)
            subprocess.run([sys.executable, __file__, "--measure", str(traces), "--target", str(target),
                            "--points", str(args.points if i == 0 else 0),
                            *(["--compare-json"] if args.compare_json else [])], check=True)
            shutil.rmtree(traces)


if __name__ == "__main__":
    main()
